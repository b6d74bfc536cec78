/* Unit tests for the Slurm backend's pure parts (runner/backend/slurm_spec.c):
 * golden sbatch scripts and argv (1 node x 1 GPU, 2 nodes x 8 GPUs), value
 * checks, the job-state mapping and the parsers of squeue, sacct, scontrol
 * and sbatch output, and the host substitution of the in-job launcher.
 * Regenerate the golden files with AAH_UPDATE_GOLDEN=1 after a deliberate
 * change, and review the diff. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "runner/backend/backend.h" /* backend_config_load */
#include "runner/config/config.h"
#include "runner/launch.h"
#include "runner/backend/slurm.h"
#include "runner/backend/proc.h" /* PROC_TIMEOUT_STATUS */
#include "util.h"

#define GOLDEN "tests/fixtures/slurm/"

static char tmpdir[64];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/aah-slurm-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	util_set_quiet(1);
}

static void teardown(void)
{
	fileio_remove_tree(tmpdir);
}

TestSuite(slurm, .init = setup, .fini = teardown);

static void load(struct aah_config *cfg, const char *text)
{
	char *p = xstrfmt("%s/config.yml", tmpdir);
	cr_assert_eq(fileio_write_atomic(p, text, strlen(text)), 0);
	cr_assert_eq(backend_config_load(p, cfg), 0, "%s", util_last_error());
	free(p);
}

static int parse_slurm(const struct aah_config *cfg, struct slurm_config *sc)
{
	memset(sc, 0, sizeof(*sc));
	return config_parse_section(cfg, "slurm", config_section(cfg, "slurm"), slurm_config_keys,
				    sc);
}

static void build(struct aah_config *cfg, struct aah_launch *l)
{
	char *hosts[8];
	for (unsigned i = 0; i < 8; i++)
		hosts[i] = xstrfmt(SLURM_HOST_PLACEHOLDER, i);
	struct launch_params lp = {
		.cfg = cfg,
		.expdir = "/userhome/aah-work/experiments/k3x9q2ab",
		.workdir = "/userhome/aah-work",
		.experiment_id = "k3x9q2ab",
		.trial_seq = 12,
		.attempt = 1,
		.hosts = (const char *const *)hosts,
		.port = 29500,
		.gpus = NULL,
		.params = NULL,
	};
	cr_assert_eq(launch_build(l, &lp), 0);
	for (unsigned i = 0; i < 8; i++)
		free(hosts[i]);
}

static void compare(const char *name, const char *got)
{
	char *path = xstrfmt(GOLDEN "%s", name), *want = NULL;
	if (getenv("AAH_UPDATE_GOLDEN"))
		cr_assert_eq(fileio_write_atomic(path, got, strlen(got)), 0);
	cr_assert_eq(fileio_read(path, 0, &want, NULL), 0, "missing golden file %s", path);
	cr_assert_str_eq(got, want, "%s differs from the golden file:\n%s", path, got);
	free(want);
	free(path);
}

/* The script and the sbatch argv (one argument a line) of a config. */
static void check_golden(const char *name, const char *config)
{
	struct aah_config cfg;
	struct slurm_config sc;
	struct aah_launch l;
	struct strbuf script = STRBUF_INIT, args = STRBUF_INIT;
	struct strvec argv = STRVEC_INIT;
	load(&cfg, config);
	cr_assert_eq(parse_slurm(&cfg, &sc), 0, "%s", util_last_error());
	build(&cfg, &l);
	cr_assert_eq(slurm_script_build(&sc, &cfg, &l, "/userhome/AIPerf", &script), 0, "%s",
		     util_last_error());
	cr_assert_eq(slurm_sbatch_argv(&sc, "/userhome/aah-work/experiments/k3x9q2ab/trials/000012/slurm.sh",
				       "/opt/aah/bin/aah-runner", &l, &argv), 0);
	for (size_t i = 0; i < argv.n; i++)
		strbuf_addf(&args, "%s\n", argv.v[i]);
	char *n1 = xstrfmt("%s.sbatch", name), *n2 = xstrfmt("%s.argv", name);
	compare(n1, script.buf);
	compare(n2, args.buf);
	free(n1);
	free(n2);
	strvec_clear(&argv);
	strbuf_release(&script);
	strbuf_release(&args);
	launch_release(&l);
	config_release_section(slurm_config_keys, &sc);
	config_release(&cfg);
}

