/* scheduler_pool.c: the scheduler's side of the device pool
 * (scheduler_pool.h). */
#include "runner/scheduler_pool.h"
#include "runner/pool/pooltrial.h"
#include "util.h"

#include <stdlib.h>

static int in_pool(const struct aah_config *cfg)
{
	return cfg->pool.devices > 0;
}

int scheduler_pool_claim(const struct aah_config *cfg, const struct experiment *e, unsigned seq,
			 const char *trial_dir, unsigned *nodes, char **gpus)
{
	unsigned share, got;
	char *ids = NULL;
	if (!in_pool(cfg))
		return 0;
	if (pooltrial_join(cfg, e->workdir, e->id, seq, &share) < 0 ||
	    pooltrial_claim(cfg, e->workdir, e->id, seq, &got, &ids) < 0)
		return -1;
	if (!got)
		return 1;
	*nodes = got;
	/* GPU trials run on the very devices the ledger granted, one rank on
	 * each: they become the slot's CUDA_VISIBLE_DEVICES (launch.c) */
	if (cfg->trial.gpu_num > 0 && ids) {
		free(*gpus);
		*gpus = ids;
		ids = NULL;
	}
	free(ids);
	return pooltrial_write_world(trial_dir, got);
}

void scheduler_pool_tell(const struct aah_config *cfg, const struct experiment *e, unsigned seq)
{
	if (!in_pool(cfg))
		return;
	/* the trial reads its world_size in its launch's place */
	char *dir = expdir_place_dir(e->dir, seq, seq <= e->ntrials ? e->trials[seq - 1].place : NULL);
	if (pooltrial_tell(cfg, e->workdir, e->id, seq, dir) < 0)
		warning("trial %u is not told its share: %s", seq, util_last_error());
	free(dir);
}

void scheduler_pool_facts(const struct aah_config *cfg, const struct experiment *e, unsigned seq,
			  const char *trial_dir, struct lifecycle_pool *p)
{
	p->in_pool = in_pool(cfg);
	if (!p->in_pool)
		return;
	int was_quiet = util_set_quiet(1);
	p->result_visible = expdir_result_visible(trial_dir);
	p->told_other = pooltrial_told_other(cfg, e->workdir, e->id, seq, trial_dir);
	p->running_on = pooltrial_running_on(cfg, e->workdir, e->id, seq);
	util_set_quiet(was_quiet);
}

void scheduler_pool_leave(const struct aah_config *cfg, const struct experiment *e, unsigned seq)
{
	if (pooltrial_leave(cfg, e->workdir, e->id, seq) < 0)
		warning("trial %u keeps its place in the device pool: %s", seq, util_last_error());
}
