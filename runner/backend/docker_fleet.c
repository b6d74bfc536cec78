/* docker_fleet.c: docker.hosts at run time. Each command reaches a host
 * through Docker's own ssh transport (docker -H ssh://user@address:port
 * runs `docker system dial-stdio` there): no agent of aah on the hosts. */
#include "runner/backend/docker_fleet.h"
#include "fileio.h"
#include "jsonfile.h"
#include "runner/store/expdir.h" /* expdir_trial_seq, expdir_trial_file */
#include "runner/backend/proc.h" /* PROC_TIMEOUT_STATUS */
#include "runner/pool/pooltrial.h" /* pooltrial_place */
#include "util.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void docker_fleet_argv(const struct docker_priv *p, const struct docker_host *h,
		       struct strvec *argv)
{
	strvec_push(argv, p->dc.binary);
	if (h) {
		strvec_push(argv, "-H");
		strvec_push(argv, h->url);
	}
}

int docker_fleet_run(const struct docker_priv *p, struct strvec *argv, struct strbuf *out,
	      struct strbuf *err)
{
	int code = backend_run_tool(&p->tool, strvec_view(argv), NULL, out, err);
	if (out)
		strbuf_trim_trailing(out);
	return code;
}

int docker_fleet_unreachable(const char *err, int code)
{
	if (code == 0)
		return 0;
	if (code < 0 || code == PROC_TIMEOUT_STATUS)
		return 1;
	/* The CLI's words when the ssh connection or the engine behind it fails. */
	return strstr(err, "error during connect") || strstr(err, "Cannot connect to the Docker") ||
	       strstr(err, "dial-stdio") || strstr(err, "ssh: ") ||
	       strstr(err, "connection refused") || strstr(err, "Connection refused");
}

/* The reason in words: ssh's own line when the CLI quotes it (returns 1),
 * else the CLI's first line. */
static int reason_of(const char *err, char *buf, size_t n)
{
	const char *s = strstr(err, "stderr=");
	int quoted = s != NULL;
	s = s ? s + 7 : err;
	while (*s == ' ' || *s == '\n')
		s++;
	int len = (int)strcspn(s, "\n");
	snprintf(buf, n, "%.*s", len, len ? s : "no answer");
	return quoted && len;
}

static void save(struct docker_priv *p)
{
	if (docker_hosts_save(&p->hosts, p->expdir) < 0)
		warning("docker hosts: cannot record their state: %s", util_last_error());
}

void docker_fleet_answered(struct docker_priv *p, struct docker_host *h)
{
	if (!h->failing_since)
		return;
	h->failing_since = 0;
	h->reason[0] = '\0';
	save(p);
}

static void mark_down(struct docker_priv *p, struct docker_host *h)
{
	h->down = 1;
	h->since = util_now();
	h->probed = util_monotonic();
	warning("docker host %s is down: %s; its trials go on elsewhere", h->name, h->reason);
	save(p);
}

int docker_fleet_failed(struct docker_priv *p, struct docker_host *h, const char *err)
{
	char why[256];
	double now = util_monotonic();
	int quoted = reason_of(err, why, sizeof(why));
	if (h->down)
		return 1;
	if (!h->failing_since) {
		h->failing_since = now;
		h->probed = now;
		xstrlcpy(h->reason, why, sizeof(h->reason));
		warning("docker host %s does not answer (%s); down if it still does not after %gs",
			h->name, why, p->dc.host_timeout);
		save(p);
	} else if (quoted) {
		/* Only ssh's words replace the reason: the CLI loses them when
		 * its write to an ssh that already exited fails first ("write |1:
		 * broken pipe"), which says nothing about the host. */
		xstrlcpy(h->reason, why, sizeof(h->reason));
	}
	if (now - h->failing_since >= p->dc.host_timeout)
		mark_down(p, h);
	return h->down;
}

/* docker version on h: 0 answered, else err says why. */
static int ask(struct docker_priv *p, struct docker_host *h, struct strbuf *err)
{
	struct strvec argv = STRVEC_INIT;
	struct strbuf out = STRBUF_INIT;
	docker_fleet_argv(p, h, &argv);
	strvec_push(&argv, "version");
	strvec_push(&argv, "--format");
	strvec_push(&argv, "{{.Server.Version}}");
	util_set_quiet(1);
	int code = docker_fleet_run(p, &argv, &out, err);
	util_set_quiet(0);
	if (code < 0)
		strbuf_addstr(err, util_last_error());
	strvec_clear(&argv);
	strbuf_release(&out);
	return code;
}

