/* Unit tests for kernels/: the op table is complete, and every layer's
 * backward matches central finite differences of its forward, on the CPU
 * backend and on ref (kernels/ref), which every backend is checked against
 * (test_kernels_ref.c). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/cpu.h" /* cpu_conv_algo */
#include "kernels/cpu/cpu_probe.h" /* cpu_probe_has, cpu_probe_skip */
#include "kernels/ops.h"
#include "util.h"

Test(kernels, every_backend_has_every_op)
{
	size_t nb;
	const struct ops_backend *const *be = ops_backends(&nb);
	cr_assert_gt(nb, 0);
	for (size_t i = 0; i < nb; i++) {
		cr_assert(be[i]->init && be[i]->fini && be[i]->loss && be[i]->sgd &&
			  be[i]->accumulate && be[i]->unscale, "backend %s lacks a required op",
			  be[i]->name);
		for (int t = 0; t < OPS_NTYPES; t++) {
			const struct ops_layer_ops *o = be[i]->layer[t];
			cr_assert_not_null(o, "%s: no op in slot %d", be[i]->name, t);
			cr_assert(o->name && *o->name, "%s: the op in slot %d has no name", be[i]->name, t);
			cr_assert(o->forward && o->backward, "%s: %s lacks forward/backward",
				  be[i]->name, o->name);
			cr_assert_eq(o->type, (enum ops_type)t, "%s: slot %d holds %s, the op of slot %d",
				     be[i]->name, t, o->name, (int)o->type);
		}
	}
}

/* ---- finite differences ---------------------------------------------------- */

struct fd_case {
	struct ops_layer_cfg cfg;
	int n, n_in;
	struct ops_shape in[3], out;
};

static uint64_t rng_state = 42;
static double urand(void)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* Distinct values spaced 0.05 apart, none near zero: no ties for max
 * pooling, no ReLU kink within the finite-difference step. */
static void fill_distinct(float *x, size_t count, float scale)
{
	size_t *perm = xmalloc(count * sizeof(*perm));
	for (size_t i = 0; i < count; i++)
		perm[i] = i;
	for (size_t i = count; i > 1; i--) {
		size_t j = (size_t)(urand() * i);
		size_t t = perm[i - 1];
		perm[i - 1] = perm[j], perm[j] = t;
	}
	for (size_t i = 0; i < count; i++)
		x[i] = scale * (((float)perm[i] - (float)count / 2) * 0.05f + 0.025f);
	free(perm);
}

static void fill_uniform(float *x, size_t count, float lo, float hi)
{
	for (size_t i = 0; i < count; i++)
		x[i] = (float)(lo + (hi - lo) * urand());
}

struct fd_layer {
	struct ops_layer l;
	int n;
	float *x[3], *dx[3], *y, *dy;
	size_t nx[3], ny;
	float *params[4], *grads[4];  /* w, b | gamma, beta */
	size_t nparam[4];
	int np;
};

static double objective(struct ops_ctx *ctx, struct fd_layer *f)
{
	const float *xs[3] = {f->x[0], f->x[1], f->x[2]};
	float save_rm[64], save_rv[64];
	if (f->l.run_mean) { /* keep running stats fixed across evaluations */
		memcpy(save_rm, f->l.run_mean, sizeof(float) * f->l.in[0].c);
		memcpy(save_rv, f->l.run_var, sizeof(float) * f->l.in[0].c);
	}
	cr_assert_eq(ctx->be->layer[f->l.cfg.type]->forward(ctx, &f->l, f->n, xs, f->y, 1), 0);
	if (f->l.run_mean) {
		memcpy(f->l.run_mean, save_rm, sizeof(float) * f->l.in[0].c);
		memcpy(f->l.run_var, save_rv, sizeof(float) * f->l.in[0].c);
	}
	double s = 0;
	for (size_t i = 0; i < f->ny; i++)
		s += (double)f->y[i] * f->dy[i];
	return s;
}

