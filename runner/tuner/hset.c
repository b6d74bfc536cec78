/* hset.c: a set of 64-bit hashes (open addressing, linear probing). */
#include "hset.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static void hset_grow(struct hset *s)
{
	struct hset o = *s;
	s->cap = o.cap ? 2 * o.cap : 256;
	s->keys = xcalloc(s->cap, sizeof(uint64_t));
	s->n = 0;
	for (size_t i = 0; i < o.cap; i++)
		if (o.keys[i])
			hset_insert(s, o.keys[i]);
	free(o.keys);
}

void hset_insert(struct hset *s, uint64_t k)
{
	k = k ? k : 1;
	if (2 * (s->n + 1) > s->cap)
		hset_grow(s);
	size_t i = (size_t)(k * 0x9e3779b97f4a7c15ULL) & (s->cap - 1);
	while (s->keys[i] && s->keys[i] != k)
		i = (i + 1) & (s->cap - 1);
	if (!s->keys[i]) {
		s->keys[i] = k;
		s->n++;
	}
}

int hset_has(const struct hset *s, uint64_t k)
{
	k = k ? k : 1;
	if (!s->cap)
		return 0;
	size_t i = (size_t)(k * 0x9e3779b97f4a7c15ULL) & (s->cap - 1);
	while (s->keys[i]) {
		if (s->keys[i] == k)
			return 1;
		i = (i + 1) & (s->cap - 1);
	}
	return 0;
}

void hset_release(struct hset *s)
{
	free(s->keys);
	memset(s, 0, sizeof(*s));
}
