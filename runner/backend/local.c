/* local.c: trials as local processes (the embedded default). Each
 * rank is its own session/process group (with trial.launcher: mpi, the one
 * mpirun that starts them all is); stdout+stderr go to trial.log.
 * A job id is "<pid>.<starttime>[,<pid>.<starttime>...]": a resumed runner
 * follows processes it did not start by pid and kernel start time. */
#include "runner/backend/local.h"
#include "fileio.h"
#include "runner/nni/nnitrial.h" /* nnitrial_module_dir, nnitrial_python_path: aah's nni */
#include "runner/store/expdir.h" /* expdir_journal_has_job */
#include "runner/backend/proc.h"
#include "strbuf.h"
#include "util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

struct local_job {
	struct backend_job job;  /* job.id: "<pid>.<start>" of each process, joined by ',' */
	struct proc *procs;     /* nprocs entries; pid only for adopted jobs */
	unsigned long long *start; /* kernel start times */
	unsigned nprocs;
	int adopted;            /* not our children: follow by pid */
	int canceled;
	char *log;              /* trial.log (our children only) */
	char *start_error;      /* why a rank could not become its program; or NULL */
};

struct local_priv {
	struct backend_jobs jobs; /* struct local_job */
	char *nni_python;         /* aah's nni module, first on the trials' PYTHONPATH; or NULL */
	unsigned unheard;         /* ranks released since every word was last read */
	char *self;               /* this program's path: `held-orphan` runs in it */
	char *hold_helper;        /* aah-hold beside it, or NULL: held ranks are forked */
	struct local_job **held;  /* submitted with ctx->defer_release, not yet let go */
	size_t nheld, held_cap;
};

/* The program a held rank waits in, beside this one (make install puts
 * both in one folder), unless AAH_SPAWN=fork asks for the forked child
 * that waits itself; NULL when there is none. A fork copies the runner's
 * page tables and its memory copy-on-write for every rank (docs/scale.md). */
static char *find_hold_helper(const char *self)
{
	const char *how = getenv("AAH_SPAWN");
	if (!self || (how && !strcmp(how, "fork")))
		return NULL;
	const char *slash = strrchr(self, '/');
	char *path = xstrfmt("%.*s/aah-hold", (int)(slash - self), self);
	if (access(path, X_OK) == 0)
		return path;
	free(path);
	return NULL;
}

/* From /proc/<pid>/stat: the state letter (field 3) and the start time in
 * clock ticks since boot (field 22). -1 when there is no such process. */
static int proc_stat(pid_t pid, char *state, unsigned long long *start)
{
	char path[64], *text;
	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	int was_quiet = util_set_quiet(1);
	int r = fileio_read(path, 4096, &text, NULL);
	util_set_quiet(was_quiet);
	if (r < 0)
		return -1;
	char *p = strrchr(text, ')');
	r = p && sscanf(p, ") %c", state) == 1 ? 0 : -1;
	int field = 2;
	while (p && *p && field < 22) {
		if (*p == ' ')
			field++;
		p++;
	}
	if (r == 0 && !(p && sscanf(p, "%llu", start) == 1))
		r = -1;
	free(text);
	return r;
}

static int proc_start_time(pid_t pid, unsigned long long *out)
{
	char state;
	return proc_stat(pid, &state, out);
}

static void job_release(struct backend_job *job)
{
	struct local_job *j = (struct local_job *)job;
	for (unsigned i = 0; i < j->nprocs; i++)
		if (j->procs[i].report_fd >= 0)
			close(j->procs[i].report_fd);
	free(j->procs);
	free(j->start);
	free(j->log);
	free(j->start_error);
}

/* A job this runner did not start (it resumes): follow its processes by
 * the pids and start times of its id. */
static int job_parse(void *owner, struct backend_job *job)
{
	struct local_job *j = (struct local_job *)job;
	(void)owner;
	j->adopted = 1;
	for (const char *p = job->id; *p;) {
		long pid;
		unsigned long long st;
		int used;
		if (sscanf(p, "%ld.%llu%n", &pid, &st, &used) != 2 || pid <= 0)
			return -1;
		j->procs = xrealloc(j->procs, (j->nprocs + 1) * sizeof(*j->procs));
		j->start = xrealloc(j->start, (j->nprocs + 1) * sizeof(*j->start));
		j->procs[j->nprocs] = (struct proc)PROC_INIT;
		j->procs[j->nprocs].pid = (pid_t)pid;
		j->start[j->nprocs++] = st;
		p += used;
		if (*p == ',')
			p++;
		else if (*p)
			break;
	}
	return 0;
}

