/* cuda_eltwise.cu: the element-wise ops (kernels/ref/ref_eltwise.c's
 * formulas): relu, dropout and add, and the bias the cuDNN and cuBLASLt
 * ops add and sum around the library (cuda_bias_add, cuda_bias_grad).
 *
 *   x, x[k], y, dy, dx: count values of T, flat; bias: (rows, C) of T, b: (C) fp32
 *
 * Flat kernels take 16-byte vectors where every pointer is aligned, and
 * the tail one value at a time; a sum over inputs is in float and rounded
 * once where it is stored. The bias gradient is a per-channel sum in a
 * fixed order (cuk.cuh), not atomics. */
#include "kernels/cuda/cuk.cuh"

namespace cuk {

template <class T, int W> __global__ void relu_fwd(const T *x, T *y, size_t count)
{
	each<W>(count, [=](size_t i, auto w) {
		constexpr int N = decltype(w)::n;
		float v[N];
		ld<T, N>(x + i, v);
#pragma unroll
		for (int k = 0; k < N; k++)
			v[k] = v[k] > 0.0f ? v[k] : 0.0f;
		st<T, N>(y + i, v);
	});
}

template <class T, int W> __global__ void relu_bwd(const T *x, const T *dy, T *dx, size_t count)
{
	each<W>(count, [=](size_t i, auto w) {
		constexpr int N = decltype(w)::n;
		float v[N], d[N];
		ld<T, N>(x + i, v);
		ld<T, N>(dy + i, d);
#pragma unroll
		for (int k = 0; k < N; k++)
			d[k] = v[k] > 0.0f ? d[k] : 0.0f;
		st<T, N>(dx + i, d);
	});
}

/* Up to MAX_IN tensors a launch, indexed with constants only (a run-time
 * index into a kernel's by-value array puts it in local memory). */
enum { MAX_IN = 8 };
template <class T> struct many {
	const T *x[MAX_IN];
	T *dx[MAX_IN];
};

/* y = (acc ? y : 0) + the sum of x[0 .. nx), relu after when relu */
template <class T, int W>
__global__ void add_fwd(many<T> a, int nx, int acc, int relu, T *y, size_t count)
{
	each<W>(count, [=](size_t i, auto w) {
		constexpr int N = decltype(w)::n;
		float s[N] = {}, v[N];
		if (acc)
			ld<T, N>(y + i, s);
#pragma unroll
		for (int j = 0; j < MAX_IN; j++) {
			if (j >= nx)
				break;
			ld<T, N>(a.x[j] + i, v);
#pragma unroll
			for (int k = 0; k < N; k++)
				s[k] += v[k];
		}
		if (relu)
#pragma unroll
			for (int k = 0; k < N; k++)
				s[k] = s[k] < 0.0f ? 0.0f : s[k];
		st<T, N>(y + i, s);
	});
}

/* every non-NULL dx[k] (k < ndx) = dy, or 0 where y is not above 0 under relu */
template <class T, int W>
__global__ void add_bwd(many<T> a, int ndx, int relu, const T *y, const T *dy, size_t count)
{
	each<W>(count, [=](size_t i, auto w) {
		constexpr int N = decltype(w)::n;
		float g[N], v[N];
		ld<T, N>(dy + i, g);
		if (relu) {
			ld<T, N>(y + i, v);
#pragma unroll
			for (int k = 0; k < N; k++)
				g[k] = v[k] > 0.0f ? g[k] : 0.0f;
		}
#pragma unroll
		for (int j = 0; j < MAX_IN; j++) {
			if (j >= ndx)
				break;
			if (a.dx[j])
				st<T, N>(a.dx[j] + i, g);
		}
	});
}

/* ops_dropout_mask's generator (kernels/ops.c): splitmix64 of base + the
 * index rounded down to 4, four 16-bit uniforms per hash */
__device__ __forceinline__ uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* base: ops_dropout_base(); in a replayed step (step_at) from the step's
 * number on the device, as ops_dropout_base computes it */
template <int W>
__global__ void dropout_fwd(const float *x, float *y, uint8_t *mask, size_t count, uint64_t base_arg,
			    const uint64_t *step_at, uint64_t seed, int index, uint32_t threshold,
			    float scale)
{
	uint64_t base = step_at ? mix64(seed ^ mix64(*step_at * 1000003u + (uint64_t)index)) : base_arg;
	each<W>(count, [=](size_t i, auto w) {
		constexpr int N = decltype(w)::n;
		float v[N];
		ld<float, N>(x + i, v);
		uint64_t r = mix64(base + (i & ~(size_t)3));
#pragma unroll
		for (int k = 0; k < N; k++) {
			uint8_t keep = ((r >> (16 * ((i + k) & 3))) & 0xffff) >= threshold;
			mask[i + k] = keep;
			v[k] = keep ? v[k] * scale : 0.0f;
		}
		st<float, N>(y + i, v);
	});
}

template <int W>
__global__ void dropout_bwd(const uint8_t *mask, const float *dy, float *dx, size_t count,
			    float scale)
{
	each<W>(count, [=](size_t i, auto w) {
		constexpr int N = decltype(w)::n;
		float d[N];
		ld<float, N>(dy + i, d);
#pragma unroll
		for (int k = 0; k < N; k++)
			d[k] = !mask || mask[i + k] ? d[k] * scale : 0.0f;
		st<float, N>(dx + i, d);
	});
}

/* y[r, ch] += b[ch], W channels a thread */
template <class T, int W> __global__ void bias_add_k(const float *b, T *y, size_t rows, int c)
{
	int ch0 = (int)(blockIdx.x * blockDim.x + threadIdx.x) * W;
	if (ch0 >= c)
		return;
	float bb[W];
	ldf<W>(b + ch0, bb);
	for (size_t r = (size_t)blockIdx.y * blockDim.y + threadIdx.y; r < rows;
	     r += (size_t)gridDim.y * blockDim.y) {
		float v[W];
		ld<T, W>(y + r * c + ch0, v);
#pragma unroll
		for (int k = 0; k < W; k++)
			v[k] += bb[k];
		st<T, W>(y + r * c + ch0, v);
	}
}

/* Channel ch's bias gradient from its stripes' partials (lane 0 writes). */
__device__ __forceinline__ void bias_grad_channel(const double *part, int stripes, int c, int ch,
						  int lane, float *db)
{
	double t = stripes_total(part, stripes, c, ch, lane);
	if (!lane)
		db[ch] = (float)t;
}

/* the per-stripe sums of dy's channels (cuk.cuh's reduction), A rows'
 * loads ahead, then, with tickets, their finish */
template <class T, int W, int A>
__global__ void __launch_bounds__(THREADS)
	bias_grad_then_finish(const T *dy, size_t rows, int c, double *part, unsigned *tickets,
			      float *db)
{
	int ch0 = (int)(blockIdx.x * blockDim.x + threadIdx.x) * W;
	float s[W] = {};
	if (ch0 < c)
		rows_of<A, T, W>(dy, rows, c, ch0, [&](const float (&v)[W]) {
#pragma unroll
			for (int k = 0; k < W; k++)
				s[k] += v[k];
		});
	stripe_sums<W>(s, ch0, c, part);
	if (last_of_column(tickets))
		column_channels<W>(c, [=](int ch, int lane) {
			bias_grad_channel(part, (int)gridDim.y, c, ch, lane, db);
		});
}

__global__ void bias_grad_finish(const double *part, int stripes, int c, float *db)
{
	int ch = finish_channel(c);
	if (ch >= 0)
		bias_grad_channel(part, stripes, c, ch, (int)(threadIdx.x % 32), db);
}

/* ---- launchers ------------------------------------------------------------------ */

template <class T>
static cudaError_t relu(const cuk_run *r, const T *x, T *y, size_t count)
{
	return go_flat<VN<T>::n>(r, "relu_fwd", 2.0 * count * sizeof(T), count, all_aligned(x, y),
				 relu_fwd<T, 1>, relu_fwd<T, VN<T>::n>, x, y, count);
}

template <class T>
static cudaError_t relu_grad(const cuk_run *r, const T *x, const T *dy, T *dx, size_t count)
{
	return go_flat<VN<T>::n>(r, "relu_bwd", 3.0 * count * sizeof(T), count,
				 all_aligned(x, dy, dx), relu_bwd<T, 1>, relu_bwd<T, VN<T>::n>, x, dy,
				 dx, count);
}

template <class T>
static cudaError_t add(const cuk_run *r, const many<T> &a, int nx, int acc, int relu_after, T *y,
		       size_t count)
{
	int aligned = aligned16(y);
	for (int k = 0; k < nx; k++)
		aligned &= aligned16(a.x[k]);
	return go_flat<VN<T>::n>(r, "add_fwd", (double)(nx + acc + 1) * count * sizeof(T), count,
				 aligned, add_fwd<T, 1>, add_fwd<T, VN<T>::n>, a, nx, acc, relu_after,
				 y, count);
}

template <class T>
static cudaError_t add_grad(const cuk_run *r, const many<T> &a, int ndx, int relu_y, const T *y,
			    const T *dy, size_t count)
{
	int aligned = aligned16(y) && aligned16(dy), outs = 0;
	for (int k = 0; k < ndx; k++)
		aligned &= aligned16(a.dx[k]), outs += a.dx[k] != NULL;
	return go_flat<VN<T>::n>(r, "add_bwd", (double)(1 + relu_y + outs) * count * sizeof(T),
				 count, aligned, add_bwd<T, 1>, add_bwd<T, VN<T>::n>, a, ndx, relu_y, y,
				 dy, count);
}

} /* namespace cuk */

