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

Test(step, a_resident_resnet50_step_copies_the_batch_once_and_waits_for_nothing, .timeout = 120)
{
	struct model m;
	struct ops_ctx ctx;
	double ref_loss = on_ref();
	resnet50(&m);
	cr_assert_eq(ops_ctx_init(&ctx, "refdev", 1, 3), 0, "%s", util_last_error());
	struct memplan plan;
	cr_assert_eq(memplan_build(&plan, &m, BATCH, &ctx, 0), 0, "%s", util_last_error());
	cr_assert(plan.input, "refdev uploads the batch: the plan has an input slot");
	cr_assert_eq(model_alloc_planned(&m, &plan, 5), 0, "%s", util_last_error());
	cr_assert_eq(model_resident(&m, &ctx), 0, "%s", util_last_error());
	size_t per = ops_shape_size(&m.input);
	float *x = xmalloc(sizeof(float) * per * BATCH);
	int y[BATCH];
	batch(x, y, per);
	struct step st = {0};
	step_init(&st, &m, &ctx, 0.1f, 0.9f, 1e-4f);
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
