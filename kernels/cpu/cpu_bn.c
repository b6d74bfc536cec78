/* cpu_bn.c: batch normalisation on oneDNN (per channel, NHWC or nChw16c,
 * fp32 or bf16 tensors; statistics, scale and shift always fp32), with the
 * running statistics updated here: run = m*run + (1-m)*batch, where the
 * batch variance is the unbiased one (count/(count-1)), as PyTorch does. */
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/cpu.h"

struct bn_plan {
	int n;
	dnnl_primitive_t fwd, inf, bwd;
	dnnl_memory_t src, dst, scale, shift, mean, var, diff_src, diff_dst, diff_scale,
		diff_shift;
	dnnl_memory_t ws;   /* fused relu mask, owned */
	void *scratch; /* diff_src when the caller needs none: (n, H, W, C) */
};

static void bn_free_plan(struct bn_plan *p)
{
	cpu_prim_free(&p->fwd);
	cpu_prim_free(&p->inf);
	cpu_prim_free(&p->bwd);
	dnnl_memory_t *m[] = {&p->src, &p->dst, &p->scale, &p->shift, &p->mean, &p->var,
			      &p->diff_src, &p->diff_dst, &p->diff_scale, &p->diff_shift, &p->ws};
	for (size_t i = 0; i < ARRAY_SIZE(m); i++)
		cpu_mem_free(m[i]);
	free(p->scratch);
	p->scratch = NULL;
	p->n = 0;
}

static int bn_build(struct ops_ctx *ctx, struct ops_layer *l, int n, struct bn_plan *p)
{
	dnnl_memory_desc_t data, ch;
	dnnl_primitive_desc_t fpd = NULL, ipd = NULL, bpd = NULL;
	unsigned flags = dnnl_use_scale | dnnl_use_shift | (l->cfg.fuse_relu ? dnnl_fuse_norm_relu : 0);
	float eps = l->cfg.eps;
	int rc = -1;

	if (cpu_md_act(&data, n, &l->in[0], ops_in_layout(l, 0), l->out_type) ||
	    cpu_md_1d(&ch, l->in[0].c))
		return -1;
	dnnl_batch_normalization_desc_t fd, id, bd;
	DNNL_CHECK(dnnl_batch_normalization_forward_desc_init(&fd, dnnl_forward_training, &data,
							      eps, flags));
	DNNL_CHECK(dnnl_batch_normalization_forward_desc_init(&id, dnnl_forward_inference, &data,
							      eps, flags | dnnl_use_global_stats));
	DNNL_CHECK(dnnl_batch_normalization_backward_desc_init(&bd, dnnl_backward, &data, &data,
							       eps, flags));
	if (cpu_pd_create(ctx, &fpd, &fd, NULL, NULL) || cpu_pd_create(ctx, &ipd, &id, NULL, NULL) ||
	    cpu_pd_create(ctx, &bpd, &bd, NULL, fpd))
		goto out;
	if (cpu_prim_create(ctx, &p->fwd, fpd) || cpu_prim_create(ctx, &p->inf, ipd) ||
	    cpu_prim_create(ctx, &p->bwd, bpd))
		goto out;
	const dnnl_memory_desc_t *ws = dnnl_primitive_desc_query_md(fpd, dnnl_query_workspace_md, 0);
	if (ws && ws->ndims > 0 &&
	    dnnl_memory_create(&p->ws, ws, cpu_ctx(ctx)->eng, DNNL_MEMORY_ALLOCATE) != dnnl_success) {
		error("batchnorm: cannot allocate the fused relu workspace");
		goto out;
	}
	if (cpu_mem(ctx, &p->src, &data) || cpu_mem(ctx, &p->dst, &data) ||
	    cpu_mem(ctx, &p->diff_src, &data) || cpu_mem(ctx, &p->diff_dst, &data) ||
	    cpu_mem(ctx, &p->scale, &ch) || cpu_mem(ctx, &p->shift, &ch) ||
	    cpu_mem(ctx, &p->mean, &ch) || cpu_mem(ctx, &p->var, &ch) ||
	    cpu_mem(ctx, &p->diff_scale, &ch) || cpu_mem(ctx, &p->diff_shift, &ch))
		goto out;
	p->n = n;
	rc = 0;
out:
	cpu_pd_free(&fpd);
	cpu_pd_free(&ipd);
	cpu_pd_free(&bpd);
	if (rc)
		bn_free_plan(p);
	return rc;
}

static struct bn_plan *bn_plan(struct ops_ctx *ctx, struct ops_layer *l, int n)
{
	struct bn_plan *p = l->priv;
	if (!p)
		p = l->priv = xcalloc(1, sizeof(*p));
	if (p->n == n)
		return p;
	bn_free_plan(p);
	return bn_build(ctx, l, n, p) ? NULL : p;
}

/* y from x: training (the batch's statistics computed into mean and var)
 * or inference (normalised by the given mean and var) */
