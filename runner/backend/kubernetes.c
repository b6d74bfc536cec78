/* kubernetes.c: trials as Indexed Jobs through kubectl (argv
 * vectors, never a shell). A job id is the Job's name; the Job's status
 * comes from one `kubectl get jobs -l aah.io/experiment=<id> -o json` per
 * poll interval for all trials (doubling while kubectl fails). Pod logs are
 * copied into trial.log when a job settles, before the Job's TTL removes it.
 * A resumed runner re-attaches to Jobs by name. */
#include "runner/backend/backend.h"
#include "fileio.h"
#include "jsonfile.h"
#include "runner/backend/kubernetes.h" /* kubernetes_*: config, names, documents, Job state */
#include "runner/store/expdir.h" /* expdir_trial_seq, expdir_result_visible, places */
#include "strbuf.h"
#include "util.h"

#include <openssl/crypto.h> /* OPENSSL_cleanse */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BACKOFF 60.0

struct kjob {
	struct backend_job job; /* job.id: the Job's name */
	double first_seen;      /* monotonic: submitted, or first polled after a resume */
	int all_ready_seen;     /* every pod was running (or done) at some poll */
	int canceled;
	double complete_at;     /* monotonic: first seen Complete without result.json; 0 = not */
	unsigned missing;       /* refreshes since first_seen that did not list it */
	double partial_since;   /* monotonic: first poll with its pods partly ready; 0 = not */
	int waiting_said;       /* "waiting for admission" told */
	struct strvec disrupted;/* pods whose preemption or eviction was told */
};

struct kubernetes_priv {
	struct kubernetes_config kc;
	char *selector;         /* aah.io/experiment=<id> */
	struct backend_jobs jobs; /* struct kjob */
	cJSON *list;            /* the last `get jobs` answer */
	double list_at;         /* monotonic time of that answer; 0 = none */
	double interval;        /* poll interval now (grows while kubectl fails) */
	int mpi;                /* trial.launcher: mpi: each Job has a Secret "<job>-ssh" */
};

/* One kubectl call (kubernetes_kubectl.c) with this backend's config. */
static int kubectl(struct kubernetes_priv *p, const char *const *args, const char *input,
		   struct strbuf *out, long retries)
{
	return kubernetes_kubectl(&p->kc, args, input, out, retries);
}

static int kjob_init(void *owner, struct backend_job *job)
{
	(void)owner;
	((struct kjob *)job)->first_seen = util_monotonic();
	return 0;
}

static void kjob_release(struct backend_job *job)
{
	strvec_clear(&((struct kjob *)job)->disrupted);
}

static int kubernetes_init(struct aah_backend_ctx *ctx)
{
	struct kubernetes_priv *p = xcalloc(1, sizeof(*p));
	p->jobs = (struct backend_jobs)BACKEND_JOBS_INIT(struct kjob, kjob_init, kjob_release, NULL);
	if (kubernetes_config_load(ctx->cfg, &p->kc) < 0) {
		free(p);
		return -1;
	}
	size_t n = strlen(p->kc.mount_path);
	while (n > 1 && p->kc.mount_path[n - 1] == '/')
		n--;
	if (strncmp(ctx->expdir, p->kc.mount_path, n) || (ctx->expdir[n] && ctx->expdir[n] != '/')) {
		error("the experiment directory '%s' is not under kubernetes.mountPath '%s', so the "
		      "trial pods could not see it; set workdir under %s (the master image uses "
		      "/userhome/aah-work)",
		      ctx->expdir, p->kc.mount_path, p->kc.mount_path);
		kubernetes_config_release(&p->kc);
		free(p);
		return -1;
	}
	char *label = kubernetes_label_value(ctx->experiment_id);
	p->selector = xstrfmt("aah.io/experiment=%s", label);
	free(label);
	p->interval = p->kc.poll_interval;
	p->mpi = !strcmp(ctx->cfg->trial.launcher, "mpi");
	ctx->priv = p;
	return 0;
}

