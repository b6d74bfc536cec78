/* cuda.h: private to kernels/cuda: the CUDA backend's context, its checked
 * calls, the staging of host tensors, and the kernel launchers of
 * cuda_kernels.cu (the only nvcc translation unit).
 *
 * Layout: activations NHWC as kernels/ops.h says, conv weights
 * (Cout, K, K, Cin) (cuDNN's NHWC filter format, KRSC), dense weights
 * (units, Cin); nothing is converted at the edges.
 *
 * Memory: an op takes whatever pointers the caller has. Device and managed
 * pointers (cudaMallocManaged) are used in place and the op runs
 * asynchronously on the backend's stream; plain host pointers (the unit
 * tests, a model allocated with malloc) are staged through the backend's
 * arena, one device allocation grown to the largest op seen, and copied
 * back before the op returns. */
#ifndef AAH_KERNELS_CUDA_H
#define AAH_KERNELS_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- kernel launchers (cuda_kernels.cu) ------------------------------------
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
/* ---- the C side: context, checks, staging ----------------------------------- */
#include <cublasLt.h>
#include <cudnn.h>

#include "kernels/ops.h"
#include "util.h" /* error */

/* One piece of the staging arena: a host tensor's device copy for one op. */
struct cuda_stage {
	const void *host;
	void *dev;
	size_t bytes;
	int out;        /* copied back to host when the op ends */
	int filled;     /* holds the host values (copied in) */
};

#define CUDA_MAX_STAGES 24
#define CUDA_MAX_SPILLS 8
#define CUDA_MAX_MIRRORS 8

/* Host memory the backend keeps on the device (ops_backend.resident): ops
 * use dev + (p - host) for a pointer p inside it, with no copy. */
struct cuda_mirror {
	char *host, *dev;
	size_t bytes;
};

struct cuda_ctx {
	int device;
	cudaStream_t stream;
	cudnnHandle_t dnn;
	cublasLtHandle_t lt;
	/* the arena: one device block; an op that outgrows it gets spill
	 * blocks, and the next op starts from one block of the total size */
	char *arena, *spill[CUDA_MAX_SPILLS];
	size_t arena_cap, arena_used, arena_want;
	size_t spill_cap, spill_used;   /* of the last spill block */
	int nspill;
	struct cuda_stage st[CUDA_MAX_STAGES];
	int nst;
	void *comm;         /* ncclComm_t of a data-parallel trial (cuda_nccl.c) */
	struct cuda_mirror mirror[CUDA_MAX_MIRRORS];
	int nmirror;
	int staged_only;    /* AAH_CUDA_STAGED=1: resident() keeps nothing */
};

#define CUDA_CHECK(call)                                                               \
	do {                                                                           \
		cudaError_t e_ = (call);                                               \
		if (e_ != cudaSuccess)                                                 \
			return error("%s:%d: %s: %s", __FILE__, __LINE__, #call,        \
				     cudaGetErrorString(e_));                          \
	} while (0)
/* A launcher's result, then the launch's: llm.c's cudaCheck(cudaGetLastError()). */
#define CUDA_LAUNCH(call)                                                              \
	do {                                                                           \
		cudaError_t e_ = (call);                                               \
		if (e_ == cudaSuccess)                                                 \
			e_ = cudaGetLastError();                                       \
		if (e_ != cudaSuccess)                                                 \
			return error("%s:%d: launch %s: %s", __FILE__, __LINE__, #call, \
				     cudaGetErrorString(e_));                          \
	} while (0)
#define CUDNN_CHECK(call)                                                              \
	do {                                                                           \
		cudnnStatus_t s_ = (call);                                             \
		if (s_ != CUDNN_STATUS_SUCCESS)                                        \
			return error("%s:%d: %s: %s", __FILE__, __LINE__, #call,        \
				     cudnnGetErrorString(s_));                         \
	} while (0)
#define CUBLAS_CHECK(call)                                                             \
	do {                                                                           \
		cublasStatus_t s_ = (call);                                            \
		if (s_ != CUBLAS_STATUS_SUCCESS)                                       \
			return error("%s:%d: %s: %s", __FILE__, __LINE__, #call,        \
				     cublasLtGetStatusString(s_));                     \
	} while (0)

