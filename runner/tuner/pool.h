/* pool.h: a small pthread pool running parallel-for loops (the tuner's
 * distance computations). Results must go to per-index slots so the outcome
 * does not depend on the thread count. */
#ifndef AAH_TUNER_POOL_H
#define AAH_TUNER_POOL_H

#include <stddef.h>

struct tpool;

/* threads = total workers including the caller; 0 = online CPUs. */
struct tpool *tpool_create(unsigned threads);
void tpool_free(struct tpool *p);
unsigned tpool_threads(const struct tpool *p);
/* Call fn(ctx, begin, end) over [0, n) in chunks, on every thread; returns
 * when all are done. Small n runs on the caller only. */
void tpool_run(struct tpool *p, size_t n, size_t min_chunk,
	       void (*fn)(void *ctx, size_t begin, size_t end), void *ctx);

#endif
