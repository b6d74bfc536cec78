/* Unit tests for the network morphism tuner's batches (classArgs.search_batch,
 * runner/tuner/tuner_nm_batch.c): a batched proposal is predicted as a
 * fresh scan of it against the GP as it is then would predict it, while
 * the window moves under the batch; a result or search_batch proposals end
 * a batch, and so does a network that enters under it late; every proposal
 * is new and names its parent; the key is checked;
 * without it one search makes one proposal. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jsonfile.h"
#include "runner/tuner/distance.h"
#include "runner/tuner/gp.h"
#include "runner/tuner/graph.h"
#include "runner/tuner/tuner.h"
#include "runner/tuner/tuner_int.h"
#include "runner/tuner/tuner_nm_int.h" /* nm_batch_next, nm_kernel_row: the batch's own prediction */
#include "util.h"

static void setup(void)
{
	util_set_quiet(1);
}

TestSuite(tuner_batch, .init = setup);

#define MAXT 64

struct ramp {
	struct tuner *t;
	cJSON *ca;
	uint64_t hash[MAXT + 1];
	cJSON *arch[MAXT + 1];
	int picks;   /* proposals from the kept search so far */
};

static void ramp_start(struct ramp *r, const char *extra)
{
	memset(r, 0, sizeof(*r));
	char *text = xstrfmt("{\"optimize_mode\":\"maximize\",\"input_width\":28,"
			     "\"input_channel\":1,\"n_output_node\":10%s}", extra);
	cr_assert_eq(jsonfile_parse("class_args", text, &r->ca), 0);
	free(text);
	struct tuner_config cfg = { .name = "NetworkMorphism", .class_args = r->ca, .seed = 5,
				    .threads = 2 };
	cr_assert_eq(tuner_create(&r->t, &cfg), 0, "%s", util_last_error());
}

static void ramp_end(struct ramp *r)
{
	for (int s = 0; s <= MAXT; s++)
		cJSON_Delete(r->arch[s]);
	tuner_free(r->t);
	cJSON_Delete(r->ca);
}

static struct tuner_nm_stats stats(const struct ramp *r)
{
	struct tuner_nm_stats st;
	cr_assert_eq(tuner_nm_stats(r->t, &st), 0);
	return st;
}

static double meta_number(const cJSON *arch, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(arch, "meta"), key);
	cr_assert(cJSON_IsNumber(v), "meta.%s missing", key);
	return v->valuedouble;
}

/* What a fresh scan of arch against every member predicts now. */
static void fresh_prediction(struct tuner *t, const cJSON *arch, double *mean, double *std)
{
	struct nm *nm = t->priv;
	struct tgraph g;
	struct tdesc d;
	cr_assert_eq(tgraph_from_json(&g, arch, "proposal"), 0);
	tdesc_from_graph(&d, &g);
	int *idx = xmalloc((size_t)(nm->nitems + 1) * sizeof(int));
	double *kv = xmalloc((size_t)(nm->nitems + 1) * sizeof(double)), var;
	int nnz = nm_kernel_row(nm, &d, idx, kv);
	gp_predict(&nm->gp, idx, kv, nnz, mean, &var);
	*std = sqrt(var);
	free(kv);
	free(idx);
	tdesc_release(&d);
	tgraph_release(&g);
}

/* Trial s: from the kept batch when there is one (checked against a fresh
 * scan, then recorded as tuner_propose records it), else a search.
 * Returns whether it came from the batch. */
static int next(struct ramp *r, unsigned s)
{
	cJSON *params = NULL;
	int batched = 0;
	cJSON *arch = nm_batch_next(r->t);
	const cJSON *pick = cJSON_GetObjectItem(cJSON_GetObjectItem(arch, "meta"), "batch_pick");
	if (arch) {
		r->picks++;
		cr_assert(cJSON_IsNumber(pick) && pick->valueint == r->picks, "trial %u: batch_pick %d",
			  s, cJSON_IsNumber(pick) ? pick->valueint : -1);
		double mean, std;
		fresh_prediction(r->t, arch, &mean, &std);
		cr_assert_float_eq(meta_number(arch, "predicted_mean"), mean, 1e-9, "trial %u", s);
		cr_assert_float_eq(meta_number(arch, "predicted_std"), std, 1e-9,
				   "trial %u: the batch's std %.12g, a fresh scan's %.12g", s,
				   meta_number(arch, "predicted_std"), std);
		struct tuner_observation o = { .trial_seq = s, .arch = arch,
					       .state = TUNER_OBS_PENDING };
		cr_assert_eq(tuner_observe(r->t, &o), 0);
		batched = 1;
	} else {
		cr_assert_eq(tuner_propose(r->t, s, &arch, &params), 0, "trial %u: %s", s,
			     util_last_error());
		pick = cJSON_GetObjectItem(cJSON_GetObjectItem(arch, "meta"), "batch_pick");
		cr_assert_null(pick, "trial %u: a search's own proposal says batch_pick", s);
		r->picks = 1;   /* the search's own */
	}
	struct tgraph g;
	cr_assert_eq(tgraph_from_json(&g, arch, "proposal"), 0);
	r->hash[s] = tgraph_hash(&g);
	tgraph_release(&g);
	for (unsigned k = 1; k < s; k++)
		cr_assert_neq(r->hash[k], r->hash[s], "trial %u repeats trial %u", s, k);
	if (s > 1) {   /* every child names the trial it inherits from */
		const cJSON *meta = cJSON_GetObjectItem(arch, "meta");
		cr_assert_not_null(cJSON_GetObjectItem(meta, "morph"), "trial %u: no morph record", s);
		double p = meta_number(arch, "parent_trial");
		cr_assert(p >= 1 && p < s, "trial %u: parent %g", s, p);
	}
	r->arch[s] = arch;
	cJSON_Delete(params);
	return batched;
}

