/* Unit tests for runner/config/config.c: upstream AIPerf/AAH configs load
 * unchanged; every class of bad input is refused with file:line:col and
 * the key; docs/config.md documents every key of every table, and every
 * default it states is the one a config without the key gets. */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "runner/backend/backend.h"
#include "runner/cmd/cmd.h"
#include "runner/config/config.h"
#include "runner/config/gpucmd.h"
#include "strbuf.h"
#include "util.h"

/* The top-level keys for the registry's backends. */
static void registry_top_keys(struct config_top *top)
{
	struct config_platforms p;
	backend_platforms(&p);
	config_top_keys(top, &p);
}

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

/* Issue 13 #6: numbers past their range, each refused with the place, the
 * key, the range and the value. */
Test(config, numbers_out_of_range)
{
	expect_error("maxExecDuration: 99999999999999999999d\n" MINIMAL, ":1:18: 'maxExecDuration'",
		     "between 0 and 365d, got 99999999999999999999d");
	expect_error("maxExecDuration: 9223372036854775807\n" MINIMAL, "'maxExecDuration'",
		     "between 0 and 365d, got 9223372036854775807");
	expect_error("maxTrialNum: 99999999999999999999\n" MINIMAL, "'maxTrialNum'",
		     "between 1 and 999999, got 99999999999999999999");
	expect_error("maxTrialNum: 1000000\n" MINIMAL, "'maxTrialNum'", "between 1 and 999999");
	expect_error(MINIMAL "  masterPort: 70000\n", ":3:15: 'trial.masterPort'",
		     "between 0 and 65535, got 70000");
	expect_error("report:\n  sampleInterval: 1e-9\n" MINIMAL, "'report.sampleInterval'",
		     "between 1s and 365d, got 1e-9");
	expect_error("trialConcurrency: 100001\n" MINIMAL, "'trialConcurrency'", "between 1 and 10000");
	expect_error("kubernetes:\n  pollInterval: 0s\n" MINIMAL, "'kubernetes.pollInterval'",
		     "between 0.01s and 1h, got 0s");
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
	/* a pool's device is one GPU, one rank each */
	expect_error(MINIMAL "  gpuNum: 2\npool:\n  devices: 8\n", "'trial.gpuNum'",
		     "pool.devices");
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
	struct config_top top;
	registry_top_keys(&top);
	config_walk_keys(top.keys, "", check_key, &c);
	for (const struct aah_backend *const *b = aah_backends; *b; b++)
		if ((*b)->config_keys)
			config_walk_keys((*b)->config_keys, (*b)->name, check_key, &c);
	cr_assert_eq(c.missing, 0, "%d keys are not documented in docs/config.md", c.missing);
	free(doc);
}

/* ---- every default docs/config.md states is the one the code applies ---- */

/* The default column of the docs/config.md row of `path`, backticks
 * dropped; NULL when no row documents it. The caller frees it. */
static char *documented_cell(const char *doc, const char *path, int column)
{
	char *needle = xstrfmt("| `%s` |", path);
	const char *row = strstr(doc, needle);
	free(needle);
	if (!row)
		return NULL;
	const char *cell = row + 1;
	for (int i = 0; i < column && cell; i++) {  /* past the cells before it */
		cell = strchr(cell, '|');
		cell = cell ? cell + 1 : NULL;
	}
	const char *end = cell ? strchr(cell, '|') : NULL;
	cr_assert_not_null(end, "docs/config.md: the row of `%s` has no column %d", path, column);
	struct strbuf sb = STRBUF_INIT;
	for (const char *c = cell; c < end; c++)
		if (*c != '`')
			strbuf_addch(&sb, *c);
	strbuf_trim_trailing(&sb);
	char *text = strbuf_detach(&sb, NULL);
	size_t lead = strspn(text, " ");
	memmove(text, text + lead, strlen(text + lead) + 1);
	return text;
}

/* The default column of a key's row in docs/config.md, or NULL. */
static char *documented_default(const char *doc, const char *path)
{
	return documented_cell(doc, path, 2);
}

/* The value a documented default states: "VALUE" or "VALUE (why)"; NULL
 * for "(why)" alone, which documents that no value is applied. */
