/* tuner.c: the generic tuner layer: registry, history, seeding, and the
 * experiment-level proposal (`aah-runner propose`). */
#include "tuner.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"    /* fileio_lock, fileio_mkdir_p, fileio_exists */
#include "jsonfile.h"  /* jsonfile_read, jsonfile_write */
#include "runner/store/expdir.h" /* expdir_trial_dir, expdir_trial_list */
#include "runner/store/journal.h" /* journal_replay: which trials have settled */
#include "runner/store/outcome.h" /* outcome_read, outcome_learnable: what a trial achieved */
#include "tuner_int.h"
#include "util.h"

static const struct tuner_ops *const registry[] = {
	&tuner_ops_nm,
	&tuner_ops_tpe,
	&tuner_ops_random,
	&tuner_ops_none,
};

const struct tuner_ops *const *tuner_registry(size_t *n)
{
	*n = ARRAY_SIZE(registry);
	return registry;
}

static const struct tuner_ops *lookup(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(registry); i++)
		if (!strcmp(registry[i]->name, name))
			return registry[i];
	return NULL;
}

int tuner_known(const char *name)
{
	return lookup(name) != NULL;
}

const char *tuner_known_names(void)
{
	return "NetworkMorphism, TPE, Random, None";
}

int tuner_arg_number(const struct tuner *t, const char *key, double def, double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(t->class_args, key);
	*out = def;
	if (!v)
		return 0;
	if (cJSON_IsNumber(v)) {
		*out = v->valuedouble;
		return 0;
	}
	if (cJSON_IsString(v) && util_parse_double(v->valuestring, out) == 0)
		return 0;
	return error("tuner %s: classArgs.%s must be a number", t->name, key);
}

int tuner_arg_string(const struct tuner *t, const char *key, const char *def, const char **out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(t->class_args, key);
	*out = def;
	if (!v)
		return 0;
	if (!cJSON_IsString(v))
		return error("tuner %s: classArgs.%s must be a string", t->name, key);
	*out = v->valuestring;
	return 0;
}

cJSON *tuner_params_doc(const struct tuner *t, unsigned seq, cJSON *parameters)
{
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "format", "aah-params/1");
	cJSON_AddNumberToObject(d, "trial_seq", seq);
	cJSON_AddStringToObject(d, "tuner", t->name);
	cJSON_AddItemToObject(d, "parameters", parameters ? parameters : cJSON_CreateObject());
	return d;
}

int tuner_create(struct tuner **out, const struct tuner_config *cfg)
{
	const struct tuner_ops *ops = lookup(cfg->name);
	*out = NULL;
	if (!ops)
		return error("unknown tuner '%s' (known: %s)", cfg->name ? cfg->name : "(none)",
			     tuner_known_names());
	if (cfg->class_args && !cJSON_IsObject(cfg->class_args))
		return error("tuner %s: classArgs must be a mapping", cfg->name);
	struct tuner *t = xcalloc(1, sizeof(*t));
	t->ops = ops;
	t->name = xstrdup(ops->name);
	t->class_args = cfg->class_args ? cJSON_Duplicate(cfg->class_args, 1) : cJSON_CreateObject();
	t->seed = cfg->seed;
	t->initial_arch = cfg->initial_arch ? xstrdup(cfg->initial_arch) : NULL;
	t->max_layers = cfg->max_layers;
	t->max_params = cfg->max_params;
	t->max_flops = cfg->max_flops;
	t->inherit_weights = cfg->inherit_weights;
	t->threads = cfg->threads;
	if (space_parse(&t->space, cfg->search_space) < 0 || (ops->init && ops->init(t) < 0)) {
		tuner_free(t);
		return -1;
	}
	*out = t;
	return 0;
}

void tuner_free(struct tuner *t)
{
	if (!t)
		return;
	if (t->ops->release)
		t->ops->release(t);
	for (size_t i = 0; i < t->nhist; i++) {
		cJSON_Delete(t->hist[i].arch);
		cJSON_Delete(t->hist[i].params);
	}
	free(t->hist);
	space_release(&t->space);
	cJSON_Delete(t->class_args);
	free(t->initial_arch);
	free(t->name);
	free(t);
}