using namespace cuk;

/* ---- host ops --------------------------------------------------------------------- */

static size_t count_of(const struct ops_layer *l, int n)
{
	return (size_t)n * ops_shape_size(&l->out);
}

static int relu_forward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			float *y, int train)
{
	(void)train;
	size_t count = count_of(l, n), bytes = cuda_bytes(count, l->out_type);
	void *gx, *gy;
	if (cuda_begin(ctx) || cuda_in(ctx, x[0], bytes, &gx) || cuda_out(ctx, y, bytes, 0, &gy))
		return -1;
	CUDA_LAUNCH(typed(l->out_type, [&](auto tag) {
		using T = decltype(tag);
		return relu<T>(cuda_run(ctx), (const T *)gx, (T *)gy, count);
	}));
	return cuda_end(ctx);
}

static int relu_backward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			 const float *y, const float *dy, float *const *dx)
{
	(void)y;
	size_t count = count_of(l, n), bytes = cuda_bytes(count, l->out_type);
	void *gx, *gdy, *gdx;
	if (!dx[0])
		return 0;
	if (cuda_begin(ctx) || cuda_in(ctx, x[0], bytes, &gx) || cuda_in(ctx, dy, bytes, &gdy) ||
	    cuda_out(ctx, dx[0], bytes, 0, &gdx))
		return -1;
	CUDA_LAUNCH(typed(l->out_type, [&](auto tag) {
		using T = decltype(tag);
		return relu_grad<T>(cuda_run(ctx), (const T *)gx, (const T *)gdy, (T *)gdx, count);
	}));
	return cuda_end(ctx);
}

