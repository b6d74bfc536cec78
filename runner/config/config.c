/* config.c: config.yml -> struct aah_config through key tables. */
#include "runner/config/config.h"
#include "runner/config/gpucmd.h"
#include "fileio.h"
#include "jsonfile.h"
#include "strbuf.h"
#include "util.h"

#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const placements[] = { "master", "trial", NULL };
static const char *const process_modes[] = { "node", "device", NULL };
static const char *const launch_styles[] = { "pytorch", "tensorflow", NULL };
static const char *const launchers[] = { "direct", "mpi", NULL };
const char *const config_precisions[] = { "fp16", "bf16", "fp32", NULL };
const char *const config_report_rules[] = { "readme", "report.py", NULL };
const char *const config_epoch_charges[] = { "auto", "aiperf", "images", NULL };
static const char *const log_levels[] = { "trace", "debug", "info", "warning", "error",
					  "fatal", NULL };

#define TUNER(f) offsetof(struct aah_config_tuner, f)
static const struct cfg_key tuner_keys[] = {
	{ "builtinTunerName", CFG_STR, TUNER(builtin_tuner_name), 0, NULL, NULL, "None",
	  "NNI builtin tuner: NetworkMorphism, TPE, Random or None" },
	{ "classArgs", CFG_ANY, TUNER(class_args), 0, NULL, NULL, "{}",
	  "tuner arguments (NetworkMorphism: optimize_mode, task, input_width, input_channel, n_output_node, t_min, cooling, beta)" },
	{ "placement", CFG_ENUM, TUNER(placement), 0, placements, NULL, "master",
	  "where proposals are computed: on the master, or inside each trial's container before it trains (AAH)" },
	{ "maxLayers", CFG_INT, TUNER(max_layers), CFG_RANGE(0, 10000), NULL, NULL, "0 (tuner default)",
	  "largest network the tuner may propose, in layers" },
	{ "maxParams", CFG_NUM, TUNER(max_params), CFG_RANGE(0, 1e12), NULL, NULL, "0 (tuner default)",
	  "largest network the tuner may propose, in parameters" },
	{ "maxFlops", CFG_NUM, TUNER(max_flops), CFG_RANGE(0, 1e18), NULL, NULL, "0 (no limit)",
	  "costliest network the tuner may propose, in forward FLOPs per image of its conv and dense layers" },
	{ "inheritWeights", CFG_BOOL, TUNER(inherit_weights), 0, NULL, NULL, "false",
	  "a NetworkMorphism child starts from its parent's trained weights, mapped through the morphisms (morph.json)" },
	{ "initialArch", CFG_STR, TUNER(initial_arch), 0, NULL, NULL, "(the tuner's own start)",
	  "aah-arch/1 file the network morphism search starts from, relative to the config file" },
	{ NULL },
};

#define ASSESSOR(f) offsetof(struct aah_config_assessor, f)
static const struct cfg_key assessor_keys[] = {
	{ "builtinAssessorName", CFG_STR, ASSESSOR(builtin_assessor_name), 0, NULL, NULL, "(none)",
	  "NNI assessor name; accepted for compatibility, aah stops trials by their own patience" },
	{ "classArgs", CFG_ANY, ASSESSOR(class_args), 0, NULL, NULL, "{}", "assessor arguments" },
	{ NULL },
};

