/* Unit tests for runner/store/journal.c, the one reducer of the journal
 * (the runner, `status`, the report and the tuner all read trials by it):
 * each event's effect on the experiment and its trials. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "runner/store/journal.h"
#include "util.h" /* util_last_error */

static struct expdir_event ev(enum expdir_event_kind kind, long seq, double ts, unsigned trial)
{
	return (struct expdir_event){ .kind = kind, .seq = seq, .ts = ts, .trial_seq = trial,
				      .slot = -1, .exit_code = -1, .best_val_acc = NAN };
}

Test(journal, a_trial_through_retry_and_resubmission)
{
	struct journal j = { 0 };
	struct expdir_event e = ev(EXPDIR_EV_EXPERIMENT_CREATED, 0, 100, 0);
	e.exp_name = "exp";
	journal_apply(&j, &e);
	cr_assert_str_eq(j.name, "exp");
	cr_assert_eq(j.created, 100);
	journal_apply(&j, &(struct expdir_event){ .kind = EXPDIR_EV_TRIAL_CREATED, .seq = 1, .ts = 101,
						    .trial_seq = 2, .slot = -1 });
	cr_assert_eq(j.ntrials, 2, "the table grows to the trial named");
	cr_assert_eq(j.trials[0].attempt, 0, "trial 1 was not named");
	struct trial_rec *t = &j.trials[1];
	cr_assert_eq(t->state, TRIAL_QUEUED);
	cr_assert_eq(t->attempt, 1);

	e = ev(EXPDIR_EV_TRIAL_SUBMITTED, 2, 110, 2);
	e.slot = 3;
	e.job = "job-a";
	e.arch = (struct expdir_arch_flops){ 4e9, 8e9, 1000 };
	journal_apply(&j, &e);
	t = &j.trials[1];
	cr_assert_eq(t->arch.classes, 1000);
	cr_assert_eq(t->arch.fwd, 4e9);
	cr_assert_eq(t->state, TRIAL_RUNNING);
	cr_assert_eq(t->slot, 3);
	cr_assert_str_eq(t->job, "job-a");
	cr_assert_eq(t->started, 110);

	e = ev(EXPDIR_EV_TRIAL_FINISHED, 3, 120, 2);
	e.state = TRIAL_FAILED;
	e.reason = "oom";
	journal_apply(&j, &e);
	cr_assert_eq(t->state, TRIAL_FAILED);
	cr_assert_eq(t->finished, 120);
	cr_assert_str_eq(t->reason, "oom");

	e = ev(EXPDIR_EV_TRIAL_RETRY, 4, 121, 2);
	e.attempt = 2;
	e.reason = "oom";
	journal_apply(&j, &e);
	cr_assert_eq(t->state, TRIAL_QUEUED);
	cr_assert_eq(t->slot, -1, "a requeued trial holds no slot");
	cr_assert_eq(t->last_slot, 3, "the report's timeline keeps the last slot");
	cr_assert_null(t->job);
	cr_assert_eq(t->retries.n, 1);
	cr_assert_str_eq(t->retries.v[0], "attempt 1: oom");

	e = ev(EXPDIR_EV_TRIAL_SUBMITTED, 5, 130, 2);
	e.slot = 1;
	journal_apply(&j, &e);
	cr_assert_eq(t->attempt, 2);
	cr_assert_eq(t->started, 110, "started is the first submission");
	cr_assert_eq(t->submitted, 130);
	cr_assert_eq(t->finished, 0, "submitted again: not settled");
	cr_assert_eq(t->arch.bwd, 8e9, "a retry's submission, which names no network, keeps it");
	cr_assert_eq(t->arch.classes, 1000);

	e = ev(EXPDIR_EV_TRIAL_FINISHED, 6, 140, 2);
	e.state = TRIAL_SUCCEEDED;
	e.best_val_acc = 0.9;
	journal_apply(&j, &e);
	cr_assert_eq(t->state, TRIAL_SUCCEEDED);
	cr_assert_float_eq(t->best_acc, 0.9, 1e-12);
	cr_assert_null(t->reason, "a reason of an earlier attempt is not kept");

	e = ev(EXPDIR_EV_EXPERIMENT_DONE, 7, 150, 0);
	e.reason = "maxTrialNum";
	journal_apply(&j, &e);
	cr_assert(j.done);
	cr_assert_str_eq(j.done_reason, "maxTrialNum");
	cr_assert_eq(j.next_event, 8);
	cr_assert_eq(j.last_event_ts, 150);
	journal_release(&j);
	cr_assert_eq(j.ntrials, 0);
}

