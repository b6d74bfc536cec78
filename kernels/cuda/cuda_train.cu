/* cuda_train.cu: what a training step does besides the layers (kernels/ref/
 * ref_train.c's formulas): the loss, SGD, the accumulation of a fan-out's
 * gradient, and fp16's unscale.
 *
 * The loss keeps its sums on the device (cuk_run.sums): a step adds to
 * them and waits for nothing; cuda_loss_read brings them to the host when
 * the trainer wants them (a log line, the epoch's end), the one wait. One
 * warp a sample: the lanes take the classes in strides of 32 and meet in a
 * fixed tree; a block's samples, then the blocks, are added in their
 * order, so the sums are the same every run. dlogits is written where the
 * caller says (the model's own gradient buffer on the device). In a
 * captured step (cuk_run.vars) SGD's learning rate and the loss scale are
 * read from the step's variables on the device, so a replay uses its
 * step's. */
#include "kernels/cuda/cuk.cuh"

namespace cuk {

enum { WARPS = THREADS / 32 };

/* per block: the loss and the hits of its samples, in sample order */
struct loss_part {
	double loss;
	long long hits;
	int bad;    /* 1 + its first sample with a bad label; 0: none */
	int label;
};

/* The targets: off for every class, on for the label (smoothing's); scale:
 * fp16's loss scale, or (scale_at, a replayed step) the step's; inv_n:
 * 1/n, the mean's */
struct loss_args {
	double off, on, inv_n;
	float scale;
	const float *scale_at;
};

__global__ void __launch_bounds__(THREADS)
	loss_k(int n, int classes, const float *z, const int *labels, loss_args a, float *dz,
	       loss_part *part)
{
	__shared__ double l_w[WARPS];
	__shared__ int hit_w[WARPS], bad_w[WARPS], label_w[WARPS];
	int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
	int i = blockIdx.x * WARPS + warp;
	double loss = 0;
	int hit = 0, bad = 0, t = -1;
	if (i < n) {
		const float *zi = z + (size_t)i * classes;
		t = labels[i];
		if (t < 0 || t >= classes) {
			bad = 1 + i;
		} else {
			/* the first largest logit: each lane's, then the lanes' */
			float top = zi[0];
			int best = 0;
			for (int k = lane; k < classes; k += 32)
				if (zi[k] > top)
					top = zi[k], best = k;
			for (int o = 16; o; o >>= 1) {
				float ot = __shfl_down_sync(0xffffffffu, top, o);
				int ob = __shfl_down_sync(0xffffffffu, best, o);
				if (ot > top || (ot == top && ob < best))
					top = ot, best = ob;
			}
			top = __shfl_sync(0xffffffffu, top, 0);
			best = __shfl_sync(0xffffffffu, best, 0);
			double sum = 0;
			for (int k = lane; k < classes; k += 32)
				sum += exp((double)zi[k] - top);
			sum = __shfl_sync(0xffffffffu, warp_sum(sum), 0);
			/* sum >= 1 (the top logit's term): its log in float, whose
			 * double form would divide */
			double log_norm = top + (double)logf((float)sum), l = 0;
			float sc = a.scale_at ? *a.scale_at : a.scale;
			for (int k = lane; k < classes; k += 32) {
				double target = k == t ? a.on : a.off;
				double log_p = zi[k] - log_norm;
				l -= target * log_p;
				if (dz)
					dz[(size_t)i * classes + k] =
						(float)((exp(log_p) - target) * a.inv_n) * sc;
			}
			loss = warp_sum(l);
			hit = best == t;
		}
	}
	if (lane == 0) {
		l_w[warp] = loss, hit_w[warp] = hit, bad_w[warp] = bad, label_w[warp] = t;
	}
	__syncthreads();
	if (threadIdx.x == 0) {
		loss_part p = {0, 0, 0, 0};
		for (int w = 0; w < WARPS; w++) {
			p.loss += l_w[w];
			p.hits += hit_w[w];
			if (!p.bad && bad_w[w])
				p.bad = bad_w[w], p.label = label_w[w];
		}
		part[blockIdx.x] = p;
	}
}

__global__ void loss_finish(const loss_part *part, int blocks, cuda_sums *sums)
{
	if (threadIdx.x || blockIdx.x)
		return;
	for (int b = 0; b < blocks; b++) {
		sums->loss += part[b].loss;
		sums->correct += part[b].hits;
		if (!sums->bad && part[b].bad)
			sums->bad = part[b].bad, sums->bad_label = part[b].label;
	}
}

/* lr, or (lr_at, a replayed step) the step's; tw: the weights' twin in
 * TW (bf16 or fp16), rewritten from the updated values; TW void: none */
template <class TW, int W>
__global__ void sgd_k(float *w, const float *g, float *v, TW *tw, size_t count, float lr_arg,
		      const float *lr_at, float mu, float wd)
{
	float lr = lr_at ? *lr_at : lr_arg;
	each<W>(count, [=](size_t i, auto wi) {
		constexpr int N = decltype(wi)::n;
		float ww[N], gg[N], vv[N];
		ldf<N>(w + i, ww);
		ldf<N>(g + i, gg);
		ldf<N>(v + i, vv);
#pragma unroll
		for (int k = 0; k < N; k++) {
			vv[k] = mu * vv[k] + gg[k] + wd * ww[k];
			ww[k] = ww[k] - lr * vv[k];
		}
		stn<float, N>(v + i, vv);
		stn<float, N>(w + i, ww);
		if constexpr (!std::is_void_v<TW>)
			stn<TW, N>(tw + i, ww);
	});
}

template <class T, int W> __global__ void accumulate_k(T *y, const T *x, size_t count)
{
	each<W>(count, [=](size_t i, auto wi) {
		constexpr int N = decltype(wi)::n;
		float a[N], b[N];
		ld<T, N>(y + i, a);
		ld<T, N>(x + i, b);
#pragma unroll
		for (int k = 0; k < N; k++)
			a[k] = a[k] + b[k];
		st<T, N>(y + i, a);
	});
}

/* every thread that meets an inf or a NaN stores the same 1 */
template <int W> __global__ void unscale_k(float *g, size_t count, float inv, int *bad)
{
	each<W>(count, [=](size_t i, auto wi) {
		constexpr int N = decltype(wi)::n;
		float v[N];
		ldf<N>(g + i, v);
#pragma unroll
		for (int k = 0; k < N; k++) {
			if (!isfinite(v[k]))
				*bad = 1;
			v[k] = v[k] * inv;
		}
		st<float, N>(g + i, v);
	});
}

} /* namespace cuk */

