/* cuda_kernels.cu: the hand-written CUDA kernels of the cuda backend, one
 * plain kernel per formula of kernels/ref (the definitions they are tested
 * against), and their launchers (kernels/cuda/cuda.h). Tensors are fp32 or
 * bf16 (enum cuk_type, a kernel argument: ld() reads either as float, st()
 * rounds to nearest even where it stores bf16); every sum is in float or
 * double whatever the tensors' type.
 *
 * Per-channel sums (batchnorm, biases) reduce a tile of rows per block and
 * add the block's partial sums into double accumulators with atomicAdd, so
 * the sums keep the precision ref's double sums have; the order of the
 * additions varies from run to run by a rounding of double, far below the
 * fp32 results. Pool backward gathers: each input sums the windows it is
 * in (at most ceil(K/S)^2) in the order ref adds them, and stores once. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_v1.h"

#define THREADS 256

static unsigned blocks_for(size_t count)
{
	size_t b = (count + THREADS - 1) / THREADS;
	if (b > 65535u * 16u)
		b = 65535u * 16u;   /* grid-stride loops cover the rest */
	return (unsigned)(b ? b : 1);
}

#define FOR_EACH(i, count) \
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (count); \
	     i += (size_t)gridDim.x * blockDim.x)

/* Value i of a tensor of type t as a float, and a float stored there. */
__device__ __forceinline__ float ld(int t, const void *p, size_t i)
{
	return t == CUK_BF16 ? __bfloat162float(((const __nv_bfloat16 *)p)[i])
			     : ((const float *)p)[i];
}