Test(journal, runner_sessions_add_up)
{
	struct journal j = { 0 };
	struct expdir_event e = ev(EXPDIR_EV_RUNNER_STARTED, 0, 100, 0);
	journal_apply(&j, &e);
	e = ev(EXPDIR_EV_RUNNER_STOPPED, 1, 160, 0);
	journal_apply(&j, &e);
	e = ev(EXPDIR_EV_RUNNER_STARTED, 2, 1000, 0);
	journal_apply(&j, &e);
	cr_assert_eq(j.run_seconds, 60, "the first session ran 60 s");
	cr_assert_eq(j.session_start, 1000);
	e = ev(EXPDIR_EV_UNKNOWN, -1, 1001, 0);
	journal_apply(&j, &e);
	cr_assert_eq(j.next_event, 4, "an unknown event without seq still counts");
	journal_release(&j);
}

/* A relaunch is a field of the trial's record, counted per attempt from
 * trial_retry's "relaunch": a retry of another kind (a resize, a failure)
 * leaves it, a new attempt starts it over. */
Test(journal, relaunches_are_counted_per_attempt_from_the_field)
{
	struct journal j = { 0 };
	struct expdir_event e = ev(EXPDIR_EV_TRIAL_CREATED, 0, 1, 1);
	e.attempt = 1;
	journal_apply(&j, &e);
	struct trial_rec *t = &j.trials[0];
	cr_assert_eq(t->relaunches, 0);
	for (unsigned k = 1; k <= 3; k++) {
		e = ev(EXPDIR_EV_TRIAL_SUBMITTED, k * 2 - 1, 2, 1);
		e.attempt = 1;
		journal_apply(&j, &e);
		e = ev(EXPDIR_EV_TRIAL_RETRY, k * 2, 3, 1);
		e.attempt = 1;
		e.relaunch = k;
		e.reason = "relaunched from its checkpoint: pod gone";
		journal_apply(&j, &e);
		cr_assert_eq(t->relaunches, k);
	}
	e = ev(EXPDIR_EV_TRIAL_RETRY, 7, 4, 1);   /* a resize: not a relaunch */
	e.attempt = 1;
	e.reason = "resized at a step boundary (it ran on 4 devices)";
	journal_apply(&j, &e);
	cr_assert_eq(t->relaunches, 3);
	e = ev(EXPDIR_EV_TRIAL_RETRY, 8, 5, 1);   /* prose alone counts for nothing now */
	e.attempt = 1;
	e.relaunch = 3;
	e.reason = "relaunched from its checkpoint: told twice";
	journal_apply(&j, &e);
	cr_assert_eq(t->relaunches, 3, "the field says which relaunch it is");
	e = ev(EXPDIR_EV_TRIAL_FINISHED, 9, 6, 1);
	e.attempt = 1;
	e.state = TRIAL_FAILED;
	journal_apply(&j, &e);
	cr_assert_eq(t->relaunches, 3, "a settled attempt keeps its count");
	e = ev(EXPDIR_EV_TRIAL_RETRY, 10, 7, 1);
	e.attempt = 2;
	e.reason = "a rank exited with status 1";
	journal_apply(&j, &e);
	cr_assert_eq(t->attempt, 2);
	cr_assert_eq(t->relaunches, 0, "attempt 2 starts its own count");
	journal_release(&j);
}

struct counts {
	struct journal j;
	unsigned attempt[32], relaunches[32];
	size_t n;
};

static int count_visit(const struct expdir_event *e, void *arg)
{
	struct counts *c = arg;
	journal_apply(&c->j, e);
	if (c->n < 32 && c->j.ntrials) {
		c->attempt[c->n] = c->j.trials[0].attempt;
		c->relaunches[c->n] = c->j.trials[0].relaunches;
	}
	c->n++;
	return 0;
}

/* A journal written before the "relaunch" field (tests/fixtures/journal/
 * before-relaunch-field, as the runner wrote them: a relaunch was a
 * trial_retry of the running attempt whose reason began "relaunched from
 * its checkpoint: ") still replays, and counts its relaunches by that
 * reason: a resize is none, a failure's retry whose backend said the same
 * words is none, and a new attempt starts over. A resumed runner so keeps
 * LIFECYCLE_RELAUNCH_MAX across the upgrade. */
Test(journal, a_journal_from_before_the_field_replays_and_counts_relaunches)
{
	struct counts c = { .n = 0 };
	cr_assert_eq(expdir_replay("tests/fixtures/journal/before-relaunch-field", count_visit, &c),
		     0, "%s", util_last_error());
	cr_assert_eq(c.n, 15);
	/* after each line: trial 1's attempt and relaunches */
	static const unsigned attempt[] = { 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2 };
	static const unsigned relaunches[] = { 0, 0, 0, 0, 1, 1, 2, 2, 2, 2, 2, 0, 0, 1, 1 };
	for (size_t i = 2; i < c.n; i++) {
		cr_expect_eq(c.attempt[i], attempt[i], "line %zu: attempt %u", i, c.attempt[i]);
		cr_expect_eq(c.relaunches[i], relaunches[i], "line %zu: relaunches %u", i,
			     c.relaunches[i]);
	}
	cr_assert_eq(c.j.trials[0].state, TRIAL_RUNNING);
	cr_assert_eq(c.j.trials[0].retries.n, 5, "status still lists every requeue");
	journal_release(&c.j);
}
