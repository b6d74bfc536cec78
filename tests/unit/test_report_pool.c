/* Unit tests for runner/report/pool.c and the pool chart of report.html: a
 * ledger written by the real ledger code (runner/pool/ledger.c) through the seed
 * scenario, a preemption by a training that needs the whole pool, and a
 * retried training that rejoins; the events, their kinds and the step
 * points each experiment's report sees, the window of its life, the Pool
 * section, the counter, and the SVG (well nested, one line per training,
 * one marker per grow, shrink, preempt and resume). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner/pool/ledger.h"
#include "runner/report/report.h"
#include "tests/fixtures/report/fixture.h"

static char tmpdir[64];
static double created3;   /* exp3 arrives after the 3/5 split */

static void tick(void)
{
	usleep(3000);   /* the ledger stamps util_now(): keep the events apart in time */
}

static void applied(struct ledger *l, const char *id, unsigned devices)
{
	tick();
	cr_assert_eq(ledger_applied(l, id, devices), 0);
}

/* The seed scenario (8, 4/4, 3/5), then exp3 needing all 8 preempts both,
 * leaves, they resume; exp1 ends, exp2 grows to 8, fails, is retried
 * (leave, join again) and resumes, then ends. */
static void write_ledger(void)
{
	struct ledger l;
	ledger_init(&l, tmpdir);
	cr_assert_eq(ledger_join(&l, 8, "exp1/000001", 5000, 1, 8), 0);
	applied(&l, "exp1/000001", 8);
	tick();
	cr_assert_eq(ledger_join(&l, 8, "exp2/000001", 5000, 1, 8), 0);
	applied(&l, "exp2/000001", 4);
	applied(&l, "exp1/000001", 4);
	tick();
	cr_assert_eq(ledger_set_priority(&l, "exp2", 10000), 1);
	applied(&l, "exp1/000001", 3);
	applied(&l, "exp2/000001", 5);
	tick();
	created3 = util_now();
	tick();
	cr_assert_eq(ledger_join(&l, 8, "exp3/000001", LEDGER_PRIORITY_MAX, 8, 8), 0);
	cr_assert_eq(ledger_find(&l, "exp1/000001")->share, 0);
	applied(&l, "exp3/000001", 8);
	tick();
	cr_assert_eq(ledger_leave(&l, "exp3/000001"), 0);
	applied(&l, "exp1/000001", 3);
	applied(&l, "exp2/000001", 5);
	tick();
	cr_assert_eq(ledger_leave(&l, "exp1/000001"), 0);
	applied(&l, "exp2/000001", 8);
	tick();
	cr_assert_eq(ledger_leave(&l, "exp2/000001"), 0);
	tick();
	cr_assert_eq(ledger_join(&l, 8, "exp2/000001", 5000, 1, 8), 0);
	applied(&l, "exp2/000001", 8);
	tick();
	cr_assert_eq(ledger_leave(&l, "exp2/000001"), 0);
	ledger_release(&l);
}

