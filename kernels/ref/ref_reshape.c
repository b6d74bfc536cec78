/* ref_reshape.c: the ops that only move values.
 *
 *   concat:   x[k]: (n, H, W, C_k)  ->  y: (n, H, W, C_0 + C_1 + ...)
 *             y[i, h, w, off_k + c] = x[k][i, h, w, c], off_k = C_0 + ... + C_(k-1);
 *             dx[k] is the same slice of dy
 *   flatten:  x: (n, H, W, C)  ->  y: (n, 1, 1, H*W*C), the same values in
 *             the same (NHWC) order; dx = dy
 */
#include "kernels/ref/ref.h"

static int concat_forward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			  const float *const *x, float *y, int train)
{
	(void)ctx, (void)train;
	const struct ops_shape *os = &l->out;
	int off = 0;
	for (int k = 0; k < l->n_in; k++) {
		const struct ops_shape *is = &l->in[k];
		for (int i = 0; i < n; i++)
			for (int h = 0; h < os->h; h++)
				for (int w = 0; w < os->w; w++)
					for (int c = 0; c < is->c; c++)
						y[ref_at(os, i, h, w, off + c)] = x[k][ref_at(is, i, h, w, c)];
		off += is->c;
	}
	return 0;
}

static int concat_backward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			   const float *const *x, const float *y, const float *dy,
			   float *const *dx)
{
	(void)ctx, (void)x, (void)y;
	const struct ops_shape *os = &l->out;
	int off = 0;
	for (int k = 0; k < l->n_in; k++) {
		const struct ops_shape *is = &l->in[k];
		for (int i = 0; dx[k] && i < n; i++)
			for (int h = 0; h < os->h; h++)
				for (int w = 0; w < os->w; w++)
					for (int c = 0; c < is->c; c++)
						dx[k][ref_at(is, i, h, w, c)] = dy[ref_at(os, i, h, w, off + c)];
		off += is->c;
	}
	return 0;
}

static int flatten_forward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			   const float *const *x, float *y, int train)
{
	(void)ctx, (void)train;
	size_t count = (size_t)n * ops_shape_size(&l->out);
	for (size_t k = 0; k < count; k++)
		y[k] = x[0][k];
	return 0;
}

static int flatten_backward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			    const float *const *x, const float *y, const float *dy,
			    float *const *dx)
{
	(void)ctx, (void)x, (void)y;
	size_t count = (size_t)n * ops_shape_size(&l->out);
	for (size_t k = 0; dx[0] && k < count; k++)
		dx[0][k] = dy[k];
	return 0;
}

const struct ops_layer_ops ref_concat_ops = {
	.type = OPS_CONCAT,
	.name = "channel concatenation",
	.forward = concat_forward,
	.backward = concat_backward,
};
const struct ops_layer_ops ref_flatten_ops = {
	.type = OPS_FLATTEN,
	.name = "flattening copy",
	.forward = flatten_forward,
	.backward = flatten_backward,
};