static int kubernetes_place(struct aah_backend_ctx *ctx, unsigned trial_seq, unsigned attempt,
			    char **hosts, unsigned nodes, unsigned *port)
{
	char *job = kubernetes_job_name(ctx->cfg->experiment_name, ctx->experiment_id, trial_seq,
					attempt);
	kubernetes_trial_hosts(job, nodes, hosts);
	free(job);
	*port = ctx->cfg->trial.master_port ? (unsigned)ctx->cfg->trial.master_port : 29500;
	return 0;
}

/* What a Job leaves beside it: its Service and, with trial.launcher: mpi,
 * its ssh key Secret (no ownerReference can tie them to a Job that does
 * not exist yet, so they go by name when the Job does). */
static void delete_service(struct kubernetes_priv *p, const char *job, long retries)
{
	const char *const svc[] = { "delete", "service", job, "--ignore-not-found", "--wait=false",
				    NULL };
	int was_quiet = util_set_quiet(1);
	kubectl(p, svc, NULL, NULL, retries);
	if (p->mpi) {
		char *name = kubernetes_mpi_secret_name(job);
		const char *const sec[] = { "delete", "secret", name, "--ignore-not-found",
					    "--wait=false", NULL };
		kubectl(p, sec, NULL, NULL, retries);
		free(name);
	}
	util_set_quiet(was_quiet);
}

static int refresh(struct kubernetes_priv *p);
static const cJSON *listed(const struct kubernetes_priv *p, const char *name);

/* What the cluster lists now of Job `name` of this experiment: -1 the list
 * could not be read, 0 no such Job, 1 a finished one (succeeded, failed or
 * timed out; *state its state), 2 one still on its way. */
static int listed_state(struct kubernetes_priv *p, const char *name, enum aah_job_state *state)
{
	p->list_at = 0;
	int was_quiet = util_set_quiet(1);
	int r = refresh(p);
	util_set_quiet(was_quiet);
	const cJSON *it = r == 0 ? listed(p, name) : NULL;
	if (!it)
		return r == 0 ? 0 : -1;
	struct aah_job_status st = { .job = name };
	long ready, want;
	kubernetes_job_state(it, &st, &ready, &want);
	*state = st.state;
	int finished = st.state == AAH_JOB_SUCCEEDED || st.state == AAH_JOB_FAILED ||
		       st.state == AAH_JOB_TIMEOUT;
	return finished ? 1 : 2;
}

/* The same attempt launched again (a device pool's resize relaunches it
 * with --resume) meets its predecessor's Job, kept after it finished for
 * ttlSecondsAfterFinished. Only a finished Job of this name, listed under
 * this experiment's label, is deleted (its pods first: a foreground
 * deletion, waited for) so that the create can be tried again; a Job that
 * has not finished is never touched. 1 = it was deleted. */
static int replace_finished(struct kubernetes_priv *p, const char *name)
{
	enum aah_job_state state;
	if (listed_state(p, name, &state) != 1)
		return 0;
	/* foreground, and kubectl waits: its pods are gone before the new Job's
	 * start, for they answer to the same DNS names (<job>-<i>.<job>) and a
	 * straggler would meet the new ranks' rendezvous */
	const char *const del[] = { "delete", "job", name, "--cascade=foreground",
				    "--ignore-not-found", "--wait=true", NULL };
	if (kubectl(p, del, NULL, NULL, p->kc.kubectl_retries) != KUBECTL_OK)
		return 0;
	delete_service(p, name, p->kc.kubectl_retries);
	warning("Job %s: replaced the finished Job of the same name (%s) left from this trial's "
		"previous launch", name, aah_job_state_name(state));
	return 1;
}

/* trial.launcher: mpi: a Secret of this name that no unfinished Job uses
 * is a leftover (a runner that died between creating it and its Job, or
 * before it deleted it): it goes, so that the create below makes the Secret
 * with this submission's fresh keys and never meets a stale one. */