static void check_grad(struct ops_ctx *ctx, struct fd_layer *f, float *v, const float *g,
		       size_t count, const char *what, float eps)
{
	size_t stride = count > 64 ? count / 61 : 1;
	for (size_t i = 0; i < count; i += stride) {
		float keep = v[i];
		v[i] = keep + eps;
		double lp = objective(ctx, f);
		v[i] = keep - eps;
		double lm = objective(ctx, f);
		v[i] = keep;
		double num = (lp - lm) / (2.0 * eps);
		double tol = 5e-3 + 3e-2 * fabs(num);
		cr_assert(fabs(num - g[i]) <= tol, "%s: %s: %s[%zu]: analytic %g, numeric %g",
			  ctx->be->name, ctx->be->layer[f->l.cfg.type]->name, what, i, (double)g[i],
			  num);
	}
}

static void run_case_on(const char *backend, const struct fd_case *c, float eps)
{
	struct ops_ctx ctx;
	cr_assert_eq(ops_ctx_init(&ctx, backend, 1, 7), 0);
	ctx.step = 3;
	struct fd_layer f;
	memset(&f, 0, sizeof(f));
	f.n = c->n;
	f.l.cfg = c->cfg;
	f.l.n_in = c->n_in;
	f.l.in = c->in;
	f.l.out = c->out;
	f.l.index = 1;
	for (int k = 0; k < c->n_in; k++) {
		f.nx[k] = (size_t)c->n * ops_shape_size(&c->in[k]);
		f.x[k] = xmalloc(f.nx[k] * sizeof(float));
		f.dx[k] = xmalloc(f.nx[k] * sizeof(float));
		fill_distinct(f.x[k], f.nx[k], 1.0f + 0.3f * k);
	}
	f.ny = (size_t)c->n * ops_shape_size(&c->out);
	f.y = xmalloc(f.ny * sizeof(float));
	f.dy = xmalloc(f.ny * sizeof(float));
	fill_uniform(f.dy, f.ny, -1, 1);
	int cin = c->in[0].c;
	switch (c->cfg.type) {
	case OPS_CONV2D:
		f.nparam[0] = (size_t)c->cfg.units * c->cfg.kernel * c->cfg.kernel * cin;
		f.nparam[1] = (size_t)c->cfg.units;
		f.np = c->cfg.bias ? 2 : 1;
		break;
	case OPS_DENSE:
		f.nparam[0] = (size_t)c->cfg.units * ops_shape_size(&c->in[0]);
		f.nparam[1] = (size_t)c->cfg.units;
		f.np = c->cfg.bias ? 2 : 1;
		break;
	case OPS_BATCHNORM:
		f.nparam[0] = f.nparam[1] = (size_t)cin;
		f.np = 2;
		f.l.run_mean = xcalloc(cin, sizeof(float));
		f.l.run_var = xcalloc(cin, sizeof(float));
		f.l.save_mean = xcalloc(cin, sizeof(float));
		f.l.save_var = xcalloc(cin, sizeof(float));
		break;
	case OPS_DROPOUT:
		f.l.mask = xmalloc(f.ny);
		break;
	default:
		break;
	}
	for (int k = 0; k < f.np; k++) {
		f.params[k] = xmalloc(f.nparam[k] * sizeof(float));
		f.grads[k] = xmalloc(f.nparam[k] * sizeof(float));
		fill_uniform(f.params[k], f.nparam[k], -0.5, 0.5);
	}
	if (c->cfg.type == OPS_BATCHNORM) {
		f.l.gamma = f.params[0], f.l.dgamma = f.grads[0];
		f.l.beta = f.params[1], f.l.dbeta = f.grads[1];
	} else if (f.np) {
		f.l.w = f.params[0], f.l.dw = f.grads[0];
		f.l.b = f.params[1], f.l.db = f.grads[1];
	}

	objective(&ctx, &f);
	const float *xs[3] = {f.x[0], f.x[1], f.x[2]};
	float *dxs[3] = {f.dx[0], f.dx[1], f.dx[2]};
	cr_assert_eq(ctx.be->layer[c->cfg.type]->backward(&ctx, &f.l, f.n, xs, f.y, f.dy, dxs), 0);
	for (int k = 0; k < c->n_in; k++)
		check_grad(&ctx, &f, f.x[k], f.dx[k], f.nx[k], "dx", eps);
	static const char *const names[] = {"dparam0", "dparam1"};
	for (int k = 0; k < f.np; k++)
		check_grad(&ctx, &f, f.params[k], f.grads[k], f.nparam[k], names[k], eps);

	if (ctx.be->layer[c->cfg.type]->release)
		ctx.be->layer[c->cfg.type]->release(&ctx, &f.l);
	for (int k = 0; k < 3; k++)
		free(f.x[k]), free(f.dx[k]);
	for (int k = 0; k < f.np; k++)
		free(f.params[k]), free(f.grads[k]);
	free(f.y), free(f.dy), free(f.l.mask);
	free(f.l.run_mean), free(f.l.run_var), free(f.l.save_mean), free(f.l.save_var);
	ops_ctx_release(&ctx);
}

