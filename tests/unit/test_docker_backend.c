/* Unit tests for the Docker backend's pure parts (runner/backend/docker_spec.c):
 * golden `docker create` argv per rank (1 rank with 1 GPU, 2 ranks with
 * 8 GPUs, one container per device) and the job state read from captured
 * `docker inspect` output (tests/fixtures/docker/inspect-*.json, in the
 * format Docker documents for `docker inspect` of containers). No Docker
 * engine runs here. Regenerate golden files with AAH_UPDATE_GOLDEN=1. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "runner/backend/backend.h" /* backend_config_load */
#include "runner/config/config.h"
#include "runner/backend/docker.h"
#include "runner/launch.h"
#include "runner/backend/ssh_keys.h"
#include "strbuf.h"
#include "util.h"

#define FIX "tests/fixtures/docker/"

static char tmpdir[64];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/aah-docker-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	util_set_quiet(1);
}

static void teardown(void)
{
	fileio_remove_tree(tmpdir);
}

TestSuite(docker, .init = setup, .fini = teardown);

static void load(struct aah_config *cfg, const char *text)
{
	char *p = xstrfmt("%s/config.yml", tmpdir);
	cr_assert_eq(fileio_write_atomic(p, text, strlen(text)), 0);
	cr_assert_eq(backend_config_load(p, cfg), 0, "%s", util_last_error());
	free(p);
}

/* load, then the docker section into dc */
static void load_docker(struct aah_config *cfg, struct docker_config *dc, const char *text)
{
	load(cfg, text);
	memset(dc, 0, sizeof(*dc));
	cr_assert_eq(config_parse_section(cfg, "docker", config_section(cfg, "docker"),
					  docker_config_keys, dc), 0,
		     "%s", util_last_error());
}

static void check_golden(const char *name, const char *config, const char *gpus)
{
	struct aah_config cfg;
	struct docker_config dc;
	struct aah_launch l;
	struct strbuf got = STRBUF_INIT;
	static const char *const hosts[] = { "127.0.0.1", "127.0.0.1" };
	load_docker(&cfg, &dc, config);
	struct launch_params lp = {
		.cfg = &cfg,
		.expdir = "/userhome/aah-work/experiments/k3x9q2ab",
		.workdir = "/userhome/aah-work",
		.experiment_id = "k3x9q2ab",
		.trial_seq = 12,
		.attempt = 1,
		.hosts = hosts,
		.port = 29500,
		.gpus = gpus,
		.params = NULL,
	};
	cr_assert_eq(launch_build(&l, &lp), 0);
	/* trial.launcher: mpi: the launcher's and the workers' containers, and
	 * the ssh files beside them (a made-up host key). */
	unsigned ports[] = { 0, 40001 };
	struct docker_mpi m = { xstrfmt("%s/ssh", l.trial_dir), ports, NULL };
	for (unsigned r = 0; r < l.nranks; r++) {
		struct strvec argv = STRVEC_INIT;
		int rc = l.mpi ? docker_create_mpi_argv(&dc, &l, &m, r, "/userhome/AIPerf", &argv)
			       : docker_create_argv(&dc, &l, r, "/userhome/AIPerf", &argv);
		cr_assert_eq(rc, 0, "%s", util_last_error());
		strbuf_addf(&got, "# rank %u\n", r);
		for (size_t i = 0; i < argv.n; i++)
			strbuf_addf(&got, "%s\n", argv.v[i]);
		strvec_clear(&argv);
	}
	if (l.mpi) {
		strbuf_addf(&got, "# ssh/config\n");
		docker_mpi_ssh_config(&l, &m, &got);
		strbuf_addf(&got, "# ssh/known_hosts\n");
		docker_mpi_known_hosts(&l, &m, "ecdsa-sha2-nistp256 AAAAhostkey", &got);
		strbuf_addf(&got, "# ssh/sshd_config\n");
		docker_mpi_sshd_config(&m, &got);
	}
	free(m.ssh_dir);
	char *path = xstrfmt(FIX "%s.argv", name), *want = NULL;
	if (getenv("AAH_UPDATE_GOLDEN"))
		cr_assert_eq(fileio_write_atomic(path, got.buf, got.len), 0);
	cr_assert_eq(fileio_read(path, 0, &want, NULL), 0, "missing golden file %s", path);
	cr_assert_str_eq(got.buf, want, "%s differs:\n%s", path, got.buf);
	free(want);
	free(path);
	strbuf_release(&got);
	launch_release(&l);
	config_release_section(docker_config_keys, &dc);
	config_release(&cfg);
}

