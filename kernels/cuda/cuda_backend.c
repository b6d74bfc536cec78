/* cuda_backend.c: the `cuda` op table, its context (device, stream, cuDNN
 * and cuBLASLt handles, the ledger, the loss's sums on the device), the
 * staging arena of kernels/cuda/cuda.h, device residency, the batch's
 * upload and the step's CUDA graph. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h> /* CUDA_KERNEL_NODE_PARAMS: a graph node's kernel, through the driver's entry point */

#include "kernels/cuda/cuda_ctx.h"

/* ---- context ------------------------------------------------------------------ */

static void cuda_fini(struct ops_ctx *ctx);
static int cuda_open(struct ops_ctx *ctx)
{
	struct cuda_ctx *c = ctx->priv;
	/* CUDA_VISIBLE_DEVICES (set by the runner's GPU slots) picks the device;
	 * the trainer uses the first it can see */
	CUDA_CHECK(cudaSetDevice(c->device));
	CUDA_CHECK(cudaStreamCreateWithFlags(&c->run.stream, cudaStreamNonBlocking));
	CUDA_CHECK(cudaDeviceGetAttribute(&c->run.sms, cudaDevAttrMultiProcessorCount, c->device));
	CUDA_CHECK(cudaMalloc((void **)&c->run.sums, sizeof(struct cuda_sums)));
	CUDA_CHECK(cudaMemsetAsync(c->run.sums, 0, sizeof(struct cuda_sums), c->run.stream));
	int one = cuda_sums_in_one(), ahead = cuda_ahead_wanted(), add_dx = cuda_add_dx_wanted();
	if (one < 0 || ahead < 0 || add_dx < 0)
		return -1;
	c->run.ahead = ahead;
	c->run.add_dx = add_dx;
	if (one) {
		CUDA_CHECK(cudaMalloc((void **)&c->run.tickets, CUDA_TICKETS * sizeof(unsigned)));
		CUDA_CHECK(cudaMemsetAsync(c->run.tickets, 0, CUDA_TICKETS * sizeof(unsigned),
					   c->run.stream));
	}
	c->run.ledger = &c->ledger;
	CUDNN_CHECK(cudnnCreate(&c->dnn));
	CUDNN_CHECK(cudnnSetStream(c->dnn, c->run.stream));
	c->blas = cuda_blaslt_open();
	if (!c->blas)
		return -1;
	CUBLAS_CHECK(c->blas->create(&c->lt));
	CUDA_CHECK(cudaStreamCreateWithFlags(&c->copy, cudaStreamNonBlocking));
	for (int k = 0; k < 2; k++)
		CUDA_CHECK(cudaEventCreateWithFlags(&c->copied[k], cudaEventDisableTiming));
	CUDA_CHECK(cudaEventCreateWithFlags(&c->taken, cudaEventDisableTiming));
	return 0;
}

/* Device d's name and capability through ops_gpu_supported: 1 when aah
 * runs on it, 0 with *why when not, -1 with the runtime's error in *why. */
static int cuda_device_usable(int d, char *why, size_t why_size)
{
	struct cudaDeviceProp p;
	cudaError_t e = cudaGetDeviceProperties(&p, d);
	if (e != cudaSuccess) {
		snprintf(why, why_size, "CUDA device %d: %s", d, cudaGetErrorString(e));
		return -1;
	}
	char name[300];
	snprintf(name, sizeof(name), "CUDA device %d (%.256s)", d, p.name);
	return ops_gpu_supported(name, p.major, p.minor, why, why_size);
}

/* cudaGetDeviceCount: 0 and the runtime's reason when there is none; -1
 * and the first one's reason when none of them can run aah. */
static int cuda_visible_devices(char *why, size_t why_size)
{
	int count = 0;
	cudaError_t e = cudaGetDeviceCount(&count);
	if (e != cudaSuccess || count <= 0) {
		snprintf(why, why_size, "%s", e != cudaSuccess ? cudaGetErrorString(e)
							       : "the driver lists none");
		return 0;
	}
	char first[512] = "";
	for (int d = 0; d < count; d++) {
		char w[512];
		if (cuda_device_usable(d, w, sizeof(w)) == 1)
			return count;
		if (!*first)
			snprintf(first, sizeof(first), "%s", w);
	}
	snprintf(why, why_size, "%s", first);
	return -1;
}

