/* cuda.h: what the cuda backend's files share: the staging of host
 * tensors around an op, the checked calls, and the ops of the kernel
 * families (kernels/cuda/cuda_<family>.cu) that the table, the cuDNN and
 * cuBLASLt ops and the host harness use. C and C++ (nvcc, and g++ for the
 * host harness, CUK_HOST: kernels/cudahost/). The context behind an op
 * (device, stream, library handles) is cuda_ctx.h's.
 *
 * Layout: activations NHWC as kernels/ops.h says, conv weights
 * (Cout, K, K, Cin) (cuDNN's NHWC filter format, KRSC), dense weights
 * (units, Cin); nothing is converted at the edges.
 *
 * Memory: an op takes whatever pointers the caller has. Resident, device
 * and managed pointers are used in place and the op runs asynchronously
 * on the backend's stream; plain host pointers (the unit tests, a model
 * allocated with malloc) are staged through the backend's arena and copied
 * back before the op returns (cuda_begin .. cuda_end). */
#ifndef AAH_KERNELS_CUDA_H
#define AAH_KERNELS_CUDA_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h> /* getenv */
#include <string.h>

#ifdef CUK_HOST
/* The host harness: the runtime's types, and every name this header
 * exports under its own, so that the harness and the real backend link
 * into one program. */
typedef int cudaError_t;
enum { cudaSuccess = 0, cudaErrorInvalidValue = 1 };
typedef struct cuk_host_stream *cudaStream_t;
static inline cudaError_t cudaGetLastError(void)
{
	return cudaSuccess;
}
static inline const char *cudaGetErrorString(cudaError_t e)
{
	return e == cudaSuccess ? "no error" : "invalid argument";
}
/* device memory is host memory, a stream does its work at once */
enum cudaMemcpyKind { cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice };
static inline cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes,
					  enum cudaMemcpyKind kind, cudaStream_t s)
{
	(void)kind, (void)s;
	memmove(dst, src, bytes);
	return cudaSuccess;
}
static inline cudaError_t cudaMalloc(void **p, size_t bytes)
{
	return posix_memalign(p, 256, bytes ? bytes : 1) ? cudaErrorInvalidValue : cudaSuccess;
}
static inline cudaError_t cudaFree(void *p)
{
	free(p);
	return cudaSuccess;
}
static inline cudaError_t cudaMemsetAsync(void *p, int v, size_t bytes, cudaStream_t s)
{
	(void)s;
	memset(p, v, bytes);
	return cudaSuccess;
}
static inline cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
	(void)s;
	return cudaSuccess;
}
#define cuda_begin cudahost_begin
#define cuda_in cudahost_in
#define cuda_out cudahost_out
#define cuda_scratch cudahost_scratch
#define cuda_end cudahost_end
#define cuda_run cudahost_run
#define cuda_bn_ops cudahost_bn_ops
#define cuda_relu_ops cudahost_relu_ops
#define cuda_maxpool_ops cudahost_maxpool_ops
#define cuda_avgpool_ops cudahost_avgpool_ops
#define cuda_gap_ops cudahost_gap_ops
#define cuda_dropout_ops cudahost_dropout_ops
#define cuda_add_ops cudahost_add_ops
#define cuda_concat_ops cudahost_concat_ops
#define cuda_flatten_ops cudahost_flatten_ops
#define cuda_loss cudahost_loss
#define cuda_loss_read cudahost_loss_read
#define cuda_sgd cudahost_sgd
#define cuda_accumulate cudahost_accumulate
#define cuda_unscale cudahost_unscale
#define cuda_cast cudahost_cast
#define cuda_convert cudahost_convert
#define cuda_bias_add cudahost_bias_add
#define cuda_bias_grad cudahost_bias_grad
#define cuda_bias_grad_scratch cudahost_bias_grad_scratch
#define cuda_pad cudahost_pad
#define cuda_crop cudahost_crop
#define cuda_copy cudahost_copy
#define cuda_resident_at cudahost_resident_at
#define cuda_twin cudahost_twin
#define cuda_twin_at cudahost_twin_at
#define cuda_twins_refresh cudahost_twins_refresh
#define cuda_twins_drop cudahost_twins_drop
#else
#include <cuda_runtime_api.h>
#endif

#include "kernels/ledger.h" /* ledger_launch: what each launch moves */
#include "kernels/ops.h"
#include "util.h" /* error */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- checks ------------------------------------------------------------------- */

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

/* ---- where an op's work goes ---------------------------------------------------- */

