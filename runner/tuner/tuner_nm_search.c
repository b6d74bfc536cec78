/* tuner_nm_search.c: the network morphism tuner's search for the next
 * architecture: distance scans of the history (a pthread pool, per-index
 * slots), NNI's simulated annealing over morphism neighbours with the
 * children of each expansion evaluated by the GP's UCB, and the lists that
 * prune a child's scan by the triangle inequality (docs/tuner.md, "Cost
 * control"). tuner_nm.c holds the observations and the tuner's ops. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "distance.h"
#include "gp.h"
#include "hset.h"  /* hset_insert, hset_has: candidates seen */
#include "morph.h"
#include "morph_record.h"
#include "pool.h"
#include "tuner_int.h"
#include "tuner_nm_int.h"
#include "util.h"

/* ---- distance scans ------------------------------------------------------ */

/* A list's scan (dl) or a kernel row's (dt), one of them. */
struct scan {
	const struct nm *nm;
	const struct tdesc *x;
	const int *subset;     /* items to look at, or NULL for all */
	double *dl;            /* (n) main-chain distance, exact up to list_bound
				* (past it: "far"); a list needs no skips */
	double list_bound;
	double *dt;            /* (n) total distance, or DBL_MAX past the cutoff */
};

static void scan_range(void *ctx, size_t b, size_t e)
{
	struct scan *s = ctx;
	const struct nm *nm = s->nm;
	for (size_t k = b; k < e; k++) {
		int j = s->subset ? s->subset[k] : (int)k;
		const struct tdesc *y = &nm->items[j].desc;
		if (s->dl) {
			s->dl[k] = editdist_layers_bounded(s->x, y, s->list_bound);
		} else {
			double dt = editdist_bounded(s->x, y, nm->cutoff, NULL);
			s->dt[k] = dt <= nm->cutoff ? dt : DBL_MAX;
		}
	}
}

static void scan(struct nm *nm, struct scan *s, size_t n)
{
	nm->stats.distances += n;
	tpool_run(nm->pool, n, 64, scan_range, s);
}

/* Sparse kernel row of x from a scan's total distances. */
static int kernel_row(const struct nm *nm, const double *dt, const int *subset, size_t n, int *idx,
		      double *kv)
{
	int nnz = 0;
	for (size_t k = 0; k < n; k++) {
		if (dt[k] == DBL_MAX)
			continue;
		int j = subset ? subset[k] : (int)k;
		idx[nnz] = nm->items[j].row;
		kv[nnz] = exp(-dt[k] * dt[k]);
		nnz++;
	}
	return nnz;
}

int nm_kernel_row(struct nm *nm, const struct tdesc *x, int *idx, double *kv)
{
	size_t n = (size_t)nm->nitems;
	double *dt = xmalloc((n ? n : 1) * sizeof(double));
	struct scan s = { nm, x, NULL, NULL, 0, dt };
	scan(nm, &s, n);
	int nnz = kernel_row(nm, dt, NULL, n, idx, kv);
	free(dt);
	return nnz;
}

/* ---- annealing ----------------------------------------------------------- */

struct heap {
	struct nm_elem *e;
	size_t n, cap;
};

static int elem_before(const struct nm_elem *a, const struct nm_elem *b)
{
	if (a->value != b->value)
		return a->value > b->value;
	return a->order < b->order;
}

static void heap_push(struct heap *h, struct nm_elem x)
{
	if (h->n == h->cap) {
		h->cap = h->cap ? 2 * h->cap : 256;
		h->e = xrealloc(h->e, h->cap * sizeof(*h->e));
	}
	size_t i = h->n++;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!elem_before(&x, &h->e[p]))
			break;
		h->e[i] = h->e[p];
		i = p;
	}
	h->e[i] = x;
}

static struct nm_elem heap_pop(struct heap *h)
{
	struct nm_elem top = h->e[0], x = h->e[--h->n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && elem_before(&h->e[c + 1], &h->e[c]))
			c++;
		if (!elem_before(&h->e[c], &x))
			break;
		h->e[i] = h->e[c];
		i = c;
	}
	if (h->n)
		h->e[i] = x;
	return top;
}

