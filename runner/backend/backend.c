/* backend.c: the generic wrappers (policy) every backend shares, including
 * the one way a backend runs an external tool. The table of backends is
 * registry.c's. */
#include "runner/backend/backend.h"
#include "runner/backend/proc.h" /* proc_run_capture, PROC_TIMEOUT_STATUS */
#include "strbuf.h"
#include "util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char *const job_state_names[] = {
	[AAH_JOB_PENDING] = "pending",   [AAH_JOB_RUNNING] = "running",
	[AAH_JOB_SUCCEEDED] = "succeeded", [AAH_JOB_FAILED] = "failed",
	[AAH_JOB_TIMEOUT] = "timeout",   [AAH_JOB_CANCELED] = "canceled",
	[AAH_JOB_LOST] = "lost",
};

const char *aah_job_state_name(enum aah_job_state s)
{
	return (unsigned)s < ARRAY_SIZE(job_state_names) ? job_state_names[s] : "unknown";
}

int backend_init(struct aah_backend_ctx *ctx, const struct aah_backend *b,
		 const struct aah_config *cfg, const char *expdir, const char *exp_id)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->backend = b;
	ctx->cfg = cfg;
	ctx->expdir = expdir;
	ctx->experiment_id = exp_id;
	if (b->init && b->init(ctx) < 0)
		return error("cannot start the %s backend", b->name);
	return 0;
}

int backend_place(struct aah_backend_ctx *ctx, unsigned trial_seq, unsigned attempt,
		  char **hosts, unsigned nodes, unsigned *port)
{
	if (ctx->backend->place)
		return ctx->backend->place(ctx, trial_seq, attempt, hosts, nodes, port);
	for (unsigned i = 0; i < nodes; i++)
		hosts[i] = xstrdup("127.0.0.1");
	*port = ctx->cfg->trial.master_port ? (unsigned)ctx->cfg->trial.master_port
					    : backend_free_port();
	return *port ? 0 : error("no free TCP port on 127.0.0.1 for the trial's rendezvous");
}

int backend_notify_submitted(struct aah_backend_ctx *ctx, const char *job)
{
	if (ctx->submitted_called)
		BUG("backend %s reported one submission twice", ctx->backend->name);
	ctx->submitted_called = 1;
	return ctx->on_submitted ? ctx->on_submitted(ctx, job, ctx->on_submitted_arg) : 0;
}

int backend_can_defer_release(const struct aah_backend_ctx *ctx)
{
	return ctx->backend->release_held != NULL;
}

void backend_release_held(struct aah_backend_ctx *ctx, int go)
{
	if (ctx->backend->release_held)
		ctx->backend->release_held(ctx, go);
}

int backend_submit(struct aah_backend_ctx *ctx, const struct aah_launch *l, char **job)
{
	ctx->submitted_called = 0;
	*job = NULL;
	if (ctx->backend->submit(ctx, l, job) < 0) {
		free(*job);
		*job = NULL;
		/* Keep the backend's own words: they end up in the journal. */
		char *why = xstrdup(util_last_error());
		int r = error("%s backend: cannot submit trial %s: %s", ctx->backend->name,
			      l->trial_id, why);
		free(why);
		return r;
	}
	if (!*job)
		BUG("backend %s returned no job id", ctx->backend->name);
	if (!ctx->submitted_called && backend_notify_submitted(ctx, *job) < 0)
		return -1;
	return 0;
}

int backend_poll(struct aah_backend_ctx *ctx, struct aah_job_status *st)
{
	st->exit_code = -1;
	st->reason[0] = '\0';
	if (ctx->backend->poll(ctx, st) < 0) {
		/* A failed status query is transient: the job is what it was. */
		warning("%s backend: cannot query job '%s'; will try again", ctx->backend->name,
			st->job);
		st->state = AAH_JOB_RUNNING;
		return -1;
	}
	return 0;
}

