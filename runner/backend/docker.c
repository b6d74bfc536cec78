/* docker.c: trials as Docker containers on this host, one per rank.
 * A job id is the ranks' container ids joined by ','. Containers are
 * created, the job is journaled, then they are started (create + start is
 * `docker run -d` split in two, so a crash never leaves an unrecorded
 * running container). State from `docker inspect`; logs from `docker logs`
 * into trial.log; `docker kill` on cancel, `docker rm -f` after collection.
 * Tested against a real engine (tests/cli/docker_engine.bats). */
#include "runner/backend/docker.h"
#include "fileio.h"
#include "runner/ssh_keys.h"
#include "runner/store/expdir.h" /* expdir_file */
#include "strbuf.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_RANKS 1024

struct djob {
	char *id;
	struct strvec ctrs;       /* container ids */
	int canceled;
	int collected;            /* logs copied and containers removed */
	double queried;           /* util_monotonic() of the last inspect */
	struct docker_state *st;  /* ctrs.n entries */
	int nst;
	struct djob *next;
};

struct docker_priv {
	struct docker_config dc;
	struct backend_tool tool;  /* docker commands: no retries */
	struct djob *jobs;
};

/* One docker command; out and err without their trailing blanks. Returns
 * the exit code (-1: cannot run). */
static int run(const struct docker_priv *p, struct strvec *argv, struct strbuf *out,
	       struct strbuf *err)
{
	int code = backend_run_tool(&p->tool, strvec_view(argv), NULL, out, err);
	strbuf_trim_trailing(out);
	return code;
}

/* docker <verb> [flag] ids... ; returns the exit code (-1: cannot run). */
static int docker_simple(const struct docker_priv *p, const char *verb, const char *flag,
			 const struct strvec *ids, struct strbuf *err)
{
	struct strvec argv = STRVEC_INIT;
	struct strbuf out = STRBUF_INIT;
	strvec_push(&argv, p->dc.binary);
	strvec_push(&argv, verb);
	if (flag)
		strvec_push(&argv, flag);
	for (size_t i = 0; i < ids->n; i++)
		strvec_push(&argv, ids->v[i]);
	int code = run(p, &argv, &out, err);
	strvec_clear(&argv);
	strbuf_release(&out);
	return code;
}

static int docker_init(struct aah_backend_ctx *ctx)
{
	struct docker_priv *p = xcalloc(1, sizeof(*p));
	const struct aah_config *cfg = ctx->cfg;
	ctx->priv = p;
	if (config_parse_section(cfg, "docker", config_section(cfg, "docker"),
				 docker_config_keys, &p->dc) < 0)
		return -1;
	p->tool = (struct backend_tool){ .name = "docker", .missing = "is it installed?",
					 .timeout = p->dc.command_timeout };
	return 0;
}

static void djob_free(struct djob *j)
{
	free(j->id);
	strvec_clear(&j->ctrs);
	free(j->st);
	free(j);
}

static struct djob *job_get(struct docker_priv *p, const char *id)
{
	for (struct djob *j = p->jobs; j; j = j->next)
		if (!strcmp(j->id, id))
			return j;
	struct djob *j = xcalloc(1, sizeof(*j));
	j->id = xstrdup(id);
	strvec_init(&j->ctrs);
	for (const char *s = id; *s;) {
		size_t len = strcspn(s, ",");
		if (len) {
			char *c = xstrndup(s, len);
			strvec_push(&j->ctrs, c);
			free(c);
		}
		s += len;
		if (*s == ',')
			s++;
	}
	j->st = xcalloc(j->ctrs.n ? j->ctrs.n : 1, sizeof(*j->st));
	j->next = p->jobs;
	p->jobs = j;
	return j;
}

static void job_drop(struct docker_priv *p, const char *id)
{
	for (struct djob **pp = &p->jobs; *pp; pp = &(*pp)->next) {
		if (!strcmp((*pp)->id, id)) {
			struct djob *j = *pp;
			*pp = j->next;
			djob_free(j);
			return;
		}
	}
}

