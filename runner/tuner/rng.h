/* rng.h: small seeded pseudo-random generator (xoshiro256**) for the tuner,
 * so that the same seed gives the same proposals on every machine. */
#ifndef AAH_TUNER_RNG_H
#define AAH_TUNER_RNG_H

#include <stdint.h>

struct trng {
	uint64_t s[4];
};

/* Seed from a 64-bit value and a stream number (e.g. the trial sequence). */
void trng_seed(struct trng *r, uint64_t seed, uint64_t stream);
uint64_t trng_next(struct trng *r);
/* Uniform in [0, 1). */
double trng_uniform(struct trng *r);
/* Uniform integer in [0, n); n > 0. */
uint64_t trng_below(struct trng *r, uint64_t n);
/* Standard normal. */
double trng_normal(struct trng *r);

#endif