/* What a launcher needs besides its tensors: the stream, how many blocks
 * fill the device (its multiprocessors), the ledger that counts each
 * launch (NULL: none), and the loss's sums. */
/* What the loss adds up on the device between two reads (cuda_loss_read). */
struct cuda_sums {
	double loss;            /* over the samples */
	long long correct;      /* argmax == label */
	int bad;                /* 1 + the first sample whose label is out of range; 0: none */
	int bad_label;          /* that label */
};

struct cuk_run {
	cudaStream_t stream;
	int sms;
	struct ops_ledger *ledger;
	struct cuda_sums *sums; /* on the device */
	/* while a step is captured for replay: the step's variables on the
	 * device (the last upload's), which the ops read instead of the values
	 * they are handed (lr, the loss scale, the step); NULL otherwise */
	const struct ops_step_vars *vars;
	/* CUDA_TICKETS counters on the device, zero between launches, by which
	 * the last block of a per-channel sum finishes it (cuk.cuh); NULL
	 * (AAH_CUDA_SUMS=apart): a finishing kernel is launched after it */
	unsigned *tickets;
	/* 1: a per-channel sum loads several of a thread's rows before it
	 * adds them (cuk.cuh rows_ahead); 0 (AAH_CUDA_AHEAD=0): one at a time */
	int ahead;
	/* 1: a convolution asked to add its input gradient into what is there
	 * does (cuDNN's beta of 1, ops_layer.add_dx0); 0 (AAH_CUDA_ADD_DX=0):
	 * none is asked, the model accumulates a second part itself */
	int add_dx;
	/* the 16-bit twins of parameters the backend keeps (ops_backend.twin);
	 * NULL (AAH_CUDA_TWIN=0): none, the ops convert the weights */
	struct cuda_twins *twins;
};

enum { CUDA_MAX_TWINS = 4 };

/* A twin: count values at host (inside a resident block) in type, at dev. */
struct cuda_twin_copy {
	const float *host;
	size_t count;
	void *dev;
	enum ops_dtype type;
};

struct cuda_twins {
	int n;
	struct cuda_twin_copy t[CUDA_MAX_TWINS];
};

enum { CUDA_TICKETS = 1024 };

/* The environment's switch name: 1 where unset, empty or `on`, 0 where
 * `off`, -1 (an error said) otherwise. */
static inline int cuda_env_switch(const char *name, const char *on, const char *off)
{
	const char *v = getenv(name);
	if (!v || !*v || !strcmp(v, on))
		return 1;
	if (!strcmp(v, off))
		return 0;
	return error("%s '%s': must be %s or %s", name, v, on, off);
}

/* AAH_CUDA_SUMS: "one" (the default): a per-channel sum is one launch;
 * "apart": its stripes and its finish two, the way before (both give the
 * same bits). */
static inline int cuda_sums_in_one(void)
{
	return cuda_env_switch("AAH_CUDA_SUMS", "one", "apart");
}

/* AAH_CUDA_AHEAD: "1" (the default): a per-channel sum loads several rows
 * a thread before adding them; "0": one at a time, the way before (both
 * give the same bits). */
static inline int cuda_ahead_wanted(void)
{
	return cuda_env_switch("AAH_CUDA_AHEAD", "1", "0");
}

/* AAH_CUDA_ADD_DX: "1" (the default): where a tensor feeds two layers, a
 * convolution adds its part of the tensor's gradient into the other's;
 * "0": it writes it apart and the model accumulates it, the way before. */
static inline int cuda_add_dx_wanted(void)
{
	return cuda_env_switch("AAH_CUDA_ADD_DX", "1", "0");
}

/* Whether a convolution's padding is uneven (pad_t != pad_b or pad_l !=
 * pad_r): cuDNN pads symmetrically, so its input goes through a zero frame
 * (cuda_pad) and its input gradient comes back out of one (cuda_crop). */
static inline int cuda_conv_framed(const struct ops_layer_cfg *c)
{
	return c->pad_t != c->pad_b || c->pad_l != c->pad_r;
}

/* AAH_CUDA_TWIN: "1" (the default): the backend keeps a 16-bit twin of the
 * parameters (ops_backend.twin); "0": none, a 16-bit convolution converts
 * its weights every pass, the way before. */
static inline int cuda_twin_wanted(void)
{
	return cuda_env_switch("AAH_CUDA_TWIN", "1", "0");
}

const struct cuk_run *cuda_run(struct ops_ctx *ctx);

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

