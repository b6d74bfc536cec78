/* tuner.c: the generic tuner layer: registry, history, seeding, and the
 * experiment-level proposal (`aah-runner propose`). */
#include "tuner.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"    /* fileio_lock, fileio_mkdir_p, fileio_exists */
#include "jsonfile.h"  /* jsonfile_read, jsonfile_write */
#include "runner/expdir.h" /* expdir_trial_dir, expdir_trial_list, expdir_result_read */
#include "tuner_int.h"
#include "util.h"

static const struct tuner_ops *const registry[] = {
	&tuner_ops_nm,
	&tuner_ops_tpe,
	&tuner_ops_random,
	&tuner_ops_none,
};

const struct tuner_ops *const *tuner_registry(size_t *n)
{
	*n = ARRAY_SIZE(registry);
	return registry;
}

static const struct tuner_ops *lookup(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(registry); i++)
		if (!strcmp(registry[i]->name, name))
			return registry[i];
	return NULL;
}

int tuner_known(const char *name)
{
	return lookup(name) != NULL;
}

const char *tuner_known_names(void)
{
	return "NetworkMorphism, TPE, Random, None";
}

int tuner_arg_number(const struct tuner *t, const char *key, double def, double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(t->class_args, key);
	*out = def;
	if (!v)
		return 0;
	if (cJSON_IsNumber(v)) {
		*out = v->valuedouble;
		return 0;
	}
	if (cJSON_IsString(v) && util_parse_double(v->valuestring, out) == 0)
		return 0;
	return error("tuner %s: classArgs.%s must be a number", t->name, key);
}

int tuner_arg_string(const struct tuner *t, const char *key, const char *def, const char **out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(t->class_args, key);
	*out = def;
	if (!v)
		return 0;
	if (!cJSON_IsString(v))
		return error("tuner %s: classArgs.%s must be a string", t->name, key);
	*out = v->valuestring;
	return 0;
}

cJSON *tuner_params_doc(const struct tuner *t, unsigned seq, cJSON *parameters)
{
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "format", "aah-params/1");
	cJSON_AddNumberToObject(d, "trial_seq", seq);
	cJSON_AddStringToObject(d, "tuner", t->name);
	cJSON_AddItemToObject(d, "parameters", parameters ? parameters : cJSON_CreateObject());
	return d;
}

int tuner_create(struct tuner **out, const struct tuner_config *cfg)
{
	const struct tuner_ops *ops = lookup(cfg->name);
	*out = NULL;
	if (!ops)
		return error("unknown tuner '%s' (known: %s)", cfg->name ? cfg->name : "(none)",
			     tuner_known_names());
	if (cfg->class_args && !cJSON_IsObject(cfg->class_args))
		return error("tuner %s: classArgs must be a mapping", cfg->name);
	struct tuner *t = xcalloc(1, sizeof(*t));
	t->ops = ops;
	t->name = xstrdup(ops->name);
	t->class_args = cfg->class_args ? cJSON_Duplicate(cfg->class_args, 1) : cJSON_CreateObject();
	t->seed = cfg->seed;
	t->initial_arch = cfg->initial_arch ? xstrdup(cfg->initial_arch) : NULL;
	t->max_layers = cfg->max_layers;
	t->max_params = cfg->max_params;
	t->max_flops = cfg->max_flops;
	t->inherit_weights = cfg->inherit_weights;
	t->threads = cfg->threads;
	if (space_parse(&t->space, cfg->search_space) < 0 || (ops->init && ops->init(t) < 0)) {
		tuner_free(t);
		return -1;
	}
	*out = t;
	return 0;
}

void tuner_free(struct tuner *t)
{
	if (!t)
		return;
	if (t->ops->release)
		t->ops->release(t);
	for (size_t i = 0; i < t->nhist; i++) {
		cJSON_Delete(t->hist[i].arch);
		cJSON_Delete(t->hist[i].params);
	}
	free(t->hist);
	space_release(&t->space);
	cJSON_Delete(t->class_args);
	free(t->initial_arch);
	free(t->name);
	free(t);
}

