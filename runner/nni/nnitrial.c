/* nnitrial.c: NNI's trial side as the runner serves it (nnitrial.h). */
#include "runner/nni/nnitrial.h"
#include "fileio.h"
#include "jsonfile.h"
#include "runner/nni/nnirec.h"   /* nnirec_read_frames, nnirec_read_lines */
#include "runner/store/expdir.h" /* expdir_trial_dir, expdir_file, expdir_trial_id */
#include "strbuf.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RUN_FORMAT "aah-nni-run/1"
/* The platform aah gives NNI's SDK (NNI's word, not a backend's): it
 * appends its records to .nni/metrics there. */
static const char platform_env[] = "NNI_PLATFORM=local";
#define PLATFORM_VALUE (platform_env + sizeof("NNI_PLATFORM=") - 1)

/* The NNI files of a directory: a place's (metrics, its SDK's records)
 * or the trial's (run.json, its runs). */
static char *nni_path(const char *dir, const char *name)
{
	return xstrfmt("%s/.nni%s%s", dir, *name ? "/" : "", name);
}

void nnitrial_env(struct strvec *env, const char *experiment_id, const char *trial_id,
		  unsigned seq, const char *place_dir)
{
	strvec_setenv(env, "NNI_PLATFORM", PLATFORM_VALUE);
	strvec_setenv(env, "NNI_EXP_ID", experiment_id);
	strvec_setenv(env, "NNI_TRIAL_JOB_ID", trial_id);
	strvec_setenv(env, "NNI_SYS_DIR", place_dir);
	strvec_setenv(env, "NNI_OUTPUT_DIR", place_dir);
	strvec_pushf(env, "NNI_TRIAL_SEQ_ID=%ld", NNITRIAL_PARAMETER_ID(seq));
	strvec_setenv(env, "MULTI_PHASE", "false");
}

/* ---- parameter.cfg: JSON as Python's json.dumps writes it ---------------- */

static void dump_string(struct strbuf *sb, const char *s)
{
	strbuf_addch(sb, '"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			strbuf_addf(sb, "\\%c", c);
		else if (c == '\n')
			strbuf_addstr(sb, "\\n");
		else if (c == '\t')
			strbuf_addstr(sb, "\\t");
		else if (c < 0x20)
			strbuf_addf(sb, "\\u%04x", c);
		else
			strbuf_addch(sb, (char)c);
	}
	strbuf_addch(sb, '"');
}

/* NNI's dump: json's default separators ", " and ": "; numbers as the
 * proposal's params.json writes them, so that both read the same values. */
static void dump_py(struct strbuf *sb, const cJSON *j)
{
	const cJSON *it;
	if (cJSON_IsNumber(j)) {   /* cJSON's digits: as params.json has them */
		char *text = cJSON_PrintUnformatted(j);
		strbuf_addstr(sb, text);
		cJSON_free(text);
	} else if (cJSON_IsString(j)) {
		dump_string(sb, j->valuestring);
	} else if (cJSON_IsBool(j)) {
		strbuf_addstr(sb, cJSON_IsTrue(j) ? "true" : "false");
	} else if (cJSON_IsArray(j) || cJSON_IsObject(j)) {
		int obj = cJSON_IsObject(j);
		strbuf_addch(sb, obj ? '{' : '[');
		cJSON_ArrayForEach(it, j) {
			if (it != j->child)
				strbuf_addstr(sb, ", ");
			if (obj) {
				dump_string(sb, it->string);
				strbuf_addstr(sb, ": ");
			}
			dump_py(sb, it);
		}
		strbuf_addch(sb, obj ? '}' : ']');
	} else {
		strbuf_addstr(sb, "null");
	}
}

int nnitrial_write_parameters(const char *place_dir, unsigned seq, const cJSON *params)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "{\"parameter_id\": %ld, \"parameter_source\": \"algorithm\", "
		    "\"parameters\": ", NNITRIAL_PARAMETER_ID(seq));
	if (params)
		dump_py(&sb, params);
	else
		strbuf_addstr(&sb, "{}");
	strbuf_addstr(&sb, ", \"parameter_index\": 0}");
	char *path = xstrfmt("%s/parameter.cfg", place_dir);
	/* Unsynced: written again before each launch from params.json (synced),
	 * and read only by the launch it is written for. */
	int r = fileio_write_atomic_flags(path, sb.buf, sb.len, FILEIO_NOSYNC);
	free(path);
	strbuf_release(&sb);
	return r;
}

/* ---- runs: each submission of a trial ------------------------------------ */

