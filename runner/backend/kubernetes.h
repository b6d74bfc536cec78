/* kubernetes.h: the Kubernetes documents of a trial (an Indexed Job and, for
 * multi-node trials, its headless Service) built as cJSON from the launch
 * contract and the `kubernetes:` config section, names that are always valid
 * DNS labels, YAML output, and reading a Job's status back. */
#ifndef AAH_K8S_SPEC_H
#define AAH_K8S_SPEC_H

#include <cjson/cJSON.h>

#include "runner/backend/backend.h" /* struct aah_job_status */
#include "runner/config/config.h"
#include "runner/backend/kubernetes_config.h" /* struct k8s_config */
#include "runner/launch.h"
#include "strbuf.h"

/* The experiment id `render` uses when no experiment exists. */
#define K8S_PLACEHOLDER_EXPERIMENT "rendered"

/* The Job (and Service) name of a trial attempt: "<name>-<id>-<trial>-<attempt>",
 * a DNS-1035 label (starts with a letter, [a-z0-9-], at most 56 chars) for
 * any experiment name and id, so "<job>-<index>" is a DNS-1123 label too.
 * The caller frees it. */
char *k8s_job_name(const char *experiment_name, const char *experiment_id, unsigned trial_seq,
		   unsigned attempt);
/* A label value (<= 63 chars of [A-Za-z0-9_.-], alphanumeric at both ends,
 * or empty) made from any string. The caller frees it. */
char *k8s_label_value(const char *s);
/* Host names of a trial's nodes: "<job>-<i>.<job>" with a Service (nodes > 1),
 * else the pod's own hostname "<job>-0". Fills hosts[0..nodes-1] (owned by
 * the caller). */
void k8s_trial_hosts(const char *job, unsigned nodes, char **hosts);

/* The documents of a trial attempt, in apply order (Service first), as a
 * JSON array. The rank-dependent parts of the contract (VC_TASK_INDEX,
 * RANK_ID, --rank, ...) come from the completion index through fieldRef and
 * $(VAR) expansion; every other value is literal ("$(" escaped as "$$(").
 * Fails when the contract has a rank-dependent value with no such form. */
int k8s_spec_trial(const struct aah_config *cfg, const struct k8s_config *kc,
		   const struct aah_launch *l, const char *job, cJSON **docs);

/* Documents as YAML ("---" between documents), in kubectl's layout; and as
 * one JSON value (a v1 List when there are several). */
void k8s_yaml_emit(struct strbuf *out, const cJSON *docs);
char *k8s_json_emit(const cJSON *docs);

/* What a Job's status says (a batch/v1 Job object as `kubectl get -o json`
 * returns it). Fills st->state and st->reason; *ready is the number of
 * pods ready or finished, *want the completions. */
void k8s_job_state(const cJSON *job, struct aah_job_status *st, long *ready, long *want);

#endif
