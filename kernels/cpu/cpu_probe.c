/* cpu_probe.c: what this CPU and oneDNN give the CPU backend, asked of
 * oneDNN itself (which kernel it would dispatch to), never guessed from
 * CPUID flags alone. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernels/cpu/cpu.h"
#include "kernels/cpu/cpu_probe.h"

int cpu_probe_cap(dnnl_cpu_isa_t isa)
{
	const char *env[] = {"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"};
	for (size_t i = 0; i < ARRAY_SIZE(env); i++)
		if (getenv(env[i]) && *getenv(env[i]))
			return 0;
	if (dnnl_set_max_cpu_isa(isa) != dnnl_success)
		return error("oneDNN refuses an ISA cap once it has dispatched a kernel");
	return 0;
}

const char *cpu_probe_model(void)
{
	static char model[128];
	if (model[0])
		return model;
	snprintf(model, sizeof(model), "unknown CPU");
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return model;
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');
		if (strncmp(line, "model name", 10) || !colon)
			continue;
		colon += 1 + strspn(colon + 1, " \t");
		colon[strcspn(colon, "\n")] = 0;
		snprintf(model, sizeof(model), "%s", colon);
		break;
	}
	fclose(f);
	return model;
}

const char *cpu_probe_isa(void)
{
	static const struct {
		dnnl_cpu_isa_t isa;
		const char *name;
	} names[] = {
		{dnnl_cpu_isa_sse41, "sse41"},
		{dnnl_cpu_isa_avx, "avx"},
		{dnnl_cpu_isa_avx2, "avx2"},
		{dnnl_cpu_isa_avx2_vnni, "avx2_vnni"},
		{dnnl_cpu_isa_avx512_mic, "avx512_mic"},
		{dnnl_cpu_isa_avx512_mic_4ops, "avx512_mic_4ops"},
		{dnnl_cpu_isa_avx512_core, "avx512_core"},
		{dnnl_cpu_isa_avx512_core_vnni, "avx512_core_vnni"},
		{dnnl_cpu_isa_avx512_core_bf16, "avx512_core_bf16"},
		{dnnl_cpu_isa_avx512_core_amx, "avx512_core_amx"},
	};
	dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (names[i].isa == isa)
			return names[i].name;
	return "no vector ISA";
}

/* A primitive descriptor's kernel is one of oneDNN's reference ones
 * ("ref:any", "bnorm_ref:any", "gemm:ref", ...). */
int cpu_impl_is_ref(const char *impl)
{
	return strstr(impl, "ref") != NULL;
}

/* Whether oneDNN has a jit kernel for op descriptor desc (hint: the
 * forward's descriptor of a backward op). */
static int fast_desc(dnnl_engine_t eng, const void *desc, const_dnnl_primitive_desc_t hint)
{
	dnnl_primitive_desc_t pd;
	const char *impl = "ref";
	if (dnnl_primitive_desc_create(&pd, desc, NULL, eng, hint) != dnnl_success)
		return 0;
	dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
	int fast = !cpu_impl_is_ref(impl);
	dnnl_primitive_desc_destroy(pd);
	return fast;
}

/* Batch normalisation (training, both directions, with the fused relu the
 * model uses), average pooling and the rectifier on layout `tag`: the ops
 * the model hands blocked tensors besides the convolutions (which pick
 * their own layouts) and max pooling (plain C). */
