/* kubernetes.h: the Kubernetes backend: its `kubernetes:` config section,
 * the documents of a trial (an Indexed Job and, for multi-node trials, its
 * headless Service; for trial.launcher: mpi first a Secret of ssh keys,
 * kubernetes_mpi.c) built as cJSON from the launch contract, names that are
 * always valid DNS labels, YAML output, and reading a Job's status back
 * (kubernetes_spec.c, kubernetes_yaml.c); trials run as Jobs through
 * kubectl (kubernetes.c, backend_kubernetes; one call: kubernetes_kubectl.c). */
#ifndef AAH_KUBERNETES_H
#define AAH_KUBERNETES_H

#include <cjson/cJSON.h>

#include "runner/backend/backend.h" /* struct aah_job_status */
#include "runner/config/config.h"
#include "runner/launch.h"
#include "strbuf.h"

/* The `kubernetes:` section of config.yml (docs/config.md, kubernetes.*). */
struct kubernetes_config {
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
	char *shm_size;            /* emptyDir (Memory) at /dev/shm; "0" = none */
	const struct ynode *volumes;            /* list of dataset volumes */
	char *gpu_product;         /* nodeSelector nvidia.com/gpu.product, or NULL */
	char *gpu_taint;           /* taint key GPU pods tolerate; "" = none */
	char *queue;               /* none | kueue | volcano */
	char *queue_name;          /* LocalQueue / Volcano queue, or NULL */
	const struct ynode *priority_classes;   /* map class -> lowest pool.priority */
	double gang_timeout;       /* seconds a multi-pod trial may stay partly running */
	double ttl_after_finished; /* seconds */
	double pending_timeout;    /* seconds a Job's pods may stay unready; 0 = forever */
	double poll_interval;      /* seconds between `kubectl get jobs` */
	double kubectl_timeout;    /* seconds per kubectl call */
	long kubectl_retries;      /* extra tries of a transient kubectl failure */
	char *submit;              /* create | apply */
	double result_wait;        /* seconds a Complete Job may wait for result.json to show */
	long ssh_port;             /* trial.launcher: mpi: the port of every pod's sshd */
};

extern const struct cfg_key kubernetes_config_keys[];

/* The config's `kubernetes:` section (absent keys take their defaults from
 * the key table), then the checks that span keys (exactly one /userhome
 * source, label and toleration syntax).
 * Errors name file:line:col. The caller releases kc with kubernetes_config_release. */
int kubernetes_config_load(const struct aah_config *cfg, struct kubernetes_config *kc);
void kubernetes_config_release(struct kubernetes_config *kc);

/* GPU training pods (kubernetes_pod.c): the checks of shmSize, volumes,
 * gpuProduct and gpuTaint (errors name file:line:col), and their parts of
 * a pod spec: /dev/shm, the dataset volumes and their mounts in
 * `container`, the GPU node selector and toleration for pods with GPUs. */
int kubernetes_pod_config_check(const struct aah_config *cfg, const struct kubernetes_config *kc);
void kubernetes_pod_add(const struct kubernetes_config *kc, const struct aah_launch *l,
			cJSON *pod_spec, cJSON *container);
/* The batch queue (kubernetes_queue.c): its config checks; the class of
 * priorityClasses a pool priority takes (NULL: none); its labels,
 * annotations, schedulerName and suspend added to a trial's Job. */
int kubernetes_queue_config_check(const struct aah_config *cfg, const struct kubernetes_config *kc);
const char *kubernetes_queue_priority_class(const struct kubernetes_config *kc, long priority);
void kubernetes_queue_add(const struct aah_config *cfg, const struct kubernetes_config *kc,
			  const struct aah_launch *l, cJSON *job);
/* Adds AAH_INDEX_PREEMPTIONS (fieldRef of the Job controller's count of
 * the pod's index's ignored failures) and, with trial.resumeOnRetry,
 * AAH_RESUME_ON_REPLACE=1 to a pod's env: the trial entrypoint resumes a
 * replacement from the checkpoint. */
void kubernetes_pod_env_add(cJSON *env, int resume_on_replace);
/* A resource quantity ("8Gi", "512M", "0.5Gi", "1000") in bytes; -1 if it
 * is not one. */
int kubernetes_quantity_bytes(const char *s, double *bytes);
/* The API server's name rules (VALIDATION.md N1, N5, N7, N8). */
int kubernetes_is_dns_label(const char *s);
int kubernetes_is_dns_subdomain(const char *s);
int kubernetes_is_label_value(const char *s);   /* empty allowed */
int kubernetes_is_qualified_name(const char *s);

/* The experiment id `render` uses when no experiment exists. */
#define KUBERNETES_PLACEHOLDER_EXPERIMENT "rendered"

/* The Job (and Service) name of a trial attempt: "<name>-<id>-<trial>-<attempt>",
 * a DNS-1035 label (starts with a letter, [a-z0-9-], at most 56 chars) for
 * any experiment name and id, so "<job>-<index>" is a DNS-1123 label too.
 * The caller frees it. */
char *kubernetes_job_name(const char *experiment_name, const char *experiment_id,
			  unsigned trial_seq, unsigned attempt);
/* A label value (<= 63 chars of [A-Za-z0-9_.-], alphanumeric at both ends,
 * or empty) made from any string. The caller frees it. */
char *kubernetes_label_value(const char *s);
/* Host names of a trial's nodes: "<job>-<i>.<job>" with a Service (nodes > 1),
 * else the pod's own hostname "<job>-0". Fills hosts[0..nodes-1] (owned by
 * the caller). */
