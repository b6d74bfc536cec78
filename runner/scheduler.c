/* scheduler.c: runs an experiment and carries out what lifecycle.h decides
 * of each trial; its launches into free slots are scheduler_launch.c's.
 * Everything is journaled first, so a runner killed at any instant resumes
 * from the journal. */
#include "runner/scheduler.h"
#include "fileio.h"                /* FILEIO_NOSYNC */
#include "runner/backend/backend.h"
#include "runner/lifecycle.h"     /* lifecycle_decide: what becomes of a trial */
#include "runner/scheduler_int.h" /* struct sched, sched_fill_slots */
#include "runner/scheduler_pool.h" /* scheduler_pool_tell, _facts, _leave */
#include "runner/scheduler_progress.h" /* scheduler_progress_line */
#include "runner/scheduler_tuner.h" /* the master tuner: observe */
#include "runner/store/outcome.h" /* outcome_read: the figures of a settled trial */
#include "runner/store/expdir.h"  /* expdir_journal_sync */
#include "strbuf.h"
#include "util.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double sched_elapsed(const struct sched *s)
{
	return s->e->run_seconds + (util_now() - s->e->session_start);
}

/* The fields every trial event starts with. */
cJSON *sched_trial_fields(unsigned seq, unsigned attempt)
{
	char id[EXPDIR_TRIAL_ID_SIZE];
	cJSON *f = cJSON_CreateObject();
	cJSON_AddStringToObject(f, "trial", expdir_trial_id(seq, id));
	cJSON_AddNumberToObject(f, "trial_seq", seq);
	cJSON_AddNumberToObject(f, "attempt", attempt);
	return f;
}

/* ---- carrying out lifecycle.h's actions --------------------------------- */

/* What lifecycle_decide makes of trial t and its job st (NULL: resumed
 * from the journal). The facts only files tell are read here, from the
 * place of its last launch: once the job ended, the pool's view of it and
 * its outcome, into *out (released by the caller). */
static void decide(struct sched *s, const struct trial_rec *t, const struct aah_job_status *st,
		   double now, struct outcome *out, struct lifecycle_action *act)
{
	char *dir = expdir_place_dir(s->e->dir, t->seq, t->place);
	struct lifecycle_in in = { .cfg = s->cfg, .trial = t, .job = st, .trial_dir = dir,
				   .now = now, .stopping = s->stop, .timeup = s->timeup };
	int ended = st && lifecycle_job_ended(st->state);
	/* Its logs first (reaped once, here, into the trial's trial.log): an
	 * NNI trial's records may be in them. Then what it reported, into
	 * aah's files in its place, before they are read. */
	if (ended) {
		char *trial_dir = expdir_trial_dir(s->e->dir, t->seq);
		backend_reap(&s->bctx, st->job, trial_dir);
		free(trial_dir);
	}
	if (st)
		(void)nnitrial_sync(&s->nni, s->cfg, s->e->dir, t->seq, t->place, ended);
	if (ended) {
		scheduler_pool_facts(s->cfg, s->e, t->seq, dir, &in.pool);
		outcome_release(out);
		/* a file it cannot read is said, and counts as none */
		(void)outcome_read(s->e->dir, t->seq, t->place, TRIAL_UNKNOWN, 0, out);
		in.outcome = out;
	}
	lifecycle_decide(&in, act);
	free(dir);
}

static void free_slot(struct sched *s, unsigned seq)
{
	for (unsigned i = 0; i < s->nslots; i++)
		if (s->slots[i].trial == seq)
			s->slots[i].trial = 0;
}

static void progress(struct sched *s, const struct trial_rec *t)
{
	if (!s->opts->progress)
		return;
	s->last_progress = util_monotonic();
	scheduler_progress_line(s->cfg, s->e, t, sched_elapsed(s));
}

/* Run trial seq again as act->attempt; why the last attempt ended goes
 * with it, for `status`, and which relaunch of its attempt it is. */
static int record_retry(struct sched *s, unsigned seq, const struct lifecycle_action *act)
{
	cJSON *f = sched_trial_fields(seq, act->attempt);
	cJSON_AddStringToObject(f, "reason", act->reason[0] ? act->reason : "failed");
	if (act->relaunch)
		cJSON_AddNumberToObject(f, "relaunch", act->relaunch);
	if (act->keep_place)
		cJSON_AddBoolToObject(f, "keep_place", 1);
	return experiment_record(s->e, EXPDIR_EV_TRIAL_RETRY, f);
}

