/* cudahost_backend.c: the `cudahost` backend: the cuda backend's own
 * kernels (kernels/cuda/cuda_<family>.cu, compiled for the host over
 * cuk_host.h) behind an op table, so that every test that runs every
 * backend (test_kernels_ref, test_kernels_refnet, the training tests)
 * checks them against kernels/ref on any machine, and `aah-trial
 * --backend cudahost` trains with them on a CPU, slowly.
 *
 * What it is not: cuDNN and cuBLASLt. Convolutions and dense layers are
 * ref's (a convolution's 16-bit tensors converted around it, and its bias
 * left out where the model folds it into a batchnorm, as the cuda
 * backend's are); device memory is host memory, an op's pointers are used
 * in place and its scratch is malloc'ed; nothing waits because nothing
 * runs behind the host's back. Its ledger counts what the kernels would
 * launch and move on a GPU. */
#include <stdlib.h>
#include <string.h>

#define CUK_HOST 1
#include "kernels/cuda/cuda.h"
#include "kernels/ref/ref.h"

/* A GPU's worth of blocks is a few here: every launch still runs blocks
 * of THREADS threads, stripes of rows and the finishing kernels, just
 * fewer of them. */
#define HOST_SMS 1
#define HOST_MAX_SCRATCH 32
#define HOST_MAX_BLOCKS 8

struct cudahost {
	struct cuk_run run;
	struct cuda_sums sums;
	struct ops_ledger ledger;
	unsigned tickets[CUDA_TICKETS];
	struct cuda_twins twins;
	struct {
		const char *p;
		size_t bytes;
	} block[HOST_MAX_BLOCKS];   /* "resident": where a twin may live beside */
	int nblock;
	void *scratch[HOST_MAX_SCRATCH];
	int nscratch;
};

static struct cudahost *host_of(struct ops_ctx *ctx)
{
	return ctx->priv;
}

const struct cuk_run *cudahost_run(struct ops_ctx *ctx)
{
	return &host_of(ctx)->run;
}

static void free_scratch(struct cudahost *h)
{
	for (int k = 0; k < h->nscratch; k++)
		free(h->scratch[k]);
	h->nscratch = 0;
}

int cudahost_begin(struct ops_ctx *ctx)
{
	free_scratch(host_of(ctx));
	return 0;
}

int cudahost_in(struct ops_ctx *ctx, const void *p, size_t bytes, void **dev)
{
	(void)ctx, (void)bytes;
	*dev = (void *)p;
	return 0;
}

int cudahost_out(struct ops_ctx *ctx, void *p, size_t bytes, int inout, void **dev)
{
	(void)ctx, (void)bytes, (void)inout;
	*dev = p;
	return 0;
}

/* Fresh memory for each request, poisoned with NaN bytes: a kernel that
 * reads scratch it did not write reads NaN. */
int cudahost_scratch(struct ops_ctx *ctx, size_t bytes, void **dev)
{
	struct cudahost *h = host_of(ctx);
	if (h->nscratch == HOST_MAX_SCRATCH)
		return error("cudahost: an op asked for scratch more than %d times", HOST_MAX_SCRATCH);
	bytes = cuda_scratch_bytes(bytes ? bytes : 1);
	if (posix_memalign(dev, 256, bytes))
		return error("cudahost: cannot allocate %zu bytes of scratch", bytes);
	memset(*dev, 0xff, bytes);
	h->scratch[h->nscratch++] = *dev;
	return 0;
}

int cudahost_end(struct ops_ctx *ctx)
{
	free_scratch(host_of(ctx));
	return 0;
}

static int host_init(struct ops_ctx *ctx)
{
	int one = cuda_sums_in_one(), twin = cuda_twin_wanted(), ahead = cuda_ahead_wanted();
	int add_dx = cuda_add_dx_wanted();
	if (one < 0 || twin < 0 || ahead < 0 || add_dx < 0)
		return -1;
	struct cudahost *h = xcalloc(1, sizeof(*h));
	h->run.sms = HOST_SMS;
	h->run.ledger = &h->ledger;
	h->run.sums = &h->sums;
	h->run.tickets = one ? h->tickets : NULL;
	h->run.twins = twin ? &h->twins : NULL;
	h->run.ahead = ahead;
	h->run.add_dx = add_dx;
	ctx->priv = h;
	return 0;
}

