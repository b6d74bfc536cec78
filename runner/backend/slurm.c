/* slurm.c: trials as Slurm batch jobs. One sbatch script per
 * trial; the Slurm job id is the job id in the journal. One squeue query per
 * poll interval covers every job this runner follows; sacct answers for
 * jobs squeue no longer knows. Every Slurm command runs from an argv vector
 * with a timeout (backend_run_tool). */
#include "runner/backend/slurm.h"
#include "fileio.h"
#include "runner/backend/proc.h" /* PROC_TIMEOUT_STATUS */
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct sjob {
	struct backend_job job;   /* job.id: the Slurm job id */
	struct slurm_row row;     /* last squeue/sacct answer */
	int known;                /* row is valid */
	int queried;              /* part of the last squeue query */
	int canceled;             /* aah canceled it */
	int released_ok;          /* this runner released it (a later hold is the user's) */
	int release_tries;
	double released;          /* last time a release was tried */
};

struct slurm_priv {
	struct slurm_config sc;
	struct backend_tool tool;  /* sbatch, squeue, sacct, scontrol, scancel */
	char *runner;
	double last_query;        /* util_monotonic() of the last squeue */
	struct backend_jobs jobs; /* struct sjob */
};

#define MAX_ROWS 4096

/* Run a Slurm command (no retries); out/err are filled. Returns the exit
 * code, or -1 when the program cannot be run at all (not installed). */
static int slurm_run(const struct slurm_priv *p, const struct strvec *argv, struct strbuf *out,
		     struct strbuf *err)
{
	return backend_run_tool(&p->tool, strvec_view(argv), NULL, out, err);
}

/* The same, tried 3 times (1 s, 2 s apart) while it fails for a transient
 * reason (controller unreachable, a command timeout). */
static int slurm_run_retried(const struct slurm_priv *p, const struct strvec *argv,
			     struct strbuf *out, struct strbuf *err, void (*before_retry)(void *),
			     void *arg)
{
	struct backend_tool tool = p->tool;
	tool.retries = 2;
	tool.pause = 1;
	tool.transient = slurm_error_transient;
	tool.before_retry = before_retry;
	tool.arg = arg;
	return backend_run_tool(&tool, strvec_view(argv), NULL, out, err);
}

/* The first lines of a command's stderr, for a message. */
static const char *err_text(struct strbuf *err, int code)
{
	if (code == PROC_TIMEOUT_STATUS)
		return "timed out (is slurmctld reachable?)";
	for (char *c = err->buf; *c; c++)
		if (*c == '\n')
			*c = ' ';
	return err->len ? err->buf : "(no message)";
}

static int slurm_init(struct aah_backend_ctx *ctx)
{
	struct slurm_priv *p = xcalloc(1, sizeof(*p));
	p->jobs = (struct backend_jobs)BACKEND_JOBS_INIT(struct sjob, NULL, NULL, NULL);
	const struct aah_config *cfg = ctx->cfg;
	ctx->priv = p;
	if (config_parse_section(cfg, "slurm", config_section(cfg, "slurm"),
				 slurm_config_keys, &p->sc) < 0)
		return -1;
	p->tool = (struct backend_tool){ .name = "slurm", .missing = "is slurm-client installed?",
					 .timeout = p->sc.command_timeout };
	/* A pool's trials run on their shares, packed at launch (slurm_spec.c). */
	if (cfg->pool.devices <= 0 && cfg->trial.nodes % p->sc.tasks_per_node)
		return error("slurm: trial.nodes (%ld) is not a multiple of slurm.tasksPerNode (%ld)",
			     cfg->trial.nodes, p->sc.tasks_per_node);
	if (p->sc.runner) {
		p->runner = xstrdup(p->sc.runner);
	} else {
		int held = util_hold_errors(1);
		p->runner = fileio_self_exe();
		util_hold_errors(held);
		if (!p->runner)
			return error("slurm: %s; set slurm.runner", util_last_error());
	}
	return 0;
}

static int valid_id(const char *id)
{
	return *id && strlen(id) < 32 && strspn(id, "0123456789_") == strlen(id);
}