/* Record an observation; takes ownership of arch and params. */
static int record(struct tuner *t, unsigned seq, const char *place, cJSON *arch, cJSON *params,
		  enum tuner_obs_state state, double metric)
{
	size_t i = t->nhist;
	while (i > 0 && t->hist[i - 1].seq != seq)
		i--;
	struct tuner_hist old;
	int had = i > 0;
	if (had) {
		i--;
		old = t->hist[i];
		t->hist[i].arch = arch;
		t->hist[i].params = params;
	} else {
		if (t->nhist == t->ahist) {
			t->ahist = t->ahist ? 2 * t->ahist : 64;
			t->hist = xrealloc(t->hist, t->ahist * sizeof(*t->hist));
		}
		i = t->nhist++;
		t->hist[i] = (struct tuner_hist){ .seq = seq, .arch = arch, .params = params };
	}
	t->hist[i].state = state;
	t->hist[i].metric = state == TUNER_OBS_DONE ? metric : 0.0;
	xstrlcpy(t->hist[i].place, place ? place : "", sizeof(t->hist[i].place));
	int rc = t->ops->observe && !t->deferred ? t->ops->observe(t, i, had ? &old : NULL) : 0;
	if (!had && t->deferred == TUNER_DEFER_BULK && t->ops->shed)
		t->ops->shed(t, i);
	if (had) {
		cJSON_Delete(old.arch);
		cJSON_Delete(old.params);
	}
	return rc;
}

int tuner_observe(struct tuner *t, const struct tuner_observation *obs)
{
	return tuner_observe_at(t, obs, NULL);
}

int tuner_observe_at(struct tuner *t, const struct tuner_observation *obs, const char *place)
{
	if (obs->trial_seq == 0)
		return error("tuner: trial_seq must be 1 or more");
	if (obs->state == TUNER_OBS_DONE && !(obs->metric >= -1e300 && obs->metric <= 1e300))
		return error("tuner: trial %u has a metric that is not a number", obs->trial_seq);
	return record(t, obs->trial_seq, place,
		      obs->arch ? cJSON_Duplicate(obs->arch, 1) : NULL,
		      obs->params ? cJSON_Duplicate(obs->params, 1) : NULL, obs->state, obs->metric);
}

int tuner_propose(struct tuner *t, unsigned trial_seq, cJSON **arch, cJSON **params)
{
	struct trng rng;
	*arch = NULL;
	*params = NULL;
	if (trial_seq == 0)
		return error("tuner: trial_seq must be 1 or more");
	trng_seed(&rng, t->seed, trial_seq);
	if (t->ops->propose(t, trial_seq, &rng, arch, params) < 0) {
		cJSON_Delete(*arch);
		cJSON_Delete(*params);
		*arch = *params = NULL;
		return -1;
	}
	if (!*arch && !*params)
		return 0;
	return record(t, trial_seq, NULL, *arch ? cJSON_Duplicate(*arch, 1) : NULL,
		      *params ? cJSON_Duplicate(*params, 1) : NULL, TUNER_OBS_PENDING, 0.0);
}

/* ---- the state cache (placement: trial) ------------------------------- */

#define STATE_FORMAT "aah-tuner-state/1"

