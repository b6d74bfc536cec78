/* bench_train: training images/s of an aah-arch/1 network: the trainer's
 * step (trialimg/step.h: upload, forward, loss, backward, SGD update; on a
 * GPU backend replayed as a CUDA graph) on a fixed random batch, the same
 * measurement bench_train_torch.py makes for PyTorch.
 *
 * usage: bench_train ARCH [batch] [threads] [steps] [warmup] [--input device|pinned|pageable]
 *
 * --input (a backend that uploads the batch, cuda; elsewhere the ops read
 * it where it lies): `pinned` (the default) uploads the batch every step
 * as aah-trial does (through pinned memory, on a copy stream, overlapped
 * with the step before); `device` uploads it once before the steps, which
 * then read it on the device (PyTorch's setup in bench_train_torch.py);
 * `pageable` hands the host batch to the ops, whose first convolution
 * stages it on every pass (the way before the input slot).
 *
 * AAH_BACKEND picks another op table (cuda: tests/gpu/lease.sh),
 * AAH_PRECISION its precision (fp16: with the trainer's dynamic loss
 * scale); AAH_BENCH_FLOPS=1 prints the training FLOPs per image to
 * stderr; on a GPU backend it prints the device memory the steps took
 * (free before the model, less free after the steps) beside the memory
 * plan's total, "device_memory_used BYTES plan BYTES", to stderr;
 * AAH_LAYOUT=nhwc keeps every activation NHWC (ops_ctx.nhwc_only), the
 * layout before activations stayed blocked between layers; AAH_BENCH_KEEP=1
 * keeps every output (no batchnorm recomputed: trialimg/memplan.h).
 * Where the backend keeps a ledger (kernels/ledger.h) it prints, to
 * stderr, a timed step's ("step ...") and the captured step's
 * ("captured ..."), and one line for scripts: "bench launches L own O
 * bytes B syncs S h2d_bytes H graph_nodes G graph_own K conv1 T loss X". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ledger.h"
#include "trialimg/step.h"
#include "util.h"

enum input { INPUT_PINNED, INPUT_DEVICE, INPUT_PAGEABLE };

/* --input NAME out of argv (anywhere): its value; the rest closes up. */
static enum input take_input(int *argc, char **argv)
{
	enum input in = INPUT_PINNED;
	for (int i = 1; i < *argc; i++) {
		if (strcmp(argv[i], "--input"))
			continue;
		const char *v = i + 1 < *argc ? argv[i + 1] : "";
		if (!strcmp(v, "device"))
			in = INPUT_DEVICE;
		else if (!strcmp(v, "pageable"))
			in = INPUT_PAGEABLE;
		else if (strcmp(v, "pinned"))
			die("--input '%s': must be device, pinned or pageable", v);
		memmove(argv + i, argv + i + 2, sizeof(char *) * (size_t)(*argc - i - 1));
		*argc -= 2;
		i--;
	}
	return in;
}

/* The type the first convolution read its input in, for the log. */
static const char *conv1_type(const struct model *m)
{
	for (int i = 0; i < m->n_layers; i++)
		if (m->layers[i].op.cfg.type == OPS_CONV2D)
			return m->layers[i].op.ran == OPS_BF16   ? "bf16"
			       : m->layers[i].op.ran == OPS_F16 ? "fp16"
								 : "fp32";
	return "none";
}