static void host_fini(struct ops_ctx *ctx)
{
	struct cudahost *h = host_of(ctx);
	if (!h)
		return;
	cuda_twins_drop(ctx, NULL, 0);
	free_scratch(h);
	free(h);
	ctx->priv = NULL;
}

/* ---- residency: host memory, in place; its blocks kept for the twins ---------- */

static int host_resident(struct ops_ctx *ctx, void *p, size_t bytes, size_t copy)
{
	(void)copy;
	struct cudahost *h = host_of(ctx);
	if (!p || !bytes)
		return 0;
	if (h->nblock == HOST_MAX_BLOCKS)
		return error("cudahost: more than %d resident blocks", HOST_MAX_BLOCKS);
	h->block[h->nblock].p = p;
	h->block[h->nblock++].bytes = bytes;
	return 0;
}

int cudahost_resident_at(struct ops_ctx *ctx, const void *p, size_t bytes, void **dev)
{
	struct cudahost *h = host_of(ctx);
	const char *q = p;
	for (int k = 0; k < h->nblock; k++)
		if (q >= h->block[k].p && q < h->block[k].p + h->block[k].bytes &&
		    bytes <= (size_t)(h->block[k].p + h->block[k].bytes - q)) {
			*dev = (void *)p;
			return 0;
		}
	return error("cudahost: %zu bytes at %p are not resident", bytes, p);
}

/* the host wrote there: the twins of what it wrote, converted again */
static int host_sync(struct ops_ctx *ctx, void *p, size_t bytes, int to_device)
{
	return to_device ? cuda_twins_refresh(ctx, p, bytes) : 0;
}

static void host_forget(struct ops_ctx *ctx, void *p)
{
	struct cudahost *h = host_of(ctx);
	for (int k = 0; k < h->nblock; k++)
		if (h->block[k].p == p) {
			cuda_twins_drop(ctx, p, h->block[k].bytes);
			h->block[k] = h->block[--h->nblock];
			return;
		}
}

/* As the cuda backend: bf16 activations where every op takes them, fp16
 * convolutions on fp32 tensors (kernels/cuda/cuda_backend.c). */
static int host_set_precision(struct ops_ctx *ctx, const char *precision)
{
	if (ref_set_precision(ctx, precision))
		return -1;
	ctx->act_type = ctx->conv_type == OPS_BF16 ? OPS_BF16 : OPS_F32;
	return 0;
}

static struct ops_ledger *host_ledger(struct ops_ctx *ctx)
{
	return &host_of(ctx)->ledger;
}

/* ---- convolution and dense: ref's ---------------------------------------------------- */

/* count values of type t at p as fp32, in a new buffer (NULL for NULL) */
static float *widened(const void *p, size_t count, enum ops_dtype t)
{
	if (!p)
		return NULL;
	float *f = xmalloc((count ? count : 1) * sizeof(float));
	if (t == OPS_BF16)
		for (size_t i = 0; i < count; i++)
			f[i] = ref_bf16_to_f32(((const uint16_t *)p)[i]);
	else
		memcpy(f, p, count * sizeof(float));
	return f;
}

static void narrowed(void *p, const float *f, size_t count, enum ops_dtype t)
{
	if (!p)
		return;
	if (t == OPS_BF16)
		for (size_t i = 0; i < count; i++)
			((uint16_t *)p)[i] = ref_f32_to_bf16(f[i]);
	else
		memcpy(p, f, count * sizeof(float));
}

/* l as ref computes it: fp32 tensors, and no bias where it is folded */
static struct ops_layer as_ref(const struct ops_layer *l, int train)
{
	struct ops_layer t = *l;
	t.in_type = NULL;
	t.out_type = OPS_F32;
	if (l->bias_folded && train)
		t.cfg.bias = 0;
	return t;
}

/* The weights as the cuda backend's convolution reads them: their twin
 * where one is kept (ops_backend.twin), widened (ref rounds them to the
 * convolution's type itself, which leaves a twin's values as they are),
 * in t->w; NULL, and t->w left, where none is. */
static float *twin_weights(struct ops_ctx *ctx, struct ops_layer *t)
{
	size_t nw = (size_t)t->cfg.units * t->cfg.kernel * t->cfg.kernel * t->in[0].c;
	enum ops_dtype type;
	void *tw = ctx->conv_type != OPS_F32 ? cuda_twin_at(ctx, t->w, nw, &type) : NULL;
	if (!tw || type != ctx->conv_type)
		return NULL;
	float *w = xmalloc(nw * sizeof(float));
	for (size_t i = 0; i < nw; i++)
		w[i] = type == OPS_BF16 ? ref_bf16_to_f32(((const uint16_t *)tw)[i])
					: ref_f16_to_f32(((const uint16_t *)tw)[i]);
	t->w = w;
	return w;
}

