/* cmdopt.c: table-driven option parsing for subcommands. */
#include "runner/report/cmdopt.h"
#include "util.h"

#include <string.h>

void cmdopt_help(FILE *out, const char *usage, const struct cmdopt *opts, size_t nopts)
{
	fprintf(out, "usage: %s\n\n", usage);
	for (size_t i = 0; i < nopts; i++) {
		char left[64];
		if (opts[i].short_name)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", opts[i].short_name, opts[i].name,
				 opts[i].arg ? " " : "", opts[i].arg ? opts[i].arg : "");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", opts[i].name,
				 opts[i].arg ? " " : "", opts[i].arg ? opts[i].arg : "");
		fprintf(out, "  %-28s %s\n", left, opts[i].help);
	}
	fprintf(out, "  %-28s %s\n", "-h, --help", "show this help");
}

static const struct cmdopt *find(const struct cmdopt *opts, size_t nopts, const char *name,
				 size_t len, char short_name)
{
	for (size_t i = 0; i < nopts; i++) {
		if (short_name ? opts[i].short_name == short_name
			       : strlen(opts[i].name) == len && !strncmp(opts[i].name, name, len))
			return &opts[i];
	}
	return NULL;
}

static int set_value(const struct cmdopt *o, const char *v)
{
	switch (o->type) {
	case CMDOPT_FLAG:
		*(int *)o->value = 1;
		return 0;
	case CMDOPT_STRING:
		*(const char **)o->value = v;
		return 0;
	case CMDOPT_DOUBLE:
		if (util_parse_double(v, (double *)o->value) < 0)
			return error("--%s wants a number, not '%s'", o->name, v);
		return 0;
	}
	return -1;
}

int cmdopt_parse(const char *usage, const struct cmdopt *opts, size_t nopts, int argc,
		 const char **argv, const char **pos, size_t maxpos, size_t *npos)
{
	*npos = 0;
	int only_pos = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (only_pos || a[0] != '-' || !a[1]) {
			if (*npos == maxpos)
				return error("unexpected argument '%s' (usage: %s)", a, usage);
			pos[(*npos)++] = a;
			continue;
		}
		if (!strcmp(a, "--")) {
			only_pos = 1;
			continue;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			cmdopt_help(stdout, usage, opts, nopts);
			return 1;
		}
		const struct cmdopt *o;
		const char *val = NULL;
		if (a[1] == '-') {
			const char *eq = strchr(a + 2, '=');
			size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
			o = find(opts, nopts, a + 2, len, 0);
			if (eq)
				val = eq + 1;
		} else {
			o = a[2] ? NULL : find(opts, nopts, NULL, 0, a[1]);
		}
		if (!o)
			return error("unknown option '%s' (try --help)", a);
		if (o->type == CMDOPT_FLAG) {
			if (val)
				return error("--%s takes no value", o->name);
		} else if (!val) {
			if (i + 1 == argc)
				return error("--%s needs a value (%s)", o->name, o->arg ? o->arg : "?");
			val = argv[++i];
		}
		if (set_value(o, val) < 0)
			return -1;
	}
	return 0;
}
