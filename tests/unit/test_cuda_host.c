/* The cuda backend's kernel families on the host (the cudahost backend,
 * kernels/cudahost/), where test_kernels_ref's cases do not reach: a
 * model carves its parameters one after the other, so a batchnorm's
 * per-channel vectors may start anywhere, while the kernels read them 16
 * bytes at a time where they can. The host harness stops the program on a
 * misaligned 16-byte access (the GPU would fault); these hold that the ops
 * take the scalar form instead and still match ref. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CUK_HOST 1
#include "kernels/cuda/cuda.h" /* cudahost_bias_grad, cudahost_run: the tickets */
#include "kernels/ledger.h"
#include "kernels/ops.h"
#include "kernels/ref/ref.h" /* ref_bf16_round */
#include "util.h"

enum { N = 2, H = 3, W = 5, C = 16 };

static float urand(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((double)(*s >> 11) / 9007199254740992.0 * 2 - 1);
}

/* One batchnorm layer's buffers, its vectors at `shift` floats past a
 * 16-byte boundary. */
struct bn {
	struct ops_layer l;
	struct ops_shape in;
	float *block;
	float *x, *y, *dy, *dx;
};

static void bn_init(struct bn *b, int shift, int relu)
{
	uint64_t s = 99;
	size_t count = (size_t)N * H * W * C;
	memset(b, 0, sizeof(*b));
	b->in = (struct ops_shape){H, W, C};
	b->l.cfg = (struct ops_layer_cfg){.type = OPS_BATCHNORM, .eps = 1e-3f, .momentum = 0.9f,
					  .fuse_relu = relu};
	b->l.n_in = 1;
	b->l.in = &b->in;
	b->l.out = b->in;
	cr_assert_eq(posix_memalign((void **)&b->block, 64, sizeof(float) * (10 * C + 16)), 0);
	float *p = b->block + shift;
	b->l.gamma = p, b->l.beta = p + C, b->l.run_mean = p + 2 * C, b->l.run_var = p + 3 * C;
	b->l.save_mean = p + 4 * C, b->l.save_var = p + 5 * C, b->l.dgamma = p + 6 * C;
	b->l.dbeta = p + 7 * C;
	for (int k = 0; k < C; k++) {
		b->l.gamma[k] = 1 + 0.5f * urand(&s), b->l.beta[k] = 0.3f * urand(&s);
		b->l.run_mean[k] = 0, b->l.run_var[k] = 1;
	}
	b->x = xmalloc(count * sizeof(float)), b->y = xmalloc(count * sizeof(float));
	b->dy = xmalloc(count * sizeof(float)), b->dx = xmalloc(count * sizeof(float));
	for (size_t i = 0; i < count; i++)
		b->x[i] = 2 + urand(&s), b->dy[i] = urand(&s);
}

static void bn_run(struct bn *b, const char *backend)
{
	struct ops_ctx ctx;
	cr_assert_eq(ops_ctx_init(&ctx, backend, 1, 3), 0, "%s", util_last_error());
	cr_assert_eq(ctx.be->set_precision(&ctx, "fp32"), 0);
	const float *xs[1] = {b->x};
	float *dxs[1] = {b->dx};
	const struct ops_layer_ops *op = ctx.be->layer[OPS_BATCHNORM];
	cr_assert_eq(op->forward(&ctx, &b->l, N, xs, b->y, 1), 0, "%s: %s", backend, util_last_error());
	cr_assert_eq(op->backward(&ctx, &b->l, N, xs, b->y, b->dy, dxs), 0, "%s: %s", backend,
		     util_last_error());
	ops_ctx_release(&ctx);
}

static void bn_free(struct bn *b)
{
	free(b->block), free(b->x), free(b->y), free(b->dy), free(b->dx);
}

static void close_to(const char *what, const float *a, const float *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cr_assert(fabs((double)a[i] - r[i]) <= 1e-4 + 1e-3 * fabs(r[i]),
			  "%s[%zu]: cudahost %.9g, ref %.9g", what, i, (double)a[i], (double)r[i]);
}

/* A batchnorm whose gamma, beta and statistics start 4, 8 and 12 bytes
 * past a 16-byte boundary: the same values as ref's. */