static int conv_forward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			float *y, int train)
{
	size_t nx = (size_t)n * ops_shape_size(&l->in[0]), ny = (size_t)n * ops_shape_size(&l->out);
	struct ops_layer t = as_ref(l, train);
	float *fx = widened(x[0], nx, ops_in_type(l, 0)), *fy = xmalloc(ny * sizeof(float));
	float *tw = twin_weights(ctx, &t);
	const float *xs[1] = {fx};
	int rc = ref_conv_ops.forward(ctx, &t, n, xs, fy, train);
	narrowed(y, fy, ny, l->out_type);
	l->ran = l->ran_out = ctx->conv_type;
	free(fx), free(fy), free(tw);
	return rc;
}

static int conv_backward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			 const float *y, const float *dy, float *const *dx)
{
	(void)y;
	size_t nx = (size_t)n * ops_shape_size(&l->in[0]), ny = (size_t)n * ops_shape_size(&l->out);
	struct ops_layer t = as_ref(l, 1);
	enum ops_dtype tx = ops_in_type(l, 0);
	float *fx = widened(x[0], nx, tx), *fdy = widened(dy, ny, l->out_type);
	float *fdx = dx[0] ? xmalloc(nx * sizeof(float)) : NULL, *tw = twin_weights(ctx, &t);
	const float *xs[1] = {fx};
	float *dxs[1] = {fdx};
	int rc = ref_conv_ops.backward(ctx, &t, n, xs, NULL, fdy, dxs);
	if (l->add_dx0 && fdx) {   /* cuDNN's blend: added in fp32, rounded once */
		float *had = widened(dx[0], nx, tx);
		for (size_t i = 0; i < nx; i++)
			fdx[i] += had[i];
		free(had);
	}
	narrowed(dx[0], fdx, nx, tx);
	l->ran = l->ran_out = ctx->conv_type;
	free(fx), free(fdy), free(fdx), free(tw);
	return rc;
}

/* The cuda backend's conv_adds_dx0 where the host knows it: the input
 * read as it is stored, in no frame (no measuring here). */
static int conv_adds_dx0(struct ops_ctx *ctx, const struct ops_layer *l, int n)
{
	(void)n;
	return host_of(ctx)->run.add_dx && !cuda_conv_framed(&l->cfg) &&
	       ops_in_type(l, 0) == ctx->conv_type;
}

static const struct ops_layer_ops host_conv_ops = {
	.type = OPS_CONV2D,
	.name = "convolution (ref's, in the cuda host harness)",
	.forward = conv_forward,
	.backward = conv_backward,
	.bf16 = 1,
	.folds_bias = 1,
	.adds_dx0 = conv_adds_dx0,
};

const struct ops_backend ops_cudahost_backend = {
	.name = "cudahost",
	.caps = OPS_CAP_FP32 | OPS_CAP_BF16 | OPS_CAP_FP16,
	.init = host_init,
	.fini = host_fini,
	.set_precision = host_set_precision,
	.layer = {
		[OPS_CONV2D] = &host_conv_ops,
		[OPS_BATCHNORM] = &cudahost_bn_ops,
		[OPS_RELU] = &cudahost_relu_ops,
		[OPS_MAXPOOL] = &cudahost_maxpool_ops,
		[OPS_AVGPOOL] = &cudahost_avgpool_ops,
		[OPS_GLOBAL_AVG_POOL] = &cudahost_gap_ops,
		[OPS_DENSE] = &ref_dense_ops,
		[OPS_DROPOUT] = &cudahost_dropout_ops,
		[OPS_ADD] = &cudahost_add_ops,
		[OPS_CONCAT] = &cudahost_concat_ops,
		[OPS_FLATTEN] = &cudahost_flatten_ops,
	},
	.loss = cudahost_loss,
	.loss_read = cudahost_loss_read,
	.sgd = cudahost_sgd,
	.accumulate = cudahost_accumulate,
	.unscale = cudahost_unscale,
	.cast = cudahost_cast,
	.resident = host_resident,
	.sync = host_sync,
	.forget = host_forget,
	.twin = cudahost_twin,
	.ledger = host_ledger,
};
