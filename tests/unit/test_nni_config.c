/* Unit tests for runner/config/nni_config: NNI's v2 experiment config read
 * as aah's keys. NNI's own example configs (tests/fixtures/nni/upstream/,
 * from microsoft/nni v2.10.1: SOURCE.md) load or are refused where aah
 * cannot do what they ask; every key maps or is refused at its
 * file:line:col; errors of the keys aah checks name them as the file
 * writes them; NNI's matching (any case, underscores) and durations. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "runner/backend/backend.h" /* backend_config_load: the registry's platforms */
#include "runner/config/config.h"
#include "runner/config/nni_config.h"
#include "util.h"

#define UPSTREAM "tests/fixtures/nni/upstream/mnist-pytorch"

static char tmpdir[64];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/aah-nnicfg-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	util_set_quiet(1);
}

static void teardown(void)
{
	fileio_remove_tree(tmpdir);
}

TestSuite(nni_config, .init = setup, .fini = teardown);

/* <tmp>/c.yml holding text; its path (static). */
static const char *write_config(const char *text)
{
	static char path[96];
	snprintf(path, sizeof(path), "%s/c.yml", tmpdir);
	cr_assert_eq(fileio_write_atomic(path, text, strlen(text)), 0);
	return path;
}

static const struct nni_config_entry *mapped(const struct aah_config *cfg, const char *written)
{
	for (size_t i = 0; cfg->nni && i < cfg->nni->n; i++)
		if (!strcmp(cfg->nni->v[i].written, written))
			return &cfg->nni->v[i];
	cr_assert_fail("no entry for '%s'", written);
	return NULL;
}

Test(nni_config, nnis_minimal_example_loads_as_aahs_keys)
{
	struct aah_config cfg;
	cr_assert_eq(backend_config_load(UPSTREAM "/config.yml", &cfg), 0, "%s", util_last_error());
	cr_assert_not_null(cfg.nni);
	cr_assert_str_eq(cfg.trial.command, "python3 mnist.py");
	cr_assert_str_eq(cfg.platform, "local");
	cr_assert_str_eq(cfg.tuner.builtin_tuner_name, "TPE");
	cr_assert_str_eq(cfg.search_space_path, "search_space.json");
	cr_assert_eq(cfg.trial.gpu_num, 0);
	cr_assert_eq(cfg.trial_concurrency, 1);
	const struct nni_config_entry *e = mapped(&cfg, "trialCommand");
	cr_assert_str_eq(e->aah, "trial.command");
	cr_assert_eq(e->line, 6);
	cr_assert_eq(e->col, 1);
	cr_assert_str_eq(mapped(&cfg, "trainingService.platform")->aah, "trainingServicePlatform");
	cr_assert_str_eq(mapped(&cfg, "tuner.classArgs")->aah, "tuner.classArgs");
	cJSON *space = NULL;
	cr_assert_eq(config_search_space(&cfg, &space), 0, "%s", util_last_error());
	cr_assert_not_null(cJSON_GetObjectItemCaseSensitive(space, "momentum"));
	cJSON_Delete(space);
	config_release(&cfg);
}

Test(nni_config, nnis_detailed_example_with_its_inline_search_space)
{
	struct aah_config cfg;
	cr_assert_eq(backend_config_load(UPSTREAM "/config_detailed.yml", &cfg), 0, "%s",
		     util_last_error());
	cr_assert_str_eq(cfg.experiment_name, "MNIST");
	cr_assert_eq(cfg.trial.gpu_num, 1);
	cr_assert_eq(cfg.trial_concurrency, 4);
	cr_assert_eq(cfg.max_trial_num, 10);
	cr_assert_float_eq(cfg.max_exec_duration, 3600, 0);
	cr_assert_null(cfg.search_space_path);
	cr_assert_not_null(cfg.nni->search_space);
	cr_assert_not_null(ynode_get(cfg.nni->search_space, "batch_size"));
	const struct nni_config_entry *e = mapped(&cfg, "trainingService.useActiveGpu");
	cr_assert_null(e->aah);
	cr_assert(strstr(e->note, "no effect"), "%s", e->note);
	cr_assert(strstr(mapped(&cfg, "maxExperimentDuration")->note, "3600 s"));
	config_release(&cfg);
}