static int cuda_init(struct ops_ctx *ctx)
{
	char why[160];
	int count = 0;
	if (cudaGetDeviceCount(&count) != cudaSuccess || count <= 0) {
		cuda_visible_devices(why, sizeof(why));
		return error("no CUDA device: the cuda backend needs an NVIDIA GPU (%s)", why);
	}
	/* each rank its own device: its local rank among those it sees (one,
	 * where the launch gave each rank its own CUDA_VISIBLE_DEVICES) */
	int device = ctx->device > 0 ? ctx->device % count : 0;
	char refused[512];
	if (cuda_device_usable(device, refused, sizeof(refused)) != 1)
		return error("the cuda backend cannot run here: %s", refused);
	ctx->priv = xcalloc(1, sizeof(struct cuda_ctx));
	cuda_ctx(ctx)->device = device;
	const char *staged = getenv("AAH_CUDA_STAGED");
	cuda_ctx(ctx)->staged_only = staged && !strcmp(staged, "1");
	int twin = cuda_twin_wanted();
	if (twin < 0) {
		cuda_fini(ctx);
		return -1;
	}
	/* staged: no resident block for a twin to live beside */
	if (twin && !cuda_ctx(ctx)->staged_only)
		cuda_ctx(ctx)->run.twins = &cuda_ctx(ctx)->twins;
	if (cuda_open(ctx)) {
		cuda_fini(ctx);
		return -1;
	}
	return 0;
}

const struct cuk_run *cuda_run(struct ops_ctx *ctx)
{
	return &cuda_ctx(ctx)->run;
}

static void free_spills(struct cuda_ctx *c)
{
	for (int k = 0; k < c->nspill; k++)
		cudaFree(c->spill[k]);
	c->nspill = 0;
	c->spill_cap = c->spill_used = 0;
}

static void cuda_fini(struct ops_ctx *ctx)
{
	struct cuda_ctx *c = ctx->priv;
	if (!c)
		return;
	if (c->run.stream)
		cudaStreamSynchronize(c->run.stream);
	if (c->copy) {
		cudaStreamSynchronize(c->copy);
		cudaStreamDestroy(c->copy);
	}
	for (int k = 0; k < 2; k++) {
		cudaFreeHost(c->pinned[k]);
		if (c->copied[k])
			cudaEventDestroy(c->copied[k]);
	}
	if (c->taken)
		cudaEventDestroy(c->taken);
	for (int k = 0; k < c->ngraph; k++)
		cudaGraphExecDestroy(c->graph[k].exec);
	cuda_comm_free(c);
	cuda_twins_drop(ctx, NULL, 0);
	for (int k = 0; k < c->nmirror; k++)
		cudaFree(c->mirror[k].dev);
	cudaFree(c->arena);
	cudaFree(c->run.sums);
	cudaFree(c->run.tickets);
	free_spills(c);
	if (c->lt)
		c->blas->destroy(c->lt);
	if (c->dnn)
		cudnnDestroy(c->dnn);
	if (c->run.stream)
		cudaStreamDestroy(c->run.stream);
	free(c);
	ctx->priv = NULL;
}

/* The device's compute capability major (-1 after error()). */
static int cc_major(struct ops_ctx *ctx)
{
	int major = 0;
	CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
					  cuda_ctx(ctx)->device));
	return major;
}

/* fp32: conv2d runs cuDNN with CUDNN_FMA_MATH and dense cuBLASLt with
 * CUBLAS_COMPUTE_32F (no TF32). bf16 and fp16 (on every device the backend
 * starts on: 8.0 and up): convolutions read 16-bit operands on tensor
 * cores with fp32 accumulation (cuda_conv.c); weights, their gradients and
 * optimiser state are fp32 (the master copies). Under bf16 the model stores
 * activations and their gradients in bf16 wherever every op on a tensor
 * takes it (ops_layer_ops.bf16: all but dense, dropout and flatten), as the
 * CPU backend does with bf16 kernels. fp16 keeps them fp32, converting
 * around each convolution, and trains under the trainer's dynamic loss
 * scale (kernels/loss_scale.h). */