static int local_init(struct aah_backend_ctx *ctx)
{
	struct local_priv *priv = xcalloc(1, sizeof(*priv));
	priv->jobs = (struct backend_jobs)BACKEND_JOBS_INIT(struct local_job, job_parse, job_release, NULL);
	priv->nni_python = nnitrial_module_dir();
	int was_quiet = util_set_quiet(1);
	priv->self = fileio_self_exe();
	util_set_quiet(was_quiet);
	priv->hold_helper = find_hold_helper(priv->self);
	ctx->priv = priv;
	return 0;
}

/* In a held child whose runner died before releasing it: run only if the
 * journal already records this process as part of a submitted job, so a
 * resumed runner follows it (else it never ran, and will be submitted again). */
static int journaled_orphan(void *arg)
{
	const char *expdir = arg;
	unsigned long long start;
	char self[64];
	if (proc_start_time(getpid(), &start) < 0)
		return 0;
	snprintf(self, sizeof(self), "%ld.%llu", (long)getpid(), start);
	util_set_quiet(1);   /* in the held child, which execs or exits next */
	return expdir_journal_has_job(expdir, self);
}

int local_held_orphan(int argc, const char **argv)
{
	int help = argc == 2 && !strcmp(argv[1], "--help");
	if (help || argc < 4 || strcmp(argv[2], "--")) {
		fprintf(help ? stdout : stderr,
			"usage: aah-runner held-orphan EXPDIR -- PROGRAM [ARGS...]\n"
			"aah-hold runs it in a held trial rank whose runner died before releasing\n"
			"it: the rank becomes PROGRAM if EXPDIR's journal records its launch, else\n"
			"it exits 125 unexecuted (a resumed runner submits the trial again).\n"
			"Not for use by hand.\n");
		return help ? 0 : 2;
	}
	if (!journaled_orphan((void *)argv[1]))
		return 125;   /* never launched: a resumed runner submits it again */
	execvp(argv[3], (char *const *)(argv + 3));
	fprintf(stderr, "aah-runner: cannot run '%s': %s\n", argv[3], strerror(errno));
	return 127;
}

/* The environment of a rank: ours, plus the contract's names on top, and
 * aah's nni module first on PYTHONPATH (a trial written for NNI imports it
 * where no NNI is installed; an installed one wins). */
static void rank_env(struct strvec *env, const struct launch_rank *r, const char *nni_python)
{
	for (char **e = environ; *e; e++)
		strvec_push(env, *e);
	for (size_t i = 0; i < r->env.n; i++) {
		const char *eq = strchr(r->env.v[i], '=');
		char *name = xstrndup(r->env.v[i], (size_t)(eq - r->env.v[i]));
		strvec_setenv(env, name, eq + 1);
		free(name);
	}
	nnitrial_python_path(env, nni_python);
}

/* A rank that could not become the trial's program: name the config key
 * to fix, in the error (the trial's reason) and in its trial.log. */
static int start_failed(const struct proc *p, const char *log)
{
	if (p->failed_step == PROC_STEP_NONE)
		return error("%s", util_last_error());
	const char *key = p->failed_step == PROC_STEP_CWD ? "trial.codeDir" : "trial.command";
	char *msg = xstrfmt("%s (check %s)", util_last_error(), key);
	char *line = xstrfmt("aah-runner: %s", msg);
	int was_quiet = util_set_quiet(1);
	fileio_append_line(log, line);
	util_set_quiet(was_quiet);
	error("%s", msg);
	free(line);
	free(msg);
	return -1;
}

/* Rank i's word on its exec, when it has one (wait: until it has). The
 * first rank that could not run fails its job with why (trial.log too). */
static void job_heard(struct local_job *j, unsigned i, int wait)
{
	struct proc *p = &j->procs[i];
	if (p->report_fd < 0)
		return;
	int was_quiet = util_set_quiet(1); /* start_failed says it, with the key */
	int r = proc_reported(p, wait);
	util_set_quiet(was_quiet);
	if (r < 0 && !j->start_error) {
		start_failed(p, j->log);
		j->start_error = xstrdup(util_last_error());
	}
}

/* Every released rank's word, waited for: they have had the time of the
 * submissions since, so most have said it already. */
static void hear_all(struct local_priv *priv)
{
	backend_jobs_each(&priv->jobs, struct local_job, j)
		for (unsigned i = 0; i < j->nprocs; i++)
			job_heard(j, i, 1);
	priv->unheard = 0;
}

