/* lifecycle.h: the trial lifecycle as one rule: what becomes of a trial,
 * given its journaled record, its job's status, its outcome
 * (runner/store/outcome.h), the config and the device pool. It is pure: it
 * reads no file, calls no backend and journals nothing; the scheduler
 * (scheduler.h) gathers the facts, carries the action out and journals its
 * reason. */
#ifndef AAH_LIFECYCLE_H
#define AAH_LIFECYCLE_H

#include "runner/backend/backend.h" /* struct aah_job_status */
#include "runner/config/config.h"
#include "runner/experiment.h"      /* struct trial_rec */
#include "runner/store/outcome.h"   /* struct outcome */

enum lifecycle_kind {
	LIFECYCLE_WAIT,     /* nothing to do now: the job goes on (a pool trial is told its
			     * share), or a resumed trial stays as the journal has it */
	LIFECYCLE_CANCEL,   /* over trial.timeout: cancel the job; its end is then decided
			     * again as AAH_JOB_TIMEOUT, with reason as the job's reason */
	LIFECYCLE_SETTLE,   /* trial_finished with state and reason; the tuner learns it */
	LIFECYCLE_RETRY,    /* settle it as failed (when a job ended), then trial_retry as
			     * attempt, charged to trial.retries */
	LIFECYCLE_REQUEUE,  /* a trial stopped on purpose: trial_retry as the same attempt */
	LIFECYCLE_RESIZE,   /* its ranks stopped to be resized: requeued as the same attempt,
			     * relaunched on its share with --resume (once maxExecDuration
			     * is up it settles as canceled instead) */
	LIFECYCLE_RELAUNCH, /* the cluster took a node away: requeued as the same attempt,
			     * relaunched from its checkpoint; not charged */
};

/* The device pool as the ledger and the trial directory tell it; read by
 * the caller once the job ended, and only in a pool. */
struct lifecycle_pool {
	int in_pool;              /* pool.devices > 0 */
	int result_visible;       /* its result.json can be seen (the directory listed afresh) */
	int told_other;           /* its world_size says another size than it runs on */
	unsigned running_on;      /* the devices the ledger says it runs on */
};

struct lifecycle_in {
	const struct aah_config *cfg;
	const struct trial_rec *trial;      /* as journaled */
	const struct aah_job_status *job;   /* its job, as polled; NULL: it has none to poll
					     * (the runner resumes, or a queued trial at the
					     * end of the budget) and the journal alone decides */
	const struct outcome *outcome;      /* read once the job ended (outcome_read with
					     * TRIAL_UNKNOWN); NULL while it runs */
	const char *trial_dir;              /* named in a reason */
	struct lifecycle_pool pool;
	double now;                         /* Unix time of the poll */
	int stopping;                       /* a stop was requested */
	int timeup;                         /* maxExecDuration was reached */
};

struct lifecycle_action {
	enum lifecycle_kind kind;
	enum trial_state state;   /* SETTLE, RETRY: the state trial_finished journals */
	unsigned attempt;         /* RETRY, REQUEUE, RESIZE, RELAUNCH: the attempt it runs as next */
	unsigned relaunch;        /* RELAUNCH: the relaunch of its attempt it is, 1-based: the
				   * trial_retry's "relaunch" (journal.h, trial_rec.relaunches) */
	int keep_place;           /* RESIZE: every rank of the launch exited, so the next goes
				   * on in its place; any other launch gets a place of its own
				   * (runner/store/expdir.h), fenced from one cut off */
	char reason[320];         /* why, for the journal; "" for a trial that ended well */
};

/* A trial in a pool whose ranks all stopped at a step boundary to be
 * resized exits with POOLTRIAL_EXIT_RESIZE; a job disrupted by its cluster
 * (aah_job_status.disrupted) is relaunched at most LIFECYCLE_RELAUNCH_MAX
 * times in one attempt (the trial's record counts them: relaunches), then
 * fails as any other. Its reason starts with LIFECYCLE_RELAUNCH_WHY. */
#define LIFECYCLE_RELAUNCH_MAX 10
#define LIFECYCLE_RELAUNCH_WHY JOURNAL_RELAUNCH_WHY
/* The reason a trial still queued when maxExecDuration is up settles with. */
#define LIFECYCLE_QUEUED_AT_BUDGET \
	"experiment budget (maxExecDuration) reached while it waited to run"

/* What becomes of in->trial. */
void lifecycle_decide(const struct lifecycle_in *in, struct lifecycle_action *act);

/* A job in this state has ended (its outcome is to be read). */
int lifecycle_job_ended(enum aah_job_state s);

/* "wait", "cancel", "settle", ...: for tests and messages. */
const char *lifecycle_kind_name(enum lifecycle_kind k);

#endif