void kubernetes_trial_hosts(const char *job, unsigned nodes, char **hosts);

/* The documents of a trial attempt, in apply order (Service first), as a
 * JSON array. The rank-dependent parts of the contract (VC_TASK_INDEX,
 * RANK_ID, --rank, ...) come from the completion index through fieldRef and
 * $(VAR) expansion; every other value is literal ("$(" escaped as "$$(").
 * Fails when the contract has a rank-dependent value with no such form. */
int kubernetes_spec_trial(const struct aah_config *cfg, const struct kubernetes_config *kc,
			  const struct aah_launch *l, const char *job, cJSON **docs);

/* trial.launcher: mpi (kubernetes_mpi.c). Every pod of the trial's Indexed
 * Job runs sshd (on its pod IP, kubernetes.sshPort); index 0 is also the
 * launcher: it waits until every pod's sshd answers over ssh, writes the
 * contract's hostfile (ModelArts host names, which the ssh config maps to
 * the pods' DNS names) and runs the contract's mpirun. The keys come from
 * a Secret "<job>-ssh" made anew for every rendering.
 *   kubernetes_mpi_args: the pod args, the contract's mpirun argv.
 *   kubernetes_mpi_secret: the Secret (fresh key pairs; NULL on error).
 *   kubernetes_mpi_pod_add: its volume, mount and env in the pod spec.
 *   kubernetes_mpi_scrub: overwrites the Secret's data in docs before they
 *   are freed (the private key stays only as long as it is needed).
 *   kubernetes_mpi_secret_name: "<job>-ssh"; the caller frees it. */
cJSON *kubernetes_mpi_args(const struct aah_launch *l);
cJSON *kubernetes_mpi_secret(const struct aah_config *cfg, const struct kubernetes_config *kc,
			     const struct aah_launch *l, const char *job);
void kubernetes_mpi_pod_add(const struct kubernetes_config *kc, const struct aah_launch *l,
			    const char *job, cJSON *pod_spec, cJSON *container);
void kubernetes_mpi_scrub(cJSON *docs);
char *kubernetes_mpi_secret_name(const char *job);
#define KUBERNETES_MPI_SSH_DIR "/etc/aah-mpi"

/* Parts of the documents kubernetes_spec.c builds that the MPI form shares:
 * the metadata of an object of the trial (labels with the component, the
 * annotations), an env entry with a literal value (escaped for the
 * kubelet's $(VAR) expansion) or from a fieldRef. */
cJSON *kubernetes_spec_metadata(const struct aah_config *cfg, const struct kubernetes_config *kc,
				const struct aah_launch *l, const char *name, const char *component);
void kubernetes_env_literal(cJSON *env, const char *name, const char *value);
/* A literal for the kubelet: "$(" and "$$" would be expanded, so the '$'
 * before '(' and '$' is doubled. The caller frees it. */
char *kubernetes_escape_expansion(const char *s);
void kubernetes_env_field(cJSON *env, const char *name, const char *field_path);
/* The fieldPath of a pod's completion index. */
#define KUBERNETES_COMPLETION_INDEX "metadata.annotations['batch.kubernetes.io/job-completion-index']"

/* Documents as YAML ("---" between documents), in kubectl's layout; and as
 * one JSON value (a v1 List when there are several). */
void kubernetes_yaml_emit(struct strbuf *out, const cJSON *docs);
char *kubernetes_json_emit(const cJSON *docs);

/* What a Job's status says (a batch/v1 Job object as `kubectl get -o json`
 * returns it). Fills st->state and st->reason; *ready is the number of
 * pods ready or finished, *want the completions. */
void kubernetes_job_state(const cJSON *job, struct aah_job_status *st, long *ready, long *want);
/* spec.suspend: a queue (Kueue) has not admitted the Job yet. */
int kubernetes_job_suspended(const cJSON *job);
/* A pod's condition DisruptionTarget (status True: preempted, evicted, its
 * node drained), or NULL. */
const cJSON *kubernetes_pod_disruption(const cJSON *pod);
/* Did a Job fail because the cluster took one of its pods away? In its
 * `kubectl get pods -o json` list a pod has the condition DisruptionTarget
 * (preempted, evicted, its node drained), some other rank exited
 * LAUNCH_EXIT_PEER_LOST, and none failed by itself (other than stopped
 * with SIGTERM or SIGKILL): 1, and "pod <name> was disrupted (<reason>)"
 * in why. Else 0. */
int kubernetes_pod_disrupted(const cJSON *pods, char *why, size_t n);

/* kubernetes_kubectl.c: one kubectl call with the config's global flags
 * (kubeconfig, context, namespace, request timeout); stdout into *out (may
 * be NULL). Transient failures are tried again `retries` more times with a
 * growing pause; a refusal the API server would repeat is not. Errors say
 * what failed and what to do. */
enum kubectl_result { KUBECTL_OK = 0, KUBECTL_TRANSIENT = -1, KUBECTL_PERMANENT = -2,
		      KUBECTL_EXISTS = -3 };
int kubernetes_kubectl(const struct kubernetes_config *kc, const char *const *args,
		       const char *input, struct strbuf *out, long retries);

/* kubernetes_quota.c: the GPUs the namespace's quotas allow (the smallest
 * hard requests.nvidia.com/gpu), from `kubectl get resourcequota -o json`. */
int kubernetes_quota_gpus(const char *json, const char *ns, unsigned *devices);

extern const struct aah_backend backend_kubernetes;

#endif