#define TRIAL(f) offsetof(struct aah_config_trial, f)
static const struct cfg_key trial_keys[] = {
	{ "command", CFG_STR, TRIAL(command), CFG_REQUIRED, NULL, NULL, "(required)",
	  "the trial's command line; injected values are passed as arguments, never spliced into it" },
	{ "codeDir", CFG_STR, TRIAL(code_dir), 0, NULL, NULL, ".",
	  "working directory of the trial, relative to the config file" },
	{ "gpuNum", CFG_INT, TRIAL(gpu_num), CFG_RANGE(0, 256), NULL, NULL, "0",
	  "GPUs per node of a trial (CUDA_VISIBLE_DEVICES gets a disjoint set per slot; in a pool, the ledger's ids)" },
	{ "nodes", CFG_INT, TRIAL(nodes), CFG_RANGE(1, 10000), NULL, NULL, "1",
	  "nodes (ranks) per trial" },
	{ "timeout", CFG_DURATION, TRIAL(timeout), CFG_RANGE(0, CFG_YEAR), NULL, NULL, "0 (none)",
	  "wall-clock limit of one trial attempt (s/m/h/d)" },
	{ "retries", CFG_INT, TRIAL(retries), CFG_RANGE(0, 100), NULL, NULL, "0",
	  "how many times a failed trial is run again" },
	{ "resumeOnRetry", CFG_BOOL, TRIAL(resume_on_retry), 0, NULL, NULL, "true",
	  "a trial run again (a retry, or requeued after a stop) gets --resume and continues from its last checkpoint" },
	{ "processMode", CFG_ENUM, TRIAL(process_mode), 0, process_modes, NULL,
	  "(node; device where trial.gpuNum > 0)",
	  "one trainer process per device, each on its own GPU (RANK_ID per card, the local rank its device), or one per node driving its GPUs itself" },
	{ "launchStyle", CFG_ENUM, TRIAL(launch_style), 0, launch_styles, NULL, "pytorch",
	  "pytorch: --init_method/--rank/--world_size; tensorflow adds --task_index, --ps_hosts, --worker_hosts, --job_name and TF_CONFIG" },
	{ "launcher", CFG_ENUM, TRIAL(launcher), 0, launchers, NULL, "direct",
	  "direct: the runner starts every rank itself; mpi: one mpirun over a hostfile starts them (ModelArts' MPI form)" },
	{ "masterPort", CFG_INT, TRIAL(master_port), CFG_RANGE(0, 65535), NULL, NULL, "0 (free port)",
	  "rendezvous port on the first host" },
	{ "dataUrl", CFG_STR, TRIAL(data_url), 0, NULL, NULL, "(none)",
	  "passed as --data_url (ModelArts)" },
	{ "trainUrl", CFG_STR, TRIAL(train_url), 0, NULL, NULL, "(the trial directory)",
	  "passed as --train_url (ModelArts)" },
	{ "fitExecDuration", CFG_BOOL, TRIAL(fit_exec_duration), 0, NULL, NULL, "false",
	  "export AAH_DEADLINE, the time maxExecDuration ends, so that a trial shortens its epoch budget and LR schedule to finish before it" },
	{ "ncclCommId", CFG_BOOL, TRIAL(nccl_comm_id), 0, NULL, NULL, "false",
	  "also export NCCL_COMM_ID=<first host>:<port>" },
	{ "env", CFG_ANY, TRIAL(env), 0, NULL, NULL, "{}",
	  "extra environment variables for every rank (a map of strings)" },
	{ NULL },
};

#define REPORT(f) offsetof(struct aah_config_report, f)
const struct cfg_key config_report_keys[] = {
	{ "minDuration", CFG_DURATION, REPORT(min_duration), CFG_RANGE(0, CFG_YEAR), NULL, NULL, "1h (AIPerf)",
	  "shortest run that counts as a valid benchmark result" },
	{ "minAccuracy", CFG_NUM, REPORT(min_accuracy), CFG_RANGE(0, 1), NULL, NULL, "0.70 (AIPerf)",
	  "best accuracy a valid benchmark result must exceed" },
	{ "minPrecision", CFG_ENUM, REPORT(min_precision), 0, config_precisions, NULL, "fp16 (AIPerf)",
	  "lowest training precision a valid result may use" },
	{ "sampleInterval", CFG_DURATION, REPORT(sample_interval), CFG_RANGE(1, CFG_YEAR), NULL, NULL,
	  "6m (0.1 h, AIPerf)", "time between score samples" },
	{ "firstSample", CFG_DURATION, REPORT(first_sample), CFG_RANGE(1, CFG_YEAR), NULL, NULL,
	  "12m (0.2 h, AIPerf)", "time of the first score sample" },
	{ "rules", CFG_ENUM, REPORT(rules), 0, config_report_rules, NULL, "readme",
	  "validity rules: AIPerf's README (1 h, fp16, accuracy above 70%) or its report.py "
	  "(failed above 95% Error)" },
	{ "epochCharge", CFG_ENUM, REPORT(epoch_charge), 0, config_epoch_charges, NULL, "auto",
	  "FLOPs of an epoch: AIPerf's ImageNet counts (1,280,000 + 50,000 images), the images "
	  "trained, or auto (AIPerf's when every arch has 1000 classes)" },
	{ NULL },
};

#define POOL(f) offsetof(struct aah_config_pool, f)
/* pool.devices' word, CONFIG_POOL_QUOTA: its size from the cluster */
static const char *const pool_words[] = { "quota", NULL };
static const struct cfg_key pool_keys[] = {
	{ "devices", CFG_INT, POOL(devices), CFG_RANGE(0, 65536), pool_words, NULL, "0 (no pool)",
	  "devices of the pool every experiment of the work directory shares (runner/pool/ledger.h); "
	  "quota: the namespace's nvidia.com/gpu quota (kubernetes)" },
	{ "minDevices", CFG_INT, POOL(min_devices), CFG_RANGE(1, 65536), NULL, NULL, "1",
	  "fewest devices a training of this experiment runs on; it waits until they are free" },
	{ "maxDevices", CFG_INT, POOL(max_devices), CFG_RANGE(0, 65536), NULL, NULL, "0 (the whole pool)",
	  "most devices a training of this experiment takes" },
	{ "priority", CFG_INT, POOL(priority), CFG_RANGE(1, 1000000), NULL, NULL, "5000",
	  "share weight of this experiment's trainings (aah-runner priority changes it while they run)" },
	{ NULL },
};

