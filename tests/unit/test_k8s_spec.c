/* Unit tests for runner/backend/kubernetes_spec.c and kubernetes_yaml.c: names valid for
 * any input, Job status read from the captured kubectl answers
 * (tests/fixtures/k8s/kubectl/, no API server), the template self-check
 * refusing a contract it cannot express, YAML quoting, and the config
 * section's defaults and errors. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "fileio.h"
#include "jsonfile.h"
#include "runner/backend/backend.h" /* backend_config_load */
#include "runner/backend/kubernetes.h"
#include "util.h"

static char tmpdir[64];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/aah-k8s-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	util_set_quiet(1);
}

static void teardown(void)
{
	fileio_remove_tree(tmpdir);
}

TestSuite(k8s, .init = setup, .fini = teardown);

static int dns1035(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > 63 || !islower((unsigned char)s[0]) || s[n - 1] == '-')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && s[i] != '-')
			return 0;
	return 1;
}

Test(k8s, job_names_are_dns_labels_for_any_input)
{
	const char *names[] = { "", "AIPerf #1", "123", "---", "\xc3\xa4\xc3\xb6 x", "a.b_c",
				"$(x)", "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz" };
	const char *ids[] = { "k3x9q2ab", "", "UPPER", "0123456789abcdefghijklmnop", "-" };
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
		for (size_t k = 0; k < sizeof(ids) / sizeof(*ids); k++) {
			char *j = kubernetes_job_name(names[i], ids[k], 999999, 999);
			cr_assert(dns1035(j), "'%s' from ('%s', '%s')", j, names[i], ids[k]);
			/* N3: "<job>-<index>" stays a DNS-1123 label up to 1000 nodes */
			cr_assert_leq(strlen(j) + 4, 63, "'%s' too long", j);
			free(j);
		}
	}
	char *j = kubernetes_job_name("AIPerf ImageNet", "k3x9q2ab", 12, 2);
	cr_assert_str_eq(j, "aiperf-imagenet-k3x9q2ab-000012-2");
	free(j);
	j = kubernetes_job_name("42", "k3x9q2ab", 1, 1);
	cr_assert_str_eq(j, "aah-42-k3x9q2ab-000001-1");
	free(j);
}

Test(k8s, label_values_are_valid)
{
	const char *in[] = { "ok", "_lead", "trail.", "a/b:c", "", "\xff\xfe", "x" };
	const char *want[] = { "ok", "lead", "trail", "a_b_c", "", "", "x" };
	for (size_t i = 0; i < sizeof(in) / sizeof(*in); i++) {
		char *v = kubernetes_label_value(in[i]);
		cr_assert_str_eq(v, want[i], "'%s' -> '%s'", in[i], v);
		free(v);
	}
	char long_in[200];
	memset(long_in, 'a', sizeof(long_in) - 1);
	long_in[sizeof(long_in) - 1] = '\0';
	char *v = kubernetes_label_value(long_in);
	cr_assert_eq(strlen(v), 63);
	free(v);
}

Test(k8s, hosts_follow_the_pod_hostname_and_subdomain)
{
	char *h[3];
	kubernetes_trial_hosts("j", 3, h);
	cr_assert_str_eq(h[0], "j-0.j");
	cr_assert_str_eq(h[2], "j-2.j");
	for (int i = 0; i < 3; i++)
		free(h[i]);
	kubernetes_trial_hosts("j", 1, h);
	cr_assert_str_eq(h[0], "j-0");
	free(h[0]);
}

static void state_of(const char *capture, struct aah_job_status *st, long *ready, long *want)
{
	char *path = xstrfmt("tests/fixtures/k8s/kubectl/%s/stdout.json", capture);
	cJSON *doc;
	cr_assert_eq(jsonfile_read(path, &doc), 0, "%s", path);
	memset(st, 0, sizeof(*st));
	kubernetes_job_state(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "items"), 0), st, ready,
			     want);
	cJSON_Delete(doc);
	free(path);
}

