/* load.c: read an experiment directory into a struct report_exp: the
 * journal replayed, and every trial's metrics, result, arch and monitor
 * samples; the start of AIPerf's clock (the earliest trial start). Works on a running experiment: files that do not exist yet are
 * skipped, torn last lines too. The formats are read through runner/store/expdir.h;
 * only the monitor samples (aah-monitor/1, device_info/) are the report's. */
#include "runner/report/report.h"
#include "arch.h" /* arch_load: a trial's FLOPs per image */
#include "fileio.h" /* fileio_list_dir */
#include "jsonfile.h"
#include "runner/store/expdir.h" /* expdir_trial_list, expdir_trial_dir */
#include "runner/store/journal.h" /* journal_replay: the trials' states */
#include "runner/store/outcome.h" /* outcome_read: a trial's state and figures */
#include "strvec.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- trials: the journal's (runner/store/journal.c, the one reducer) and
 * the directories it does not name ---- */

/* Trial seq as the report keeps it, from its journal record (NULL: the
 * journal does not name it). */
static void add_trial(struct report_exp *exp, size_t *alloc, unsigned seq,
		      const struct trial_rec *rec)
{
	if (exp->ntrials == *alloc) {
		*alloc = *alloc ? 2 * *alloc : 256;
		exp->trials = xrealloc(exp->trials, *alloc * sizeof(*exp->trials));
	}
	struct report_trial *tr = &exp->trials[exp->ntrials++];
	memset(tr, 0, sizeof(*tr));
	expdir_trial_id(seq, tr->id);
	tr->seq = seq;
	tr->state = TRIAL_UNKNOWN;
	tr->slot = -1;
	tr->result_acc = NAN;
	if (!rec)
		return;
	tr->state = rec->state;
	if (rec->place)
		xstrlcpy(tr->place, rec->place, sizeof(tr->place));
	tr->slot = rec->last_slot;
	tr->submitted = rec->submitted;
	tr->started = rec->started;
	tr->finished = rec->finished;
	if (rec->arch.classes) {   /* journaled: its arch.json need not be read */
		tr->img_fwd = rec->arch.fwd;
		tr->img_bwd = rec->arch.bwd;
		tr->classes = rec->arch.classes;
	}
	if (rec->reason)
		xstrlcpy(tr->reason, rec->reason, sizeof(tr->reason));
}

static int load_trials(struct report_exp *exp)
{
	struct journal jr = { 0 };
	unsigned *seqs;
	size_t n, alloc = 0, max = 0;
	int r = expdir_trial_list(exp->dir, &seqs, &n);
	if (r == 0 && expdir_journal_exists(exp->dir))
		r = journal_replay(&jr, exp->dir);
	for (size_t i = 0; r == 0 && i < n; i++)
		max = seqs[i] > max ? seqs[i] : max;
	max = jr.ntrials > max ? jr.ntrials : max;
	char *dir = xcalloc(max + 1, 1);
	for (size_t i = 0; r == 0 && i < n; i++)
		dir[seqs[i]] = 1;
	for (size_t seq = 1; r == 0 && seq <= max; seq++) {
		const struct trial_rec *rec = seq <= jr.ntrials && jr.trials[seq - 1].attempt ?
						      &jr.trials[seq - 1] : NULL;
		if (rec || dir[seq])
			add_trial(exp, &alloc, (unsigned)seq, rec);
	}
	exp->done = jr.done;
	free(dir);
	free(seqs);
	journal_release(&jr);
	return r;
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
	tr->result_acc = NAN;
	if (o->have_result > 0 && o->result.nni)
		tr->result_acc = o->result.best_val_acc;
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

static int load_monitor(const char *trialdir, struct util_acc *u)
{
	char *dir = xstrfmt("%s/device_info", trialdir);
	struct strvec names = STRVEC_INIT;
	int r = 0;
	fileio_list_dir(dir, NULL, NULL, &names);   /* none yet: no samples */
	for (size_t i = 0; i < names.n && r == 0; i++) {
		size_t len = strlen(names.v[i]);
		if (len < 6 || strcmp(names.v[i] + len - 6, ".jsonl"))
			continue;
		char *p = xstrfmt("%s/%s", dir, names.v[i]);
		r = jsonfile_read_lines(p, monitor_line, u);
		free(p);
	}
	strvec_clear(&names);
	free(dir);
	return r;
}

/* The trial's FLOPs per image from its arch.json, for AIPerf's epoch charge,
 * when the journal did not name them (proposed in the trial, or an older
 * journal); none (0) for a trial without one (a shell trial). */
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

/* The trial's arch.json is its own; its outcome and monitor samples are
 * its last launch's, in that launch's place. */
static int load_trial(const char *expdir, struct report_trial *tr, struct util_acc *u)
{
	char *dir = expdir_trial_dir(expdir, tr->seq);
	char *place = expdir_place_dir(expdir, tr->seq, tr->place);
	struct outcome o;
	int r = outcome_read(expdir, tr->seq, tr->place, tr->state, tr->finished, &o);
	if (r == 0)
		apply_outcome(&o, tr);
	outcome_release(&o);
	if (r == 0 && !tr->classes)
		r = load_arch(dir, tr);
	if (r == 0)
		r = load_monitor(place, u);
	free(place);
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

	int r = load_trials(exp);
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