/* The backends whose gradients are checked by finite differences. */
static const char *const fd_backends[] = {"cpu", "ref"};

static void run_case(const struct fd_case *c, float eps)
{
	for (size_t b = 0; b < ARRAY_SIZE(fd_backends); b++)
		run_case_on(fd_backends[b], c, eps);
}

Test(kernels, conv2d_same_stride2_backward)
{
	struct fd_case c = {
		.cfg = {.type = OPS_CONV2D, .kernel = 3, .stride = 2, .pad_t = 0, .pad_l = 0,
			.pad_b = 1, .pad_r = 1, .units = 4, .bias = 1},
		.n = 2, .n_in = 1, .in = {{6, 6, 3}}, .out = {3, 3, 4},
	};
	run_case(&c, 1e-2f);
}

/* One 3x3 stride-1 "same" conv layer (with bias), run forward and backward
 * under two settings of the context, on the same random data. */
struct conv_pair {
	int n, hw, cin, cout, threads;
	float wscale;
	float *y[2], *dx[2], *dw[2], *db[2];
	const char *algo[2];
};

static void conv_pair_run(struct conv_pair *c, const int bf16[2], const int conv_algo[2])
{
	struct ops_shape in = {c->hw, c->hw, c->cin}, out = {c->hw, c->hw, c->cout};
	size_t nx = (size_t)c->n * c->hw * c->hw * c->cin, ny = (size_t)c->n * c->hw * c->hw * c->cout;
	size_t nw = (size_t)c->cout * 9 * c->cin;
	float *x = xmalloc(nx * sizeof(float)), *dy = xmalloc(ny * sizeof(float));
	float *w = xmalloc(nw * sizeof(float)), *b = xmalloc(c->cout * sizeof(float));
	fill_uniform(x, nx, -1, 1);
	fill_uniform(dy, ny, -1, 1);
	fill_uniform(w, nw, -c->wscale, c->wscale);
	fill_uniform(b, c->cout, -0.5, 0.5);
	for (int k = 0; k < 2; k++) {
		struct ops_ctx ctx;
		cr_assert_eq(ops_ctx_init(&ctx, "cpu", c->threads, 1), 0);
		ctx.conv_type = bf16[k] ? OPS_BF16 : OPS_F32;
		ctx.conv_algo = conv_algo[k];
		struct ops_layer l = {
			.cfg = {.type = OPS_CONV2D, .kernel = 3, .stride = 1, .pad_t = 1,
				.pad_l = 1, .pad_b = 1, .pad_r = 1, .units = c->cout, .bias = 1},
			.n_in = 1, .in = &in, .out = out, .w = w, .b = b,
		};
		c->y[k] = xmalloc(ny * sizeof(float));
		c->dx[k] = xmalloc(nx * sizeof(float));
		l.dw = c->dw[k] = xmalloc(nw * sizeof(float));
		l.db = c->db[k] = xmalloc(c->cout * sizeof(float));
		const float *xs[1] = {x};
		float *dxs[1] = {c->dx[k]};
		const struct ops_layer_ops *op = ctx.be->layer[OPS_CONV2D];
		cr_assert_eq(op->forward(&ctx, &l, c->n, xs, c->y[k], 1), 0, "%s", util_last_error());
		cr_assert_eq(op->backward(&ctx, &l, c->n, xs, c->y[k], dy, dxs), 0, "%s",
			     util_last_error());
		c->algo[k] = cpu_conv_algo(&l);
		op->release(&ctx, &l);
		ops_ctx_release(&ctx);
	}
	free(x), free(dy), free(w), free(b);
}

/* Every value of y, dx, dw and db within tol * (largest of its tensor) of the
 * second run's; returns how many differ at all. */
