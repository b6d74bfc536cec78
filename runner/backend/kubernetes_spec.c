/* kubernetes_spec.c: the Kubernetes backend's pure parts: DNS-safe names,
 * the Job and Service documents of a trial. Nothing here runs kubectl, so
 * all of it is unit-tested. Apart: its config section (kubernetes_config.c),
 * the YAML and JSON output (kubernetes_yaml.c), a GPU pod's extras
 * (kubernetes_pod.c), the queues (kubernetes_queue.c), reading a Job back
 * (kubernetes_status.c). */
#include "runner/backend/kubernetes.h"
#include "runner/pool/pooltrial.h" /* POOLTRIAL_EXIT_RESIZE: an elastic trial's resize */
#include "util.h"

#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_alnum_lower(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* ---- names ----------------------------------------------------------------- */

/* [a-z0-9] runs joined by single '-', at most max chars, no '-' at the ends. */
static void dns_part(struct strbuf *sb, const char *s, size_t max)
{
	size_t start = sb->len;
	for (; *s && sb->len - start < max; s++) {
		int c = tolower((unsigned char)*s);
		if (is_alnum_lower(c))
			strbuf_addch(sb, (char)c);
		else if (sb->len > start && sb->buf[sb->len - 1] != '-')
			strbuf_addch(sb, '-');
	}
	while (sb->len > start && sb->buf[sb->len - 1] == '-')
		sb->buf[--sb->len] = '\0';
}

char *kubernetes_job_name(const char *experiment_name, const char *experiment_id,
			  unsigned trial_seq, unsigned attempt)
{
	struct strbuf sb = STRBUF_INIT;
	dns_part(&sb, experiment_name ? experiment_name : "", 16);
	if (!sb.len || !(sb.buf[0] >= 'a' && sb.buf[0] <= 'z')) {
		struct strbuf named = STRBUF_INIT;
		strbuf_addstr(&named, "aah");
		if (sb.len)
			strbuf_addf(&named, "-%.12s", sb.buf);
		while (named.buf[named.len - 1] == '-')
			named.buf[--named.len] = '\0';
		strbuf_release(&sb);
		sb = named;
	}
	strbuf_addch(&sb, '-');
	size_t before = sb.len;
	dns_part(&sb, experiment_id, 16);
	if (sb.len == before)
		strbuf_addstr(&sb, "x");
	strbuf_addf(&sb, "-%06u-%u", trial_seq % 1000000u, attempt % 1000u);
	return strbuf_detach(&sb, NULL);
}

char *kubernetes_label_value(const char *s)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, "");
	for (; *s && sb.len < 63; s++) {
		unsigned char c = (unsigned char)*s;
		strbuf_addch(&sb, isalnum(c) || c == '-' || c == '_' || c == '.' ? (char)c : '_');
	}
	while (sb.len && !isalnum((unsigned char)sb.buf[sb.len - 1]))
		sb.buf[--sb.len] = '\0';
	size_t skip = 0;
	while (skip < sb.len && !isalnum((unsigned char)sb.buf[skip]))
		skip++;
	char *out = xstrdup(sb.buf + skip);
	strbuf_release(&sb);
	return out;
}

void kubernetes_trial_hosts(const char *job, unsigned nodes, char **hosts)
{
	for (unsigned i = 0; i < nodes; i++)
		hosts[i] = nodes > 1 ? xstrfmt("%s-%u.%s", job, i, job) : xstrfmt("%s-0", job);
}

/* ---- $(VAR) forms ---------------------------------------------------------- */

char *kubernetes_escape_expansion(const char *s)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, "");
	for (; *s; s++) {
		if (*s == '$' && (s[1] == '(' || s[1] == '$'))
			strbuf_addch(&sb, '$');
		strbuf_addch(&sb, *s);
	}
	return strbuf_detach(&sb, NULL);
}

/* The kubelet's expansion (third_party/forked/golang/expansion): "$$" -> "$",
 * "$(NAME)" -> its value when defined, anything else verbatim. */
