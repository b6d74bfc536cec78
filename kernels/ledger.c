/* ledger.c: the step's counts (kernels/ledger.h). */
#include <stdlib.h>
#include <string.h>

#include "kernels/ledger.h"

static struct ledger_kernel *entry(struct ops_ledger *l, const char *name)
{
	for (int i = 0; i < l->nk; i++)
		if (l->k[i].name == name || !strcmp(l->k[i].name, name))
			return &l->k[i];
	if (l->nk == LEDGER_KERNELS) {
		l->overflow++;
		return NULL;
	}
	l->k[l->nk] = (struct ledger_kernel){.name = name};
	return &l->k[l->nk++];
}

int ledger_knows(const struct ops_ledger *l, const void *fn)
{
	for (int i = 0; i < l->nfn; i++)
		if (l->fn[i] == fn)
			return 1;
	return 0;
}

void ledger_launch(struct ops_ledger *l, const char *name, const void *fn, double bytes)
{
	if (!l)
		return;
	l->launches++;
	l->bytes += bytes;
	struct ledger_kernel *k = entry(l, name);
	if (k) {
		k->calls++;
		k->bytes += bytes;
	}
	if (!fn)
		return;
	l->own++;
	if (!ledger_knows(l, fn) && l->nfn < LEDGER_FNS)
		l->fn[l->nfn++] = fn;
}

void ledger_copy(struct ops_ledger *l, enum ledger_copy kind, double bytes)
{
	if (!l)
		return;
	l->copies[kind]++;
	l->copy_bytes[kind] += bytes;
}

void ledger_sync(struct ops_ledger *l)
{
	if (l)
		l->syncs++;
}

void ledger_reset(struct ops_ledger *l)
{
	memset(l, 0, sizeof(*l));
}

static int by_bytes(const void *a, const void *b)
{
	double x = ((const struct ledger_kernel *)a)->bytes, y = ((const struct ledger_kernel *)b)->bytes;
	return x < y ? 1 : x > y ? -1 : 0;
}

void ledger_print(const struct ops_ledger *l, const char *prefix, int kernels, FILE *out)
{
	fprintf(out, "%slaunches %ld (own kernels %ld) bytes %.4g syncs %ld h2d %ld (%.4g bytes) d2h %ld (%.4g bytes) "
		"d2d %ld (%.4g bytes)\n", prefix, l->launches, l->own, l->bytes, l->syncs,
		l->copies[LEDGER_H2D], l->copy_bytes[LEDGER_H2D], l->copies[LEDGER_D2H],
		l->copy_bytes[LEDGER_D2H], l->copies[LEDGER_D2D], l->copy_bytes[LEDGER_D2D]);
	if (!kernels)
		return;
	struct ledger_kernel k[LEDGER_KERNELS];
	memcpy(k, l->k, sizeof(*k) * (size_t)l->nk);
	qsort(k, (size_t)l->nk, sizeof(*k), by_bytes);
	for (int i = 0; i < l->nk; i++)
		fprintf(out, "%s  %-20s calls %5ld bytes %.4g\n", prefix, k[i].name, k[i].calls,
			k[i].bytes);
	if (l->overflow)
		fprintf(out, "%s  (%d launches of other kernels in the totals only)\n", prefix,
			l->overflow);
}
