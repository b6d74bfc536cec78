/* bench_report: time the report pipeline and collect in-process, for
 * tests/bench/bench_report.sh.
 *   bench_report report <experiment dir> <reps>   best wall time of load +
 *       score + results.json + report.html (written to a temp dir)
 *   bench_report collect <experiment dir> <out> <reps>  best wall time of
 *       archive_collect; prints seconds and bytes archived
 *   bench_report monitor <seconds> <interval>  run the resource monitor;
 *       prints samples and the monitor thread's CPU seconds */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "jsonfile.h"
#include "runner/archive/archive.h"
#include "runner/report/report.h"
#include "trialimg/monitor.h"
#include "util.h"

#include <time.h>

static int one_report(const char *dir, const char *outdir, size_t *html_bytes)
{
	struct report_exp exp;
	struct report_score sc;
	struct report_options opt = REPORT_OPTIONS_INIT;
	if (report_load(dir, &exp) < 0)
		return -1;
	if (report_score(&exp, &opt, &sc) < 0)
		return -1;
	cJSON *doc = report_results_json(&exp, &opt, &sc);
	struct strbuf sb = STRBUF_INIT;
	report_html(&sb, &exp, &opt, &sc);
	char *j = xstrfmt("%s/results.json", outdir), *h = xstrfmt("%s/report.html", outdir);
	int r = jsonfile_write(j, doc) < 0 || fileio_write_atomic(h, sb.buf, sb.len) < 0 ? -1 : 0;
	*html_bytes = sb.len;
	free(j);
	free(h);
	cJSON_Delete(doc);
	strbuf_release(&sb);
	report_score_release(&sc);
	report_exp_release(&exp);
	return r;
}

int main(int argc, char **argv)
{
	util_set_progname("bench_report");
	if (argc >= 4 && !strcmp(argv[1], "report")) {
		int reps = atoi(argv[3]);
		char tmp[] = "/tmp/aah-bench-report-XXXXXX";
		if (!mkdtemp(tmp))
			die_errno("mkdtemp");
		double best = 1e30;
		size_t bytes = 0;
		for (int i = 0; i < reps; i++) {
			double t0 = util_monotonic();
			if (one_report(argv[2], tmp, &bytes) < 0)
				die("report failed");
			double t = util_monotonic() - t0;
			if (t < best)
				best = t;
		}
		fileio_remove_tree(tmp);
		printf("%.4f %zu\n", best, bytes);
		return 0;
	}
	if (argc >= 5 && !strcmp(argv[1], "collect")) {
		int reps = atoi(argv[4]);
		double best = 1e30;
		struct archive_collect_stats st;
		for (int i = 0; i < reps; i++) {
			double t0 = util_monotonic();
			if (archive_collect(argv[2], argv[3], NULL, &st) < 0)
				die("collect failed");
			double t = util_monotonic() - t0;
			if (t < best)
				best = t;
		}
		printf("%.4f %llu\n", best, (unsigned long long)st.bytes);
		return 0;
	}
	if (argc >= 4 && !strcmp(argv[1], "monitor")) {
		char tmp[] = "/tmp/aah-bench-monitor-XXXXXX";
		if (!mkdtemp(tmp))
			die_errno("mkdtemp");
		double secs = atof(argv[2]);
		struct monitor *m = NULL;
		if (monitor_start(tmp, atof(argv[3]), &m) != 1)
			die("monitor failed: %s", util_last_error());
		struct timespec ts = { (time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9) };
		nanosleep(&ts, NULL);
		long n = monitor_samples(m);
		monitor_stop(m);
		/* the last line carries the thread's CPU time */
		char host[64] = "";
		gethostname(host, sizeof(host) - 1);
		char *p = xstrfmt("%s/monitor-%s.jsonl", tmp, host);
		char *text;
		double cpu = -1;
		if (fileio_read(p, 0, &text, NULL) == 0) {
			char *last = strstr(text, "\"monitor_cpu_s\":");
			for (char *q = last; q; q = strstr(q + 1, "\"monitor_cpu_s\":"))
				last = q;
			if (last)
				cpu = atof(last + strlen("\"monitor_cpu_s\":"));
			free(text);
		}
		free(p);
		fileio_remove_tree(tmp);
		printf("%ld %.6f\n", n + 1, cpu);
		return 0;
	}
	fprintf(stderr, "usage: bench_report report <dir> <reps> | collect <dir> <out> <reps> | "
		"monitor <seconds> <interval>\n");
	return 2;
}