static void delete_stale_secret(struct kubernetes_priv *p, const char *name)
{
	enum aah_job_state state;
	int listed_as = listed_state(p, name, &state);
	if (listed_as != 0 && listed_as != 1)
		return;
	int was_quiet = util_set_quiet(1);
	char *sec = kubernetes_mpi_secret_name(name);
	const char *const del[] = { "delete", "secret", sec, "--ignore-not-found", NULL };
	kubectl(p, del, NULL, NULL, p->kc.kubectl_retries);
	free(sec);
	util_set_quiet(was_quiet);
}

static int kubernetes_submit(struct aah_backend_ctx *ctx, const struct aah_launch *l, char **job)
{
	struct kubernetes_priv *p = ctx->priv;
	char *name = kubernetes_job_name(ctx->cfg->experiment_name, ctx->experiment_id,
					 l->trial_seq, l->attempt);
	cJSON *docs = NULL;
	if (kubernetes_spec_trial(ctx->cfg, &p->kc, l, name, &docs) < 0) {
		free(name);
		return -1;
	}
	char *text = kubernetes_json_emit(docs);
	kubernetes_mpi_scrub(docs);
	cJSON_Delete(docs);
	if (p->mpi)
		delete_stale_secret(p, name);
	/* Journal the name first: a runner that dies during the create finds
	 * the Job (or its absence) on resume. */
	int r = backend_notify_submitted(ctx, name);
	if (r == 0) {
		const char *const args[] = { p->kc.submit, "-f", "-", "-o", "name", NULL };
		/* AlreadyExists is said once, below, unless a relaunch replaces
		 * its own finished Job; any other failure is said as kubectl put it */
		int held = util_hold_errors(1);
		int k = kubectl(p, args, text, NULL, p->kc.kubectl_retries);
		util_hold_errors(held);
		if (k != KUBECTL_OK && k != KUBECTL_EXISTS) {
			char *why = xstrdup(util_last_error());   /* error() rewrites it */
			error("%s", why);
			free(why);
		}
		if (k == KUBECTL_EXISTS && replace_finished(p, name))
			k = kubectl(p, args, text, NULL, p->kc.kubectl_retries);
		if (k == KUBECTL_EXISTS)
			error("a Job or Service '%s' already exists in namespace '%s' (left from an "
			      "earlier run?): delete it with 'kubectl -n %s delete job,service %s'",
			      name, p->kc.namespace_, p->kc.namespace_, name);
		if (k != KUBECTL_OK) {
			const char *const del[] = { "delete", "job", name, "--ignore-not-found",
						    "--wait=false", NULL };
			if (k != KUBECTL_EXISTS) {
				int was_quiet = util_set_quiet(1);
				kubectl(p, del, NULL, NULL, 0);
				util_set_quiet(was_quiet);
				delete_service(p, name, 0);
			}
			r = -1;
		}
	}
	OPENSSL_cleanse(text, strlen(text)); /* the Secret's private keys */
	free(text);
	if (r < 0) {
		free(name);
		return -1;
	}
	struct kjob *j = backend_jobs_get(&p->jobs, name);
	j->first_seen = util_monotonic();
	*job = name;
	return 0;
}

/* Refresh the Job list when the interval has passed. 0 = fresh or still
 * valid, -1 = kubectl failed (the interval doubles). */
