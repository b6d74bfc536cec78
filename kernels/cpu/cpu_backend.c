/* cpu_backend.c: the CPU op table (oneDNN + plain C) and its engine. */
#include <stdlib.h>
#include <string.h>
#include <xmmintrin.h> /* _mm_getcsr, _mm_setcsr */

#include "kernels/cpu/cpu.h"
#include "kernels/cpu/cpu_probe.h" /* cpu_probe_layout, cpu_probe_has */

static int cpu_init(struct ops_ctx *ctx)
{
	struct cpu_ctx *c = xcalloc(1, sizeof(*c));
	/* flush denormals to zero (FTZ | DAZ): decaying weights and momenta
	 * would otherwise hit the slow path; threads started later inherit it */
	_mm_setcsr(_mm_getcsr() | 0x8040);
	cpu_set_threads(ctx->threads);
	if (dnnl_engine_create(&c->eng, dnnl_cpu, 0) != dnnl_success) {
		free(c);
		return error("cannot create the oneDNN CPU engine");
	}
	if (dnnl_stream_create(&c->stream, c->eng, dnnl_stream_default_flags) != dnnl_success) {
		dnnl_engine_destroy(c->eng);
		free(c);
		return error("cannot create a oneDNN stream");
	}
	ctx->priv = c;
	ctx->blocked = cpu_probe_layout();
	return 0;
}

static void cpu_fini(struct ops_ctx *ctx)
{
	struct cpu_ctx *c = ctx->priv;
	if (!c)
		return;
	dnnl_stream_destroy(c->stream);
	dnnl_engine_destroy(c->eng);
	free(c->scratch);
	free(c);
	ctx->priv = NULL;
}

/* fp32 always; bf16 where the probe runs a jit bf16 convolution here:
 * convolutions then read bf16 activations and bf16 copies of the weights
 * (cpu_conv.c), and the model stores activations and their gradients in
 * bf16 wherever every op on a tensor takes it (ops_layer_ops.bf16: all but
 * dense, dropout and flatten); weights, their gradients, the
 * optimiser's state and batchnorm statistics stay fp32. Where the probe
 * finds no bf16 kernels, bf16 falls back to fp32 (1, the reason as the
 * last error). */
static int cpu_set_precision(struct ops_ctx *ctx, const char *precision)
{
	char why[256];
	ctx->conv_type = ctx->act_type = OPS_F32;
	cpu_ctx(ctx)->bf16_jit_only = 0;
	if (!strcmp(precision, "fp32"))
		return 0;
	if (strcmp(precision, "bf16"))
		return error("precision '%s' is not available on the CPU backend (fp32, bf16; "
			     "fp16 runs on cuda, and emulated on ref)", precision);
	if (!cpu_probe_has(CPU_FEAT_BF16_TRAIN, why, sizeof(why))) {
		int held = util_hold_errors(1);
		error("%s (%s, oneDNN ISA %s)", why, cpu_probe_model(), cpu_probe_isa());
		util_hold_errors(held);
		return 1;
	}
	ctx->conv_type = ctx->act_type = OPS_BF16;
	cpu_ctx(ctx)->bf16_jit_only = 1;
	return 0;
}

/* bf16 where oneDNN computes it with bf16 instructions (1.4x fp32's images/s
 * on a Zen 4 core, the quickstart's network); below them it emulates bf16,
 * at a third of fp32's speed on an AVX-512 core without BF16, and fp32 is
 * faster. set_precision still runs its trial kernel, and says so where
 * that fails. */
static const char *cpu_fast_precision(struct ops_ctx *ctx)
{
	char why[256];
	(void)ctx;
	return cpu_probe_has(CPU_FEAT_BF16_NATIVE, why, sizeof(why)) ? "bf16" : "fp32";
}

static const char *cpu_slow_path(struct ops_ctx *ctx)
{
	struct cpu_ctx *c = cpu_ctx(ctx);
	return c && c->slow[0] ? c->slow : NULL;
}

const struct ops_backend ops_cpu_backend = {
	.name = "cpu",
	.caps = OPS_CAP_FP32,
	.init = cpu_init,
	.fini = cpu_fini,
	.set_precision = cpu_set_precision,
	.fast_precision = cpu_fast_precision,
	.slow_path = cpu_slow_path,
	.layer = {
		[OPS_CONV2D] = &cpu_conv_ops,
		[OPS_BATCHNORM] = &cpu_bn_ops,
		[OPS_RELU] = &cpu_relu_ops,
		[OPS_MAXPOOL] = &cpu_maxpool_ops,
		[OPS_AVGPOOL] = &cpu_avgpool_ops,
		[OPS_GLOBAL_AVG_POOL] = &cpu_gap_ops,
		[OPS_DENSE] = &cpu_dense_ops,
		[OPS_DROPOUT] = &cpu_dropout_ops,
		[OPS_ADD] = &cpu_add_ops,
		[OPS_CONCAT] = &cpu_concat_ops,
		[OPS_FLATTEN] = &cpu_flatten_ops,
	},
	.loss = cpu_loss,
	.sgd = cpu_sgd,
	.accumulate = cpu_accumulate,
	.unscale = cpu_unscale,
};
