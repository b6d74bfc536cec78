/* Every primitive of a training step runs one of oneDNN's jit kernels on the
 * ISA the tests run on: one step (forward, loss, backward, update) and an
 * evaluation pass of each test architecture on the cpu backend, natively
 * and, through tests/run.sh's second pass, with oneDNN capped at AVX2. A
 * reference kernel ("ref:any", "bnorm_ref:any") is correct and tens of
 * times slower: on an AVX2 machine the 16-wide blocked layout once ran
 * batch normalisation on one and the trainer at a fifth of PyTorch. */
#include <criterion/criterion.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/cpu/cpu.h"       /* cpu_pd_create, cpu_prim_create, cpu_impl_is_ref */
#include "kernels/cpu/cpu_probe.h" /* cpu_probe_layout, cpu_probe_skip */
#include "kernels/ops.h"
#include "trialimg/model.h"
#include "util.h"

enum { N = 8 };

static const char *root(void)
{
	return getenv("AAH_ROOT") ? getenv("AAH_ROOT") : ".";
}

static uint64_t rng = 1;
static float frand(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((double)(rng >> 11) / 9007199254740992.0) * 2 - 1;
}

/* One training step and one evaluation pass of the arch at path; returns
 * the backend's slow path (NULL: every kernel was a jit one). */
static const char *train_step(const char *path, const char *precision)
{
	struct model m;
	struct ops_ctx ctx;
	cr_assert_eq(model_load(&m, path), 0, "%s: %s", path, util_last_error());
	cr_assert_eq(model_alloc(&m, N, 1), 0, "%s", util_last_error());
	cr_assert_eq(ops_ctx_init(&ctx, "cpu", 2, 3), 0, "%s", util_last_error());
	cr_assert_eq(ctx.blocked, cpu_probe_layout());
	cr_assert_eq(ctx.be->set_precision(&ctx, precision), 0, "%s", util_last_error());
	size_t in = (size_t)N * ops_shape_size(&m.input);
	float *x = xmalloc(sizeof(float) * in);
	float *dlogits = xmalloc(sizeof(float) * N * (size_t)m.num_classes);
	int labels[N];
	for (size_t i = 0; i < in; i++)
		x[i] = frand();
	for (int i = 0; i < N; i++)
		labels[i] = i % m.num_classes;
	double loss = 0;
	long correct = 0;
	cr_assert_eq(model_forward(&m, &ctx, x, N, 1), 0, "%s", util_last_error());
	cr_assert_eq(ctx.be->loss(&ctx, N, m.num_classes, model_logits(&m), labels, 0.1f, 1.0f,
				  dlogits, &loss, &correct), 0);
	cr_assert_eq(model_backward(&m, &ctx, x, N, dlogits), 0, "%s", util_last_error());
	cr_assert_eq(model_update(&m, &ctx, 0.01f, 0.9f, 1e-4f), 0, "%s", util_last_error());
	cr_assert_eq(model_forward(&m, &ctx, x, N, 0), 0, "%s", util_last_error());
	static char slow[256];
	const char *s = ctx.be->slow_path(&ctx);
	snprintf(slow, sizeof(slow), "%s", s ? s : "");
	free(x);
	free(dlogits);
	model_release(&m, &ctx);
	ops_ctx_release(&ctx);
	return slow[0] ? slow : NULL;
}

static void every_arch(const char *precision)
{
	const char *patterns[] = {"tests/fixtures/arch/*.json", "examples/fashion-mnist-cnn*.json"};
	int archs = 0;
	for (size_t p = 0; p < ARRAY_SIZE(patterns); p++) {
		char *pat = xstrfmt("%s/%s", root(), patterns[p]);
		glob_t g;
		cr_assert_eq(glob(pat, 0, NULL, &g), 0, "no architectures at %s", pat);
		for (size_t i = 0; i < g.gl_pathc; i++, archs++) {
			const char *slow = train_step(g.gl_pathv[i], precision);
			cr_assert_null(slow, "%s (%s): %s runs a reference kernel on %s, oneDNN ISA %s",
				       g.gl_pathv[i], precision, slow, cpu_probe_model(),
				       cpu_probe_isa());
		}
		globfree(&g);
		free(pat);
	}
	cr_assert_geq(archs, 5);
	cr_log_info("%d architectures, %s, all jit (%s, oneDNN ISA %s)", archs, precision,
		    cpu_probe_model(), cpu_probe_isa());
}

Test(kernels_jit, fp32_training_steps_run_no_reference_kernel)
{
	every_arch("fp32");
}

Test(kernels_jit, bf16_training_steps_run_no_reference_kernel)
{
	char skip[512];
	if (cpu_probe_skip(CPU_FEAT_BF16_TRAIN, skip, sizeof(skip)))
		cr_skip_test("%s", skip);
	every_arch("bf16");
}

/* Where oneDNN dispatches to AVX2 or AVX-512, the activations are blocked
 * in the width of its registers. */
Test(kernels_jit, the_layout_follows_the_isa)
{
	enum ops_layout l = cpu_probe_layout();
	char why[256];
	if (cpu_probe_has(CPU_FEAT_AVX512, why, sizeof(why)))
		cr_assert_eq(l, OPS_BLOCKED16, "%s", cpu_probe_isa());
	else if (dnnl_get_effective_cpu_isa() == dnnl_cpu_isa_avx2)
		cr_assert_eq(l, OPS_BLOCKED8, "%s", cpu_probe_isa());
}

/* The check above can fail: a primitive built on a reference kernel is
 * named. Batch normalisation over a permuted plain layout (abdc) has no
 * jit kernel on any ISA. */
Test(kernels_jit, a_reference_kernel_is_named)
{
	struct ops_ctx ctx;
	cr_assert_eq(ops_ctx_init(&ctx, "cpu", 1, 3), 0, "%s", util_last_error());
	cr_assert_null(ctx.be->slow_path(&ctx));
	dnnl_memory_desc_t md;
	dnnl_dims_t d = {2, 4, 3, 5};
	dnnl_batch_normalization_desc_t bd;
	dnnl_primitive_desc_t pd;
	dnnl_primitive_t prim;
	cr_assert_eq(dnnl_memory_desc_init_by_tag(&md, 4, d, dnnl_f32, dnnl_abdc), dnnl_success);
	cr_assert_eq(dnnl_batch_normalization_forward_desc_init(&bd, dnnl_forward_training, &md,
								1e-3f, 0), dnnl_success);
	cr_assert_eq(cpu_pd_create(&ctx, &pd, &bd, NULL, NULL), 0, "%s", util_last_error());
	cr_assert_eq(cpu_prim_create(&ctx, &prim, pd), 0, "%s", util_last_error());
	const char *slow = ctx.be->slow_path(&ctx);
	cr_assert_not_null(slow);
	cr_assert(strstr(slow, "batch_normalization") && strstr(slow, "ref"), "%s", slow);
	cr_assert(cpu_impl_is_ref("ref:any") && cpu_impl_is_ref("bnorm_ref:any"));
	cr_assert(!cpu_impl_is_ref("jit:avx2") && !cpu_impl_is_ref("bnorm_jit:avx512_core"));
	dnnl_primitive_destroy(prim);
	dnnl_primitive_desc_destroy(pd);
	ops_ctx_release(&ctx);
}
