/* cpu_pool.c: average (excluding padding) and global average pooling and
 * ReLU on oneDNN, over fp32 or bf16 tensors; the primitives also run max
 * pooling over bf16 tensors, whose fp32 op is plain C (cpu_maxpool.c).
 * oneDNN pools a bf16 input into bf16 only: a global average pooling
 * whose rank-2 output is fp32 (for the dense layer after it) writes it,
 * and reads its gradient, through a bf16 copy in the scratch. */
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/cpu.h"

struct pool_plan {
	int n;
	dnnl_primitive_t fwd, bwd;
	dnnl_memory_t src, dst, diff_src, diff_dst, ws; /* ws: max pooling only, owned */
	/* the output and its gradient in the output's type, where it is not
	 * the input's (global average pooling): converted from and to dst and
	 * diff_dst, which are then in the scratch */
	struct cpu_xfer out, dout;
	int cast;
};

static void pool_free_plan(struct pool_plan *p)
{
	cpu_prim_free(&p->fwd);
	cpu_prim_free(&p->bwd);
	cpu_mem_free(&p->src);
	cpu_mem_free(&p->dst);
	cpu_mem_free(&p->diff_src);
	cpu_mem_free(&p->diff_dst);
	cpu_mem_free(&p->ws);
	if (p->cast) {
		cpu_xfer_release(&p->out);
		cpu_xfer_release(&p->dout);
	}
	p->cast = 0;
	p->n = 0;
}

/* Builds pooling (type maxpool/avgpool) or relu primitives for batch n. */
static int pool_build(struct ops_ctx *ctx, struct ops_layer *l, int n, struct pool_plan *p)
{
	const struct ops_layer_cfg *c = &l->cfg;
	dnnl_memory_desc_t src, dst;
	dnnl_primitive_desc_t fpd = NULL, bpd = NULL;
	int rc = -1;

	/* global average pooling's (n, c, 1, 1) output is the same bytes in
	 * either layout; oneDNN's fast kernels want it in the input's */
	enum ops_layout dl = c->type == OPS_GLOBAL_AVG_POOL ? ops_in_layout(l, 0) : l->out_layout;
	enum ops_dtype t = ops_in_type(l, 0);
	if (cpu_md_act(&src, n, &l->in[0], ops_in_layout(l, 0), t) ||
	    cpu_md_act(&dst, n, &l->out, dl, t))
		return -1;
	if (c->type == OPS_RELU) {
		dnnl_eltwise_desc_t fd, bd;
		DNNL_CHECK(dnnl_eltwise_forward_desc_init(&fd, dnnl_forward_training,
							  dnnl_eltwise_relu, &src, 0, 0));
		DNNL_CHECK(dnnl_eltwise_backward_desc_init(&bd, dnnl_eltwise_relu, &src, &src, 0, 0));
		if (cpu_pd_create(ctx, &fpd, &fd, NULL, NULL) || cpu_pd_create(ctx, &bpd, &bd, NULL, fpd))
			goto out;
	} else {
		dnnl_alg_kind_t alg = c->type == OPS_MAXPOOL ? dnnl_pooling_max
							     : dnnl_pooling_avg_exclude_padding;
		dnnl_dims_t strides = {c->stride, c->stride}, kernel = {c->kernel, c->kernel};
		if (c->type == OPS_GLOBAL_AVG_POOL) { /* one window over the whole image */
			kernel[0] = l->in[0].h, kernel[1] = l->in[0].w;
			strides[0] = strides[1] = 1;
		}
		dnnl_dims_t pl = {c->pad_t, c->pad_l}, pr = {c->pad_b, c->pad_r};
		dnnl_pooling_desc_t fd, bd;
		DNNL_CHECK(dnnl_pooling_forward_desc_init(&fd, dnnl_forward_training, alg, &src, &dst,
							  strides, kernel, pl, pr));
		DNNL_CHECK(dnnl_pooling_backward_desc_init(&bd, alg, &src, &dst, strides, kernel, pl,
							   pr));
		if (cpu_pd_create(ctx, &fpd, &fd, NULL, NULL) || cpu_pd_create(ctx, &bpd, &bd, NULL, fpd))
			goto out;
		const dnnl_memory_desc_t *ws = dnnl_primitive_desc_query_md(fpd, dnnl_query_workspace_md, 0);
		if (ws && ws->ndims > 0 &&
		    dnnl_memory_create(&p->ws, ws, cpu_ctx(ctx)->eng, DNNL_MEMORY_ALLOCATE) != dnnl_success) {
			error("%s: cannot allocate the pooling workspace", ctx->be->layer[c->type]->name);
			goto out;
		}
	}
	if (cpu_prim_create(ctx, &p->fwd, fpd) || cpu_prim_create(ctx, &p->bwd, bpd))
		goto out;
	if (cpu_mem(ctx, &p->src, &src) || cpu_mem(ctx, &p->dst, &dst) ||
	    cpu_mem(ctx, &p->diff_src, &src) || cpu_mem(ctx, &p->diff_dst, &dst))
		goto out;
	if (l->out_type != t) {
		dnnl_memory_desc_t user;
		size_t off = 0;
		p->cast = 1;
		if (cpu_md_act(&user, n, &l->out, dl, l->out_type) ||
		    cpu_xfer_init_scratch(ctx, &p->out, &user, &dst, 0, &off) ||
		    cpu_xfer_init_scratch(ctx, &p->dout, &user, &dst, 1, &off) ||
		    !cpu_scratch(ctx, off))
			goto out;
	}
	p->n = n;
	rc = 0;
out:
	cpu_pd_free(&fpd);
	cpu_pd_free(&bpd);
	if (rc)
		pool_free_plan(p);
	return rc;
}

