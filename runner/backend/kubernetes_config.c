/* kubernetes_config.c: the Kubernetes backend's `kubernetes:` config
 * section: its key table (docs/config.md) and the checks that span keys or
 * that the API server would otherwise make later (exactly one /userhome
 * source, DNS names, label and toleration syntax). */
#include "runner/backend/kubernetes.h"
#include "util.h"

#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_alnum_lower(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static const char *const pull_policies[] = { "Always", "IfNotPresent", "Never", NULL };
static const char *const submit_modes[] = { "create", "apply", NULL };
static const char *const queues[] = { "none", "kueue", "volcano", NULL };

#define K(f) offsetof(struct kubernetes_config, f)
const struct cfg_key kubernetes_config_keys[] = {
	{ "namespace", CFG_STR, K(namespace_), 0, NULL, NULL, "aah",
	  "namespace of the trial Jobs (a DNS-1123 label)" },
	{ "context", CFG_STR, K(context), 0, NULL, NULL, "(kubectl's current)",
	  "kubeconfig context passed as kubectl --context" },
	{ "kubeconfig", CFG_STR, K(kubeconfig), 0, NULL, NULL, "($KUBECONFIG)",
	  "kubeconfig file passed as kubectl --kubeconfig" },
	{ "kubectl", CFG_STR, K(kubectl), 0, NULL, NULL, "kubectl", "the kubectl program" },
	{ "image", CFG_STR, K(image), 0, NULL, NULL, "aah-trial:cuda", "the trial image" },
	{ "imagePullPolicy", CFG_ENUM, K(image_pull_policy), 0, pull_policies, NULL, "IfNotPresent",
	  "when the kubelet pulls the image" },
	{ "imagePullSecrets", CFG_ANY, K(image_pull_secrets), 0, NULL, NULL, "[]",
	  "names of registry Secrets" },
	{ "nodeSelector", CFG_ANY, K(node_selector), 0, NULL, NULL, "{}",
	  "node labels the trial pods require" },
	{ "tolerations", CFG_ANY, K(tolerations), 0, NULL, NULL, "[]",
	  "pod tolerations (key, operator, value, effect, tolerationSeconds)" },
	{ "priorityClassName", CFG_STR, K(priority_class_name), 0, NULL, NULL, "(none)",
	  "PriorityClass of the trial pods" },
	{ "serviceAccountName", CFG_STR, K(service_account_name), 0, NULL, NULL, "(namespace default)",
	  "ServiceAccount of the trial pods (they get no API token)" },
	{ "nfsServer", CFG_STR, K(nfs_server), 0, NULL, NULL, "(none)",
	  "NFS server exporting /userhome (with nfsPath)" },
	{ "nfsPath", CFG_STR, K(nfs_path), 0, NULL, NULL, "(none)", "exported path on nfsServer" },
	{ "claimName", CFG_STR, K(claim_name), 0, NULL, NULL, "(none)",
	  "PersistentVolumeClaim holding /userhome (instead of nfsServer)" },
	{ "mountPath", CFG_STR, K(mount_path), 0, NULL, NULL, "/userhome",
	  "where the pods mount /userhome; the runner's workdir must be under it at the same path" },
	{ "runAsUser", CFG_INT, K(run_as_user), CFG_RANGE(0, 4294967295), NULL, NULL, "1000",
	  "uid of the trial processes (match the NFS export)" },
	{ "runAsGroup", CFG_INT, K(run_as_group), CFG_RANGE(0, 4294967295), NULL, NULL, "1000",
	  "gid of the trial processes" },
	{ "fsGroup", CFG_INT, K(fs_group), CFG_RANGE(0, 4294967295), NULL, NULL, "1000",
	  "supplementary group owning the volumes" },
	{ "shmSize", CFG_STR, K(shm_size), 0, NULL, NULL, "8Gi",
	  "memory-backed /dev/shm of each pod (NCCL); 0 = the container's 64 MiB" },
	{ "volumes", CFG_ANY, K(volumes), 0, NULL, NULL, "[]",
	  "dataset volumes: name, hostPath or claimName, mountPath, readOnly (true)" },
	{ "gpuProduct", CFG_STR, K(gpu_product), 0, NULL, NULL, "(any)",
	  "GPU pods only on nodes whose nvidia.com/gpu.product label has this value" },
	{ "gpuTaint", CFG_STR, K(gpu_taint), 0, NULL, NULL, "nvidia.com/gpu",
	  "taint key of the GPU nodes, tolerated by GPU pods; \"\" = none" },
	{ "cpu", CFG_STR, K(cpu), 0, NULL, NULL, "(none)", "CPU limit per pod, e.g. \"16\"" },
	{ "memory", CFG_STR, K(memory), 0, NULL, NULL, "(none)", "memory limit per pod, e.g. 64Gi" },
	{ "queue", CFG_ENUM, K(queue), 0, queues, NULL, "none",
	  "batch queue: kueue (a LocalQueue admits the Job), volcano (a gang per Job), none" },
	{ "queueName", CFG_STR, K(queue_name), 0, NULL, NULL, "(none)",
	  "Kueue LocalQueue or Volcano queue" },
	{ "priorityClasses", CFG_ANY, K(priority_classes), 0, NULL, NULL, "{}",
	  "class name: the lowest pool.priority that takes it" },
	{ "gangTimeout", CFG_DURATION, K(gang_timeout), CFG_RANGE(0, CFG_YEAR), NULL, NULL, "10m",
	  "queue none: free a multi-pod trial partly running this long (0 = never)" },
	{ "ttlSecondsAfterFinished", CFG_DURATION, K(ttl_after_finished), CFG_RANGE(0, CFG_YEAR), NULL, NULL, "1h",
	  "how long a finished Job stays before Kubernetes deletes it" },
	{ "pendingTimeout", CFG_DURATION, K(pending_timeout), CFG_RANGE(0, CFG_YEAR), NULL, NULL, "15m",
	  "a trial whose pods are not all running after this long fails (0 = wait forever)" },
	{ "pollInterval", CFG_DURATION, K(poll_interval), CFG_RANGE(0.01, 3600), NULL, NULL, "5s",
	  "time between `kubectl get jobs` (doubles while kubectl fails, up to 1m)" },
	{ "kubectlTimeout", CFG_DURATION, K(kubectl_timeout), CFG_RANGE(0.1, CFG_DAY), NULL, NULL, "30s",
	  "limit of one kubectl call" },
	{ "kubectlRetries", CFG_INT, K(kubectl_retries), CFG_RANGE(0, 100), NULL, NULL, "3",
	  "extra tries of a kubectl call that failed for a transient reason" },
	{ "resultWait", CFG_DURATION, K(result_wait), CFG_RANGE(0, CFG_DAY), NULL, NULL, "1m",
	  "how long a completed trial waits for its result.json to appear over NFS" },
	{ "sshPort", CFG_INT, K(ssh_port), CFG_RANGE(1024, 65535), NULL, NULL, "2222",
	  "trial.launcher: mpi: port of each trial pod's sshd (the pods run as non-root users: "
	  "1024 or above)" },
	{ "submit", CFG_ENUM, K(submit), 0, submit_modes, NULL, "create",
	  "kubectl create (fails on a name clash) or apply" },
	{ NULL },
};
#undef K