static inline struct cuda_ctx *cuda_ctx(struct ops_ctx *ctx)
{
	return ctx->priv;
}

/* The kernels' type of a tensor stored as t (OPS_F32 or OPS_BF16: the
 * model stores no tensor in fp16), and its bytes for count values. */
static inline int cuda_type(enum ops_dtype t)
{
	return t == OPS_BF16 ? CUK_BF16 : CUK_F32;
}

static inline size_t cuda_bytes(size_t count, enum ops_dtype t)
{
	return count * ops_dtype_size(t);
}

/* Starts an op: forgets the previous op's stages and scratch. */
int cuda_begin(struct ops_ctx *ctx);
/* The device address of bytes at p for this op (p NULL: *dev = NULL).
 * cuda_in copies a host tensor in; cuda_out marks it to be copied back at
 * cuda_end (and copies in first when inout, for read-modify-write). */
int cuda_in(struct ops_ctx *ctx, const void *p, size_t bytes, void **dev);
int cuda_out(struct ops_ctx *ctx, void *p, size_t bytes, int inout, void **dev);
/* bytes of device scratch, valid until the op ends, 256-byte aligned. */
int cuda_scratch(struct ops_ctx *ctx, size_t bytes, void **dev);
/* What a request of bytes (above 0) takes of the scratch arena: whole
 * 256-byte units (a layer's workspace counts it so). */
static inline size_t cuda_scratch_bytes(size_t bytes)
{
	return (bytes + 255) / 256 * 256;
}
/* Ends an op: copies staged outputs back and waits for them (only when
 * something was staged; device-resident ops return without a sync). */
int cuda_end(struct ops_ctx *ctx);

/* Ops of the per-family files. */
extern const struct ops_layer_ops cuda_conv_ops;               /* cuda_conv.c (cuDNN) */
extern const struct ops_layer_ops cuda_dense_ops;              /* cuda_dense.c (cuBLASLt) */
extern const struct ops_layer_ops cuda_bn_ops, cuda_relu_ops, cuda_maxpool_ops,
	cuda_avgpool_ops, cuda_gap_ops, cuda_dropout_ops, cuda_add_ops, cuda_concat_ops,
	cuda_flatten_ops;                                       /* cuda_layers.c */
int cuda_loss(struct ops_ctx *ctx, int n, int classes, const float *logits, const int *labels,
	      float smoothing, float *dlogits, double *loss_sum, long *correct);
int cuda_sgd(struct ops_ctx *ctx, size_t count, float *w, const float *g, float *v, float lr,
	     float mu, float wd);
int cuda_accumulate(struct ops_ctx *ctx, size_t count, enum ops_dtype t, void *y, const void *x);
int cuda_unscale(struct ops_ctx *ctx, size_t count, float *g, float inv, int *finite);
int cuda_cast(struct ops_ctx *ctx, size_t count, const void *x, enum ops_dtype xt, void *y,
	      enum ops_dtype yt);
/* y = count values of x converted from xt to yt (cuk_cast), on the device's
 * own pointers; an error unless one side is fp32 and the other bf16 or
 * fp16. cuda_cast stages host tensors around it. */
int cuda_convert(struct ops_ctx *ctx, size_t count, const void *x, enum ops_dtype xt, void *y,
		 enum ops_dtype yt);
/* The math type a convolution runs with, given the one cuDNN's heuristics
 * listed for its algorithm: that one in bf16 and fp16; in fp32 always
 * CUDNN_FMA_MATH (the heuristics' default math would allow TF32, and their
 * ALLOW_CONVERSION fp16: neither meets ref's fp32 tolerance). */
cudnnMathType_t cuda_conv_math(enum ops_dtype type, cudnnMathType_t listed);
/* NCCL (cuda_nccl.c; NULL in the op table of a build without nccl.h). */
int cuda_comm_init(struct ops_ctx *ctx, int rank, int world,
		   int (*share)(void *arg, void *id, size_t len), void *arg);
int cuda_allreduce_mean(struct ops_ctx *ctx, float *buf, size_t count);
void cuda_comm_free(struct cuda_ctx *c);
#endif /* __CUDACC__ */

#endif
