/* carve.h: one allocation carved into regions, laid out once.
 *
 * The model keeps its parameters, gradients, optimiser state and batchnorm
 * statistics in one block carved this way (trialimg/model_exec.c), so a
 * backend that holds them in device memory needs one allocation (one
 * cudaMalloc, sized once) and one copy each way, not one per tensor. Each
 * region starts at a multiple of the alignment (256 bytes suits cudaMalloc's
 * own and every vector load). */
#ifndef AAH_CARVE_H
#define AAH_CARVE_H

#include <stddef.h>

#define CARVE_MAX 16

struct carve {
	size_t align;       /* a power of two */
	size_t total;       /* bytes the block needs */
	int n;
	struct {
		const char *name;   /* in messages */
		size_t bytes, offset;
	} r[CARVE_MAX];
};

/* An empty layout; align must be a power of two (-1 after error()). */
int carve_init(struct carve *c, size_t align);
/* Adds a region of bytes at the next aligned offset: its index, or -1
 * (after error() naming it) when the layout is full or the size overflows. */
int carve_add(struct carve *c, const char *name, size_t bytes);
/* Region i's address in a block of c->total bytes at base. */
void *carve_at(const struct carve *c, void *base, int i);

#endif
