/* Unit tests for runner/launch.c: golden launch contracts for 1 node x 1
 * GPU, 2 nodes x 8 GPUs, one process per device, TensorFlow style; the
 * command-line rules (no value ever goes through a shell string).
 * Regenerate the golden files with AAH_UPDATE_GOLDEN=1 after a deliberate
 * change, and review the diff. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "jsonfile.h"
#include "runner/backend/backend.h"
#include "runner/config/config.h"
#include "runner/launch.h"
#include "util.h"

#define GOLDEN "tests/fixtures/launch/"

static char tmpdir[64];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/aah-launch-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	util_set_quiet(1);
}

static void teardown(void)
{
	fileio_remove_tree(tmpdir);
}

TestSuite(launch, .init = setup, .fini = teardown);

static void load(struct aah_config *cfg, const char *trial_section)
{
	char *p = xstrfmt("%s/config.yml", tmpdir);
	char *text = xstrfmt("experimentName: golden\ntrial:\n  command: aah-trial --dataset fashion\n%s",
			     trial_section);
	cr_assert_eq(fileio_write_atomic(p, text, strlen(text)), 0);
	cr_assert_eq(backend_config_load(p, cfg), 0, "%s", util_last_error());
	free(p);
	free(text);
}

static void check_golden(const char *name, const char *trial_section, const char *gpus,
			 unsigned nodes)
{
	struct aah_config cfg;
	struct aah_launch l;
	static const char *const hosts[] = { "10.0.0.1", "10.0.0.2", "10.0.0.3" };
	load(&cfg, trial_section);
	cJSON *params = cJSON_Parse("{\"dropout_rate\": 0.125, \"kernel_size\": 5, \"optimizer\": \"sgd\"}");
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
		.params = params,
	};
	cr_assert_eq(cfg.trial.nodes, nodes);
	cr_assert_eq(launch_build(&l, &lp), 0);
	cJSON *got = launch_to_json(&l);
	char *text = cJSON_Print(got);
	char *path = xstrfmt(GOLDEN "%s.json", name);
	if (getenv("AAH_UPDATE_GOLDEN")) {
		char *nl = xstrfmt("%s\n", text);
		cr_assert_eq(fileio_write_atomic(path, nl, strlen(nl)), 0);
		free(nl);
	}
	cJSON *want;
	cr_assert_eq(jsonfile_read(path, &want), 0, "missing golden file %s", path);
	char *want_text = cJSON_Print(want);
	cr_assert_str_eq(text, want_text, "launch contract differs from %s", path);
	cJSON_Delete(want);
	cJSON_Delete(got);
	cJSON_Delete(params);
	cJSON_free(text);
	cJSON_free(want_text);
	free(path);
	launch_release(&l);
	config_release(&cfg);
}

Test(launch, golden_1node_1gpu)
{
	check_golden("1node-1gpu", "  gpuNum: 1\n  processMode: node\n", "3", 1);
}

Test(launch, golden_2nodes_8gpus)
{
	check_golden("2nodes-8gpus", "  nodes: 2\n  gpuNum: 8\n  processMode: node\n  ncclCommId: true\n",
		     "0,1,2,3,4,5,6,7", 2);
}

Test(launch, golden_per_device)
{
	check_golden("per-device-2x4", "  nodes: 2\n  gpuNum: 4\n  processMode: device\n", "4,5,6,7",
		     2);
}

Test(launch, golden_tensorflow_style)
{
	check_golden("tf-style-2nodes",
		     "  nodes: 2\n  launchStyle: tensorflow\n  dataUrl: /userhome/data\n"
		     "  env:\n    OMP_NUM_THREADS: \"2\"\n",
		     NULL, 2);
}

/* ModelArts' MPI form on the kubernetes backend: the hostfile names the
 * hosts as ModelArts does, ${MA_VJ_NAME}-${MA_TASK_NAME}-N.${MA_VJ_NAME}. */
Test(launch, golden_mpi_kubernetes)
{
	check_golden("mpi-kubernetes-2nodes",
		     "  nodes: 2\n  gpuNum: 8\n  launcher: mpi\n  processMode: node\n"
		     "trainingServicePlatform: kubernetes\n",
		     NULL, 2);
}

