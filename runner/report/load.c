/* load.c: read an experiment directory (experiment.json, journal.jsonl,
 * trials/<id>/{metrics.jsonl,result.json,arch.json,device_info/}) into a
 * struct report_exp. Works on a running experiment: files that do not exist
 * yet are skipped, torn last lines are skipped by jsonfile_read_lines. */
#include "runner/report/report.h"
#include "fileio.h"
#include "jsonfile.h"
#include "util.h"

#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *const state_names[REPORT_NSTATES] = {
	[REPORT_QUEUED] = "queued",
	[REPORT_RUNNING] = "running",
	[REPORT_SUCCEEDED] = "succeeded",
	[REPORT_EARLY_STOPPED] = "early_stopped",
	[REPORT_FAILED] = "failed",
	[REPORT_CANCELED] = "canceled",
	[REPORT_UNKNOWN] = "unknown",
};

const char *report_state_name(enum report_state s)
{
	return (unsigned)s < REPORT_NSTATES ? state_names[s] : "unknown";
}

static enum report_state state_from_name(const char *s)
{
	for (int i = 0; i < REPORT_NSTATES; i++)
		if (!strcmp(s, state_names[i]))
			return (enum report_state)i;
	return REPORT_UNKNOWN;
}

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

/* The trial with this id, added (state unknown) when absent. */
static struct report_trial *table_get(struct trial_table *t, const char *id)
{
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
	tr->state = REPORT_UNKNOWN;
	tr->slot = -1;
	t->slots[h] = (long)exp->ntrials++;
	if (2 * exp->ntrials > t->nslots)
		table_rehash(t, 2 * t->nslots);
	return tr;
}

/* ---- journal ---- */

static int journal_line(const cJSON *ev, void *arg)
{
	struct trial_table *t = arg;
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(ev, "event");
	const cJSON *trial = cJSON_GetObjectItemCaseSensitive(ev, "trial");
	const cJSON *ts = cJSON_GetObjectItemCaseSensitive(ev, "ts");
	if (!cJSON_IsString(e))
		return 0;
	if (!strcmp(e->valuestring, "experiment_done")) {
		t->exp->done = 1;
		return 0;
	}
	if (!cJSON_IsString(trial) || !*trial->valuestring)
		return 0;
	double when = cJSON_IsNumber(ts) ? ts->valuedouble : 0;
	struct report_trial *tr = table_get(t, trial->valuestring);
	if (!strcmp(e->valuestring, "trial_created")) {
		tr->state = REPORT_QUEUED;
	} else if (!strcmp(e->valuestring, "trial_retry")) {
		tr->state = REPORT_QUEUED;
	} else if (!strcmp(e->valuestring, "trial_submitted")) {
		const cJSON *slot = cJSON_GetObjectItemCaseSensitive(ev, "slot");
		tr->state = REPORT_RUNNING;
		tr->slot = cJSON_IsNumber(slot) ? slot->valueint : -1;
		tr->submitted = when;
		tr->finished = 0;
	} else if (!strcmp(e->valuestring, "trial_finished")) {
		const cJSON *st = cJSON_GetObjectItemCaseSensitive(ev, "state");
		const cJSON *reason = cJSON_GetObjectItemCaseSensitive(ev, "reason");
		tr->state = cJSON_IsString(st) ? state_from_name(st->valuestring) : REPORT_UNKNOWN;
		if (tr->state == REPORT_QUEUED || tr->state == REPORT_RUNNING)
			tr->state = REPORT_UNKNOWN;
		tr->finished = when;
		if (cJSON_IsString(reason))
			xstrlcpy(tr->reason, reason->valuestring, sizeof(tr->reason));
	}
	return 0;
}

/* ---- per-trial files ---- */

static int metrics_line(const cJSON *line, void *arg)
{
	struct report_trial *tr = arg;
	const cJSON *ts = cJSON_GetObjectItemCaseSensitive(line, "timestamp");
	const cJSON *acc = cJSON_GetObjectItemCaseSensitive(line, "val_acc");
	if (!cJSON_IsNumber(ts) || !cJSON_IsNumber(acc))
		return 0;      /* not an epoch line; readers ignore what they do not know */
	const cJSON *tf = cJSON_GetObjectItemCaseSensitive(line, "train_flops");
	const cJSON *ef = cJSON_GetObjectItemCaseSensitive(line, "eval_flops");
	const cJSON *ips = cJSON_GetObjectItemCaseSensitive(line, "images_per_sec");
	const cJSON *ep = cJSON_GetObjectItemCaseSensitive(line, "epoch");
	if (tr->nepochs == tr->epochs_alloc) {
		tr->epochs_alloc = tr->epochs_alloc ? 2 * tr->epochs_alloc : 16;
		tr->epochs = xrealloc(tr->epochs, tr->epochs_alloc * sizeof(*tr->epochs));
	}
	struct report_epoch *e = &tr->epochs[tr->nepochs++];
	e->ts = ts->valuedouble;
	e->val_acc = acc->valuedouble;
	e->flops = (cJSON_IsNumber(tf) ? tf->valuedouble : 0) +
		   (cJSON_IsNumber(ef) ? ef->valuedouble : 0);
	e->images_per_sec = cJSON_IsNumber(ips) ? ips->valuedouble : 0;
	e->epoch = cJSON_IsNumber(ep) ? ep->valueint : (int)tr->nepochs;
	if (e->val_acc > tr->best_acc)
		tr->best_acc = e->val_acc;
	tr->flops = e->flops;
	return 0;
}