static void remove_all(const struct docker_priv *p, const struct strvec *ids)
{
	struct strbuf err = STRBUF_INIT;
	if (ids->n)
		docker_simple(p, "rm", "-f", ids, &err);
	strbuf_release(&err);
}

/* mode, and owner docker.user where that is a numeric uid[:gid] and the
 * runner is root (only root gives files away): the container's user must
 * read its keys and write its pid file. */
static int own_path(const char *path, unsigned mode, const char *user)
{
	unsigned uid, gid;
	int n = geteuid() == 0 && user && strspn(user, "0123456789:") == strlen(user)
			? sscanf(user, "%u:%u", &uid, &gid) : 0;
	if (chmod(path, mode) < 0)
		return error_errno("chmod %s", path);
	if (n >= 1 && chown(path, uid, n == 2 ? gid : (gid_t)-1) < 0)
		return error_errno("chown %s to %s", path, user);
	return 0;
}

static int ssh_file(const struct docker_mpi *m, const char *name, const struct strbuf *text,
		    unsigned mode, const char *user)
{
	char *path = xstrfmt("%s/%s", m->ssh_dir, name);
	int r = fileio_write_atomic_flags(path, text->buf, text->len, FILEIO_NOSYNC);
	if (r == 0)
		r = own_path(path, mode, user);
	free(path);
	return r;
}

/* <trial dir>/ssh, made anew for every attempt: a key pair for mpirun's
 * ssh, one for the workers' sshd, and the configs (docker.h). */
static int mpi_prepare(const struct docker_priv *p, const struct aah_launch *l,
		       struct docker_mpi *m)
{
	struct strbuf id = STRBUF_INIT, id_pub = STRBUF_INIT, hk = STRBUF_INIT,
		      hk_pub = STRBUF_INIT, text = STRBUF_INIT;
	m->ssh_dir = xstrfmt("%s/ssh", l->trial_dir);
	m->ports = xcalloc(l->nodes, sizeof(*m->ports));
	int r = 0;
	for (unsigned i = 1; i < l->nodes && r == 0; i++)
		if (!(m->ports[i] = backend_free_port()))
			r = error("no free TCP port for the sshd of node %u", i);
	if (r == 0 && (fileio_remove_tree(m->ssh_dir) < 0 || fileio_mkdir_p(m->ssh_dir, 0700) < 0))
		r = -1;
	const char *user = p->dc.user;
	if (r == 0)
		r = ssh_keypair_new(&id, &id_pub) < 0 || ssh_keypair_new(&hk, &hk_pub) < 0 ? -1 : 0;
	if (r == 0)
		r = ssh_file(m, "id_ecdsa", &id, 0600, user);
	if (r == 0) {
		strbuf_addf(&id_pub, " aah-%s-launcher\n", l->job_name);
		r = ssh_file(m, "authorized_keys", &id_pub, 0644, user);
	}
	if (r == 0)
		r = ssh_file(m, "host_ecdsa_key", &hk, 0600, user);
	if (r == 0) {
		docker_mpi_known_hosts(l, m, hk_pub.buf, &text);
		r = ssh_file(m, "known_hosts", &text, 0644, user);
	}
	if (r == 0) {
		strbuf_reset(&text);
		docker_mpi_ssh_config(l, m, &text);
		r = ssh_file(m, "config", &text, 0644, user);
	}
	if (r == 0) {
		strbuf_reset(&text);
		docker_mpi_sshd_config(m, &text);
		r = ssh_file(m, "sshd_config", &text, 0644, user);
	}
	if (r == 0) /* the containers write their pid and done files into it */
		r = own_path(m->ssh_dir, 0700, user);
	strbuf_release(&id);
	strbuf_release(&id_pub);
	strbuf_release(&hk);
	strbuf_release(&hk_pub);
	strbuf_release(&text);
	return r;
}

