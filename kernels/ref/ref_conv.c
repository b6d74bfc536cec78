/* ref_conv.c: conv2d by its definition, forward and backward.
 *
 *   x: (n, H, W, Cin)   w: (Cout, K, K, Cin)   b: (Cout)   y: (n, Ho, Wo, Cout)
 *
 *   y[i, oy, ox, o] = b[o] + sum over ky, kx < K and c < Cin of
 *                     x[i, oy*S + ky - pad_t, ox*S + kx - pad_l, c] * w[o, ky, kx, c]
 *
 * with S the stride and input positions outside the image (the padding)
 * reading zero; Ho and Wo are the layer's (pad_b and pad_r only decide them).
 * Every (output, kernel tap) pair that reads an input is a "tap"; backward
 * sends g = dy back along the same taps:
 *
 *   dx[i, iy, ix, c] = sum over the taps reading x[i, iy, ix, c] of g[i, oy, ox, o] * w[o, ky, kx, c]
 *   dw[o, ky, kx, c] = sum over i, oy, ox of g[i, oy, ox, o] * x[i, oy*S + ky - pad_t, ox*S + kx - pad_l, c]
 *   db[o]            = sum over i, oy, ox of g[i, oy, ox, o]
 *
 * With ctx->conv_type bf16 or fp16, x, w and g are rounded to that type
 * before use, as the CPU and cuda backends hand oneDNN and cuDNN such
 * copies of them; the sums stay in double. In bf16 the results are fp32,
 * as oneDNN writes them; in fp16 y (before the bias), dx and dw are
 * rounded to fp16, as cuDNN writes them there: a sum past 65504 becomes
 * inf, which is what the trainer's loss scale watches for. */
#include <stdlib.h>

#include "kernels/ref/ref.h"
#include "util.h"

/* Offset of w[o, ky, kx, c] in (Cout, K, K, Cin). */
static size_t w_at(const struct ops_layer *l, int o, int ky, int kx, int c)
{
	int k = l->cfg.kernel;
	return (((size_t)o * k + ky) * k + kx) * l->in[0].c + c;
}

/* The input position (*iy, *ix) that kernel tap (ky, kx) of output (oy, ox)
 * reads: 1, or 0 when it falls in the padding. */
static int tap(const struct ops_layer *l, int oy, int ox, int ky, int kx, int *iy, int *ix)
{
	*iy = oy * l->cfg.stride + ky - l->cfg.pad_t;
	*ix = ox * l->cfg.stride + kx - l->cfg.pad_l;
	return *iy >= 0 && *iy < l->in[0].h && *ix >= 0 && *ix < l->in[0].w;
}

static size_t w_count(const struct ops_layer *l)
{
	return (size_t)l->cfg.units * l->cfg.kernel * l->cfg.kernel * l->in[0].c;
}

/* A tensor of count values as the convolution reads it: v itself in fp32;
 * in bf16 or fp16 a rounded copy, returned in *copy too for the caller to
 * free (*copy is NULL otherwise). */
static const float *operand(const struct ops_ctx *ctx, const float *v, size_t count,
			    float **copy)
{
	*copy = NULL;
	if (ctx->conv_type == OPS_F32)
		return v;
	float (*round)(float) = ctx->conv_type == OPS_BF16 ? ref_bf16_round : ref_f16_round;
	*copy = xmalloc(count * sizeof(float));
	for (size_t i = 0; i < count; i++)
		(*copy)[i] = round(v[i]);
	return *copy;
}

/* A sum as the backend stores it: fp32, or fp16's value in fp16. */
static float result(const struct ops_ctx *ctx, double sum)
{
	return ctx->conv_type == OPS_F16 ? ref_f16_round((float)sum) : (float)sum;
}

/* What the pass reads and stores in (ops_layer.ran, ran_out), as result(). */
static void ran(const struct ops_ctx *ctx, struct ops_layer *l)
{
	l->ran = ctx->conv_type;
	l->ran_out = ctx->conv_type == OPS_F16 ? OPS_F16 : OPS_F32;
}