using namespace cuk;

extern "C" int cuda_loss(struct ops_ctx *ctx, int n, int classes, const float *logits,
			 const int *labels, float smoothing, float scale, float *dlogits,
			 double *loss_sum, long *correct)
{
	(void)loss_sum, (void)correct;   /* kept on the device: cuda_loss_read */
	void *z, *t, *dz = NULL, *part;
	size_t nz = (size_t)n * classes * sizeof(float);
	int blocks = (n + WARPS - 1) / WARPS;
	if (n <= 0)
		return 0;
	if (cuda_begin(ctx) || cuda_in(ctx, logits, nz, &z) ||
	    cuda_in(ctx, labels, (size_t)n * sizeof(int), &t) ||
	    (dlogits && cuda_out(ctx, dlogits, nz, 0, &dz)) ||
	    cuda_scratch(ctx, (size_t)blocks * sizeof(loss_part), &part))
		return -1;
	const cuk_run *r = cuda_run(ctx);
	grid2 q;
	q.g = dim3((unsigned)blocks);
	q.b = dim3(THREADS);
	double off = (double)smoothing / classes;
	loss_args a = {off, off + (1.0 - smoothing), 1.0 / n, scale,
		       r->vars ? &r->vars->loss_scale : (const float *)NULL};
	CUDA_LAUNCH(go_sync(r, "loss", (dz ? 2.0 : 1.0) * nz + 4.0 * n, q, loss_k, n, classes,
			    (const float *)z, (const int *)t, a, (float *)dz, (loss_part *)part));
	grid2 one;
	one.g = dim3(1);
	one.b = dim3(1);
	CUDA_LAUNCH(go(r, "loss_finish", (double)blocks * sizeof(loss_part), one, loss_finish,
		       (const loss_part *)part, blocks, r->sums));
	return cuda_end(ctx);
}

