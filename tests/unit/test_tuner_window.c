/* Unit tests for the network morphism tuner's window of observations
 * (classArgs.gp_window, runner/tuner/tuner_nm_window.c): the GP's row
 * removal against dense solves (once, and over many add/remove cycles),
 * which trials the window keeps, a best trial coming back, the classArgs
 * checks, and that a window larger than the history changes nothing. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gp_dense.h" /* rbf, dense_solve */
#include "jsonfile.h"
#include "runner/tuner/gp.h"
#include "runner/tuner/graph.h"
#include "runner/tuner/rng.h"
#include "runner/tuner/tuner.h"
#include "runner/tuner/tuner_int.h"
#include "runner/tuner/tuner_nm_int.h" /* struct nm: which trials are members */
#include "util.h"

static void setup(void)
{
	util_set_quiet(1);
}

TestSuite(tuner_window, .init = setup);

/* ---- the GP without some of its rows, against a dense solve ---- */

#define MAXP 64
static double pts[2000][3];

static double target(const double *p)
{
	return sin(p[0]) + p[1] - 0.3 * p[2];
}

/* The GP's rows are the points ids[0..g->n) in order: its predictions at a
 * few points must be the dense solve's over those points, with its jitters. */
static void check_against_dense(const struct gp *g, const int *ids, struct trng *r, double tol)
{
	int n = g->n, idx[MAXP];
	static double a[MAXP * (MAXP + 1)];
	double kv[MAXP], sol[MAXP];
	cr_assert(n <= MAXP);
	for (int t = 0; t < 4; t++) {
		double x[3] = { 3 * trng_uniform(r), 3 * trng_uniform(r), 3 * trng_uniform(r) };
		double mean = 0, var = 1, m, v;
		for (int pass = 0; pass < 2; pass++) {
			for (int i = 0; i < n; i++) {
				for (int j = 0; j < n; j++)
					a[i * (n + 1) + j] = i == j ? 1.0 + g->jitter[i]
								    : rbf(pts[ids[i]], pts[ids[j]]);
				idx[i] = i;
				kv[i] = rbf(x, pts[ids[i]]);
				a[i * (n + 1) + n] = pass ? kv[i] : target(pts[ids[i]]);
			}
			dense_solve(n, a, sol);
			for (int i = 0; i < n; i++) {
				if (pass)
					var -= kv[i] * sol[i];
				else
					mean += kv[i] * sol[i];
			}
		}
		gp_predict(g, idx, kv, n, &m, &v);
		cr_assert_float_eq(m, mean, tol, "mean %.12g, dense %.12g (n %d)", m, mean, n);
		cr_assert_float_eq(v, var < 0 ? 0 : var, tol, "var %.12g, dense %.12g", v, var);
	}
}

static void add_point(struct gp *g, int *ids, int id)
{
	int idx[MAXP];
	double kv[MAXP];
	for (int j = 0; j < g->n; j++) {
		idx[j] = j;
		kv[j] = rbf(pts[id], pts[ids[j]]);
	}
	ids[gp_add(g, idx, kv, g->n, target(pts[id]))] = id;
}

static void remove_row(struct gp *g, int *ids, int row)
{
	gp_remove(g, row);
	memmove(&ids[row], &ids[row + 1], (size_t)(g->n - row) * sizeof(*ids));
}