struct run {
	long run;                 /* 1, 2, ...: submissions so far; 0: none recorded */
	long log_start;           /* trial.log's size when it was submitted */
};

static void read_run(const char *trial_dir, struct run *r)
{
	char *path = nni_path(trial_dir, "run.json");
	cJSON *doc = NULL;
	r->run = r->log_start = 0;
	int held = util_hold_errors(1);
	if (fileio_exists(path) && jsonfile_read(path, &doc) == 0 &&
	    jsonfile_check_format(path, doc, "aah-nni-run", 1) == 0 &&
	    (json_get_int(path, doc, "run", 0, 1, 1000000, &r->run) < 0 ||
	     json_get_int(path, doc, "log_start", 0, 0, (long)((~0ul) >> 1), &r->log_start) < 0))
		r->run = r->log_start = 0;
	util_hold_errors(held);
	cJSON_Delete(doc);
	free(path);
}

/* "nni": a file of aah's own formats that the runner wrote from NNI records. */
static int from_nni(const cJSON *doc)
{
	const char *src = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "source"));
	return src && !strcmp(src, "nni");
}

static long run_of(const cJSON *doc)
{
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(doc, "nni_run");
	return cJSON_IsNumber(r) ? (long)r->valuedouble : 0;
}

/* result.json as it is: 0 none, 1 written from NNI records (its run in
 * *run), 2 the trainer's own (or unreadable: not ours to touch). */
static int result_kind(const char *place_dir, long *run)
{
	char *path = expdir_file(place_dir, EXPDIR_RESULT);
	cJSON *doc = NULL;
	int kind = 0;
	*run = 0;
	if (fileio_exists(path)) {
		int held = util_hold_errors(1);
		kind = jsonfile_read(path, &doc) == 0 && from_nni(doc) ? 1 : 2;
		util_hold_errors(held);
		*run = run_of(doc);
	}
	cJSON_Delete(doc);
	free(path);
	return kind;
}

int nnitrial_prepare(const char *trial_dir, const char *place_dir, unsigned flags)
{
	char *dir = nni_path(place_dir, ""), *metrics = nni_path(place_dir, "metrics");
	char *runs = nni_path(trial_dir, "");
	char *log = expdir_file(trial_dir, EXPDIR_TRIAL_LOG), *result = expdir_file(place_dir, EXPDIR_RESULT);
	struct run r;
	struct stat st;
	long old;
	int rc = fileio_mkdir_p(dir, 0755);
	if (rc == 0)
		rc = fileio_mkdir_p(runs, 0755);
	read_run(trial_dir, &r);
	if (rc == 0 && fileio_exists(metrics)) {   /* the run before keeps its records */
		char *kept = xstrfmt("%s.%ld", metrics, r.run);
		if (rename(metrics, kept) < 0)
			rc = error_errno("cannot keep '%s' as '%s'", metrics, kept);
		free(kept);
	}
	if (rc == 0 && result_kind(place_dir, &old) == 1 && unlink(result) < 0 && errno != ENOENT)
		rc = error_errno("cannot remove '%s' (an earlier run's)", result);
	if (rc == 0) {
		cJSON *doc = cJSON_CreateObject();
		char *path = nni_path(trial_dir, "run.json");
		cJSON_AddStringToObject(doc, "format", RUN_FORMAT);
		cJSON_AddNumberToObject(doc, "run", (double)(r.run + 1));
		cJSON_AddNumberToObject(doc, "log_start", stat(log, &st) == 0 ? (double)st.st_size : 0);
		rc = jsonfile_write_flags(path, doc, flags);
		cJSON_Delete(doc);
		free(path);
	}
	free(dir);
	free(runs);
	free(metrics);
	free(log);
	free(result);
	return rc;
}

/* ---- reading the records back ---------------------------------------------- */

enum seen_state {
	SEEN_READING,             /* its records are read as they come */
	SEEN_DONE,                /* result.json written for this run: nothing more */
	SEEN_OWN,                 /* the trial writes aah's own files: none of ours */
};

struct nnitrial_seen {
	unsigned seq;
	long run;                 /* the run the fields below are for; 0: not read yet */
	enum seen_state state;
	long last_seq;            /* highest PERIODICAL sequence in metrics.jsonl; -1 */
	unsigned long periodical; /* this run's lines in metrics.jsonl */
	size_t file_used;         /* bytes of .nni/metrics read */
	size_t log_used;          /* byte of trial.log read up to */
	unsigned long log_line;   /* the number of the line starting there */
	struct stat run_file;     /* run.json when it was last read (run_known) */
	struct run run_read;      /* what it said */
	int run_known;
};

