/* ref_dense.c: the dense (fully connected) layer by its definition.
 *
 *   x: (n, Cin)   w: (units, Cin)   b: (units)   y: (n, units)
 *
 * where Cin = H*W*C of the input shape, read in its NHWC order.
 *
 *   y[i, u]  = b[u] + sum over j of x[i, j] * w[u, j]
 *   dx[i, j] = sum over u of dy[i, u] * w[u, j]
 *   dw[u, j] = sum over i of dy[i, u] * x[i, j]
 *   db[u]    = sum over i of dy[i, u]
 *
 * fp32 only, like the CPU backend's dense (bf16 there is for convolutions). */
#include "kernels/ref/ref.h"

static int dense_forward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			 float *y, int train)
{
	(void)ctx, (void)train;
	int cin = (int)ops_shape_size(&l->in[0]), units = l->cfg.units;
	for (int i = 0; i < n; i++)
		for (int u = 0; u < units; u++) {
			double sum = l->cfg.bias ? l->b[u] : 0.0;
			for (int j = 0; j < cin; j++)
				sum += (double)x[0][(size_t)i * cin + j] * l->w[(size_t)u * cin + j];
			y[(size_t)i * units + u] = (float)sum;
		}
	return 0;
}

static int dense_backward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			  const float *y, const float *dy, float *const *dx)
{
	(void)ctx, (void)y;
	int cin = (int)ops_shape_size(&l->in[0]), units = l->cfg.units;
	for (int i = 0; dx[0] && i < n; i++)
		for (int j = 0; j < cin; j++) {
			double sum = 0;
			for (int u = 0; u < units; u++)
				sum += (double)dy[(size_t)i * units + u] * l->w[(size_t)u * cin + j];
			dx[0][(size_t)i * cin + j] = (float)sum;
		}
	for (int u = 0; u < units; u++)
		for (int j = 0; j < cin; j++) {
			double sum = 0;
			for (int i = 0; i < n; i++)
				sum += (double)dy[(size_t)i * units + u] * x[0][(size_t)i * cin + j];
			l->dw[(size_t)u * cin + j] = (float)sum;
		}
	for (int u = 0; l->cfg.bias && u < units; u++) {
		double sum = 0;
		for (int i = 0; i < n; i++)
			sum += dy[(size_t)i * units + u];
		l->db[u] = (float)sum;
	}
	return 0;
}

const struct ops_layer_ops ref_dense_ops = {
	.type = OPS_DENSE,
	.name = "inner product",
	.forward = dense_forward,
	.backward = dense_backward,
};
