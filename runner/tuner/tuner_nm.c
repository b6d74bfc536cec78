/* tuner_nm.c: the "NetworkMorphism" tuner: NNI's network morphism search
 * (GP over edit distances, UCB acquisition, simulated annealing over
 * morphism neighbours) for the architecture, TPE for the hyperparameters.
 *
 * Where it differs from NNI, and why:
 * - The kernel is exp(-d^2) on the edit distance directly (NNI's predict
 *   uses that; its fit adds a Bourgain embedding that would rebuild the whole
 *   matrix per observation). Distances past `distance_cutoff` (6: exp(-36)
 *   is below double precision next to 1) are not computed exactly; the
 *   banded Levenshtein stops early.
 * - The Cholesky factor grows one row per observation and escalates the
 *   jitter of a row that is not positive definite instead of dropping the
 *   observation (NNI issue 3324).
 * - Trials still training are GP observations at their predicted mean, so
 *   concurrent proposals differ; exact duplicates (canonical hash) of any
 *   trial or earlier candidate are skipped instead of NNI's O(n) distance
 *   scan per candidate.
 * - A candidate's neighbours in the history are found from its parent's
 *   distance scan by the triangle inequality (one morphism moves the
 *   main-chain distance by at most NM_STEP), so a parent's 8 children cost one
 *   scan of the history, not eight. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distance.h"
#include "gp.h"
#include "jsonfile.h"
#include "morph.h"
#include "nni_graph.h" /* nni_graph_load: tuner.initialArch */
#include "morph_record.h"
#include "hset.h"  /* hset_insert, hset_has: architectures seen */
#include "pool.h"
#include "tpe.h"
#include "tuner_int.h"
#include "tuner_nm_int.h" /* struct nm, its items; the state cache (tuner_nm_cache.c) */
#include "util.h"

/* ---- distance scans ------------------------------------------------------ */

struct scan {
	const struct nm *nm;
	const struct tdesc *x;
	const int *subset;     /* items to look at, or NULL for all */
	double layer_bound;    /* exact main-chain distance up to here */
	int layers_only;       /* dl alone: a list needs no skips */
	double *dl;            /* (n) main-chain distance (> layer_bound: "far") */
	double *dt;            /* (n) total distance, or DBL_MAX past the cutoff;
				* not written when layers_only */
};