Test(tuner_window, gp_remove_matches_the_gp_without_the_row)
{
	struct trng r;
	trng_seed(&r, 3, 0);
	for (int i = 0; i < 60; i++)
		for (int k = 0; k < 3; k++)
			pts[i][k] = 3 * trng_uniform(&r);
	struct gp g;
	gp_init(&g);
	int ids[MAXP];
	for (int i = 0; i < 40; i++)
		add_point(&g, ids, i);
	cr_assert_not_null(g.L);
	check_against_dense(&g, ids, &r, 1e-8);
	/* the first, a middle and the last row; then new points, added through
	 * the inverse alone (L is gone) */
	int rows[] = { 0, 17, 37, 20 };
	for (size_t k = 0; k < ARRAY_SIZE(rows); k++) {
		remove_row(&g, ids, rows[k]);
		cr_assert_null(g.L);
		cr_assert_eq(g.n, 39 - (int)k);
		check_against_dense(&g, ids, &r, 1e-8);
	}
	for (int i = 40; i < 60; i++)
		add_point(&g, ids, i);
	cr_assert_eq(g.n, 56);
	cr_assert_eq(g.removed, 4);
	check_against_dense(&g, ids, &r, 1e-8);
	gp_release(&g);
}

/* A window of 25 slid over 2000 points (one add and one removal each):
 * the inverse, downdated and updated 4000 times, still predicts as a fresh
 * dense solve over the 25 points it holds. */
Test(tuner_window, gp_sliding_window_does_not_drift)
{
	struct trng r;
	trng_seed(&r, 11, 0);
	for (int i = 0; i < 2000; i++)
		for (int k = 0; k < 3; k++)
			pts[i][k] = 3 * trng_uniform(&r);
	struct gp g;
	gp_init(&g);
	int ids[MAXP];
	for (int i = 0; i < 2000; i++) {
		add_point(&g, ids, i);
		if (g.n > 25)   /* the oldest but the first two, which stay */
			remove_row(&g, ids, 2);
	}
	cr_assert_eq(g.n, 25);
	cr_assert_eq(ids[0], 0);
	cr_assert_eq(ids[2], 1977);
	check_against_dense(&g, ids, &r, 1e-6);
	gp_release(&g);
}

/* ---- the window in the tuner ---- */

static cJSON *class_args(const char *extra)
{
	char *text = xstrfmt("{\"optimize_mode\":\"maximize\",\"input_width\":28,"
			     "\"input_channel\":1,\"n_output_node\":10%s}", extra);
	cJSON *d = NULL;
	cr_assert_eq(jsonfile_parse("t", text, &d), 0);
	free(text);
	return d;
}

/* A synthetic accuracy: deeper is better, each layer count its own. */
static double accuracy_of(const cJSON *arch, unsigned seq)
{
	const cJSON *layers = cJSON_GetObjectItemCaseSensitive(arch, "layers");
	return 0.5 + 0.004 * cJSON_GetArraySize(layers) + 1e-5 * (seq % 97);
}

struct run {
	struct tuner *t;
	cJSON *ca;
	uint64_t hashes[200];
	double metric[200];
	cJSON *arch[200];
};

static void start(struct run *run, const char *extra)
{
	memset(run, 0, sizeof(*run));
	run->ca = class_args(extra);
	struct tuner_config cfg = { .name = "NetworkMorphism", .class_args = run->ca, .seed = 9,
				    .threads = 1 };
	cr_assert_eq(tuner_create(&run->t, &cfg), 0, "%s", util_last_error());
}

static void finish(struct run *run)
{
	for (size_t i = 0; i < ARRAY_SIZE(run->arch); i++)
		cJSON_Delete(run->arch[i]);
	tuner_free(run->t);
	cJSON_Delete(run->ca);
}

/* Propose trial s (distinct from every one before) and keep it. */
static void propose(struct run *run, unsigned s)
{
	cJSON *params;
	cr_assert_eq(tuner_propose(run->t, s, &run->arch[s], &params), 0, "trial %u: %s", s,
		     util_last_error());
	struct tgraph g;
	cr_assert_eq(tgraph_from_json(&g, run->arch[s], "proposal"), 0);
	run->hashes[s] = tgraph_hash(&g);
	tgraph_release(&g);
	for (unsigned k = 1; k < s; k++)
		cr_assert_neq(run->hashes[k], run->hashes[s], "trial %u repeats trial %u", s, k);
	run->metric[s] = accuracy_of(run->arch[s], s);
	cJSON_Delete(params);
}

