/* ops.c: the table of compute backends. */
#include <stdio.h>
#include <string.h>

#include "kernels/ops.h"
#include "strbuf.h" /* strbuf_addf: the list of backends in an error */
#include "util.h"

extern const struct ops_backend ops_cpu_backend; /* kernels/cpu/cpu_backend.c */
extern const struct ops_backend ops_ref_backend; /* kernels/ref/ref_backend.c */
extern const struct ops_backend ops_refdev_backend; /* kernels/ref/ref_device.c */
extern const struct ops_backend ops_cudahost_backend; /* kernels/cudahost/cudahost_backend.c */
#if AAH_HAVE_CUDA
extern const struct ops_backend ops_cuda_backend; /* kernels/cuda/cuda_backend.c */
#endif

static const struct ops_backend *const backends[] = {
	&ops_cpu_backend,
	&ops_ref_backend,
	&ops_refdev_backend,
	&ops_cudahost_backend,
#if AAH_HAVE_CUDA
	&ops_cuda_backend,
#endif
};

const struct ops_backend *const *ops_backends(size_t *count)
{
	*count = ARRAY_SIZE(backends);
	return backends;
}

const struct ops_backend *ops_backend_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(backends); i++)
		if (!strcmp(backends[i]->name, name))
			return backends[i];
	return NULL;
}

int ops_conv_algo_parse(const char *name)
{
	if (!strcmp(name, "auto"))
		return OPS_CONV_AUTO;
	if (!strcmp(name, "direct"))
		return OPS_CONV_DIRECT;
	return -1;
}

int ops_resident(struct ops_ctx *ctx, void *p, size_t bytes, size_t copy)
{
	if (copy > bytes)
		BUG("%zu bytes to copy of a block of %zu", copy, bytes);
	return ctx->be->resident ? ctx->be->resident(ctx, p, bytes, copy) : 0;
}

int ops_sync(struct ops_ctx *ctx, void *p, size_t bytes, int to_device)
{
	return ctx->be->sync ? ctx->be->sync(ctx, p, bytes, to_device) : 0;
}

void ops_forget(struct ops_ctx *ctx, void *p)
{
	if (ctx->be->forget)
		ctx->be->forget(ctx, p);
}

size_t ops_twin_bytes(const struct ops_ctx *ctx, size_t count)
{
	return ctx->be->twin && ctx->conv_type != OPS_F32 ? count * ops_dtype_size(ctx->conv_type)
							   : 0;
}

int ops_twin(struct ops_ctx *ctx, const float *p, size_t count)
{
	return ops_twin_bytes(ctx, count) ? ctx->be->twin(ctx, p, count, ctx->conv_type) : 0;
}

int ops_finish(struct ops_ctx *ctx)
{
	return ctx->be->finish ? ctx->be->finish(ctx) : 0;
}

int ops_loss_read(struct ops_ctx *ctx, double *loss_sum, long *correct)
{
	return ctx->be->loss_read ? ctx->be->loss_read(ctx, loss_sum, correct) : 0;
}

struct ops_ledger *ops_ledger_of(struct ops_ctx *ctx)
{
	return ctx->be->ledger ? ctx->be->ledger(ctx) : NULL;
}

