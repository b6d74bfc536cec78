/* cpu_backend.c: the CPU op table (oneDNN + plain C) and its engine. */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
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

/* Can this machine run oneDNN's bf16 convolutions? oneDNN picks its kernel
 * from CPUID, and a CPU can report AMX or AVX512-BF16 that its hypervisor
 * does not let run (the development VM reports AMX; the kernels die with
 * SIGILL), or oneDNN may have only its reference kernel for them (hundreds of
 * times slower). So a small bf16 convolution runs once in a child process
 * first. Returns 0, or -1 with the reason in why. */
static int bf16_probe(struct ops_ctx *ctx, char *why, size_t len)
{
	dnnl_memory_desc_t src, w, dst;
	dnnl_dims_t sd = {4, 16, 8, 8}, wd = {16, 16, 3, 3}, strides = {1, 1}, pad = {1, 1};
	dnnl_convolution_desc_t cd;
	dnnl_primitive_desc_t pd = NULL;
	const char *impl = "?";
	char name[64];
	if (dnnl_memory_desc_init_by_tag(&src, 4, sd, dnnl_bf16, dnnl_format_tag_any) ||
	    dnnl_memory_desc_init_by_tag(&w, 4, wd, dnnl_bf16, dnnl_format_tag_any) ||
	    dnnl_memory_desc_init_by_tag(&dst, 4, sd, dnnl_f32, dnnl_nhwc) ||
	    dnnl_convolution_forward_desc_init(&cd, dnnl_forward_training, dnnl_convolution_direct,
					       &src, &w, NULL, &dst, strides, pad, pad) ||
	    dnnl_primitive_desc_create(&pd, &cd, NULL, cpu_ctx(ctx)->eng, NULL)) {
		snprintf(why, len, "oneDNN has no bf16 convolution on this CPU");
		return -1;
	}
	dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
	snprintf(name, sizeof(name), "%s", impl); /* impl points into pd */
	if (strstr(name, "ref")) {
		dnnl_primitive_desc_destroy(pd);
		snprintf(why, len, "oneDNN has only its reference bf16 convolution on this CPU");
		return -1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) { /* one thread, no pool: run the kernel once and report */
		dnnl_primitive_t prim;
		dnnl_memory_t m[3];
		const dnnl_query_t q[3] = {dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md};
		struct rlimit nocore = {0, 0};
		setrlimit(RLIMIT_CORE, &nocore); /* a SIGILL here is an answer, not a crash */
		cpu_set_threads(1);
		alarm(60);
		if (dnnl_primitive_create(&prim, pd))
			_exit(2);
		for (int i = 0; i < 3; i++)
			if (dnnl_memory_create(&m[i], dnnl_primitive_desc_query_md(pd, q[i], 0),
					       cpu_ctx(ctx)->eng, DNNL_MEMORY_ALLOCATE))
				_exit(2);
		dnnl_exec_arg_t args[] = {
			{DNNL_ARG_SRC, m[0]}, {DNNL_ARG_WEIGHTS, m[1]}, {DNNL_ARG_DST, m[2]},
		};
		_exit(dnnl_primitive_execute(prim, cpu_ctx(ctx)->stream, 3, args) ||
		      dnnl_stream_wait(cpu_ctx(ctx)->stream) ? 2 : 0);
	}
	dnnl_primitive_desc_destroy(pd);
	int status = 0;
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		snprintf(why, len, "cannot start a process to try the bf16 kernel");
		return -1;
	}
	if (WIFSIGNALED(status)) {
		snprintf(why, len, "oneDNN's bf16 convolution (%s) dies with %s on this machine "
			 "(a hypervisor that hides AMX or AVX512-BF16 state?)", name,
			 strsignal(WTERMSIG(status)));
		return -1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		snprintf(why, len, "oneDNN's bf16 convolution (%s) failed on this machine", name);
		return -1;
	}
	return 0;
}

/* fp32 always; bf16 where the probe above runs a bf16 kernel: convolutions
 * then read bf16 copies of activations and weights (cpu_conv.c) and every
 * other op stays fp32. */
static int cpu_set_precision(struct ops_ctx *ctx, const char *precision)
{
	char why[256];
	ctx->conv_type = OPS_F32;
	if (!strcmp(precision, "fp32"))
		return 0;
	if (strcmp(precision, "bf16"))
		return error("precision '%s' is not available on the CPU backend (fp32, bf16; "
			     "fp16 runs on cuda, and emulated on ref)", precision);
	if (bf16_probe(ctx, why, sizeof(why)))
		return error("precision 'bf16' is not available here: %s; use fp32", why);
	ctx->conv_type = OPS_BF16;
	return 0;
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
	.unscale = cpu_unscale,
};