/* Record an observation; takes ownership of arch and params. */
static int record(struct tuner *t, unsigned seq, cJSON *arch, cJSON *params,
		  enum tuner_obs_state state, double metric)
{
	size_t i = t->nhist;
	while (i > 0 && t->hist[i - 1].seq != seq)
		i--;
	struct tuner_hist old;
	int had = i > 0;
	if (had) {
		i--;
		old = t->hist[i];
		t->hist[i].arch = arch;
		t->hist[i].params = params;
	} else {
		if (t->nhist == t->ahist) {
			t->ahist = t->ahist ? 2 * t->ahist : 64;
			t->hist = xrealloc(t->hist, t->ahist * sizeof(*t->hist));
		}
		i = t->nhist++;
		t->hist[i] = (struct tuner_hist){ .seq = seq, .arch = arch, .params = params };
	}
	t->hist[i].state = state;
	t->hist[i].metric = state == TUNER_OBS_DONE ? metric : 0.0;
	int rc = t->ops->observe ? t->ops->observe(t, i, had ? &old : NULL) : 0;
	if (had) {
		cJSON_Delete(old.arch);
		cJSON_Delete(old.params);
	}
	return rc;
}

int tuner_observe(struct tuner *t, const struct tuner_observation *obs)
{
	if (obs->trial_seq == 0)
		return error("tuner: trial_seq must be 1 or more");
	if (obs->state == TUNER_OBS_DONE && !(obs->metric >= -1e300 && obs->metric <= 1e300))
		return error("tuner: trial %u has a metric that is not a number", obs->trial_seq);
	return record(t, obs->trial_seq, obs->arch ? cJSON_Duplicate(obs->arch, 1) : NULL,
		      obs->params ? cJSON_Duplicate(obs->params, 1) : NULL, obs->state, obs->metric);
}

int tuner_propose(struct tuner *t, unsigned trial_seq, cJSON **arch, cJSON **params)
{
	struct trng rng;
	*arch = NULL;
	*params = NULL;
	if (trial_seq == 0)
		return error("tuner: trial_seq must be 1 or more");
	trng_seed(&rng, t->seed, trial_seq);
	if (t->ops->propose(t, trial_seq, &rng, arch, params) < 0) {
		cJSON_Delete(*arch);
		cJSON_Delete(*params);
		*arch = *params = NULL;
		return -1;
	}
	if (!*arch && !*params)
		return 0;
	return record(t, trial_seq, *arch ? cJSON_Duplicate(*arch, 1) : NULL,
		      *params ? cJSON_Duplicate(*params, 1) : NULL, TUNER_OBS_PENDING, 0.0);
}

/* ---- experiment directories ------------------------------------------- */

/* Read trials/<id>/<file> if it exists: 0 with *out NULL when absent. */
static int read_optional(const char *dir, const char *file, cJSON **out)
{
	char *path = xstrfmt("%s/%s", dir, file);
	int rc = 0;
	*out = NULL;
	if (fileio_exists(path))
		rc = jsonfile_read(path, out);
	free(path);
	return rc;
}

static const struct tuner_hist *find_hist(const struct tuner *t, unsigned seq)
{
	for (size_t i = t->nhist; i > 0; i--)
		if (t->hist[i - 1].seq == seq)
			return &t->hist[i - 1];
	return NULL;
}

