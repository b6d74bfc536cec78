/* cpu_backend.c: the CPU op table (oneDNN + plain C) and its engine. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <xmmintrin.h> /* _mm_getcsr, _mm_setcsr */

#include "kernels/cpu/cpu.h"

/* oneDNN on Debian runs on OpenMP (libgomp, loaded with libdnnl); the
 * thread count is set through it when the symbol is there. */
static void cpu_set_threads(int threads)
{
	void (*set)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads");
	if (set && threads > 0)
		set(threads);
}

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
	return 0;
}

static void cpu_fini(struct ops_ctx *ctx)
{
	struct cpu_ctx *c = ctx->priv;
	if (!c)
		return;
	dnnl_stream_destroy(c->stream);
	dnnl_engine_destroy(c->eng);
	free(c);
	ctx->priv = NULL;
}

/* Only fp32 for now. cpu_conv.c can run its convolutions in bf16 (ctx->bf16),
 * but on the development VM oneDNN 2.6 picks AMX kernels that die with
 * SIGILL and has no AVX512-BF16 kernel for NHWC (it falls back to its
 * reference code), so that path stays off until a machine can validate it. */
static int cpu_set_precision(struct ops_ctx *ctx, const char *precision)
{
	ctx->bf16 = 0;
	if (!strcmp(precision, "fp32"))
		return 0;
	return error("precision '%s' is not available on the CPU backend yet (use fp32)",
		     precision);
}

const struct ops_backend ops_cpu_backend = {
	.name = "cpu",
	.caps = OPS_CAP_FP32,
	.init = cpu_init,
	.fini = cpu_fini,
	.set_precision = cpu_set_precision,
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
};
