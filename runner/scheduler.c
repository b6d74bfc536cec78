/* scheduler.c: runs an experiment and carries out what lifecycle.h decides
 * of each trial. Everything is journaled first, so a runner killed at any
 * instant resumes from the journal. */
#include "runner/scheduler.h"
#include "fileio.h"
#include "runner/backend/backend.h"
#include "runner/launch.h"
#include "runner/lifecycle.h"     /* lifecycle_decide: what becomes of a trial */
#include "runner/nni/nnitrial.h"  /* NNI's trial side: parameter.cfg, its records read back */
#include "runner/scheduler_pool.h" /* scheduler_pool_claim, _tell, _facts, _leave */
#include "runner/scheduler_progress.h" /* scheduler_progress_line */
#include "runner/scheduler_tuner.h" /* the master tuner: propose, observe */
#include "runner/store/outcome.h" /* outcome_read: the figures of a settled trial */
#include "strbuf.h"
#include "util.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct slot {
	unsigned trial;           /* 0 = free */
	char *gpus;               /* devices of this slot (in a pool: those the ledger granted), or NULL */
};

struct sched {
	const struct aah_config *cfg;
	struct experiment *e;
	const struct scheduler_opts *opts;
	struct aah_backend_ctx bctx;
	struct scheduler_tuner tuner; /* master placement: its tuner */
	struct nnitrial_watch nni;    /* what each NNI trial has reported so far */
	struct slot *slots;
	unsigned nslots;
	unsigned created;         /* trials created so far (highest seq) */
	int stop;                 /* a stop was requested */
	int timeup;               /* maxExecDuration reached */
	double last_progress;     /* util_monotonic() of the last progress line */
	const char *workdir;      /* the experiments' parent, absolute (the experiment's) */
	unsigned settled_this_session;
};

static double elapsed(const struct sched *s)
{
	return s->e->run_seconds + (util_now() - s->e->session_start);
}

/* trial.fitExecDuration: the Unix time maxExecDuration ends (0: none). */
static double exec_deadline(const struct sched *s)
{
	double budget = s->cfg->max_exec_duration;
	if (!s->cfg->trial.fit_exec_duration || budget <= 0)
		return 0;
	return util_now() + budget - elapsed(s);
}

/* The fields every trial event starts with. */
static cJSON *trial_fields(unsigned seq, unsigned attempt)
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
 * from the journal). The facts only files tell are read here: once the job
 * ended, the pool's view of it and its outcome, into *out (released by the
 * caller). */