Test(k8s, job_state_from_captured_kubectl_answers)
{
	static const struct {
		const char *capture;
		enum aah_job_state state;
		const char *reason;
		long ready;
	} cases[] = {
		{ "jobs-pending", AAH_JOB_PENDING, "", 0 },
		{ "jobs-running", AAH_JOB_RUNNING, "", 2 },
		{ "jobs-complete", AAH_JOB_SUCCEEDED, "", 2 },
		{ "jobs-failed-deadline", AAH_JOB_TIMEOUT,
		  "Job passed its activeDeadlineSeconds (DeadlineExceeded): Job was active longer than "
		  "specified deadline", 0 },
		{ "jobs-failed-backoff", AAH_JOB_FAILED,
		  "Job failed: a pod failed (BackoffLimitExceeded): Job has reached the specified "
		  "backoff limit", 0 },
		{ "jobs-failed-podfailurepolicy", AAH_JOB_FAILED,
		  "Job failed by its podFailurePolicy (PodFailurePolicy): Container trial", 0 },
		{ "jobs-deleting", AAH_JOB_CANCELED, "the Job is being deleted", 2 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct aah_job_status st;
		long ready, want;
		state_of(cases[i].capture, &st, &ready, &want);
		cr_assert_eq(st.state, cases[i].state, "%s: %s", cases[i].capture,
			     aah_job_state_name(st.state));
		cr_assert(!strncmp(st.reason, cases[i].reason, strlen(cases[i].reason)), "%s: '%s'",
			  cases[i].capture, st.reason);
		cr_assert_eq(ready, cases[i].ready, "%s", cases[i].capture);
		cr_assert_eq(want, 2);
	}
}

Test(k8s, job_state_without_ready_counts_active_pods)
{
	cJSON *doc;
	cr_assert_eq(jsonfile_read("tests/fixtures/k8s/kubectl/jobs-running/stdout.json", &doc), 0);
	cJSON *job = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "items"), 0);
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(job, "status"), "ready");
	struct aah_job_status st;
	long ready, want;
	kubernetes_job_state(job, &st, &ready, &want);
	cr_assert_eq(st.state, AAH_JOB_RUNNING);
	cr_assert_eq(ready, 2);
	cJSON_Delete(doc);
}

static void load(struct aah_config *cfg, const char *text)
{
	char *p = xstrfmt("%s/config.yml", tmpdir);
	cr_assert_eq(fileio_write_atomic(p, text, strlen(text)), 0);
	cr_assert_eq(backend_config_load(p, cfg), 0, "%s", util_last_error());
	free(p);
}

#define BASE "experimentName: t\ntrainingServicePlatform: kubernetes\n" \
	     "trial:\n  command: aah-trial\n  nodes: 2\n  gpuNum: 2\n"