#define TOP(f) offsetof(struct aah_config, f)
const struct cfg_key config_keys[] = {
	{ "authorName", CFG_STR, TOP(author_name), 0, NULL, NULL, "default", "who ran it" },
	{ "experimentName", CFG_STR, TOP(experiment_name), 0, NULL, NULL, "aah",
	  "experiment name (shown in reports; sanitised for Kubernetes names)" },
	{ "trialConcurrency", CFG_INT, TOP(trial_concurrency), CFG_RANGE(1, 10000), NULL, NULL, "1",
	  "trials running at once (slots)" },
	{ "maxExecDuration", CFG_DURATION, TOP(max_exec_duration), CFG_RANGE(0, CFG_YEAR), NULL, NULL,
	  "0 (unlimited)", "experiment budget (s/m/h/d); running trials are then stopped" },
	{ "maxTrialNum", CFG_INT, TOP(max_trial_num), CFG_RANGE(1, 999999), NULL, NULL, "99999",
	  "most trials to run" },
	{ "trainingServicePlatform", CFG_PLATFORM, TOP(platform), 0, NULL, NULL,
	  "(the first backend of the registry)", "backend that runs the trials" },
	{ "searchSpacePath", CFG_STR, TOP(search_space_path), 0, NULL, NULL, "(none)",
	  "NNI search_space.json, relative to the config file" },
	{ "useAnnotation", CFG_BOOL, TOP(use_annotation), 0, NULL, NULL, "false",
	  "NNI annotation mode; accepted, must be false" },
	{ "logLevel", CFG_ENUM, TOP(log_level), 0, log_levels, NULL, "info", "runner log level" },
	{ "debug", CFG_BOOL, TOP(debug), 0, NULL, NULL, "false", "NNI debug flag; more runner output" },
	{ "workdir", CFG_STR, TOP(workdir), 0, NULL, NULL, "($AAH_WORKDIR, else ./aah-work)",
	  "where experiments/<id>/ is created (the shared /userhome tree on clusters)" },
	{ "seed", CFG_INT, TOP(seed), CFG_RANGE(0, 2147483647), NULL, NULL, "0 (from the clock)",
	  "seed of the tuner and of every trial: same seed, same run" },
	{ "tuner", CFG_SECTION, TOP(tuner), 0, NULL, tuner_keys, NULL, "the search" },
	{ "assessor", CFG_SECTION, TOP(assessor), 0, NULL, assessor_keys, NULL, "NNI assessor" },
	{ "trial", CFG_SECTION, TOP(trial), CFG_REQUIRED, NULL, trial_keys, NULL, "what each trial runs" },
	{ "report", CFG_SECTION, TOP(report), 0, NULL, config_report_keys, NULL, "score and validity rules" },
	{ "pool", CFG_SECTION, TOP(pool), 0, NULL, pool_keys, NULL, "the shared device pool and this experiment's share" },
	{ NULL },
};

int config_parse_duration(const char *s, double *out)
{
	char *end;
	double mult = 1;
	if (!s || !*s)
		return -1;
	double v = strtod(s, &end);
	if (end == s || !isfinite(v) || v < 0)
		return -1;
	if (*end) {
		switch (*end) {
		case 's': mult = 1; break;
		case 'm': mult = 60; break;
		case 'h': mult = 3600; break;
		case 'd': mult = 86400; break;
		default: return -1;
		}
		if (end[1])
			return -1;
	}
	*out = v * mult;
	return 0;
}

struct ctx {
	const char *file;
	const struct aah_config *cfg;  /* cfg->nni: an NNI v2 file's names for its keys */
};

static int fail_at(const struct ctx *c, unsigned line, unsigned col, const char *path,
		   const char *fmt, const char *detail)
{
	return error("%s:%u:%u: '%s' %s%s", c->file, line, col, nni_config_written(c->cfg->nni, path),
		     fmt, detail ? detail : "");
}

static const char *nearest_key(const struct cfg_key *keys, const char *name)
{
	const char *best = NULL;
	size_t best_d = SIZE_MAX;
	for (const struct cfg_key *k = keys; k->name; k++) {
		size_t d = util_edit_distance(name, k->name);
		if (strcasecmp(name, k->name) == 0)
			d = 0;
		if (d < best_d) {
			best_d = d;
			best = k->name;
		}
	}
	size_t len = strlen(name);
	return best && best_d <= (len > 6 ? 3 : 2) ? best : NULL;
}