Test(cuda_host, batchnorm_with_unaligned_parameters_matches_ref)
{
	size_t count = (size_t)N * H * W * C;
	for (int shift = 0; shift < 4; shift++)
		for (int relu = 0; relu < 2; relu++) {
			struct bn h, r;
			bn_init(&h, shift, relu);
			bn_init(&r, 0, relu);
			bn_run(&h, "cudahost");
			bn_run(&r, "ref");
			close_to("y", h.y, r.y, count);
			close_to("dx", h.dx, r.dx, count);
			close_to("dgamma", h.l.dgamma, r.l.dgamma, C);
			close_to("dbeta", h.l.dbeta, r.l.dbeta, C);
			close_to("running mean", h.l.run_mean, r.l.run_mean, C);
			bn_free(&h);
			bn_free(&r);
		}
}

/* Max pooling with the argmax the forward keeps (ops_layer.mask, as the
 * model gives it the layer): overlapping windows (3x3, stride 2, pad 1:
 * an input in up to four) and a tiled one, fp32 and bf16: the output and
 * the input's gradient are ref's. */
static void maxpool_case(int k, int stride, int pad, int in_hw, enum ops_dtype t)
{
	int out_hw = (in_hw + 2 * pad - k) / stride + 1;
	struct ops_shape in = {in_hw, in_hw, C}, out = {out_hw, out_hw, C};
	size_t nx = (size_t)N * ops_shape_size(&in), ny = (size_t)N * ops_shape_size(&out);
	struct ops_layer l = {0};
	l.cfg = (struct ops_layer_cfg){.type = OPS_MAXPOOL, .kernel = k, .stride = stride,
				       .pad_t = pad, .pad_l = pad, .pad_b = pad, .pad_r = pad};
	l.n_in = 1, l.in = &in, l.out = out;
	enum ops_dtype types[1] = {t};
	l.in_type = types, l.out_type = t;
	uint64_t s = 7;
	float *x = xmalloc(nx * sizeof(float)), *dy = xmalloc(ny * sizeof(float));
	for (size_t i = 0; i < nx; i++)   /* ties too: a few values repeat */
		x[i] = t == OPS_BF16 ? ref_bf16_round(urand(&s)) : (float)(int)(urand(&s) * 8) / 4;
	for (size_t i = 0; i < ny; i++)
		dy[i] = t == OPS_BF16 ? ref_bf16_round(urand(&s)) : urand(&s);
	float *ry = xmalloc(ny * sizeof(float)), *rdx = xmalloc(nx * sizeof(float));
	struct ops_ctx ref;
	cr_assert_eq(ops_ctx_init(&ref, "ref", 1, 3), 0);
	struct ops_layer rl = l;
	rl.in_type = NULL, rl.out_type = OPS_F32;
	const float *rxs[1] = {x};
	float *rdxs[1] = {rdx};
	cr_assert_eq(ref.be->layer[OPS_MAXPOOL]->forward(&ref, &rl, N, rxs, ry, 1), 0);
	cr_assert_eq(ref.be->layer[OPS_MAXPOOL]->backward(&ref, &rl, N, rxs, ry, dy, rdxs), 0);
	ops_ctx_release(&ref);
	/* the backend's tensors in t */
	size_t e = ops_dtype_size(t);
	void *hx = xmalloc(nx * e), *hdy = xmalloc(ny * e), *hy = xmalloc(ny * e), *hdx = xmalloc(nx * e);
	for (size_t i = 0; i < nx; i++)
		t == OPS_BF16 ? (void)(((uint16_t *)hx)[i] = ref_f32_to_bf16(x[i])) : (void)(((float *)hx)[i] = x[i]);
	for (size_t i = 0; i < ny; i++)
		t == OPS_BF16 ? (void)(((uint16_t *)hdy)[i] = ref_f32_to_bf16(dy[i])) : (void)(((float *)hdy)[i] = dy[i]);
	l.mask = xmalloc(ny);
	memset(l.mask, 0xff, ny);
	struct ops_ctx ctx;
	cr_assert_eq(ops_ctx_init(&ctx, "cudahost", 1, 3), 0);
	cr_assert(ctx.be->layer[OPS_MAXPOOL]->keeps_mask);
	const float *xs[1] = {hx};
	float *dxs[1] = {hdx};
	cr_assert_eq(ctx.be->layer[OPS_MAXPOOL]->forward(&ctx, &l, N, xs, hy, 1), 0, "%s", util_last_error());
	for (size_t i = 0; i < ny; i++)
		cr_assert_lt(l.mask[i], k * k, "mask[%zu] = %d: not a place of a %dx%d window", i, l.mask[i], k, k);
	cr_assert_eq(ctx.be->layer[OPS_MAXPOOL]->backward(&ctx, &l, N, xs, hy, hdy, dxs), 0, "%s",
		     util_last_error());
	ops_ctx_release(&ctx);
	float *fy = xmalloc(ny * sizeof(float)), *fdx = xmalloc(nx * sizeof(float));
	for (size_t i = 0; i < ny; i++)
		fy[i] = t == OPS_BF16 ? ref_bf16_to_f32(((uint16_t *)hy)[i]) : ((float *)hy)[i];
	for (size_t i = 0; i < nx; i++)
		fdx[i] = t == OPS_BF16 ? ref_bf16_to_f32(((uint16_t *)hdx)[i]) : ((float *)hdx)[i];
	for (size_t i = 0; i < ny; i++)
		cr_assert_eq(fy[i], ry[i], "y[%zu]: cudahost %g, ref %g", i, (double)fy[i], (double)ry[i]);
	/* the gradient's sums in float over up to four windows, rounded once
	 * to bf16 there: within a rounding */
	double tol = t == OPS_BF16 ? 0x1p-8 : 1e-6;
	for (size_t i = 0; i < nx; i++)
		cr_assert(fabs((double)fdx[i] - rdx[i]) <= tol * (fabs(rdx[i]) + 1e-30) * 4 + 1e-7,
			  "dx[%zu]: cudahost %.9g, ref %.9g", i, (double)fdx[i], (double)rdx[i]);
	free(x), free(dy), free(ry), free(rdx), free(hx), free(hdy), free(hy), free(hdx), free(fy),
		free(fdx), free(l.mask);
}

