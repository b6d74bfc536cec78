/* kubernetes_status.c: what a trial's Job says, read back from the Job
 * object `kubectl get jobs -o json` lists: running, pending (a queue's
 * suspension too), or how it ended, in the controller's words. Apart from
 * kubernetes_spec.c, which writes the Job. */
#include "runner/backend/kubernetes.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

/* ---- reading a Job back ------------------------------------------------------ */

static const char *str_at(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static long num_at(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) ? (long)v->valuedouble : 0;
}

int kubernetes_job_suspended(const cJSON *job)
{
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(job, "spec");
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(spec, "suspend"));
}

void kubernetes_job_state(const cJSON *job, struct aah_job_status *st, long *ready, long *want)
{
	const cJSON *status = cJSON_GetObjectItemCaseSensitive(job, "status");
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(job, "spec");
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(job, "metadata");
	const cJSON *c;
	*want = num_at(spec, "completions");
	/* status.ready is there from Kubernetes 1.24 (JobReadyPods); before, count
	 * the active pods as running rather than fail them as pending. */
	*ready = (cJSON_GetObjectItemCaseSensitive(status, "ready") ? num_at(status, "ready")
								   : num_at(status, "active")) +
		 num_at(status, "succeeded");
	st->state = *ready >= *want && *want > 0 ? AAH_JOB_RUNNING : AAH_JOB_PENDING;
	st->reason[0] = '\0';
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(status, "conditions")) {
		const char *type = str_at(c, "type"), *cs = str_at(c, "status");
		const char *why = str_at(c, "reason"), *msg = str_at(c, "message");
		if (!type || !cs || strcmp(cs, "True"))
			continue;
		if (!strcmp(type, "Complete")) {
			st->state = AAH_JOB_SUCCEEDED;
			return;
		}
		if (!strcmp(type, "Failed")) {
			st->state = why && !strcmp(why, "DeadlineExceeded") ? AAH_JOB_TIMEOUT
									    : AAH_JOB_FAILED;
			snprintf(st->reason, sizeof(st->reason), "Job %s (%s)%s%s",
				 why && !strcmp(why, "DeadlineExceeded") ? "passed its activeDeadlineSeconds"
				 : why && !strcmp(why, "BackoffLimitExceeded") ? "failed: a pod failed"
				 : why && !strcmp(why, "PodFailurePolicy") ? "failed by its podFailurePolicy"
									  : "failed",
				 why ? why : "no reason", msg ? ": " : "", msg ? msg : "");
			return;
		}
		if (!strcmp(type, "Suspended"))
			st->state = AAH_JOB_PENDING;
	}
	if (kubernetes_job_suspended(job))
		snprintf(st->reason, sizeof(st->reason),
			 "waiting for admission: the Job is suspended until its queue (%s) admits it",
			 str_at(cJSON_GetObjectItemCaseSensitive(meta, "labels"), "kueue.x-k8s.io/queue-name")
				 ? str_at(cJSON_GetObjectItemCaseSensitive(meta, "labels"),
					  "kueue.x-k8s.io/queue-name")
				 : "spec.suspend");
	if (str_at(meta, "deletionTimestamp")) {
		st->state = AAH_JOB_CANCELED;
		snprintf(st->reason, sizeof(st->reason), "the Job is being deleted");
	}
}

/* The pod's container exit status, -1 while it has none. */
static int exit_status(const cJSON *pod)
{
	const cJSON *cs;
	cJSON_ArrayForEach(cs, cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(pod, "status"), "containerStatuses")) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(cs, "state"), "terminated");
		const cJSON *code = cJSON_GetObjectItemCaseSensitive(t, "exitCode");
		if (cJSON_IsNumber(code))
			return code->valueint;
	}
	return -1;
}

const cJSON *kubernetes_pod_disruption(const cJSON *pod)
{
	const cJSON *c;
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(pod, "status"), "conditions")) {
		const char *type = str_at(c, "type"), *cs = str_at(c, "status");
		if (type && cs && !strcmp(type, "DisruptionTarget") && !strcmp(cs, "True"))
			return c;
	}
	return NULL;
}

int kubernetes_pod_disrupted(const cJSON *pods, char *why, size_t n)
{
	const cJSON *pod, *taken = NULL, *cond = NULL;
	int lost = 0;
	cJSON_ArrayForEach(pod, cJSON_GetObjectItemCaseSensitive(pods, "items")) {
		const cJSON *c = kubernetes_pod_disruption(pod);
		int code = exit_status(pod);
		if (c && !taken) {
			taken = pod;
			cond = c;
		} else if (!c && code == LAUNCH_EXIT_PEER_LOST) {
			lost = 1;
		} else if (!c && code > 0 && code != 128 + SIGTERM && code != 128 + SIGKILL) {
			return 0;   /* a rank failed by itself: a failure, whatever else happened */
		}
	}
	if (!taken || !lost)
		return 0;
	const char *name = str_at(cJSON_GetObjectItemCaseSensitive(taken, "metadata"), "name");
	snprintf(why, n, "pod %s was disrupted (%s)", name ? name : "?",
		 str_at(cond, "reason") ? str_at(cond, "reason") : "DisruptionTarget");
	return 1;
}