static int bn_exec(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *x, float *y,
		   int train, float *mean, float *var)
{
	struct bn_plan *p = bn_plan(ctx, l, n);
	if (!p)
		return error("batchnorm: cannot build a oneDNN primitive for batch %d", n);
	if (cpu_set(p->src, x) || cpu_set(p->dst, y) || cpu_set(p->scale, l->gamma) ||
	    cpu_set(p->shift, l->beta) || cpu_set(p->mean, mean) || cpu_set(p->var, var))
		return -1;
	dnnl_exec_arg_t args[] = {
		{DNNL_ARG_SRC, p->src}, {DNNL_ARG_DST, p->dst}, {DNNL_ARG_SCALE, p->scale},
		{DNNL_ARG_SHIFT, p->shift}, {DNNL_ARG_MEAN, p->mean}, {DNNL_ARG_VARIANCE, p->var},
		{DNNL_ARG_WORKSPACE, p->ws},
	};
	return cpu_exec(ctx, train ? p->fwd : p->inf, train && p->ws ? 7 : 6, args);
}

static int bn_forward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
		      float *y, int train)
{
	if (bn_exec(ctx, l, n, x[0], y, train, train ? l->save_mean : l->run_mean,
		    train ? l->save_var : l->run_var))
		return -1;
	if (train) {
		int c = l->in[0].c;
		double count = (double)n * l->in[0].h * l->in[0].w;
		float m = l->cfg.momentum;
		float unbias = count > 1 ? (float)(count / (count - 1)) : 1.0f;
		for (int i = 0; i < c; i++) {
			l->run_mean[i] = m * l->run_mean[i] + (1 - m) * l->save_mean[i];
			l->run_var[i] = m * l->run_var[i] + (1 - m) * l->save_var[i] * unbias;
		}
	}
	return 0;
}

/* Inference on the batch's saved statistics: oneDNN normalises as its
 * training forward does, to the bit (test_kernels_ref holds it so at every
 * ISA of the ladder); a fused relu is applied again, and the backward's
 * relu mask stays the training forward's (the workspace). */
static int bn_recompute(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			float *y)
{
	return bn_exec(ctx, l, n, x[0], y, 0, l->save_mean, l->save_var);
}

static int bn_backward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
		       const float *y, const float *dy, float *const *dx)
{
	(void)y;
	struct bn_plan *p = bn_plan(ctx, l, n);
	if (!p)
		return error("batchnorm: cannot build a oneDNN primitive for batch %d", n);
	void *ds = dx[0];
	if (!ds) {
		if (!p->scratch)
			p->scratch = xmalloc(ops_dtype_size(l->out_type) * (size_t)n *
					     ops_shape_size(&l->in[0]));
		ds = p->scratch;
	}
	if (cpu_set(p->src, x[0]) || cpu_set(p->diff_dst, dy) || cpu_set(p->diff_src, ds) ||
	    cpu_set(p->scale, l->gamma) || cpu_set(p->shift, l->beta) ||
	    cpu_set(p->mean, l->save_mean) ||
	    cpu_set(p->var, l->save_var) || cpu_set(p->diff_scale, l->dgamma) ||
	    cpu_set(p->diff_shift, l->dbeta))
		return -1;
	dnnl_exec_arg_t args[] = {
		{DNNL_ARG_SRC, p->src}, {DNNL_ARG_MEAN, p->mean}, {DNNL_ARG_VARIANCE, p->var},
		{DNNL_ARG_DIFF_DST, p->diff_dst}, {DNNL_ARG_SCALE, p->scale},
		{DNNL_ARG_DIFF_SRC, p->diff_src}, {DNNL_ARG_DIFF_SCALE, p->diff_scale},
		{DNNL_ARG_DIFF_SHIFT, p->diff_shift}, {DNNL_ARG_SHIFT, p->shift},
		{DNNL_ARG_WORKSPACE, p->ws},
	};
	return cpu_exec(ctx, p->bwd, p->ws ? 10 : 9, args);
}

static void bn_release(struct ops_ctx *ctx, struct ops_layer *l)
{
	(void)ctx;
	if (l->priv)
		bn_free_plan(l->priv);
	free(l->priv);
	l->priv = NULL;
}

/* A fused relu's workspace: oneDNN's jit kernels keep one bit per value
 * from the forward for the backward; on the network's input, the input
 * gradient its backward writes and nobody reads (bn_plan.scratch). */
static size_t bn_workspace(const struct ops_ctx *ctx, const struct ops_layer *l, int n,
			   size_t *scratch)
{
	(void)ctx;
	*scratch = 0;
	size_t b = l->cfg.fuse_relu ? ((size_t)n * ops_shape_size(&l->out) + 7) / 8 : 0;
	if (l->no_dx0)
		b += (size_t)n * ops_shape_size(&l->in[0]) * ops_dtype_size(l->out_type);
	return b;
}

const struct ops_layer_ops cpu_bn_ops = {
	.type = OPS_BATCHNORM,
	.name = "batch normalization",
	.forward = bn_forward,
	.backward = bn_backward,
	.release = bn_release,
	.recompute = bn_recompute,
	.backward_skips = OPS_SKIPS_Y, /* a fused relu's mask is the workspace's */
	.workspace = bn_workspace,
	.blocked = 1,
	.bf16 = 1,
};