static int is_null(const struct ynode *n)
{
	return n->kind == YNODE_SCALAR && n->plain &&
	       (!*n->value || !strcmp(n->value, "null") || !strcmp(n->value, "~"));
}

static int set_value(const struct ctx *c, const char *path, const struct cfg_key *k,
		     const struct ynode *n, char *base);
static int parse_table(const struct ctx *c, const char *prefix, const struct ynode *map,
		       const struct cfg_key *keys, char *base, unsigned line, unsigned col);

/* How much of a key's `def` is a value: "VALUE" or "VALUE (note)"; a def
 * that opens with "(" is a note alone (no value), and so is an empty
 * collection "{}" or "[]" (free-form keys are NULL when empty). 0: none. */
static size_t default_len(const struct cfg_key *k)
{
	if (!k->def || k->def[0] == '(')
		return 0;
	const char *note = strstr(k->def, " (");
	size_t len = note ? (size_t)(note - k->def) : strlen(k->def);
	if (len == 2 && (!strncmp(k->def, "{}", 2) || !strncmp(k->def, "[]", 2)))
		return 0;
	return len;
}

/* A key's default value as a node, as if written in the file, or NULL
 * when it has none. The caller frees it. */
static struct ynode *default_node(const char *path, const struct cfg_key *k)
{
	size_t len = default_len(k);
	struct ynode *n = NULL;
	if (len && yamltree_parse(path, k->def, len, &n) < 0)
		BUG("the default of '%s' (\"%s\") is not YAML", path, k->def);
	return n;
}

/* An absent key takes its default: the one place defaults are applied. */
static int apply_default(const struct ctx *c, const char *path, const struct cfg_key *k,
			 char *base, unsigned line, unsigned col)
{
	if (k->type == CFG_SECTION)
		return parse_table(c, path, NULL, k->section, base + k->offset, line, col);
	struct ynode *n = default_node(path, k);
	if (!n)
		return 0;
	if (k->type == CFG_ANY) {
		*(const struct ynode **)(base + k->offset) = n;
		return 0;
	}
	if (set_value(c, path, k, n, base) < 0)
		BUG("the default of '%s' (\"%s\") is not a valid value", path, k->def);
	ynode_free(n);
	return 0;
}

static int parse_table(const struct ctx *c, const char *prefix, const struct ynode *map,
		       const struct cfg_key *keys, char *base, unsigned line, unsigned col)
{
	if (map && map->kind != YNODE_MAP)
		return fail_at(c, map->line, map->col, prefix, "must be a mapping of keys", NULL);
	for (size_t i = 0; map && i < map->n; i++) {
		const struct cfg_key *k = keys;
		while (k->name && strcmp(k->name, map->keys[i]))
			k++;
		char *path = *prefix ? xstrfmt("%s.%s", prefix, map->keys[i]) : xstrdup(map->keys[i]);
		if (!k->name) {
			const char *near = nearest_key(keys, map->keys[i]);
			char *hint = near ? xstrfmt(" (did you mean '%s'?)", near)
					  : xstrdup(" (see docs/config.md)");
			fail_at(c, map->key_line[i], map->key_col[i], path, "is not a known key", hint);
			free(hint);
			free(path);
			return -1;
		}
		int r = set_value(c, path, k, map->children[i], base);
		free(path);
		if (r < 0)
			return -1;
	}
	for (const struct cfg_key *k = keys; k->name; k++) {
		if (ynode_get(map, k->name))
			continue;
		char *path = *prefix ? xstrfmt("%s.%s", prefix, k->name) : xstrdup(k->name);
		int r;
		if (k->rule && k->rule->required) {
			char *hint = xstrfmt(": %s", k->help ? k->help : "");
			r = fail_at(c, line, col, path, "is required", hint);
			free(hint);
		} else {
			r = apply_default(c, path, k, base, line, col);
		}
		free(path);
		if (r < 0)
			return -1;
	}
	return 0;
}

const struct cfg_rule cfg_required = { .required = 1 };

/* One end of a range as the user writes it: durations with the largest
 * unit that divides them (0, 0.01s, 1m, 365d), other numbers plainly. */
static void add_limit(struct strbuf *sb, const struct cfg_key *k, double v)
{
	static const struct { double secs; const char *unit; } units[] = {
		{ CFG_DAY, "d" }, { 3600, "h" }, { 60, "m" },
	};
	if (k->type == CFG_NUM && v >= 1e6) {   /* 1e12, not 1000000000000 */
		int e = (int)floor(log10(v));
		strbuf_addf(sb, "%.15ge%d", v / pow(10, e), e);
		return;
	}
	if (k->type != CFG_DURATION || v == 0) {
		strbuf_addf(sb, "%.15g", v);
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(units); i++)
		if (fmod(v, units[i].secs) == 0) {
			strbuf_addf(sb, "%.15g%s", v / units[i].secs, units[i].unit);
			return;
		}
	strbuf_addf(sb, "%.15gs", v);
}