Test(cuda_host, maxpool_from_its_kept_argmax_matches_ref)
{
	maxpool_case(3, 2, 1, 9, OPS_F32);
	maxpool_case(3, 2, 1, 9, OPS_BF16);
	maxpool_case(2, 2, 0, 8, OPS_BF16);
}

/* ---- per-channel sums in one launch ------------------------------------------------ */

/* A batchnorm forward and backward and a bias gradient, of c channels over
 * rows rows of type t, run on cudahost with the environment's name set to
 * mode: every value they write, as bytes, and each op's launches by the
 * ledger. */
struct sums_out {
	unsigned char *y, *dx;
	float vec[6][512];   /* save mean, save var, run mean, run var, dgamma, dbeta */
	float db[512];
	long launches[3];    /* forward, backward, bias gradient */
};

static void sums_run(int rows, int c, enum ops_dtype t, const char *name, const char *mode,
		     struct sums_out *o)
{
	uint64_t s = 5;
	size_t count = (size_t)rows * c, e = ops_dtype_size(t);
	struct ops_shape in = {1, 1, c};   /* rows samples of 1x1xc */
	enum ops_dtype types[1] = {t};
	float gamma[512], beta[512], rm[512], rv[512];
	struct ops_layer l = {0};
	cr_assert_leq(c, 512);
	l.cfg = (struct ops_layer_cfg){.type = OPS_BATCHNORM, .eps = 1e-3f, .momentum = 0.9f,
				       .fuse_relu = 1};
	l.n_in = 1, l.in = &in, l.out = in, l.in_type = types, l.out_type = t;
	for (int k = 0; k < c; k++)
		gamma[k] = 1 + 0.5f * urand(&s), beta[k] = 0.3f * urand(&s), rm[k] = 0, rv[k] = 1;
	l.gamma = gamma, l.beta = beta, l.run_mean = rm, l.run_var = rv;
	l.save_mean = o->vec[0], l.save_var = o->vec[1], l.dgamma = o->vec[4], l.dbeta = o->vec[5];
	unsigned char *x = xmalloc(count * e), *dy = xmalloc(count * e);
	o->y = xmalloc(count * e), o->dx = xmalloc(count * e);
	for (size_t i = 0; i < count; i++) {
		float xv = 3 + urand(&s), dv = urand(&s);
		if (t == OPS_BF16)
			((uint16_t *)x)[i] = ref_f32_to_bf16(xv), ((uint16_t *)dy)[i] = ref_f32_to_bf16(dv);
		else
			((float *)x)[i] = xv, ((float *)dy)[i] = dv;
	}
	struct ops_ctx ctx;
	setenv(name, mode, 1);
	cr_assert_eq(ops_ctx_init(&ctx, "cudahost", 1, 3), 0, "%s", util_last_error());
	unsetenv(name);
	const struct ops_layer_ops *op = ctx.be->layer[OPS_BATCHNORM];
	struct ops_ledger *led = ops_ledger_of(&ctx);
	const float *xs[1] = {(const float *)x};
	float *dxs[1] = {(float *)o->dx};
	ledger_reset(led);
	cr_assert_eq(op->forward(&ctx, &l, rows, xs, (float *)o->y, 1), 0, "%s", util_last_error());
	o->launches[0] = led->launches;
	ledger_reset(led);
	cr_assert_eq(op->backward(&ctx, &l, rows, xs, (float *)o->y, (const float *)dy, dxs), 0,
		     "%s", util_last_error());
	o->launches[1] = led->launches;
	ledger_reset(led);
	cr_assert_eq(cudahost_bias_grad(&ctx, t, rows, c, dy, o->db), 0, "%s", util_last_error());
	o->launches[2] = led->launches;
	const unsigned *tickets = cudahost_run(&ctx)->tickets;
	for (int k = 0; tickets && k < CUDA_TICKETS; k++)
		cr_assert_eq(tickets[k], 0, "ticket %d left at %u for the next launch", k, tickets[k]);
	memcpy(o->vec[2], rm, sizeof(float) * c);
	memcpy(o->vec[3], rv, sizeof(float) * c);
	ops_ctx_release(&ctx);
	free(x), free(dy);
}

