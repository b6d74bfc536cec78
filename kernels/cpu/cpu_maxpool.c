/* cpu_maxpool.c: max pooling in plain C over NHWC (a blocked batch of block
 * width B is an NHWC batch of n*c/B samples of B channels). oneDNN 2.6's NHWC max
 * pooling runs its small-channel windows at a fifth of memory speed (1.7 ms
 * forward for a 64x28x28x32 batch, where these loops take 0.3 ms), so the
 * channel loop here is left to the compiler's vectorizer. The forward pass
 * in training keeps, per output value, which window position won (the first
 * of equal maxima, as oneDNN); backward routes each gradient there.
 * Over bf16 tensors the op runs oneDNN's pooling (cpu_pool.c), whose bf16
 * kernels keep the same one byte per output. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/cpu.h"

struct maxpool_state {
	size_t cap;       /* bytes of arg */
	uint8_t *arg;     /* (n, oh, ow, c): window position k*kh + kw of the max */
};

/* Output (oy, ox)'s window: its top-left corner (ty, tx), which padding may
 * put outside the image, and the part inside it, rows y0..y1, cols x0..x1.
 * Input pixel (iy, ix) is window position (iy - ty) * kernel + ix - tx. */
struct window {
	int ty, tx, y0, y1, x0, x1;
};

static struct window window(const struct ops_layer *l, int oy, int ox)
{
	const struct ops_layer_cfg *c = &l->cfg;
	struct window w = {.ty = oy * c->stride - c->pad_t, .tx = ox * c->stride - c->pad_l};
	w.y0 = w.ty < 0 ? 0 : w.ty;
	w.x0 = w.tx < 0 ? 0 : w.tx;
	w.y1 = w.ty + c->kernel < l->in[0].h ? w.ty + c->kernel : l->in[0].h;
	w.x1 = w.tx + c->kernel < l->in[0].w ? w.tx + c->kernel : l->in[0].w;
	return w;
}

static void row_max(float *restrict o, const float *restrict p, int C)
{
	for (int c = 0; c < C; c++)
		o[c] = p[c] > o[c] ? p[c] : o[c];
}

static void row_argmax(float *restrict o, uint8_t *restrict arg, const float *restrict p, int C,
		       uint8_t t)
{
	for (int c = 0; c < C; c++) {
		float v = o[c], in = p[c];
		uint8_t a = arg[c];
		if (in > v) {
			v = in;
			a = t;
		}
		o[c] = v;
		arg[c] = a;
	}
}

static void row_route(float *restrict d, const float *restrict g, const uint8_t *restrict arg,
		      int C, uint8_t t)
{
	for (int c = 0; c < C; c++) {
		float v = g[c];
		d[c] += arg[c] == t ? v : 0.0f;
	}
}

/* The common 2x2 window fully inside the image, in one pass: p0..p3 are its
 * top-left, top-right, bottom-left and bottom-right pixels. */
static void quad_argmax(float *restrict o, uint8_t *restrict arg, const float *restrict p0,
			const float *restrict p1, const float *restrict p2,
			const float *restrict p3, int C)
{
	for (int c = 0; c < C; c++) {
		float v = p0[c];
		uint8_t a = 0;
		if (p1[c] > v) {
			v = p1[c];
			a = 1;
		}
		if (p2[c] > v) {
			v = p2[c];
			a = 2;
		}
		if (p3[c] > v) {
			v = p3[c];
			a = 3;
		}
		o[c] = v;
		arg[c] = a;
	}
}

/* Backward of a 2x2 window that no other window overlaps: writes all four. */
static void quad_route(float *restrict d0, float *restrict d1, float *restrict d2,
		       float *restrict d3, const float *restrict g, const uint8_t *restrict arg,
		       int C)
{
	for (int c = 0; c < C; c++) {
		float v = g[c];
		uint8_t a = arg[c];
		d0[c] = a == 0 ? v : 0.0f;
		d1[c] = a == 1 ? v : 0.0f;
		d2[c] = a == 2 ? v : 0.0f;
		d3[c] = a == 3 ? v : 0.0f;
	}
}