Test(k8s, config_defaults_and_errors)
{
	struct aah_config cfg;
	struct kubernetes_config kc;
	load(&cfg, BASE "kubernetes:\n  claimName: home\n");
	cr_assert_eq(kubernetes_config_load(&cfg, &kc), 0, "%s", util_last_error());
	cr_assert_str_eq(kc.namespace_, "aah");
	cr_assert_str_eq(kc.mount_path, "/userhome");
	cr_assert_str_eq(kc.submit, "create");
	cr_assert_eq(kc.run_as_user, 1000);
	cr_assert_float_eq(kc.ttl_after_finished, 3600, 1e-9);
	kubernetes_config_release(&kc);
	config_release(&cfg);

	static const struct {
		const char *section, *msg;
	} bad[] = {
		{ "  claimName: home\n  namespace: Team\n", "'kubernetes.namespace' must be a DNS-1123" },
		{ "  nfsServer: n\n", "exactly one /userhome source" },
		{ "  nfsServer: n\n  nfsPath: rel\n", "'kubernetes.nfsPath' must be an absolute path" },
		{ "  claimName: Home_1\n", "'kubernetes.claimName' must be a DNS-1123 subdomain" },
		{ "  claimName: h\n  mountPath: home\n", "'kubernetes.mountPath' must be an absolute" },
		{ "  claimName: h\n  runAsUser: 3000000000\n", "ids must be at most 2147483647" },
		{ "  claimName: h\n  nodeSelector:\n    a/b/c: x\n", "not a valid label name" },
		{ "  claimName: h\n  nodeSelector:\n    zone: a b\n", "not a valid label value" },
		{ "  claimName: h\n  imagePullSecrets: cred\n", "must be a list of names" },
		{ "  claimName: h\n  tolerations:\n  - operator: Equal\n", "without a key needs operator Exists" },
		{ "  claimName: h\n  tolerations:\n  - key: a\n    effect: Never\n", "effect must be" },
		{ "  claimName: h\n  tolerations:\n  - key: a\n    tolerationSeconds: 5\n",
		  "needs effect NoExecute" },
		{ "  claimName: h\n  image: \" x\"\n", "must be an image reference without blanks" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		char *text = xstrfmt(BASE "kubernetes:\n%s", bad[i].section);
		load(&cfg, text);
		cr_assert_eq(kubernetes_config_load(&cfg, &kc), -1, "accepted: %s", bad[i].section);
		cr_assert(strstr(util_last_error(), bad[i].msg), "'%s' lacks '%s'", util_last_error(),
			  bad[i].msg);
		cr_assert(strstr(util_last_error(), "config.yml:"), "no file:line in '%s'",
			  util_last_error());
		config_release(&cfg);
		free(text);
	}
}

Test(k8s, quantities_in_bytes)
{
	static const struct {
		const char *s;
		double bytes;
	} ok[] = { { "0", 0 }, { "8Gi", 8589934592.0 }, { "512Mi", 536870912.0 }, { "1.5Gi", 1610612736.0 },
		   { "64G", 64e9 }, { "1000", 1000 }, { "2k", 2000 } };
	for (size_t i = 0; i < sizeof(ok) / sizeof(*ok); i++) {
		double b = -1;
		cr_assert_eq(kubernetes_quantity_bytes(ok[i].s, &b), 0, "%s", ok[i].s);
		cr_assert_float_eq(b, ok[i].bytes, 1e-6, "%s: %g", ok[i].s, b);
	}
	const char *bad[] = { "", "Gi", "8 Gi", "8gi", "-1", "1.", ".5Gi", "8GiB" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		double b;
		cr_assert_eq(kubernetes_quantity_bytes(bad[i], &b), -1, "accepted '%s'", bad[i]);
	}
}

Test(k8s, priority_class_is_the_highest_the_pool_priority_reaches)
{
	struct aah_config cfg;
	struct kubernetes_config kc;
	load(&cfg, BASE "kubernetes:\n  claimName: home\n  queue: kueue\n  queueName: q\n"
			"  priorityClasses: {low: 1, normal: 5000, high: 9000}\n");
	cr_assert_eq(kubernetes_config_load(&cfg, &kc), 0, "%s", util_last_error());
	static const struct {
		long priority;
		const char *klass;
	} cases[] = { { 1, "low" }, { 4999, "low" }, { 5000, "normal" }, { 8999, "normal" },
		      { 9000, "high" }, { 1000000, "high" } };
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++)
		cr_assert_str_eq(kubernetes_queue_priority_class(&kc, cases[i].priority), cases[i].klass,
				 "priority %ld", cases[i].priority);
	kubernetes_config_release(&kc);
	config_release(&cfg);
	/* No classes: no class. */
	load(&cfg, BASE "kubernetes:\n  claimName: home\n");
	cr_assert_eq(kubernetes_config_load(&cfg, &kc), 0, "%s", util_last_error());
	cr_assert_null(kubernetes_queue_priority_class(&kc, 5000));
	cr_assert_str_eq(kc.queue, "none");
	cr_assert_str_eq(kc.shm_size, "8Gi");
	cr_assert_str_eq(kc.gpu_taint, "nvidia.com/gpu");
	cr_assert_float_eq(kc.gang_timeout, 600, 1e-9);
	kubernetes_config_release(&kc);
	config_release(&cfg);
}

