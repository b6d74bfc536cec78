/* lifecycle.c: the one rule of lifecycle.h, what becomes of a trial. */
#include "runner/lifecycle.h"
#include "runner/pool/pooltrial.h" /* POOLTRIAL_EXIT_RESIZE */

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void act_set(struct lifecycle_action *act, enum lifecycle_kind kind, enum trial_state state,
		    unsigned attempt, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void act_set(struct lifecycle_action *act, enum lifecycle_kind kind, enum trial_state state,
		    unsigned attempt, const char *fmt, ...)
{
	va_list ap;
	act->kind = kind;
	act->state = state;
	act->attempt = attempt;
	act->relaunch = 0;
	act->keep_place = 0;
	va_start(ap, fmt);
	vsnprintf(act->reason, sizeof(act->reason), fmt, ap);
	va_end(ap);
}

int lifecycle_job_ended(enum aah_job_state s)
{
	return s != AAH_JOB_RUNNING && s != AAH_JOB_PENDING;
}

/* No job to poll: the journal alone decides. Once maxExecDuration is up a
 * trial still queued (waiting for its share of the device pool, or
 * requeued to be resized, relaunched or retried) will not run any more
 * (the scheduler fills no slot then): it settles as canceled, as a running
 * one does, and the experiment can end. A runner resumes: a trial stopped
 * on purpose goes back in the queue as the same attempt; one killed
 * between a failure and its retry is retried. */
static void journal_alone(const struct lifecycle_in *in, struct lifecycle_action *act)
{
	const struct trial_rec *t = in->trial;
	const char *why = t->reason ? t->reason : "";
	if (t->state == TRIAL_QUEUED && in->timeup)
		act_set(act, LIFECYCLE_SETTLE, TRIAL_CANCELED, t->attempt, "%s",
			LIFECYCLE_QUEUED_AT_BUDGET);
	else if (t->state == TRIAL_CANCELED && !strcmp(why, "stopped"))
		act_set(act, LIFECYCLE_REQUEUE, t->state, t->attempt, "%s", why);
	else if (t->state == TRIAL_FAILED && t->attempt <= (unsigned)in->cfg->trial.retries)
		act_set(act, LIFECYCLE_RETRY, t->state, t->attempt + 1, "%s", why);
	else
		act_set(act, LIFECYCLE_WAIT, t->state, t->attempt, "%s", "");
}

/* A trial whose ranks all stopped to be resized (exit 85). A job that
 * ended while no runner watched (its status unknowable) is presumed
 * resized when it left no result and had been told another size: its
 * checkpoint decides where it goes on. */
static int resized(const struct lifecycle_in *in)
{
	const struct aah_job_status *st = in->job;
	if (!in->pool.in_pool)
		return 0;
	if (st->state == AAH_JOB_FAILED && st->exit_code == POOLTRIAL_EXIT_RESIZE)
		return 1;
	return st->state == AAH_JOB_LOST && !in->pool.result_visible && in->pool.told_other;
}

/* A job the cluster failed by taking one of its nodes away, not yet
 * relaunched LIFECYCLE_RELAUNCH_MAX times in this attempt, and no stop
 * or end of the budget under way. */
static int relaunchable(const struct lifecycle_in *in)
{
	const struct aah_job_status *st = in->job;
	if (!st->disrupted || st->state != AAH_JOB_FAILED || in->stopping || in->timeup)
		return 0;
	return in->trial->relaunches < LIFECYCLE_RELAUNCH_MAX;
}

/* How an ended job settles, as trial_finished records it. The result on
 * disk decides when the exit status is unknowable (lost), and always wins
 * over a cancel or a timeout that came after it: the trial finished,
 * whatever became of its process afterwards. */
static void settled(const struct lifecycle_in *in, struct lifecycle_action *act)
{
	const struct aah_job_status *st = in->job;
	const struct outcome *out = in->outcome;
	int have = out ? out->have_result : 0;
	enum trial_state status = have > 0 ? out->result.status : TRIAL_UNKNOWN;
	int ok_result = have > 0 && (status == TRIAL_SUCCEEDED || status == TRIAL_EARLY_STOPPED);
	int result_decides = st->state == AAH_JOB_LOST || st->state == AAH_JOB_CANCELED ||
			     st->state == AAH_JOB_TIMEOUT;
	int ok_exit = st->state == AAH_JOB_SUCCEEDED || (result_decides && ok_result);
	enum lifecycle_kind settle = LIFECYCLE_SETTLE;
	unsigned attempt = in->trial->attempt;

	if (ok_exit && ok_result) {
		act_set(act, settle, status, attempt, "%s", "");
		return;
	}
	if (st->state == AAH_JOB_CANCELED) {
		act_set(act, settle, TRIAL_CANCELED, attempt, "%s",
			in->stopping ? "stopped" : st->reason[0] ? st->reason : "canceled");
		return;
	}
	/* A failure: retried while retries are left and the budget runs. */
	if (attempt <= (unsigned)in->cfg->trial.retries && !in->timeup) {
		settle = LIFECYCLE_RETRY;
		attempt++;
	}
	if (st->state == AAH_JOB_TIMEOUT)
		act_set(act, settle, TRIAL_FAILED, attempt, "timed out: %s", st->reason);
	else if (st->state == AAH_JOB_FAILED || st->state == AAH_JOB_LOST)
		act_set(act, settle, TRIAL_FAILED, attempt, "%s",
			st->reason[0] ? st->reason : "the job failed");
	else if (have <= 0)
		act_set(act, settle, TRIAL_FAILED, attempt, "no valid result.json in %s",
			in->trial_dir ? in->trial_dir : "its trial directory");
	else if (status == TRIAL_UNKNOWN)
		act_set(act, settle, TRIAL_FAILED, attempt, "%s", "result.json has no known status");
	else   /* with its reason when it gives one (a trainer's error, NNI's bad record) */
		act_set(act, settle, TRIAL_FAILED, attempt, "result.json says status '%s'%s%s",
			expdir_state_name(status), out->result.stop_reason[0] ? ": " : "",
			out->result.stop_reason);
}

/* A trial resized once maxExecDuration is up: no queued trial runs again
 * then, so it is not requeued but settles as one running at that moment
 * does, canceled by the budget (the scheduler's cancel_running): its
 * result wins if it wrote one, a stop makes it "stopped" (requeued on
 * resume), and its checkpoint stays. */
static void budget_spent_resizing(const struct lifecycle_in *in, struct lifecycle_action *act)
{
	struct aah_job_status st = *in->job;
	struct lifecycle_in canceled = *in;
	st.state = AAH_JOB_CANCELED;
	snprintf(st.reason, sizeof(st.reason),
		 "experiment budget (maxExecDuration) reached while it was being resized "
		 "(it ran on %u devices)", in->pool.running_on);
	canceled.job = &st;
	settled(&canceled, act);
}

void lifecycle_decide(const struct lifecycle_in *in, struct lifecycle_action *act)
{
	const struct aah_job_status *st = in->job;
	const struct trial_rec *t = in->trial;
	if (!st) {
		journal_alone(in, act);
		return;
	}
	if (!lifecycle_job_ended(st->state)) {
		double limit = in->cfg->trial.timeout;
		if (limit > 0 && in->now - t->submitted > limit)
			act_set(act, LIFECYCLE_CANCEL, t->state, t->attempt,
				"over the trial timeout of %.0fs", limit);
		else
			act_set(act, LIFECYCLE_WAIT, t->state, t->attempt, "%s", "");
		return;
	}
	if (resized(in) && in->timeup)
		budget_spent_resizing(in, act);
	else if (resized(in)) {
		act_set(act, LIFECYCLE_RESIZE, t->state, t->attempt,
			"resized at a step boundary (it ran on %u devices)", in->pool.running_on);
		act->keep_place = st->state == AAH_JOB_FAILED;   /* not one presumed resized */
	} else if (relaunchable(in)) {
		act_set(act, LIFECYCLE_RELAUNCH, t->state, t->attempt, LIFECYCLE_RELAUNCH_WHY "%s",
			st->reason);
		act->relaunch = t->relaunches + 1;
	} else
		settled(in, act);
}

const char *lifecycle_kind_name(enum lifecycle_kind k)
{
	static const char *const names[] = {
		[LIFECYCLE_WAIT] = "wait",         [LIFECYCLE_CANCEL] = "cancel",
		[LIFECYCLE_SETTLE] = "settle",     [LIFECYCLE_RETRY] = "retry",
		[LIFECYCLE_REQUEUE] = "requeue",   [LIFECYCLE_RESIZE] = "resize",
		[LIFECYCLE_RELAUNCH] = "relaunch",
	};
	return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}