Test(docker, golden_1rank_1gpu)
{
	check_golden("1node-1gpu",
		     "experimentName: golden\ntrainingServicePlatform: docker\n"
		     "trial:\n  command: aah-trial --dataset fashion\n  gpuNum: 1\n  processMode: node\n"
		     "docker:\n  image: registry.example/aah-trial:1.0\n  user: \"1000:1000\"\n",
		     "3");
}

Test(docker, golden_2ranks_8gpus)
{
	check_golden("2nodes-8gpus",
		     "experimentName: golden\ntrainingServicePlatform: docker\n"
		     "trial:\n  command: aah-trial --dataset imagenet\n  gpuNum: 8\n  nodes: 2\n  processMode: node\n"
		     "docker:\n  mounts: [/userhome:/userhome, /data/imagenet:/data:ro]\n"
		     "  shmSize: 16g\n  runArgs: [--ipc=host]\n",
		     "0,1,2,3,4,5,6,7");
}

Test(docker, golden_per_device)
{
	check_golden("per-device-1x2",
		     "experimentName: golden\ntrainingServicePlatform: docker\n"
		     "trial:\n  command: aah-trial\n  gpuNum: 2\n  processMode: device\n",
		     "4,5");
}

Test(docker, golden_mpi_2nodes)
{
	check_golden("mpi-2nodes",
		     "experimentName: golden\ntrainingServicePlatform: docker\n"
		     "trial:\n  command: aah-trial --dataset fashion\n  nodes: 2\n  launcher: mpi\n"
		     "docker:\n  image: aah-trial:cpu\n  user: \"0:0\"\n",
		     NULL);
}

Test(docker, mpi_addresses_are_loopback_and_distinct)
{
	const unsigned nodes[] = { 0, 1, 254, 255, 1023 };
	const char *want[] = { "127.0.0.1", "127.0.0.2", "127.0.0.255", "127.0.1.0", "127.0.4.0" };
	for (size_t i = 0; i < 5; i++) {
		char *a = docker_mpi_address(nodes[i]);
		cr_assert_str_eq(a, want[i]);
		free(a);
	}
}

/* OpenSSH itself reads the private key and derives the same public line
 * (ssh-keygen -y), and two pairs differ. */
Test(docker, ssh_keypair_is_read_by_openssh)
{
	if (access("/usr/bin/ssh-keygen", X_OK) != 0)
		cr_skip_test("no /usr/bin/ssh-keygen here (openssh-client)");
	struct strbuf priv = STRBUF_INIT, pub = STRBUF_INIT, priv2 = STRBUF_INIT,
		      pub2 = STRBUF_INIT;
	cr_assert_eq(ssh_keypair_new(&priv, &pub), 0, "%s", util_last_error());
	cr_assert_eq(ssh_keypair_new(&priv2, &pub2), 0, "%s", util_last_error());
	cr_assert(!strncmp(pub.buf, "ecdsa-sha2-nistp256 AAAA", 24), "%s", pub.buf);
	cr_assert_str_neq(pub.buf, pub2.buf);
	char *path = xstrfmt("%s/id_ecdsa", tmpdir);
	cr_assert_eq(fileio_write_atomic(path, priv.buf, priv.len), 0);
	cr_assert_eq(chmod(path, 0600), 0);
	char *cmd = xstrfmt("/usr/bin/ssh-keygen -y -f %s", path);
	FILE *f = popen(cmd, "r");
	char line[512] = "";
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(line, sizeof(line), f));
	cr_assert_eq(pclose(f), 0);
	line[strcspn(line, "\n")] = '\0';
	cr_assert_str_eq(line, pub.buf);
	free(cmd);
	free(path);
	strbuf_release(&priv);
	strbuf_release(&pub);
	strbuf_release(&priv2);
	strbuf_release(&pub2);
}