/* Journal trial seq's end as act says: st is its job (NULL: it had none
 * running), out its outcome (NULL: none read). */
static int record_finished(struct sched *s, unsigned seq, const struct lifecycle_action *act,
			   const struct aah_job_status *st, const struct outcome *out)
{
	const struct trial_rec *t = experiment_trial(s->e, seq);
	cJSON *f = sched_trial_fields(seq, t->attempt ? t->attempt : 1);
	cJSON_AddStringToObject(f, "state", expdir_state_name(act->state));
	if (st)
		cJSON_AddNumberToObject(f, "exit_code", st->exit_code);
	cJSON_AddStringToObject(f, "reason", act->reason);
	if (out && !isnan(out->best_acc))
		cJSON_AddNumberToObject(f, "best_val_acc", out->best_acc);
	if (out)
		cJSON_AddNumberToObject(f, "flops", out->flops);
	s->unsynced |= s->round;
	return experiment_record_flags(s->e, EXPDIR_EV_TRIAL_FINISHED, f, s->round ? FILEIO_NOSYNC : 0);
}

/* Trial seq's end is journaled: it leaves the pool, counts, and is shown. */
static struct trial_rec *settled(struct sched *s, unsigned seq)
{
	scheduler_pool_leave(s->cfg, s->e, seq);
	s->settled_this_session++;
	struct trial_rec *t = experiment_trial(s->e, seq);
	progress(s, t);
	return t;
}

/* Carry out act for trial seq, whose job st ended. */
static int carry_out(struct sched *s, unsigned seq, const struct aah_job_status *st,
		     const struct outcome *out, const struct lifecycle_action *act)
{
	double floor = out && out->have_result > 0 ? out->result.result_floor : 0;
	if (floor > s->result_floor)   /* what a launch needs to a result */
		s->result_floor = floor;
	if (act->kind == LIFECYCLE_RESIZE || act->kind == LIFECYCLE_RELAUNCH) {
		/* the same attempt again: fill_slots relaunches it with --resume
		 * (its logs were reaped when this was decided) */
		free_slot(s, seq);
		return record_retry(s, seq, act) < 0 ? -1 : 1;
	}
	if (record_finished(s, seq, act, st, out) < 0)
		return -1;
	free_slot(s, seq);
	struct trial_rec *t = settled(s, seq);
	if (act->kind == LIFECYCLE_RETRY)
		return record_retry(s, seq, act);
	if (!s->round)
		return scheduler_tuner_observe(&s->tuner, s->e->dir, t);
	if (s->nended == s->aended) {
		s->aended = s->aended ? 2 * s->aended : 64;
		s->ended = xrealloc(s->ended, s->aended * sizeof(*s->ended));
	}
	s->ended[s->nended++] = seq;
	return 0;
}

/* Trial seq's job st ended: decide and carry it out. */
int sched_settle(struct sched *s, unsigned seq, const struct aah_job_status *st)
{
	struct outcome out = { .epochs = NULL };
	struct lifecycle_action act;
	decide(s, experiment_trial(s->e, seq), st, util_now(), &out, &act);
	int r = carry_out(s, seq, st, &out, &act);
	outcome_release(&out);
	return r;
}


/* ---- the loop --------------------------------------------------------------- */

static void cancel_running(struct sched *s, const char *why)
{
	for (size_t i = 0; i < s->e->ntrials; i++) {
		struct trial_rec *t = &s->e->trials[i];
		if (t->state != TRIAL_RUNNING || !t->job)
			continue;
		backend_cancel(&s->bctx, t->job);
		struct aah_job_status st = { .job = t->job };
		backend_poll(&s->bctx, &st);
		if (st.state == AAH_JOB_RUNNING || st.state == AAH_JOB_PENDING)
			continue;
		st.state = AAH_JOB_CANCELED;
		snprintf(st.reason, sizeof(st.reason), "%s", why);
		char *job = xstrdup(t->job);
		st.job = job;
		sched_settle(s, t->seq, &st);
		free(job);
	}
}

/* maxExecDuration is up: what becomes of a trial still queued is
 * lifecycle_decide's (it settles as canceled, and leaves the pool). */
