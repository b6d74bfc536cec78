/* ref.h: private to kernels/ref: the reference ops, plain C written to be
 * read, one loop nest per formula, sums in double. They are the definition
 * every other backend (kernels/cpu, kernels/cuda) is tested against
 * (tests/unit/test_kernels_ref.c), and the `ref` compute backend
 * (`aah-trial --backend ref`: slow, single-threaded).
 *
 * Activations are NHWC, batch first (kernels/ops.h): element (i, y, x, ch)
 * of an (n, H, W, C) tensor is at ((i*H + y)*W + x)*C + ch. */
#ifndef AAH_KERNELS_REF_H
#define AAH_KERNELS_REF_H

#include "kernels/ops.h"

#ifdef __cplusplus
extern "C" { /* the cuda host harness's conversions (kernels/cuda/cuk_host.h) */
#endif

/* Offset of element (i, y, x, ch) of a batch of tensors of shape s. */
static inline size_t ref_at(const struct ops_shape *s, int i, int y, int x, int ch)
{
	return (((size_t)i * s->h + y) * s->w + x) * s->c + ch;
}

/* The value bf16 stores for v: fp32 rounded to 8 significant bits, to
 * nearest, ties to even (what oneDNN's and CUDA's conversions do). */
float ref_bf16_round(float v);
/* The value fp16 stores for v: 11 significant bits, inf from 65520 up,
 * subnormals down to 2^-24 (ref_f32_to_f16 below). */
float ref_f16_round(float v);
/* The casts that define the `cast` op (ref_cast.c). fp32 -> 16 bits rounds
 * to nearest, ties to even; a NaN gives a quiet NaN with the same sign and
 * the top payload bits; fp16 overflows to inf (from 65520 up) and keeps
 * subnormals (down to 2^-24; 2^-25 and below round to zero). The way back
 * to fp32 is exact. */
uint16_t ref_f32_to_bf16(float v);
float ref_bf16_to_f32(uint16_t h);
uint16_t ref_f32_to_f16(float v);
float ref_f16_to_f32(uint16_t h);
int ref_cast(struct ops_ctx *ctx, size_t count, const void *x, enum ops_dtype xt, void *y,
	     enum ops_dtype yt);

/* The ref op table (ref_backend.c): refdev (ref_device.c) runs its ops. */
extern const struct ops_backend ops_ref_backend;
/* fp32, or bf16 / fp16 emulated: ref's precision, and refdev's. */
int ref_set_precision(struct ops_ctx *ctx, const char *precision);

/* Ops defined in the per-family files. */
extern const struct ops_layer_ops ref_conv_ops;                 /* ref_conv.c */
extern const struct ops_layer_ops ref_dense_ops;                /* ref_dense.c */
extern const struct ops_layer_ops ref_bn_ops;                   /* ref_bn.c */
extern const struct ops_layer_ops ref_maxpool_ops, ref_avgpool_ops,
	ref_gap_ops;                                            /* ref_pool.c */
extern const struct ops_layer_ops ref_relu_ops, ref_dropout_ops,
	ref_add_ops;                                            /* ref_eltwise.c */
extern const struct ops_layer_ops ref_concat_ops, ref_flatten_ops; /* ref_reshape.c */
int ref_loss(struct ops_ctx *ctx, int n, int classes, const float *logits, const int *labels,
	     float smoothing, float scale, float *dlogits, double *loss_sum,
	     long *correct); /* ref_train.c */
int ref_sgd(struct ops_ctx *ctx, size_t count, float *w, const float *g, float *v, float lr,
	    float mu, float wd);
int ref_accumulate(struct ops_ctx *ctx, size_t count, enum ops_dtype t, void *y, const void *x);
int ref_unscale(struct ops_ctx *ctx, size_t count, float *g, float inv, int *finite);

#ifdef __cplusplus
}
#endif

#endif