static void decide(struct sched *s, const struct trial_rec *t, const struct aah_job_status *st,
		   double now, struct outcome *out, struct lifecycle_action *act)
{
	char *dir = expdir_trial_dir(s->e->dir, t->seq);
	struct lifecycle_in in = { .cfg = s->cfg, .trial = t, .job = st, .trial_dir = dir,
				   .now = now, .stopping = s->stop, .timeup = s->timeup };
	int ended = st && lifecycle_job_ended(st->state);
	/* Its logs first (reaped once, here): an NNI trial's records may be in
	 * them. Then what it reported, into aah's files, before they are read. */
	if (ended)
		backend_reap(&s->bctx, st->job, dir);
	if (st)
		(void)nnitrial_sync(&s->nni, s->cfg, s->e->dir, t->seq, ended);
	if (ended) {
		scheduler_pool_facts(s->cfg, s->e, t->seq, dir, &in.pool);
		outcome_release(out);
		/* a file it cannot read is said, and counts as none */
		(void)outcome_read(s->e->dir, t->seq, TRIAL_UNKNOWN, 0, out);
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
	scheduler_progress_line(s->cfg, s->e, t, elapsed(s));
}

/* Run trial seq again as attempt; why the last attempt ended goes with it,
 * for `status`. */
static int record_retry(struct sched *s, unsigned seq, unsigned attempt, const char *why)
{
	cJSON *f = trial_fields(seq, attempt);
	cJSON_AddStringToObject(f, "reason", why && *why ? why : "failed");
	return experiment_record(s->e, EXPDIR_EV_TRIAL_RETRY, f);
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
	struct trial_rec *t = experiment_trial(s->e, seq);
	if (act->kind == LIFECYCLE_RESIZE || act->kind == LIFECYCLE_RELAUNCH) {
		/* the same attempt again: fill_slots relaunches it with --resume
		 * (its logs were reaped when this was decided) */
		free_slot(s, seq);
		return record_retry(s, seq, act->attempt, act->reason) < 0 ? -1 : 1;
	}
	cJSON *f = trial_fields(seq, t->attempt);
	cJSON_AddStringToObject(f, "state", expdir_state_name(act->state));
	cJSON_AddNumberToObject(f, "exit_code", st->exit_code);
	cJSON_AddStringToObject(f, "reason", act->reason);
	if (!isnan(out->best_acc))
		cJSON_AddNumberToObject(f, "best_val_acc", out->best_acc);
	cJSON_AddNumberToObject(f, "flops", out->flops);
	if (experiment_record(s->e, EXPDIR_EV_TRIAL_FINISHED, f) < 0)
		return -1;
	free_slot(s, seq);
	t = settled(s, seq);
	if (act->kind == LIFECYCLE_RETRY)
		return record_retry(s, seq, act->attempt, act->reason);
	return scheduler_tuner_observe(&s->tuner, s->e->dir, t);
}

/* Trial seq's job st ended: decide and carry it out. */
static int settle(struct sched *s, unsigned seq, const struct aah_job_status *st)
{
	struct outcome out = { .epochs = NULL };
	struct lifecycle_action act;
	decide(s, experiment_trial(s->e, seq), st, util_now(), &out, &act);
	int r = carry_out(s, seq, st, &out, &act);
	outcome_release(&out);
	return r;
}

/* ---- submitting ----------------------------------------------------------- */

struct submit_arg {
	struct sched *s;
	unsigned seq;
	unsigned slot;
};

static int on_submitted(struct aah_backend_ctx *ctx, const char *job, void *arg)
{
	(void)ctx;
	struct submit_arg *a = arg;
	struct trial_rec *t = experiment_trial(a->s->e, a->seq);
	cJSON *f = trial_fields(a->seq, t->attempt ? t->attempt : 1);
	cJSON_AddStringToObject(f, "backend", a->s->bctx.backend->name);
	cJSON_AddStringToObject(f, "job", job);
	cJSON_AddNumberToObject(f, "slot", a->slot);
	if (a->s->slots[a->slot].gpus)
		cJSON_AddStringToObject(f, "gpus", a->s->slots[a->slot].gpus);
	return experiment_record(a->s->e, EXPDIR_EV_TRIAL_SUBMITTED, f);
}

static int submit(struct sched *s, unsigned seq, unsigned slot)
{
	struct trial_rec *t = experiment_trial(s->e, seq);
	const struct aah_config *cfg = s->cfg;
	unsigned nodes = (unsigned)cfg->trial.nodes, port = 0;
	char *dir = expdir_trial_dir(s->e->dir, seq);
	cJSON *params = NULL;
	struct aah_launch l;
	int r = fileio_mkdir_p(dir, 0755);
	int master = !strcmp(cfg->tuner.placement, "master");

	if (r == 0)
		r = scheduler_pool_claim(cfg, s->e, seq, dir, &nodes, &s->slots[slot].gpus); /* 1: it waits */
	char **hosts = xcalloc(nodes, sizeof(*hosts));
	if (r == 0 && master)
		r = scheduler_tuner_propose(&s->tuner, s->e->dir, seq, &params);
	/* NNI's trial side: a new run, the proposal as parameter.cfg (placement
	 * trial: `propose --exec` writes it) */
	if (r == 0 && (nnitrial_prepare(dir) < 0 ||
		       (master && nnitrial_write_parameters(dir, seq, params) < 0)))
		r = -1;
	if (r == 0)
		r = backend_place(&s->bctx, seq, t->attempt ? t->attempt : 1, hosts, nodes, &port);
	if (r == 0) {
		struct launch_params lp = {
			.cfg = cfg,
			.expdir = s->e->dir,
			.workdir = s->workdir,
			.experiment_id = s->e->id,
			.trial_seq = seq,
			.attempt = t->attempt ? t->attempt : 1,
			.hosts = (const char *const *)hosts,
			.port = port,
			.gpus = s->slots[slot].gpus,
			.resume = cfg->trial.resume_on_retry && (t->submitted > 0 || t->attempt > 1),
			.nodes = nodes,
			.elastic = cfg->pool.devices > 0 && (s->bctx.backend->caps & AAH_CAP_ELASTIC),
			.mpi_hosts = s->bctx.backend->mpi_hosts,
			.params = params,
			.deadline = exec_deadline(s),
			.propose_runner = master ? NULL : s->opts->runner_exe,
		};
		launch_build(&l, &lp);
		r = launch_write(&l);
		if (r == 0) {
			struct submit_arg a = { s, seq, slot };
			char *job = NULL;
			s->bctx.on_submitted = on_submitted;
			s->bctx.on_submitted_arg = &a;
			s->slots[slot].trial = seq;
			r = backend_submit(&s->bctx, &l, &job);
			if (r < 0)
				s->slots[slot].trial = 0;
			free(job);
		}
		launch_release(&l);
	}
	for (unsigned i = 0; i < nodes; i++)
		free(hosts[i]);
	free(hosts);
	free(dir);
	cJSON_Delete(params);
	return r;
}

static int create_trial(struct sched *s, unsigned seq)
{
	cJSON *f = trial_fields(seq, 1);
	/* trial_submitted, synced, follows and makes this line durable too. */
	return experiment_record_flags(s->e, EXPDIR_EV_TRIAL_CREATED, f, FILEIO_NOSYNC);
}

/* A trial that failed to even start counts as a failed attempt. */
static int submit_failed(struct sched *s, unsigned seq)
{
	struct aah_job_status st = { .job = "", .state = AAH_JOB_FAILED, .exit_code = -1 };
	snprintf(st.reason, sizeof(st.reason), "could not be started: %s", util_last_error());
	return settle(s, seq, &st);
}

static int fill_slots(struct sched *s)
{
	for (unsigned slot = 0; slot < s->nslots; slot++) {
		if (s->slots[slot].trial || s->stop || s->timeup)
			continue;
		unsigned seq = 0;
		for (size_t i = 0; i < s->e->ntrials && !seq; i++)
			if (s->e->trials[i].state == TRIAL_QUEUED)
				seq = s->e->trials[i].seq;
		if (!seq) {
			if (s->created >= (unsigned)s->cfg->max_trial_num)
				return 0;
			seq = ++s->created;
			if (create_trial(s, seq) < 0)
				return -1;
		}
		int r = submit(s, seq, slot);
		if (r > 0)
			return 0;   /* it waits for devices in the pool */
		if (r < 0 && submit_failed(s, seq) < 0)
			return -1;
	}
	return 0;
}

/* Master placement: with every slot busy, propose the next new trial now
 * (trials still training count at their predicted mean, as for any
 * concurrent proposal) instead of when its slot frees up. A failure here
 * is not final: the trial proposes again when it is created. */
static void propose_ahead(struct sched *s)
{
	if (!s->tuner.tuner || s->tuner.ahead_seq || s->stop || s->timeup ||
	    s->created >= (unsigned)s->cfg->max_trial_num)
		return;
	for (unsigned i = 0; i < s->nslots; i++)
		if (!s->slots[i].trial)
			return;
	for (size_t i = 0; i < s->e->ntrials; i++)
		if (s->e->trials[i].state == TRIAL_QUEUED)
			return;   /* the next slot goes to a queued trial */
	scheduler_tuner_propose_ahead(&s->tuner, s->created + 1);
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
		settle(s, t->seq, &st);
		free(job);
	}
}

