/* load.c: read an experiment directory into a struct report_exp: the
 * journal replayed, and every trial's metrics, result, arch and monitor
 * samples; the start of AIPerf's clock (the earliest trial start). Works on a running experiment: files that do not exist yet are
 * skipped, torn last lines too. The formats are read through runner/store/expdir.h;
 * only the monitor samples (aah-monitor/1, device_info/) are the report's. */
#include "runner/report/report.h"
#include "arch.h" /* arch_load: a trial's FLOPs per image */
#include "fileio.h"
#include "jsonfile.h"
#include "runner/store/expdir.h" /* expdir_replay, expdir_trial_dir */
#include "runner/store/outcome.h" /* outcome_read: a trial's state and figures */
#include "util.h"

#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- trial table: a growable array with an open-addressing index by id ---- */

struct trial_table {
	struct report_exp *exp;
	size_t alloc;
	long *slots;      /* (nslots) indices into exp->trials, -1 empty */
	size_t nslots;
};

static uint64_t hash_id(const char *s)
{
	uint64_t h = 1469598103934665603ull;   /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static void table_rehash(struct trial_table *t, size_t nslots)
{
	free(t->slots);
	t->nslots = nslots;
	t->slots = xmalloc(nslots * sizeof(*t->slots));
	for (size_t i = 0; i < nslots; i++)
		t->slots[i] = -1;
	for (size_t i = 0; i < t->exp->ntrials; i++) {
		size_t h = hash_id(t->exp->trials[i].id) & (nslots - 1);
		while (t->slots[h] >= 0)
			h = (h + 1) & (nslots - 1);
		t->slots[h] = (long)i;
	}
}

/* Trial seq, added (state unknown) when absent. */
static struct report_trial *table_get(struct trial_table *t, unsigned seq)
{
	char id[EXPDIR_TRIAL_ID_SIZE];
	expdir_trial_id(seq, id);
	if (!t->slots)
		table_rehash(t, 1024);
	size_t h = hash_id(id) & (t->nslots - 1);
	while (t->slots[h] >= 0) {
		struct report_trial *tr = &t->exp->trials[t->slots[h]];
		if (!strcmp(tr->id, id))
			return tr;
		h = (h + 1) & (t->nslots - 1);
	}
	struct report_exp *exp = t->exp;
	if (exp->ntrials == t->alloc) {
		t->alloc = t->alloc ? 2 * t->alloc : 256;
		exp->trials = xrealloc(exp->trials, t->alloc * sizeof(*exp->trials));
	}
	struct report_trial *tr = &exp->trials[exp->ntrials];
	memset(tr, 0, sizeof(*tr));
	xstrlcpy(tr->id, id, sizeof(tr->id));
	tr->seq = seq;
	tr->state = TRIAL_UNKNOWN;
	tr->slot = -1;
	t->slots[h] = (long)exp->ntrials++;
	if (2 * exp->ntrials > t->nslots)
		table_rehash(t, 2 * t->nslots);
	return tr;
}

/* ---- journal ---- */

static int journal_event(const struct expdir_event *ev, void *arg)
{
	struct trial_table *t = arg;
	struct report_trial *tr = ev->trial_seq ? table_get(t, ev->trial_seq) : NULL;
	switch (ev->kind) {
	case EXPDIR_EV_EXPERIMENT_DONE:
		t->exp->done = 1;
		break;
	case EXPDIR_EV_TRIAL_CREATED:
	case EXPDIR_EV_TRIAL_RETRY:
		tr->state = TRIAL_QUEUED;
		break;
	case EXPDIR_EV_TRIAL_SUBMITTED:
		tr->state = TRIAL_RUNNING;
		tr->slot = ev->slot;
		tr->submitted = ev->ts;
		if (!tr->started || ev->ts < tr->started)
			tr->started = ev->ts;
		tr->finished = 0;
		break;
	case EXPDIR_EV_TRIAL_FINISHED:
		tr->state = ev->state;
		tr->finished = ev->ts;
		if (ev->reason)
			xstrlcpy(tr->reason, ev->reason, sizeof(tr->reason));
		break;
	default:
		break;
	}
	return 0;
}

/* ---- per-trial files ---- */

/* Apply the trial's outcome (runner/store/outcome.h: the one rule for its state
 * and figures) and what else its result.json says. */
static void apply_outcome(struct outcome *o, struct report_trial *tr)
{
	if (o->have_result > 0) {
		const struct expdir_result *res = &o->result;
		xstrlcpy(tr->inherited_from, res->inherited_from, sizeof(tr->inherited_from));
		xstrlcpy(tr->backend, res->backend, sizeof(tr->backend));
		xstrlcpy(tr->device, res->device, sizeof(tr->device));
		if (!tr->reason[0] && res->stop_reason[0])
			xstrlcpy(tr->reason, res->stop_reason, sizeof(tr->reason));
	}
	if (o->precision[0])
		xstrlcpy(tr->precision, o->precision, sizeof(tr->precision));
	tr->on_gpu = o->on_gpu;
	tr->state = o->state;
	tr->epochs = o->epochs;          /* the trial takes them */
	tr->nepochs = o->nepochs;
	o->epochs = NULL;
	o->nepochs = 0;
	if (!isnan(o->best_acc))
		tr->best_acc = o->best_acc;
	tr->flops = o->flops;
}

struct util_acc {
	struct report_exp *exp;
	size_t alloc;
};

static int monitor_line(const cJSON *line, void *arg)
{
	struct util_acc *u = arg;
	const cJSON *ts = cJSON_GetObjectItemCaseSensitive(line, "ts");
	const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(line, "cpu");
	const cJSON *mem = cJSON_GetObjectItemCaseSensitive(line, "mem");
	const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(line, "gpus");
	if (!cJSON_IsNumber(ts) || !cJSON_IsObject(cpu))
		return 0;
	const cJSON *busy = cJSON_GetObjectItemCaseSensitive(cpu, "busy_pct");
	if (!cJSON_IsNumber(busy))
		return 0;
	if (u->exp->nutil == u->alloc) {
		u->alloc = u->alloc ? 2 * u->alloc : 64;
		u->exp->util = xrealloc(u->exp->util, u->alloc * sizeof(*u->exp->util));
	}
	struct report_util *r = &u->exp->util[u->exp->nutil++];
	r->ts = ts->valuedouble;
	r->cpu = busy->valuedouble;
	const cJSON *used = cJSON_GetObjectItemCaseSensitive(mem, "used_pct");
	r->mem = cJSON_IsNumber(used) ? used->valuedouble : -1;
	r->gpu = -1;
	const cJSON *g;
	double sum = 0;
	int n = 0;
	cJSON_ArrayForEach(g, gpus) {
		const cJSON *ut = cJSON_GetObjectItemCaseSensitive(g, "util_pct");
		if (cJSON_IsNumber(ut)) {
			sum += ut->valuedouble;
			n++;
		}
	}
	if (n)
		r->gpu = sum / n;
	return 0;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Names in a directory (no "." entries), sorted; NULL-free array of *n. */
static char **list_dir(const char *dir, size_t *n)
{
	*n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return NULL;
	size_t alloc = 0;
	char **names = NULL;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (*n == alloc) {
			alloc = alloc ? 2 * alloc : 64;
			names = xrealloc(names, alloc * sizeof(*names));
		}
		names[(*n)++] = xstrdup(de->d_name);
	}
	closedir(d);
	if (*n)
		qsort(names, *n, sizeof(*names), cmp_name);
	return names;
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static int load_monitor(const char *trialdir, struct util_acc *u)
{
	char *dir = xstrfmt("%s/device_info", trialdir);
	size_t n;
	char **names = list_dir(dir, &n);
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		size_t len = strlen(names[i]);
		if (len < 6 || strcmp(names[i] + len - 6, ".jsonl"))
			continue;
		char *p = xstrfmt("%s/%s", dir, names[i]);
		r = jsonfile_read_lines(p, monitor_line, u);
		free(p);
	}
	free_names(names, n);
	free(dir);
	return r;
}

/* The trial's FLOPs per image from its arch.json, for AIPerf's epoch charge;
 * none (0) for a trial without one (a shell trial). */
static int load_arch(const char *trialdir, struct report_trial *tr)
{
	char *p = expdir_file(trialdir, EXPDIR_ARCH);
	struct arch a;
	int r = 0;
	if (fileio_exists(p)) {
		r = arch_load(&a, p);
		if (r == 0) {
			tr->img_fwd = a.flops_fwd;
			tr->img_bwd = a.flops_bwd;
			tr->classes = a.num_classes;
			arch_release(&a);
		}
	}
	free(p);
	return r;
}

static int load_trial(const char *expdir, struct report_trial *tr, struct util_acc *u)
{
	char *dir = expdir_trial_dir(expdir, tr->seq);
	struct outcome o;
	int r = outcome_read(expdir, tr->seq, tr->state, tr->finished, &o);
	if (r == 0)
		apply_outcome(&o, tr);
	outcome_release(&o);
	if (r == 0)
		r = load_arch(dir, tr);
	if (r == 0)
		r = load_monitor(dir, u);
	free(dir);
	return r;
}

static int cmp_trial(const void *a, const void *b)
{
	return strcmp(((const struct report_trial *)a)->id, ((const struct report_trial *)b)->id);
}

static int cmp_util(const void *a, const void *b)
{
	double x = ((const struct report_util *)a)->ts, y = ((const struct report_util *)b)->ts;
	return (x > y) - (x < y);
}

static int load_experiment_json(const char *dir, struct report_exp *exp)
{
	struct expdir_info info;
	if (expdir_info_read(dir, &info) < 0)
		return -1;
	xstrlcpy(exp->id, info.id, sizeof(exp->id));
	if (info.name)
		xstrlcpy(exp->name, info.name, sizeof(exp->name));
	exp->created = info.created;
	expdir_info_release(&info);
	return 0;
}

int report_load(const char *dir, struct report_exp *exp)
{
	memset(exp, 0, sizeof(*exp));
	exp->best = -1;
	exp->dir = fileio_absolute(dir);
	exp->workdir = expdir_workdir(exp->dir);
	if (load_experiment_json(exp->dir, exp) < 0)
		goto fail;

	struct trial_table t = { exp, 0, NULL, 0 };
	unsigned *seqs;
	size_t n;
	int r = expdir_trial_list(exp->dir, &seqs, &n);
	for (size_t i = 0; r == 0 && i < n; i++)
		table_get(&t, seqs[i]);
	free(seqs);
	if (r == 0 && expdir_journal_exists(exp->dir))
		r = expdir_replay(exp->dir, journal_event, &t);
	free(t.slots);
	if (r == 0 && exp->ntrials)
		qsort(exp->trials, exp->ntrials, sizeof(*exp->trials), cmp_trial);

	struct util_acc u = { exp, 0 };
	for (size_t i = 0; r == 0 && i < exp->ntrials; i++)
		r = load_trial(exp->dir, &exp->trials[i], &u);
	if (r == 0 && exp->nutil)
		qsort(exp->util, exp->nutil, sizeof(*exp->util), cmp_util);

	exp->start = 0;
	for (size_t i = 0; r == 0 && i < exp->ntrials; i++) {
		const struct report_trial *tr = &exp->trials[i];
		if (tr->started > 0 && (!exp->start || tr->started < exp->start))
			exp->start = tr->started;
		if (tr->best_acc > 0 && (exp->best < 0 || tr->best_acc > exp->trials[exp->best].best_acc))
			exp->best = (long)i;
	}
	if (!exp->start)
		exp->start = exp->created;
	if (r == 0 && exp->best >= 0) {
		char *p = expdir_trial_file(exp->dir, exp->trials[exp->best].seq, EXPDIR_ARCH);
		if (fileio_exists(p) && jsonfile_read(p, &exp->best_arch) < 0)
			r = -1;
		free(p);
	}
	if (r == 0) {
		if (report_pool_load(&exp->pool, exp->workdir, exp->id, exp->created) < 0)
			warning("the report leaves the device pool out: %s", util_last_error());
		return 0;
	}
fail:
	report_exp_release(exp);
	return -1;
}

void report_exp_release(struct report_exp *exp)
{
	for (size_t i = 0; i < exp->ntrials; i++)
		free(exp->trials[i].epochs);
	free(exp->trials);
	free(exp->util);
	free(exp->dir);
	free(exp->workdir);
	cJSON_Delete(exp->best_arch);
	report_pool_release(&exp->pool);
	memset(exp, 0, sizeof(*exp));
	exp->best = -1;
}