Test(launch, mpi_runs_one_mpirun_over_the_hostfile)
{
	struct aah_config cfg;
	struct aah_launch l;
	static const char *const hosts[] = { "h0", "h1", "h2" };
	load(&cfg, "  nodes: 3\n  launcher: mpi\ntrainingServicePlatform: kubernetes\n");
	struct launch_params lp = { .cfg = &cfg, .expdir = "/e", .workdir = "/", .experiment_id = "x",
				    .trial_seq = 7, .attempt = 1, .hosts = hosts, .port = 1 };
	launch_build(&l, &lp);
	cr_assert(l.mpi);
	cr_assert_str_eq(l.hostfile, "/e/trials/000007/hostfile");
	cr_assert_eq(l.hostfile_lines.n, 3);
	cr_assert_str_eq(l.hostfile_lines.v[2], "aah-x-000007-worker-2.aah-x-000007 slots=1");
	const struct strvec *a = &l.mpirun_argv;
	cr_assert_str_eq(a->v[0], "mpirun");
	cr_assert_str_eq(a->v[1], "--allow-run-as-root"); /* containers run as root */
	int np = 0;
	for (size_t i = 0; i + 1 < a->n; i++) {
		cr_assert_str_neq(a->v[i], "btl_tcp_if_include"); /* loopback only on local */
		cr_assert_str_neq(a->v[i], "--rank");
		if (!strcmp(a->v[i], "-np"))
			np = atoi(a->v[i + 1]);
	}
	cr_assert_eq(np, 3);
	/* The rank comes from mpirun: no rank-specific names in any rank's env. */
	for (unsigned i = 0; i < l.nranks; i++) {
		cr_assert_null(strvec_getenv(&l.ranks[i].env, "RANK_ID"));
		cr_assert_null(strvec_getenv(&l.ranks[i].env, "VC_TASK_INDEX"));
		cr_assert_str_eq(strvec_getenv(&l.ranks[i].env, "RANK_SIZE"), "3");
	}
	launch_release(&l);
	/* launch_write puts the hostfile beside launch.json, one line a host. */
	lp.expdir = tmpdir;
	launch_build(&l, &lp);
	cr_assert_eq(launch_write(&l), 0);
	char *text;
	cr_assert_eq(fileio_read(l.hostfile, 4096, &text, NULL), 0);
	cr_assert_str_eq(text, "aah-x-000007-worker-0.aah-x-000007 slots=1\n"
			       "aah-x-000007-worker-1.aah-x-000007 slots=1\n"
			       "aah-x-000007-worker-2.aah-x-000007 slots=1\n");
	free(text);
	launch_release(&l);
	config_release(&cfg);
}

/* trial.fitExecDuration: every rank gets the experiment's end in whole
 * seconds, rounded down (a trial fits into it, never past it). */
Test(launch, deadline_is_exported_in_whole_seconds_rounded_down)
{
	struct aah_config cfg;
	struct aah_launch l;
	static const char *const hosts[] = { "h0", "h1" };
	load(&cfg, "  nodes: 2\n");
	struct launch_params lp = { .cfg = &cfg, .expdir = "/e", .workdir = "/", .experiment_id = "x",
				    .trial_seq = 1, .attempt = 1, .hosts = hosts, .port = 1,
				    .deadline = 1795552151.9 };
	cr_assert_eq(launch_build(&l, &lp), 0);
	for (unsigned r = 0; r < l.nranks; r++) {
		const char *v = strvec_getenv(&l.ranks[r].env, "AAH_DEADLINE");
		cr_assert_not_null(v, "rank %u", r);
		cr_assert_str_eq(v, "1795552151");
	}
	launch_release(&l);
	lp.deadline = 0;
	cr_assert_eq(launch_build(&l, &lp), 0);
	cr_assert_null(strvec_getenv(&l.ranks[0].env, "AAH_DEADLINE"));
	launch_release(&l);
	config_release(&cfg);
}

