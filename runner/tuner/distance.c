/* distance.c: edit distances between network descriptors (NNI semantics). */
#include "distance.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
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

/* ---- the vocabulary -------------------------------------------------------- */

void editdist_vocab_init(struct editdist_vocab *v, int max)
{
	memset(v, 0, sizeof(*v));
	v->max = max;
	v->nslot = 16;
	while (v->nslot < 2 * max)
		v->nslot *= 2;
	v->slot = xcalloc((size_t)v->nslot, sizeof(int));
}

void editdist_vocab_release(struct editdist_vocab *v)
{
	free(v->layer);
	free(v->cost);
	free(v->slot);
	memset(v, 0, sizeof(*v));
}

static unsigned layer_hash(const struct tdesc_layer *l)
{
	uint64_t h = (uint64_t)(uint8_t)l->type | (uint64_t)(uint8_t)l->padding << 8 |
		     (uint64_t)(uint16_t)l->kernel << 16 | (uint64_t)(uint16_t)l->stride << 32;
	h ^= (uint64_t)(uint32_t)l->filters * 0x9e3779b97f4a7c15ull;
	h *= 0xff51afd7ed558ccdull;
	return (unsigned)(h >> 32);
}

/* Room for one more token: the cost matrix doubles, its rows moved. */
static void vocab_grow(struct editdist_vocab *v)
{
	int cap = v->cap ? 2 * v->cap : 16;
	if (cap > v->max)
		cap = v->max;
	double *cost = xmalloc((size_t)cap * (size_t)cap * sizeof(double));
	for (int a = 0; a < v->n; a++)
		memcpy(cost + (size_t)a * cap, v->cost + (size_t)a * v->cap, (size_t)v->n * sizeof(double));
	free(v->cost);
	v->cost = cost;
	v->cap = cap;
	v->layer = xrealloc(v->layer, (size_t)cap * sizeof(*v->layer));
}

int editdist_vocab_token(struct editdist_vocab *v, const struct tdesc_layer *l)
{
	unsigned mask = (unsigned)v->nslot - 1, k = layer_hash(l) & mask;
	for (; v->slot[k]; k = (k + 1) & mask)
		if (layer_same(&v->layer[v->slot[k] - 1], l))
			return v->slot[k] - 1;
	if (v->n == v->max)
		return -1;
	if (v->n == v->cap)
		vocab_grow(v);
	int t = v->n++;
	v->layer[t] = *l;
	v->slot[k] = t + 1;
	for (int o = 0; o <= t; o++) {
		v->cost[(size_t)t * v->cap + o] = editdist_layer(l, &v->layer[o]);
		v->cost[(size_t)o * v->cap + t] = editdist_layer(&v->layer[o], l);
	}
	return t;
}

void editdist_vocab_tokens(struct editdist_vocab *v, struct tdesc *d)
{
	free(d->tok);
	d->tok = xmalloc((size_t)(d->nlayers ? d->nlayers : 1) * sizeof(int));
	d->vocab = v;
	for (int k = 0; k < d->nlayers; k++)
		if ((d->tok[k] = editdist_vocab_token(v, &d->layers[k])) < 0) {
			free(d->tok);
			d->tok = NULL;
			d->vocab = NULL;
			return;
		}
}

/* ---- the layers' Levenshtein distance ------------------------------------- */

double editdist_layers(const struct tdesc *a, const struct tdesc *b)
{
	return editdist_layers_bounded(a, b, (double)(a->nlayers + b->nlayers) + 1.0);
}

/* The table of tokens A (rows) against B (columns) over the diagonals klo
 * <= j - i <= khi. Only the cells a path of cost <= bound can cross are
 * computed: a path through cell (i, j), on diagonal k = j - i, makes |k|
 * more insertions than deletions (or the reverse) before it and |d - k|
 * after it, d = nb - na, so costs at least |k| + |d - k|; that is |d|
 * between the diagonals 0 and d and grows by 2 a diagonal outside them.
 * Row i covers the diagonals where it is <= bound; a cell outside costs
 * more than bound and is never read. Stops when a whole row exceeds the
 * bound, since every path crosses every row. */
