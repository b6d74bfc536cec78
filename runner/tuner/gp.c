/* gp.c: incremental Gaussian process (see gp.h). */
#include "gp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"   /* tpool_run */
#include "util.h"

#define GP_MIN_PIVOT 1e-4
#define P(i, j) ((size_t)(i) * ((size_t)(i) + 1) / 2 + (size_t)(j))   /* j <= i */

void gp_init(struct gp *g)
{
	memset(g, 0, sizeof(*g));
	g->base_jitter = 1e-10;
}

void gp_release(struct gp *g)
{
	free(g->L);
	free(g->kinv);
	free(g->y);
	free(g->alpha);
	free(g->jitter);
	gp_init(g);
}

static void reserve(struct gp *g, int cap)
{
	size_t tri = (size_t)cap * ((size_t)cap + 1) / 2;
	if (!g->removed)
		g->L = xrealloc(g->L, tri * sizeof(double));
	g->kinv = xrealloc(g->kinv, tri * sizeof(double));
	g->y = xrealloc(g->y, (size_t)cap * sizeof(double));
	g->alpha = xrealloc(g->alpha, (size_t)cap * sizeof(double));
	g->jitter = xrealloc(g->jitter, (size_t)cap * sizeof(double));
	g->cap = cap;
}

static void grow(struct gp *g)
{
	reserve(g, g->cap < 64 ? 64 : g->cap + g->cap / 2);   /* packed n^2/2: grow gently */
}

size_t gp_state_bytes(int rows)
{
	size_t n = (size_t)rows;
	return (n * (n + 1) + 3 * n) * sizeof(double);
}

void gp_state_pack(const struct gp *g, unsigned char *out)
{
	size_t n = (size_t)g->n, tri = n * (n + 1) / 2 * sizeof(double), vec = n * sizeof(double);
	if (g->removed)
		BUG("gp_state_pack of a GP without L");
	memcpy(out, g->L, tri);
	memcpy(out + tri, g->kinv, tri);
	memcpy(out + 2 * tri, g->y, vec);
	memcpy(out + 2 * tri + vec, g->alpha, vec);
	memcpy(out + 2 * tri + 2 * vec, g->jitter, vec);
}

void gp_state_unpack(struct gp *g, int rows, const unsigned char *in)
{
	size_t n = (size_t)rows, tri = n * (n + 1) / 2 * sizeof(double), vec = n * sizeof(double);
	if (rows > g->cap)
		reserve(g, rows + rows / 2);
	memcpy(g->L, in, tri);
	memcpy(g->kinv, in + tri, tri);
	memcpy(g->y, in + 2 * tri, vec);
	memcpy(g->alpha, in + 2 * tri + vec, vec);
	memcpy(g->jitter, in + 2 * tri + 2 * vec, vec);
	g->n = rows;
}

/* Dot product with four accumulators (fixed order: deterministic). */
static double dot(const double *a, const double *b, int n)
{
	double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	int i = 0;
	for (; i + 4 <= n; i += 4) {
		s0 += a[i] * b[i];
		s1 += a[i + 1] * b[i + 1];
		s2 += a[i + 2] * b[i + 2];
		s3 += a[i + 3] * b[i + 3];
	}
	for (; i < n; i++)
		s0 += a[i] * b[i];
	return (s0 + s1) + (s2 + s3);
}

static double kinv_at(const struct gp *g, int i, int j)
{
	return i >= j ? g->kinv[P(i, j)] : g->kinv[P(j, i)];
}

struct upd {
	struct gp *g;
	const int *idx;
	const double *kval;
	int nnz;
	double *b;
	double c;
};

static void upd_b(void *ctx, size_t lo, size_t hi)
{
	struct upd *u = ctx;
	for (size_t i = lo; i < hi; i++) {
		double s = 0.0;
		for (int e = 0; e < u->nnz; e++)
			s += kinv_at(u->g, (int)i, u->idx[e]) * u->kval[e];
		u->b[i] = s;
	}
}

static void upd_kinv(void *ctx, size_t lo, size_t hi)
{
	struct upd *u = ctx;
	for (size_t i = lo; i < hi; i++) {
		double *row = &u->g->kinv[P(i, 0)];
		double bi = u->b[i] / u->c;
		for (size_t j = 0; j <= i; j++)
			row[j] += bi * u->b[j];
	}
}