static int local_submit(struct aah_backend_ctx *ctx, const struct aah_launch *l, char **job)
{
	struct local_priv *priv = ctx->priv;
	struct local_job *j = xcalloc(1, sizeof(*j));
	struct strbuf id = STRBUF_INIT;
	char *log = expdir_file(l->trial_dir, EXPDIR_TRIAL_LOG);
	const char *cwd = l->cwd;   /* trial.codeDir, resolved by the contract */
	int r = 0;

	/* trial.launcher: mpi: one mpirun process starts every rank. */
	unsigned nprocs = l->mpi ? 1 : l->nranks;
	j->procs = xcalloc(nprocs, sizeof(*j->procs));
	j->start = xcalloc(nprocs, sizeof(*j->start));
	const char *orphan_argv[] = { priv->self, "held-orphan", l->expdir, "--", NULL };
	for (unsigned i = 0; i < nprocs && r == 0; i++) {
		struct strvec env = STRVEC_INIT;
		rank_env(&env, &l->ranks[i], priv->nni_python);
		struct proc_spec spec = {
			.argv = strvec_view(l->mpi ? &l->mpirun_argv : &l->ranks[i].argv),
			.env = strvec_view(&env),
			.cwd = cwd,
			.log_path = log,
			.new_session = 1,
			.hold = 1,
			.hold_orphaned = journaled_orphan,
			.hold_arg = l->expdir,
			.hold_helper = priv->hold_helper,
			.hold_orphan_argv = orphan_argv,
		};
		r = proc_start(&j->procs[i], &spec);
		strvec_clear(&env);
		if (r == 0) {
			j->nprocs++;
			if (proc_start_time(j->procs[i].pid, &j->start[i]) < 0)
				j->start[i] = 0;
			strbuf_addf(&id, "%s%ld.%llu", i ? "," : "", (long)j->procs[i].pid,
				    j->start[i]);
		}
	}
	/* Record the job before any rank may run; then let them go (with
	 * defer_release, once the caller has made its batch durable). Whether
	 * each could become its program is heard later (at a poll, or at
	 * LOCAL_UNHEARD_MAX): waiting here for each exec in turn held a wave's
	 * submissions back (docs/scale.md). */
	if (r == 0)
		r = backend_notify_submitted(ctx, id.buf);
	for (unsigned i = 0; i < j->nprocs && r == 0 && !ctx->defer_release; i++) {
		int was_quiet = util_set_quiet(1); /* start_failed says it, with the key */
		int released = proc_release_nowait(&j->procs[i]);
		util_set_quiet(was_quiet);
		if (released < 0)
			r = start_failed(&j->procs[i], log);
	}
	if (r < 0)
		for (unsigned i = 0; i < j->nprocs; i++)
			proc_terminate(&j->procs[i], 0);
	if (r < 0) {
		free(log);
		strbuf_release(&id);
		backend_jobs_free(&priv->jobs, &j->job);
		return -1;
	}
	j->log = log;
	backend_jobs_add(&priv->jobs, &j->job, id.buf);
	strbuf_release(&id);
	*job = xstrdup(j->job.id);
	if (ctx->defer_release) {
		if (priv->nheld == priv->held_cap) {
			priv->held_cap = priv->held_cap ? 2 * priv->held_cap : 16;
			priv->held = xrealloc(priv->held, priv->held_cap * sizeof(*priv->held));
		}
		priv->held[priv->nheld++] = j;
		return 0;
	}
	priv->unheard += j->nprocs;
	if (priv->unheard >= LOCAL_UNHEARD_MAX)
		hear_all(priv);
	return 0;
}

/* The batch's jobs, journaled (durable when go): each rank let go, or all
 * ended unstarted. A rank that has gone already fails its job at its next
 * poll, with why, and its job's other ranks end. */
static void local_release_held(struct aah_backend_ctx *ctx, int go)
{
	struct local_priv *priv = ctx->priv;
	for (size_t h = 0; h < priv->nheld; h++) {
		struct local_job *j = priv->held[h];
		for (unsigned i = 0; i < j->nprocs && go && !j->start_error; i++) {
			int was_quiet = util_set_quiet(1); /* start_failed says it, with the key */
			int released = proc_release_nowait(&j->procs[i]);
			util_set_quiet(was_quiet);
			if (released < 0) {
				start_failed(&j->procs[i], j->log);
				j->start_error = xstrdup(util_last_error());
			}
		}
		if (!go || j->start_error)
			for (unsigned i = 0; i < j->nprocs; i++)
				proc_terminate(&j->procs[i], 0);
		priv->unheard += j->nprocs;
	}
	priv->nheld = 0;
	if (priv->unheard >= LOCAL_UNHEARD_MAX)
		hear_all(priv);
}

