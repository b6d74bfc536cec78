/* cpu_dense.c: dense (fully connected) layer on oneDNN inner product;
 * weights kept as (units, Cin), Cin in the NHWC order of the input, and
 * converted to the primitives' layouts in cpu_scratch while a pass runs. */
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/cpu.h"

struct dense_plan {
	int n;
	dnnl_primitive_t fwd, bwd_d, bwd_w;
	dnnl_memory_t src, dst, bias, diff_src, diff_dst, diff_bias;
	struct cpu_weights w;
};

static void dense_free_plan(struct dense_plan *p)
{
	cpu_prim_free(&p->fwd);
	cpu_prim_free(&p->bwd_d);
	cpu_prim_free(&p->bwd_w);
	cpu_mem_free(&p->src);
	cpu_mem_free(&p->dst);
	cpu_mem_free(&p->bias);
	cpu_mem_free(&p->diff_src);
	cpu_mem_free(&p->diff_dst);
	cpu_mem_free(&p->diff_bias);
	cpu_weights_release(&p->w);
	p->n = 0;
}

static int dense_build(struct ops_ctx *ctx, struct ops_layer *l, int n, struct dense_plan *p)
{
	const struct ops_layer_cfg *c = &l->cfg;
	dnnl_memory_desc_t src, dst, w_any, w_user, b;
	dnnl_dims_t wd = {c->units, (dnnl_dim_t)ops_shape_size(&l->in[0])};
	dnnl_primitive_desc_t fpd = NULL, dpd = NULL, wpd = NULL;
	int rc = -1;

	if (cpu_md_nc(&src, n, &l->in[0]) || cpu_md_nc(&dst, n, &l->out) || cpu_md_1d(&b, c->units))
		return -1;
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&w_any, 2, wd, dnnl_f32, dnnl_format_tag_any));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&w_user, 2, wd, dnnl_f32, dnnl_oi));

	dnnl_inner_product_desc_t fd, dd, bd;
	DNNL_CHECK(dnnl_inner_product_forward_desc_init(&fd, dnnl_forward_training, &src, &w_any,
							c->bias ? &b : NULL, &dst));
	DNNL_CHECK(dnnl_inner_product_backward_data_desc_init(&dd, &src, &w_any, &dst));
	DNNL_CHECK(dnnl_inner_product_backward_weights_desc_init(&bd, &src, &w_any,
								 c->bias ? &b : NULL, &dst));
	if (cpu_pd_create(ctx, &fpd, &fd, NULL, NULL) || cpu_pd_create(ctx, &dpd, &dd, NULL, fpd) ||
	    cpu_pd_create(ctx, &wpd, &bd, NULL, fpd))
		goto out;
	if (cpu_prim_create(ctx, &p->fwd, fpd) || cpu_prim_create(ctx, &p->bwd_d, dpd) ||
	    cpu_prim_create(ctx, &p->bwd_w, wpd))
		goto out;
	size_t off = 0; /* into cpu_scratch */
	if (cpu_weights_init(ctx, &p->w, &w_user, fpd, dpd, wpd, &off) ||
	    (off && !cpu_scratch(ctx, off)))
		goto out;
	if (cpu_mem(ctx, &p->src, &src) || cpu_mem(ctx, &p->dst, &dst) ||
	    cpu_mem(ctx, &p->bias, &b) || cpu_mem(ctx, &p->diff_src, &src) ||
	    cpu_mem(ctx, &p->diff_dst, &dst) || cpu_mem(ctx, &p->diff_bias, &b))
		goto out;
	p->n = n;
	rc = 0;
out:
	cpu_pd_free(&fpd);
	cpu_pd_free(&dpd);
	cpu_pd_free(&wpd);
	if (rc)
		dense_free_plan(p);
	return rc;
}

