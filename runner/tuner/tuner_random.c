/* tuner_random.c: the "None" tuner (no proposal) and "Random" (a uniform
 * sample of the search space, no architecture). */
#include "tuner_int.h"

static int none_propose(struct tuner *t, unsigned seq, struct trng *rng, cJSON **arch,
			cJSON **params)
{
	(void)t;
	(void)seq;
	(void)rng;
	*arch = NULL;
	*params = NULL;
	return 0;
}

static int random_propose(struct tuner *t, unsigned seq, struct trng *rng, cJSON **arch,
			  cJSON **params)
{
	*arch = NULL;
	*params = tuner_params_doc(t, seq, space_sample(&t->space, rng));
	return 0;
}

const struct tuner_ops tuner_ops_none = {
	.name = "None",
	.caps = 0,
	.propose = none_propose,
};

const struct tuner_ops tuner_ops_random = {
	.name = "Random",
	.caps = TUNER_CAP_PARAMS,
	.propose = random_propose,
};
