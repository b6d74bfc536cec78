/* pooltrial.c: a trial's membership of the device pool. */
#include "runner/pooltrial.h"
#include "runner/expdir.h" /* expdir_trial_id */
#include "runner/ledger.h"
#include "util.h"

#include <stdlib.h>

char *pooltrial_id(const char *experiment_id, unsigned seq)
{
	char id[EXPDIR_TRIAL_ID_SIZE];
	return xstrfmt("%s/%s", experiment_id, expdir_trial_id(seq, id));
}

int pooltrial_join(const struct aah_config *cfg, const char *workdir, const char *experiment_id,
		   unsigned seq, unsigned *share)
{
	*share = 0;
	if (cfg->pool.devices <= 0)
		return 0;
	const struct aah_config_pool *p = &cfg->pool;
	unsigned devices = (unsigned)p->devices;
	unsigned max = p->max_devices > 0 && p->max_devices < p->devices ? (unsigned)p->max_devices
									  : devices;
	char *id = pooltrial_id(experiment_id, seq);
	struct ledger l;
	ledger_init(&l, workdir);
	int r = ledger_join(&l, devices, id, p->priority, (unsigned)p->min_devices, max);
	if (r == 0)
		*share = ledger_find(&l, id)->share;
	ledger_release(&l);
	free(id);
	return r;
}

int pooltrial_applied(const struct aah_config *cfg, const char *workdir,
		      const char *experiment_id, unsigned seq, unsigned devices)
{
	if (cfg->pool.devices <= 0)
		return 0;
	char *id = pooltrial_id(experiment_id, seq);
	struct ledger l;
	ledger_init(&l, workdir);
	int r = ledger_applied(&l, id, devices);
	ledger_release(&l);
	free(id);
	return r;
}

int pooltrial_leave(const struct aah_config *cfg, const char *workdir, const char *experiment_id,
		    unsigned seq)
{
	if (cfg->pool.devices <= 0)
		return 0;
	char *id = pooltrial_id(experiment_id, seq);
	struct ledger l;
	ledger_init(&l, workdir);
	int r = ledger_leave(&l, id);
	ledger_release(&l);
	free(id);
	return r;
}