static void add_range(struct strbuf *sb, const struct cfg_key *k)
{
	add_limit(sb, k, k->rule->min);
	strbuf_addstr(sb, " to ");
	add_limit(sb, k, k->rule->max);
}

char *config_describe_type(const struct cfg_key *k)
{
	static const char *const names[] = {
		[CFG_STR] = "string", [CFG_INT] = "integer", [CFG_NUM] = "number",
		[CFG_BOOL] = "bool", [CFG_DURATION] = "duration", [CFG_ENUM] = "choice",
		[CFG_SECTION] = "section", [CFG_ANY] = "mapping", [CFG_PLATFORM] = "choice",
	};
	struct strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, names[k->type]);
	if (k->rule && !k->rule->required) {
		strbuf_addstr(&sb, ", ");
		add_range(&sb, k);
	}
	for (const char *const *w = k->type == CFG_INT ? k->choices : NULL; w && *w; w++)
		strbuf_addf(&sb, ", or %s", *w);
	return strbuf_detach(&sb, NULL);
}

/* A number (an integer's digits when it overflows a long: text) against
 * the key's range. */
static int check_range(const struct ctx *c, const char *path, const struct cfg_key *k,
		       const struct ynode *n, double v, int overflow)
{
	if (!k->rule || k->rule->required)
		BUG("number key '%s' has no range", path);
	if (!overflow && v >= k->rule->min && v <= k->rule->max)
		return 0;
	/* the plainest fact first: a count of 0, a negative size */
	const char *lead = overflow || v > k->rule->min ? "must be"
			   : k->rule->min > 0 && v <= 0 ? "must be greater than 0,"
			   : v < 0 ? "must not be negative," : "must be";
	struct strbuf sb = STRBUF_INIT;
	strbuf_addstr(&sb, " between ");
	add_limit(&sb, k, k->rule->min);
	strbuf_addstr(&sb, " and ");
	add_limit(&sb, k, k->rule->max);
	strbuf_addf(&sb, ", got %s", n->value);
	fail_at(c, n->line, n->col, path, lead, sb.buf);
	strbuf_release(&sb);
	return -1;
}

