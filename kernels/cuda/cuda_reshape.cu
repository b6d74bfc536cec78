/* cuda_reshape.cu: the ops that only move values (kernels/ref/
 * ref_reshape.c): concat and flatten, and the zero frame the cuDNN ops
 * put around an input padded unevenly (cuda_pad, cuda_crop).
 *
 *   concat: x[k]: (rows, C_k) -> y: (rows, C) at channel offset off_k
 *   pad:    src (n, h, w, C) -> dst (n, hp, wp, C), zeros around, src at (pt, pl)
 *
 * Each thread moves W channels of one row: 16-byte vectors where the
 * widths, the offset and the pointers allow, one value at a time else. */
#include "kernels/cuda/cuk.cuh"

namespace cuk {

#define CH0(W) ((int)(blockIdx.x * blockDim.x + threadIdx.x) * (W))
#define ROWS(r, count)                                                                 \
	for (size_t r = (size_t)blockIdx.y * blockDim.y + threadIdx.y; r < (size_t)(count); \
	     r += (size_t)gridDim.y * blockDim.y)

/* y[r, off + ch] = x[r, ch] for ch < cx (put); the reverse (get) */
template <class T, int W>
__global__ void slice_k(const T *src, T *dst, size_t rows, int cx, int cy, int off, int put)
{
	int ch0 = CH0(W);
	if (ch0 >= cx)
		return;
	ROWS(r, rows) {
		float v[W];
		if (put) {
			ld<T, W>(src + r * cx + ch0, v);
			st<T, W>(dst + r * cy + off + ch0, v);
		} else {
			ld<T, W>(src + r * cy + off + ch0, v);
			st<T, W>(dst + r * cx + ch0, v);
		}
	}
}

/* bytes copied as 16-byte words, then the tail byte by byte */
__global__ void copy_k(const unsigned char *src, unsigned char *dst, size_t bytes, int vec)
{
	size_t words = vec ? bytes / 16 : 0;
	CUK_FOR(i, words) {
		uint4 u;
#ifdef CUK_HOST
		memcpy(&u, src + 16 * i, 16);
		memcpy(dst + 16 * i, &u, 16);
#else
		u = reinterpret_cast<const uint4 *>(src)[i];
		reinterpret_cast<uint4 *>(dst)[i] = u;
#endif
	}
	CUK_FOR(j, bytes - 16 * words) dst[16 * words + j] = src[16 * words + j];
}

/* the frame: pad writes every value of dst (zeros outside src), crop
 * every value of dst from its place in src */
struct frame {
	int n, h, w, c, hp, wp, pt, pl;
};

template <class T, int W> __global__ void pad_k(frame f, const T *src, T *dst)
{
	int ch0 = CH0(W);
	if (ch0 >= f.c)
		return;
	ROWS(r, (size_t)f.n * f.hp * f.wp) {
		int x = (int)(r % f.wp), t = (int)(r / f.wp), y = t % f.hp, s = t / f.hp;
		int sy = y - f.pt, sx = x - f.pl;
		float v[W] = {};
		if (sy >= 0 && sy < f.h && sx >= 0 && sx < f.w)
			ld<T, W>(src + (((size_t)s * f.h + sy) * f.w + sx) * f.c + ch0, v);
		st<T, W>(dst + r * f.c + ch0, v);
	}
}

template <class T, int W> __global__ void crop_k(frame f, const T *src, T *dst)
{
	int ch0 = CH0(W);
	if (ch0 >= f.c)
		return;
	ROWS(r, (size_t)f.n * f.h * f.w) {
		int x = (int)(r % f.w), t = (int)(r / f.w), y = t % f.h, s = t / f.h;
		float v[W];
		ld<T, W>(src + (((size_t)s * f.hp + y + f.pt) * f.wp + x + f.pl) * f.c + ch0, v);
		st<T, W>(dst + r * f.c + ch0, v);
	}
}

template <class T>
static cudaError_t slice(const cuk_run *r, const T *src, T *dst, size_t rows, int cx, int cy,
			 int off, int put)
{
	double bytes = 2.0 * rows * cx * sizeof(T);
	const char *name = put ? "concat_put" : "concat_get";
	if (vec_fits<T>(cx, src, dst) && cy % VN<T>::n == 0 && off % VN<T>::n == 0)
		return go(r, name, bytes, channel_grid(r, rows, cx / VN<T>::n, 0), slice_k<T, VN<T>::n>,
			  src, dst, rows, cx, cy, off, put);
	return go(r, name, bytes, channel_grid(r, rows, cx, 0), slice_k<T, 1>, src, dst, rows, cx, cy,
		  off, put);
}

template <class T>
static cudaError_t framing(const cuk_run *r, const frame &f, const T *src, T *dst, int pad)
{
	size_t inner = (size_t)f.n * f.h * f.w * f.c, outer = (size_t)f.n * f.hp * f.wp * f.c;
	double bytes = (double)(inner + (pad ? outer : inner)) * sizeof(T);
	size_t rows = pad ? (size_t)f.n * f.hp * f.wp : (size_t)f.n * f.h * f.w;
	int vec = vec_fits<T>(f.c, src, dst);
	int cv = vec ? f.c / VN<T>::n : f.c;
	if (pad)
		return vec ? go(r, "pad", bytes, channel_grid(r, rows, cv, 0), pad_k<T, VN<T>::n>, f, src, dst)
			   : go(r, "pad", bytes, channel_grid(r, rows, cv, 0), pad_k<T, 1>, f, src, dst);
	return vec ? go(r, "crop", bytes, channel_grid(r, rows, cv, 0), crop_k<T, VN<T>::n>, f, src, dst)
		   : go(r, "crop", bytes, channel_grid(r, rows, cv, 0), crop_k<T, 1>, f, src, dst);
}

} /* namespace cuk */