/* Is an adopted process still the one we started, and not yet ended? A
 * zombie ('Z', or 'X' while it is reaped) has ended: whoever adopted it may
 * never reap it (a PID 1 that does not reap, a subreaper), and kill(pid, 0)
 * still succeeds on it. */
static int adopted_alive(pid_t pid, unsigned long long start)
{
	unsigned long long now;
	char state;
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return 0;
	if (proc_stat(pid, &state, &now) < 0 || state == 'Z' || state == 'X')
		return 0;
	return !start || now == start;
}

static int local_poll(struct aah_backend_ctx *ctx, struct aah_job_status *st)
{
	struct local_priv *priv = ctx->priv;
	struct local_job *j = backend_jobs_get(&priv->jobs, st->job);
	if (!j) {
		st->state = AAH_JOB_LOST;
		snprintf(st->reason, sizeof(st->reason), "malformed local job id '%s'", st->job);
		return 0;
	}
	unsigned running = 0;
	int failed_code = -1;
	for (unsigned i = 0; i < j->nprocs; i++) {
		struct proc *p = &j->procs[i];
		if (j->adopted) {
			if (adopted_alive(p->pid, j->start[i]))
				running++;
			continue;
		}
		job_heard(j, i, 0);
		if (p->report_fd >= 0 || !proc_poll(p)) {   /* not heard yet: on its way */
			running++;
			continue;
		}
		int code = proc_exit_code(p);
		if (code && failed_code < 0)
			failed_code = code;
	}
	if (running && failed_code < 0) {
		st->state = AAH_JOB_RUNNING;
		return 0;
	}
	if (running) {
		/* One rank failed: the others cannot finish without it. */
		for (unsigned i = 0; i < j->nprocs; i++)
			proc_terminate(&j->procs[i], 5);
	}
	st->exit_code = failed_code < 0 ? 0 : failed_code;
	if (j->canceled)
		st->state = AAH_JOB_CANCELED;
	else if (j->adopted)
		st->state = AAH_JOB_LOST; /* exit status unknowable: result.json decides */
	else
		st->state = failed_code < 0 ? AAH_JOB_SUCCEEDED : AAH_JOB_FAILED;
	if (j->adopted || j->start_error)
		st->exit_code = -1;
	if (j->start_error)
		snprintf(st->reason, sizeof(st->reason), "could not be started: %s", j->start_error);
	else if (failed_code > 128)
		snprintf(st->reason, sizeof(st->reason), "a rank was killed by signal %d",
			 failed_code - 128);
	else if (failed_code > 0)
		snprintf(st->reason, sizeof(st->reason), "a rank exited with status %d", failed_code);
	else if (j->adopted)
		snprintf(st->reason, sizeof(st->reason), "process ended while no runner watched");
	backend_jobs_drop(&priv->jobs, st->job);
	return 0;
}

static int local_cancel(struct aah_backend_ctx *ctx, const char *id)
{
	struct local_job *j = backend_jobs_get(&((struct local_priv *)ctx->priv)->jobs, id);
	if (!j)
		return error("malformed local job id '%s'", id);
	/* Only a job that still ran is canceled: one that had ended before
	 * the cancel keeps its own outcome (its result.json decides). */
	for (unsigned i = 0; i < j->nprocs; i++) {
		struct proc *p = &j->procs[i];
		if (!j->adopted) {
			if (!proc_poll(p)) {
				j->canceled = 1;
				proc_terminate(p, 10);
			}
			continue;
		}
		if (!adopted_alive(p->pid, j->start[i]))
			continue;
		j->canceled = 1;
		kill(-p->pid, SIGTERM);
		for (int k = 0; k < 100 && adopted_alive(p->pid, j->start[i]); k++) {
			struct timespec ts = { 0, 100 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
		kill(-p->pid, SIGKILL);
	}
	return 0;
}

static void local_fini(struct aah_backend_ctx *ctx)
{
	struct local_priv *priv = ctx->priv;
	if (!priv)
		return;
	backend_jobs_clear(&priv->jobs);
	free(priv->nni_python);
	free(priv->self);
	free(priv->hold_helper);
	free(priv->held);
	free(priv);
	ctx->priv = NULL;
}

const struct aah_backend backend_local = {
	.name = "local",
	.help = "local backend settings (none yet)",
	.caps = AAH_CAP_MULTINODE | AAH_CAP_GPU | AAH_CAP_REATTACH | AAH_CAP_MPI | AAH_CAP_ELASTIC,
	.mpi_hosts = LAUNCH_MPI_LOOPBACK,
	.config_keys = NULL,
	.init = local_init,
	.submit = local_submit,
	.poll = local_poll,
	.cancel = local_cancel,
	.release_held = local_release_held,
	.fini = local_fini,
};