static int cancel_queued(struct sched *s)
{
	for (size_t i = 0; i < s->e->ntrials; i++) {
		struct trial_rec *t = &s->e->trials[i];
		if (t->state != TRIAL_QUEUED)
			continue;
		unsigned seq = t->seq;
		struct lifecycle_action act;
		decide(s, t, NULL, util_now(), NULL, &act);
		if (act.kind != LIFECYCLE_SETTLE)
			continue;
		if (record_finished(s, seq, &act, NULL, NULL) < 0 ||
		    scheduler_tuner_observe(&s->tuner, s->e->dir, settled(s, seq)) < 0)
			return -1;
	}
	return 0;
}

/* What the backend said of a job still on its way goes into the journal
 * (trial_note) once: `status` lists it under the trial. */
static int record_note(struct sched *s, const struct trial_rec *t, const struct aah_job_status *st)
{
	if (!st->note[0])
		return 0;
	if (t->notes.n) {
		const char *last = strchr(t->notes.v[t->notes.n - 1], ':');
		if (last && !strcmp(last + 2, st->note))
			return 0;
	}
	cJSON *f = sched_trial_fields(t->seq, t->attempt ? t->attempt : 1);
	cJSON_AddStringToObject(f, "reason", st->note);
	return experiment_record(s->e, EXPDIR_EV_TRIAL_NOTE, f);
}

static int poll_running(struct sched *s)
{
	double now = util_now();
	for (size_t i = 0; i < s->e->ntrials; i++) {
		struct trial_rec *t = &s->e->trials[i];
		if (t->state != TRIAL_RUNNING || !t->job)
			continue;
		char *job = xstrdup(t->job);
		struct aah_job_status st = { .job = job };
		backend_poll(&s->bctx, &st);
		if (t->seq > s->nwaiting) {
			size_t n = s->e->ntrials > 2 * s->nwaiting ? s->e->ntrials : 2 * s->nwaiting;
			s->waiting = xrealloc(s->waiting, n);
			memset(s->waiting + s->nwaiting, PROGRESS_WAITING_UNKNOWN, n - s->nwaiting);
			s->nwaiting = n;
		}
		scheduler_progress_waiting(s->e, t->seq, &st, &s->waiting[t->seq - 1]);
		if (record_note(s, t, &st) < 0) {
			free(job);
			return -1;
		}
		t = &s->e->trials[i];   /* recording may grow the table */
		struct outcome out = { .epochs = NULL };
		struct lifecycle_action act;
		decide(s, t, &st, now, &out, &act);
		if (act.kind == LIFECYCLE_CANCEL) {   /* then it ends as timed out */
			backend_cancel(&s->bctx, job);
			backend_poll(&s->bctx, &st);
			st.state = AAH_JOB_TIMEOUT;
			xstrlcpy(st.reason, act.reason, sizeof(st.reason));
			decide(s, t, &st, now, &out, &act);
		}
		int r = 0;
		if (act.kind == LIFECYCLE_WAIT) {
			scheduler_pool_tell(s->cfg, s->e, t->seq);
		} else {
			double t0 = util_monotonic();
			r = carry_out(s, t->seq, &st, &out, &act);
			s->settling += util_monotonic() - t0;
		}
		outcome_release(&out);
		free(job);
		if (r < 0)
			return -1;
		t = NULL; /* the table may have grown */
	}
	return 0;
}

/* One poll round. The ends it journals go unsynced, one fdatasync makes
 * them durable together, and only then does the tuner learn them: a power
 * cut before that sync is one before the round (resume settles those
 * trials again from their files), and a wave of a thousand ends costs one
 * sync, not a thousand (docs/scale.md). */
static int poll_round(struct sched *s)
{
	s->round = 1;
	int r = poll_running(s);
	s->round = 0;
	if (s->unsynced && expdir_journal_sync(s->e->dir) < 0)
		r = -1;
	s->unsynced = 0;
	for (size_t i = 0; i < s->nended && r == 0; i++)
		r = scheduler_tuner_observe(&s->tuner, s->e->dir, experiment_trial(s->e, s->ended[i]));
	s->nended = 0;
	return r;
}

static int all_settled(const struct sched *s)
{
	for (size_t i = 0; i < s->e->ntrials; i++)
		if (!expdir_state_final(s->e->trials[i].state))
			return 0;
	return 1;
}

