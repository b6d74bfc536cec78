/* bench_train: training images/s of an aah-arch/1 network on the CPU op
 * table: forward, loss, backward and SGD update on a fixed random batch
 * (the same measurement bench_train_torch.py makes for PyTorch).
 * usage: bench_train ARCH [batch] [threads] [steps] [warmup]
 * AAH_BACKEND picks another op table (cuda: tests/gpu/run-on-device.sh),
 * AAH_PRECISION its precision (fp16 without the trainer's loss scale: the
 * same work, for timing); AAH_BENCH_FLOPS=1 prints the training FLOPs per
 * image to stderr; on a GPU backend it prints the device memory the steps
 * took (free before the model, less free after the steps) beside the
 * memory plan's total, "device_memory_used BYTES plan BYTES", to stderr;
 * AAH_LAYOUT=nhwc keeps every activation NHWC (ops_ctx.nhwc_only), the
 * layout before activations stayed blocked between layers; AAH_BENCH_KEEP=1
 * keeps every output (no batchnorm recomputed: trialimg/memplan.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trialimg/model.h"
#include "util.h"

int main(int argc, char **argv)
{
	struct model m;
	struct ops_ctx ctx;
	if (argc < 2)
		die("usage: bench_train ARCH [batch] [threads] [steps] [warmup]");
	int batch = argc > 2 ? atoi(argv[2]) : 128, threads = argc > 3 ? atoi(argv[3]) : 2;
	int steps = argc > 4 ? atoi(argv[4]) : 30, warmup = argc > 5 ? atoi(argv[5]) : 5;
	/* the backend first: a GPU's start-up error says so before the host
	 * copy of a large batch is allocated */
	if (model_load(&m, argv[1]) ||
	    ops_ctx_init(&ctx, getenv("AAH_BACKEND") ? getenv("AAH_BACKEND") : "cpu", threads, 1))
		die("cannot set up '%s'", argv[1]);
	if (getenv("AAH_PRECISION") && ctx.be->set_precision(&ctx, getenv("AAH_PRECISION")))
		die("precision %s is not available here", getenv("AAH_PRECISION"));
	/* a GPU's free memory before the model takes its share */
	struct ops_device dev0 = { 0 }, dev1 = { 0 };
	if (ctx.be->device_info && ctx.be->device_info(&ctx, &dev0))
		die("cannot read the device's memory");
	/* the trainer's plan for this backend (what it recomputes);
	 * AAH_BENCH_KEEP=1: every output and gradient kept, for comparison */
	struct memplan plan;
	if (memplan_build(&plan, &m, batch, &ctx, getenv("AAH_BENCH_KEEP") != NULL) ||
	    model_alloc_planned(&m, &plan, 1))
		die("cannot set up '%s'", argv[1]);
	if (getenv("AAH_CONV_ALGO") && (ctx.conv_algo = ops_conv_algo_parse(getenv("AAH_CONV_ALGO"))) < 0)
		die("AAH_CONV_ALGO %s: must be one of %s", getenv("AAH_CONV_ALGO"), OPS_CONV_ALGO_NAMES);
	if (getenv("AAH_LAYOUT"))
		ctx.nhwc_only = !strcmp(getenv("AAH_LAYOUT"), "nhwc");
	if (model_resident(&m, &ctx))   /* on the device, as aah-trial keeps it */
		die("cannot keep '%s' on the device", argv[1]);
	size_t per = ops_shape_size(&m.input);
	float *x = xmalloc(sizeof(float) * per * batch), *dz = xmalloc(sizeof(float) * batch * m.num_classes);
	int *y = xmalloc(sizeof(int) * batch);
	uint64_t s = 7;
	for (size_t i = 0; i < per * batch; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		x[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2 - 1);
	}
	for (int i = 0; i < batch; i++)
		y[i] = i % m.num_classes;
	double t0 = 0, t_update = 0;
	if (getenv("AAH_PROFILE"))
		m.prof = xcalloc(2 * (size_t)m.n_layers, sizeof(double));
	for (int i = 0; i < warmup + steps; i++) {
		if (i == warmup) {
			/* the warm-up's last update may still run on a GPU */
			if (ops_finish(&ctx))
				die("the warm-up failed");
			t0 = util_monotonic();
			if (m.prof)
				for (int k = 0; k < 2 * m.n_layers; k++)
					m.prof[k] = 0;
		}
		double loss = 0;
		long correct = 0;
		ctx.step = (uint64_t)i;
		if (model_forward(&m, &ctx, x, batch, 1) ||
		    ctx.be->loss(&ctx, batch, m.num_classes, model_logits(&m), y, 0.1f, 1.0f, dz, &loss,
				 &correct) ||
		    model_backward(&m, &ctx, x, batch, dz))
			die("training step failed");
		double tu = util_monotonic();
		if (model_update(&m, &ctx, 0.01f, 0.9f, 1e-4f))
			die("training step failed");
		if (i >= warmup)
			t_update += util_monotonic() - tu;
	}
	if (ops_finish(&ctx))   /* the clock stops when the device has done the work */
		die("training step failed");
	double dt = util_monotonic() - t0;
	if (getenv("AAH_BENCH_FLOPS"))   /* AIPerf's (docs/trainer.md), for MFU */
		fprintf(stderr, "train_flops_per_image %.6g\n", m.flops_fwd + m.flops_bwd);
	/* what the steps took of the GPU (the model, the backend's workspace
	 * and handles) beside what the memory plan says, for issue 38 */
	if (ctx.be->device_info && !ctx.be->device_info(&ctx, &dev1) && dev0.mem_free)
		fprintf(stderr, "device_memory_used %zu plan %zu\n",
			dev0.mem_free > dev1.mem_free ? dev0.mem_free - dev1.mem_free : 0,
			memplan_total(&m.plan));
	printf("%.1f\n", (double)batch * steps / dt);
	if (m.prof) {  /* per-layer milliseconds per step, to stderr */
		for (int k = 0; k < m.n_layers; k++)
			fprintf(stderr, "%-12s %-16s fwd %7.2f ms  bwd %7.2f ms\n", m.layers[k].id,
				arch_type_name(m.layers[k].type), 1e3 * m.prof[2 * k] / steps,
				1e3 * m.prof[2 * k + 1] / steps);
		fprintf(stderr, "%-29s %7.2f ms\n", "sgd update", 1e3 * t_update / steps);
		free(m.prof);
		m.prof = NULL;
	}
	model_release(&m, &ctx);
	ops_ctx_release(&ctx);
	free(x);
	free(dz);
	free(y);
	return 0;
}
