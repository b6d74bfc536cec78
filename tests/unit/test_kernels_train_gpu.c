/* A short training run on every GPU backend of ops_backends() (cuda) beside
 * the same run on the CPU backend: the same net (conv, batchnorm + relu,
 * maxpool, residual add, global average pool, dense), the same initial
 * weights and the same batches, 30 SGD steps; the GPU run's loss curve must
 * follow the CPU run's step by step. And a backend's own data parallelism
 * (NCCL) over one rank. On a machine without a GPU each backend is
 * reported as "skipped: no CUDA device". The cuda backend's own kernels
 * run the same training on any machine through its host harness
 * (`cudahost`), biases folded into the batchnorms as on a GPU. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_skip.h"
#include "kernels/ops.h" /* ops_backends, OPS_CAP_GPU */
#include "trialimg/model.h"
#include "util.h"

enum { N = 8, H = 8, W = 8, C = 3, K = 4, STEPS = 30 };

static const char *net =
	"{\"format\":\"aah-arch/1\",\"input\":{\"height\":8,\"width\":8,\"channels\":3},"
	"\"num_classes\":4,\"output\":\"out\",\"layers\":["
	"{\"id\":\"c1\",\"type\":\"conv2d\",\"inputs\":[\"input\"],\"filters\":8,\"kernel\":3},"
	"{\"id\":\"bn1\",\"type\":\"batchnorm\",\"inputs\":[\"c1\"]},"
	"{\"id\":\"r1\",\"type\":\"relu\",\"inputs\":[\"bn1\"]},"
	"{\"id\":\"mp\",\"type\":\"maxpool\",\"inputs\":[\"r1\"],\"kernel\":2},"
	"{\"id\":\"c2\",\"type\":\"conv2d\",\"inputs\":[\"mp\"],\"filters\":8,\"kernel\":3},"
	"{\"id\":\"ad\",\"type\":\"add\",\"inputs\":[\"c2\",\"mp\"]},"
	"{\"id\":\"ar\",\"type\":\"relu\",\"inputs\":[\"ad\"]},"
	"{\"id\":\"gp\",\"type\":\"global_avg_pool\",\"inputs\":[\"ar\"]},"
	"{\"id\":\"out\",\"type\":\"dense\",\"inputs\":[\"gp\"],\"units\":4}]}";

/* Four fixed batches of a learnable task: the label is the quadrant of
 * the image holding a bright square. */
static void batch(int b, float *x, int *y)
{
	uint64_t s = 1234 + (uint64_t)b;
	for (int i = 0; i < N * H * W * C; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		x[i] = (float)((double)(s >> 11) / 9007199254740992.0) * 0.2f;
	}
	for (int i = 0; i < N; i++) {
		int q = (i + b) % K, y0 = q / 2 * 4, x0 = q % 2 * 4;
		y[i] = q;
		for (int r = y0; r < y0 + 4; r++)
			for (int c = x0; c < x0 + 4; c++)
				for (int ch = 0; ch < C; ch++)
					x[((i * H + r) * W + c) * C + ch] += 1.0f;
	}
}

/* STEPS steps of the net on backend `name`; the loss of each into loss[].
 * resident: the model on the device (model_resident), as aah-trial keeps
 * it; else every op stages its host tensors. 1 when it ran, 0 when the
 * backend cannot start here (why in *skip). */
static int train(const char *name, int resident, double *loss, const char **skip);

/* The first conv2d's bias, nonzero (the model starts it at zero, where a
 * folded bias would change nothing) */
static float bias0(int k)
{
	return 0.25f * (float)(k % 3) - 0.2f;
}

/* After a run: the first conv2d's bias gradient, and the first batchnorm's
 * running mean. */
static float db0[8], rm0[8];

