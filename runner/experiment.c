/* experiment.c: experiment directories and their append-only journal. */
#include "runner/experiment.h"
#include "fileio.h"
#include "jsonfile.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const state_names[] = {
	[TRIAL_WAITING] = "waiting",
	[TRIAL_RUNNING] = "running",
	[TRIAL_SUCCEEDED] = "succeeded",
	[TRIAL_FAILED] = "failed",
	[TRIAL_EARLY_STOPPED] = "early_stopped",
	[TRIAL_CANCELED] = "canceled",
};

const char *trial_state_name(enum trial_state s)
{
	return (unsigned)s < ARRAY_SIZE(state_names) ? state_names[s] : "unknown";
}

int trial_state_parse(const char *name, enum trial_state *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(state_names); i++) {
		if (!strcmp(state_names[i], name)) {
			*out = (enum trial_state)i;
			return 0;
		}
	}
	return -1;
}

int trial_state_final(enum trial_state s)
{
	return s == TRIAL_SUCCEEDED || s == TRIAL_FAILED || s == TRIAL_EARLY_STOPPED ||
	       s == TRIAL_CANCELED;
}

struct trial_rec *experiment_trial(struct experiment *e, unsigned seq)
{
	if (!seq)
		BUG("trial sequence numbers start at 1");
	if (seq > e->ntrials) {
		e->trials = xrealloc(e->trials, seq * sizeof(*e->trials));
		for (size_t i = e->ntrials; i < seq; i++) {
			memset(&e->trials[i], 0, sizeof(e->trials[i]));
			e->trials[i].seq = (unsigned)i + 1;
			e->trials[i].slot = -1;
			e->trials[i].best_acc = NAN;
			e->trials[i].exit_code = -1;
		}
		e->ntrials = seq;
	}
	return &e->trials[seq - 1];
}

char *experiment_trial_dir(const struct experiment *e, unsigned seq)
{
	return xstrfmt("%s/trials/%06u", e->dir, seq);
}

double experiment_best_accuracy(const struct experiment *e)
{
	double best = NAN;
	for (size_t i = 0; i < e->ntrials; i++) {
		double a = e->trials[i].best_acc;
		if (!isnan(a) && (isnan(best) || a > best))
			best = a;
	}
	return best;
}

static void replace_str(char **dst, const cJSON *doc, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, key);
	free(*dst);
	*dst = cJSON_IsString(v) ? xstrdup(v->valuestring) : NULL;
}

static double num_or(const cJSON *doc, const char *key, double def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, key);
	return cJSON_IsNumber(v) ? v->valuedouble : def;
}

/* Apply one journal event to the in-memory state. */
static int apply(struct experiment *e, const cJSON *ev)
{
	const char *what = "journal.jsonl";
	const char *event;
	double ts = num_or(ev, "ts", 0);
	if (json_get_string(what, ev, "event", 0, &event) < 0)
		return -1;
	e->next_event = (unsigned long)num_or(ev, "seq", (double)e->next_event) + 1;

	if (!strcmp(event, "experiment_created")) {
		replace_str(&e->name, ev, "name");
		e->created = ts;
	} else if (!strcmp(event, "runner_started")) {
		if (e->session_start > 0 && e->last_event_ts > e->session_start)
			e->run_seconds += e->last_event_ts - e->session_start;
		e->session_start = ts;
	} else if (!strcmp(event, "experiment_done")) {
		e->done = 1;
		replace_str(&e->done_reason, ev, "reason");
	} else if (!strncmp(event, "trial_", 6)) {
		long seq;
		if (json_get_int(what, ev, "trial_seq", 0, 1, 1 << 30, &seq) < 0)
			return -1;
		struct trial_rec *t = experiment_trial(e, (unsigned)seq);
		t->attempt = (unsigned)num_or(ev, "attempt", t->attempt ? t->attempt : 1);
		if (!strcmp(event, "trial_created")) {
			t->state = TRIAL_WAITING;
		} else if (!strcmp(event, "trial_submitted")) {
			t->state = TRIAL_RUNNING;
			replace_str(&t->job, ev, "job");
			replace_str(&t->gpus, ev, "gpus");
			t->slot = (int)num_or(ev, "slot", -1);
			t->submitted = ts;
		} else if (!strcmp(event, "trial_finished")) {
			const char *st;
			if (json_get_string(what, ev, "state", 0, &st) < 0 ||
			    trial_state_parse(st, &t->state) < 0 || !trial_state_final(t->state))
				return error("%s: trial_finished with a bad state", what);
			t->exit_code = (int)num_or(ev, "exit_code", -1);
			t->best_acc = num_or(ev, "best_val_acc", NAN);
			t->flops = num_or(ev, "flops", 0);
			replace_str(&t->reason, ev, "reason");
			t->finished = ts;
		} else if (!strcmp(event, "trial_retry")) {
			t->state = TRIAL_WAITING;
			free(t->job);
			t->job = NULL;
			t->slot = -1;
		}
	}
	if (ts > e->last_event_ts)
		e->last_event_ts = ts;
	return 0;
}

