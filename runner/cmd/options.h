/* options.h: command-line options declared as tables (long and short
 * names, --name=value and --name value forms) that also print --help. */
#ifndef AAH_OPTIONS_H
#define AAH_OPTIONS_H

enum opt_type { OPT_FLAG, OPT_STRING, OPT_LONG, OPT_DOUBLE, OPT_LIST };

/* Where a number option's value goes and the range it must be in; --help
 * shows the range and a value outside it is refused naming it. */
struct opt_number {
	void *value;            /* long * (OPT_LONG), double * (OPT_DOUBLE) */
	double min, max;
};
#define OPT_NUMBER(p, lo, hi) (&(struct opt_number){ (p), (lo), (hi) })

struct option_spec {
	const char *name;       /* long name without dashes */
	char short_name;        /* 0 = none */
	enum opt_type type;
	void *value;            /* int * (OPT_FLAG), const char ** (OPT_STRING),
				 * OPT_NUMBER(&number, min, max) (OPT_LONG, OPT_DOUBLE), or
				 * struct strvec * (OPT_LIST: each use of it adds a value) */
	const char *arg;        /* argument name in --help, e.g. "FILE" */
	const char *help;
};

/* Parse argv[1..] (argv[0] is the command name). Options and positional
 * arguments may mix; "--" ends options. Positionals are collected into
 * *rest (a NULL-terminated view into argv) and their count returned, or -1
 * with an error for an unknown option or a bad value. "-h"/"--help" prints
 * the usage and returns -2. */
int options_parse(int argc, const char **argv, const struct option_spec *opts,
		  const char *usage, const char ***rest);
void options_usage(const struct option_spec *opts, const char *usage);
/* For commands that take exactly one argument: *arg points into argv.
 * Returns 0, 1 when --help was printed, or -1 after reporting a usage
 * error ("which <what>? ..."). */
int options_parse_one(int argc, const char **argv, const struct option_spec *opts,
		      const char *usage, const char *what, const char **arg);

#endif