static int maxpool_forward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			   const float *const *x, float *y, int train)
{
	if (l->out_type != OPS_F32)
		return cpu_pool_forward(ctx, l, n, x, y, train);
	const struct ops_shape *s = &l->in[0], *o = &l->out;
	const int blk = ops_layout_block(ops_in_layout(l, 0));
	const int C = blk > 1 ? blk : s->c, k = l->cfg.kernel;
	const int nb = n * (s->c / C); /* samples of C channels */
	if (k * k > 256)
		return error("maxpool: kernel %d is over 16", k);
	struct maxpool_state *st = l->priv;
	if (!st)
		st = l->priv = xcalloc(1, sizeof(*st));
	size_t need = (size_t)n * ops_shape_size(o);
	if (train && need > st->cap) {
		free(st->arg);
		st->arg = xmalloc(need);
		st->cap = need;
	}
	for (int b = 0; b < nb; b++)
		for (int oy = 0; oy < o->h; oy++)
			for (int ox = 0; ox < o->w; ox++) {
				size_t at = (((size_t)b * o->h + oy) * o->w + ox) * C;
				float *out = y + at;
				uint8_t *arg = train ? st->arg + at : NULL;
				struct window w = window(l, oy, ox);
				const float *p = x[0] + (((size_t)b * s->h + w.y0) * s->w + w.x0) * C;
				if (arg && k == 2 && w.y1 - w.y0 == 2 && w.x1 - w.x0 == 2) {
					quad_argmax(out, arg, p, p + C, p + (size_t)s->w * C,
						    p + (size_t)(s->w + 1) * C, C);
					continue;
				}
				for (int c = 0; c < C; c++)
					out[c] = -FLT_MAX;
				if (arg)
					memset(arg, 0, (size_t)C);
				for (int iy = w.y0; iy < w.y1; iy++)
					for (int ix = w.x0; ix < w.x1; ix++) {
						const float *q = x[0] + (((size_t)b * s->h + iy) * s->w + ix) * C;
						uint8_t t = (uint8_t)((iy - w.ty) * k + ix - w.tx);
						if (arg)
							row_argmax(out, arg, q, C, t);
						else
							row_max(out, q, C);
					}
			}
	return 0;
}

static int maxpool_backward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			    const float *const *x, const float *y, const float *dy,
			    float *const *dx)
{
	if (l->out_type != OPS_F32)
		return cpu_pool_backward(ctx, l, n, x, y, dy, dx);
	if (!dx[0])
		return 0;
	const struct ops_shape *s = &l->in[0], *o = &l->out;
	const int blk = ops_layout_block(ops_in_layout(l, 0));
	const int C = blk > 1 ? blk : s->c, k = l->cfg.kernel;
	const int nb = n * (s->c / C); /* samples of C channels */
	struct maxpool_state *st = l->priv;
	if (!st || st->cap < (size_t)n * ops_shape_size(o))
		return error("maxpool: backward without a training forward pass");
	const struct ops_layer_cfg *cf = &l->cfg;
	/* 2x2 windows at stride 2 tile an even-sized image exactly: every input
	 * gradient is written once, without clearing first */
	int tiled = k == 2 && cf->stride == 2 && !cf->pad_t && !cf->pad_l && !cf->pad_b &&
		    !cf->pad_r && s->h == 2 * o->h && s->w == 2 * o->w;
	if (!tiled)
		memset(dx[0], 0, sizeof(float) * (size_t)n * ops_shape_size(s));
	for (int b = 0; b < nb; b++)
		for (int oy = 0; oy < o->h; oy++)
			for (int ox = 0; ox < o->w; ox++) {
				size_t at = (((size_t)b * o->h + oy) * o->w + ox) * C;
				struct window w = window(l, oy, ox);
				float *d = dx[0] + (((size_t)b * s->h + w.y0) * s->w + w.x0) * C;
				if (tiled) {
					quad_route(d, d + C, d + (size_t)s->w * C, d + (size_t)(s->w + 1) * C,
						   dy + at, st->arg + at, C);
					continue;
				}
				for (int iy = w.y0; iy < w.y1; iy++)
					for (int ix = w.x0; ix < w.x1; ix++) {
						float *e = dx[0] + (((size_t)b * s->h + iy) * s->w + ix) * C;
						uint8_t t = (uint8_t)((iy - w.ty) * k + ix - w.tx);
						row_route(e, dy + at, st->arg + at, C, t);
					}
			}
	return 0;
}

static void maxpool_release(struct ops_ctx *ctx, struct ops_layer *l)
{
	if (l->out_type != OPS_F32) {
		cpu_pool_release(ctx, l);
		return;
	}
	struct maxpool_state *st = l->priv;
	if (st)
		free(st->arg);
	free(st);
	l->priv = NULL;
}

/* The window position of each output's maximum, one byte each, kept
 * from the training forward for the backward. */
static size_t maxpool_workspace(const struct ops_ctx *ctx, const struct ops_layer *l, int n,
				size_t *scratch)
{
	(void)ctx;
	*scratch = 0;
	return (size_t)n * ops_shape_size(&l->out);
}

const struct ops_layer_ops cpu_maxpool_ops = {
	.type = OPS_MAXPOOL,
	.name = "max pooling",
	.forward = maxpool_forward,
	.backward = maxpool_backward,
	.release = maxpool_release,
	.workspace = maxpool_workspace,
	.blocked = 1,
	.bf16 = 1,
};