Test(docker, mounts_must_be_a_list)
{
	struct aah_config cfg;
	struct docker_config dc;
	struct aah_launch l;
	static const char *const hosts[] = { "127.0.0.1" };
	load_docker(&cfg, &dc, "trial:\n  command: t\ndocker:\n  mounts: /a:/a\n");
	struct launch_params lp = { .cfg = &cfg, .expdir = "/e", .workdir = "/w",
				    .experiment_id = "x", .trial_seq = 1, .attempt = 1,
				    .hosts = hosts, .port = 1 };
	cr_assert_eq(launch_build(&l, &lp), 0);
	struct strvec argv = STRVEC_INIT;
	cr_assert_eq(docker_create_argv(&dc, &l, 0, "/c", &argv), -1);
	cr_assert(strstr(util_last_error(), "docker.mounts"), "%s", util_last_error());
	strvec_clear(&argv);
	launch_release(&l);
	config_release_section(docker_config_keys, &dc);
	config_release(&cfg);
}

/* The argv of rank 0 for a docker: section, as one line per argument. */
static char *rank0_argv(const char *section)
{
	struct aah_config cfg;
	struct docker_config dc;
	struct aah_launch l;
	static const char *const hosts[] = { "127.0.0.1" };
	char *text = xstrfmt("trial:\n  command: t\n%s", section);
	load_docker(&cfg, &dc, text);
	struct launch_params lp = { .cfg = &cfg, .expdir = "/e", .workdir = "/w",
				    .experiment_id = "x", .trial_seq = 1, .attempt = 1,
				    .hosts = hosts, .port = 1 };
	cr_assert_eq(launch_build(&l, &lp), 0);
	struct strvec argv = STRVEC_INIT;
	struct strbuf sb = STRBUF_INIT;
	cr_assert_eq(docker_create_argv(&dc, &l, 0, "/c", &argv), 0, "%s", util_last_error());
	for (size_t i = 0; i < argv.n; i++)
		strbuf_addf(&sb, "%s\n", argv.v[i]);
	strvec_clear(&argv);
	launch_release(&l);
	config_release_section(docker_config_keys, &dc);
	config_release(&cfg);
	free(text);
	return strbuf_detach(&sb, NULL);
}

/* The key table's defaults reach the argv: with no docker: section, and
 * with mounts: null (a null free-form value takes its default). */
Test(docker, table_defaults_reach_the_argv)
{
	static const char *const sections[] = { "", "docker:\n  mounts: null\n" };
	for (size_t i = 0; i < 2; i++) {
		char *got = rank0_argv(sections[i]);
		cr_assert(!strncmp(got, "docker\ncreate\n", 14), "%s", got);
		cr_assert(strstr(got, "\n--network=host\n-v\n/userhome:/userhome\n"), "%s", got);
		cr_assert(strstr(got, "\n--workdir=/c\n"), "%s", got);
		cr_assert(strstr(got, "\naah-trial:cpu\n"), "%s", got);
		free(got);
	}
	char *got = rank0_argv("docker:\n  mounts: []\n  binary: podman\n");
	cr_assert(!strncmp(got, "podman\ncreate\n", 14), "%s", got);
	cr_assert_null(strstr(got, "\n-v\n"), "%s", got);
	free(got);
}

static enum aah_job_state state_of(const char *file, int nranks, int canceled, int *code,
				   char *reason, int *parsed)
{
	char *path = xstrfmt(FIX "%s", file), *text = NULL;
	struct docker_state st[4];
	cr_assert_eq(fileio_read(path, 0, &text, NULL), 0, "missing %s", path);
	*parsed = docker_parse_inspect(text, st, 4);
	cr_assert_geq(*parsed, 0, "%s: %s", path, util_last_error());
	enum aah_job_state s = docker_job_state(st, *parsed, nranks, canceled, code, reason, 256);
	free(text);
	free(path);
	return s;
}

Test(docker, inspect_parse_fields)
{
	char *text = NULL;
	struct docker_state st[4];
	cr_assert_eq(fileio_read(FIX "inspect-oom.json", 0, &text, NULL), 0);
	cr_assert_eq(docker_parse_inspect(text, st, 4), 2);
	cr_assert_str_eq(st[0].name, "/aah-k3x9q2ab-000012-0");
	cr_assert_str_eq(st[0].status, "exited");
	cr_assert_eq(st[0].exit_code, 137);
	cr_assert(st[0].oom_killed);
	cr_assert_str_eq(st[1].status, "running");
	cr_assert(!st[1].oom_killed);
	cr_assert_eq(strlen(st[1].id), 64);
	free(text);
	cr_assert_eq(docker_parse_inspect("Error: No such object: x", st, 4), -1);
	cr_assert_eq(docker_parse_inspect("[]", st, 4), 0);
}