static char *stated_value(const char *cell)
{
	if (!*cell || cell[0] == '(')
		return NULL;
	const char *why = strstr(cell, " (");
	return why ? xstrndup(cell, (size_t)(why - cell)) : xstrdup(cell);
}

struct default_check {
	const char *doc;
	int checked, wrong;
};

static void wrong_default(struct default_check *c, const char *path, const char *doc_value,
			  const char *applied)
{
	cr_log_error("%s: docs/config.md says the default is '%s', the code applies %s", path,
		     doc_value ? doc_value : "(nothing)", applied);
	c->wrong++;
}

/* Compare one key's applied value (at base + offset) with its documented
 * default. */
static void check_default(struct default_check *c, const char *path, const struct cfg_key *k,
			  const char *base)
{
	if (k->rule && k->rule->required)
		return;  /* a minimal config sets it */
	char *cell = documented_default(c->doc, path);
	if (!cell) {
		cr_log_error("docs/config.md has no row for `%s`", path);
		c->wrong++;
		return;
	}
	char *want = stated_value(cell);
	const void *field = base + k->offset;
	char applied[256];
	double d = 0;
	long l = 0;
	c->checked++;
	switch (k->type) {
	case CFG_STR:
	case CFG_ENUM: {
		const char *got = *(char *const *)field;
		if (!!got != !!want || (got && strcmp(got, want)))
			wrong_default(c, path, want, got ? got : "nothing");
		break;
	}
	case CFG_INT:
		if (want && util_parse_long(want, LONG_MIN, LONG_MAX, &l) < 0)
			cr_assert_fail("%s: '%s' is not an integer", path, want);
		snprintf(applied, sizeof(applied), "%ld", *(const long *)field);
		if (*(const long *)field != l)
			wrong_default(c, path, want, applied);
		break;
	case CFG_NUM:
	case CFG_DURATION:
		if (want && (k->type == CFG_NUM ? util_parse_double(want, &d)
						: config_parse_duration(want, &d)) < 0)
			cr_assert_fail("%s: '%s' is not a %s", path, want,
				       k->type == CFG_NUM ? "number" : "duration");
		snprintf(applied, sizeof(applied), "%g", *(const double *)field);
		if (fabs(*(const double *)field - d) > 1e-9)
			wrong_default(c, path, want, applied);
		break;
	case CFG_BOOL:
		if (want && strcmp(want, "true") && strcmp(want, "false"))
			cr_assert_fail("%s: '%s' is not true or false", path, want);
		if (*(const int *)field != (want && !strcmp(want, "true")))
			wrong_default(c, path, want, *(const int *)field ? "true" : "false");
		break;
	case CFG_ANY: {
		/* A free-form default is YAML; NULL reads as empty. */
		struct ynode *n = NULL;
		if (want)
			cr_assert_eq(yamltree_parse(path, want, strlen(want), &n), 0,
				     "%s: '%s' is not YAML", path, want);
		const struct ynode *got = *(const struct ynode *const *)field;
		cJSON *w = n ? ynode_to_json(n) : NULL, *g = got ? ynode_to_json(got) : NULL;
		int empty = !w || ((cJSON_IsArray(w) || cJSON_IsObject(w)) && !w->child);
		int same = g ? w && cJSON_Compare(w, g, 1) : empty;
		char *text = g ? cJSON_PrintUnformatted(g) : NULL;
		if (!same)
			wrong_default(c, path, want, text ? text : "nothing");
		free(text);
		cJSON_Delete(w);
		cJSON_Delete(g);
		ynode_free(n);
		break;
	}
	default:
		cr_assert_fail("%s: unexpected key type %d", path, k->type);
	}
	free(want);
	free(cell);
}

static void check_table(struct default_check *c, const char *prefix, const struct cfg_key *keys,
			const char *base)
{
	for (const struct cfg_key *k = keys; k->name; k++) {
		char *path = *prefix ? xstrfmt("%s.%s", prefix, k->name) : xstrdup(k->name);
		if (k->type == CFG_SECTION)
			check_table(c, path, k->section, base + k->offset);
		else
			check_default(c, path, k, base);
		free(path);
	}
}

