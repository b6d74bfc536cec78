/* cpu_dnnl.c: oneDNN engine, stream and the memory helpers of kernels/cpu. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h> /* aligned_alloc, free */
#include <string.h>

#include "kernels/cpu/cpu.h"

/* oneDNN on Debian runs on OpenMP (libgomp, loaded with libdnnl); the
 * thread count is set through it when the symbol is there. */
void cpu_set_threads(int threads)
{
	void (*set)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads");
	if (set && threads > 0)
		set(threads);
}

int cpu_md_nhwc(dnnl_memory_desc_t *md, int n, const struct ops_shape *s)
{
	dnnl_dims_t d = {n, s->c, s->h, s->w};
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(md, 4, d, dnnl_f32, dnnl_nhwc));
	return 0;
}

int cpu_md_act(dnnl_memory_desc_t *md, int n, const struct ops_shape *s, enum ops_layout layout,
	       enum ops_dtype t)
{
	dnnl_dims_t d = {n, s->c, s->h, s->w};
	dnnl_format_tag_t tag = layout == OPS_BLOCKED16 ? dnnl_nChw16c
				: layout == OPS_BLOCKED8 ? dnnl_nChw8c
							 : dnnl_nhwc;
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(md, 4, d, cpu_dt(t), tag));
	return 0;
}

int cpu_md_nc(dnnl_memory_desc_t *md, int n, const struct ops_shape *s)
{
	dnnl_dims_t d = {n, (dnnl_dim_t)ops_shape_size(s)};
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(md, 2, d, dnnl_f32, dnnl_nc));
	return 0;
}

int cpu_md_1d(dnnl_memory_desc_t *md, int len)
{
	dnnl_dims_t d = {len};
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(md, 1, d, dnnl_f32, dnnl_a));
	return 0;
}

int cpu_mem(struct ops_ctx *ctx, dnnl_memory_t *m, const dnnl_memory_desc_t *md)
{
	DNNL_CHECK(dnnl_memory_create(m, md, cpu_ctx(ctx)->eng, DNNL_MEMORY_NONE));
	return 0;
}

int cpu_set(dnnl_memory_t m, const void *ptr)
{
	DNNL_CHECK(dnnl_memory_set_data_handle(m, (void *)ptr));
	return 0;
}

void cpu_mem_free(dnnl_memory_t *m)
{
	if (*m)
		dnnl_memory_destroy(*m);
	*m = NULL;
}

void cpu_prim_free(dnnl_primitive_t *p)
{
	if (*p)
		dnnl_primitive_destroy(*p);
	*p = NULL;
}

void cpu_pd_free(dnnl_primitive_desc_t *pd)
{
	if (*pd)
		dnnl_primitive_desc_destroy(*pd);
	*pd = NULL;
}

int cpu_pd_create(struct ops_ctx *ctx, dnnl_primitive_desc_t *pd, const void *desc,
		  const_dnnl_primitive_attr_t attr, const_dnnl_primitive_desc_t hint)
{
	DNNL_CHECK(dnnl_primitive_desc_create(pd, desc, attr, cpu_ctx(ctx)->eng, hint));
	return 0;
}

int cpu_prim_create(struct ops_ctx *ctx, dnnl_primitive_t *p, const_dnnl_primitive_desc_t pd)
{
	struct cpu_ctx *c = cpu_ctx(ctx);
	const char *impl = "";
	dnnl_primitive_kind_t kind = dnnl_undefined_primitive;
	dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
	dnnl_primitive_desc_query(pd, dnnl_query_primitive_kind, 0, &kind);
	if (!c->slow[0] && cpu_impl_is_ref(impl))
		snprintf(c->slow, sizeof(c->slow), "%s (%s)", dnnl_prim_kind2str(kind), impl);
	DNNL_CHECK(dnnl_primitive_create(p, pd));
	return 0;
}

