/* cuda_bn.cu: batch normalisation (kernels/ref/ref_bn.c's formulas) as
 * per-channel coefficients and one fused multiply-add per value.
 *
 *   x, y, dy, dx: (rows, C) of T (NHWC, rows = n*H*W)   per channel: fp32
 *
 * Forward, training: the statistics in one launch: stripes of rows sum
 * x - K and (x - K)^2 per channel (K the channel's first value, so the
 * sums stay small where the mean is large against the spread), each
 * thread in float, each block in double into one partial per stripe; the
 * last block of each column of channels adds the stripes in order, so the
 * same batch gives the same bits every run (AAH_CUDA_SUMS=apart: a
 * finishing kernel does, a second launch; cuk.cuh). Then y = x*s + t with s = gamma / sqrt(var + eps),
 * t = beta - mean*s, computed per thread from the saved fp32 statistics:
 * the recompute (the same kernel on the same values) is the forward's to
 * the bit. Inference: the same kernel on the running statistics.
 *
 * Backward, g = dy (or 0 where the stored y is not above 0 under a fused
 * relu: y is not read, its sign is recomputed from x): stripes sum g and
 * g*(x - mean), their finish (the same launch) gives dbeta, dgamma and per channel
 * a = gamma*istd, b = -a*istd*dgamma/m, c = -a*dbeta/m, so that
 * dx = a*g + b*(x - mean) + c, two fused multiply-adds per value.
 *
 * A convolution whose bias the model left to this layer (ops_layer.fold_b)
 * does not add it in training: the batch's mean and the output do not
 * depend on it, the running mean counts it (so inference, where the
 * convolution adds it, is unchanged), and its gradient, zero by the exact
 * math, is written zero here. */
#include "kernels/cuda/cuk.cuh"

