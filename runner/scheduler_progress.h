/* scheduler_progress.h: the progress line the runner prints as trials
 * settle, and now and then while they train. */
#ifndef AAH_SCHEDULER_PROGRESS_H
#define AAH_SCHEDULER_PROGRESS_H

#include "runner/config/config.h"
#include "runner/experiment.h"  /* struct experiment, struct trial_rec */

/* One line on stdout: after trial t settled, or (t NULL) a periodic one;
 * elapsed: the experiment's runner time so far, in seconds. */
void scheduler_progress_line(const struct aah_config *cfg, const struct experiment *e,
			     const struct trial_rec *t, double elapsed);

#endif
