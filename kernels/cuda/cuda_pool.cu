/* cuda_pool.cu: max, average and global average pooling (kernels/ref/
 * ref_pool.c's definitions), W channels a thread.
 *
 *   x, dx: (n, H, W, C) of T   y, dy: (n, Ho, Wo, C) (global: (n, 1, 1, C), of TY)
 *
 * A thread takes one output (forward) or input (backward) position and W
 * channels of it; the position is its row of the channel grid (cuk.cuh),
 * split into sample, row and column once per W values. The backward
 * passes gather: each input adds what the windows holding it owe it, in
 * the windows' order (ref's), and stores once. Max pooling's training
 * forward keeps, a byte per output value, where in its window the first
 * largest value was (ops_layer.mask, which the model keeps between the
 * passes); its backward compares an input's place in each window with
 * that byte. Without the mask (a layer the model gave none) the backward
 * finds each window's maximum again from x. */
#include "kernels/cuda/cuk.cuh"

namespace cuk {

/* Pooling geometry: input (n, h, w, c), output (oh, ow). */
struct geo {
	int n, h, w, c, oh, ow, k, stride, pt, pl;
};

/* The part of output (oy, ox)'s window inside the image. */
struct win {
	int y0, y1, x0, x1;
};

__device__ __forceinline__ win window(const geo &p, int oy, int ox)
{
	int top = oy * p.stride - p.pt, left = ox * p.stride - p.pl;
	return win{imax(top, 0), imin(top + p.k, p.h), imax(left, 0), imin(left + p.k, p.w)};
}

/* The outputs whose windows hold input row (or column) v: [*lo, *hi]. */
__device__ __forceinline__ void windows_over(int v, int pad, int k, int stride, int out, int *lo,
					     int *hi)
{
	int first = v + pad - k + 1;   /* o*stride at least this */
	*lo = first <= 0 ? 0 : (first + stride - 1) / stride;
	*hi = imin((v + pad) / stride, out - 1);
}

__device__ __forceinline__ size_t at(const geo &p, int s, int y, int x)
{
	return (((size_t)s * p.h + y) * p.w + x) * p.c;
}

__device__ __forceinline__ size_t at_out(const geo &p, int s, int y, int x)
{
	return (((size_t)s * p.oh + y) * p.ow + x) * p.c;
}

#define CH0(W) ((int)(blockIdx.x * blockDim.x + threadIdx.x) * (W))
#define ROWS(r, count)                                                                 \
	for (size_t r = (size_t)blockIdx.y * blockDim.y + threadIdx.y; r < (size_t)(count); \
	     r += (size_t)gridDim.y * blockDim.y)

/* The first largest value of each of W channels in window w, and where. */
template <class T, int W>
__device__ __forceinline__ void window_max(const geo &p, const T *x, int s, win w, int ch0,
					   float (&top)[W], int (&where)[W])
{
	ld<T, W>(x + at(p, s, w.y0, w.x0) + ch0, top);
#pragma unroll
	for (int k = 0; k < W; k++)
		where[k] = w.y0 * p.w + w.x0;
	for (int y = w.y0; y < w.y1; y++)
		for (int xx = w.x0; xx < w.x1; xx++) {
			float v[W];
			ld<T, W>(x + at(p, s, y, xx) + ch0, v);
#pragma unroll
			for (int k = 0; k < W; k++)
				if (v[k] > top[k])
					top[k] = v[k], where[k] = y * p.w + xx;
		}
}

/* input (y, x)'s place in output (oy, ox)'s window, counted from its
 * unclipped corner: ky * K + kx */
__device__ __forceinline__ int place(const geo &p, int oy, int ox, int y, int x)
{
	return (y - (oy * p.stride - p.pt)) * p.k + (x - (ox * p.stride - p.pl));
}

/* mask: NULL, or the argmax's place for each output value */
template <class T, int W> __global__ void maxpool_fwd(geo p, const T *x, T *y, uint8_t *mask)
{
	int ch0 = CH0(W);
	if (ch0 >= p.c)
		return;
	ROWS(r, (size_t)p.n * p.oh * p.ow) {
		int ox = (int)(r % p.ow), t = (int)(r / p.ow), oy = t % p.oh, s = t / p.oh;
		float top[W];
		int where[W];
		window_max<T, W>(p, x, s, window(p, oy, ox), ch0, top, where);
		st<T, W>(y + r * p.c + ch0, top);
		if (mask)
#pragma unroll
			for (int k = 0; k < W; k++)
				mask[r * p.c + ch0 + k] =
					(uint8_t)place(p, oy, ox, where[k] / p.w, where[k] % p.w);
	}
}

/* The backward passes of pooling, one thread per (input position, W
 * channels): the gradient of input (s, yy, xx) gathers, from every output
 * window over it, what add(s, oy, ox, yy, xx, ch0, g) adds into g. */
template <class T, int W, class Add> __device__ __forceinline__ void gather_windows(geo p, T *dx, Add add)
{
	int ch0 = CH0(W);
	if (ch0 >= p.c)
		return;
	ROWS(r, (size_t)p.n * p.h * p.w) {
		int xx = (int)(r % p.w), t = (int)(r / p.w), yy = t % p.h, s = t / p.h;
		int oy0, oy1, ox0, ox1;
		windows_over(yy, p.pt, p.k, p.stride, p.oh, &oy0, &oy1);
		windows_over(xx, p.pl, p.k, p.stride, p.ow, &ox0, &ox1);
		float g[W] = {};
		for (int oy = oy0; oy <= oy1; oy++)
			for (int ox = ox0; ox <= ox1; ox++)
				add(s, oy, ox, yy, xx, ch0, g);
		st<T, W>(dx + r * p.c + ch0, g);
	}
}

/* the backward from the forward's mask: dy of every window whose argmax
 * is this input, in the windows' order */
template <class T, int W>
__global__ void maxpool_bwd_mask(geo p, const uint8_t *mask, const T *dy, T *dx)
{
	gather_windows<T, W>(p, dx, [&](int s, int oy, int ox, int yy, int xx, int ch0, float *g) {
		size_t o = at_out(p, s, oy, ox) + ch0;
		uint8_t me = (uint8_t)place(p, oy, ox, yy, xx);
		float d[W];
		ld<T, W>(dy + o, d);
#pragma unroll
		for (int k = 0; k < W; k++)
			if (mask[o + k] == me)
				g[k] += d[k];
	});
}

/* without a mask: each window's argmax found again from x */
template <class T, int W> __global__ void maxpool_bwd(geo p, const T *x, const T *dy, T *dx)
{
	gather_windows<T, W>(p, dx, [&](int s, int oy, int ox, int yy, int xx, int ch0, float *g) {
		float top[W], d[W];
		int where[W];
		window_max<T, W>(p, x, s, window(p, oy, ox), ch0, top, where);
		ld<T, W>(dy + at_out(p, s, oy, ox) + ch0, d);
#pragma unroll
		for (int k = 0; k < W; k++)
			if (where[k] == yy * p.w + xx)
				g[k] += d[k];
	});
}

template <class T, int W> __global__ void avgpool_fwd(geo p, const T *x, T *y)
{
	int ch0 = CH0(W);
	if (ch0 >= p.c)
		return;
	ROWS(r, (size_t)p.n * p.oh * p.ow) {
		int ox = (int)(r % p.ow), t = (int)(r / p.ow), oy = t % p.oh, s = t / p.oh;
		win w = window(p, oy, ox);
		float sum[W] = {}, inv = 1.0f / (float)((w.y1 - w.y0) * (w.x1 - w.x0));
		for (int yy = w.y0; yy < w.y1; yy++)
			for (int xx = w.x0; xx < w.x1; xx++) {
				float v[W];
				ld<T, W>(x + at(p, s, yy, xx) + ch0, v);
#pragma unroll
				for (int k = 0; k < W; k++)
					sum[k] += v[k];
			}
#pragma unroll
		for (int k = 0; k < W; k++)
			sum[k] *= inv;
		st<T, W>(y + r * p.c + ch0, sum);
	}
}

template <class T, int W> __global__ void avgpool_bwd(geo p, const T *dy, T *dx)
{
	gather_windows<T, W>(p, dx, [&](int s, int oy, int ox, int, int, int ch0, float *g) {
		win w = window(p, oy, ox);
		float d[W], inv = 1.0f / (float)((w.y1 - w.y0) * (w.x1 - w.x0));
		ld<T, W>(dy + at_out(p, s, oy, ox) + ch0, d);
#pragma unroll
		for (int k = 0; k < W; k++)
			g[k] = fmaf(d[k], inv, g[k]);
	});
}

/* one thread per (sample, W channels): the mean of its hw rows */
template <class TX, class TY, int W>
__global__ void gap_fwd(int n, int hw, int c, const TX *x, TY *y)
{
	int ch0 = CH0(W);
	if (ch0 >= c)
		return;
	float inv = 1.0f / (float)hw;
	ROWS(s, n) {
		float sum[W] = {};
		for (int k = 0; k < hw; k++) {
			float v[W];
			ld<TX, W>(x + (s * hw + k) * c + ch0, v);
#pragma unroll
			for (int j = 0; j < W; j++)
				sum[j] += v[j];
		}
#pragma unroll
		for (int j = 0; j < W; j++)
			sum[j] *= inv;
		st<TY, W>(y + s * c + ch0, sum);
	}
}

template <class TX, class TY, int W>
__global__ void gap_bwd(int n, int hw, int c, const TY *dy, TX *dx)
{
	int ch0 = CH0(W);
	if (ch0 >= c)
		return;
	float inv = 1.0f / (float)hw;
	ROWS(r, (size_t)n * hw) {
		float d[W];
		ld<TY, W>(dy + (r / hw) * c + ch0, d);
#pragma unroll
		for (int j = 0; j < W; j++)
			d[j] *= inv;
		st<TX, W>(dx + r * c + ch0, d);
	}
}

} /* namespace cuk */

