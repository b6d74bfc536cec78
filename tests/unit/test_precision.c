/* Unit tests for `--precision auto`: which precision each backend picks
 * (kernels/ops.c). The GPU rule is a function of the compute capability,
 * tested here without a GPU; the cuda backend's own pick needs a device
 * ("skipped: no CUDA device ..." without one). */
#include <criterion/criterion.h>
#include <string.h>

#ifdef AAH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include "cuda_skip.h"
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

/* fp16: emulated on ref, on cuda from compute capability 7.0, never on the
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