static char *expand(const char *s, const struct strvec *env)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, "");
	while (*s) {
		if (s[0] == '$' && s[1] == '$') {
			strbuf_addch(&sb, '$');
			s += 2;
		} else if (s[0] == '$' && s[1] == '(' && strchr(s + 2, ')')) {
			const char *end = strchr(s + 2, ')');
			char *name = xstrndup(s + 2, (size_t)(end - s - 2));
			const char *v = strvec_getenv(env, name);
			if (v)
				strbuf_addstr(&sb, v);
			else
				strbuf_add(&sb, s, (size_t)(end + 1 - s));
			free(name);
			s = end + 1;
		} else {
			strbuf_addch(&sb, *s++);
		}
	}
	return strbuf_detach(&sb, NULL);
}

#define COMPLETION_INDEX KUBERNETES_COMPLETION_INDEX

static int env_is(const char *entry, const char *name)
{
	size_t n = strlen(name);
	return !strncmp(entry, name, n) && entry[n] == '=';
}

/* Names the trial entrypoint sets per process in device mode. */
static int per_process_name(const char *entry)
{
	return env_is(entry, "RANK_ID") || env_is(entry, "DEVICE_ID") ||
	       env_is(entry, "CUDA_VISIBLE_DEVICES");
}

static void add_env_value(cJSON *env, const char *name, const char *value)
{
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "name", name);
	cJSON_AddStringToObject(e, "value", value);
	cJSON_AddItemToArray(env, e);
}

void kubernetes_env_field(cJSON *env, const char *name, const char *field_path)
{
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "name", name);
	cJSON *fr = cJSON_AddObjectToObject(cJSON_AddObjectToObject(e, "valueFrom"), "fieldRef");
	cJSON_AddStringToObject(fr, "apiVersion", "v1");
	cJSON_AddStringToObject(fr, "fieldPath", field_path);
	cJSON_AddItemToArray(env, e);
}

static void add_env_index(cJSON *env, const char *name)
{
	kubernetes_env_field(env, name, COMPLETION_INDEX);
}

void kubernetes_env_literal(cJSON *env, const char *name, const char *value)
{
	char *v = kubernetes_escape_expansion(value);
	add_env_value(env, name, v);
	free(v);
}

/* The env list of the pod template, from rank 0's contract. */
static cJSON *pod_env(const struct aah_launch *l, int resume_on_replace)
{
	const struct launch_rank *r0 = &l->ranks[0];
	cJSON *env = cJSON_CreateArray();
	for (size_t i = 0; i < r0->env.n; i++) {
		const char *entry = r0->env.v[i], *eq = strchr(entry, '=');
		char *name = xstrndup(entry, (size_t)(eq - entry));
		if (env_is(entry, "CUDA_VISIBLE_DEVICES") || (l->per_device && per_process_name(entry))) {
			/* the device plugin (and, per device, the entrypoint) sets these */
		} else if (env_is(entry, "VC_TASK_INDEX") || env_is(entry, "VK_TASK_INDEX") ||
			   env_is(entry, "RANK_ID") || env_is(entry, "TF_TASK_INDEX")) {
			add_env_index(env, name);
		} else if (env_is(entry, "MA_CURRENT_INSTANCE_NAME")) {
			char *job = kubernetes_escape_expansion(l->job_name);
			char *v = xstrfmt("%s-worker-$(VC_TASK_INDEX)", job);
			add_env_value(env, name, v);
			free(v);
			free(job);
		} else if (env_is(entry, "TF_CONFIG")) {
			char *v = kubernetes_escape_expansion(eq + 1);
			char *at = strstr(v, "\"index\":0}");
			struct strbuf sb = STRBUF_INIT;
			if (at) {
				strbuf_add(&sb, v, (size_t)(at - v));
				strbuf_addf(&sb, "\"index\":$(VC_TASK_INDEX)%s", at + 9);
			} else {
				strbuf_addstr(&sb, v);
			}
			add_env_value(env, name, sb.buf);
			strbuf_release(&sb);
			free(v);
		} else {
			char *v = kubernetes_escape_expansion(eq + 1);
			add_env_value(env, name, v);
			free(v);
		}
		free(name);
	}
	if (l->per_device) {
		char *n = xstrfmt("%u", l->gpus_per_node);
		add_env_value(env, "AAH_PROCS_PER_POD", n);
		free(n);
	}
	kubernetes_pod_env_add(env, resume_on_replace);
	return env;
}