namespace cuk {

/* The channels ch0 .. ch0 + W - 1 of this thread (ch0 >= c: none). */
__device__ __forceinline__ int channel0(int w)
{
	return (int)(blockIdx.x * blockDim.x + threadIdx.x) * w;
}

/* s and t of y = x*s + t for W channels at ch0 */
template <int W>
__device__ __forceinline__ void coefs(int ch0, const float *mean, const float *var,
				      const float *gamma, const float *beta, float eps, float (&s)[W],
				      float (&t)[W])
{
	float m[W], v[W], g[W], b[W];
	ldf<W>(mean + ch0, m);
	ldf<W>(var + ch0, v);
	ldf<W>(gamma + ch0, g);
	ldf<W>(beta + ch0, b);
#pragma unroll
	for (int k = 0; k < W; k++) {
		s[k] = g[k] / sqrtf(v[k] + eps);
		t[k] = fmaf(-m[k], s[k], b[k]);
	}
}

/* What the forward stored, as float: y rounded to T, relu applied. */
template <class T> __device__ __forceinline__ float stored(float y, int relu)
{
	return to_f(from_f<T>(relu && !(y > 0.0f) ? 0.0f : y));
}

/* Where the statistics go, per channel. */
struct stats_out {
	float *save_mean, *save_var, *run_mean, *run_var;
	float mo;
	const float *fold_b;
};

/* Channel ch's statistics from its stripes' partials, lane 0 of a warp
 * writing them. */
template <class T>
__device__ __forceinline__ void stats_channel(const T *x, const double *part, int stripes,
					      size_t rows, int c, int ch, int lane,
					      const stats_out &o)
{
	double s1 = stripes_total(part, stripes, c, ch, lane);
	double s2 = stripes_total(part + (size_t)stripes * c, stripes, c, ch, lane);
	if (lane)
		return;
	double m = (double)rows, k0 = to_f(x[ch]);
	double d = s1 / m;
	double var = s2 / m - d * d;
	double mean = k0 + d;
	if (var < 0)
		var = 0;
	o.save_mean[ch] = (float)mean;
	o.save_var[ch] = (float)var;
	double unbiased = rows > 1 ? var * m / (m - 1) : var;
	double counted = o.fold_b ? mean + o.fold_b[ch] : mean;   /* y's mean with the bias */
	o.run_mean[ch] = (float)(o.mo * o.run_mean[ch] + (1.0 - o.mo) * counted);
	o.run_var[ch] = (float)(o.mo * o.run_var[ch] + (1.0 - o.mo) * unbiased);
}

/* The stripes' sums of x - K and (x - K)^2, A rows' loads ahead, then,
 * with tickets, the statistics. */
template <class T, int W, int A>
__global__ void __launch_bounds__(THREADS)
	stats_then_finish(const T *__restrict__ x, size_t rows, int c, double *part,
			  unsigned *tickets, stats_out o)
{
	int ch0 = channel0(W);
	float s1[W] = {}, s2[W] = {};
	if (ch0 < c) {
		float k0[W];
		ld<T, W>(x + ch0, k0);
		rows_of<A, T, W>(x, rows, c, ch0, [&](const float (&v)[W]) {
#pragma unroll
			for (int k = 0; k < W; k++) {
				float d = v[k] - k0[k];
				s1[k] += d;
				s2[k] = fmaf(d, d, s2[k]);
			}
		});
	}
	int stripes = (int)gridDim.y;
	stripe_sums<W>(s1, ch0, c, part);
	stripe_sums<W>(s2, ch0, c, part + (size_t)stripes * c);
	if (last_of_column(tickets))
		column_channels<W>(c, [=](int ch, int lane) {
			stats_channel(x, part, stripes, rows, c, ch, lane, o);
		});
}

template <class T>
__global__ void stats_finish(const T *x, const double *part, int stripes, size_t rows, int c,
			     stats_out o)
{
	int ch = finish_channel(c);
	if (ch >= 0)
		stats_channel(x, part, stripes, rows, c, ch, (int)(threadIdx.x % 32), o);
}

template <class T, int W>
__global__ void __launch_bounds__(THREADS)
	norm(const T *__restrict__ x, T *__restrict__ y, size_t rows, int c, const float *mean,
	     const float *var, const float *gamma, const float *beta, float eps, int relu)
{
	int ch0 = channel0(W);
	if (ch0 >= c)
		return;
	float s[W], t[W];
	coefs<W>(ch0, mean, var, gamma, beta, eps, s, t);
	for (size_t r = row0(); r < rows; r += row_step()) {
		float v[W];
		ld<T, W>(x + r * c + ch0, v);
#pragma unroll
		for (int k = 0; k < W; k++) {
			float o = fmaf(v[k], s[k], t[k]);
			v[k] = relu && o < 0.0f ? 0.0f : o;
		}
		st<T, W>(y + r * c + ch0, v);
	}
}

/* g at one value: dy, or 0 where the stored y is not above 0 */
template <class T>
__device__ __forceinline__ float grad_at(float x, float dy, float s, float t, int relu)
{
	return relu && !(stored<T>(fmaf(x, s, t), 1) > 0.0f) ? 0.0f : dy;
}

/* Where the backward's sums go, per channel. */
struct bwd_out {
	const float *var, *gamma;
	float eps;
	float *dgamma, *dbeta, *coef, *fold_db;
};

/* Channel ch's dbeta, dgamma and coef = (a, b, c) for dx from its
 * stripes' partials, lane 0 of a warp writing them; a folded bias's
 * gradient zeroed. */
__device__ __forceinline__ void bwd_channel(const double *part, int stripes, size_t rows, int c,
					    int ch, int lane, const bwd_out &o)
{
	double db = stripes_total(part, stripes, c, ch, lane);
	double sg = stripes_total(part + (size_t)stripes * c, stripes, c, ch, lane);
	if (lane)
		return;
	double m = (double)rows, istd = 1.0 / sqrt((double)o.var[ch] + o.eps);
	double dg = sg * istd;
	o.dbeta[ch] = (float)db;
	o.dgamma[ch] = (float)dg;
	double a = o.gamma[ch] * istd;
	o.coef[ch] = (float)a;
	o.coef[c + ch] = (float)(-a * istd * dg / m);
	o.coef[2 * c + ch] = (float)(-a * db / m);
	if (o.fold_db)
		o.fold_db[ch] = 0.0f;
}

/* The stripes' sums of g and g*(x - mean), A rows' loads ahead, then,
 * with tickets, their finish. */
template <class T, int W, int A>
/* at least 3 blocks an SM: ptxas may take 85 registers, where it keeps
 * sm_80's bf16 instance at 64 and spills without the hint */
__global__ void __launch_bounds__(THREADS, 3)
	bwd_then_finish(const T *__restrict__ x, const T *__restrict__ dy, size_t rows, int c,
			const float *mean, const float *beta, int relu, double *part,
			unsigned *tickets, bwd_out o)
{
	int ch0 = channel0(W);
	float s1[W] = {}, s2[W] = {};
	if (ch0 < c) {
		float s[W], t[W], m[W];
		coefs<W>(ch0, mean, o.var, o.gamma, beta, o.eps, s, t);
		ldf<W>(mean + ch0, m);
		rows_ahead<A>(
			rows,
			[&](size_t r) {
				return packed2<T, W>{ldp<T, W>(x + r * c + ch0),
						     ldp<T, W>(dy + r * c + ch0)};
			},
			[&](const packed2<T, W> &p) {
				float v[W], d[W];
				unpack(p.a, v);
				unpack(p.b, d);
#pragma unroll
				for (int k = 0; k < W; k++) {
					float g = grad_at<T>(v[k], d[k], s[k], t[k], relu);
					s1[k] += g;
					s2[k] = fmaf(g, v[k] - m[k], s2[k]);
				}
			});
	}
	int stripes = (int)gridDim.y;
	stripe_sums<W>(s1, ch0, c, part);
	stripe_sums<W>(s2, ch0, c, part + (size_t)stripes * c);
	if (last_of_column(tickets))
		column_channels<W>(c, [=](int ch, int lane) {
			bwd_channel(part, stripes, rows, c, ch, lane, o);
		});
}

__global__ void bwd_finish(const double *part, int stripes, size_t rows, int c, bwd_out o)
{
	int ch = finish_channel(c);
	if (ch >= 0)
		bwd_channel(part, stripes, rows, c, ch, (int)(threadIdx.x % 32), o);
}

template <class T, int W>
__global__ void bwd_dx(const T *__restrict__ x, const T *__restrict__ dy, T *__restrict__ dx, size_t rows,
	       int c, const float *mean, const float *var, const float *gamma, const float *beta,
	       float eps, int relu, const float *coef)
{
	int ch0 = channel0(W);
	if (ch0 >= c)
		return;
	float s[W], t[W], m[W], a[W], b[W], cc[W];
	coefs<W>(ch0, mean, var, gamma, beta, eps, s, t);
	ldf<W>(mean + ch0, m);
	ldf<W>(coef + ch0, a);
	ldf<W>(coef + c + ch0, b);
	ldf<W>(coef + 2 * c + ch0, cc);
	for (size_t r = row0(); r < rows; r += row_step()) {
		float v[W], d[W];
		ld<T, W>(x + r * c + ch0, v);
		ld<T, W>(dy + r * c + ch0, d);
#pragma unroll
		for (int k = 0; k < W; k++) {
			float g = grad_at<T>(v[k], d[k], s[k], t[k], relu);
			d[k] = fmaf(a[k], g, fmaf(b[k], v[k] - m[k], cc[k]));
		}
		st<T, W>(dx + r * c + ch0, d);
	}
}

/* ---- launchers ------------------------------------------------------------------ */

/* The per-channel kernel's grid: W channels a thread. */
template <int W> static grid2 bn_grid(const cuk_run *r, size_t rows, int c, unsigned max_y)
{
	return channel_grid(r, rows, (c + W - 1) / W, max_y);
}

/* The scratch of the statistics: MAX_STRIPES partials of two sums a
 * channel, then the backward's three coefficients. */
static size_t parts_bytes(int c)
{
	return cuda_scratch_bytes((size_t)MAX_STRIPES * 2 * c * sizeof(double));
}

static size_t coef_bytes(int c)
{
	return cuda_scratch_bytes((size_t)3 * c * sizeof(float));
}

struct bn_args {
	size_t rows;
	int c;
	const float *mean, *var, *gamma, *beta;
	float eps;
	int relu;
};

/* Rows a thread of the sums loads ahead (rows_ahead): 64 bytes in flight
 * a thread in the vector instances, x's four rows or x's and dy's two. */
enum { STATS_AHEAD = 4, BWD_AHEAD = 2 };

/* The statistics into o: one launch with tickets, else two. */
template <class T, int W>
static cudaError_t stats(const cuk_run *r, const T *x, const bn_args &a, double *part,
			 const stats_out &o)
{
	grid2 q = bn_grid<W>(r, a.rows, a.c, MAX_STRIPES);
	unsigned *t = tickets_for(r, q);
	double tensor = (double)a.rows * a.c * sizeof(T), parts = (double)q.g.y * a.c * 16;
	double finish = parts + 16.0 * a.c + a.c * sizeof(T);
	auto k = r->ahead ? stats_then_finish<T, W, STATS_AHEAD> : stats_then_finish<T, W, 1>;
	cudaError_t e = go_sync(r, t ? "bn_stats" : "bn_stats_part", tensor + parts + (t ? finish : 0),
				q, k, x, a.rows, a.c, part, t, o);
	if (e != cudaSuccess || t)
		return e;
	return go_sync(r, "bn_stats_finish", finish, finish_grid(a.c), stats_finish<T>, x,
		       (const double *)part, (int)q.g.y, a.rows, a.c, o);
}

template <class T, int W>
static cudaError_t normalise(const cuk_run *r, const T *x, T *y, const bn_args &a)
{
	return go(r, "bn_norm", 2.0 * a.rows * a.c * sizeof(T) + 16.0 * a.c,
		  bn_grid<W>(r, a.rows, a.c, 0), norm<T, W>, x, y, a.rows, a.c, a.mean, a.var,
		  a.gamma, a.beta, a.eps, a.relu);
}

template <class T, int W>
static cudaError_t backward(const cuk_run *r, const T *x, const T *dy, T *dx, const bn_args &a,
			    double *part, const bwd_out &o)
{
	grid2 q = bn_grid<W>(r, a.rows, a.c, MAX_STRIPES);
	unsigned *t = tickets_for(r, q);
	double tensor = (double)a.rows * a.c * sizeof(T), parts = (double)q.g.y * a.c * 16;
	double finish = parts + 28.0 * a.c;
	auto k = r->ahead ? bwd_then_finish<T, W, BWD_AHEAD> : bwd_then_finish<T, W, 1>;
	cudaError_t e = go_sync(r, t ? "bn_bwd_sums" : "bn_bwd_part",
				2 * tensor + parts + (t ? finish : 0), q, k, x, dy, a.rows, a.c,
				a.mean, a.beta, a.relu, part, t, o);
	if (e == cudaSuccess && !t)
		e = go_sync(r, "bn_bwd_finish", finish, finish_grid(a.c), bwd_finish,
			    (const double *)part, (int)q.g.y, a.rows, a.c, o);
	if (e != cudaSuccess || !dx)
		return e;
	return go(r, "bn_bwd_dx", 3 * tensor + 28.0 * a.c, bn_grid<W>(r, a.rows, a.c, 0),
		  bwd_dx<T, W>, x, dy, dx, a.rows, a.c, a.mean, a.var, a.gamma, a.beta, a.eps, a.relu,
		  (const float *)o.coef);
}

} /* namespace cuk */