static int slurm_place(struct aah_backend_ctx *ctx, unsigned trial_seq, unsigned attempt,
		       char **hosts, unsigned nodes, unsigned *port)
{
	(void)trial_seq;
	(void)attempt;
	/* The nodes are Slurm's choice: the launcher fills the names in. */
	for (unsigned i = 0; i < nodes; i++)
		hosts[i] = xstrfmt(SLURM_HOST_PLACEHOLDER, i);
	*port = ctx->cfg->trial.master_port ? (unsigned)ctx->cfg->trial.master_port
					    : backend_free_port();
	if (!*port)
		*port = 29500;
	return 0;
}

/* A trial's Slurm job name, for cancel_orphans (also a before_retry hook). */
struct orphans {
	const struct slurm_priv *p;
	const char *job_name;
};

/* Cancel jobs of this trial that are still held: left by a runner that died
 * between sbatch and the journal, or by an sbatch that timed out. */
static void cancel_orphans(void *arg)
{
	const struct orphans *o = arg;
	struct strvec argv = STRVEC_INIT;
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	strvec_push(&argv, "scancel");
	strvec_pushf(&argv, "--name=%s", o->job_name);
	strvec_push(&argv, "--state=PENDING");
	slurm_run(o->p, &argv, &out, &err);
	strvec_clear(&argv);
	strbuf_release(&out);
	strbuf_release(&err);
}

static int release(struct slurm_priv *p, struct sjob *j)
{
	struct strvec argv = STRVEC_INIT;
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	j->released = util_monotonic();
	strvec_push(&argv, "scontrol");
	strvec_push(&argv, "release");
	strvec_push(&argv, j->job.id);
	int code = slurm_run_retried(p, &argv, &out, &err, NULL, NULL);
	j->release_tries++;
	j->released_ok = code == 0;
	if (code != 0)
		warning("slurm: cannot release job %s (%s); will try again while polling", j->job.id,
			code < 0 ? "scontrol missing" : err_text(&err, code));
	strvec_clear(&argv);
	strbuf_release(&out);
	strbuf_release(&err);
	return code == 0 ? 0 : -1;
}

static int slurm_submit(struct aah_backend_ctx *ctx, const struct aah_launch *l, char **job)
{
	struct slurm_priv *p = ctx->priv;
	struct strbuf script = STRBUF_INIT, out = STRBUF_INIT, err = STRBUF_INIT;
	struct strvec argv = STRVEC_INIT;
	char *path = xstrfmt("%s/slurm.sh", l->place_dir);
	char id[32] = "";
	int r = slurm_script_build(&p->sc, ctx->cfg, l, l->cwd, &script);
	if (r == 0)
		r = fileio_write_atomic(path, script.buf, script.len);
	if (r == 0)
		r = slurm_sbatch_argv(&p->sc, path, p->runner, l, &argv);
	if (r == 0) {
		struct orphans o = { p, l->job_name };
		cancel_orphans(&o);
		int code = slurm_run_retried(p, &argv, &out, &err, cancel_orphans, &o);
		if (code < 0)
			r = -1;
		else if (code != 0)
			r = error("slurm: sbatch refused trial %s: %s", l->trial_id, err_text(&err, code));
		else if (slurm_parse_job_id(out.buf, id, sizeof(id)) < 0)
			r = error("slurm: sbatch printed no job id: '%s'", out.buf);
	}
/* Journal first, then let the job run. */
	if (r == 0 && backend_notify_submitted(ctx, id) < 0) {
		struct strvec cancel = STRVEC_INIT;
		strvec_push(&cancel, "scancel");
		strvec_push(&cancel, id);
		slurm_run(p, &cancel, &out, &err);
		strvec_clear(&cancel);
		r = -1;
	}
	if (r == 0) {
		struct sjob *j = backend_jobs_get(&p->jobs, id);
		release(p, j);
		*job = xstrdup(id);
	}
	strvec_clear(&argv);
	strbuf_release(&script);
	strbuf_release(&out);
	strbuf_release(&err);
	free(path);
	return r;
}

