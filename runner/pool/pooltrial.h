/* pooltrial.h: a trial's place in the work directory's device pool (the
 * ledger, runner/pool/ledger.h): it joins when submitted, runs on some devices,
 * and leaves when it settles. Does nothing when pool.devices is 0. */
#ifndef AAH_POOLTRIAL_H
#define AAH_POOLTRIAL_H

#include "runner/config/config.h"
#include "runner/pool/ledger.h"

/* The training id of a trial in the ledger: "<experiment>/<trial id>".
 * The caller frees it. */
char *pooltrial_id(const char *experiment_id, unsigned seq);

/* pool.devices: quota: the pool of workdir has the cluster's quota of
 * devices, unless its ledger was fixed at another size by its first user:
 * then that size stays (said in a warning). */
int pooltrial_pool_size(const char *workdir, unsigned quota, unsigned *devices);

/* Trial seq of experiment_id joins the pool of workdir with the config's
 * priority and bounds; *share gets its devices in the new allocation. */
int pooltrial_join(const struct aah_config *cfg, const char *workdir, const char *experiment_id,
		   unsigned seq, unsigned *share);
/* Before a launch: trial seq takes its share when the others have given
 * those devices back, else keeps what it holds (runner/pool/ledger.h,
 * ledger_claim); *got: the devices to launch it on, 0 = it waits. *ids
 * (when ids is not NULL): which, as the ledger journaled them, "5,6,7"
 * (rank i runs on the i-th); NULL when *got is 0. The caller frees it. */
int pooltrial_claim(const struct aah_config *cfg, const char *workdir, const char *experiment_id,
		    unsigned seq, unsigned *got, char **ids);
/* Before a launch, after pooltrial_claim: which of the pool's devices
 * trial seq's ranks run on, chosen by pick (runner/pool/ledger.h,
 * ledger_place: the Docker backend's hosts). 1: none fit now. */
int pooltrial_place(const struct aah_config *cfg, const char *workdir, const char *experiment_id,
		    unsigned seq, ledger_pick_fn *pick, void *arg, unsigned **ids, unsigned *n);
/* The exit status of every rank of a trial that stopped at a step boundary
 * to be relaunched on another world size (aah-trial --elastic; the launch
 * contract, docs/launch.md). */
#define POOLTRIAL_EXIT_RESIZE 85

/* Tell the running trial in trial_dir its share when it differs from what
 * the ledger says it runs on: <trial_dir>/world_size, written atomically
 * (and only when it says something else). A larger share is told only
 * once the others gave its devices back (their `applied`). The ledger alone
 * decides, so a runner resumed after a crash tells the same. */
int pooltrial_tell(const struct aah_config *cfg, const char *workdir, const char *experiment_id,
		   unsigned seq, const char *trial_dir);
/* Was the trial in trial_dir told a size other than the one the ledger
 * says it runs on (its world_size file)? */
int pooltrial_told_other(const struct aah_config *cfg, const char *workdir,
			 const char *experiment_id, unsigned seq, const char *trial_dir);
/* The devices the ledger says trial seq runs on (0 when none). */
unsigned pooltrial_running_on(const struct aah_config *cfg, const char *workdir,
			      const char *experiment_id, unsigned seq);
/* Why the job of training "<experiment>/<trial>" of workdir is held back
 * by its cluster's queue (a Job waiting for admission), or NULL when it is
 * not. Its devices stay reserved in the ledger, so that the queue's
 * admission never finds them taken, but nothing runs on them: `status` and
 * the metrics do not count them as running. The caller frees it. */
char *pooltrial_waiting(const char *workdir, const char *training);
/* Write <trial_dir>/world_size = n (before a launch on n ranks). */
int pooltrial_write_world(const char *trial_dir, unsigned n);

/* It settled: its devices go back to the pool. */
int pooltrial_leave(const struct aah_config *cfg, const char *workdir, const char *experiment_id,
		    unsigned seq);

#endif
