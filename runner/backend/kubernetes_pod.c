/* kubernetes_pod.c: what a GPU training pod needs beyond the launch
 * contract: the count of its index's preemptions (a replacement resumes),
 * a memory-backed /dev/shm (NCCL's buffers between the processes
 * of a pod; the container default is 64 MiB), dataset volumes from a node's
 * disk (hostPath) or a PersistentVolumeClaim, read-only unless asked, and
 * GPU node selection (the GPU product label, the GPU nodes' taint). Their
 * config checks (the API server's rules, said at `check` time with the
 * file, line and key) and their parts of the pod spec. */
#include "runner/backend/kubernetes.h"
#include "util.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int fail(const struct aah_config *cfg, const struct ynode *n, const char *key,
		const char *what)
{
	return error("%s:%u:%u: 'kubernetes.%s' %s", cfg->path ? cfg->path : "config",
		     n ? n->line : 1, n ? n->col : 1, key, what);
}

int kubernetes_quantity_bytes(const char *s, double *bytes)
{
	static const struct { const char *suffix; double factor; } units[] = {
		{ "Ki", 1024.0 }, { "Mi", 1048576.0 }, { "Gi", 1073741824.0 },
		{ "Ti", 1099511627776.0 }, { "Pi", 1125899906842624.0 },
		{ "k", 1e3 }, { "M", 1e6 }, { "G", 1e9 }, { "T", 1e12 }, { "P", 1e15 }, { "", 1 },
	};
	const char *p = s;
	if (!isdigit((unsigned char)*p))
		return -1;
	while (isdigit((unsigned char)*p))
		p++;
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return -1;
		while (isdigit((unsigned char)*p))
			p++;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(*units); i++) {
		if (!strcmp(p, units[i].suffix)) {
			*bytes = strtod(s, NULL) * units[i].factor;
			return 0;
		}
	}
	return -1;
}

/* An absolute path without "." or ".." components (V5, C7). */
static int clean_abs_path(const char *s)
{
	if (s[0] != '/')
		return 0;
	for (const char *c = s; c; c = strchr(c + 1, '/')) {
		size_t n = strcspn(c + 1, "/");
		if ((n == 1 && c[1] == '.') || (n == 2 && c[1] == '.' && c[2] == '.'))
			return 0;
	}
	return 1;
}

static int check_volume(const struct aah_config *cfg, const struct kubernetes_config *kc,
			const struct ynode *v, size_t i)
{
	static const char *const keys[] = { "name", "hostPath", "claimName", "mountPath",
					    "readOnly", NULL };
	if (v->kind != YNODE_MAP)
		return fail(cfg, v, "volumes", "entries must be mappings (name, hostPath or claimName, "
			    "mountPath, readOnly)");
	for (size_t k = 0; k < v->n; k++) {
		const char *const *p = keys;
		while (*p && strcmp(*p, v->keys[k]))
			p++;
		if (!*p || v->children[k]->kind != YNODE_SCALAR)
			return fail(cfg, v->children[k], "volumes",
				    "entries take name, hostPath or claimName, mountPath and readOnly "
				    "(single values)");
	}
	const struct ynode *name = ynode_get(v, "name"), *host = ynode_get(v, "hostPath");
	const struct ynode *claim = ynode_get(v, "claimName"), *mount = ynode_get(v, "mountPath");
	const struct ynode *ro = ynode_get(v, "readOnly");
	if (!name || !kubernetes_is_dns_label(name->value) || !strcmp(name->value, "userhome") ||
	    !strcmp(name->value, "dshm"))
		return fail(cfg, name ? name : v, "volumes",
			    "entries need a name that is a DNS-1123 label other than userhome and dshm");
	for (size_t j = 0; j < i; j++) {
		const struct ynode *other = ynode_get(kc->volumes->children[j], "name");
		if (other && !strcmp(other->value, name->value))
			return fail(cfg, name, "volumes", "names a volume twice");
	}
	if (!!host == !!claim)
		return fail(cfg, v, "volumes", "entries need exactly one of hostPath and claimName");
	if (host && !clean_abs_path(host->value))
		return fail(cfg, host, "volumes", "hostPath must be an absolute path without . or ..");
	if (claim && !kubernetes_is_dns_subdomain(claim->value))
		return fail(cfg, claim, "volumes", "claimName must be a DNS-1123 subdomain");
	if (!mount || !clean_abs_path(mount->value))
		return fail(cfg, mount ? mount : v, "volumes",
			    "entries need a mountPath, an absolute path without . or ..");
	if (!strcmp(mount->value, kc->mount_path) || !strcmp(mount->value, "/dev/shm"))
		return fail(cfg, mount, "volumes", "mountPath is already /userhome's or /dev/shm");
	for (size_t j = 0; j < i; j++) {
		const struct ynode *other = ynode_get(kc->volumes->children[j], "mountPath");
		if (other && !strcmp(other->value, mount->value))
			return fail(cfg, mount, "volumes", "mounts two volumes at the same mountPath");
	}
	if (ro && strcmp(ro->value, "true") && strcmp(ro->value, "false"))
		return fail(cfg, ro, "volumes", "readOnly must be true or false");
	return 0;
}

