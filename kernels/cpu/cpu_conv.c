/* cpu_conv.c: conv2d forward and backward on oneDNN (NHWC activations,
 * weights kept as (Cout, K, K, Cin) and converted to oneDNN's preferred
 * layout around each primitive). With conv_type OPS_BF16 the convolution
 * reads bf16 copies of its input, weights and output gradient (oneDNN's
 * layout of choice) and writes fp32 outputs and fp32 weight gradients;
 * where the model stores a tensor in bf16 (ops_layer.in_type, out_type)
 * the convolution reads it as it is and writes its output, or its input's
 * gradient, in bf16 directly: no copy, no cast pass.
 * Every such copy and conversion exists only while the layer's pass runs,
 * in the backend's scratch (cpu_scratch), shared by all layers: the
 * backward casts its input to bf16 again for the weight gradient rather
 * than keep the forward's copy for the whole step (one pass over x, where
 * the kept copies took n * (in + out) * 2 bytes per layer: 42 MB per
 * ResNet-50 image).
 * Under the trainer's bf16 (cpu_ctx.bf16_jit_only) a layer for which oneDNN
 * has only its reference bf16 kernel (a first layer of one input channel
 * on AMX) computes in fp32 instead: more precise, and as fast as the rest.
 *
 * 3x3 stride-1 layers use oneDNN's Winograd F(4x4, 3x3) kernels where it
 * has them (ctx->conv_algo OPS_CONV_AUTO, fp32, channel counts in and out
 * that are multiples of 16): they do 1.5x fewer operations per pass than
 * the direct kernels, which already run near the cores' peak, and pay for
 * converting NHWC activations and gradients to and from the blocked
 * layout they need, which the model spares them where it keeps the
 * activations blocked (ctx->blocked) from layer to layer. */
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/cpu.h"

/* The three passes of a convolution. */
enum { CONV_FWD, CONV_BWD_D, CONV_BWD_W, CONV_PASSES };

struct conv_plan {
	int n;
	dnnl_primitive_t prim[CONV_PASSES];
	/* oneDNN's scratchpad of each pass (NULL: it needs none), at byte
	 * pad_off of cpu_scratch after the conversions */
	dnnl_memory_t pad[CONV_PASSES];
	size_t pad_off;
	dnnl_memory_t bias, diff_bias;
	/* every conversion below lives in cpu_scratch at its own offset, so
	 * that those of one pass never overlap; nothing in them outlives it */
	struct cpu_xfer dst, diff_src;  /* outward: identity unless Winograd */
	struct cpu_weights w;
	/* inputs as the primitives read them (identity in fp32) */
	struct cpu_xfer src_f, src_w, ddst_d, ddst_w;
	int src_w_own, ddst_w_own;  /* src_w / ddst_w differ from src_f / ddst_d */
	int winograd;
	enum ops_dtype type;    /* what the convolutions read: fp32 or bf16 */
};

static void conv_free_plan(struct conv_plan *p)
{
	for (int i = 0; i < CONV_PASSES; i++) {
		cpu_prim_free(&p->prim[i]);
		cpu_mem_free(&p->pad[i]);
	}
	cpu_xfer_release(&p->dst);
	cpu_mem_free(&p->bias);
	cpu_xfer_release(&p->diff_src);
	cpu_mem_free(&p->diff_bias);
	cpu_weights_release(&p->w);
	cpu_xfer_release(&p->src_f);
	cpu_xfer_release(&p->ddst_d);
	if (p->src_w_own)
		cpu_xfer_release(&p->src_w);
	if (p->ddst_w_own)
		cpu_xfer_release(&p->ddst_w);
	memset(p, 0, sizeof(*p));
}

/* Whether any of the primitive descriptors runs a reference kernel. */
static int any_ref(const_dnnl_primitive_desc_t *pds, int n)
{
	for (int i = 0; i < n; i++) {
		const char *impl = "";
		dnnl_primitive_desc_query(pds[i], dnnl_query_impl_info_str, 0, &impl);
		if (cpu_impl_is_ref(impl))
			return 1;
	}
	return 0;
}

/* Whether a layer lets oneDNN pick its activations' layouts (the xfers
 * convert where they differ from the model's): under Winograd, and where
 * either tensor is blocked, as a mix of NHWC and blocked may have only
 * oneDNN's reference kernel. */
static int picks_layouts(const struct ops_layer *l, int wino)
{
	return wino || ops_in_layout(l, 0) != OPS_NHWC || l->out_layout != OPS_NHWC;
}

