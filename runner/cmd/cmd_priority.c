/* cmd_priority.c: `aah-runner priority <experiment>[/<trial>] N`: change
 * the share weight of an experiment's trainings, or of one, in the work
 * directory's device pool (runner/pool/ledger.h); prints the shares after. */
#include "runner/cmd/cmd.h"
#include "fileio.h"
#include "runner/cmd/options.h"
#include "runner/config/workdir.h"
#include "runner/pool/ledger.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"aah-runner priority <experiment>[/<trial>] <N>\n\n"
	"Set the priority (1 to 1000000) of every training of an experiment, now and\n"
	"to come, or of one training; the device pool's shares are recomputed and\n"
	"running trainings follow at their next step boundary (docs/pool.md)."
	CMD_EXIT_HELP;

int cmd_priority(int argc, const char **argv)
{
	const char *workdir = NULL, **rest;
	const struct option_spec opts[] = {
		{ "workdir", 0, OPT_STRING, &workdir, "DIR", "where experiments live" },
		{ NULL },
	};
	int n = options_parse(argc, argv, opts, usage, &rest);
	if (n < 0)
		return n == -2 ? 0 : CMD_EXIT_CONFIG;
	long prio = 0;
	if (n != 2 || util_parse_long(rest[1], 1, LEDGER_PRIORITY_MAX, &prio) < 0) {
		if (n == 2)
			error("priority '%s' must be an integer from 1 to %d", rest[1],
			      LEDGER_PRIORITY_MAX);
		else
			error("usage: aah-runner priority <experiment>[/<trial>] <N>");
		free(rest);
		return CMD_EXIT_CONFIG;
	}
	char *id = xstrdup(rest[0]);
	free(rest);
	char *wd = workdir ? fileio_absolute(workdir) : workdir_default();
	char *slash = strchr(id, '/');
	char *exp = slash ? xstrndup(id, (size_t)(slash - id)) : xstrdup(id);
	char *expdir = xstrfmt("%s/experiments/%s", wd, exp);
	int rc = 0;
	if (!*exp || !fileio_exists(expdir)) {
		error("no experiment '%s' in '%s'", exp, wd);
		rc = 1;
	} else {
		struct ledger l;
		ledger_init(&l, wd);
		int changed = ledger_set_priority(&l, id, prio);
		if (changed < 0) {
			rc = 1;
		} else {
			printf("priority of %s: %ld (%d running training%s)\n", id, prio, changed,
			       changed == 1 ? "" : "s");
			for (size_t i = 0; i < l.n; i++)
				printf("  %-24s priority %-7ld devices %u of %u\n", l.t[i].id,
				       l.t[i].priority, l.t[i].share, l.devices);
		}
		ledger_release(&l);
	}
	free(expdir);
	free(exp);
	free(id);
	free(wd);
	return rc;
}