int main(int argc, char **argv)
{
	struct model m;
	struct ops_ctx ctx;
	enum input input = take_input(&argc, argv);
	if (argc < 2)
		die("usage: bench_train ARCH [batch] [threads] [steps] [warmup] "
		    "[--input device|pinned|pageable]");
	int batch = argc > 2 ? atoi(argv[2]) : 128, threads = argc > 3 ? atoi(argv[3]) : 2;
	int steps = argc > 4 ? atoi(argv[4]) : 30, warmup = argc > 5 ? atoi(argv[5]) : 5;
	/* the backend first: a GPU's start-up error says so before the host
	 * copy of a large batch is allocated */
	if (model_load(&m, argv[1]) ||
	    ops_ctx_init(&ctx, getenv("AAH_BACKEND") ? getenv("AAH_BACKEND") : "cpu", threads, 1))
		die("cannot set up '%s'", argv[1]);
	const char *prec = getenv("AAH_PRECISION");
	if (prec && ctx.be->set_precision(&ctx, prec))
		die("precision %s is not available here", prec);
	/* a GPU's free memory before the model takes its share */
	struct ops_device dev0 = { 0 }, dev1 = { 0 };
	if (ctx.be->device_info && ctx.be->device_info(&ctx, &dev0))
		die("cannot read the device's memory");
	/* the trainer's plan for this backend (what it recomputes);
	 * AAH_BENCH_KEEP=1: every output and gradient kept, for comparison */
	struct memplan plan;
	m.host_input = input == INPUT_PAGEABLE;
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
	float *x = xmalloc(sizeof(float) * per * batch);
	int *y = xmalloc(sizeof(int) * batch);
	uint64_t s = 7;
	for (size_t i = 0; i < per * batch; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		x[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2 - 1);
	}
	for (int i = 0; i < batch; i++)
		y[i] = i % m.num_classes;
	struct loss_scale ls;
	struct step st = {.ls = prec && !strcmp(prec, "fp16") ? &ls : NULL};
	if (st.ls && loss_scale_init(&ls, 65536.0f, 2000))
		die("cannot set up fp16's loss scale");
	step_init(&st, &m, &ctx, 0.1f, 0.9f, 1e-4f);
	if (ctx.be->capture && !st.graph)
		fprintf(stderr, "no graph: %s\n", st.why);
	const float *bx = x;
	const int *by = y;
	if (input == INPUT_DEVICE && m.plan.input) {   /* once: the steps read it there */
		struct ops_step_vars vars = {0.01f, st.ls ? ls.scale : 1.0f, 0};
		if (ctx.be->upload(&ctx, x, per * batch, y, batch, &vars, m.in.staging, m.in.x,
				   m.in.type, m.in.labels, m.in.vars))
			die("cannot upload the batch");
		bx = m.in.x;
		by = m.in.labels;
	}
	struct ops_ledger *ledger = ops_ledger_of(&ctx), timed;
	double t0 = 0;
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
		if (ledger && i == warmup)
			ledger_reset(ledger);
		if (step_train(&st, bx, by, batch, 0.01f, (uint64_t)i) < 0)
			die("training step failed: %s", util_last_error());
		if (ledger && i == warmup)
			timed = *ledger;
	}
	if (ops_finish(&ctx))   /* the clock stops when the device has done the work */
		die("training step failed");
	double dt = util_monotonic() - t0;
	double loss = 0;
	long correct = 0;
	if (step_read(&st, &loss, &correct))
		die("cannot read the loss: %s", util_last_error());
	if (getenv("AAH_BENCH_FLOPS"))   /* AIPerf's (docs/trainer.md), for MFU */
		fprintf(stderr, "train_flops_per_image %.6g\n", m.flops_fwd + m.flops_bwd);
	/* what the steps took of the GPU (the model, the backend's workspace
	 * and handles) beside what the memory plan says, for issue 38 */
	if (ctx.be->device_info && !ctx.be->device_info(&ctx, &dev1) && dev0.mem_free)
		fprintf(stderr, "device_memory_used %zu plan %zu\n",
			dev0.mem_free > dev1.mem_free ? dev0.mem_free - dev1.mem_free : 0,
			memplan_total(&m.plan));
	if (ledger) {
		ledger_print(&timed, "step ", 1, stderr);
		if (st.graph_n)
			ledger_print(&st.captured, "captured ", 1, stderr);
		const struct ops_ledger *k = st.graph_n ? &st.captured : &timed;
		fprintf(stderr, "bench launches %ld own %ld bytes %.6g syncs %ld h2d_bytes %.6g "
			"graph_nodes %ld graph_own %ld conv1 %s loss %.6g\n", k->launches, k->own,
			k->bytes, timed.syncs, timed.copy_bytes[LEDGER_H2D], st.graph_n ? st.nodes : 0,
			st.graph_n ? st.own : 0, conv1_type(&m),
			loss / ((double)batch * (warmup + steps)));
	}
	printf("%.1f\n", (double)batch * steps / dt);
	if (m.prof) {  /* per-layer milliseconds per step, to stderr */
		for (int k = 0; k < m.n_layers; k++)
			fprintf(stderr, "%-12s %-16s fwd %7.2f ms  bwd %7.2f ms\n", m.layers[k].id,
				arch_type_name(m.layers[k].type), 1e3 * m.prof[2 * k] / steps,
				1e3 * m.prof[2 * k + 1] / steps);
		free(m.prof);
		m.prof = NULL;
	}
	model_release(&m, &ctx);
	ops_ctx_release(&ctx);
	free(x);
	free(y);
	return 0;
}
