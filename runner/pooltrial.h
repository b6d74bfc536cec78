/* pooltrial.h: a trial's place in the work directory's device pool (the
 * ledger, runner/ledger.h): it joins when submitted, runs on some devices,
 * and leaves when it settles. Does nothing when pool.devices is 0. */
#ifndef AAH_POOLTRIAL_H
#define AAH_POOLTRIAL_H

#include "runner/config/config.h"

/* The training id of a trial in the ledger: "<experiment>/<trial id>".
 * The caller frees it. */
char *pooltrial_id(const char *experiment_id, unsigned seq);

/* Trial seq of experiment_id joins the pool of workdir with the config's
 * priority and bounds; *share gets its devices in the new allocation. */
int pooltrial_join(const struct aah_config *cfg, const char *workdir, const char *experiment_id,
		   unsigned seq, unsigned *share);
/* It now runs on `devices`. */
int pooltrial_applied(const struct aah_config *cfg, const char *workdir,
		      const char *experiment_id, unsigned seq, unsigned devices);
/* It settled: its devices go back to the pool. */
int pooltrial_leave(const struct aah_config *cfg, const char *workdir, const char *experiment_id,
		    unsigned seq);

#endif
