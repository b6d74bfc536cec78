/* cuda_dense.c: the dense layer on cuBLASLt, fp32 (CUBLAS_COMPUTE_32F, no
 * TF32), the bias added by the matmul's epilogue.
 *
 *   x: (n, Cin)   w: (units, Cin)   b: (units)   y: (n, units)   (row-major)
 *
 * cuBLASLt is column-major, where a row-major (r, c) matrix is its
 * transpose (c, r); so, with X = x^T (Cin, n), W = w^T (Cin, units):
 *
 *   y^T  (units, n) = W^T X + b       (transa = T; epilogue BIAS)
 *   dx^T (Cin, n)   = W dy^T
 *   dw^T (Cin, units) = X dy           (transb = T)
 *   db   = per-unit sum of dy (cuda_bias_grad)
 *
 * The three matmul descriptions are made once per batch size (l->priv),
 * each with its algorithm and workspace size from cuBLASLt's heuristics,
 * asked once and again only when the pointers' alignment changes (up to
 * MM_WS_MAX bytes of workspace, from the backend's arena). */
#include <stdint.h>
#include <stdlib.h>

#include "kernels/cuda/cuda_ctx.h"

/* One matmul D = op(A) op(B) (+ bias): its description, the layouts, and
 * the algorithm the heuristics gave for pointers aligned to `align` bytes. */
struct mm {
	cublasLtMatmulDesc_t desc;
	cublasLtMatrixLayout_t a, b, d;
	cublasLtMatmulAlgo_t algo;
	size_t ws;
	uint32_t align;         /* 0: no algorithm asked for yet */
};

#define MM_WS_MAX ((size_t)32 << 20)

struct dense_plan {
	int n;
	const struct cuda_blaslt *lt;   /* the process's: lives past the context */
	struct mm fwd, bwd_data, bwd_filter;
};

static void mm_free(const struct cuda_blaslt *lt, struct mm *m)
{
	if (m->desc)
		lt->desc_destroy(m->desc);
	if (m->a)
		lt->layout_destroy(m->a);
	if (m->b)
		lt->layout_destroy(m->b);
	if (m->d)
		lt->layout_destroy(m->d);
}

