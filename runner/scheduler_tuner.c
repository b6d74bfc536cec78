/* scheduler_tuner.c: the tuner of an experiment, its configuration and
 * the master tuner the scheduler runs on a thread of its own
 * (scheduler_tuner.h). The thread owns the tuner: the scheduler hands it
 * observations and takes proposals through two queues under one lock, and
 * it never waits for a search. */
#include "runner/scheduler_tuner.h"
#include "arch.h" /* arch_parse: a proposal's FLOPs per image */
#include "fileio.h"
#include "jsonfile.h"
#include "runner/store/expdir.h"  /* expdir_trial_dir, expdir_file, expdir_trial_id */
#include "runner/store/outcome.h" /* outcome_learnable */
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int scheduler_tuner_config(const struct aah_config *cfg, const char *expdir,
			   struct tuner_config *tc, cJSON **class_args, cJSON **space)
{
	memset(tc, 0, sizeof(*tc));
	*class_args = cfg->tuner.class_args ? ynode_to_json(cfg->tuner.class_args) : NULL;
	*space = NULL;
	char *copied = expdir ? xstrfmt("%s/search_space.json", expdir) : NULL;
	int r;
	const struct ynode *inline_space = cfg->nni ? cfg->nni->search_space : NULL;
	if (copied && fileio_exists(copied))
		r = jsonfile_read(copied, space);
	else if (inline_space)   /* NNI v2's searchSpace, in the config itself */
		r = (*space = ynode_to_json(inline_space)) ? 0 : -1;
	else
		r = config_search_space(cfg, space);
	free(copied);
	if (r < 0) {
		cJSON_Delete(*class_args);
		*class_args = NULL;
		return -1;
	}
	tc->name = cfg->tuner.builtin_tuner_name;
	tc->class_args = *class_args;
	tc->search_space = *space;
	tc->seed = (uint64_t)cfg->seed;
	tc->max_layers = (unsigned)cfg->tuner.max_layers;
	tc->max_params = (uint64_t)cfg->tuner.max_params;
	tc->max_flops = cfg->tuner.max_flops;
	tc->inherit_weights = cfg->tuner.inherit_weights;
	return 0;
}

char *scheduler_tuner_initial_arch(const struct aah_config *cfg, const char *expdir)
{
	/* The copy in the experiment wins: the user's file may have changed. */
	char *copied = expdir ? xstrfmt("%s/initial_arch.json", expdir) : NULL;
	if (copied && fileio_exists(copied))
		return copied;
	free(copied);
	const char *p = cfg->tuner.initial_arch;
	if (!p || !*p)
		return NULL;
	return config_resolve(cfg, p);
}

unsigned scheduler_tuner_search_batch(const struct aah_config *cfg)
{
	const char *name = cfg->tuner.builtin_tuner_name;
	if (!name || strcmp(name, "NetworkMorphism"))
		return 0;
	cJSON *ca = cfg->tuner.class_args ? ynode_to_json(cfg->tuner.class_args) : NULL;
	int set = cJSON_HasObjectItem(ca, "search_batch");
	cJSON_Delete(ca);
	unsigned long n = (unsigned long)cfg->trial_concurrency / 256;
	return set || n < 2 ? 0 : n > 8 ? 8 : (unsigned)n;
}

/* master: the runner's own tuner, with the batch it chooses. */
static int make_tuner(const struct aah_config *cfg, const char *expdir, int master,
		      struct tuner **t)
{
	struct tuner_config tc;
	cJSON *ca, *space;
	if (scheduler_tuner_config(cfg, expdir, &tc, &ca, &space) < 0)
		return -1;
	unsigned batch = master ? scheduler_tuner_search_batch(cfg) : 0;
	if (batch) {
		if (!ca)
			tc.class_args = ca = cJSON_CreateObject();
		cJSON_AddNumberToObject(ca, "search_batch", batch);
	}
	char *initial = scheduler_tuner_initial_arch(cfg, expdir);
	tc.initial_arch = initial;
	int r = tuner_create(t, &tc);
	free(initial);
	cJSON_Delete(ca);
	cJSON_Delete(space);
	return r;
}

long scheduler_tuner_master_from(const struct aah_config *cfg, const char *expdir)
{
	if (!strcmp(cfg->tuner.placement, "master"))
		return 1;
	struct tuner *t;
	if (make_tuner(cfg, expdir, 0, &t) < 0)
		return -1;
	unsigned limit = tuner_proposer_limit(t);
	tuner_free(t);
	return limit && (unsigned long)cfg->max_trial_num > limit ? (long)limit + 1 : 0;
}

/* ---- the thread -------------------------------------------------------------- */