int ops_precision_known(const char *name)
{
	static const char *const names[] = { "auto", "fast", "fp32", "bf16", "fp16" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return 1;
	return 0;
}

const char *ops_precision_auto(struct ops_ctx *ctx)
{
	return ctx->be->default_precision ? ctx->be->default_precision(ctx) : "fp32";
}

const char *ops_precision_pick(struct ops_ctx *ctx, const char *asked)
{
	if (!strcmp(asked, "fast") && ctx->be->fast_precision)
		return ctx->be->fast_precision(ctx);
	if (!strcmp(asked, "fast") || !strcmp(asked, "auto"))
		return ops_precision_auto(ctx);
	return asked;
}

int ops_precision_emulated(struct ops_ctx *ctx, const char *prec)
{
	return !strcmp(prec, "bf16") && ctx->be->fast_precision &&
	       strcmp(ctx->be->fast_precision(ctx), "bf16");
}

const char *ops_gpu_precision(int cc_major)
{
	return cc_major >= 8 ? "bf16" : "fp32";
}

int ops_gpu_supported(const char *name, int major, int minor, char *why, size_t why_size)
{
	if (major >= 8)
		return 1;
	snprintf(why, why_size,
		 "%s has compute capability %d.%d: aah's cuda backend needs 8.0 or newer (Ampere, "
		 "Hopper, Blackwell: its kernels are built for sm_80, sm_90 and PTX compute_90, "
		 "and it trains in bf16)%s",
		 name, major, minor,
		 major < 7 || (major == 7 && minor < 5)
			 ? "; CUDA 13, which it is built with, cannot target this device at all"
			 : "");
	return 0;
}

const char *ops_auto_pick(const char *gpu, int devices, const char *reason, char *why,
			  size_t why_size)
{
	if (devices > 0) {
		snprintf(why, why_size, "%d CUDA device%s visible", devices, devices == 1 ? "" : "s");
		return gpu;
	}
	if (devices < 0)
		snprintf(why, why_size, "no usable CUDA device: %s; training on the CPU", reason);
	else
		snprintf(why, why_size, "no CUDA device visible: %s", reason);
	return "cpu";
}

const char *ops_backend_auto(char *why, size_t why_size)
{
	char none[512] = "this aah-trial is built without a GPU backend (make config-info)";
	for (size_t i = 0; i < ARRAY_SIZE(backends); i++) {
		if (!backends[i]->visible_devices)
			continue;
		int n = backends[i]->visible_devices(none, sizeof(none));
		if (n)
			return ops_auto_pick(backends[i]->name, n, none, why, why_size);
	}
	return ops_auto_pick(NULL, 0, none, why, why_size);
}

int ops_ctx_init(struct ops_ctx *ctx, const char *backend, int threads, uint64_t seed)
{
	return ops_ctx_init_on(ctx, backend, threads, seed, 0);
}

int ops_ctx_init_on(struct ops_ctx *ctx, const char *backend, int threads, uint64_t seed,
		    int device)
{
	char why[640];
	memset(ctx, 0, sizeof(*ctx));
	if (!strcmp(backend, "auto"))
		backend = ops_backend_auto(why, sizeof(why));
	ctx->device = device;
	ctx->be = ops_backend_find(backend);
	if (!ctx->be && !strcmp(backend, "cuda"))
		return error("compute backend 'cuda' is not built in: this aah-trial was built "
			     "without nvcc and cuDNN (make config-info shows what the build found)");
	if (!ctx->be) {
		struct strbuf names;
		strbuf_init(&names, 0);
		for (size_t i = 0; i < ARRAY_SIZE(backends); i++)
			strbuf_addf(&names, "%s%s", i ? ", " : "", backends[i]->name);
		error("unknown compute backend '%s' (%s)", backend, strbuf_str(&names));
		strbuf_release(&names);
		return -1;
	}
	ctx->threads = threads;
	ctx->seed = seed;
	return ctx->be->init(ctx);
}

void ops_ctx_release(struct ops_ctx *ctx)
{
	if (ctx->be && ctx->be->fini)
		ctx->be->fini(ctx);
	ctx->be = NULL;
}

/* Where element (i, p = y*w + x, ch) of a batch lies in b-wide channel
 * blocks (NHWC: one block of all C channels). */
static size_t layout_index(size_t b, size_t i, size_t p, size_t ch, size_t hw, size_t C)
{
	return ((i * C / b + ch / b) * hw + p) * b + ch % b;
}

void ops_layout_convert(float *dst, enum ops_layout to, const float *src,
			enum ops_layout from, int n, const struct ops_shape *s)
{
	size_t hw = (size_t)s->h * s->w, C = (size_t)s->c;
	size_t bt = to == OPS_NHWC ? C : (size_t)ops_layout_block(to);
	size_t bf = from == OPS_NHWC ? C : (size_t)ops_layout_block(from);
	if (to == from) {
		memcpy(dst, src, sizeof(float) * n * hw * C);
		return;
	}
	for (size_t i = 0; i < (size_t)n; i++)
		for (size_t p = 0; p < hw; p++)
			for (size_t ch = 0; ch < C; ch++)
				dst[layout_index(bt, i, p, ch, hw, C)] =
					src[layout_index(bf, i, p, ch, hw, C)];
}

/* splitmix64: a tiny counter-based generator for dropout masks. */
static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint64_t ops_dropout_base(const struct ops_ctx *ctx, const struct ops_layer *l)
{
	return mix64(ctx->seed ^ mix64(ctx->step * 1000003u + (uint64_t)l->index));
}

void ops_dropout_mask(const struct ops_ctx *ctx, const struct ops_layer *l, size_t count,
		      uint8_t *mask)
{
	uint64_t base = ops_dropout_base(ctx, l);
	/* four 16-bit uniforms per hash: the rate is honoured to 1/65536 */
	uint32_t threshold = (uint32_t)((double)l->cfg.rate * 65536.0);
	for (size_t i = 0; i < count; i += 4) {
		uint64_t r = mix64(base + i);
		for (size_t k = 0; k < 4 && i + k < count; k++)
			mask[i + k] = ((r >> (16 * k)) & 0xffff) >= threshold;
	}
}