/* A, B, D as stored, column-major with ld = rows: (ar, ac), (br, bc), (dr, dc). */
static int mm_init(const struct cuda_blaslt *lt, struct mm *m, cublasOperation_t ta,
		   cublasOperation_t tb, int ar, int ac, int br, int bc, int dr, int dc, int bias)
{
	CUBLAS_CHECK(lt->desc_create(&m->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
	CUBLAS_CHECK(lt->desc_set(m->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
	CUBLAS_CHECK(lt->desc_set(m->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
	if (bias) {
		cublasLtEpilogue_t e = CUBLASLT_EPILOGUE_BIAS;
		CUBLAS_CHECK(lt->desc_set(m->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof(e)));
	}
	CUBLAS_CHECK(lt->layout_create(&m->a, CUDA_R_32F, ar, ac, ar));
	CUBLAS_CHECK(lt->layout_create(&m->b, CUDA_R_32F, br, bc, br));
	CUBLAS_CHECK(lt->layout_create(&m->d, CUDA_R_32F, dr, dc, dr));
	return 0;
}

static void plan_free(struct dense_plan *p)
{
	if (!p)
		return;
	mm_free(p->lt, &p->fwd);
	mm_free(p->lt, &p->bwd_data);
	mm_free(p->lt, &p->bwd_filter);
	free(p);
}

static int plan_init(const struct cuda_blaslt *lt, const struct ops_layer *l, int n,
		     struct dense_plan *p)
{
	int cin = (int)ops_shape_size(&l->in[0]), u = l->cfg.units;
	p->n = n;
	p->lt = lt;
	return mm_init(lt, &p->fwd, CUBLAS_OP_T, CUBLAS_OP_N, cin, u, cin, n, u, n, l->cfg.bias) ||
	       mm_init(lt, &p->bwd_data, CUBLAS_OP_N, CUBLAS_OP_N, cin, u, u, n, cin, n, 0) ||
	       mm_init(lt, &p->bwd_filter, CUBLAS_OP_N, CUBLAS_OP_T, cin, n, u, n, cin, u, 0);
}

static int plan_of(struct ops_ctx *ctx, struct ops_layer *l, int n, struct dense_plan **out)
{
	const struct cuda_blaslt *lt = cuda_ctx(ctx)->blas;
	struct dense_plan *p = l->priv;
	if (!p || p->n != n) {
		plan_free(p);
		l->priv = p = xcalloc(1, sizeof(*p));
		if (plan_init(lt, l, n, p)) {
			plan_free(p);
			l->priv = NULL;
			return -1;
		}
	}
	*out = p;
	return 0;
}

/* The heuristics' first algorithm for m with every pointer aligned to align. */
static int mm_algo(struct cuda_ctx *c, struct mm *m, uint32_t align)
{
	const struct cuda_blaslt *lt = c->blas;
	cublasLtMatmulPreference_t pref;
	cublasLtMatmulHeuristicResult_t res;
	int found = 0;
	size_t max = MM_WS_MAX;
	CUBLAS_CHECK(lt->pref_create(&pref));
	cublasStatus_t s =
		lt->pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max, sizeof(max));
	static const cublasLtMatmulPreferenceAttributes_t aligns[] = {
		CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
		CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
	};
	for (int k = 0; k < 4 && s == CUBLAS_STATUS_SUCCESS; k++)
		s = lt->pref_set(pref, aligns[k], &align, sizeof(align));
	if (s == CUBLAS_STATUS_SUCCESS)
		s = lt->algo_heuristic(c->lt, m->desc, m->a, m->b, m->d, m->d, pref, 1, &res,
				       &found);
	lt->pref_destroy(pref);
	CUBLAS_CHECK(s);
	if (!found)
		return error("cuBLASLt has no algorithm for a dense layer's matmul");
	m->algo = res.algo;
	m->ws = res.workspaceSize;
	m->align = align;
	return 0;
}

/* D = op(A) op(B) on the backend's stream (C = D, beta 0); bias: the
 * epilogue's pointer, or NULL. */
static int mm_run(struct ops_ctx *ctx, struct mm *m, const void *a, const void *b, void *d,
		  const void *bias)
{
	struct cuda_ctx *c = cuda_ctx(ctx);
	const struct cuda_blaslt *lt = c->blas;
	const float one = 1, zero = 0;
	uintptr_t p = (uintptr_t)a | (uintptr_t)b | (uintptr_t)d | (uintptr_t)bias | 256;
	uint32_t align = (uint32_t)(p & -p);   /* the largest power of two all are aligned to */
	void *ws = NULL;
	if ((m->align != align && mm_algo(c, m, align)) ||
	    (m->ws && cuda_scratch(ctx, m->ws, &ws)))
		return -1;
	ledger_launch(&c->ledger, "cublaslt matmul", NULL, 0);
	CUBLAS_CHECK(lt->matmul(c->lt, m->desc, &one, a, m->a, b, m->b, &zero, d, m->d, d, m->d,
				&m->algo, ws, m->ws, c->run.stream));
	return 0;
}

static int dense_forward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			 float *y, int train)
{
	(void)train;
	struct dense_plan *p;
	size_t cin = ops_shape_size(&l->in[0]), u = (size_t)l->cfg.units;
	void *gx, *gw, *gb = NULL, *gy;
	if (cuda_begin(ctx) || plan_of(ctx, l, n, &p) || cuda_in(ctx, x[0], n * cin * 4, &gx) ||
	    cuda_in(ctx, l->w, u * cin * 4, &gw) ||
	    (l->cfg.bias && cuda_in(ctx, l->b, u * 4, &gb)) || cuda_out(ctx, y, n * u * 4, 0, &gy))
		return -1;
	if (gb)   /* the pointer is the op's: set on every call */
		CUBLAS_CHECK(cuda_ctx(ctx)->blas->desc_set(p->fwd.desc,
							   CUBLASLT_MATMUL_DESC_BIAS_POINTER, &gb,
							   sizeof(gb)));
	if (mm_run(ctx, &p->fwd, gw, gx, gy, gb))
		return -1;
	return cuda_end(ctx);
}

static int dense_backward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			  const float *y, const float *dy, float *const *dx)
{
	(void)y;
	struct dense_plan *p;
	size_t cin = ops_shape_size(&l->in[0]), u = (size_t)l->cfg.units;
	void *gx, *gw, *gdw, *gdb = NULL, *gdy, *gdx;
	if (cuda_begin(ctx) || plan_of(ctx, l, n, &p) || cuda_in(ctx, x[0], n * cin * 4, &gx) ||
	    cuda_in(ctx, l->w, u * cin * 4, &gw) || cuda_in(ctx, dy, n * u * 4, &gdy) ||
	    cuda_out(ctx, l->dw, u * cin * 4, 0, &gdw) ||
	    (l->cfg.bias && cuda_out(ctx, l->db, u * 4, 0, &gdb)) ||
	    cuda_out(ctx, dx[0], n * cin * 4, 0, &gdx))
		return -1;
	if (mm_run(ctx, &p->bwd_filter, gx, gdy, gdw, NULL) ||
	    (gdx && mm_run(ctx, &p->bwd_data, gw, gdy, gdx, NULL)))
		return -1;
	if (gdb && cuda_bias_grad(ctx, OPS_F32, (size_t)n, (int)u, gdy, gdb))
		return -1;
	return cuda_end(ctx);
}

static void dense_release(struct ops_ctx *ctx, struct ops_layer *l)
{
	(void)ctx;
	plan_free(l->priv);
	l->priv = NULL;
}

/* What a pass takes of the backend's scratch arena: cuBLASLt's workspace
 * for each of its matrix products, at most MM_WS_MAX each (two in the
 * backward), and the bias gradient's double sums. Between calls the layer
 * keeps nothing: 0. */
static size_t dense_workspace(const struct ops_ctx *ctx, const struct ops_layer *l, int n,
			      size_t *scratch)
{
	(void)ctx, (void)n;
	*scratch = cuda_bias_grad_scratch(l->cfg.units) + 2 * cuda_scratch_bytes(MM_WS_MAX);
	return 0;
}

const struct ops_layer_ops cuda_dense_ops = {
	.type = OPS_DENSE,
	.name = "fully connected",
	.forward = dense_forward,
	.backward = dense_backward,
	.release = dense_release,
	.workspace = dense_workspace,
};
