/* The trainer's step (trialimg/step.h) on a device-resident model, counted
 * by the backend's ledger (kernels/ledger.h) on refdev, the pretend
 * device that checks residency on any machine (kernels/ref/ref_device.c):
 * a ResNet-50 step copies the batch in once (its labels and the step's
 * variables with it) and waits for nothing; reading the loss is the wait.
 * Before the input slot and the loss's sums on the device, the same step
 * staged the batch twice (the first convolution's forward and backward),
 * the labels and the logits' gradient once each, and read the loss back
 * every step, waiting each time. */
#include <criterion/criterion.h>
#include <string.h>

#include "kernels/ledger.h"
#include "runner/tuner/morph.h" /* tmodel_resnet50: AIPerf's start graph */
#include "trialimg/step.h"
#include "util.h"

enum { BATCH = 2, WIDTH = 32, CLASSES = 10 };

/* AIPerf's ResNet-50 at WIDTH x WIDTH: its graph, smaller images */
static void resnet50(struct model *m)
{
	struct tgraph g;
	struct arch a;
	cr_assert_eq(tmodel_resnet50(&g, WIDTH, 3, CLASSES), 0, "%s", util_last_error());
	tgraph_to_arch(&g, &a);
	cJSON *doc = arch_to_json(&a);
	cr_assert_eq(model_parse(m, doc, "resnet50"), 0, "%s", util_last_error());
	cJSON_Delete(doc);
	arch_release(&a);
	tgraph_release(&g);
}

static void batch(float *x, int *y, size_t per)
{
	for (size_t i = 0; i < per * BATCH; i++)
		x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
	for (int i = 0; i < BATCH; i++)
		y[i] = (3 * i + 1) % CLASSES;
}

/* Two steps on the host backend ref: the loss refdev's must equal. */
static double on_ref(void)
{
	struct model m;
	struct ops_ctx ctx;
	resnet50(&m);
	cr_assert_eq(ops_ctx_init(&ctx, "ref", 1, 3), 0, "%s", util_last_error());
	cr_assert_eq(model_alloc(&m, BATCH, 5), 0, "%s", util_last_error());
	size_t per = ops_shape_size(&m.input);
	float *x = xmalloc(sizeof(float) * per * BATCH);
	int y[BATCH];
	batch(x, y, per);
	struct step st = {0};
	step_init(&st, &m, &ctx, 0.1f, 0.9f, 1e-4f);
	cr_assert_eq(step_train(&st, x, y, BATCH, 0.05f, 0), 1, "%s", util_last_error());
	cr_assert_eq(step_train(&st, x, y, BATCH, 0.05f, 1), 1, "%s", util_last_error());
	double loss = 0;
	long correct = 0;
	cr_assert_eq(step_read(&st, &loss, &correct), 0, "%s", util_last_error());
	model_release(&m, &ctx);
	ops_ctx_release(&ctx);
	free(x);
	return loss;
}

/* m planned for BATCH on ctx, allocated and made resident, its step set
 * up; the batch's images in a new buffer (returned) and labels in y. */
static float *resident_step(struct model *m, struct ops_ctx *ctx, struct step *st, int *y)
{
	struct memplan plan;
	cr_assert_eq(memplan_build(&plan, m, BATCH, ctx, 0), 0, "%s", util_last_error());
	cr_assert_eq(plan.input, ctx->be->upload != NULL,
		     "%s: an input slot in the plan where the backend uploads the batch",
		     ctx->be->name);
	cr_assert_eq(model_alloc_planned(m, &plan, 5), 0, "%s", util_last_error());
	cr_assert_eq(model_resident(m, ctx), 0, "%s", util_last_error());
	size_t per = ops_shape_size(&m->input);
	float *x = xmalloc(sizeof(float) * per * BATCH);
	batch(x, y, per);
	*st = (struct step){0};
	step_init(st, m, ctx, 0.1f, 0.9f, 1e-4f);
	return x;
}