Test(slurm, golden_1node_1gpu)
{
	check_golden("1node-1gpu",
		     "experimentName: golden\n"
		     "trainingServicePlatform: slurm\n"
		     "trial:\n  command: aah-trial --dataset fashion\n  gpuNum: 1\n  processMode: node\n  timeout: 90m\n"
		     "slurm:\n  partition: gpu\n  cpusPerTask: 8\n  mem: 64G\n");
}

Test(slurm, golden_2nodes_8gpus)
{
	check_golden("2nodes-8gpus",
		     "experimentName: golden\n"
		     "trainingServicePlatform: slurm\n"
		     "trial:\n  command: aah-trial --dataset imagenet\n  gpuNum: 8\n  nodes: 2\n  processMode: node\n"
		     "  timeout: 2d\n"
		     "slurm:\n  partition: a100\n  account: aiperf\n  qos: high\n  cpusPerTask: 12\n"
		     "  sbatchArgs: [--exclusive, --constraint=ib]\n");
}

/* ModelArts' MPI form: the batch step runs one slurm-launch --mpi (which
 * execs mpirun over the allocation), no srun per rank. */
Test(slurm, golden_mpi_2nodes)
{
	check_golden("mpi-2nodes",
		     "experimentName: golden\n"
		     "trainingServicePlatform: slurm\n"
		     "trial:\n  command: aah-trial --dataset fashion\n  nodes: 2\n  launcher: mpi\n"
		     "slurm:\n  tasksPerNode: 2\n");
}

Test(slurm, packed_nodes_and_time_override)
{
	struct aah_config cfg;
	struct slurm_config sc;
	struct aah_launch l;
	struct strbuf script = STRBUF_INIT;
	load(&cfg, "trial:\n  command: t\n  nodes: 4\n  gpuNum: 2\n  processMode: node\n  timeout: 10m\n"
		   "slurm:\n  tasksPerNode: 2\n  timeLimit: 61s\n  gresName: a100\n");
	cr_assert_eq(parse_slurm(&cfg, &sc), 0);
	build(&cfg, &l);
	cr_assert_eq(slurm_script_build(&sc, &cfg, &l, "/code dir", &script), 0);
	cr_assert(strstr(script.buf, "#SBATCH --nodes=2\n"));
	cr_assert(strstr(script.buf, "#SBATCH --ntasks-per-node=2\n"));
	cr_assert(strstr(script.buf, "#SBATCH --gres=a100:4\n"));
	cr_assert(strstr(script.buf, "#SBATCH --time=0-00:02:00\n"), "%s", script.buf);
	/* A path with a blank is quoted the way sbatch reads directives. */
	cr_assert(strstr(script.buf, "#SBATCH --chdir=\"/code dir\"\n"));
	strbuf_release(&script);
	launch_release(&l);
	config_release_section(slurm_config_keys, &sc);
	config_release(&cfg);
}

Test(slurm, refuses_values_a_directive_cannot_carry)
{
	struct aah_config cfg;
	struct slurm_config sc;
	struct aah_launch l;
	struct strbuf script = STRBUF_INIT;
	load(&cfg, "trial:\n  command: t\nslurm:\n  partition: \"gpu\\n#SBATCH --uid=0\"\n");
	cr_assert_eq(parse_slurm(&cfg, &sc), 0);
	build(&cfg, &l);
	cr_assert_eq(slurm_script_build(&sc, &cfg, &l, "/c", &script), -1);
	cr_assert(strstr(util_last_error(), "--partition"), "%s", util_last_error());
	cr_assert(strstr(util_last_error(), "control character"));
	strbuf_release(&script);
	launch_release(&l);
	config_release_section(slurm_config_keys, &sc);
	config_release(&cfg);
}

