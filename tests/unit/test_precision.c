/* Unit tests for `--precision auto`: which precision each backend picks
 * (kernels/ops.c). The GPU rule is a function of the compute capability,
 * tested here without a GPU; the cuda backend's own pick needs a device
 * ("skipped: no CUDA device ..." without one). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#ifdef AAH_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda_ctx.h" /* cuda_conv_math */
#endif

#include "cuda_skip.h"
#include "kernels/cpu/cpu_probe.h" /* cpu_probe_has, cpu_probe_isa */
#include "kernels/ops.h"
#include "util.h"

Test(precision, gpus_from_ampere_on_default_to_bf16)
{
	cr_assert_str_eq(ops_gpu_precision(6), "fp32");    /* Pascal */
	cr_assert_str_eq(ops_gpu_precision(7), "fp32");    /* Volta, Turing: no bf16 */
	cr_assert_str_eq(ops_gpu_precision(8), "bf16");    /* Ampere, Ada */
	cr_assert_str_eq(ops_gpu_precision(9), "bf16");    /* Hopper */
	cr_assert_str_eq(ops_gpu_precision(10), "bf16");   /* Blackwell */
	cr_assert_str_eq(ops_gpu_precision(-1), "fp32");   /* could not ask */
}

Test(precision, cpu_and_ref_default_to_fp32)
{
	static const char *const names[] = { "cpu", "ref" };
	for (int i = 0; i < 2; i++) {
		struct ops_ctx ctx;
		cr_assert_eq(ops_ctx_init(&ctx, names[i], 1, 1), 0, "%s", util_last_error());
		cr_assert_str_eq(ops_precision_auto(&ctx), "fp32", "%s", names[i]);
		cr_assert_eq(ctx.be->set_precision(&ctx, ops_precision_auto(&ctx)), 0);
		cr_assert_eq(ctx.conv_type, OPS_F32);
		ops_ctx_release(&ctx);
	}
}

/* fast: bf16 where the CPU computes it with its own instructions (oneDNN's
 * ISA avx512_core_bf16 or AMX), fp32 where oneDNN would emulate it and on
 * ref; a precision named is passed through. Capping oneDNN's ISA
 * (ONEDNN_MAX_CPU_ISA) takes this machine to the other side. */
Test(precision, fast_is_bf16_only_where_the_cpu_has_bf16_instructions)
{
	char why[256];
	struct ops_ctx ctx;
	cr_assert_eq(ops_ctx_init(&ctx, "cpu", 1, 1), 0, "%s", util_last_error());
	int native = cpu_probe_has(CPU_FEAT_BF16_NATIVE, why, sizeof(why));
	const char *isa = cpu_probe_isa();
	cr_assert_eq(native, !strcmp(isa, "avx512_core_bf16") || !strcmp(isa, "avx512_core_amx"),
		     "%s", isa);
	if (!native)
		cr_assert(strstr(why, isa) && strstr(why, "without bf16 instructions"), "%s", why);
	cr_log_info("oneDNN ISA %s: fast is %s", isa, ops_precision_pick(&ctx, "fast"));
	cr_assert_str_eq(ops_precision_pick(&ctx, "fast"), native ? "bf16" : "fp32");
	cr_assert_str_eq(ops_precision_pick(&ctx, "auto"), "fp32");
	cr_assert_str_eq(ops_precision_pick(&ctx, "bf16"), "bf16");
	/* bf16 asked for where fast would not pick it: the trainer warns */
	cr_assert_eq(ops_precision_emulated(&ctx, "bf16"), !native);
	cr_assert_eq(ops_precision_emulated(&ctx, "fp32"), 0);
	ops_ctx_release(&ctx);
	/* ref emulates everything alike and has no fast pick: no warning */
	cr_assert_eq(ops_ctx_init(&ctx, "ref", 1, 1), 0, "%s", util_last_error());
	cr_assert_str_eq(ops_precision_pick(&ctx, "fast"), "fp32");
	cr_assert_str_eq(ops_precision_pick(&ctx, "fp16"), "fp16");
	cr_assert_eq(ops_precision_emulated(&ctx, "bf16"), 0);
	ops_ctx_release(&ctx);
}