/* A ramp (nothing finished) under a window of 8: the window drops the
 * batch's parents and the members its candidates were scanned against,
 * and enters each batched proposal; every batched prediction must still be
 * a fresh scan's. */
Test(tuner_batch, a_batched_proposal_is_predicted_as_a_fresh_scan_would, .timeout = 60)
{
	struct ramp r;
	ramp_start(&r, ",\"search_batch\":4,\"gp_window\":8,\"gp_window_best\":2");
	int batched = 0;
	for (unsigned s = 1; s <= 30; s++)
		batched += next(&r, s);
	/* trial 1 is the start network; 2-30 are searches at 2, 6, 10, ... and
	 * three from each of them */
	cr_assert_eq(batched, 29 - 8, "%d batched", batched);
	cr_assert_eq(stats(&r).batch_picks, (unsigned long)batched);
	cr_assert(stats(&r).window_removals > 0);
	ramp_end(&r);
}

Test(tuner_batch, a_result_ends_the_batch, .timeout = 60)
{
	struct ramp r;
	ramp_start(&r, ",\"search_batch\":8");
	cr_assert_eq(next(&r, 1), 0);   /* the start network */
	cr_assert_eq(next(&r, 2), 0);   /* a search */
	cr_assert_eq(next(&r, 3), 1);
	cr_assert_eq(next(&r, 4), 1);
	struct tuner_observation o = { .trial_seq = 1, .arch = r.arch[1],
				       .state = TUNER_OBS_DONE, .metric = 0.8 };
	cr_assert_eq(tuner_observe(r.t, &o), 0);
	unsigned long searched = stats(&r).expansions;
	cr_assert_eq(next(&r, 5), 0, "a proposal after a result is a new search");
	cr_assert_gt(stats(&r).expansions, searched);
	cr_assert_eq(next(&r, 6), 1);
	o = (struct tuner_observation){ .trial_seq = 2, .arch = r.arch[2],
					.state = TUNER_OBS_FAILED };
	cr_assert_eq(tuner_observe(r.t, &o), 0);
	cr_assert_eq(next(&r, 7), 0, "a failure is a result too");
	cr_assert_eq(stats(&r).batch_picks, 3);
	ramp_end(&r);
}

/* Trial 2 is told first without its network (pending, proposed elsewhere),
 * a search keeps its candidates, then trial 2's network comes: rows that
 * cover it without it would predict wrong, so the batch ends. */
Test(tuner_batch, a_network_that_comes_to_light_late_ends_the_batch, .timeout = 60)
{
	struct ramp r, other;
	ramp_start(&other, "");
	next(&other, 1);
	next(&other, 2);
	ramp_start(&r, ",\"search_batch\":4");
	cr_assert_eq(next(&r, 1), 0);
	struct tuner_observation o = { .trial_seq = 2, .state = TUNER_OBS_PENDING };
	cr_assert_eq(tuner_observe(r.t, &o), 0);
	cr_assert_eq(next(&r, 3), 0);   /* a search */
	cr_assert_eq(next(&r, 4), 1);
	o.arch = other.arch[2];
	cr_assert_eq(tuner_observe(r.t, &o), 0);
	r.hash[2] = other.hash[2];
	cr_assert_eq(next(&r, 5), 0, "trial 2's network entered under the batch");
	cr_assert_eq(next(&r, 6), 1);
	ramp_end(&other);
	ramp_end(&r);
}

Test(tuner_batch, one_search_a_proposal_without_the_key, .timeout = 60)
{
	struct ramp r;
	ramp_start(&r, "");
	for (unsigned s = 1; s <= 6; s++)
		cr_assert_eq(next(&r, s), 0, "trial %u", s);
	cr_assert_eq(stats(&r).batch_picks, 0);
	ramp_end(&r);
}

Test(tuner_batch, class_args_are_checked)
{
	const char *bad[] = { ",\"search_batch\":0", ",\"search_batch\":257",
			      ",\"search_batch\":\"many\"" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char *text = xstrfmt("{\"optimize_mode\":\"maximize\"%s}", bad[i]);
		cJSON *ca = NULL;
		cr_assert_eq(jsonfile_parse("class_args", text, &ca), 0);
		struct tuner_config cfg = { .name = "NetworkMorphism", .class_args = ca };
		struct tuner *t;
		cr_assert_eq(tuner_create(&t, &cfg), -1, "accepted %s", bad[i]);
		cr_assert_not_null(strstr(util_last_error(), "search_batch"), "%s",
				   util_last_error());
		cJSON_Delete(ca);
		free(text);
	}
}