extern "C" const struct ops_layer_ops cuda_relu_ops = {
	.type = OPS_RELU,
	.name = "rectifier",
	.forward = relu_forward,
	.backward = relu_backward,
	.bf16 = 1,
};

static int dropout_forward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			   const float *const *x, float *y, int train)
{
	size_t count = count_of(l, n), bytes = count * sizeof(float);
	float rate = l->cfg.rate;
	void *gx, *gy, *mask = NULL;
	if (cuda_begin(ctx) || cuda_in(ctx, x[0], bytes, &gx) || cuda_out(ctx, y, bytes, 0, &gy) ||
	    (train && rate > 0 && cuda_out(ctx, l->mask, count, 0, &mask)))
		return -1;
	const cuk_run *r = cuda_run(ctx);
	if (!train || rate <= 0) /* y = x */
		return cuda_copy(ctx, bytes, gx, gy) ? -1 : cuda_end(ctx);
	uint32_t threshold = (uint32_t)((double)rate * 65536.0);
	uint64_t base = ops_dropout_base(ctx, l);
	const uint64_t *step_at = r->vars ? &r->vars->step : NULL;
	float scale = 1.0f / (1.0f - rate);
	double b = 2.0 * bytes + count;
	const float *fx = (const float *)gx;
	float *fy = (float *)gy;
	uint8_t *m = (uint8_t *)mask;
	CUDA_LAUNCH(go_flat<4>(r, "dropout_fwd", b, count, all_aligned(fx, fy), dropout_fwd<1>,
			       dropout_fwd<4>, fx, fy, m, count, base, step_at, ctx->seed, l->index,
			       threshold, scale));
	return cuda_end(ctx);
}