static int docker_submit(struct aah_backend_ctx *ctx, const struct aah_launch *l, char **job)
{
	struct docker_priv *p = ctx->priv;
	struct strvec ids = STRVEC_INIT, names = STRVEC_INIT;
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT, jid = STRBUF_INIT;
	struct docker_mpi mpi = { NULL, NULL };
	int r = l->mpi ? mpi_prepare(p, l, &mpi) : 0;

	/* Containers of this trial left by a runner that died before journaling. */
	for (unsigned i = 0; i < l->nranks; i++) {
		char *name = docker_container_name(l, i);
		strvec_push(&names, name);
		free(name);
	}
	remove_all(p, &names);
	for (unsigned i = 0; i < l->nranks && r == 0; i++) {
		struct strvec argv = STRVEC_INIT;
		r = l->mpi ? docker_create_mpi_argv(&p->dc, l, &mpi, i, l->cwd, &argv)
			   : docker_create_argv(&p->dc, l, i, l->cwd, &argv);
		int code = r == 0 ? run(p, &argv, &out, &err) : -1;
		if (r == 0 && code != 0)
			r = code < 0 ? -1 : error("docker create for rank %u failed: %s", i, err.buf);
		if (r == 0 && !out.len)
			r = error("docker create printed no container id");
		if (r == 0) {
			const char *nl = strrchr(out.buf, '\n');
			strvec_push(&ids, nl ? nl + 1 : out.buf);
			strbuf_addf(&jid, "%s%s", i ? "," : "", ids.v[ids.n - 1]);
		}
		strvec_clear(&argv);
	}
	if (r == 0)
		r = backend_notify_submitted(ctx, jid.buf);
	if (r == 0) {
		int code = docker_simple(p, "start", NULL, &ids, &err);
		if (code != 0)
			r = code < 0 ? -1 : error("docker start failed: %s", err.buf);
	}
	if (r < 0)
		remove_all(p, &ids);
	else
		*job = strbuf_detach(&jid, NULL);
	strvec_clear(&ids);
	strvec_clear(&names);
	strbuf_release(&out);
	strbuf_release(&err);
	strbuf_release(&jid);
	free(mpi.ssh_dir);
	free(mpi.ports);
	return r;
}

static int inspect(struct docker_priv *p, struct djob *j)
{
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	struct strvec argv = STRVEC_INIT;
	strvec_push(&argv, p->dc.binary);
	strvec_push(&argv, "inspect");
	for (size_t i = 0; i < j->ctrs.n; i++)
		strvec_push(&argv, j->ctrs.v[i]);
	int code = run(p, &argv, &out, &err);
	int r = 0;
	/* Missing containers: exit 1, "No such object", the others still printed. */
	if (code == 0 || (code == 1 && strstr(err.buf, "No such"))) {
		int n = out.len ? docker_parse_inspect(out.buf, j->st, (int)j->ctrs.n) : 0;
		if (n < 0)
			r = -1;
		else
			j->nst = n;
	} else {
		r = code < 0 ? -1 : error("docker inspect failed: %s", err.buf);
	}
	j->queried = util_monotonic();
	strvec_clear(&argv);
	strbuf_release(&out);
	strbuf_release(&err);
	return r;
}

static int docker_poll(struct aah_backend_ctx *ctx, struct aah_job_status *st)
{
	struct docker_priv *p = ctx->priv;
	struct djob *j = job_get(p, st->job);
	if (!j->ctrs.n || j->ctrs.n > MAX_RANKS) {
		st->state = AAH_JOB_LOST;
		snprintf(st->reason, sizeof(st->reason), "'%s' is not a docker job id", st->job);
		return 0;
	}
	if (j->collected) {
		st->state = AAH_JOB_CANCELED;
		snprintf(st->reason, sizeof(st->reason), "canceled");
		return 0;
	}
	if (!j->queried || util_monotonic() - j->queried >= p->dc.poll_interval) {
		if (inspect(p, j) < 0)
			return -1;
	} else {
		st->state = AAH_JOB_RUNNING;
		return 0;
	}
	st->state = docker_job_state(j->st, j->nst, (int)j->ctrs.n, j->canceled, &st->exit_code,
				     st->reason, sizeof(st->reason));
	if (st->state == AAH_JOB_FAILED) {
		/* One rank failed: the others cannot finish without it. */
		struct strvec live = STRVEC_INIT;
		struct strbuf err = STRBUF_INIT;
		for (int i = 0; i < j->nst; i++)
			if (!strcmp(j->st[i].status, "running") || !strcmp(j->st[i].status, "paused"))
				strvec_push(&live, j->st[i].id);
		if (live.n)
			docker_simple(p, "kill", NULL, &live, &err);
		strvec_clear(&live);
		strbuf_release(&err);
	}
	return 0;
}

