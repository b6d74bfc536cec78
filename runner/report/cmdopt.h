/* cmdopt.h: a small table-driven option parser for the report, collect,
 * verify and metrics subcommands (--name value, --name=value, -x value). */
#ifndef AAH_CMDOPT_H
#define AAH_CMDOPT_H

#include <stddef.h>
#include <stdio.h>

enum cmdopt_type { CMDOPT_FLAG, CMDOPT_STRING, CMDOPT_DOUBLE };

struct cmdopt {
	const char *name;       /* long name without "--" */
	char short_name;        /* 0 for none */
	enum cmdopt_type type;
	void *value;            /* int *, const char **, double * */
	const char *arg;        /* argument name in the help ("FILE"), NULL for flags */
	const char *help;
};

/* Parse argv[1..argc-1] (argv[0] is the subcommand). Positional arguments go
 * to pos (at most maxpos, else an error); *npos gets their count.
 * Returns 0, 1 when --help was printed to stdout, or -1 on a usage error
 * (reported through error()). */
int cmdopt_parse(const char *usage, const struct cmdopt *opts, size_t nopts, int argc,
		 const char **argv, const char **pos, size_t maxpos, size_t *npos);
void cmdopt_help(FILE *out, const char *usage, const struct cmdopt *opts, size_t nopts);

#endif
