/* temporary dispatcher, never committed */
#include <stdio.h>
#include <string.h>
#include "util.h"
#include "runner/report/report_cmds.h"
int main(int argc, char **argv)
{
	util_set_progname("aah-runner");
	if (argc < 2) return 2;
	const char **av = (const char **)argv + 1;
	if (!strcmp(argv[1], "report")) return cmd_report(argc - 1, av);
	if (!strcmp(argv[1], "collect")) return cmd_collect(argc - 1, av);
	if (!strcmp(argv[1], "verify")) return cmd_verify(argc - 1, av);
	if (!strcmp(argv[1], "metrics")) return cmd_metrics(argc - 1, av);
	fprintf(stderr, "unknown\n");
	return 2;
}