using namespace cuk;

/* ---- host ops --------------------------------------------------------------------- */

extern "C" int cuda_copy(struct ops_ctx *ctx, size_t bytes, const void *src, void *dst)
{
	const cuk_run *r = cuda_run(ctx);
	int vec = all_aligned(src, dst);
	if (!bytes)
		return 0;
	CUDA_LAUNCH(go(r, "copy", 2.0 * bytes, flat(r, vec ? bytes / 16 : bytes), copy_k,
		       (const unsigned char *)src, (unsigned char *)dst, bytes, vec));
	return 0;
}

static int concat_forward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			  const float *const *x, float *y, int train)
{
	(void)train;
	size_t rows = (size_t)n * l->out.h * l->out.w;
	void *gy;
	if (cuda_begin(ctx) || cuda_out(ctx, y, cuda_bytes(rows * l->out.c, l->out_type), 0, &gy))
		return -1;
	for (int k = 0, off = 0; k < l->n_in; off += l->in[k].c, k++) {
		void *gx;
		int cx = l->in[k].c;
		if (cuda_in(ctx, x[k], cuda_bytes(rows * cx, l->out_type), &gx))
			return -1;
		CUDA_LAUNCH(typed(l->out_type, [&](auto tag) {
			using T = decltype(tag);
			return slice<T>(cuda_run(ctx), (const T *)gx, (T *)gy, rows, cx, l->out.c, off, 1);
		}));
	}
	return cuda_end(ctx);
}

static int concat_backward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			   const float *const *x, const float *y, const float *dy,
			   float *const *dx)
{
	(void)x, (void)y;
	size_t rows = (size_t)n * l->out.h * l->out.w;
	void *gdy;
	if (cuda_begin(ctx) || cuda_in(ctx, dy, cuda_bytes(rows * l->out.c, l->out_type), &gdy))
		return -1;
	for (int k = 0, off = 0; k < l->n_in; off += l->in[k].c, k++) {
		void *gdx;
		int cx = l->in[k].c;
		if (!dx[k])
			continue;
		if (cuda_out(ctx, dx[k], cuda_bytes(rows * cx, l->out_type), 0, &gdx))
			return -1;
		CUDA_LAUNCH(typed(l->out_type, [&](auto tag) {
			using T = decltype(tag);
			return slice<T>(cuda_run(ctx), (const T *)gdy, (T *)gdx, rows, cx, l->out.c, off, 0);
		}));
	}
	return cuda_end(ctx);
}

extern "C" const struct ops_layer_ops cuda_concat_ops = {
	.type = OPS_CONCAT,
	.name = "concatenation",
	.forward = concat_forward,
	.backward = concat_backward,
	.bf16 = 1,
};

/* The same values in the same order: a copy (none when in place). */
static int copy_op(struct ops_ctx *ctx, size_t count, const float *src, float *dst)
{
	void *gs, *gd;
	size_t bytes = count * sizeof(float);
	if (src == dst)
		return 0;
	if (cuda_begin(ctx) || cuda_in(ctx, src, bytes, &gs) || cuda_out(ctx, dst, bytes, 0, &gd) ||
	    cuda_copy(ctx, bytes, gs, gd))
		return -1;
	return cuda_end(ctx);
}

static int flatten_forward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			   const float *const *x, float *y, int train)
{
	(void)train;
	return copy_op(ctx, (size_t)n * ops_shape_size(&l->out), x[0], y);
}

static int flatten_backward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			    const float *const *x, const float *y, const float *dy,
			    float *const *dx)
{
	(void)x, (void)y;
	return dx[0] ? copy_op(ctx, (size_t)n * ops_shape_size(&l->out), dy, dx[0]) : 0;
}

extern "C" const struct ops_layer_ops cuda_flatten_ops = {
	.type = OPS_FLATTEN,
	.name = "flatten",
	.forward = flatten_forward,
	.backward = flatten_backward,
};

extern "C" int cuda_pad(struct ops_ctx *ctx, enum ops_dtype t, int n, int h, int w, int c, int hp,
			int wp, int pt, int pl, const void *src, void *dst)
{
	frame f = {n, h, w, c, hp, wp, pt, pl};
	CUDA_LAUNCH(typed(t, [&](auto tag) {
		using T = decltype(tag);
		return framing<T>(cuda_run(ctx), f, (const T *)src, (T *)dst, 1);
	}));
	return 0;
}

extern "C" int cuda_crop(struct ops_ctx *ctx, enum ops_dtype t, int n, int h, int w, int c, int hp,
			 int wp, int pt, int pl, const void *src, void *dst)
{
	frame f = {n, h, w, c, hp, wp, pt, pl};
	CUDA_LAUNCH(typed(t, [&](auto tag) {
		using T = decltype(tag);
		return framing<T>(cuda_run(ctx), f, (const T *)src, (T *)dst, 0);
	}));
	return 0;
}