struct proposal {
	unsigned seq;
	cJSON *arch, *params;     /* owned */
	double seconds;           /* the tuner's time on it */
	int learnt;               /* the settled trials the tuner had learnt from */
	struct expdir_arch_flops cost; /* arch's, counted off the main thread */
	char *error;              /* it failed: why (owned) */
	struct proposal *next;
};

struct observation {
	struct tuner_observation obs;   /* arch and params owned */
	char *place;
	struct observation *next;
};

struct scheduler_proposer {
	pthread_t thread, main;
	pthread_mutex_t lock;
	pthread_cond_t cond;      /* the thread's: work for it */
	pthread_cond_t made;      /* the scheduler's: a proposal is ready, or the load failed */
	/* the thread's alone, once started */
	struct tuner *tuner;
	char *expdir;
	int learnt;               /* settled trials told since it started */
	/* under lock */
	int stop;
	char *load_error;         /* the history could not be loaded */
	unsigned created;         /* the scheduler's highest trial */
	unsigned ahead;           /* proposals kept ready after created (0: none) */
	unsigned asked;           /* the highest trial the scheduler asked for */
	unsigned max_seq;         /* maxTrialNum */
	unsigned next;            /* the next trial to propose ahead */
	unsigned busy;            /* the trial being proposed now, 0: none */
	unsigned *wanted;         /* (nwanted) trials before next asked for */
	size_t nwanted, awanted;
	struct proposal *ready;
	struct observation *obs, **obs_tail;
};

static void take_observations(struct scheduler_proposer *p)
{
	pthread_mutex_lock(&p->lock);
	struct observation *o = p->obs;
	p->obs = NULL;
	p->obs_tail = &p->obs;
	pthread_mutex_unlock(&p->lock);
	while (o) {
		struct observation *next = o->next;
		if (tuner_observe_at(p->tuner, &o->obs, o->place) < 0)
			warning("the tuner cannot learn trial %u: %s", o->obs.trial_seq,
				util_last_error());
		p->learnt++;
		cJSON_Delete((cJSON *)o->obs.arch);
		cJSON_Delete((cJSON *)o->obs.params);
		free(o->place);
		free(o);
		o = next;
	}
}

/* Under lock: the trial to propose next (a wanted one first), 0: none. */
static unsigned next_trial(struct scheduler_proposer *p)
{
	if (p->nwanted) {
		unsigned seq = p->wanted[0];
		memmove(p->wanted, p->wanted + 1, --p->nwanted * sizeof(*p->wanted));
		return seq;
	}
	if (p->next <= p->max_seq && (p->next <= p->created + p->ahead || p->next <= p->asked))
		return p->next++;
	return 0;
}

/* What r's network costs, as the report charges it (arch_check, the same
 * count arch.json gives); none when it does not check, which the trainer
 * then says. */
static void count_arch(struct proposal *r)
{
	struct arch a = ARCH_INIT;
	if (arch_parse(&a, r->arch, "the proposal") == 0)
		r->cost = (struct expdir_arch_flops){ a.flops_fwd, a.flops_bwd, a.num_classes };
	arch_release(&a);
}

static void *proposer_main(void *arg)
{
	struct scheduler_proposer *p = arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);   /* the scheduler's signals stay its own */
	util_hold_errors(1);   /* each error goes to the trial it fails, said there */
	if (tuner_load_experiment(p->tuner, p->expdir) < 0) {
		pthread_mutex_lock(&p->lock);
		p->load_error = xstrdup(util_last_error());
		pthread_cond_broadcast(&p->made);
		pthread_mutex_unlock(&p->lock);
		pthread_kill(p->main, SIGUSR1);
		return NULL;
	}
	for (;;) {
		take_observations(p);
		pthread_mutex_lock(&p->lock);
		unsigned seq = 0;
		while (!p->stop && !p->obs && !(seq = next_trial(p)))
			pthread_cond_wait(&p->cond, &p->lock);
		int stop = p->stop;
		p->busy = seq;
		pthread_mutex_unlock(&p->lock);
		if (stop)
			break;
		if (!seq)
			continue;   /* observations first */
		struct proposal *r = xcalloc(1, sizeof(*r));
		double t0 = util_monotonic();
		r->seq = seq;
		if (tuner_propose(p->tuner, seq, &r->arch, &r->params) < 0)
			r->error = xstrdup(util_last_error());
		r->seconds = util_monotonic() - t0;
		r->learnt = p->learnt;
		if (r->arch)
			count_arch(r);
		pthread_mutex_lock(&p->lock);
		r->next = p->ready;
		p->ready = r;
		p->busy = 0;
		pthread_cond_broadcast(&p->made);
		pthread_mutex_unlock(&p->lock);
		pthread_kill(p->main, SIGUSR1);
	}
	return NULL;
}

