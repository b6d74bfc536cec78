/* tuner_nm_batch.c: more than one proposal from one search
 * (classArgs.search_batch, docs/tuner.md "Batches"). While no result comes
 * in, a search's candidates stay as good a pool as a new search's: the
 * next proposal is the best of them by the GP as it is now (the proposals
 * since entered as pending trials at their predicted means), each
 * candidate's kernel row brought up to date with the trials entered since
 * its scan. A result, or search_batch proposals, ends the batch. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"
#include "tuner_nm_int.h"
#include "util.h"

/* A chain's history trial, kept: the window may drop its graph and
 * arch.json before the batch ends. */
struct kept_parent {
	size_t hist;
	struct tgraph graph;
	cJSON *arch;
};

struct nm_batch {
	struct nm_cand *cands;
	int n;
	struct kept_parent *parents;
	int nparents;
	unsigned char *taken;   /* (n) proposed from this batch, or seen since */
	size_t mark;            /* rows cover history entries below this */
	unsigned long results;  /* nm->results when searched */
	int picks;
};

void nm_cand_release(struct nm_cand *c)
{
	tgraph_release(&c->graph);
	tdesc_release(&c->desc);
	free(c->khist);
	free(c->kv);
	c->khist = NULL;
	c->kv = NULL;
	c->nnz = 0;
}

void nm_batch_drop(struct nm *nm)
{
	struct nm_batch *b = nm->kept;
	if (!b)
		return;
	for (int i = 0; i < b->n; i++)
		nm_cand_release(&b->cands[i]);
	free(b->cands);
	for (int i = 0; i < b->nparents; i++) {
		tgraph_release(&b->parents[i].graph);
		cJSON_Delete(b->parents[i].arch);
	}
	free(b->parents);
	free(b->taken);
	free(b);
	nm->kept = NULL;
}

static const struct kept_parent *find_parent(const struct nm_batch *b, size_t hist)
{
	for (int i = 0; i < b->nparents; i++)
		if (b->parents[i].hist == hist)
			return &b->parents[i];
	return NULL;
}

void nm_batch_entered(struct nm *nm, size_t hist)
{
	if (nm->kept && hist < nm->kept->mark)   /* an older trial's network came to light */
		nm_batch_drop(nm);
}

void nm_batch_keep(const struct tuner *t, struct nm *nm, struct nm_cand *cands, int n, int best)
{
	struct nm_batch *b = xcalloc(1, sizeof(*b));
	b->cands = cands;
	b->n = n;
	b->taken = xcalloc((size_t)n, 1);
	b->taken[best] = 1;
	b->picks = 1;
	b->mark = t->nhist;   /* the proposal enters as entry nhist, after this */
	b->results = nm->results;
	b->parents = xmalloc((size_t)n * sizeof(*b->parents));
	for (int i = 0; i < n; i++) {
		const struct nm_item *it = &nm->items[cands[i].parent_item];
		cands[i].parent_hist = it->hist;
		if (find_parent(b, it->hist))
			continue;
		struct kept_parent *p = &b->parents[b->nparents++];
		p->hist = it->hist;
		tgraph_copy(&p->graph, &it->graph);
		p->arch = t->hist[it->hist].arch ? cJSON_Duplicate(t->hist[it->hist].arch, 1) : NULL;
	}
	nm->kept = b;
}

/* Candidates [from, to): their rows extended by the entries [mark, nhist)
 * now in the GP, then predicted by the GP as it is. */
struct rescore {
	const struct tuner *t;
	const struct nm *nm;
	struct nm_batch *b;
};

static void extend(const struct tuner *t, const struct nm *nm, const struct nm_batch *b,
		   struct nm_cand *c)
{
	for (size_t h = b->mark; h < t->nhist && h < nm->ahist; h++) {
		int it = nm->hist_item[h];
		if (it < 0)
			continue;
		double d = editdist_bounded(&c->desc, &nm->items[it].desc, nm->cutoff, NULL);
		if (d > nm->cutoff)
			continue;
		c->khist = xrealloc(c->khist, (size_t)(c->nnz + 1) * sizeof(size_t));
		c->kv = xrealloc(c->kv, (size_t)(c->nnz + 1) * sizeof(double));
		c->khist[c->nnz] = h;
		c->kv[c->nnz++] = exp(-d * d);
	}
}

static void rescore_range(void *ctx, size_t from, size_t to)
{
	struct rescore *r = ctx;
	const struct nm *nm = r->nm;
	for (size_t i = from; i < to; i++) {
		struct nm_cand *c = &r->b->cands[i];
		if (r->b->taken[i])
			continue;
		extend(r->t, nm, r->b, c);
		int *idx = xmalloc((size_t)(c->nnz ? c->nnz : 1) * sizeof(int));
		double *kv = xmalloc((size_t)(c->nnz ? c->nnz : 1) * sizeof(double));
		int nnz = 0;
		for (int k = 0; k < c->nnz; k++) {   /* rows of entries still in the window */
			int it = c->khist[k] < nm->ahist ? nm->hist_item[c->khist[k]] : -1;
			if (it < 0)
				continue;
			idx[nnz] = nm->items[it].row;
			kv[nnz++] = c->kv[k];
		}
		nm_cand_predict(nm, c, idx, kv, nnz);
		free(kv);
		free(idx);
	}
}

cJSON *nm_batch_next(struct tuner *t)
{
	struct nm *nm = t->priv;
	struct nm_batch *b = nm->kept;
	if (!b)
		return NULL;
	if (b->results != nm->results || b->picks >= nm->search_batch) {
		nm_batch_drop(nm);
		return NULL;
	}
	for (int i = 0; i < b->n; i++)   /* a trial of the history since */
		if (hset_has(&nm->seen, b->cands[i].desc.hash))
			b->taken[i] = 1;
	unsigned long left = 0;
	for (int i = 0; i < b->n; i++)
		left += !b->taken[i];
	nm->stats.distances += left * (unsigned long)(t->nhist - b->mark);
	nm->stats.candidates += left;
	struct rescore r = { t, nm, b };
	tpool_run(nm->pool, (size_t)b->n, 8, rescore_range, &r);
	b->mark = t->nhist;
	int best = -1;
	for (int i = 0; i < b->n; i++)
		if (!b->taken[i] && (best < 0 || b->cands[i].acq > b->cands[best].acq))
			best = i;
	if (best < 0) {
		nm_batch_drop(nm);
		return NULL;
	}
	b->taken[best] = 1;
	b->picks++;
	nm->stats.batch_picks++;
	const struct kept_parent *kp = find_parent(b, b->cands[best].parent_hist);
	struct nm_parent p = { &kp->graph, kp->arch, kp->hist };
	cJSON *doc = nm_candidate_doc(t, nm, b->cands, best, &p);
	cJSON_AddNumberToObject(cJSON_GetObjectItem(doc, "meta"), "batch_pick", b->picks);
	return doc;
}
