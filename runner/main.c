/* main.c: aah-runner entry point; dispatches to cmd_*.c */
#include <stdio.h>
#include "util.h"

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	util_set_progname("aah-runner");
	printf("aah-runner: not yet\n");
	return 0;
}