Test(step, a_resident_resnet50_step_copies_the_batch_once_and_waits_for_nothing, .timeout = 120)
{
	struct model m;
	struct ops_ctx ctx;
	double ref_loss = on_ref();
	resnet50(&m);
	cr_assert_eq(ops_ctx_init(&ctx, "refdev", 1, 3), 0, "%s", util_last_error());
	int y[BATCH];
	struct step st;
	float *x = resident_step(&m, &ctx, &st, y);
	size_t per = ops_shape_size(&m.input);
	struct ops_ledger *l = ops_ledger_of(&ctx);
	cr_assert_not_null(l);
	/* the first step sets things up; the second is what every step costs */
	cr_assert_eq(step_train(&st, x, y, BATCH, 0.05f, 0), 1, "%s", util_last_error());
	ledger_reset(l);
	cr_assert_eq(step_train(&st, x, y, BATCH, 0.05f, 1), 1, "%s", util_last_error());
	ledger_print(l, "refdev resnet50 step: ", 0, stderr);
	double upload = sizeof(float) * per * BATCH + sizeof(int) * BATCH +
			sizeof(struct ops_step_vars);
	cr_assert_eq(l->syncs, 0, "a step waited %ld times for the device", l->syncs);
	cr_assert_eq(l->copies[LEDGER_H2D], 1, "%ld copies to the device, not the batch's one",
		     l->copies[LEDGER_H2D]);
	cr_assert_eq(l->copy_bytes[LEDGER_H2D], upload, "%.0f bytes copied in, the batch is %.0f",
		     l->copy_bytes[LEDGER_H2D], upload);
	cr_assert_eq(l->copies[LEDGER_D2H], 0, "%ld copies to the host", l->copies[LEDGER_D2H]);
	/* the loss is read when asked: one wait, and it is the two steps',
	 * ref's to the bit (the same ops on the same values) */
	double loss = 0;
	long correct = 0;
	cr_assert_eq(step_read(&st, &loss, &correct), 0, "%s", util_last_error());
	cr_assert_eq(l->syncs, 1);
	cr_assert_eq(loss, ref_loss, "refdev's loss %.17g, ref's %.17g", loss, ref_loss);
	/* the batch already in the input slot (bench_train --input device): a
	 * step copies nothing in */
	ledger_reset(l);
	cr_assert_eq(step_train(&st, m.in.x, m.in.labels, BATCH, 0.05f, 2), 1, "%s",
		     util_last_error());
	cr_assert_eq(l->copies[LEDGER_H2D], 0, "%ld copies in", l->copies[LEDGER_H2D]);
	cr_assert_eq(l->syncs, 0);
	model_release(&m, &ctx);
	ops_ctx_release(&ctx);
	free(x);
}

/* The aah-arch/1 network net trained three steps on cudahost (the cuda
 * backend's kernels on the host; its convolutions read the weights' twin
 * where one is kept) in precision prec, with the environment's name set
 * to value: its parameters after them (*n of them); *accumulates: the
 * accumulate launches of the last step. */
static float *trained_on_cudahost(const char *net, const char *prec, const char *name,
				  const char *value, size_t *n, long *accumulates)
{
	struct model m;
	cJSON *doc = cJSON_Parse(net);
	cr_assert_not_null(doc);
	cr_assert_eq(model_parse(&m, doc, "net"), 0, "%s", util_last_error());
	cJSON_Delete(doc);
	struct ops_ctx ctx;
	setenv(name, value, 1);
	cr_assert_eq(ops_ctx_init(&ctx, "cudahost", 1, 3), 0, "%s", util_last_error());
	unsetenv(name);
	cr_assert_eq(ctx.be->set_precision(&ctx, prec), 0);
	int y[BATCH];
	struct step st;
	float *x = resident_step(&m, &ctx, &st, y);
	struct ops_ledger *l = ops_ledger_of(&ctx);
	for (int k = 0; k < 3; k++) {
		ledger_reset(l);
		cr_assert_eq(step_train(&st, x, y, BATCH, 0.2f, (uint64_t)k), 1, "%s",
			     util_last_error());
	}
	*accumulates = 0;
	for (int k = 0; k < l->nk; k++)
		if (!strcmp(l->k[k].name, "accumulate"))
			*accumulates = l->k[k].calls;
	*n = m.n_params;
	float *params = xmalloc(sizeof(float) * m.n_params);
	memcpy(params, m.params, sizeof(float) * m.n_params);
	model_release(&m, &ctx);
	ops_ctx_release(&ctx);
	free(x);
	return params;
}

/* A small network of two 3x3 convolutions trained in bf16 on cudahost with
 * the parameters' 16-bit twin (the default) or without (AAH_CUDA_TWIN=0):
 * its parameters after three steps. */
static float *small_on_cudahost(const char *twin, size_t *n)
{
	static const char *net =
		"{\"format\":\"aah-arch/1\",\"input\":{\"height\":8,\"width\":8,\"channels\":3},"
		"\"num_classes\":10,\"output\":\"d\",\"layers\":["
		"{\"id\":\"c1\",\"type\":\"conv2d\",\"inputs\":[\"input\"],\"filters\":16,\"kernel\":3,"
		"\"stride\":1,\"padding\":\"same\",\"bias\":true},"
		"{\"id\":\"b1\",\"type\":\"batchnorm\",\"inputs\":[\"c1\"]},"
		"{\"id\":\"r1\",\"type\":\"relu\",\"inputs\":[\"b1\"]},"
		"{\"id\":\"c2\",\"type\":\"conv2d\",\"inputs\":[\"r1\"],\"filters\":24,\"kernel\":3,"
		"\"stride\":2,\"padding\":\"same\",\"bias\":false},"
		"{\"id\":\"b2\",\"type\":\"batchnorm\",\"inputs\":[\"c2\"]},"
		"{\"id\":\"r2\",\"type\":\"relu\",\"inputs\":[\"b2\"]},"
		"{\"id\":\"g\",\"type\":\"global_avg_pool\",\"inputs\":[\"r2\"]},"
		"{\"id\":\"d\",\"type\":\"dense\",\"inputs\":[\"g\"],\"units\":10,\"bias\":true}]}";
	long accumulates;
	return trained_on_cudahost(net, "bf16", "AAH_CUDA_TWIN", twin, n, &accumulates);
}