/* Every value of a and b the same bits (case k of c channels, bytes of y
 * and dx). */
static void sums_same_bits(const struct sums_out *a, const struct sums_out *b, size_t bytes,
			   int c, size_t k)
{
	cr_assert_eq(memcmp(a->y, b->y, bytes), 0, "case %zu: y", k);
	cr_assert_eq(memcmp(a->dx, b->dx, bytes), 0, "case %zu: dx", k);
	for (int v = 0; v < 6; v++)
		cr_assert_eq(memcmp(a->vec[v], b->vec[v], sizeof(float) * c), 0,
			     "case %zu: per-channel vector %d", k, v);
	cr_assert_eq(memcmp(a->db, b->db, sizeof(float) * c), 0, "case %zu: bias gradient", k);
}

/* The sums in one launch (the last block of each column of channels
 * finishes them) give the bits of the two launches before, with one
 * launch fewer for each sum: several columns and stripes, a partial last
 * column, and a channel count that leaves the block's last warp partial
 * (5 channels: blocks of 5 x 51 threads). */
Test(cuda_host, per_channel_sums_in_one_launch_give_the_bits_of_two)
{
	static const struct {
		int rows, c;
		enum ops_dtype t;
	} cases[] = {{64, 200, OPS_F32}, {64, 5, OPS_BF16}, {96, 264, OPS_BF16}, {40, 33, OPS_F32}};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		int rows = cases[k].rows, c = cases[k].c;
		size_t bytes = (size_t)rows * c * ops_dtype_size(cases[k].t);
		struct sums_out one, apart;
		memset(&one, 0, sizeof(one)), memset(&apart, 0, sizeof(apart));
		sums_run(rows, c, cases[k].t, "AAH_CUDA_SUMS", "one", &one);
		sums_run(rows, c, cases[k].t, "AAH_CUDA_SUMS", "apart", &apart);
		sums_same_bits(&one, &apart, bytes, c, k);
		/* forward: statistics, normalise; backward: sums, dx; bias: sums */
		long want_one[3] = {2, 2, 1}, want_apart[3] = {3, 3, 2};
		for (int p = 0; p < 3; p++) {
			cr_assert_eq(one.launches[p], want_one[p], "case %zu, op %d: %ld launches", k, p,
				     one.launches[p]);
			cr_assert_eq(apart.launches[p], want_apart[p], "case %zu, op %d: %ld launches", k,
				     p, apart.launches[p]);
		}
		free(one.y), free(one.dx), free(apart.y), free(apart.dx);
	}
}