using namespace cuk;

/* ---- host ops --------------------------------------------------------------------- */

/* whether the layer has a mask and a window's places fit its bytes */
static int mask_fits(const struct ops_layer *l)
{
	return l->mask && l->cfg.kernel * l->cfg.kernel <= 256;
}

static geo geo_of(const struct ops_layer *l, int n)
{
	const struct ops_shape *s = &l->in[0];
	return geo{n, s->h, s->w, s->c, l->out.h, l->out.w, l->cfg.kernel, l->cfg.stride,
		   l->cfg.pad_t, l->cfg.pad_l};
}

/* A pooling kernel over `rows` positions of p.c channels: W = VN<T> where
 * the channels and pointers allow. */
template <class T, class K1, class KV, class... A>
static cudaError_t pool_go(const cuk_run *r, const char *name, double bytes, size_t rows, int c,
			   int vec, K1 k1, KV kv, A... a)
{
	if (vec)
		return go(r, name, bytes, channel_grid(r, rows, c / VN<T>::n, 0), kv, a...);
	return go(r, name, bytes, channel_grid(r, rows, c, 0), k1, a...);
}

static int pool_forward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			float *y, int train)
{
	size_t nx = (size_t)n * ops_shape_size(&l->in[0]), ny = (size_t)n * ops_shape_size(&l->out);
	enum ops_dtype tx = ops_in_type(l, 0), ty = l->out_type;
	void *gx, *gy;
	geo p = geo_of(l, n);
	if (cuda_begin(ctx) || cuda_in(ctx, x[0], cuda_bytes(nx, tx), &gx) ||
	    cuda_out(ctx, y, cuda_bytes(ny, ty), 0, &gy))
		return -1;
	const cuk_run *r = cuda_run(ctx);
	double bytes = (double)cuda_bytes(nx, tx) + (double)cuda_bytes(ny, ty);
	if (l->cfg.type == OPS_GLOBAL_AVG_POOL) {
		CUDA_LAUNCH(typed(tx, [&](auto xtag) {
			using TX = decltype(xtag);
			return typed(ty, [&](auto ytag) {
				using TY = decltype(ytag);
				const TX *X = (const TX *)gx;
				TY *Y = (TY *)gy;
				/* vectors where x and y hold as many values a vector */
				constexpr int V = VN<TX>::n == VN<TY>::n ? VN<TX>::n : 1;
				int vec = V > 1 && vec_fits<TX>(p.c, X, Y);
				return pool_go<TX>(r, "gap_fwd", bytes, (size_t)n, p.c, vec,
						   gap_fwd<TX, TY, 1>, gap_fwd<TX, TY, V>, n, p.h * p.w,
						   p.c, X, Y);
			});
		}));
		return cuda_end(ctx);
	}
	int max = l->cfg.type == OPS_MAXPOOL;
	void *gmask = NULL;   /* the argmax, for the backward: training only */
	if (max && train && mask_fits(l) && cuda_out(ctx, l->mask, ny, 0, &gmask))
		return -1;
	CUDA_LAUNCH(typed(ty, [&](auto tag) {
		using T = decltype(tag);
		const T *X = (const T *)gx;
		T *Y = (T *)gy;
		uint8_t *M = (uint8_t *)gmask;
		int vec = vec_fits<T>(p.c, X, Y);
		size_t rows = (size_t)n * p.oh * p.ow;
		return max ? pool_go<T>(r, "maxpool_fwd", bytes + (M ? ny : 0), rows, p.c, vec,
					maxpool_fwd<T, 1>, maxpool_fwd<T, VN<T>::n>, p, X, Y, M)
			   : pool_go<T>(r, "avgpool_fwd", bytes, rows, p.c, vec, avgpool_fwd<T, 1>,
					avgpool_fwd<T, VN<T>::n>, p, X, Y);
	}));
	return cuda_end(ctx);
}

