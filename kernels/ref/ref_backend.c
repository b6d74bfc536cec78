/* ref_backend.c: the `ref` op table (kernels/ref/ref.h) and its precision:
 * fp32, or bf16 and fp16 emulated the way the CPU and cuda backends
 * compute them. */
#include <string.h>

#include "kernels/ref/ref.h"
#include "util.h"

/* No engine, no threads, no state: every op works on what it is given. */
static int ref_init(struct ops_ctx *ctx)
{
	ctx->priv = NULL;
	return 0;
}

static void ref_fini(struct ops_ctx *ctx)
{
	(void)ctx;
}

/* bf16 and fp16 are emulated on any machine: conv2d rounds its input,
 * weights and output gradient to the type (ref_conv.c) and computes in
 * double from those, as the CPU and cuda backends feed bf16 or fp16 copies
 * to oneDNN or cuDNN and get fp32 results; every other op stays fp32, as
 * there. fp16's range is what the trainer's loss scale is for: a value
 * beyond 65504 rounds to inf here as on the GPU. */
int ref_set_precision(struct ops_ctx *ctx, const char *precision)
{
	static const struct { const char *name; enum ops_dtype type; } types[] = {
		{ "fp32", OPS_F32 }, { "bf16", OPS_BF16 }, { "fp16", OPS_F16 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(types); i++)
		if (!strcmp(precision, types[i].name)) {
			ctx->conv_type = types[i].type;
			return 0;
		}
	return error("precision '%s' is not available on the ref backend (fp32, bf16, fp16)",
		     precision);
}

float ref_bf16_round(float v)
{
	return ref_bf16_to_f32(ref_f32_to_bf16(v));
}

float ref_f16_round(float v)
{
	return ref_f16_to_f32(ref_f32_to_f16(v));
}

const struct ops_backend ops_ref_backend = {
	.name = "ref",
	.caps = OPS_CAP_FP32 | OPS_CAP_BF16 | OPS_CAP_FP16, /* emulated: ref_set_precision */
	.init = ref_init,
	.fini = ref_fini,
	.set_precision = ref_set_precision,
	.layer = {
		[OPS_CONV2D] = &ref_conv_ops,
		[OPS_BATCHNORM] = &ref_bn_ops,
		[OPS_RELU] = &ref_relu_ops,
		[OPS_MAXPOOL] = &ref_maxpool_ops,
		[OPS_AVGPOOL] = &ref_avgpool_ops,
		[OPS_GLOBAL_AVG_POOL] = &ref_gap_ops,
		[OPS_DENSE] = &ref_dense_ops,
		[OPS_DROPOUT] = &ref_dropout_ops,
		[OPS_ADD] = &ref_add_ops,
		[OPS_CONCAT] = &ref_concat_ops,
		[OPS_FLATTEN] = &ref_flatten_ops,
	},
	.loss = ref_loss,
	.sgd = ref_sgd,
	.accumulate = ref_accumulate,
	.unscale = ref_unscale,
	.cast = ref_cast,
};