int cpu_exec(struct ops_ctx *ctx, dnnl_primitive_t p, int nargs, const dnnl_exec_arg_t *args)
{
	DNNL_CHECK(dnnl_primitive_execute(p, cpu_ctx(ctx)->stream, nargs, args));
	DNNL_CHECK(dnnl_stream_wait(cpu_ctx(ctx)->stream));
	return 0;
}

void *cpu_scratch(struct ops_ctx *ctx, size_t bytes)
{
	struct cpu_ctx *c = cpu_ctx(ctx);
	if (bytes <= c->scratch_size)
		return c->scratch;
	/* nothing in it outlives an op: free first, so the old and the new
	 * size are never held at once */
	free(c->scratch);
	c->scratch_size = 0;
	c->scratch = aligned_alloc(CPU_SCRATCH_ALIGN, cpu_scratch_bytes(bytes));
	if (!c->scratch) {
		error("cannot allocate %zu bytes of scratch for the CPU backend's ops", bytes);
		return NULL;
	}
	c->scratch_size = bytes;
	return c->scratch;
}

/* off NULL: inner owns its buffer; else it is bytes *off of the scratch. */
static int xfer_init(struct ops_ctx *ctx, struct cpu_xfer *x, const dnnl_memory_desc_t *user,
		     const dnnl_memory_desc_t *inner, int to_inner, size_t *off)
{
	dnnl_engine_t eng = cpu_ctx(ctx)->eng;
	memset(x, 0, sizeof(*x));
	x->to_inner = to_inner;
	if (cpu_mem(ctx, &x->user, user))
		return -1;
	if (dnnl_memory_desc_equal(user, inner)) {
		x->inner = x->user;
		return 0;
	}
	if (off) {
		size_t bytes = dnnl_memory_desc_get_size(inner);
		DNNL_CHECK(dnnl_memory_create(&x->inner, inner, eng, DNNL_MEMORY_NONE));
		x->in_scratch = 1;
		x->off = *off;
		*off += cpu_scratch_bytes(bytes);
	} else {
		DNNL_CHECK(dnnl_memory_create(&x->inner, inner, eng, DNNL_MEMORY_ALLOCATE));
	}
	dnnl_primitive_desc_t pd;
	if (to_inner)
		DNNL_CHECK(dnnl_reorder_primitive_desc_create(&pd, user, eng, inner, eng, NULL));
	else
		DNNL_CHECK(dnnl_reorder_primitive_desc_create(&pd, inner, eng, user, eng, NULL));
	int rc = cpu_prim_create(ctx, &x->prim, pd);
	dnnl_primitive_desc_destroy(pd);
	return rc;
}

int cpu_xfer_init(struct ops_ctx *ctx, struct cpu_xfer *x, const dnnl_memory_desc_t *user,
		  const dnnl_memory_desc_t *inner, int to_inner)
{
	return xfer_init(ctx, x, user, inner, to_inner, NULL);
}

int cpu_xfer_init_scratch(struct ops_ctx *ctx, struct cpu_xfer *x, const dnnl_memory_desc_t *user,
			  const dnnl_memory_desc_t *inner, int to_inner, size_t *off)
{
	return xfer_init(ctx, x, user, inner, to_inner, off);
}

int cpu_weights_init(struct ops_ctx *ctx, struct cpu_weights *w, const dnnl_memory_desc_t *user,
		     const_dnnl_primitive_desc_t fwd, const_dnnl_primitive_desc_t bwd_d,
		     const_dnnl_primitive_desc_t bwd_w, size_t *off)
{
	const dnnl_memory_desc_t *f = dnnl_primitive_desc_query_md(fwd, dnnl_query_weights_md, 0);
	const dnnl_memory_desc_t *b = dnnl_primitive_desc_query_md(bwd_d, dnnl_query_weights_md, 0);
	const dnnl_memory_desc_t *g =
		dnnl_primitive_desc_query_md(bwd_w, dnnl_query_diff_weights_md, 0);
	if (xfer_init(ctx, &w->fwd, user, f, 1, off) || xfer_init(ctx, &w->bwd, user, b, 1, off) ||
	    xfer_init(ctx, &w->grad, user, g, 0, off))
		return -1;
	return 0;
}