static int refresh(struct kubernetes_priv *p)
{
	double now = util_monotonic();
	if (p->list_at > 0 && now - p->list_at < p->interval)
		return 0;
	const char *const args[] = { "get", "jobs", "-l", p->selector, "-o", "json", NULL };
	struct strbuf out = STRBUF_INIT;
	cJSON *doc = NULL;
	int r = kubectl(p, args, NULL, &out, 0) == KUBECTL_OK &&
			jsonfile_parse("kubectl get jobs", strbuf_str(&out), &doc) == 0
		? 0 : -1;
	strbuf_release(&out);
	if (r == 0 && !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "items"))) {
		r = error("kubectl get jobs: the answer has no items list");
	}
	if (r < 0) {
		cJSON_Delete(doc);
		p->list_at = now;
		p->interval = p->interval * 2 < MAX_BACKOFF ? p->interval * 2 : MAX_BACKOFF;
		return -1;
	}
	cJSON_Delete(p->list);
	p->list = doc;
	p->list_at = now;
	p->interval = p->kc.poll_interval;
	backend_jobs_each(&p->jobs, struct kjob, j) {
		const cJSON *it;
		int found = 0;
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(doc, "items")) {
			const cJSON *m = cJSON_GetObjectItemCaseSensitive(it, "metadata");
			const cJSON *n = cJSON_GetObjectItemCaseSensitive(m, "name");
			found |= cJSON_IsString(n) && !strcmp(n->valuestring, j->job.id);
		}
		if (found)
			j->missing = 0;
		else if (now > j->first_seen)
			j->missing++;
	}
	return 0;
}

static const cJSON *listed(const struct kubernetes_priv *p, const char *name)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(p->list, "items")) {
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(it, "metadata"), "name");
		if (cJSON_IsString(n) && !strcmp(n->valuestring, name))
			return it;
	}
	return NULL;
}

static int get_pods(struct kubernetes_priv *p, const char *job, cJSON **doc)
{
	char *sel = xstrfmt("batch.kubernetes.io/job-name=%s", job);
	const char *const args[] = { "get", "pods", "-l", sel, "-o", "json", NULL };
	struct strbuf out = STRBUF_INIT;
	*doc = NULL;
	int r = kubectl(p, args, NULL, &out, p->kc.kubectl_retries) == KUBECTL_OK
			? jsonfile_parse("kubectl get pods", strbuf_str(&out), doc) : -1;
	strbuf_release(&out);
	free(sel);
	return r;
}

static const cJSON *field(const cJSON *o, const char *a, const char *b)
{
	o = cJSON_GetObjectItemCaseSensitive(o, a);
	return b ? cJSON_GetObjectItemCaseSensitive(o, b) : o;
}

/* Why pods are not running, or how one failed, in the kubelet's words. */
static void pod_story(struct kubernetes_priv *p, const char *job, char *buf, size_t n,
		      int *exit_code)
{
	cJSON *doc;
	buf[0] = '\0';
	int was_quiet = util_set_quiet(1);
	int r = get_pods(p, job, &doc);
	util_set_quiet(was_quiet);
	if (r < 0)
		return;
	const cJSON *pod;
	cJSON_ArrayForEach(pod, cJSON_GetObjectItemCaseSensitive(doc, "items")) {
		const char *pname = cJSON_GetStringValue(field(pod, "metadata", "name"));
		const cJSON *cs, *c;
		cJSON_ArrayForEach(cs, field(pod, "status", "containerStatuses")) {
			const cJSON *t = field(cs, "state", "terminated");
			const cJSON *w = field(cs, "state", "waiting");
			if (t && cJSON_IsNumber(cJSON_GetObjectItem(t, "exitCode")) &&
			    cJSON_GetObjectItem(t, "exitCode")->valueint != 0) {
				int code = cJSON_GetObjectItem(t, "exitCode")->valueint;
				if (exit_code)
					*exit_code = code;
				snprintf(buf, n, "pod %s: container exited with status %d (%s)", pname, code,
					 cJSON_GetStringValue(cJSON_GetObjectItem(t, "reason"))
						 ? cJSON_GetStringValue(cJSON_GetObjectItem(t, "reason"))
						 : "no reason");
				goto done;
			}
			if (w && cJSON_GetStringValue(cJSON_GetObjectItem(w, "reason")) && !exit_code) {
				const char *msg = cJSON_GetStringValue(cJSON_GetObjectItem(w, "message"));
				snprintf(buf, n, "pod %s: %s%s%s", pname,
					 cJSON_GetStringValue(cJSON_GetObjectItem(w, "reason")),
					 msg ? ": " : "", msg ? msg : "");
				goto done;
			}
		}
		cJSON_ArrayForEach(c, field(pod, "status", "conditions")) {
			const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(c, "type"));
			const char *st = cJSON_GetStringValue(cJSON_GetObjectItem(c, "status"));
			if (!exit_code && type && st && !strcmp(type, "PodScheduled") && !strcmp(st, "False")) {
				const char *msg = cJSON_GetStringValue(cJSON_GetObjectItem(c, "message"));
				snprintf(buf, n, "pod %s: not scheduled: %s", pname, msg ? msg : "no message");
				goto done;
			}
		}
	}