static int is_dns_label(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > 63 || !is_alnum_lower(s[0]) || !is_alnum_lower(s[n - 1]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum_lower(s[i]) && s[i] != '-')
			return 0;
	return 1;
}

static int is_dns_subdomain(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > 253 || !is_alnum_lower(s[0]) || !is_alnum_lower(s[n - 1]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum_lower(s[i]) && s[i] != '-' && s[i] != '.')
			return 0;
	return 1;
}

/* A label value, or the name part of a qualified name (non-empty). */
static int is_label_value(const char *s, int allow_empty)
{
	size_t n = strlen(s);
	if (!n)
		return allow_empty;
	if (n > 63 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("-_.", s[i]))
			return 0;
	return 1;
}

static int is_qualified_name(const char *s)
{
	const char *slash = strchr(s, '/');
	if (!slash)
		return is_label_value(s, 0);
	char *prefix = xstrndup(s, (size_t)(slash - s));
	int ok = is_dns_subdomain(prefix) && !strchr(slash + 1, '/') && is_label_value(slash + 1, 0);
	free(prefix);
	return ok;
}

int kubernetes_is_dns_label(const char *s) { return is_dns_label(s); }
int kubernetes_is_dns_subdomain(const char *s) { return is_dns_subdomain(s); }
int kubernetes_is_label_value(const char *s) { return is_label_value(s, 1); }
int kubernetes_is_qualified_name(const char *s) { return is_qualified_name(s); }

