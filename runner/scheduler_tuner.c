/* scheduler_tuner.c: the tuner of an experiment, its configuration and
 * the master tuner the scheduler runs (scheduler_tuner.h). */
#include "runner/scheduler_tuner.h"
#include "fileio.h"
#include "jsonfile.h"
#include "runner/store/outcome.h" /* outcome_learnable */
#include "util.h"

#include <stdlib.h>
#include <string.h>

int scheduler_tuner_config(const struct aah_config *cfg, const char *expdir,
			   struct tuner_config *tc, cJSON **class_args, cJSON **space)
{
	memset(tc, 0, sizeof(*tc));
	*class_args = cfg->tuner.class_args ? ynode_to_json(cfg->tuner.class_args) : NULL;
	*space = NULL;
	char *copied = expdir ? xstrfmt("%s/search_space.json", expdir) : NULL;
	int r;
	const struct ynode *inline_space = cfg->nni ? cfg->nni->search_space : NULL;
	if (copied && fileio_exists(copied))
		r = jsonfile_read(copied, space);
	else if (inline_space)   /* NNI v2's searchSpace, in the config itself */
		r = (*space = ynode_to_json(inline_space)) ? 0 : -1;
	else
		r = config_search_space(cfg, space);
	free(copied);
	if (r < 0) {
		cJSON_Delete(*class_args);
		*class_args = NULL;
		return -1;
	}
	tc->name = cfg->tuner.builtin_tuner_name;
	tc->class_args = *class_args;
	tc->search_space = *space;
	tc->seed = (uint64_t)cfg->seed;
	tc->max_layers = (unsigned)cfg->tuner.max_layers;
	tc->max_params = (uint64_t)cfg->tuner.max_params;
	tc->max_flops = cfg->tuner.max_flops;
	tc->inherit_weights = cfg->tuner.inherit_weights;
	return 0;
}

char *scheduler_tuner_initial_arch(const struct aah_config *cfg, const char *expdir)
{
	/* The copy in the experiment wins: the user's file may have changed. */
	char *copied = expdir ? xstrfmt("%s/initial_arch.json", expdir) : NULL;
	if (copied && fileio_exists(copied))
		return copied;
	free(copied);
	const char *p = cfg->tuner.initial_arch;
	if (!p || !*p)
		return NULL;
	return config_resolve(cfg, p);
}

int scheduler_tuner_start(struct scheduler_tuner *st, const struct aah_config *cfg,
			  const char *expdir)
{
	*st = (struct scheduler_tuner)SCHEDULER_TUNER_INIT;
	if (strcmp(cfg->tuner.placement, "master"))
		return 0;
	struct tuner_config tc;
	cJSON *ca, *space;
	if (scheduler_tuner_config(cfg, expdir, &tc, &ca, &space) < 0)
		return -1;
	char *initial = scheduler_tuner_initial_arch(cfg, expdir);
	tc.initial_arch = initial;
	int r = tuner_create(&st->tuner, &tc);
	free(initial);
	if (r == 0)
		r = tuner_load_history(st->tuner, expdir);
	cJSON_Delete(ca);
	cJSON_Delete(space);
	return r;
}

void scheduler_tuner_release(struct scheduler_tuner *st)
{
	tuner_free(st->tuner);
	cJSON_Delete(st->ahead_arch);
	cJSON_Delete(st->ahead_params);
	*st = (struct scheduler_tuner)SCHEDULER_TUNER_INIT;
}

int scheduler_tuner_observe(struct scheduler_tuner *st, const char *expdir,
			    const struct trial_rec *t)
{
	if (!st->tuner)
		return 0;
	int learnable = outcome_learnable(t->state, t->best_acc);   /* as journaled */
	char *dir = expdir_trial_dir(expdir, t->seq);
	char *pa = expdir_file(dir, EXPDIR_ARCH), *pp = expdir_file(dir, EXPDIR_PARAMS);
	cJSON *arch = NULL, *params = NULL;
	int was_quiet = util_set_quiet(1);
	if (fileio_exists(pa))
		jsonfile_read(pa, &arch);
	if (fileio_exists(pp))
		jsonfile_read(pp, &params);
	util_set_quiet(was_quiet);
	struct tuner_observation obs = {
		.trial_seq = t->seq,
		.arch = arch,
		.params = params,
		.state = learnable ? TUNER_OBS_DONE : TUNER_OBS_FAILED,
		.metric = learnable ? t->best_acc : 0,
	};
	int r = tuner_observe_at(st->tuner, &obs, t->place);
	cJSON_Delete(arch);
	cJSON_Delete(params);
	free(pa);
	free(pp);
	free(dir);
	return r;
}

int scheduler_tuner_propose(struct scheduler_tuner *st, const char *expdir, unsigned seq,
			    cJSON **params_out)
{
	char *dir = expdir_trial_dir(expdir, seq);
	char *pa = expdir_file(dir, EXPDIR_ARCH), *pp = expdir_file(dir, EXPDIR_PARAMS);
	cJSON *arch = NULL, *params = NULL;
	int r = 0;
	*params_out = NULL;
	if (fileio_exists(pp) || fileio_exists(pa)) {
		/* A retried or resumed trial trains what it was given before. */
		if (fileio_exists(pp))
			r = jsonfile_read(pp, &params);
	} else if (st->tuner) {
		if (seq == st->ahead_seq) {   /* made while the slots were busy */
			arch = st->ahead_arch;
			params = st->ahead_params;
			st->ahead_arch = st->ahead_params = NULL;
			st->ahead_seq = 0;
		} else {
			r = tuner_propose(st->tuner, seq, &arch, &params);
		}
		if (r == 0)
			r = tuner_write_proposal(st->tuner, dir, arch, params);
	}
	if (r == 0 && params) {
		cJSON *p = cJSON_DetachItemFromObjectCaseSensitive(params, "parameters");
		*params_out = p;
	}
	cJSON_Delete(arch);
	cJSON_Delete(params);
	free(pa);
	free(pp);
	free(dir);
	return r;
}

void scheduler_tuner_propose_ahead(struct scheduler_tuner *st, unsigned seq)
{
	if (!st->tuner || st->ahead_seq)
		return;
	int was_quiet = util_set_quiet(1);   /* said again, loudly, if it fails when the trial is made */
	if (tuner_propose(st->tuner, seq, &st->ahead_arch, &st->ahead_params) == 0)
		st->ahead_seq = seq;
	util_set_quiet(was_quiet);
}