void nnitrial_watch_release(struct nnitrial_watch *w)
{
	free(w->v);
	w->v = NULL;
	w->n = 0;
}

/* Trial seq's entry, by seq - 1: every poll of every running trial asks
 * (docs/scale.md: thousands of trials), so no walk of all those seen. */
static struct nnitrial_seen *seen_of(struct nnitrial_watch *w, unsigned seq)
{
	if (seq > w->n) {
		size_t n = w->n ? w->n : 64;
		while (n < seq)
			n *= 2;
		w->v = xrealloc(w->v, n * sizeof(*w->v));
		memset(w->v + w->n, 0, (n - w->n) * sizeof(*w->v));
		w->n = n;
	}
	struct nnitrial_seen *s = &w->v[seq - 1];
	s->seq = seq;   /* 0: a slot no trial used yet */
	return s;
}

/* run.json, read again only when it changed (another inode, size or
 * time) since the last poll: every poll of every running trial asks, and
 * the runner rewrites it only when it submits (docs/scale.md). */
static void read_run_seen(struct nnitrial_seen *s, const char *trial_dir, struct run *r)
{
	char *path = nni_path(trial_dir, "run.json");
	struct stat st;
	int here = lstat(path, &st) == 0;
	const struct stat *was = &s->run_file;
	free(path);
	if (here && s->run_known && st.st_ino == was->st_ino && st.st_dev == was->st_dev &&
	    st.st_size == was->st_size && st.st_mtim.tv_sec == was->st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == was->st_mtim.tv_nsec && st.st_ctim.tv_sec == was->st_ctim.tv_sec &&
	    st.st_ctim.tv_nsec == was->st_ctim.tv_nsec) {
		*r = s->run_read;
		return;
	}
	read_run(trial_dir, r);   /* replaced since the lstat: the next poll reads it again */
	s->run_known = here;
	s->run_file = st;
	s->run_read = *r;
}

/* Bytes of path from `from` to its end (none: 0 bytes). The caller frees *out. */
static int read_from(const char *path, size_t from, char **out, size_t *len)
{
	struct strbuf sb = STRBUF_INIT;
	char buf[65536];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	*out = NULL;
	*len = 0;
	if (fd < 0)
		return errno == ENOENT ? 0 : error_errno("cannot open '%s'", path);
	if (lseek(fd, (off_t)from, SEEK_SET) < 0) {
		close(fd);
		return error_errno("cannot seek in '%s'", path);
	}
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			close(fd);
			strbuf_release(&sb);
			return error_errno("cannot read '%s'", path);
		}
		if (n == 0)
			break;
		strbuf_add(&sb, buf, (size_t)n);
	}
	close(fd);
	*out = strbuf_detach(&sb, len);
	return 0;
}

/* *line: the number of the line starting at byte `upto` of path. */
static int count_lines(const char *path, size_t upto, unsigned long *line)
{
	char buf[65536];
	size_t done = 0;
	int fd = upto ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	*line = 1;
	if (!upto)
		return 0;
	if (fd < 0)
		return errno == ENOENT ? 0 : error_errno("cannot open '%s'", path);
	while (done < upto) {
		size_t want = upto - done < sizeof(buf) ? upto - done : sizeof(buf);
		ssize_t n = read(fd, buf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i++)
			*line += buf[i] == '\n';
		done += (size_t)n;
	}
	close(fd);
	return 0;
}

struct lines_seen {
	long run;
	struct nnitrial_seen *s;
};

static int metrics_line(const cJSON *line, void *arg)
{
	struct lines_seen *ls = arg;
	const cJSON *seq = cJSON_GetObjectItemCaseSensitive(line, "nni_sequence");
	if (!from_nni(line))
		ls->s->state = SEEN_OWN;
	else if (run_of(line) == ls->run && cJSON_IsNumber(seq)) {
		ls->s->periodical++;
		if ((long)seq->valuedouble > ls->s->last_seq)
			ls->s->last_seq = (long)seq->valuedouble;
	}
	return 0;
}

/* A runner that meets run r of a trial for the first time: what its files
 * (its place's, its trial.log) already hold of it. */
