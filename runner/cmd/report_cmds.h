/* report_cmds.h: the subcommands of the report area (cmd_report.c,
 * cmd_collect.c, cmd_verify.c, cmd_metrics.c), for runner/cmd/main.c's
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

struct report_exp;
struct report_score;
/* What report and metrics share: resolve the experiment argument, fill opt
 * from its config, load and score it. Returns 0 (the caller frees *dir and
 * releases exp and sc), or the exit code to return (1 not found or
 * unreadable, 2 scoring failed) after reporting the error. */
int report_prepare(const char *workdir, const char *arg, struct report_options *opt, char **dir,
		   struct report_exp *exp, struct report_score *sc);

#endif
