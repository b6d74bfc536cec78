/* docker.c: trials as Docker containers, one per rank, on this host's
 * engine or on docker.hosts (each reached by docker -H ssh://...,
 * docker_fleet.c). A job id is the ranks' container ids joined by ','
 * (on docker.hosts each as <host>/<id>). Containers are
 * created, the job is journaled, then they are started (create + start is
 * `docker run -d` split in two, so a crash never leaves an unrecorded
 * running container). State from `docker inspect`; logs from `docker logs`
 * into trial.log; `docker kill` on cancel, `docker rm -f` after collection.
 * Tested against a real engine (tests/cli/docker_engine.bats). */
#include "runner/backend/docker.h"
#include "runner/backend/docker_fleet.h"
#include "runner/backend/mpi_ssh.h" /* the ssh directory's files */
#include "fileio.h"
#include "runner/backend/ssh_keys.h"
#include "runner/store/expdir.h" /* expdir_file, expdir_workdir */
#include "strbuf.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_RANKS 1024

struct djob {
	struct backend_job job;   /* job.id: its containers' ids joined by ',' */
	struct strvec ctrs;       /* container ids */
	int *host;                /* ctrs.n: its host's index in docker.hosts; -1: this machine */
	int bad_host;             /* it names a host docker.hosts does not list */
	int canceled;
	int collected;            /* logs copied and containers removed */
	double queried;           /* util_monotonic() of the last inspect */
	struct docker_state *st;  /* ctrs.n entries */
	int nst;
	int down;                 /* index of a host of its that is down, or -1 */
};

static struct docker_host *host_of(struct docker_priv *p, int i)
{
	return i >= 0 ? &p->hosts.h[i] : NULL;
}

/* docker <verb> [flag] <the job's containers on host hi> ; the exit code
 * (-1: cannot run; 0 when it has none there). */
static int docker_on(struct docker_priv *p, int hi, const char *verb, const char *flag,
		     const struct strvec *ids, const int *host, struct strbuf *err)
{
	struct strvec argv = STRVEC_INIT;
	struct strbuf out = STRBUF_INIT;
	docker_fleet_argv(p, host_of(p, hi), &argv);
	strvec_push(&argv, verb);
	if (flag)
		strvec_push(&argv, flag);
	size_t base = argv.n;
	for (size_t i = 0; i < ids->n; i++)
		if (!host || host[i] == hi)
			strvec_push(&argv, ids->v[i]);
	int code = argv.n > base ? docker_fleet_run(p, &argv, &out, err) : 0;
	strvec_clear(&argv);
	strbuf_release(&out);
	return code;
}

/* The hosts of a job's containers, each once, in their order: *n of them. */
static int *hosts_of(const int *host, size_t nctrs, size_t *n)
{
	int *v = xcalloc(nctrs ? nctrs : 1, sizeof(*v));
	*n = 0;
	for (size_t i = 0; i < nctrs; i++) {
		size_t k = 0;
		while (k < *n && v[k] != host[i])
			k++;
		if (k == *n)
			v[(*n)++] = host[i];
	}
	return v;
}

/* docker <verb> [flag] on every host of the job; the worst exit code. */
static int docker_all(struct docker_priv *p, const char *verb, const char *flag,
		      const struct strvec *ids, const int *host, struct strbuf *err)
{
	size_t n;
	int *hs = hosts_of(host, ids->n, &n), worst = 0;
	for (size_t k = 0; k < n; k++) {
		struct docker_host *h = host_of(p, hs[k]);
		if (h && h->down)
			continue;
		int code = docker_on(p, hs[k], verb, flag, ids, host, err);
		if (code < 0 || (worst >= 0 && code > worst))
			worst = code;
	}
	free(hs);
	return worst;
}

static void djob_release(struct backend_job *job)
{
	struct djob *j = (struct djob *)job;
	strvec_clear(&j->ctrs);
	free(j->host);
	free(j->st);
}

/* A job id: its containers' ids joined by ','; on docker.hosts each is
 * <host>/<id>. */
