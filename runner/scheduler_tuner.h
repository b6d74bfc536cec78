/* scheduler_tuner.h: the tuner of an experiment: its configuration (its
 * search space and first architecture, the copies in the experiment
 * winning), for the scheduler and for the create and propose commands; and
 * the master tuner the scheduler runs on a thread of its own, started from
 * the journal's history, told each trial that settles, and proposing the
 * next trials ahead so that a slot that frees up never waits for a search. */
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

/* From which trial the runner proposes: 1 with tuner.placement master; with
 * placement trial the trial after tuner_proposer_limit() when maxTrialNum
 * goes past it (said by `check`), else 0: never. -1 when the tuner cannot
 * be made (the error said). */
long scheduler_tuner_master_from(const struct aah_config *cfg, const char *expdir);

/* The runner's own NetworkMorphism tuner at many slots makes up to this
 * many proposals from one search while no result comes in
 * (classArgs.search_batch, docs/tuner.md "Batches"): one per 256 slots, 2
 * to 8; 0 when it chooses none (fewer than 512 slots, another tuner, or
 * the config sets the key itself). Said by `check`. */
unsigned scheduler_tuner_search_batch(const struct aah_config *cfg);

struct scheduler_proposer;   /* the thread, its queues (scheduler_tuner.c) */

/* The master tuner. SCHEDULER_TUNER_INIT: none. */
struct scheduler_tuner {
	struct scheduler_proposer *p;  /* NULL: the runner proposes nothing */
	unsigned from_seq;             /* it proposes trials from this one on */
};
#define SCHEDULER_TUNER_INIT { NULL, 0 }

/* Start the master tuner when the runner proposes any trial (above): its
 * thread loads expdir's history, then keeps the proposals of the next
 * `ahead` trials after `created` ready, up to maxTrialNum (0: each one
 * when the scheduler asks for it, from every result told before). */
int scheduler_tuner_start(struct scheduler_tuner *st, const struct aah_config *cfg,
			  const char *expdir, unsigned created, unsigned ahead);
/* Stop the thread (after the proposal it is computing) and free it all. */
void scheduler_tuner_release(struct scheduler_tuner *st);
/* Does the master propose each trial only when it is asked for it (none
 * kept ahead: the caller of scheduler_tuner_propose may wait)? */
int scheduler_tuner_on_demand(const struct scheduler_tuner *st);
/* Does the runner propose trial seq? */
int scheduler_tuner_master(const struct scheduler_tuner *st, unsigned seq);
/* The trials created so far (the highest seq): the thread proposes ahead
 * of it. */
void scheduler_tuner_created(struct scheduler_tuner *st, unsigned created);
/* The history could not be loaded: the error (the runner stops), else NULL. */
const char *scheduler_tuner_failed(struct scheduler_tuner *st);
/* Tell the tuner (if any) that trial t settled, as journaled (its arch and
 * parameters from its directory): what it learns from, or a failure. */
int scheduler_tuner_observe(struct scheduler_tuner *st, const char *expdir,
			    const struct trial_rec *t);
/* What the master's proposal of a trial took: the tuner's seconds on it,
 * and how many settled trials it had learnt from by then (-1 both: the
 * trial was not proposed by the master now); and what its network costs
 * (classes 0: it has none, or it was not proposed now). */
struct scheduler_tuner_took {
	double seconds;
	int learnt;
	struct expdir_arch_flops arch;
};
/* The parameters trial seq trains with, into *params (the caller's; NULL
 * when none): a retried or resumed trial trains what its directory holds;
 * a new one gets the master's proposal, written into its directory
 * unsynced (the caller makes it durable before it journals the trial as
 * submitted), and *took. launched: the journal has the trial submitted;
 * if not, a proposal in its directory that does not read is dropped and
 * made again. 1: not ready yet (the thread is on it, the main thread is
 * woken by SIGUSR1 when it is); -1: the proposal failed (the error
 * said). */
int scheduler_tuner_propose(struct scheduler_tuner *st, const char *expdir, unsigned seq,
			    int launched, cJSON **params, struct scheduler_tuner_took *took);

#endif