static int seen_start(struct nnitrial_seen *s, const char *trial_dir, const char *place_dir,
		      const struct run *r)
{
	char *metrics = expdir_file(place_dir, EXPDIR_METRICS), *log = expdir_file(trial_dir, EXPDIR_TRIAL_LOG);
	struct lines_seen ls = { r->run, s };
	long result_run;
	int rc = 0;
	s->run = r->run;
	s->state = SEEN_READING;
	s->last_seq = -1;
	s->periodical = 0;
	s->file_used = 0;
	s->log_used = (size_t)r->log_start;
	s->log_line = 1;
	if (fileio_exists(metrics))
		rc = jsonfile_read_lines(metrics, metrics_line, &ls);
	int kind = result_kind(place_dir, &result_run);
	if (kind == 2)
		s->state = SEEN_OWN;
	else if (kind == 1 && result_run == r->run && s->state == SEEN_READING)
		s->state = SEEN_DONE;
	if (rc == 0)
		rc = count_lines(log, s->log_used, &s->log_line);
	free(metrics);
	free(log);
	return rc;
}

/* The platform trial.env gives NNI's SDK: aah's (local) but for an override,
 * where the SDK prints its records instead (REUSE_MODE true does too). */
static int records_in_log(const struct aah_config *cfg)
{
	const struct ynode *env = cfg->trial.env;
	const struct ynode *platform = ynode_get(env, "NNI_PLATFORM"), *reuse = ynode_get(env, "REUSE_MODE");
	if (reuse && reuse->value && (!strcmp(reuse->value, "true") || !strcmp(reuse->value, "True")))
		return 1;
	return platform && platform->value && strcmp(platform->value, PLATFORM_VALUE);
}

static void add_common(cJSON *doc, long run)
{
	cJSON_AddStringToObject(doc, "source", "nni");
	cJSON_AddNumberToObject(doc, "nni_run", (double)run);
}

static int write_epoch(const char *place_dir, const struct nnitrial_seen *s, const struct nnirec *rec)
{
	char *path = expdir_file(place_dir, EXPDIR_METRICS);
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "format", "aah-metrics/1");
	cJSON_AddNumberToObject(doc, "epoch", (double)rec->sequence + 1);
	cJSON_AddNumberToObject(doc, "val_acc", rec->value);
	cJSON_AddNumberToObject(doc, "timestamp", util_now());
	add_common(doc, s->run);
	cJSON_AddNumberToObject(doc, "nni_sequence", (double)rec->sequence);
	cJSON_AddStringToObject(doc, "nni_value", rec->value_json);
	int r = jsonfile_append(path, doc);
	cJSON_Delete(doc);
	free(path);
	return r;
}

/* result.json of the run, in its place: its FINAL record (rec), or the
 * error that fails it (why), said in the trial's trial.log too. */
static int write_result(const char *trial_dir, const char *place_dir, const struct nnitrial_seen *s,
			const struct nnirec *rec, const char *why)
{
	char *path = expdir_file(place_dir, EXPDIR_RESULT);
	cJSON *doc = cJSON_CreateObject();
	int r = 0;
	cJSON_AddStringToObject(doc, "format", "aah-result/1");
	cJSON_AddStringToObject(doc, "status", rec ? "succeeded" : "failed");
	if (rec) {
		cJSON_AddStringToObject(doc, "stop_reason", "final result");
		cJSON_AddNumberToObject(doc, "best_val_acc", rec->value);
		cJSON_AddNumberToObject(doc, "final_val_acc", rec->value);
	} else {
		char *reason = xstrfmt("error: %s", why);
		cJSON_AddStringToObject(doc, "stop_reason", reason);
		free(reason);
	}
	cJSON_AddNumberToObject(doc, "epochs_run", (double)s->periodical);
	add_common(doc, s->run);
	if (rec)
		cJSON_AddStringToObject(doc, "nni_value", rec->value_json);
	if (!rec) {
		char *log = expdir_file(trial_dir, EXPDIR_TRIAL_LOG);
		char *line = xstrfmt("aah-runner: nni: %s; the trial fails", why);
		char id[EXPDIR_TRIAL_ID_SIZE];
		warning("trial %s: %s", expdir_trial_id(s->seq, id), why);
		r = fileio_append_line(log, line);
		free(line);
		free(log);
	}
	if (r == 0)
		r = jsonfile_write(path, doc);
	cJSON_Delete(doc);
	free(path);
	return r;
}

/* This run's new records, from .nni/metrics or trial.log. -1: a bad one
 * (the error is util_last_error()); *file: the metrics file exists. */