/* One squeue for every job followed and not settled. */
static int query_squeue(struct slurm_priv *p)
{
	struct strvec argv = STRVEC_INIT;
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT, ids = STRBUF_INIT;
	int r = 0;
	backend_jobs_each(&p->jobs, struct sjob, j)
		strbuf_addf(&ids, "%s%s", ids.len ? "," : "", j->job.id);
	p->last_query = util_monotonic();
	if (!ids.len)
		goto out;
	strvec_push(&argv, "squeue");
	strvec_push(&argv, "--noheader");
	strvec_push(&argv, "--states=all");
	strvec_push(&argv, "--format=%i|%T|%r");
	strvec_pushf(&argv, "--jobs=%s", ids.buf);
	int code = slurm_run(p, &argv, &out, &err);
	if (code != 0 && !(code == 1 && strstr(err.buf, "Invalid job id"))) {
		r = code < 0 ? -1 : error("slurm: squeue failed: %s", err_text(&err, code));
		goto out;
	}
	struct slurm_row *rows = xcalloc(MAX_ROWS, sizeof(*rows));
	int n = code == 0 ? slurm_parse_rows(out.buf, 0, rows, MAX_ROWS) : 0;
	backend_jobs_each(&p->jobs, struct sjob, j) {
		j->queried = 1;
		j->known = 0;
		for (int i = 0; i < n; i++) {
			if (!strcmp(rows[i].id, j->job.id)) {
				j->row = rows[i];
				j->known = 1;
			}
		}
	}
	free(rows);
out:
	strvec_clear(&argv);
	strbuf_release(&out);
	strbuf_release(&err);
	strbuf_release(&ids);
	return r;
}

/* Accounting, for a job squeue has forgotten. 1 found, 0 not, -1 error. */
static int query_sacct(struct slurm_priv *p, struct sjob *j, char *why, size_t n)
{
	struct strvec argv = STRVEC_INIT;
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	struct slurm_row row;
	int found = 0;
	strvec_push(&argv, "sacct");
	strvec_push(&argv, "--noheader");
	strvec_push(&argv, "--parsable2");
	strvec_push(&argv, "--allocations");
	strvec_pushf(&argv, "--jobs=%s", j->job.id);
	strvec_push(&argv, "--format=JobID,State,ExitCode,Reason");
	int code = slurm_run(p, &argv, &out, &err);
	if (code == 0 && slurm_parse_rows(out.buf, 1, &row, 1) == 1 && !strcmp(row.id, j->job.id)) {
		j->row = row;
		j->known = 1;
		found = 1;
	} else if (code != 0) {
		snprintf(why, n, "sacct: %s", err_text(&err, code));
		found = slurm_error_transient(err.buf, code) ? -1 : 0;
	} else {
		snprintf(why, n, "sacct has no record of it");
	}
	strvec_clear(&argv);
	strbuf_release(&out);
	strbuf_release(&err);
	return found;
}

static int scontrol_exit(struct slurm_priv *p, const char *id)
{
	struct strvec argv = STRVEC_INIT;
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	strvec_push(&argv, "scontrol");
	strvec_push(&argv, "--oneliner");
	strvec_push(&argv, "show");
	strvec_push(&argv, "job");
	strvec_push(&argv, id);
	int code = slurm_run(p, &argv, &out, &err);
	int exit_code = code == 0 ? slurm_scontrol_exit(out.buf) : -1;
	strvec_clear(&argv);
	strbuf_release(&out);
	strbuf_release(&err);
	return exit_code;
}

