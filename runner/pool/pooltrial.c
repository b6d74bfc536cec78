/* pooltrial.c: a trial's membership of the device pool. */
#include "runner/pool/pooltrial.h"
#include "runner/store/expdir.h" /* expdir_trial_id */
#include "runner/pool/ledger.h"
#include "util.h"

#include "fileio.h"
#include "strbuf.h" /* the device ids as text */

#include <stdlib.h>
#include <string.h>

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

int pooltrial_pool_size(const char *workdir, unsigned quota, unsigned *devices)
{
	struct ledger l;
	ledger_init(&l, workdir);
	int r = ledger_read(&l);
	*devices = quota;
	if (r == 0 && l.devices && l.devices != quota) {
		warning("the cluster's quota is now %u GPUs; the pool of %s stays at the %u its "
			"first user fixed (pool/ledger.jsonl)", quota, workdir, l.devices);
		*devices = l.devices;
	}
	ledger_release(&l);
	return r;
}

char *pooltrial_waiting(const char *workdir, const char *training)
{
	const char *slash = strrchr(training, '/');
	char *end;
	unsigned long seq = slash ? strtoul(slash + 1, &end, 10) : 0;
	if (!slash || !seq || *end)
		return NULL;
	char *expdir = xstrfmt("%s/experiments/%.*s", workdir, (int)(slash - training), training);
	int was = util_set_quiet(1);
	char *why = expdir_waiting_get(expdir, (unsigned)seq);
	util_set_quiet(was);
	free(expdir);
	return why;
}

int pooltrial_write_world(const char *trial_dir, unsigned n)
{
	char *p = xstrfmt("%s/world_size", trial_dir), *want = xstrfmt("%u\n", n), *have = NULL;
	size_t len = 0;
	int r = 0;
	int was_quiet = util_set_quiet(1);
	int same = fileio_exists(p) && fileio_read(p, 64, &have, &len) == 0 && !strcmp(have, want);
	util_set_quiet(was_quiet);
	if (!same)
		r = fileio_write_atomic(p, want, strlen(want));
	free(have);
	free(want);
	free(p);
	return r;
}

/* "5,6,7": the ids t holds in the ledger's order (the ones it held before
 * first), so a rank that keeps running keeps its device. */
static char *id_list(const struct ledger_training *t)
{
	struct strbuf sb = STRBUF_INIT;
	for (unsigned j = 0; j < t->applied; j++)
		strbuf_addf(&sb, "%s%u", j ? "," : "", t->ids[j]);
	return strbuf_detach(&sb, NULL);
}

int pooltrial_claim(const struct aah_config *cfg, const char *workdir, const char *experiment_id,
		    unsigned seq, unsigned *got, char **ids)
{
	*got = 0;
	if (ids)
		*ids = NULL;
	if (cfg->pool.devices <= 0)
		return 0;
	char *id = pooltrial_id(experiment_id, seq);
	struct ledger l;
	ledger_init(&l, workdir);
	int r = ledger_claim(&l, id, got);
	const struct ledger_training *t = r == 0 && *got ? ledger_find(&l, id) : NULL;
	if (ids && t && t->ids && t->applied == *got)
		*ids = id_list(t);
	ledger_release(&l);
	free(id);
	return r;
}

int pooltrial_place(const struct aah_config *cfg, const char *workdir, const char *experiment_id,
		    unsigned seq, ledger_pick_fn *pick, void *arg, unsigned **ids, unsigned *n)
{
	*ids = NULL;
	*n = 0;
	if (cfg->pool.devices <= 0)
		return 0;
	char *id = pooltrial_id(experiment_id, seq);
	struct ledger l;
	ledger_init(&l, workdir);
	int r = ledger_place(&l, id, pick, arg, ids, n);
	ledger_release(&l);
	free(id);
	return r;
}

/* The ledger's record of trial seq: *share, *on and the devices *free for
 * it (0 when absent). */
static int lookup(const struct aah_config *cfg, const char *workdir, const char *experiment_id,
		  unsigned seq, unsigned *share, unsigned *on, unsigned *free_now)
{
	*share = *on = *free_now = 0;
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
		*free_now = ledger_free_for(&l, id);
	}
	ledger_release(&l);
	free(id);
	return r;
}

unsigned pooltrial_running_on(const struct aah_config *cfg, const char *workdir,
			      const char *experiment_id, unsigned seq)
{
	unsigned share, on, free_now;
	return lookup(cfg, workdir, experiment_id, seq, &share, &on, &free_now) < 0 ? 0 : on;
}

int pooltrial_told_other(const struct aah_config *cfg, const char *workdir,
			 const char *experiment_id, unsigned seq, const char *trial_dir)
{
	unsigned share, on, free_now;
	if (lookup(cfg, workdir, experiment_id, seq, &share, &on, &free_now) < 0 || !on)
		return 0;
	char *p = xstrfmt("%s/world_size", trial_dir), *text = NULL;
	size_t len;
	int was_quiet = util_set_quiet(1);
	int told = fileio_exists(p) && fileio_read(p, 64, &text, &len) == 0 &&
		   strtoul(text, NULL, 10) != on;
	util_set_quiet(was_quiet);
	free(text);
	free(p);
	return told;
}

int pooltrial_tell(const struct aah_config *cfg, const char *workdir, const char *experiment_id,
		   unsigned seq, const char *trial_dir)
{
	unsigned share, on, free_now;
	if (lookup(cfg, workdir, experiment_id, seq, &share, &on, &free_now) < 0)
		return -1;
	/* A grower waits, running on what it has, until the others have given
	 * its devices back at their own step boundaries. */
	int told = on && (share < on || (share > on && share <= free_now));
	return told ? pooltrial_write_world(trial_dir, share) : 0;
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