Test(docker, job_states_from_captures)
{
	static const struct {
		const char *file;
		int canceled;
		enum aah_job_state want;
		int code;
		const char *reason;
	} cases[] = {
		{ "inspect-created.json", 0, AAH_JOB_PENDING, -1, "" },
		{ "inspect-running.json", 0, AAH_JOB_RUNNING, -1, "" },
		{ "inspect-running.json", 1, AAH_JOB_RUNNING, -1, "" },
		{ "inspect-succeeded.json", 0, AAH_JOB_SUCCEEDED, 0, "" },
		{ "inspect-succeeded.json", 1, AAH_JOB_CANCELED, -1, "canceled" },
		{ "inspect-rank1-failed.json", 0, AAH_JOB_FAILED, 3,
		  "container aah-k3x9q2ab-000012-1 exited with status 3" },
		{ "inspect-oom.json", 0, AAH_JOB_FAILED, 137,
		  "container aah-k3x9q2ab-000012-0: out of memory (OOMKilled), exit code 137" },
		{ "inspect-one-gone.json", 0, AAH_JOB_LOST, -1,
		  "1 of 2 containers are gone (removed outside aah?)" },
		{ "inspect-dead.json", 0, AAH_JOB_FAILED, 0,
		  "container aah-k3x9q2ab-000012-0 is dead: driver failed programming external connectivity" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char reason[256];
		int code, parsed;
		enum aah_job_state s = state_of(cases[i].file, 2, cases[i].canceled, &code, reason,
						&parsed);
		cr_assert_eq(s, cases[i].want, "%s (canceled %d): got %s", cases[i].file,
			     cases[i].canceled, aah_job_state_name(s));
		cr_assert_eq(code, cases[i].code, "%s: exit code %d", cases[i].file, code);
		cr_assert_str_eq(reason, cases[i].reason, "%s", cases[i].file);
	}
}

/* A training of a GPU pool (trial.gpuNum 1, pool.devices): the ledger's
 * grant "5,6,7" (runner/pool/pooltrial.c) becomes one device per rank's
 * container, --gpus=device=N, which each sees as its device 0. */
Test(docker, pool_grant_one_gpu_per_rank_container)
{
	struct aah_config cfg;
	struct docker_config dc;
	struct aah_launch l;
	static const char *const hosts[] = { "127.0.0.1", "127.0.0.1", "127.0.0.1" };
	load_docker(&cfg, &dc, "experimentName: pool\ntrainingServicePlatform: docker\n"
		   "trial:\n  command: aah-trial\n  gpuNum: 1\npool:\n  devices: 8\n");
	struct launch_params lp = {
		.cfg = &cfg,
		.expdir = "/userhome/aah-work/experiments/k3x9q2ab",
		.workdir = "/userhome/aah-work",
		.experiment_id = "k3x9q2ab",
		.trial_seq = 1,
		.attempt = 1,
		.hosts = hosts,
		.port = 29500,
		.gpus = "5,6,7",
		.nodes = 3,
		.elastic = 1,
	};
	cr_assert_eq(launch_build(&l, &lp), 0);
	cr_assert_eq(l.nranks, 3);
	for (unsigned r = 0; r < l.nranks; r++) {
		struct strvec argv = STRVEC_INIT;
		cr_assert_eq(docker_create_argv(&dc, &l, r, "/userhome", &argv), 0, "%s",
			     util_last_error());
		char want[32];
		snprintf(want, sizeof(want), "--gpus=device=%u", 5 + r);
		int gpus = 0, inside = 0;
		for (size_t i = 0; i < argv.n; i++) {
			gpus += !strncmp(argv.v[i], "--gpus", 6);
			cr_assert(strncmp(argv.v[i], "--gpus", 6) || !strcmp(argv.v[i], want),
				  "rank %u: %s, not %s", r, argv.v[i], want);
			inside |= !strcmp(argv.v[i], "CUDA_VISIBLE_DEVICES=0");
		}
		cr_assert_eq(gpus, 1, "rank %u: %d --gpus flags", r, gpus);
		cr_assert(inside, "rank %u does not see its GPU as device 0", r);
		strvec_clear(&argv);
	}
	launch_release(&l);
	config_release_section(docker_config_keys, &dc);
	config_release(&cfg);
}