uint64_t tuner_fnv(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static const char *byte_order(void)
{
	const uint16_t one = 1;
	return *(const unsigned char *)&one ? "little" : "big";
}

void tuner_defer(struct tuner *t)
{
	t->deferred = TUNER_DEFER_REPLAY;
}

/* Observe history entries [from, to) as a one-at-a-time replay would: the
 * implementation sees the history as it was when each entry arrived. */
static int observe_range(struct tuner *t, size_t from, size_t to)
{
	size_t all = t->nhist;
	int rc = 0;
	for (size_t i = from; i < to && rc == 0 && t->ops->observe; i++) {
		t->nhist = i + 1;
		rc = t->ops->observe(t, i, NULL);
	}
	t->nhist = all;
	return rc;
}

/* The header line and payload of a cache file; 1 when they are the state
 * of this tuner's first observations (installed), 0 with a warning when
 * not. */
static int state_read(struct tuner *t, const char *path, const char *key)
{
	char *data = NULL;
	size_t len = 0;
	cJSON *h = NULL;
	const char *why = NULL;
	int ok = 0;
	if (!fileio_exists(path))
		return 0;
	if (fileio_read(path, (size_t)1 << 30, &data, &len) < 0) {
		why = "unreadable";
		goto out;
	}
	char *nl = memchr(data, '\n', len);
	if (!nl || !(h = cJSON_ParseWithLength(data, (size_t)(nl - data)))) {
		why = "no header line";
		goto out;
	}
	const unsigned char *payload = (const unsigned char *)nl + 1;
	size_t plen = len - (size_t)(nl + 1 - data);
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(h, "format");
	const cJSON *ex = cJSON_GetObjectItemCaseSensitive(h, "experiment");
	const cJSON *tn = cJSON_GetObjectItemCaseSensitive(h, "tuner");
	const cJSON *bo = cJSON_GetObjectItemCaseSensitive(h, "byte_order");
	const cJSON *no = cJSON_GetObjectItemCaseSensitive(h, "observations");
	const cJSON *pb = cJSON_GetObjectItemCaseSensitive(h, "payload_bytes");
	const cJSON *ck = cJSON_GetObjectItemCaseSensitive(h, "checksum");
	char sum[17];
	if (!cJSON_IsString(f) || strcmp(f->valuestring, STATE_FORMAT))
		why = "another format";
	else if (!cJSON_IsString(ex) || strcmp(ex->valuestring, key))
		why = "another experiment";
	else if (!cJSON_IsString(tn) || strcmp(tn->valuestring, t->name))
		why = "another tuner";
	else if (!cJSON_IsString(bo) || strcmp(bo->valuestring, byte_order()))
		why = "another byte order";
	else if (!cJSON_IsNumber(no) || no->valuedouble < 1 || no->valuedouble > (double)t->nhist)
		why = "more observations than the history has";
	else if (!cJSON_IsNumber(pb) || pb->valuedouble != (double)plen)
		why = "truncated or padded";
	else if (snprintf(sum, sizeof(sum), "%016llx",
			  (unsigned long long)tuner_fnv(TUNER_FNV_INIT, payload, plen)) != 16 ||
		 !cJSON_IsString(ck) || strcmp(ck->valuestring, sum))
		why = "checksum mismatch";
	if (why)
		goto out;
	size_t n = (size_t)no->valuedouble, all = t->nhist;
	t->nhist = n;
	ok = t->ops->state_load(t, h, payload, plen);
	t->nhist = all;
	if (ok < 0)
		ok = 0;
	if (!ok)
		why = "it does not match the history";
	else
		ok = (int)n;
out:
	if (why)
		warning("tuner: %s: %s; replaying the history", path, why);
	cJSON_Delete(h);
	free(data);
	return ok;
}

static int state_write(struct tuner *t, size_t n, const char *path, const char *key)
{
	size_t all = t->nhist;
	unsigned char *payload = NULL;
	size_t plen = 0;
	cJSON *h = cJSON_CreateObject();
	char sum[17];
	cJSON_AddStringToObject(h, "format", STATE_FORMAT);
	cJSON_AddStringToObject(h, "experiment", key);
	cJSON_AddStringToObject(h, "tuner", t->name);
	cJSON_AddStringToObject(h, "byte_order", byte_order());
	cJSON_AddNumberToObject(h, "observations", (double)n);
	t->nhist = n;
	int rc = t->ops->state_save(t, h, &payload, &plen);
	t->nhist = all;
	if (rc == 0) {
		snprintf(sum, sizeof(sum), "%016llx",
			 (unsigned long long)tuner_fnv(TUNER_FNV_INIT, payload, plen));
		cJSON_AddNumberToObject(h, "payload_bytes", (double)plen);
		cJSON_AddStringToObject(h, "checksum", sum);
		char *line = cJSON_PrintUnformatted(h);
		size_t hl = strlen(line);
		char *buf = xmalloc(hl + 1 + plen);
		memcpy(buf, line, hl);
		buf[hl] = '\n';
		memcpy(buf + hl + 1, payload, plen);
		rc = fileio_write_atomic(path, buf, hl + 1 + plen);
		free(buf);
		free(line);
	}
	free(payload);
	cJSON_Delete(h);
	return rc;
}

long tuner_catch_up(struct tuner *t, const char *path, const char *key)
{
	int cache = path && t->ops->state_save && t->ops->state_load;
	size_t from = 0, done = 0;
	t->deferred = 0;
	while (done < t->nhist && t->hist[done].state != TUNER_OBS_PENDING)
		done++;
	if (cache)
		from = (size_t)state_read(t, path, key);
	if (from == 0 && t->ops->load) {   /* a fresh tuner: the whole history at once */
		int r = t->ops->load(t);
		if (r < 0)
			return -1;
		if (r > 0)
			return 0;   /* a windowed state, which is not cached */
	}
	if (observe_range(t, from, done) < 0)
		return -1;
	if (cache && done > from && state_write(t, done, path, key) < 0)
		warning("tuner: cannot write the state cache %s; the next proposer replays", path);
	if (observe_range(t, done, t->nhist) < 0)
		return -1;
	return (long)from;
}

unsigned tuner_proposer_limit(const struct tuner *t)
{
	return t->ops->proposer_limit ? t->ops->proposer_limit(t) : 0;
}

/* ---- experiment directories ------------------------------------------- */

/* Read trials/<id>/<file> if it exists: 0 with *out NULL when absent. */
static int read_optional(const char *dir, enum expdir_file file, cJSON **out)
{
	char *path = expdir_file(dir, file);
	int rc = 0;
	*out = NULL;
	if (fileio_exists(path))
		rc = jsonfile_read(path, out);
	free(path);
	return rc;
}

static const struct tuner_hist *find_hist(const struct tuner *t, unsigned seq)
{
	for (size_t i = t->nhist; i > 0; i--)
		if (t->hist[i - 1].seq == seq)
			return &t->hist[i - 1];
	return NULL;
}

/* Learn trial seq; settled: its final state in the journal, or
 * TRIAL_UNKNOWN while the runner has not settled it (result.json's status
 * then stands in, as the runner will read it); place: its last launch's;
 * launched: the journal has it submitted. A proposal of a trial never
 * launched may be unsynced (a fill round syncs its files once, before it
 * journals them: tuner_write_proposal): after a power cut it may not
 * read, and then it is none, proposed again. */
static int load_trial(struct tuner *t, const char *expdir, unsigned seq, enum trial_state settled,
		      const char *place, int launched)
{
	const struct tuner_hist *known = find_hist(t, seq);
	if (known && known->state != TUNER_OBS_PENDING)
		return 0;   /* finished trials do not change */
	char *dir = expdir_trial_dir(expdir, seq);
	cJSON *arch = NULL, *params = NULL;
	int rc = -1;
	int held = util_hold_errors(!launched);
	int unread = read_optional(dir, EXPDIR_ARCH, &arch) < 0 ||
		     read_optional(dir, EXPDIR_PARAMS, &params) < 0;
	util_hold_errors(held);
	if (unread && launched)
		goto out;
	if (unread) {   /* torn by a power cut: never launched, so none */
		char id[EXPDIR_TRIAL_ID_SIZE];
		warning("tuner: trial %s: its proposal, never launched, does not read; "
			"it is proposed again: %s", expdir_trial_id(seq, id), util_last_error());
		cJSON_Delete(arch);
		cJSON_Delete(params);
		arch = params = NULL;
	}
	if (!arch && !params) {   /* a trial directory without a proposal yet */
		rc = 0;
		goto out;
	}
	enum tuner_obs_state state = TUNER_OBS_PENDING;
	double metric = 0.0;
	struct outcome o;
	held = util_hold_errors(1);
	int bad = outcome_read(expdir, seq, place, settled, 0, &o) < 0;
	util_hold_errors(held);
	if (bad && o.have_result < 0) {
		/* a torn or foreign result: the trial failed as far as we know */
		char id[EXPDIR_TRIAL_ID_SIZE];
		warning("tuner: trial %s: unreadable result.json counts as failed: %s",
			expdir_trial_id(seq, id), util_last_error());
		state = TUNER_OBS_FAILED;
	} else if (o.have_result > 0 || expdir_state_final(settled)) {
		state = outcome_learnable(o.state, o.best_acc) ? TUNER_OBS_DONE : TUNER_OBS_FAILED;
		metric = state == TUNER_OBS_DONE ? o.best_acc : 0.0;
	}
	outcome_release(&o);
	rc = record(t, seq, place, arch, params, state, metric);
	arch = params = NULL;
out:
	cJSON_Delete(arch);
	cJSON_Delete(params);
	free(dir);
	return rc;
}

/* Trial seq's record in the journal (runner/store/journal.c, the one
 * reducer), or NULL. */
static const struct trial_rec *journaled(const struct journal *jr, unsigned seq)
{
	const struct trial_rec *r = seq && seq <= jr->ntrials ? &jr->trials[seq - 1] : NULL;
	return r && r->attempt ? r : NULL;
}

/* Trial seq, whose proposal is made, as pending: read from its last
 * launch's place (a retry's proposal is its first attempt's). */
static int load_pending(struct tuner *t, const char *expdir, unsigned seq)
{
	struct journal jr = { 0 };
	if (expdir_journal_exists(expdir) && journal_replay(&jr, expdir) < 0)
		warning("tuner: the journal cannot be read: %s", util_last_error());
	const struct trial_rec *r = journaled(&jr, seq);
	int rc = load_trial(t, expdir, seq, TRIAL_UNKNOWN, r ? r->place : NULL, 1);
	journal_release(&jr);
	return rc;
}

int tuner_load_history(struct tuner *t, const char *expdir)
{
	unsigned *seqs;
	size_t n;
	struct journal jr = { 0 };
	if (expdir_journal_exists(expdir) && journal_replay(&jr, expdir) < 0)
		warning("tuner: the journal cannot be read; trials count by their result.json: %s",
			util_last_error());
	int rc = expdir_trial_list(expdir, &seqs, &n);
	for (size_t i = 0; i < n && rc == 0; i++) {
		const struct trial_rec *r = journaled(&jr, seqs[i]);
		rc = load_trial(t, expdir, seqs[i],
				r && expdir_state_final(r->state) ? r->state : TRIAL_UNKNOWN,
				r ? r->place : NULL, r && r->submitted > 0);
	}
	free(seqs);
	journal_release(&jr);
	return rc;
}

int tuner_load_experiment(struct tuner *t, const char *expdir)
{
	t->deferred = TUNER_DEFER_BULK;
	if (tuner_load_history(t, expdir) < 0) {
		t->deferred = 0;
		return -1;
	}
	return tuner_catch_up(t, NULL, NULL) < 0 ? -1 : 0;
}

int tuner_write_proposal(const struct tuner *t, const char *dir, cJSON *arch, const cJSON *params,
			 unsigned flags)
{
	cJSON *meta = arch ? cJSON_GetObjectItemCaseSensitive(arch, "meta") : NULL;
	cJSON *morph = meta ? cJSON_DetachItemFromObjectCaseSensitive(meta, "morph") : NULL;
	int rc = 0;
	if (morph && t->inherit_weights) {
		char *p = expdir_file(dir, EXPDIR_MORPH);
		rc = jsonfile_write_flags(p, morph, flags);
		free(p);
	}
	cJSON_Delete(morph);
	if (rc == 0 && arch) {
		char *p = expdir_file(dir, EXPDIR_ARCH);
		rc = jsonfile_write_flags(p, arch, flags);
		free(p);
	}
	if (rc == 0 && params) {
		char *p = expdir_file(dir, EXPDIR_PARAMS);
		rc = jsonfile_write_flags(p, params, flags);
		free(p);
	}
	return rc;
}

/* Lock, keep a complete proposal, otherwise bring the history up to date
 * (with the state cache when cache_key is set) and propose. */
static int propose_locked(struct tuner *t, const char *expdir, unsigned trial_seq,
			  const char *cache_key)
{
	if (trial_seq == 0 || trial_seq > EXPDIR_TRIAL_MAX)
		return error("tuner: trial sequence number %u is out of range (1..%u)", trial_seq,
			     EXPDIR_TRIAL_MAX);
	char *lockpath = xstrfmt("%s/tuner.lock", expdir);
	char *dir = expdir_trial_dir(expdir, trial_seq);
	char *arch_path = expdir_file(dir, EXPDIR_ARCH);
	char *params_path = expdir_file(dir, EXPDIR_PARAMS);
	cJSON *arch = NULL, *params = NULL;
	int rc = -1;
	int fd = fileio_lock(lockpath);
	if (fd < 0)
		goto out;
	if (fileio_exists(params_path)) {   /* params.json is written last: proposal complete */
		rc = load_pending(t, expdir, trial_seq);   /* a live tuner learns it */
		goto out_unlock;
	}
	if (cache_key) {
		char *cache = xstrfmt("%s/tuner.cache", expdir);
		tuner_defer(t);
		long got = tuner_load_history(t, expdir) < 0 ? -1 : tuner_catch_up(t, cache, cache_key);
		free(cache);
		if (got < 0)
			goto out_unlock;
	} else if (tuner_load_history(t, expdir) < 0) {
		goto out_unlock;
	}
	if (tuner_propose(t, trial_seq, &arch, &params) < 0)
		goto out_unlock;
	if ((arch || params) && fileio_mkdir_p(dir, 0755) < 0)
		goto out_unlock;
	if (tuner_write_proposal(t, dir, arch, params, 0) < 0)
		goto out_unlock;
	rc = 0;
out_unlock:
	fileio_unlock(fd);
out:
	cJSON_Delete(arch);
	cJSON_Delete(params);
	free(params_path);
	free(arch_path);
	free(dir);
	free(lockpath);
	return rc;
}

int tuner_propose_into(struct tuner *t, const char *expdir, unsigned trial_seq)
{
	return propose_locked(t, expdir, trial_seq, NULL);
}

int tuner_propose_experiment(const char *expdir, const struct tuner_config *cfg,
			     unsigned trial_seq)
{
	return tuner_propose_cached(expdir, NULL, cfg, trial_seq);
}

int tuner_propose_cached(const char *expdir, const char *exp_id, const struct tuner_config *cfg,
			 unsigned trial_seq)
{
	struct tuner *t = NULL;
	if (tuner_create(&t, cfg) < 0)
		return -1;
	int rc = propose_locked(t, expdir, trial_seq, exp_id);
	tuner_free(t);
	return rc;
}
