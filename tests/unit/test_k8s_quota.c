/* pool.devices: quota: the GPUs a namespace's ResourceQuotas allow, read
 * from `kubectl get resourcequota -o json` (runner/backend/kubernetes_quota.c). */
#include <criterion/criterion.h>

#include "runner/backend/kubernetes.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A List of quotas, each "name=value" (value: JSON text of the hard
 * requests.nvidia.com/gpu, or "-" for a quota without it). */
static char *quota_list(const char *const *quotas, int in_status)
{
	cJSON *list = cJSON_CreateObject();
	cJSON_AddStringToObject(list, "apiVersion", "v1");
	cJSON_AddStringToObject(list, "kind", "List");
	cJSON *items = cJSON_AddArrayToObject(list, "items");
	for (; *quotas; quotas++) {
		const char *eq = strchr(*quotas, '=');
		char name[64];
		snprintf(name, sizeof(name), "%.*s", (int)(eq - *quotas), *quotas);
		cJSON *q = cJSON_CreateObject();
		cJSON_AddStringToObject(q, "kind", "ResourceQuota");
		cJSON_AddStringToObject(cJSON_AddObjectToObject(q, "metadata"), "name", name);
		cJSON *hard = cJSON_AddObjectToObject(
			cJSON_AddObjectToObject(q, in_status ? "status" : "spec"), "hard");
		cJSON_AddStringToObject(hard, "count/jobs.batch", "100");
		if (strcmp(eq + 1, "-"))
			cJSON_AddItemToObject(hard, "requests.nvidia.com/gpu", cJSON_Parse(eq + 1));
		cJSON_AddItemToArray(items, q);
	}
	char *text = cJSON_PrintUnformatted(list);
	cJSON_Delete(list);
	return text;
}

static int gpus(const char *const *quotas, int in_status, unsigned *n)
{
	char *json = quota_list(quotas, in_status);
	int was = util_set_quiet(1);
	int r = kubernetes_quota_gpus(json, "team-a", n);
	util_set_quiet(was);
	free(json);
	return r;
}

Test(k8s_quota, the_smallest_gpu_quota_of_the_namespace)
{
	unsigned n = 0;
	cr_assert_eq(gpus((const char *const[]){ "a=\"8\"", "objects=-", "b=\"6\"", NULL }, 1, &n), 0,
		     "%s", util_last_error());
	cr_assert_eq(n, 6);
	/* the spec's limit until the quota controller fills in the status;
	 * a plain number is a quantity too */
	cr_assert_eq(gpus((const char *const[]){ "a=16", NULL }, 0, &n), 0, "%s", util_last_error());
	cr_assert_eq(n, 16);
}

Test(k8s_quota, no_gpu_quota_or_an_unusable_one_is_an_error_naming_it)
{
	unsigned n = 7;
	cr_assert_lt(gpus((const char *const[]){ "objects=-", NULL }, 1, &n), 0);
	cr_assert(strstr(util_last_error(), "namespace 'team-a' has no ResourceQuota on "
					    "requests.nvidia.com/gpu"), "%s", util_last_error());
	cr_assert_lt(gpus((const char *const[]){ NULL }, 1, &n), 0);
	cr_assert_lt(gpus((const char *const[]){ "a=\"8\"", "b=\"0\"", NULL }, 1, &n), 0);
	cr_assert(strstr(util_last_error(), "ResourceQuota b in namespace 'team-a' allows no GPUs"),
		  "%s", util_last_error());
	cr_assert_lt(gpus((const char *const[]){ "a=\"500m\"", NULL }, 1, &n), 0);
	cr_assert(strstr(util_last_error(), "ResourceQuota a in namespace 'team-a' limits "
					    "requests.nvidia.com/gpu to \"500m\", not a whole number"),
		  "%s", util_last_error());
	cr_assert_lt(gpus((const char *const[]){ "a=2.5", NULL }, 1, &n), 0);
	cr_assert_lt(gpus((const char *const[]){ "a=\"100000\"", NULL }, 1, &n), 0);
	cr_assert_eq(n, 7, "a failed read leaves the size alone");
	int was = util_set_quiet(1);
	cr_assert_lt(kubernetes_quota_gpus("Error from server", "team-a", &n), 0);
	util_set_quiet(was);
}