/* maxExecDuration is up: a trial still queued (one waiting for its share
 * of the device pool, or requeued to be resized, relaunched or retried)
 * will not run any more (fill_slots), so it settles as canceled, as a
 * running one does, and leaves the pool; the experiment can then end. */
static int cancel_queued(struct sched *s, const char *why)
{
	for (size_t i = 0; i < s->e->ntrials; i++) {
		struct trial_rec *t = &s->e->trials[i];
		if (t->state != TRIAL_QUEUED)
			continue;
		unsigned seq = t->seq;
		cJSON *f = trial_fields(seq, t->attempt ? t->attempt : 1);
		cJSON_AddStringToObject(f, "state", expdir_state_name(TRIAL_CANCELED));
		cJSON_AddStringToObject(f, "reason", why);
		if (experiment_record(s->e, EXPDIR_EV_TRIAL_FINISHED, f) < 0)
			return -1;
		t = settled(s, seq);
		if (scheduler_tuner_observe(&s->tuner, s->e->dir, t) < 0)
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
	cJSON *f = trial_fields(t->seq, t->attempt ? t->attempt : 1);
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
		scheduler_progress_waiting(s->e, t->seq, &st);
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
		if (act.kind == LIFECYCLE_WAIT)
			scheduler_pool_tell(s->cfg, s->e, t->seq);
		else
			r = carry_out(s, t->seq, &st, &out, &act);
		outcome_release(&out);
		free(job);
		if (r < 0)
			return -1;
		t = NULL; /* the table may have grown */
	}
	return 0;
}

static int all_settled(const struct sched *s)
{
	for (size_t i = 0; i < s->e->ntrials; i++)
		if (!expdir_state_final(s->e->trials[i].state))
			return 0;
	return 1;
}

static void wait_signal(struct sched *s, double seconds)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	struct timespec ts = { (time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9) };
	int sig = sigtimedwait(&set, NULL, &ts);
	if (sig == SIGTERM || sig == SIGINT)
		s->stop = 1;
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
			if (record_retry(s, seq, act.attempt, act.reason) < 0)
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
	    scheduler_tuner_start(&s.tuner, cfg, e->dir) < 0)
		goto out_backend;

	double interval = opts->poll_interval > 0 ? opts->poll_interval : 0.05;
	while (!e->done) {
		if (poll_running(&s) < 0)
			goto out_backend;
		if (cfg->max_exec_duration > 0 && elapsed(&s) >= cfg->max_exec_duration && !s.timeup) {
			s.timeup = 1;
			cancel_running(&s, "experiment budget (maxExecDuration) reached");
			if (cancel_queued(&s, "experiment budget (maxExecDuration) reached while it "
					      "waited to run") < 0)
				goto out_backend;
		}
		if (s.stop) {
			cancel_running(&s, "stopped");
			cJSON *g = cJSON_CreateObject();
			cJSON_AddStringToObject(g, "reason", "stop requested");
			r = experiment_record(e, EXPDIR_EV_RUNNER_STOPPED, g);
			goto out_backend;
		}
		if (fill_slots(&s) < 0)
			goto out_backend;
		propose_ahead(&s);
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
		wait_signal(&s, interval);
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
	sigprocmask(SIG_SETMASK, &old, NULL);
	return r;
}
