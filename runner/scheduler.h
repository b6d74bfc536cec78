/* scheduler.h: runs an experiment: slots, budget, proposals and the
 * backend, driven from the journal; what becomes of each trial is
 * lifecycle.h's rule, which the scheduler carries out. */
#ifndef AAH_SCHEDULER_H
#define AAH_SCHEDULER_H

#include <signal.h>

#include "runner/config/config.h"
#include "runner/experiment.h"

struct scheduler_opts {
	const char *runner_exe;   /* this program, for `propose --exec` in trials */
	int progress;             /* print a progress line as trials settle */
	double poll_interval;     /* seconds between backend polls (0 = 0.05) */
	double progress_interval; /* seconds between periodic progress lines (0 = 30) */
};

/* Run (or resume) an experiment until it is done or a stop is requested
 * (SIGTERM/SIGINT). The caller holds the experiment lock. Returns 0 when
 * the experiment ended or stopped cleanly. */
int scheduler_run(const struct aah_config *cfg, struct experiment *e,
		  const struct scheduler_opts *opts);

#endif
