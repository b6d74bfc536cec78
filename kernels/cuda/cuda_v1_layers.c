/* cuda_v1_layers.c: the cuda backend's first ops on its first kernels
 * (cuda_v1_kernels.cu), kept under AAH_CUDA_KERNELS=v1 until a GPU has
 * measured the kernel families beside them (cuda_v1.h): relu, batchnorm,
 * max/avg/global average pooling, dropout, add, concat, flatten, the
 * loss, SGD, accumulation, unscale and casts, and the bias, padding and
 * casts around cuDNN. Each stages its tensors (cuda.h), launches, and ends
 * the op; formulas as in kernels/ref. All but dropout and flatten take
 * tensors stored in bf16 too. Each launcher's kernels are counted in the
 * ledger (v1_count) as the families' are, for the two to be compared. */
#include <stdlib.h>

#include "kernels/cuda/cuda_ctx.h"
#include "kernels/cuda/cuda_v1.h"

#define F(count) ((size_t)(count) * sizeof(float))

static cudaStream_t stream(struct ops_ctx *ctx)
{
	return cuda_stream(ctx);
}

/* A v1 launcher's `launches` kernels and memsets, moving `bytes`, into the
 * ledger. */
static void v1_count(struct ops_ctx *ctx, const char *name, int launches, double bytes)
{
	for (int k = 0; k < launches; k++)
		ledger_launch(&cuda_ctx(ctx)->ledger, name, NULL, k ? 0 : bytes);
}

/* The kernels' type of a tensor stored as t (the model stores no tensor
 * in fp16). */
static int cuda_type(enum ops_dtype t)
{
	return t == OPS_BF16 ? CUK_BF16 : CUK_F32;
}

static size_t count_of(const struct ops_layer *l, int n)
{
	return (size_t)n * ops_shape_size(&l->out);
}

/* Bytes of count values of the layer's output type (its inputs', but for
 * global average pooling's). */
static size_t bytes_of(const struct ops_layer *l, size_t count)
{
	return cuda_bytes(count, l->out_type);
}

static int type_of(const struct ops_layer *l)
{
	return cuda_type(l->out_type);
}

/* ---- relu -------------------------------------------------------------------- */

static int relu_forward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			float *y, int train)
{
	(void)train;
	size_t count = count_of(l, n);
	void *dx, *dy;
	if (cuda_begin(ctx) || cuda_in(ctx, x[0], bytes_of(l, count), &dx) ||
	    cuda_out(ctx, y, bytes_of(l, count), 0, &dy))
		return -1;
	v1_count(ctx, "v1 relu_fwd", 1, 2.0 * bytes_of(l, count));
	CUDA_LAUNCH(cuk_relu_fwd(stream(ctx), type_of(l), count, dx, dy));
	return cuda_end(ctx);
}

static int relu_backward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			 const float *y, const float *dy, float *const *dx)
{
	(void)y;
	size_t count = count_of(l, n);
	void *gx, *gdy, *gdx;
	if (!dx[0])
		return 0;
	if (cuda_begin(ctx) || cuda_in(ctx, x[0], bytes_of(l, count), &gx) ||
	    cuda_in(ctx, dy, bytes_of(l, count), &gdy) ||
	    cuda_out(ctx, dx[0], bytes_of(l, count), 0, &gdx))
		return -1;
	v1_count(ctx, "v1 relu_bwd", 1, 3.0 * bytes_of(l, count));
	CUDA_LAUNCH(cuk_relu_bwd(stream(ctx), type_of(l), count, gx, gdy, gdx));
	return cuda_end(ctx);
}

const struct ops_layer_ops cuda_v1_relu_ops = {
	.type = OPS_RELU,
	.name = "rectifier",
	.forward = relu_forward,
	.backward = relu_backward,
	.bf16 = 1,
};

/* ---- batchnorm ------------------------------------------------------------------ */

