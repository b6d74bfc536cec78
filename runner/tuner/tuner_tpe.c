/* tuner_tpe.c: TPE over the search space (placeholder: random until the
 * Parzen estimators land). */
#include "tuner_int.h"

static int tpe_propose(struct tuner *t, unsigned seq, struct trng *rng, cJSON **arch,
		       cJSON **params)
{
	*arch = NULL;
	*params = tuner_params_doc(t, seq, space_sample(&t->space, rng));
	return 0;
}

const struct tuner_ops tuner_ops_tpe = {
	.name = "TPE",
	.caps = TUNER_CAP_PARAMS,
	.propose = tpe_propose,
};