using namespace cuk;

/* ---- host ops --------------------------------------------------------------------- */

#define F(count) ((size_t)(count) * sizeof(float))

static bn_args args_of(const struct ops_layer *l, int n, const void *mean, const void *var,
		       const void *gamma, const void *beta)
{
	const struct ops_shape *s = &l->in[0];
	return bn_args{(size_t)n * s->h * s->w, s->c, (const float *)mean, (const float *)var,
		       (const float *)gamma, (const float *)beta, l->cfg.eps, l->cfg.fuse_relu};
}

/* The per-channel vectors a thread reads W at a time: aligned for it. */
static int params_fit(const bn_args &a)
{
	return all_aligned(a.mean, a.var, a.gamma, a.beta);
}

/* y from x and the given statistics (training's saved ones, or the
 * running ones), in the vectors' form where the shapes allow */
static int norm_op(struct ops_ctx *ctx, const struct ops_layer *l, const void *x, void *y,
		   const bn_args &a)
{
	const cuk_run *r = cuda_run(ctx);
	CUDA_LAUNCH(typed(l->out_type, [&](auto tag) {
		using T = decltype(tag);
		const T *tx = (const T *)x;
		T *ty = (T *)y;
		return vec_fits<T>(a.c, tx, ty) && params_fit(a) ? normalise<T, VN<T>::n>(r, tx, ty, a)
						: normalise<T, 1>(r, tx, ty, a);
	}));
	return 0;
}

