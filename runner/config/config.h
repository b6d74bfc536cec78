/* config.h: config.yml (AIPerf/NNI keys plus aah's own) -> struct aah_config,
 * driven by key tables that also document every key. */
#ifndef AAH_CONFIG_H
#define AAH_CONFIG_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "runner/config/nni_config.h" /* NNI's v2 form read as aah's keys: nni_config_load */
#include "runner/config/yamltree.h" /* struct ynode: kept for free-form sections */

enum cfg_type {
	CFG_STR,      /* char * */
	CFG_INT,      /* long */
	CFG_NUM,      /* double */
	CFG_BOOL,     /* int */
	CFG_DURATION, /* double seconds; "90", "90s", "15m", "72h", "2d" */
	CFG_ENUM,     /* char *, one of choices */
	CFG_SECTION,  /* nested table, stored at offset */
	CFG_ANY,      /* const struct ynode * (free-form, e.g. classArgs): a copy the
		       * struct owns; NULL when empty */
	CFG_PLATFORM, /* char *, the name of a backend (config_platforms); absent: the
		       * first backend's */
};

/* What a value must be beyond its type: present, or a number within
 * [min, max] (durations in seconds). Every CFG_INT, CFG_NUM and
 * CFG_DURATION key has a range; docs/config.md shows it in the type column
 * (config_describe_type) and a value outside it is refused naming it. */
struct cfg_rule {
	int required;
	double min, max;
};

extern const struct cfg_rule cfg_required;
#define CFG_REQUIRED (&cfg_required)
#define CFG_RANGE(lo, hi) (&(const struct cfg_rule){ .min = (lo), .max = (hi) })

#define CFG_DAY 86400.0
#define CFG_YEAR (365 * CFG_DAY)   /* the longest duration any key takes */

struct cfg_key {
	const char *name;
	enum cfg_type type;
	size_t offset;
	const struct cfg_rule *rule;    /* NULL: any value of the type */
	const char *const *choices;     /* CFG_ENUM: NULL-terminated; CFG_INT: words it
					 * also takes, stored as -1, -2, ... */
	const struct cfg_key *section;  /* CFG_SECTION: sub-table, ended by { NULL } */
	/* The default, as documented and as applied when the key is absent
	 * (the only place a default is stated): "VALUE" or "VALUE (note)",
	 * VALUE read as if written in the file; "(note)" alone, "{}" or "[]"
	 * apply nothing (the field stays NULL / 0 / false). */
	const char *def;
	const char *help;               /* one line for docs/config.md */
};

struct aah_config_tuner {
	char *builtin_tuner_name;
	const struct ynode *class_args;
	char *placement;          /* "master" | "trial" */
	long max_layers;
	double max_params;
	double max_flops;         /* forward conv + dense FLOPs per image; 0 = no limit */
	char *initial_arch;       /* a user aah-arch/1 file to start the search from */
	int inherit_weights;      /* children start from their parent's weights (morph.json) */
};

struct aah_config_assessor {
	char *builtin_assessor_name;
	const struct ynode *class_args;
};

struct aah_config_trial {
	char *command;
	char *code_dir;
	long gpu_num;             /* GPUs per node */
	long nodes;               /* nodes (ranks) per trial */
	double timeout;           /* seconds; 0 = none */
	long retries;
	int resume_on_retry;      /* pass --resume to a trial run again */
	char *process_mode;       /* "node" | "device" */
	char *launch_style;       /* "pytorch" | "tensorflow" */
	char *launcher;           /* "direct" | "mpi" */
	long master_port;         /* 0 = pick a free port (local) / 29500 */
	char *data_url;
	char *train_url;
	int nccl_comm_id;
	int fit_exec_duration;    /* export AAH_DEADLINE (maxExecDuration's end) */
	double max_exec_share;    /* export AAH_TIME_BUDGET, this share of maxExecDuration (0: none) */
	const struct ynode *env;  /* extra environment, a map */
};

/* pool.devices: quota, the pool sized by the backend from the cluster's
 * quota (backend_size_pool) before the scheduler runs. */
#define CONFIG_POOL_QUOTA (-1L)

struct aah_config_pool {
	long devices;             /* the work directory's shared pool; 0 = no pool;
				   * CONFIG_POOL_QUOTA until the backend sizes it */
	long min_devices;         /* per training */
	long max_devices;         /* per training; 0 = the whole pool */
	long priority;            /* this experiment's trainings' share weight */
};

struct aah_config_report {
	double min_duration;      /* seconds */
	double min_accuracy;      /* [0,1] */
	double sample_interval;   /* seconds */
	double first_sample;      /* seconds */
	char *min_precision;      /* "fp16", "bf16", "fp32" */
	char *rules;              /* config_report_rules */
	char *epoch_charge;       /* config_epoch_charges */
};

#define CONFIG_MAX_PLATFORMS 8

/* The platforms a config may name (trainingServicePlatform) and whose
 * top-level sections it may hold, the first the default: each backend's
 * name and its section's one line of help. The caller gives them (the
 * backend registry fills them, backend_platforms), so that this module
 * names no backend and calls none. */
