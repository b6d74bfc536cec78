/* distance.c: edit distances between network descriptors (NNI semantics). */
#include "distance.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static double attr_diff(double a, double b)
{
	double m = a > b ? a : b;
	return m == 0 ? 0.0 : fabs(a - b) / m;
}

double editdist_layer(const struct tdesc_layer *a, const struct tdesc_layer *b)
{
	if (a->type != b->type)
		return 1.0;
	if (a->type == ARCH_CONV2D)
		return (attr_diff(a->filters, b->filters) + attr_diff(a->kernel, b->kernel) +
			attr_diff(a->stride, b->stride)) / 3.0;
	if (a->type == ARCH_MAXPOOL || a->type == ARCH_AVGPOOL)
		return (attr_diff(a->padding, b->padding) + attr_diff(a->kernel, b->kernel) +
			attr_diff(a->stride, b->stride)) / 3.0;
	return 0.0;
}

static int layer_same(const struct tdesc_layer *a, const struct tdesc_layer *b)
{
	return a->type == b->type && a->filters == b->filters && a->kernel == b->kernel &&
	       a->stride == b->stride && a->padding == b->padding;
}

double editdist_layers(const struct tdesc *a, const struct tdesc *b)
{
	return editdist_layers_bounded(a, b, (double)(a->nlayers + b->nlayers) + 1.0);
}

/* Only the cells a path of cost <= bound can cross are computed: a path
 * through cell (i, j), on diagonal k = j - i, makes |k| more insertions
 * than deletions (or the reverse) before it and |d - k| after it, d =
 * nb - na, so costs at least |k| + |d - k|; that is |d| between the
 * diagonals 0 and d and grows by 2 a diagonal outside them. Row i covers
 * the diagonals where it is <= bound; a cell outside costs more than bound
 * and is never read. Stops when a whole row exceeds the bound, since every
 * path crosses every row. */
double editdist_layers_bounded(const struct tdesc *a, const struct tdesc *b, double bound)
{
	int na = a->nlayers, nb = b->nlayers;
	if (fabs((double)(na - nb)) > bound)
		return fabs((double)(na - nb));
	if (a->has_counts && b->has_counts) {
		/* every layer of a type in excess on one side is deleted or
		 * substituted by another type: cost 1 each */
		int ea = 0, eb = 0;
		for (int t = 0; t < ARCH_NTYPES; t++) {
			int d = (int)a->counts[t] - (int)b->counts[t];
			if (d > 0)
				ea += d;
			else
				eb -= d;
		}
		int lb = ea > eb ? ea : eb;
		if ((double)lb > bound)
			return (double)lb;
	}
	/* A common prefix or suffix of equal layers costs nothing and an
	 * optimal alignment matches it (insertions and deletions cost 1 each,
	 * so aligning a first layer elsewhere never beats matching it to its
	 * equal), so only the layers between them are aligned: morphisms of
	 * one network differ in a stretch of it. */
	const struct tdesc_layer *A = a->layers, *B = b->layers;
	while (na && nb && layer_same(A, B)) {
		A++;
		B++;
		na--;
		nb--;
	}
	while (na && nb && layer_same(&A[na - 1], &B[nb - 1])) {
		na--;
		nb--;
	}
	int d = nb - na;
	double room = floor((bound - fabs((double)d)) / 2);   /* >= 0: |d| <= bound above */
	int e = room < (double)(na + nb) ? (int)room : na + nb;
	int klo = (d < 0 ? d : 0) - e, khi = (d > 0 ? d : 0) + e;
	double stackbuf[2 * 256];
	double *prev = stackbuf, *cur = stackbuf + 256, *heap = NULL;
	if (nb + 1 > 256) {
		heap = xmalloc(2 * (size_t)(nb + 1) * sizeof(double));
		prev = heap;
		cur = heap + nb + 1;
	}
	const double inf = DBL_MAX / 4;
	for (int j = 0; j <= nb; j++)
		prev[j] = j <= khi ? (double)j : inf;
	double result;
	for (int i = 1; i <= na; i++) {
		int lo = i + klo > 1 ? i + klo : 1, hi = i + khi < nb ? i + khi : nb;
		double rowmin = inf;
		cur[0] = -i >= klo ? (double)i : inf;
		if (cur[0] < rowmin)
			rowmin = cur[0];
		if (lo > 1)
			cur[lo - 1] = inf;
		const struct tdesc_layer *la = &A[i - 1];
		for (int j = lo; j <= hi; j++) {
			const struct tdesc_layer *lb = &B[j - 1];
			double sub = la->type != lb->type ? 1.0 : layer_same(la, lb) ? 0.0 :
				     editdist_layer(la, lb);
			/* the insertion last: it alone depends on this row's
			 * previous cell, so the chain between cells is one add
			 * and one compare */
			double v = prev[j - 1] + sub, del = prev[j] + 1.0;
			if (del < v)
				v = del;
			double ins = cur[j - 1] + 1.0;
			if (ins < v)
				v = ins;
			cur[j] = v;
			if (v < rowmin)
				rowmin = v;
		}
		if (hi < nb)
			cur[hi + 1] = inf;
		if (rowmin > bound) {
			result = rowmin;
			goto out;
		}
		double *t = prev;
		prev = cur;
		cur = t;
	}
	result = prev[nb];
out:
	free(heap);
	return result;
}