static void finished(struct run *run, unsigned s, double metric)
{
	struct tuner_observation o = { .trial_seq = s, .arch = run->arch[s],
				       .state = TUNER_OBS_DONE, .metric = metric };
	cr_assert_eq(tuner_observe(run->t, &o), 0);
}

static int member(const struct run *run, unsigned s)
{
	const struct nm *nm = run->t->priv;
	for (int i = 0; i < nm->nitems; i++)
		if (run->t->hist[nm->items[i].hist].seq == s)
			return 1;
	return 0;
}

Test(tuner_window, keeps_the_best_and_the_most_recent, .timeout = 60)
{
	struct run run;
	start(&run, ",\"gp_window\":16,\"gp_window_best\":4");
	enum { N = 60 };
	for (unsigned s = 1; s <= N; s++) {
		propose(&run, s);
		finished(&run, s, run.metric[s]);
	}
	const struct nm *nm = run.t->priv;
	cr_assert_eq(nm->nitems, 16);
	cr_assert_eq(nm->gp.n, 16);
	/* the 4 best by metric (ties: the earlier), then the most recent */
	unsigned best[4] = { 0 };
	for (int k = 0; k < 4; k++)
		for (unsigned s = 1; s <= N; s++) {
			int taken = 0;
			for (int j = 0; j < k; j++)
				taken |= best[j] == s;
			if (!taken && (!best[k] || run.metric[s] > run.metric[best[k]]))
				best[k] = s;
		}
	for (int k = 0; k < 4; k++)
		cr_assert(member(&run, best[k]), "best trial %u (%.5f) left the window", best[k],
			  run.metric[best[k]]);
	unsigned recent = 0;
	for (unsigned s = N; s >= 1 && recent < 12; s--) {
		int is_best = 0;
		for (int k = 0; k < 4; k++)
			is_best |= best[k] == s;
		if (is_best)
			continue;
		cr_assert(member(&run, s), "recent trial %u left the window", s);
		recent++;
	}
	/* the others are out, with their arch.json dropped from memory */
	unsigned out = 0;
	for (size_t i = 0; i < run.t->nhist; i++) {
		unsigned s = run.t->hist[i].seq;
		if (member(&run, s)) {
			cr_assert_not_null(run.t->hist[i].arch, "member %u lost its arch", s);
			continue;
		}
		cr_assert_null(run.t->hist[i].arch, "trial %u left but keeps its arch", s);
		out++;
	}
	cr_assert_eq(out, N - 16);
	struct tuner_nm_stats st;
	cr_assert_eq(tuner_nm_stats(run.t, &st), 0);
	cr_assert_eq(st.window_removals, N - 16);
	/* proposals go on, distinct from every trial, also those out of the window */
	for (unsigned s = N + 1; s <= N + 10; s++)
		propose(&run, s);
	finish(&run);
}

Test(tuner_window, a_trial_that_left_comes_back_only_as_one_of_the_best, .timeout = 60)
{
	struct run run;
	start(&run, ",\"gp_window\":8,\"gp_window_best\":2");
	for (unsigned s = 1; s <= 30; s++) {
		propose(&run, s);
		if (s != 3 && s != 4)   /* 3 and 4 stay pending and leave as old */
			finished(&run, s, run.metric[s]);
	}
	cr_assert_not(member(&run, 3));
	cr_assert_not(member(&run, 4));
	finished(&run, 4, 0.01);   /* a poor result stays out, and holds no arch.json */
	cr_assert_not(member(&run, 4));
	for (size_t i = 0; i < run.t->nhist; i++)
		if (run.t->hist[i].seq == 4)
			cr_assert_null(run.t->hist[i].arch, "trial 4 stays out but keeps its arch");
	finished(&run, 3, 0.99);   /* the best of all comes back */
	cr_assert(member(&run, 3));
	const struct nm *nm = run.t->priv;
	cr_assert_eq(nm->nitems, 8);
	propose(&run, 31);
	finish(&run);
}