static void scan_range(void *ctx, size_t b, size_t e)
{
	struct scan *s = ctx;
	const struct nm *nm = s->nm;
	for (size_t k = b; k < e; k++) {
		int j = s->subset ? s->subset[k] : (int)k;
		const struct tdesc *y = &nm->items[j].desc;
		double dl = editdist_layers_bounded(s->x, y, s->layer_bound);
		s->dl[k] = dl;
		if (s->layers_only)
			continue;
		double dt = DBL_MAX;
		double skip_lb = EDITDIST_KERNEL_LAMBDA * fabs((double)(s->x->nskips - y->nskips));
		if (dl + skip_lb <= nm->cutoff) {
			dt = dl + EDITDIST_KERNEL_LAMBDA *
				  editdist_skips_bounded(s->x, y, (nm->cutoff - dl) / EDITDIST_KERNEL_LAMBDA);
			if (dt > nm->cutoff)
				dt = DBL_MAX;
		}
		s->dt[k] = dt;
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

/* ---- observations -------------------------------------------------------- */

static double internal_y(const struct nm *nm, double metric)
{
	return nm->tpe.maximize ? metric : -metric;
}

/* A failed trial counts as the worst finished one (0 when none). */
static double failed_y(const struct tuner *t, const struct nm *nm)
{
	double worst = 0;
	int any = 0;
	for (size_t i = 0; i < t->nhist; i++)
		if (t->hist[i].state == TUNER_OBS_DONE) {
			double y = internal_y(nm, t->hist[i].metric);
			if (!any || y < worst)
				worst = y;
			any = 1;
		}
	return worst;
}

void nm_hist_item_reserve(struct nm *nm, size_t idx)
{
	if (idx < nm->ahist)
		return;
	size_t a = nm->ahist;
	nm->ahist = idx < 64 ? 128 : 2 * idx;
	nm->hist_item = xrealloc(nm->hist_item, nm->ahist * sizeof(int));
	for (size_t i = a; i < nm->ahist; i++)
		nm->hist_item[i] = -1;
}

int nm_make_item(const struct tuner *t, struct nm *nm, size_t idx, struct nm_item *item)
{
	const struct tuner_hist *h = &t->hist[idx];
	*item = (struct nm_item){ .hist = idx, .row = -1 };
	if (!h->arch)
		return 0;
	char *what = xstrfmt("trial %u arch.json", h->seq);
	int usable = tgraph_from_json(&item->graph, h->arch, what) == 0;
	free(what);
	if (!usable) {
		warning("network morphism: trial %u: its arch.json is not usable; the search "
			"ignores it", h->seq);
		return 0;
	}
	if (item->graph.num_classes != nm->start.num_classes ||
	    memcmp(&item->graph.input, &nm->start.input, sizeof(item->graph.input))) {
		warning("network morphism: trial %u has another input or class count; ignored", h->seq);
		tgraph_release(&item->graph);
		return 0;
	}
	tdesc_from_graph(&item->desc, &item->graph);
	editdist_vocab_tokens(&nm->vocab, &item->desc);
	return 1;
}

void nm_add_item(struct nm *nm, const struct nm_item *item)
{
	if (nm->nitems == nm->aitems) {
		nm->aitems = nm->aitems ? 2 * nm->aitems : 64;
		nm->items = xrealloc(nm->items, (size_t)nm->aitems * sizeof(*nm->items));
	}
	nm->hist_item[item->hist] = nm->nitems;
	nm->items[nm->nitems++] = *item;
	hset_insert(&nm->seen, item->desc.hash);
}

static int nm_observe(struct tuner *t, size_t idx, const struct tuner_hist *old)
{
	struct nm *nm = t->priv;
	const struct tuner_hist *h = &t->hist[idx];
	double t0 = util_monotonic();
	(void)old;
	nm_hist_item_reserve(nm, idx);
	int it = nm->hist_item[idx];
	if (it == NM_LEFT_WINDOW && nm_window_keeps_out(t, nm, idx)) {
		nm->stats.observe_seconds += util_monotonic() - t0;
		return 0;   /* it stays out: only one of the best comes back */
	}
	if (it >= 0) {   /* a known trial changed state */
		double y = nm->gp.y[nm->items[it].row];
		if (h->state == TUNER_OBS_DONE)
			y = internal_y(nm, h->metric);
		else if (h->state == TUNER_OBS_FAILED)
			y = failed_y(t, nm);
		gp_set_y(&nm->gp, nm->items[it].row, y);
		nm->stats.observe_seconds += util_monotonic() - t0;
		return 0;
	}
	struct nm_item item;
	if (!nm_make_item(t, nm, idx, &item))
		return 0;
	nm_enter(t, nm, &item);
	nm_window_fit(t, nm);
	nm->stats.observe_seconds += util_monotonic() - t0;
	return 0;
}

void nm_enter(const struct tuner *t, struct nm *nm, struct nm_item *item)
{
	const struct tuner_hist *h = &t->hist[item->hist];
	/* kernel row against every earlier item */
	size_t n = (size_t)nm->nitems;
	double *dl = xmalloc((n ? n : 1) * sizeof(double)), *dt = xmalloc((n ? n : 1) * sizeof(double));
	int *idxs = xmalloc((n ? n : 1) * sizeof(int));
	double *kv = xmalloc((n ? n : 1) * sizeof(double));
	struct scan s = { nm, &item->desc, NULL, nm->cutoff, 0, dl, dt };
	scan(nm, &s, n);
	int nnz = kernel_row(nm, dt, NULL, n, idxs, kv);
	double y;
	if (h->state == TUNER_OBS_DONE) {
		y = internal_y(nm, h->metric);
	} else if (h->state == TUNER_OBS_FAILED) {
		y = failed_y(t, nm);
	} else {
		double var;
		gp_predict(&nm->gp, idxs, kv, nnz, &y, &var);
	}
	item->row = gp_add(&nm->gp, idxs, kv, nnz, y);
	free(kv);
	free(idxs);
	free(dt);
	free(dl);
	nm_add_item(nm, item);
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
	struct scan sc = { nm, d, subset, bound, 1, dl, NULL };
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

/* Scan a candidate against its nsub items and predict it. `split`: the
 * scan takes the pool; otherwise it runs on this thread (the pool runs
 * candidates side by side). */
static void evaluate(const struct nm *nm, struct nm_cand *c, struct scratch *w, int nsub, int split)
{
	struct scan sc = { nm, &c->desc, w->sub, nm->cutoff, 0, w->dl, w->dt };
	if (split)
		tpool_run(nm->pool, (size_t)nsub, 64, scan_range, &sc);
	else
		scan_range(&sc, 0, (size_t)nsub);
	int nnz = kernel_row(nm, w->dt, w->sub, (size_t)nsub, w->idx, w->kv);
	double var;
	gp_predict(&nm->gp, w->idx, w->kv, nnz, &c->mean, &var);
	c->std = sqrt(var);
	c->acq = c->mean + nm->beta * c->std;
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

static cJSON *candidate_meta(const struct tuner *t, const struct search *s, int ci)
{
	const struct nm *nm = s->nm;
	const struct nm_cand *c = &s->cands[ci];
	cJSON *meta = cJSON_CreateObject();
	cJSON_AddStringToObject(meta, "tuner", "NetworkMorphism");
	cJSON_AddNumberToObject(meta, "parent_trial", t->hist[nm->items[c->parent_item].hist].seq);
	int chain[256], n = 0;
	for (int k = ci; k >= 0 && n < 256; k = s->cands[k].parent_cand)
		chain[n++] = s->cands[k].kind;
	cJSON *m = cJSON_AddArrayToObject(meta, "morphisms");
	for (int k = n - 1; k >= 0; k--)
		cJSON_AddItemToArray(m, cJSON_CreateString(morph_name(chain[k])));
	if (n < 256) {   /* the record the child inherits its weights through */
		const struct tgraph *steps[256];
		int kinds[256], k = n;
		for (int c2 = ci; c2 >= 0; c2 = s->cands[c2].parent_cand) {
			k--;
			steps[k] = &s->cands[c2].graph;
			kinds[k] = s->cands[c2].kind;
		}
		const struct nm_item *p = &nm->items[c->parent_item];
		cJSON *rec = morph_record(&p->graph, t->hist[p->hist].arch, t->hist[p->hist].seq,
					  t->hist[p->hist].place, steps, kinds, n);
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
	return meta;
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

static int any_parent(const struct tuner *t, const struct nm *nm)
{
	for (int i = 0; i < nm->nitems; i++)
		if (can_parent(t, nm, i))
			return 1;
	return 0;
}

static cJSON *search_arch(struct tuner *t, struct trng *r)
{
	struct nm *nm = t->priv;
	struct search s = { .nm = nm };
	size_t n = (size_t)nm->nitems + 1;
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
	for (int tries = 0; best < 0 && tries < 64 && any_parent(t, nm); tries++) {
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
		cJSON *meta = candidate_meta(t, &s, best);
		doc = tgraph_to_json(&s.cands[best].graph, meta);
		cJSON_Delete(meta);
	}
	for (int i = 0; i < s.ncands; i++) {
		tgraph_release(&s.cands[i].graph);
		tdesc_release(&s.cands[i].desc);
		nlist_release(&s.lists[i]);
	}
	for (int i = 0; i < nm->nitems; i++)
		nlist_release(&s.hlists[i]);
	free(s.hlists);
	free(s.lists);
	free(s.cands);
	hset_release(&s.cand_seen);
	free(h.e);
	for (int k = 0; k < nm->n_neighbours; k++)
		scratch_release(&s.w[k]);
	free(s.w);
	return doc;
}

/* ---- the tuner ----------------------------------------------------------- */

static int nm_propose(struct tuner *t, unsigned seq, struct trng *rng, cJSON **arch,
		      cJSON **params)
{
	struct nm *nm = t->priv;
	double t0 = util_monotonic();
	/* The start network; again, with another seed and hyperparameters, for
	 * the slots that open before any trial has finished when children
	 * inherit weights (a child needs a trained parent). */
	int first = nm->nitems == 0 && !hset_has(&nm->seen, tgraph_hash(&nm->start));
	if (first || (t->inherit_weights && !any_parent(t, nm))) {
		cJSON *meta = cJSON_CreateObject();
		cJSON_AddStringToObject(meta, "tuner", "NetworkMorphism");
		cJSON_AddStringToObject(meta, "start", nm->start_name);
		*arch = tgraph_to_json(&nm->start, meta);
		cJSON_Delete(meta);
	} else {
		*arch = search_arch(t, rng);
		if (!*arch)
			return error("network morphism: no new architecture within the limits "
				     "(max_layers %d, max_params %llu, max_flops %.4g); raise them",
				     nm->lim.max_layers, (unsigned long long)nm->lim.max_params,
				     nm->lim.max_flops);
	}
	*params = tuner_params_doc(t, seq, tuner_tpe_parameters(t, &nm->tpe, rng));
	nm->stats.proposals++;
	nm->stats.propose_seconds += util_monotonic() - t0;
	return 0;
}

static int arg_int(const struct tuner *t, const char *key, double def, double min, double max,
		   double *out)
{
	if (tuner_arg_number(t, key, def, out) < 0)
		return -1;
	if (!(*out >= min && *out <= max))
		return error("tuner %s: classArgs.%s must be between %g and %g", t->name, key, min, max);
	return 0;
}

/* The builtin start models, by classArgs.start_model. */
static const struct start_model {
	const char *name;
	int (*make)(struct tgraph *g, int width, int channels, int num_classes);
} start_models[] = {
	{ "cnn", tmodel_cnn },
	{ "resnet50", tmodel_resnet50 },
	{ "resnet50-v1.5", tmodel_resnet50_v15 },
};

/* tuner.initialArch: an aah-arch/1 file, or an NNI graph (AIPerf's
 * resnet50.json) converted by common/nni_graph. */
static int load_start_file(struct tuner *t, struct nm *nm)
{
	struct arch a;
	nm->start_name = "file";
	tgraph_init(&nm->start, 0, 0, 0, 0);
	if (nni_graph_load(&a, t->initial_arch) < 0)
		return error("network morphism: initial arch '%s' is not usable", t->initial_arch);
	int rc = tgraph_from_arch(&nm->start, &a, t->initial_arch);
	arch_release(&a);
	if (rc < 0)
		return error("network morphism: initial arch '%s' is not usable", t->initial_arch);
	return 0;
}

static int load_start(struct tuner *t, struct nm *nm)
{
	double width, channels, classes;
	const char *model;
	if (arg_int(t, "input_width", 32, 1, 4096, &width) < 0 ||
	    arg_int(t, "input_channel", 3, 1, 4096, &channels) < 0 ||
	    arg_int(t, "n_output_node", 10, 2, 100000, &classes) < 0 ||
	    tuner_arg_string(t, "start_model", width >= 128 ? "resnet50" : "cnn", &model) < 0)
		return -1;
	if (t->initial_arch)
		return load_start_file(t, nm);
	for (size_t i = 0; i < ARRAY_SIZE(start_models); i++) {
		if (strcmp(model, start_models[i].name))
			continue;
		nm->start_name = start_models[i].name;
		return start_models[i].make(&nm->start, (int)width, (int)channels, (int)classes);
	}
	return error("tuner %s: classArgs.start_model '%s' is none of cnn, resnet50 (AIPerf's "
		     "ResNet-50 v1), resnet50-v1.5", t->name, model);
}

static void nm_release(struct tuner *t)
{
	struct nm *nm = t->priv;
	if (!nm)
		return;
	for (int i = 0; i < nm->nitems; i++) {
		tgraph_release(&nm->items[i].graph);
		tdesc_release(&nm->items[i].desc);
	}
	free(nm->items);
	free(nm->hist_item);
	gp_release(&nm->gp);
	hset_release(&nm->seen);
	editdist_vocab_release(&nm->vocab);
	tgraph_release(&nm->start);
	tpool_free(nm->pool);
	free(nm);
	t->priv = NULL;
}

static int nm_init(struct tuner *t)
{
	struct nm *nm = xcalloc(1, sizeof(*nm));
	double v;
	t->priv = nm;
	gp_init(&nm->gp);
	editdist_vocab_init(&nm->vocab, EDITDIST_VOCAB_MAX);
	if (tuner_tpe_options(t, &nm->tpe) < 0 || load_start(t, nm) < 0)
		return -1;
	if (tuner_arg_number(t, "beta", 2.576, &nm->beta) < 0 ||
	    tuner_arg_number(t, "t_min", 1e-4, &nm->t_min) < 0 ||
	    tuner_arg_number(t, "cooling", 0.9, &nm->cooling) < 0 ||
	    tuner_arg_number(t, "distance_cutoff", 6.0, &nm->cutoff) < 0 ||
	    arg_int(t, "n_neighbours", 8, 1, 256, &v) < 0)
		return -1;
	nm->n_neighbours = (int)v;
	if (arg_int(t, "search_pruning", 1, 0, 1, &v) < 0)
		return -1;
	nm->pruning = v != 0;
	if (arg_int(t, "gp_window", NM_WINDOW_DEFAULT, 0, 1e6, &v) < 0)
		return -1;
	nm->window = (int)v;
	if (nm->window && nm->window < 8)
		return error("tuner %s: classArgs.gp_window must be 0 (no window) or 8 or more",
			     t->name);
	if (arg_int(t, "gp_window_best", floor(v / 4), 0, 1e6, &v) < 0)
		return -1;
	nm->window_best = (int)v;
	if (nm->window && nm->window_best >= nm->window - 1)
		return error("tuner %s: classArgs.gp_window_best must be below gp_window - 1 (%d)",
			     t->name, nm->window - 1);
	if (!(nm->t_min > 0 && nm->t_min < 1))
		return error("tuner %s: classArgs.t_min must be in (0, 1)", t->name);
	if (!(nm->cooling > 0 && nm->cooling < 1))
		return error("tuner %s: classArgs.cooling must be in (0, 1)", t->name);
	if (!(nm->beta >= 0) || !(nm->cutoff >= 1))
		return error("tuner %s: classArgs.beta must be >= 0 and distance_cutoff >= 1", t->name);
	int size = tgraph_size(&nm->start);
	uint64_t params = tgraph_params(&nm->start);
	nm->lim.max_layers = t->max_layers ? (int)t->max_layers : size + 100;
	nm->lim.max_params = t->max_params ? t->max_params
					   : (params * 2 > (1u << 24) ? params * 2 : (1u << 24));
	nm->lim.max_flops = t->max_flops;
	if (t->max_flops > 0 && tgraph_flops(&nm->start) > t->max_flops)
		return error("network morphism: the initial model costs %.4g forward FLOPs per "
			     "image, over tuner.maxFlops %.4g", tgraph_flops(&nm->start), t->max_flops);
	if (size > nm->lim.max_layers || params > nm->lim.max_params)
		return error("network morphism: the initial model (%d layers, %llu parameters) is "
			     "already over the limits", size, (unsigned long long)params);
	nm->pool = tpool_create(t->threads);
	nm->gp.pool = nm->pool;
	return 0;
}

int tuner_nm_stats(const struct tuner *t, struct tuner_nm_stats *out)
{
	if (t->ops != &tuner_ops_nm)
		return error("tuner %s has no network morphism statistics", t->name);
	const struct nm *nm = t->priv;
	*out = nm->stats;
	out->gp_escalations = (unsigned long)nm->gp.escalations;
	out->history = (unsigned long)nm->nitems;
	return 0;
}

/* The state cache holds the exact GP only, 8 MB at 1000 trials. */
static unsigned nm_proposer_limit(const struct tuner *t)
{
	const struct nm *nm = t->priv;
	return nm->window > 0 && nm->window < NM_PROPOSER_LIMIT ? (unsigned)nm->window
								 : NM_PROPOSER_LIMIT;
}

const struct tuner_ops tuner_ops_nm = {
	.name = "NetworkMorphism",
	.caps = TUNER_CAP_ARCH | TUNER_CAP_PARAMS,
	.init = nm_init,
	.observe = nm_observe,
	.propose = nm_propose,
	.load = nm_window_load,
	.shed = nm_window_shed,
	.proposer_limit = nm_proposer_limit,
	.release = nm_release,
	.state_save = nm_state_save,
	.state_load = nm_state_load,
};
