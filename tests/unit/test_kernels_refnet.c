/* A net using every layer type, run through trialimg/model on every compute
 * backend, against its forward and backward composed here by hand, layer by
 * layer and without fusion, from the reference ops (kernels/ref): checks the
 * model's graph (fan-out, concat, fused relus, gradient accumulation) and
 * each backend's ops inside it. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend_index.h"
#include "cuda_skip.h"
#include "kernels/ops.h" /* ops_backends */
#include "trialimg/model.h"
#include "util.h"


enum { N = 3, H = 6, W = 6, C = 2, K = 5 };

static const char *net =
	"{\"format\":\"aah-arch/1\",\"input\":{\"height\":6,\"width\":6,\"channels\":2},"
	"\"num_classes\":5,\"output\":\"out\",\"layers\":["
	"{\"id\":\"c1\",\"type\":\"conv2d\",\"inputs\":[\"input\"],\"filters\":4,\"kernel\":3},"
	"{\"id\":\"bn1\",\"type\":\"batchnorm\",\"inputs\":[\"c1\"],\"epsilon\":0.001},"
	"{\"id\":\"r1\",\"type\":\"relu\",\"inputs\":[\"bn1\"]},"
	"{\"id\":\"mp\",\"type\":\"maxpool\",\"inputs\":[\"r1\"],\"kernel\":2},"
	"{\"id\":\"c2\",\"type\":\"conv2d\",\"inputs\":[\"mp\"],\"filters\":4,\"kernel\":1,\"bias\":false},"
	"{\"id\":\"ad\",\"type\":\"add\",\"inputs\":[\"c2\",\"mp\"]},"
	"{\"id\":\"ar\",\"type\":\"relu\",\"inputs\":[\"ad\"]},"
	"{\"id\":\"cc\",\"type\":\"concat\",\"inputs\":[\"ar\",\"mp\"]},"
	"{\"id\":\"ap\",\"type\":\"avgpool\",\"inputs\":[\"cc\"],\"kernel\":2,\"stride\":1,\"padding\":\"same\"},"
	"{\"id\":\"dr\",\"type\":\"dropout\",\"inputs\":[\"ap\"],\"rate\":0.3},"
	"{\"id\":\"fl\",\"type\":\"flatten\",\"inputs\":[\"dr\"]},"
	"{\"id\":\"gp\",\"type\":\"global_avg_pool\",\"inputs\":[\"cc\"]},"
	"{\"id\":\"c3\",\"type\":\"concat\",\"inputs\":[\"fl\",\"gp\"]},"
	"{\"id\":\"out\",\"type\":\"dense\",\"inputs\":[\"c3\"],\"units\":5}]}";

static uint64_t seed = 99;
static float frand(void)
{
	seed = seed * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((double)(seed >> 11) / 9007199254740992.0) * 2 - 1;
}

static const char *backend;   /* the one under test, in messages */

static void close_enough(const char *what, const float *a, const float *ref, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cr_assert(fabsf(a[i] - ref[i]) <= 1e-4f + 1e-3f * fabsf(ref[i]),
			  "%s: %s[%zu]: model %g, reference %g", backend, what, i, (double)a[i],
			  (double)ref[i]);
}

#define L(id) (&m.layers[model_find(&m, id)])
#define A(n) float n[N * 6 * 6 * 8]

/* ---- the reference: ref ops on copies of the model's layers ---------------- */

static struct ops_ctx ref;
static float bn_stats[4][8];   /* the reference batchnorm's own statistics */
static uint8_t ref_mask[N * 72];

/* A copy of the model's layer for a ref op: its shapes and parameters, no
 * fused relu (the reference applies relu as its own op), and its own
 * statistics, mask and gradients where it writes them. */
static struct ops_layer layer(const struct model *m, const char *id, float *dw, float *db)
{
	struct ops_layer l = m->layers[model_find(m, id)].op;
	l.priv = NULL;
	l.cfg.fuse_relu = 0;
	l.run_mean = bn_stats[0], l.run_var = bn_stats[1];
	l.save_mean = bn_stats[2], l.save_var = bn_stats[3];
	l.mask = ref_mask;
	l.dw = l.dgamma = dw;
	l.db = l.dbeta = db;
	return l;
}

