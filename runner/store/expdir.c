/* expdir.c: the experiment directory's formats: state and event names,
 * trial paths, the journal, experiment.json, result.json, metrics.jsonl. */
#include "runner/store/expdir.h"
#include "fileio.h"   /* fileio_exists, fileio_list_dir, FILEIO_* */
#include "jsonfile.h" /* jsonfile_read_lines, json_get_* */
#include "strvec.h"
#include "util.h"

#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- trial states ------------------------------------------------------ */

static const char *const state_names[TRIAL_NSTATES] = {
	[TRIAL_QUEUED] = "queued",
	[TRIAL_RUNNING] = "running",
	[TRIAL_SUCCEEDED] = "succeeded",
	[TRIAL_EARLY_STOPPED] = "early_stopped",
	[TRIAL_FAILED] = "failed",
	[TRIAL_CANCELED] = "canceled",
	[TRIAL_UNKNOWN] = "unknown",
};

const char *expdir_state_name(enum trial_state s)
{
	return (unsigned)s < TRIAL_NSTATES ? state_names[s] : state_names[TRIAL_UNKNOWN];
}

int expdir_state_parse(const char *name, enum trial_state *out)
{
	for (int i = 0; i < TRIAL_NSTATES; i++) {
		if (!strcmp(state_names[i], name)) {
			*out = (enum trial_state)i;
			return 0;
		}
	}
	return -1;
}

int expdir_state_final(enum trial_state s)
{
	return s == TRIAL_SUCCEEDED || s == TRIAL_EARLY_STOPPED || s == TRIAL_FAILED ||
	       s == TRIAL_CANCELED;
}

/* ---- trial ids and paths ------------------------------------------------ */

const char *expdir_trial_id(unsigned seq, char buf[EXPDIR_TRIAL_ID_SIZE])
{
	snprintf(buf, EXPDIR_TRIAL_ID_SIZE, "%06u", seq);
	return buf;
}

int expdir_trial_seq(const char *id, unsigned *seq)
{
	long v;
	if (strlen(id) != 6 || strspn(id, "0123456789") != 6 ||
	    util_parse_long(id, 1, EXPDIR_TRIAL_MAX, &v) < 0)
		return -1;
	*seq = (unsigned)v;
	return 0;
}

char *expdir_trial_dir(const char *expdir, unsigned seq)
{
	char id[EXPDIR_TRIAL_ID_SIZE];
	return xstrfmt("%s/trials/%s", expdir, expdir_trial_id(seq, id));
}

/* The files of a trial directory: the trial's own, or those each launch
 * writes into its place. */
static const struct {
	const char *name;
	int trials;
} files[EXPDIR_NFILES] = {
	[EXPDIR_ARCH] = { "arch.json", 1 },
	[EXPDIR_PARAMS] = { "params.json", 1 },
	[EXPDIR_MORPH] = { "morph.json", 1 },
	[EXPDIR_RESULT] = { "result.json", 0 },
	[EXPDIR_METRICS] = { "metrics.jsonl", 0 },
	[EXPDIR_LAUNCH] = { "launch.json", 0 },
	[EXPDIR_RANK_TABLE] = { "rank_table.json", 0 },
	[EXPDIR_HOSTFILE] = { "hostfile", 0 },
	[EXPDIR_TRIAL_LOG] = { "trial.log", 1 },
	[EXPDIR_WAITING] = { "waiting", 1 },
};

const char *expdir_file_name(enum expdir_file f)
{
	if ((unsigned)f >= EXPDIR_NFILES || !files[f].name)
		BUG("no trial file %d", (int)f);
	return files[f].name;
}

const char *expdir_place_name(unsigned attempt, unsigned launch, char buf[EXPDIR_PLACE_SIZE])
{
	if (attempt <= 1 && !launch)
		buf[0] = '\0';
	else if (!launch)
		snprintf(buf, EXPDIR_PLACE_SIZE, "attempt-%u", attempt);
	else
		snprintf(buf, EXPDIR_PLACE_SIZE, "attempt-%u.%u", attempt ? attempt : 1, launch);
	return buf;
}