static struct pool_plan *pool_plan(struct ops_ctx *ctx, struct ops_layer *l, int n)
{
	struct pool_plan *p = l->priv;
	if (!p)
		p = l->priv = xcalloc(1, sizeof(*p));
	if (p->n == n)
		return p;
	pool_free_plan(p);
	return pool_build(ctx, l, n, p) ? NULL : p;
}

int cpu_pool_forward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
		     float *y, int train)
{
	(void)train;
	struct pool_plan *p = pool_plan(ctx, l, n);
	if (!p)
		return error("%s: cannot build a oneDNN primitive for batch %d",
			     ctx->be->layer[l->cfg.type]->name, n);
	if (cpu_set(p->src, x[0]) || (p->cast ? cpu_xfer_run(ctx, &p->out, y) : cpu_set(p->dst, y)))
		return -1;
	dnnl_exec_arg_t args[] = {
		{DNNL_ARG_SRC, p->src}, {DNNL_ARG_DST, p->cast ? p->out.inner : p->dst},
		{DNNL_ARG_WORKSPACE, p->ws},
	};
	if (cpu_exec(ctx, p->fwd, p->ws ? 3 : 2, args))
		return -1;
	return p->cast ? cpu_xfer_flush(ctx, &p->out) : 0;
}

int cpu_pool_backward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
		      const float *y, const float *dy, float *const *dx)
{
	(void)y;
	if (!dx[0])
		return 0; /* no parameters: nothing to do without an input gradient */
	struct pool_plan *p = pool_plan(ctx, l, n);
	if (!p)
		return error("%s: cannot build a oneDNN primitive for batch %d",
			     ctx->be->layer[l->cfg.type]->name, n);
	if (cpu_set(p->src, x[0]) || cpu_set(p->diff_src, dx[0]) ||
	    (p->cast ? cpu_xfer_run(ctx, &p->dout, dy) : cpu_set(p->diff_dst, dy)))
		return -1;
	dnnl_exec_arg_t args[3] = {{DNNL_ARG_DIFF_DST, p->cast ? p->dout.inner : p->diff_dst},
				   {DNNL_ARG_DIFF_SRC, p->diff_src}};
	int nargs = 2;
	if (l->cfg.type == OPS_RELU)
		args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, p->src};
	else if (p->ws)
		args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_WORKSPACE, p->ws};
	return cpu_exec(ctx, p->bwd, nargs, args);
}

void cpu_pool_release(struct ops_ctx *ctx, struct ops_layer *l)
{
	(void)ctx;
	if (l->priv)
		pool_free_plan(l->priv);
	free(l->priv);
	l->priv = NULL;
}

/* Global average pooling's output and its gradient in bf16 while it runs,
 * where its output is fp32 (pool_plan.cast). */
static size_t gap_workspace(const struct ops_ctx *ctx, const struct ops_layer *l, int n,
			    size_t *scratch)
{
	(void)ctx;
	size_t b = (size_t)n * ops_shape_size(&l->out) * ops_dtype_size(ops_in_type(l, 0));
	*scratch = l->out_type != ops_in_type(l, 0) ? 2 * cpu_scratch_bytes(b) : 0;
	return 0;
}

const struct ops_layer_ops cpu_avgpool_ops = {
	.type = OPS_AVGPOOL,
	.name = "average pooling",
	.forward = cpu_pool_forward,
	.backward = cpu_pool_backward,
	.release = cpu_pool_release,
	.blocked = 1,
	.bf16 = 1,
};

const struct ops_layer_ops cpu_gap_ops = {
	.type = OPS_GLOBAL_AVG_POOL,
	.name = "global average pooling",
	.workspace = gap_workspace,
	.forward = cpu_pool_forward,
	.backward = cpu_pool_backward,
	.release = cpu_pool_release,
	.blocked = 1,
	.bf16 = 1,
};

const struct ops_layer_ops cpu_relu_ops = {
	.type = OPS_RELU,
	.name = "rectifier",
	.forward = cpu_pool_forward,
	.backward = cpu_pool_backward,
	.release = cpu_pool_release,
	.blocked = 1,
	.bf16 = 1,
};
