/* ref_backend.c: the `ref` op table (kernels/ref/ref.h) and its precision:
 * fp32, or bf16 emulated the way the CPU backend computes it. */
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

/* bf16 is emulated on any machine: conv2d rounds its input, weights and
 * output gradient to bf16 (ref_conv.c) and computes in double from those,
 * as the CPU backend feeds bf16 copies to oneDNN and gets fp32 results;
 * every other op stays fp32, as there. */
static int ref_set_precision(struct ops_ctx *ctx, const char *precision)
{
	if (!strcmp(precision, "fp32") || !strcmp(precision, "bf16")) {
		ctx->bf16 = !strcmp(precision, "bf16");
		return 0;
	}
	return error("precision '%s' is not available on the ref backend (fp32, bf16)", precision);
}

float ref_bf16_round(float v)
{
	return ref_bf16_to_f32(ref_f32_to_bf16(v));
}

const struct ops_backend ops_ref_backend = {
	.name = "ref",
	.caps = OPS_CAP_FP32 | OPS_CAP_BF16,   /* bf16: emulated, see ref_set_precision */
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
	.cast = ref_cast,
};