Test(slurm, nodes_must_divide_by_tasks_per_node)
{
	struct aah_config cfg;
	struct slurm_config sc;
	struct aah_launch l;
	struct strbuf script = STRBUF_INIT;
	load(&cfg, "trial:\n  command: t\n  nodes: 3\nslurm:\n  tasksPerNode: 2\n");
	cr_assert_eq(parse_slurm(&cfg, &sc), 0);
	build(&cfg, &l);
	cr_assert_eq(slurm_script_build(&sc, &cfg, &l, "/c", &script), -1);
	cr_assert(strstr(util_last_error(), "not a multiple"));
	strbuf_release(&script);
	launch_release(&l);
	config_release_section(slurm_config_keys, &sc);
	config_release(&cfg);
}

Test(slurm, config_errors_name_the_key)
{
	struct aah_config cfg;
	struct slurm_config sc;
	load(&cfg, "trial:\n  command: t\nslurm:\n  cpusPerTask: 0\n");
	cr_assert_eq(parse_slurm(&cfg, &sc), -1);
	cr_assert(strstr(util_last_error(), "slurm.cpusPerTask"), "%s", util_last_error());
	config_release_section(slurm_config_keys, &sc);
	config_release(&cfg);
	load(&cfg, "trial:\n  command: t\nslurm:\n  partitoin: gpu\n");
	cr_assert_eq(parse_slurm(&cfg, &sc), -1);
	cr_assert(strstr(util_last_error(), "partitoin"), "%s", util_last_error());
	config_release_section(slurm_config_keys, &sc);
	config_release(&cfg);
}

Test(slurm, time_format)
{
	char buf[32];
	slurm_format_time(1, buf, sizeof(buf));
	cr_assert_str_eq(buf, "0-00:01:00");
	slurm_format_time(3600, buf, sizeof(buf));
	cr_assert_str_eq(buf, "0-01:00:00");
	slurm_format_time(3601, buf, sizeof(buf));
	cr_assert_str_eq(buf, "0-01:01:00");
	slurm_format_time(2 * 86400 + 90, buf, sizeof(buf));
	cr_assert_str_eq(buf, "2-00:02:00");
}