/* The sums that load rows ahead (cuk.cuh rows_ahead: 4 rows a thread, or
 * x's and dy's 2) give the bits of one row at a time (AAH_CUDA_AHEAD=0),
 * with as many launches: threads with whole groups of rows and a tail
 * (2,077 rows of 5 channels in bf16: 5 or 6 rows a thread; 199 of 200 in
 * fp32: 6 or 7; 389 of 264 in bf16: 12 or 13), and with fewer rows than a
 * group (70 rows of 33 channels: 2 or 3), with tickets and without. */
Test(cuda_host, sums_loading_rows_ahead_give_the_bits_of_one_row_at_a_time)
{
	static const struct {
		int rows, c;
		enum ops_dtype t;
	} cases[] = {{2077, 5, OPS_BF16}, {199, 200, OPS_F32}, {389, 264, OPS_BF16}, {70, 33, OPS_F32}};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
		for (int apart = 0; apart < 2; apart++) {
			int rows = cases[k].rows, c = cases[k].c;
			size_t bytes = (size_t)rows * c * ops_dtype_size(cases[k].t);
			struct sums_out ahead, one;
			memset(&ahead, 0, sizeof(ahead)), memset(&one, 0, sizeof(one));
			if (apart)
				setenv("AAH_CUDA_SUMS", "apart", 1);
			sums_run(rows, c, cases[k].t, "AAH_CUDA_AHEAD", "1", &ahead);
			sums_run(rows, c, cases[k].t, "AAH_CUDA_AHEAD", "0", &one);
			unsetenv("AAH_CUDA_SUMS");
			sums_same_bits(&ahead, &one, bytes, c, k);
			for (int p = 0; p < 3; p++)
				cr_assert_eq(ahead.launches[p], one.launches[p],
					     "case %zu, op %d: %ld launches, %ld one row at a time", k, p,
					     ahead.launches[p], one.launches[p]);
			free(ahead.y), free(ahead.dx), free(one.y), free(one.dx);
		}
}

/* A cudahost context with the environment's name set to value is refused
 * with an error that says want. */
static void refused_by_name(const char *name, const char *value, const char *want)
{
	struct ops_ctx ctx;
	setenv(name, value, 1);
	int rc = ops_ctx_init(&ctx, "cudahost", 1, 3);
	unsetenv(name);
	cr_assert_neq(rc, 0, "%s=%s: a context opened", name, value);
	cr_assert(strstr(util_last_error(), want), "%s", util_last_error());
}

Test(cuda_host, a_wrong_AAH_CUDA_SUMS_AHEAD_or_ADD_DX_is_refused_by_name)
{
	refused_by_name("AAH_CUDA_SUMS", "two", "AAH_CUDA_SUMS 'two': must be one or apart");
	refused_by_name("AAH_CUDA_AHEAD", "4", "AAH_CUDA_AHEAD '4': must be 1 or 0");
	refused_by_name("AAH_CUDA_ADD_DX", "yes", "AAH_CUDA_ADD_DX 'yes': must be 1 or 0");
}

/* ---- the parameters' 16-bit twin ------------------------------------------------- */

/* A cudahost context in precision prec, with AAH_CUDA_TWIN=twin. */
static void twin_ctx(struct ops_ctx *ctx, const char *prec, const char *twin)
{
	setenv("AAH_CUDA_TWIN", twin, 1);
	cr_assert_eq(ops_ctx_init(ctx, "cudahost", 1, 3), 0, "%s", util_last_error());
	unsetenv("AAH_CUDA_TWIN");
	cr_assert_eq(ctx->be->set_precision(ctx, prec), 0);
}

/* Whether the twin of count values at w holds each rounded to t. */
static void twin_holds(struct ops_ctx *ctx, const float *w, size_t count, enum ops_dtype t)
{
	enum ops_dtype got;
	const uint16_t *tw = cudahost_twin_at(ctx, w, count, &got);
	cr_assert_not_null(tw, "no twin of %zu values at %p", count, (const void *)w);
	cr_assert_eq(got, t);
	for (size_t i = 0; i < count; i++) {
		uint16_t want = t == OPS_BF16 ? ref_f32_to_bf16(w[i]) : ref_f32_to_f16(w[i]);
		cr_assert_eq(tw[i], want, "twin[%zu] = %#x, the weight %.9g rounds to %#x", i, tw[i],
			     (double)w[i], want);
	}
}