static int fail(const struct aah_config *cfg, const struct ynode *n, const char *key,
		const char *what)
{
	return error("%s:%u:%u: 'kubernetes.%s' %s", cfg->path ? cfg->path : "config",
		     n ? n->line : 1, n ? n->col : 1, key, what);
}

static int check_scalar_list(const struct aah_config *cfg, const struct ynode *n, const char *key)
{
	if (n->kind != YNODE_SEQ)
		return fail(cfg, n, key, "must be a list of names");
	for (size_t i = 0; i < n->n; i++)
		if (n->children[i]->kind != YNODE_SCALAR || !is_dns_subdomain(n->children[i]->value))
			return fail(cfg, n->children[i], key,
				    "entries must be Secret names (DNS-1123 subdomains)");
	return 0;
}

static int check_node_selector(const struct aah_config *cfg, const struct ynode *n)
{
	if (n->kind != YNODE_MAP)
		return fail(cfg, n, "nodeSelector", "must be a mapping of label: value");
	for (size_t i = 0; i < n->n; i++) {
		const struct ynode *v = n->children[i];
		if (!is_qualified_name(n->keys[i]))
			return fail(cfg, v, "nodeSelector", "has a key that is not a valid label name");
		if (v->kind != YNODE_SCALAR || !is_label_value(v->value, 1))
			return fail(cfg, v, "nodeSelector", "has a value that is not a valid label value");
	}
	return 0;
}

static int check_tolerations(const struct aah_config *cfg, const struct ynode *n)
{
	static const char *const keys[] = { "key", "operator", "value", "effect",
					    "tolerationSeconds", NULL };
	static const char *const effects[] = { "NoSchedule", "PreferNoSchedule", "NoExecute", NULL };
	if (n->kind != YNODE_SEQ)
		return fail(cfg, n, "tolerations", "must be a list of tolerations");
	for (size_t i = 0; i < n->n; i++) {
		const struct ynode *t = n->children[i];
		if (t->kind != YNODE_MAP)
			return fail(cfg, t, "tolerations", "entries must be mappings");
		for (size_t k = 0; k < t->n; k++) {
			const char *const *p = keys;
			while (*p && strcmp(*p, t->keys[k]))
				p++;
			if (!*p || t->children[k]->kind != YNODE_SCALAR)
				return fail(cfg, t->children[k], "tolerations",
					    "entries take key, operator, value, effect and "
					    "tolerationSeconds (single values)");
		}
		const struct ynode *key = ynode_get(t, "key"), *op = ynode_get(t, "operator");
		const struct ynode *val = ynode_get(t, "value"), *eff = ynode_get(t, "effect");
		const struct ynode *sec = ynode_get(t, "tolerationSeconds");
		int exists = op && !strcmp(op->value, "Exists");
		if (op && !exists && strcmp(op->value, "Equal"))
			return fail(cfg, op, "tolerations", "operator must be Exists or Equal");
		if (key && *key->value && !is_qualified_name(key->value))
			return fail(cfg, key, "tolerations", "key must be a label name");
		if ((!key || !*key->value) && !exists)
			return fail(cfg, t, "tolerations", "without a key needs operator Exists");
		if (exists && val && *val->value)
			return fail(cfg, val, "tolerations", "with operator Exists takes no value");
		if (!exists && val && !is_label_value(val->value, 1))
			return fail(cfg, val, "tolerations", "value must be a label value");
		const char *const *e = effects;
		while (eff && *e && strcmp(*e, eff->value))
			e++;
		if (eff && !*e)
			return fail(cfg, eff, "tolerations",
				    "effect must be NoSchedule, PreferNoSchedule or NoExecute");
		long secs;
		if (sec && (util_parse_long(sec->value, 0, 1L << 40, &secs) < 0 || !eff ||
			    strcmp(eff->value, "NoExecute")))
			return fail(cfg, sec, "tolerations",
				    "tolerationSeconds must be a whole number and needs effect NoExecute");
	}
	return 0;
}

