/* ref_pool.c: max, average and global average pooling by their definitions.
 *
 *   x: (n, H, W, C)   y: (n, Ho, Wo, C)
 *
 * Output (oy, ox)'s window is the K x K block of input positions
 * (oy*S + ky - pad_t, ox*S + kx - pad_l), ky, kx < K, S the stride; the
 * positions outside the image (padding) are not part of it:
 *
 *   maxpool:   y = the largest x in the window; backward sends dy to the
 *              first position (row-major in the window) holding it
 *   avgpool:   y = sum x / count, count = the window's positions inside the
 *              image (padding excluded); backward adds dy / count to each
 *   global_avg_pool: one window over the whole image, y: (n, 1, 1, C)
 *
 * Channels never mix: each loop runs per (sample, channel). */
#include <stdlib.h>
#include <string.h>

#include "kernels/ref/ref.h"
#include "util.h" /* xcalloc */

/* The part of output (oy, ox)'s window inside the image: rows y0..y1-1,
 * columns x0..x1-1. */
struct window {
	int y0, y1, x0, x1;
};

static struct window window(const struct ops_layer *l, int oy, int ox)
{
	const struct ops_layer_cfg *c = &l->cfg;
	int top = oy * c->stride - c->pad_t, left = ox * c->stride - c->pad_l;
	struct window w = {top, top + c->kernel, left, left + c->kernel};
	if (w.y0 < 0)
		w.y0 = 0;
	if (w.x0 < 0)
		w.x0 = 0;
	if (w.y1 > l->in[0].h)
		w.y1 = l->in[0].h;
	if (w.x1 > l->in[0].w)
		w.x1 = l->in[0].w;
	return w;
}

/* The window of the whole image, for global_avg_pool. */
static struct window whole(const struct ops_layer *l, int oy, int ox)
{
	(void)oy, (void)ox;
	return (struct window){0, l->in[0].h, 0, l->in[0].w};
}

/* Offset in x of the first largest value of channel c of sample i in w. */
static size_t argmax(const struct ops_shape *s, const float *x, int i, int c, struct window w)
{
	size_t best = ref_at(s, i, w.y0, w.x0, c);
	for (int iy = w.y0; iy < w.y1; iy++)
		for (int ix = w.x0; ix < w.x1; ix++)
			if (x[ref_at(s, i, iy, ix, c)] > x[best])
				best = ref_at(s, i, iy, ix, c);
	return best;
}

static int maxpool_forward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			   const float *const *x, float *y, int train)
{
	(void)ctx, (void)train;
	const struct ops_shape *is = &l->in[0], *os = &l->out;
	for (int i = 0; i < n; i++)
		for (int oy = 0; oy < os->h; oy++)
			for (int ox = 0; ox < os->w; ox++)
				for (int c = 0; c < os->c; c++)
					y[ref_at(os, i, oy, ox, c)] =
						x[0][argmax(is, x[0], i, c, window(l, oy, ox))];
	return 0;
}

/* The window's position is found again from x: no state between passes. */
static int maxpool_backward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			    const float *const *x, const float *y, const float *dy,
			    float *const *dx)
{
	(void)ctx, (void)y;
	const struct ops_shape *is = &l->in[0], *os = &l->out;
	if (!dx[0])
		return 0;
	memset(dx[0], 0, (size_t)n * ops_shape_size(is) * sizeof(float));
	for (int i = 0; i < n; i++)
		for (int oy = 0; oy < os->h; oy++)
			for (int ox = 0; ox < os->w; ox++)
				for (int c = 0; c < os->c; c++)
					dx[0][argmax(is, x[0], i, c, window(l, oy, ox))] +=
						dy[ref_at(os, i, oy, ox, c)];
	return 0;
}

/* Average pooling over the windows window_of() gives, forward... */
static void average(const struct ops_layer *l, int n, const float *x, float *y,
		    struct window (*window_of)(const struct ops_layer *, int, int))
{
	const struct ops_shape *is = &l->in[0], *os = &l->out;
	for (int i = 0; i < n; i++)
		for (int oy = 0; oy < os->h; oy++)
			for (int ox = 0; ox < os->w; ox++) {
				struct window w = window_of(l, oy, ox);
				int count = (w.y1 - w.y0) * (w.x1 - w.x0);
				for (int c = 0; c < os->c; c++) {
					double sum = 0;
					for (int iy = w.y0; iy < w.y1; iy++)
						for (int ix = w.x0; ix < w.x1; ix++)
							sum += x[ref_at(is, i, iy, ix, c)];
					y[ref_at(os, i, oy, ox, c)] = (float)(sum / count);
				}
			}
}

/* ... and backward: each input gathers dy / count of every window it is in. */
static void average_backward(const struct ops_layer *l, int n, const float *dy, float *dx,
			     struct window (*window_of)(const struct ops_layer *, int, int))
{
	const struct ops_shape *is = &l->in[0], *os = &l->out;
	size_t nx = (size_t)n * ops_shape_size(is);
	double *sum = xcalloc(nx, sizeof(double));
	for (int i = 0; i < n; i++)
		for (int oy = 0; oy < os->h; oy++)
			for (int ox = 0; ox < os->w; ox++) {
				struct window w = window_of(l, oy, ox);
				int count = (w.y1 - w.y0) * (w.x1 - w.x0);
				for (int c = 0; c < os->c; c++)
					for (int iy = w.y0; iy < w.y1; iy++)
						for (int ix = w.x0; ix < w.x1; ix++)
							sum[ref_at(is, i, iy, ix, c)] +=
								(double)dy[ref_at(os, i, oy, ox, c)] / count;
			}
	for (size_t k = 0; k < nx; k++)
		dx[k] = (float)sum[k];
	free(sum);
}

static int avgpool_forward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			   const float *const *x, float *y, int train)
{
	(void)ctx, (void)train;
	average(l, n, x[0], y, window);
	return 0;
}

static int avgpool_backward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			    const float *const *x, const float *y, const float *dy,
			    float *const *dx)
{
	(void)ctx, (void)x, (void)y;
	if (dx[0])
		average_backward(l, n, dy, dx[0], window);
	return 0;
}

static int gap_forward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
		       float *y, int train)
{
	(void)ctx, (void)train;
	average(l, n, x[0], y, whole);
	return 0;
}

static int gap_backward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			const float *y, const float *dy, float *const *dx)
{
	(void)ctx, (void)x, (void)y;
	if (dx[0])
		average_backward(l, n, dy, dx[0], whole);
	return 0;
}

const struct ops_layer_ops ref_maxpool_ops = {
	.type = OPS_MAXPOOL,
	.name = "max pooling",
	.forward = maxpool_forward,
	.backward = maxpool_backward,
};
const struct ops_layer_ops ref_avgpool_ops = {
	.type = OPS_AVGPOOL,
	.name = "average pooling",
	.forward = avgpool_forward,
	.backward = avgpool_backward,
};
const struct ops_layer_ops ref_gap_ops = {
	.type = OPS_GLOBAL_AVG_POOL,
	.name = "global average pooling",
	.forward = gap_forward,
	.backward = gap_backward,
};