Test(launch, per_device_ranks_are_consistent)
{
	struct aah_config cfg;
	struct aah_launch l;
	static const char *const hosts[] = { "a", "b" };
	load(&cfg, "  nodes: 2\n  gpuNum: 4\n  processMode: device\n");
	struct launch_params lp = { .cfg = &cfg, .expdir = "/e", .workdir = "/", .experiment_id = "x",
				    .trial_seq = 1, .attempt = 1, .hosts = hosts, .port = 1,
				    .gpus = "4,5,6,7" };
	launch_build(&l, &lp);
	cr_assert_eq(l.nranks, 8);
	for (unsigned i = 0; i < l.nranks; i++) {
		const struct strvec *e = &l.ranks[i].env;
		char want[16];
		snprintf(want, sizeof(want), "%u", i);
		cr_assert_str_eq(strvec_getenv(e, "RANK_ID"), want);
		cr_assert_str_eq(strvec_getenv(e, "RANK_SIZE"), "8");
		snprintf(want, sizeof(want), "%u", i / 4);
		cr_assert_str_eq(strvec_getenv(e, "VC_TASK_INDEX"), want);
		snprintf(want, sizeof(want), "%u", 4 + i % 4);
		cr_assert_str_eq(strvec_getenv(e, "CUDA_VISIBLE_DEVICES"), want);
		cr_assert_str_eq(strvec_getenv(e, "MASTER_ADDR"), "a");
	}
	launch_release(&l);
	config_release(&cfg);
}

Test(launch, shell_commands_take_values_as_arguments)
{
	struct strvec a = STRVEC_INIT;
	launch_command_argv(&a, "CUDA_VISIBLE_DEVICES=0 python3 train.py --ip ${IP}");
	cr_assert_eq(a.n, 4);
	cr_assert_str_eq(a.v[0], "/bin/sh");
	cr_assert_str_eq(a.v[2], "CUDA_VISIBLE_DEVICES=0 python3 train.py --ip ${IP} \"$@\"");
	/* A hostile value stays one argument of the child. */
	cJSON *p = cJSON_Parse("{\"x\": \"$(touch /tmp/pwned); rm -rf /\"}");
	launch_push_params(&a, p);
	cr_assert_str_eq(a.v[4], "--x=$(touch /tmp/pwned); rm -rf /");
	cJSON_Delete(p);
	strvec_clear(&a);

	launch_command_argv(&a, "aah-trial  --dataset   fashion");
	cr_assert_eq(a.n, 3);
	cr_assert_str_eq(a.v[0], "aah-trial");
	cr_assert_str_eq(a.v[2], "fashion");
	strvec_clear(&a);
}

Test(launch, numbers_keep_full_precision)
{
	struct strvec a = STRVEC_INIT;
	cJSON *p = cJSON_Parse("{\"a\": 0.1, \"b\": 448, \"c\": 1e-05, \"d\": 0.30000000000000004}");
	launch_push_params(&a, p);
	cr_assert_str_eq(a.v[0], "--a=0.1");
	cr_assert_str_eq(a.v[1], "--b=448");
	cr_assert_str_eq(a.v[2], "--c=1e-05");
	cr_assert_str_eq(a.v[3], "--d=0.30000000000000004");
	cJSON_Delete(p);
	strvec_clear(&a);
}

Test(launch, every_backend_fills_its_required_operations)
{
	int n = 0;
	for (const struct aah_backend *const *b = aah_backends; *b; b++, n++) {
		cr_assert_not_null((*b)->name);
		cr_assert_not_null((*b)->submit, "%s lacks submit", (*b)->name);
		cr_assert_not_null((*b)->poll, "%s lacks poll", (*b)->name);
		cr_assert_not_null((*b)->cancel, "%s lacks cancel", (*b)->name);
		cr_assert_eq(backend_find((*b)->name), *b);
		if ((*b)->config_keys)
			cr_assert((*b)->config_size > 0, "%s has keys but no config_size", (*b)->name);
	}
	cr_assert(n >= 1);
	cr_assert_null(backend_find("pai"));
}