static int read_records(const struct aah_config *cfg, const char *trial_dir, const char *place_dir,
			unsigned seq, struct nnitrial_seen *s, int ended, struct nnirec_list *out,
			int *file)
{
	char id[EXPDIR_TRIAL_ID_SIZE];
	struct nnirec_trial who = { expdir_trial_id(seq, id), NNITRIAL_PARAMETER_ID(seq) };
	char *metrics = nni_path(place_dir, "metrics"), *buf = NULL;
	size_t len = 0, used = 0;
	int r;
	*file = fileio_exists(metrics);
	int held = util_hold_errors(1);
	if (records_in_log(cfg)) {
		char *log = expdir_file(trial_dir, EXPDIR_TRIAL_LOG);
		unsigned long lines = 0;
		r = read_from(log, s->log_used, &buf, &len);
		if (r == 0)   /* errors name the files as the trial directory holds them */
			r = nnirec_read_lines(expdir_file_name(EXPDIR_TRIAL_LOG), buf, len, s->log_line,
					      ended, &who, out, &used, &lines);
		s->log_used += used;
		s->log_line += lines;
		free(log);
	} else {
		r = *file ? read_from(metrics, s->file_used, &buf, &len) : 0;
		if (r == 0 && *file)
			r = nnirec_read_frames(".nni/metrics", buf, len, s->file_used, ended, &who, out,
					       &used);
		s->file_used += used;
	}
	util_hold_errors(held);
	free(buf);
	free(metrics);
	return r;
}

int nnitrial_sync(struct nnitrial_watch *w, const struct aah_config *cfg, const char *expdir,
		  unsigned seq, const char *place, int ended)
{
	char *trial_dir = expdir_trial_dir(expdir, seq);
	char *place_dir = expdir_place_dir(expdir, seq, place);
	struct nnitrial_seen *s = seen_of(w, seq);
	struct nnirec_list recs = NNIREC_LIST_INIT;
	struct run run;
	int rc = 0, file = 0;
	read_run_seen(s, trial_dir, &run);
	if (run.run && s->run != run.run)
		rc = seen_start(s, trial_dir, place_dir, &run);
	if (!run.run || rc < 0 || s->state != SEEN_READING)
		goto out;
	int bad = read_records(cfg, trial_dir, place_dir, seq, s, ended, &recs, &file) < 0;
	char *why = bad ? xstrdup(util_last_error()) : NULL;
	for (size_t i = 0; i < recs.n && rc == 0 && s->state == SEEN_READING; i++) {
		const struct nnirec *rec = &recs.v[i];
		if (rec->type == NNIREC_FINAL) {
			rc = write_result(trial_dir, place_dir, s, rec, NULL);
			s->state = SEEN_DONE;
		} else if (rec->sequence > s->last_seq) {   /* not one said already */
			rc = write_epoch(place_dir, s, rec);
			s->last_seq = rec->sequence;
			s->periodical++;
		}
	}
	if (rc == 0 && s->state == SEEN_READING && bad) {
		rc = write_result(trial_dir, place_dir, s, NULL, why);
		s->state = SEEN_DONE;
	} else if (rc == 0 && s->state == SEEN_READING && ended && (file || s->periodical)) {
		char *none = xstrfmt("the trial ended without a final result (it reported %lu "
				     "intermediate result%s; nni.report_final_result was not called)",
				     s->periodical, s->periodical == 1 ? "" : "s");
		rc = write_result(trial_dir, place_dir, s, NULL, none);
		s->state = SEEN_DONE;
		free(none);
	}
	free(why);
out:
	nnirec_list_release(&recs);
	free(trial_dir);
	free(place_dir);
	return rc;
}

/* ---- the Python module aah ships ------------------------------------------- */

char *nnitrial_module_dir(void)
{
	static const char *const beside[] = { "../lib/aah/python", "../runner/nni/python" };
	int was = util_set_quiet(1);
	char *exe = fileio_self_exe();
	util_set_quiet(was);
	if (!exe)
		return NULL;
	char *dir = xstrdup(dirname(exe)), *found = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(beside) && !found; i++) {
		char *init = xstrfmt("%s/%s/nni/__init__.py", dir, beside[i]);
		if (fileio_exists(init)) {
			char *p = xstrfmt("%s/%s", dir, beside[i]);
			found = realpath(p, NULL);   /* without the "..": PYTHONPATH shows it */
			free(p);
		}
		free(init);
	}
	free(dir);
	free(exe);
	return found;
}

void nnitrial_python_path(struct strvec *env, const char *module_dir)
{
	if (!module_dir)
		return;
	const char *old = strvec_getenv(env, "PYTHONPATH");
	char *value = old && *old ? xstrfmt("%s:%s", module_dir, old) : xstrdup(module_dir);
	strvec_setenv(env, "PYTHONPATH", value);
	free(value);
}