void cpu_weights_release(struct cpu_weights *w)
{
	cpu_xfer_release(&w->fwd);
	cpu_xfer_release(&w->bwd);
	cpu_xfer_release(&w->grad);
}

/* Points a scratch inner at its bytes, which the op has asked for. */
static int xfer_bind(struct ops_ctx *ctx, struct cpu_xfer *x)
{
	const struct cpu_ctx *c = cpu_ctx(ctx);
	const dnnl_memory_desc_t *md;
	DNNL_CHECK(dnnl_memory_get_memory_desc(x->inner, &md));
	if (x->off + dnnl_memory_desc_get_size(md) > c->scratch_size)
		BUG("a conversion at byte %zu of %zu bytes of scratch: the op did not ask for it",
		    x->off, c->scratch_size);
	return cpu_set(x->inner, (char *)c->scratch + x->off);
}

int cpu_xfer_run(struct ops_ctx *ctx, struct cpu_xfer *x, const void *ptr)
{
	if (cpu_set(x->user, ptr) || (x->in_scratch && xfer_bind(ctx, x)))
		return -1;
	if (!x->prim || !x->to_inner)
		return 0;
	dnnl_exec_arg_t args[2] = {
		{DNNL_ARG_FROM, x->to_inner ? x->user : x->inner},
		{DNNL_ARG_TO, x->to_inner ? x->inner : x->user},
	};
	return cpu_exec(ctx, x->prim, 2, args);
}

int cpu_xfer_flush(struct ops_ctx *ctx, struct cpu_xfer *x)
{
	if (!x->prim || x->to_inner)
		return 0;
	dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, x->inner}, {DNNL_ARG_TO, x->user}};
	return cpu_exec(ctx, x->prim, 2, args);
}

void cpu_xfer_release(struct cpu_xfer *x)
{
	if (x->inner && x->inner != x->user)
		dnnl_memory_destroy(x->inner);
	cpu_mem_free(&x->user);
	x->inner = NULL;
	cpu_prim_free(&x->prim);
}

enum flat_kind { FLAT_ADD, FLAT_ADD_RELU, FLAT_COPY, FLAT_RELU_BWD };

/* One elementwise primitive over 1-D views of count values of type t:
 * ADD dst = a + b; ADD_RELU dst = relu(a + b); COPY dst = a;
 * RELU_BWD dst = a (dy) where b (the relu output) > 0. */
