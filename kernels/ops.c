/* ops.c: the table of compute backends. */
#include <string.h>

#include "kernels/ops.h"
#include "util.h"

extern const struct ops_backend ops_cpu_backend; /* kernels/cpu/cpu_backend.c */

static const struct ops_backend *const backends[] = {
	&ops_cpu_backend,
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

int ops_ctx_init(struct ops_ctx *ctx, const char *backend, int threads, uint64_t seed)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->be = ops_backend_find(backend);
	if (!ctx->be)
		return error("unknown compute backend '%s'", backend);
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
