/* cuda_cast.cu: the casts between fp32 and the 16-bit types (kernels/ref/
 * ref_cast.c's definition): the op table's cast, and cuda_convert, which
 * the cuDNN ops use on device pointers (the fp32 master weights in 16
 * bits, a tensor stored in another type than a layer computes in).
 *
 * fp32 -> bf16 and fp16 round to nearest, ties to even (CUDA's
 * __float2bfloat16_rn, __float2half_rn); the way back is exact. Eight
 * values a thread: two 16-byte vectors of fp32 and one of 16-bit values,
 * where the pointers are aligned; the tail one value at a time. */
#include "kernels/cuda/cuk.cuh"

namespace cuk {

enum { CAST_N = 8 };

template <class X, class Y, int W> __global__ void cast_k(const X *x, Y *y, size_t count)
{
	each<W>(count, [=](size_t i, auto w) {
		constexpr int N = decltype(w)::n;
		float v[N];
		ldn<X, N>(x + i, v);
		stn<Y, N>(y + i, v);
	});
}

template <class X, class Y>
static cudaError_t cast(const cuk_run *r, const X *x, Y *y, size_t count)
{
	return go_flat<CAST_N>(r, "cast", (double)count * (sizeof(X) + sizeof(Y)), count,
			       all_aligned(x, y), cast_k<X, Y, 1>, cast_k<X, Y, CAST_N>, x, y, count);
}

} /* namespace cuk */

using namespace cuk;

extern "C" int cuda_convert(struct ops_ctx *ctx, size_t count, const void *x, enum ops_dtype xt,
			    void *y, enum ops_dtype yt)
{
	const cuk_run *r = cuda_run(ctx);
	cudaError_t e;
	if (xt == OPS_F32 && yt == OPS_BF16)
		e = cast(r, (const float *)x, (bf16 *)y, count);
	else if (xt == OPS_BF16 && yt == OPS_F32)
		e = cast(r, (const bf16 *)x, (float *)y, count);
	else if (xt == OPS_F32 && yt == OPS_F16)
		e = cast(r, (const float *)x, (f16 *)y, count);
	else if (xt == OPS_F16 && yt == OPS_F32)
		e = cast(r, (const f16 *)x, (float *)y, count);
	else
		return error("cast from type %d to type %d: one side must be fp32, the other bf16 or fp16",
			     (int)xt, (int)yt);
	if (!count)
		return 0;
	CUDA_LAUNCH(e);
	return 0;
}

extern "C" int cuda_cast(struct ops_ctx *ctx, size_t count, const void *x, enum ops_dtype xt,
			 void *y, enum ops_dtype yt)
{
	void *dx, *dy;
	if (!count) /* nothing to stage: the types are still checked */
		return cuda_convert(ctx, 0, x, xt, y, yt);
	if (cuda_begin(ctx) || cuda_in(ctx, x, cuda_bytes(count, xt), &dx) ||
	    cuda_out(ctx, y, cuda_bytes(count, yt), 0, &dy) ||
	    cuda_convert(ctx, count, dx, xt, dy, yt))
		return -1;
	return cuda_end(ctx);
}

/* ---- twins: the parameters in 16 bits, kept (ops_backend.twin) ------------------- *
 * A 16-bit convolution reads its fp32 master weights converted: without a
 * twin, a cast into scratch before its forward and its backward-data
 * passes, two launches a layer every step. With one, sgd writes the
 * rounded values beside the fp32 ones as it updates them (cuda_train.cu),
 * sync converts what the host wrote, and the convolution reads the twin. */

extern "C" int cuda_twin(struct ops_ctx *ctx, const float *p, size_t count, enum ops_dtype t)
{
	struct cuda_twins *tw = cuda_run(ctx)->twins;
	enum ops_dtype had;
	void *src, *dev;
	if (!tw || !count)   /* AAH_CUDA_TWIN=0 */
		return 0;
	if (t != OPS_BF16 && t != OPS_F16)
		return error("cuda: a twin is bf16 or fp16, not type %d", (int)t);
	if (tw->n == CUDA_MAX_TWINS)
		return error("cuda: more than %d twins", CUDA_MAX_TWINS);
	if (cuda_twin_at(ctx, p, 1, &had) || cuda_twin_at(ctx, p + count - 1, 1, &had))
		return error("cuda: a twin of values that have one");
	if (cuda_resident_at(ctx, p, count * sizeof(float), &src))
		return -1;
	CUDA_CHECK(cudaMalloc(&dev, cuda_bytes(count, t)));
	tw->t[tw->n++] = cuda_twin_copy{p, count, dev, t};
	return cuda_convert(ctx, count, src, OPS_F32, dev, t);
}

extern "C" void *cuda_twin_at(struct ops_ctx *ctx, const float *p, size_t count,
			      enum ops_dtype *t)
{
	const struct cuda_twins *tw = cuda_run(ctx)->twins;
	for (int k = 0; tw && k < tw->n; k++) {
		const cuda_twin_copy *c = &tw->t[k];
		if (p >= c->host && p < c->host + c->count && count <= (size_t)(c->host + c->count - p)) {
			*t = c->type;
			return (char *)c->dev + cuda_bytes((size_t)(p - c->host), c->type);
		}
	}
	return NULL;
}

/* The part of twin c within bytes at p: its first value and count. */
static size_t overlap(const cuda_twin_copy *c, const void *p, size_t bytes, size_t *first)
{
	uintptr_t lo = (uintptr_t)p, hi = lo + bytes, a = (uintptr_t)c->host;
	uintptr_t b = (uintptr_t)(c->host + c->count);
	lo = lo > a ? lo : a;
	hi = hi < b ? hi : b;
	if (lo >= hi)
		return 0;
	*first = (lo - a) / sizeof(float);
	return (hi - a + sizeof(float) - 1) / sizeof(float) - *first;
}

extern "C" int cuda_twins_refresh(struct ops_ctx *ctx, const void *p, size_t bytes)
{
	const struct cuda_twins *tw = cuda_run(ctx)->twins;
	for (int k = 0; tw && k < tw->n; k++) {
		const cuda_twin_copy *c = &tw->t[k];
		size_t first, n = overlap(c, p, bytes, &first);
		void *src;
		if (n && (cuda_resident_at(ctx, c->host + first, n * sizeof(float), &src) ||
			  cuda_convert(ctx, n, src, OPS_F32,
				       (char *)c->dev + cuda_bytes(first, c->type), c->type)))
			return -1;
	}
	return 0;
}

extern "C" void cuda_twins_drop(struct ops_ctx *ctx, const void *p, size_t bytes)
{
	struct cuda_twins *tw = cuda_run(ctx)->twins;
	for (int k = 0; tw && k < tw->n;) {
		size_t first;
		if (p && !overlap(&tw->t[k], p, bytes, &first)) {
			k++;
			continue;
		}
		cudaFree(tw->t[k].dev);
		tw->t[k] = tw->t[--tw->n];
	}
}