static int flat_op(struct ops_ctx *ctx, enum flat_kind kind, size_t count, enum ops_dtype t,
		   void *dst, const void *a, const void *b)
{
	dnnl_memory_desc_t md;
	dnnl_primitive_desc_t pd = NULL, hint = NULL;
	dnnl_primitive_attr_t attr = NULL;
	dnnl_post_ops_t po = NULL;
	dnnl_primitive_t prim = NULL;
	dnnl_memory_t ma = NULL, mb = NULL, mdst = NULL;
	dnnl_engine_t eng = cpu_ctx(ctx)->eng;
	int rc = -1;
	if (count == 0)
		return 0;
	size_t most = (size_t)1 << 30, e = ops_dtype_size(t);
	if (count > most) { /* beyond a 1-D int descriptor: in parts */
		for (size_t i = 0; i < count; i += most) {
			size_t part = count - i < most ? count - i : most, o = i * e;
			if (flat_op(ctx, kind, part, t, (char *)dst + o, (const char *)a + o,
				    b ? (const char *)b + o : NULL))
				return -1;
		}
		return 0;
	}
	dnnl_dims_t d1 = {(dnnl_dim_t)count};
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&md, 1, d1, cpu_dt(t), dnnl_a));
	dnnl_status_t st;
	if (kind == FLAT_ADD || kind == FLAT_ADD_RELU) {
		dnnl_binary_desc_t bd;
		DNNL_CHECK(dnnl_binary_desc_init(&bd, dnnl_binary_add, &md, &md, &md));
		if (kind == FLAT_ADD_RELU) {
			DNNL_CHECK(dnnl_post_ops_create(&po));
			DNNL_CHECK(dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0, 0));
			DNNL_CHECK(dnnl_primitive_attr_create(&attr));
			DNNL_CHECK(dnnl_primitive_attr_set_post_ops(attr, po));
		}
		st = dnnl_primitive_desc_create(&pd, &bd, attr, eng, NULL);
	} else if (kind == FLAT_COPY) {
		st = dnnl_reorder_primitive_desc_create(&pd, &md, eng, &md, eng, NULL);
	} else {
		dnnl_eltwise_desc_t fd, bd;
		DNNL_CHECK(dnnl_eltwise_forward_desc_init(&fd, dnnl_forward_training,
			dnnl_eltwise_relu_use_dst_for_bwd, &md, 0, 0));
		DNNL_CHECK(dnnl_eltwise_backward_desc_init(&bd, dnnl_eltwise_relu_use_dst_for_bwd,
							   &md, &md, 0, 0));
		st = dnnl_primitive_desc_create(&hint, &fd, NULL, eng, NULL);
		if (st == dnnl_success)
			st = dnnl_primitive_desc_create(&pd, &bd, NULL, eng, hint);
	}
	if (po)
		dnnl_post_ops_destroy(po);
	if (attr)
		dnnl_primitive_attr_destroy(attr);
	if (hint)
		dnnl_primitive_desc_destroy(hint);
	if (st != dnnl_success)
		return error("cannot build an elementwise oneDNN primitive: %s", dnnl_status2str(st));
	rc = cpu_prim_create(ctx, &prim, pd);
	dnnl_primitive_desc_destroy(pd);
	if (rc || cpu_mem(ctx, &ma, &md) || cpu_mem(ctx, &mdst, &md) ||
	    (b && cpu_mem(ctx, &mb, &md)) || cpu_set(ma, a) || cpu_set(mdst, dst) ||
	    (b && cpu_set(mb, b))) {
		rc = -1;
		goto out;
	}
	if (kind == FLAT_COPY) {
		dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, ma}, {DNNL_ARG_TO, mdst}};
		rc = cpu_exec(ctx, prim, 2, args);
	} else if (kind == FLAT_RELU_BWD) {
		dnnl_exec_arg_t args[] = {{DNNL_ARG_DIFF_DST, ma}, {DNNL_ARG_DST, mb},
					  {DNNL_ARG_DIFF_SRC, mdst}};
		rc = cpu_exec(ctx, prim, 3, args);
	} else {
		dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC_0, ma}, {DNNL_ARG_SRC_1, mb}, {DNNL_ARG_DST, mdst}};
		rc = cpu_exec(ctx, prim, 3, args);
	}
out:
	cpu_mem_free(&ma);
	cpu_mem_free(&mb);
	cpu_mem_free(&mdst);
	cpu_prim_free(&prim);
	return rc;
}

int cpu_flat_add(struct ops_ctx *ctx, size_t count, enum ops_dtype t, void *dst, const void *a,
		 const void *b, int relu)
{
	return flat_op(ctx, relu ? FLAT_ADD_RELU : FLAT_ADD, count, t, dst, a, b);
}

int cpu_flat_copy(struct ops_ctx *ctx, size_t count, enum ops_dtype t, void *dst, const void *src)
{
	return flat_op(ctx, FLAT_COPY, count, t, dst, src, NULL);
}

int cpu_relu_backward_dst(struct ops_ctx *ctx, size_t count, enum ops_dtype t, void *dx,
			  const void *dy, const void *y)
{
	return flat_op(ctx, FLAT_RELU_BWD, count, t, dx, dy, y);
}
