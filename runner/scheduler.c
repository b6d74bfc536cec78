/* scheduler.c: the trial lifecycle. Everything it decides is journaled
 * first, so a runner killed at any instant resumes from the journal. */
#include "runner/scheduler.h"
#include "fileio.h"
#include "jsonfile.h"
#include "runner/backend/backend.h"
#include "runner/launch.h"
#include "runner/store/outcome.h" /* outcome_read: the figures of a settled trial */
#include "runner/pool/pooltrial.h" /* pooltrial_join, pooltrial_leave: the device pool */
#include "strbuf.h"
#include "util.h"

#include <errno.h>
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
	struct tuner *tuner;      /* master placement; NULL otherwise */
	struct slot *slots;
	unsigned nslots;
	unsigned created;         /* trials created so far (highest seq) */
	int stop;                 /* a stop was requested */
	int timeup;               /* maxExecDuration reached */
	double last_progress;     /* util_monotonic() of the last progress line */
	const char *workdir;      /* the experiments' parent, absolute (the experiment's) */
	unsigned settled_this_session;
	/* Master placement: the next new trial's proposal, made while every
	 * slot trains, so that a slot that frees up is refilled at once. */
	unsigned ahead_seq;       /* 0 = none */
	cJSON *ahead_arch, *ahead_params;
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