int kubernetes_pod_config_check(const struct aah_config *cfg, const struct kubernetes_config *kc)
{
	const struct ynode *sec = config_section(cfg, "kubernetes");
	double shm, mem;
	if (kc->memory && kubernetes_quantity_bytes(kc->memory, &mem) < 0)
		return fail(cfg, ynode_get(sec, "memory"), "memory", "must be a size such as 64Gi");
	if (kubernetes_quantity_bytes(kc->shm_size, &shm) < 0)
		return fail(cfg, ynode_get(sec, "shmSize"), "shmSize",
			    "must be a size such as 8Gi, 512Mi or 0 (no /dev/shm volume)");
	if (shm > 0 && kc->memory && kubernetes_quantity_bytes(kc->memory, &mem) == 0 && shm > mem)
		return fail(cfg, ynode_get(sec, "shmSize"), "shmSize",
			    "is larger than kubernetes.memory: /dev/shm is memory the pod's limit counts");
	if (*kc->gpu_taint && !kubernetes_is_qualified_name(kc->gpu_taint))
		return fail(cfg, ynode_get(sec, "gpuTaint"), "gpuTaint",
			    "must be a taint key (a label name) or \"\" for none");
	if (kc->gpu_product && !kubernetes_is_label_value(kc->gpu_product))
		return fail(cfg, ynode_get(sec, "gpuProduct"), "gpuProduct",
			    "must be a label value, e.g. NVIDIA-H100-80GB-HBM3");
	if (kc->volumes) {
		if (kc->volumes->kind != YNODE_SEQ)
			return fail(cfg, kc->volumes, "volumes", "must be a list of volumes");
		for (size_t i = 0; i < kc->volumes->n; i++)
			if (check_volume(cfg, kc, kc->volumes->children[i], i) < 0)
				return -1;
	}
	return 0;
}

void kubernetes_pod_env_add(cJSON *env, int resume_on_replace)
{
	/* A pod that replaces a preempted or evicted one resumes from the
	 * trial's checkpoint: the entrypoint adds --resume when this count
	 * (annotated by the Job controller, empty on a first pod) is > 0. */
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "name", "AAH_INDEX_PREEMPTIONS");
	cJSON *fr = cJSON_AddObjectToObject(cJSON_AddObjectToObject(e, "valueFrom"), "fieldRef");
	cJSON_AddStringToObject(fr, "apiVersion", "v1");
	cJSON_AddStringToObject(fr, "fieldPath",
				"metadata.annotations['batch.kubernetes.io/job-index-ignored-failure-count']");
	cJSON_AddItemToArray(env, e);
	if (resume_on_replace) {
		e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "name", "AAH_RESUME_ON_REPLACE");
		cJSON_AddStringToObject(e, "value", "1");
		cJSON_AddItemToArray(env, e);
	}
}