Test(k8s, a_suspended_job_waits_for_admission)
{
	struct aah_job_status st;
	long ready, want;
	state_of("jobs-suspended", &st, &ready, &want);
	cr_assert_eq(st.state, AAH_JOB_PENDING);
	cr_assert_str_eq(st.reason, "waiting for admission: the Job is suspended until its queue "
				    "(team-a) admits it");
	cr_assert_eq(ready, 0);
	/* Admitted (suspend false): pending like any Job, no reason. */
	cJSON *doc;
	cr_assert_eq(jsonfile_read("tests/fixtures/k8s/kubectl/jobs-suspended/stdout.json", &doc), 0);
	cJSON *job = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "items"), 0);
	cr_assert(kubernetes_job_suspended(job));
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(job, "spec"), "suspend", cJSON_CreateFalse());
	cJSON_DeleteItemFromObject(job, "status");
	kubernetes_job_state(job, &st, &ready, &want);
	cr_assert(!kubernetes_job_suspended(job));
	cr_assert_eq(st.state, AAH_JOB_PENDING);
	cr_assert_str_eq(st.reason, "");
	cJSON_Delete(doc);
}

static void build(struct aah_config *cfg, struct aah_launch *l, const char *job)
{
	char *hosts[2];
	kubernetes_trial_hosts(job, 2, hosts);
	struct launch_params lp = {
		.cfg = cfg, .expdir = "/userhome/w/experiments/abcdefgh", .workdir = "/userhome/w",
		.experiment_id = "abcdefgh", .trial_seq = 4, .attempt = 1,
		.hosts = (const char *const *)hosts, .port = 29500,
	};
	launch_build(l, &lp);
	free(hosts[0]);
	free(hosts[1]);
}

Test(k8s, template_self_check_refuses_what_it_cannot_express)
{
	struct aah_config cfg;
	struct kubernetes_config kc;
	struct aah_launch l;
	cJSON *docs;
	load(&cfg, BASE "kubernetes:\n  claimName: home\n");
	cr_assert_eq(kubernetes_config_load(&cfg, &kc), 0);
	build(&cfg, &l, "t-abcdefgh-000004-1");
	cr_assert_eq(kubernetes_spec_trial(&cfg, &kc, &l, "t-abcdefgh-000004-1", &docs), 0, "%s",
		     util_last_error());
	cr_assert_eq(cJSON_GetArraySize(docs), 2);
	cJSON_Delete(docs);
	/* A rank-dependent value the template has no fieldRef form for. */
	strvec_setenv(&l.ranks[1].env, "AAH_TRIAL_SEQ", "5");
	cr_assert_eq(kubernetes_spec_trial(&cfg, &kc, &l, "t-abcdefgh-000004-1", &docs), -1);
	cr_assert_null(docs);
	cr_assert(strstr(util_last_error(), "rank 1 would get AAH_TRIAL_SEQ=4 instead of '5'"), "%s",
		  util_last_error());
	launch_release(&l);
	/* An argument that differs per rank in a way the template cannot say. */
	build(&cfg, &l, "t-abcdefgh-000004-1");
	free(l.ranks[1].argv.v[1]);
	l.ranks[1].argv.v[1] = xstrdup("--other");
	cr_assert_eq(kubernetes_spec_trial(&cfg, &kc, &l, "t-abcdefgh-000004-1", &docs), -1);
	cr_assert(strstr(util_last_error(), "rank 1 would get argument"), "%s", util_last_error());
	launch_release(&l);
	kubernetes_config_release(&kc);
	config_release(&cfg);
}

static const cJSON *find_env(const cJSON *c, const char *name)
{
	const cJSON *e;
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(c, "env"))
		if (!strcmp(cJSON_GetObjectItem(e, "name")->valuestring, name))
			return e;
	return NULL;
}

static char *secret_value(const cJSON *secret, const char *key)
{
	const char *b64 = cJSON_GetObjectItem(cJSON_GetObjectItem(secret, "data"), key)->valuestring;
	size_t n = strlen(b64);
	unsigned char *out = xmalloc(n + 1);
	int len = EVP_DecodeBlock(out, (const unsigned char *)b64, (int)n);
	cr_assert_geq(len, 0, "data[%s] is not base64", key);
	while (n && b64[--n] == '=')
		len--;
	out[len] = '\0';
	return (char *)out;
}