static cJSON *pod_args(const struct aah_launch *l)
{
	const struct launch_rank *r0 = &l->ranks[0];
	cJSON *args = cJSON_CreateArray();
	for (size_t i = 0; i < r0->argv.n; i++) {
		const char *prev = i ? r0->argv.v[i - 1] : "";
		char *v;
		if (!strcmp(prev, "--rank"))
			v = xstrdup("$(RANK_ID)");
		else if (!strcmp(prev, "--task_index"))
			v = xstrdup("$(VC_TASK_INDEX)");
		else
			v = kubernetes_escape_expansion(r0->argv.v[i]);
		cJSON_AddItemToArray(args, cJSON_CreateString(v));
		free(v);
	}
	return args;
}

/* What one process of node `node` (device `dev`) gets: the pod's env and
 * args as the kubelet expands them, plus what the entrypoint sets in
 * device mode. */
static void simulate(const struct aah_launch *l, const cJSON *env, const cJSON *args,
		     unsigned node, unsigned dev, struct strvec *out_env, struct strvec *out_argv)
{
	const cJSON *e;
	char idx[16];
	snprintf(idx, sizeof(idx), "%u", node);
	cJSON_ArrayForEach(e, env) {
		const char *name = cJSON_GetObjectItem(e, "name")->valuestring;
		const cJSON *v = cJSON_GetObjectItem(e, "value");
		if (!v) {   /* the completion index, or a first pod's empty count */
			const cJSON *fr = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "valueFrom"), "fieldRef");
			const char *path = cJSON_GetObjectItem(fr, "fieldPath")->valuestring;
			strvec_setenv(out_env, name, strcmp(path, COMPLETION_INDEX) ? "" : idx);
			continue;
		}
		char *x = expand(v->valuestring, out_env);
		strvec_setenv(out_env, name, x);
		free(x);
	}
	const cJSON *a;
	int after_rank = 0;
	cJSON_ArrayForEach(a, args) {
		char *x = expand(a->valuestring, out_env);
		strvec_push(out_argv, x);
		free(x);
		/* device mode: the entrypoint replaces the value after --rank */
		if (after_rank && l->per_device) {
			free(out_argv->v[out_argv->n - 1]);
			out_argv->v[out_argv->n - 1] = xstrfmt("%u", node * l->gpus_per_node + dev);
		}
		after_rank = !strcmp(a->valuestring, "--rank");
	}
	if (l->per_device) {
		char buf[16];
		snprintf(buf, sizeof(buf), "%u", node * l->gpus_per_node + dev);
		strvec_setenv(out_env, "RANK_ID", buf);
		snprintf(buf, sizeof(buf), "%u", dev);
		strvec_setenv(out_env, "DEVICE_ID", buf);
		strvec_setenv(out_env, "CUDA_VISIBLE_DEVICES", buf);
	}
}

/* Every rank must get exactly its contract from the one pod template. */
static int check_template(const struct aah_launch *l, const cJSON *env, const cJSON *args)
{
	unsigned per_node = l->per_device ? l->gpus_per_node : 1;
	for (unsigned r = 0; r < l->nranks; r++) {
		const struct launch_rank *want = &l->ranks[r];
		struct strvec ge = STRVEC_INIT, ga = STRVEC_INIT;
		int bad = 0;
		simulate(l, env, args, r / per_node, r % per_node, &ge, &ga);
		for (size_t i = 0; i < want->env.n && !bad; i++) {
			const char *eq = strchr(want->env.v[i], '=');
			char *name = xstrndup(want->env.v[i], (size_t)(eq - want->env.v[i]));
			const char *got = strvec_getenv(&ge, name);
			if (strcmp(name, "CUDA_VISIBLE_DEVICES") && (!got || strcmp(got, eq + 1)))
				bad = error("kubernetes: rank %u would get %s=%s instead of '%s'", r, name,
					    got ? got : "(unset)", eq + 1);
			free(name);
		}
		if (!bad && ga.n != want->argv.n)
			bad = error("kubernetes: rank %u would get %zu arguments instead of %zu", r, ga.n,
				    want->argv.n);
		for (size_t i = 0; i < ga.n && !bad; i++)
			if (strcmp(ga.v[i], want->argv.v[i]))
				bad = error("kubernetes: rank %u would get argument '%s' instead of '%s'", r,
					    ga.v[i], want->argv.v[i]);
		strvec_clear(&ge);
		strvec_clear(&ga);
		if (bad)
			return -1;
	}
	return 0;
}