int backend_cancel(struct aah_backend_ctx *ctx, const char *job)
{
	for (int attempt = 0; attempt < 3; attempt++) {
		if (ctx->backend->cancel(ctx, job) == 0)
			return 0;
		struct timespec ts = { 0, 200 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	return error("%s backend: cannot cancel job '%s'", ctx->backend->name, job);
}

int backend_reap(struct aah_backend_ctx *ctx, const char *job, const char *trial_dir)
{
	return ctx->backend->reap ? ctx->backend->reap(ctx, job, trial_dir) : 0;
}

void backend_fini(struct aah_backend_ctx *ctx)
{
	if (ctx->backend && ctx->backend->fini)
		ctx->backend->fini(ctx);
}

static void pause_for(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
	nanosleep(&ts, NULL);
}

/* Why a run failed, in a few words: the first line of its stderr. */
static void run_failure(char *buf, size_t n, const struct backend_tool *tool, int code,
			const char *err)
{
	if (code == PROC_TIMEOUT_STATUS) {
		snprintf(buf, n, "no answer within %gs", tool->timeout);
		return;
	}
	while (*err == ' ' || *err == '\n')
		err++;
	int len = (int)strcspn(err, "\n");
	if (len)
		snprintf(buf, n, "%.*s", len, err);
	else
		snprintf(buf, n, "exit %d, no message", code);
}

int backend_run_tool(const struct backend_tool *tool, const char *const *argv,
		     const char *input, struct strbuf *out, struct strbuf *err)
{
	struct strbuf own_err = STRBUF_INIT;
	struct strbuf *e = err ? err : &own_err;
	const char *prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	int code = -1;
	for (long attempt = 0;; attempt++) {
		if (out)
			strbuf_reset(out);
		strbuf_reset(e);
		if (proc_run_capture(argv, NULL, input, tool->timeout, out, e, &code) < 0) {
			code = error("%s: cannot run %s (%s)", tool->name, argv[0], tool->missing);
			break;
		}
		strbuf_trim_trailing(e);
		int transient = code == PROC_TIMEOUT_STATUS ||
				(code != 0 && tool->transient && tool->transient(e->buf, code));
		if (!transient || attempt >= tool->retries)
			break;
		char why[200];
		run_failure(why, sizeof(why), tool, code, e->buf);
		warning("%s: %s failed (%s); trying again", tool->name, prog, why);
		pause_for(tool->pause * (double)(1L << (attempt < 4 ? attempt : 4)));
		if (tool->before_retry)
			tool->before_retry(tool->arg);
	}
	strbuf_release(&own_err);
	return code;
}

/* The jobs' index: a runner follows thousands of jobs (docs/scale.md), and
 * every poll finds one by its id. Open addressing, linear probing; a
 * dropped job leaves a tombstone until the next rebuild. */
static struct backend_job tombstone;

static size_t id_hash(const char *id)
{
	uint64_t h = 1469598103934665603ull;
	for (const unsigned char *p = (const unsigned char *)id; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return (size_t)h;
}

static void index_put(struct backend_jobs *l, struct backend_job *j)
{
	size_t i = id_hash(j->id) & (l->icap - 1);
	while (l->index[i] && l->index[i] != &tombstone)
		i = (i + 1) & (l->icap - 1);
	if (!l->index[i])
		l->iused++;
	l->index[i] = j;
}

/* Room for one more job: at most half the slots ever used. */
static void index_reserve(struct backend_jobs *l)
{
	if (l->index && 2 * (l->iused + 1) <= l->icap)
		return;
	size_t live = 0;
	for (struct backend_job *j = l->head; j; j = j->next)
		live++;
	size_t cap = 64;
	while (cap < 4 * (live + 1))
		cap *= 2;
	free(l->index);
	l->index = xcalloc(cap, sizeof(*l->index));
	l->icap = cap;
	l->iused = 0;
	for (struct backend_job *j = l->head; j; j = j->next)
		index_put(l, j);
}

static struct backend_job **index_slot(const struct backend_jobs *l, const char *id)
{
	if (!l->index)
		return NULL;
	for (size_t i = id_hash(id) & (l->icap - 1); l->index[i]; i = (i + 1) & (l->icap - 1))
		if (l->index[i] != &tombstone && !strcmp(l->index[i]->id, id))
			return &l->index[i];
	return NULL;
}

void *backend_jobs_find(const struct backend_jobs *l, const char *id)
{
	struct backend_job **slot = index_slot(l, id);
	return slot ? *slot : NULL;
}

static void link_job(struct backend_jobs *l, struct backend_job *j)
{
	index_reserve(l);
	j->prev = NULL;
	j->next = l->head;
	if (l->head)
		l->head->prev = j;
	l->head = j;
	index_put(l, j);
}

void backend_jobs_add(struct backend_jobs *l, struct backend_job *j, const char *id)
{
	j->id = xstrdup(id);
	link_job(l, j);
}

void backend_jobs_free(struct backend_jobs *l, struct backend_job *j)
{
	if (!j)
		return;
	if (l->release)
		l->release(j);
	free(j->id);
	free(j);
}

void *backend_jobs_get(struct backend_jobs *l, const char *id)
{
	struct backend_job *j = backend_jobs_find(l, id);
	if (j)
		return j;
	if (l->size < sizeof(*j))
		BUG("backend_jobs of %zu-byte jobs", l->size);
	j = xcalloc(1, l->size);
	j->id = xstrdup(id);
	if (l->init && l->init(l->owner, j) < 0) {
		backend_jobs_free(l, j);
		return NULL;
	}
	link_job(l, j);
	return j;
}

void backend_jobs_drop(struct backend_jobs *l, const char *id)
{
	struct backend_job **slot = index_slot(l, id);
	if (!slot)
		return;
	struct backend_job *j = *slot;
	*slot = &tombstone;
	if (j->prev)
		j->prev->next = j->next;
	else
		l->head = j->next;
	if (j->next)
		j->next->prev = j->prev;
	backend_jobs_free(l, j);
}

void backend_jobs_clear(struct backend_jobs *l)
{
	while (l->head) {
		struct backend_job *j = l->head;
		l->head = j->next;
		backend_jobs_free(l, j);
	}
	free(l->index);
	l->index = NULL;
	l->icap = l->iused = 0;
}

unsigned backend_free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = 0 };
	socklen_t len = sizeof(a);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	unsigned port = 0;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	close(fd);
	return port;
}
