/* cuk.cuh: what the kernel families (kernels/cuda/cuda_<family>.cu) share:
 * element types fixed at compile time, 16-byte vectors of them, the grid
 * that fills the device, the launch that the ledger counts, and the
 * fixed-order per-channel reduction. nvcc compiles it for the GPU; with
 * CUK_HOST, g++ compiles it for the host over cuk_host.h (the harness:
 * kernels/cudahost/).
 *
 * A tensor's values are T: float, or bf16 (__nv_bfloat16) stored as its
 * bit pattern. A kernel reads them as float (ld), computes in float, and
 * stores rounded to nearest even (st). Vectors are 16 bytes: VN<T> values
 * (4 floats or 8 bf16) read and written at once; a kernel over channels
 * takes them on the channel dimension where the channel count is a
 * multiple of VN<T> and every pointer is 16-byte aligned (vec_fits), and
 * one value at a time elsewhere (W = 1), so both forms are instances of
 * one template. */
#ifndef AAH_KERNELS_CUDA_CUK_CUH
#define AAH_KERNELS_CUDA_CUK_CUH

#include <type_traits>

#include "kernels/cuda/cuda.h"

#ifdef CUK_HOST
#include "kernels/cuda/cuk_host.h"
#define cuk cukhost_k /* the harness's kernels live in a namespace of their own */
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#endif

namespace cuk {

typedef __nv_bfloat16 bf16;
typedef __half f16;

enum { THREADS = 256, BLOCKS_PER_SM = 8 };

/* ---- values ------------------------------------------------------------------- */

__device__ __forceinline__ float to_f(float v)
{
	return v;
}

__device__ __forceinline__ float to_f(bf16 v)
{
	return __bfloat162float(v);
}

__device__ __forceinline__ float to_f(f16 v)
{
	return __half2float(v);
}

template <class T> __device__ __forceinline__ T from_f(float v);

template <> __device__ __forceinline__ float from_f<float>(float v)
{
	return v;
}

template <> __device__ __forceinline__ bf16 from_f<bf16>(float v)
{
	return __float2bfloat16_rn(v);
}

template <> __device__ __forceinline__ f16 from_f<f16>(float v)
{
	return __float2half_rn(v);
}

/* Values of T in one 16-byte vector. */
template <class T> struct VN {
	static constexpr int n = 16 / sizeof(T);
};

/* W values of T as loaded, not yet converted: one 16-byte vector where
 * W > 1 (in bf16, half the registers of the floats). */
template <class T, int W> struct packed {
	union {
		uint4 u;
		T t[W];
	};
};

/* W values of T at p (16-byte aligned when W > 1), as loaded. */
template <class T, int W> __device__ __forceinline__ packed<T, W> ldp(const T *p)
{
	packed<T, W> v;
	if constexpr (W == 1) {
		v.t[0] = *p;
	} else {
		static_assert(W * sizeof(T) == 16, "a vector is 16 bytes");
#ifdef CUK_HOST
		if ((uintptr_t)p & 15u)   /* the GPU's 128-bit load would fault */
			BUG("cuk: a 16-byte load from %p, not 16-byte aligned", (const void *)p);
		memcpy(&v.u, p, 16);
#else
		v.u = *reinterpret_cast<const uint4 *>(p);   /* one 128-bit load */
#endif
	}
	return v;
}

template <class T, int W>
__device__ __forceinline__ void unpack(const packed<T, W> &v, float (&f)[W])
{
#pragma unroll
	for (int k = 0; k < W; k++)
		f[k] = to_f(v.t[k]);
}

/* W values of T at p (16-byte aligned when W > 1), as floats. */
template <class T, int W> __device__ __forceinline__ void ld(const T *p, float (&f)[W])
{
	unpack(ldp<T, W>(p), f);
}

template <class T, int W> __device__ __forceinline__ void st(T *p, const float (&f)[W])
{
	if constexpr (W == 1) {
		*p = from_f<T>(f[0]);
	} else {
		union {
			uint4 u;
			T t[W];
		} v;
#pragma unroll
		for (int k = 0; k < W; k++)
			v.t[k] = from_f<T>(f[k]);
#ifdef CUK_HOST
		if ((uintptr_t)p & 15u)
			BUG("cuk: a 16-byte store to %p, not 16-byte aligned", (void *)p);
		memcpy(p, &v.u, 16);
#else
		*reinterpret_cast<uint4 *>(p) = v.u;         /* one 128-bit store */
#endif
	}
}

/* N values at p as floats: N / VN<T> vectors (N a multiple of VN<T>, p
 * aligned), or one value (N = 1); stn stores them so. */
template <class T, int N> __device__ __forceinline__ void ldn(const T *p, float (&f)[N])
{
	constexpr int V = N == 1 ? 1 : VN<T>::n;
	static_assert(N % V == 0, "whole vectors");
#pragma unroll
	for (int j = 0; j < N / V; j++)
		ld<T, V>(p + j * V, *reinterpret_cast<float(*)[V]>(f + j * V));
}

template <class T, int N> __device__ __forceinline__ void stn(T *p, const float (&f)[N])
{
	constexpr int V = N == 1 ? 1 : VN<T>::n;
	static_assert(N % V == 0, "whole vectors");
#pragma unroll
	for (int j = 0; j < N / V; j++)
		st<T, V>(p + j * V, *reinterpret_cast<const float(*)[V]>(f + j * V));
}

/* W fp32 values at p (parameters, statistics: always float), 16-byte
 * aligned when W > 1. */
template <int W> __device__ __forceinline__ void ldf(const float *p, float (&f)[W])
{
	ldn<float, W>(p, f);
}

__device__ __forceinline__ int imin(int a, int b)
{
	return a < b ? a : b;
}

__device__ __forceinline__ int imax(int a, int b)
{
	return a > b ? a : b;
}

/* A compile-time vector width, for the bodies of each(). */
template <int N> struct width {
	static constexpr int n = N;
};

/* ---- grids ---------------------------------------------------------------------- */

/* A grid-stride loop over [0, count): each thread from its global index, by
 * the grid's width. */
#define CUK_FOR(i, count)                                                                  \
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (size_t)(count); \
	     i += (size_t)gridDim.x * blockDim.x)