/* Builds the three primitives with algorithm alg reading operands of type
 * t; Winograd lets oneDNN pick the activation layouts too. Returns 1 when
 * oneDNN has no such kernel (Winograd), or only a reference one where
 * fast is asked for. */
static int conv_build_alg(struct ops_ctx *ctx, struct ops_layer *l, int n, struct conv_plan *p,
			  dnnl_alg_kind_t alg, enum ops_dtype t, int fast)
{
	const struct ops_layer_cfg *c = &l->cfg;
	dnnl_memory_desc_t src, dst, w_any, w_user, b, src_c, dst_c, ddst_c, dsrc_c, dw_any;
	dnnl_dims_t wd = {c->units, l->in[0].c, c->kernel, c->kernel};
	dnnl_dims_t strides = {c->stride, c->stride};
	dnnl_dims_t pl = {c->pad_t, c->pad_l}, pr = {c->pad_b, c->pad_r};
	dnnl_dims_t sd = {n, l->in[0].c, l->in[0].h, l->in[0].w};
	dnnl_dims_t dd_ = {n, l->out.c, l->out.h, l->out.w};
	dnnl_primitive_desc_t fpd = NULL, dpd = NULL, wpd = NULL;
	int wino = alg == dnnl_convolution_winograd;
	int any = picks_layouts(l, wino);
	int rc = -1;

	enum ops_dtype ti = ops_in_type(l, 0), to = l->out_type;
	/* what the passes write: the tensors' own types in bf16 (oneDNN's
	 * bf16 kernels write either), fp32 where they compute in fp32 */
	enum ops_dtype wi = t == OPS_BF16 ? ti : OPS_F32, wo = t == OPS_BF16 ? to : OPS_F32;
	if (cpu_md_act(&src, n, &l->in[0], ops_in_layout(l, 0), ti) ||
	    cpu_md_act(&dst, n, &l->out, l->out_layout, to) ||
	    cpu_md_1d(&b, c->units))
		return -1;
	dnnl_data_type_t lp = cpu_dt(t);
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&w_any, 4, wd, lp, dnnl_format_tag_any));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&dw_any, 4, wd, dnnl_f32, dnnl_format_tag_any));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&w_user, 4, wd, dnnl_f32, dnnl_ohwi));
	src_c = dsrc_c = src;
	dst_c = ddst_c = dst;
	if (t != OPS_F32 || ti != OPS_F32 || to != OPS_F32 || any) {
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&src_c, 4, sd, lp, dnnl_format_tag_any));
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&ddst_c, 4, dd_, lp, dnnl_format_tag_any));
	}
	if (wo != to || any)
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&dst_c, 4, dd_, cpu_dt(wo), dnnl_format_tag_any));
	if (wi != ti || any)
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&dsrc_c, 4, sd, cpu_dt(wi), dnnl_format_tag_any));

	dnnl_convolution_desc_t fd, dd, bd;
	DNNL_CHECK(dnnl_convolution_forward_desc_init(&fd, dnnl_forward_training, alg, &src_c,
		&w_any, c->bias ? &b : NULL, &dst_c, strides, pl, pr));
	DNNL_CHECK(dnnl_convolution_backward_data_desc_init(&dd, alg, &dsrc_c, &w_any, &ddst_c,
		strides, pl, pr));
	DNNL_CHECK(dnnl_convolution_backward_weights_desc_init(&bd, alg, &src_c, &dw_any,
		c->bias ? &b : NULL, &ddst_c, strides, pl, pr));
	/* oneDNN's scratchpad goes in cpu_scratch too: one buffer, whose
	 * largest layer is what the plan counts (conv_workspace) */
	dnnl_primitive_attr_t attr;
	DNNL_CHECK(dnnl_primitive_attr_create(&attr));
	if (dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) !=
	    dnnl_success) {
		error("conv2d: cannot ask oneDNN for a scratchpad of the caller's");
		goto out;
	}
	if (wino) { /* no kernel for this shape: not an error, the caller goes direct */
		dnnl_engine_t eng = cpu_ctx(ctx)->eng;
		if (dnnl_primitive_desc_create(&fpd, &fd, attr, eng, NULL) != dnnl_success ||
		    dnnl_primitive_desc_create(&dpd, &dd, attr, eng, fpd) != dnnl_success ||
		    dnnl_primitive_desc_create(&wpd, &bd, attr, eng, fpd) != dnnl_success) {
			rc = 1;
			goto out;
		}
	} else if (cpu_pd_create(ctx, &fpd, &fd, attr, NULL) ||
		   cpu_pd_create(ctx, &dpd, &dd, attr, fpd) ||
		   cpu_pd_create(ctx, &wpd, &bd, attr, fpd)) {
		goto out;
	} else if (fast && any_ref((const_dnnl_primitive_desc_t[]){fpd, dpd, wpd}, 3)) {
		rc = 1;
		goto out;
	}
	if (cpu_prim_create(ctx, &p->prim[CONV_FWD], fpd) ||
	    cpu_prim_create(ctx, &p->prim[CONV_BWD_D], dpd) ||
	    cpu_prim_create(ctx, &p->prim[CONV_BWD_W], wpd))
		goto out;
	size_t off = 0; /* into cpu_scratch */
	if (cpu_weights_init(ctx, &p->w, &w_user, fpd, dpd, wpd, &off))
		goto out;
	const dnnl_memory_desc_t *sf = dnnl_primitive_desc_query_md(fpd, dnnl_query_src_md, 0);
	const dnnl_memory_desc_t *sw = dnnl_primitive_desc_query_md(wpd, dnnl_query_src_md, 0);
	const dnnl_memory_desc_t *gd = dnnl_primitive_desc_query_md(dpd, dnnl_query_diff_dst_md, 0);
	const dnnl_memory_desc_t *gw = dnnl_primitive_desc_query_md(wpd, dnnl_query_diff_dst_md, 0);
	p->src_w_own = !dnnl_memory_desc_equal(sf, sw);
	p->ddst_w_own = !dnnl_memory_desc_equal(gd, gw);
	if (cpu_xfer_init_scratch(ctx, &p->src_f, &src, sf, 1, &off) ||
	    cpu_xfer_init_scratch(ctx, &p->ddst_d, &dst, gd, 1, &off) ||
	    (p->src_w_own && cpu_xfer_init_scratch(ctx, &p->src_w, &src, sw, 1, &off)) ||
	    (p->ddst_w_own && cpu_xfer_init_scratch(ctx, &p->ddst_w, &dst, gw, 1, &off)))
		goto out;
	if (!p->src_w_own)
		p->src_w = p->src_f;
	if (!p->ddst_w_own)
		p->ddst_w = p->ddst_d;
	if (cpu_xfer_init_scratch(ctx, &p->dst, &dst,
				  dnnl_primitive_desc_query_md(fpd, dnnl_query_dst_md, 0), 0, &off) ||
	    cpu_xfer_init_scratch(ctx, &p->diff_src, &src,
				  l->no_dx0 ? &src
					    : dnnl_primitive_desc_query_md(dpd, dnnl_query_diff_src_md, 0),
				  0, &off) ||
	    cpu_mem(ctx, &p->bias, &b) || cpu_mem(ctx, &p->diff_bias, &b))
		goto out;
	/* the passes run one at a time: their scratchpads share bytes */
	p->pad_off = off;
	const_dnnl_primitive_desc_t pds[CONV_PASSES] = {fpd, dpd, wpd};
	for (int i = 0; i < CONV_PASSES; i++) {
		const dnnl_memory_desc_t *md =
			dnnl_primitive_desc_query_md(pds[i], dnnl_query_scratchpad_md, 0);
		size_t size = md ? dnnl_memory_desc_get_size(md) : 0;
		if (!size)
			continue;
		if (cpu_mem(ctx, &p->pad[i], md))
			goto out;
		off = p->pad_off + size > off ? p->pad_off + size : off;
	}
	/* the scratch only grows: asked for once here, it holds this layer's
	 * conversions at every later call */
	if (off && !cpu_scratch(ctx, off))
		goto out;
	p->n = n;
	p->winograd = wino;
	p->type = t;
	rc = 0;