/* ---- documents ------------------------------------------------------------ */

static cJSON *labels(const struct aah_config *cfg, const struct aah_launch *l, const char *job,
		     const char *component)
{
	cJSON *o = cJSON_CreateObject();
	char *exp = kubernetes_label_value(l->experiment_id);
	struct strbuf name = STRBUF_INIT;
	dns_part(&name, cfg->experiment_name, 63);
	if (!name.len)
		strbuf_addstr(&name, "aah");
	char attempt[16];
	snprintf(attempt, sizeof(attempt), "%u", l->attempt);
	cJSON_AddStringToObject(o, "app.kubernetes.io/name", "aah");
	cJSON_AddStringToObject(o, "app.kubernetes.io/instance", job);
	cJSON_AddStringToObject(o, "app.kubernetes.io/component", component);
	cJSON_AddStringToObject(o, "app.kubernetes.io/part-of", name.buf);
	cJSON_AddStringToObject(o, "app.kubernetes.io/managed-by", "aah-runner");
	cJSON_AddStringToObject(o, "aah.io/experiment", exp);
	cJSON_AddStringToObject(o, "aah.io/trial", l->trial_id);
	cJSON_AddStringToObject(o, "aah.io/attempt", attempt);
	free(exp);
	strbuf_release(&name);
	return o;
}

/* Annotations carry what labels cannot: the name as written (made valid
 * UTF-8) and the trial directory. */
static cJSON *annotations(const struct aah_config *cfg, const struct aah_launch *l)
{
	cJSON *o = cJSON_CreateObject();
	char *name = xstrdup(cfg->experiment_name);
	for (unsigned char *p = (unsigned char *)name; *p; p++)
		if (*p < 0x20 || *p >= 0x7f)
			*p = '?';
	cJSON_AddStringToObject(o, "aah.io/experiment-name", name);
	cJSON_AddStringToObject(o, "aah.io/trial-dir", l->place_dir);   /* where its pods write */
	free(name);
	return o;
}

cJSON *kubernetes_spec_metadata(const struct aah_config *cfg, const struct kubernetes_config *kc,
				const struct aah_launch *l, const char *job, const char *component)
{
	cJSON *m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "name", job);
	cJSON_AddStringToObject(m, "namespace", kc->namespace_);
	cJSON_AddItemToObject(m, "labels", labels(cfg, l, job, component));
	cJSON_AddItemToObject(m, "annotations", annotations(cfg, l));
	return m;
}

static cJSON *service(const struct aah_config *cfg, const struct kubernetes_config *kc,
		      const struct aah_launch *l, const char *job)
{
	cJSON *s = cJSON_CreateObject();
	cJSON_AddStringToObject(s, "apiVersion", "v1");
	cJSON_AddStringToObject(s, "kind", "Service");
	cJSON_AddItemToObject(s, "metadata", kubernetes_spec_metadata(cfg, kc, l, job, "trial-hosts"));
	cJSON *spec = cJSON_AddObjectToObject(s, "spec");
	cJSON_AddStringToObject(spec, "clusterIP", "None");
	cJSON_AddBoolToObject(spec, "publishNotReadyAddresses", 1);
	cJSON_AddStringToObject(cJSON_AddObjectToObject(spec, "selector"),
				"batch.kubernetes.io/job-name", job);
	cJSON *port = cJSON_CreateObject();
	cJSON_AddStringToObject(port, "name", "rendezvous");
	cJSON_AddNumberToObject(port, "port", l->port);
	cJSON_AddNumberToObject(port, "targetPort", l->port);
	cJSON_AddStringToObject(port, "protocol", "TCP");
	cJSON *ports = cJSON_AddArrayToObject(spec, "ports");
	cJSON_AddItemToArray(ports, port);
	if (l->mpi) {
		port = cJSON_CreateObject();
		cJSON_AddStringToObject(port, "name", "ssh");
		cJSON_AddNumberToObject(port, "port", kc->ssh_port);
		cJSON_AddNumberToObject(port, "targetPort", kc->ssh_port);
		cJSON_AddStringToObject(port, "protocol", "TCP");
		cJSON_AddItemToArray(ports, port);
	}
	return s;
}