static int conv_pair_compare(struct conv_pair *c, double tol)
{
	size_t nx = (size_t)c->n * c->hw * c->hw * c->cin, ny = (size_t)c->n * c->hw * c->hw * c->cout;
	struct { const char *name; float **v; size_t n; } t[] = {
		{"y", c->y, ny}, {"dx", c->dx, nx},
		{"dw", c->dw, (size_t)c->cout * 9 * c->cin}, {"db", c->db, (size_t)c->cout},
	};
	int differ = 0;
	for (size_t k = 0; k < ARRAY_SIZE(t); k++) {
		const float *a = t[k].v[0], *b = t[k].v[1];
		double scale = 0;
		for (size_t i = 0; i < t[k].n; i++)
			scale = fmax(scale, fabs(b[i]));
		for (size_t i = 0; i < t[k].n; i++) {
			cr_assert(fabs(a[i] - b[i]) <= tol * scale + 1e-6, "%s[%zu]: %g against %g",
				  t[k].name, i, (double)a[i], (double)b[i]);
			differ += a[i] != b[i];
		}
	}
	for (int k = 0; k < 2; k++)
		free(c->y[k]), free(c->dx[k]), free(c->dw[k]), free(c->db[k]);
	return differ;
}

/* Winograd (auto) must agree with the direct kernels, which the
 * finite-difference tests check, on the output and every gradient. (Finite
 * differences of a Winograd forward itself are too noisy at these inputs: its
 * transforms round at the scale of the tile.) */
Test(kernels, conv2d_winograd_matches_direct)
{
	struct conv_pair c = {.n = 4, .hw = 10, .cin = 16, .cout = 32, .threads = 2, .wscale = 0.2f};
	conv_pair_run(&c, (const int[2]){0, 0}, (const int[2]){OPS_CONV_AUTO, OPS_CONV_DIRECT});
	cr_assert_str_eq(c.algo[1], "direct");
	char why[256];
	if (cpu_probe_has(CPU_FEAT_WINOGRAD, why, sizeof(why)))
		cr_assert_str_eq(c.algo[0], "winograd", "oneDNN has Winograd kernels here, unused");
	else
		cr_log_info("winograd half %s (%s, oneDNN ISA %s)", why, cpu_probe_model(),
			    cpu_probe_isa());
	conv_pair_compare(&c, 1e-4);
}

/* The bf16 convolution path (bf16 copies of x, w and dy; fp32 y, dx, dw)
 * against fp32: oneDNN capped at AVX-512 without its BF16 instructions uses
 * its reference or emulated bf16 code, on every machine with AVX-512. The
 * trainer turns bf16 on only after the probe finds a fast kernel; this test
 * turns it on wherever oneDNN has any bf16 convolution (the same probe), so
 * that the conversions around the primitives are checked; without one
 * (AVX2) it says it skipped and why. */
Test(kernels, conv2d_bf16_matches_fp32)
{
	char skip[512];
	cr_assert_eq(cpu_probe_cap(dnnl_cpu_isa_avx512_core), 0, "%s", util_last_error());
	if (cpu_probe_skip(CPU_FEAT_BF16_CONV, skip, sizeof(skip)))
		cr_skip_test("%s", skip);
	struct conv_pair c = {.n = 2, .hw = 6, .cin = 8, .cout = 8, .threads = 1, .wscale = 0.3f};
	conv_pair_run(&c, (const int[2]){1, 0}, (const int[2]){OPS_CONV_DIRECT, OPS_CONV_DIRECT});
	/* bf16 keeps 8 significant bits: ~0.4% per operand */
	cr_assert_gt(conv_pair_compare(&c, 2e-2), 0,
		     "bf16 gave bit-identical results: it did not compute in bf16");
}

Test(kernels, conv2d_valid_nobias_backward)
{
	struct fd_case c = {
		.cfg = {.type = OPS_CONV2D, .kernel = 2, .stride = 1, .units = 5, .bias = 0},
		.n = 2, .n_in = 1, .in = {{4, 5, 2}}, .out = {3, 4, 5},
	};
	run_case(&c, 1e-2f);
}