/* body(i, width<W>) for each whole vector of W values at value i of
 * [0, count), then body(i, width<1>) for each value of the tail: a flat
 * kernel over a tensor whose pointers are 16-byte aligned (W > 1) or not
 * (W = 1). */
template <int W, class B> __device__ __forceinline__ void each(size_t count, B body)
{
	size_t nv = count / W;
	CUK_FOR(i, nv) body(i * W, width<W>{});
	if constexpr (W > 1)
		CUK_FOR(j, count - nv * W) body(nv * W + j, width<1>{});
}

/* Blocks of THREADS for `items` of work: enough to fill the device once
 * (its multiprocessors, BLOCKS_PER_SM each), fewer when there is less. */
static inline unsigned blocks_for(const cuk_run *r, size_t items)
{
	size_t b = (items + THREADS - 1) / THREADS, cap = (size_t)(r->sms > 0 ? r->sms : 1) * BLOCKS_PER_SM;
	return (unsigned)(b < 1 ? 1 : b > cap ? cap : b);
}

/* Whether every pointer is 16-byte aligned (NULL counts as aligned). */
static inline int aligned16(const void *p)
{
	return ((uintptr_t)p & 15u) == 0;
}

template <class... P> int all_aligned(const P *...p)
{
	return (aligned16(p) && ...);
}

/* A kernel over rows of c channels takes VN<T> channels at a time when c
 * is a multiple of it and its pointers are aligned. */
template <class T, class... P> int vec_fits(size_t c, const P *...p)
{
	return c % VN<T>::n == 0 && all_aligned(p...);
}

/* The grid of a kernel over rows x channel vectors: threadIdx.x walks the
 * vectors (cv of them), threadIdx.y the rows, blockIdx.x tiles of vectors,
 * blockIdx.y stripes of rows (each thread strides by gridDim.y *
 * blockDim.y rows). At most max_y stripes (0: as many as fill the device). */
struct grid2 {
	dim3 g, b;
};

static inline grid2 channel_grid(const cuk_run *r, size_t rows, int cv, unsigned max_y)
{
	grid2 q;
	unsigned bx = cv >= 32 ? 32u : cv < 1 ? 1u : (unsigned)cv;
	unsigned by = THREADS / bx;
	unsigned gx = (unsigned)((cv + bx - 1) / bx);
	size_t want = (rows + by - 1) / by;
	size_t fill = ((size_t)(r->sms > 0 ? r->sms : 1) * BLOCKS_PER_SM + gx - 1) / gx;
	size_t gy = want < fill ? want : fill;
	if (max_y && gy > max_y)
		gy = max_y;
	q.b = dim3(bx, by);
	q.g = dim3(gx, (unsigned)(gy < 1 ? 1 : gy));
	return q;
}

/* ---- launching ---------------------------------------------------------------------- */

/* Launches kernel k on r's stream, counted in r's ledger as `name` moving
 * `bytes`; the launch's error. go_sync: a kernel that synchronises its
 * block (the host harness runs its threads as fibers). */