/* The history items within `bound` (main-chain distance) of a model, with
 * their exact distances; items past the bound are "far". */
struct nlist {
	int *item;     /* (n) */
	double *dl;    /* (n) */
	int n;
	double bound;
};

static void nlist_release(struct nlist *l)
{
	free(l->item);
	free(l->dl);
	memset(l, 0, sizeof(*l));
}

/* Scratch of size nitems for one scan at a time. */
struct scratch {
	double *dl, *dt, *kv;
	int *idx, *sub;
};

struct search {
	struct nm *nm;
	struct nm_cand *cands;
	struct nlist *lists;   /* (acands) lists of expanded candidates */
	int ncands, acands;
	struct nlist *hlists;  /* lists of expanded history items, by item (lazily) */
	struct hset cand_seen;
	struct scratch *w;     /* (n_neighbours) one for each child an expansion evaluates */
};

static void scratch_init(struct scratch *w, size_t n)
{
	w->dl = xmalloc(n * sizeof(double));
	w->dt = xmalloc(n * sizeof(double));
	w->kv = xmalloc(n * sizeof(double));
	w->idx = xmalloc(n * sizeof(int));
	w->sub = xmalloc(n * sizeof(int));
}

static void scratch_release(struct scratch *w)
{
	free(w->dl);
	free(w->dt);
	free(w->kv);
	free(w->idx);
	free(w->sub);
}

/* Scan `subset` (NULL = every item) from d and keep what is within bound. */
static void make_list(struct search *s, const struct tdesc *d, const int *subset, size_t n,
		      double bound, struct nlist *out)
{
	struct nm *nm = s->nm;
	double *dl = s->w[0].dl;   /* before any child is evaluated */
	struct scan sc = { nm, d, subset, dl, bound, NULL };
	scan(nm, &sc, n);
	out->item = xmalloc((n ? n : 1) * sizeof(int));
	out->dl = xmalloc((n ? n : 1) * sizeof(double));
	out->n = 0;
	out->bound = bound;
	for (size_t k = 0; k < n; k++)
		if (dl[k] <= bound) {
			out->item[out->n] = subset ? subset[k] : (int)k;
			out->dl[out->n++] = dl[k];
		}
}

/* The list of an element about to be expanded. A candidate's comes from its
 * parent's list when that is wide enough (triangle inequality: an item
 * within B - delta of the candidate is within B of the parent); otherwise,
 * and for history items, from a full scan with a wide bound. */
static const struct nlist *element_list(struct search *s, const struct nm_elem *e)
{
	static const struct nlist none = { NULL, NULL, 0, 0.0 };
	struct nm *nm = s->nm;
	double need = nm->cutoff + NM_STEP;        /* to evaluate children exactly */
	if (!nm->pruning)
		return &none;
	double wide = nm->cutoff + 2 * NM_STEP;    /* full scans: room for a few generations */
	if (e->item >= 0) {
		struct nlist *l = &s->hlists[e->item];
		if (!l->item)
			make_list(s, &nm->items[e->item].desc, NULL, (size_t)nm->nitems, wide, l);
		return l;
	}
	const struct nm_cand *c = &s->cands[e->cand];
	struct nlist *l = &s->lists[e->cand];
	const struct nlist *p = c->parent_cand >= 0 ? &s->lists[c->parent_cand]
						    : &s->hlists[c->parent_item];
	if (p->item && p->bound - c->delta >= need) {
		make_list(s, &c->desc, p->item, (size_t)p->n, p->bound - c->delta, l);
		nm->stats.list_reuses++;
	} else {
		make_list(s, &c->desc, NULL, (size_t)nm->nitems, wide, l);
	}
	return l;
}

/* The items a fresh candidate is scanned against: those of its parent's
 * list within cutoff + delta, since only they can be within the cutoff of
 * it. Returns how many (in w->sub). */