Test(tuner_window, class_args_are_checked)
{
	const char *bad[] = { ",\"gp_window\":5", ",\"gp_window\":-1", ",\"gp_window\":\"big\"",
			      ",\"gp_window\":16,\"gp_window_best\":15" };
	const char *key[] = { "gp_window", "gp_window", "gp_window", "gp_window_best" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		cJSON *ca = class_args(bad[i]);
		struct tuner_config cfg = { .name = "NetworkMorphism", .class_args = ca };
		struct tuner *t;
		cr_assert_eq(tuner_create(&t, &cfg), -1, "accepted %s", bad[i]);
		cr_assert_not_null(strstr(util_last_error(), key[i]), "%s", util_last_error());
		cJSON_Delete(ca);
	}
}

/* While the history fits, the window is the exact GP: the same proposals
 * as without one (gp_window 0). */
static char *proposals(const char *extra)
{
	struct run run;
	start(&run, extra);
	cJSON *all = cJSON_CreateArray();
	for (unsigned s = 1; s <= 30; s++) {
		propose(&run, s);
		cJSON_AddItemToArray(all, cJSON_Duplicate(run.arch[s], 1));
		if (s % 4)
			finished(&run, s, run.metric[s]);
	}
	char *text = cJSON_PrintUnformatted(all);
	cJSON_Delete(all);
	finish(&run);
	return text;
}

Test(tuner_window, a_window_the_history_fits_in_is_exact, .timeout = 60)
{
	char *exact = proposals(",\"gp_window\":0");
	char *fits = proposals(",\"gp_window\":30");
	char *deflt = proposals("");
	char *small = proposals(",\"gp_window\":8");
	cr_assert_str_eq(exact, fits);
	cr_assert_str_eq(exact, deflt);
	cr_assert_str_neq(exact, small, "a window of 8 over 30 trials changed nothing");
	free(exact);
	free(fits);
	free(deflt);
	free(small);
}

/* A runner that starts or resumes learns the whole history at once
 * (tuner_catch_up without a cache: tuner_ops.load): past the window, only
 * the trials the window ends with enter the GP, the same ones a tuner that
 * saw them one at a time keeps, and every architecture is still seen. */
Test(tuner_window, a_fresh_tuner_loads_only_the_window, .timeout = 60)
{
	struct run live;
	start(&live, ",\"gp_window\":16,\"gp_window_best\":4");
	for (unsigned s = 1; s <= 50; s++) {
		propose(&live, s);
		if (s != 45)   /* one still training */
			finished(&live, s, live.metric[s]);
	}
	struct run fresh;
	start(&fresh, ",\"gp_window\":16,\"gp_window_best\":4");
	tuner_defer(fresh.t);
	for (unsigned s = 1; s <= 50; s++) {
		struct tuner_observation o = { .trial_seq = s, .arch = live.arch[s],
					       .state = s == 45 ? TUNER_OBS_PENDING : TUNER_OBS_DONE,
					       .metric = live.metric[s] };
		cr_assert_eq(tuner_observe(fresh.t, &o), 0);
		fresh.hashes[s] = live.hashes[s];
	}
	cr_assert_eq(tuner_catch_up(fresh.t, NULL, NULL), 0);
	const struct nm *nm = fresh.t->priv;
	cr_assert_eq(nm->nitems, 16);
	for (unsigned s = 1; s <= 50; s++)
		cr_assert_eq(member(&fresh, s), member(&live, s), "trial %u: %s in the fresh window",
			     s, member(&fresh, s) ? "in" : "not");
	struct tuner_nm_stats st;
	cr_assert_eq(tuner_nm_stats(fresh.t, &st), 0);
	cr_assert_eq(st.window_removals, 34);
	for (unsigned s = 51; s <= 56; s++)   /* distinct from all 50, out of the window too */
		propose(&fresh, s);
	finish(&fresh);
	finish(&live);
}