/* docker logs of every rank, appended to trial.log, then docker rm -f. */
static int collect(struct docker_priv *p, struct djob *j, const char *trial_dir)
{
	char *log = expdir_file(trial_dir, EXPDIR_TRIAL_LOG);
	struct strbuf text = STRBUF_INIT, out = STRBUF_INIT, err = STRBUF_INIT;
	for (size_t i = 0; i < j->ctrs.n; i++) {
		struct strvec argv = STRVEC_INIT;
		strvec_push(&argv, p->dc.binary);
		strvec_push(&argv, "logs");
		strvec_push(&argv, j->ctrs.v[i]);
		int code = run(p, &argv, &out, &err);
		strbuf_addf(&text, "== rank %zu (container %.12s) ==\n", i, j->ctrs.v[i]);
		if (code == 0) {
			/* docker logs replays the container's stdout and stderr apart. */
			if (out.len)
				strbuf_addf(&text, "%s\n", out.buf);
			if (err.len)
				strbuf_addf(&text, "%s\n", err.buf);
		} else {
			strbuf_addf(&text, "(docker logs failed: %s)\n", err.buf);
		}
		strvec_clear(&argv);
	}
	strbuf_trim_trailing(&text);
	int r = fileio_append_line(log, text.buf);
	remove_all(p, &j->ctrs);
	j->collected = 1;
	strbuf_release(&text);
	strbuf_release(&out);
	strbuf_release(&err);
	free(log);
	return r;
}

/* Kill the ranks; reap (right after the trial settles) copies their logs
 * and removes them with docker rm -f. */
static int docker_cancel(struct aah_backend_ctx *ctx, const char *id)
{
	struct docker_priv *p = ctx->priv;
	struct djob *j = job_get(p, id);
	struct strbuf err = STRBUF_INIT;
	j->canceled = 1;
	if (j->collected)
		return 0;
	int code = docker_simple(p, "kill", NULL, &j->ctrs, &err);
	/* Already stopped (or gone) is what was asked for. */
	if (code > 0 && !strstr(err.buf, "is not running") && !strstr(err.buf, "No such"))
		code = error("docker kill failed: %s", err.buf);
	strbuf_release(&err);
	j->queried = 0;
	return code < 0 ? -1 : 0;
}

static int docker_reap(struct aah_backend_ctx *ctx, const char *job, const char *trial_dir)
{
	struct docker_priv *p = ctx->priv;
	struct djob *j = job_get(p, job);
	int r = j->collected ? 0 : collect(p, j, trial_dir);
	job_drop(p, job);
	return r;
}

static void docker_fini(struct aah_backend_ctx *ctx)
{
	struct docker_priv *p = ctx->priv;
	if (!p)
		return;
	while (p->jobs) {
		struct djob *j = p->jobs;
		p->jobs = j->next;
		djob_free(j);
	}
	config_release_section(docker_config_keys, &p->dc);
	free(p);
	ctx->priv = NULL;
}

const struct aah_backend backend_docker = {
	.name = "docker",
	.help = "Docker backend settings",
	.caps = AAH_CAP_MULTINODE | AAH_CAP_GPU | AAH_CAP_REATTACH | AAH_CAP_CONTAINER | AAH_CAP_MPI | AAH_CAP_ELASTIC,
	.mpi_hosts = LAUNCH_MPI_NAMED,
	.config_keys = docker_config_keys,
	.config_size = sizeof(struct docker_config),
	.init = docker_init,
	.submit = docker_submit,
	.poll = docker_poll,
	.cancel = docker_cancel,
	.reap = docker_reap,
	.fini = docker_fini,
	.check_config = docker_check_config,
};