static int candidate_items(const struct nm *nm, struct nm_cand *c, const struct tdesc *parent,
			   const struct nlist *pl, struct scratch *w)
{
	int nsub = 0;
	c->delta = editdist_layers(parent, &c->desc);
	if (nm->pruning && pl->bound >= nm->cutoff + c->delta) {
		for (int k = 0; k < pl->n; k++)
			if (pl->dl[k] - c->delta <= nm->cutoff)
				w->sub[nsub++] = pl->item[k];
	} else {   /* not with the built-in morphisms; stay exact anyway */
		for (int j = 0; j < nm->nitems; j++)
			w->sub[nsub++] = j;
	}
	return nsub;
}

void nm_cand_predict(const struct nm *nm, struct nm_cand *c, const int *idx, const double *kv,
		     int nnz)
{
	double var;
	gp_predict(&nm->gp, idx, kv, nnz, &c->mean, &var);
	c->std = sqrt(var);
	c->acq = c->mean + nm->beta * c->std;
}

/* Scan a candidate against its nsub items and predict it. `split`: the
 * scan takes the pool; otherwise it runs on this thread (the pool runs
 * candidates side by side). */
static void evaluate(const struct nm *nm, struct nm_cand *c, struct scratch *w, int nsub, int split)
{
	struct scan sc = { nm, &c->desc, w->sub, NULL, 0, w->dt };
	if (split)
		tpool_run(nm->pool, (size_t)nsub, 64, scan_range, &sc);
	else
		scan_range(&sc, 0, (size_t)nsub);
	int nnz = kernel_row(nm, w->dt, w->sub, (size_t)nsub, w->idx, w->kv);
	nm_cand_predict(nm, c, w->idx, w->kv, nnz);
	if (nm->search_batch > 1) {   /* kept: rows by history entry outlive the window's moves */
		c->khist = xmalloc((size_t)(nnz ? nnz : 1) * sizeof(size_t));
		c->kv = xmalloc((size_t)(nnz ? nnz : 1) * sizeof(double));
		for (int k = 0; k < nnz; k++) {
			c->khist[k] = nm->items[w->idx[k]].hist;   /* item k is GP row k */
			c->kv[k] = w->kv[k];
		}
		c->nnz = nnz;
	}
}

/* The fresh children of one expansion, side by side on the pool. */
struct evaluation {
	const struct nm *nm;
	struct nm_cand *c;
	struct scratch *w;
	const int *nsub;
};

static void evaluate_range(void *ctx, size_t b, size_t e)
{
	struct evaluation *ev = ctx;
	for (size_t k = b; k < e; k++)
		evaluate(ev->nm, &ev->c[k], &ev->w[k], ev->nsub[k], 0);
}

/* Evaluate an expansion's nc fresh children. With enough distances to
 * compute (in the ramp of an experiment's start, every pending trial is
 * near every candidate) the children run side by side, each scan on one
 * thread; a few short scans cost less than waking the pool per child. */
static void evaluate_children(struct search *s, struct nm_cand *c, int nc, const struct tdesc *parent,
			      const struct nlist *pl)
{
	enum { SIDE_BY_SIDE = 256 };   /* distances, all children together */
	struct nm *nm = s->nm;
	int nsub[256];   /* n_neighbours <= 256 */
	unsigned long total = 0;
	for (int k = 0; k < nc; k++) {
		nsub[k] = candidate_items(nm, &c[k], parent, pl, &s->w[k]);
		total += (unsigned long)nsub[k];
	}
	if (nc > 1 && total >= SIDE_BY_SIDE) {
		struct evaluation ev = { nm, c, s->w, nsub };
		tpool_run(nm->pool, (size_t)nc, 1, evaluate_range, &ev);
	} else {
		for (int k = 0; k < nc; k++)
			evaluate(nm, &c[k], &s->w[k], nsub[k], 1);
	}
	nm->stats.distances += total;
	nm->stats.candidates += (unsigned long)nc;
}