Test(precision, the_names_precision_takes)
{
	static const char *const known[] = { "auto", "fast", "fp32", "bf16", "fp16" };
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		cr_assert(ops_precision_known(known[i]), "%s", known[i]);
		cr_assert(strstr(OPS_PRECISION_NAMES, known[i]), "%s", known[i]);
	}
	cr_assert_not(ops_precision_known("fp8"));
	cr_assert_not(ops_precision_known(""));
	cr_assert_not(ops_precision_known("FP32"));
}

/* fp16: emulated on ref, on cuda wherever it runs (8.0 and up), never on the
 * CPU backend, which says where it runs. */
Test(precision, fp16_on_ref_not_on_cpu)
{
	struct ops_ctx ctx;
	cr_assert_eq(ops_ctx_init(&ctx, "ref", 1, 1), 0, "%s", util_last_error());
	cr_assert_eq(ctx.be->set_precision(&ctx, "fp16"), 0, "%s", util_last_error());
	cr_assert_eq(ctx.conv_type, OPS_F16);
	cr_assert(ctx.be->caps & OPS_CAP_FP16);
	ops_ctx_release(&ctx);
	util_set_quiet(1);
	cr_assert_eq(ops_ctx_init(&ctx, "cpu", 1, 1), 0, "%s", util_last_error());
	cr_assert_lt(ctx.be->set_precision(&ctx, "fp16"), 0);
	cr_assert(strstr(util_last_error(), "'fp16' is not available on the CPU backend"),
		  "%s", util_last_error());
	cr_assert(strstr(util_last_error(), "fp16 runs on cuda"), "%s", util_last_error());
	cr_assert_eq(ctx.conv_type, OPS_F32);
	cr_assert(!(ctx.be->caps & OPS_CAP_FP16));
	ops_ctx_release(&ctx);
}

Test(precision, cuda_picks_by_its_device)
{
#ifndef AAH_HAVE_CUDA
	cuda_not_built("--precision auto's pick");
#else
	struct ops_ctx ctx;
	util_set_quiet(1);
	if (ops_ctx_init(&ctx, "cuda", 1, 1))
		cuda_unavailable("cuda", util_last_error(), "--precision auto's pick");
	int major = 0;
	cr_assert_eq(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
	const char *p = ops_precision_auto(&ctx);
	cr_assert_str_eq(p, ops_gpu_precision(major));
	cr_assert_eq(ctx.be->set_precision(&ctx, p), 0, "%s", util_last_error());
	cr_assert_eq(ctx.conv_type, !strcmp(p, "bf16") ? OPS_BF16 : OPS_F32);
	cr_assert_eq(ctx.be->set_precision(&ctx, "fp16"), major >= 7 ? 0 : -1, "%s",
		     util_last_error());
	cr_assert_eq(ctx.conv_type, major >= 7 ? OPS_F16 : OPS_F32);
	ops_ctx_release(&ctx);
#endif
}

/* The math type each cuDNN convolution runs with: in bf16 and fp16 the one
 * the heuristics listed for the algorithm (set on the descriptor before the
 * call); in fp32 never TF32 nor a conversion to fp16. */
Test(precision, cuda_convolutions_take_the_listed_math_type_but_fp32_stays_fma)
{
#ifndef AAH_HAVE_CUDA
	cr_skip_test("skipped: the cuda backend is not built in (AAH_CUDA=0 or no CUDA)");
#else
	static const cudnnMathType_t all[] = { CUDNN_DEFAULT_MATH, CUDNN_TENSOR_OP_MATH,
					       CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, CUDNN_FMA_MATH };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		cr_assert_eq(cuda_conv_math(OPS_F32, all[i]), CUDNN_FMA_MATH, "listed %d", all[i]);
		cr_assert_eq(cuda_conv_math(OPS_BF16, all[i]), all[i]);
		cr_assert_eq(cuda_conv_math(OPS_F16, all[i]), all[i]);
	}
#endif
}

