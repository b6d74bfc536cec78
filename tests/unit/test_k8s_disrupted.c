/* A multi-pod Job failed: was it the cluster taking a pod away
 * (kubernetes_pod_disrupted, runner/backend/kubernetes_status.c)? Only when
 * a pod is DisruptionTarget and the ranks that failed lost their peer
 * (exit 86), never when a rank failed by itself. */
#include <criterion/criterion.h>

#include "runner/backend/kubernetes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A pod list: each pod "name:exit[:reason]", exit -1 = still running,
 * reason = a DisruptionTarget condition with that reason. */
static cJSON *pods(const char *const *spec)
{
	cJSON *list = cJSON_CreateObject();
	cJSON *items = cJSON_AddArrayToObject(list, "items");
	for (; *spec; spec++) {
		char name[64], reason[64] = "";
		int code;
		cr_assert(sscanf(*spec, "%63[^:]:%d:%63s", name, &code, reason) >= 2);
		cJSON *pod = cJSON_CreateObject();
		cJSON_AddStringToObject(cJSON_AddObjectToObject(pod, "metadata"), "name", name);
		cJSON *status = cJSON_AddObjectToObject(pod, "status");
		cJSON *conds = cJSON_AddArrayToObject(status, "conditions");
		if (*reason) {
			cJSON *c = cJSON_CreateObject();
			cJSON_AddStringToObject(c, "type", "DisruptionTarget");
			cJSON_AddStringToObject(c, "status", "True");
			cJSON_AddStringToObject(c, "reason", reason);
			cJSON_AddItemToArray(conds, c);
		}
		cJSON *cs = cJSON_CreateObject();
		cJSON *state = cJSON_AddObjectToObject(cs, "state");
		if (code >= 0)
			cJSON_AddNumberToObject(cJSON_AddObjectToObject(state, "terminated"), "exitCode", code);
		else
			cJSON_AddObjectToObject(state, "running");
		cJSON_AddItemToArray(cJSON_AddArrayToObject(status, "containerStatuses"), cs);
		cJSON_AddItemToArray(items, pod);
	}
	return list;
}

static int disrupted(const char *const *spec, char *why, size_t n)
{
	cJSON *list = pods(spec);
	int r = kubernetes_pod_disrupted(list, why, n);
	cJSON_Delete(list);
	return r;
}

Test(k8s_disrupted, a_preempted_pod_whose_peers_lost_it)
{
	char why[128];
	cr_assert_eq(disrupted((const char *const[]){ "j-0-a:86", "j-1-b:137:PreemptionByScheduler",
						  "j-1-c:143", NULL }, why, sizeof(why)), 1);
	cr_assert_str_eq(why, "pod j-1-b was disrupted (PreemptionByScheduler)");
	/* an eviction, the replacement still starting */
	cr_assert_eq(disrupted((const char *const[]){ "j-0-a:-1", "j-1-b:143:EvictionByEvictionAPI",
						  "j-2-c:86", NULL }, why, sizeof(why)), 1);
	cr_assert(strstr(why, "j-1-b"));
}

Test(k8s_disrupted, a_rank_that_failed_by_itself_is_a_failure)
{
	char why[128] = "";
	/* a rank's own error (7), whatever happened to another pod */
	cr_assert_eq(disrupted((const char *const[]){ "j-0-a:7", "j-1-b:143:TerminationByKubelet", NULL },
			       why, sizeof(why)), 0);
	cr_assert_eq(disrupted((const char *const[]){ "j-0-a:86", "j-1-b:1", "j-2-c:0:PreemptionByScheduler",
						  NULL }, why, sizeof(why)), 0);
	/* no pod taken away; or taken, but no rank lost it */
	cr_assert_eq(disrupted((const char *const[]){ "j-0-a:86", "j-1-b:86", NULL }, why, sizeof(why)), 0);
	cr_assert_eq(disrupted((const char *const[]){ "j-0-a:0", "j-1-b:137:PreemptionByScheduler", NULL },
			       why, sizeof(why)), 0);
	cr_assert_str_eq(why, "");
}