int expdir_place_valid(const char *place)
{
	unsigned a, r;
	char again[EXPDIR_PLACE_SIZE];
	int n = 0;
	if (!*place)
		return 1;
	if (strlen(place) >= EXPDIR_PLACE_SIZE)
		return 0;
	if (sscanf(place, "attempt-%u.%u%n", &a, &r, &n) == 2 && !place[n])
		return !strcmp(expdir_place_name(a, r, again), place);
	if (sscanf(place, "attempt-%u%n", &a, &n) == 1 && !place[n])
		return !strcmp(expdir_place_name(a, 0, again), place);
	return 0;
}

char *expdir_place_dir(const char *expdir, unsigned seq, const char *place)
{
	char id[EXPDIR_TRIAL_ID_SIZE];
	if (!place || !*place)
		return xstrfmt("%s/trials/%s", expdir, expdir_trial_id(seq, id));
	return xstrfmt("%s/trials/%s/%s", expdir, expdir_trial_id(seq, id), place);
}

int expdir_trial_owns(const char *name)
{
	for (size_t i = 0; i < EXPDIR_NFILES; i++)
		if (files[i].name && !strcmp(files[i].name, name))
			return files[i].trials;
	return *name && expdir_place_valid(name);
}

char *expdir_file(const char *trial_dir, enum expdir_file f)
{
	return xstrfmt("%s/%s", trial_dir, expdir_file_name(f));
}

char *expdir_trial_file(const char *expdir, unsigned seq, enum expdir_file f)
{
	char id[EXPDIR_TRIAL_ID_SIZE];
	return xstrfmt("%s/trials/%s/%s", expdir, expdir_trial_id(seq, id), expdir_file_name(f));
}

char *expdir_workdir(const char *expdir)
{
	char *dir = realpath(expdir, NULL);
	if (!dir)
		dir = fileio_absolute(expdir);
	for (int up = 0; up < 2; up++) {   /* <id>, then experiments/ */
		char *slash = strrchr(dir, '/');
		if (!slash || slash == dir) {
			dir[1] = '\0';
			dir[0] = '/';
			break;
		}
		*slash = '\0';
	}
	return dir;
}

static int is_trial_dir(const char *path, const char *name, void *arg)
{
	unsigned seq;
	(void)path;
	(void)arg;
	return expdir_trial_seq(name, &seq) == 0;
}

int expdir_trial_list(const char *expdir, unsigned **seqs, size_t *n)
{
	char *tdir = xstrfmt("%s/trials", expdir);
	struct strvec names = STRVEC_INIT;
	*seqs = NULL;
	*n = 0;
	if (fileio_list_dir(tdir, is_trial_dir, NULL, &names) < 0) {
		int r = errno == ENOENT ? 0 : error_errno("cannot read '%s'", tdir);
		free(tdir);
		return r;
	}
	free(tdir);
	*seqs = xcalloc(names.n ? names.n : 1, sizeof(**seqs));
	for (size_t i = 0; i < names.n; i++)
		expdir_trial_seq(names.v[i], &(*seqs)[(*n)++]);
	strvec_clear(&names);   /* six digits each: in name order is in number order */
	return 0;
}

/* ---- experiment.json ---------------------------------------------------- */

static char *info_path(const char *expdir)
{
	return xstrfmt("%s/experiment.json", expdir);
}

