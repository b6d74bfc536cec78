/* Unit tests for runner/config/config.c: upstream AIPerf/AAH configs load
 * unchanged; every class of bad input is refused with file:line:col and
 * the key; docs/config.md documents every key of every table. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "runner/backend/backend.h"
#include "runner/cmd/cmd.h"
#include "runner/config/config.h"
#include "util.h"

#define UPSTREAM "tests/fixtures/upstream-configs/"

static char tmpdir[64];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/aah-config-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	util_set_quiet(1);
}

static void teardown(void)
{
	fileio_remove_tree(tmpdir);
}

TestSuite(config, .init = setup, .fini = teardown);

static char *write_config(const char *text)
{
	char *p = xstrfmt("%s/config.yml", tmpdir);
	cr_assert_eq(fileio_write_atomic(p, text, strlen(text)), 0);
	return p;
}

/* Load text that must fail; the error must contain every needle. */
static void expect_error(const char *text, const char *n1, const char *n2)
{
	struct aah_config cfg;
	char *p = write_config(text);
	cr_assert_eq(cmd_load_config(p, &cfg), -1, "config should be refused:\n%s", text);
	const char *msg = util_last_error();
	cr_assert(strstr(msg, p), "error does not name the file: %s", msg);
	cr_assert(strstr(msg, n1), "error lacks '%s': %s", n1, msg);
	if (n2)
		cr_assert(strstr(msg, n2), "error lacks '%s': %s", n2, msg);
	free(p);
}

#define MINIMAL "trial:\n  command: aah-trial\n"

Test(config, upstream_configs_load_unchanged)
{
	static const char *const files[] = {
		"aiperf-thu-imagenet-config.yml", "aiperf-thu-imagenetTorch-config.yml",
		"aiperf-pcl-imagenet-config.yml", "aiperf-pcl-cifar10-config.yml",
		"aah-imagenet-config.yml",        "aah-cifar10-config.yml",
	};
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		struct aah_config cfg;
		char *p = xstrfmt(UPSTREAM "%s", files[i]);
		cr_assert_eq(cmd_load_config(p, &cfg), 0, "%s: %s", p, util_last_error());
		cr_assert_str_eq(cfg.tuner.builtin_tuner_name, "NetworkMorphism");
		cr_assert_str_eq(cfg.platform, "local");
		cr_assert_not_null(cfg.tuner.class_args);
		cr_assert_eq(cfg.trial.gpu_num, 0);
		cr_assert_eq(cfg.use_annotation, 0);
		cr_assert(cfg.max_exec_duration > 0);
		config_release(&cfg);
		free(p);
	}
}

Test(config, upstream_values_and_folded_command)
{
	struct aah_config cfg;
	cr_assert_eq(cmd_load_config(UPSTREAM "aiperf-thu-imagenetTorch-config.yml", &cfg), 0);
	cr_assert_eq(cfg.trial_concurrency, 1);
	cr_assert_eq(cfg.max_trial_num, 6);
	cr_assert(fabs(cfg.max_exec_duration - 3 * 3600) < 1e-9);
	cr_assert_str_eq(cfg.log_level, "trace");
	/* The folded multi-line command loses its continuation backslashes. */
	cr_assert_str_eq(cfg.trial.command,
			 "CUDA_VISIBLE_DEVICES=0 python3 imagenet_train.py --slave 1 --ip 127.0.0.1 "
			 "--batch_size 128 --warmup_1 2 --warmup_2 3 --warmup_3 4 --epoch 10 "
			 "--initial_lr 1e-1 --final_lr 0 --num_parallel_calls 10 "
			 "--train_data_dir /data/rawdata/train/ --val_data_dir /data/rawdata/val/");
	cJSON *ca = ynode_to_json(cfg.tuner.class_args);
	cr_assert_eq(cJSON_GetObjectItem(ca, "n_output_node")->valuedouble, 1000);
	cr_assert_str_eq(cJSON_GetObjectItem(ca, "optimize_mode")->valuestring, "maximize");
	cJSON_Delete(ca);
	config_release(&cfg);

	cr_assert_eq(cmd_load_config(UPSTREAM "aah-cifar10-config.yml", &cfg), 0);
	cr_assert(fabs(cfg.max_exec_duration - 72 * 3600) < 1e-9);
	cr_assert_eq(cfg.max_trial_num, 6000);
	config_release(&cfg);
}

Test(config, defaults_and_aah_keys)
{
	struct aah_config cfg;
	char *p = write_config("experimentName: x\n"
			       "workdir: wd\n"
			       "seed: 7\n"
			       "tuner:\n  builtinTunerName: Random\n  placement: trial\n"
			       "trial:\n  command: aah-trial\n  nodes: 2\n  gpuNum: 8\n"
			       "  timeout: 90m\n  retries: 2\n  processMode: device\n"
			       "  launchStyle: tensorflow\n  env:\n    FOO: bar\n"
			       "report:\n  minDuration: 2h\n  minAccuracy: 0.5\n");
	cr_assert_eq(cmd_load_config(p, &cfg), 0, "%s", util_last_error());
	cr_assert_eq(cfg.trial_concurrency, 1);
	cr_assert_str_eq(cfg.platform, "local");
	cr_assert_eq(cfg.trial.nodes, 2);
	cr_assert_eq(cfg.trial.gpu_num, 8);
	cr_assert(fabs(cfg.trial.timeout - 5400) < 1e-9);
	cr_assert_eq(cfg.trial.retries, 2);
	cr_assert_str_eq(cfg.trial.process_mode, "device");
	cr_assert_str_eq(cfg.tuner.placement, "trial");
	cr_assert(fabs(cfg.report.min_duration - 7200) < 1e-9);
	cr_assert(fabs(cfg.report.sample_interval - 360) < 1e-9);
	char *wd = xstrfmt("%s/wd", tmpdir);
	cr_assert_str_eq(cfg.workdir, wd);
	cr_assert_eq(cfg.seed, 7);
	free(wd);
	config_release(&cfg);
	free(p);
}

