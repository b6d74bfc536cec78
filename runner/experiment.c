/* experiment.c: experiment directories and their append-only journal. */
#include "runner/experiment.h"
#include "fileio.h"
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

struct trial_rec *experiment_trial(struct experiment *e, unsigned seq)
{
	return journal_trial(&e->journal, seq);
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

/* Apply one journal event to the in-memory state (an expdir_visit_fn). */
static int apply(const struct expdir_event *ev, void *arg)
{
	struct experiment *e = arg;
	journal_apply(&e->journal, ev);
	return 0;
}

int experiment_record(struct experiment *e, enum expdir_event_kind event, cJSON *fields)
{
	return experiment_record_flags(e, event, fields, 0);
}

int experiment_record_flags(struct experiment *e, enum expdir_event_kind event, cJSON *fields,
			    unsigned flags)
{
	return expdir_journal_append(e->dir, e->next_event, event, fields, flags, apply, e);
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

/* Everything a new experiment directory holds, written into e->dir. */
static int populate(struct experiment *e, const struct aah_config *cfg, const char *workdir)
{
	char *p = xstrfmt("%s/trials", e->dir);
	int r = fileio_mkdir_p(p, 0755);
	free(p);
	p = xstrfmt("%s/config.yml", e->dir);
	if (r == 0)
		r = copy_file(cfg->path, p);
	free(p);
	const char *ia = cfg->tuner.initial_arch;
	if (r == 0 && ia && *ia) {
		char *from = config_resolve(cfg, ia);
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

	struct expdir_info info = {
		.id = e->id,
		.name = cfg->experiment_name,
		.config_source = cfg->path,
		.workdir = (char *)workdir,   /* only read */
		.created = util_now(),
		.seed = cfg->seed,
	};
	if (expdir_info_write(e->dir, &info) < 0)
		return -1;

	cJSON *f = cJSON_CreateObject();
	cJSON_AddStringToObject(f, "id", e->id);
	cJSON_AddStringToObject(f, "name", cfg->experiment_name);
	cJSON_AddStringToObject(f, "config", "config.yml");
	return experiment_record(e, EXPDIR_EV_EXPERIMENT_CREATED, f);
}

int experiment_create(struct experiment *e, const struct aah_config *cfg, const char *workdir)
{
	char id[EXPERIMENT_ID_LEN + 1];
	char *base = xstrfmt("%s/experiments", workdir), *dir = NULL;
	memset(e, 0, sizeof(*e));
	e->lock_fd = -1;
	if (fileio_mkdir_p(base, 0755) < 0) {
		free(base);
		return -1;
	}
	/* Built under a hidden name ('list' skips dot names) and renamed when
	 * whole: a create that fails or is killed leaves no experiment. */
	for (int tries = 0;; tries++) {
		new_id(id);
		dir = xstrfmt("%s/%s", base, id);
		e->dir = xstrfmt("%s/.%s.creating", base, id);
		if (!fileio_exists(dir) && mkdir(e->dir, 0755) == 0)
			break;
		int err = fileio_exists(dir) ? EEXIST : errno;
		free(dir);
		free(e->dir);
		e->dir = NULL;
		if (err != EEXIST || tries > 100) {
			errno = err;
			error_errno("cannot create an experiment directory in '%s'", base);
			free(base);
			return -1;
		}
	}
	e->id = xstrdup(id);
	/* rename() replaces only an empty directory: never a real experiment. */
	int r = populate(e, cfg, workdir);
	if (r == 0 && rename(e->dir, dir) < 0)
		r = error_errno("cannot rename '%s' to '%s'", e->dir, dir);
	if (r == 0) {
		free(e->dir);
		e->dir = dir;
		dir = NULL;
		e->workdir = expdir_workdir(e->dir);
		r = fileio_fsync_dir(base);
	}
	if (r < 0) {
		fileio_remove_tree(e->dir);
		experiment_release(e);
	}
	free(dir);
	free(base);
	return r;
}

int experiment_open(struct experiment *e, const char *dir)
{
	struct expdir_info info;
	memset(e, 0, sizeof(*e));
	e->lock_fd = -1;
	e->dir = fileio_absolute(dir);
	e->workdir = expdir_workdir(e->dir);
	if (expdir_info_read(e->dir, &info) < 0) {
		experiment_release(e);
		return -1;
	}
	e->id = info.id;
	info.id = NULL;
	expdir_info_release(&info);
	if (expdir_replay(e->dir, apply, e) < 0) {
		experiment_release(e);
		return -1;
	}
	return 0;
}

void experiment_release(struct experiment *e)
{
	journal_release(&e->journal);
	if (e->lock_fd >= 0)
		close(e->lock_fd);
	free(e->id);
	free(e->dir);
	free(e->workdir);
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
