/* options.c: table-driven command-line options. */
#include "runner/cmd/options.h"
#include "strvec.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void options_usage(const struct option_spec *opts, const char *usage)
{
	printf("usage: %s\n\noptions:\n", usage);
	for (const struct option_spec *o = opts; o->name; o++) {
		char left[64];
		if (o->short_name)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", o->short_name, o->name,
				 o->arg ? " " : "", o->arg ? o->arg : "");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", o->name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
		if (o->type == OPT_LONG || o->type == OPT_DOUBLE) {
			const struct opt_number *num = o->value;
			printf("  %-28s %s [%.15g to %.15g]\n", left, o->help, num->min, num->max);
		} else {
			printf("  %-28s %s\n", left, o->help);
		}
	}
	printf("  %-28s %s\n", "-h, --help", "show this help");
}

int options_parse_one(int argc, const char **argv, const struct option_spec *opts,
		      const char *usage, const char *what, const char **arg)
{
	const char **rest;
	int n = options_parse(argc, argv, opts, usage, &rest);
	if (n < 0)
		return n == -2 ? 1 : -1;
	*arg = n == 1 ? rest[0] : NULL;
	free(rest);
	if (n != 1)
		return error("which %s? (usage: %s)", what, usage);
	return 0;
}

/* An integer option is read as a number too: its range, not the width of a
 * long, decides what "999999999999" gets. */
static int set_number(const char *cmd, const struct option_spec *o, const char *v)
{
	const struct opt_number *num = o->value;
	double d;
	if (util_parse_double(v, &d) < 0 || (o->type == OPT_LONG && d != floor(d)))
		return error("%s: --%s needs %s, got '%s'", cmd, o->name,
			     o->type == OPT_LONG ? "an integer" : "a number", v);
	if (!(d >= num->min && d <= num->max))
		return error("%s: --%s must be between %.15g and %.15g, got %s", cmd, o->name, num->min,
			     num->max, v);
	if (o->type == OPT_LONG)
		*(long *)num->value = (long)d;
	else
		*(double *)num->value = d;
	return 0;
}

static int set(const char *cmd, const struct option_spec *o, const char *v)
{
	switch (o->type) {
	case OPT_FLAG:
		*(int *)o->value = 1;
		return 0;
	case OPT_STRING:
		*(const char **)o->value = v;
		return 0;
	case OPT_LIST:
		strvec_push(o->value, v);
		return 0;
	case OPT_LONG:
	case OPT_DOUBLE:
		return set_number(cmd, o, v);
	}
	return -1;
}

int options_parse(int argc, const char **argv, const struct option_spec *opts,
		  const char *usage, const char ***rest)
{
	const char **pos = xcalloc((size_t)argc + 1, sizeof(*pos));
	int npos = 0, i;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const struct option_spec *o = NULL;
		const char *val = NULL;
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			options_usage(opts, usage);
			free(pos);
			return -2;
		}
		if (a[0] != '-' || !a[1]) {
			pos[npos++] = a;
			continue;
		}
		if (a[1] == '-') {
			const char *name = a + 2, *eq = strchr(name, '=');
			size_t len = eq ? (size_t)(eq - name) : strlen(name);
			for (o = opts; o->name; o++)
				if (strlen(o->name) == len && !strncmp(o->name, name, len))
					break;
			if (eq)
				val = eq + 1;
		} else {
			for (o = opts; o->name; o++)
				if (o->short_name == a[1])
					break;
			if (o->name && a[2])
				val = a + 2;
		}
		if (!o || !o->name) {
			error("%s: unknown option '%s' (see '%s --help')", argv[0], a, argv[0]);
			free(pos);
			return -1;
		}
		if (o->type == OPT_FLAG && val) {
			error("%s: option --%s takes no value", argv[0], o->name);
			free(pos);
			return -1;
		}
		if (o->type != OPT_FLAG && !val) {
			if (i + 1 >= argc) {
				error("%s: option --%s needs a value", argv[0], o->name);
				free(pos);
				return -1;
			}
			val = argv[++i];
		}
		if (set(argv[0], o, val) < 0) {
			free(pos);
			return -1;
		}
	}
	for (; i < argc; i++)
		pos[npos++] = argv[i];
	pos[npos] = NULL;
	*rest = pos;
	return npos;
}
