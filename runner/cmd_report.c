/* cmd_report.c: `aah-runner report <experiment>`: the terminal summary,
 * results.json and report.html of an experiment, finished or running. */
#include "runner/report/cmdopt.h"
#include "runner/report/report.h"
#include "runner/report/report_cmds.h"
#include "runner/workdir.h"
#include "fileio.h"
#include "jsonfile.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>

static const char usage[] = "aah-runner report <experiment id or directory> [options]";

int cmd_report(int argc, const char **argv)
{
	struct report_options opt = REPORT_OPTIONS_INIT;
	const char *workdir = NULL, *outdir = NULL;
	int quiet = 0, strict = 0;
	const struct cmdopt opts[] = {
		{ "workdir", 0, CMDOPT_STRING, &workdir, "DIR", "work directory (default $AAH_WORKDIR or ./aah-work)" },
		{ "output-dir", 'o', CMDOPT_STRING, &outdir, "DIR", "where results.json and report.html go (default: the experiment directory)" },
		{ "sample-first", 0, CMDOPT_DOUBLE, &opt.sample_first_h, "HOURS", "first sample point (AIPerf: 0.2)" },
		{ "sample-step", 0, CMDOPT_DOUBLE, &opt.sample_step_h, "HOURS", "distance between sample points (AIPerf: 0.1)" },
		{ "min-duration", 0, CMDOPT_DOUBLE, &opt.min_duration_s, "SECONDS", "validity: shortest run (AIPerf: 3600)" },
		{ "min-accuracy", 0, CMDOPT_DOUBLE, &opt.min_accuracy, "FRACTION", "validity: best accuracy must exceed it (AIPerf: 0.70)" },
		{ "min-precision", 0, CMDOPT_STRING, &opt.min_precision, "NAME", "validity: lowest precision (AIPerf: fp16)" },
		{ "quiet", 'q', CMDOPT_FLAG, &quiet, NULL, "write the files, print nothing" },
		{ "strict", 0, CMDOPT_FLAG, &strict, NULL, "exit with status 3 when a validity rule fails" },
	};
	const char *pos[1];
	size_t npos;
	int r = cmdopt_parse(usage, opts, sizeof(opts) / sizeof(opts[0]), argc, argv, pos, 1, &npos);
	if (r)
		return r > 0 ? 0 : 2;
	if (npos != 1) {
		error("which experiment? (usage: %s)", usage);
		return 2;
	}
	char *dir;
	if (workdir_experiment_dir(workdir, pos[0], &dir) < 0)
		return 1;
	struct report_exp exp;
	struct report_score sc;
	if (report_load(dir, &exp) < 0) {
		free(dir);
		return 1;
	}
	if (report_score(&exp, &opt, &sc) < 0) {
		report_exp_release(&exp);
		free(dir);
		return 2;
	}
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