static double band_table(const int *A, int na, const int *B, int nb,
			 const struct editdist_vocab *v, int klo, int khi, double bound)
{
	double stackbuf[2 * 256];
	double *prev = stackbuf, *cur = stackbuf + 256, *heap = NULL;
	if (nb + 1 > 256) {
		heap = xmalloc(2 * (size_t)(nb + 1) * sizeof(double));
		prev = heap;
		cur = heap + nb + 1;
	}
	const double inf = DBL_MAX / 4;
	/* row 0 as far as row 1 reads it: each later row marks its own ends */
	for (int j = 0; j <= nb && j <= khi + 1; j++)
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
		const double *sub = v->cost + (size_t)A[i - 1] * (size_t)v->cap;
		for (int j = lo; j <= hi; j++) {
			/* the insertion last: it alone depends on this row's
			 * previous cell, so the chain between cells is one add
			 * and one compare */
			double val = prev[j - 1] + sub[B[j - 1]], del = prev[j] + 1.0;
			if (del < val)
				val = del;
			double ins = cur[j - 1] + 1.0;
			if (ins < val)
				val = ins;
			cur[j] = val;
			if (val < rowmin)
				rowmin = val;
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

static int same_layer(const struct tdesc *a, int i, const struct tdesc *b, int j, int tokens)
{
	return tokens ? a->tok[i] == b->tok[j] : layer_same(&a->layers[i], &b->layers[j]);
}

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
	int tokens = a->tok && b->tok && a->vocab == b->vocab;
	int lo = 0;
	while (lo < na && lo < nb && same_layer(a, lo, b, lo, tokens))
		lo++;
	while (na > lo && nb > lo && same_layer(a, na - 1, b, nb - 1, tokens)) {
		na--;
		nb--;
	}
	na -= lo;
	nb -= lo;
	int d = nb - na;
	double room = floor((bound - fabs((double)d)) / 2);   /* >= 0: |d| <= bound above */
	int e = room < (double)(na + nb) ? (int)room : na + nb;
	int klo = (d < 0 ? d : 0) - e, khi = (d > 0 ? d : 0) + e;
	if (tokens)
		return band_table(a->tok + lo, na, b->tok + lo, nb, a->vocab, klo, khi, bound);
	/* descriptors without one vocabulary (tests, tools): the pair's own */
	struct editdist_vocab v;
	editdist_vocab_init(&v, na + nb);
	int *t = xmalloc((size_t)(na + nb ? na + nb : 1) * sizeof(int));
	for (int i = 0; i < na; i++)
		t[i] = editdist_vocab_token(&v, &a->layers[lo + i]);
	for (int j = 0; j < nb; j++)
		t[na + j] = editdist_vocab_token(&v, &b->layers[lo + j]);
	double r = band_table(t, na, t + na, nb, &v, klo, khi, bound);
	free(t);
	editdist_vocab_release(&v);
	return r;
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

/* The matching's cost is at least the sum, over the smaller side, of each
 * skip's cheapest partner (every one of them is matched): when that is
 * past the bound the Hungarian matching is not needed. */
static double assignment_floor(const double *c, int n, int m)
{
	double rows = 0, cols = 0;
	if (n <= m)
		for (int i = 0; i < n; i++) {
			double lo = c[(size_t)i * m];
			for (int j = 1; j < m; j++)
				if (c[(size_t)i * m + j] < lo)
					lo = c[(size_t)i * m + j];
			rows += lo;
		}
	if (m <= n)
		for (int j = 0; j < m; j++) {
			double lo = c[j];
			for (int i = 1; i < n; i++)
				if (c[(size_t)i * m + j] < lo)
					lo = c[(size_t)i * m + j];
			cols += lo;
		}
	return rows > cols ? rows : cols;
}

double editdist_skips_bounded(const struct tdesc *a, const struct tdesc *b, double bound)
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
	/* a hair of room: the floor and the matching add in other orders */
	double least = assignment_floor(c, n, m) + extra;
	double r = least > bound + 1e-9 ? least : editdist_assignment(c, n, m) + extra;
	if (c != scratch)
		free(c);
	return r;
}

double editdist_skips(const struct tdesc *a, const struct tdesc *b)
{
	return editdist_skips_bounded(a, b, INFINITY);
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
	return lay + EDITDIST_KERNEL_LAMBDA *
		     editdist_skips_bounded(a, b, (bound - lay) / EDITDIST_KERNEL_LAMBDA);
}
