/* scheduler_tuner.h: the tuner of an experiment: its configuration (its
 * search space and first architecture, the copies in the experiment
 * winning), for the scheduler and for the create and propose commands; and
 * the master tuner the scheduler runs, started from the journal's history
 * and told each trial that settles. */
#ifndef AAH_SCHEDULER_TUNER_H
#define AAH_SCHEDULER_TUNER_H

#include <cjson/cJSON.h>

#include "runner/config/config.h"
#include "runner/experiment.h"  /* struct trial_rec */
#include "runner/tuner/tuner.h"

/* Fill a tuner_config from the config; the JSON it points into is returned
 * in *class_args and *space, owned by the caller. expdir (may be NULL) is
 * preferred for the copied search_space.json. */
int scheduler_tuner_config(const struct aah_config *cfg, const char *expdir,
			   struct tuner_config *tc, cJSON **class_args, cJSON **space);
/* The initial arch file a tuner_config points to (NULL when none); the
 * caller frees it after the tuner is done with tc. */
char *scheduler_tuner_initial_arch(const struct aah_config *cfg, const char *expdir);

/* The master tuner the scheduler runs (tuner.placement master), and the
 * next new trial's proposal made ahead while every slot trains, so that a
 * slot that frees up is refilled at once. SCHEDULER_TUNER_INIT: none. */
struct scheduler_tuner {
	struct tuner *tuner;      /* NULL: placement is not master */
	unsigned ahead_seq;       /* the trial proposed ahead; 0 = none */
	cJSON *ahead_arch, *ahead_params;
};
#define SCHEDULER_TUNER_INIT { NULL, 0, NULL, NULL }

/* With tuner.placement master, st gets the experiment's tuner, its history
 * loaded from expdir's journal; for any other placement, none. */
int scheduler_tuner_start(struct scheduler_tuner *st, const struct aah_config *cfg,
			  const char *expdir);
void scheduler_tuner_release(struct scheduler_tuner *st);
/* Tell the tuner (if any) that trial t settled, as journaled (its arch and
 * parameters from its directory): what it learns from, or a failure. */
int scheduler_tuner_observe(struct scheduler_tuner *st, const char *expdir,
			    const struct trial_rec *t);
/* The parameters trial seq trains with, into *params (the caller's; NULL
 * when none): a retried or resumed trial trains what its directory holds;
 * a new one gets the tuner's proposal (the one made ahead for it, if any),
 * written into its directory. */
int scheduler_tuner_propose(struct scheduler_tuner *st, const char *expdir, unsigned seq,
			    cJSON **params);
/* Propose trial seq now, before it is created. A failure here is not
 * final and is not said: the trial proposes again when it is created. */
void scheduler_tuner_propose_ahead(struct scheduler_tuner *st, unsigned seq);

#endif
