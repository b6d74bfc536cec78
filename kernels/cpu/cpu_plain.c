/* cpu_plain.c: the ops without a oneDNN layer primitive (add and gradient
 * accumulation still run their loops on oneDNN): dropout, add, concat,
 * flatten, the loss (softmax cross-entropy with label smoothing), SGD with
 * momentum. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/cpu.h"
#include "kernels/loss_scale.h" /* loss_scale_finite */

static int dropout_forward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			   const float *const *x, float *y, int train)
{
	size_t count = (size_t)n * ops_shape_size(&l->out);
	float rate = l->cfg.rate;
	if (!train || rate <= 0) {
		memcpy(y, x[0], count * sizeof(float));
		return 0;
	}
	float scale = 1.0f / (1.0f - rate);
	ops_dropout_mask(ctx, l, count, l->mask);
	for (size_t i = 0; i < count; i++)
		y[i] = x[0][i] * ((float)l->mask[i] * scale);
	return 0;
}

static int dropout_backward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			    const float *const *x, const float *y, const float *dy,
			    float *const *dx)
{
	(void)ctx, (void)x, (void)y;
	if (!dx[0])
		return 0;
	size_t count = (size_t)n * ops_shape_size(&l->out);
	float rate = l->cfg.rate;
	if (rate <= 0) {
		memcpy(dx[0], dy, count * sizeof(float));
		return 0;
	}
	float scale = 1.0f / (1.0f - rate);
	for (size_t i = 0; i < count; i++)
		dx[0][i] = dy[i] * ((float)l->mask[i] * scale);
	return 0;
}

static int add_forward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
		       float *y, int train)
{
	(void)train;
	size_t count = (size_t)n * ops_shape_size(&l->out);
	for (int k = 1; k < l->n_in; k++)
		if (cpu_flat_add(ctx, count, l->out_type, y, k == 1 ? x[0] : y, x[k],
				 l->cfg.fuse_relu && k == l->n_in - 1))
			return -1;
	return 0;
}

static int add_backward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			const float *y, const float *dy, float *const *dx)
{
	(void)x;
	enum ops_dtype t = l->out_type;
	size_t count = (size_t)n * ops_shape_size(&l->out);
	const void *g = dy;
	if (l->cfg.fuse_relu) { /* y = relu(sum): d(sum) = dy where y > 0 */
		void *d = dx[0] ? dx[0] : cpu_scratch(ctx, count * ops_dtype_size(t));
		if (!d || cpu_relu_backward_dst(ctx, count, t, d, dy, y))
			return -1;
		g = d;
	}
	for (int k = 0; k < l->n_in; k++)
		if (dx[k] && (const void *)dx[k] != g && cpu_flat_copy(ctx, count, t, dx[k], g))
			return -1;
	return 0;
}

/* A fused relu's gradient on the network's input, which has no gradient
 * buffer: in the scratch while the backward runs. */
static size_t add_workspace(const struct ops_ctx *ctx, const struct ops_layer *l, int n,
			    size_t *scratch)
{
	(void)ctx;
	*scratch = l->cfg.fuse_relu && l->no_dx0
			   ? (size_t)n * ops_shape_size(&l->out) * ops_dtype_size(l->out_type)
			   : 0;
	return 0;
}

/* Concat along channels, of values of e bytes (fp32 or bf16: a copy either
 * way). NHWC: each pixel's output row is the inputs' rows in turn; blocked
 * (every input's channels a multiple of the block): each image's output is
 * the inputs' images in turn, whole, their channel blocks being the
 * output's next ones. With to_out, x -> y (x only read); else y's slices
 * -> x. */
static void concat_copy(const struct ops_layer *l, int n, char *const *x, char *y, int to_out)
{
	size_t e = ops_dtype_size(l->out_type), off = 0;
	size_t hw = (size_t)l->out.h * l->out.w;
	int blocked = ops_layout_block(l->out_layout) > 1;
	/* runs: per pixel (NHWC) or per image (blocked), and their lengths */
	size_t runs = blocked ? (size_t)n : (size_t)n * hw, unit = blocked ? hw * e : e;
	size_t row = (size_t)l->out.c * unit;
	for (int k = 0; k < l->n_in; k++) {
		size_t ck = (size_t)l->in[k].c * unit;
		for (size_t p = 0; x[k] && p < runs; p++) {
			char *out = y + p * row + off, *in = x[k] + p * ck;
			memcpy(to_out ? out : in, to_out ? in : out, ck);
		}
		off += ck;
	}
}