static void fwd(struct ops_layer l, const float *x0, const float *x1, float *y)
{
	const float *xs[2] = {x0, x1};
	cr_assert_eq(ref.be->layer[l.cfg.type]->forward(&ref, &l, N, xs, y, 1), 0);
}

static void bwd(struct ops_layer l, const float *x0, const float *x1, const float *y,
		const float *dy, float *dx0, float *dx1)
{
	const float *xs[2] = {x0, x1};
	float *dxs[2] = {dx0, dx1};
	cr_assert_eq(ref.be->layer[l.cfg.type]->backward(&ref, &l, N, xs, y, dy, dxs), 0);
}

static void net_matches_reference(const char *name)
{
	struct model m;
	struct ops_ctx ctx;
	cJSON *doc = cJSON_Parse(net);
	cr_assert_eq(model_parse(&m, doc, "net"), 0, "%s", util_last_error());
	cJSON_Delete(doc);
	for (int t = 0; t < OPS_NTYPES; t++) {
		int seen = 0;
		for (int i = 0; i < m.n_layers; i++)
			seen |= m.layers[i].op.cfg.type == (enum ops_type)t;
		cr_assert(seen, "the net lacks a %s layer", ops_backend_find("cpu")->layer[t]->name);
	}
	m.keep_grads = 1; /* the inner gradients are compared below */
	cr_assert_eq(model_alloc(&m, N, 5), 0);
	if (ops_ctx_init(&ctx, name, 1, 11)) {
		model_release(&m, NULL);
		if (ops_backend_find(name)->caps & OPS_CAP_GPU)
			cuda_unavailable(name, util_last_error(), "the model net");
		cr_skip_test("skipped: %s cannot start on this machine: %s", name,
			     util_last_error());
	}
	backend = name;
	cr_assert_eq(ops_ctx_init(&ref, "ref", 1, 11), 0);   /* same seed: same dropout mask */
	seed = 99;
	for (size_t i = m.n_decayed; i < m.n_params; i++)  /* non-trivial biases, BN affine */
		m.params[i] = 0.5f + 0.5f * frand();
	float x[N * H * W * C], g[N * K];
	for (size_t i = 0; i < ARRAY_SIZE(x); i++)
		x[i] = frand();
	for (size_t i = 0; i < ARRAY_SIZE(g); i++)
		g[i] = frand();
	cr_assert_eq(model_forward(&m, &ctx, x, N, 1), 0);
	cr_assert_eq(model_backward(&m, &ctx, x, N, g), 0);

	/* reference forward */
	A(c1); A(bn1); A(r1); A(mp); A(c2); A(ad); A(ar); A(cc); A(ap); A(dr); A(fl); A(gp); A(c3);
	float out[N * K];
	fwd(layer(&m, "c1", NULL, NULL), x, NULL, c1);
	fwd(layer(&m, "bn1", NULL, NULL), c1, NULL, bn1);
	fwd(layer(&m, "r1", NULL, NULL), bn1, NULL, r1);
	fwd(layer(&m, "mp", NULL, NULL), r1, NULL, mp);
	fwd(layer(&m, "c2", NULL, NULL), mp, NULL, c2);
	fwd(layer(&m, "ad", NULL, NULL), c2, mp, ad);
	fwd(layer(&m, "ar", NULL, NULL), ad, NULL, ar);
	fwd(layer(&m, "cc", NULL, NULL), ar, mp, cc);
	fwd(layer(&m, "ap", NULL, NULL), cc, NULL, ap);
	fwd(layer(&m, "dr", NULL, NULL), ap, NULL, dr);
	cr_assert_eq(memcmp(ref_mask, L("dr")->op.mask, N * 72), 0, "%s: another dropout mask",
		     name);
	fwd(layer(&m, "fl", NULL, NULL), dr, NULL, fl);
	fwd(layer(&m, "gp", NULL, NULL), cc, NULL, gp);
	fwd(layer(&m, "c3", NULL, NULL), fl, gp, c3);
	fwd(layer(&m, "out", NULL, NULL), c3, NULL, out);
	/* bn1 -> r1 runs as one fused batchnorm+relu op */
	cr_assert(L("bn1")->op.cfg.fuse_relu && L("r1")->fused);
	cr_assert(L("ad")->op.cfg.fuse_relu && L("ar")->fused);
	close_enough("r1", L("r1")->act, r1, N * 36 * 4);
	close_enough("cc", L("cc")->act, cc, N * 72);
	close_enough("logits", model_logits(&m), out, N * K);

	/* reference backward */
	A(dc3); A(dfl); A(ddr); A(dgp); A(dap); A(dcc); A(dcc_gp); A(dar); A(dad); A(dc2);
	A(dmp); A(dmp_add); A(dmp_c2); A(dr1); A(dbn1); A(dc1);
	float dw_out[K * 80], db_out[K], dw_c2[16], dw_c1[4 * 9 * 2], db_c1[4], dgam[4], dbet[4];
	bwd(layer(&m, "out", dw_out, db_out), c3, NULL, out, g, dc3, NULL);
	bwd(layer(&m, "c3", NULL, NULL), fl, gp, c3, dc3, dfl, dgp);
	bwd(layer(&m, "fl", NULL, NULL), dr, NULL, fl, dfl, ddr, NULL);
	bwd(layer(&m, "dr", NULL, NULL), ap, NULL, dr, ddr, dap, NULL);
	bwd(layer(&m, "ap", NULL, NULL), cc, NULL, ap, dap, dcc, NULL);
	bwd(layer(&m, "gp", NULL, NULL), cc, NULL, gp, dgp, dcc_gp, NULL);
	ref.be->accumulate(&ref, N * 72, OPS_F32, dcc, dcc_gp);       /* cc feeds both ap and gp */
	bwd(layer(&m, "cc", NULL, NULL), ar, mp, cc, dcc, dar, dmp);  /* dmp: through cc */
	bwd(layer(&m, "ar", NULL, NULL), ad, NULL, ar, dar, dad, NULL);
	bwd(layer(&m, "ad", NULL, NULL), c2, mp, ad, dad, dc2, dmp_add);
	bwd(layer(&m, "c2", dw_c2, NULL), mp, NULL, c2, dc2, dmp_c2, NULL);
	ref.be->accumulate(&ref, N * 36, OPS_F32, dmp, dmp_add);      /* and through add ... */
	ref.be->accumulate(&ref, N * 36, OPS_F32, dmp, dmp_c2);       /* ... and through c2 */
	bwd(layer(&m, "mp", NULL, NULL), r1, NULL, mp, dmp, dr1, NULL);
	bwd(layer(&m, "r1", NULL, NULL), bn1, NULL, r1, dr1, dbn1, NULL);
	bwd(layer(&m, "bn1", dgam, dbet), c1, NULL, bn1, dbn1, dc1, NULL);
	bwd(layer(&m, "c1", dw_c1, db_c1), x, NULL, c1, dc1, NULL, NULL);

	close_enough("d out.w", L("out")->op.dw, dw_out, K * 80);
	close_enough("d out.b", L("out")->op.db, db_out, K);
	close_enough("d cc", L("cc")->dact, dcc, N * 72);
	close_enough("d mp", L("mp")->dact, dmp, N * 36);
	close_enough("d c2.w", L("c2")->op.dw, dw_c2, 16);
	close_enough("d bn1.gamma", L("bn1")->op.dgamma, dgam, 4);
	close_enough("d bn1.beta", L("bn1")->op.dbeta, dbet, 4);
	close_enough("d c1.w", L("c1")->op.dw, dw_c1, 72);
	close_enough("d c1.b", L("c1")->op.db, db_c1, 4);
	model_release(&m, &ctx);
	ops_ctx_release(&ctx);
	ops_ctx_release(&ref);
}

/* One test a backend (backend_index.h). */
ParameterizedTestParameters(kernels, every_layer_type_net_matches_reference)
{
	return backend_index_params();
}

ParameterizedTest(size_t *b, kernels, every_layer_type_net_matches_reference)
{
	net_matches_reference(backend_index_get(b)->name);
}