/* The per-channel vectors of a batchnorm layer on the device. */
struct bn_dev {
	void *gamma, *beta, *run_mean, *run_var, *save_mean, *save_var, *acc;
};

static int bn_stage(struct ops_ctx *ctx, struct ops_layer *l, int train, struct bn_dev *d)
{
	size_t c = (size_t)l->in[0].c;
	return cuda_in(ctx, l->gamma, F(c), &d->gamma) || cuda_in(ctx, l->beta, F(c), &d->beta) ||
	       cuda_out(ctx, l->run_mean, F(c), 1, &d->run_mean) ||
	       cuda_out(ctx, l->run_var, F(c), 1, &d->run_var) ||
	       cuda_out(ctx, l->save_mean, F(c), !train, &d->save_mean) ||
	       cuda_out(ctx, l->save_var, F(c), !train, &d->save_var) ||
	       cuda_scratch(ctx, 2 * c * sizeof(double), &d->acc);
}

static int bn_forward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
		      float *y, int train)
{
	const struct ops_shape *s = &l->in[0];
	size_t rows = (size_t)n * s->h * s->w, count = rows * s->c;
	struct bn_dev d;
	void *gx, *gy;
	if (cuda_begin(ctx) || cuda_in(ctx, x[0], bytes_of(l, count), &gx) ||
	    cuda_out(ctx, y, bytes_of(l, count), 0, &gy) || bn_stage(ctx, l, train, &d))
		return -1;
	if (train)
		v1_count(ctx, "v1 bn_stats", 3, (double)bytes_of(l, count));
	v1_count(ctx, "v1 bn_norm", 1, 2.0 * bytes_of(l, count));
	if (train)
		CUDA_LAUNCH(cuk_bn_stats(stream(ctx), type_of(l), rows, s->c, gx, d.acc, d.save_mean,
					 d.save_var, d.run_mean, d.run_var, l->cfg.momentum));
	CUDA_LAUNCH(cuk_bn_norm(stream(ctx), type_of(l), rows, s->c, gx,
				train ? d.save_mean : d.run_mean,
				train ? d.save_var : d.run_var, d.gamma, d.beta, l->cfg.eps,
				l->cfg.fuse_relu, gy));
	return cuda_end(ctx);
}

/* The training forward's output again: the same normalising kernel on the
 * same input and the batch's saved statistics, so the same values to the
 * bit (test_kernels_ref holds every backend's recompute so). */
static int bn_recompute(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			float *y)
{
	const struct ops_shape *s = &l->in[0];
	size_t rows = (size_t)n * s->h * s->w, count = rows * s->c, c = (size_t)s->c;
	void *gx, *gy, *gamma, *beta, *mean, *var;
	if (cuda_begin(ctx) || cuda_in(ctx, x[0], bytes_of(l, count), &gx) ||
	    cuda_out(ctx, y, bytes_of(l, count), 0, &gy) || cuda_in(ctx, l->gamma, F(c), &gamma) ||
	    cuda_in(ctx, l->beta, F(c), &beta) || cuda_in(ctx, l->save_mean, F(c), &mean) ||
	    cuda_in(ctx, l->save_var, F(c), &var))
		return -1;
	v1_count(ctx, "v1 bn_norm", 1, 2.0 * bytes_of(l, count));
	CUDA_LAUNCH(cuk_bn_norm(stream(ctx), type_of(l), rows, s->c, gx, mean, var, gamma, beta,
				l->cfg.eps, l->cfg.fuse_relu, gy));
	return cuda_end(ctx);
}