static int concat_forward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			  const float *const *x, float *y, int train)
{
	(void)ctx, (void)train;
	concat_copy(l, n, (char *const *)x, (char *)y, 1);
	return 0;
}

static int concat_backward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			   const float *const *x, const float *y, const float *dy,
			   float *const *dx)
{
	(void)ctx, (void)x, (void)y;
	concat_copy(l, n, (char *const *)dx, (char *)dy, 0);
	return 0;
}

/* Flatten: NHWC is already (N, H*W*C) in memory. */
static int flatten_forward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			   const float *const *x, float *y, int train)
{
	(void)ctx, (void)train;
	if (y != x[0])
		memcpy(y, x[0], (size_t)n * ops_shape_size(&l->out) * sizeof(float));
	return 0;
}

static int flatten_backward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			    const float *const *x, const float *y, const float *dy,
			    float *const *dx)
{
	(void)ctx, (void)x, (void)y;
	if (dx[0] && dx[0] != dy)
		memcpy(dx[0], dy, (size_t)n * ops_shape_size(&l->out) * sizeof(float));
	return 0;
}

int cpu_loss(struct ops_ctx *ctx, int n, int classes, const float *logits, const int *labels,
	     float smoothing, float scale, float *dlogits, double *loss_sum, long *correct)
{
	(void)ctx;
	float off = smoothing / (float)classes, on = 1.0f - smoothing + off;
	for (int i = 0; i < n; i++) {
		const float *z = logits + (size_t)i * classes;
		int best = 0;
		float zmax = z[0];
		for (int k = 1; k < classes; k++)
			if (z[k] > zmax)
				zmax = z[k], best = k;
		if (labels[i] < 0 || labels[i] >= classes)
			return error("label %d of sample %d is outside [0, %d)", labels[i], i, classes);
		double sum = 0;
		for (int k = 0; k < classes; k++)
			sum += exp((double)(z[k] - zmax));
		double lse = log(sum) + zmax, loss = 0;
		for (int k = 0; k < classes; k++) {
			float t = k == labels[i] ? on : off;
			loss -= t * (z[k] - lse);
			if (dlogits)
				dlogits[(size_t)i * classes + k] =
					(float)((exp(z[k] - lse) - t) / n) * scale;
		}
		*loss_sum += loss;
		*correct += best == labels[i];
	}
	return 0;
}

int cpu_sgd(struct ops_ctx *ctx, size_t count, float *w, const float *g, float *v, float lr,
	    float mu, float wd)
{
	(void)ctx;
	for (size_t i = 0; i < count; i++) {
		v[i] = mu * v[i] + g[i] + wd * w[i];
		w[i] -= lr * v[i];
	}
	return 0;
}

int cpu_accumulate(struct ops_ctx *ctx, size_t count, enum ops_dtype t, void *y, const void *x)
{
	return cpu_flat_add(ctx, count, t, y, y, x, 0);
}

/* One thread: a pass over the gradients once a step, next to a backward
 * pass over the whole batch. */
int cpu_unscale(struct ops_ctx *ctx, size_t count, float *g, float inv, int *finite)
{
	(void)ctx;
	*finite = loss_scale_finite(g, count);
	for (size_t k = 0; *finite && k < count; k++)
		g[k] *= inv;
	return 0;
}

const struct ops_layer_ops cpu_dropout_ops = {
	.type = OPS_DROPOUT,
	.name = "inverted dropout",
	.forward = dropout_forward,
	.backward = dropout_backward,
};

const struct ops_layer_ops cpu_add_ops = {
	.type = OPS_ADD,
	.name = "elementwise sum",
	.forward = add_forward,
	.backward = add_backward,
	.workspace = add_workspace,
	.backward_skips = OPS_SKIPS_X, /* dy to each input; a fused relu reads y */
	.blocked = 1,   /* elementwise over inputs and output of one layout */
	.bf16 = 1,      /* and of one type */
};

const struct ops_layer_ops cpu_concat_ops = {
	.type = OPS_CONCAT,
	.name = "channel concatenation",
	.forward = concat_forward,
	.backward = concat_backward,
	.blocked = 1,
	.bf16 = 1,
};

const struct ops_layer_ops cpu_flatten_ops = {
	.type = OPS_FLATTEN,
	.name = "flattening copy",
	.forward = flatten_forward,
	.backward = flatten_backward,
};
