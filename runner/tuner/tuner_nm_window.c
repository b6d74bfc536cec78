/* tuner_nm_window.c: the network morphism tuner's window of observations
 * (classArgs.gp_window): past that many, the GP keeps the best finished
 * trials and the most recent others, so a proposal and an observation cost
 * O(window^2), not O(n^2), and the tuner's memory stays bounded
 * (docs/tuner.md, "The window"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tuner_nm_int.h"
#include "util.h"

struct ranked {
	double y;
	size_t hist;
	int item;
};

/* The GP's y of a metric: larger is better. */
static double y_of(const struct nm *nm, double metric)
{
	return nm->tpe.maximize ? metric : -metric;
}

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

/* Trial i's arch.json leaves the history (read again if it comes back). */
static void free_arch(struct tuner *t, size_t i)
{
	cJSON_Delete(t->hist[i].arch);
	t->hist[i].arch = NULL;
}

/* Trial i is out of the window: its arch.json leaves the history too. */
static void drop_arch(struct tuner *t, struct nm *nm, size_t i)
{
	nm->hist_item[i] = NM_LEFT_WINDOW;
	free_arch(t, i);
	nm->stats.window_removals++;
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
	drop_arch(t, nm, h);
	memmove(&nm->items[i], &nm->items[i + 1], (size_t)(nm->nitems - i - 1) * sizeof(*nm->items));
	nm->nitems--;
	for (int k = i; k < nm->nitems; k++) {   /* item k is GP row k */
		nm->items[k].row = k;
		nm->hist_item[nm->items[k].hist] = k;
	}
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

int nm_window_keeps_out(struct tuner *t, const struct nm *nm, size_t idx)
{
	const struct tuner_hist *h = &t->hist[idx];
	int wants = 0;
	if (h->state == TUNER_OBS_DONE) {
		int n;
		struct ranked *r = rank_done(t, nm, &n);
		double y = y_of(nm, h->metric);
		wants = n < nm->window_best || y > r[nm->window_best - 1].y;
		free(r);
	}
	if (!wants)   /* kept, every trial that left while it trained would hold one */
		free_arch(t, idx);
	return !wants;
}

/* Trial i into the set of those seen; whether the search can use it. */
static int note(struct tuner *t, struct nm *nm, size_t i)
{
	struct nm_item item;
	if (!nm_make_item(t, nm, i, &item))
		return 0;
	hset_insert(&nm->seen, item.desc.hash);
	tgraph_release(&item.graph);
	tdesc_release(&item.desc);
	return 1;
}

static int by_y_only(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x < y) - (x > y);
}

/* The window nm_window_load ends with holds the window_best best finished
 * trials and, walking back from the last trial, usable ones until it is
 * full; that walk passes at most gp_window usable trials. So a trial with
 * gp_window usable trials after it is a member only if it is one of the
 * best, and a finished trial below the window_best-th best so far never
 * is (that bar only rises). Those are dropped as the load goes, so that it
 * never holds every arch.json parsed at once (1.5 GB at n = 10,000 with
 * ResNet-50-sized networks). Below gp_window + 1 trials nothing happens:
 * the load may still replay them one at a time. */
void nm_window_shed(struct tuner *t, size_t idx)
{
	struct nm *nm = t->priv;
	size_t w = (size_t)nm->window;
	if (!w || idx < w)
		return;
	nm_hist_item_reserve(nm, idx);
	for (; nm->noted <= idx; nm->noted++)
		nm->hist_item[nm->noted] = note(t, nm, nm->noted) ? NM_NOTED_USABLE
								  : NM_NOTED_UNUSABLE;
	if ((idx + 1) % w)
		return;
	double *y = xmalloc((idx + 1) * sizeof(double));
	size_t ny = 0;
	for (size_t i = 0; i <= idx; i++)
		if (nm->hist_item[i] != NM_NOTED_UNUSABLE && t->hist[i].state == TUNER_OBS_DONE)
			y[ny++] = y_of(nm, t->hist[i].metric);
	/* at or above the bar a finished trial may yet be one of the best:
	 * every one while fewer than window_best finished, none when the
	 * window keeps no best */
	double bar = nm->window_best > 0 ? -INFINITY : INFINITY;
	if (nm->window_best > 0 && ny >= (size_t)nm->window_best) {
		qsort(y, ny, sizeof(double), by_y_only);
		bar = y[nm->window_best - 1];
	}
	free(y);
	size_t after = 0;   /* usable trials after i */
	for (size_t i = idx + 1; i-- > 0;) {
		int usable = nm->hist_item[i] != NM_NOTED_UNUSABLE;
		if (after >= w && nm->hist_item[i] == NM_NOTED_USABLE &&
		    !(t->hist[i].state == TUNER_OBS_DONE && y_of(nm, t->hist[i].metric) >= bar))
			drop_arch(t, nm, i);
		after += (size_t)usable;
	}
}

int nm_window_load(struct tuner *t)
{
	struct nm *nm = t->priv;
	size_t n = t->nhist;
	if (nm->nitems || !nm->window || n <= (size_t)nm->window)
		return 0;   /* one at a time, as a replay: the same state */
	nm_hist_item_reserve(nm, n - 1);
	/* which trials the search can use, and the set of those seen (what
	 * nm_window_shed noted is there already) */
	char *usable = xcalloc(n, 1);
	struct ranked *r = xmalloc(n * sizeof(*r));
	int nr = 0;
	for (size_t i = 0; i < n; i++) {
		int h = nm->hist_item[i];
		if (h == NM_NOTED_UNUSABLE || (h == -1 && !note(t, nm, i))) {
			nm->hist_item[i] = -1;
			continue;
		}
		usable[i] = 1;
		if (t->hist[i].state == TUNER_OBS_DONE)
			r[nr++] = (struct ranked){ y_of(nm, t->hist[i].metric), i, -1 };
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
		if (in[i] && nm->hist_item[i] == NM_LEFT_WINDOW)
			BUG("gp window: trial %u was shed but the window holds it", t->hist[i].seq);
		if (in[i] && nm_make_item(t, nm, i, &item)) {
			nm->hist_item[i] = -1;
			nm_enter(t, nm, &item);
		} else if (usable[i] && nm->hist_item[i] != NM_LEFT_WINDOW) {
			drop_arch(t, nm, i);
		}
	}
	free(in);
	free(r);
	free(usable);
	return 1;
}