static int dropout_backward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			    const float *const *x, const float *y, const float *dy,
			    float *const *dx)
{
	(void)x, (void)y;
	size_t count = count_of(l, n), bytes = count * sizeof(float);
	float rate = l->cfg.rate;
	void *gdy, *gdx, *mask = NULL;
	if (!dx[0])
		return 0;
	if (cuda_begin(ctx) || cuda_in(ctx, dy, bytes, &gdy) || cuda_out(ctx, dx[0], bytes, 0, &gdx) ||
	    (rate > 0 && cuda_in(ctx, l->mask, count, &mask)))
		return -1;
	const cuk_run *r = cuda_run(ctx);
	float scale = rate > 0 ? 1.0f / (1.0f - rate) : 1.0f;
	double b = 2.0 * bytes + (mask ? count : 0);
	const float *fdy = (const float *)gdy;
	float *fdx = (float *)gdx;
	const uint8_t *m = (const uint8_t *)mask;
	CUDA_LAUNCH(go_flat<4>(r, "dropout_bwd", b, count, all_aligned(fdy, fdx), dropout_bwd<1>,
			       dropout_bwd<4>, m, fdy, fdx, count, scale));
	return cuda_end(ctx);
}

extern "C" const struct ops_layer_ops cuda_dropout_ops = {
	.type = OPS_DROPOUT,
	.name = "inverted dropout",
	.forward = dropout_forward,
	.backward = dropout_backward,
};

static int add_forward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
		       float *y, int train)
{
	(void)train;
	size_t count = count_of(l, n), bytes = cuda_bytes(count, l->out_type);
	void *gy;
	if (cuda_begin(ctx) || cuda_out(ctx, y, bytes, 0, &gy))
		return -1;
	/* MAX_IN inputs a launch; the relu after the last */
	for (int k0 = 0; k0 < l->n_in; k0 += MAX_IN) {
		void *gx[MAX_IN] = {0};
		int m = l->n_in - k0 < MAX_IN ? l->n_in - k0 : MAX_IN;
		for (int k = 0; k < m; k++)
			if (cuda_in(ctx, x[k0 + k], bytes, &gx[k]))
				return -1;
		int relu_after = l->cfg.fuse_relu && k0 + m == l->n_in;
		CUDA_LAUNCH(typed(l->out_type, [&](auto tag) {
			using T = decltype(tag);
			many<T> a = {};
			for (int k = 0; k < m; k++)
				a.x[k] = (const T *)gx[k];
			return add<T>(cuda_run(ctx), a, m, k0 > 0, relu_after, (T *)gy, count);
		}));
	}
	return cuda_end(ctx);
}