Test(config, durations)
{
	double d;
	cr_assert_eq(config_parse_duration("90", &d), 0);
	cr_assert_eq(d, 90);
	cr_assert_eq(config_parse_duration("1.5h", &d), 0);
	cr_assert_eq(d, 5400);
	cr_assert_eq(config_parse_duration("2d", &d), 0);
	cr_assert_eq(d, 172800);
	cr_assert_eq(config_parse_duration("10x", &d), -1);
	cr_assert_eq(config_parse_duration("h", &d), -1);
	cr_assert_eq(config_parse_duration("", &d), -1);
}

Test(config, typo_suggests_nearest_key)
{
	expect_error("trialConcurency: 2\n" MINIMAL, ":1:1:", "did you mean 'trialConcurrency'");
	expect_error(MINIMAL "  gpuNun: 1\n", ":3:3:", "did you mean 'gpuNum'");
	expect_error("tuner:\n  builtinTunerNam: TPE\n" MINIMAL, "'tuner.builtinTunerNam'",
		     "did you mean 'builtinTunerName'");
}

Test(config, wrong_types)
{
	expect_error("trialConcurrency: two\n" MINIMAL, ":1:19:", "must be an integer");
	expect_error("trialConcurrency: \"2\"\n" MINIMAL, "'trialConcurrency'", "integer");
	expect_error("useAnnotation: maybe\n" MINIMAL, "'useAnnotation'", "true or false");
	expect_error("maxExecDuration: 3 hours\n" MINIMAL, "'maxExecDuration'", "duration");
	expect_error("trial:\n  command: [a, b]\n", "'trial.command'", "single value");
	expect_error("tuner: NetworkMorphism\n" MINIMAL, "'tuner'", "mapping");
	expect_error("report:\n  minAccuracy: 1.5\n" MINIMAL, "'report.minAccuracy'", "between 0 and 1");
}

Test(config, negative_and_zero_counts)
{
	expect_error("trialConcurrency: 0\n" MINIMAL, "'trialConcurrency'", "greater than 0");
	expect_error("maxTrialNum: -3\n" MINIMAL, "'maxTrialNum'", "greater than 0");
	expect_error(MINIMAL "  nodes: 0\n", "'trial.nodes'", "greater than 0");
	expect_error(MINIMAL "  gpuNum: -1\n", "'trial.gpuNum'", "not be negative");
	expect_error(MINIMAL "  retries: -1\n", "'trial.retries'", "not be negative");
	expect_error("maxExecDuration: -5m\n" MINIMAL, "'maxExecDuration'", "negative");
}

Test(config, unknown_platform_and_tuner)
{
	expect_error("trainingServicePlatform: pai\n" MINIMAL, "'trainingServicePlatform'",
		     "local docker kubernetes slurm");
	expect_error("tuner:\n  builtinTunerName: SMAC\n" MINIMAL, "'tuner.builtinTunerName'",
		     "NetworkMorphism");
	expect_error(MINIMAL "  processMode: gpu\n", "'trial.processMode'", "node device");
}

Test(config, missing_trial_command)
{
	expect_error("trialConcurrency: 1\n", "'trial'", "is required");
	expect_error("trial:\n  codeDir: .\n", "'trial.command'", "is required");
	expect_error("trial:\n  command: \"\"\n", "'trial.command'", "empty");
	expect_error(MINIMAL "  processMode: device\n", "'trial.processMode'", "gpuNum");
}

Test(config, malformed_yaml)
{
	expect_error("trial:\n  command: [unclosed\n", "invalid YAML", NULL);
	expect_error("a: &x 1\nb: *x\n" MINIMAL, "aliases", NULL);
	expect_error("trialConcurrency: 1\ntrialConcurrency: 2\n" MINIMAL, "duplicate key",
		     "line 1");
	expect_error("- a\n- b\n", "mapping", NULL);
	expect_error("", "empty", NULL);
}

Test(config, oversized_and_deep_files_refused)
{
	size_t n = YAMLTREE_MAX_BYTES + 100;
	char *big = xmalloc(n + 1);
	memset(big, '#', n);
	big[n] = '\0';
	expect_error(big, "limit", NULL);
	free(big);

	char deep[64];
	memset(deep, '[', 40);
	deep[40] = '\0';
	expect_error(deep, "deeper than", NULL);
}

struct doc_check {
	const char *doc;
	int missing;
};

static void check_key(const char *path, const struct cfg_key *k, void *arg)
{
	struct doc_check *c = arg;
	char *needle = xstrfmt("`%s`", path);
	if (!strstr(c->doc, needle)) {
		cr_log_error("docs/config.md does not document `%s` (%s)", path, k->help);
		c->missing++;
	}
	free(needle);
}

Test(config, reference_documents_every_key)
{
	char *doc;
	cr_assert_eq(fileio_read("docs/config.md", 0, &doc, NULL), 0);
	struct doc_check c = { doc, 0 };
	config_walk_keys(config_keys, "", check_key, &c);
	for (const struct aah_backend *const *b = aah_backends; *b; b++)
		if ((*b)->config_keys)
			config_walk_keys((*b)->config_keys, (*b)->name, check_key, &c);
	cr_assert_eq(c.missing, 0, "%d keys are not documented in docs/config.md", c.missing);
	free(doc);
}
