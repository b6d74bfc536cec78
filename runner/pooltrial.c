/* pooltrial.c: a trial's membership of the device pool. */
#include "runner/pooltrial.h"
#include "runner/expdir.h" /* expdir_trial_id */
#include "runner/ledger.h"
#include "util.h"

#include "fileio.h"

#include <stdlib.h>
#include <string.h>

char *pooltrial_id(const char *experiment_id, unsigned seq)
{
	char id[EXPDIR_TRIAL_ID_SIZE];
	return xstrfmt("%s/%s", experiment_id, expdir_trial_id(seq, id));
}

/* A share is launched only on devices nobody runs on: until the trainings
 * told to shrink have stopped at their step boundary and been relaunched
 * smaller (their `applied`), the one that grows into their devices waits
 * (0). So the pool is never oversubscribed, and a newcomer does not train
 * beside ranks that have yet to give its devices back. */
static unsigned free_for(const struct ledger *l, const char *id, unsigned share)
{
	unsigned held = 0;
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->t[i].id, id))
			held += l->t[i].applied;
	return held + share <= l->devices ? share : 0;
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
		*share = free_for(&l, id, ledger_find(&l, id)->share);
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

int pooltrial_write_world(const char *trial_dir, unsigned n)
{
	char *p = xstrfmt("%s/world_size", trial_dir), *want = xstrfmt("%u\n", n), *have = NULL;
	size_t len = 0;
	int r = 0;
	util_set_quiet(1);
	int same = fileio_exists(p) && fileio_read(p, 64, &have, &len) == 0 && !strcmp(have, want);
	util_set_quiet(0);
	if (!same)
		r = fileio_write_atomic(p, want, strlen(want));
	free(have);
	free(want);
	free(p);
	return r;
}

/* The ledger's record of trial seq: *share and *on (0 when absent). */
static int lookup(const struct aah_config *cfg, const char *workdir, const char *experiment_id,
		  unsigned seq, unsigned *share, unsigned *on)
{
	*share = *on = 0;
	if (cfg->pool.devices <= 0)
		return 0;
	char *id = pooltrial_id(experiment_id, seq);
	struct ledger l;
	ledger_init(&l, workdir);
	int r = ledger_read(&l);
	const struct ledger_training *t = r == 0 ? ledger_find(&l, id) : NULL;
	if (t) {
		*share = t->share;
		*on = t->applied;
	}
	ledger_release(&l);
	free(id);
	return r;
}

unsigned pooltrial_running_on(const struct aah_config *cfg, const char *workdir,
			      const char *experiment_id, unsigned seq)
{
	unsigned share, on;
	return lookup(cfg, workdir, experiment_id, seq, &share, &on) < 0 ? 0 : on;
}

int pooltrial_told_other(const struct aah_config *cfg, const char *workdir,
			 const char *experiment_id, unsigned seq, const char *trial_dir)
{
	unsigned share, on;
	if (lookup(cfg, workdir, experiment_id, seq, &share, &on) < 0 || !on)
		return 0;
	char *p = xstrfmt("%s/world_size", trial_dir), *text = NULL;
	size_t len;
	util_set_quiet(1);
	int told = fileio_exists(p) && fileio_read(p, 64, &text, &len) == 0 &&
		   strtoul(text, NULL, 10) != on;
	util_set_quiet(0);
	free(text);
	free(p);
	return told;
}

int pooltrial_tell(const struct aah_config *cfg, const char *workdir, const char *experiment_id,
		   unsigned seq, const char *trial_dir)
{
	unsigned share, on;
	if (lookup(cfg, workdir, experiment_id, seq, &share, &on) < 0)
		return -1;
	return on && share != on ? pooltrial_write_world(trial_dir, share) : 0;
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