done:
	cJSON_Delete(doc);
}

/* A Job is Complete when its pods exited; the result.json rank 0 wrote on
 * another node may take a while to show through the master's NFS client
 * cache (attribute and lookup caching). Listing the directory revalidates
 * it; give up after `wait` seconds and let the scheduler judge. The
 * directory is where the Job's pods write (its aah.io/trial-dir, the
 * launch's place), when it lies in our experiment's trial directory named
 * by its aah.io/trial label. */
static int result_visible(const struct aah_backend_ctx *ctx, const cJSON *job, double wait,
			  struct kjob *j)
{
	const cJSON *labels = field(job, "metadata", "labels");
	const char *trial = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels, "aah.io/trial"));
	const char *dir = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		field(job, "metadata", "annotations"), "aah.io/trial-dir"));
	unsigned seq;
	if (!trial || expdir_trial_seq(trial, &seq) < 0 || wait <= 0)
		return 1;
	char *tdir = expdir_trial_dir(ctx->expdir, seq);
	size_t tl = strlen(tdir);
	int ours = dir && !strncmp(dir, tdir, tl) && (!dir[tl] || (dir[tl] == '/' &&
		   expdir_place_valid(dir + tl + 1)));
	int seen = expdir_result_visible(ours ? dir : tdir);
	free(tdir);
	if (seen)
		return 1;
	double now = util_monotonic();
	if (!j->complete_at)
		j->complete_at = now;
	return now - j->complete_at >= wait;
}

static int told(const struct strvec *sv, const char *s)
{
	for (size_t i = 0; i < sv->n; i++)
		if (!strcmp(sv->v[i], s))
			return 1;
	return 0;
}

/* Pods of the Job that a preemption, eviction or drain ended (condition
 * DisruptionTarget): the Job's podFailurePolicy ignores them and the Job
 * controller creates a replacement, which resumes from the checkpoint (the
 * trial entrypoint). Not a failure, so trial.retries is not touched; each
 * is told once, on stderr, in the trial's trial.log and in st->note (the
 * journal). */
static void note_disruptions(struct aah_backend_ctx *ctx, struct kjob *j, const cJSON *job,
			     struct aah_job_status *st)
{
	struct kubernetes_priv *p = ctx->priv;
	cJSON *doc;
	util_set_quiet(1);
	int r = get_pods(p, j->job.id, &doc);
	util_set_quiet(0);
	if (r < 0)
		return;
	const char *trial = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		field(job, "metadata", "labels"), "aah.io/trial"));
	unsigned seq;
	char *log = trial && expdir_trial_seq(trial, &seq) == 0
			    ? expdir_trial_file(ctx->expdir, seq, EXPDIR_TRIAL_LOG) : NULL;
	const cJSON *pod, *c;
	cJSON_ArrayForEach(pod, cJSON_GetObjectItemCaseSensitive(doc, "items")) {
		const char *pname = cJSON_GetStringValue(field(pod, "metadata", "name"));
		if (!pname || told(&j->disrupted, pname) || !(c = kubernetes_pod_disruption(pod)))
			continue;
		const char *why = cJSON_GetStringValue(cJSON_GetObjectItem(c, "reason"));
		const char *msg = cJSON_GetStringValue(cJSON_GetObjectItem(c, "message"));
		char *line = xstrfmt("==> kubernetes: pod %s was disrupted (DisruptionTarget: %s%s%s); "
				     "the Job controller replaces it and the new pod resumes from the "
				     "checkpoint (not a failure: trial.retries is not charged) <==",
				     pname, why ? why : "no reason", msg ? ": " : "", msg ? msg : "");
		warning("Job %s: %s", j->job.id, line + 4);
		snprintf(st->note, sizeof(st->note), "pod %s disrupted (%s); its replacement "
			 "resumes from the checkpoint, not charged to trial.retries", pname,
			 why ? why : "DisruptionTarget");
		if (log && fileio_append_line(log, line) < 0)
			warning("cannot write %s", log);
		free(line);
		strvec_push(&j->disrupted, pname);
	}
	free(log);
	cJSON_Delete(doc);
}