/* sgd rewrites the twin as it updates the weights: eight values a thread
 * where the pointers allow (count 203: a tail of 3), one a thread from an
 * offset of 3 values (the twin 6 bytes off a vector); bf16 and fp16. */
Test(cuda_host, sgd_keeps_the_twin_of_the_weights_it_updates)
{
	static const struct {
		const char *prec;
		enum ops_dtype t;
	} p[] = {{"bf16", OPS_BF16}, {"fp16", OPS_F16}};
	enum { COUNT = 203, SHIFT = 3 };
	for (int k = 0; k < 2; k++) {
		struct ops_ctx ctx;
		uint64_t s = 11;
		twin_ctx(&ctx, p[k].prec, "1");
		float *block;
		cr_assert_eq(posix_memalign((void **)&block, 64, sizeof(float) * 3 * (COUNT + 8)), 0);
		float *w = block, *g = block + COUNT + 8, *v = g + COUNT + 8;
		for (int i = 0; i < COUNT; i++)
			w[i] = urand(&s), g[i] = urand(&s), v[i] = 0.1f * urand(&s);
		cr_assert_eq(ops_resident(&ctx, block, sizeof(float) * 3 * (COUNT + 8), 0), 0);
		cr_assert_eq(ops_twin(&ctx, w, COUNT), 0, "%s", util_last_error());
		twin_holds(&ctx, w, COUNT, p[k].t);
		for (int step = 0; step < 3; step++) {
			cr_assert_eq(ctx.be->sgd(&ctx, COUNT, w, g, v, 0.3f, 0.9f, 1e-3f), 0);
			twin_holds(&ctx, w, COUNT, p[k].t);
			cr_assert_eq(ctx.be->sgd(&ctx, COUNT - SHIFT, w + SHIFT, g, v, 0.3f, 0.9f, 0), 0);
			twin_holds(&ctx, w, COUNT, p[k].t);
		}
		/* the host writes weights: sync to the device converts them again */
		for (int i = 10; i < 20; i++)
			w[i] = 100.0f + (float)i / 3;
		cr_assert_eq(ops_sync(&ctx, w + 10, 10 * sizeof(float), OPS_TO_DEVICE), 0);
		twin_holds(&ctx, w, COUNT, p[k].t);
		/* its block forgotten, the twin goes with it */
		ops_forget(&ctx, block);
		enum ops_dtype t;
		cr_assert_null(cudahost_twin_at(&ctx, w, 1, &t));
		ops_ctx_release(&ctx);
		free(block);
	}
}

Test(cuda_host, a_twin_is_kept_only_where_asked_and_only_beside_resident_values)
{
	struct ops_ctx ctx;
	float w[16] = {0};
	enum ops_dtype t;
	twin_ctx(&ctx, "bf16", "1");
	cr_assert_neq(ops_twin(&ctx, w, 16), 0, "a twin of values not on the device");
	cr_assert(strstr(util_last_error(), "not resident"), "%s", util_last_error());
	cr_assert_eq(ops_resident(&ctx, w, sizeof(w), sizeof(w)), 0);
	cr_assert_eq(ops_twin(&ctx, w, 16), 0, "%s", util_last_error());
	cr_assert_neq(ops_twin(&ctx, w + 8, 8), 0, "a second twin of the same values");
	ops_ctx_release(&ctx);
	/* fp32 convolutions read the weights as they are: no twin */
	twin_ctx(&ctx, "fp32", "1");
	cr_assert_eq(ops_twin_bytes(&ctx, 16), 0);
	cr_assert_eq(ops_resident(&ctx, w, sizeof(w), sizeof(w)), 0);
	cr_assert_eq(ops_twin(&ctx, w, 16), 0);
	cr_assert_null(cudahost_twin_at(&ctx, w, 16, &t));
	ops_ctx_release(&ctx);
	/* AAH_CUDA_TWIN=0: the way before */
	twin_ctx(&ctx, "bf16", "0");
	cr_assert_eq(ops_resident(&ctx, w, sizeof(w), sizeof(w)), 0);
	cr_assert_eq(ops_twin(&ctx, w, 16), 0);
	cr_assert_null(cudahost_twin_at(&ctx, w, 16, &t));
	ops_ctx_release(&ctx);
	refused_by_name("AAH_CUDA_TWIN", "yes", "AAH_CUDA_TWIN 'yes': must be 1 or 0");
}