Test(k8s, mpi_secret_pods_and_the_contracts_mpirun)
{
	struct aah_config cfg;
	struct kubernetes_config kc;
	struct aah_launch l;
	cJSON *docs, *again;
	const char *job = "t-abcdefgh-000004-1";
	load(&cfg, "experimentName: t\ntrainingServicePlatform: kubernetes\n"
		   "trial:\n  command: aah-trial\n  nodes: 2\n  gpuNum: 2\n  launcher: mpi\n  processMode: node\n"
		   "kubernetes:\n  claimName: home\n  sshPort: 2022\n");
	cr_assert_eq(kubernetes_config_load(&cfg, &kc), 0, "%s", util_last_error());
	cr_assert_eq(kc.ssh_port, 2022);
	/* the devices a pool would hand: the contract forwards them with -x */
	char *hosts[2];
	kubernetes_trial_hosts(job, 2, hosts);
	struct launch_params lp = {
		.cfg = &cfg, .expdir = "/userhome/w/experiments/abcdefgh", .workdir = "/userhome/w",
		.experiment_id = "abcdefgh", .trial_seq = 4, .attempt = 1,
		.hosts = (const char *const *)hosts, .port = 29500, .gpus = "0,1,2,3", .resume = 1,
	};
	launch_build(&l, &lp);
	free(hosts[0]);
	free(hosts[1]);
	cr_assert(l.mpi);
	int forwards_devices = 0;
	for (size_t i = 0; i + 1 < l.mpirun_argv.n; i++)
		forwards_devices |= !strcmp(l.mpirun_argv.v[i + 1], "CUDA_VISIBLE_DEVICES");
	cr_assert(forwards_devices, "the contract should forward CUDA_VISIBLE_DEVICES here");

	cr_assert_eq(kubernetes_spec_trial(&cfg, &kc, &l, job, &docs), 0, "%s", util_last_error());
	cr_assert_eq(cJSON_GetArraySize(docs), 3);
	const cJSON *secret = cJSON_GetArrayItem(docs, 0), *jobdoc = cJSON_GetArrayItem(docs, 2);
	cr_assert_str_eq(cJSON_GetObjectItem(secret, "kind")->valuestring, "Secret");
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(secret, "metadata"), "name")->valuestring,
			 "t-abcdefgh-000004-1-ssh");
	char *id = secret_value(secret, "id_ecdsa"), *cfgtext = secret_value(secret, "config");
	char *known = secret_value(secret, "known_hosts"), *hostfile = secret_value(secret, "hostfile");
	cr_assert(strstr(id, "-----BEGIN PRIVATE KEY-----"), "%s", id);
	cr_assert(strstr(cfgtext, "Host aah-abcdefgh-000004-worker-1.aah-abcdefgh-000004\n"
				  "    HostName t-abcdefgh-000004-1-1.t-abcdefgh-000004-1\n"), "%s", cfgtext);
	cr_assert(strstr(cfgtext, "    Port 2022\n"), "%s", cfgtext);
	cr_assert(strstr(known, "[t-abcdefgh-000004-1-0.t-abcdefgh-000004-1]:2022 ecdsa-sha2-nistp256 "),
		  "%s", known);
	cr_assert_str_eq(hostfile, "aah-abcdefgh-000004-worker-0.aah-abcdefgh-000004 slots=1\n"
				   "aah-abcdefgh-000004-worker-1.aah-abcdefgh-000004 slots=1\n");

	const cJSON *ps = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(jobdoc, "spec"),
								 "template"), "spec");
	const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(ps, "containers"), 0), *a, *v;
	/* the pod args are the contract's mpirun, less the launcher's devices */
	size_t n = 0;
	cJSON_ArrayForEach(a, cJSON_GetObjectItem(c, "args")) {
		cr_assert_str_neq(a->valuestring, "CUDA_VISIBLE_DEVICES");
		n++;
	}
	cr_assert_eq(n, l.mpirun_argv.n - 2);
	/* a relaunch: the trial command in mpirun's tail resumes */
	cr_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(c, "args"), (int)n - 1)->valuestring,
			 "--resume");
	cr_assert_null(find_env(c, "RANK_ID"));
	cr_assert_null(find_env(c, "CUDA_VISIBLE_DEVICES"));
	cr_assert_str_eq(cJSON_GetObjectItem(find_env(c, "AAH_MPI_ROLE"), "value")->valuestring, "pod");
	cr_assert_not_null(find_env(c, "AAH_POD_IP"));
	int found = 0;
	cJSON_ArrayForEach(v, cJSON_GetObjectItem(ps, "volumes")) {
		const cJSON *sv = cJSON_GetObjectItem(v, "secret");
		if (!sv)
			continue;
		found = 1;
		cr_assert_str_eq(cJSON_GetObjectItem(sv, "secretName")->valuestring, "t-abcdefgh-000004-1-ssh");
		cr_assert_eq(cJSON_GetObjectItem(sv, "defaultMode")->valueint, 0400);
	}
	cr_assert(found, "no secret volume");

	/* every rendering has keys of its own */
	cr_assert_eq(kubernetes_spec_trial(&cfg, &kc, &l, job, &again), 0);
	char *id2 = secret_value(cJSON_GetArrayItem(again, 0), "id_ecdsa");
	cr_assert_str_neq(id, id2);
	/* scrubbed: no byte of the encoded keys is left */
	kubernetes_mpi_scrub(docs);
	const cJSON *d;
	cJSON_ArrayForEach(d, cJSON_GetObjectItem(cJSON_GetArrayItem(docs, 0), "data"))
		for (const char *p = d->valuestring; *p; p++)
			cr_assert_fail("data[%s] not scrubbed", d->string);
	free(id);
	free(id2);
	free(cfgtext);
	free(known);
	free(hostfile);
	cJSON_Delete(docs);
	cJSON_Delete(again);
	launch_release(&l);
	kubernetes_config_release(&kc);
	config_release(&cfg);
}

