/* scheduler.h: the trial lifecycle: slots, budget, deadlines, retries,
 * proposals and the backend, driven from the journal. */
#ifndef AAH_SCHEDULER_H
#define AAH_SCHEDULER_H

#include <signal.h>

#include "runner/config/config.h"
#include "runner/experiment.h"
#include "runner/tuner/tuner.h"

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

/* Fill a tuner_config from the config; the JSON it points into is returned
 * in *class_args and *space, owned by the caller. expdir (may be NULL) is
 * preferred for the copied search_space.json. */
int scheduler_tuner_config(const struct aah_config *cfg, const char *expdir,
			   struct tuner_config *tc, cJSON **class_args, cJSON **space);
/* The initial arch file a tuner_config points to (NULL when none); the
 * caller frees it after the tuner is done with tc. */
char *scheduler_initial_arch(const struct aah_config *cfg, const char *expdir);

#endif
