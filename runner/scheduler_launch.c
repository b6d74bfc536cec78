/* scheduler_launch.c: a trial launched into a free slot: its proposal
 * (the master tuner's thread has it ready), its place fenced from the
 * launches before it, its devices from the pool, the launch contract and
 * the backend's submit, journaled as it goes. */
#include "runner/scheduler_int.h" /* struct sched, sched_trial_fields, sched_settle */
#include "runner/launch.h"
#include "runner/nni/nnitrial.h"     /* NNI's trial side: a new run, parameter.cfg */
#include "runner/scheduler_pool.h" /* scheduler_pool_claim */
#include "runner/scheduler_tuner.h" /* the master tuner: propose */
#include "runner/store/expdir.h"  /* expdir_journal_sync */
#include "runner/store/place.h"   /* place_prepare: a launch's own place */
#include "fileio.h"              /* FILEIO_NOSYNC, fileio_sync_fs */
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* trial.fitExecDuration: the Unix time maxExecDuration ends (0: none). */
static double exec_deadline(const struct sched *s)
{
	double budget = s->cfg->max_exec_duration;
	if (!s->cfg->trial.fit_exec_duration || budget <= 0)
		return 0;
	return util_now() + budget - sched_elapsed(s);
}

/* Under trial.fitExecDuration: 1 when the time left is less than the
 * trials of this session said a launch takes to a result (the largest
 * result_floor_seconds of their result.json: a search's networks grow, and
 * the least is its start network's, short of what its children need):
 * one started now could only be canceled at the end of the budget, so
 * none is. A launch this skips wrongly would have trained an eighth of an
 * epoch. */
static int too_late(struct sched *s)
{
	double deadline = exec_deadline(s);
	double left = deadline - util_now();
	if (deadline <= 0 || s->result_floor <= 0 || left >= s->result_floor)
		return 0;
	if (!s->late_said) {
		s->late_said = 1;
		fprintf(stderr, "aah-runner: %.1f s of maxExecDuration left, less than the %.1f s "
			"a launch needs to a result (the largest result_floor_seconds so far): no "
			"further trial starts\n", left, s->result_floor);
	}
	return 1;
}

struct submit_arg {
	struct sched *s;
	unsigned seq;
	unsigned slot;
	const char *place;
	struct scheduler_tuner_took took;   /* the master's proposal (< 0: none) */
};

static int on_submitted(struct aah_backend_ctx *ctx, const char *job, void *arg)
{
	(void)ctx;
	struct submit_arg *a = arg;
	struct trial_rec *t = experiment_trial(a->s->e, a->seq);
	cJSON *f = sched_trial_fields(a->seq, t->attempt ? t->attempt : 1);
	cJSON_AddStringToObject(f, "backend", a->s->bctx.backend->name);
	cJSON_AddStringToObject(f, "job", job);
	cJSON_AddNumberToObject(f, "slot", a->slot);
	if (*a->place)
		cJSON_AddStringToObject(f, "place", a->place);
	if (a->s->slots[a->slot].gpus)
		cJSON_AddStringToObject(f, "gpus", a->s->slots[a->slot].gpus);
	if (a->took.seconds >= 0)
		cJSON_AddNumberToObject(f, "propose_s", round(a->took.seconds * 1e4) / 1e4);
	if (a->took.learnt >= 0)
		cJSON_AddNumberToObject(f, "propose_learnt", a->took.learnt);
	if (a->took.arch.classes) {   /* the report's epoch charge without arch.json */
		cJSON_AddNumberToObject(f, "arch_flops_fwd", a->took.arch.fwd);
		cJSON_AddNumberToObject(f, "arch_flops_bwd", a->took.arch.bwd);
		cJSON_AddNumberToObject(f, "arch_classes", a->took.arch.classes);
	}
	if (a->s->wait_seq == a->seq) {   /* a free slot waited for its proposal */
		cJSON_AddNumberToObject(f, "proposal_wait_s",
					round((util_now() - a->s->wait_since) * 1e4) / 1e4);
		a->s->wait_seq = 0;
	}
	/* In a batch (defer_release) the batch's one fdatasync follows. */
	return experiment_record_flags(a->s->e, EXPDIR_EV_TRIAL_SUBMITTED, f,
				       a->s->bctx.defer_release ? FILEIO_NOSYNC : 0);
}

/* The place trial t's next launch writes into (runner/store/expdir.h): a
 * place of its own, fenced from any launch before it that may still run
 * cut off from us, unless its last launch was resized (every rank exited). */
static void next_place(const struct trial_rec *t, char place[EXPDIR_PLACE_SIZE])
{
	if (t->keep_place)
		xstrlcpy(place, t->place ? t->place : "", EXPDIR_PLACE_SIZE);
	else
		expdir_place_name(t->attempt ? t->attempt : 1, t->launches, place);
}