static inline size_t cuda_bytes(size_t count, enum ops_dtype t)
{
	return count * ops_dtype_size(t);
}

/* ---- the kernel families' ops (cuda_<family>.cu) --------------------------------- */

extern const struct ops_layer_ops cuda_bn_ops;                 /* cuda_bn.cu */
extern const struct ops_layer_ops cuda_relu_ops, cuda_dropout_ops,
	cuda_add_ops;                                           /* cuda_eltwise.cu */
extern const struct ops_layer_ops cuda_maxpool_ops, cuda_avgpool_ops,
	cuda_gap_ops;                                           /* cuda_pool.cu */
extern const struct ops_layer_ops cuda_concat_ops, cuda_flatten_ops; /* cuda_reshape.cu */
/* cuda_train.cu: the op table's loss (its sums kept on the device until
 * cuda_loss_read), sgd, accumulate and unscale */
int cuda_loss(struct ops_ctx *ctx, int n, int classes, const float *logits, const int *labels,
	      float smoothing, float scale, float *dlogits, double *loss_sum, long *correct);
int cuda_loss_read(struct ops_ctx *ctx, double *loss_sum, long *correct);
int cuda_sgd(struct ops_ctx *ctx, size_t count, float *w, const float *g, float *v, float lr,
	     float mu, float wd);
int cuda_accumulate(struct ops_ctx *ctx, size_t count, enum ops_dtype t, void *y, const void *x);
int cuda_unscale(struct ops_ctx *ctx, size_t count, float *g, float inv, int *finite);
/* cuda_cast.cu: the op table's cast, and cuda_convert: y = count values
 * of x converted from xt to yt on the device's own pointers (one side
 * fp32, the other bf16 or fp16), queued without a wait */
int cuda_cast(struct ops_ctx *ctx, size_t count, const void *x, enum ops_dtype xt, void *y,
	      enum ops_dtype yt);
int cuda_convert(struct ops_ctx *ctx, size_t count, const void *x, enum ops_dtype xt, void *y,
		 enum ops_dtype yt);
/* What the cuDNN and cuBLASLt ops launch around the library, on device
 * pointers, queued (cuda_eltwise.cu, cuda_reshape.cu): y[r, ch] += b[ch]
 * over rows of c channels of type t; db[ch] = the sum over rows of
 * dy[r, ch], in a fixed order (the same bits every run), with
 * cuda_bias_grad_scratch(c) bytes of the op's scratch; pad: dst
 * (n, hp, wp, c) = zeros with src (n, h, w, c) at (pt, pl); crop: the
 * reverse. */
size_t cuda_bias_grad_scratch(int c);
int cuda_bias_add(struct ops_ctx *ctx, enum ops_dtype t, size_t rows, int c, const float *b,
		  void *y);
int cuda_bias_grad(struct ops_ctx *ctx, enum ops_dtype t, size_t rows, int c, const void *dy,
		   float *db);
int cuda_pad(struct ops_ctx *ctx, enum ops_dtype t, int n, int h, int w, int c, int hp, int wp,
	     int pt, int pl, const void *src, void *dst);
int cuda_crop(struct ops_ctx *ctx, enum ops_dtype t, int n, int h, int w, int c, int hp, int wp,
	      int pt, int pl, const void *src, void *dst);
/* dst = bytes at src, on the device, queued (flatten, dropout's identity) */
int cuda_copy(struct ops_ctx *ctx, size_t bytes, const void *src, void *dst);

/* The device address of bytes at p, which must lie in a resident block
 * (an error otherwise); each backend's. */
int cuda_resident_at(struct ops_ctx *ctx, const void *p, size_t bytes, void **dev);
/* cuda_cast.cu: the twins (cuk_run.twins). cuda_twin is the op table's
 * (ops_backend.twin); cuda_twin_at: the twin of count values at p and its
 * type in *t, NULL where none holds them all; cuda_twins_refresh: each
 * twin's values within bytes at p converted again (the host wrote them);
 * cuda_twins_drop: the twins of values within bytes at p freed (their
 * block forgotten; NULL p: all of them). */
int cuda_twin(struct ops_ctx *ctx, const float *p, size_t count, enum ops_dtype t);
void *cuda_twin_at(struct ops_ctx *ctx, const float *p, size_t count, enum ops_dtype *t);
int cuda_twins_refresh(struct ops_ctx *ctx, const void *p, size_t bytes);
void cuda_twins_drop(struct ops_ctx *ctx, const void *p, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif
