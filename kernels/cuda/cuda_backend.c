/* cuda_backend.c: the `cuda` op table, its context (device, stream, cuDNN
 * and cuBLASLt handles), the staging arena of kernels/cuda/cuda.h, and the
 * loss, SGD and accumulation ops. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/cuda.h"

/* ---- context ------------------------------------------------------------------ */

static void cuda_fini(struct ops_ctx *ctx);

static int cuda_open(struct ops_ctx *ctx)
{
	struct cuda_ctx *c = ctx->priv;
	/* CUDA_VISIBLE_DEVICES (set by the runner's GPU slots) picks the device;
	 * the trainer uses the first it can see */
	CUDA_CHECK(cudaSetDevice(c->device));
	CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
	CUDNN_CHECK(cudnnCreate(&c->dnn));
	CUDNN_CHECK(cudnnSetStream(c->dnn, c->stream));
	CUBLAS_CHECK(cublasLtCreate(&c->lt));
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
	if (cuda_open(ctx)) {
		cuda_fini(ctx);
		return -1;
	}
	return 0;
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
	if (c->stream)
		cudaStreamSynchronize(c->stream);
	cuda_comm_free(c);
	for (int k = 0; k < c->nmirror; k++)
		cudaFree(c->mirror[k].dev);
	cudaFree(c->arena);
	free_spills(c);
	if (c->lt)
		cublasLtDestroy(c->lt);
	if (c->dnn)
		cudnnDestroy(c->dnn);
	if (c->stream)
		cudaStreamDestroy(c->stream);
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
	CUDA_CHECK(cudaStreamSynchronize(cuda_ctx(ctx)->stream));
	return 0;
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
		CUDA_CHECK(cudaStreamSynchronize(c->stream));
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
							   c->stream));
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
	if (copy_in)
		CUDA_CHECK(cudaMemcpyAsync(*dev, p, bytes, cudaMemcpyHostToDevice, c->stream));
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
		if (c->st[k].out)
			CUDA_CHECK(cudaMemcpyAsync((void *)c->st[k].host, c->st[k].dev, c->st[k].bytes,
						   cudaMemcpyDeviceToHost, c->stream));
	if (c->nst)
		CUDA_CHECK(cudaStreamSynchronize(c->stream));
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
		CUDA_CHECK(cudaMemcpyAsync(m->dev, p, copy, cudaMemcpyHostToDevice, c->stream));
	if (bytes > copy)
		CUDA_CHECK(cudaMemsetAsync(m->dev + copy, 0, bytes - copy, c->stream));
	CUDA_CHECK(cudaStreamSynchronize(c->stream));
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
		CUDA_CHECK(cudaMemcpyAsync(d, p, bytes, cudaMemcpyHostToDevice, c->stream));
	else
		CUDA_CHECK(cudaMemcpyAsync(p, d, bytes, cudaMemcpyDeviceToHost, c->stream));
	CUDA_CHECK(cudaStreamSynchronize(c->stream));
	return 0;
}

static void cuda_forget(struct ops_ctx *ctx, void *p)
{
	struct cuda_ctx *c = cuda_ctx(ctx);
	for (int k = 0; k < c->nmirror; k++)
		if (c->mirror[k].host == p) {
			cudaStreamSynchronize(c->stream);   /* no op may still use it */
			cudaFree(c->mirror[k].dev);
			c->mirror[k] = c->mirror[--c->nmirror];
			return;
		}
}

/* ---- loss, SGD, accumulate ------------------------------------------------------ */

int cuda_loss(struct ops_ctx *ctx, int n, int classes, const float *logits, const int *labels,
	      float smoothing, float *dlogits, double *loss_sum, long *correct)
{
	struct cuda_ctx *c = cuda_ctx(ctx);
	void *z, *t, *dz = NULL, *loss, *hit, *bad;
	size_t nz = (size_t)n * classes * sizeof(float);
	if (n <= 0)
		return 0;
	if (cuda_begin(ctx) || cuda_in(ctx, logits, nz, &z) ||
	    cuda_in(ctx, labels, (size_t)n * sizeof(int), &t) ||
	    (dlogits && cuda_out(ctx, dlogits, nz, 0, &dz)) ||
	    cuda_scratch(ctx, (size_t)n * sizeof(double), &loss) ||
	    cuda_scratch(ctx, (size_t)n * sizeof(int) + sizeof(int), &hit))
		return -1;
	bad = (int *)hit + n;
	CUDA_LAUNCH(cuk_loss(c->stream, n, classes, z, t, smoothing, dz, loss, hit, bad));
	/* the per-sample results come back to be summed here: the one host
	 * synchronisation of a training step */
	double *hl = xmalloc(sizeof(double) * (n ? n : 1));
	int *hh = xmalloc(sizeof(int) * ((size_t)n + 1));
	int rc = 0;
	if (cudaMemcpyAsync(hl, loss, sizeof(double) * n, cudaMemcpyDeviceToHost, c->stream) ||
	    cudaMemcpyAsync(hh, hit, sizeof(int) * ((size_t)n + 1), cudaMemcpyDeviceToHost,
			    c->stream) ||
	    cuda_end(ctx) || cudaStreamSynchronize(c->stream))
		rc = error("cuda: cannot read the loss back: %s", cudaGetErrorString(cudaGetLastError()));
	else if (hh[n])
		rc = error("label %d of sample %d is outside [0, %d)", labels[hh[n] - 1], hh[n] - 1,
			   classes);
	for (int i = 0; !rc && i < n; i++) {
		*loss_sum += hl[i];
		*correct += hh[i];
	}
	free(hl);
	free(hh);
	return rc;
}

int cuda_sgd(struct ops_ctx *ctx, size_t count, float *w, const float *g, float *v, float lr,
	     float mu, float wd)
{
	void *dw, *dg, *dv;
	size_t bytes = count * sizeof(float);
	if (!count)
		return 0;
	if (cuda_begin(ctx) || cuda_out(ctx, w, bytes, 1, &dw) || cuda_in(ctx, g, bytes, &dg) ||
	    cuda_out(ctx, v, bytes, 1, &dv))
		return -1;
	CUDA_LAUNCH(cuk_sgd(cuda_ctx(ctx)->stream, count, dw, dg, dv, lr, mu, wd));
	return cuda_end(ctx);
}

int cuda_accumulate(struct ops_ctx *ctx, size_t count, enum ops_dtype t, void *y, const void *x)
{
	void *dy, *dx;
	size_t bytes = cuda_bytes(count, t);
	if (t != OPS_F32 && t != OPS_BF16) /* the model stores no tensor otherwise */
		return error("accumulate: the cuda backend's tensors are fp32 or bf16");
	if (!count)
		return 0;
	if (cuda_begin(ctx) || cuda_out(ctx, y, bytes, 1, &dy) || cuda_in(ctx, x, bytes, &dx))
		return -1;
	CUDA_LAUNCH(cuk_accumulate(cuda_ctx(ctx)->stream, cuda_type(t), count, dy, dx));
	return cuda_end(ctx);
}

/* One pass over the gradients, and one int read back: the step's only wait
 * besides the loss. */
int cuda_unscale(struct ops_ctx *ctx, size_t count, float *g, float inv, int *finite)
{
	struct cuda_ctx *c = cuda_ctx(ctx);
	void *dg, *dbad;
	int bad = 0;
	*finite = 1;
	if (!count)
		return 0;
	if (cuda_begin(ctx) || cuda_out(ctx, g, count * sizeof(float), 1, &dg) ||
	    cuda_out(ctx, &bad, sizeof(bad), 0, &dbad))
		return -1;
	CUDA_CHECK(cudaMemsetAsync(dbad, 0, sizeof(bad), c->stream));
	CUDA_LAUNCH(cuk_unscale(c->stream, count, dg, inv, dbad));
	if (cuda_end(ctx))
		return -1;
	*finite = !bad;
	return 0;
}

/* The CUK_* kind of cuk_cast from xt to yt; -1 unless one side is fp32 and
 * the other bf16 or fp16. */
static int cast_kind(enum ops_dtype xt, enum ops_dtype yt)
{
	return xt == OPS_F32 && yt == OPS_BF16   ? CUK_F32_TO_BF16
	       : xt == OPS_BF16 && yt == OPS_F32 ? CUK_BF16_TO_F32
	       : xt == OPS_F32 && yt == OPS_F16  ? CUK_F32_TO_F16
	       : xt == OPS_F16 && yt == OPS_F32  ? CUK_F16_TO_F32
						 : -1;
}

int cuda_convert(struct ops_ctx *ctx, size_t count, const void *x, enum ops_dtype xt, void *y,
		 enum ops_dtype yt)
{
	int kind = cast_kind(xt, yt);
	if (kind < 0)
		return error("cast from type %d to type %d: one side must be fp32, the other bf16 or fp16",
			     (int)xt, (int)yt);
	if (count)
		CUDA_LAUNCH(cuk_cast(cuda_ctx(ctx)->stream, count, kind, x, y));
	return 0;
}

int cuda_cast(struct ops_ctx *ctx, size_t count, const void *x, enum ops_dtype xt, void *y,
	      enum ops_dtype yt)
{
	void *dx, *dy;
	if (!count) /* nothing to stage: the types are still checked */
		return cuda_convert(ctx, 0, x, xt, y, yt);
	if (cuda_begin(ctx) || cuda_in(ctx, x, cuda_bytes(count, xt), &dx) ||
	    cuda_out(ctx, y, cuda_bytes(count, yt), 0, &dy) ||
	    cuda_convert(ctx, count, dx, xt, dy, yt))
		return -1;
	return cuda_end(ctx);
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
	.sgd = cuda_sgd,
	.accumulate = cuda_accumulate,
	.unscale = cuda_unscale,
	.cast = cuda_cast,
	.resident = cuda_resident,
	.sync = cuda_sync,
	.forget = cuda_forget,
#ifdef AAH_HAVE_NCCL
	.comm_init = cuda_comm_init,
	.allreduce_mean = cuda_allreduce_mean,
#endif
	.visible_devices = cuda_visible_devices,
	.device_info = cuda_device_info,
	.finish = cuda_finish,
};
