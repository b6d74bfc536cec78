/* rng.c: xoshiro256** seeded through splitmix64. */
#include "rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void trng_seed(struct trng *r, uint64_t seed, uint64_t stream)
{
	uint64_t x = seed ^ (stream * 0xd1342543de82ef95ULL + 0x632be59bd9b4e019ULL);
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t trng_next(struct trng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

double trng_uniform(struct trng *r)
{
	return (double)(trng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t trng_below(struct trng *r, uint64_t n)
{
	/* Lemire-free rejection: unbiased and simple. */
	uint64_t limit = UINT64_MAX - UINT64_MAX % n;
	uint64_t x;
	do
		x = trng_next(r);
	while (x >= limit);
	return x % n;
}

double trng_normal(struct trng *r)
{
	double u1, u2;
	do
		u1 = trng_uniform(r);
	while (u1 <= 0.0);
	u2 = trng_uniform(r);
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}
