/* tpe.h: Tree-structured Parzen Estimator over an NNI search space
 * (hyperopt semantics as NNI's TPE tuner uses them: n_startup random trials,
 * then a good/bad split by gamma, adaptive Parzen estimators per parameter
 * and the best l(x)/g(x) ratio among n_ei candidates drawn from l). */
#ifndef AAH_TUNER_TPE_H
#define AAH_TUNER_TPE_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "rng.h"
#include "space.h"

struct tpe_options {
	int n_startup;        /* 20 */
	double gamma;         /* 0.25 */
	int n_ei;             /* 24 */
	double prior_weight;  /* 1.0 */
	int maximize;         /* 1: higher metric is better */
};

#define TPE_OPTIONS_DEFAULT { 20, 0.25, 24, 1.0, 1 }

/* One finished trial: its "parameters" object and its metric. */
struct tpe_obs {
	const cJSON *params;
	double metric;
};

/* A new {"name": value, ...} sample (owned by the caller). */
cJSON *tpe_suggest(const struct space *sp, const struct tpe_obs *obs, size_t n,
		   const struct tpe_options *o, struct trng *r);

#endif
