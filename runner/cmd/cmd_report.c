/* cmd_report.c: `aah-runner report <experiment>`: the terminal summary,
 * results.json and report.html of an experiment, finished or running. */
#include "runner/cmd/options.h"
#include "runner/report/report.h"
#include "runner/cmd/report_cmds.h"
#include "runner/config/workdir.h"
#include "fileio.h"
#include "jsonfile.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/backend/backend.h" /* backend_config_load */
#include "runner/config/config.h"

int report_options_from_config(const char *expdir, struct report_options *opt)
{
	struct aah_config cfg;
	char *path = xstrfmt("%s/config.yml", expdir);
	if (backend_config_load(path, &cfg) < 0) {
		/* The score can still be computed: use AIPerf's rules, and say so. */
		const struct report_options aiperf = REPORT_OPTIONS_INIT;
		warning("'%s' unreadable: using AIPerf's report rules", path);
		free(path);
		if (isnan(opt->sample_first_h))
			opt->sample_first_h = aiperf.sample_first_h;
		if (isnan(opt->sample_step_h))
			opt->sample_step_h = aiperf.sample_step_h;
		if (isnan(opt->min_duration_s))
			opt->min_duration_s = aiperf.min_duration_s;
		if (isnan(opt->min_accuracy))
			opt->min_accuracy = aiperf.min_accuracy;
		if (!opt->min_precision)
			opt->min_precision = aiperf.min_precision;
		return 0;
	}
	free(path);
	report_options_fill(opt, &cfg.report);
	config_release(&cfg);
	return 0;
}

int report_prepare(const char *workdir, const char *arg, struct report_options *opt, char **dir,
		   struct report_exp *exp, struct report_score *sc)
{
	if (workdir_experiment_dir(workdir, arg, dir) < 0)
		return 1;
	if (report_options_from_config(*dir, opt) < 0 || report_load(*dir, exp) < 0) {
		free(*dir);
		return 1;
	}
	if (report_score(exp, opt, sc) < 0) {
		report_exp_release(exp);
		free(*dir);
		return 2;
	}
	return 0;
}

static const char usage[] = "aah-runner report <experiment id or directory> [options]";

/* Whether value (NULL: not given) is one of choices; else the error. */
static int one_of(const char *value, const char *const *choices, const char *option)
{
	struct strbuf sb = STRBUF_INIT;
	for (const char *const *c = choices; value && *c; c++)
		if (!strcmp(*c, value))
			return 1;
	if (!value)
		return 1;
	for (const char *const *c = choices; *c; c++)
		strbuf_addf(&sb, "%s%s", c == choices ? "" : ", ", *c);
	error("%s: '%s' is none of %s", option, value, sb.buf);
	strbuf_release(&sb);
	return 0;
}

int cmd_report(int argc, const char **argv)
{
	struct report_options opt = { NAN, NAN, NAN, NAN, NULL, 0, NULL, NULL, 0 };
	const char *workdir = NULL, *outdir = NULL;
	int quiet = 0, strict = 0;
	const struct option_spec opts[] = {
		{ "workdir", 0, OPT_STRING, &workdir, "DIR", "work directory (default $AAH_WORKDIR or ./aah-work)" },
		{ "output-dir", 'o', OPT_STRING, &outdir, "DIR", "where results.json and report.html go (default: the experiment directory)" },
		{ "sample-first", 0, OPT_DOUBLE, OPT_NUMBER(&opt.sample_first_h, 0.001, 8760), "HOURS", "first sample point (default: the config's report.firstSample)" },
		{ "sample-step", 0, OPT_DOUBLE, OPT_NUMBER(&opt.sample_step_h, 0.001, 8760), "HOURS", "distance between sample points (default: report.sampleInterval)" },
		{ "min-duration", 0, OPT_DOUBLE, OPT_NUMBER(&opt.min_duration_s, 0, 31536000), "SECONDS", "validity: shortest run (default: report.minDuration)" },
		{ "min-accuracy", 0, OPT_DOUBLE, OPT_NUMBER(&opt.min_accuracy, 0, 1), "FRACTION", "validity: best accuracy must exceed it (default: report.minAccuracy)" },
		{ "min-precision", 0, OPT_STRING, &opt.min_precision, "NAME", "validity: lowest precision (default: report.minPrecision)" },
		{ "gpu-fp32", 0, OPT_FLAG, &opt.gpu_fp32_ok, NULL, "validity: accept trials that trained in fp32 on a GPU (AIPerf's rule: mixed precision)" },
		{ "rules", 0, OPT_STRING, &opt.rules, "SET", "validity rules: readme or report.py (default: report.rules)" },
		{ "epoch-charge", 0, OPT_STRING, &opt.charge, "HOW", "FLOPs of an epoch: auto, aiperf or images (default: report.epochCharge)" },
		{ "quiet", 'q', OPT_FLAG, &quiet, NULL, "write the files, print nothing" },
		{ "strict", 0, OPT_FLAG, &strict, NULL, "exit with status 3 when a validity rule fails" },
		{ NULL },
	};
	const char *arg;
	int r = options_parse_one(argc, argv, opts, usage, "experiment", &arg);
	if (r)
		return r > 0 ? 0 : 2;
	if (!one_of(opt.rules, config_report_rules, "--rules") ||
	    !one_of(opt.charge, config_epoch_charges, "--epoch-charge"))
		return 2;
	char *dir;
	struct report_exp exp;
	struct report_score sc;
	r = report_prepare(workdir, arg, &opt, &dir, &exp, &sc);
	if (r)
		return r;
	const char *od = outdir ? outdir : dir;
	char *json_path = xstrfmt("%s/results.json", od);
	char *html_path = xstrfmt("%s/report.html", od);
	cJSON *doc = report_results_json(&exp, &opt, &sc);
	struct strbuf sb = STRBUF_INIT;
	report_html(&sb, &exp, &opt, &sc);
	r = 1;
	if ((!outdir || fileio_mkdir_p(od, 0755) == 0) && jsonfile_write(json_path, doc) == 0 &&
	    fileio_write_atomic(html_path, sb.buf, sb.len) == 0) {
		r = strict && !sc.valid ? 3 : 0;
		if (!quiet) {
			strbuf_reset(&sb);
			report_summary(&sb, &exp, &sc);
			fputs(strbuf_str(&sb), stdout);
			printf("  Wrote:                 %s\n                         %s\n", json_path,
			       html_path);
		}
	}
	strbuf_release(&sb);
	cJSON_Delete(doc);
	free(json_path);
	free(html_path);
	report_score_release(&sc);
	report_exp_release(&exp);
	free(dir);
	return r;
}