int scheduler_tuner_start(struct scheduler_tuner *st, const struct aah_config *cfg,
			  const char *expdir, unsigned created, unsigned ahead)
{
	*st = (struct scheduler_tuner)SCHEDULER_TUNER_INIT;
	long from = scheduler_tuner_master_from(cfg, expdir);
	if (from <= 0)
		return (int)from;
	struct scheduler_proposer *p = xcalloc(1, sizeof(*p));
	if (make_tuner(cfg, expdir, 1, &p->tuner) < 0) {
		free(p);
		return -1;
	}
	p->expdir = xstrdup(expdir);
	p->main = pthread_self();
	p->created = created;
	p->ahead = ahead;
	p->max_seq = (unsigned)cfg->max_trial_num;
	p->next = created + 1 > (unsigned)from ? created + 1 : (unsigned)from;
	p->obs_tail = &p->obs;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	pthread_cond_init(&p->made, NULL);
	if (pthread_create(&p->thread, NULL, proposer_main, p) != 0) {
		tuner_free(p->tuner);
		free(p->expdir);
		free(p);
		return error("cannot start the tuner's thread");
	}
	st->p = p;
	st->from_seq = (unsigned)from;
	return 0;
}

void scheduler_tuner_release(struct scheduler_tuner *st)
{
	struct scheduler_proposer *p = st->p;
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	/* a wake-up it sent and nobody took must not reach the default action */
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	struct timespec zero = { 0, 0 };
	while (sigtimedwait(&usr1, NULL, &zero) > 0)
		;
	while (p->ready) {
		struct proposal *r = p->ready;
		p->ready = r->next;
		cJSON_Delete(r->arch);
		cJSON_Delete(r->params);
		free(r->error);
		free(r);
	}
	while (p->obs) {   /* told after the last proposal: nobody learns them now */
		struct observation *o = p->obs;
		p->obs = o->next;
		cJSON_Delete((cJSON *)o->obs.arch);
		cJSON_Delete((cJSON *)o->obs.params);
		free(o->place);
		free(o);
	}
	tuner_free(p->tuner);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	pthread_cond_destroy(&p->made);
	free(p->wanted);
	free(p->load_error);
	free(p->expdir);
	free(p);
	*st = (struct scheduler_tuner)SCHEDULER_TUNER_INIT;
}

int scheduler_tuner_master(const struct scheduler_tuner *st, unsigned seq)
{
	return st->p && seq >= st->from_seq;
}

void scheduler_tuner_created(struct scheduler_tuner *st, unsigned created)
{
	struct scheduler_proposer *p = st->p;
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	if (created > p->created) {
		p->created = created;
		pthread_cond_signal(&p->cond);
	}
	pthread_mutex_unlock(&p->lock);
}

const char *scheduler_tuner_failed(struct scheduler_tuner *st)
{
	struct scheduler_proposer *p = st->p;
	if (!p)
		return NULL;
	pthread_mutex_lock(&p->lock);
	const char *why = p->load_error;   /* set once, never freed before release */
	pthread_mutex_unlock(&p->lock);
	return why;
}

int scheduler_tuner_observe(struct scheduler_tuner *st, const char *expdir,
			    const struct trial_rec *t)
{
	struct scheduler_proposer *p = st->p;
	if (!p)
		return 0;
	int learnable = outcome_learnable(t->state, t->best_acc);   /* as journaled */
	char *dir = expdir_trial_dir(expdir, t->seq);
	char *pa = expdir_file(dir, EXPDIR_ARCH), *pp = expdir_file(dir, EXPDIR_PARAMS);
	cJSON *arch = NULL, *params = NULL;
	int was_quiet = util_set_quiet(1);
	if (fileio_exists(pa))
		jsonfile_read(pa, &arch);
	if (fileio_exists(pp))
		jsonfile_read(pp, &params);
	util_set_quiet(was_quiet);
	struct observation *o = xcalloc(1, sizeof(*o));
	o->obs = (struct tuner_observation){
		.trial_seq = t->seq,
		.arch = arch,
		.params = params,
		.state = learnable ? TUNER_OBS_DONE : TUNER_OBS_FAILED,
		.metric = learnable ? t->best_acc : 0,
	};
	o->place = t->place ? xstrdup(t->place) : NULL;
	pthread_mutex_lock(&p->lock);
	*p->obs_tail = o;
	p->obs_tail = &o->next;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	free(pa);
	free(pp);
	free(dir);
	return 0;
}

/* Under lock: the proposal of trial seq, taken off the ready list, or NULL
 * (then the thread is asked for it, unless it is on its way). */