static int bn_backward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
		       const float *y, const float *dy, float *const *dx)
{
	const struct ops_shape *s = &l->in[0];
	size_t rows = (size_t)n * s->h * s->w, count = rows * s->c, c = (size_t)s->c;
	void *gx, *gy, *gdy, *gdx, *gamma, *mean, *var, *acc, *dgamma, *dbeta;
	if (cuda_begin(ctx) || cuda_in(ctx, x[0], bytes_of(l, count), &gx) ||
	    cuda_in(ctx, y, bytes_of(l, count), &gy) || cuda_in(ctx, dy, bytes_of(l, count), &gdy) ||
	    cuda_out(ctx, dx[0], bytes_of(l, count), 0, &gdx) || cuda_in(ctx, l->gamma, F(c), &gamma) ||
	    cuda_in(ctx, l->save_mean, F(c), &mean) || cuda_in(ctx, l->save_var, F(c), &var) ||
	    cuda_out(ctx, l->dgamma, F(c), 0, &dgamma) || cuda_out(ctx, l->dbeta, F(c), 0, &dbeta) ||
	    cuda_scratch(ctx, 2 * c * sizeof(double), &acc))
		return -1;
	v1_count(ctx, "v1 bn_bwd", gdx ? 4 : 3, (gdx ? 7.0 : 3.0) * bytes_of(l, count));
	CUDA_LAUNCH(cuk_bn_bwd(stream(ctx), type_of(l), rows, s->c, gx, gy, gdy, mean, var, gamma,
			       l->cfg.eps, l->cfg.fuse_relu, acc, dgamma, dbeta, gdx));
	return cuda_end(ctx);
}

const struct ops_layer_ops cuda_v1_bn_ops = {
	.type = OPS_BATCHNORM,
	.name = "batch normalization",
	.forward = bn_forward,
	.backward = bn_backward,
	.recompute = bn_recompute, /* its backward reads y (a fused relu's sign) */
	.bf16 = 1,
};

/* ---- pooling --------------------------------------------------------------------- */

static struct cuk_pool pool_of(const struct ops_layer *l, int n)
{
	const struct ops_shape *s = &l->in[0];
	return (struct cuk_pool){n, s->h, s->w, s->c, l->out.h, l->out.w, l->cfg.kernel,
				 l->cfg.stride, l->cfg.pad_t, l->cfg.pad_l};
}

static int pool_forward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			float *y, int train)
{
	(void)train;
	size_t nx = (size_t)n * ops_shape_size(&l->in[0]), ny = count_of(l, n);
	enum ops_dtype tx = ops_in_type(l, 0);
	void *gx, *gy;
	struct cuk_pool p = pool_of(l, n);
	if (cuda_begin(ctx) || cuda_in(ctx, x[0], cuda_bytes(nx, tx), &gx) ||
	    cuda_out(ctx, y, bytes_of(l, ny), 0, &gy))
		return -1;
	v1_count(ctx, "v1 pool_fwd", 1, (double)cuda_bytes(nx, tx) + (double)bytes_of(l, ny));
	switch (l->cfg.type) {
	case OPS_MAXPOOL:
		CUDA_LAUNCH(cuk_maxpool_fwd(stream(ctx), type_of(l), p, gx, gy));
		break;
	case OPS_AVGPOOL:
		CUDA_LAUNCH(cuk_avgpool_fwd(stream(ctx), type_of(l), p, gx, gy));
		break;
	default:
		CUDA_LAUNCH(cuk_gap_fwd(stream(ctx), cuda_type(tx), type_of(l), n, p.h * p.w, p.c, gx,
					gy));
		break;
	}
	return cuda_end(ctx);
}