/* A trial a fill round has made ready for its slot: its proposal and NNI
 * run written (unsynced: the round's one sync makes them durable), its
 * place made, its devices claimed; placed and submitted after the sync. */
struct ready {
	unsigned seq, slot;
	char place[EXPDIR_PLACE_SIZE];
	struct scheduler_tuner_took took;   /* the master's proposal (< 0: none) */
	cJSON *params;                      /* the proposal's parameters; NULL: none */
	int master;                         /* proposed by the master */
	int resume;                         /* it resumes from the last checkpoint */
	unsigned nodes;
};

static void ready_release(struct ready *rd)
{
	cJSON_Delete(rd->params);
	rd->params = NULL;
}

/* Make trial seq ready for slot: 0, 1 when it waits (for its proposal, or
 * for devices in the pool), -1 when it could not be started. */
static int prepare(struct sched *s, unsigned seq, unsigned slot, struct ready *rd)
{
	const struct aah_config *cfg = s->cfg;
	struct trial_rec *t = experiment_trial(s->e, seq);
	*rd = (struct ready){ .seq = seq, .slot = slot, .took = { -1, -1 },
			      .master = scheduler_tuner_master(&s->tuner, seq),
			      .nodes = (unsigned)cfg->trial.nodes };
	int r = rd->master ? scheduler_tuner_propose(&s->tuner, s->e->dir, seq, t->submitted > 0,
						      &rd->params, &rd->took)
			   : 0;
	if (r > 0 && s->wait_seq != seq) {   /* the master's thread is still on it */
		s->wait_seq = seq;
		s->wait_since = util_now();
	}
	if (r != 0)
		return r;
	next_place(t, rd->place);
	char *dir = expdir_place_dir(s->e->dir, seq, rd->place);
	rd->resume = cfg->trial.resume_on_retry && (t->submitted > 0 || t->attempt > 1);
	/* it starts from the last checkpoint, whatever a launch cut off writes later */
	r = place_prepare(s->e->dir, seq, rd->place, t->place, rd->resume);
	if (r == 0)   /* 1: it waits */
		r = scheduler_pool_claim(cfg, s->e, seq, dir, &rd->nodes, &s->slots[slot].gpus);
	/* NNI's trial side: a new run, the proposal as parameter.cfg in the
	 * place (placement trial: `propose --exec` writes it) */
	if (r == 0) {
		char *trial_dir = expdir_trial_dir(s->e->dir, seq);
		if (nnitrial_prepare(trial_dir, dir, FILEIO_NOSYNC) < 0 ||
		    (rd->master && nnitrial_write_parameters(dir, seq, rd->params) < 0))
			r = -1;
		free(trial_dir);
	}
	free(dir);
	if (r != 0)
		ready_release(rd);
	return r;
}

/* Place a ready trial (its files durable), write its launch and submit
 * it: 0, or -1 when it could not be started. Placed here, not when made
 * ready: a backend's placement is for its next submission. */
static int submit(struct sched *s, struct ready *rd)
{
	const struct aah_config *cfg = s->cfg;
	struct trial_rec *t = experiment_trial(s->e, rd->seq);
	unsigned nodes = rd->nodes, port = 0;
	char **hosts = xcalloc(nodes, sizeof(*hosts));
	int r = backend_place(&s->bctx, rd->seq, t->attempt ? t->attempt : 1, hosts, nodes, &port);
	if (r == 0) {
		struct launch_params lp = {
			.cfg = cfg,
			.expdir = s->e->dir,
			.workdir = s->workdir,
			.experiment_id = s->e->id,
			.trial_seq = rd->seq,
			.attempt = t->attempt ? t->attempt : 1,
			.place = rd->place,
			.hosts = (const char *const *)hosts,
			.port = port,
			.gpus = s->slots[rd->slot].gpus,
			.resume = rd->resume,
			.nodes = nodes,
			.elastic = cfg->pool.devices > 0 && (s->bctx.backend->caps & AAH_CAP_ELASTIC),
			.mpi_hosts = s->bctx.backend->mpi_hosts,
			.params = rd->params,
			.deadline = exec_deadline(s),
			/* tuner.placement trial: the trial proposes, up to the master's first */
			.propose_runner = rd->master || !strcmp(cfg->tuner.placement, "master")
						  ? NULL : s->opts->runner_exe,
		};
		struct aah_launch l;
		launch_build(&l, &lp);
		r = launch_write(&l);
		if (r == 0) {
			struct submit_arg a = { s, rd->seq, rd->slot, rd->place, rd->took };
			char *job = NULL;
			s->bctx.on_submitted = on_submitted;
			s->bctx.on_submitted_arg = &a;
			s->slots[rd->slot].trial = rd->seq;
			r = backend_submit(&s->bctx, &l, &job);
			if (r < 0)
				s->slots[rd->slot].trial = 0;
			free(job);
		}
		launch_release(&l);
	}
	for (unsigned i = 0; i < nodes; i++)
		free(hosts[i]);
	free(hosts);
	ready_release(rd);
	return r;
}

