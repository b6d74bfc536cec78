/* tuner_int.h: what the tuner implementations share with the generic layer
 * (tuner.c): the op table entry and the history kept for every tuner. */
#ifndef AAH_TUNER_INT_H
#define AAH_TUNER_INT_H

#include <stddef.h>

#include "rng.h"
#include "runner/store/expdir.h" /* EXPDIR_PLACE_SIZE */
#include "space.h"
#include "tuner.h"

enum {
	TUNER_CAP_ARCH = 1 << 0,    /* proposes architectures */
	TUNER_CAP_PARAMS = 1 << 1,  /* proposes hyperparameters */
};

/* One trial as the tuner knows it; documents are owned by the history. */
/* struct tuner's deferred (0: observe as recorded) */
enum { TUNER_DEFER_REPLAY = 1, TUNER_DEFER_BULK = 2 };

struct tuner_hist {
	unsigned seq;
	char place[EXPDIR_PLACE_SIZE]; /* its last launch's (tuner_observe_at) */
	cJSON *arch;
	cJSON *params;
	enum tuner_obs_state state;
	double metric;
};

struct tuner;

/* An implementation: mechanism only. The generic layer keeps the history,
 * seeds the per-proposal generator and records proposals as pending. */
struct tuner_ops {
	const char *name;
	unsigned caps;
	int (*init)(struct tuner *t);                 /* NULL: nothing to set up */
	/* History entry idx was added or changed (previous state in *old, NULL
	 * when new). NULL: the implementation reads t->hist when proposing. */
	int (*observe)(struct tuner *t, size_t idx, const struct tuner_hist *old);
	int (*propose)(struct tuner *t, unsigned seq, struct trng *rng, cJSON **arch,
		       cJSON **params);
	/* A fresh tuner's whole history at once (a runner starting or resuming):
	 * 1 when done, 0 to have it observed one at a time, -1 on error. NULL:
	 * one at a time. */
	int (*load)(struct tuner *t);
	/* While such a load reads the history (tuner_load_experiment), entry
	 * idx was just recorded: the implementation may note it and drop what
	 * its load will not use. NULL: everything is kept until the load. */
	void (*shed)(struct tuner *t, size_t idx);
	/* The most trials a proposer outside the runner (tuner.placement trial)
	 * should serve: past it the state it reads and writes per proposal
	 * grows as O(n^2) (docs/scale.md). NULL: no limit. */
	unsigned (*proposer_limit)(const struct tuner *t);
	void (*release)(struct tuner *t);             /* NULL: no private state */
	/* The state cache (tuner.cache, placement: trial); NULL: nothing worth
	 * caching. state_save: the state after exactly t->nhist observations
	 * (all finished), as extra header fields and a payload (the caller
	 * frees it). state_load: install such a state when it matches t->hist
	 * exactly (1), or leave the tuner untouched and say why (0). */
	int (*state_save)(const struct tuner *t, cJSON *header, unsigned char **payload, size_t *len);
	int (*state_load)(struct tuner *t, const cJSON *header, const unsigned char *payload,
			  size_t len);
};

struct tuner {
	const struct tuner_ops *ops;
	char *name;
	cJSON *class_args;         /* owned copy (object; empty when none given) */
	struct space space;
	uint64_t seed;
	char *initial_arch;        /* owned copy or NULL */
	unsigned max_layers;
	uint64_t max_params;
	double max_flops;
	unsigned threads;
	int inherit_weights;
	struct tuner_hist *hist;   /* (nhist) in order of first observation */
	size_t nhist, ahist;
	int deferred;              /* record() leaves observe to tuner_catch_up; TUNER_DEFER_BULK:
				    * and the catch-up loads the whole history (no state cache),
				    * so record() offers each new entry to ops->shed */
	void *priv;                /* the implementation's state */
};

/* classArgs getters with defaults; errors name the key. */
int tuner_arg_number(const struct tuner *t, const char *key, double def, double *out);
int tuner_arg_string(const struct tuner *t, const char *key, const char *def, const char **out);

/* A fresh aah-params/1 document owning `parameters`. */
cJSON *tuner_params_doc(const struct tuner *t, unsigned seq, cJSON *parameters);

/* TPE over t->hist's finished trials (tuner_tpe.c), shared with
 * NetworkMorphism. */
struct tpe_options;
int tuner_tpe_options(const struct tuner *t, struct tpe_options *o);
cJSON *tuner_tpe_parameters(const struct tuner *t, const struct tpe_options *o, struct trng *r);

/* FNV-1a over len bytes, continuing from h (start: TUNER_FNV_INIT). */
#define TUNER_FNV_INIT 1469598103934665603ull
uint64_t tuner_fnv(uint64_t h, const void *data, size_t len);

/* Counters of the NetworkMorphism tuner (benchmarks, tests). */
struct tuner_nm_stats {
	unsigned long proposals, expansions, expansions_history, candidates, distances;
	unsigned long list_reuses;   /* expansions that reused the parent's list */
	unsigned long window_removals; /* GP rows that left the window (classArgs.gp_window) */
	unsigned long batch_picks;   /* proposals from a kept search (classArgs.search_batch) */
	unsigned long gp_escalations, history;
	double propose_seconds, observe_seconds;
};
int tuner_nm_stats(const struct tuner *t, struct tuner_nm_stats *out);

/* The implementations (tuner_random.c, tuner_tpe.c, tuner_nm.c). */
extern const struct tuner_ops tuner_ops_none;
extern const struct tuner_ops tuner_ops_random;
extern const struct tuner_ops tuner_ops_tpe;
extern const struct tuner_ops tuner_ops_nm;

/* The registry (for the unit test that checks every entry). */
const struct tuner_ops *const *tuner_registry(size_t *n);

#endif