static int pool_backward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			 const float *y, const float *dy, float *const *dx)
{
	(void)y;
	size_t nx = (size_t)n * ops_shape_size(&l->in[0]), ny = count_of(l, n);
	enum ops_dtype tx = ops_in_type(l, 0);
	void *gx = NULL, *gdy, *gdx;
	struct cuk_pool p = pool_of(l, n);
	if (!dx[0])
		return 0;
	if (cuda_begin(ctx) ||
	    (l->cfg.type == OPS_MAXPOOL && cuda_in(ctx, x[0], cuda_bytes(nx, tx), &gx)) ||
	    cuda_in(ctx, dy, bytes_of(l, ny), &gdy) || cuda_out(ctx, dx[0], cuda_bytes(nx, tx), 0, &gdx))
		return -1;
	v1_count(ctx, "v1 pool_bwd", 1,
		 (double)cuda_bytes(nx, tx) * (gx ? 2 : 1) + (double)bytes_of(l, ny));
	switch (l->cfg.type) {
	case OPS_MAXPOOL:
		CUDA_LAUNCH(cuk_maxpool_bwd(stream(ctx), type_of(l), p, gx, gdy, gdx));
		break;
	case OPS_AVGPOOL:
		CUDA_LAUNCH(cuk_avgpool_bwd(stream(ctx), type_of(l), p, gdy, gdx));
		break;
	default:
		CUDA_LAUNCH(cuk_gap_bwd(stream(ctx), cuda_type(tx), type_of(l), n, p.h * p.w, p.c, gdy,
					gdx));
		break;
	}
	return cuda_end(ctx);
}

const struct ops_layer_ops cuda_v1_maxpool_ops = {
	.type = OPS_MAXPOOL,
	.name = "max pooling",
	.forward = pool_forward,
	.backward = pool_backward,
	.bf16 = 1,
};

const struct ops_layer_ops cuda_v1_avgpool_ops = {
	.type = OPS_AVGPOOL,
	.name = "average pooling",
	.forward = pool_forward,
	.backward = pool_backward,
	.bf16 = 1,
};

const struct ops_layer_ops cuda_v1_gap_ops = {
	.type = OPS_GLOBAL_AVG_POOL,
	.name = "global average pooling",
	.forward = pool_forward,
	.backward = pool_backward,
	.bf16 = 1,
};

/* ---- dropout ------------------------------------------------------------------------ */

static int dropout_forward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			   const float *const *x, float *y, int train)
{
	size_t count = count_of(l, n);
	float rate = l->cfg.rate;
	void *gx, *gy, *mask;
	if (cuda_begin(ctx) || cuda_in(ctx, x[0], F(count), &gx) ||
	    cuda_out(ctx, y, F(count), 0, &gy))
		return -1;
	if (!train || rate <= 0) {
		v1_count(ctx, "v1 copy", 1, 2.0 * F(count));
		CUDA_LAUNCH(cuk_copy(stream(ctx), count, gx, gy));
		return cuda_end(ctx);
	}
	if (cuda_out(ctx, l->mask, count, 0, &mask))
		return -1;
	uint32_t threshold = (uint32_t)((double)rate * 65536.0);
	v1_count(ctx, "v1 dropout_fwd", 1, 2.0 * F(count) + (double)count);
	CUDA_LAUNCH(cuk_dropout_fwd(stream(ctx), count, ops_dropout_base(ctx, l), threshold,
				    1.0f / (1.0f - rate), gx, gy, mask));
	return cuda_end(ctx);
}

static int dropout_backward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			    const float *const *x, const float *y, const float *dy,
			    float *const *dx)
{
	(void)x, (void)y;
	size_t count = count_of(l, n);
	float rate = l->cfg.rate;
	void *gdy, *gdx, *mask = NULL;
	if (!dx[0])
		return 0;
	if (cuda_begin(ctx) || cuda_in(ctx, dy, F(count), &gdy) ||
	    cuda_out(ctx, dx[0], F(count), 0, &gdx) ||
	    (rate > 0 && cuda_in(ctx, l->mask, count, &mask)))
		return -1;
	v1_count(ctx, "v1 dropout_bwd", 1, 2.0 * F(count) + (double)count);
	CUDA_LAUNCH(cuk_dropout_bwd(stream(ctx), count, rate > 0 ? 1.0f / (1.0f - rate) : 1.0f,
				    mask, gdy, gdx));
	return cuda_end(ctx);
}

const struct ops_layer_ops cuda_v1_dropout_ops = {
	.type = OPS_DROPOUT,
	.name = "inverted dropout",
	.forward = dropout_forward,
	.backward = dropout_backward,
};