static double skip_distance(const struct tdesc_skip *a, const struct tdesc_skip *b)
{
	if (a->type != b->type)
		return 1.0;
	int la = abs(a->b - a->a), lb = abs(b->b - b->a);
	int ma = a->a > b->a ? a->a : b->a, ml = la > lb ? la : lb;
	return (double)(abs(a->a - b->a) + abs(la - lb)) / (double)(ma + ml);
}

/* Hungarian algorithm with potentials, n <= m (rows are assigned). */
static double hungarian(const double *c, int n, int m)
{
	/* one block for the work arrays, on the stack for a network's usual
	 * few dozen skips (this runs for most distances a search computes) */
	enum { SMALL = 64 };
	double dsmall[3 * (SMALL + 1)];
	int ismall[2 * (SMALL + 1)];
	char csmall[SMALL + 1];
	int big = m > SMALL;
	double *d = big ? xmalloc(((size_t)n + 1 + 2 * ((size_t)m + 1)) * sizeof(double)) : dsmall;
	int *p = big ? xmalloc(2 * ((size_t)m + 1) * sizeof(int)) : ismall;
	char *used = big ? xmalloc((size_t)m + 1) : csmall;
	double *u = d, *v = d + n + 1, *minv = v + m + 1;
	int *way = p + m + 1;
	memset(u, 0, ((size_t)n + 1) * sizeof(double));
	memset(v, 0, ((size_t)m + 1) * sizeof(double));
	memset(p, 0, 2 * ((size_t)m + 1) * sizeof(int));
	for (int i = 1; i <= n; i++) {
		p[0] = i;
		int j0 = 0;
		for (int j = 0; j <= m; j++) {
			minv[j] = DBL_MAX;
			used[j] = 0;
		}
		do {
			used[j0] = 1;
			int i0 = p[j0], j1 = 0;
			double delta = DBL_MAX;
			for (int j = 1; j <= m; j++) {
				if (used[j])
					continue;
				double cur = c[(size_t)(i0 - 1) * m + (j - 1)] - u[i0] - v[j];
				if (cur < minv[j]) {
					minv[j] = cur;
					way[j] = j0;
				}
				if (minv[j] < delta) {
					delta = minv[j];
					j1 = j;
				}
			}
			for (int j = 0; j <= m; j++) {
				if (used[j]) {
					u[p[j]] += delta;
					v[j] -= delta;
				} else {
					minv[j] -= delta;
				}
			}
			j0 = j1;
		} while (p[j0] != 0);
		do {
			int j1 = way[j0];
			p[j0] = p[j1];
			j0 = j1;
		} while (j0);
	}
	double total = 0;
	for (int j = 1; j <= m; j++)
		if (p[j])
			total += c[(size_t)(p[j] - 1) * m + (j - 1)];
	if (big) {
		free(used);
		free(p);
		free(d);
	}
	return total;
}

double editdist_assignment(const double *cost, int n, int m)
{
	if (n == 0 || m == 0)
		return 0.0;
	if (n <= m)
		return hungarian(cost, n, m);
	double *t = xmalloc((size_t)n * m * sizeof(double));
	for (int i = 0; i < n; i++)
		for (int j = 0; j < m; j++)
			t[(size_t)j * n + i] = cost[(size_t)i * m + j];
	double r = hungarian(t, m, n);
	free(t);
	return r;
}

double editdist_skips(const struct tdesc *a, const struct tdesc *b)
{
	int n = a->nskips, m = b->nskips;
	double extra = fabs((double)(n - m));
	if (n == 0 || m == 0)
		return extra;
	/* the matrix of up to 32 skips a side in this thread's scratch (the
	 * distance scans run on a pool of threads) */
	static _Thread_local double scratch[1024];
	double *c = (size_t)n * m <= 1024 ? scratch : xmalloc((size_t)n * m * sizeof(double));
	for (int i = 0; i < n; i++)
		for (int j = 0; j < m; j++)
			c[(size_t)i * m + j] = skip_distance(&a->skips[i], &b->skips[j]);
	double r = editdist_assignment(c, n, m) + extra;
	if (c != scratch)
		free(c);
	return r;
}

double editdist(const struct tdesc *a, const struct tdesc *b)
{
	return editdist_layers(a, b) + EDITDIST_KERNEL_LAMBDA * editdist_skips(a, b);
}

double editdist_bounded(const struct tdesc *a, const struct tdesc *b, double bound, double *layers)
{
	double skip_lb = EDITDIST_KERNEL_LAMBDA * fabs((double)(a->nskips - b->nskips));
	double lay = editdist_layers_bounded(a, b, bound - skip_lb + 1e-12);
	if (layers)
		*layers = lay;
	if (lay + skip_lb > bound)
		return lay + skip_lb;
	return lay + EDITDIST_KERNEL_LAMBDA * editdist_skips(a, b);
}