Test(nni_config, nnis_assessor_example_loads_and_says_aah_runs_none)
{
	struct aah_config cfg;
	cr_assert_eq(backend_config_load(UPSTREAM "/config_assessor.yml", &cfg), 0, "%s",
		     util_last_error());
	cr_assert_str_eq(cfg.assessor.builtin_assessor_name, "Curvefitting");
	cr_assert(strstr(mapped(&cfg, "assessor.name")->note, "aah runs no assessor"));
	config_release(&cfg);
}

static void refused(const char *path, const char *where, const char *why)
{
	struct aah_config cfg;
	cr_assert_eq(backend_config_load(path, &cfg), -1, "%s loaded", path);
	cr_assert(strstr(util_last_error(), where), "'%s' lacks '%s'", util_last_error(), where);
	cr_assert(strstr(util_last_error(), why), "'%s' lacks '%s'", util_last_error(), why);
}

Test(nni_config, what_aah_cannot_do_is_refused_where_it_is_written)
{
	refused(UPSTREAM "/config_hybrid.yml", "config_hybrid.yml:12:3: 'trainingService' lists",
		"NNI's hybrid mode");
	refused(UPSTREAM "/config_remote.yml",
		"config_remote.yml:11:13: 'trainingService.platform' is 'remote'",
		"platform: docker with docker.hosts");
	refused(write_config("trialCommand: x\ntrainingService:\n  platform: kubeflow\n"),
		"c.yml:3:13: 'trainingService.platform' is 'kubeflow'", "platform: kubernetes");
	refused(write_config("trialCommand: x\nadvisor:\n  name: BOHB\n"), "c.yml:2:1: 'advisor'",
		"give a tuner");
	refused(write_config("trialCommand: x\ntuner:\n  className: my.Tuner\n"),
		"c.yml:3:3: 'tuner.className'", "custom algorithm");
	refused(write_config("trialCommand: x\nexperimentType: nas\n"), "c.yml:2:17: 'experimentType'",
		"must be hpo");
	refused(write_config("trialCommand: x\ntrainingService:\n  platform: local\n  gpuIndices: 1\n"),
		"c.yml:4:3: 'trainingService.gpuIndices'", "is not taken");
	refused(write_config("trialCommand: x\ntrainingService:\n  platform: local\n"
			     "  maxTrialNumberPerGpu: 2\n"),
		"c.yml:4:25: 'trainingService.maxTrialNumberPerGpu'", "must be 1");
	refused(write_config("trialCommand: x\nsharedStorage: {}\n"), "c.yml:2:1: 'sharedStorage'",
		"is not needed");
}

Test(nni_config, v1_keys_in_a_v2_file_are_refused_naming_v2s)
{
	refused(write_config("trialCommand: x\nmaxTrialNum: 3\n"),
		"c.yml:2:1: 'maxTrialNum' is NNI v1's key, and this file is v2 (it has 'trialCommand' "
		"at 1:1): write 'maxTrialNumber'", "");
	refused(write_config("searchSpaceFile: s.json\ntrial:\n  command: x\n"),
		"c.yml:3:3: 'trial.command' is NNI v1's key", "write 'trialCommand'");
	refused(write_config("trialCommand: x\ntuner:\n  builtinTunerName: TPE\n"),
		"c.yml:3:3: 'tuner.builtinTunerName' is NNI v1's key", "write 'tuner.name'");
}

Test(nni_config, a_key_given_twice_names_both_places)
{
	refused(write_config("trialCommand: a\ntrainingService:\n  platform: local\n  trialCommand: b\n"),
		"c.yml:4:3: 'trainingService.trialCommand' gives 'trial.command' again: "
		"'trialCommand' at 1:1 gave it already", "");
	refused(write_config("trialCommand: a\nmaxTrialDuration: 1h\ntrial:\n  timeout: 2h\n"),
		"c.yml:4:3: 'trial.timeout' gives 'trial.timeout' again: 'maxTrialDuration' at 2:1", "");
}

Test(nni_config, errors_of_aahs_checks_name_the_key_as_written)
{
	refused(write_config("trialCommand: x\nmaxTrialNumber: 0\n"),
		"c.yml:2:17: 'maxTrialNumber' must be greater than 0", "");
	refused(write_config("trialCommand: x\ntrialGpuNumber: many\n"),
		"c.yml:2:17: 'trialGpuNumber' must be an integer", "");
	refused(write_config("trialCommand: ''\n"), "c.yml:1:15: 'trialCommand' must not be empty", "");
	refused(write_config("searchSpaceFile: s.json\ntrainingService:\n  platform: local\n"),
		"c.yml:1:1: 'trialCommand' is required", "");
	refused(write_config("trialCommand: x\ntrialConcurency: 2\n"),
		"c.yml:2:1: 'trialConcurency' is not a known key (did you mean 'trialConcurrency'?)", "");
}