static int train(const char *name, int resident, double *loss, const char **skip)
{
	struct model m;
	struct ops_ctx ctx;
	cJSON *doc = cJSON_Parse(net);
	cr_assert_eq(model_parse(&m, doc, "net"), 0, "%s", util_last_error());
	cJSON_Delete(doc);
	cr_assert_eq(model_alloc(&m, N, 5), 0);
	if (ops_ctx_init(&ctx, name, 2, 11)) {
		*skip = util_last_error();
		model_release(&m, NULL);
		return 0;
	}
	cr_assert_eq(ctx.be->set_precision(&ctx, "fp32"), 0, "%s: %s", name, util_last_error());
	int c1 = model_find(&m, "c1"), bn1 = model_find(&m, "bn1");
	for (int k = 0; k < 8; k++)
		m.layers[c1].op.b[k] = bias0(k);
	if (resident)
		cr_assert_eq(model_resident(&m, &ctx), 0, "%s: %s", name, util_last_error());
	float x[N * H * W * C], dz[N * K];
	int y[N];
	for (int s = 0; s < STEPS; s++) {
		double sum = 0;
		long correct = 0;
		ctx.step = (uint64_t)s;
		batch(s % 4, x, y);
		cr_assert_eq(model_forward(&m, &ctx, x, N, 1), 0, "%s: %s", name, util_last_error());
		cr_assert_eq(ctx.be->loss(&ctx, N, K, model_logits(&m), y, 0.1f, 1.0f, dz, &sum,
					  &correct), 0);
		cr_assert_eq(ops_loss_read(&ctx, &sum, &correct), 0, "%s: %s", name, util_last_error());
		cr_assert_eq(model_backward(&m, &ctx, x, N, dz), 0, "%s: %s", name, util_last_error());
		cr_assert_eq(model_update(&m, &ctx, 0.05f, 0.9f, 1e-4f), 0);
		loss[s] = sum / N;
	}
	cr_assert_eq(ops_sync(&ctx, m.block, m.state_bytes, OPS_TO_HOST), 0);
	memcpy(db0, m.layers[c1].op.db, sizeof(db0));
	memcpy(rm0, m.layers[bn1].op.run_mean, sizeof(rm0));
	model_release(&m, &ctx);
	ops_ctx_release(&ctx);
	return 1;
}

Test(kernels_gpu, training_loss_follows_the_cpu_run)
{
	double cpu[STEPS], gpu[STEPS];
	const char *skip = NULL;
	size_t nb;
	const struct ops_backend *const *be = ops_backends(&nb);
	util_set_quiet(1);
	cr_assert_eq(train("cpu", 0, cpu, &skip), 1, "cpu: %s", skip);
	cr_assert_lt(cpu[STEPS - 1], 0.7 * cpu[0], "the cpu run does not learn: loss %g -> %g",
		     cpu[0], cpu[STEPS - 1]);
	int gpus = 0;
	for (size_t b = 0; b < nb; b++) {
		if (!(be[b]->caps & OPS_CAP_GPU))
			continue;
		gpus++;
		for (int resident = 0; resident < 2; resident++) {
			if (!train(be[b]->name, resident, gpu, &skip))
				cuda_unavailable(be[b]->name, skip, "the training run");
			/* fp32 both sides, sums in different orders: the curves drift
			 * apart by roundings, far less than a step of training moves
			 * them */
			for (int s = 0; s < STEPS; s++)
				cr_assert(fabs(gpu[s] - cpu[s]) <= 1e-3 + 2e-2 * fabs(cpu[s]),
					  "%s%s: step %d: loss %.6g, cpu %.6g", be[b]->name,
					  resident ? " (resident)" : "", s, gpu[s], cpu[s]);
		}
	}
	if (!gpus)
		cuda_not_built("the training run");
}

/* What the trainer's rendezvous would hand the other ranks. */
struct shared {
	int calls;
	size_t len;
	unsigned char id[256];
};

static int share(void *arg, void *id, size_t len)
{
	struct shared *sh = arg;
	sh->calls++;
	sh->len = len;
	memcpy(sh->id, id, len < sizeof(sh->id) ? len : sizeof(sh->id));
	return 0;
}