double sched_round_due(const struct sched_rounds *r, int soon)
{
	double due = soon ? r->not_before : r->last + r->interval;
	return due > r->not_before ? due : r->not_before;
}

static void wait_signal(struct sched *s, double seconds)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);   /* the master tuner's thread has a proposal */
	struct timespec ts = { (time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9) };
	int sig = sigtimedwait(&set, NULL, &ts);
	if (sig == SIGTERM || sig == SIGINT)
		s->stop++;
	else if (sig == SIGCHLD)
		s->child_ended = 1;
}

/* A stop: every running trial's job is canceled, then waited for until its
 * backend says it ended (on Slurm: squeue shows it no more, not even
 * COMPLETING), so that nothing of the experiment runs on once the runner
 * is gone; poll_running settles each as stopped meanwhile. 1 while jobs
 * are left to wait for. A second stop ends the wait: what is left stays
 * running in the journal, and resume follows it. */
static int stop_waits(struct sched *s)
{
	if (!s->stop_canceled) {
		cancel_running(s, "stopped");
		s->stop_canceled = 1;
	}
	struct strbuf jobs = STRBUF_INIT;
	unsigned left = 0;
	for (size_t i = 0; i < s->e->ntrials; i++) {
		const struct trial_rec *t = &s->e->trials[i];
		char id[EXPDIR_TRIAL_ID_SIZE];
		if (t->state == TRIAL_RUNNING && t->job && left++ < 8)
			strbuf_addf(&jobs, "%s%s (job %s)", left > 1 ? ", " : "",
				    expdir_trial_id(t->seq, id), t->job);
	}
	if (left && s->stop == 1 && !s->stop_said) {
		fprintf(stderr, "aah-runner: stopping: waiting for %u canceled job%s to end: %s%s; "
				"stop again to leave %s to resume\n", left, left > 1 ? "s" : "", jobs.buf,
			left > 8 ? ", ..." : "", left > 1 ? "them" : "it");
		s->stop_said = 1;
	}
	strbuf_release(&jobs);
	return left && s->stop == 1;
}

/* Requeue trials a previous runner stopped on purpose, and slot the
 * running ones again. */
static int resume_state(struct sched *s)
{
	for (size_t i = 0; i < s->e->ntrials; i++) {
		struct trial_rec *t = &s->e->trials[i];
		if (t->seq > s->created)
			s->created = t->seq;
		/* Stopped on purpose, or killed between a failure and its retry. */
		struct lifecycle_action act;
		decide(s, t, NULL, util_now(), NULL, &act);
		if (act.kind == LIFECYCLE_REQUEUE || act.kind == LIFECYCLE_RETRY) {
			unsigned seq = t->seq;
			if (record_retry(s, seq, &act) < 0)
				return -1;
			t = experiment_trial(s->e, seq);
		}
		if (t->state == TRIAL_RUNNING && t->slot >= 0 && (unsigned)t->slot < s->nslots &&
		    !s->slots[t->slot].trial) {
			s->slots[t->slot].trial = t->seq;
		} else if (t->state == TRIAL_RUNNING) {
			for (unsigned k = 0; k < s->nslots; k++) {
				if (!s->slots[k].trial) {
					s->slots[k].trial = t->seq;
					break;
				}
			}
		}
	}
	return 0;
}

/* Proposals the master tuner keeps ready past the last trial created: one
 * per 8 slots, at most 64. A proposal made ahead does not know the results
 * that settle after it, so the search runs that much further behind its
 * trials: at most an eighth more than the trials in flight. Below 8 slots
 * none: each trial is proposed when its slot frees, from every result
 * settled by then, as NNI's tuners are asked, and the slot waits for it
 * (scheduler_tuner_propose), as for a search in the main loop. */
static unsigned proposals_ahead(unsigned nslots)
{
	unsigned n = nslots / 8;
	return n > 64 ? 64 : n;
}