Test(kernels, batchnorm_backward)
{
	struct fd_case c = {
		.cfg = {.type = OPS_BATCHNORM, .eps = 1e-3f, .momentum = 0.9f},
		.n = 3, .n_in = 1, .in = {{3, 3, 4}}, .out = {3, 3, 4},
	};
	run_case(&c, 1e-3f);
}

Test(kernels, relu_backward)
{
	struct fd_case c = {
		.cfg = {.type = OPS_RELU}, .n = 2, .n_in = 1, .in = {{3, 4, 5}}, .out = {3, 4, 5},
	};
	run_case(&c, 1e-3f);
}

Test(kernels, maxpool_same_backward)
{
	struct fd_case c = {
		.cfg = {.type = OPS_MAXPOOL, .kernel = 2, .stride = 2, .pad_b = 1, .pad_r = 1},
		.n = 2, .n_in = 1, .in = {{5, 5, 3}}, .out = {3, 3, 3},
	};
	run_case(&c, 1e-3f);
}

/* the tiled fast path: 2x2 windows at stride 2 cover the image exactly */
Test(kernels, maxpool_tiled_backward)
{
	struct fd_case c = {
		.cfg = {.type = OPS_MAXPOOL, .kernel = 2, .stride = 2},
		.n = 2, .n_in = 1, .in = {{4, 6, 5}}, .out = {2, 3, 5},
	};
	run_case(&c, 1e-3f);
}

/* overlapping windows (ResNet's stem pool): one input feeds several outputs */
Test(kernels, maxpool_overlapping_backward)
{
	struct fd_case c = {
		.cfg = {.type = OPS_MAXPOOL, .kernel = 3, .stride = 2, .pad_t = 1, .pad_l = 1,
			.pad_b = 1, .pad_r = 1},
		.n = 2, .n_in = 1, .in = {{7, 7, 3}}, .out = {4, 4, 3},
	};
	run_case(&c, 1e-3f);
}

Test(kernels, avgpool_same_backward)
{
	struct fd_case c = {
		.cfg = {.type = OPS_AVGPOOL, .kernel = 3, .stride = 2, .pad_t = 1, .pad_l = 1,
			.pad_b = 1, .pad_r = 1},
		.n = 2, .n_in = 1, .in = {{5, 5, 2}}, .out = {3, 3, 2},
	};
	run_case(&c, 1e-2f);
}

Test(kernels, global_avg_pool_backward)
{
	struct fd_case c = {
		.cfg = {.type = OPS_GLOBAL_AVG_POOL}, .n = 2, .n_in = 1, .in = {{3, 3, 4}},
		.out = {1, 1, 4},
	};
	run_case(&c, 1e-2f);
}

Test(kernels, dense_backward)
{
	struct fd_case c = {
		.cfg = {.type = OPS_DENSE, .units = 6, .bias = 1}, .n = 3, .n_in = 1,
		.in = {{1, 1, 10}}, .out = {1, 1, 6},
	};
	run_case(&c, 1e-2f);
}

Test(kernels, dropout_backward)
{
	struct fd_case c = {
		.cfg = {.type = OPS_DROPOUT, .rate = 0.4f}, .n = 2, .n_in = 1, .in = {{2, 3, 4}},
		.out = {2, 3, 4},
	};
	run_case(&c, 1e-2f);
}

Test(kernels, add_backward)
{
	struct fd_case c = {
		.cfg = {.type = OPS_ADD}, .n = 2, .n_in = 3, .in = {{2, 2, 3}, {2, 2, 3}, {2, 2, 3}},
		.out = {2, 2, 3},
	};
	run_case(&c, 1e-2f);
}

Test(kernels, add_fused_relu_backward)
{
	struct fd_case c = {
		.cfg = {.type = OPS_ADD, .fuse_relu = 1}, .n = 2, .n_in = 2,
		.in = {{2, 2, 3}, {2, 2, 3}}, .out = {2, 2, 3},
	};
	run_case(&c, 1e-3f);
}

Test(kernels, batchnorm_fused_relu_backward)
{
	struct fd_case c = {
		.cfg = {.type = OPS_BATCHNORM, .eps = 1e-3f, .momentum = 0.9f, .fuse_relu = 1},
		.n = 3, .n_in = 1, .in = {{3, 3, 4}}, .out = {3, 3, 4},
	};
	run_case(&c, 1e-3f);
}