static int conv_forward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			float *y, int train)
{
	(void)train;
	const struct ops_layer_cfg *c = &l->cfg;
	const struct ops_shape *is = &l->in[0], *os = &l->out;
	float *x_copy, *w_copy;
	const float *in = operand(ctx, x[0], (size_t)n * ops_shape_size(is), &x_copy);
	const float *w = operand(ctx, l->w, w_count(l), &w_copy);
	ran(ctx, l);

	for (int i = 0; i < n; i++)
		for (int oy = 0; oy < os->h; oy++)
			for (int ox = 0; ox < os->w; ox++)
				for (int o = 0; o < os->c; o++) {
					double sum = 0.0;
					for (int ky = 0; ky < c->kernel; ky++)
						for (int kx = 0; kx < c->kernel; kx++) {
							int iy, ix;
							if (!tap(l, oy, ox, ky, kx, &iy, &ix))
								continue;   /* padding */
							for (int ci = 0; ci < is->c; ci++)
								sum += (double)in[ref_at(is, i, iy, ix, ci)] *
								       w[w_at(l, o, ky, kx, ci)];
						}
					y[ref_at(os, i, oy, ox, o)] =
						result(ctx, sum) + (c->bias ? l->b[o] : 0.0f);
				}
	free(x_copy);
	free(w_copy);
	return 0;
}

static int conv_backward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			 const float *y, const float *dy, float *const *dx)
{
	(void)y;
	const struct ops_layer_cfg *c = &l->cfg;
	const struct ops_shape *is = &l->in[0], *os = &l->out;
	size_t nx = (size_t)n * ops_shape_size(is), nw = w_count(l);
	float *x_copy, *w_copy, *g_copy;
	const float *in = operand(ctx, x[0], nx, &x_copy);
	const float *w = operand(ctx, l->w, nw, &w_copy);
	const float *g = operand(ctx, dy, (size_t)n * ops_shape_size(os), &g_copy);
	ran(ctx, l);
	/* the sums, in double: (n, H, W, Cin), (Cout, K, K, Cin), (Cout) */
	double *sx = dx[0] ? xcalloc(nx, sizeof(double)) : NULL;
	double *sw = xcalloc(nw, sizeof(double));
	double *sb = xcalloc((size_t)os->c, sizeof(double));

	for (int i = 0; i < n; i++)
		for (int oy = 0; oy < os->h; oy++)
			for (int ox = 0; ox < os->w; ox++)
				for (int o = 0; o < os->c; o++) {
					double go = g[ref_at(os, i, oy, ox, o)];
					sb[o] += go;
					for (int ky = 0; ky < c->kernel; ky++)
						for (int kx = 0; kx < c->kernel; kx++) {
							int iy, ix;
							if (!tap(l, oy, ox, ky, kx, &iy, &ix))
								continue;   /* padding */
							for (int ci = 0; ci < is->c; ci++) {
								size_t xi = ref_at(is, i, iy, ix, ci);
								size_t wi = w_at(l, o, ky, kx, ci);
								sw[wi] += go * in[xi];
								if (sx)
									sx[xi] += go * w[wi];
							}
						}
				}

	for (size_t k = 0; sx && k < nx; k++)
		dx[0][k] = result(ctx, sx[k]);
	for (size_t k = 0; k < nw; k++)
		l->dw[k] = result(ctx, sw[k]);
	for (int o = 0; c->bias && o < os->c; o++)
		l->db[o] = (float)sb[o];
	free(sx);
	free(sw);
	free(sb);
	free(x_copy);
	free(w_copy);
	free(g_copy);
	return 0;
}

const struct ops_layer_ops ref_conv_ops = {
	.type = OPS_CONV2D,
	.name = "convolution",
	.forward = conv_forward,
	.backward = conv_backward,
};
