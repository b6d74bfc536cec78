/* space.h: NNI search_space.json (choice, randint, uniform, quniform,
 * loguniform, qloguniform, normal, qnormal, lognormal, qlognormal): parsing,
 * validation and random sampling. */
#ifndef AAH_TUNER_SPACE_H
#define AAH_TUNER_SPACE_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "rng.h"

enum space_type {
	SPACE_CHOICE,
	SPACE_RANDINT,      /* [lower, upper): integers */
	SPACE_UNIFORM,      /* [low, high] */
	SPACE_QUNIFORM,     /* clip(round(uniform(low, high) / q) * q, low, high) */
	SPACE_LOGUNIFORM,   /* exp(uniform(log low, log high)) */
	SPACE_QLOGUNIFORM,
	SPACE_NORMAL,       /* [mu, sigma] */
	SPACE_QNORMAL,      /* [mu, sigma, q] */
	SPACE_LOGNORMAL,    /* exp(normal(mu, sigma)) */
	SPACE_QLOGNORMAL,
};

struct space_param {
	char *name;
	enum space_type type;
	double a, b, q;      /* low/high or mu/sigma, and q (0 = none) */
	cJSON *choices;      /* SPACE_CHOICE: array of candidate values (owned) */
	int nchoices;
};

struct space {
	struct space_param *params;  /* (n) in the file's key order */
	size_t n;
};

#define SPACE_INIT { NULL, 0 }

/* Parse an NNI search space object; errors name the key. NULL doc = empty
 * space. */
int space_parse(struct space *sp, const cJSON *doc);
void space_release(struct space *sp);
const char *space_type_name(enum space_type t);

/* The value of parameter p at "internal" coordinate x (choice: index;
 * log types: log of the value; others: the value), quantised and as JSON. */
cJSON *space_value(const struct space_param *p, double x);
/* Internal coordinate of a JSON value of p (inverse of space_value), or -1
 * when it does not belong to the parameter (a stale history entry). */
int space_coord(const struct space_param *p, const cJSON *v, double *x);
/* Draw one internal coordinate from the prior. */
double space_sample_coord(const struct space_param *p, struct trng *r);
/* A uniform random sample of the whole space: {"name": value, ...}. */
cJSON *space_sample(const struct space *sp, struct trng *r);

#endif