static int cuda_set_precision(struct ops_ctx *ctx, const char *precision)
{
	ctx->conv_type = ctx->act_type = OPS_F32;
	if (!strcmp(precision, "fp32"))
		return 0;
	int bf16 = !strcmp(precision, "bf16");
	if (!bf16 && strcmp(precision, "fp16"))
		return error("precision '%s' is not available on the cuda backend (fp32, bf16, fp16)",
			     precision);
	/* no capability check: cuda_init refused every device below 8.0
	 * (ops_gpu_supported), and from 8.0 both run on tensor cores */
	ctx->conv_type = bf16 ? OPS_BF16 : OPS_F16;
	ctx->act_type = bf16 ? OPS_BF16 : OPS_F32;
	return 0;
}

static const char *cuda_default_precision(struct ops_ctx *ctx)
{
	return ops_gpu_precision(cc_major(ctx));
}

static int cuda_finish(struct ops_ctx *ctx)
{
	CUDA_CHECK(cudaStreamSynchronize(cuda_stream(ctx)));
	ledger_sync(&cuda_ctx(ctx)->ledger);
	return 0;
}

static struct ops_ledger *cuda_ledger(struct ops_ctx *ctx)
{
	return &cuda_ctx(ctx)->ledger;
}

static int cuda_device_info(struct ops_ctx *ctx, struct ops_device *dev)
{
	struct cudaDeviceProp p;
	int d = cuda_ctx(ctx)->device;
	CUDA_CHECK(cudaGetDeviceProperties(&p, d));
	memset(dev, 0, sizeof(*dev));
	dev->index = d;
	snprintf(dev->name, sizeof(dev->name), "%.*s", (int)sizeof(dev->name) - 1, p.name);
	dev->mem_gib = (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0);
	dev->cc_major = p.major;
	dev->cc_minor = p.minor;
	size_t free_b = 0, total_b = 0;
	CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
	dev->mem_free = free_b;
	return 0;
}

/* ---- staging ----------------------------------------------------------------- */

int cuda_begin(struct ops_ctx *ctx)
{
	struct cuda_ctx *c = cuda_ctx(ctx);
	c->nst = 0;
	c->arena_used = 0;
	if (c->nspill) {   /* the last op outgrew the arena: one block of its total */
		CUDA_CHECK(cudaStreamSynchronize(c->run.stream));
		free_spills(c);
		CUDA_CHECK(cudaFree(c->arena));
		c->arena = NULL;
		c->arena_cap = c->arena_want;
		CUDA_CHECK(cudaMalloc((void **)&c->arena, c->arena_cap));
	}
	c->arena_want = 0;
	return 0;
}

int cuda_scratch(struct ops_ctx *ctx, size_t bytes, void **dev)
{
	struct cuda_ctx *c = cuda_ctx(ctx);
	bytes = cuda_scratch_bytes(bytes ? bytes : 1);
	c->arena_want += bytes;
	if (!c->nspill && c->arena_used + bytes <= c->arena_cap) {
		*dev = c->arena + c->arena_used;
		c->arena_used += bytes;
		return 0;
	}
	if (!c->nspill || c->spill_used + bytes > c->spill_cap) {
		/* a new spill block, at least as large as all the op asked so far */
		if (c->nspill == CUDA_MAX_SPILLS)
			return error("cuda: an op asked for device scratch %d times past its arena",
				     CUDA_MAX_SPILLS);
		size_t cap = 2 * bytes > c->arena_want ? 2 * bytes : c->arena_want;
		CUDA_CHECK(cudaMalloc((void **)&c->spill[c->nspill], cap));
		c->nspill++;
		c->spill_cap = cap;
		c->spill_used = 0;
	}
	*dev = c->spill[c->nspill - 1] + c->spill_used;
	c->spill_used += bytes;
	return 0;
}

/* Is p device-accessible (device or managed memory)? Its device address. */
static int device_address(const void *p, void **dev)
{
	struct cudaPointerAttributes a;
	CUDA_CHECK(cudaPointerGetAttributes(&a, p));
	*dev = a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged ? a.devicePointer
										    : NULL;
	return 0;
}

/* The mirror holding bytes at p (NULL: none); a range that starts in one
 * and runs past its end is a caller's bug. */
static const struct cuda_mirror *mirror_of(const struct cuda_ctx *c, const void *p, size_t bytes)
{
	const char *q = p;
	for (int k = 0; k < c->nmirror; k++) {
		const struct cuda_mirror *m = &c->mirror[k];
		if (q < m->host || q >= m->host + m->bytes)
			continue;
		if (bytes > (size_t)(m->host + m->bytes - q))
			BUG("cuda: %zu bytes at %p run past the end of a resident block", bytes, p);
		return m;
	}
	return NULL;
}

