/* cuda_v1.h: private to kernels/cuda: the backend's first kernels
 * (cuda_v1_kernels.cu: one scalar per thread, the element type a run-time
 * argument) and their ops (cuda_v1_layers.c), kept selectable with
 * AAH_CUDA_KERNELS=v1 until a GPU has measured the kernel families
 * (cuda_<family>.cu) beside them; then they go. cuda_backend.c's v1 table
 * lists these ops. */
#ifndef AAH_KERNELS_CUDA_V1_H
#define AAH_KERNELS_CUDA_V1_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- kernel launchers (cuda_v1_kernels.cu) ------------------------------------
 * Each enqueues its kernel on stream and returns cudaGetLastError() of the
 * launch; the caller checks it with CUDA_LAUNCH. Shapes: count values; rows
 * of c channels (an NHWC tensor is n*h*w rows). t: the type of the
 * tensors' values (the model's activations and their gradients), which a
 * kernel reads as float and stores rounded to nearest even; parameters,
 * statistics and their gradients are fp32. */
enum cuk_type { CUK_F32, CUK_BF16 };
cudaError_t cuk_relu_fwd(cudaStream_t s, int t, size_t count, const void *x, void *y);
cudaError_t cuk_relu_bwd(cudaStream_t s, int t, size_t count, const void *x, const void *dy,
			 void *dx);
cudaError_t cuk_copy(cudaStream_t s, size_t count, const float *x, float *y);
cudaError_t cuk_accumulate(cudaStream_t s, int t, size_t count, void *y, const void *x);
/* g[i] *= inv over count values; *bad = 1 where one is inf or NaN (the
 * caller zeroes it first). */
cudaError_t cuk_unscale(cudaStream_t s, size_t count, float *g, float inv, int *bad);
/* Casts over count values (kind: CUK_CAST_*): fp32 -> bf16/fp16 with CUDA's
 * round-to-nearest-even conversions, and back (exact); 16-bit values are
 * their bit patterns. */
enum { CUK_F32_TO_BF16, CUK_BF16_TO_F32, CUK_F32_TO_F16, CUK_F16_TO_F32 };
cudaError_t cuk_cast(cudaStream_t s, size_t count, int kind, const void *x, void *y);
/* SGD with momentum over one flat block of count values. */
cudaError_t cuk_sgd(cudaStream_t s, size_t count, float *w, const float *g, float *v, float lr,
		    float mu, float wd);
/* Up to CUK_MAX_ARGS inputs at a time. add: y = (acc ? y : 0) + sum x[k],
 * then relu when relu; add_bwd: g = dy (or masked by y > 0 when relu) to
 * every non-NULL dx[k]. */
#define CUK_MAX_ARGS 8
struct cuk_args {
	const void *x[CUK_MAX_ARGS];
	void *dx[CUK_MAX_ARGS];
};
cudaError_t cuk_add_fwd(cudaStream_t s, int t, size_t count, struct cuk_args a, int nx, int acc,
			int relu, void *y);
cudaError_t cuk_add_bwd(cudaStream_t s, int t, size_t count, struct cuk_args a, int ndx,
			int relu, const void *y, const void *dy);
/* concat slice: y[r, off + ch] = x[r, ch] over rows r, ch < cx (cy the
 * width of y); back: dx[r, ch] = dy[r, off + ch]. */
cudaError_t cuk_slice_put(cudaStream_t s, int t, size_t rows, int cx, int cy, int off,
			  const void *x, void *y);
cudaError_t cuk_slice_get(cudaStream_t s, int t, size_t rows, int cx, int cy, int off,
			  const void *dy, void *dx);
/* dropout (fp32 tensors): mask from ops_dropout_mask's generator (base,
 * threshold), then y = x * mask * scale; back: dx = dy * mask * scale (mask
 * NULL: all kept). */
cudaError_t cuk_dropout_fwd(cudaStream_t s, size_t count, uint64_t base, uint32_t threshold,
			    float scale, const float *x, float *y, uint8_t *mask);
cudaError_t cuk_dropout_bwd(cudaStream_t s, size_t count, float scale, const uint8_t *mask,
			    const float *dy, float *dx);
/* y[r, ch] += b[ch]; sum[ch] = sum over rows of x[r, ch] (into float). */
cudaError_t cuk_bias_add(cudaStream_t s, int t, size_t rows, int c, const float *b, void *y);
cudaError_t cuk_channel_sum(cudaStream_t s, int t, size_t rows, int c, const void *x,
			    double *acc, float *sum);
/* pad: dst (n, hp, wp, c) = zeros with src (n, h, w, c) at (pt, pl);
 * crop: the reverse (dst (n, h, w, c) from src (n, hp, wp, c)). */
cudaError_t cuk_pad(cudaStream_t s, int t, int n, int h, int w, int c, int hp, int wp, int pt,
		    int pl, const void *src, void *dst);