static int kubernetes_cancel(struct aah_backend_ctx *ctx, const char *name)
{
	struct kubernetes_priv *p = ctx->priv;
	const char *const args[] = { "delete", "job", name, "--cascade=foreground",
				     "--ignore-not-found", "--wait=false", NULL };
	if (kubectl(p, args, NULL, NULL, 0) != KUBECTL_OK)
		return -1;
	delete_service(p, name, 0);
	((struct kjob *)backend_jobs_get(&p->jobs, name))->canceled = 1;
	return 0;
}

/* A multi-pod Job failed: did one of its pods go to a preemption or an
 * eviction? Its replacement cannot rejoin ranks that already gave up on
 * it, so the Job fails; the scheduler relaunches it from the checkpoint. */
static void lost_a_pod(struct kubernetes_priv *p, const char *job, struct aah_job_status *st)
{
	cJSON *doc;
	int was_quiet = util_set_quiet(1);
	int r = get_pods(p, job, &doc);
	util_set_quiet(was_quiet);
	char why[160];
	if (r < 0)
		return;
	if (kubernetes_pod_disrupted(doc, why, sizeof(why))) {
		st->disrupted = 1;
		snprintf(st->reason, sizeof(st->reason), "%s and the other ranks lost it (Job %s)",
			 why, job);
	}
	cJSON_Delete(doc);
}