struct config_platforms {
	size_t n;
	const char *names[CONFIG_MAX_PLATFORMS];
	const char *help[CONFIG_MAX_PLATFORMS];
};

struct aah_config {
	char *path;               /* the file it came from, absolute */
	char *name;               /* the same as the user named it: messages use it */
	char *base_dir;           /* relative paths resolve here (the config's folder) */
	struct ynode *root;       /* owned */
	char *notice;             /* a warning for check and create to print (a mode that
				   * leaves GPUs unused, asked for); NULL: none. Owned */
	struct nni_config *nni;   /* an NNI v2 file: what became of each of its keys; NULL: v1 */

	char *author_name;
	char *experiment_name;
	long trial_concurrency;
	double max_exec_duration; /* seconds; 0 = unlimited */
	long max_trial_num;
	char *platform;           /* trainingServicePlatform */
	char *search_space_path;  /* as written (relative to the config's folder) */
	int use_annotation;
	char *log_level;
	int debug;
	char *workdir;            /* absolute after load */
	long seed;

	struct aah_config_tuner tuner;
	struct aah_config_assessor assessor;
	struct aah_config_trial trial;
	struct aah_config_report report;
	struct aah_config_pool pool;

	/* The platforms it was loaded with (config_load's argument), and their
	 * sections in that order, each a copy of the top-level mapping named
	 * after its backend, or NULL; validated by each backend's own key
	 * table; read with config_section. */
	struct config_platforms platforms;
	const struct ynode *sections[CONFIG_MAX_PLATFORMS];
};

/* report.rules and report.epochCharge values, NULL-terminated. */
extern const char *const config_report_rules[];
extern const char *const config_epoch_charges[];
/* Precision names, lowest first (report.minPrecision), NULL-terminated. */
extern const char *const config_precisions[];

/* The whole top-level key table: config_keys, and one free-form section per
 * platform (into aah_config.sections). */
struct config_top {
	struct cfg_key keys[40];
	const char *names[CONFIG_MAX_PLATFORMS + 1];   /* trainingServicePlatform's choices */
	char def[64];                                  /* its default: the first platform */
};
/* Fill *t for the platforms p; it holds no allocation. */
void config_top_keys(struct config_top *t, const struct config_platforms *p);

/* The top-level keys config.yml's own code reads (ended by { NULL }); the
 * platform's sections come from config_top_keys. */
extern const struct cfg_key config_keys[];
/* The keys of the report: section; their defaults are AIPerf's rules, kept
 * only here (report_options_aiperf reads them). */
extern const struct cfg_key config_report_keys[];

/* The section of backend `name` (a copy of config.yml's mapping), or NULL
 * when the config has none. */
const struct ynode *config_section(const struct aah_config *cfg, const char *name);

/* Load and validate a config file for the platforms p (the backend
 * registry's, backend_platforms). Errors name file:line:col and the key.
 * On success the caller releases *cfg with config_release. */
int config_load(const char *path, struct aah_config *cfg, const struct config_platforms *p);
void config_release(struct aah_config *cfg);

/* Parse a free-form section (a backend's) with its own key table into out
 * (zeroed, or filled by an earlier call); absent keys take their `def`. A
 * NULL node fills defaults only. Release with config_release_section. */
int config_parse_section(const struct aah_config *cfg, const char *section,
			 const struct ynode *node, const struct cfg_key *keys, void *out);
void config_release_section(const struct cfg_key *keys, void *out);

/* The search space (searchSpacePath resolved against the config's folder),
 * or NULL when the config names none; *out is owned by the caller. Errors
 * name the config's file:line:col and the key searchSpacePath. */
int config_search_space(const struct aah_config *cfg, cJSON **out);
/* Report an error about what the dotted key ("tuner.initialArch") led to:
 * "<config>:<line>:<col>: '<key>': <message>", at the key's value (or the
 * file's start when the key is absent). Returns -1. */
int config_error_at(const struct aah_config *cfg, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A path as the config writes it, resolved against the config's folder
 * (an absolute one as it is): the one resolver of the config's paths
 * (workdir, searchSpacePath, tuner.initialArch, trial.codeDir). The caller
 * frees it. */
char *config_resolve(const struct aah_config *cfg, const char *path);
/* Absolute path of searchSpacePath, or NULL. The caller frees it. */
char *config_search_space_file(const struct aah_config *cfg);

/* Parse "90", "90s", "15m", "72h", "2d" into seconds. */
int config_parse_duration(const char *s, double *out);

/* A key's type as docs/config.md writes it: "integer, 1 to 999999",
 * "duration, 0 to 365d", "string". The caller frees it. */
char *config_describe_type(const struct cfg_key *k);

/* Visit every documented key path ("trial.command") of a table. */
void config_walk_keys(const struct cfg_key *keys, const char *prefix,
		      void (*fn)(const char *path, const struct cfg_key *key, void *arg), void *arg);

#endif