Test(slurm, state_mapping)
{
	static const struct {
		const char *slurm;
		int ours;
		enum aah_job_state want;
		int final;
	} cases[] = {
		{ "PENDING", 0, AAH_JOB_PENDING, 0 },
		{ "CONFIGURING", 0, AAH_JOB_PENDING, 0 },
		{ "RUNNING", 0, AAH_JOB_RUNNING, 0 },
		{ "COMPLETING", 0, AAH_JOB_RUNNING, 0 },
		{ "COMPLETED", 0, AAH_JOB_SUCCEEDED, 1 },
		{ "FAILED", 0, AAH_JOB_FAILED, 1 },
		{ "CANCELLED", 0, AAH_JOB_FAILED, 1 },
		{ "CANCELLED by 0", 0, AAH_JOB_FAILED, 1 },
		{ "CANCELLED by 0", 1, AAH_JOB_CANCELED, 1 },
		/* canceled by us but still COMPLETING: its processes may run on, so
		 * a stop waits on (issue 49: it used to count as canceled) */
		{ "COMPLETING", 1, AAH_JOB_RUNNING, 0 },
		{ "NODE_FAIL", 1, AAH_JOB_CANCELED, 1 },
		{ "RUNNING", 1, AAH_JOB_RUNNING, 0 },
		{ "TIMEOUT", 0, AAH_JOB_TIMEOUT, 1 },
		{ "DEADLINE", 0, AAH_JOB_TIMEOUT, 1 },
		{ "NODE_FAIL", 0, AAH_JOB_FAILED, 1 },
		{ "BOOT_FAIL", 0, AAH_JOB_FAILED, 1 },
		{ "OUT_OF_MEMORY", 0, AAH_JOB_FAILED, 1 },
		{ "PREEMPTED", 0, AAH_JOB_FAILED, 1 },
		{ "SOMETHING_NEW", 0, AAH_JOB_RUNNING, 0 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		int final = -1;
		enum aah_job_state s = slurm_map_state(cases[i].slurm, cases[i].ours, &final);
		cr_assert_eq(s, cases[i].want, "%s (ours %d): got %s", cases[i].slurm, cases[i].ours,
			     aah_job_state_name(s));
		cr_assert_eq(final, cases[i].final, "%s: final %d", cases[i].slurm, final);
	}
}

Test(slurm, disrupted_states)
{
	/* the cluster took a node (or the job) away: relaunched, not charged */
	cr_assert(slurm_state_disrupted("NODE_FAIL"));
	cr_assert(slurm_state_disrupted("BOOT_FAIL"));
	cr_assert(slurm_state_disrupted("PREEMPTED"));
	/* the job's own failure, someone's scancel, a limit: a retry, charged */
	static const char *const own[] = { "FAILED", "CANCELLED by 0", "OUT_OF_MEMORY", "TIMEOUT",
					    "COMPLETED", "RUNNING", "SOMETHING_NEW" };
	for (size_t i = 0; i < ARRAY_SIZE(own); i++)
		cr_assert_not(slurm_state_disrupted(own[i]), "%s", own[i]);
}

Test(slurm, describe)
{
	char buf[256];
	slurm_describe("42", "OUT_OF_MEMORY", "OutOfMemory", 137, buf, sizeof(buf));
	cr_assert_str_eq(buf, "slurm job 42 OUT_OF_MEMORY: out of memory (OutOfMemory), killed by signal 9");
	slurm_describe("7", "FAILED", "NonZeroExitCode", 3, buf, sizeof(buf));
	cr_assert_str_eq(buf, "slurm job 7 FAILED (NonZeroExitCode), exit code 3");
	slurm_describe("8", "CANCELLED by 0", "None", 0, buf, sizeof(buf));
	cr_assert_str_eq(buf, "slurm job 8 CANCELLED: canceled outside aah (scancel)");
	slurm_describe("9", "NODE_FAIL", "", -1, buf, sizeof(buf));
	cr_assert_str_eq(buf, "slurm job 9 NODE_FAIL: a node of the job failed");
}

Test(slurm, parse_squeue_rows)
{
	/* Captured from `squeue -h -t all -o %i|%T|%r` on Slurm 22.05. */
	const char *out = "17|RUNNING|None\n18|PENDING|JobHeldUser\n19|FAILED|NonZeroExitCode\n"
			  "garbage line\n20|COMPLETED|None";
	struct slurm_row rows[8];
	cr_assert_eq(slurm_parse_rows(out, 0, rows, 8), 4);
	cr_assert_str_eq(rows[0].id, "17");
	cr_assert_str_eq(rows[0].state, "RUNNING");
	cr_assert_str_eq(rows[1].reason, "JobHeldUser");
	cr_assert_str_eq(rows[2].state, "FAILED");
	cr_assert_eq(rows[2].exit_code, -1);
	cr_assert_str_eq(rows[3].id, "20");
	cr_assert_str_eq(rows[3].state, "COMPLETED");
}

Test(slurm, parse_sacct_rows)
{
	/* `sacct -n -P -X -o JobID,State,ExitCode,Reason` (sacct's own format). */
	const char *out = "1234|CANCELLED by 1000|0:15|None\n1235|OUT_OF_MEMORY|0:125|None\n"
			  "1236|TIMEOUT|0:0|TimeLimit\n1237|FAILED|2:0|NonZeroExitCode\n";
	struct slurm_row rows[8];
	cr_assert_eq(slurm_parse_rows(out, 1, rows, 8), 4);
	cr_assert_str_eq(rows[0].state, "CANCELLED by 1000");
	cr_assert_eq(rows[0].exit_code, 128 + 15);
	cr_assert_eq(rows[2].exit_code, 0);
	cr_assert_str_eq(rows[2].reason, "TimeLimit");
	cr_assert_eq(rows[3].exit_code, 2);
	cr_assert_eq(slurm_parse_rows(out, 1, rows, 1), 1);
}

Test(slurm, parse_exit_codes)
{
	cr_assert_eq(slurm_parse_exit("0:0"), 0);
	cr_assert_eq(slurm_parse_exit("3:0"), 3);
	cr_assert_eq(slurm_parse_exit("0:9"), 137);
	cr_assert_eq(slurm_parse_exit("x"), -1);
	cr_assert_eq(slurm_parse_exit("3"), -1);
	cr_assert_eq(slurm_parse_exit(""), -1);
	/* From `scontrol -o show job 1` on Slurm 22.05. */
	const char *sc = "JobId=1 JobName=j.sh UserId=root(0) GroupId=root(0) Priority=1 "
			 "JobState=FAILED Reason=NonZeroExitCode Dependency=(null) Requeue=0 "
			 "Restarts=0 BatchFlag=1 Reboot=0 ExitCode=3:0 DerivedExitCode=0:0";
	cr_assert_eq(slurm_scontrol_exit(sc), 3);
	cr_assert_eq(slurm_scontrol_exit("JobId=1 DerivedExitCode=0:0"), -1);
}

Test(slurm, sbatch_output_and_errors)
{
	char id[32];
	cr_assert_eq(slurm_parse_job_id("123\n", id, sizeof(id)), 0);
	cr_assert_str_eq(id, "123");
	cr_assert_eq(slurm_parse_job_id("456;cluster2\n", id, sizeof(id)), 0);
	cr_assert_str_eq(id, "456");
	cr_assert_eq(slurm_parse_job_id("Submitted batch job 5", id, sizeof(id)), -1);
	cr_assert_eq(slurm_parse_job_id("", id, sizeof(id)), -1);
	cr_assert(slurm_error_transient("sbatch: error: Batch job submission failed: Unable to "
					"contact slurm controller (connect failure)", 1));
	cr_assert(slurm_error_transient("", PROC_TIMEOUT_STATUS));
	cr_assert(!slurm_error_transient("sbatch: error: Batch job submission failed: Invalid "
					 "partition name specified", 1));
	cr_assert(!slurm_error_transient("sbatch: error: Batch job submission failed: Invalid "
					 "account or account/partition combination specified", 1));
}

Test(slurm, host_substitution)
{
	char *hosts[] = { "gpu-a01", "gpu-a02" };
	char *s = slurm_subst_hosts("tcp://@aah-host-0@:29500", hosts, 2, 1);
	cr_assert_str_eq(s, "tcp://gpu-a01:29500");
	free(s);
	s = slurm_subst_hosts("@aah-host-0@,@aah-host-1@", hosts, 2, 1);
	cr_assert_str_eq(s, "gpu-a01,gpu-a02");
	free(s);
	/* Packed: trial nodes 0,1 on Slurm node 0, 2,3 on node 1. */
	s = slurm_subst_hosts("@aah-host-1@ @aah-host-2@ @aah-host-3@", hosts, 2, 2);
	cr_assert_str_eq(s, "gpu-a01 gpu-a02 gpu-a02");
	free(s);
	/* Out of range or malformed: left alone. */
	s = slurm_subst_hosts("@aah-host-9@ @aah-host-x@ a@b", hosts, 2, 1);
	cr_assert_str_eq(s, "@aah-host-9@ @aah-host-x@ a@b");
	free(s);
}

/* A trial of a device pool runs on its share (3, 5, ...): tasksPerNode is
 * the most per Slurm node, the job packs the share evenly under it. */
Test(slurm, pool_share_packs_under_tasks_per_node)
{
	static const struct { unsigned per, share, slurm_nodes, tasks; } cases[] = {
		{ 8, 3, 1, 3 }, { 8, 5, 1, 5 }, { 8, 8, 1, 8 }, { 4, 8, 2, 4 }, { 4, 6, 2, 3 }, { 4, 5, 5, 1 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct aah_config cfg;
		struct slurm_config sc;
		struct aah_launch l;
		struct strbuf script = STRBUF_INIT;
		char *text = xstrfmt("trial:\n  command: t\n  nodes: %u\npool:\n  devices: 8\n"
				     "slurm:\n  tasksPerNode: %u\n", cases[i].share, cases[i].per);
		load(&cfg, text);
		cr_assert_eq(parse_slurm(&cfg, &sc), 0, "%s", util_last_error());
		build(&cfg, &l);
		cr_assert_eq(slurm_script_build(&sc, &cfg, &l, "/c", &script), 0, "%s", util_last_error());
		char *nodes = xstrfmt("#SBATCH --nodes=%u\n", cases[i].slurm_nodes);
		char *tasks = xstrfmt("#SBATCH --ntasks-per-node=%u\n", cases[i].tasks);
		cr_assert(strstr(script.buf, nodes) && strstr(script.buf, tasks), "share %u per %u:\n%s",
			  cases[i].share, cases[i].per, script.buf);
		free(nodes);
		free(tasks);
		free(text);
		strbuf_release(&script);
		launch_release(&l);
		config_release_section(slurm_config_keys, &sc);
		config_release(&cfg);
	}
}

/* The shipped ImageNet config on Slurm (examples/imagenet-slurm.yml): one
 * trial = one node's 8 GPUs, one process per GPU (8 tasks with the node's 8
 * GPUs as gres), each rank on its own device (DEVICE_ID = its local rank),
 * --backend cuda and bf16 on every rank's command line. */
Test(slurm, shipped_imagenet_config_runs_one_process_per_gpu)
{
	struct aah_config cfg;
	struct slurm_config sc;
	struct aah_launch l;
	struct strbuf script = STRBUF_INIT;
	cr_assert_eq(backend_config_load("examples/imagenet-slurm.yml", &cfg), 0, "%s", util_last_error());
	cr_assert_null(cfg.notice, "%s", cfg.notice);
	cr_assert_eq(parse_slurm(&cfg, &sc), 0, "%s", util_last_error());
	build(&cfg, &l);
	cr_assert_eq(slurm_script_build(&sc, &cfg, &l, "/userhome", &script), 0, "%s",
		     util_last_error());
	cr_assert(strstr(script.buf, "#SBATCH --nodes=1\n"), "%s", script.buf);
	cr_assert(strstr(script.buf, "#SBATCH --ntasks-per-node=8\n"), "%s", script.buf);
	cr_assert(strstr(script.buf, "#SBATCH --gres=gpu:8\n"), "%s", script.buf);
	cr_assert_eq(l.nranks, 8);
	for (unsigned i = 0; i < l.nranks; i++) {
		const struct strvec *a = &l.ranks[i].argv;
		int cuda = 0, bf16 = 0, rule = 0;
		for (size_t k = 0; k + 1 < a->n; k++) {
			cuda |= !strcmp(a->v[k], "--backend") && !strcmp(a->v[k + 1], "cuda");
			bf16 |= !strcmp(a->v[k], "--precision") && !strcmp(a->v[k + 1], "bf16");
			rule |= !strcmp(a->v[k], "--batch_rule") && !strcmp(a->v[k + 1], "aiperf");
		}
		cr_assert(cuda && bf16 && rule,
			  "rank %u lacks --backend cuda, --precision bf16 or --batch_rule aiperf", i);
		char want[16];
		snprintf(want, sizeof(want), "%u", i);
		cr_assert_str_eq(strvec_getenv(&l.ranks[i].env, "DEVICE_ID"), want);
		cr_assert_str_eq(strvec_getenv(&l.ranks[i].env, "CUDA_VISIBLE_DEVICES"), want);
	}
	strbuf_release(&script);
	launch_release(&l);
	config_release_section(slurm_config_keys, &sc);
	config_release(&cfg);
}