int experiment_record(struct experiment *e, const char *event, cJSON *fields)
{
	return experiment_record_flags(e, event, fields, 0);
}

int experiment_record_flags(struct experiment *e, const char *event, cJSON *fields,
			    unsigned flags)
{
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "format", "aah-journal/1");
	cJSON_AddNumberToObject(doc, "seq", (double)e->next_event);
	cJSON_AddNumberToObject(doc, "ts", util_now());
	cJSON_AddStringToObject(doc, "event", event);
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
	char *path = xstrfmt("%s/journal.jsonl", e->dir);
	int r = jsonfile_append_flags(path, doc, flags);
	free(path);
	if (r == 0)
		r = apply(e, doc);
	cJSON_Delete(doc);
	return r;
}

static void new_id(char out[EXPERIMENT_ID_LEN + 1])
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char rnd[EXPERIMENT_ID_LEN];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		unsigned long x = (unsigned long)util_now() * 2654435761u ^ (unsigned long)getpid();
		for (size_t i = 0; i < sizeof(rnd); i++, x = x * 6364136223846793005ul + 1)
			rnd[i] = (unsigned char)(x >> 33);
	}
	/* The first character is a letter so the id is also a DNS-1035 label. */
	out[0] = alphabet[rnd[0] % 26];
	for (size_t i = 1; i < EXPERIMENT_ID_LEN; i++)
		out[i] = alphabet[rnd[i] % 36];
	out[EXPERIMENT_ID_LEN] = '\0';
}

static int copy_file(const char *from, const char *to)
{
	char *data;
	size_t len;
	if (fileio_read(from, 0, &data, &len) < 0)
		return -1;
	int r = fileio_write_atomic(to, data, len);
	free(data);
	return r;
}

int experiment_create(struct experiment *e, const struct aah_config *cfg, const char *workdir)
{
	char id[EXPERIMENT_ID_LEN + 1];
	char *base = xstrfmt("%s/experiments", workdir);
	memset(e, 0, sizeof(*e));
	e->lock_fd = -1;
	if (fileio_mkdir_p(base, 0755) < 0) {
		free(base);
		return -1;
	}
	for (int tries = 0;; tries++) {
		new_id(id);
		char *dir = xstrfmt("%s/%s", base, id);
		if (mkdir(dir, 0755) == 0) {
			e->dir = dir;
			break;
		}
		int err = errno;
		free(dir);
		if (err != EEXIST || tries > 100) {
			errno = err;
			error_errno("cannot create an experiment directory in '%s'", base);
			free(base);
			return -1;
		}
	}
	free(base);
	e->id = xstrdup(id);
	char *p = xstrfmt("%s/trials", e->dir);
	int r = fileio_mkdir_p(p, 0755);
	free(p);
	p = xstrfmt("%s/config.yml", e->dir);
	if (r == 0)
		r = copy_file(cfg->path, p);
	free(p);
	const char *ia = cfg->tuner.initial_arch;
	if (r == 0 && ia && *ia) {
		char *from = ia[0] == '/' ? xstrdup(ia) : xstrfmt("%s/%s", cfg->base_dir, ia);
		p = xstrfmt("%s/initial_arch.json", e->dir);
		r = copy_file(from, p);
		free(p);
		free(from);
	}
	char *ss = config_search_space_file(cfg);
	if (r == 0 && ss) {
		p = xstrfmt("%s/search_space.json", e->dir);
		r = copy_file(ss, p);
		free(p);
	}
	free(ss);
	if (r < 0)
		return -1;

	cJSON *doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "format", "aah-experiment/1");
	cJSON_AddStringToObject(doc, "id", e->id);
	cJSON_AddStringToObject(doc, "name", cfg->experiment_name);
	cJSON_AddNumberToObject(doc, "created", util_now());
	cJSON_AddStringToObject(doc, "config", "config.yml");
	cJSON_AddStringToObject(doc, "config_source", cfg->path);
	cJSON_AddStringToObject(doc, "workdir", workdir);
	cJSON_AddNumberToObject(doc, "seed", (double)cfg->seed);
	p = xstrfmt("%s/experiment.json", e->dir);
	r = jsonfile_write(p, doc);
	free(p);
	cJSON_Delete(doc);
	if (r < 0)
		return -1;

	cJSON *f = cJSON_CreateObject();
	cJSON_AddStringToObject(f, "id", e->id);
	cJSON_AddStringToObject(f, "name", cfg->experiment_name);
	cJSON_AddStringToObject(f, "config", "config.yml");
	return experiment_record(e, "experiment_created", f);
}