/* The same bits, parameter by parameter. */
static void same_parameters(const float *a, const float *b, size_t n, const char *what)
{
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(memcmp(&a[i], &b[i], sizeof(float)), 0,
			     "parameter %zu: %.9g %s, %.9g not", i, (double)a[i], what, (double)b[i]);
}

/* The twin the SGD keeps is what converting the weights every pass gives:
 * three steps train to the same bits with and without it. (A twin left
 * stale by one update would not: each step's convolutions read it.) */
Test(step, a_twin_kept_by_sgd_trains_as_converting_the_weights_does)
{
	size_t n1, n0;
	float *with = small_on_cudahost("1", &n1), *without = small_on_cudahost("0", &n0);
	cr_assert_eq(n1, n0);
	same_parameters(with, without, n1, "with the twin");
	free(with), free(without);
}

/* A residual block as ResNet-50's (r1 feeds a 1x1 convolution and the
 * add; the add's gradient reaches r1 first), trained in fp32 on cudahost
 * with AAH_CUDA_ADD_DX=value. */
static float *residual_on_cudahost(const char *value, size_t *n, long *accumulates)
{
	static const char *net =
		"{\"format\":\"aah-arch/1\",\"input\":{\"height\":8,\"width\":8,\"channels\":3},"
		"\"num_classes\":10,\"output\":\"d\",\"layers\":["
		"{\"id\":\"c1\",\"type\":\"conv2d\",\"inputs\":[\"input\"],\"filters\":16,\"kernel\":3,"
		"\"stride\":1,\"padding\":\"same\",\"bias\":false},"
		"{\"id\":\"b1\",\"type\":\"batchnorm\",\"inputs\":[\"c1\"]},"
		"{\"id\":\"r1\",\"type\":\"relu\",\"inputs\":[\"b1\"]},"
		"{\"id\":\"c2\",\"type\":\"conv2d\",\"inputs\":[\"r1\"],\"filters\":8,\"kernel\":1,"
		"\"stride\":1,\"padding\":\"same\",\"bias\":false},"
		"{\"id\":\"b2\",\"type\":\"batchnorm\",\"inputs\":[\"c2\"]},"
		"{\"id\":\"r2\",\"type\":\"relu\",\"inputs\":[\"b2\"]},"
		"{\"id\":\"c3\",\"type\":\"conv2d\",\"inputs\":[\"r2\"],\"filters\":16,\"kernel\":3,"
		"\"stride\":1,\"padding\":\"same\",\"bias\":false},"
		"{\"id\":\"b3\",\"type\":\"batchnorm\",\"inputs\":[\"c3\"]},"
		"{\"id\":\"a\",\"type\":\"add\",\"inputs\":[\"b3\",\"r1\"]},"
		"{\"id\":\"ra\",\"type\":\"relu\",\"inputs\":[\"a\"]},"
		"{\"id\":\"g\",\"type\":\"global_avg_pool\",\"inputs\":[\"ra\"]},"
		"{\"id\":\"d\",\"type\":\"dense\",\"inputs\":[\"g\"],\"units\":10,\"bias\":true}]}";
	return trained_on_cudahost(net, "fp32", "AAH_CUDA_ADD_DX", value, n, accumulates);
}

/* Where a tensor feeds two layers (ResNet-50's 16 shortcuts), the
 * convolution whose part of its gradient comes second adds it into the
 * first's (AAH_CUDA_ADD_DX=1, the default) instead of writing it apart for
 * the model to accumulate (=0): in fp32 the same sums, so three steps
 * train to the same bits, and a step launches no accumulate. (In bf16 the
 * sum is rounded once instead of twice, as cuDNN's blend does.) */
Test(step, a_convolution_adding_its_part_of_a_gradient_trains_as_accumulating_it)
{
	size_t na, nb;
	long acc_add, acc_apart;
	float *add = residual_on_cudahost("1", &na, &acc_add);
	float *apart = residual_on_cudahost("0", &nb, &acc_apart);
	cr_assert_eq(acc_apart, 1, "%ld accumulates a step apart, for one shortcut", acc_apart);
	cr_assert_eq(acc_add, 0, "%ld accumulates a step where the convolution adds", acc_add);
	cr_assert_eq(na, nb);
	same_parameters(add, apart, na, "added in");
	free(add), free(apart);
}