__device__ __forceinline__ void st(int t, void *p, size_t i, float v)
{
	if (t == CUK_BF16)
		((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v);
	else
		((float *)p)[i] = v;
}

/* ---- element-wise ------------------------------------------------------------ */

__global__ void relu_fwd(int t, size_t count, const void *x, void *y)
{
	FOR_EACH(i, count) {
		float v = ld(t, x, i);
		st(t, y, i, v > 0.0f ? v : 0.0f);
	}
}

__global__ void relu_bwd(int t, size_t count, const void *x, const void *dy, void *dx)
{
	FOR_EACH(i, count) st(t, dx, i, ld(t, x, i) > 0.0f ? ld(t, dy, i) : 0.0f);
}

__global__ void copy_k(size_t count, const float *x, float *y)
{
	FOR_EACH(i, count) y[i] = x[i];
}

__global__ void accumulate_k(int t, size_t count, void *y, const void *x)
{
	FOR_EACH(i, count) st(t, y, i, ld(t, y, i) + ld(t, x, i));
}

/* Every thread that meets an inf or a NaN stores the same 1. */
__global__ void unscale_k(size_t count, float *g, float inv, int *bad)
{
	FOR_EACH(i, count) {
		float v = g[i];
		if (!isfinite(v))
			*bad = 1;
		g[i] = v * inv;
	}
}

__global__ void cast_k(size_t count, int kind, const void *x, void *y)
{
	const float *xf = (const float *)x;
	const unsigned short *xh = (const unsigned short *)x;
	float *yf = (float *)y;
	unsigned short *yh = (unsigned short *)y;
	FOR_EACH(i, count) {
		switch (kind) {
		case CUK_F32_TO_BF16: yh[i] = __bfloat16_as_ushort(__float2bfloat16_rn(xf[i])); break;
		case CUK_BF16_TO_F32: yf[i] = __bfloat162float(__ushort_as_bfloat16(xh[i])); break;
		case CUK_F32_TO_F16: yh[i] = __half_as_ushort(__float2half_rn(xf[i])); break;
		default: yf[i] = __half2float(__ushort_as_half(xh[i])); break;
		}
	}
}

__global__ void sgd_k(size_t count, float *w, const float *g, float *v, float lr, float mu,
		      float wd)
{
	FOR_EACH(i, count) {
		float vi = mu * v[i] + g[i] + wd * w[i];
		v[i] = vi;
		w[i] = w[i] - lr * vi;
	}
}

/* add_fwd and add_bwd index the argument arrays with constants only (the
 * loops over CUK_MAX_ARGS unroll): a run-time index into a by-value
 * parameter array makes every thread copy it to local memory first (a
 * 128-byte stack frame in `nvcc -Xptxas -v`; on an H200 these two kernels
 * took 40% of a ResNet-50 step, docs/cuda.md). */
__global__ void add_fwd(int t, size_t count, cuk_args a, int nx, int acc, int relu, void *y)
{
	FOR_EACH(i, count) {
		double sum = acc ? ld(t, y, i) : 0.0;
#pragma unroll
		for (int k = 0; k < CUK_MAX_ARGS; k++)
			if (k < nx)
				sum += ld(t, a.x[k], i);
		if (relu && sum < 0)
			sum = 0;
		st(t, y, i, (float)sum);
	}
}

__global__ void add_bwd(int t, size_t count, cuk_args a, int ndx, int relu, const void *y,
			const void *dy)
{
	FOR_EACH(i, count) {
		float g = relu && !(ld(t, y, i) > 0.0f) ? 0.0f : ld(t, dy, i);
#pragma unroll
		for (int k = 0; k < CUK_MAX_ARGS; k++)
			if (k < ndx && a.dx[k])
				st(t, a.dx[k], i, g);
	}
}

__global__ void slice_put(int t, size_t rows, int cx, int cy, int off, const void *x, void *y)
{
	FOR_EACH(i, rows * (size_t)cx) {
		size_t r = i / cx, ch = i % cx;
		st(t, y, r * cy + off + ch, ld(t, x, i));
	}
}

__global__ void slice_get(int t, size_t rows, int cx, int cy, int off, const void *dy, void *dx)
{
	FOR_EACH(i, rows * (size_t)cx) {
		size_t r = i / cx, ch = i % cx;
		st(t, dx, i, ld(t, dy, r * cy + off + ch));
	}
}

/* ops_dropout_mask's generator (kernels/ops.c): splitmix64 of base + the
 * index rounded down to 4, four 16-bit uniforms per hash. */
__device__ uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

__global__ void dropout_fwd(size_t count, uint64_t base, uint32_t threshold, float scale,
			    const float *x, float *y, uint8_t *mask)
{
	FOR_EACH(i, count) {
		uint64_t r = mix64(base + (i & ~(size_t)3));
		uint8_t keep = ((r >> (16 * (i & 3))) & 0xffff) >= threshold;
		mask[i] = keep;
		y[i] = keep ? x[i] * scale : 0.0f;
	}
}

__global__ void dropout_bwd(size_t count, float scale, const uint8_t *mask, const float *dy,
			    float *dx)
{
	FOR_EACH(i, count) dx[i] = !mask || mask[i] ? dy[i] * scale : 0.0f;
}

/* ---- per-channel sums ----------------------------------------------------------
 * A block of 32 x 8 threads owns 32 channels and a stripe of 256 rows (or
 * several, gridDim.y apart): thread (tx, ty) sums rows ty, ty + 8, ... of
 * its stripes for channel tx (the 32 threads of a warp read 32 neighbouring
 * floats), the 8 partial sums of a channel meet in shared memory, and
 * thread ty == 0 adds them to acc. */
#define CH_TILE 32
#define ROW_TILE 8
#define ROWS_PER_BLOCK 256

static dim3 channel_grid(size_t rows, int c)
{
	size_t stripes = (rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK;
	if (stripes > 65535)
		stripes = 65535;   /* gridDim.y's limit: a block then takes several stripes */
	return dim3((unsigned)((c + CH_TILE - 1) / CH_TILE), (unsigned)(stripes ? stripes : 1));
}

/* acc[ch] += sum of f(row, ch) over the block's rows; acc2 likewise for g. */
template <typename F, typename G>
__device__ void channel_reduce(size_t rows, int c, F f, G g, double *acc, double *acc2)
{
	__shared__ double part[ROW_TILE][CH_TILE], part2[ROW_TILE][CH_TILE];
	int ch = blockIdx.x * CH_TILE + threadIdx.x;
	double s = 0, s2 = 0;
	for (size_t r0 = (size_t)blockIdx.y * ROWS_PER_BLOCK; ch < c && r0 < rows;
	     r0 += (size_t)gridDim.y * ROWS_PER_BLOCK)
		for (size_t r = r0 + threadIdx.y; r < rows && r < r0 + ROWS_PER_BLOCK; r += ROW_TILE) {
			s += f(r, ch);
			if (acc2)
				s2 += g(r, ch);
		}
	part[threadIdx.y][threadIdx.x] = s;
	part2[threadIdx.y][threadIdx.x] = s2;
	__syncthreads();
	if (threadIdx.y == 0 && ch < c) {
		for (int k = 1; k < ROW_TILE; k++)
			s += part[k][threadIdx.x], s2 += part2[k][threadIdx.x];
		atomicAdd(&acc[ch], s);
		if (acc2)
			atomicAdd(&acc2[ch], s2);
	}
}

struct read_x {
	int t;
	const void *x;
	int c;
	__device__ double operator()(size_t r, int ch) const { return ld(t, x, r * c + ch); }
};

__global__ void channel_sum_k(int t, size_t rows, int c, const void *x, double *acc)
{
	read_x f{t, x, c};
	channel_reduce(rows, c, f, f, acc, (double *)0);
}

__global__ void to_float(int c, const double *acc, float *out)
{
	int ch = blockIdx.x * blockDim.x + threadIdx.x;
	if (ch < c)
		out[ch] = (float)acc[ch];
}

__global__ void bias_add_k(int t, size_t rows, int c, const float *b, void *y)
{
	FOR_EACH(i, rows * (size_t)c) st(t, y, i, ld(t, y, i) + b[i % c]);
}

/* ---- batchnorm --------------------------------------------------------------- */

/* sum of x and of x^2 (one pass, in double: the fp32 values' squares and
 * sums are exact enough there for the variance of a batch) */
__global__ void bn_sums(int t, size_t rows, int c, const void *x, double *acc)
{
	read_x f{t, x, c};
	auto sq = [=](size_t r, int ch) {
		double v = ld(t, x, r * c + ch);
		return v * v;
	};
	channel_reduce(rows, c, f, sq, acc, acc + c);
}

__global__ void bn_finish_stats(size_t rows, int c, const double *acc, float *save_mean,
				float *save_var, float *run_mean, float *run_var, float mo)
{
	int ch = blockIdx.x * blockDim.x + threadIdx.x;
	if (ch >= c)
		return;
	double m = (double)rows, mean = acc[ch] / m;
	double var = acc[c + ch] / m - mean * mean;
	if (var < 0)
		var = 0;
	save_mean[ch] = (float)mean;
	save_var[ch] = (float)var;
	double unbiased = rows > 1 ? var * m / (m - 1) : var;
	run_mean[ch] = (float)(mo * run_mean[ch] + (1.0 - mo) * mean);
	run_var[ch] = (float)(mo * run_var[ch] + (1.0 - mo) * unbiased);
}

__global__ void bn_norm_k(int t, size_t rows, int c, const void *x, const float *mean,
			  const float *var, const float *gamma, const float *beta, float eps,
			  int relu, void *y)
{
	FOR_EACH(i, rows * (size_t)c) {
		int ch = (int)(i % c);
		float istd = rsqrtf(var[ch] + eps);
		float v = gamma[ch] * (ld(t, x, i) - mean[ch]) * istd + beta[ch];
		st(t, y, i, relu && v < 0.0f ? 0.0f : v);
	}
}

/* The gradient at the normalised value: dy, masked by y > 0 under relu. */
__device__ __forceinline__ double bn_g(int t, const void *y, const void *dy, int relu, size_t at)
{
	return relu && !(ld(t, y, at) > 0.0f) ? 0.0 : (double)ld(t, dy, at);
}

/* dbeta = sum g, dgamma = sum g*xhat */
__global__ void bn_bwd_sums(int t, size_t rows, int c, const void *x, const void *y,
			    const void *dy, const float *mean, const float *var, float eps,
			    int relu, double *acc)
{
	auto g = [=](size_t r, int ch) { return bn_g(t, y, dy, relu, r * c + ch); };
	auto gx = [=](size_t r, int ch) {
		size_t at = r * c + ch;
		return bn_g(t, y, dy, relu, at) * (ld(t, x, at) - mean[ch]) /
		       sqrt((double)var[ch] + eps);
	};
	channel_reduce(rows, c, g, gx, acc, acc + c);
}

__global__ void bn_bwd_finish(int c, const double *acc, float *dgamma, float *dbeta)
{
	int ch = blockIdx.x * blockDim.x + threadIdx.x;
	if (ch < c) {
		dbeta[ch] = (float)acc[ch];
		dgamma[ch] = (float)acc[c + ch];
	}
}

__global__ void bn_bwd_dx(int t, size_t rows, int c, const void *x, const void *y,
			  const void *dy, const float *mean, const float *var, const float *gamma,
			  float eps, int relu, const double *acc, void *dx)
{
	FOR_EACH(i, rows * (size_t)c) {
		int ch = (int)(i % c);
		double istd = 1.0 / sqrt((double)var[ch] + eps), m = (double)rows;
		double g = bn_g(t, y, dy, relu, i);
		double xhat = (ld(t, x, i) - mean[ch]) * istd;
		st(t, dx, i, (float)(gamma[ch] * istd / m * (m * g - acc[ch] - xhat * acc[c + ch])));
	}
}

/* ---- pooling ----------------------------------------------------------------- */

/* Output element i of (n, oh, ow, c) and the part of its window inside the image. */
struct window {
	int n, oy, ox, ch, y0, y1, x0, x1;
};

__device__ window window_at(const cuk_pool &p, int n, int oy, int ox, int ch)
{
	window w;
	w.n = n, w.oy = oy, w.ox = ox, w.ch = ch;
	int top = oy * p.stride - p.pt, left = ox * p.stride - p.pl;
	w.y0 = max(top, 0), w.y1 = min(top + p.k, p.h);
	w.x0 = max(left, 0), w.x1 = min(left + p.k, p.w);
	return w;
}

__device__ window window_of(const cuk_pool &p, size_t i)
{
	int ch = (int)(i % p.c);
	size_t r = i / p.c;
	int ox = (int)(r % p.ow);
	r /= p.ow;
	return window_at(p, (int)(r / p.oh), (int)(r % p.oh), ox, ch);
}

__device__ size_t at_in(const cuk_pool &p, int n, int y, int x, int ch)
{
	return (((size_t)n * p.h + y) * p.w + x) * p.c + ch;
}

__device__ size_t at_out(const cuk_pool &p, const window &w)
{
	return (((size_t)w.n * p.oh + w.oy) * p.ow + w.ox) * p.c + w.ch;
}

/* The outputs whose windows hold input row (or column) v: [*lo, *hi] of
 * out, with pad before the first window (window o covers o*stride - pad
 * up to k - 1 further). */
__device__ void windows_over(int v, int pad, int k, int stride, int out, int *lo, int *hi)
{
	int first = v + pad - k + 1;   /* o*stride at least this */
	*lo = first <= 0 ? 0 : (first + stride - 1) / stride;
	*hi = min((v + pad) / stride, out - 1);
}

/* f(w) for every window w that holds input value i, in the windows' order
 * (ref's): the backward passes gather what each input is owed. */
template <typename F>
__device__ void each_window_holding(const cuk_pool &p, size_t i, F f)
{
	int ch = (int)(i % p.c), oy0, oy1, ox0, ox1;
	size_t r = i / p.c;
	int x = (int)(r % p.w), y = (int)(r / p.w % p.h), n = (int)(r / p.w / p.h);
	windows_over(y, p.pt, p.k, p.stride, p.oh, &oy0, &oy1);
	windows_over(x, p.pl, p.k, p.stride, p.ow, &ox0, &ox1);
	for (int oy = oy0; oy <= oy1; oy++)
		for (int ox = ox0; ox <= ox1; ox++)
			f(window_at(p, n, oy, ox, ch));
}

/* the first (row-major) position holding the window's largest value */
__device__ size_t argmax_of(const cuk_pool &p, const window &w, int t, const void *x)
{
	size_t best = at_in(p, w.n, w.y0, w.x0, w.ch);
	float top = ld(t, x, best);
	for (int y = w.y0; y < w.y1; y++)
		for (int xx = w.x0; xx < w.x1; xx++) {
			size_t at = at_in(p, w.n, y, xx, w.ch);
			float v = ld(t, x, at);
			if (v > top)
				best = at, top = v;
		}
	return best;
}

__global__ void maxpool_fwd(int t, cuk_pool p, const void *x, void *y)
{
	FOR_EACH(i, (size_t)p.n * p.oh * p.ow * p.c) {
		window w = window_of(p, i);
		st(t, y, i, ld(t, x, argmax_of(p, w, t, x)));
	}
}

/* One thread per input value: dy of every window whose maximum it is, in
 * the windows' order (ref's), summed in float. */
__global__ void maxpool_bwd(int t, cuk_pool p, const void *x, const void *dy, void *dx)
{
	FOR_EACH(i, (size_t)p.n * p.h * p.w * p.c) {
		float g = 0.0f;
		each_window_holding(p, i, [&](const window &w) {
			if (argmax_of(p, w, t, x) == i)
				g += ld(t, dy, at_out(p, w));
		});
		st(t, dx, i, g);
	}
}

__global__ void avgpool_fwd(int t, cuk_pool p, const void *x, void *y)
{
	FOR_EACH(i, (size_t)p.n * p.oh * p.ow * p.c) {
		window w = window_of(p, i);
		double sum = 0;
		for (int yy = w.y0; yy < w.y1; yy++)
			for (int xx = w.x0; xx < w.x1; xx++)
				sum += ld(t, x, at_in(p, w.n, yy, xx, w.ch));
		st(t, y, i, (float)(sum / ((w.y1 - w.y0) * (w.x1 - w.x0))));
	}
}

/* One thread per input value: dy / count of every window it is in, summed
 * in double as ref does. */
__global__ void avgpool_bwd(int t, cuk_pool p, const void *dy, void *dx)
{
	FOR_EACH(i, (size_t)p.n * p.h * p.w * p.c) {
		double g = 0;
		each_window_holding(p, i, [&](const window &w) {
			g += (double)ld(t, dy, at_out(p, w)) / ((w.y1 - w.y0) * (w.x1 - w.x0));
		});
		st(t, dx, i, (float)g);
	}
}

/* one thread per (sample, channel): reads are strided by c across the
 * image but neighbouring threads read neighbouring channels; x of type tx,
 * y (rank 2) of type ty */
__global__ void gap_fwd(int tx, int ty, int n, int hw, int c, const void *x, void *y)
{
	FOR_EACH(i, (size_t)n * c) {
		size_t s = i / c, ch = i % c;
		double sum = 0;
		for (int k = 0; k < hw; k++)
			sum += ld(tx, x, (s * hw + k) * c + ch);
		st(ty, y, i, (float)(sum / hw));
	}
}

__global__ void gap_bwd(int tx, int ty, int n, int hw, int c, const void *dy, void *dx)
{
	FOR_EACH(i, (size_t)n * hw * c) {
		size_t ch = i % c, s = i / ((size_t)hw * c);
		st(tx, dx, i, ld(ty, dy, s * c + ch) / (float)hw);
	}
}

__global__ void pad_k(int t, int n, int h, int w, int c, int hp, int wp, int pt, int pl,
		      const void *src, void *dst)
{
	FOR_EACH(i, (size_t)n * h * w * c) {
		size_t r = i / c;
		int ch = (int)(i % c), x = (int)(r % w), y = (int)((r / w) % h), s = (int)(r / w / h);
		st(t, dst, (((size_t)s * hp + y + pt) * wp + x + pl) * c + ch, ld(t, src, i));
	}
}

__global__ void crop_k(int t, int n, int h, int w, int c, int hp, int wp, int pt, int pl,
		       const void *src, void *dst)
{
	FOR_EACH(i, (size_t)n * h * w * c) {
		size_t r = i / c;
		int ch = (int)(i % c), x = (int)(r % w), y = (int)((r / w) % h), s = (int)(r / w / h);
		st(t, dst, i, ld(t, src, (((size_t)s * hp + y + pt) * wp + x + pl) * c + ch));
	}
}

/* ---- the loss ---------------------------------------------------------------- */

__global__ void loss_k(int n, int classes, const float *z, const int *labels, float smoothing,
		       float *dz, double *loss, int *hit, int *bad)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	const float *zi = z + (size_t)i * classes;
	int t = labels[i];
	if (t < 0 || t >= classes) {
		atomicCAS(bad, 0, 1 + i);
		loss[i] = 0, hit[i] = 0;
		return;
	}
	int best = 0;
	for (int k = 1; k < classes; k++)
		if (zi[k] > zi[best])
			best = k;
	double sum = 0;
	for (int k = 0; k < classes; k++)
		sum += exp((double)zi[k] - zi[best]);
	double log_norm = zi[best] + log(sum), l = 0;
	for (int k = 0; k < classes; k++) {
		double target = (double)smoothing / classes + (k == t ? 1.0 - smoothing : 0.0);
		double log_p = zi[k] - log_norm;
		l -= target * log_p;
		if (dz)
			dz[(size_t)i * classes + k] = (float)((exp(log_p) - target) / n);
	}
	loss[i] = l;
	hit[i] = best == t;
}

/* ---- launchers --------------------------------------------------------------- */

extern "C" {

cudaError_t cuk_relu_fwd(cudaStream_t s, int t, size_t count, const void *x, void *y)
{
	relu_fwd<<<blocks_for(count), THREADS, 0, s>>>(t, count, x, y);
	return cudaGetLastError();
}

cudaError_t cuk_relu_bwd(cudaStream_t s, int t, size_t count, const void *x, const void *dy,
			 void *dx)
{
	relu_bwd<<<blocks_for(count), THREADS, 0, s>>>(t, count, x, dy, dx);
	return cudaGetLastError();
}

cudaError_t cuk_copy(cudaStream_t s, size_t count, const float *x, float *y)
{
	copy_k<<<blocks_for(count), THREADS, 0, s>>>(count, x, y);
	return cudaGetLastError();
}

cudaError_t cuk_accumulate(cudaStream_t s, int t, size_t count, void *y, const void *x)
{
	accumulate_k<<<blocks_for(count), THREADS, 0, s>>>(t, count, y, x);
	return cudaGetLastError();
}

cudaError_t cuk_unscale(cudaStream_t s, size_t count, float *g, float inv, int *bad)
{
	unscale_k<<<blocks_for(count), THREADS, 0, s>>>(count, g, inv, bad);
	return cudaGetLastError();
}

cudaError_t cuk_cast(cudaStream_t s, size_t count, int kind, const void *x, void *y)
{
	cast_k<<<blocks_for(count), THREADS, 0, s>>>(count, kind, x, y);
	return cudaGetLastError();
}

cudaError_t cuk_sgd(cudaStream_t s, size_t count, float *w, const float *g, float *v, float lr,
		    float mu, float wd)
{
	sgd_k<<<blocks_for(count), THREADS, 0, s>>>(count, w, g, v, lr, mu, wd);
	return cudaGetLastError();
}

cudaError_t cuk_add_fwd(cudaStream_t s, int t, size_t count, struct cuk_args a, int nx, int acc,
			int relu, void *y)
{
	add_fwd<<<blocks_for(count), THREADS, 0, s>>>(t, count, a, nx, acc, relu, y);
	return cudaGetLastError();
}

cudaError_t cuk_add_bwd(cudaStream_t s, int t, size_t count, struct cuk_args a, int ndx,
			int relu, const void *y, const void *dy)
{
	add_bwd<<<blocks_for(count), THREADS, 0, s>>>(t, count, a, ndx, relu, y, dy);
	return cudaGetLastError();
}

cudaError_t cuk_slice_put(cudaStream_t s, int t, size_t rows, int cx, int cy, int off,
			  const void *x, void *y)
{
	slice_put<<<blocks_for(rows * cx), THREADS, 0, s>>>(t, rows, cx, cy, off, x, y);
	return cudaGetLastError();
}

cudaError_t cuk_slice_get(cudaStream_t s, int t, size_t rows, int cx, int cy, int off,
			  const void *dy, void *dx)
{
	slice_get<<<blocks_for(rows * cx), THREADS, 0, s>>>(t, rows, cx, cy, off, dy, dx);
	return cudaGetLastError();
}

cudaError_t cuk_dropout_fwd(cudaStream_t s, size_t count, uint64_t base, uint32_t threshold,
			    float scale, const float *x, float *y, uint8_t *mask)
{
	dropout_fwd<<<blocks_for(count), THREADS, 0, s>>>(count, base, threshold, scale, x, y, mask);
	return cudaGetLastError();
}

cudaError_t cuk_dropout_bwd(cudaStream_t s, size_t count, float scale, const uint8_t *mask,
			    const float *dy, float *dx)
{
	dropout_bwd<<<blocks_for(count), THREADS, 0, s>>>(count, scale, mask, dy, dx);
	return cudaGetLastError();
}

cudaError_t cuk_bias_add(cudaStream_t s, int t, size_t rows, int c, const float *b, void *y)
{
	bias_add_k<<<blocks_for(rows * c), THREADS, 0, s>>>(t, rows, c, b, y);
	return cudaGetLastError();
}

cudaError_t cuk_channel_sum(cudaStream_t s, int t, size_t rows, int c, const void *x,
			    double *acc, float *sum)
{
	cudaError_t e = cudaMemsetAsync(acc, 0, sizeof(double) * c, s);
	if (e != cudaSuccess)
		return e;
	channel_sum_k<<<channel_grid(rows, c), dim3(CH_TILE, ROW_TILE), 0, s>>>(t, rows, c, x, acc);
	if ((e = cudaGetLastError()) != cudaSuccess)
		return e;
	to_float<<<(c + THREADS - 1) / THREADS, THREADS, 0, s>>>(c, acc, sum);
	return cudaGetLastError();
}

/* Bytes of one value of type t. */
static size_t size_of(int t)
{
	return t == CUK_BF16 ? sizeof(__nv_bfloat16) : sizeof(float);
}

cudaError_t cuk_pad(cudaStream_t s, int t, int n, int h, int w, int c, int hp, int wp, int pt,
		    int pl, const void *src, void *dst)
{
	cudaError_t e = cudaMemsetAsync(dst, 0, size_of(t) * n * hp * wp * c, s);
	if (e != cudaSuccess)
		return e;
	pad_k<<<blocks_for((size_t)n * h * w * c), THREADS, 0, s>>>(t, n, h, w, c, hp, wp, pt, pl,
								     src, dst);
	return cudaGetLastError();
}

cudaError_t cuk_crop(cudaStream_t s, int t, int n, int h, int w, int c, int hp, int wp, int pt,
		     int pl, const void *src, void *dst)
{
	crop_k<<<blocks_for((size_t)n * h * w * c), THREADS, 0, s>>>(t, n, h, w, c, hp, wp, pt, pl,
								      src, dst);
	return cudaGetLastError();
}

static size_t pool_outputs(const cuk_pool &p)
{
	return (size_t)p.n * p.oh * p.ow * p.c;
}

static size_t pool_inputs(const cuk_pool &p)
{
	return (size_t)p.n * p.h * p.w * p.c;
}

cudaError_t cuk_maxpool_fwd(cudaStream_t s, int t, struct cuk_pool p, const void *x, void *y)
{
	maxpool_fwd<<<blocks_for(pool_outputs(p)), THREADS, 0, s>>>(t, p, x, y);
	return cudaGetLastError();
}

cudaError_t cuk_maxpool_bwd(cudaStream_t s, int t, struct cuk_pool p, const void *x,
			    const void *dy, void *dx)
{
	maxpool_bwd<<<blocks_for(pool_inputs(p)), THREADS, 0, s>>>(t, p, x, dy, dx);
	return cudaGetLastError();
}

cudaError_t cuk_avgpool_fwd(cudaStream_t s, int t, struct cuk_pool p, const void *x, void *y)
{
	avgpool_fwd<<<blocks_for(pool_outputs(p)), THREADS, 0, s>>>(t, p, x, y);
	return cudaGetLastError();
}

cudaError_t cuk_avgpool_bwd(cudaStream_t s, int t, struct cuk_pool p, const void *dy, void *dx)
{
	avgpool_bwd<<<blocks_for(pool_inputs(p)), THREADS, 0, s>>>(t, p, dy, dx);
	return cudaGetLastError();
}

cudaError_t cuk_gap_fwd(cudaStream_t s, int tx, int ty, int n, int hw, int c, const void *x,
			void *y)
{
	gap_fwd<<<blocks_for((size_t)n * c), THREADS, 0, s>>>(tx, ty, n, hw, c, x, y);
	return cudaGetLastError();
}

cudaError_t cuk_gap_bwd(cudaStream_t s, int tx, int ty, int n, int hw, int c, const void *dy,
			void *dx)
{
	gap_bwd<<<blocks_for((size_t)n * hw * c), THREADS, 0, s>>>(tx, ty, n, hw, c, dy, dx);
	return cudaGetLastError();
}

cudaError_t cuk_bn_stats(cudaStream_t s, int t, size_t rows, int c, const void *x, double *acc,
			 float *save_mean, float *save_var, float *run_mean, float *run_var,
			 float momentum)
{
	cudaError_t e = cudaMemsetAsync(acc, 0, 2 * sizeof(double) * c, s);
	if (e != cudaSuccess)
		return e;
	bn_sums<<<channel_grid(rows, c), dim3(CH_TILE, ROW_TILE), 0, s>>>(t, rows, c, x, acc);
	if ((e = cudaGetLastError()) != cudaSuccess)
		return e;
	bn_finish_stats<<<(c + THREADS - 1) / THREADS, THREADS, 0, s>>>(
		rows, c, acc, save_mean, save_var, run_mean, run_var, momentum);
	return cudaGetLastError();
}

cudaError_t cuk_bn_norm(cudaStream_t s, int t, size_t rows, int c, const void *x,
			const float *mean, const float *var, const float *gamma, const float *beta,
			float eps, int relu, void *y)
{
	bn_norm_k<<<blocks_for(rows * c), THREADS, 0, s>>>(t, rows, c, x, mean, var, gamma, beta,
							    eps, relu, y);
	return cudaGetLastError();
}

cudaError_t cuk_bn_bwd(cudaStream_t s, int t, size_t rows, int c, const void *x, const void *y,
		       const void *dy, const float *mean, const float *var, const float *gamma,
		       float eps, int relu, double *acc, float *dgamma, float *dbeta, void *dx)
{
	cudaError_t e = cudaMemsetAsync(acc, 0, 2 * sizeof(double) * c, s);
	if (e != cudaSuccess)
		return e;
	bn_bwd_sums<<<channel_grid(rows, c), dim3(CH_TILE, ROW_TILE), 0, s>>>(
		t, rows, c, x, y, dy, mean, var, eps, relu, acc);
	if ((e = cudaGetLastError()) != cudaSuccess)
		return e;
	bn_bwd_finish<<<(c + THREADS - 1) / THREADS, THREADS, 0, s>>>(c, acc, dgamma, dbeta);
	if ((e = cudaGetLastError()) != cudaSuccess || !dx)
		return e;
	bn_bwd_dx<<<blocks_for(rows * c), THREADS, 0, s>>>(t, rows, c, x, y, dy, mean, var, gamma,
							    eps, relu, acc, dx);
	return cudaGetLastError();
}

cudaError_t cuk_loss(cudaStream_t s, int n, int classes, const float *z, const int *labels,
		     float smoothing, float *dz, double *loss, int *hit, int *bad)
{
	cudaError_t e = cudaMemsetAsync(bad, 0, sizeof(int), s);
	if (e != cudaSuccess || n == 0)
		return e;
	loss_k<<<(n + 127) / 128, 128, 0, s>>>(n, classes, z, labels, smoothing, dz, loss, hit, bad);
	return cudaGetLastError();
}

} /* extern "C" */