static int create_trial(struct sched *s, unsigned seq)
{
	cJSON *f = sched_trial_fields(seq, 1);
	/* trial_submitted, synced, follows and makes this line durable too. */
	return experiment_record_flags(s->e, EXPDIR_EV_TRIAL_CREATED, f, FILEIO_NOSYNC);
}

/* A trial that failed to even start counts as a failed attempt. */
static int submit_failed(struct sched *s, unsigned seq)
{
	struct aah_job_status st = { .job = "", .state = AAH_JOB_FAILED, .exit_code = -1 };
	snprintf(st.reason, sizeof(st.reason), "could not be started: %s", util_last_error());
	return sched_settle(s, seq, &st);
}

/* Trials made ready before they are synced and submitted, at most: one
 * sync for as many, and the first of them waits for the others' files
 * only as long as they take to write (about 0.5 ms each at 4,096 slots
 * here: docs/scale.md). */
#define FILL_READY_MAX 128

/* The ready launches made durable by one sync, then each submitted. Where
 * the backend can hold them (local ranks), the launches of two or more are
 * journaled unsynced and let go after one fdatasync of them all: a wave
 * paid one a trial (docs/scale.md). A rank let go is journaled durably. */
static int submit_ready(struct sched *s, struct ready *rd, size_t n)
{
	int r = n ? fileio_sync_fs(s->e->dir) : 0;
	int batch = r == 0 && n > 1 && backend_can_defer_release(&s->bctx);
	s->bctx.defer_release = batch;
	for (size_t i = 0; i < n; i++) {
		if (r < 0)
			ready_release(&rd[i]);   /* the runner stops: never submitted */
		else if (submit(s, &rd[i]) < 0 && submit_failed(s, rd[i].seq) < 0)
			r = -1;
	}
	s->bctx.defer_release = 0;
	if (batch) {
		int synced = expdir_journal_sync(s->e->dir);
		backend_release_held(&s->bctx, synced == 0);
		if (synced < 0)
			r = -1;
	}
	return r;
}

/* Every free slot gets a trial, in two steps: each made ready (its
 * proposal and NNI run written unsynced), then, after one sync of them
 * all (FILL_READY_MAX at a time), each placed, launched and journaled.
 * At 4,096 slots a wave of ends paid four fsyncs a trial before its
 * submission (docs/scale.md). */
int sched_fill_slots(struct sched *s)
{
	size_t from = 0;   /* the trials before it are not queued: one scan for all slots */
	struct ready *rd = NULL;
	size_t n = 0, cap = 0;
	int r = 0;
	for (unsigned slot = 0; slot < s->nslots && r == 0; slot++) {
		if (s->slots[slot].trial || s->stop || s->timeup)
			continue;
		if (too_late(s))
			break;
		/* Queued until submitted: each taken once, the new ones too. */
		unsigned seq = 0;
		for (; from < s->e->ntrials && !seq; from++)
			if (s->e->trials[from].state == TRIAL_QUEUED)
				seq = s->e->trials[from].seq;
		if (!seq) {
			if (s->created >= (unsigned)s->cfg->max_trial_num)
				break;
			seq = ++s->created;
			if (create_trial(s, seq) < 0) {
				r = -1;
				break;
			}
			from = s->e->ntrials;
			scheduler_tuner_created(&s->tuner, s->created);
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			rd = xrealloc(rd, cap * sizeof(*rd));
		}
		int p = prepare(s, seq, slot, &rd[n]);
		if (p > 0)
			break;   /* it waits for its proposal, or for devices in the pool */
		if (p < 0) {
			r = submit_failed(s, seq);
			continue;
		}
		n++;
		/* None kept ahead: the next proposal may keep this thread
		 * waiting, and this trial starts first. Else at most
		 * FILL_READY_MAX wait for one another. */
		if (n == FILL_READY_MAX || scheduler_tuner_on_demand(&s->tuner)) {
			r = submit_ready(s, rd, n);
			n = 0;
		}
	}
	if (r == 0)
		r = submit_ready(s, rd, n);
	else
		for (size_t i = 0; i < n; i++)
			ready_release(&rd[i]);   /* the runner stops: never submitted */
	free(rd);
	return r;
}