static int slurm_poll(struct aah_backend_ctx *ctx, struct aah_job_status *st)
{
	struct slurm_priv *p = ctx->priv;
	if (!valid_id(st->job)) {
		st->state = AAH_JOB_LOST;
		snprintf(st->reason, sizeof(st->reason), "'%s' is not a Slurm job id", st->job);
		return 0;
	}
	struct sjob *j = backend_jobs_get(&p->jobs, st->job);
	double now = util_monotonic();
	if (!j->queried || now - p->last_query >= p->sc.poll_interval) {
		if (query_squeue(p) < 0)
			return -1;
	}
	if (!j->known) {
		char why[160] = "";
		int found = query_sacct(p, j, why, sizeof(why));
		if (found < 0)
			return error("slurm: cannot query job %s: %s", j->job.id, why);
		if (!found) {
			st->state = AAH_JOB_LOST;
			snprintf(st->reason, sizeof(st->reason),
				 "slurm job %s is no longer known to squeue (%s)", j->job.id, why);
			backend_jobs_drop(&p->jobs, st->job);
			return 0;
		}
	}
	int final;
	st->state = slurm_map_state(j->row.state, j->canceled, &final);
	if (!final) {
		/* Held by our own sbatch --hold and never released: a runner died
		 * between the journal and the release, or the release failed. Once
		 * this runner released a job, a later hold is someone's choice. */
		if (st->state == AAH_JOB_PENDING && strstr(j->row.reason, "JobHeldUser") &&
		    !j->released_ok && j->release_tries < 5 && now - j->released > 10)
			release(p, j);
		return 0;
	}
	int exit_code = j->row.exit_code;
	if (exit_code < 0 && st->state != AAH_JOB_SUCCEEDED)
		exit_code = scontrol_exit(p, j->job.id);
	if (st->state == AAH_JOB_SUCCEEDED)
		exit_code = 0;
	st->exit_code = exit_code;
	st->disrupted = st->state == AAH_JOB_FAILED && slurm_state_disrupted(j->row.state);
	if (st->state != AAH_JOB_SUCCEEDED)
		slurm_describe(j->job.id, j->row.state, j->row.reason, exit_code, st->reason,
			       sizeof(st->reason));
	/* A settled job is dropped; a later poll (after a cancel) asks again. */
	backend_jobs_drop(&p->jobs, st->job);
	return 0;
}

static int slurm_cancel(struct aah_backend_ctx *ctx, const char *id)
{
	struct slurm_priv *p = ctx->priv;
	if (!valid_id(id))
		return error("slurm: '%s' is not a Slurm job id", id);
	struct sjob *j = backend_jobs_get(&p->jobs, id);
	struct strvec argv = STRVEC_INIT;
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	j->canceled = 1;
	strvec_push(&argv, "scancel");
	strvec_push(&argv, id);
	int code = slurm_run(p, &argv, &out, &err);
	int r = 0;
	if (code != 0 && !(err.len && (strstr(err.buf, "already completing or completed") ||
				       strstr(err.buf, "Invalid job id"))))
		r = code < 0 ? -1 : error("slurm: scancel %s failed: %s", id, err_text(&err, code));
	p->last_query = 0; /* ask squeue again at the next poll */
	j->queried = 0;
	strvec_clear(&argv);
	strbuf_release(&out);
	strbuf_release(&err);
	return r;
}

static int slurm_reap(struct aah_backend_ctx *ctx, const char *job, const char *trial_dir)
{
	(void)trial_dir;
	backend_jobs_drop(&((struct slurm_priv *)ctx->priv)->jobs, job);
	return 0;
}

static void slurm_fini(struct aah_backend_ctx *ctx)
{
	struct slurm_priv *p = ctx->priv;
	if (!p)
		return;
	backend_jobs_clear(&p->jobs);
	config_release_section(slurm_config_keys, &p->sc);
	free(p->runner);
	free(p);
	ctx->priv = NULL;
}

const struct aah_backend backend_slurm = {
	.name = "slurm",
	.help = "Slurm backend settings",
	.caps = AAH_CAP_MULTINODE | AAH_CAP_GPU | AAH_CAP_REATTACH | AAH_CAP_MPI | AAH_CAP_ELASTIC,
	.mpi_hosts = LAUNCH_MPI_PLACED,
	.config_keys = slurm_config_keys,
	.config_size = sizeof(struct slurm_config),
	.init = slurm_init,
	.place = slurm_place,
	.submit = slurm_submit,
	.poll = slurm_poll,
	.cancel = slurm_cancel,
	.reap = slurm_reap,
	.fini = slurm_fini,
};