/* Expand one element: its history list, then its morphism neighbours. */
static void expand(struct search *s, const struct nm_elem *e, struct trng *r, struct heap *h,
		   unsigned long *order, double *opt, int *best)
{
	struct nm *nm = s->nm;
	int pitem = e->item >= 0 ? e->item : s->cands[e->cand].parent_item;
	struct tgraph *nbs = xmalloc((size_t)nm->n_neighbours * sizeof(*nbs));
	struct nm_cand *fresh = xmalloc((size_t)nm->n_neighbours * sizeof(*fresh));
	int *kinds = xmalloc((size_t)nm->n_neighbours * sizeof(int)), nf = 0;
	nm->stats.expansions++;
	if (e->item >= 0)
		nm->stats.expansions_history++;
	const struct nlist *pl = element_list(s, e);
	int nn = morph_neighbours(e->item >= 0 ? &nm->items[e->item].graph : &s->cands[e->cand].graph,
				  r, &nm->lim, nm->n_neighbours, nbs, kinds);
	for (int k = 0; k < nn; k++) {
		struct nm_cand c = { .graph = nbs[k], .parent_item = pitem,
				     .parent_cand = e->item >= 0 ? -1 : e->cand, .kind = kinds[k] };
		tdesc_from_graph(&c.desc, &c.graph);
		if (hset_has(&nm->seen, c.desc.hash) || hset_has(&s->cand_seen, c.desc.hash)) {
			tdesc_release(&c.desc);
			tgraph_release(&c.graph);
			continue;
		}
		hset_insert(&s->cand_seen, c.desc.hash);
		editdist_vocab_tokens(&nm->vocab, &c.desc);   /* a duplicate needs none */
		fresh[nf++] = c;
	}
	const struct tdesc *pd = e->item >= 0 ? &nm->items[e->item].desc : &s->cands[e->cand].desc;
	evaluate_children(s, fresh, nf, pd, pl);
	for (int k = 0; k < nf; k++) {
		if (s->ncands == s->acands) {   /* pl is not read past here */
			int old = s->acands;
			s->acands = s->acands ? 2 * s->acands : 64;
			s->cands = xrealloc(s->cands, (size_t)s->acands * sizeof(*s->cands));
			s->lists = xrealloc(s->lists, (size_t)s->acands * sizeof(*s->lists));
			memset(s->lists + old, 0, (size_t)(s->acands - old) * sizeof(*s->lists));
		}
		int ci = s->ncands++;
		s->cands[ci] = fresh[k];
		heap_push(h, (struct nm_elem){ fresh[k].acq, -1, ci, (*order)++ });
		if (fresh[k].acq > *opt) {
			*opt = fresh[k].acq;
			*best = ci;
		}
	}
	free(kinds);
	free(fresh);
	free(nbs);
}

cJSON *nm_candidate_doc(const struct tuner *t, const struct nm *nm, const struct nm_cand *cands,
			int ci, const struct nm_parent *p)
{
	const struct nm_cand *c = &cands[ci];
	const struct tuner_hist *ph = &t->hist[p->hist];
	cJSON *meta = cJSON_CreateObject();
	cJSON_AddStringToObject(meta, "tuner", "NetworkMorphism");
	cJSON_AddNumberToObject(meta, "parent_trial", ph->seq);
	int chain[256], n = 0;
	for (int k = ci; k >= 0 && n < 256; k = cands[k].parent_cand)
		chain[n++] = cands[k].kind;
	cJSON *m = cJSON_AddArrayToObject(meta, "morphisms");
	for (int k = n - 1; k >= 0; k--)
		cJSON_AddItemToArray(m, cJSON_CreateString(morph_name(chain[k])));
	if (n < 256) {   /* the record the child inherits its weights through */
		const struct tgraph *steps[256];
		int kinds[256], k = n;
		for (int c2 = ci; c2 >= 0; c2 = cands[c2].parent_cand) {
			k--;
			steps[k] = &cands[c2].graph;
			kinds[k] = cands[c2].kind;
		}
		cJSON *rec = morph_record(p->graph, p->arch, ph->seq, ph->place, steps, kinds, n);
		if (rec)
			cJSON_AddItemToObject(meta, "morph", rec);
	}
	char hex[17];
	for (int k = 0; k < 16; k++)
		hex[k] = "0123456789abcdef"[(c->desc.hash >> (60 - 4 * k)) & 15];
	hex[16] = 0;
	cJSON_AddStringToObject(meta, "hash", hex);
	double sign = nm->tpe.maximize ? 1 : -1;
	cJSON_AddNumberToObject(meta, "predicted_mean", sign * c->mean);
	cJSON_AddNumberToObject(meta, "predicted_std", c->std);
	cJSON_AddNumberToObject(meta, "acquisition", sign * c->acq);
	cJSON *doc = tgraph_to_json(&c->graph, meta);
	cJSON_Delete(meta);
	return doc;
}