out:
	dnnl_primitive_attr_destroy(attr);
	cpu_pd_free(&fpd);
	cpu_pd_free(&dpd);
	cpu_pd_free(&wpd);
	if (rc)
		conv_free_plan(p);
	return rc;
}

/* Whether conv_build tries Winograd for l. */
static int conv_winograd(const struct ops_ctx *ctx, const struct ops_layer *l)
{
	const struct ops_layer_cfg *c = &l->cfg;
	/* oneDNN also offers Winograd for a few input channels, where it loses */
	return ctx->conv_algo != OPS_CONV_DIRECT && ctx->conv_type == OPS_F32 && c->kernel == 3 &&
	       c->stride == 1 && l->in[0].c % 16 == 0 && c->units % 16 == 0;
}

static int conv_build(struct ops_ctx *ctx, struct ops_layer *l, int n, struct conv_plan *p)
{
	int rc;
	if (conv_winograd(ctx, l)) {
		rc = conv_build_alg(ctx, l, n, p, dnnl_convolution_winograd, OPS_F32, 0);
		if (rc <= 0)
			return rc;
	}
	if (ctx->conv_type == OPS_BF16) {
		rc = conv_build_alg(ctx, l, n, p, dnnl_convolution_direct, OPS_BF16,
				    cpu_ctx(ctx)->bf16_jit_only);
		if (rc <= 0)
			return rc;
	}
	return conv_build_alg(ctx, l, n, p, dnnl_convolution_direct, OPS_F32, 0);
}