static int bn_forward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
		      float *y, int train)
{
	size_t c = (size_t)l->in[0].c, count = (size_t)n * ops_shape_size(&l->in[0]);
	size_t bytes = cuda_bytes(count, l->out_type);
	void *gx, *gy, *gamma, *beta, *rm, *rv, *sm, *sv, *part = NULL, *fb = NULL;
	if (cuda_begin(ctx) || cuda_in(ctx, x[0], bytes, &gx) || cuda_out(ctx, y, bytes, 0, &gy) ||
	    cuda_in(ctx, l->gamma, F(c), &gamma) || cuda_in(ctx, l->beta, F(c), &beta) ||
	    cuda_out(ctx, l->run_mean, F(c), 1, &rm) || cuda_out(ctx, l->run_var, F(c), 1, &rv) ||
	    cuda_out(ctx, l->save_mean, F(c), !train, &sm) ||
	    cuda_out(ctx, l->save_var, F(c), !train, &sv) ||
	    (train && cuda_scratch(ctx, parts_bytes((int)c), &part)) ||
	    (train && cuda_in(ctx, l->fold_b, F(c), &fb)))
		return -1;
	if (train) {
		bn_args a = args_of(l, n, sm, sv, gamma, beta);
		const cuk_run *r = cuda_run(ctx);
		stats_out o = {(float *)sm, (float *)sv, (float *)rm, (float *)rv, l->cfg.momentum,
			       (const float *)fb};
		CUDA_LAUNCH(typed(l->out_type, [&](auto tag) {
			using T = decltype(tag);
			const T *tx = (const T *)gx;
			return vec_fits<T>(a.c, tx) ? stats<T, VN<T>::n>(r, tx, a, (double *)part, o)
						    : stats<T, 1>(r, tx, a, (double *)part, o);
		}));
		if (norm_op(ctx, l, gx, gy, a))
			return -1;
	} else if (norm_op(ctx, l, gx, gy, args_of(l, n, rm, rv, gamma, beta))) {
		return -1;
	}
	return cuda_end(ctx);
}

