/* config_keys.c: config.yml's key tables: every key of the file with its
 * type, range, default and help line (docs/config.md is checked against
 * them), and the whole top-level table with the platforms' sections. */
#include "runner/config/config.h"
#include "util.h"

#include <stddef.h>
#include <stdio.h>
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
	{ "maxExecShare", CFG_NUM, TRIAL(max_exec_share), CFG_RANGE(0, 1), NULL, NULL, "0 (none)",
	  "the most of maxExecDuration one trial may train: export AAH_TIME_BUDGET, this share of it in seconds, so that a trial shortens its epoch budget and LR schedule to fit it, on any machine's speed" },
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