static cJSON *container(const struct kubernetes_config *kc, const struct aah_launch *l, cJSON *env,
			cJSON *args)
{
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "name", "trial");
	cJSON_AddStringToObject(c, "image", kc->image);
	cJSON_AddStringToObject(c, "imagePullPolicy", kc->image_pull_policy);
	cJSON_AddItemToObject(c, "args", args);
	cJSON_AddItemToObject(c, "env", env);
	cJSON *limits = cJSON_AddObjectToObject(cJSON_AddObjectToObject(c, "resources"), "limits");
	if (l->gpus_per_node)
		cJSON_AddNumberToObject(limits, "nvidia.com/gpu", l->gpus_per_node);
	if (kc->cpu)
		cJSON_AddStringToObject(limits, "cpu", kc->cpu);
	if (kc->memory)
		cJSON_AddStringToObject(limits, "memory", kc->memory);
	cJSON *vm = cJSON_CreateObject();
	cJSON_AddStringToObject(vm, "name", "userhome");
	cJSON_AddStringToObject(vm, "mountPath", kc->mount_path);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(c, "volumeMounts"), vm);
	cJSON *sc = cJSON_AddObjectToObject(c, "securityContext");
	cJSON_AddBoolToObject(sc, "allowPrivilegeEscalation", 0);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(cJSON_AddObjectToObject(sc, "capabilities"),
						    "drop"),
			     cJSON_CreateString("ALL"));
	return c;
}

static cJSON *pod_spec(const struct kubernetes_config *kc, const struct aah_launch *l,
		       const char *job, cJSON *env, cJSON *args)
{
	cJSON *ps = cJSON_CreateObject();
	cJSON_AddStringToObject(ps, "restartPolicy", "Never");
	if (l->nodes > 1)
		cJSON_AddStringToObject(ps, "subdomain", job);
	cJSON_AddBoolToObject(ps, "automountServiceAccountToken", 0);
	if (kc->service_account_name)
		cJSON_AddStringToObject(ps, "serviceAccountName", kc->service_account_name);
	if (kc->priority_class_name)
		cJSON_AddStringToObject(ps, "priorityClassName", kc->priority_class_name);
	if (kc->node_selector)
		cJSON_AddItemToObject(ps, "nodeSelector", ynode_to_json(kc->node_selector));
	if (kc->tolerations) {
		/* values are strings in the API even when YAML reads a number */
		cJSON *t = ynode_to_json(kc->tolerations), *it;
		cJSON_ArrayForEach(it, t) {
			cJSON *v = cJSON_GetObjectItem(it, "value");
			if (v && !cJSON_IsString(v)) {
				char *s = cJSON_PrintUnformatted(v);
				cJSON_ReplaceItemInObject(it, "value", cJSON_CreateString(s));
				cJSON_free(s);
			}
		}
		cJSON_AddItemToObject(ps, "tolerations", t);
	}
	if (kc->image_pull_secrets && kc->image_pull_secrets->n) {
		cJSON *a = cJSON_AddArrayToObject(ps, "imagePullSecrets");
		for (size_t i = 0; i < kc->image_pull_secrets->n; i++) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "name", kc->image_pull_secrets->children[i]->value);
			cJSON_AddItemToArray(a, o);
		}
	}
	cJSON *sc = cJSON_AddObjectToObject(ps, "securityContext");
	cJSON_AddBoolToObject(sc, "runAsNonRoot", 1);
	cJSON_AddNumberToObject(sc, "runAsUser", kc->run_as_user);
	cJSON_AddNumberToObject(sc, "runAsGroup", kc->run_as_group);
	cJSON_AddNumberToObject(sc, "fsGroup", kc->fs_group);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(ps, "containers"), container(kc, l, env, args));
	cJSON *vol = cJSON_CreateObject();
	cJSON_AddStringToObject(vol, "name", "userhome");
	if (kc->nfs_server) {
		cJSON *nfs = cJSON_AddObjectToObject(vol, "nfs");
		cJSON_AddStringToObject(nfs, "server", kc->nfs_server);
		cJSON_AddStringToObject(nfs, "path", kc->nfs_path);
	} else {
		cJSON_AddStringToObject(cJSON_AddObjectToObject(vol, "persistentVolumeClaim"),
					"claimName", kc->claim_name);
	}
	cJSON_AddItemToArray(cJSON_AddArrayToObject(ps, "volumes"), vol);
	cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(ps, "containers"), 0);
	kubernetes_pod_add(kc, l, ps, c0);
	if (l->mpi)
		kubernetes_mpi_pod_add(kc, l, job, ps, c0);
	return ps;
}