static int add_backward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			const float *y, const float *dy, float *const *dx)
{
	(void)x;
	size_t count = count_of(l, n), bytes = cuda_bytes(count, l->out_type);
	void *gy = NULL, *gdy;
	if (cuda_begin(ctx) || (l->cfg.fuse_relu && cuda_in(ctx, y, bytes, &gy)) ||
	    cuda_in(ctx, dy, bytes, &gdy))
		return -1;
	for (int k0 = 0; k0 < l->n_in; k0 += MAX_IN) {
		void *gdx[MAX_IN] = {0};
		int m = l->n_in - k0 < MAX_IN ? l->n_in - k0 : MAX_IN;
		for (int k = 0; k < m; k++)
			if (cuda_out(ctx, dx[k0 + k], bytes, 0, &gdx[k]))
				return -1;
		CUDA_LAUNCH(typed(l->out_type, [&](auto tag) {
			using T = decltype(tag);
			many<T> a = {};
			for (int k = 0; k < m; k++)
				a.dx[k] = (T *)gdx[k];
			return add_grad<T>(cuda_run(ctx), a, m, l->cfg.fuse_relu, (const T *)gy,
					   (const T *)gdy, count);
		}));
	}
	return cuda_end(ctx);
}

extern "C" const struct ops_layer_ops cuda_add_ops = {
	.type = OPS_ADD,
	.name = "elementwise sum",
	.forward = add_forward,
	.backward = add_backward,
	.backward_skips = OPS_SKIPS_X, /* dy to each input; a fused relu reads y */
	.bf16 = 1,
};

/* ---- the bias around cuDNN and cuBLASLt ------------------------------------------- */

extern "C" int cuda_bias_add(struct ops_ctx *ctx, enum ops_dtype t, size_t rows, int c,
			     const float *b, void *y)
{
	const cuk_run *r = cuda_run(ctx);
	CUDA_LAUNCH(typed(t, [&](auto tag) {
		using T = decltype(tag);
		T *ty = (T *)y;
		double bytes = 2.0 * rows * c * sizeof(T) + 4.0 * c;
		if (vec_fits<T>(c, b, ty))
			return go(r, "bias_add", bytes, channel_grid(r, rows, c / VN<T>::n, 0),
				  bias_add_k<T, VN<T>::n>, b, ty, rows, c);
		return go(r, "bias_add", bytes, channel_grid(r, rows, c, 0), bias_add_k<T, 1>, b, ty,
			  rows, c);
	}));
	return 0;
}

extern "C" size_t cuda_bias_grad_scratch(int c)
{
	return cuda_scratch_bytes((size_t)MAX_STRIPES * c * sizeof(double));
}

extern "C" int cuda_bias_grad(struct ops_ctx *ctx, enum ops_dtype t, size_t rows, int c,
			      const void *dy, float *db)
{
	const cuk_run *r = cuda_run(ctx);
	void *part;
	if (cuda_scratch(ctx, cuda_bias_grad_scratch(c), &part))
		return -1;
	CUDA_LAUNCH(typed(t, [&](auto tag) {
		using T = decltype(tag);
		const T *tdy = (const T *)dy;
		int vec = vec_fits<T>(c, tdy);
		grid2 q = channel_grid(r, rows, vec ? c / VN<T>::n : c, MAX_STRIPES);
		unsigned *tk = tickets_for(r, q);
		double parts = (double)q.g.y * c * 8, finish = parts + 4.0 * c;
		double bytes = (double)rows * c * sizeof(T) + parts + (tk ? finish : 0);
		const char *name = tk ? "bias_grad" : "bias_grad_part";
		/* 4 rows ahead: 64 bytes in flight a thread in the vector instance */
		auto k = vec ? (r->ahead ? bias_grad_then_finish<T, VN<T>::n, 4>
					 : bias_grad_then_finish<T, VN<T>::n, 1>)
			     : (r->ahead ? bias_grad_then_finish<T, 1, 4> : bias_grad_then_finish<T, 1, 1>);
		cudaError_t e = go_sync(r, name, bytes, q, k, tdy, rows, c, (double *)part, tk, db);
		if (e != cudaSuccess || tk)
			return e;
		return go_sync(r, "bias_grad_finish", finish, finish_grid(c), bias_grad_finish,
			       (const double *)part, (int)q.g.y, c, db);
	}));
	return 0;
}
