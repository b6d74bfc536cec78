/* Activations kept blocked (OPS_BLOCKED8/16, oneDNN's nChw8c/nChw16c)
 * between layers: the layout conversion itself, the layouts the model picks,
 * and a net with every op that takes blocked tensors, trained one step
 * through the model on each backend that has such ops, in the layout the
 * backend picked for this machine and in both block widths, against the
 * same net on the reference backend (all NHWC): every activation, every
 * gradient of an activation and of a parameter. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend_index.h"
#include "cuda_skip.h"
#include "kernels/ops.h"
#include "trialimg/model.h"
#include "util.h"


enum { N = 4, H = 8, W = 8, C = 3, K = 10 };

/* 32 channels: with 16, nChw16c and NHWC are the same bytes.
 * c0 reads the NHWC input; c0..ap may stay blocked (conv, batchnorm+relu,
 * add+relu, a concat of two blocked tensors, max pooling, a standalone
 * relu, average pooling); dropout and flatten take NHWC only, so c2
 * converts back, gp's rank-2 output is NHWC and so is the concat of
 * rank-2 tensors that reads it. */
static const char *net =
	"{\"format\":\"aah-arch/1\",\"input\":{\"height\":8,\"width\":8,\"channels\":3},"
	"\"num_classes\":10,\"output\":\"out\",\"layers\":["
	"{\"id\":\"c0\",\"type\":\"conv2d\",\"inputs\":[\"input\"],\"filters\":32,\"kernel\":3,\"padding\":\"same\"},"
	"{\"id\":\"b0\",\"type\":\"batchnorm\",\"inputs\":[\"c0\"]},"
	"{\"id\":\"r0\",\"type\":\"relu\",\"inputs\":[\"b0\"]},"
	"{\"id\":\"c1\",\"type\":\"conv2d\",\"inputs\":[\"r0\"],\"filters\":32,\"kernel\":3,\"padding\":\"same\",\"bias\":false},"
	"{\"id\":\"b1\",\"type\":\"batchnorm\",\"inputs\":[\"c1\"]},"
	"{\"id\":\"ad\",\"type\":\"add\",\"inputs\":[\"b1\",\"r0\"]},"
	"{\"id\":\"ar\",\"type\":\"relu\",\"inputs\":[\"ad\"]},"
	"{\"id\":\"cb\",\"type\":\"concat\",\"inputs\":[\"ar\",\"r0\"]},"
	"{\"id\":\"mp\",\"type\":\"maxpool\",\"inputs\":[\"cb\"],\"kernel\":2},"
	"{\"id\":\"rl\",\"type\":\"relu\",\"inputs\":[\"mp\"]},"
	"{\"id\":\"ap\",\"type\":\"avgpool\",\"inputs\":[\"rl\"],\"kernel\":3,\"stride\":1,\"padding\":\"same\"},"
	"{\"id\":\"c2\",\"type\":\"conv2d\",\"inputs\":[\"ap\"],\"filters\":32,\"kernel\":1},"
	"{\"id\":\"gp\",\"type\":\"global_avg_pool\",\"inputs\":[\"c2\"]},"
	"{\"id\":\"dr\",\"type\":\"dropout\",\"inputs\":[\"c2\"],\"rate\":0.2},"
	"{\"id\":\"fl\",\"type\":\"flatten\",\"inputs\":[\"dr\"]},"
	"{\"id\":\"cc\",\"type\":\"concat\",\"inputs\":[\"gp\",\"fl\"]},"
	"{\"id\":\"out\",\"type\":\"dense\",\"inputs\":[\"cc\"],\"units\":10}]}";

static uint64_t seed;
static float frand(void)
{
	seed = seed * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((double)(seed >> 11) / 9007199254740992.0) * 2 - 1;
}