/* With weight inheritance a child starts from its parent's checkpoint, so
 * only a finished trial can be a parent: a morph of a trial still training
 * would start from random weights, and a morphed network trained from
 * scratch can be far worse than its parent (a quickstart child of the
 * running start network never left chance). Without inheritance every
 * trial of the history may be expanded, as in NNI. */
static int can_parent(const struct tuner *t, const struct nm *nm, int item)
{
	return !t->inherit_weights || t->hist[nm->items[item].hist].state == TUNER_OBS_DONE;
}

int nm_any_parent(const struct tuner *t, const struct nm *nm)
{
	for (int i = 0; i < nm->nitems; i++)
		if (can_parent(t, nm, i))
			return 1;
	return 0;
}

cJSON *nm_search_arch(struct tuner *t, struct trng *r)
{
	struct nm *nm = t->priv;
	struct search s = { .nm = nm };
	size_t n = (size_t)nm->nitems + 1;
	nm_batch_drop(nm);
	s.w = xmalloc((size_t)nm->n_neighbours * sizeof(*s.w));
	for (int k = 0; k < nm->n_neighbours; k++)
		scratch_init(&s.w[k], n);
	s.hlists = xcalloc(n, sizeof(*s.hlists));
	struct heap h = { 0 };
	unsigned long order = 0;
	for (int i = 0; i < nm->nitems; i++)
		if (can_parent(t, nm, i))
			heap_push(&h, (struct nm_elem){ nm->gp.y[nm->items[i].row], i, -1, order++ });
	double temp = 1.0, opt = -INFINITY;
	int best = -1;
	while (h.n && temp > nm->t_min) {
		struct nm_elem e = heap_pop(&h);
		double x = (e.value - opt) / temp;
		double ap = exp(x < 1.0 ? x : 1.0);
		if (ap >= trng_uniform(r))
			expand(&s, &e, r, &h, &order, &opt, &best);
		temp *= nm->cooling;
	}
	/* Nothing new from the annealing (tiny spaces): random chains from the
	 * best trials until something is new. */
	for (int tries = 0; best < 0 && tries < 64 && nm_any_parent(t, nm); tries++) {
		struct nm_elem e = { 0, (int)trng_below(r, (uint64_t)nm->nitems), -1, order++ };
		if (tries < nm->nitems) {   /* prefer the best ones first */
			double bv = -INFINITY;
			for (int i = 0; i < nm->nitems; i++)
				if (can_parent(t, nm, i) && nm->gp.y[nm->items[i].row] > bv &&
				    !(tries & 1)) {
					bv = nm->gp.y[nm->items[i].row];
					e.item = i;
				}
		}
		if (!can_parent(t, nm, e.item))
			continue;
		expand(&s, &e, r, &h, &order, &opt, &best);
	}
	cJSON *doc = NULL;
	if (best >= 0) {
		const struct nm_item *it = &nm->items[s.cands[best].parent_item];
		struct nm_parent p = { &it->graph, t->hist[it->hist].arch, it->hist };
		doc = nm_candidate_doc(t, nm, s.cands, best, &p);
	}
	for (int i = 0; i < s.ncands; i++)
		nlist_release(&s.lists[i]);
	if (best >= 0 && nm->search_batch > 1) {
		nm_batch_keep(t, nm, s.cands, s.ncands, best);
	} else {
		for (int i = 0; i < s.ncands; i++)
			nm_cand_release(&s.cands[i]);
		free(s.cands);
	}
	for (int i = 0; i < nm->nitems; i++)
		nlist_release(&s.hlists[i]);
	free(s.hlists);
	free(s.lists);
	hset_release(&s.cand_seen);
	free(h.e);
	for (int k = 0; k < nm->n_neighbours; k++)
		scratch_release(&s.w[k]);
	free(s.w);
	return doc;
}
