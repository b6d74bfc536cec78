/* tuner_nm.c: NetworkMorphism (placeholder: hyperparameters only until the
 * graph search lands). */
#include "tuner_int.h"

static int nm_propose(struct tuner *t, unsigned seq, struct trng *rng, cJSON **arch,
		      cJSON **params)
{
	*arch = NULL;
	*params = tuner_params_doc(t, seq, space_sample(&t->space, rng));
	return 0;
}

const struct tuner_ops tuner_ops_nm = {
	.name = "NetworkMorphism",
	.caps = TUNER_CAP_ARCH | TUNER_CAP_PARAMS,
	.propose = nm_propose,
};