cudaError_t cuk_crop(cudaStream_t s, int t, int n, int h, int w, int c, int hp, int wp, int pt,
		     int pl, const void *src, void *dst);

/* Pooling geometry of one layer: input (n, h, w, c), output (oh, ow). */
struct cuk_pool {
	int n, h, w, c, oh, ow, k, stride, pt, pl;
};
cudaError_t cuk_maxpool_fwd(cudaStream_t s, int t, struct cuk_pool p, const void *x, void *y);
cudaError_t cuk_maxpool_bwd(cudaStream_t s, int t, struct cuk_pool p, const void *x,
			    const void *dy, void *dx);
cudaError_t cuk_avgpool_fwd(cudaStream_t s, int t, struct cuk_pool p, const void *x, void *y);
cudaError_t cuk_avgpool_bwd(cudaStream_t s, int t, struct cuk_pool p, const void *dy, void *dx);
/* x and dx of type tx, the rank-2 y and dy of type ty */
cudaError_t cuk_gap_fwd(cudaStream_t s, int tx, int ty, int n, int hw, int c, const void *x,
			void *y);
cudaError_t cuk_gap_bwd(cudaStream_t s, int tx, int ty, int n, int hw, int c, const void *dy,
			void *dx);

/* Batchnorm over rows of c channels (NHWC). acc: 2*c doubles of scratch.
 * stats: mean, var of the batch into save_*, running averages updated;
 * norm: y = gamma*(x - mean)/sqrt(var + eps) + beta (relu when relu) from
 * mean, var; bwd: dgamma, dbeta, then dx (NULL: none). */
cudaError_t cuk_bn_stats(cudaStream_t s, int t, size_t rows, int c, const void *x, double *acc,
			 float *save_mean, float *save_var, float *run_mean, float *run_var,
			 float momentum);
cudaError_t cuk_bn_norm(cudaStream_t s, int t, size_t rows, int c, const void *x,
			const float *mean, const float *var, const float *gamma, const float *beta,
			float eps, int relu, void *y);
cudaError_t cuk_bn_bwd(cudaStream_t s, int t, size_t rows, int c, const void *x, const void *y,
		       const void *dy, const float *mean, const float *var, const float *gamma,
		       float eps, int relu, double *acc, float *dgamma, float *dbeta, void *dx);

/* Softmax cross-entropy with label smoothing, one sample per thread:
 * loss[i], hit[i] (argmax == label), dz (may be NULL). bad[0] set to
 * 1 + i for a label outside [0, classes). */
cudaError_t cuk_loss(cudaStream_t s, int n, int classes, const float *z, const int *labels,
		     float smoothing, float *dz, double *loss, int *hit, int *bad);

#ifdef __cplusplus
}
#endif

#ifndef __CUDACC__
#include "kernels/cuda/cuda.h"

/* The ops of cuda_v1_layers.c, and what the cuDNN and cuBLASLt ops launch
 * around the library with the v1 kernels (cuda.h's cuda_bias_add and
 * friends, the same arguments). */
extern const struct ops_layer_ops cuda_v1_bn_ops, cuda_v1_relu_ops, cuda_v1_maxpool_ops,
	cuda_v1_avgpool_ops, cuda_v1_gap_ops, cuda_v1_dropout_ops, cuda_v1_add_ops,
	cuda_v1_concat_ops, cuda_v1_flatten_ops;
int cuda_v1_loss(struct ops_ctx *ctx, int n, int classes, const float *logits, const int *labels,
		 float smoothing, float scale, float *dlogits, double *loss_sum, long *correct);
int cuda_v1_sgd(struct ops_ctx *ctx, size_t count, float *w, const float *g, float *v, float lr,
		float mu, float wd);
int cuda_v1_accumulate(struct ops_ctx *ctx, size_t count, enum ops_dtype t, void *y,
		       const void *x);
int cuda_v1_unscale(struct ops_ctx *ctx, size_t count, float *g, float inv, int *finite);
int cuda_v1_cast(struct ops_ctx *ctx, size_t count, const void *x, enum ops_dtype xt, void *y,
		 enum ops_dtype yt);
int cuda_v1_convert(struct ops_ctx *ctx, size_t count, const void *x, enum ops_dtype xt, void *y,
		    enum ops_dtype yt);
int cuda_v1_bias_add(struct ops_ctx *ctx, enum ops_dtype t, size_t rows, int c, const float *b,
		     void *y);
int cuda_v1_bias_grad(struct ops_ctx *ctx, enum ops_dtype t, size_t rows, int c, const void *dy,
		      float *db);
int cuda_v1_pad(struct ops_ctx *ctx, enum ops_dtype t, int n, int h, int w, int c, int hp, int wp,
		int pt, int pl, const void *src, void *dst);
int cuda_v1_crop(struct ops_ctx *ctx, enum ops_dtype t, int n, int h, int w, int c, int hp,
		 int wp, int pt, int pl, const void *src, void *dst);
#endif /* __CUDACC__ */

#endif
