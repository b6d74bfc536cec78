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