int expdir_info_write(const char *expdir, const struct expdir_info *info)
{
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "format", "aah-experiment/1");
	cJSON_AddStringToObject(doc, "id", info->id);
	if (info->name)
		cJSON_AddStringToObject(doc, "name", info->name);
	cJSON_AddNumberToObject(doc, "created", info->created);
	cJSON_AddStringToObject(doc, "config", "config.yml");
	if (info->config_source)
		cJSON_AddStringToObject(doc, "config_source", info->config_source);
	if (info->workdir)
		cJSON_AddStringToObject(doc, "workdir", info->workdir);
	cJSON_AddNumberToObject(doc, "seed", (double)info->seed);
	char *p = info_path(expdir);
	int r = jsonfile_write(p, doc);
	free(p);
	cJSON_Delete(doc);
	return r;
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

int expdir_info_read(const char *expdir, struct expdir_info *info)
{
	char *p = info_path(expdir);
	const char *id = NULL, *name = NULL, *src = NULL, *wd = NULL;
	long seed = 0;
	cJSON *doc;
	memset(info, 0, sizeof(*info));
	int r = jsonfile_read(p, &doc);
	if (r == 0) {
		if (jsonfile_check_format(p, doc, "aah-experiment", 1) < 0 ||
		    json_get_string(p, doc, "id", 0, &id) < 0 ||
		    json_get_number(p, doc, "created", 0, &info->created) < 0 ||
		    json_get_string(p, doc, "name", 1, &name) < 0 ||
		    json_get_string(p, doc, "config_source", 1, &src) < 0 ||
		    json_get_string(p, doc, "workdir", 1, &wd) < 0 ||
		    /* the config's range of seed (runner/config/config_keys.c) */
		    json_get_int(p, doc, "seed", 1, 0, 2147483647, &seed) < 0) {
			r = -1;
		} else {
			info->id = xstrdup(id);
			info->name = dup_or_null(name);
			info->config_source = dup_or_null(src);
			info->workdir = dup_or_null(wd);
			info->seed = seed;
		}
		cJSON_Delete(doc);
	}
	free(p);
	return r;
}

void expdir_info_release(struct expdir_info *info)
{
	free(info->id);
	free(info->name);
	free(info->config_source);
	free(info->workdir);
	memset(info, 0, sizeof(*info));
}

/* ---- the journal --------------------------------------------------------- */

#define EV_TRIAL 1u     /* the event names a trial */

static const struct {
	const char *name;
	unsigned flags;
} events[] = {
	[EXPDIR_EV_EXPERIMENT_CREATED] = { "experiment_created", 0 },
	[EXPDIR_EV_RUNNER_STARTED] = { "runner_started", 0 },
	[EXPDIR_EV_RUNNER_STOPPED] = { "runner_stopped", 0 },
	[EXPDIR_EV_EXPERIMENT_DONE] = { "experiment_done", 0 },
	[EXPDIR_EV_TRIAL_CREATED] = { "trial_created", EV_TRIAL },
	[EXPDIR_EV_TRIAL_SUBMITTED] = { "trial_submitted", EV_TRIAL },
	[EXPDIR_EV_TRIAL_FINISHED] = { "trial_finished", EV_TRIAL },
	[EXPDIR_EV_TRIAL_RETRY] = { "trial_retry", EV_TRIAL },
	[EXPDIR_EV_TRIAL_NOTE] = { "trial_note", EV_TRIAL },
	[EXPDIR_EV_UNKNOWN] = { "unknown", 0 },
};

const char *expdir_event_name(enum expdir_event_kind kind)
{
	return (unsigned)kind < ARRAY_SIZE(events) ? events[kind].name : events[EXPDIR_EV_UNKNOWN].name;
}

static enum expdir_event_kind event_kind(const char *name)
{
	for (size_t i = 0; i < EXPDIR_EV_UNKNOWN; i++)
		if (!strcmp(events[i].name, name))
			return (enum expdir_event_kind)i;
	return EXPDIR_EV_UNKNOWN;
}

static const char *str_or_null(const cJSON *doc, const char *key)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, key));
}

static double num_or(const cJSON *doc, const char *key, double def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, key);
	return cJSON_IsNumber(v) ? v->valuedouble : def;
}