int gp_add(struct gp *g, const int *idx, const double *kval, int nnz, double y)
{
	int n = g->n;
	if (n == g->cap)
		grow(g);
	double *k = xcalloc((size_t)n + 1, sizeof(double));
	double *l = xcalloc((size_t)n + 1, sizeof(double));
	double *b = xcalloc((size_t)n + 1, sizeof(double));
	int first = n;
	for (int e = 0; e < nnz; e++) {
		k[idx[e]] = kval[e];
		if (idx[e] < first)
			first = idx[e];
	}
	/* b = kinv k over the sparse k (n * nnz), row-parallel (disjoint
	 * writes: the result does not depend on the thread count) */
	struct upd u = { g, idx, kval, nnz, b, 0.0 };
	tpool_run(g->pool, (size_t)n, 256, upd_b, &u);
	double ll = 0.0;
	if (g->removed) {   /* no L: k^T kinv k */
		for (int e = 0; e < nnz; e++)
			ll += kval[e] * b[idx[e]];
	} else {   /* l = L^-1 k: zero before the first non-zero of k */
		for (int i = first; i < n; i++) {
			const double *row = &g->L[P(i, 0)];
			l[i] = (k[i] - dot(row + first, l + first, i - first)) / row[i];
			ll += l[i] * l[i];
		}
	}
	/* Schur complement (the new pivot, squared) with escalating jitter:
	 * never skip the update. The floor keeps the explicit inverse accurate
	 * (its entries stay below 1 / GP_MIN_PIVOT). */
	if (!isfinite(ll)) {   /* numerically lost: enter the point as independent */
		memset(l, 0, (size_t)n * sizeof(double));
		ll = 0.0;
		g->lost++;
	}
	/* exp(-d^2) over edit distances is not positive definite in general, so
	 * ll may exceed 1: the jitter grows as far as it must (no upper bound). */
	double jit = g->base_jitter, c = 1.0 + jit - ll;
	while (!(c >= GP_MIN_PIVOT)) {
		jit = jit < 1e-10 ? 1e-10 : jit * 10.0;
		c = 1.0 + jit - ll;
	}
	if (jit > g->max_jitter)
		g->max_jitter = jit;
	if (jit > g->base_jitter)
		g->escalations++;
	if (!g->removed) {
		memcpy(&g->L[P(n, 0)], l, (size_t)n * sizeof(double));
		g->L[P(n, n)] = sqrt(c);
	}
	/* the block-inverse update, row-parallel as b */
	u.c = c;
	tpool_run(g->pool, (size_t)n, 256, upd_kinv, &u);
	double *nrow = &g->kinv[P(n, 0)];
	for (int j = 0; j < n; j++)
		nrow[j] = -b[j] / c;
	nrow[n] = 1.0 / c;
	double by = 0.0;
	for (int i = 0; i < n; i++)
		by += b[i] * g->y[i];
	double r = (y - by) / c;
	for (int i = 0; i < n; i++)
		g->alpha[i] -= b[i] * r;
	g->alpha[n] = r;
	g->y[n] = y;
	g->jitter[n] = jit;
	g->n = n + 1;
	free(b);
	free(l);
	free(k);
	return n;
}

void gp_remove(struct gp *g, int i)
{
	int n = g->n;
	if (i < 0 || i >= n)
		BUG("gp_remove: row %d of %d", i, n);
	/* kinv without row and column i: A - u u^T / d, where u is kinv's
	 * column i (without i) and d its diagonal entry; alpha likewise:
	 * alpha_{-i} - u alpha_i / d (the block inverse read backwards) */
	double *u = xmalloc((size_t)(n ? n : 1) * sizeof(double));
	for (int j = 0; j < n; j++)
		u[j] = kinv_at(g, j, i);
	double d = u[i];
	for (int r = 0, R = 0; R < n; R++) {
		if (R == i)
			continue;
		/* new row r is old row R without column i: it moves down in
		 * the packed array, never past a row not yet read */
		double *dst = &g->kinv[P(r, 0)];
		const double *src = &g->kinv[P(R, 0)];
		for (int C = 0, c = 0; C <= R; C++) {
			if (C == i)
				continue;
			dst[c++] = src[C] - u[R] * u[C] / d;
		}
		r++;
	}
	double ai = g->alpha[i];
	for (int j = 0, k = 0; j < n; j++) {
		if (j == i)
			continue;
		g->alpha[k] = g->alpha[j] - u[j] * ai / d;
		g->y[k] = g->y[j];
		g->jitter[k] = g->jitter[j];
		k++;
	}
	free(u);
	free(g->L);
	g->L = NULL;
	g->removed++;
	g->n = n - 1;
}

void gp_set_y(struct gp *g, int i, double y)
{
	double dy = y - g->y[i];
	if (dy == 0.0)
		return;
	for (int j = 0; j < g->n; j++)
		g->alpha[j] += kinv_at(g, j, i) * dy;
	g->y[i] = y;
}

void gp_predict(const struct gp *g, const int *idx, const double *kval, int nnz, double *mean,
		double *var)
{
	double m = 0.0, q = 0.0;
	for (int a = 0; a < nnz; a++) {
		m += kval[a] * g->alpha[idx[a]];
		double s = 0.0;
		for (int b = 0; b < nnz; b++)
			s += kinv_at(g, idx[a], idx[b]) * kval[b];
		q += kval[a] * s;
	}
	double v = 1.0 - q;
	*mean = m;
	*var = v < 0 ? 0 : v > 1 ? 1 : v;
}