/* The same load as a runner's (tuner_load_experiment: TUNER_DEFER_BULK)
 * sheds as it reads: every gp_window trials it drops the arch.json of each
 * trial the window cannot end with, so it never holds every one; the
 * window, the removals and the next proposals are those of the load that
 * keeps them all. Window 16, keeping the best `best`. */
static void check_shedding(int best)
{
	char w[64];
	snprintf(w, sizeof(w), ",\"gp_window\":16,\"gp_window_best\":%d", best);
	enum { N = 64 };
	struct run live, fresh[2];
	start(&live, w);
	for (unsigned s = 1; s <= N; s++) {
		propose(&live, s);
		if (s % 7 != 3)   /* some still training */
			finished(&live, s, live.metric[s]);
	}
	int most_held[2] = { 0, 0 };
	unsigned long removals[2];
	for (int bulk = 0; bulk < 2; bulk++) {
		struct run *f = &fresh[bulk];
		start(f, w);
		if (bulk)
			f->t->deferred = TUNER_DEFER_BULK;
		else
			tuner_defer(f->t);
		for (unsigned s = 1; s <= N; s++) {
			struct tuner_observation o = {
				.trial_seq = s, .arch = live.arch[s], .metric = live.metric[s],
				.state = s % 7 == 3 ? TUNER_OBS_PENDING : TUNER_OBS_DONE };
			cr_assert_eq(tuner_observe(f->t, &o), 0);
			int held = 0;
			for (size_t i = 0; i < f->t->nhist; i++)
				held += f->t->hist[i].arch != NULL;
			if (held > most_held[bulk])
				most_held[bulk] = held;
		}
		cr_assert_eq(tuner_catch_up(f->t, NULL, NULL), 0);
		for (unsigned s = 1; s <= N; s++)
			cr_assert_eq(member(f, s), member(&live, s), "best %d, bulk %d, trial %u", best,
				     bulk, s);
		struct tuner_nm_stats st;
		cr_assert_eq(tuner_nm_stats(f->t, &st), 0);
		removals[bulk] = st.window_removals;
	}
	cr_assert_eq(most_held[0], N);
	/* the last 16 usable, the best so far, and 16 more since the last sweep */
	cr_assert_leq(most_held[1], 2 * 16 + best, "best %d: held %d arch.json at once", best,
		      most_held[1]);
	cr_assert_eq(removals[0], removals[1]);
	cr_assert_eq(removals[1], N - 16);
	for (unsigned s = N + 1; s <= N + 6; s++) {
		propose(&fresh[0], s);
		propose(&fresh[1], s);
		cr_assert_eq(fresh[0].hashes[s], fresh[1].hashes[s], "best %d, trial %u", best, s);
	}
	finish(&fresh[0]);
	finish(&fresh[1]);
	finish(&live);
}

Test(tuner_window, a_bulk_load_sheds_what_the_window_cannot_hold, .timeout = 60)
{
	check_shedding(4);
	check_shedding(0);   /* no best kept: the bar is above every trial */
}

Test(tuner_window, proposers_outside_the_runner_serve_up_to_the_exact_gp)
{
	struct run run;
	start(&run, "");
	cr_assert_eq(tuner_proposer_limit(run.t), 1000);
	finish(&run);
	start(&run, ",\"gp_window\":64");
	cr_assert_eq(tuner_proposer_limit(run.t), 64);
	finish(&run);
	start(&run, ",\"gp_window\":0");   /* exact always: the file would grow as n^2 */
	cr_assert_eq(tuner_proposer_limit(run.t), 1000);
	finish(&run);
	struct tuner *t;
	struct tuner_config cfg = { .name = "TPE" };
	cr_assert_eq(tuner_create(&t, &cfg), 0);
	cr_assert_eq(tuner_proposer_limit(t), 0);   /* no state file */
	tuner_free(t);
}