/* The trial an event names: "trial_seq", else the id in "trial". */
static int event_trial(const char *what, const cJSON *doc, unsigned *seq)
{
	long v;
	const char *id = str_or_null(doc, "trial");
	if (cJSON_GetObjectItemCaseSensitive(doc, "trial_seq")) {
		if (json_get_int(what, doc, "trial_seq", 0, 1, 1l << 30, &v) < 0)
			return -1;
		*seq = (unsigned)v;
		return 0;
	}
	if (id && expdir_trial_seq(id, seq) == 0)
		return 0;
	return error("%s: event %s names no trial (\"trial_seq\" or a \"trial\" id)", what,
		     str_or_null(doc, "event"));
}

/* An optional integer field into *out (def when absent): a number outside
 * [min, max] or with a fraction is an error naming the field, never a
 * conversion of a value its type cannot hold. */
static int int_or(const char *what, const cJSON *doc, const char *key, long def, long min,
		  long max, long *out)
{
	*out = def;
	return json_get_int(what, doc, key, 1, min, max, out);
}

/* trial_submitted's network FLOPs: all three fields or none. */
static int decode_arch_flops(const char *what, const cJSON *doc, struct expdir_arch_flops *a)
{
	long classes;
	if (int_or(what, doc, "arch_classes", 0, 1, INT_MAX, &classes) < 0)
		return -1;
	if (!classes)
		return 0;
	if (json_get_number(what, doc, "arch_flops_fwd", 0, &a->fwd) < 0 ||
	    json_get_number(what, doc, "arch_flops_bwd", 0, &a->bwd) < 0)
		return -1;
	if (a->fwd <= 0 || a->bwd < 0)
		return error("%s: trial_submitted: \"arch_flops_fwd\" %g and \"arch_flops_bwd\" %g "
			     "are not a network's FLOPs per image", what, a->fwd, a->bwd);
	a->classes = (int)classes;
	return 0;
}

/* Decode one journal line; what names the journal in errors. */
static int decode(const char *what, const cJSON *doc, struct expdir_event *ev)
{
	long v;
	memset(ev, 0, sizeof(*ev));
	ev->doc = doc;
	if (json_get_string(what, doc, "event", 0, &ev->name) < 0)
		return -1;
	ev->kind = event_kind(ev->name);
	/* seq: below 2^53, where a double still holds every integer */
	if (int_or(what, doc, "seq", -1, 0, 1l << 53, &ev->seq) < 0)
		return -1;
	ev->ts = num_or(doc, "ts", 0);
	ev->slot = -1;
	ev->exit_code = -1;
	ev->best_val_acc = NAN;
	ev->state = TRIAL_UNKNOWN;
	if (ev->kind == EXPDIR_EV_UNKNOWN)
		return 0;    /* a newer writer's event: only its seq and ts count */
	if (events[ev->kind].flags & EV_TRIAL) {
		if (event_trial(what, doc, &ev->trial_seq) < 0 ||
		    int_or(what, doc, "attempt", 0, 0, UINT_MAX, &v) < 0)
			return -1;
		ev->attempt = (unsigned)v;
	}
	ev->reason = str_or_null(doc, "reason");
	switch (ev->kind) {
	case EXPDIR_EV_EXPERIMENT_CREATED:
		ev->exp_name = str_or_null(doc, "name");
		break;
	case EXPDIR_EV_TRIAL_SUBMITTED:
		ev->job = str_or_null(doc, "job");
		ev->gpus = str_or_null(doc, "gpus");
		if (int_or(what, doc, "slot", -1, -1, INT_MAX, &v) < 0)
			return -1;
		ev->slot = (int)v;
		ev->place = str_or_null(doc, "place");
		if (ev->place && !expdir_place_valid(ev->place))
			return error("%s: trial_submitted: \"place\" '%s' is not an attempt's place "
				     "(attempt-N or attempt-N.R)", what, ev->place);
		return decode_arch_flops(what, doc, &ev->arch);
	case EXPDIR_EV_TRIAL_RETRY:
		if (int_or(what, doc, "relaunch", 0, 0, UINT_MAX, &v) < 0)
			return -1;
		ev->relaunch = (unsigned)v;
		ev->keep_place = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "keep_place"));
		break;
	case EXPDIR_EV_TRIAL_FINISHED: {
		const char *st = str_or_null(doc, "state");
		if (!st || expdir_state_parse(st, &ev->state) < 0 || !expdir_state_final(ev->state))
			return error("%s: trial_finished with a bad state", what);
		if (int_or(what, doc, "exit_code", -1, INT_MIN, INT_MAX, &v) < 0)
			return -1;
		ev->exit_code = (int)v;
		ev->best_val_acc = num_or(doc, "best_val_acc", NAN);
		ev->flops = num_or(doc, "flops", 0);
		break;
	}
	default:
		break;
	}
	return 0;
}