static int stage(struct ops_ctx *ctx, const void *p, size_t bytes, int copy_in, int out,
		 void **dev)
{
	struct cuda_ctx *c = cuda_ctx(ctx);
	*dev = NULL;
	if (!p)
		return 0;
	const struct cuda_mirror *m = mirror_of(c, p, bytes);
	if (m) {   /* resident: the device copy is the current one */
		*dev = m->dev + ((const char *)p - m->host);
		return 0;
	}
	if (device_address(p, dev))
		return -1;
	if (*dev)
		return 0;
	for (int k = 0; k < c->nst; k++)
		if (c->st[k].host == p && c->st[k].bytes >= bytes) {
			/* an output staged first and now read (in place) */
			if (copy_in && !c->st[k].filled) {
				CUDA_CHECK(cudaMemcpyAsync(c->st[k].dev, p, bytes, cudaMemcpyHostToDevice,
							   c->run.stream));
				ledger_copy(&c->ledger, LEDGER_H2D, (double)bytes);
				c->st[k].filled = 1;
			}
			c->st[k].out |= out;
			*dev = c->st[k].dev;
			return 0;
		}
	if (c->nst == CUDA_MAX_STAGES)
		return error("cuda: an op with more than %d host tensors", CUDA_MAX_STAGES);
	if (cuda_scratch(ctx, bytes, dev))
		return -1;
	c->st[c->nst++] = (struct cuda_stage){p, *dev, bytes, out, copy_in};
	if (copy_in) {
		CUDA_CHECK(cudaMemcpyAsync(*dev, p, bytes, cudaMemcpyHostToDevice, c->run.stream));
		ledger_copy(&c->ledger, LEDGER_H2D, (double)bytes);
	}
	return 0;
}

int cuda_in(struct ops_ctx *ctx, const void *p, size_t bytes, void **dev)
{
	return stage(ctx, p, bytes, 1, 0, dev);
}

int cuda_out(struct ops_ctx *ctx, void *p, size_t bytes, int inout, void **dev)
{
	return stage(ctx, p, bytes, inout, 1, dev);
}

int cuda_end(struct ops_ctx *ctx)
{
	struct cuda_ctx *c = cuda_ctx(ctx);
	for (int k = 0; k < c->nst; k++)
		if (c->st[k].out) {
			CUDA_CHECK(cudaMemcpyAsync((void *)c->st[k].host, c->st[k].dev, c->st[k].bytes,
						   cudaMemcpyDeviceToHost, c->run.stream));
			ledger_copy(&c->ledger, LEDGER_D2H, (double)c->st[k].bytes);
		}
	if (c->nst) {
		CUDA_CHECK(cudaStreamSynchronize(c->run.stream));
		ledger_sync(&c->ledger);
	}
	c->nst = 0;
	return 0;
}

/* ---- device residency ---------------------------------------------------------- */

/* The model's blocks (parameters to statistics, activations, their
 * gradients, scratch, masks) live on the device from here on: one
 * cudaMalloc each, its first `copy` bytes filled from the host once, the
 * rest set to zeros there (the host never wrote them: at AIPerf's batch
 * they are far more than the host's memory); ops then read and write them
 * in place and the step moves nothing over PCIe but the batch, the labels,
 * the logits' gradient and the loss read. */
static int cuda_resident(struct ops_ctx *ctx, void *p, size_t bytes, size_t copy)
{
	struct cuda_ctx *c = cuda_ctx(ctx);
	if (c->staged_only || !p || !bytes)
		return 0;
	if (mirror_of(c, p, 1) || mirror_of(c, (char *)p + bytes - 1, 1))
		return error("cuda: a block made resident twice");
	if (c->nmirror == CUDA_MAX_MIRRORS)
		return error("cuda: more than %d resident blocks", CUDA_MAX_MIRRORS);
	struct cuda_mirror *m = &c->mirror[c->nmirror];
	CUDA_CHECK(cudaMalloc((void **)&m->dev, bytes));
	m->host = p;
	m->bytes = bytes;
	c->nmirror++;
	if (copy)
		CUDA_CHECK(cudaMemcpyAsync(m->dev, p, copy, cudaMemcpyHostToDevice, c->run.stream));
	if (bytes > copy)
		CUDA_CHECK(cudaMemsetAsync(m->dev + copy, 0, bytes - copy, c->run.stream));
	CUDA_CHECK(cudaStreamSynchronize(c->run.stream));
	return 0;
}