static struct dense_plan *dense_plan(struct ops_ctx *ctx, struct ops_layer *l, int n)
{
	struct dense_plan *p = l->priv;
	if (!p)
		p = l->priv = xcalloc(1, sizeof(*p));
	if (p->n == n)
		return p;
	dense_free_plan(p);
	return dense_build(ctx, l, n, p) ? NULL : p;
}

static int dense_forward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			 const float *const *x, float *y, int train)
{
	(void)train;
	struct dense_plan *p = dense_plan(ctx, l, n);
	if (!p)
		return error("dense: cannot build a oneDNN primitive for batch %d", n);
	if (cpu_xfer_run(ctx, &p->w.fwd, l->w) || cpu_set(p->src, x[0]) || cpu_set(p->dst, y) ||
	    (l->cfg.bias && cpu_set(p->bias, l->b)))
		return -1;
	dnnl_exec_arg_t args[] = {
		{DNNL_ARG_SRC, p->src}, {DNNL_ARG_WEIGHTS, p->w.fwd.inner},
		{DNNL_ARG_DST, p->dst}, {DNNL_ARG_BIAS, p->bias},
	};
	return cpu_exec(ctx, p->fwd, l->cfg.bias ? 4 : 3, args);
}

static int dense_backward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			  const float *const *x, const float *y, const float *dy, float *const *dx)
{
	(void)y;
	struct dense_plan *p = dense_plan(ctx, l, n);
	if (!p)
		return error("dense: cannot build a oneDNN primitive for batch %d", n);
	if (cpu_set(p->diff_dst, dy) || cpu_set(p->src, x[0]))
		return -1;
	if (dx[0]) {
		if (cpu_xfer_run(ctx, &p->w.bwd, l->w) || cpu_set(p->diff_src, dx[0]))
			return -1;
		dnnl_exec_arg_t args[] = {
			{DNNL_ARG_DIFF_DST, p->diff_dst}, {DNNL_ARG_WEIGHTS, p->w.bwd.inner},
			{DNNL_ARG_DIFF_SRC, p->diff_src},
		};
		if (cpu_exec(ctx, p->bwd_d, 3, args))
			return -1;
	}
	if (cpu_xfer_run(ctx, &p->w.grad, l->dw) || (l->cfg.bias && cpu_set(p->diff_bias, l->db)))
		return -1;
	dnnl_exec_arg_t args[] = {
		{DNNL_ARG_SRC, p->src}, {DNNL_ARG_DIFF_DST, p->diff_dst},
		{DNNL_ARG_DIFF_WEIGHTS, p->w.grad.inner}, {DNNL_ARG_DIFF_BIAS, p->diff_bias},
	};
	if (cpu_exec(ctx, p->bwd_w, l->cfg.bias ? 4 : 3, args))
		return -1;
	return cpu_xfer_flush(ctx, &p->w.grad);
}

static void dense_release(struct ops_ctx *ctx, struct ops_layer *l)
{
	(void)ctx;
	if (l->priv)
		dense_free_plan(l->priv);
	free(l->priv);
	l->priv = NULL;
}

/* Nothing kept between calls; the scratch holds the weights in oneDNN's
 * layouts while a pass runs: on AVX-512 three copies (forward, backward
 * data, the weight gradient's) blocked 16 x 16, both dimensions padded;
 * on AVX2 two, the backward data pass reading the weights as they are. */
static size_t dense_workspace(const struct ops_ctx *ctx, const struct ops_layer *l, int n,
			      size_t *scratch)
{
	(void)n;
	size_t units = (size_t)l->cfg.units, in = ops_shape_size(&l->in[0]);
	if (ctx->blocked == OPS_BLOCKED16)
		*scratch = 3 * ((units + 15) / 16 * 16) * ((in + 15) / 16 * 16) * sizeof(float);
	else
		*scratch = 2 * units * in * sizeof(float);
	return 0;
}

const struct ops_layer_ops cpu_dense_ops = {
	.type = OPS_DENSE,
	.name = "inner product",
	.forward = dense_forward,
	.backward = dense_backward,
	.release = dense_release,
	.workspace = dense_workspace,
};