/* The training forward's output again: the same kernel on the same input
 * and the batch's saved statistics, so the same values to the bit. */
static int bn_recompute(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			float *y)
{
	size_t c = (size_t)l->in[0].c, count = (size_t)n * ops_shape_size(&l->in[0]);
	size_t bytes = cuda_bytes(count, l->out_type);
	void *gx, *gy, *gamma, *beta, *mean, *var;
	if (cuda_begin(ctx) || cuda_in(ctx, x[0], bytes, &gx) || cuda_out(ctx, y, bytes, 0, &gy) ||
	    cuda_in(ctx, l->gamma, F(c), &gamma) || cuda_in(ctx, l->beta, F(c), &beta) ||
	    cuda_in(ctx, l->save_mean, F(c), &mean) || cuda_in(ctx, l->save_var, F(c), &var) ||
	    norm_op(ctx, l, gx, gy, args_of(l, n, mean, var, gamma, beta)))
		return -1;
	return cuda_end(ctx);
}

static int bn_backward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
		       const float *y, const float *dy, float *const *dx)
{
	(void)y;
	size_t c = (size_t)l->in[0].c, count = (size_t)n * ops_shape_size(&l->in[0]);
	size_t bytes = cuda_bytes(count, l->out_type);
	void *gx, *gdy, *gdx, *gamma, *beta, *mean, *var, *dgamma, *dbeta, *part, *coef, *fdb;
	if (cuda_begin(ctx) || cuda_in(ctx, x[0], bytes, &gx) || cuda_in(ctx, dy, bytes, &gdy) ||
	    cuda_out(ctx, dx[0], bytes, 0, &gdx) || cuda_in(ctx, l->gamma, F(c), &gamma) ||
	    cuda_in(ctx, l->beta, F(c), &beta) || cuda_in(ctx, l->save_mean, F(c), &mean) ||
	    cuda_in(ctx, l->save_var, F(c), &var) || cuda_out(ctx, l->dgamma, F(c), 0, &dgamma) ||
	    cuda_out(ctx, l->dbeta, F(c), 0, &dbeta) || cuda_out(ctx, l->fold_db, F(c), 0, &fdb) ||
	    cuda_scratch(ctx, parts_bytes((int)c), &part) ||
	    cuda_scratch(ctx, coef_bytes((int)c), &coef))
		return -1;
	bn_args a = args_of(l, n, mean, var, gamma, beta);
	const cuk_run *r = cuda_run(ctx);
	bwd_out o = {a.var, a.gamma, a.eps, (float *)dgamma, (float *)dbeta, (float *)coef,
		     (float *)fdb};
	CUDA_LAUNCH(typed(l->out_type, [&](auto tag) {
		using T = decltype(tag);
		const T *tx = (const T *)gx, *tdy = (const T *)gdy;
		T *tdx = (T *)gdx;
		return vec_fits<T>(a.c, tx, tdy, tdx, coef) && params_fit(a)
			       ? backward<T, VN<T>::n>(r, tx, tdy, tdx, a, (double *)part, o)
			       : backward<T, 1>(r, tx, tdy, tdx, a, (double *)part, o);
	}));
	return cuda_end(ctx);
}

/* The statistics' partials and the backward's coefficients, while it runs. */
static size_t bn_workspace(const struct ops_ctx *ctx, const struct ops_layer *l, int n,
			   size_t *scratch)
{
	(void)ctx, (void)n;
	*scratch = parts_bytes(l->in[0].c) + coef_bytes(l->in[0].c);
	return 0;
}

extern "C" const struct ops_layer_ops cuda_bn_ops = {
	.type = OPS_BATCHNORM,
	.name = "batch normalization",
	.forward = bn_forward,
	.backward = bn_backward,
	.recompute = bn_recompute,
	.workspace = bn_workspace,
	/* the relu's sign from x: the backward reads neither y nor anything
	 * recomputed for it */
	.backward_skips = OPS_SKIPS_Y,
	.bf16 = 1,
	.folds_bias = 1,
};