/* An onExitCodes rule of the trial container for codes (ascending, ended by -1). */
static cJSON *exit_rule(const char *action, const char *op, const int *codes)
{
	cJSON *rule = cJSON_CreateObject();
	cJSON_AddStringToObject(rule, "action", action);
	cJSON *on = cJSON_AddObjectToObject(rule, "onExitCodes");
	cJSON_AddStringToObject(on, "containerName", "trial");
	cJSON_AddStringToObject(on, "operator", op);
	cJSON *values = cJSON_AddArrayToObject(on, "values");
	for (; *codes >= 0; codes++)
		cJSON_AddItemToArray(values, cJSON_CreateNumber(*codes));
	return rule;
}

/* An elastic trial (a device pool's) stops to be resized with every rank
 * exiting POOLTRIAL_EXIT_RESIZE, one after the other. FailIndex ends only
 * that rank's index, so the Job controller leaves the other pods to exit
 * by themselves (their logs stay for the reap) and the Job fails once all
 * are done (FailedIndexes, maxFailedIndexes = completions). Any other exit
 * fails the Job at once (FailJob), its other pods stopped, as without a
 * pool: a rank that crashed leaves the others waiting in a collective. */
static void exit_rules(cJSON *rules)
{
	static const int resize[] = { POOLTRIAL_EXIT_RESIZE, -1 };
	static const int done[] = { 0, POOLTRIAL_EXIT_RESIZE, -1 };
	cJSON_AddItemToArray(rules, exit_rule("FailIndex", "In", resize));
	cJSON_AddItemToArray(rules, exit_rule("FailJob", "NotIn", done));
}

static cJSON *job_doc(const struct aah_config *cfg, const struct kubernetes_config *kc,
		      const struct aah_launch *l, const char *job, cJSON *env, cJSON *args)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "apiVersion", "batch/v1");
	cJSON_AddStringToObject(j, "kind", "Job");
	cJSON_AddItemToObject(j, "metadata", kubernetes_spec_metadata(cfg, kc, l, job, "trial"));
	cJSON *spec = cJSON_AddObjectToObject(j, "spec");
	cJSON_AddStringToObject(spec, "completionMode", "Indexed");
	cJSON_AddNumberToObject(spec, "completions", l->nodes);
	cJSON_AddNumberToObject(spec, "parallelism", l->nodes);
	cJSON_AddNumberToObject(spec, "backoffLimit", 0);
	cJSON_AddNumberToObject(spec, "backoffLimitPerIndex", 0); /* see kubernetes_pod_env_add */
	/* an elastic trial's resize ends every index by itself (exit_rules) */
	cJSON_AddNumberToObject(spec, "maxFailedIndexes", l->elastic ? l->nodes : 0);
	if (cfg->trial.timeout > 0)
		cJSON_AddNumberToObject(spec, "activeDeadlineSeconds", ceil(cfg->trial.timeout));
	cJSON_AddNumberToObject(spec, "ttlSecondsAfterFinished", ceil(kc->ttl_after_finished));
	cJSON_AddStringToObject(spec, "podReplacementPolicy", "Failed");
	cJSON *rule = cJSON_CreateObject();
	cJSON_AddStringToObject(rule, "action", "Ignore");
	cJSON *cond = cJSON_CreateObject();
	cJSON_AddStringToObject(cond, "type", "DisruptionTarget");
	cJSON_AddStringToObject(cond, "status", "True");
	cJSON_AddItemToArray(cJSON_AddArrayToObject(rule, "onPodConditions"), cond);
	cJSON *rules = cJSON_AddArrayToObject(cJSON_AddObjectToObject(spec, "podFailurePolicy"), "rules");
	cJSON_AddItemToArray(rules, rule);
	if (l->elastic)
		exit_rules(rules);
	cJSON *tmpl = cJSON_AddObjectToObject(spec, "template");
	cJSON *tm = cJSON_AddObjectToObject(tmpl, "metadata");
	cJSON_AddItemToObject(tm, "labels", labels(cfg, l, job, "trial"));
	cJSON_AddItemToObject(tmpl, "spec", pod_spec(kc, l, job, env, args));
	kubernetes_queue_add(cfg, kc, l, j);
	return j;
}