/* An integer too large for a long is a range error, not a type error. */
static int integer_overflows(const char *s)
{
	s += *s == '-' || *s == '+';
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

static int set_value(const struct ctx *c, const char *path, const struct cfg_key *k,
		     const struct ynode *n, char *base)
{
	void *dst = base + k->offset;
	double d;
	long l;

	if (k->type == CFG_SECTION)
		return parse_table(c, path, is_null(n) ? NULL : n, k->section, dst, n->line, n->col);
	if (k->type == CFG_ANY) {
		/* The struct owns a copy; null takes the default. */
		const struct ynode **slot = dst;
		ynode_free((struct ynode *)*slot);
		*slot = is_null(n) ? default_node(path, k) : ynode_dup(n);
		return 0;
	}
	if (n->kind != YNODE_SCALAR)
		return fail_at(c, n->line, n->col, path, "must be a single value, not a list or mapping",
			       NULL);
	if (is_null(n) && k->type != CFG_STR)
		return fail_at(c, n->line, n->col, path, "needs a value", NULL);

	switch (k->type) {
	case CFG_STR:
	case CFG_ENUM:
		if (k->type == CFG_ENUM) {
			const char *const *ch = k->choices;
			while (*ch && strcmp(*ch, n->value))
				ch++;
			if (!*ch) {
				struct strbuf sb = STRBUF_INIT;
				strbuf_addf(&sb, "'%s'; expected one of:", n->value);
				for (ch = k->choices; *ch; ch++)
					strbuf_addf(&sb, " %s", *ch);
				fail_at(c, n->line, n->col, path, "has an unknown value ", sb.buf);
				strbuf_release(&sb);
				return -1;
			}
		}
		free(*(char **)dst);
		*(char **)dst = xstrdup(n->value);
		return 0;
	case CFG_INT:
		/* an integer's words (pool.devices: quota) are stored as -1, -2, ... */
		for (const char *const *w = k->choices; w && *w; w++)
			if (n->plain && !strcmp(*w, n->value)) {
				*(long *)dst = -1 - (long)(w - k->choices);
				return 0;
			}
		if (n->plain && util_parse_long(n->value, LONG_MIN, LONG_MAX, &l) < 0 &&
		    integer_overflows(n->value))
			return check_range(c, path, k, n, 0, 1);
		if (!n->plain || util_parse_long(n->value, LONG_MIN, LONG_MAX, &l) < 0) {
			if (k->choices) {
				char *what = config_describe_type(k);
				fail_at(c, n->line, n->col, path, "must be an ", what);
				free(what);
				return -1;
			}
			return fail_at(c, n->line, n->col, path, "must be an integer, got ", n->value);
		}
		if (check_range(c, path, k, n, (double)l, 0) < 0)
			return -1;
		*(long *)dst = l;
		return 0;
	case CFG_NUM:
		if (!n->plain || util_parse_double(n->value, &d) < 0)
			return fail_at(c, n->line, n->col, path, "must be a number, got ", n->value);
		if (check_range(c, path, k, n, d, 0) < 0)
			return -1;
		*(double *)dst = d;
		return 0;
	case CFG_DURATION:
		if (n->value[0] == '-')
			return fail_at(c, n->line, n->col, path, "must not be negative, got ", n->value);
		if (config_parse_duration(n->value, &d) < 0)
			return fail_at(c, n->line, n->col, path,
				       "must be a duration like 90s, 15m, 72h or 2d, got ", n->value);
		if (check_range(c, path, k, n, d, 0) < 0)
			return -1;
		*(double *)dst = d;
		return 0;
	case CFG_BOOL:
		if (!strcmp(n->value, "true") || !strcmp(n->value, "True"))
			*(int *)dst = 1;
		else if (!strcmp(n->value, "false") || !strcmp(n->value, "False"))
			*(int *)dst = 0;
		else
			return fail_at(c, n->line, n->col, path, "must be true or false, got ", n->value);
		return 0;
	default:
		BUG("unhandled config type %d", k->type);
	}
}

static void release_table(const struct cfg_key *keys, char *base)
{
	for (const struct cfg_key *k = keys; k->name; k++) {
		void *dst = base + k->offset;
		if (k->type == CFG_STR || k->type == CFG_ENUM || k->type == CFG_PLATFORM) {
			free(*(char **)dst);
			*(char **)dst = NULL;
		} else if (k->type == CFG_ANY) {
			ynode_free((struct ynode *)*(const struct ynode **)dst);
			*(const struct ynode **)dst = NULL;
		} else if (k->type == CFG_SECTION) {
			release_table(k->section, dst);
		}
	}
}

/* A folded multi-line command keeps the backslashes its author meant as
 * line continuations ("a \ b"); drop a backslash that stands alone. */
static void unfold_command(char *cmd)
{
	char *w = cmd;
	for (char *r = cmd; *r; r++) {
		if (*r == '\\' && (r == cmd || r[-1] == ' ') && (r[1] == ' ' || !r[1])) {
			if (r[1])
				r++;
			continue;
		}
		*w++ = *r;
	}
	*w = '\0';
	while (w > cmd && w[-1] == ' ')
		*--w = '\0';
}

/* The per-training bounds against each other and the pool. */
static int check_pool(const struct ctx *c, const struct aah_config *cfg)
{
	const struct aah_config_pool *p = &cfg->pool;
	const struct ynode *pool = ynode_get(cfg->root, "pool");
	const struct ynode *n = ynode_get(pool, "minDevices");
	unsigned line = n ? n->line : pool ? pool->line : 1, col = n ? n->col : pool ? pool->col : 1;
	if (p->max_devices > 0 && p->min_devices > p->max_devices)
		return fail_at(c, line, col, "pool.minDevices", "must not be above pool.maxDevices", NULL);
	if (p->devices > 0 && p->min_devices > p->devices)
		return fail_at(c, line, col, "pool.minDevices", "must not be above pool.devices", NULL);
	if (p->devices == CONFIG_POOL_QUOTA && cfg->trial.gpu_num != 1) {
		/* a quota of GPUs sizes a pool of GPUs, one rank each */
		n = ynode_get(pool, "devices");
		return fail_at(c, n->line, n->col, "pool.devices",
			       "quota counts the namespace's GPUs: it needs trial.gpuNum 1 "
			       "(one rank on each GPU of a training's share)", NULL);
	}
	if (p->devices != 0 && cfg->trial.gpu_num > 1) {
		/* the ledger grants devices one rank each (docs/pool.md) */
		n = ynode_get(ynode_get(cfg->root, "trial"), "gpuNum");
		return fail_at(c, n->line, n->col, "trial.gpuNum",
			       "must be 0 or 1 with pool.devices: a pool's device is one GPU, "
			       "and a training runs one rank on each device of its share", NULL);
	}
	return 0;
}

/* trial.processMode: one process per GPU unless the config says otherwise
 * (aah-trial trains on one device per process). A mode that would leave a
 * node's GPUs unused is refused when it was not asked for, and warned
 * about (cfg->notice, by check and create) when it was: a trial command of
 * one's own may drive them all. */
static int process_mode(const struct ctx *c, struct aah_config *cfg, const struct ynode *trial)
{
	long gpus = cfg->trial.gpu_num;
	int mpi = !strcmp(cfg->trial.launcher, "mpi");
	const struct ynode *n = ynode_get(trial, "processMode");
	if (!cfg->trial.process_mode) {
		if (gpus > 1 && mpi) {
			char *why = xstrfmt(" (%ld GPUs of each node's %ld would stay unused): drop it "
					    "for one process per GPU, or set trial.processMode: node to "
					    "accept that", gpus - 1, gpus);
			n = ynode_get(trial, "launcher");
			fail_at(c, n->line, n->col, "trial.launcher",
				"'mpi' starts one process per node", why);
			free(why);
			return -1;
		}
		cfg->trial.process_mode = xstrdup(gpus > 0 && !mpi ? "device" : "node");
		return 0;
	}
	if (!strcmp(cfg->trial.process_mode, "node") && gpus > 1)
		cfg->notice = xstrfmt("%s:%u:%u: 'trial.processMode' node with trial.gpuNum %ld: "
				      "aah-trial trains on one GPU per process, so %ld of each "
				      "node's GPUs stay unused unless the trial command drives them "
				      "itself (the default, device, runs one per GPU)",
				      c->file, n->line, n->col, gpus, gpus - 1);
	return 0;
}

static int check_semantics(const struct ctx *c, struct aah_config *cfg)
{
	const struct ynode *trial = ynode_get(cfg->root, "trial");
	const struct ynode *cmd = ynode_get(trial, "command");
	if (!cfg->trial.command || !*cfg->trial.command) {
		unsigned line = cmd ? cmd->line : trial->line, col = cmd ? cmd->col : trial->col;
		return fail_at(c, line, col, "trial.command", "must not be empty", NULL);
	}
	unfold_command(cfg->trial.command);
	cfg->notice = gpucmd_notice(c->file, cmd ? cmd->line : 0, cmd ? cmd->col : 0,
				    cfg->trial.command, cfg->trial.gpu_num);
	if (cfg->use_annotation) {
		const struct ynode *n = ynode_get(cfg->root, "useAnnotation");
		return fail_at(c, n->line, n->col, "useAnnotation",
			       "is not supported by aah; set it to false", NULL);
	}
	const struct ynode *env = cfg->trial.env;
	if (env) {
		if (env->kind != YNODE_MAP)
			return fail_at(c, env->line, env->col, "trial.env",
				       "must be a mapping of NAME: value", NULL);
		for (size_t i = 0; i < env->n; i++)
			if (env->children[i]->kind != YNODE_SCALAR)
				return fail_at(c, env->children[i]->line, env->children[i]->col,
					       "trial.env", "values must be strings", NULL);
	}
	const struct ynode *ca = cfg->tuner.class_args;
	if (ca && ca->kind != YNODE_MAP)
		return fail_at(c, ca->line, ca->col, "tuner.classArgs", "must be a mapping", NULL);
	if (check_pool(c, cfg) < 0 || process_mode(c, cfg, trial) < 0)
		return -1;
	if (!strcmp(cfg->trial.process_mode, "device") && cfg->trial.gpu_num < 1) {
		const struct ynode *n = ynode_get(trial, "processMode");
		return fail_at(c, n->line, n->col, "trial.processMode",
			       "'device' needs trial.gpuNum of at least 1", NULL);
	}
	if (!strcmp(cfg->trial.launcher, "mpi") &&
	    (strcmp(cfg->trial.process_mode, "node") || strcmp(cfg->trial.launch_style, "pytorch"))) {
		const struct ynode *n = ynode_get(trial, "launcher");
		return fail_at(c, n->line, n->col, "trial.launcher",
			       "'mpi' needs trial.processMode 'node' and trial.launchStyle 'pytorch'", NULL);
	}
	return 0;
}

void config_top_keys(struct config_top *t, const struct config_platforms *p)
{
	size_t n = 0, np = p->n;
	memset(t, 0, sizeof(*t));
	if (!np || np > CONFIG_MAX_PLATFORMS)
		BUG("%zu platforms given: 1 to CONFIG_MAX_PLATFORMS", np);
	for (size_t i = 0; i < np; i++)
		t->names[i] = p->names[i];
	snprintf(t->def, sizeof(t->def), "%s", t->names[0]);
	for (const struct cfg_key *k = config_keys; k->name; k++) {
		if (n + np + 1 >= ARRAY_SIZE(t->keys))
			BUG("config_top.keys is too small");
		t->keys[n] = *k;
		if (k->type == CFG_PLATFORM) {
			t->keys[n].type = CFG_ENUM;
			t->keys[n].choices = t->names;
			t->keys[n].def = t->def;
		}
		n++;
	}
	for (size_t i = 0; i < np; i++, n++) {
		t->keys[n] = (struct cfg_key){
			.name = t->names[i], .type = CFG_ANY,
			.offset = offsetof(struct aah_config, sections) + i * sizeof(struct ynode *),
			.def = "{}", .help = p->help[i],
		};
	}
}

const struct ynode *config_section(const struct aah_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->platforms.n; i++)
		if (!strcmp(cfg->platforms.names[i], name))
			return cfg->sections[i];
	BUG("no backend '%s' in the registry", name);
}

