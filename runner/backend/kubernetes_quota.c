/* kubernetes_quota.c: pool.devices: quota, the device pool's size read from
 * the namespace's ResourceQuota objects (`kubectl get resourcequota -o
 * json`). Every quota of a namespace binds at once, so the pool is the
 * smallest hard limit on GPU requests among them. Extended resources such
 * as nvidia.com/gpu are limited in a quota only by their requests.
 * prefix (Kubernetes' resource quota docs), so that is the key read. */
#include "runner/backend/kubernetes.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GPU_QUOTA_KEY "requests.nvidia.com/gpu"

/* A whole number of GPUs as a quantity: "8", or the number 8. */
static int gpu_count(const cJSON *v, unsigned long *n)
{
	if (cJSON_IsNumber(v)) {
		double d = v->valuedouble;
		if (d < 0 || d > (double)(1L << 30) || d != (double)(unsigned long)d)
			return -1;
		*n = (unsigned long)d;
		return 0;
	}
	long l;
	if (!cJSON_IsString(v) || util_parse_long(v->valuestring, 0, 1L << 30, &l) < 0)
		return -1;
	*n = (unsigned long)l;
	return 0;
}

/* The limit a quota enforces: what the API server reports in status.hard,
 * the spec's until the quota controller has filled the status in. */
static const cJSON *hard_limit(const cJSON *quota)
{
	const cJSON *status = cJSON_GetObjectItemCaseSensitive(quota, "status");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(status, "hard"), GPU_QUOTA_KEY);
	if (v)
		return v;
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(quota, "spec");
	return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(spec, "hard"),
						GPU_QUOTA_KEY);
}

int kubernetes_quota_gpus(const char *json, const char *ns, unsigned *devices)
{
	cJSON *list = cJSON_Parse(json);
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(list, "items");
	if (!cJSON_IsArray(items)) {
		cJSON_Delete(list);
		return error("kubectl get resourcequota gave no list of quotas");
	}
	unsigned long least = 0;
	const char *which = NULL;
	const cJSON *q;
	int r = 0;
	cJSON_ArrayForEach(q, items) {
		const cJSON *meta = cJSON_GetObjectItemCaseSensitive(q, "metadata");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(meta, "name");
		const char *qname = cJSON_IsString(name) ? name->valuestring : "(unnamed)";
		const cJSON *v = hard_limit(q);
		unsigned long n;
		if (!v)
			continue;
		if (gpu_count(v, &n) < 0) {
			char *text = cJSON_PrintUnformatted(v);
			r = error("ResourceQuota %s in namespace '%s' limits %s to %s, not a whole "
				  "number of GPUs", qname, ns, GPU_QUOTA_KEY, text ? text : "?");
			free(text);
			break;
		}
		if (!which || n < least) {
			least = n;
			which = qname;
		}
	}
	if (r == 0 && !which)
		r = error("namespace '%s' has no ResourceQuota on %s (kubectl get resourcequota "
			  "-n %s); ask the cluster's operator for one, or give pool.devices as a "
			  "number", ns, GPU_QUOTA_KEY, ns);
	else if (r == 0 && least == 0)
		r = error("ResourceQuota %s in namespace '%s' allows no GPUs (%s: 0)", which, ns,
			  GPU_QUOTA_KEY);
	else if (r == 0 && least > 65536)
		r = error("ResourceQuota %s in namespace '%s' allows %lu GPUs, more than a pool "
			  "holds (65536)", which, ns, least);
	if (r == 0)
		*devices = (unsigned)least;
	cJSON_Delete(list);
	return r;
}
