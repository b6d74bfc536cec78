/* report_cmds.h: the subcommands of the report area, for runner/main.c's
 * table. Each takes argv[0] = the subcommand name and returns the process
 * exit code. */
#ifndef AAH_REPORT_CMDS_H
#define AAH_REPORT_CMDS_H

int cmd_report(int argc, const char **argv);   /* score, results.json, report.html */
int cmd_collect(int argc, const char **argv);  /* the verifiable log archive */
int cmd_verify(int argc, const char **argv);   /* check an archive */
int cmd_metrics(int argc, const char **argv);  /* Prometheus text exposition */

struct report_options;
/* Fill what the command line left unset (NAN numbers, NULL precision) from
 * the experiment's config.yml report section, whose defaults are AIPerf's. */
int report_options_from_config(const char *expdir, struct report_options *opt);

#endif