static int pool_backward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			 const float *y, const float *dy, float *const *dx)
{
	(void)y;
	size_t nx = (size_t)n * ops_shape_size(&l->in[0]), ny = (size_t)n * ops_shape_size(&l->out);
	enum ops_dtype tx = ops_in_type(l, 0), ty = l->out_type;
	void *gx = NULL, *gdy, *gdx, *gmask = NULL;
	geo p = geo_of(l, n);
	int max = l->cfg.type == OPS_MAXPOOL, masked = max && mask_fits(l);
	if (!dx[0])
		return 0;
	if (cuda_begin(ctx) || (max && !masked && cuda_in(ctx, x[0], cuda_bytes(nx, tx), &gx)) ||
	    (masked && cuda_in(ctx, l->mask, ny, &gmask)) ||
	    cuda_in(ctx, dy, cuda_bytes(ny, ty), &gdy) || cuda_out(ctx, dx[0], cuda_bytes(nx, tx), 0, &gdx))
		return -1;
	const cuk_run *r = cuda_run(ctx);
	double bytes = (double)cuda_bytes(nx, tx) * (max && !masked ? 2 : 1) +
		       (double)cuda_bytes(ny, ty) + (masked ? (double)ny : 0);
	size_t rows = (size_t)n * p.h * p.w;
	if (l->cfg.type == OPS_GLOBAL_AVG_POOL) {
		CUDA_LAUNCH(typed(tx, [&](auto xtag) {
			using TX = decltype(xtag);
			return typed(ty, [&](auto ytag) {
				using TY = decltype(ytag);
				const TY *DY = (const TY *)gdy;
				TX *DX = (TX *)gdx;
				constexpr int V = VN<TX>::n == VN<TY>::n ? VN<TX>::n : 1;
				int vec = V > 1 && vec_fits<TX>(p.c, DY, DX);
				return pool_go<TX>(r, "gap_bwd", bytes, rows, p.c, vec, gap_bwd<TX, TY, 1>,
						   gap_bwd<TX, TY, V>, n, p.h * p.w, p.c, DY, DX);
			});
		}));
		return cuda_end(ctx);
	}
	CUDA_LAUNCH(typed(ty, [&](auto tag) {
		using T = decltype(tag);
		const T *X = (const T *)gx, *DY = (const T *)gdy;
		T *DX = (T *)gdx;
		int vec = vec_fits<T>(p.c, X, DY, DX);
		if (masked)
			return pool_go<T>(r, "maxpool_bwd", bytes, rows, p.c, vec, maxpool_bwd_mask<T, 1>,
					  maxpool_bwd_mask<T, VN<T>::n>, p, (const uint8_t *)gmask, DY, DX);
		return max ? pool_go<T>(r, "maxpool_bwd", bytes, rows, p.c, vec, maxpool_bwd<T, 1>,
					maxpool_bwd<T, VN<T>::n>, p, X, DY, DX)
			   : pool_go<T>(r, "avgpool_bwd", bytes, rows, p.c, vec, avgpool_bwd<T, 1>,
					avgpool_bwd<T, VN<T>::n>, p, DY, DX);
	}));
	return cuda_end(ctx);
}

extern "C" const struct ops_layer_ops cuda_maxpool_ops = {
	.type = OPS_MAXPOOL,
	.name = "max pooling",
	.forward = pool_forward,
	.backward = pool_backward,
	.bf16 = 1,
	.keeps_mask = 1,
};

extern "C" const struct ops_layer_ops cuda_avgpool_ops = {
	.type = OPS_AVGPOOL,
	.name = "average pooling",
	.forward = pool_forward,
	.backward = pool_backward,
	.bf16 = 1,
};

extern "C" const struct ops_layer_ops cuda_gap_ops = {
	.type = OPS_GLOBAL_AVG_POOL,
	.name = "global average pooling",
	.forward = pool_forward,
	.backward = pool_backward,
	.bf16 = 1,
};
