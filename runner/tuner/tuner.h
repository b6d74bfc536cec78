/* tuner.h: the tuner interface: NNI builtin tuner names -> proposals of
 * (arch.json, params.json) for the next trial, learning from results. */
#ifndef AAH_TUNER_H
#define AAH_TUNER_H

#include <cjson/cJSON.h>
#include <stdint.h>

struct tuner;

struct tuner_config {
	const char *name;           /* tuner.builtinTunerName: "NetworkMorphism", "TPE", "Random", "None" */
	const cJSON *class_args;    /* tuner.classArgs as JSON (NULL = defaults) */
	const cJSON *search_space;  /* parsed NNI search_space.json (NULL = none) */
	uint64_t seed;              /* same seed + same history => same proposal */
	const char *initial_arch;   /* optional path to a user arch.json to start from */
	unsigned max_layers;        /* 0 = tuner default */
	uint64_t max_params;        /* 0 = tuner default */
	double max_flops;           /* forward FLOPs per image (tgraph_flops); 0 = no limit */
	unsigned threads;           /* distance thread pool size; 0 = online CPUs */
	int inherit_weights;        /* write a child's morph.json beside its arch.json */
};

enum tuner_obs_state {
	TUNER_OBS_PENDING,   /* proposed, still training: counts at its predicted mean */
	TUNER_OBS_DONE,      /* finished with a metric */
	TUNER_OBS_FAILED,    /* finished without a usable metric */
};

struct tuner_observation {
	unsigned trial_seq;         /* 1-based */
	const cJSON *arch;          /* aah-arch/1 document, or NULL */
	const cJSON *params;        /* aah-params/1 document, or NULL */
	enum tuner_obs_state state;
	double metric;              /* best validation accuracy in [0,1] when DONE */
};

/* Is `name` a builtin tuner this build knows? (config validation) */
int tuner_known(const char *name);
/* Comma-separated list of known names, for error messages. */
const char *tuner_known_names(void);

int tuner_create(struct tuner **out, const struct tuner_config *cfg);
/* Record (or update: same trial_seq again) an observation. */
int tuner_observe(struct tuner *t, const struct tuner_observation *obs);
/* The same, of a trial whose last launch ran in place (runner/store/expdir.h,
 * where its checkpoint is: a child's morph.json names it; NULL or "": the
 * trial directory, as tuner_observe has it). */
int tuner_observe_at(struct tuner *t, const struct tuner_observation *obs, const char *place);
/* Propose the next trial. Either output may be set to NULL when the tuner
 * has nothing to say (the None tuner: both NULL; Random/TPE: no arch). The
 * caller owns the returned documents. A proposal is itself recorded as
 * PENDING until observed again. */
int tuner_propose(struct tuner *t, unsigned trial_seq, cJSON **arch, cJSON **params);
void tuner_free(struct tuner *t);

/* The most trials proposers outside the runner (tuner.placement trial)
 * should serve before the runner proposes instead: past it, the state each
 * proposer reads and rewrites grows as O(n^2) bytes (NetworkMorphism:
 * classArgs.gp_window, at most 1000; docs/scale.md). 0: no limit. */
unsigned tuner_proposer_limit(const struct tuner *t);

/* Write a proposal into the trial directory dir: morph.json (the
 * aah-morph/1 record in the arch's meta.morph, taken out of arch.json; kept
 * only when the tuner inherits weights), then arch.json, then params.json
 * (last: its presence marks a complete proposal). flags: the files'
 * (FILEIO_NOSYNC: the caller makes them durable before the trial is
 * journaled as submitted; until then a reader takes one that does not
 * read for none). */
int tuner_write_proposal(const struct tuner *t, const char *dir, cJSON *arch, const cJSON *params,
			 unsigned flags);

/* Observe every trial of an experiment directory: trials/<id>/arch.json,
 * params.json and result.json (no result.json = PENDING). */
int tuner_load_history(struct tuner *t, const char *expdir);

/* A fresh tuner (the runner's, starting or resuming) learns an experiment's
 * whole history at once: as tuner_load_history one trial at a time while
 * the implementation's state is exact, else in one pass (NetworkMorphism
 * past classArgs.gp_window: only the trials its window ends with enter the
 * GP). */
int tuner_load_experiment(struct tuner *t, const char *expdir);

/* A fresh proposer's replay with the state cache (placement: trial).
 * tuner_defer(t): observations recorded from now on reach the implementation
 * only at tuner_catch_up, which takes the longest prefix of the history it
 * can from the cache file `path` (aah-tuner-state/1 for experiment `key`;
 * any mismatch, corruption or other experiment: a warning, and the prefix
 * is replayed), observes the rest in order, and rewrites the cache when the
 * finished prefix of the history grew. The state is the same as observing
 * one trial at a time: a proposal does not depend on the cache. Returns the
 * number of observations taken from the cache, or -1. */
void tuner_defer(struct tuner *t);
long tuner_catch_up(struct tuner *t, const char *path, const char *key);

/* The whole of `aah-runner propose`: lock <expdir>/tuner.lock, create the
 * tuner, load the history, propose for trial_seq and write
 * trials/<id>/arch.json and params.json atomically (an existing proposal for
 * that trial is kept, so a retried or resumed trial trains the same thing). */
int tuner_propose_experiment(const char *expdir, const struct tuner_config *cfg,
			     unsigned trial_seq);
/* The same with the state cache <expdir>/tuner.cache keyed by the
 * experiment id (tuner_catch_up). */
int tuner_propose_cached(const char *expdir, const char *exp_id, const struct tuner_config *cfg,
			 unsigned trial_seq);

/* The same with a long-lived tuner (master placement): locks, brings the
 * history up to date (trials already finished or failed in `t` are not read
 * again), keeps an existing proposal, otherwise proposes and writes. Cheap
 * to call once per trial: no history is replayed. */
int tuner_propose_into(struct tuner *t, const char *expdir, unsigned trial_seq);

#endif
