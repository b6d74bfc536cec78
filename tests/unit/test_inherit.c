/* test_inherit.c: weight inheritance through each morphism. The tuner's
 * own morphisms and record (runner/tuner/) on one side, the trainer's
 * mapping (trialimg/inherit.c) on the other: before any training, the
 * child's logits equal its parent's (reference backend, inference mode). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runner/tuner/morph.h"
#include "runner/tuner/morph_record.h"
#include "trialimg/inherit.h"
#include "util.h"

#define N 3

struct pair {
	struct model parent, child;
	struct ops_ctx ctx;
	float want[N * 5], got[N * 5];
};

/* The parent: NNI's small CNN, with trained-looking batchnorm statistics. */
static cJSON *parent_doc(struct tgraph *pg)
{
	struct tgraph g;
	cr_assert_eq(tmodel_cnn(&g, 12, 2, 5), 0);
	cJSON *doc = tgraph_to_json(&g, NULL);
	tgraph_release(&g);
	cr_assert_eq(tgraph_from_json(pg, doc, "parent"), 0);
	return doc;
}

static void randomise_stats(struct model *m, uint64_t seed)
{
	for (int i = 0; i < m->n_layers; i++) {
		struct ops_layer *op = &m->layers[i].op;
		if (op->cfg.type != OPS_BATCHNORM)
			continue;
		for (int k = 0; k < op->out.c; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			float u = (float)((seed >> 40) & 0xffff) / 65536.0f;
			op->run_mean[k] = u - 0.5f;
			op->run_var[k] = 0.5f + u;
			op->gamma[k] = 0.8f + 0.4f * u;
			op->beta[k] = 0.3f * (u - 0.5f);
		}
	}
}

/* Apply the kinds in order (each retried with other draws until it
 * applies), write the record, build both models and run them. */
static void run_chain(const int *kinds, int n, float noise, int inherit, struct pair *p)
{
	struct tgraph pg, steps[4];
	const struct tgraph *sp[4];
	cJSON *pdoc = parent_doc(&pg);
	for (int k = 0; k < n; k++) {
		tgraph_copy(&steps[k], k ? &steps[k - 1] : &pg);
		int rc = 1;
		for (uint64_t s = 1; s < 64 && rc == 1; s++) {
			struct trng r;
			trng_seed(&r, s * 31 + (uint64_t)k, (uint64_t)kinds[k]);
			rc = morph_apply(&steps[k], kinds[k], &r, NULL);
		}
		cr_assert_eq(rc, 0, "morphism %s did not apply", morph_name(kinds[k]));
		sp[k] = &steps[k];
	}
	cJSON *rec = morph_record(&pg, pdoc, 3, NULL, sp, kinds, n);
	cr_assert(rec);
	cJSON *cdoc = tgraph_to_json(&steps[n - 1], NULL);
	cr_assert_eq(model_parse(&p->parent, pdoc, "parent"), 0);
	cr_assert_eq(model_parse(&p->child, cdoc, "child"), 0);
	cr_assert_eq(model_alloc(&p->parent, N, 11), 0);
	cr_assert_eq(model_alloc(&p->child, N, 12), 0);
	randomise_stats(&p->parent, 5);
	if (inherit)
		cr_assert_eq(inherit_map(&p->child, &p->parent, rec, 7, noise), 0, "%s",
			     util_last_error());
	cr_assert_eq(ops_ctx_init(&p->ctx, "ref", 1, 1), 0);
	float x[N * 12 * 12 * 2];
	uint64_t s = 99;
	for (size_t i = 0; i < sizeof(x) / sizeof(x[0]); i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		x[i] = (float)((s >> 40) & 0xffff) / 65536.0f * 2 - 1;
	}
	cr_assert_eq(model_forward(&p->parent, &p->ctx, x, N, 0), 0);
	memcpy(p->want, model_logits(&p->parent), sizeof(p->want));
	cr_assert_eq(model_forward(&p->child, &p->ctx, x, N, 0), 0);
	memcpy(p->got, model_logits(&p->child), sizeof(p->got));
	model_release(&p->child, &p->ctx);
	model_release(&p->parent, &p->ctx);
	ops_ctx_release(&p->ctx);
	cJSON_Delete(cdoc);
	cJSON_Delete(rec);
	cJSON_Delete(pdoc);
	for (int k = 0; k < n; k++)
		tgraph_release(&steps[k]);
	tgraph_release(&pg);
}