/* ---- add ------------------------------------------------------------------------------ */

static int add_forward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
		       float *y, int train)
{
	(void)train;
	size_t count = count_of(l, n);
	void *gy;
	if (cuda_begin(ctx) || cuda_out(ctx, y, bytes_of(l, count), 0, &gy))
		return -1;
	/* CUK_MAX_ARGS inputs per launch; the relu after the last */
	for (int k0 = 0; k0 < l->n_in; k0 += CUK_MAX_ARGS) {
		struct cuk_args a = {.x = {0}};
		int m = l->n_in - k0 < CUK_MAX_ARGS ? l->n_in - k0 : CUK_MAX_ARGS;
		for (int k = 0; k < m; k++)
			if (cuda_in(ctx, x[k0 + k], bytes_of(l, count), (void **)&a.x[k]))
				return -1;
		v1_count(ctx, "v1 add_fwd", 1, (double)(m + (k0 > 0) + 1) * bytes_of(l, count));
		CUDA_LAUNCH(cuk_add_fwd(stream(ctx), type_of(l), count, a, m, k0 > 0,
					l->cfg.fuse_relu && k0 + m == l->n_in, gy));
	}
	return cuda_end(ctx);
}

static int add_backward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			const float *y, const float *dy, float *const *dx)
{
	(void)x;
	size_t count = count_of(l, n);
	void *gy, *gdy;
	if (cuda_begin(ctx) || cuda_in(ctx, y, bytes_of(l, count), &gy) ||
	    cuda_in(ctx, dy, bytes_of(l, count), &gdy))
		return -1;
	for (int k0 = 0; k0 < l->n_in; k0 += CUK_MAX_ARGS) {
		struct cuk_args a = {.x = {0}};
		int m = l->n_in - k0 < CUK_MAX_ARGS ? l->n_in - k0 : CUK_MAX_ARGS;
		for (int k = 0; k < m; k++)
			if (cuda_out(ctx, dx[k0 + k], bytes_of(l, count), 0, &a.dx[k]))
				return -1;
		v1_count(ctx, "v1 add_bwd", 1, (double)(m + 2) * bytes_of(l, count));
		CUDA_LAUNCH(cuk_add_bwd(stream(ctx), type_of(l), count, a, m, l->cfg.fuse_relu, gy, gdy));
	}
	return cuda_end(ctx);
}

const struct ops_layer_ops cuda_v1_add_ops = {
	.type = OPS_ADD,
	.name = "elementwise sum",
	.forward = add_forward,
	.backward = add_backward,
	.backward_skips = OPS_SKIPS_X, /* dy to each input; a fused relu reads y */
	.bf16 = 1,
};

/* ---- concat, flatten ---------------------------------------------------------------- */

static int concat_forward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			  const float *const *x, float *y, int train)
{
	(void)train;
	size_t rows = (size_t)n * l->out.h * l->out.w;
	void *gy;
	if (cuda_begin(ctx) || cuda_out(ctx, y, bytes_of(l, rows * l->out.c), 0, &gy))
		return -1;
	for (int k = 0, off = 0; k < l->n_in; off += l->in[k].c, k++) {
		void *gx;
		if (cuda_in(ctx, x[k], bytes_of(l, rows * l->in[k].c), &gx))
			return -1;
		v1_count(ctx, "v1 concat", 1, 2.0 * bytes_of(l, rows * l->in[k].c));
		CUDA_LAUNCH(cuk_slice_put(stream(ctx), type_of(l), rows, l->in[k].c, l->out.c, off, gx,
					  gy));
	}
	return cuda_end(ctx);
}