/* Kill what host h kept of trials that went on elsewhere: logs into their
 * trial.log (labelled with their attempt), then docker rm -f. */
static void sweep(struct docker_priv *p, struct docker_host *h, struct strvec *ids)
{
	for (size_t i = 0; i < ids->n; i++) {
		struct strvec argv = STRVEC_INIT;
		struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
		docker_fleet_argv(p, h, &argv);
		strvec_push(&argv, "inspect");
		strvec_push(&argv, "--format");
		strvec_push(&argv, "{{index .Config.Labels \"aah.io/trial\"}} "
				   "{{index .Config.Labels \"aah.io/attempt\"}} "
				   "{{index .Config.Labels \"aah.io/rank\"}} {{.State.Status}}");
		strvec_push(&argv, ids->v[i]);
		int code = docker_fleet_run(p, &argv, &out, &err);
		char trial[16] = "", state[16] = "";
		unsigned attempt = 0, rank = 0, seq = 0;
		if (code != 0 || sscanf(out.buf, "%15s %u %u %15s", trial, &attempt, &rank, state) != 4 ||
		    expdir_trial_seq(trial, &seq) < 0) {
			strvec_clear(&argv);
			strbuf_release(&out);
			strbuf_release(&err);
			continue;   /* gone with the host's engine, or not one of ours */
		}
		strvec_clear(&argv);
		docker_fleet_argv(p, h, &argv);
		strvec_push(&argv, "logs");
		strvec_push(&argv, ids->v[i]);
		code = docker_fleet_run(p, &argv, &out, &err);
		struct strbuf text = STRBUF_INIT;
		strbuf_addf(&text, "== rank %u of attempt %u (container %.12s on %s, %s when its host "
				   "answered again; removed) ==\n", rank, attempt, ids->v[i], h->name, state);
		if (code == 0 && out.len)
			strbuf_addf(&text, "%s\n", out.buf);
		if (code == 0 && err.len)
			strbuf_addf(&text, "%s\n", err.buf);
		strbuf_trim_trailing(&text);
		char *log = expdir_trial_file(p->expdir, seq, EXPDIR_TRIAL_LOG);
		if (fileio_append_line(log, text.buf) < 0)
			warning("docker host %s: %s", h->name, util_last_error());
		free(log);
		strvec_clear(&argv);
		docker_fleet_argv(p, h, &argv);
		strvec_push(&argv, "rm");
		strvec_push(&argv, "-f");
		strvec_push(&argv, ids->v[i]);
		if (docker_fleet_run(p, &argv, &out, &err) != 0)
			warning("docker host %s: cannot remove container %.12s: %s", h->name, ids->v[i],
				err.buf);
		strvec_clear(&argv);
		strbuf_release(&out);
		strbuf_release(&err);
		strbuf_release(&text);
	}
	strvec_clear(ids);
	strvec_init(ids);
}

int docker_fleet_start(struct docker_priv *p)
{
	if (!p->hosts.n)
		return 0;
	docker_hosts_load_kept(&p->hosts, p->expdir);
	unsigned up = 0;
	for (unsigned i = 0; i < p->hosts.n; i++) {
		struct docker_host *h = &p->hosts.h[i];
		struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
		if (getaddrinfo(h->name, NULL, &hints, &ai) == 0) {
			inet_ntop(AF_INET, &((struct sockaddr_in *)ai->ai_addr)->sin_addr, h->ip,
				  sizeof(h->ip));
			freeaddrinfo(ai);
		}
	}
	for (unsigned i = 0; i < p->hosts.n; i++) {
		struct docker_host *h = &p->hosts.h[i];
		struct strbuf err = STRBUF_INIT;
		h->since = util_now();
		/* One that does not answer gets no trial; it is asked again and is
		 * down once it has not answered for docker.hostTimeout. */
		if (ask(p, h, &err) == 0) {
			up++;
			sweep(p, h, &h->kept);   /* kept while down, under a runner before */
		} else {
			docker_fleet_failed(p, h, err.buf);
		}
		h->probed = util_monotonic();
		strbuf_release(&err);
	}
	save(p);
	if (!up)
		warning("docker hosts: none of the %u answers; trials wait until one does",
			p->hosts.n);
	return 0;
}