struct replay {
	const char *path;
	expdir_visit_fn visit;
	void *arg;
};

static int replay_line(const cJSON *line, void *arg)
{
	struct replay *rp = arg;
	struct expdir_event ev;
	if (decode(rp->path, line, &ev) < 0)
		return -1;
	return rp->visit(&ev, rp->arg);
}

static char *journal_path(const char *expdir)
{
	return xstrfmt("%s/journal.jsonl", expdir);
}

int expdir_journal_exists(const char *expdir)
{
	char *p = journal_path(expdir);
	int r = fileio_exists(p);
	free(p);
	return r;
}

int expdir_replay(const char *expdir, expdir_visit_fn visit, void *arg)
{
	char *p = journal_path(expdir);
	struct replay rp = { p, visit, arg };
	int r = jsonfile_read_lines(p, replay_line, &rp);
	free(p);
	return r;
}

/* Test hook for the fault-injection suite (docs/design-notes.md, "Test
 * hooks"): AAH_FAULT_KILL_AFTER=N makes this process SIGKILL itself right
 * after its Nth journal line is on disk, before anything acts on it;
 * AAH_FAULT_KILL_EVENT=name counts only the lines of that event. */
static void fault_point(enum expdir_event_kind kind)
{
	static long after = -1, count;
	if (after < 0) {
		const char *s = getenv("AAH_FAULT_KILL_AFTER");
		after = 0;
		if (s && util_parse_long(s, 1, LONG_MAX, &after) < 0)
			warning("ignoring AAH_FAULT_KILL_AFTER='%s': not a positive integer", s);
	}
	const char *only = getenv("AAH_FAULT_KILL_EVENT");
	if (!after || (only && *only && strcmp(only, events[kind].name)))
		return;
	if (++count == after)
		kill(getpid(), SIGKILL);
}

int expdir_journal_append(const char *expdir, unsigned long seq, enum expdir_event_kind kind,
			  cJSON *fields, unsigned flags, expdir_visit_fn visit, void *arg)
{
	if ((unsigned)kind >= EXPDIR_EV_UNKNOWN)
		BUG("journal event %d has no name", (int)kind);
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "format", "aah-journal/1");
	cJSON_AddNumberToObject(doc, "seq", (double)seq);
	cJSON_AddNumberToObject(doc, "ts", util_now());
	cJSON_AddStringToObject(doc, "event", events[kind].name);
	if (fields) {
		cJSON *it = fields->child;
		while (it) {
			cJSON *next = it->next;
			cJSON_DetachItemViaPointer(fields, it);
			cJSON_AddItemToObject(doc, it->string, it);
			it = next;
		}
		cJSON_Delete(fields);
	}
	char *path = journal_path(expdir);
	int r = jsonfile_append_flags(path, doc, flags);
	if (r == 0)
		fault_point(kind);
	if (r == 0 && visit) {
		struct replay rp = { path, visit, arg };
		r = replay_line(doc, &rp);
	}
	free(path);
	cJSON_Delete(doc);
	return r;
}