static int kubernetes_poll(struct aah_backend_ctx *ctx, struct aah_job_status *st)
{
	struct kubernetes_priv *p = ctx->priv;
	struct kjob *j = backend_jobs_get(&p->jobs, st->job);
	if (j->canceled) {
		st->state = AAH_JOB_CANCELED;
		snprintf(st->reason, sizeof(st->reason), "Job %s deleted", j->job.id);
		return 0;
	}
	if (refresh(p) < 0)
		return -1;
	const cJSON *item = listed(p, j->job.id);
	if (!item) {
		st->state = AAH_JOB_PENDING;
		if (j->missing >= 2) {
			st->state = AAH_JOB_LOST;
			snprintf(st->reason, sizeof(st->reason),
				 "Job %s is gone from namespace %s (deleted, or removed after "
				 "ttlSecondsAfterFinished)", j->job.id, p->kc.namespace_);
		}
		return 0;
	}
	long ready, want;
	kubernetes_job_state(item, st, &ready, &want);
	if (st->state == AAH_JOB_FAILED || st->state == AAH_JOB_TIMEOUT) {
		char story[160];
		pod_story(p, j->job.id, story, sizeof(story), &st->exit_code);
		if (*story) {
			size_t len = strlen(st->reason);
			snprintf(st->reason + len, sizeof(st->reason) - len, "; %s", story);
		}
	}
	if (st->state == AAH_JOB_FAILED && want > 1)
		lost_a_pod(p, j->job.id, st);
	if (st->state == AAH_JOB_SUCCEEDED && !result_visible(ctx, item, p->kc.result_wait, j))
		st->state = AAH_JOB_RUNNING;
	if (st->state == AAH_JOB_RUNNING)
		j->all_ready_seen = 1;
	if (kubernetes_job_suspended(item)) {
		/* A queue holds it: no pod exists yet, nothing holds a GPU; the
		 * pending clock starts at admission. The runner never unsuspends. */
		if (!j->waiting_said)
			warning("Job %s: %s", j->job.id, st->reason);
		snprintf(st->note, sizeof(st->note), "%s", st->reason);
		j->waiting_said = 1;
		j->first_seen = util_monotonic();
		return 0;
	}
	j->waiting_said = 0;   /* a queue that preempts it suspends it again: told again */
	if (st->state == AAH_JOB_PENDING && j->all_ready_seen)
		note_disruptions(ctx, j, item, st);
	if (st->state == AAH_JOB_PENDING && ready > 0 && want > 1 && !strcmp(p->kc.queue, "none") &&
	    p->kc.gang_timeout > 0) {
		double now = util_monotonic();
		if (!j->partial_since)
			j->partial_since = now;
		if (now - j->partial_since > p->kc.gang_timeout) {
			char story[160];
			pod_story(p, j->job.id, story, sizeof(story), NULL);
			if (kubernetes_cancel(ctx, j->job.id) < 0)
				return -1;
			j->canceled = 0;
			st->state = AAH_JOB_FAILED;
			int n = snprintf(st->reason, sizeof(st->reason),
					 "freed after %gs with its pods partly running (%ld of %ld "
					 "ready; kubernetes.gangTimeout)", p->kc.gang_timeout, ready, want);
			if (*story && n > 0 && (size_t)n < sizeof(st->reason))
				snprintf(st->reason + n, sizeof(st->reason) - (size_t)n, ": %s", story);
			j->missing = 0;
			j->first_seen = util_monotonic() + 1e9;
			return 0;
		}
	} else {
		j->partial_since = 0;
	}
	if (st->state == AAH_JOB_PENDING && !j->all_ready_seen && p->kc.pending_timeout > 0 &&
	    util_monotonic() - j->first_seen > p->kc.pending_timeout) {
		char story[160];
		pod_story(p, j->job.id, story, sizeof(story), NULL);
		if (kubernetes_cancel(ctx, j->job.id) < 0)
			return -1;
		j->canceled = 0; /* it failed; it was not canceled by request */
		st->state = AAH_JOB_FAILED;
		snprintf(st->reason, sizeof(st->reason),
			 "pods not running after %gs (%ld of %ld ready)%s%s", p->kc.pending_timeout,
			 ready, want, *story ? ": " : "", story);
		j->missing = 0;
		j->first_seen = util_monotonic() + 1e9; /* settled: never again */
	}
	return 0;
}

static int compare_index(const void *a, const void *b)
{
	const cJSON *const *x = a, *const *y = b;
	const char *k = "batch.kubernetes.io/job-completion-index";
	const char *ix = cJSON_GetStringValue(field(field(*x, "metadata", "annotations"), k, NULL));
	const char *iy = cJSON_GetStringValue(field(field(*y, "metadata", "annotations"), k, NULL));
	return (ix ? atoi(ix) : 0) - (iy ? atoi(iy) : 0);
}