static int djob_init(void *owner, struct backend_job *job)
{
	struct docker_priv *p = owner;
	struct djob *j = (struct djob *)job;
	const char *id = job->id;
	j->down = -1;
	strvec_init(&j->ctrs);
	size_t cap = 1;
	for (const char *s = id; *s; s++)
		cap += *s == ',';
	j->host = xcalloc(cap, sizeof(*j->host));
	for (const char *s = id; *s;) {
		size_t len = strcspn(s, ",");
		if (len) {
			char *c = xstrndup(s, len), *slash = strchr(c, '/');
			int hi = -1;
			if (slash) {
				*slash = '\0';
				struct docker_host *h = docker_hosts_find(&p->hosts, c);
				hi = h ? (int)(h - p->hosts.h) : -1;
				j->bad_host |= !h;
			} else {
				j->bad_host |= p->hosts.n > 0;
			}
			j->host[j->ctrs.n] = hi;
			strvec_push(&j->ctrs, slash ? slash + 1 : c);
			free(c);
		}
		s += len;
		if (*s == ',')
			s++;
	}
	j->st = xcalloc(j->ctrs.n ? j->ctrs.n : 1, sizeof(*j->st));
	return 0;
}

static int docker_init(struct aah_backend_ctx *ctx)
{
	struct docker_priv *p = xcalloc(1, sizeof(*p));
	p->jobs = (struct backend_jobs)BACKEND_JOBS_INIT(struct djob, djob_init, djob_release, p);
	const struct aah_config *cfg = ctx->cfg;
	ctx->priv = p;
	if (config_parse_section(cfg, "docker", config_section(cfg, "docker"),
				 docker_config_keys, &p->dc) < 0)
		return -1;
	p->tool = (struct backend_tool){ .name = "docker", .missing = "is it installed?",
					 .timeout = p->dc.command_timeout };
	p->expdir = ctx->expdir;
	p->experiment_id = ctx->experiment_id;
	p->workdir = expdir_workdir(ctx->expdir ? ctx->expdir : ".");
	if (docker_hosts_parse(cfg, &p->hosts) < 0)
		return -1;
	p->one_per_host = !strcmp(cfg->trial.launcher, "mpi");
	p->cfg_master_port = (unsigned)cfg->trial.master_port;
	return docker_fleet_start(p);
}

