/* devpool.c: fair share of a device pool (water filling, then the largest
 * remainders). */
#include "runner/pool/devpool.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>

/* Does training a come before b: higher priority, then earlier arrival. */
static int before(const struct devpool_training *a, const struct devpool_training *b)
{
	if (a->priority != b->priority)
		return a->priority > b->priority;
	return a->arrival < b->arrival;
}

/* Admission in priority order: mark in[i] for those whose minimum fits. */
static void admit(const struct devpool_training *t, size_t n, unsigned devices, char *in)
{
	unsigned used = 0;
	for (size_t k = 0; k < n; k++) {
		size_t best = n;   /* the first not yet considered, by before() */
		for (size_t i = 0; i < n; i++)
			if (in[i] == 0 && (best == n || before(&t[i], &t[best])))
				best = i;
		if (t[best].min <= devices - used) {
			in[best] = 1;
			used += t[best].min;
		} else {
			in[best] = 2;   /* considered, does not fit */
		}
	}
	for (size_t i = 0; i < n; i++)
		in[i] = in[i] == 1;
}

/* Continuous shares x[i] of the admitted: proportional to priority, each
 * clamped to [min, max] and the rest split again until nothing moves. */
static void water_fill(const struct devpool_training *t, size_t n, unsigned devices,
		       const char *in, double *x)
{
	char *fixed = xcalloc(n ? n : 1, 1);
	for (;;) {
		double left = devices, prio = 0;
		for (size_t i = 0; i < n; i++) {
			if (!in[i])
				continue;
			if (fixed[i])
				left -= x[i];
			else
				prio += (double)t[i].priority;
		}
		if (prio <= 0)
			break;
		int over = 0, under = 0;
		for (size_t i = 0; i < n; i++) {
			if (!in[i] || fixed[i])
				continue;
			x[i] = left * (double)t[i].priority / prio;
			over |= x[i] > t[i].max;
			under |= x[i] < t[i].min;
		}
		if (!over && !under)
			break;
		/* Cut the maxima first: what they free may lift the others above
		 * their minima. */
		for (size_t i = 0; i < n; i++) {
			if (!in[i] || fixed[i])
				continue;
			if (over && x[i] > t[i].max) {
				x[i] = t[i].max;
				fixed[i] = 1;
			} else if (!over && x[i] < t[i].min) {
				x[i] = t[i].min;
				fixed[i] = 1;
			}
		}
	}
	free(fixed);
}

unsigned devpool_share(struct devpool_training *t, size_t n, unsigned devices)
{
	char *in = xcalloc(n ? n : 1, 1);
	double *x = xcalloc(n ? n : 1, sizeof(*x));
	for (size_t i = 0; i < n; i++) {
		if (t[i].priority <= 0 || !t[i].min || t[i].min > t[i].max)
			BUG("devpool: training %zu has priority %ld, min %u, max %u", i,
			    t[i].priority, t[i].min, t[i].max);
		t[i].share = 0;
	}
	admit(t, n, devices, in);
	water_fill(t, n, devices, in, x);
	unsigned given = 0;
	for (size_t i = 0; i < n; i++) {
		if (!in[i])
			continue;
		/* the epsilon keeps 8 * 1/2 from flooring to 3.999... */
		unsigned whole = (unsigned)floor(x[i] + 1e-9);
		if (whole < t[i].min)
			whole = t[i].min;
		if (whole > t[i].max)
			whole = t[i].max;
		t[i].share = whole;
		given += whole;
	}
	while (given < devices) {
		size_t best = n;
		double best_frac = 0;
		for (size_t i = 0; i < n; i++) {
			if (!in[i] || t[i].share >= t[i].max)
				continue;
			double frac = x[i] - t[i].share;
			if (frac <= 1e-9)
				continue;
			if (best == n || frac > best_frac + 1e-9 ||
			    (fabs(frac - best_frac) <= 1e-9 && before(&t[i], &t[best]))) {
				best = i;
				best_frac = frac;
			}
		}
		if (best == n)
			break;
		t[best].share++;
		given++;
	}
	free(in);
	free(x);
	return given;
}