/* The host copy of bytes at p brought up to date (to_device 0), or the
 * device copy after the host wrote there (1); not resident: nothing. */
static int cuda_sync(struct ops_ctx *ctx, void *p, size_t bytes, int to_device)
{
	struct cuda_ctx *c = cuda_ctx(ctx);
	const struct cuda_mirror *m = p && bytes ? mirror_of(c, p, bytes) : NULL;
	if (!m)
		return 0;
	char *d = m->dev + ((char *)p - m->host);
	if (to_device)
		CUDA_CHECK(cudaMemcpyAsync(d, p, bytes, cudaMemcpyHostToDevice, c->run.stream));
	else
		CUDA_CHECK(cudaMemcpyAsync(p, d, bytes, cudaMemcpyDeviceToHost, c->run.stream));
	CUDA_CHECK(cudaStreamSynchronize(c->run.stream));
	ledger_copy(&c->ledger, to_device ? LEDGER_H2D : LEDGER_D2H, (double)bytes);
	ledger_sync(&c->ledger);
	return to_device ? cuda_twins_refresh(ctx, p, bytes) : 0;
}

static void cuda_forget(struct ops_ctx *ctx, void *p)
{
	struct cuda_ctx *c = cuda_ctx(ctx);
	for (int k = 0; k < c->nmirror; k++)
		if (c->mirror[k].host == p) {
			cudaStreamSynchronize(c->run.stream);   /* no op may still use it */
			cuda_twins_drop(ctx, p, c->mirror[k].bytes);
			cudaFree(c->mirror[k].dev);
			c->mirror[k] = c->mirror[--c->nmirror];
			return;
		}
}

/* ---- the batch's way in, and replayed steps ------------------------------------ */

int cuda_resident_at(struct ops_ctx *ctx, const void *p, size_t bytes, void **dev)
{
	const struct cuda_mirror *m = mirror_of(cuda_ctx(ctx), p, bytes);
	if (!m)
		return error("cuda: %zu bytes at %p are not on the device (model_resident)", bytes, p);
	*dev = m->dev + ((const char *)p - m->host);
	return 0;
}

/* pinned[k] ready to be written: its last copy has landed (waiting, and
 * counting the wait, only when it has not) */
static int pinned_free(struct cuda_ctx *c, int k)
{
	if (!c->used[k])
		return 0;
	cudaError_t e = cudaEventQuery(c->copied[k]);
	if (e == cudaErrorNotReady) {
		CUDA_CHECK(cudaEventSynchronize(c->copied[k]));
		ledger_sync(&c->ledger);
	} else if (e != cudaSuccess) {
		CUDA_CHECK(e);
	}
	return 0;
}

/* Two pinned buffers of at least bytes each (every copy from them landed
 * before they are freed). */
static int pinned_fit(struct cuda_ctx *c, size_t bytes)
{
	if (bytes <= c->pinned_cap)
		return 0;
	for (int k = 0; k < 2; k++) {
		if (pinned_free(c, k))
			return -1;
		cudaFreeHost(c->pinned[k]);
		c->pinned[k] = NULL;
		c->used[k] = 0;
	}
	for (int k = 0; k < 2; k++)
		CUDA_CHECK(cudaMallocHost((void **)&c->pinned[k], bytes));
	c->pinned_cap = bytes;
	return 0;
}

/* The batch: host -> pinned[turn] (the host's copy), pinned -> staging on
 * the copy stream once the op stream has taken the last batch from there
 * (so it overlaps the ops queued before), then on the op stream, once it
 * has landed, staging -> the input slot (x converted to xt). */