Test(layout, convert_places_each_element_as_documented)
{
	struct ops_shape s = {.h = 2, .w = 3, .c = 32};
	enum { n = 2, count = n * 2 * 3 * 32 };
	static float a[count], b[count], back[count], b8[count];
	for (int i = 0; i < count; i++)
		a[i] = (float)i;
	ops_layout_convert(b, OPS_BLOCKED16, a, OPS_NHWC, n, &s);
	/* (i=0, y=0, x=1, ch=17): NHWC ((0*2 + 0)*3 + 1)*32 + 17 = 49;
	 * blocked (((0*2 + 1)*2 + 0)*3 + 1)*16 + 1 = 113 */
	cr_assert_eq(b[113], 49.0f);
	ops_layout_convert(back, OPS_NHWC, b, OPS_BLOCKED16, n, &s);
	cr_assert_eq(memcmp(a, back, sizeof(a)), 0);
	/* width 8: (((0*4 + 2)*2 + 0)*3 + 1)*8 + 1 = 105 */
	ops_layout_convert(b8, OPS_BLOCKED8, a, OPS_NHWC, n, &s);
	cr_assert_eq(b8[105], 49.0f);
	/* blocked to blocked of another width, and back to NHWC */
	ops_layout_convert(b8, OPS_BLOCKED8, b, OPS_BLOCKED16, n, &s);
	cr_assert_eq(b8[105], 49.0f);
	ops_layout_convert(back, OPS_NHWC, b8, OPS_BLOCKED8, n, &s);
	cr_assert_eq(memcmp(a, back, sizeof(a)), 0);
	cr_assert(ops_blockable(&s, OPS_BLOCKED16));
	cr_assert(!ops_blockable(&s, OPS_NHWC));
	cr_assert(!ops_blockable(&(struct ops_shape){.h = 2, .w = 3, .c = 24}, OPS_BLOCKED16));
	cr_assert(ops_blockable(&(struct ops_shape){.h = 2, .w = 3, .c = 24}, OPS_BLOCKED8));
	cr_assert(!ops_blockable(&(struct ops_shape){.h = 1, .w = 1, .c = 32}, OPS_BLOCKED8));
}

static struct model_layer *layer(struct model *m, const char *id)
{
	int i = model_find(m, id);
	cr_assert(i >= 0, "no layer %s", id);
	return &m->layers[i];
}

/* The model's layer `id` activation (or its gradient) in NHWC. */
static void nhwc_of(const struct model *m, const struct model_layer *L, const float *src,
		    float *dst)
{
	(void)m;
	ops_layout_convert(dst, OPS_NHWC, src, L->op.out_layout, N, &L->op.out);
}

static void close_enough(const char *be, const char *what, const char *id, const float *a,
			 const float *ref, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cr_assert(fabsf(a[i] - ref[i]) <= 1e-4f + 2e-3f * fabsf(ref[i]),
			  "%s: %s %s[%zu]: blocked %g, reference %g", be, what, id, i, (double)a[i],
			  (double)ref[i]);
}

/* One forward + backward of the net on backend `name` (and on ref). */
static void step(struct model *m, struct ops_ctx *ctx, const float *x, const float *g)
{
	cr_assert_eq(model_forward(m, ctx, x, N, 1), 0, "%s", util_last_error());
	cr_assert_eq(model_backward(m, ctx, x, N, g), 0, "%s", util_last_error());
}

static void setup_model(struct model *m)
{
	cJSON *doc = cJSON_Parse(net);
	cr_assert_not_null(doc);
	cr_assert_eq(model_parse(m, doc, "layout net"), 0, "%s", util_last_error());
	cJSON_Delete(doc);
	m->keep_grads = 1; /* every layer's gradient is compared */
	cr_assert_eq(model_alloc(m, N, 5), 0);
	seed = 99;
	for (size_t i = m->n_decayed; i < m->n_params; i++)  /* non-trivial biases, BN affine */
		m->params[i] = 0.5f + 0.5f * frand();
}