static void fmt_duration(char *buf, size_t n, double sec)
{
	long t = (long)(sec + 0.5);
	if (t >= 3600)
		snprintf(buf, n, "%ldh%02ldm%02lds", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
}

/* The trial a proposal was morphed from (arch.json meta.parent_trial), as
 * " from 000003", or "" when it has none (the start network, other tuners). */
static void parent_note(const struct sched *s, unsigned seq, char *buf, size_t n)
{
	char *p = expdir_trial_file(s->e->dir, seq, EXPDIR_ARCH);
	cJSON *arch = NULL;
	buf[0] = '\0';
	int was_quiet = util_set_quiet(1);
	if (fileio_exists(p) && jsonfile_read(p, &arch) == 0) {
		const cJSON *meta = cJSON_GetObjectItemCaseSensitive(arch, "meta");
		const cJSON *pt = cJSON_GetObjectItemCaseSensitive(meta, "parent_trial");
		char id[EXPDIR_TRIAL_ID_SIZE];
		if (cJSON_IsNumber(pt) && pt->valuedouble >= 1 && pt->valuedouble <= EXPDIR_TRIAL_MAX)
			snprintf(buf, n, " from %s", expdir_trial_id((unsigned)pt->valuedouble, id));
	}
	util_set_quiet(was_quiet);
	cJSON_Delete(arch);
	free(p);
}

/* One progress line: after trial t settled, or (t NULL) a periodic one. */
static void progress(struct sched *s, const struct trial_rec *t)
{
	if (!s->opts->progress)
		return;
	s->last_progress = util_monotonic();
	unsigned done = 0, running = 0;
	for (size_t i = 0; i < s->e->ntrials; i++) {
		if (expdir_state_final(s->e->trials[i].state))
			done++;
		else if (s->e->trials[i].state == TRIAL_RUNNING)
			running++;
	}
	char el[32], budget[32] = "unlimited";
	fmt_duration(el, sizeof(el), elapsed(s));
	if (s->cfg->max_exec_duration > 0)
		fmt_duration(budget, sizeof(budget), s->cfg->max_exec_duration);
	double best = experiment_best_accuracy(s->e);
	char acc[32] = "-", bestacc[32] = "-";
	if (t && !isnan(t->best_acc))
		snprintf(acc, sizeof(acc), "%.4f", t->best_acc);
	if (!isnan(best))
		snprintf(bestacc, sizeof(bestacc), "%.4f", best);
	char id[EXPDIR_TRIAL_ID_SIZE], parent[32];
	if (t) {
		parent_note(s, t->seq, parent, sizeof(parent));
		printf("trial %s %-13s acc %s%s", expdir_trial_id(t->seq, id),
		       expdir_state_name(t->state), acc, parent);
	} else
		printf("%-31s", "progress");
	printf(" | done %u/%ld, running %u | best %s | %s of %s\n", done, s->cfg->max_trial_num,
	       running, bestacc, el, budget);
	fflush(stdout);
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

/* ---- settling a finished job --------------------------------------------- */

/* How a job ended, as the journal's trial_finished records it. */
struct settled {
	enum trial_state state;
	double best_acc;
	double flops;
	char reason[320];
};

static void read_result(const struct sched *s, unsigned seq, const struct aah_job_status *st,
			struct settled *o)
{
	char *dir = expdir_trial_dir(s->e->dir, seq);
	/* The figures are the trial's outcome (runner/store/outcome.h), the one rule
	 * `status`, `report` and the tuner read too. */
	struct outcome out;
	/* a file it cannot read is said, and counts as none */
	(void)outcome_read(s->e->dir, seq, TRIAL_UNKNOWN, 0, &out);
	const struct expdir_result res = out.result;
	int have = out.have_result;
	int ok_result = have > 0 &&
			(res.status == TRIAL_SUCCEEDED || res.status == TRIAL_EARLY_STOPPED);
	/* The result on disk decides when the exit status is unknowable (lost),
	 * and always wins over a cancel or a timeout that came after it: the
	 * trial finished, whatever became of its process afterwards. */
	int result_decides = st->state == AAH_JOB_LOST || st->state == AAH_JOB_CANCELED ||
			     st->state == AAH_JOB_TIMEOUT;
	int ok_exit = st->state == AAH_JOB_SUCCEEDED || (result_decides && ok_result);
	o->best_acc = out.best_acc;
	o->flops = out.flops;
	outcome_release(&out);
	if (ok_exit && ok_result) {
		o->state = res.status;
		o->reason[0] = '\0';
	} else if (st->state == AAH_JOB_CANCELED) {
		o->state = TRIAL_CANCELED;
		snprintf(o->reason, sizeof(o->reason), "%s", st->reason[0] ? st->reason : "canceled");
	} else {
		o->state = TRIAL_FAILED;
		if (st->state == AAH_JOB_TIMEOUT)
			snprintf(o->reason, sizeof(o->reason), "timed out: %s", st->reason);
		else if (st->state == AAH_JOB_FAILED || st->state == AAH_JOB_LOST)
			snprintf(o->reason, sizeof(o->reason), "%s",
				 st->reason[0] ? st->reason : "the job failed");
		else if (have <= 0)
			snprintf(o->reason, sizeof(o->reason), "no valid result.json in %s", dir);
		else if (res.status == TRIAL_UNKNOWN)
			snprintf(o->reason, sizeof(o->reason), "result.json has no known status");
		else
			snprintf(o->reason, sizeof(o->reason), "result.json says status '%s'",
				 expdir_state_name(res.status));
	}
	free(dir);
}

static void free_slot(struct sched *s, unsigned seq)
{
	for (unsigned i = 0; i < s->nslots; i++)
		if (s->slots[i].trial == seq)
			s->slots[i].trial = 0;
}

static int observe(struct sched *s, unsigned seq)
{
	if (!s->tuner)
		return 0;
	struct trial_rec *t = experiment_trial(s->e, seq);
	int learnable = outcome_learnable(t->state, t->best_acc);   /* as journaled */
	char *dir = expdir_trial_dir(s->e->dir, seq);
	char *pa = expdir_file(dir, EXPDIR_ARCH), *pp = expdir_file(dir, EXPDIR_PARAMS);
	cJSON *arch = NULL, *params = NULL;
	int was_quiet = util_set_quiet(1);
	if (fileio_exists(pa))
		jsonfile_read(pa, &arch);
	if (fileio_exists(pp))
		jsonfile_read(pp, &params);
	util_set_quiet(was_quiet);
	struct tuner_observation obs = {
		.trial_seq = seq,
		.arch = arch,
		.params = params,
		.state = learnable ? TUNER_OBS_DONE : TUNER_OBS_FAILED,
		.metric = learnable ? t->best_acc : 0,
	};
	int r = tuner_observe(s->tuner, &obs);
	cJSON_Delete(arch);
	cJSON_Delete(params);
	free(pa);
	free(pp);
	free(dir);
	return r;
}

/* Run trial seq again as attempt; why the last attempt ended goes with it,
 * for `status`. */
static int record_retry(struct sched *s, unsigned seq, unsigned attempt, const char *why)
{
	cJSON *f = trial_fields(seq, attempt);
	cJSON_AddStringToObject(f, "reason", why && *why ? why : "failed");
	return experiment_record(s->e, EXPDIR_EV_TRIAL_RETRY, f);
}

static int settle(struct sched *s, unsigned seq, const struct aah_job_status *st)
{
	struct trial_rec *t = experiment_trial(s->e, seq);
	struct settled o;
	read_result(s, seq, st, &o);
	if (s->stop && o.state == TRIAL_CANCELED)
		snprintf(o.reason, sizeof(o.reason), "stopped");
	cJSON *f = trial_fields(seq, t->attempt);
	cJSON_AddStringToObject(f, "state", expdir_state_name(o.state));
	cJSON_AddNumberToObject(f, "exit_code", st->exit_code);
	cJSON_AddStringToObject(f, "reason", o.reason);
	if (!isnan(o.best_acc))
		cJSON_AddNumberToObject(f, "best_val_acc", o.best_acc);
	cJSON_AddNumberToObject(f, "flops", o.flops);
	if (experiment_record(s->e, EXPDIR_EV_TRIAL_FINISHED, f) < 0)
		return -1;
	char *dir = expdir_trial_dir(s->e->dir, seq);
	backend_reap(&s->bctx, st->job, dir);
	free(dir);
	free_slot(s, seq);
	if (pooltrial_leave(s->cfg, s->workdir, s->e->id, seq) < 0)
		warning("trial %u keeps its place in the device pool: %s", seq, util_last_error());
	s->settled_this_session++;
	progress(s, t);
	if (o.state == TRIAL_FAILED && t->attempt <= (unsigned)s->cfg->trial.retries && !s->timeup)
		return record_retry(s, seq, t->attempt + 1, o.reason);
	return observe(s, seq);
}

/* ---- submitting ----------------------------------------------------------- */

struct submit_arg {
	struct sched *s;
	unsigned seq;
	unsigned slot;
};

/* ---- the device pool (runner/pool/pooltrial.h) ---------------------------------- */

static int in_pool(const struct sched *s)
{
	return s->cfg->pool.devices > 0;
}

/* Before a launch: the trial joins the pool (once) and runs on what the
 * ledger gives it (its share once nobody else holds those devices), told
 * through <trial_dir>/world_size. 1: no devices for it now, it waits. */
static int pool_size(struct sched *s, unsigned seq, unsigned slot, const char *dir,
		     unsigned *nodes)
{
	unsigned share, got;
	char *ids = NULL;
	if (!in_pool(s))
		return 0;
	if (pooltrial_join(s->cfg, s->workdir, s->e->id, seq, &share) < 0 ||
	    pooltrial_claim(s->cfg, s->workdir, s->e->id, seq, &got, &ids) < 0)
		return -1;
	if (!got)
		return 1;
	*nodes = got;
	/* GPU trials run on the very devices the ledger granted, one rank on
	 * each: they become the slot's CUDA_VISIBLE_DEVICES (launch.c) */
	if (s->cfg->trial.gpu_num > 0 && ids) {
		free(s->slots[slot].gpus);
		s->slots[slot].gpus = ids;
		ids = NULL;
	}
	free(ids);
	return pooltrial_write_world(dir, got);
}

/* Every poll of a running trial: a new share reaches it as world_size. */
static void pool_tell(struct sched *s, const struct trial_rec *t)
{
	if (!in_pool(s))
		return;
	char *dir = expdir_trial_dir(s->e->dir, t->seq);
	if (pooltrial_tell(s->cfg, s->workdir, s->e->id, t->seq, dir) < 0)
		warning("trial %u is not told its share: %s", t->seq, util_last_error());
	free(dir);
}

/* A job that ended to be run again as the same attempt (not charged to
 * trial.retries): its logs reaped, its slot freed, the trial queued with
 * why; fill_slots relaunches it with --resume. 1, or -1. */
static int requeue_same_attempt(struct sched *s, unsigned seq, const struct aah_job_status *st,
				const char *why)
{
	struct trial_rec *t = experiment_trial(s->e, seq);
	char *dir = expdir_trial_dir(s->e->dir, seq);
	backend_reap(&s->bctx, st->job, dir);
	free(dir);
	free_slot(s, seq);
	return record_retry(s, seq, t->attempt, why) < 0 ? -1 : 1;
}

/* A trial whose ranks all stopped to be resized goes back in the queue, the
 * same attempt: fill_slots relaunches it on its share with --resume. A job
 * that ended while no runner watched (its status unknowable) is presumed
 * resized when it left no result and had been told another size: its
 * checkpoint decides where it goes on. */
static int pool_resized(struct sched *s, unsigned seq, const struct aah_job_status *st)
{
	if (!in_pool(s))
		return 0;
	char *dir = expdir_trial_dir(s->e->dir, seq);
	int resized = st->state == AAH_JOB_FAILED && st->exit_code == POOLTRIAL_EXIT_RESIZE;
	if (st->state == AAH_JOB_LOST && !expdir_result_visible(s->e->dir, seq))
		resized = pooltrial_told_other(s->cfg, s->workdir, s->e->id, seq, dir);
	free(dir);
	if (!resized)
		return 0;
	unsigned on = pooltrial_running_on(s->cfg, s->workdir, s->e->id, seq);
	char *why = xstrfmt("resized at a step boundary (it ran on %u devices)", on);
	int r = requeue_same_attempt(s, seq, st, why);
	free(why);
	return r;
}

/* A job the cluster failed by taking one of its nodes away (st->disrupted:
 * a pod preempted or evicted, and the ranks left without it) goes back in
 * the queue as the same attempt, like a resize: fill_slots relaunches it
 * from its checkpoint (--resume), and trial.retries is not charged. A node
 * taken RELAUNCH_MAX times in one attempt makes it a failure as any other. */
#define RELAUNCH_MAX 10
#define RELAUNCH_WHY "relaunched from its checkpoint: "

static int relaunch_disrupted(struct sched *s, unsigned seq, const struct aah_job_status *st)
{
	if (!st->disrupted || st->state != AAH_JOB_FAILED || s->stop || s->timeup)
		return 0;
	struct trial_rec *t = experiment_trial(s->e, seq);
	char *mine = xstrfmt("attempt %u: " RELAUNCH_WHY, t->attempt);
	unsigned n = 0;
	for (size_t i = 0; i < t->retries.n; i++)
		n += !strncmp(t->retries.v[i], mine, strlen(mine));
	free(mine);
	if (n >= RELAUNCH_MAX)
		return 0;
	char *why = xstrfmt(RELAUNCH_WHY "%s", st->reason);
	int r = requeue_same_attempt(s, seq, st, why);
	free(why);
	return r;
}

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

static int propose(struct sched *s, unsigned seq, cJSON **params_out)
{
	char *dir = expdir_trial_dir(s->e->dir, seq);
	char *pa = expdir_file(dir, EXPDIR_ARCH), *pp = expdir_file(dir, EXPDIR_PARAMS);
	cJSON *arch = NULL, *params = NULL;
	int r = 0;
	*params_out = NULL;
	if (fileio_exists(pp) || fileio_exists(pa)) {
		/* A retried or resumed trial trains what it was given before. */
		if (fileio_exists(pp))
			r = jsonfile_read(pp, &params);
	} else if (s->tuner) {
		if (seq == s->ahead_seq) {   /* made while the slots were busy */
			arch = s->ahead_arch;
			params = s->ahead_params;
			s->ahead_arch = s->ahead_params = NULL;
			s->ahead_seq = 0;
		} else {
			r = tuner_propose(s->tuner, seq, &arch, &params);
		}
		if (r == 0)
			r = tuner_write_proposal(s->tuner, dir, arch, params);
	}
	if (r == 0 && params) {
		cJSON *p = cJSON_DetachItemFromObjectCaseSensitive(params, "parameters");
		*params_out = p;
	}
	cJSON_Delete(arch);
	cJSON_Delete(params);
	free(pa);
	free(pp);
	free(dir);
	return r;
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
		r = pool_size(s, seq, slot, dir, &nodes);   /* 1: no devices for it now */
	char **hosts = xcalloc(nodes, sizeof(*hosts));
	if (r == 0 && master)
		r = propose(s, seq, &params);
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
			.elastic = in_pool(s) && (s->bctx.backend->caps & AAH_CAP_ELASTIC),
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
	if (!s->tuner || s->ahead_seq || s->stop || s->timeup ||
	    s->created >= (unsigned)s->cfg->max_trial_num)
		return;
	for (unsigned i = 0; i < s->nslots; i++)
		if (!s->slots[i].trial)
			return;
	for (size_t i = 0; i < s->e->ntrials; i++)
		if (s->e->trials[i].state == TRIAL_QUEUED)
			return;   /* the next slot goes to a queued trial */
	unsigned seq = s->created + 1;
	int was_quiet = util_set_quiet(1);   /* said again, loudly, if it fails when the trial is made */
	if (tuner_propose(s->tuner, seq, &s->ahead_arch, &s->ahead_params) == 0)
		s->ahead_seq = seq;
	util_set_quiet(was_quiet);
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

/* A job its backend holds back with a reason (a cluster queue has not
 * admitted it yet) is told to `status` through <trial dir>/waiting, which
 * goes once the job runs or ends. */
static void note_waiting(const struct sched *s, unsigned seq, const struct aah_job_status *st)
{
	int held = st->state == AAH_JOB_PENDING && st->reason[0];
	if (expdir_waiting_set(s->e->dir, seq, held ? st->reason : NULL) < 0)
		warning("trial %u: status cannot tell that it waits: %s", seq, util_last_error());
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
		note_waiting(s, t->seq, &st);
		if (record_note(s, t, &st) < 0) {
			free(job);
			return -1;
		}
		t = &s->e->trials[i];   /* recording may grow the table */
		if (st.state == AAH_JOB_RUNNING || st.state == AAH_JOB_PENDING) {
			double limit = s->cfg->trial.timeout;
			if (limit > 0 && now - t->submitted > limit) {
				backend_cancel(&s->bctx, job);
				backend_poll(&s->bctx, &st);
				st.state = AAH_JOB_TIMEOUT;
				snprintf(st.reason, sizeof(st.reason), "over the trial timeout of %.0fs",
					 limit);
			} else {
				pool_tell(s, t);
				free(job);
				continue;
			}
		}
		int r = pool_resized(s, t->seq, &st);
		if (r == 0)
			r = relaunch_disrupted(s, t->seq, &st);
		if (r == 0)
			r = settle(s, t->seq, &st);
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
		int stopped = t->state == TRIAL_CANCELED && t->reason && !strcmp(t->reason, "stopped");
		int retry_due = t->state == TRIAL_FAILED &&
				t->attempt <= (unsigned)s->cfg->trial.retries;
		if (stopped || retry_due) {
			unsigned seq = t->seq;
			if (record_retry(s, seq, t->attempt + (retry_due ? 1 : 0), t->reason) < 0)
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

static int start_tuner(struct sched *s)
{
	if (strcmp(s->cfg->tuner.placement, "master"))
		return 0;
	struct tuner_config tc;
	cJSON *ca, *space;
	if (scheduler_tuner_config(s->cfg, s->e->dir, &tc, &ca, &space) < 0)
		return -1;
	char *initial = scheduler_initial_arch(s->cfg, s->e->dir);
	tc.initial_arch = initial;
	int r = tuner_create(&s->tuner, &tc);
	free(initial);
	if (r == 0)
		r = tuner_load_history(s->tuner, s->e->dir);
	cJSON_Delete(ca);
	cJSON_Delete(space);
	return r;
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
	    start_tuner(&s) < 0)
		goto out_backend;

	double interval = opts->poll_interval > 0 ? opts->poll_interval : 0.05;
	while (!e->done) {
		if (poll_running(&s) < 0)
			goto out_backend;
		if (cfg->max_exec_duration > 0 && elapsed(&s) >= cfg->max_exec_duration && !s.timeup) {
			s.timeup = 1;
			cancel_running(&s, "experiment budget (maxExecDuration) reached");
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
	tuner_free(s.tuner);
	cJSON_Delete(s.ahead_arch);
	cJSON_Delete(s.ahead_params);
	for (unsigned i = 0; i < s.nslots; i++)
		free(s.slots[i].gpus);
	free(s.slots);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return r;
}