static void remove_all(struct docker_priv *p, const struct strvec *ids, const int *host)
{
	struct strbuf err = STRBUF_INIT;
	docker_all(p, "rm", "-f", ids, host, &err);
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

/* <place dir>/ssh, made anew for every launch: a key pair for mpirun's
 * ssh, one for the workers' sshd, and the configs (docker.h). */
static int mpi_prepare(const struct docker_priv *p, const struct aah_launch *l,
		       struct docker_mpi *m)
{
	struct strbuf id = STRBUF_INIT, id_pub = STRBUF_INIT, hk = STRBUF_INIT,
		      hk_pub = STRBUF_INIT, text = STRBUF_INIT;
	m->ssh_dir = xstrfmt("%s/ssh", l->place_dir);
	m->ports = xcalloc(l->nodes, sizeof(*m->ports));
	int r = 0;
	if (p->hosts.n) {
		/* node i's sshd on its host's address, at a port of its device
		 * (past the rendezvous ports): two trials never share one. */
		const struct docker_fleet_placed *pl = &p->placed;
		if (pl->seq != l->trial_seq || pl->nodes != l->nodes)
			BUG("docker: trial %u was not placed", l->trial_seq);
		unsigned base = p->cfg_master_port ? p->cfg_master_port : 29500;
		m->addrs = xcalloc(l->nodes, sizeof(*m->addrs));
		for (unsigned i = 0; i < l->nodes && r == 0; i++) {
			const struct docker_host *h = &p->hosts.h[pl->host[i]];
			m->addrs[i] = xstrdup(h->ip[0] ? h->ip : h->name);
			m->ports[i] = base + p->hosts.slots + pl->device[i];
			if (i && !h->ip[0])
				r = error("docker host %s: no IPv4 address for the sshd of node %u "
					  "(trial.launcher: mpi)", h->name, i);
		}
	}
	for (unsigned i = 1; i < l->nodes && r == 0 && !p->hosts.n; i++)
		if (!(m->ports[i] = backend_free_port()))
			r = error("no free TCP port for the sshd of node %u", i);
	if (r == 0 && (fileio_remove_tree(m->ssh_dir) < 0 || fileio_mkdir_p(m->ssh_dir, 0700) < 0))
		r = -1;
	const char *user = p->dc.user;
	if (r == 0)
		r = ssh_keypair_new(&id, &id_pub) < 0 || ssh_keypair_new(&hk, &hk_pub) < 0 ? -1 : 0;
	if (r == 0)
		r = ssh_file(m, MPI_SSH_ID, &id, 0600, user);
	if (r == 0) {
		strbuf_addf(&id_pub, " aah-%s-launcher\n", l->job_name);
		r = ssh_file(m, MPI_SSH_AUTHORIZED, &id_pub, 0644, user);
	}
	if (r == 0)
		r = ssh_file(m, MPI_SSH_HOST_KEY, &hk, 0600, user);
	if (r == 0) {
		docker_mpi_known_hosts(l, m, hk_pub.buf, &text);
		r = ssh_file(m, MPI_SSH_KNOWN_HOSTS, &text, 0644, user);
	}
	if (r == 0) {
		strbuf_reset(&text);
		docker_mpi_ssh_config(l, m, &text);
		r = ssh_file(m, MPI_SSH_CONFIG, &text, 0644, user);
	}
	if (r == 0) {
		strbuf_reset(&text);
		docker_mpi_sshd_config(m, &text);
		r = ssh_file(m, MPI_SSH_SSHD_CONFIG, &text, 0644, user);
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

/* Where rank i of the launch runs: its host's index (-1: this machine)
 * and, on docker.hosts, its name and the GPU of its slot. */
static int rank_host(const struct docker_priv *p, const struct aah_launch *l, unsigned i,
		     struct docker_rank_host *on)
{
	const struct docker_fleet_placed *pl = &p->placed;
	unsigned node = l->ranks[i].node, slot;
	if (!p->hosts.n)
		return -1;
	if (pl->seq != l->trial_seq || node >= pl->nodes)
		BUG("docker: trial %u was not placed", l->trial_seq);
	const struct docker_host *h = &p->hosts.h[pl->host[node]];
	docker_hosts_device(&p->hosts, pl->device[node], &slot);
	on->name = h->name;
	on->gpu = h->gpus ? h->gpus[slot] : NULL;
	return pl->host[node];
}

static int docker_submit(struct aah_backend_ctx *ctx, const struct aah_launch *l, char **job)
{
	struct docker_priv *p = ctx->priv;
	struct strvec ids = STRVEC_INIT, names = STRVEC_INIT;
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT, jid = STRBUF_INIT;
	struct docker_mpi mpi = { NULL, NULL, NULL };
	int *host = xcalloc(l->nranks, sizeof(*host));
	struct docker_rank_host *on = xcalloc(l->nranks, sizeof(*on));
	int r = l->mpi ? mpi_prepare(p, l, &mpi) : 0;

	/* Containers of this trial left by a runner that died before journaling. */
	for (unsigned i = 0; i < l->nranks; i++) {
		char *name = docker_container_name(l, i);
		strvec_push(&names, name);
		free(name);
		host[i] = rank_host(p, l, i, &on[i]);
	}
	if (r == 0)
		remove_all(p, &names, host);
	for (unsigned i = 0; i < l->nranks && r == 0; i++) {
		struct strvec argv = STRVEC_INIT;
		struct docker_host *h = host_of(p, host[i]);
		struct strvec spec = STRVEC_INIT;
		r = docker_create_host_argv(&p->dc, l, l->mpi ? &mpi : NULL, i, l->cwd,
					    h ? &on[i] : NULL, &spec);
		/* <binary> [-H <url>], then the spec's argv after its binary */
		docker_fleet_argv(p, h, &argv);
		for (size_t k = 1; r == 0 && k < spec.n; k++)
			strvec_push(&argv, spec.v[k]);
		strvec_clear(&spec);
		int code = r == 0 ? docker_fleet_run(p, &argv, &out, &err) : -1;
		if (r == 0 && code != 0 && h && docker_fleet_unreachable(err.buf, code))
			docker_fleet_failed(p, h, err.buf);
		if (r == 0 && code != 0)
			r = code < 0 ? -1
				     : error("docker create for rank %u%s%s failed: %s", i,
					     h ? " on " : "", h ? h->name : "", err.buf);
		if (r == 0 && !out.len)
			r = error("docker create printed no container id");
		if (r == 0) {
			const char *nl = strrchr(out.buf, '\n');
			strvec_push(&ids, nl ? nl + 1 : out.buf);
			strbuf_addf(&jid, "%s%s%s%s", i ? "," : "", h ? h->name : "", h ? "/" : "",
				    ids.v[ids.n - 1]);
		}
		strvec_clear(&argv);
	}
	if (r == 0)
		r = backend_notify_submitted(ctx, jid.buf);
	if (r == 0) {
		int code = docker_all(p, "start", NULL, &ids, host, &err);
		if (code != 0)
			r = code < 0 ? -1 : error("docker start failed: %s", err.buf);
	}
	if (r < 0)
		remove_all(p, &ids, host);
	else
		*job = strbuf_detach(&jid, NULL);
	strvec_clear(&ids);
	strvec_clear(&names);
	strbuf_release(&out);
	strbuf_release(&err);
	strbuf_release(&jid);
	for (unsigned i = 0; mpi.addrs && i < l->nodes; i++)
		free(mpi.addrs[i]);
	free(mpi.addrs);
	free(mpi.ssh_dir);
	free(mpi.ports);
	free(host);
	free(on);
	return r;
}

/* docker inspect of the job's containers, host by host. 0: j->st read;
 * 1: a host did not answer (not down yet: the job is what it was); -1. */
static int inspect(struct docker_priv *p, struct djob *j)
{
	size_t nh;
	int *hs = hosts_of(j->host, j->ctrs.n, &nh), r = 0;
	j->nst = 0;
	for (size_t k = 0; k < nh && r == 0; k++) {
		struct docker_host *h = host_of(p, hs[k]);
		if (h && h->down) {
			j->down = hs[k];
			continue;
		}
		struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
		struct strvec argv = STRVEC_INIT;
		docker_fleet_argv(p, h, &argv);
		strvec_push(&argv, "inspect");
		for (size_t i = 0; i < j->ctrs.n; i++)
			if (j->host[i] == hs[k])
				strvec_push(&argv, j->ctrs.v[i]);
		int code = docker_fleet_run(p, &argv, &out, &err);
		/* Missing containers: exit 1, "No such object", the others still printed. */
		if (code == 0 || (code == 1 && strstr(err.buf, "No such object"))) {
			int n = out.len ? docker_parse_inspect(out.buf, j->st + j->nst,
							       (int)j->ctrs.n - j->nst) : 0;
			if (n < 0)
				r = -1;
			else
				j->nst += n;
			if (h)
				docker_fleet_answered(p, h);
		} else if (h && docker_fleet_unreachable(err.buf, code)) {
			if (docker_fleet_failed(p, h, err.buf))
				j->down = hs[k];
			else
				r = 1;
		} else {
			r = code < 0 ? -1 : error("docker inspect failed: %s", err.buf);
		}
		strvec_clear(&argv);
		strbuf_release(&out);
		strbuf_release(&err);
	}
	j->queried = util_monotonic();
	free(hs);
	return r;
}

/* A host of the job is down: the job failed there; what it left there is
 * the host's to clear when it answers again; its other ranks are killed. */
static void host_lost(struct docker_priv *p, struct djob *j, struct aah_job_status *st)
{
	struct docker_host *h = &p->hosts.h[j->down];
	struct strbuf err = STRBUF_INIT;
	for (size_t i = 0; i < j->ctrs.n; i++)
		if (j->host[i] >= 0 && p->hosts.h[j->host[i]].down)
			docker_fleet_abandon(p, &p->hosts.h[j->host[i]], j->ctrs.v[i]);
	docker_all(p, "kill", NULL, &j->ctrs, j->host, &err);
	st->state = AAH_JOB_FAILED;
	st->exit_code = -1;
	snprintf(st->reason, sizeof(st->reason), "docker host %.60s is down: %.160s", h->name,
		 h->reason);
	strbuf_release(&err);
}

static int docker_poll(struct aah_backend_ctx *ctx, struct aah_job_status *st)
{
	struct docker_priv *p = ctx->priv;
	docker_fleet_probe(p);
	struct djob *j = backend_jobs_get(&p->jobs, st->job);
	if (!j->ctrs.n || j->ctrs.n > MAX_RANKS || j->bad_host) {
		st->state = AAH_JOB_LOST;
		snprintf(st->reason, sizeof(st->reason), "'%s' is not a docker job id%s", st->job,
			 j->bad_host ? " of docker.hosts (a host it names is not listed)" : "");
		return 0;
	}
	if (j->collected) {
		st->state = AAH_JOB_CANCELED;
		snprintf(st->reason, sizeof(st->reason), "canceled");
		return 0;
	}
	st->state = AAH_JOB_RUNNING;
	if (j->queried && util_monotonic() - j->queried < p->dc.poll_interval)
		return 0;
	int r = inspect(p, j);
	if (r < 0)
		return -1;
	if (j->down >= 0) {
		host_lost(p, j, st);
		return 0;
	}
	if (r > 0)
		return 0;   /* a host that does not answer, not down yet */
	st->state = docker_job_state(j->st, j->nst, (int)j->ctrs.n, j->canceled, &st->exit_code,
				     st->reason, sizeof(st->reason));
	if (st->state == AAH_JOB_FAILED) {
		/* One rank failed: the others cannot finish without it. */
		struct strvec live = STRVEC_INIT;
		struct strbuf err = STRBUF_INIT;
		int *lh = xcalloc(j->ctrs.n, sizeof(*lh));
		for (int i = 0; i < j->nst; i++) {
			if (strcmp(j->st[i].status, "running") && strcmp(j->st[i].status, "paused"))
				continue;
			for (size_t c = 0; c < j->ctrs.n; c++)
				if (!strncmp(j->st[i].id, j->ctrs.v[c], strlen(j->ctrs.v[c]))) {
					lh[live.n] = j->host[c];
					strvec_push(&live, j->st[i].id);
					break;
				}
		}
		docker_all(p, "kill", NULL, &live, lh, &err);
		free(lh);
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
		struct docker_host *h = host_of(p, j->host[i]);
		struct strvec argv = STRVEC_INIT;
		if (h)
			strbuf_addf(&text, "== rank %zu (container %.12s on %s) ==\n", i,
				    j->ctrs.v[i], h->name);
		else
			strbuf_addf(&text, "== rank %zu (container %.12s) ==\n", i, j->ctrs.v[i]);
		if (h && h->down) {
			docker_fleet_abandon(p, h, j->ctrs.v[i]);
			strbuf_addf(&text, "(host %s is down: its logs follow when it answers again)\n",
				    h->name);
			continue;
		}
		docker_fleet_argv(p, h, &argv);
		strvec_push(&argv, "logs");
		strvec_push(&argv, j->ctrs.v[i]);
		int code = docker_fleet_run(p, &argv, &out, &err);
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
	remove_all(p, &j->ctrs, j->host);
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
	struct djob *j = backend_jobs_get(&p->jobs, id);
	struct strbuf err = STRBUF_INIT;
	j->canceled = 1;
	if (j->collected)
		return 0;
	int code = docker_all(p, "kill", NULL, &j->ctrs, j->host, &err);
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
	struct djob *j = backend_jobs_get(&p->jobs, job);
	int r = j->collected ? 0 : collect(p, j, trial_dir);
	backend_jobs_drop(&p->jobs, job);
	return r;
}

static int docker_place(struct aah_backend_ctx *ctx, unsigned trial_seq, unsigned attempt,
			char **hosts, unsigned nodes, unsigned *port)
{
	struct docker_priv *p = ctx->priv;
	const struct aah_config *cfg = ctx->cfg;
	(void)attempt;
	if (p->hosts.n)
		return docker_fleet_place(p, cfg, trial_seq, hosts, nodes, port);
	/* This machine's engine: every rank on its host network. */
	for (unsigned i = 0; i < nodes; i++)
		hosts[i] = xstrdup("127.0.0.1");
	*port = cfg->trial.master_port ? (unsigned)cfg->trial.master_port : backend_free_port();
	return *port ? 0 : error("no free TCP port on 127.0.0.1 for the trial's rendezvous");
}

static void docker_fini(struct aah_backend_ctx *ctx)
{
	struct docker_priv *p = ctx->priv;
	if (!p)
		return;
	backend_jobs_clear(&p->jobs);
	config_release_section(docker_config_keys, &p->dc);
	docker_fleet_release(p);
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
	.place = docker_place,
	.submit = docker_submit,
	.poll = docker_poll,
	.cancel = docker_cancel,
	.reap = docker_reap,
	.fini = docker_fini,
	.check_config = docker_check_config,
	.status = docker_hosts_status,
};
