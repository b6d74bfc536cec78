/* scheduler_progress.h: what the runner shows of its trials: the progress
 * line it prints as trials settle and now and then while they train, and
 * the reason a job waits, for `status`. */
#ifndef AAH_SCHEDULER_PROGRESS_H
#define AAH_SCHEDULER_PROGRESS_H

#include "runner/backend/backend.h" /* struct aah_job_status */
#include "runner/config/config.h"
#include "runner/experiment.h"  /* struct experiment, struct trial_rec */

/* One line on stdout: after trial t settled, or (t NULL) a periodic one;
 * elapsed: the experiment's runner time so far, in seconds. */
void scheduler_progress_line(const struct aah_config *cfg, const struct experiment *e,
			     const struct trial_rec *t, double elapsed);

/* A job its backend holds back with a reason (a cluster queue has not
 * admitted it yet) is told to `status` through <trial dir>/waiting, which
 * goes once the job runs or ends. *known is the caller's memory of that
 * file for this trial (0 at first: the file is looked at), so that a poll
 * of thousands of running jobs touches no file when nothing waits. */
enum { PROGRESS_WAITING_UNKNOWN, PROGRESS_WAITING_NONE, PROGRESS_WAITING_WRITTEN };
void scheduler_progress_waiting(const struct experiment *e, unsigned seq,
				const struct aah_job_status *st, unsigned char *known);

#endif