static int replay_line(const cJSON *line, void *arg)
{
	return apply(arg, line);
}

int experiment_open(struct experiment *e, const char *dir)
{
	cJSON *doc;
	const char *id;
	memset(e, 0, sizeof(*e));
	e->lock_fd = -1;
	e->dir = fileio_absolute(dir);
	char *p = xstrfmt("%s/experiment.json", e->dir);
	int r = jsonfile_read(p, &doc);
	if (r == 0) {
		r = jsonfile_check_format(p, doc, "aah-experiment", 1);
		if (r == 0 && json_get_string(p, doc, "id", 0, &id) == 0)
			e->id = xstrdup(id);
		else
			r = -1;
		cJSON_Delete(doc);
	}
	free(p);
	if (r < 0) {
		experiment_release(e);
		return -1;
	}
	p = xstrfmt("%s/journal.jsonl", e->dir);
	r = jsonfile_read_lines(p, replay_line, e);
	free(p);
	if (r < 0) {
		experiment_release(e);
		return -1;
	}
	return 0;
}

void experiment_release(struct experiment *e)
{
	for (size_t i = 0; i < e->ntrials; i++) {
		free(e->trials[i].job);
		free(e->trials[i].gpus);
		free(e->trials[i].reason);
	}
	if (e->lock_fd >= 0)
		close(e->lock_fd);
	free(e->trials);
	free(e->id);
	free(e->dir);
	free(e->name);
	free(e->done_reason);
	memset(e, 0, sizeof(*e));
	e->lock_fd = -1;
}

int experiment_lock(struct experiment *e)
{
	char *p = xstrfmt("%s/runner.lock", e->dir);
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		error_errno("cannot open '%s'", p);
		free(p);
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		free(p);
		long pid = experiment_runner_pid(e);
		return error("experiment '%s' is already being run by process %ld; "
			     "use 'aah-runner stop %s' first", e->id, pid, e->id);
	}
	free(p);
	e->lock_fd = fd;
	char *pidtxt = xstrfmt("%ld\n", (long)getpid());
	p = xstrfmt("%s/runner.pid", e->dir);
	int r = fileio_write_atomic(p, pidtxt, strlen(pidtxt));
	free(p);
	free(pidtxt);
	return r;
}

long experiment_runner_pid(const struct experiment *e)
{
	char *p = xstrfmt("%s/runner.lock", e->dir);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	free(p);
	if (fd < 0)
		return 0;
	int held = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd);
	if (!held)
		return 0;
	char *txt;
	long pid = 0;
	p = xstrfmt("%s/runner.pid", e->dir);
	if (fileio_read(p, 64, &txt, NULL) == 0) {
		pid = strtol(txt, NULL, 10);
		free(txt);
	}
	free(p);
	return pid;
}
