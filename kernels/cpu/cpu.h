/* cpu.h: private to kernels/cpu: the oneDNN engine and helpers shared by the
 * CPU ops (memory descriptors, weight-format conversion, checked calls). */
#ifndef AAH_KERNELS_CPU_H
#define AAH_KERNELS_CPU_H

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h> /* dnnl_status2str */

#include "kernels/ops.h"
#include "util.h"

struct cpu_ctx {
	dnnl_engine_t eng;
	dnnl_stream_t stream;
	/* the first primitive built on one of oneDNN's reference kernels,
	 * "batch_normalization (bnorm_ref:any)"; empty while there is none */
	char slow[160];
	/* set by the trainer's bf16 (set_precision): a convolution whose bf16
	 * kernel would be a reference one runs in fp32 instead (cpu_conv.c) */
	int bf16_jit_only;
	/* memory the ops need only while one runs (a convolution's operands
	 * in its primitives' type and layout, oneDNN's scratchpad), shared by
	 * all of them and grown to the largest request (cpu_scratch) */
	void *scratch;
	size_t scratch_size;
};

#define DNNL_CHECK(call)                                                        \
	do {                                                                    \
		dnnl_status_t st_ = (call);                                     \
		if (st_ != dnnl_success)                                        \
			return error("%s:%d: %s: %s", __FILE__, __LINE__, #call, \
				     dnnl_status2str(st_));                     \
	} while (0)

static inline struct cpu_ctx *cpu_ctx(struct ops_ctx *ctx)
{
	return ctx->priv;
}

/* At least bytes of the scratch the ops share: its contents do not outlive
 * the op that asked for it, as the next op may use the same bytes, and it
 * moves when a larger request grows it. Owned by ctx (freed by fini). */
void *cpu_scratch(struct ops_ctx *ctx, size_t bytes);
/* Bytes a buffer of the scratch takes, its start kept at a cache line
 * (cpu_xfer_init_scratch's offsets; an op's workspace counts them so). */
#define CPU_SCRATCH_ALIGN 64
static inline size_t cpu_scratch_bytes(size_t bytes)
{
	return (bytes + CPU_SCRATCH_ALIGN - 1) / CPU_SCRATCH_ALIGN * CPU_SCRATCH_ALIGN;
}

/* oneDNN's thread count (OpenMP's, where libgomp is loaded); 0: as is. */
void cpu_set_threads(int threads);

/* oneDNN's name of an element type. */
static inline dnnl_data_type_t cpu_dt(enum ops_dtype t)
{
	return t == OPS_BF16 ? dnnl_bf16 : t == OPS_F16 ? dnnl_f16 : dnnl_f32;
}

/* (n, h, w, c) activation in NHWC: a 4-D descriptor in dnnl's NCHW order. */
int cpu_md_nhwc(dnnl_memory_desc_t *md, int n, const struct ops_shape *s);
/* The same in any layout (BLOCKED8: nChw8c, BLOCKED16: nChw16c) and type. */
int cpu_md_act(dnnl_memory_desc_t *md, int n, const struct ops_shape *s, enum ops_layout layout,
	       enum ops_dtype t);
/* (n, c) rank-2 descriptor, c = h*w*c of the shape. */
int cpu_md_nc(dnnl_memory_desc_t *md, int n, const struct ops_shape *s);
int cpu_md_1d(dnnl_memory_desc_t *md, int len);

/* A memory whose data handle is set before each execution. */
int cpu_mem(struct ops_ctx *ctx, dnnl_memory_t *m, const dnnl_memory_desc_t *md);
int cpu_set(dnnl_memory_t m, const void *ptr);

/* A conversion between a user layout and a primitive's chosen layout. When
 * they match, `prim` is NULL and `inner` is the user memory itself. */
struct cpu_xfer {
	dnnl_memory_t user;     /* handle set by the caller */
	dnnl_memory_t inner;    /* the primitive's layout: its own buffer, or
				 * the scratch's (in_scratch) */
	dnnl_primitive_t prim;  /* reorder user->inner (to_inner) or back */
	int to_inner;
	int in_scratch;         /* inner is the backend's scratch at byte off */
	size_t off;
};
int cpu_xfer_init(struct ops_ctx *ctx, struct cpu_xfer *x, const dnnl_memory_desc_t *user,
		  const dnnl_memory_desc_t *inner, int to_inner);
/* The same, with an inner buffer of its own only while the op runs: bytes
 * *off of cpu_scratch, *off advanced past it (aligned). The op asks
 * cpu_scratch for all its *off before the first cpu_xfer_run. */
int cpu_xfer_init_scratch(struct ops_ctx *ctx, struct cpu_xfer *x, const dnnl_memory_desc_t *user,
			  const dnnl_memory_desc_t *inner, int to_inner, size_t *off);