int scheduler_run(const struct aah_config *cfg, struct experiment *e,
		  const struct scheduler_opts *opts)
{
	struct sched s = { .cfg = cfg, .e = e, .opts = opts };
	const struct aah_backend *b = backend_find(cfg->platform);
	int r = -1;
	sigset_t set, old;

	if (!b)
		return error("no backend '%s' in this build", cfg->platform);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, &old);

	s.workdir = e->workdir;
	s.last_progress = util_monotonic();
	s.nslots = (unsigned)cfg->trial_concurrency;
	s.slots = xcalloc(s.nslots, sizeof(*s.slots));
	for (unsigned i = 0; i < s.nslots && cfg->trial.gpu_num > 0; i++) {
		struct strbuf sb = STRBUF_INIT;
		for (long g = 0; g < cfg->trial.gpu_num; g++)
			strbuf_addf(&sb, "%s%ld", g ? "," : "", (long)i * cfg->trial.gpu_num + g);
		s.slots[i].gpus = strbuf_detach(&sb, NULL);
	}
	if (backend_init(&s.bctx, b, cfg, e->dir, e->id) < 0)
		goto out;
	cJSON *f = cJSON_CreateObject();
	cJSON_AddNumberToObject(f, "pid", getpid());
	cJSON_AddBoolToObject(f, "resume", e->ntrials > 0);
	if (experiment_record(e, EXPDIR_EV_RUNNER_STARTED, f) < 0 || resume_state(&s) < 0 ||
	    scheduler_tuner_start(&s.tuner, cfg, e->dir, s.created, proposals_ahead(s.nslots)) < 0)
		goto out_backend;

	double interval = opts->poll_interval > 0 ? opts->poll_interval : 0.05;
	/* Only a due round polls: the loop also wakes for proposals (SIGUSR1) */
	struct sched_rounds rounds = { interval, -interval, 0 };
	unsigned long journaled = e->next_event;   /* the journal's length at the last wait */
	int busy = 0;                              /* it grew before that wait */
	while (!e->done) {
		const char *lost = scheduler_tuner_failed(&s.tuner);
		if (lost) {
			error("the tuner cannot learn the experiment's history: %s", lost);
			goto out_backend;
		}
		double t0 = util_monotonic();
		if (t0 >= sched_round_due(&rounds, s.child_ended || busy)) {
			s.settling = 0;
			s.child_ended = 0;
			rounds.last = t0;
			if (poll_round(&s) < 0)
				goto out_backend;
			double t1 = util_monotonic();
			rounds.not_before = t1 + 3 * (t1 - t0 - s.settling);
		}
		if (cfg->max_exec_duration > 0 && sched_elapsed(&s) >= cfg->max_exec_duration && !s.timeup) {
			s.timeup = 1;
			cancel_running(&s, "experiment budget (maxExecDuration) reached");
			if (cancel_queued(&s) < 0)
				goto out_backend;
		}
		if (s.stop && stop_waits(&s)) {
			wait_signal(&s, interval);
			continue;
		}
		if (s.stop) {
			cJSON *g = cJSON_CreateObject();
			cJSON_AddStringToObject(g, "reason", "stop requested");
			r = experiment_record(e, EXPDIR_EV_RUNNER_STOPPED, g);
			goto out_backend;
		}
		if (sched_fill_slots(&s) < 0)
			goto out_backend;
		int running = 0;
		for (unsigned i = 0; i < s.nslots; i++)
			running |= s.slots[i].trial != 0;
		if (!running && all_settled(&s) &&
		    (s.timeup || s.created >= (unsigned)cfg->max_trial_num)) {
			cJSON *g = cJSON_CreateObject();
			cJSON_AddStringToObject(g, "reason", s.timeup ? "max_duration" : "max_trials");
			if (experiment_record(e, EXPDIR_EV_EXPERIMENT_DONE, g) < 0)
				goto out_backend;
			break;
		}
		if (opts->progress && util_monotonic() - s.last_progress >=
					      (opts->progress_interval > 0 ? opts->progress_interval : 30))
			progress(&s, NULL);
		busy = e->next_event != journaled;
		journaled = e->next_event;
		double until = sched_round_due(&rounds, s.child_ended || busy) - util_monotonic();
		wait_signal(&s, until > 0 ? until : 0);
	}
	r = 0;
out_backend:
	backend_fini(&s.bctx);
out:
	scheduler_tuner_release(&s.tuner);
	nnitrial_watch_release(&s.nni);
	for (unsigned i = 0; i < s.nslots; i++)
		free(s.slots[i].gpus);
	free(s.slots);
	free(s.waiting);
	free(s.ended);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return r;
}