static int load_trial(struct tuner *t, const char *expdir, unsigned seq)
{
	const struct tuner_hist *known = find_hist(t, seq);
	if (known && known->state != TUNER_OBS_PENDING)
		return 0;   /* finished trials do not change */
	char *dir = expdir_trial_dir(expdir, seq);
	cJSON *arch = NULL, *params = NULL;
	struct expdir_result res;
	int rc = -1;
	if (read_optional(dir, "arch.json", &arch) < 0 || read_optional(dir, "params.json", &params) < 0)
		goto out;
	if (!arch && !params) {   /* a trial directory without a proposal yet */
		rc = 0;
		goto out;
	}
	enum tuner_obs_state state = TUNER_OBS_PENDING;
	double metric = 0.0;
	int have = expdir_result_read(dir, &res);
	if (have < 0) {
		/* a torn or foreign result: the trial failed as far as we know */
		char id[EXPDIR_TRIAL_ID_SIZE];
		warning("tuner: trial %s: unreadable result.json counts as failed",
			expdir_trial_id(seq, id));
		state = TUNER_OBS_FAILED;
	} else if (have > 0) {
		int ok = res.status == TRIAL_SUCCEEDED || res.status == TRIAL_EARLY_STOPPED;
		state = ok && !isnan(res.best_val_acc) ? TUNER_OBS_DONE : TUNER_OBS_FAILED;
		metric = state == TUNER_OBS_DONE ? res.best_val_acc : 0.0;
	}
	rc = record(t, seq, arch, params, state, metric);
	arch = params = NULL;
out:
	cJSON_Delete(arch);
	cJSON_Delete(params);
	free(dir);
	return rc;
}

int tuner_load_history(struct tuner *t, const char *expdir)
{
	unsigned *seqs;
	size_t n;
	int rc = expdir_trial_list(expdir, &seqs, &n);
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = load_trial(t, expdir, seqs[i]);
	free(seqs);
	return rc;
}

int tuner_write_proposal(const struct tuner *t, const char *dir, cJSON *arch, const cJSON *params)
{
	cJSON *meta = arch ? cJSON_GetObjectItemCaseSensitive(arch, "meta") : NULL;
	cJSON *morph = meta ? cJSON_DetachItemFromObjectCaseSensitive(meta, "morph") : NULL;
	int rc = 0;
	if (morph && t->inherit_weights) {
		char *p = xstrfmt("%s/morph.json", dir);
		rc = jsonfile_write(p, morph);
		free(p);
	}
	cJSON_Delete(morph);
	if (rc == 0 && arch) {
		char *p = xstrfmt("%s/arch.json", dir);
		rc = jsonfile_write(p, arch);
		free(p);
	}
	if (rc == 0 && params) {
		char *p = xstrfmt("%s/params.json", dir);
		rc = jsonfile_write(p, params);
		free(p);
	}
	return rc;
}

int tuner_propose_into(struct tuner *t, const char *expdir, unsigned trial_seq)
{
	if (trial_seq == 0 || trial_seq > EXPDIR_TRIAL_MAX)
		return error("tuner: trial sequence number %u is out of range (1..%u)", trial_seq,
			     EXPDIR_TRIAL_MAX);
	char *lockpath = xstrfmt("%s/tuner.lock", expdir);
	char *dir = expdir_trial_dir(expdir, trial_seq);
	char *arch_path = xstrfmt("%s/arch.json", dir);
	char *params_path = xstrfmt("%s/params.json", dir);
	cJSON *arch = NULL, *params = NULL;
	int rc = -1;
	int fd = fileio_lock(lockpath);
	if (fd < 0)
		goto out;
	if (fileio_exists(params_path)) {   /* params.json is written last: proposal complete */
		rc = load_trial(t, expdir, trial_seq);   /* a live tuner learns it */
		goto out_unlock;
	}
	if (tuner_load_history(t, expdir) < 0 || tuner_propose(t, trial_seq, &arch, &params) < 0)
		goto out_unlock;
	if ((arch || params) && fileio_mkdir_p(dir, 0755) < 0)
		goto out_unlock;
	if (tuner_write_proposal(t, dir, arch, params) < 0)
		goto out_unlock;
	rc = 0;
out_unlock:
	fileio_unlock(fd);
out:
	cJSON_Delete(arch);
	cJSON_Delete(params);
	free(params_path);
	free(arch_path);
	free(dir);
	free(lockpath);
	return rc;
}

int tuner_propose_experiment(const char *expdir, const struct tuner_config *cfg,
			     unsigned trial_seq)
{
	struct tuner *t = NULL;
	if (tuner_create(&t, cfg) < 0)
		return -1;
	int rc = tuner_propose_into(t, expdir, trial_seq);
	tuner_free(t);
	return rc;
}