static struct conv_plan *conv_plan(struct ops_ctx *ctx, struct ops_layer *l, int n)
{
	struct conv_plan *p = l->priv;
	if (!p)
		p = l->priv = xcalloc(1, sizeof(*p));
	if (p->n == n)
		return p;
	conv_free_plan(p);
	return conv_build(ctx, l, n, p) ? NULL : p;
}

/* Runs one pass with its nargs args and its scratchpad, if any. */
static int conv_exec(struct ops_ctx *ctx, const struct conv_plan *p, int pass, int nargs,
		     const dnnl_exec_arg_t *args)
{
	dnnl_exec_arg_t a[5];
	if (nargs >= (int)(sizeof(a) / sizeof(a[0])))
		BUG("conv2d: %d arguments to a pass", nargs);
	memcpy(a, args, (size_t)nargs * sizeof(*a));
	if (p->pad[pass]) {
		if (cpu_set(p->pad[pass], (char *)cpu_ctx(ctx)->scratch + p->pad_off))
			return -1;
		a[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, p->pad[pass]};
	}
	return cpu_exec(ctx, p->prim[pass], nargs, a);
}

static int conv_forward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			const float *const *x, float *y, int train)
{
	(void)train;
	struct conv_plan *p = conv_plan(ctx, l, n);
	if (!p)
		return error("conv2d: cannot build a oneDNN primitive for batch %d", n);
	l->ran = p->type;
	l->ran_out = l->out_type;
	if (cpu_xfer_run(ctx, &p->w.fwd, l->w) || cpu_xfer_run(ctx, &p->src_f, x[0]) ||
	    cpu_xfer_run(ctx, &p->dst, y) || (l->cfg.bias && cpu_set(p->bias, l->b)))
		return -1;
	dnnl_exec_arg_t args[] = {
		{DNNL_ARG_SRC, p->src_f.inner}, {DNNL_ARG_WEIGHTS, p->w.fwd.inner},
		{DNNL_ARG_DST, p->dst.inner}, {DNNL_ARG_BIAS, p->bias},
	};
	if (conv_exec(ctx, p, CONV_FWD, l->cfg.bias ? 4 : 3, args))
		return -1;
	return cpu_xfer_flush(ctx, &p->dst);
}

static int conv_backward(struct ops_ctx *ctx, struct ops_layer *l, int n,
			 const float *const *x, const float *y, const float *dy, float *const *dx)
{
	(void)y;
	struct conv_plan *p = conv_plan(ctx, l, n);
	if (!p)
		return error("conv2d: cannot build a oneDNN primitive for batch %d", n);
	l->ran = p->type;
	if (dx[0]) {
		l->ran_out = ops_in_type(l, 0);
		if (cpu_xfer_run(ctx, &p->ddst_d, dy) || cpu_xfer_run(ctx, &p->w.bwd, l->w) ||
		    cpu_xfer_run(ctx, &p->diff_src, dx[0]))
			return -1;
		dnnl_exec_arg_t args[] = {
			{DNNL_ARG_DIFF_DST, p->ddst_d.inner}, {DNNL_ARG_WEIGHTS, p->w.bwd.inner},
			{DNNL_ARG_DIFF_SRC, p->diff_src.inner},
		};
		if (conv_exec(ctx, p, CONV_BWD_D, 3, args) || cpu_xfer_flush(ctx, &p->diff_src))
			return -1;
	}
	if ((!dx[0] || p->ddst_w_own) && cpu_xfer_run(ctx, &p->ddst_w, dy))
		return -1;
	/* the forward's copy of x[0] went with its pass: convert it again (in
	 * bf16 one cast, the same values the forward read) */
	if (cpu_xfer_run(ctx, &p->src_w, x[0]))
		return -1;
	if (cpu_xfer_run(ctx, &p->w.grad, l->dw) || (l->cfg.bias && cpu_set(p->diff_bias, l->db)))
		return -1;
	dnnl_exec_arg_t args[] = {
		{DNNL_ARG_SRC, p->src_w.inner}, {DNNL_ARG_DIFF_DST, p->ddst_w.inner},
		{DNNL_ARG_DIFF_WEIGHTS, p->w.grad.inner}, {DNNL_ARG_DIFF_BIAS, p->diff_bias},
	};
	if (conv_exec(ctx, p, CONV_BWD_W, l->cfg.bias ? 4 : 3, args))
		return -1;
	return cpu_xfer_flush(ctx, &p->w.grad);
}

