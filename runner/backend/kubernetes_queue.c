/* kubernetes_queue.c: trial Jobs on a shared GPU cluster go through its
 * batch queue. kubernetes.queue picks the queue system:
 *   kueue    the Job carries kueue.x-k8s.io/queue-name (a LocalQueue) and,
 *            from priorityClasses, kueue.x-k8s.io/priority-class; it is
 *            created suspended and Kueue unsuspends it once the queue
 *            admits the whole Job (all its pods' quota at once). The runner
 *            never unsuspends it.
 *   volcano  the pods name schedulerName volcano and the queue
 *            (scheduling.volcano.sh/queue-name); the Job's annotation
 *            scheduling.volcano.sh/group-min-member = nodes makes Volcano's
 *            PodGroup for the Job a gang: every pod is bound or none.
 *   none     as the default scheduler places pods; the runner frees a
 *            multi-pod trial whose pods stay partly running past
 *            gangTimeout (kubernetes.c).
 * The config checks, and the queue's parts of a trial's Job. */
#include "runner/backend/kubernetes.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const struct aah_config *cfg, const struct ynode *n, const char *key,
		const char *what)
{
	return error("%s:%u:%u: 'kubernetes.%s' %s", cfg->path ? cfg->path : "config",
		     n ? n->line : 1, n ? n->col : 1, key, what);
}

int kubernetes_queue_config_check(const struct aah_config *cfg, const struct kubernetes_config *kc)
{
	const struct ynode *sec = config_section(cfg, "kubernetes"), *pc = kc->priority_classes;
	if (!strcmp(kc->queue, "kueue") && !kc->queue_name)
		return fail(cfg, ynode_get(sec, "queue"), "queueName",
			    "is needed with queue: kueue (the LocalQueue of the namespace)");
	if (kc->queue_name && (!kubernetes_is_dns_subdomain(kc->queue_name) ||
			       !kubernetes_is_label_value(kc->queue_name)))
		return fail(cfg, ynode_get(sec, "queueName"), "queueName",
			    "must be a queue name ([a-z0-9.-], at most 63 characters)");
	if (kc->queue_name && !strcmp(kc->queue, "none"))
		return fail(cfg, ynode_get(sec, "queueName"), "queueName",
			    "needs kubernetes.queue kueue or volcano");
	if (!pc)
		return 0;
	if (pc->kind != YNODE_MAP)
		return fail(cfg, pc, "priorityClasses",
			    "must be a mapping of class name: lowest pool.priority it takes");
	for (size_t i = 0; i < pc->n; i++) {
		long v;
		if (!kubernetes_is_dns_subdomain(pc->keys[i]) || !kubernetes_is_label_value(pc->keys[i]))
			return fail(cfg, pc->children[i], "priorityClasses",
				    "has a name that is not a class name ([a-z0-9.-], at most 63)");
		if (pc->children[i]->kind != YNODE_SCALAR ||
		    util_parse_long(pc->children[i]->value, 1, 1000000, &v) < 0)
			return fail(cfg, pc->children[i], "priorityClasses",
				    "values are the lowest pool.priority of each class, 1 to 1000000");
	}
	return 0;
}

const char *kubernetes_queue_priority_class(const struct kubernetes_config *kc, long priority)
{
	const struct ynode *pc = kc->priority_classes;
	const char *best = NULL;
	long best_at = 0;
	for (size_t i = 0; pc && i < pc->n; i++) {
		long v = strtol(pc->children[i]->value, NULL, 10);
		if (v <= priority && v > best_at) {
			best = pc->keys[i];
			best_at = v;
		}
	}
	return best;
}

static cJSON *object_in(cJSON *o, const char *key)
{
	cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
	return a ? a : cJSON_AddObjectToObject(o, key);
}

void kubernetes_queue_add(const struct aah_config *cfg, const struct kubernetes_config *kc,
			  const struct aah_launch *l, cJSON *job)
{
	cJSON *meta = cJSON_GetObjectItemCaseSensitive(job, "metadata");
	cJSON *spec = cJSON_GetObjectItemCaseSensitive(job, "spec");
	cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(spec, "template");
	cJSON *ps = cJSON_GetObjectItemCaseSensitive(tmpl, "spec");
	const char *klass = kubernetes_queue_priority_class(kc, cfg->pool.priority);
	if (!strcmp(kc->queue, "kueue")) {
		cJSON *labels = object_in(meta, "labels");
		cJSON_AddStringToObject(labels, "kueue.x-k8s.io/queue-name", kc->queue_name);
		if (klass)
			cJSON_AddStringToObject(labels, "kueue.x-k8s.io/priority-class", klass);
		cJSON_AddBoolToObject(spec, "suspend", 1);
	} else if (!strcmp(kc->queue, "volcano")) {
		char n[16];
		snprintf(n, sizeof(n), "%u", l->nodes);
		cJSON_AddStringToObject(object_in(meta, "annotations"),
					"scheduling.volcano.sh/group-min-member", n);
		if (kc->queue_name)
			cJSON_AddStringToObject(object_in(object_in(tmpl, "metadata"), "annotations"),
						"scheduling.volcano.sh/queue-name", kc->queue_name);
		cJSON_AddStringToObject(ps, "schedulerName", "volcano");
		if (klass && !cJSON_GetObjectItemCaseSensitive(ps, "priorityClassName"))
			cJSON_AddStringToObject(ps, "priorityClassName", klass);
	}
}