/* The devices the cuda backend runs on: compute capability 8.0 and up; a
 * refusal names the device, its capability and why. */
Test(precision, gpus_below_ampere_are_refused_saying_why)
{
	static const struct {
		int major, minor, ok, cuda13;
	} cc[] = { { 6, 1, 0, 0 }, { 7, 0, 0, 0 }, { 7, 2, 0, 0 }, { 7, 5, 0, 1 }, { 8, 0, 1, 1 },
		   { 8, 6, 1, 1 }, { 8, 9, 1, 1 }, { 9, 0, 1, 1 }, { 10, 0, 1, 1 }, { 12, 0, 1, 1 } };
	for (size_t i = 0; i < sizeof(cc) / sizeof(cc[0]); i++) {
		char why[512] = "", want[16];
		int ok = ops_gpu_supported("Tesla X", cc[i].major, cc[i].minor, why, sizeof(why));
		cr_assert_eq(ok, cc[i].ok, "%d.%d: %s", cc[i].major, cc[i].minor, why);
		if (ok)
			continue;
		snprintf(want, sizeof(want), "%d.%d", cc[i].major, cc[i].minor);
		cr_assert(strstr(why, "Tesla X") && strstr(why, want), "%s", why);
		cr_assert(strstr(why, "needs 8.0 or newer"), "%s", why);
		cr_assert_eq(!strstr(why, "CUDA 13"), cc[i].cuda13, "%s", why);
	}
}

/* --backend auto's decision: the GPU backend where it sees a device it can
 * use, else the CPU, saying why (none visible, or none it can run on). */
Test(precision, auto_falls_back_to_the_cpu_saying_why)
{
	char why[640];
	cr_assert_str_eq(ops_auto_pick("cuda", 8, "", why, sizeof(why)), "cuda");
	cr_assert_str_eq(why, "8 CUDA devices visible");
	cr_assert_str_eq(ops_auto_pick("cuda", 0, "no driver", why, sizeof(why)), "cpu");
	cr_assert_str_eq(why, "no CUDA device visible: no driver");
	char refused[512];
	cr_assert_eq(ops_gpu_supported("CUDA device 0 (Tesla V100-SXM2-16GB)", 7, 0, refused,
				       sizeof(refused)), 0);
	cr_assert_str_eq(ops_auto_pick("cuda", -1, refused, why, sizeof(why)), "cpu");
	cr_assert(strstr(why, "no usable CUDA device: CUDA device 0 (Tesla V100-SXM2-16GB) has "
			      "compute capability 7.0"), "%s", why);
	cr_assert(strstr(why, "training on the CPU"), "%s", why);
}

/* --backend auto: cuda where the runtime lists a device, the cpu backend
 * otherwise (no driver, no GPU, or a build without cuda), saying why. */
Test(precision, backend_auto_follows_the_hardware)
{
	char why[256] = "";
	const char *name = ops_backend_auto(why, sizeof(why));
	int devices = 0;
#ifdef AAH_HAVE_CUDA
	if (cudaGetDeviceCount(&devices) != cudaSuccess)
		devices = 0;
#endif
	if (devices > 0) {
		cr_assert_str_eq(name, "cuda");
		cr_assert(strstr(why, "CUDA device"), "%s", why);
	} else {
		cr_assert(!cuda_required(), "AAH_REQUIRE_CUDA=1: skipped: %s: --backend auto picked %s",
			  why, name);
		cr_assert_str_eq(name, "cpu");
		cr_assert(!strncmp(why, "no CUDA device visible: ", 24), "%s", why);
		/* info, not cr_log_warn: a warning makes Criterion exit 1 */
		cr_log_info("no CUDA device: auto picking cuda is checked on a GPU (%s)", why);
	}
	struct ops_ctx ctx;
	cr_assert_eq(ops_ctx_init(&ctx, "auto", 1, 1), 0, "%s", util_last_error());
	cr_assert_str_eq(ctx.be->name, name);
	ops_ctx_release(&ctx);
}
