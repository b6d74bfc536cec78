/* tuner_nm_window.c: the network morphism tuner's window of observations
 * (classArgs.gp_window): past that many, the GP keeps the best finished
 * trials and the most recent others, so a proposal and an observation cost
 * O(window^2), not O(n^2), and the tuner's memory stays bounded
 * (docs/tuner.md, "The window"). */
#include <stdlib.h>
#include <string.h>

#include "tuner_nm_int.h"
#include "util.h"

struct ranked {
	double y;
	size_t hist;
	int item;
};

/* Better first; among equals the earlier trial. */
static int by_y(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	if (x->y != y->y)
		return x->y > y->y ? -1 : 1;
	return x->hist < y->hist ? -1 : x->hist > y->hist;
}

/* The finished members, best first (*n of them; the caller frees). */
static struct ranked *rank_done(const struct tuner *t, const struct nm *nm, int *n)
{
	struct ranked *r = xmalloc((size_t)(nm->nitems ? nm->nitems : 1) * sizeof(*r));
	*n = 0;
	for (int i = 0; i < nm->nitems; i++)
		if (t->hist[nm->items[i].hist].state == TUNER_OBS_DONE)
			r[(*n)++] = (struct ranked){ nm->gp.y[nm->items[i].row], nm->items[i].hist, i };
	qsort(r, (size_t)*n, sizeof(*r), by_y);
	return r;
}

/* Member i leaves the window: its GP row, its graph, and its arch.json in
 * the history (a trial that comes back is read again: the runner passes
 * its files when it settles, a replay reads them). */
static void remove_item(struct tuner *t, struct nm *nm, int i)
{
	size_t h = nm->items[i].hist;
	gp_remove(&nm->gp, nm->items[i].row);
	tgraph_release(&nm->items[i].graph);
	tdesc_release(&nm->items[i].desc);
	nm->hist_item[h] = NM_LEFT_WINDOW;
	cJSON_Delete(t->hist[h].arch);
	t->hist[h].arch = NULL;
	memmove(&nm->items[i], &nm->items[i + 1], (size_t)(nm->nitems - i - 1) * sizeof(*nm->items));
	nm->nitems--;
	for (int k = i; k < nm->nitems; k++) {   /* item k is GP row k */
		nm->items[k].row = k;
		nm->hist_item[nm->items[k].hist] = k;
	}
	nm->stats.window_removals++;
}

void nm_window_fit(struct tuner *t, struct nm *nm)
{
	while (nm->window > 0 && nm->nitems > nm->window) {
		int n, victim = -1;
		struct ranked *r = rank_done(t, nm, &n);
		char *best = xcalloc((size_t)nm->nitems, 1);
		for (int k = 0; k < n && k < nm->window_best; k++)
			best[r[k].item] = 1;
		/* the oldest member that is not one of the best */
		for (int i = 0; i < nm->nitems; i++)
			if (!best[i] && (victim < 0 || nm->items[i].hist < nm->items[victim].hist))
				victim = i;
		free(best);
		free(r);
		if (victim < 0)   /* window_best < window: never */
			BUG("gp window %d: every member is one of the best %d", nm->window,
			    nm->window_best);
		remove_item(t, nm, victim);
	}
}

int nm_window_wants(const struct tuner *t, const struct nm *nm, size_t idx)
{
	const struct tuner_hist *h = &t->hist[idx];
	if (h->state != TUNER_OBS_DONE)
		return 0;
	int n;
	struct ranked *r = rank_done(t, nm, &n);
	double y = nm->tpe.maximize ? h->metric : -h->metric;
	int wants = n < nm->window_best || y > r[nm->window_best - 1].y;
	free(r);
	return wants;
}

int nm_window_load(struct tuner *t)
{
	struct nm *nm = t->priv;
	size_t n = t->nhist;
	if (nm->nitems || !nm->window || n <= (size_t)nm->window)
		return 0;   /* one at a time, as a replay: the same state */
	nm_hist_item_reserve(nm, n - 1);
	/* which trials the search can use, and the set of those seen */
	char *usable = xcalloc(n, 1);
	struct ranked *r = xmalloc(n * sizeof(*r));
	int nr = 0;
	for (size_t i = 0; i < n; i++) {
		struct nm_item item;
		if (!nm_make_item(t, nm, i, &item))
			continue;
		usable[i] = 1;
		hset_insert(&nm->seen, item.desc.hash);
		tgraph_release(&item.graph);
		tdesc_release(&item.desc);
		if (t->hist[i].state == TUNER_OBS_DONE)
			r[nr++] = (struct ranked){ nm->tpe.maximize ? t->hist[i].metric
								    : -t->hist[i].metric, i, -1 };
	}
	/* the window it ends with: the best finished, then the most recent */
	qsort(r, (size_t)nr, sizeof(*r), by_y);
	char *in = xcalloc(n, 1);
	int members = 0;
	for (int k = 0; k < nr && k < nm->window_best; k++, members++)
		in[r[k].hist] = 1;
	for (size_t i = n; i-- > 0 && members < nm->window;)
		if (usable[i] && !in[i]) {
			in[i] = 1;
			members++;
		}
	for (size_t i = 0; i < n; i++) {
		struct nm_item item;
		if (in[i] && nm_make_item(t, nm, i, &item)) {
			nm_enter(t, nm, &item);
		} else if (usable[i]) {
			nm->hist_item[i] = NM_LEFT_WINDOW;
			cJSON_Delete(t->hist[i].arch);
			t->hist[i].arch = NULL;
			nm->stats.window_removals++;
		}
	}
	free(in);
	free(r);
	free(usable);
	return 1;
}