static int layout_is_fast(dnnl_engine_t eng, dnnl_format_tag_t tag)
{
	dnnl_memory_desc_t md, pooled;
	dnnl_dims_t d = {2, 32, 8, 8}, dp = {2, 32, 4, 4};
	dnnl_dims_t two = {2, 2}, zero = {0, 0};
	dnnl_batch_normalization_desc_t bf, bb;
	dnnl_pooling_desc_t pf;
	dnnl_eltwise_desc_t ef;
	dnnl_primitive_desc_t hint;
	unsigned flags = dnnl_use_scale | dnnl_use_shift | dnnl_fuse_norm_relu;
	if (dnnl_memory_desc_init_by_tag(&md, 4, d, dnnl_f32, tag) ||
	    dnnl_memory_desc_init_by_tag(&pooled, 4, dp, dnnl_f32, tag) ||
	    dnnl_batch_normalization_forward_desc_init(&bf, dnnl_forward_training, &md, 1e-3f, flags) ||
	    dnnl_batch_normalization_backward_desc_init(&bb, dnnl_backward, &md, &md, 1e-3f, flags) ||
	    dnnl_pooling_forward_desc_init(&pf, dnnl_forward_training,
					   dnnl_pooling_avg_exclude_padding, &md, &pooled, two, two,
					   zero, zero) ||
	    dnnl_eltwise_forward_desc_init(&ef, dnnl_forward_training, dnnl_eltwise_relu, &md, 0, 0))
		return 0;
	if (!fast_desc(eng, &bf, NULL) ||
	    dnnl_primitive_desc_create(&hint, &bf, NULL, eng, NULL) != dnnl_success)
		return 0;
	int fast = fast_desc(eng, &bb, hint) && fast_desc(eng, &pf, NULL) && fast_desc(eng, &ef, NULL);
	dnnl_primitive_desc_destroy(hint);
	return fast;
}

enum ops_layout cpu_probe_layout(void)
{
	static const struct {
		enum ops_layout layout;
		dnnl_format_tag_t tag;
	} widest_first[] = {{OPS_BLOCKED16, dnnl_nChw16c}, {OPS_BLOCKED8, dnnl_nChw8c}};
	dnnl_engine_t eng;
	enum ops_layout layout = OPS_NHWC;
	if (dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success)
		return OPS_NHWC;
	for (size_t i = 0; i < ARRAY_SIZE(widest_first) && layout == OPS_NHWC; i++)
		if (layout_is_fast(eng, widest_first[i].tag))
			layout = widest_first[i].layout;
	dnnl_engine_destroy(eng);
	return layout;
}

/* A 3x3 convolution of a 4x16x8x8 batch: src and weights in type t with
 * layouts of oneDNN's choice (a kernel exists for these, not a layout). */
static int small_conv(dnnl_convolution_desc_t *cd, dnnl_data_type_t t, dnnl_alg_kind_t alg)
{
	dnnl_memory_desc_t src, w, dst;
	dnnl_dims_t sd = {4, 16, 8, 8}, wd = {16, 16, 3, 3}, strides = {1, 1}, pad = {1, 1};
	if (dnnl_memory_desc_init_by_tag(&src, 4, sd, t, dnnl_format_tag_any) ||
	    dnnl_memory_desc_init_by_tag(&w, 4, wd, t, dnnl_format_tag_any) ||
	    dnnl_memory_desc_init_by_tag(&dst, 4, sd, dnnl_f32, dnnl_format_tag_any) ||
	    dnnl_convolution_forward_desc_init(cd, dnnl_forward_training, alg, &src, &w, NULL, &dst,
					       strides, pad, pad))
		return -1;
	return 0;
}

/* Builds and runs the convolution cd once in a child process, on one
 * thread: 0 when it ran, else -1 and why. The child builds its own
 * primitive: one built here would fork with this process's OpenMP pool in
 * its thread count, and a forked pool hangs. */