static size_t count_keys(const struct cfg_key *keys)
{
	size_t n = 0;
	for (const struct cfg_key *k = keys; k->name; k++)
		n += k->type == CFG_SECTION ? count_keys(k->section) : !(k->rule && k->rule->required);
	return n;
}

Test(config, documented_defaults_are_the_applied_ones)
{
	char *doc;
	cr_assert_eq(fileio_read("docs/config.md", 0, &doc, NULL), 0);
	struct default_check c = { doc, 0, 0 };
	struct aah_config cfg;
	char *p = write_config(MINIMAL);
	cr_assert_eq(backend_config_load(p, &cfg), 0, "%s", util_last_error());
	struct config_top top;
	registry_top_keys(&top);
	size_t want = count_keys(top.keys);
	check_table(&c, "", top.keys, (const char *)&cfg);
	/* Each backend parses its section as its init does; no section here. */
	for (const struct aah_backend *const *b = aah_backends; *b; b++) {
		if (!(*b)->config_keys)
			continue;
		char *scratch = xcalloc(1, (*b)->config_size);
		cr_assert_eq(config_parse_section(&cfg, (*b)->name, NULL, (*b)->config_keys, scratch),
			     0, "%s", util_last_error());
		want += count_keys((*b)->config_keys);
		check_table(&c, (*b)->name, (*b)->config_keys, scratch);
		config_release_section((*b)->config_keys, scratch);
		free(scratch);
	}
	cr_assert_eq((size_t)c.checked, want);
	cr_assert_gt(c.checked, 60);
	cr_assert_eq(c.wrong, 0, "%d documented defaults differ from the applied ones", c.wrong);
	config_release(&cfg);
	free(p);
	free(doc);
}

/* The type column of every number key states the range the code checks
 * (issue 13 #6: one place for both). */
static void check_type(const char *path, const struct cfg_key *k, void *arg)
{
	const char *doc = ((const char *const *)arg)[0];
	int *wrong = (int *)((const char *const *)arg)[1];
	if (k->type != CFG_INT && k->type != CFG_NUM && k->type != CFG_DURATION)
		return;
	cr_assert(k->rule && !k->rule->required && k->rule->min < k->rule->max,
		  "number key '%s' has no range", path);
	char *cell = documented_cell(doc, path, 1);
	char *want = config_describe_type(k);
	if (!cell || strcmp(cell, want)) {
		cr_log_error("docs/config.md: the type of `%s` is '%s'; the key table says '%s'", path,
			     cell ? cell : "(no row)", want);
		(*wrong)++;
	}
	free(cell);
	free(want);
}

Test(config, documented_ranges_are_the_checked_ones)
{
	char *doc;
	int wrong = 0;
	cr_assert_eq(fileio_read("docs/config.md", 0, &doc, NULL), 0);
	const void *arg[2] = { doc, &wrong };
	struct config_top top;
	registry_top_keys(&top);
	config_walk_keys(top.keys, "", check_type, arg);
	for (const struct aah_backend *const *b = aah_backends; *b; b++)
		if ((*b)->config_keys)
			config_walk_keys((*b)->config_keys, (*b)->name, check_type, arg);
	cr_assert_eq(wrong, 0, "%d documented types differ from the key tables", wrong);
	free(doc);
}

/* One process per GPU unless the config says otherwise: gpuNum alone picks
 * device mode; mpi's one process per node with several GPUs is refused
 * unless processMode: node is set, and then (as node with gpuNum > 1 is)
 * warned about, naming the key. */