int config_load(const char *path, struct aah_config *cfg, const struct config_platforms *p)
{
	struct ctx c = { .file = path, .cfg = cfg };
	struct config_top top;
	config_top_keys(&top, p);
	memset(cfg, 0, sizeof(*cfg));
	cfg->platforms = *p;
	if (nni_config_load(path, p->names, p->n, &cfg->root, &cfg->nni) < 0)
		return -1;
	cfg->path = fileio_absolute(path);
	cfg->name = xstrdup(path);
	char *dir = xstrdup(cfg->path);
	cfg->base_dir = xstrdup(dirname(dir));
	free(dir);
	if (cfg->root->kind != YNODE_MAP) {
		error("%s:%u:%u: a config must be a mapping of keys", path, cfg->root->line,
		      cfg->root->col);
		goto fail;
	}
	if (parse_table(&c, "", cfg->root, top.keys, (char *)cfg, 1, 1) < 0 ||
	    check_semantics(&c, cfg) < 0)
		goto fail;
	if (cfg->workdir) {
		char *abs = config_resolve(cfg, cfg->workdir);
		free(cfg->workdir);
		cfg->workdir = abs;
	}
	return 0;
fail:
	config_release(cfg);
	return -1;
}

void config_release(struct aah_config *cfg)
{
	if (cfg->platforms.n) {      /* loaded, or failed past its start */
		struct config_top top;
		config_top_keys(&top, &cfg->platforms);
		release_table(top.keys, (char *)cfg);
	}
	ynode_free(cfg->root);
	nni_config_free(cfg->nni);
	free(cfg->notice);
	free(cfg->path);
	free(cfg->name);
	free(cfg->base_dir);
	memset(cfg, 0, sizeof(*cfg));
}