static void setup(void)
{
	strcpy(tmpdir, "/tmp/aah-rpool-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	util_set_quiet(1);
	write_ledger();
}

static void teardown(void)
{
	fileio_remove_tree(tmpdir);
}

TestSuite(report_pool, .init = setup, .fini = teardown);

static size_t count_kind(const struct report_pool *p, const char *id, enum report_pool_kind k)
{
	size_t n = 0;
	for (size_t e = 0; e < p->nev; e++)
		n += p->ev[e].kind == k && (!id || !strcmp(p->t[p->ev[e].training].id, id));
	return n;
}

/* "kind training from->to" of every event, space-separated. */
static char *event_list(const struct report_pool *p)
{
	struct strbuf sb = STRBUF_INIT;
	for (size_t e = 0; e < p->nev; e++)
		strbuf_addf(&sb, "%s %s %u->%u\n", report_pool_kind_name(p->ev[e].kind),
			    p->t[p->ev[e].training].id, p->ev[e].from, p->ev[e].to);
	return strbuf_detach(&sb, NULL);
}

Test(report_pool, the_seed_scenario_then_a_preemption_as_exp1_saw_it)
{
	struct report_pool p;
	cr_assert_eq(report_pool_load(&p, tmpdir, "exp1", 0), 0);
	cr_assert_eq(p.devices, 8);
	cr_assert_eq(p.n, 3);
	cr_assert_str_eq(p.t[0].id, "exp1/000001");
	cr_assert(p.t[0].mine && !p.t[1].mine && !p.t[2].mine);
	cr_assert_eq(p.t[1].priority_first, 5000);
	cr_assert_eq(p.t[1].priority_last, 10000);
	char *list = event_list(&p);
	cr_assert_str_eq(list, "start exp1/000001 0->8\n"
			       "start exp2/000001 0->4\n"
			       "shrink exp1/000001 8->4\n"
			       "shrink exp1/000001 4->3\n"
			       "grow exp2/000001 4->5\n"
			       "preempt exp1/000001 3->0\n"
			       "preempt exp2/000001 5->0\n"
			       "start exp3/000001 0->8\n"
			       "end exp3/000001 8->0\n"
			       "resume exp1/000001 0->3\n"
			       "resume exp2/000001 0->5\n"
			       "end exp1/000001 3->0\n", "%s", list);
	free(list);
	/* exp1's steps: 8, 4, 3, 0 (preempted), 3, 0 (ended), in time order */
	static const unsigned want[] = { 8, 4, 3, 0, 3, 0 };
	cr_assert_eq(p.t[0].nsteps, ARRAY_SIZE(want));
	for (size_t k = 0; k < ARRAY_SIZE(want); k++) {
		cr_assert_eq(p.t[0].steps[k].devices, want[k], "step %zu", k);
		cr_assert(k == 0 || p.t[0].steps[k].ts > p.t[0].steps[k - 1].ts);
	}
	cr_assert_eq(p.to, p.t[0].steps[5].ts);
	report_pool_release(&p);
}

Test(report_pool, every_change_of_exp2_including_its_retry)
{
	struct report_pool p;
	cr_assert_eq(report_pool_load(&p, tmpdir, "exp2", 0), 0);
	cr_assert_eq(p.nev, 16);
	static const size_t want[REPORT_POOL_NKINDS] = {
		[REPORT_POOL_START] = 1, [REPORT_POOL_GROW] = 2, [REPORT_POOL_SHRINK] = 0,
		[REPORT_POOL_PREEMPT] = 1, [REPORT_POOL_RESUME] = 2, [REPORT_POOL_END] = 2,
	};
	for (int k = 0; k < REPORT_POOL_NKINDS; k++)
		cr_assert_eq(count_kind(&p, "exp2/000001", (enum report_pool_kind)k), want[k], "%s",
			     report_pool_kind_name((enum report_pool_kind)k));
	const struct report_pool_event *last = &p.ev[p.nev - 2];
	cr_assert_eq(last->kind, REPORT_POOL_RESUME);   /* the retry, from its checkpoint */
	cr_assert_eq(last->to, 8);
	cr_assert(isfinite(p.to));
	report_pool_release(&p);
}

Test(report_pool, the_window_is_the_experiment_s_life)
{
	struct report_pool p;
	cr_assert_eq(report_pool_load(&p, tmpdir, "exp3", created3), 0);
	char *list = event_list(&p);
	cr_assert_str_eq(list, "preempt exp1/000001 3->0\n"
			       "preempt exp2/000001 5->0\n"
			       "start exp3/000001 0->8\n"
			       "end exp3/000001 8->0\n", "%s", list);
	free(list);
	struct strbuf sb = STRBUF_INIT;
	report_pool_summary(&sb, &p);
	/* held at the start of its life: 3/5/0, then after each change */
	cr_assert(strstr(strbuf_str(&sb), "  Pool:                  8 devices, 3 trainings"), "%s",
		  strbuf_str(&sb));
	cr_assert(strstr(strbuf_str(&sb), "    * exp3/000001, priority 1000000\n"));
	cr_assert(strstr(strbuf_str(&sb), "      exp2/000001, priority 5000 -> 10000\n"));
	cr_assert(strstr(strbuf_str(&sb), "preempt    exp1/000001  3 -> 0  held 0/5/0\n"), "%s",
		  strbuf_str(&sb));
	cr_assert(strstr(strbuf_str(&sb), "start    * exp3/000001  0 -> 8  held 0/0/8\n"));
	cr_assert(strstr(strbuf_str(&sb), "end      * exp3/000001  8 -> 0  held 0/0/0\n"));
	strbuf_release(&sb);
	report_pool_release(&p);
}

Test(report_pool, no_pool_without_a_ledger_or_a_training_in_it)
{
	struct report_pool p;
	cr_assert_eq(report_pool_load(&p, tmpdir, "exp4", 0), 0);
	cr_assert_eq(p.devices, 0);
	cr_assert_eq(p.n, 0);
	char *empty = xstrfmt("%s/empty", tmpdir);
	cr_assert_eq(report_pool_load(&p, empty, "exp1", 0), 0);
	cr_assert_eq(p.devices, 0);
	struct strbuf sb = STRBUF_INIT;
	report_pool_summary(&sb, &p);
	cr_assert_eq(sb.len, 0);
	strbuf_release(&sb);
	free(empty);
}

static size_t count(const char *s, const char *needle)
{
	size_t n = 0;
	for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* The element at s..end nests: every open tag is closed in order, every
 * attribute value is quoted. Returns 0 when it does. */
static int nests(const char *s, const char *end)
{
	char stack[64][16];
	int depth = 0;
	for (const char *p = s; p < end; p++) {
		if (*p != '<')
			continue;
		const char *q = strchr(p, '>');
		if (!q || q > end)
			return -1;
		size_t quotes = 0;
		for (const char *c = p; c < q; c++)
			quotes += *c == '"';
		if (quotes % 2)
			return -1;
		int closing = p[1] == '/', selfclose = q[-1] == '/';
		const char *name = p + 1 + closing;
		size_t len = strcspn(name, " >/");
		if (len == 0 || len >= 16)
			return -1;
		if (closing) {
			if (!depth || strncmp(stack[depth - 1], name, len) || stack[depth - 1][len])
				return -1;
			depth--;
		} else if (!selfclose) {
			if (depth == 64)
				return -1;
			memcpy(stack[depth], name, len);
			stack[depth++][len] = '\0';
		}
		p = q;
	}
	return depth;
}

Test(report_pool, report_html_draws_a_line_per_training_and_a_marker_per_change)
{
	char *root = xstrfmt("%s/experiments", tmpdir);
	char *dir = fx_exp_create(root, "exp1", 0);
	cr_assert_not_null(dir);
	struct report_exp exp;
	cr_assert_eq(report_load(dir, &exp), 0);
	cr_assert_eq(exp.pool.n, 3);
	struct report_options opt = REPORT_OPTIONS_INIT;
	struct report_score sc;
	cr_assert_eq(report_score(&exp, &opt, &sc), 0);
	struct strbuf sb = STRBUF_INIT;
	report_html(&sb, &exp, &opt, &sc);
	const char *html = strbuf_str(&sb);
	const char *svg = strstr(html, "<svg id=\"chart-pool\"");
	cr_assert_not_null(svg);
	const char *end = strstr(svg, "</svg>");
	cr_assert_not_null(end);
	end += strlen("</svg>");
	static const char bad[] = "<svg><g><text x=\"1>a</text></g></svg>";
	static const char crossed[] = "<svg><g><circle/></svg></g>";
	cr_assert_neq(nests(bad, bad + sizeof(bad) - 1), 0);   /* the checker can fail */
	cr_assert_neq(nests(crossed, crossed + sizeof(crossed) - 1), 0);
	cr_assert_eq(nests(svg, end), 0);
	char *chart = xstrndup(svg, (size_t)(end - svg));
	cr_assert_eq(count(chart, "<polyline class=\"pool-line"), 3);
	cr_assert_eq(count(chart, "<polyline class=\"pool-line c0 mine\""), 1);
	/* exp1's window: 2 shrinks, 1 grow, 2 preempts, 2 resumes; one of each in the legend */
	cr_assert_eq(count(chart, "class=\"pool-ev shrink\""), 2 + 1);
	cr_assert_eq(count(chart, "class=\"pool-ev grow\""), 1 + 1);
	cr_assert_eq(count(chart, "class=\"pool-ev preempt\""), 2 + 1);
	cr_assert_eq(count(chart, "class=\"pool-ev resume\""), 2 + 1);
	cr_assert_eq(count(chart, "<text class=\"pool-label"), 3);
	/* exp1's line: from 8 at its start down to 4, 3, 0, 3 and 0 (y grows downwards) */
	const char *pts = strstr(chart, "c0 mine\" points=\"") + strlen("c0 mine\" points=\"");
	double y[16];
	size_t ny = 0;
	while (*pts != '"' && ny < 16) {
		double x, yy;
		int used;
		cr_assert_eq(sscanf(pts, "%lf,%lf%n", &x, &yy, &used), 2);
		y[ny++] = yy;
		pts += used;
		while (*pts == ' ')
			pts++;
	}
	/* 0 at the window's start, then two points per step, then the end */
	cr_assert_eq(ny, 1 + 2 * 6 + 1);
	for (size_t k = 0; k < 6; k++) {
		if (k == 0 || k == 4)   /* up (y falls): the start at 8, the resume */
			cr_assert_lt(y[2 + 2 * k], y[1 + 2 * k], "step %zu", k);
		else
			cr_assert_gt(y[2 + 2 * k], y[1 + 2 * k], "step %zu", k);
	}
	cr_assert(strstr(html, "<li class=\"c1\">exp2/000001, priority 5000 &rarr; 10000</li>"));
	free(chart);
	strbuf_release(&sb);

	struct strbuf prom = STRBUF_INIT;
	report_prometheus(&prom, &exp, &sc);
	cr_assert(strstr(strbuf_str(&prom), "# TYPE aah_pool_events_total counter\n"));
	cr_assert(strstr(strbuf_str(&prom), "aah_pool_events_total{experiment=\"exp1\",trial=\"000001\",kind=\"shrink\"} 2\n"));
	cr_assert(strstr(strbuf_str(&prom), "aah_pool_events_total{experiment=\"exp1\",trial=\"000001\",kind=\"preempt\"} 1\n"));
	cr_assert(strstr(strbuf_str(&prom), "aah_pool_events_total{experiment=\"exp1\",trial=\"000001\",kind=\"grow\"} 0\n"));
	cr_assert_eq(count(strbuf_str(&prom), "aah_pool_events_total{"), REPORT_POOL_NKINDS);
	strbuf_release(&prom);
	report_score_release(&sc);
	report_exp_release(&exp);
	free(dir);
	free(root);
}

Test(report_pool, no_chart_for_an_experiment_outside_the_pool)
{
	char *root = xstrfmt("%s/experiments", tmpdir);
	char *dir = fx_exp_create(root, "exp9", 0);
	struct report_exp exp;
	cr_assert_eq(report_load(dir, &exp), 0);
	struct report_options opt = REPORT_OPTIONS_INIT;
	struct report_score sc;
	cr_assert_eq(report_score(&exp, &opt, &sc), 0);
	struct strbuf sb = STRBUF_INIT;
	report_html(&sb, &exp, &opt, &sc);
	cr_assert_null(strstr(strbuf_str(&sb), "chart-pool"));
	cr_assert(strstr(strbuf_str(&sb), "chart-timeline"));
	strbuf_reset(&sb);
	report_prometheus(&sb, &exp, &sc);
	cr_assert_null(strstr(strbuf_str(&sb), "aah_pool_events_total"));
	strbuf_release(&sb);
	report_score_release(&sc);
	report_exp_release(&exp);
	free(dir);
	free(root);
}
