/* journal.c: the one reducer of an experiment's journal (journal.h). */
#include "runner/store/journal.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct trial_rec *journal_trial(struct journal *j, unsigned seq)
{
	if (!seq)
		BUG("trial sequence numbers start at 1");
	if (seq > j->ntrials) {
		j->trials = xrealloc(j->trials, seq * sizeof(*j->trials));
		for (size_t i = j->ntrials; i < seq; i++) {
			memset(&j->trials[i], 0, sizeof(j->trials[i]));
			j->trials[i].seq = (unsigned)i + 1;
			j->trials[i].slot = -1;
			j->trials[i].last_slot = -1;
			j->trials[i].best_acc = NAN;
			j->trials[i].exit_code = -1;
		}
		j->ntrials = seq;
	}
	return &j->trials[seq - 1];
}

static void replace_str(char **dst, const char *value)
{
	free(*dst);
	*dst = value ? xstrdup(value) : NULL;
}

void journal_apply(struct journal *j, const struct expdir_event *ev)
{
	j->next_event = (ev->seq >= 0 ? (unsigned long)ev->seq : j->next_event) + 1;
	struct trial_rec *t = NULL;
	if (ev->trial_seq) {      /* the trial_* events */
		t = journal_trial(j, ev->trial_seq);
		unsigned attempt = ev->attempt ? ev->attempt : t->attempt ? t->attempt : 1;
		if (attempt != t->attempt)
			t->relaunches = t->launches = 0;
		t->attempt = attempt;
	}
	switch (ev->kind) {
	case EXPDIR_EV_EXPERIMENT_CREATED:
		replace_str(&j->name, ev->exp_name);
		j->created = ev->ts;
		break;
	case EXPDIR_EV_RUNNER_STARTED:
		if (j->session_start > 0 && j->last_event_ts > j->session_start)
			j->run_seconds += j->last_event_ts - j->session_start;
		j->session_start = ev->ts;
		break;
	case EXPDIR_EV_EXPERIMENT_DONE:
		j->done = 1;
		replace_str(&j->done_reason, ev->reason);
		break;
	case EXPDIR_EV_TRIAL_CREATED:
		t->state = TRIAL_QUEUED;
		break;
	case EXPDIR_EV_TRIAL_SUBMITTED:
		t->state = TRIAL_RUNNING;
		replace_str(&t->job, ev->job);
		replace_str(&t->gpus, ev->gpus);
		replace_str(&t->place, ev->place && *ev->place ? ev->place : NULL);
		t->launches++;
		t->keep_place = 0;
		t->slot = t->last_slot = ev->slot;
		t->submitted = ev->ts;
		if (!t->started || ev->ts < t->started)
			t->started = ev->ts;
		t->finished = 0;
		if (ev->arch.classes)   /* a retry's submission does not name it again */
			t->arch = ev->arch;
		break;
	case EXPDIR_EV_TRIAL_FINISHED:
		t->state = ev->state;
		t->exit_code = ev->exit_code;
		t->best_acc = ev->best_val_acc;
		t->flops = ev->flops;
		replace_str(&t->reason, ev->reason);
		t->finished = ev->ts;
		break;
	case EXPDIR_EV_TRIAL_RETRY:
		t->keep_place = ev->keep_place;
		if (ev->relaunch)
			t->relaunches = ev->relaunch;
		else if (t->state != TRIAL_FAILED && ev->reason &&
			 !strncmp(ev->reason, JOURNAL_RELAUNCH_WHY, strlen(JOURNAL_RELAUNCH_WHY)))
			t->relaunches++;   /* a journal from before the "relaunch" field */
		if (ev->reason)   /* the attempt that ended: this one when requeued as it was */
			strvec_pushf(&t->retries, "attempt %u: %s",
				     t->state == TRIAL_FAILED && t->attempt > 1 ? t->attempt - 1 : t->attempt,
				     ev->reason);
		t->state = TRIAL_QUEUED;
		replace_str(&t->job, NULL);
		t->slot = -1;
		break;
	case EXPDIR_EV_TRIAL_NOTE:
		if (ev->reason)
			strvec_pushf(&t->notes, "attempt %u: %s", t->attempt, ev->reason);
		break;
	case EXPDIR_EV_RUNNER_STOPPED:
	case EXPDIR_EV_UNKNOWN:
		break;
	}
	if (ev->ts > j->last_event_ts)
		j->last_event_ts = ev->ts;
}

static int visit(const struct expdir_event *ev, void *arg)
{
	journal_apply(arg, ev);
	return 0;
}

int journal_replay(struct journal *j, const char *expdir)
{
	memset(j, 0, sizeof(*j));
	if (expdir_replay(expdir, visit, j) < 0) {
		journal_release(j);
		return -1;
	}
	return 0;
}

void journal_release(struct journal *j)
{
	for (size_t i = 0; i < j->ntrials; i++) {
		free(j->trials[i].job);
		free(j->trials[i].place);
		free(j->trials[i].gpus);
		free(j->trials[i].reason);
		strvec_clear(&j->trials[i].retries);
		strvec_clear(&j->trials[i].notes);
	}
	free(j->trials);
	free(j->name);
	free(j->done_reason);
	memset(j, 0, sizeof(*j));
}