extern "C" int cuda_loss_read(struct ops_ctx *ctx, double *loss_sum, long *correct)
{
	const cuk_run *r = cuda_run(ctx);
	struct cuda_sums s;
	CUDA_CHECK(cudaMemcpyAsync(&s, r->sums, sizeof(s), cudaMemcpyDeviceToHost, r->stream));
	CUDA_CHECK(cudaMemsetAsync(r->sums, 0, sizeof(s), r->stream));
	CUDA_CHECK(cudaStreamSynchronize(r->stream));
	ledger_copy(r->ledger, LEDGER_D2H, sizeof(s));
	ledger_sync(r->ledger);
	if (s.bad)
		return error("label %d of sample %d is outside the classes", s.bad_label, s.bad - 1);
	*loss_sum += s.loss;
	*correct += (long)s.correct;
	return 0;
}

extern "C" int cuda_sgd(struct ops_ctx *ctx, size_t count, float *w, const float *g, float *v,
			float lr, float mu, float wd)
{
	void *dw, *dg, *dv;
	size_t bytes = count * sizeof(float);
	if (!count)
		return 0;
	if (cuda_begin(ctx) || cuda_out(ctx, w, bytes, 1, &dw) || cuda_in(ctx, g, bytes, &dg) ||
	    cuda_out(ctx, v, bytes, 1, &dv))
		return -1;
	const cuk_run *r = cuda_run(ctx);
	float *fw = (float *)dw, *fv = (float *)dv;
	const float *fg = (const float *)dg, *lr_at = r->vars ? &r->vars->lr : NULL;
	enum ops_dtype tt;
	void *tw = cuda_twin_at(ctx, w, count, &tt);
	if (!tw) {
		CUDA_LAUNCH(go_flat<4>(r, "sgd", 5.0 * bytes, count, all_aligned(fw, fg, fv),
				       sgd_k<void, 1>, sgd_k<void, 4>, fw, fg, fv, (void *)NULL, count,
				       lr, lr_at, mu, wd));
		return cuda_end(ctx);
	}
	/* eight values a thread: two vectors of fp32, one of the twin's */
	double moved = 5.0 * bytes + (double)cuda_bytes(count, tt);
	CUDA_LAUNCH(typed16(tt, [&](auto tag) {
		using TW = decltype(tag);
		TW *t16 = (TW *)tw;
		return go_flat<8>(r, "sgd_twin", moved, count, all_aligned(fw, fg, fv, t16),
				  sgd_k<TW, 1>, sgd_k<TW, 8>, fw, fg, fv, t16, count, lr, lr_at, mu,
				  wd);
	}));
	return cuda_end(ctx);
}

extern "C" int cuda_accumulate(struct ops_ctx *ctx, size_t count, enum ops_dtype t, void *y,
			       const void *x)
{
	void *dy, *dx;
	size_t bytes = cuda_bytes(count, t);
	if (t != OPS_F32 && t != OPS_BF16) /* the model stores no tensor otherwise */
		return error("accumulate: the cuda backend's tensors are fp32 or bf16");
	if (!count)
		return 0;
	if (cuda_begin(ctx) || cuda_out(ctx, y, bytes, 1, &dy) || cuda_in(ctx, x, bytes, &dx))
		return -1;
	const cuk_run *r = cuda_run(ctx);
	CUDA_LAUNCH(typed(t, [&](auto tag) {
		using T = decltype(tag);
		T *ty = (T *)dy;
		const T *tx = (const T *)dx;
		return go_flat<VN<T>::n>(r, "accumulate", 3.0 * bytes, count, all_aligned(ty, tx),
					 accumulate_k<T, 1>, accumulate_k<T, VN<T>::n>, ty, tx, count);
	}));
	return cuda_end(ctx);
}

/* One pass over the gradients, and one int read back: fp16's one wait a
 * step. */
extern "C" int cuda_unscale(struct ops_ctx *ctx, size_t count, float *g, float inv, int *finite)
{
	void *dg, *dbad;
	int bad = 0;
	*finite = 1;
	if (!count)
		return 0;
	if (cuda_begin(ctx) || cuda_out(ctx, g, count * sizeof(float), 1, &dg) ||
	    cuda_out(ctx, &bad, sizeof(bad), 1, &dbad))
		return -1;
	const cuk_run *r = cuda_run(ctx);
	float *fg = (float *)dg;
	CUDA_LAUNCH(go_flat<4>(r, "unscale", 8.0 * count, count, aligned16(fg), unscale_k<1>,
			       unscale_k<4>, fg, count, inv, (int *)dbad));
	if (cuda_end(ctx))
		return -1;
	*finite = !bad;
	return 0;
}