static int concat_backward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			   const float *const *x, const float *y, const float *dy,
			   float *const *dx)
{
	(void)x, (void)y;
	size_t rows = (size_t)n * l->out.h * l->out.w;
	void *gdy;
	if (cuda_begin(ctx) || cuda_in(ctx, dy, bytes_of(l, rows * l->out.c), &gdy))
		return -1;
	for (int k = 0, off = 0; k < l->n_in; off += l->in[k].c, k++) {
		void *gdx;
		if (!dx[k])
			continue;
		if (cuda_out(ctx, dx[k], bytes_of(l, rows * l->in[k].c), 0, &gdx))
			return -1;
		v1_count(ctx, "v1 concat", 1, 2.0 * bytes_of(l, rows * l->in[k].c));
		CUDA_LAUNCH(cuk_slice_get(stream(ctx), type_of(l), rows, l->in[k].c, l->out.c, off, gdy,
					  gdx));
	}
	return cuda_end(ctx);
}

const struct ops_layer_ops cuda_v1_concat_ops = {
	.type = OPS_CONCAT,
	.name = "concatenation",
	.forward = concat_forward,
	.backward = concat_backward,
	.bf16 = 1,
};

/* The same values in the same order: a copy (none when in place). */
static int copy_op(struct ops_ctx *ctx, size_t count, const float *src, float *dst)
{
	void *gs, *gd;
	if (src == dst)
		return 0;
	if (cuda_begin(ctx) || cuda_in(ctx, src, F(count), &gs) ||
	    cuda_out(ctx, dst, F(count), 0, &gd))
		return -1;
	v1_count(ctx, "v1 copy", 1, 2.0 * F(count));
	CUDA_LAUNCH(cuk_copy(stream(ctx), count, gs, gd));
	return cuda_end(ctx);
}

static int flatten_forward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			   const float *const *x, float *y, int train)
{
	(void)train;
	return copy_op(ctx, count_of(l, n), x[0], y);
}

static int flatten_backward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			    const float *const *x, const float *y, const float *dy,
			    float *const *dx)
{
	(void)x, (void)y;
	return dx[0] ? copy_op(ctx, count_of(l, n), dy, dx[0]) : 0;
}

const struct ops_layer_ops cuda_v1_flatten_ops = {
	.type = OPS_FLATTEN,
	.name = "flatten",
	.forward = flatten_forward,
	.backward = flatten_backward,
};

/* ---- loss, SGD, accumulate, unscale, casts -------------------------------------- */

/* The per-sample losses and hits read back and summed here, every step;
 * fp16's scale applied by the unscale kernel (a multiply) after. */
int cuda_v1_loss(struct ops_ctx *ctx, int n, int classes, const float *logits, const int *labels,
		 float smoothing, float scale, float *dlogits, double *loss_sum, long *correct)
{
	struct cuda_ctx *c = cuda_ctx(ctx);
	void *z, *t, *dz = NULL, *loss, *hit, *bad;
	size_t nz = (size_t)n * classes * sizeof(float);
	if (n <= 0)
		return 0;
	if (cuda_begin(ctx) || cuda_in(ctx, logits, nz, &z) ||
	    cuda_in(ctx, labels, (size_t)n * sizeof(int), &t) ||
	    (dlogits && cuda_out(ctx, dlogits, nz, 0, &dz)) ||
	    cuda_scratch(ctx, (size_t)n * sizeof(double), &loss) ||
	    cuda_scratch(ctx, (size_t)n * sizeof(int) + sizeof(int), &hit))
		return -1;
	bad = (int *)hit + n;
	v1_count(ctx, "v1 loss", 2, (dz ? 2.0 : 1.0) * (double)nz);
	CUDA_LAUNCH(cuk_loss(c->run.stream, n, classes, z, t, smoothing, dz, loss, hit, bad));
	if (dz && scale != 1.0f) {
		void *ovf;
		if (cuda_scratch(ctx, sizeof(int), &ovf))
			return -1;
		v1_count(ctx, "v1 unscale", 1, 2.0 * (double)nz);
		CUDA_LAUNCH(cuk_unscale(c->run.stream, nz / sizeof(float), dz, scale, ovf));
	}
	/* the per-sample results come back to be summed here: the one host
	 * synchronisation of a training step */
	double *hl = xmalloc(sizeof(double) * (n ? n : 1));
	int *hh = xmalloc(sizeof(int) * ((size_t)n + 1));
	int rc = 0;
	ledger_copy(&c->ledger, LEDGER_D2H, (double)n * (sizeof(double) + sizeof(int)));
	ledger_sync(&c->ledger);
	if (cudaMemcpyAsync(hl, loss, sizeof(double) * n, cudaMemcpyDeviceToHost, c->run.stream) ||
	    cudaMemcpyAsync(hh, hit, sizeof(int) * ((size_t)n + 1), cudaMemcpyDeviceToHost,
			    c->run.stream) ||
	    cuda_end(ctx) || cudaStreamSynchronize(c->run.stream))
		rc = error("cuda: cannot read the loss back: %s", cudaGetErrorString(cudaGetLastError()));
	else if (hh[n])
		rc = error("the label of sample %d is outside [0, %d)", hh[n] - 1, classes);
	for (int i = 0; !rc && i < n; i++) {
		*loss_sum += hl[i];
		*correct += hh[i];
	}
	free(hl);
	free(hh);
	return rc;
}

