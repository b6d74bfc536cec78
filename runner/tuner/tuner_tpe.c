/* tuner_tpe.c: the "TPE" tuner: hyperparameters only, by tpe_suggest over
 * the finished trials. NetworkMorphism uses the same helper. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tpe.h"
#include "tuner_int.h"
#include "util.h"

int tuner_tpe_options(const struct tuner *t, struct tpe_options *o)
{
	struct tpe_options def = TPE_OPTIONS_DEFAULT;
	double v;
	const char *mode;
	*o = def;
	if (tuner_arg_string(t, "optimize_mode", "maximize", &mode) < 0)
		return -1;
	if (strcmp(mode, "maximize") && strcmp(mode, "minimize"))
		return error("tuner %s: classArgs.optimize_mode must be maximize or minimize", t->name);
	o->maximize = !strcmp(mode, "maximize");
	if (tuner_arg_number(t, "n_startup_jobs", def.n_startup, &v) < 0)
		return -1;
	if (v < 0 || v > 1e6)
		return error("tuner %s: classArgs.n_startup_jobs must be 0 or more", t->name);
	o->n_startup = (int)v;
	if (tuner_arg_number(t, "gamma", def.gamma, &o->gamma) < 0)
		return -1;
	if (!(o->gamma > 0 && o->gamma < 1))
		return error("tuner %s: classArgs.gamma must be in (0, 1)", t->name);
	if (tuner_arg_number(t, "n_ei_candidates", def.n_ei, &v) < 0)
		return -1;
	if (v < 1 || v > 1e5)
		return error("tuner %s: classArgs.n_ei_candidates must be 1 or more", t->name);
	o->n_ei = (int)v;
	return 0;
}

cJSON *tuner_tpe_parameters(const struct tuner *t, const struct tpe_options *o, struct trng *r)
{
	struct tpe_obs *obs = xmalloc((t->nhist ? t->nhist : 1) * sizeof(*obs));
	size_t n = 0;
	for (size_t i = 0; i < t->nhist; i++) {
		const struct tuner_hist *h = &t->hist[i];
		const cJSON *p = h->params ? cJSON_GetObjectItemCaseSensitive(h->params, "parameters") : NULL;
		if (h->state != TUNER_OBS_DONE || !cJSON_IsObject(p))
			continue;
		obs[n].params = p;
		obs[n].metric = h->metric;
		n++;
	}
	cJSON *res = tpe_suggest(&t->space, obs, n, o, r);
	free(obs);
	return res;
}

static int tpe_init(struct tuner *t)
{
	struct tpe_options *o = xmalloc(sizeof(*o));
	if (tuner_tpe_options(t, o) < 0) {
		free(o);
		return -1;
	}
	t->priv = o;
	return 0;
}

static void tpe_release(struct tuner *t)
{
	free(t->priv);
	t->priv = NULL;
}

static int tpe_propose(struct tuner *t, unsigned seq, struct trng *rng, cJSON **arch,
		       cJSON **params)
{
	*arch = NULL;
	*params = tuner_params_doc(t, seq, tuner_tpe_parameters(t, t->priv, rng));
	return 0;
}

const struct tuner_ops tuner_ops_tpe = {
	.name = "TPE",
	.caps = TUNER_CAP_PARAMS,
	.init = tpe_init,
	.propose = tpe_propose,
	.release = tpe_release,
};