void docker_fleet_probe(struct docker_priv *p)
{
	double every = p->dc.poll_interval * 5;
	every = every < 1 ? 1 : every > 60 ? 60 : every;
	for (unsigned i = 0; i < p->hosts.n; i++) {
		struct docker_host *h = &p->hosts.h[i];
		if ((!h->down && !h->failing_since) || util_monotonic() - h->probed < every)
			continue;
		struct strbuf err = STRBUF_INIT;
		int code = ask(p, h, &err);
		h->probed = util_monotonic();
		if (code == 0 && h->down) {
			h->down = 0;
			h->failing_since = 0;
			h->reason[0] = '\0';
			h->since = util_now();
			warning("docker host %s answers again; it takes trials", h->name);
			sweep(p, h, &h->kept);
			save(p);
		} else if (code == 0) {
			docker_fleet_answered(p, h);
		} else {
			docker_fleet_failed(p, h, err.buf);
		}
		strbuf_release(&err);
	}
}

void docker_fleet_abandon(struct docker_priv *p, struct docker_host *h, const char *id)
{
	struct strvec *a = &h->kept;
	for (size_t i = 0; i < a->n; i++)
		if (!strcmp(a->v[i], id))
			return;
	strvec_push(a, id);
	save(p);
}

/* ledger_place's pick: the trial's own devices first, then the lowest
 * free; in a first pass one per host (a multi-node trial spans hosts),
 * then any (not for the MPI form: its nodes are on distinct hosts); never
 * a device of a host that is down or not answering. */
static int pick(const struct ledger *l, const struct ledger_training *t, const char *taken,
		unsigned *ids, void *arg)
{
	const struct docker_priv *p = arg;
	unsigned n = t->applied, k = 0, slot;
	char *used = xcalloc(p->hosts.n, 1), *chosen = xcalloc(l->devices ? l->devices : 1, 1);
	for (int pass = 0; pass < (p->one_per_host ? 1 : 2) && k < n; pass++) {
		for (unsigned c = 0; c < t->applied + l->devices && k < n; c++) {
			unsigned d = c < t->applied ? t->ids[c] : c - t->applied;
			if (d >= l->devices || taken[d] || chosen[d])
				continue;
			int hi = docker_hosts_device(&p->hosts, d, &slot);
			const struct docker_host *h = hi < 0 ? NULL : &p->hosts.h[hi];
			if (!h || h->down || h->failing_since || (pass == 0 && used[hi]))
				continue;
			chosen[d] = used[hi] = 1;
			ids[k++] = d;
		}
	}
	free(used);
	free(chosen);
	return k < n ? 1 : 0;
}

int docker_fleet_place(struct docker_priv *p, const struct aah_config *cfg, unsigned seq,
		char **hosts, unsigned nodes, unsigned *port)
{
	unsigned *ids = NULL, n = 0, slot;
	int r = pooltrial_place(cfg, p->workdir, p->experiment_id, seq, pick, p, &ids, &n);
	if (r == 0 && n != nodes)
		r = error("trial %u holds %u devices of the pool for %u nodes", seq, n, nodes);
	if (r != 0) {
		free(ids);
		return r;
	}
	struct docker_fleet_placed *pl = &p->placed;
	free(pl->host);
	free(pl->device);
	pl->seq = seq;
	pl->nodes = nodes;
	pl->host = xcalloc(nodes, sizeof(*pl->host));
	pl->device = xcalloc(nodes, sizeof(*pl->device));
	for (unsigned i = 0; i < nodes; i++) {
		pl->host[i] = docker_hosts_device(&p->hosts, ids[i], &slot);
		pl->device[i] = ids[i];
		if (pl->host[i] < 0)
			BUG("docker: device %u of the pool is on no host", ids[i]);
		hosts[i] = xstrdup(p->hosts.h[pl->host[i]].name);
	}
	/* A port per device of rank 0: two trials never share one on a host. */
	unsigned base = cfg->trial.master_port ? (unsigned)cfg->trial.master_port : 29500;
	*port = base + ids[0];
	free(ids);
	return 0;
}

void docker_fleet_release(struct docker_priv *p)
{
	free(p->placed.host);
	free(p->placed.device);
	free(p->workdir);
	docker_hosts_release(&p->hosts);
}