static int run_in_child(const dnnl_convolution_desc_t *cd, const char *impl, char *why,
			size_t len)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		dnnl_engine_t eng;
		dnnl_stream_t stream;
		dnnl_primitive_desc_t pd;
		dnnl_primitive_t prim;
		dnnl_memory_t m[3];
		const dnnl_query_t q[3] = {dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md};
		struct rlimit nocore = {0, 0};
		setrlimit(RLIMIT_CORE, &nocore); /* a SIGILL here is an answer, not a crash */
		cpu_set_threads(1);
		alarm(60);
		if (dnnl_engine_create(&eng, dnnl_cpu, 0) ||
		    dnnl_stream_create(&stream, eng, dnnl_stream_default_flags) ||
		    dnnl_primitive_desc_create(&pd, cd, NULL, eng, NULL) ||
		    dnnl_primitive_create(&prim, pd))
			_exit(2);
		for (int i = 0; i < 3; i++)
			if (dnnl_memory_create(&m[i], dnnl_primitive_desc_query_md(pd, q[i], 0), eng,
					       DNNL_MEMORY_ALLOCATE))
				_exit(2);
		dnnl_exec_arg_t args[] = {
			{DNNL_ARG_SRC, m[0]}, {DNNL_ARG_WEIGHTS, m[1]}, {DNNL_ARG_DST, m[2]},
		};
		_exit(dnnl_primitive_execute(prim, stream, 3, args) || dnnl_stream_wait(stream) ? 2 : 0);
	}
	int status = 0;
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		snprintf(why, len, "cannot start a process to try the bf16 kernel");
		return -1;
	}
	if (WIFSIGNALED(status)) {
		snprintf(why, len, "oneDNN's bf16 convolution (%s) dies with %s on this machine "
			 "(a hypervisor that hides AMX or AVX512-BF16 state?)", impl,
			 strsignal(WTERMSIG(status)));
		return -1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		snprintf(why, len, "oneDNN's bf16 convolution (%s) failed on this machine", impl);
		return -1;
	}
	return 0;
}

static int bf16_conv(dnnl_engine_t eng, int train, char *why, size_t len)
{
	dnnl_convolution_desc_t cd;
	dnnl_primitive_desc_t pd;
	const char *impl = "?";
	char name[64];
	if (small_conv(&cd, dnnl_bf16, dnnl_convolution_direct) ||
	    dnnl_primitive_desc_create(&pd, &cd, NULL, eng, NULL) != dnnl_success) {
		snprintf(why, len, "oneDNN has no bf16 convolution on this CPU");
		return 0;
	}
	dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
	snprintf(name, sizeof(name), "%s", impl); /* impl points into pd */
	int ok = 1;
	if (train && cpu_impl_is_ref(name)) {
		snprintf(why, len, "oneDNN has only its reference bf16 convolution on this CPU");
		ok = 0;
	} else if (train) {
		ok = !run_in_child(&cd, name, why, len);
	}
	dnnl_primitive_desc_destroy(pd);
	return ok;
}

int cpu_probe_has(enum cpu_feature f, char *why, size_t len)
{
	dnnl_engine_t eng;
	dnnl_convolution_desc_t cd;
	int has = 0;
	if (f == CPU_FEAT_AVX512 || f == CPU_FEAT_BF16_NATIVE) {
		/* oneDNN's ISAs are nested bit sets: one includes those below it */
		dnnl_cpu_isa_t isa = f == CPU_FEAT_AVX512 ? dnnl_cpu_isa_avx512_core
							  : dnnl_cpu_isa_avx512_core_bf16;
		has = (dnnl_get_effective_cpu_isa() & isa) == isa;
		if (!has && f == CPU_FEAT_AVX512)
			snprintf(why, len, "oneDNN dispatches to no AVX-512 here");
		else if (!has)
			snprintf(why, len, "oneDNN dispatches to %s here, without bf16 instructions",
				 cpu_probe_isa());
		return has;
	}
	if (dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success) {
		snprintf(why, len, "cannot create the oneDNN CPU engine");
		return 0;
	}
	switch (f) {
	case CPU_FEAT_BF16_CONV:
	case CPU_FEAT_BF16_TRAIN:
		has = bf16_conv(eng, f == CPU_FEAT_BF16_TRAIN, why, len);
		break;
	case CPU_FEAT_WINOGRAD:
		has = !small_conv(&cd, dnnl_f32, dnnl_convolution_winograd) &&
		      fast_desc(eng, &cd, NULL);
		if (!has)
			snprintf(why, len, "oneDNN has no Winograd convolution on this CPU");
		break;
	case CPU_FEAT_AVX512:
	case CPU_FEAT_BF16_NATIVE:
		break;
	}
	dnnl_engine_destroy(eng);
	return has;
}

int cpu_probe_skip(enum cpu_feature f, char *buf, size_t len)
{
	char why[256];
	if (cpu_probe_has(f, why, sizeof(why)))
		return 0;
	snprintf(buf, len, "skipped: %s (%s, oneDNN ISA %s)", why, cpu_probe_model(),
		 cpu_probe_isa());
	return 1;
}