static int load_result(const char *path, struct report_trial *tr)
{
	cJSON *doc;
	if (jsonfile_read(path, &doc) < 0)
		return -1;
	const char *s;
	double v;
	if (json_get_string(path, doc, "precision", 1, &s) == 0 && s)
		xstrlcpy(tr->precision, s, sizeof(tr->precision));
	if (json_get_number(path, doc, "best_val_acc", 1, &v) == 0 && v > tr->best_acc &&
	    !tr->nepochs)
		tr->best_acc = v;
	if (!tr->reason[0] && json_get_string(path, doc, "stop_reason", 1, &s) == 0 && s)
		xstrlcpy(tr->reason, s, sizeof(tr->reason));
	const cJSON *dev = cJSON_GetObjectItemCaseSensitive(doc, "devices");
	const cJSON *d;
	cJSON_ArrayForEach(d, dev)
		if (cJSON_IsString(d) && (!strncmp(d->valuestring, "cuda", 4) ||
					  !strncmp(d->valuestring, "gpu", 3)))
			tr->on_gpu = 1;
	if (tr->state == REPORT_UNKNOWN && json_get_string(path, doc, "status", 1, &s) == 0 && s)
		tr->state = state_from_name(s);
	cJSON_Delete(doc);
	return 0;
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

static int load_trial(const char *trialsdir, struct report_trial *tr, struct util_acc *u)
{
	char *dir = xstrfmt("%s/%s", trialsdir, tr->id);
	char *p = xstrfmt("%s/metrics.jsonl", dir);
	int r = 0;
	if (fileio_exists(p))
		r = jsonfile_read_lines(p, metrics_line, tr);
	free(p);
	p = xstrfmt("%s/result.json", dir);
	if (r == 0 && fileio_exists(p))
		r = load_result(p, tr);
	free(p);
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
	char *p = xstrfmt("%s/experiment.json", dir);
	cJSON *doc;
	int r = jsonfile_read(p, &doc);
	if (r == 0) {
		const char *s;
		r = jsonfile_check_format(p, doc, "aah-experiment", 1);
		if (r == 0)
			r = json_get_number(p, doc, "created", 0, &exp->created);
		if (r == 0 && json_get_string(p, doc, "id", 1, &s) == 0 && s)
			xstrlcpy(exp->id, s, sizeof(exp->id));
		if (r == 0 && json_get_string(p, doc, "name", 1, &s) == 0 && s)
			xstrlcpy(exp->name, s, sizeof(exp->name));
		cJSON_Delete(doc);
	}
	free(p);
	return r;
}

int report_load(const char *dir, struct report_exp *exp)
{
	memset(exp, 0, sizeof(*exp));
	exp->best = -1;
	exp->dir = fileio_absolute(dir);
	if (load_experiment_json(exp->dir, exp) < 0)
		goto fail;
	if (!exp->id[0]) {
		const char *slash = strrchr(exp->dir, '/');
		xstrlcpy(exp->id, slash ? slash + 1 : exp->dir, sizeof(exp->id));
	}

	struct trial_table t = { exp, 0, NULL, 0 };
	char *trialsdir = xstrfmt("%s/trials", exp->dir);
	size_t n;
	char **names = list_dir(trialsdir, &n);
	for (size_t i = 0; i < n; i++)
		table_get(&t, names[i]);
	free_names(names, n);

	char *journal = xstrfmt("%s/journal.jsonl", exp->dir);
	int r = fileio_exists(journal) ? jsonfile_read_lines(journal, journal_line, &t) : 0;
	free(journal);
	free(t.slots);
	if (r == 0 && exp->ntrials)
		qsort(exp->trials, exp->ntrials, sizeof(*exp->trials), cmp_trial);

	struct util_acc u = { exp, 0 };
	for (size_t i = 0; r == 0 && i < exp->ntrials; i++)
		r = load_trial(trialsdir, &exp->trials[i], &u);
	if (r == 0 && exp->nutil)
		qsort(exp->util, exp->nutil, sizeof(*exp->util), cmp_util);

	for (size_t i = 0; r == 0 && i < exp->ntrials; i++) {
		const struct report_trial *tr = &exp->trials[i];
		if (tr->best_acc > 0 && (exp->best < 0 || tr->best_acc > exp->trials[exp->best].best_acc))
			exp->best = (long)i;
	}
	if (r == 0 && exp->best >= 0) {
		char *p = xstrfmt("%s/%s/arch.json", trialsdir, exp->trials[exp->best].id);
		if (fileio_exists(p) && jsonfile_read(p, &exp->best_arch) < 0)
			r = -1;
		free(p);
	}
	free(trialsdir);
	if (r == 0)
		return 0;
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
	cJSON_Delete(exp->best_arch);
	memset(exp, 0, sizeof(*exp));
	exp->best = -1;
}