static int cuda_upload(struct ops_ctx *ctx, const float *x, size_t count, const int *labels, int n,
		       const struct ops_step_vars *vars, void *staging, void *x_dev,
		       enum ops_dtype xt, int *labels_dev, struct ops_step_vars *vars_dev)
{
	struct cuda_ctx *c = cuda_ctx(ctx);
	size_t xb = count * sizeof(float), tail = sizeof(*vars) + (size_t)n * sizeof(int);
	char *st = NULL, *xd = NULL, *vd = NULL;
	if ((char *)labels_dev != (char *)vars_dev + sizeof(*vars))
		BUG("cuda_upload: the labels do not follow the vars in the input slot");
	if (cuda_resident_at(ctx, staging, xb + tail, (void **)&st) ||
	    cuda_resident_at(ctx, x_dev, cuda_bytes(count, xt), (void **)&xd) ||
	    cuda_resident_at(ctx, vars_dev, tail, (void **)&vd) || pinned_fit(c, xb + tail))
		return -1;
	int k = c->turn;
	c->turn ^= 1;
	if (pinned_free(c, k))
		return -1;
	memcpy(c->pinned[k], x, xb);
	memcpy(c->pinned[k] + xb, vars, sizeof(*vars));
	memcpy(c->pinned[k] + xb + sizeof(*vars), labels, (size_t)n * sizeof(int));
	if (c->taken_once)
		CUDA_CHECK(cudaStreamWaitEvent(c->copy, c->taken, 0));
	CUDA_CHECK(cudaMemcpyAsync(st, c->pinned[k], xb + tail, cudaMemcpyHostToDevice, c->copy));
	ledger_copy(&c->ledger, LEDGER_H2D, (double)(xb + tail));
	CUDA_CHECK(cudaEventRecord(c->copied[k], c->copy));
	c->used[k] = 1;
	CUDA_CHECK(cudaStreamWaitEvent(c->run.stream, c->copied[k], 0));
	if (xt == OPS_F32) {
		CUDA_CHECK(cudaMemcpyAsync(xd, st, xb, cudaMemcpyDeviceToDevice, c->run.stream));
		ledger_copy(&c->ledger, LEDGER_D2D, (double)xb);
	} else if (cuda_convert(ctx, count, st, OPS_F32, xd, xt)) {
		return -1;
	}
	CUDA_CHECK(cudaMemcpyAsync(vd, st + xb, tail, cudaMemcpyDeviceToDevice, c->run.stream));
	ledger_copy(&c->ledger, LEDGER_D2D, (double)tail);
	CUDA_CHECK(cudaEventRecord(c->taken, c->run.stream));
	c->taken_once = 1;
	c->vars_dev = (const struct ops_step_vars *)vd;
	return 0;
}

/* Records the op stream's work from here (nothing runs) until
 * cuda_captured; the ops read the step's variables from the last upload's. */
static int cuda_capture(struct ops_ctx *ctx)
{
	struct cuda_ctx *c = cuda_ctx(ctx);
	if (!c->vars_dev)
		return error("cuda: a step captured before any upload of its batch");
	if (c->ngraph == CUDA_MAX_GRAPHS)
		return error("cuda: more than %d captured steps", CUDA_MAX_GRAPHS);
	if (cuda_begin(ctx))   /* the arena at its full size: no allocation while capturing */
		return -1;
	CUDA_CHECK(cudaStreamBeginCapture(c->run.stream, cudaStreamCaptureModeThreadLocal));
	c->run.vars = c->vars_dev;
	return 0;
}

/* The driver's cuGraphKernelNodeGetParams, found at run time (aah links
 * no libcuda): it answers for every kernel node, a library's too, where
 * the runtime's errs on kernels it did not load. NULL: none. */
typedef CUresult (*node_params_fn)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS *);

static node_params_fn node_params(void)
{
	void *f = NULL;
	enum cudaDriverEntryPointQueryResult q;
	if (cudaGetDriverEntryPointByVersion("cuGraphKernelNodeGetParams", &f, 12000, cudaEnableDefault,
					     &q) != cudaSuccess || q != cudaDriverEntryPointSuccess)
		return NULL;
	return (node_params_fn)f;
}

/* Whether a node's kernel is one the ledger saw the backend launch: its
 * function or its context-free kernel is one of theirs. */
static int own_kernel(const struct ops_ledger *l, const CUDA_KERNEL_NODE_PARAMS *p)
{
	for (int i = 0; i < l->nfn; i++) {
		cudaFunction_t f = NULL;
		cudaKernel_t k = NULL;
		if (cudaGetFuncBySymbol(&f, l->fn[i]) == cudaSuccess && p->func && (CUfunction)f == p->func)
			return 1;
		if (cudaGetKernel(&k, l->fn[i]) == cudaSuccess && p->kern && (CUkernel)k == p->kern)
			return 1;
	}
	return 0;
}

/* How many of graph g's nodes there are, and how many run a kernel the
 * ledger saw the backend launch (its own; -1 where the driver cannot say). */
