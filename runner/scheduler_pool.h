/* scheduler_pool.h: the scheduler's side of the device pool
 * (runner/pool/pooltrial.h): a trial's devices before its launch, its
 * share while it runs, what the pool knows of it once its job ended, and
 * its leaving. Each does nothing when pool.devices is 0. */
#ifndef AAH_SCHEDULER_POOL_H
#define AAH_SCHEDULER_POOL_H

#include "runner/config/config.h"
#include "runner/experiment.h"  /* struct experiment */
#include "runner/lifecycle.h"   /* struct lifecycle_pool */

/* Before a launch: trial seq joins the pool (once) and runs on what the
 * ledger gives it (its share once nobody else holds those devices), told
 * through <trial_dir>/world_size (trial_dir: its launch's place, the
 * trial's AAH_TRIAL_DIR): *nodes ranks; a GPU trial on the very
 * devices granted, which replace *gpus (its slot's, owned by the caller).
 * 0, 1 when there are no devices for it now (it waits), or -1. */
int scheduler_pool_claim(const struct aah_config *cfg, const struct experiment *e, unsigned seq,
			 const char *trial_dir, unsigned *nodes, char **gpus);
/* Every poll of a running trial: a new share reaches it as world_size, in
 * its last launch's place. */
void scheduler_pool_tell(const struct aah_config *cfg, const struct experiment *e, unsigned seq);
/* Its job ended: what lifecycle_decide needs of the pool, read quietly
 * from trial_dir, its last launch's place. */
void scheduler_pool_facts(const struct aah_config *cfg, const struct experiment *e, unsigned seq,
			  const char *trial_dir, struct lifecycle_pool *p);
/* It settled: its devices go back to the pool (a failure is a warning). */
void scheduler_pool_leave(const struct aah_config *cfg, const struct experiment *e, unsigned seq);

#endif
