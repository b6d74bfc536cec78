/* cuk_host.h: the part of CUDA the kernel families (kernels/cuda/cuda_<family>.cu) use,
 * for the host, so that `make test` runs their kernels without a GPU
 * (the `cudahost` backend, kernels/cudahost/). Included by cuk.cuh when
 * CUK_HOST is defined, never with nvcc.
 *
 * A launch runs every block of the grid in turn. In a block, a kernel
 * launched by go() (cuk.cuh: no synchronisation) runs thread after thread,
 * each to its end; one launched by go_sync() runs each thread as a fiber
 * (ucontext): __syncthreads() is a barrier at which every fiber of the
 * block stops before any goes on, and a warp shuffle one for the 32 lanes
 * of its warp, so a block's shared memory and reductions behave as on the
 * device, in the same order. Barriers that do not match (a warp's lanes at
 * different ones, some threads at a shuffle and the rest at
 * __syncthreads for good) stop the program: a bug on the device too.
 * __shared__ memory is a static of the kernel, one per instantiation, which
 * blocks reuse in turn. Device memory is host memory; a stream is nothing:
 * work is done when its launch returns.
 *
 * What differs from a GPU: nothing runs concurrently, so a race (two
 * threads writing one value, a read before the barrier that orders it)
 * gives one fixed answer here; arithmetic is the host's IEEE arithmetic
 * (the families compile with -fmad=false on the device and spell their
 * fused multiply-adds as fmaf, so both sides round alike); bf16 and fp16
 * conversions are kernels/ref's (NaN payloads may differ). */
#ifndef AAH_KERNELS_CUDA_CUK_HOST_H
#define AAH_KERNELS_CUDA_CUK_HOST_H

#ifndef CUK_HOST
#error "cuk_host.h is the host's stand-in for CUDA: include cuk.cuh"
#endif

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h> /* mmap: the fibers' stacks */
#include <ucontext.h>

#include "kernels/ref/ref.h" /* ref_f32_to_bf16 and friends: the conversions */
#include "util.h"            /* BUG */

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __align__(n) alignas(n)
#define __shared__ static

/* ---- the runtime's types (cudaError_t, cudaStream_t: cuda.h) ---------------- */