static int count_nodes(struct cuda_ctx *c, cudaGraph_t g, long *nodes, long *own)
{
	size_t n = 0;
	node_params_fn params = node_params();
	CUDA_CHECK(cudaGraphGetNodes(g, NULL, &n));
	cudaGraphNode_t *v = xmalloc(sizeof(*v) * (n ? n : 1));
	cudaError_t e = cudaGraphGetNodes(g, v, &n);
	*nodes = (long)n;
	*own = params ? 0 : -1;
	for (size_t i = 0; params && e == cudaSuccess && i < n; i++) {
		enum cudaGraphNodeType t;
		CUDA_KERNEL_NODE_PARAMS p;
		if ((e = cudaGraphNodeGetType(v[i], &t)) != cudaSuccess || t != cudaGraphNodeTypeKernel)
			continue;
		if (params((CUgraphNode)v[i], &p) == CUDA_SUCCESS)
			*own += own_kernel(&c->ledger, &p);
	}
	free(v);
	CUDA_CHECK(e);
	return 0;
}

static int cuda_captured(struct ops_ctx *ctx, int key, long *nodes, long *own)
{
	struct cuda_ctx *c = cuda_ctx(ctx);
	cudaGraph_t g = NULL;
	cudaGraphExec_t exec;
	c->run.vars = NULL;
	*nodes = *own = -1;
	cudaError_t e = cudaStreamEndCapture(c->run.stream, &g);
	if (e != cudaSuccess || !g) {
		cudaGetLastError();
		return error("cuda: the step's capture failed: %s", cudaGetErrorString(e));
	}
	if (count_nodes(c, g, nodes, own) ||
	    (e = cudaGraphInstantiate(&exec, g, 0)) != cudaSuccess) {
		cudaGraphDestroy(g);
		return e != cudaSuccess ? error("cuda: cannot instantiate the captured step: %s",
						cudaGetErrorString(e))
					: -1;
	}
	cudaGraphDestroy(g);
	c->graph[c->ngraph++] = (struct cuda_graph){key, exec};
	return 0;
}

static int cuda_replay(struct ops_ctx *ctx, int key)
{
	struct cuda_ctx *c = cuda_ctx(ctx);
	for (int k = 0; k < c->ngraph; k++)
		if (c->graph[k].key == key) {
			ledger_launch(&c->ledger, "graph replay", NULL, 0);
			CUDA_CHECK(cudaGraphLaunch(c->graph[k].exec, c->run.stream));
			return 0;
		}
	return error("cuda: no captured step of %d samples", key);
}

const struct ops_backend ops_cuda_backend = {
	.name = "cuda",
	.caps = OPS_CAP_FP32 | OPS_CAP_BF16 | OPS_CAP_FP16 | OPS_CAP_GPU,
	.init = cuda_init,
	.fini = cuda_fini,
	.set_precision = cuda_set_precision,
	.default_precision = cuda_default_precision,
	.layer = {
		[OPS_CONV2D] = &cuda_conv_ops,
		[OPS_BATCHNORM] = &cuda_bn_ops,
		[OPS_RELU] = &cuda_relu_ops,
		[OPS_MAXPOOL] = &cuda_maxpool_ops,
		[OPS_AVGPOOL] = &cuda_avgpool_ops,
		[OPS_GLOBAL_AVG_POOL] = &cuda_gap_ops,
		[OPS_DENSE] = &cuda_dense_ops,
		[OPS_DROPOUT] = &cuda_dropout_ops,
		[OPS_ADD] = &cuda_add_ops,
		[OPS_CONCAT] = &cuda_concat_ops,
		[OPS_FLATTEN] = &cuda_flatten_ops,
	},
	.loss = cuda_loss,
	.loss_read = cuda_loss_read,
	.sgd = cuda_sgd,
	.accumulate = cuda_accumulate,
	.unscale = cuda_unscale,
	.cast = cuda_cast,
	.resident = cuda_resident,
	.sync = cuda_sync,
	.forget = cuda_forget,
	.twin = cuda_twin,
#ifdef AAH_HAVE_NCCL
	.comm_init = cuda_comm_init,
	.allreduce_mean = cuda_allreduce_mean,
#endif
	.visible_devices = cuda_visible_devices,
	.device_info = cuda_device_info,
	.finish = cuda_finish,
	.ledger = cuda_ledger,
	.upload = cuda_upload,
	.capture = cuda_capture,
	.captured = cuda_captured,
	.replay = cuda_replay,
};