int expdir_journal_sync(const char *expdir)
{
	char *path = journal_path(expdir);
	int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC), r = 0;
	if (fd < 0 || fdatasync(fd) < 0)
		r = error_errno("cannot sync '%s'", path);
	if (fd >= 0)
		close(fd);
	free(path);
	return r;
}

struct job_search {
	const char *part;
	int found;
};

static int job_line(const struct expdir_event *ev, void *arg)
{
	struct job_search *js = arg;
	size_t n = strlen(js->part);
	if (ev->kind != EXPDIR_EV_TRIAL_SUBMITTED || !ev->job || !n)
		return 0;
	for (const char *p = ev->job; *p;) {
		size_t len = strcspn(p, ",");
		if (len == n && !strncmp(p, js->part, n))
			js->found = 1;
		p += len + (p[len] == ',');
	}
	return 0;
}

int expdir_journal_has_job(const char *expdir, const char *part)
{
	struct job_search js = { part, 0 };
	expdir_replay(expdir, job_line, &js);
	return js.found;
}

/* ---- result.json ----------------------------------------------------------- */

static char *result_path(const char *trial_dir)
{
	return expdir_file(trial_dir, EXPDIR_RESULT);
}

int expdir_result_read(const char *trial_dir, struct expdir_result *res)
{
	char *p = result_path(trial_dir);
	const char *status = NULL, *precision = NULL, *reason = NULL, *parent = NULL;
	const char *backend = NULL, *source = NULL;
	cJSON *doc = NULL;
	int r;
	memset(res, 0, sizeof(*res));
	res->status = TRIAL_UNKNOWN;
	res->best_val_acc = NAN;
	if (!fileio_exists(p)) {
		free(p);
		return 0;
	}
	if (jsonfile_read(p, &doc) < 0 || jsonfile_check_format(p, doc, "aah-result", 1) < 0 ||
	    json_get_string(p, doc, "status", 1, &status) < 0 ||
	    json_get_number(p, doc, "best_val_acc", 1, &res->best_val_acc) < 0 ||
	    json_get_number(p, doc, "total_flops", 1, &res->total_flops) < 0 ||
	    json_get_number(p, doc, "result_floor_seconds", 1, &res->result_floor) < 0 ||
	    json_get_string(p, doc, "precision", 1, &precision) < 0 ||
	    json_get_string(p, doc, "stop_reason", 1, &reason) < 0 ||
	    json_get_string(p, doc, "inherited_from", 1, &parent) < 0 ||
	    json_get_string(p, doc, "backend", 1, &backend) < 0 ||
	    json_get_string(p, doc, "source", 1, &source) < 0) {
		r = -1;
	} else {
		if (parent)
			xstrlcpy(res->inherited_from, parent, sizeof(res->inherited_from));
		if (status && expdir_state_parse(status, &res->status) < 0)
			res->status = TRIAL_UNKNOWN;
		if (precision)
			xstrlcpy(res->precision, precision, sizeof(res->precision));
		if (reason)
			xstrlcpy(res->stop_reason, reason, sizeof(res->stop_reason));
		if (backend)
			xstrlcpy(res->backend, backend, sizeof(res->backend));
		res->nni = source && !strcmp(source, "nni");
		const cJSON *d = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "device_names"), 0);
		if (cJSON_IsString(d))
			xstrlcpy(res->device, d->valuestring, sizeof(res->device));
		cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(doc, "devices"))
			if (cJSON_IsString(d) && (!strncmp(d->valuestring, "cuda", 4) ||
						  !strncmp(d->valuestring, "gpu", 3)))
				res->on_gpu = 1;
		struct stat st;
		if (stat(p, &st) == 0)
			res->written = (double)st.st_mtim.tv_sec + 1e-9 * (double)st.st_mtim.tv_nsec;
		r = 1;
	}
	cJSON_Delete(doc);
	free(p);
	return r;
}