Test(k8s, yaml_quotes_what_a_yaml_reader_would_misread)
{
	cJSON *docs = cJSON_CreateArray(), *d = cJSON_CreateObject();
	const char *const quoted[] = { "true", "No", "on", "null", "000001", "1e3", "-x", ".5",
				       "a: b", "#c", "", "x\ny", "10.0.0.5", "$(X)" };
	const char *const plain[] = { "abc", "/userhome/x", "nvidia.com/gpu", "Never" };
	char key[16];
	for (size_t i = 0; i < sizeof(quoted) / sizeof(*quoted); i++) {
		snprintf(key, sizeof(key), "q%zu", i);
		cJSON_AddStringToObject(d, key, quoted[i]);
	}
	for (size_t i = 0; i < sizeof(plain) / sizeof(*plain); i++) {
		snprintf(key, sizeof(key), "p%zu", i);
		cJSON_AddStringToObject(d, key, plain[i]);
	}
	cJSON_AddItemToArray(docs, d);
	struct strbuf sb = STRBUF_INIT;
	kubernetes_yaml_emit(&sb, docs);
	for (size_t i = 0; i < sizeof(quoted) / sizeof(*quoted); i++) {
		char *line = xstrfmt("q%zu: \"", i);
		cr_assert(strstr(sb.buf, line), "'%s' not quoted in:\n%s", quoted[i], sb.buf);
		free(line);
	}
	for (size_t i = 0; i < sizeof(plain) / sizeof(*plain); i++) {
		char *line = xstrfmt("p%zu: %s\n", i, plain[i]);
		cr_assert(strstr(sb.buf, line), "'%s' quoted in:\n%s", plain[i], sb.buf);
		free(line);
	}
	cr_assert(strstr(sb.buf, "q11: \"x\\ny\"\n"));
	strbuf_release(&sb);
	cJSON_Delete(docs);
}