Test(nni_config, keys_match_as_nni_matches_them_and_durations_read_as_nnis)
{
	static const struct { const char *text; double secs; } durations[] = {
		{ "90", 90 }, { "1.5h", 5400 }, { "2D", 172800 }, { "0.5s", 1 }, { "10m", 600 },
		{ "1 h", 3600 },
	};
	for (size_t i = 0; i < sizeof(durations) / sizeof(durations[0]); i++) {
		char *text = xstrfmt("trial_command: x\nMax_Experiment_Duration: %s\nTrialConcurrency: 3\n",
				     durations[i].text);
		struct aah_config cfg;
		cr_assert_eq(backend_config_load(write_config(text), &cfg), 0, "%s: %s",
			     durations[i].text, util_last_error());
		cr_assert_float_eq(cfg.max_exec_duration, durations[i].secs, 0, "%s", durations[i].text);
		cr_assert_eq(cfg.trial_concurrency, 3);
		cr_assert_str_eq(cfg.trial.command, "x");
		config_release(&cfg);
		free(text);
	}
	static const char *const bad[] = { "10x", "-5", "0", "h", "inf", "[1]" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *text = xstrfmt("trialCommand: x\nmaxTrialDuration: %s\n", bad[i]);
		refused(write_config(text), "c.yml:2:", "must be a duration above 0 as NNI writes it");
		free(text);
	}
}

Test(nni_config, algorithm_names_are_nnis_in_any_case)
{
	static const char *const names[][2] = {
		{ "tpe", "TPE" }, { "RANDOM", "Random" }, { "networkmorphism", "NetworkMorphism" },
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *text = xstrfmt("trialCommand: x\ntuner:\n  name: %s\n", names[i][0]);
		struct aah_config cfg;
		cr_assert_eq(backend_config_load(write_config(text), &cfg), 0, "%s", util_last_error());
		cr_assert_str_eq(cfg.tuner.builtin_tuner_name, names[i][1]);
		config_release(&cfg);
		free(text);
	}
}

Test(nni_config, aahs_own_keys_pass_and_a_v1_file_is_left_as_it_is)
{
	struct aah_config cfg;
	cr_assert_eq(backend_config_load(write_config("trialCommand: x\nseed: 7\ntrial:\n  retries: 2\n"
						      "trainingService:\n  platform: docker\n"
						      "  image: aah-trial:cpu\n"),
					 &cfg), 0, "%s", util_last_error());
	cr_assert_eq(cfg.seed, 7);
	cr_assert_eq(cfg.trial.retries, 2);
	cr_assert_str_eq(cfg.platform, "docker");
	cr_assert_str_eq(mapped(&cfg, "trainingService.image")->aah, "docker.image");
	cr_assert_not_null(ynode_get(config_section(&cfg, "docker"), "image"));
	config_release(&cfg);
	cr_assert_eq(backend_config_load("tests/fixtures/upstream-configs/aiperf-thu-imagenet-config.yml",
					 &cfg), 0, "%s", util_last_error());
	cr_assert_null(cfg.nni, "AIPerf's v1 config is read as v1");
	config_release(&cfg);
}

Test(nni_config, check_describes_every_key)
{
	struct aah_config cfg;
	cr_assert_eq(backend_config_load(UPSTREAM "/config_detailed.yml", &cfg), 0);
	struct strbuf sb = STRBUF_INIT;
	nni_config_describe(cfg.nni, "d.yml", &sb);
	cr_assert(strstr(sb.buf, "  d.yml:25:1 trialCommand -> trial.command (run as written"), "%s",
		  sb.buf);
	cr_assert(strstr(sb.buf, "  d.yml:31:1 maxExperimentDuration -> maxExecDuration (3600 s)\n"),
		  "%s", sb.buf);
	cr_assert(strstr(sb.buf, "  d.yml:43:3 trainingService.useActiveGpu: no effect"), "%s", sb.buf);
	size_t lines = 0;
	for (const char *p = sb.buf; *p; p++)
		lines += *p == '\n';
	cr_assert_eq(lines, cfg.nni->n);
	strbuf_release(&sb);
	config_release(&cfg);
}