Test(kernels, concat_backward)
{
	struct fd_case c = {
		.cfg = {.type = OPS_CONCAT}, .n = 2, .n_in = 2, .in = {{2, 3, 2}, {2, 3, 3}},
		.out = {2, 3, 5},
	};
	run_case(&c, 1e-2f);
}

Test(kernels, flatten_backward)
{
	struct fd_case c = {
		.cfg = {.type = OPS_FLATTEN}, .n = 2, .n_in = 1, .in = {{2, 3, 2}}, .out = {1, 1, 12},
	};
	run_case(&c, 1e-2f);
}

static void loss_gradient_and_smoothing(const char *backend)
{
	struct ops_ctx ctx;
	cr_assert_eq(ops_ctx_init(&ctx, backend, 1, 1), 0);
	enum { N = 4, K = 5 };
	float z[N * K], dz[N * K];
	int labels[N] = {0, 3, 4, 1};
	fill_uniform(z, N * K, -2, 2);
	double loss = 0;
	long correct = 0;
	cr_assert_eq(ctx.be->loss(&ctx, N, K, z, labels, 0.1f, 1.0f, dz, &loss, &correct), 0);
	for (int i = 0; i < N * K; i += 3) {
		float keep = z[i];
		double lp = 0, lm = 0;
		long c2 = 0;
		z[i] = keep + 1e-2f;
		ctx.be->loss(&ctx, N, K, z, labels, 0.1f, 1.0f, NULL, &lp, &c2);
		ops_loss_read(&ctx, &lp, &c2);
		z[i] = keep - 1e-2f;
		ctx.be->loss(&ctx, N, K, z, labels, 0.1f, 1.0f, NULL, &lm, &c2);
		ops_loss_read(&ctx, &lm, &c2);
		z[i] = keep;
		double num = (lp - lm) / 2e-2 / N;   /* dz is of the mean loss */
		cr_assert(fabs(num - dz[i]) < 1e-3 + 1e-2 * fabs(num), "%s: dz[%d] %g vs %g", backend,
			  i, (double)dz[i], num);
	}
	/* uniform logits: loss is log(K) whatever the smoothing */
	float u[K] = {0};
	int l0 = 2;
	double lu = 0;
	correct = 0;
	ctx.be->loss(&ctx, 1, K, u, &l0, 0.3f, 1.0f, NULL, &lu, &correct);
	ops_loss_read(&ctx, &lu, &correct);
	cr_assert_float_eq(lu, log((double)K), 1e-6);
	int bad = K;
	util_set_quiet(1);
	/* out of range: an error of the loss, or of the read of its sums */
	cr_assert(ctx.be->loss(&ctx, 1, K, u, &bad, 0.1f, 1.0f, NULL, &lu, &correct) ||
		  ops_loss_read(&ctx, &lu, &correct));
	ops_ctx_release(&ctx);
}

Test(kernels, loss_gradient_and_smoothing)
{
	for (size_t b = 0; b < ARRAY_SIZE(fd_backends); b++)
		loss_gradient_and_smoothing(fd_backends[b]);
}

static void sgd_momentum_weight_decay(const char *backend)
{
	struct ops_ctx ctx;
	cr_assert_eq(ops_ctx_init(&ctx, backend, 1, 1), 0);
	float w[2] = {1.0f, -2.0f}, g[2] = {0.5f, 0.25f}, v[2] = {0.1f, 0.0f};
	cr_assert_eq(ctx.be->sgd(&ctx, 2, w, g, v, 0.1f, 0.9f, 0.01f), 0);
	/* v = 0.9*0.1 + 0.5 + 0.01*1 = 0.6; w = 1 - 0.06 */
	cr_assert_float_eq(v[0], 0.6f, 1e-6);
	cr_assert_float_eq(w[0], 0.94f, 1e-6);
	cr_assert_float_eq(v[1], 0.25f - 0.02f, 1e-6);
	cr_assert_float_eq(w[1], -2.0f - 0.1f * 0.23f, 1e-6);
	ops_ctx_release(&ctx);
}

Test(kernels, sgd_momentum_weight_decay)
{
	for (size_t b = 0; b < ARRAY_SIZE(fd_backends); b++)
		sgd_momentum_weight_decay(fd_backends[b]);
}
