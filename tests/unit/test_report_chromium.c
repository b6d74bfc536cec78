/* report.html in a real browser: headless Chromium loads the page without
 * a console message (no script error, no blocked fetch: the page's CSP
 * forbids every network load, so an attempt would be logged), and the
 * DOM it builds has the charts with the expected number of points. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runner/report/report.h"
#include "tests/fixtures/report/fixture.h"

extern char **environ;

#define CHROMIUM "/usr/bin/chromium"

static char tmpdir[64];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/aah-chromium-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	util_set_quiet(1);
}

static void teardown(void)
{
	fileio_remove_tree(tmpdir);
}

TestSuite(chromium, .init = setup, .fini = teardown, .timeout = 180);

/* Load `html` in headless Chromium; *dom gets the serialised DOM, *log the
 * browser's stderr. Returns the exit status. */
static int load_page(const char *html, char **dom, char **log)
{
	char *profile = xstrfmt("%s/profile", tmpdir);
	char *udd = xstrfmt("--user-data-dir=%s", profile);
	char *url = xstrfmt("file://%s", html);
	char *out = xstrfmt("%s/dom.html", tmpdir), *err = xstrfmt("%s/chromium.log", tmpdir);
	cr_assert_eq(fileio_mkdir_p(profile, 0700), 0);
	const char *argv[] = { "timeout", "120", CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--no-first-run", udd, "--enable-logging=stderr", "--v=0", "--dump-dom", url, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	pid_t pid;
	cr_assert_eq(posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert_eq(fileio_read(out, 0, dom, NULL), 0);
	cr_assert_eq(fileio_read(err, 0, log, NULL), 0);
	cr_assert_eq(fileio_remove_tree(profile), 0);
	free(profile);
	free(udd);
	free(url);
	free(out);
	free(err);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static size_t console_lines(const char *log)
{
	return fx_count(log, ":CONSOLE");
}

/* The detector itself: a page with a script error and a network load. */
Test(chromium, detector_sees_script_errors_and_network_loads)
{
	if (access(CHROMIUM, X_OK) != 0)
		cr_skip_test("skipped: %s is not installed", CHROMIUM);
	char *p = xstrfmt("%s/bad.html", tmpdir);
	static const char bad[] = "<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" "
		"content=\"default-src 'none'\"></head><body><img src=\"http://192.0.2.1/x.png\">"
		"</body></html>\n";
	cr_assert_eq(fileio_write_atomic(p, bad, sizeof(bad) - 1), 0);
	char *dom, *log;
	cr_assert_eq(load_page(p, &dom, &log), 0);
	cr_assert_geq(console_lines(log), 1, "%s", log);
	free(dom);
	free(log);
	static const char bad2[] = "<!DOCTYPE html><html><body><script>undefined_function();</script>"
		"</body></html>\n";
	cr_assert_eq(fileio_write_atomic(p, bad2, sizeof(bad2) - 1), 0);
	cr_assert_eq(load_page(p, &dom, &log), 0);
	cr_assert_geq(console_lines(log), 1, "%s", log);
	cr_assert(strstr(log, "undefined_function"), "%s", log);
	free(dom);
	free(log);
	free(p);
}

Test(chromium, report_loads_cleanly_and_has_its_charts)
{
	if (access(CHROMIUM, X_OK) != 0)
		cr_skip_test("skipped: %s is not installed", CHROMIUM);
	const double t0 = 1000;
	char *dir = fx_exp_create(tmpdir, "exp00001", t0);
	cr_assert_not_null(dir);
	/* 6 trials over 2 slots, 5 epochs each, one still running, one failed */
	for (int t = 1; t <= 6; t++) {
		char id[16];
		snprintf(id, sizeof(id), "%06d", t);
		double start = t0 + 600.0 * (t - 1) / 2 * 2 + 60;
		int running = t == 6;
		cr_assert_eq(fx_trial_events(dir, id, (t - 1) % 2, start, start + 1200,
					     running ? NULL : t == 3 ? "failed" : "succeeded"), 0);
		for (int e = 1; e <= 5; e++)
			cr_assert_eq(fx_epoch(dir, id, e, start + 200.0 * e, 1e12 * e * t, 1e11 * e,
					      0.1 * t + 0.02 * e, 1000), 0);
		cr_assert_eq(fx_arch(dir, id), 0);
	}
	struct report_exp exp;
	struct report_score sc;
	struct report_options opt = REPORT_OPTIONS_INIT;
	opt.now = t0 + 4500;
	cr_assert_eq(report_load(dir, &exp), 0);
	cr_assert_eq(report_score(&exp, &opt, &sc), 0);
	cr_assert_gt(sc.nsamples, 5);
	struct strbuf sb = STRBUF_INIT;
	report_html(&sb, &exp, &opt, &sc);
	char *page = xstrfmt("%s/report.html", dir);
	cr_assert_eq(fileio_write_atomic(page, sb.buf, sb.len), 0);

	char *dom, *log;
	cr_assert_eq(load_page(page, &dom, &log), 0, "%s", log);
	cr_assert_eq(console_lines(log), 0, "console messages:\n%s", log);
	/* the parsed DOM, not our text: the browser built these elements */
	static const char *const charts[] = { "chart-error", "chart-score", "chart-regulated",
		"chart-timeline", "chart-accuracy", "chart-util" };
	for (size_t i = 0; i < ARRAY_SIZE(charts); i++) {
		char *id = xstrfmt("<svg id=\"%s\"", charts[i]);
		cr_assert_eq(fx_count(dom, id), 1, "%s missing from the DOM", charts[i]);
		free(id);
	}
	cr_assert_eq(fx_count(dom, "<circle class=\"pt\""), 3 * sc.nsamples);
	cr_assert_eq(fx_count(dom, "<polyline class=\"series\""), 3);
	cr_assert_eq(fx_count(dom, "<rect class=\"trial "), 6);
	cr_assert_eq(fx_count(dom, "<rect class=\"trial running\""), 1);
	cr_assert_eq(fx_count(dom, "<rect class=\"trial failed\""), 1);
	cr_assert_eq(fx_count(dom, "<circle class=\"trial-pt"), 6);
	cr_assert_eq(fx_count(dom, "<tr class=\"sample\">"), sc.nsamples);
	/* 1.13 h, best accuracy 0.6 + 0.1 (just above 0.70 in binary), fp32 */
	cr_assert(strstr(dom, "id=\"verdict\">Succeed</p>"), "%.600s", strstr(dom, "<body>"));
	cr_assert_null(strstr(dom, "failed-rules"));
	cr_assert(strstr(dom, "<td>conv2d</td>"));
	free(dom);
	free(log);
	free(page);
	strbuf_release(&sb);
	report_score_release(&sc);
	report_exp_release(&exp);
	free(dir);
}