static void add_mount(cJSON *mounts, const char *name, const char *path, int read_only)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "name", name);
	cJSON_AddStringToObject(m, "mountPath", path);
	if (read_only)
		cJSON_AddBoolToObject(m, "readOnly", 1);
	cJSON_AddItemToArray(mounts, m);
}

static cJSON *array_in(cJSON *o, const char *key)
{
	cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
	return a ? a : cJSON_AddArrayToObject(o, key);
}

static cJSON *object_in(cJSON *o, const char *key)
{
	cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
	return a ? a : cJSON_AddObjectToObject(o, key);
}

void kubernetes_pod_add(const struct kubernetes_config *kc, const struct aah_launch *l,
			cJSON *pod_spec, cJSON *container)
{
	cJSON *vols = array_in(pod_spec, "volumes"), *mounts = array_in(container, "volumeMounts");
	double shm = 0;
	kubernetes_quantity_bytes(kc->shm_size, &shm);
	if (shm > 0) {
		cJSON *v = cJSON_CreateObject();
		cJSON_AddStringToObject(v, "name", "dshm");
		cJSON *ed = cJSON_AddObjectToObject(v, "emptyDir");
		cJSON_AddStringToObject(ed, "medium", "Memory");
		cJSON_AddStringToObject(ed, "sizeLimit", kc->shm_size);
		cJSON_AddItemToArray(vols, v);
		add_mount(mounts, "dshm", "/dev/shm", 0);
	}
	for (size_t i = 0; kc->volumes && i < kc->volumes->n; i++) {
		const struct ynode *y = kc->volumes->children[i];
		const struct ynode *host = ynode_get(y, "hostPath"), *ro = ynode_get(y, "readOnly");
		const char *name = ynode_get(y, "name")->value;
		int read_only = !ro || !strcmp(ro->value, "true");
		cJSON *v = cJSON_CreateObject();
		cJSON_AddStringToObject(v, "name", name);
		if (host) {
			cJSON *hp = cJSON_AddObjectToObject(v, "hostPath");
			cJSON_AddStringToObject(hp, "path", host->value);
			cJSON_AddStringToObject(hp, "type", "Directory");
		} else {
			cJSON *pvc = cJSON_AddObjectToObject(v, "persistentVolumeClaim");
			cJSON_AddStringToObject(pvc, "claimName", ynode_get(y, "claimName")->value);
			if (read_only)
				cJSON_AddBoolToObject(pvc, "readOnly", 1);
		}
		cJSON_AddItemToArray(vols, v);
		add_mount(mounts, name, ynode_get(y, "mountPath")->value, read_only);
	}
	if (!l->gpus_per_node)
		return;
	cJSON *sel = object_in(pod_spec, "nodeSelector");
	if (kc->gpu_product && !cJSON_GetObjectItemCaseSensitive(sel, "nvidia.com/gpu.product"))
		cJSON_AddStringToObject(sel, "nvidia.com/gpu.product", kc->gpu_product);
	if (!sel->child)
		cJSON_DeleteItemFromObjectCaseSensitive(pod_spec, "nodeSelector");
	if (*kc->gpu_taint) {
		cJSON *tols = array_in(pod_spec, "tolerations"), *t;
		cJSON_ArrayForEach(t, tols) {
			const cJSON *key = cJSON_GetObjectItemCaseSensitive(t, "key");
			if (cJSON_IsString(key) && !strcmp(key->valuestring, kc->gpu_taint))
				return;   /* the config's own toleration of it wins */
		}
		t = cJSON_CreateObject();
		cJSON_AddStringToObject(t, "key", kc->gpu_taint);
		cJSON_AddStringToObject(t, "operator", "Exists");
		cJSON_AddStringToObject(t, "effect", "NoSchedule");
		cJSON_AddItemToArray(tols, t);
	}
}
