/* hset.h: a set of 64-bit hashes (architectures the tuner has seen). */
#ifndef AAH_HSET_H
#define AAH_HSET_H

#include <stddef.h>
#include <stdint.h>

struct hset {
	uint64_t *keys;        /* (cap) 0 = empty (hash 0 is remapped to 1) */
	size_t cap, n;
};

void hset_insert(struct hset *s, uint64_t k);
int hset_has(const struct hset *s, uint64_t k);
void hset_release(struct hset *s);

#endif
