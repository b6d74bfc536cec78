/* cmd_metrics.c: `aah-runner metrics <experiment>`: the Prometheus text
 * exposition of an experiment, for node_exporter's textfile collector. */
#include "runner/cmd/options.h"
#include "runner/report/report.h"
#include "runner/cmd/report_cmds.h"
#include "runner/config/workdir.h"
#include "fileio.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const char usage[] = "aah-runner metrics <experiment id or directory> [-o file.prom]";

int cmd_metrics(int argc, const char **argv)
{
	struct report_options opt = { NAN, NAN, NAN, NAN, NULL, 0, NULL, NULL, 0 };
	const char *workdir = NULL, *out = NULL;
	const struct option_spec opts[] = {
		{ "workdir", 0, OPT_STRING, &workdir, "DIR", "work directory (default $AAH_WORKDIR or ./aah-work)" },
		{ "output", 'o', OPT_STRING, &out, "FILE", "write atomically to FILE (name it *.prom in the textfile collector's directory)" },
		{ "sample-first", 0, OPT_DOUBLE, OPT_NUMBER(&opt.sample_first_h, 0.001, 8760), "HOURS", "first sample point (default: the config's report.firstSample)" },
		{ "sample-step", 0, OPT_DOUBLE, OPT_NUMBER(&opt.sample_step_h, 0.001, 8760), "HOURS", "distance between sample points (default: report.sampleInterval)" },
		{ NULL },
	};
	const char *arg;
	int r = options_parse_one(argc, argv, opts, usage, "experiment", &arg);
	if (r)
		return r > 0 ? 0 : 2;
	char *dir;
	struct report_exp exp;
	struct report_score sc;
	r = report_prepare(workdir, arg, &opt, &dir, &exp, &sc);
	if (r)
		return r;
	struct strbuf sb = STRBUF_INIT;
	report_prometheus(&sb, &exp, &sc);
	if (out)
		r = fileio_write_atomic(out, sb.buf, sb.len) < 0 ? 1 : 0;
	else
		r = fwrite(sb.buf, 1, sb.len, stdout) == sb.len ? 0 : 1;
	strbuf_release(&sb);
	report_score_release(&sc);
	report_exp_release(&exp);
	free(dir);
	return r;
}