int cuda_v1_sgd(struct ops_ctx *ctx, size_t count, float *w, const float *g, float *v, float lr,
	     float mu, float wd)
{
	void *dw, *dg, *dv;
	size_t bytes = count * sizeof(float);
	if (!count)
		return 0;
	if (cuda_begin(ctx) || cuda_out(ctx, w, bytes, 1, &dw) || cuda_in(ctx, g, bytes, &dg) ||
	    cuda_out(ctx, v, bytes, 1, &dv))
		return -1;
	v1_count(ctx, "v1 sgd", 1, 5.0 * (double)bytes);
	CUDA_LAUNCH(cuk_sgd(cuda_stream(ctx), count, dw, dg, dv, lr, mu, wd));
	return cuda_end(ctx);
}

int cuda_v1_accumulate(struct ops_ctx *ctx, size_t count, enum ops_dtype t, void *y, const void *x)
{
	void *dy, *dx;
	size_t bytes = cuda_bytes(count, t);
	if (t != OPS_F32 && t != OPS_BF16) /* the model stores no tensor otherwise */
		return error("accumulate: the cuda backend's tensors are fp32 or bf16");
	if (!count)
		return 0;
	if (cuda_begin(ctx) || cuda_out(ctx, y, bytes, 1, &dy) || cuda_in(ctx, x, bytes, &dx))
		return -1;
	v1_count(ctx, "v1 accumulate", 1, 3.0 * (double)bytes);
	CUDA_LAUNCH(cuk_accumulate(cuda_stream(ctx), cuda_type(t), count, dy, dx));
	return cuda_end(ctx);
}

/* One pass over the gradients, and one int read back: the step's only wait
 * besides the loss. */
int cuda_v1_unscale(struct ops_ctx *ctx, size_t count, float *g, float inv, int *finite)
{
	struct cuda_ctx *c = cuda_ctx(ctx);
	void *dg, *dbad;
	int bad = 0;
	*finite = 1;
	if (!count)
		return 0;
	if (cuda_begin(ctx) || cuda_out(ctx, g, count * sizeof(float), 1, &dg) ||
	    cuda_out(ctx, &bad, sizeof(bad), 0, &dbad))
		return -1;
	CUDA_CHECK(cudaMemsetAsync(dbad, 0, sizeof(bad), c->run.stream));
	v1_count(ctx, "v1 unscale", 2, 8.0 * (double)count);
	CUDA_LAUNCH(cuk_unscale(c->run.stream, count, dg, inv, dbad));
	if (cuda_end(ctx))
		return -1;
	*finite = !bad;
	return 0;
}

/* The CUK_* kind of cuk_cast from xt to yt; -1 unless one side is fp32 and
 * the other bf16 or fp16. */
