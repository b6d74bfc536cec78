/* kubernetes_config.h: the `kubernetes:` section of config.yml (docs/config.md,
 * kubernetes.*), parsed with its own key table. */
#ifndef AAH_K8S_CONFIG_H
#define AAH_K8S_CONFIG_H

#include "runner/config/config.h"

/* The `kubernetes:` section of config.yml (docs/config.md, kubernetes.*). */
struct k8s_config {
	char *namespace_;          /* metadata.namespace and kubectl --namespace */
	char *context;             /* kubectl --context, or NULL */
	char *kubeconfig;          /* kubectl --kubeconfig, or NULL ($KUBECONFIG is inherited) */
	char *kubectl;             /* the kubectl program */
	char *image;
	char *image_pull_policy;   /* Always | IfNotPresent | Never */
	const struct ynode *image_pull_secrets; /* list of secret names */
	const struct ynode *node_selector;      /* map label -> value */
	const struct ynode *tolerations;        /* list of toleration maps */
	char *priority_class_name;
	char *service_account_name;
	char *nfs_server, *nfs_path; /* /userhome from NFS ... */
	char *claim_name;          /* ... or from a PersistentVolumeClaim */
	char *mount_path;          /* where /userhome is mounted in the pods */
	long run_as_user, run_as_group, fs_group;
	char *cpu, *memory;        /* resources.limits, or NULL */
	double ttl_after_finished; /* seconds */
	double pending_timeout;    /* seconds a Job's pods may stay unready; 0 = forever */
	double poll_interval;      /* seconds between `kubectl get jobs` */
	double kubectl_timeout;    /* seconds per kubectl call */
	long kubectl_retries;      /* extra tries of a transient kubectl failure */
	char *submit;              /* create | apply */
	double result_wait;        /* seconds a Complete Job may wait for result.json to show */
};

extern const struct cfg_key k8s_config_keys[];

/* Defaults, then the config's `kubernetes:` section, then the checks that
 * span keys (exactly one /userhome source, label and toleration syntax).
 * Errors name file:line:col. The caller releases kc with k8s_config_release. */
int k8s_config_load(const struct aah_config *cfg, struct k8s_config *kc);
void k8s_config_release(struct k8s_config *kc);

#endif