/* Append every pod's log to trial.log, in completion-index order. */
static int kubernetes_reap(struct aah_backend_ctx *ctx, const char *name, const char *trial_dir)
{
	struct kubernetes_priv *p = ctx->priv;
	if (!name || !*name)
		return 0;
	cJSON *doc;
	if (get_pods(p, name, &doc) < 0) {
		warning("cannot copy the logs of Job %s into %s/trial.log", name, trial_dir);
		delete_service(p, name, 0);
		backend_jobs_drop(&p->jobs, name);
		return 0;
	}
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(doc, "items"), *it;
	size_t n = 0, k = 0;
	cJSON_ArrayForEach(it, items)
		n++;
	const cJSON **pods = xcalloc(n ? n : 1, sizeof(*pods));
	cJSON_ArrayForEach(it, items)
		pods[k++] = it;
	qsort(pods, n, sizeof(*pods), compare_index);
	char *path = expdir_file(trial_dir, EXPDIR_TRIAL_LOG), *old = NULL;
	size_t oldlen = 0;
	struct strbuf log = STRBUF_INIT;
	if (fileio_exists(path) && fileio_read(path, 0, &old, &oldlen) == 0)
		strbuf_add(&log, old, oldlen);
	for (size_t i = 0; i < n; i++) {
		const char *pod = cJSON_GetStringValue(field(pods[i], "metadata", "name"));
		const char *phase = cJSON_GetStringValue(field(pods[i], "status", "phase"));
		if (!pod)
			continue;
		const char *const args[] = { "logs", pod, "-c", "trial", NULL };
		struct strbuf out = STRBUF_INIT;
		strbuf_addf(&log, "==> kubernetes pod %s (%s) <==\n", pod, phase ? phase : "?");
		if (kubectl(p, args, NULL, &out, p->kc.kubectl_retries) == KUBECTL_OK)
			strbuf_addstr(&log, strbuf_str(&out));
		else
			strbuf_addf(&log, "(no log: %s)\n", util_last_error());
		if (log.len && log.buf[log.len - 1] != '\n')
			strbuf_addch(&log, '\n');
		strbuf_release(&out);
	}
	if (fileio_write_atomic(path, strbuf_str(&log), log.len) < 0)
		warning("cannot write %s", path);
	strbuf_release(&log);
	free(old);
	free(path);
	free(pods);
	cJSON_Delete(doc);
	delete_service(p, name, 0);
	backend_jobs_drop(&p->jobs, name);
	return 0;
}

static void kubernetes_fini(struct aah_backend_ctx *ctx)
{
	struct kubernetes_priv *p = ctx->priv;
	if (!p)
		return;
	backend_jobs_clear(&p->jobs);
	cJSON_Delete(p->list);
	free(p->selector);
	kubernetes_config_release(&p->kc);
	free(p);
	ctx->priv = NULL;
}

/* pool.devices: quota: one `kubectl get resourcequota`, before any trial. */
static int kubernetes_pool_quota(const struct aah_config *cfg, unsigned *devices)
{
	struct kubernetes_priv p = { .interval = 0 };
	if (kubernetes_config_load(cfg, &p.kc) < 0)
		return -1;
	static const char *const args[] = { "get", "resourcequota", "-o", "json", NULL };
	struct strbuf out = STRBUF_INIT;
	int r = kubectl(&p, args, NULL, &out, p.kc.kubectl_retries) == KUBECTL_OK
			? kubernetes_quota_gpus(strbuf_str(&out), p.kc.namespace_, devices)
			: -1;
	strbuf_release(&out);
	kubernetes_config_release(&p.kc);
	return r;
}

static int kubernetes_check_config(const struct aah_config *cfg)
{
	struct kubernetes_config kc;
	if (kubernetes_config_load(cfg, &kc) < 0)
		return -1;
	kubernetes_config_release(&kc);
	return 0;
}

const struct aah_backend backend_kubernetes = {
	.name = "kubernetes",
	.help = "Kubernetes backend settings",
	.caps = AAH_CAP_MULTINODE | AAH_CAP_GPU | AAH_CAP_REATTACH | AAH_CAP_CONTAINER | AAH_CAP_ELASTIC |
		AAH_CAP_MPI,
	.mpi_hosts = LAUNCH_MPI_NAMED,
	.config_keys = kubernetes_config_keys,
	.config_size = sizeof(struct kubernetes_config),
	.init = kubernetes_init,
	.place = kubernetes_place,
	.submit = kubernetes_submit,
	.poll = kubernetes_poll,
	.cancel = kubernetes_cancel,
	.reap = kubernetes_reap,
	.fini = kubernetes_fini,
	.check_config = kubernetes_check_config,
	.pool_quota = kubernetes_pool_quota,
};