int config_parse_section(const struct aah_config *cfg, const char *section,
			 const struct ynode *node, const struct cfg_key *keys, void *out)
{
	struct ctx c = { .file = cfg->path, .cfg = cfg };
	return parse_table(&c, section, node, keys, out, node ? node->line : 1, node ? node->col : 1);
}

void config_release_section(const struct cfg_key *keys, void *out)
{
	release_table(keys, out);
}

char *config_search_space_file(const struct aah_config *cfg)
{
	if (!cfg->search_space_path || !*cfg->search_space_path)
		return NULL;
	return config_resolve(cfg, cfg->search_space_path);
}

char *config_resolve(const struct aah_config *cfg, const char *path)
{
	return path[0] == '/' ? xstrdup(path) : xstrfmt("%s/%s", cfg->base_dir, path);
}

int config_error_at(const struct aah_config *cfg, const char *key, const char *fmt, ...)
{
	const struct ynode *n = cfg->root;
	char *path = xstrdup(key);
	for (char *seg = path, *dot; n && seg; seg = dot) {
		dot = strchr(seg, '.');
		if (dot)
			*dot++ = '\0';
		n = ynode_get(n, seg);
	}
	free(path);
	struct strbuf sb = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	error("%s:%u:%u: '%s': %s", cfg->name ? cfg->name : cfg->path, n ? n->line : 1,
	      n ? n->col : 1, nni_config_written(cfg->nni, key), sb.buf);
	strbuf_release(&sb);
	return -1;
}

int config_search_space(const struct aah_config *cfg, cJSON **out)
{
	char *p = config_search_space_file(cfg);
	*out = NULL;
	if (!p)
		return 0;
	int held = util_hold_errors(1);
	int r = jsonfile_read(p, out);
	util_hold_errors(held);
	if (r < 0) {
		r = config_error_at(cfg, "searchSpacePath", "%s", util_last_error());
	} else if (!cJSON_IsObject(*out)) {
		cJSON_Delete(*out);
		*out = NULL;
		r = config_error_at(cfg, "searchSpacePath",
				    "'%s' must be a JSON object of parameters "
				    "({\"name\": {\"_type\": ..., \"_value\": [...]}})", p);
	}
	free(p);
	return r;
}

void config_walk_keys(const struct cfg_key *keys, const char *prefix,
		      void (*fn)(const char *path, const struct cfg_key *key, void *arg), void *arg)
{
	for (const struct cfg_key *k = keys; k->name; k++) {
		char *path = *prefix ? xstrfmt("%s.%s", prefix, k->name) : xstrdup(k->name);
		if (k->type == CFG_SECTION)
			config_walk_keys(k->section, path, fn, arg);
		else
			fn(path, k, arg);
		free(path);
	}
}