/* The MPI form: one pod env for every pod (the contract's env is the same
 * for every rank: mpirun forwards it with -x), the args are the contract's
 * mpirun; every name and argument must come out of the kubelet as the
 * contract has it. */
static int check_mpi_template(const struct aah_launch *l, const cJSON *env, const cJSON *args)
{
	struct strvec ge = STRVEC_INIT, ga = STRVEC_INIT;
	int bad = 0;
	simulate(l, env, args, 0, 0, &ge, &ga);
	const struct strvec *want = &l->ranks[0].env;
	for (size_t i = 0; i < want->n && !bad; i++) {
		const char *eq = strchr(want->v[i], '=');
		char *name = xstrndup(want->v[i], (size_t)(eq - want->v[i]));
		const char *got = strvec_getenv(&ge, name);
		if (strcmp(name, "CUDA_VISIBLE_DEVICES") && (!got || strcmp(got, eq + 1)))
			bad = error("kubernetes: the MPI pods would get %s=%s instead of '%s'", name,
				    got ? got : "(unset)", eq + 1);
		free(name);
	}
	/* the mpirun argv, less the forwarding of the launcher's devices */
	size_t k = 0;
	for (size_t i = 0; i < l->mpirun_argv.n && !bad; i++) {
		if (!strcmp(l->mpirun_argv.v[i], "-x") && i + 1 < l->mpirun_argv.n &&
		    !strcmp(l->mpirun_argv.v[i + 1], "CUDA_VISIBLE_DEVICES")) {
			i++;
			continue;
		}
		if (k >= ga.n || strcmp(ga.v[k], l->mpirun_argv.v[i]))
			bad = error("kubernetes: the MPI launcher would run '%s' instead of '%s'",
				    k < ga.n ? ga.v[k] : "(nothing)", l->mpirun_argv.v[i]);
		k++;
	}
	if (!bad && k != ga.n)
		bad = error("kubernetes: the MPI launcher would get %zu arguments instead of %zu", ga.n, k);
	strvec_clear(&ge);
	strvec_clear(&ga);
	return bad ? -1 : 0;
}

int kubernetes_spec_trial(const struct aah_config *cfg, const struct kubernetes_config *kc,
			  const struct aah_launch *l, const char *job, cJSON **docs)
{
	*docs = NULL;
	/* An mpi contract leaves the rank to mpirun: one process per pod
	 * (config_validate refuses processMode device with it). */
	if (l->mpi && l->per_device)
		BUG("kubernetes: trial.launcher mpi with processMode device was not refused");
	cJSON *env = pod_env(l, cfg->trial.resume_on_retry);
	cJSON *args = l->mpi ? kubernetes_mpi_args(l) : pod_args(l);
	if ((l->mpi ? check_mpi_template(l, env, args) : check_template(l, env, args)) < 0) {
		cJSON_Delete(env);
		cJSON_Delete(args);
		return -1;
	}
	cJSON *secret = NULL;
	if (l->mpi && !(secret = kubernetes_mpi_secret(cfg, kc, l, job))) {
		cJSON_Delete(env);
		cJSON_Delete(args);
		return -1;
	}
	*docs = cJSON_CreateArray();
	if (secret)
		cJSON_AddItemToArray(*docs, secret);
	if (l->nodes > 1)
		cJSON_AddItemToArray(*docs, service(cfg, kc, l, job));
	cJSON_AddItemToArray(*docs, job_doc(cfg, kc, l, job, env, args));
	return 0;
}
