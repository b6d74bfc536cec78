/* journal.h: the one reducer of an experiment's journal (journal.jsonl,
 * replayed by expdir): its events in, the experiment's and every trial's
 * state out, as the runner, `status`, the report and the tuner all see it. */
#ifndef AAH_JOURNAL_H
#define AAH_JOURNAL_H

#include <stddef.h>

#include "runner/store/expdir.h" /* struct expdir_event, enum trial_state */
#include "strvec.h"

/* A trial as its journal events leave it. */
struct trial_rec {
	unsigned seq;             /* 1-based; the trial id is expdir_trial_id(seq) */
	enum trial_state state;   /* TRIAL_QUEUED (0) for a seq no event named */
	unsigned attempt;         /* 1-based attempt now running or last run; 0: no event named it */
	char *job;                /* backend job id of the last submission, or NULL */
	char *place;              /* the last submission's place (expdir_place_name): where
				   * it writes and the runner reads; NULL: the trial directory */
	unsigned launches;        /* submissions of this attempt (trial_submitted); 0 on a
				   * new attempt */
	int keep_place;           /* the next submission goes on in place (a resize) */
	int slot;                 /* -1 when none (queued again after a retry) */
	int last_slot;            /* the slot of the last submission, kept after a retry; -1: none */
	char *gpus;               /* devices of the slot, or NULL */
	double started;           /* wall time of the first submission, 0 if none */
	double submitted;         /* wall time of the last submission, 0 if none */
	double finished;          /* wall time it settled, 0 if not (or submitted again since) */
	double best_acc;          /* NaN when unknown */
	double flops;
	struct expdir_arch_flops arch; /* the master's proposal's network, journaled with
				   * its first submission; classes 0: not journaled */
	int exit_code;
	char *reason;
	unsigned relaunches;      /* times this attempt was relaunched after its cluster lost
				   * it (trial_retry "relaunch"); 0 on a new attempt */
	struct strvec retries;     /* "attempt N: why it ended", one per retry */
	struct strvec notes;       /* "attempt N: what its backend said", trial_note events */
};

/* The experiment as its journal leaves it. Its members are also struct
 * experiment's (runner/experiment.h), through JOURNAL_FIELDS. */
#define JOURNAL_FIELDS                                                                   \
	char *name;                                                                      \
	double created;                                                                  \
	unsigned long next_event; /* seq of the next journal line */                     \
	struct trial_rec *trials; /* index seq-1 */                                      \
	size_t ntrials;                                                                  \
	int done;                                                                        \
	char *done_reason;                                                               \
	double run_seconds;       /* runner time spent by earlier sessions */            \
	double session_start;     /* wall time the current/last session started */       \
	double last_event_ts;
struct journal {
	JOURNAL_FIELDS
};

/* The record of trial seq, growing the table as needed. */
struct trial_rec *journal_trial(struct journal *j, unsigned seq);
/* A trial_retry's reason when it is a relaunch (lifecycle.h's
 * LIFECYCLE_RELAUNCH): journals written before the "relaunch" field are
 * counted by it, in journal_apply alone. */
#define JOURNAL_RELAUNCH_WHY "relaunched from its checkpoint: "

/* Apply one event: the reducer (an expdir_visit_fn's body). */
void journal_apply(struct journal *j, const struct expdir_event *ev);
/* Replay <expdir>/journal.jsonl into j (zeroed first); on error j is released. */
int journal_replay(struct journal *j, const char *expdir);
void journal_release(struct journal *j);

#endif