template <class... P, class... A>
cudaError_t go(const cuk_run *r, const char *name, double bytes, grid2 q, void (*k)(P...), A... a)
{
	ledger_launch(r->ledger, name, (const void *)k, bytes);
#ifdef CUK_HOST
	cukhost::launch(q.g, q.b, 0, [&] { k(a...); });
	return cudaSuccess;
#else
	k<<<q.g, q.b, 0, r->stream>>>(a...);
	return cudaGetLastError();
#endif
}

template <class... P, class... A>
cudaError_t go_sync(const cuk_run *r, const char *name, double bytes, grid2 q, void (*k)(P...),
		    A... a)
{
	ledger_launch(r->ledger, name, (const void *)k, bytes);
#ifdef CUK_HOST
	cukhost::launch(q.g, q.b, 1, [&] { k(a...); });
	return cudaSuccess;
#else
	k<<<q.g, q.b, 0, r->stream>>>(a...);
	return cudaGetLastError();
#endif
}

/* A flat grid of THREADS-thread blocks for `items`. */
static inline grid2 flat(const cuk_run *r, size_t items)
{
	grid2 q;
	q.g = dim3(blocks_for(r, items));
	q.b = dim3(THREADS);
	return q;
}

/* A flat kernel over count values: its vector instance kv (V values a
 * thread) where every pointer is aligned, else k1 (one value a thread). */
template <int V, class K1, class KV, class... A>
cudaError_t go_flat(const cuk_run *r, const char *name, double bytes, size_t count, int aligned,
		    K1 k1, KV kv, A... a)
{
	if (aligned)
		return go(r, name, bytes, flat(r, count / V), kv, a...);
	return go(r, name, bytes, flat(r, count), k1, a...);
}

/* f(T{}) with T the element type that t names (fp32 or bf16). */
template <class F> auto typed(enum ops_dtype t, F f)
{
	return t == OPS_BF16 ? f(bf16{}) : f(float{});
}

/* f(T{}) with T the 16-bit type that t names (bf16 or fp16). */
template <class F> auto typed16(enum ops_dtype t, F f)
{
	return t == OPS_BF16 ? f(bf16{}) : f(f16{});
}

/* ---- per-channel sums, in a fixed order ------------------------------------------- *
 * A kernel over rows x channel vectors (channel_grid) sums, per thread,
 * its rows of each of its W channels; the block adds its threads' sums
 * row-thread by row-thread (threadIdx.y 0, 1, ...) in double and writes
 * one partial sum per channel for its stripe: part[blockIdx.y * c + ch].
 * A finishing kernel gives each channel a warp, whose lanes add the
 * stripes lane, lane + 32, ... and meet in a fixed tree (stripes_total).
 * No atomics in the sums: the same input gives the same bits every run (on
 * one device model: the number of stripes follows the multiprocessors).
 *
 * One launch instead of two (cuk_run.tickets): each block of a column
 * (one blockIdx.x, every stripe) takes a ticket once its partials are
 * written; the block that takes the column's last does the finishing
 * kernel's work for the column's channels, a warp a channel in turn, in
 * the same order and tree (the same bits), and puts the ticket back to
 * zero for the next launch or replay (last_of_column, column_channels). */
enum { MAX_STRIPES = 1024 };

/* A thread's rows in a kernel over channel_grid: from blockIdx.y *
 * blockDim.y + threadIdx.y, every gridDim.y * blockDim.y rows. */
__device__ __forceinline__ size_t row0()
{
	return (size_t)blockIdx.y * blockDim.y + threadIdx.y;
}

__device__ __forceinline__ size_t row_step()
{
	return (size_t)gridDim.y * blockDim.y;
}

/* Two tensors' W values of a row, as loaded (batchnorm's backward reads x
 * and dy). */
template <class T, int W> struct packed2 {
	packed<T, W> a, b;
};

/* add(load(r)) for each of this thread's rows r, in order, A rows' loads
 * issued before the first of them is added. A sum carries its value from
 * row to row, and nvcc leaves such a loop as written: one load in flight
 * a thread, where it unrolls the loops that only map rows (batchnorm's
 * normalise, its dx) four times itself; on an H200 the sums moved 2.2-2.7
 * TB/s against 3.1-4.1 for those. The adds keep their order, so every A
 * gives the same bits (AAH_CUDA_AHEAD=0 runs A = 1, the way before). */
template <int A, class L, class F>
__device__ __forceinline__ void rows_ahead(size_t rows, L load, F add)
{
	using V = decltype(load(row0()));
	size_t r = row0(), step = row_step();
	for (; r + (A - 1) * step < rows; r += A * step) {
		V v[A];
#pragma unroll
		for (int a = 0; a < A; a++)
			v[a] = load(r + a * step);
#pragma unroll
		for (int a = 0; a < A; a++)
			add(v[a]);
	}
	for (; r < rows; r += step)
		add(load(r));
}