struct dim3 {
	unsigned x, y, z;
	dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct uint3 {
	unsigned x, y, z;
};
struct alignas(16) uint4 {
	unsigned x, y, z, w;
};
struct alignas(8) uint2 {
	unsigned x, y;
};

/* 16-bit floats as their bit patterns */
struct __nv_bfloat16 {
	unsigned short x;
};
struct __half {
	unsigned short x;
};

static inline __nv_bfloat16 __float2bfloat16_rn(float v)
{
	return __nv_bfloat16{ref_f32_to_bf16(v)};
}

static inline float __bfloat162float(__nv_bfloat16 h)
{
	return ref_bf16_to_f32(h.x);
}

static inline __half __float2half_rn(float v)
{
	return __half{ref_f32_to_f16(v)};
}

static inline float __half2float(__half h)
{
	return ref_f16_to_f32(h.x);
}

/* ---- the grid, the block, the threads --------------------------------------- */

namespace cukhost {

enum { WARP = 32, MAX_THREADS = 1024, STACK = 64 * 1024 };

/* A fiber's state between the scheduler's turns. */
enum { READY, AT_WARP, AT_BLOCK, DONE };

struct fiber {
	ucontext_t uc;
	int state;
};

/* The launch in progress on this thread. */
struct state {
	dim3 grid, block;
	uint3 bidx, tidx;
	int fibers;                  /* a CUK_LAUNCH_SYNC launch */
	int cur;                     /* the running thread, linear in the block */
	void (*body)(void *);
	void *arg;
	ucontext_t sched;
	fiber f[MAX_THREADS];
	char *stacks;                /* MAX_THREADS x STACK, mapped once */
	uint64_t slot[MAX_THREADS];  /* what each thread offers a shuffle */
};

/* Allocated at this thread's first launch: a thread that launches nothing
 * (the data loader's) carries none of it. */
inline thread_local state *stp;

inline state &S()
{
	if (!stp)
		stp = (state *)xcalloc(1, sizeof(state));
	return *stp;
}

inline void run_one()
{
	S().body(S().arg);
}

/* makecontext's entry: the thread's body, then back to the scheduler */
inline void fiber_main()
{
	run_one();
	S().f[S().cur].state = DONE;
}

inline uint3 thread_at(int k)
{
	uint3 t;
	t.x = (unsigned)k % S().block.x;
	t.y = (unsigned)k / S().block.x % S().block.y;
	t.z = (unsigned)k / (S().block.x * S().block.y);
	return t;
}

/* Releases what can go on: each warp whose live lanes all wait at a warp
 * barrier (a shuffle); else, when every live thread waits at
 * __syncthreads, all of them. 0 when nothing can: the threads wait at
 * barriers that do not match (a bug in the kernel). */
inline int release(int n)
{
	state &s = S();
	int any = 0, block = 1;
	for (int w0 = 0; w0 < n; w0 += WARP) {
		int all = 1, some = 0;
		for (int k = w0; k < n && k < w0 + WARP; k++) {
			all &= s.f[k].state == AT_WARP || s.f[k].state == DONE;
			some |= s.f[k].state == AT_WARP;
			block &= s.f[k].state == AT_BLOCK || s.f[k].state == DONE;
		}
		if (all && some) {
			for (int k = w0; k < n && k < w0 + WARP; k++)
				if (s.f[k].state == AT_WARP)
					s.f[k].state = READY;
			any = 1;
		}
	}
	if (any || !block)
		return any;
	for (int k = 0; k < n; k++)
		if (s.f[k].state == AT_BLOCK)
			s.f[k].state = READY, any = 1;
	return any;
}

/* Every ready fiber of the block to its next barrier or its end, in turn,
 * then those released, until all have ended. */
inline void run_fibers(int n)
{
	state &s = S();
	if (!s.stacks) {
		void *p = mmap(NULL, (size_t)MAX_THREADS * STACK, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			BUG("cuk_host: cannot map the fibers' stacks");
		s.stacks = (char *)p;
	}
	for (int k = 0; k < n; k++) {
		fiber *f = &s.f[k];
		f->state = READY;
		if (getcontext(&f->uc))
			BUG("cuk_host: getcontext failed");
		f->uc.uc_stack.ss_sp = s.stacks + (size_t)k * STACK;
		f->uc.uc_stack.ss_size = STACK;
		f->uc.uc_link = &s.sched;
		makecontext(&f->uc, fiber_main, 0);
	}
	for (;;) {
		int live = 0;
		for (int k = 0; k < n; k++) {
			if (s.f[k].state != READY)
				continue;
			s.cur = k;
			s.tidx = thread_at(k);
			if (swapcontext(&s.sched, &s.f[k].uc))
				BUG("cuk_host: swapcontext failed");
		}
		for (int k = 0; k < n; k++)
			live += s.f[k].state != DONE;
		if (!live)
			return;
		if (!release(n))
			BUG("cuk_host: the threads of a block wait at barriers that do not match");
	}
}

/* A barrier of the warp (kind AT_WARP) or the block (AT_BLOCK): back to the
 * scheduler until release() lets this thread go on. */
inline void barrier(int kind)
{
	state &s = S();
	if (!s.fibers)
		BUG("cuk_host: a kernel that synchronises its threads was launched with go(); "
		    "use go_sync()");
	int me = s.cur;
	s.f[me].state = kind;
	if (swapcontext(&s.f[me].uc, &s.sched))
		BUG("cuk_host: swapcontext failed");
}

template <class F> void thunk(void *p)
{
	(*(F *)p)();
}

template <class F> void launch(dim3 g, dim3 b, int fibers, F f)
{
	int n = (int)(b.x * b.y * b.z);
	if (n < 1 || n > MAX_THREADS || !g.x || !g.y || !g.z)
		BUG("cuk_host: a launch of %ux%ux%u blocks of %ux%ux%u threads", g.x, g.y, g.z, b.x, b.y,
		    b.z);
	if (S().body)
		BUG("cuk_host: a launch inside a launch");
	S().grid = g, S().block = b, S().fibers = fibers;
	S().body = thunk<F>, S().arg = &f;
	for (unsigned z = 0; z < g.z; z++)
		for (unsigned y = 0; y < g.y; y++)
			for (unsigned x = 0; x < g.x; x++) {
				S().bidx = uint3{x, y, z};
				if (fibers) {
					run_fibers(n);
					continue;
				}
				for (int k = 0; k < n; k++) {
					S().cur = k;
					S().tidx = thread_at(k);
					run_one();
				}
			}
	S().body = NULL;
}

/* A shuffle: every thread offers its value, waits for the block, reads its
 * partner's, and waits again before anyone offers the next. */
template <class T> T shuffle(T v, int from)
{
	static_assert(sizeof(T) <= sizeof(uint64_t), "a shuffle moves at most 8 bytes");
	int me = S().cur;
	memcpy(&S().slot[me], &v, sizeof(T));
	barrier(AT_WARP);
	T r = v;
	int base = me - me % WARP;
	if (from >= 0 && from < WARP && base + from < (int)(S().block.x * S().block.y * S().block.z))
		memcpy(&r, &S().slot[base + from], sizeof(T));
	barrier(AT_WARP);
	return r;
}

} /* namespace cukhost */

#define threadIdx (cukhost::S().tidx)
#define blockIdx (cukhost::S().bidx)
#define blockDim (cukhost::S().block)
#define gridDim (cukhost::S().grid)
#define warpSize 32

static inline void __syncthreads(void)
{
	cukhost::barrier(cukhost::AT_BLOCK);
}

static inline void __syncwarp(unsigned mask = 0xffffffffu)
{
	(void)mask;
	cukhost::barrier(cukhost::AT_WARP);
}

template <class T> T __shfl_down_sync(unsigned mask, T v, unsigned delta)
{
	(void)mask;
	int lane = cukhost::S().cur % cukhost::WARP;
	return cukhost::shuffle(v, lane + (int)delta);
}

template <class T> T __shfl_sync(unsigned mask, T v, int lane)
{
	(void)mask;
	return cukhost::shuffle(v, lane);
}

/* one block after another: what a fence or an L2 read orders holds by
 * itself */
static inline void __threadfence(void)
{
}

template <class T> T __ldcg(const T *p)
{
	return *p;
}

/* one thread at a time: an atomic is a plain read-modify-write */
template <class T> T atomicAdd(T *p, T v)
{
	T old = *p;
	*p = old + v;
	return old;
}

#endif