static struct proposal *take_ready(struct scheduler_proposer *p, unsigned seq)
{
	for (struct proposal **pp = &p->ready; *pp; pp = &(*pp)->next) {
		if ((*pp)->seq == seq) {
			struct proposal *r = *pp;
			*pp = r->next;
			return r;
		}
	}
	if (seq > p->asked) {   /* with nothing kept ahead, proposed now */
		p->asked = seq;
		pthread_cond_signal(&p->cond);
	}
	int coming = seq == p->busy || seq >= p->next;
	for (size_t i = 0; i < p->nwanted && !coming; i++)
		coming = p->wanted[i] == seq;
	if (!coming) {
		if (p->nwanted == p->awanted) {
			p->awanted = p->awanted ? 2 * p->awanted : 16;
			p->wanted = xrealloc(p->wanted, p->awanted * sizeof(*p->wanted));
		}
		p->wanted[p->nwanted++] = seq;
		pthread_cond_signal(&p->cond);
	}
	return NULL;
}

/* A proposal of a trial never launched, written unsynced by a fill round
 * that a power cut stopped before its sync, which does not read: removed,
 * so that the trial is proposed again (1), else 0. */
static int drop_torn(const char *dir, unsigned seq)
{
	char *path[3] = { expdir_file(dir, EXPDIR_MORPH), expdir_file(dir, EXPDIR_ARCH),
			  expdir_file(dir, EXPDIR_PARAMS) };
	int torn = 0;
	int held = util_hold_errors(1);
	for (int i = 1; i < 3 && !torn; i++) {
		cJSON *doc = NULL;
		torn = fileio_exists(path[i]) && jsonfile_read(path[i], &doc) < 0;
		cJSON_Delete(doc);
	}
	util_hold_errors(held);
	if (torn) {
		char id[EXPDIR_TRIAL_ID_SIZE];
		warning("trial %s: its proposal, never launched, does not read; it is proposed "
			"again: %s", expdir_trial_id(seq, id), util_last_error());
		for (int i = 0; i < 3; i++)
			if (unlink(path[i]) < 0 && errno != ENOENT)
				torn = -error_errno("cannot remove '%s'", path[i]);
	}
	for (int i = 0; i < 3; i++)
		free(path[i]);
	return torn;
}

int scheduler_tuner_on_demand(const struct scheduler_tuner *st)
{
	return st->p && !st->p->ahead;   /* set at start, never changed */
}

int scheduler_tuner_propose(struct scheduler_tuner *st, const char *expdir, unsigned seq,
			    int launched, cJSON **params_out, struct scheduler_tuner_took *took)
{
	char *dir = expdir_trial_dir(expdir, seq);
	char *pa = expdir_file(dir, EXPDIR_ARCH), *pp = expdir_file(dir, EXPDIR_PARAMS);
	cJSON *params = NULL;
	int r = !launched && drop_torn(dir, seq) < 0 ? -1 : 0;
	*params_out = NULL;
	*took = (struct scheduler_tuner_took){ -1, -1, { 0, 0, 0 } };
	if (r == 0 && (fileio_exists(pp) || fileio_exists(pa))) {
		/* A retried or resumed trial trains what it was given before. */
		if (fileio_exists(pp))
			r = jsonfile_read(pp, &params);
	} else if (r == 0 && scheduler_tuner_master(st, seq)) {
		struct scheduler_proposer *p = st->p;
		pthread_mutex_lock(&p->lock);
		struct proposal *got = take_ready(p, seq);
		/* Nothing kept ahead (under 8 slots): the free slot waits here
		 * for its proposal, as for a search in the main loop, and takes
		 * it now rather than after the next poll of every job. */
		while (!got && !p->ahead && !p->load_error) {
			pthread_cond_wait(&p->made, &p->lock);
			got = take_ready(p, seq);
		}
		pthread_mutex_unlock(&p->lock);
		if (!got) {
			r = 1;
		} else if (got->error) {
			r = error("%s", got->error);
		} else {
			/* the thread's tuner only reads inherit_weights here, set at creation */
			r = fileio_mkdir_p(dir, 0755);
			if (r == 0)
				r = tuner_write_proposal(p->tuner, dir, got->arch, got->params,
							 FILEIO_NOSYNC);
			*took = (struct scheduler_tuner_took){ got->seconds, got->learnt, got->cost };
			params = got->params;
			got->params = NULL;
		}
		if (got) {
			cJSON_Delete(got->arch);
			cJSON_Delete(got->params);
			free(got->error);
			free(got);
		}
	}
	if (r == 0 && params)
		*params_out = cJSON_DetachItemFromObjectCaseSensitive(params, "parameters");
	cJSON_Delete(params);
	free(pa);
	free(pp);
	free(dir);
	return r;
}
