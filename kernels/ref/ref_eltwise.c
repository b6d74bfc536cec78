/* ref_eltwise.c: the element-wise ops, value by value over the whole batch.
 *
 *   x, x[k], y: (n, H, W, C), all of one shape
 *
 *   relu:     y = max(x, 0);                dx = dy where x > 0, else 0
 *   dropout:  training: y = x * keep / (1 - rate), keep = 0 or 1 from
 *             ops_dropout_mask() (kept in l->mask for backward);
 *             inference, or rate 0: y = x;  dx = dy * keep / (1 - rate)
 *   add:      y = x[0] + x[1] + ... ;       dx[k] = dy for every input
 *             fuse_relu: y = max(sum, 0);   dx[k] = dy where y > 0, else 0
 *
 * Each value is read before its own output is written, so y may be x and
 * dx may be dy. */
#include "kernels/ref/ref.h"

static int relu_forward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			float *y, int train)
{
	(void)ctx, (void)train;
	size_t count = (size_t)n * ops_shape_size(&l->out);
	for (size_t k = 0; k < count; k++)
		y[k] = x[0][k] > 0 ? x[0][k] : 0.0f;
	return 0;
}

static int relu_backward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			 const float *y, const float *dy, float *const *dx)
{
	(void)ctx, (void)y;
	size_t count = (size_t)n * ops_shape_size(&l->out);
	for (size_t k = 0; dx[0] && k < count; k++)
		dx[0][k] = x[0][k] > 0 ? dy[k] : 0.0f;
	return 0;
}

static int dropout_forward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			   const float *const *x, float *y, int train)
{
	size_t count = (size_t)n * ops_shape_size(&l->out);
	float rate = l->cfg.rate;
	if (!train || rate <= 0) {
		for (size_t k = 0; k < count; k++)
			y[k] = x[0][k];
		return 0;
	}
	float scale = 1.0f / (1.0f - rate);
	ops_dropout_mask(ctx, l, count, l->mask);
	for (size_t k = 0; k < count; k++)
		y[k] = l->mask[k] ? x[0][k] * scale : 0.0f;
	return 0;
}

static int dropout_backward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			    const float *const *x, const float *y, const float *dy,
			    float *const *dx)
{
	(void)ctx, (void)x, (void)y;
	size_t count = (size_t)n * ops_shape_size(&l->out);
	float rate = l->cfg.rate;
	float scale = rate > 0 ? 1.0f / (1.0f - rate) : 1.0f;
	for (size_t k = 0; dx[0] && k < count; k++)
		dx[0][k] = rate <= 0 || l->mask[k] ? dy[k] * scale : 0.0f;
	return 0;
}

static int add_forward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
		       float *y, int train)
{
	(void)ctx, (void)train;
	size_t count = (size_t)n * ops_shape_size(&l->out);
	for (size_t k = 0; k < count; k++) {
		double sum = 0;
		for (int in = 0; in < l->n_in; in++)
			sum += x[in][k];
		if (l->cfg.fuse_relu && sum < 0)
			sum = 0;
		y[k] = (float)sum;
	}
	return 0;
}

static int add_backward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			const float *y, const float *dy, float *const *dx)
{
	(void)ctx, (void)x;
	size_t count = (size_t)n * ops_shape_size(&l->out);
	for (size_t k = 0; k < count; k++) {
		float g = l->cfg.fuse_relu && !(y[k] > 0) ? 0.0f : dy[k];
		for (int in = 0; in < l->n_in; in++)
			if (dx[in])
				dx[in][k] = g;
	}
	return 0;
}

const struct ops_layer_ops ref_relu_ops = {
	.type = OPS_RELU,
	.name = "rectifier",
	.forward = relu_forward,
	.backward = relu_backward,
};
const struct ops_layer_ops ref_dropout_ops = {
	.type = OPS_DROPOUT,
	.name = "inverted dropout",
	.forward = dropout_forward,
	.backward = dropout_backward,
};
const struct ops_layer_ops ref_add_ops = {
	.type = OPS_ADD,
	.name = "elementwise sum",
	.forward = add_forward,
	.backward = add_backward,
};