/* Sets the user handle to ptr (and a scratch inner's to its bytes); an
 * inward conversion also runs its reorder now, an outward one runs it in
 * cpu_xfer_flush after the primitive. */
int cpu_xfer_run(struct ops_ctx *ctx, struct cpu_xfer *x, const void *ptr);
int cpu_xfer_flush(struct ops_ctx *ctx, struct cpu_xfer *x);
void cpu_xfer_release(struct cpu_xfer *x);

/* A layer's weights (conv2d, dense) in the layouts of its three passes,
 * each in cpu_scratch while a pass runs: read by the forward (fwd) and the
 * backward data pass (bwd); the weight gradient (grad) written by the
 * backward weights pass and flushed back to the user's layout. */
struct cpu_weights {
	struct cpu_xfer fwd, bwd, grad;
};
/* user: the model's layout of the weights; fwd, bwd_d, bwd_w: the passes'
 * primitive descriptors; *off as cpu_xfer_init_scratch's. */
int cpu_weights_init(struct ops_ctx *ctx, struct cpu_weights *w, const dnnl_memory_desc_t *user,
		     const_dnnl_primitive_desc_t fwd, const_dnnl_primitive_desc_t bwd_d,
		     const_dnnl_primitive_desc_t bwd_w, size_t *off);
void cpu_weights_release(struct cpu_weights *w);

/* attr NULL: oneDNN's defaults (its own scratchpad, library-managed). */
int cpu_pd_create(struct ops_ctx *ctx, dnnl_primitive_desc_t *pd, const void *desc,
		  const_dnnl_primitive_attr_t attr, const_dnnl_primitive_desc_t hint);
/* Also notes in ctx's slow[] the first one that runs a reference kernel. */
int cpu_prim_create(struct ops_ctx *ctx, dnnl_primitive_t *p, const_dnnl_primitive_desc_t pd);
/* Whether an implementation name is one of oneDNN's reference kernels
 * ("ref:any", "bnorm_ref:any"): correct, and tens of times slower. */
int cpu_impl_is_ref(const char *impl);
int cpu_exec(struct ops_ctx *ctx, dnnl_primitive_t p, int nargs, const dnnl_exec_arg_t *args);
void cpu_mem_free(dnnl_memory_t *m);
void cpu_prim_free(dnnl_primitive_t *p);
void cpu_pd_free(dnnl_primitive_desc_t *pd);

/* The algorithm a conv2d layer's current plan uses ("winograd", "direct"),
 * NULL before its first call. */
const char *cpu_conv_algo(const struct ops_layer *l);

/* Ops defined in the per-type files. */
extern const struct ops_layer_ops cpu_conv_ops, cpu_bn_ops, cpu_relu_ops, cpu_maxpool_ops,
	cpu_avgpool_ops, cpu_gap_ops, cpu_dense_ops;    /* oneDNN */
extern const struct ops_layer_ops cpu_dropout_ops, cpu_add_ops, cpu_concat_ops,
	cpu_flatten_ops;                                /* cpu_plain.c */
/* The oneDNN pooling and relu ops' passes (cpu_pool.c), for max pooling
 * over bf16 tensors too: l->priv is theirs. */
int cpu_pool_forward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
		     float *y, int train);
int cpu_pool_backward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
		      const float *y, const float *dy, float *const *dx);
void cpu_pool_release(struct ops_ctx *ctx, struct ops_layer *l);
int cpu_loss(struct ops_ctx *ctx, int n, int classes, const float *logits, const int *labels,
	     float smoothing, float scale, float *dlogits, double *loss_sum, long *correct);
int cpu_sgd(struct ops_ctx *ctx, size_t count, float *w, const float *g, float *v, float lr,
	    float mu, float wd);
int cpu_accumulate(struct ops_ctx *ctx, size_t count, enum ops_dtype t, void *y, const void *x);
int cpu_unscale(struct ops_ctx *ctx, size_t count, float *g, float inv, int *finite);
/* Over count values of type t, on oneDNN's threads (the primitives come
 * from oneDNN's primitive cache after the first call): dst = a + b, or
 * relu(a + b); dst = src; dx = dy where y > 0 (y a relu output). */
int cpu_flat_add(struct ops_ctx *ctx, size_t count, enum ops_dtype t, void *dst, const void *a,
		 const void *b, int relu);
int cpu_flat_copy(struct ops_ctx *ctx, size_t count, enum ops_dtype t, void *dst, const void *src);
int cpu_relu_backward_dst(struct ops_ctx *ctx, size_t count, enum ops_dtype t, void *dx,
			  const void *dy, const void *y);

#endif