/* add(v) with the W values v (floats) at channel ch0 of each of this
 * thread's rows of x (rows of c), A rows' loads ahead. */
template <int A, class T, int W, class F>
__device__ __forceinline__ void rows_of(const T *x, size_t rows, int c, int ch0, F add)
{
	rows_ahead<A>(
		rows, [&](size_t r) { return ldp<T, W>(x + r * c + ch0); },
		[&](const packed<T, W> &p) {
			float v[W];
			unpack(p, v);
			add(v);
		});
}

/* The sum of v over the warp's 32 lanes, in a fixed tree: lane 0's. */
template <class V> __device__ __forceinline__ V warp_sum(V v)
{
	for (int o = 16; o; o >>= 1)
		v += __shfl_down_sync(0xffffffffu, v, o);
	return v;
}

/* Block part of the reduction: s[k] is this thread's sum for channel
 * ch0 + k (k < W; ch0 < c). The shared buffer holds THREADS * W doubles. */
template <int W>
__device__ __forceinline__ void stripe_sums(const float (&s)[W], int ch0, int c, double *part)
{
	__shared__ double buf[THREADS * 8];
	unsigned tx = threadIdx.x, ty = threadIdx.y, bx = blockDim.x;
#pragma unroll
	for (int k = 0; k < W; k++)
		buf[(ty * bx + tx) * W + k] = s[k];
	__syncthreads();
	if (ty == 0 && ch0 < c) {
#pragma unroll
		for (int k = 0; k < W; k++) {
			double t = 0;
			for (unsigned y = 0; y < blockDim.y; y++)
				t += buf[(y * bx + tx) * W + k];
			part[(size_t)blockIdx.y * c + ch0 + k] = t;
		}
	}
	__syncthreads();
}

/* A finishing kernel's channel: one warp each (finish_grid); -1 for the
 * warps past c, which return, all lanes together. */
__device__ __forceinline__ int finish_channel(int c)
{
	int ch = (int)((blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32);
	return ch < c ? ch : -1;
}

/* The sum of channel ch's stripes partials, the warp's lanes over them in
 * a fixed order and tree: lane 0's. The partials are read from L2 (other
 * blocks of this launch may have written them). */
__device__ __forceinline__ double stripes_total(const double *part, int stripes, int c, int ch,
						int lane)
{
	double t = 0;
	for (int k = lane; k < stripes; k += 32)
		t += __ldcg(part + (size_t)k * c + ch);
	return warp_sum(t);
}

/* After stripe_sums: whether this block took its column's last ticket (and
 * then finishes the column); false for every block without tickets. */
__device__ __forceinline__ bool last_of_column(unsigned *tickets)
{
	__shared__ int last;
	if (!tickets)
		return false;
	__threadfence();   /* this block's partials, before its ticket */
	__syncthreads();
	if (threadIdx.x == 0 && threadIdx.y == 0) {
		last = atomicAdd(tickets + blockIdx.x, 1u) == gridDim.y - 1;
		if (last)
			tickets[blockIdx.x] = 0;   /* every block of the column has taken one */
	}
	__syncthreads();
	if (last)
		__threadfence();   /* the other blocks' partials, after the ticket */
	return last != 0;
}

/* f(ch, lane) for each channel of this block's column (blockDim.x * W of
 * them from blockIdx.x * blockDim.x * W, those below c), a whole warp each
 * in turn; threads past the block's last whole warp take none. */
template <int W, class F> __device__ __forceinline__ void column_channels(int c, F f)
{
	unsigned id = threadIdx.y * blockDim.x + threadIdx.x;
	unsigned warps = blockDim.x * blockDim.y / 32;
	if (id >= warps * 32)
		return;
	int base = (int)(blockIdx.x * blockDim.x) * W, n = (int)blockDim.x * W;
	for (int j = (int)(id / 32); j < n && base + j < c; j += (int)warps)
		f(base + j, (int)(id % 32));
}

/* The tickets for a launch of q: NULL where the sums are launched apart
 * or its columns outnumber them. */
static inline unsigned *tickets_for(const cuk_run *r, grid2 q)
{
	return q.g.x <= CUDA_TICKETS ? r->tickets : NULL;
}

/* The grid of a finishing kernel: a warp a channel. */
static inline grid2 finish_grid(int c)
{
	grid2 q;
	q.b = dim3(THREADS);
	q.g = dim3((unsigned)(((size_t)c * 32 + THREADS - 1) / THREADS));
	return q;
}

} /* namespace cuk */

#endif