int expdir_result_visible(const char *dir)
{
	DIR *d = opendir(dir);
	if (d) {
		while (readdir(d))
			;
		closedir(d);
	}
	char *p = result_path(dir);
	int ok = fileio_exists(p);
	free(p);
	return ok;
}

/* ---- metrics.jsonl ----------------------------------------------------------- */

struct epochs {
	struct expdir_epoch *v;
	size_t n, alloc;
};

static int metrics_line(const cJSON *line, void *arg)
{
	struct epochs *es = arg;
	double ts = num_or(line, "timestamp", NAN), acc = num_or(line, "val_acc", NAN);
	if (isnan(ts) || isnan(acc))
		return 0;      /* not an epoch line; readers ignore what they do not know */
	if (es->n == es->alloc) {
		es->alloc = es->alloc ? 2 * es->alloc : 16;
		es->v = xrealloc(es->v, es->alloc * sizeof(*es->v));
	}
	struct expdir_epoch *e = &es->v[es->n++];
	e->ts = ts;
	e->val_acc = acc;
	e->flops = num_or(line, "train_flops", 0) + num_or(line, "eval_flops", 0);
	e->images_per_sec = num_or(line, "images_per_sec", 0);
	e->part = num_or(line, "part", 1);
	if (!(e->part > 0 && e->part <= 1))
		e->part = 1;
	const cJSON *ep = cJSON_GetObjectItemCaseSensitive(line, "epoch");
	e->epoch = cJSON_IsNumber(ep) ? ep->valueint : (int)es->n;
	return 0;
}

int expdir_metrics_read(const char *trial_dir, struct expdir_epoch **epochs, size_t *n)
{
	char *p = expdir_file(trial_dir, EXPDIR_METRICS);
	struct epochs es = { NULL, 0, 0 };
	int r = fileio_exists(p) ? jsonfile_read_lines(p, metrics_line, &es) : 0;
	free(p);
	if (r < 0) {
		free(es.v);
		es.v = NULL;
		es.n = 0;
	}
	*epochs = es.v;
	*n = es.n;
	return r;
}

/* ---- a trial's figures ----------------------------------------------------- */

int expdir_trial_epochs(const char *trial_dir, const struct expdir_result *res, double end_ts,
			struct expdir_epoch **epochs, size_t *n)
{
	int r = expdir_metrics_read(trial_dir, epochs, n);
	if (r < 0 || *n || !res || isnan(res->best_val_acc))
		return r;
	struct expdir_epoch *e = xmalloc(sizeof(*e));
	e->ts = end_ts > 0 ? end_ts : res->written;
	e->val_acc = res->best_val_acc;
	e->flops = res->total_flops;
	e->images_per_sec = 0;
	e->part = 1;
	e->epoch = 1;
	*epochs = e;
	*n = 1;
	return 0;
}

int expdir_waiting_set(const char *expdir, unsigned seq, const char *why)
{
	char *path = expdir_trial_file(expdir, seq, EXPDIR_WAITING), *old = expdir_waiting_get(expdir, seq);
	int r = 0;
	if (why && (!old || strcmp(old, why))) {
		char *line = xstrfmt("%s\n", why);
		r = fileio_write_atomic(path, line, strlen(line));
		free(line);
	} else if (!why && old && unlink(path) < 0 && errno != ENOENT) {
		r = error_errno("cannot remove %s", path);
	}
	free(old);
	free(path);
	return r;
}

char *expdir_waiting_get(const char *expdir, unsigned seq)
{
	char *path = expdir_trial_file(expdir, seq, EXPDIR_WAITING), *text = NULL;
	if (fileio_exists(path) && fileio_read(path, 4096, &text, NULL) == 0)
		text[strcspn(text, "\n")] = '\0';
	free(path);
	return text;
}