const char *cpu_conv_algo(const struct ops_layer *l)
{
	const struct conv_plan *p = l->priv;
	return !p || !p->n ? NULL : p->winograd ? "winograd" : "direct";
}

static void conv_release(struct ops_ctx *ctx, struct ops_layer *l)
{
	(void)ctx;
	if (l->priv)
		conv_free_plan(l->priv);
	free(l->priv);
	l->priv = NULL;
}

#define MIB2 ((size_t)2 << 20)

/* What conv_build_alg asks of cpu_scratch, all of it only while a pass
 * runs: the weights in oneDNN's layout, one copy in the compute type for
 * the forward and one for the backward data pass, the weight gradient's
 * in fp32; with bf16, a bf16 copy of the input and of the output gradient
 * where that tensor is stored in fp32 (the network's input; the backward
 * makes its own copy of the input again); the gradient
 * of an input of channels that do not fill a vector register, padded to
 * ctx->blocked's width (the network's input has none); and oneDNN's
 * scratchpad. The activations are in the primitives' layout already (the
 * model keeps them blocked from layer to layer). Winograd's scratchpad
 * holds the weights transformed to 6x6 tiles, twice for the weight
 * gradient, and per-thread tile buffers: measured on AVX-512 to within
 * 10%, as 2 MiB pages; oneDNN has these kernels on AVX-512 only, where
 * the blocked layout is 16 wide. Between calls the layer keeps nothing
 * the plan counts: it returns 0. */
static size_t conv_workspace(const struct ops_ctx *ctx, const struct ops_layer *l, int n,
			     size_t *scratch)
{
	const struct ops_shape *in = &l->in[0];
	size_t nw = (size_t)l->cfg.units * (size_t)l->cfg.kernel * (size_t)l->cfg.kernel *
		    (size_t)in->c;
	size_t e = ops_dtype_size(ctx->conv_type);
	size_t s = 2 * nw * e + nw * sizeof(float);
	size_t nin = (size_t)n * ops_shape_size(in), nout = (size_t)n * ops_shape_size(&l->out);
	int blk = ops_layout_block(ctx->blocked);
	/* an NHWC edge: the layer runs on oneDNN's layouts of choice, which are
	 * blocked for a tensor of whole blocks of channels that the model
	 * keeps NHWC: converted */
	int any = picks_layouts(l, conv_winograd(ctx, l));
	int edge_in = any && blk > 1 && ops_in_layout(l, 0) == OPS_NHWC && in->c % blk == 0;
	int edge_out = any && blk > 1 && l->out_layout == OPS_NHWC && l->out.c % blk == 0;
	if (ops_in_type(l, 0) != ctx->conv_type || edge_in)
		s += nin * e;
	if (l->out_type != ctx->conv_type || edge_out)
		s += nout * e;
	if (edge_out) /* the output, written in oneDNN's layout, then converted */
		s += nout * ops_dtype_size(l->out_type);
	if (edge_in && !l->no_dx0) /* the input's gradient likewise */
		s += nin * ops_dtype_size(ops_in_type(l, 0));
	if (in->c % blk && !l->no_dx0)
		s += (size_t)n * in->h * in->w * (size_t)((in->c + blk - 1) / blk * blk) * sizeof(float);
	if (conv_winograd(ctx, l) && ctx->blocked == OPS_BLOCKED16) {
		size_t u = 2 * 36 * (size_t)in->c * (size_t)l->cfg.units * sizeof(float);
		s += (u + MIB2 - 1) / MIB2 * MIB2 + 4 * MIB2;
	}
	*scratch = s;
	return 0;
}

const struct ops_layer_ops cpu_conv_ops = {
	.type = OPS_CONV2D,
	.name = "convolution",
	.forward = conv_forward,
	.backward = conv_backward,
	.release = conv_release,
	.workspace = conv_workspace,
	.blocked = 1,
	.bf16 = 1,
};