/* forced: the blocked layout to run in (OPS_NHWC: the backend's own). */
static void blocked_matches_reference(const struct ops_backend *be, enum ops_layout forced)
{
	struct model m, r;
	struct ops_ctx ctx, ref;
	int blocked_ops = 0;
	for (int t = 0; t < OPS_NTYPES; t++)
		blocked_ops += be->layer[t] && be->layer[t]->blocked;
	if (!blocked_ops)
		cr_skip_test("skipped: %s keeps every activation NHWC (test_kernels_refnet covers it)",
			     be->name);
	if (ops_ctx_init(&ctx, be->name, 1, 11)) {
		if (be->caps & OPS_CAP_GPU)
			cuda_unavailable(be->name, util_last_error(), "the blocked net");
		cr_skip_test("skipped: %s cannot start on this machine: %s", be->name,
			     util_last_error());
	}
	if (forced != OPS_NHWC)
		ctx.blocked = forced;
	cr_assert_neq(ctx.blocked, OPS_NHWC, "%s has blocked ops but picked no blocked layout",
		      be->name);
	cr_assert_eq(ops_ctx_init(&ref, "ref", 1, 11), 0);
	setup_model(&m);
	setup_model(&r);
	static float x[N * H * W * C], g[N * K];
	seed = 7;
	for (size_t i = 0; i < ARRAY_SIZE(x); i++)
		x[i] = frand();
	for (size_t i = 0; i < ARRAY_SIZE(g); i++)
		g[i] = frand();
	step(&m, &ctx, x, g);
	step(&r, &ref, x, g);
	/* in the layout the backend picked for this machine, every op of the
	 * net (avgpool, add, dropout, concat too) on a jit kernel */
	if (forced == OPS_NHWC && be->slow_path)
		cr_assert_null(be->slow_path(&ctx), "%s: %s", be->name, be->slow_path(&ctx));

	/* the layouts picked: blocked from c0 to ap, NHWC at the edges */
	const char *blocked[] = {"c0", "b0", "r0", "c1", "b1", "ad", "ar", "cb", "mp", "rl", "ap"};
	const char *nhwc[] = {"c2", "gp", "dr", "fl", "cc", "out"};
	for (size_t i = 0; i < ARRAY_SIZE(blocked); i++)
		cr_assert_eq(layer(&m, blocked[i])->op.out_layout, ctx.blocked, "%s: %s not blocked",
			     be->name, blocked[i]);
	for (size_t i = 0; i < ARRAY_SIZE(nhwc); i++)
		cr_assert_eq(layer(&m, nhwc[i])->op.out_layout, OPS_NHWC, "%s: %s not NHWC", be->name,
			     nhwc[i]);
	cr_assert_eq(layer(&m, "c0")->op.in_layout[0], OPS_NHWC);
	cr_assert_eq(layer(&m, "c2")->op.in_layout[0], ctx.blocked);
	for (int i = 0; i < r.n_layers; i++)
		cr_assert_eq(r.layers[i].op.out_layout, OPS_NHWC, "ref: %s", r.layers[i].id);

	static float a[N * H * W * 64];
	for (int i = 0; i < m.n_layers; i++) {
		struct model_layer *L = &m.layers[i], *R = &r.layers[i];
		size_t count = (size_t)N * ops_shape_size(&L->op.out);
		nhwc_of(&m, L, L->act, a);
		close_enough(be->name, "activation", L->id, a, R->act, count);
		nhwc_of(&m, L, L->dact, a);
		close_enough(be->name, "gradient of", L->id, a, R->dact, count);
	}
	close_enough(be->name, "parameter gradients", "all", m.grads, r.grads, m.n_params);
	close_enough(be->name, "batchnorm statistics", "all", m.stats, r.stats, m.n_stats);

	/* nhwc_only turns it off: every tensor NHWC again, same results */
	ctx.nhwc_only = 1;
	step(&m, &ctx, x, g);
	for (int i = 0; i < m.n_layers; i++)
		cr_assert_eq(m.layers[i].op.out_layout, OPS_NHWC, "%s: %s", be->name, m.layers[i].id);
	close_enough(be->name, "parameter gradients, nhwc_only", "all", m.grads, r.grads,
		     m.n_params);
	model_release(&m, &ctx);
	model_release(&r, &ref);
	ops_ctx_release(&ctx);
	ops_ctx_release(&ref);
}

/* One test a backend (backend_index.h). */
ParameterizedTestParameters(layout, blocked_net_matches_reference)
{
	return backend_index_params();
}

ParameterizedTest(size_t *b, layout, blocked_net_matches_reference)
{
	blocked_matches_reference(backend_index_get(b), OPS_NHWC);
}

/* Both block widths on every machine: a width whose kernels this CPU lacks
 * runs oneDNN's reference ones, slow and still exact. */
Test(layout, both_block_widths_match_reference)
{
	const struct ops_backend *cpu = ops_backend_find("cpu");
	blocked_matches_reference(cpu, OPS_BLOCKED8);
	blocked_matches_reference(cpu, OPS_BLOCKED16);
}