Test(config, gpu_trials_run_one_process_per_gpu)
{
	static const struct {
		const char *trial;
		const char *mode;
	} cases[] = {
		{ "  gpuNum: 8\n", "device" },
		{ "  gpuNum: 1\n", "device" },
		{ "", "node" },
		{ "  gpuNum: 8\n  processMode: node\n", "node" },
		{ "  gpuNum: 8\n  processMode: node\n  launcher: mpi\n", "node" },
		{ "  gpuNum: 1\n  launcher: mpi\n", "node" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct aah_config cfg;
		char *text = xstrfmt(MINIMAL "%s", cases[i].trial);
		char *p = write_config(text);
		cr_assert_eq(cmd_load_config(p, &cfg), 0, "%s: %s", text, util_last_error());
		cr_assert_str_eq(cfg.trial.process_mode, cases[i].mode, "%s", text);
		int warned = cfg.notice &&
			     strstr(cfg.notice, "'trial.processMode' node with trial.gpuNum 8") &&
			     strstr(cfg.notice, p);
		cr_assert_eq(warned, strstr(text, "processMode: node") && strstr(text, "gpuNum: 8"),
			     "%s: %s", text, cfg.notice ? cfg.notice : "(no notice)");
		config_release(&cfg);
		free(p);
		free(text);
	}
	expect_error(MINIMAL "  gpuNum: 8\n  launcher: mpi\n", "'trial.launcher' 'mpi' starts one "
		     "process per node (7 GPUs of each node's 8 would stay unused)",
		     "trial.processMode: node");
}

/* config knows no backend: it takes the platforms it is given (issue 37,
 * it used to call the registry back through config_platform). */
Test(config, takes_the_platforms_it_is_given)
{
	struct config_platforms p = { 2, { "alpha", "beta" }, { "the first", "the second" } };
	struct aah_config cfg;
	char *path = write_config("trainingServicePlatform: beta\nbeta:\n  anything: 1\n" MINIMAL);
	cr_assert_eq(config_load(path, &cfg, &p), 0, "%s", util_last_error());
	cr_assert_str_eq(cfg.platform, "beta");
	cr_assert_not_null(config_section(&cfg, "beta"));
	cr_assert_null(config_section(&cfg, "alpha"));
	config_release(&cfg);
	free(path);
	path = write_config("trainingServicePlatform: local\n" MINIMAL);
	cr_assert_eq(config_load(path, &cfg, &p), -1, "a platform not given was accepted");
	cr_assert(strstr(util_last_error(), "alpha") && strstr(util_last_error(), "beta"),
		  "%s", util_last_error());
	free(path);
}

/* AIPerf's GPU command form: the ids of CUDA_VISIBLE_DEVICES in a command. */
Test(config, gpu_ids_in_the_trial_command)
{
	static const struct {
		const char *cmd, *ids;
		int n;
	} cases[] = {
		{ "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 srun -N 1 python3 x.py", "0,1,2,3,4,5,6,7", 8 },
		{ "CUDA_VISIBLE_DEVICES=0 python3 imagenet_train.py --slave 2", "0", 1 },
		{ "export CUDA_VISIBLE_DEVICES=\"2,3\"; aah-trial", "2,3", 2 },
		{ "cd x && CUDA_VISIBLE_DEVICES='4, 5,6' aah-trial", "4, 5,6", 3 },
		{ "env CUDA_VISIBLE_DEVICES=GPU-1a,GPU-2b aah-trial", "GPU-1a,GPU-2b", 2 },
		{ "aah-trial --x MY_CUDA_VISIBLE_DEVICES=0,1", "", 0 },
		{ "CUDA_VISIBLE_DEVICES= aah-trial", "", 0 },
		{ "aah-trial", "", 0 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char ids[64];
		cr_assert_eq(gpucmd_visible_devices(cases[i].cmd, ids, sizeof(ids)), cases[i].n, "%s",
			     cases[i].cmd);
		cr_assert_str_eq(ids, cases[i].ids, "%s", cases[i].cmd);
	}
	char *w = gpucmd_notice("c.yml", 24, 12, cases[0].cmd, 0);
	cr_assert(w && strstr(w, "c.yml:24:12: ") && strstr(w, "(8 GPUs) with trial.gpuNum 0") &&
		  strstr(w, "The fix, one line: gpuNum: 8"), "%s", w ? w : "(none)");
	free(w);
	cr_assert_null(gpucmd_notice("c.yml", 1, 1, cases[0].cmd, 8), "gpuNum counts them");
	cr_assert_not_null(w = gpucmd_notice("c.yml", 1, 1, cases[2].cmd, 1));
	free(w);
	cr_assert_null(gpucmd_notice("c.yml", 1, 1, cases[1].cmd, 0), "one GPU: nothing idles");
}