static int cast_kind(enum ops_dtype xt, enum ops_dtype yt)
{
	return xt == OPS_F32 && yt == OPS_BF16   ? CUK_F32_TO_BF16
	       : xt == OPS_BF16 && yt == OPS_F32 ? CUK_BF16_TO_F32
	       : xt == OPS_F32 && yt == OPS_F16  ? CUK_F32_TO_F16
	       : xt == OPS_F16 && yt == OPS_F32  ? CUK_F16_TO_F32
						 : -1;
}

int cuda_v1_convert(struct ops_ctx *ctx, size_t count, const void *x, enum ops_dtype xt, void *y,
		 enum ops_dtype yt)
{
	int kind = cast_kind(xt, yt);
	if (kind < 0)
		return error("cast from type %d to type %d: one side must be fp32, the other bf16 or fp16",
			     (int)xt, (int)yt);
	if (count)
		v1_count(ctx, "v1 cast", 1, (double)(cuda_bytes(count, xt) + cuda_bytes(count, yt)));
	if (count)
		CUDA_LAUNCH(cuk_cast(cuda_stream(ctx), count, kind, x, y));
	return 0;
}

int cuda_v1_cast(struct ops_ctx *ctx, size_t count, const void *x, enum ops_dtype xt, void *y,
	      enum ops_dtype yt)
{
	void *dx, *dy;
	if (!count) /* nothing to stage: the types are still checked */
		return cuda_v1_convert(ctx, 0, x, xt, y, yt);
	if (cuda_begin(ctx) || cuda_in(ctx, x, cuda_bytes(count, xt), &dx) ||
	    cuda_out(ctx, y, cuda_bytes(count, yt), 0, &dy) ||
	    cuda_v1_convert(ctx, count, dx, xt, dy, yt))
		return -1;
	return cuda_end(ctx);
}


/* ---- around cuDNN and cuBLASLt ----------------------------------------------------- */

int cuda_v1_bias_add(struct ops_ctx *ctx, enum ops_dtype t, size_t rows, int c, const float *b,
		     void *y)
{
	v1_count(ctx, "v1 bias_add", 1, 2.0 * (double)cuda_bytes(rows * c, t));
	CUDA_LAUNCH(cuk_bias_add(stream(ctx), cuda_type(t), rows, c, b, y));
	return 0;
}

int cuda_v1_bias_grad(struct ops_ctx *ctx, enum ops_dtype t, size_t rows, int c, const void *dy,
		      float *db)
{
	void *acc;
	if (cuda_scratch(ctx, (size_t)c * sizeof(double), &acc))
		return -1;
	v1_count(ctx, "v1 channel_sum", 3, (double)cuda_bytes(rows * c, t));
	CUDA_LAUNCH(cuk_channel_sum(stream(ctx), cuda_type(t), rows, c, dy, acc, db));
	return 0;
}

int cuda_v1_pad(struct ops_ctx *ctx, enum ops_dtype t, int n, int h, int w, int c, int hp, int wp,
		int pt, int pl, const void *src, void *dst)
{
	v1_count(ctx, "v1 pad", 2, (double)cuda_bytes((size_t)n * hp * wp * c, t) +
				   2.0 * cuda_bytes((size_t)n * h * w * c, t));
	CUDA_LAUNCH(cuk_pad(stream(ctx), cuda_type(t), n, h, w, c, hp, wp, pt, pl, src, dst));
	return 0;
}

int cuda_v1_crop(struct ops_ctx *ctx, enum ops_dtype t, int n, int h, int w, int c, int hp,
		 int wp, int pt, int pl, const void *src, void *dst)
{
	v1_count(ctx, "v1 crop", 1, 2.0 * cuda_bytes((size_t)n * h * w * c, t));
	CUDA_LAUNCH(cuk_crop(stream(ctx), cuda_type(t), n, h, w, c, hp, wp, pt, pl, src, dst));
	return 0;
}
