/* main.c: aah-trial entry point. */
#include <stdio.h>
#include "util.h"

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	util_set_progname("aah-trial");
	printf("aah-trial: not yet\n");
	return 0;
}