int kubernetes_config_load(const struct aah_config *cfg, struct kubernetes_config *kc)
{
	const struct ynode *sec = config_section(cfg, "kubernetes");
	memset(kc, 0, sizeof(*kc));
	if (config_parse_section(cfg, "kubernetes", sec, kubernetes_config_keys, kc) < 0)
		goto fail;
#define AT(key) ynode_get(sec, key)
	if (!is_dns_label(kc->namespace_)) {
		fail(cfg, AT("namespace"), "namespace", "must be a DNS-1123 label ([a-z0-9-], <= 63)");
		goto fail;
	}
	if (kc->image == NULL || !*kc->image || isspace((unsigned char)kc->image[0]) ||
	    isspace((unsigned char)kc->image[strlen(kc->image) - 1])) {
		fail(cfg, AT("image"), "image", "must be an image reference without blanks");
		goto fail;
	}
	if (!!kc->nfs_server != !!kc->nfs_path || (kc->nfs_server && kc->claim_name) ||
	    (!kc->nfs_server && !kc->claim_name)) {
		fail(cfg, sec, kc->claim_name ? "claimName" : "nfsServer",
		     "needs exactly one /userhome source: nfsServer with nfsPath, or claimName");
		goto fail;
	}
	if (kc->nfs_path && kc->nfs_path[0] != '/') {
		fail(cfg, AT("nfsPath"), "nfsPath", "must be an absolute path");
		goto fail;
	}
	if (kc->claim_name && !is_dns_subdomain(kc->claim_name)) {
		fail(cfg, AT("claimName"), "claimName", "must be a DNS-1123 subdomain");
		goto fail;
	}
	if (kc->mount_path[0] != '/') {
		fail(cfg, AT("mountPath"), "mountPath", "must be an absolute path");
		goto fail;
	}
	if (kc->priority_class_name && !is_dns_subdomain(kc->priority_class_name)) {
		fail(cfg, AT("priorityClassName"), "priorityClassName", "must be a DNS-1123 subdomain");
		goto fail;
	}
	if (kc->service_account_name && !is_dns_subdomain(kc->service_account_name)) {
		fail(cfg, AT("serviceAccountName"), "serviceAccountName",
		     "must be a DNS-1123 subdomain");
		goto fail;
	}
	/* the key table allows any uid; the Kubernetes API takes an int32 */
	if (kc->run_as_user > 2147483647 || kc->run_as_group > 2147483647 ||
	    kc->fs_group > 2147483647) {
		fail(cfg, sec, "runAsUser", "ids must be at most 2147483647");
		goto fail;
	}
	if ((kc->image_pull_secrets && check_scalar_list(cfg, kc->image_pull_secrets,
							  "imagePullSecrets") < 0) ||
	    (kc->node_selector && check_node_selector(cfg, kc->node_selector) < 0) ||
	    (kc->tolerations && check_tolerations(cfg, kc->tolerations) < 0) ||
	    kubernetes_pod_config_check(cfg, kc) < 0 || kubernetes_queue_config_check(cfg, kc) < 0)
		goto fail;
#undef AT
	return 0;
fail:
	kubernetes_config_release(kc);
	return -1;
}

void kubernetes_config_release(struct kubernetes_config *kc)
{
	config_release_section(kubernetes_config_keys, kc);
	memset(kc, 0, sizeof(*kc));
}