static double max_diff(const struct pair *p)
{
	double d = 0;
	for (int i = 0; i < N * 5; i++)
		d = fmax(d, fabs((double)p->want[i] - p->got[i]) / (1.0 + fabs(p->want[i])));
	return d;
}

static void check_preserved(const int *kinds, int n)
{
	struct pair p;
	run_chain(kinds, n, 0.05f, 1, &p);
	double d = max_diff(&p);
	cr_assert(d < 1e-4, "child logits differ from the parent's by %g", d);
	/* the same child from its own initialisation computes something else */
	run_chain(kinds, n, 0.05f, 0, &p);
	cr_assert(max_diff(&p) > 1e-3, "the check cannot tell: %g", max_diff(&p));
}

Test(inherit, deeper)
{
	int k[] = { MORPH_DEEPER };
	check_preserved(k, 1);
}

Test(inherit, wider)
{
	int k[] = { MORPH_WIDER };
	check_preserved(k, 1);
}

Test(inherit, add_skip)
{
	int k[] = { MORPH_ADD_SKIP };
	check_preserved(k, 1);
}

Test(inherit, concat_skip)
{
	int k[] = { MORPH_CONCAT_SKIP };
	check_preserved(k, 1);
}

Test(inherit, chains_of_morphisms)
{
	int a[] = { MORPH_DEEPER, MORPH_WIDER, MORPH_CONCAT_SKIP };
	check_preserved(a, 3);
	int b[] = { MORPH_CONCAT_SKIP, MORPH_WIDER, MORPH_ADD_SKIP, MORPH_DEEPER };
	check_preserved(b, 4);
}

Test(inherit, record_names_its_layers)
{
	struct tgraph pg, c;
	cJSON *pdoc = parent_doc(&pg);
	tgraph_copy(&c, &pg);
	struct trng r;
	trng_seed(&r, 3, 0);
	cr_assert_eq(morph_apply(&c, MORPH_DEEPER, &r, NULL), 0);
	const struct tgraph *sp[1] = { &c };
	int kinds[1] = { MORPH_DEEPER };
	cJSON *rec = morph_record(&pg, pdoc, 12, NULL, sp, kinds, 1);
	char *s = cJSON_PrintUnformatted(rec);
	cr_assert(strstr(s, "\"format\":\"aah-morph/1\",\"parent_trial\":\"000012\""), "%s", s);
	cr_assert(strstr(s, "\"op\":\"deeper\""), "%s", s);
	cr_assert(strstr(s, "\"init\":\"identity\""), "%s", s);
	/* every layer of the parent is inherited by the child */
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(rec, "inherit")), pg.nlayers);
	cr_assert_null(cJSON_GetObjectItem(rec, "parent_dir"), "the parent's trial directory: no path");
	cJSON_free(s);
	cJSON_Delete(rec);
	/* a parent whose last launch ran in a place of its own: named from here */
	rec = morph_record(&pg, pdoc, 12, "attempt-2.1", sp, kinds, 1);
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(rec, "parent_dir")),
			 "../000012/attempt-2.1");
	cJSON_Delete(rec);
	rec = morph_record(&pg, pdoc, 12, "", sp, kinds, 1);
	cr_assert_null(cJSON_GetObjectItem(rec, "parent_dir"), "\"\": the trial directory");
	cJSON_Delete(rec);
	cJSON_Delete(pdoc);
	tgraph_release(&c);
	tgraph_release(&pg);
}

Test(inherit, a_record_that_misses_a_layer_is_refused)
{
	struct tgraph pg;
	cJSON *pdoc = parent_doc(&pg);
	struct model pm = { 0 }, cm = { 0 };
	cr_assert_eq(model_parse(&pm, pdoc, "p"), 0);
	cr_assert_eq(model_parse(&cm, pdoc, "c"), 0);
	cr_assert_eq(model_alloc(&pm, 1, 1), 0);
	cr_assert_eq(model_alloc(&cm, 1, 2), 0);
	cJSON *rec = cJSON_Parse("{\"format\":\"aah-morph/1\",\"parent_trial\":\"000001\","
				 "\"operations\":[],\"inherit\":[]}");
	util_set_quiet(1);
	cr_assert_eq(inherit_map(&cm, &pm, rec, 1, 0), -1);
	util_set_quiet(0);
	cr_assert(strstr(util_last_error(), "neither inherited nor added"), "%s", util_last_error());
	cJSON_Delete(rec);
	model_release(&cm, NULL);
	model_release(&pm, NULL);
	cJSON_Delete(pdoc);
	tgraph_release(&pg);
}