/* A communicator of one rank: rank 0 makes the id and shares it, the
 * mean over one rank is the buffer itself, and the runner's NCCL_COMM_ID
 * (which would make NCCL listen on the rendezvous's port) is cleared. Two
 * ranks need two GPUs: tests/gpu/lease.sh's machines have one. */
Test(kernels_gpu, device_allreduce_over_one_rank)
{
	size_t nb;
	const struct ops_backend *const *be = ops_backends(&nb);
	int ran = 0;
	util_set_quiet(1);
	for (size_t b = 0; b < nb; b++) {
		if (!be[b]->comm_init)
			continue;
		struct ops_ctx ctx;
		if (ops_ctx_init(&ctx, be[b]->name, 1, 1))
			cuda_unavailable(be[b]->name, util_last_error(), "the allreduce");
		setenv("NCCL_COMM_ID", "127.0.0.1:1", 1);
		struct shared sh = {0};
		cr_assert_eq(be[b]->comm_init(&ctx, 0, 1, share, &sh), 0, "%s", util_last_error());
		cr_assert_null(getenv("NCCL_COMM_ID"));
		cr_assert_eq(sh.calls, 1);
		cr_assert_gt(sh.len, 0);
		size_t nonzero = 0;
		for (size_t i = 0; i < sh.len && i < sizeof(sh.id); i++)
			nonzero += sh.id[i] != 0;
		cr_assert_gt(nonzero, 0, "rank 0 shared an empty id");
		float buf[1000];
		for (int i = 0; i < 1000; i++)
			buf[i] = (float)i * 0.25f - 7;
		cr_assert_eq(be[b]->allreduce_mean(&ctx, buf, 1000), 0, "%s", util_last_error());
		for (int i = 0; i < 1000; i++)
			cr_assert_eq(buf[i], (float)i * 0.25f - 7, "buf[%d] = %g", i, (double)buf[i]);
		cr_assert_lt(be[b]->comm_init(&ctx, 0, 1, share, &sh), 0, "a second communicator");
		ops_ctx_release(&ctx);
		ran++;
	}
	if (!ran)
		cuda_not_built("the allreduce (no backend with its own)");
}

/* The cuda backend's own kernels, on the host: the same run beside the
 * CPU's, always. The first conv2d's bias is folded into the batchnorm
 * after it (the model decides: kernels/ops.h, ops_layer.fold_b): the loss
 * curve and the running mean must not see the difference, and the bias's
 * gradient is zero, written so. */
Test(kernels_gpu, host_harness_training_follows_the_cpu_run)
{
	double cpu[STEPS], host[STEPS];
	float cpu_db[8], cpu_rm[8];
	const char *skip = NULL;
	util_set_quiet(1);
	cr_assert_eq(train("cpu", 0, cpu, &skip), 1, "cpu: %s", skip);
	memcpy(cpu_db, db0, sizeof(db0));
	memcpy(cpu_rm, rm0, sizeof(rm0));
	cr_assert_eq(train("cudahost", 0, host, &skip), 1, "cudahost: %s", skip);
	for (int s = 0; s < STEPS; s++)
		cr_assert(fabs(host[s] - cpu[s]) <= 1e-3 + 2e-2 * fabs(cpu[s]),
			  "cudahost: step %d: loss %.6g, cpu %.6g", s, host[s], cpu[s]);
	for (int k = 0; k < 8; k++) {
		cr_assert_eq(db0[k], 0.0f, "cudahost: the folded bias's gradient [%d] is %g", k,
			     (double)db0[k]);
		cr_assert(fabs(cpu_db[k]) < 1e-4, "cpu: the bias's gradient [%d] is %g, not ~0", k,
			  (double)cpu_db[k]);
		cr_assert(fabs(rm0[k] - cpu_rm[k]) <= 1e-4 + 1e-3 * fabs(cpu_rm[k]),
			  "cudahost: running mean [%d] %g, cpu %g (the bias %g)", k, (double)rm0[k],
			  (double)cpu_rm[k], (double)bias0(k));
	}
}
