/* tuner_nm_int.h: what the network morphism tuner's files share: its state
 * (struct nm: the GP over the history's items) and the calls between the
 * search (tuner_nm.c, tuner_nm_search.c) and the state cache (tuner_nm_cache.c). */
#ifndef AAH_TUNER_NM_INT_H
#define AAH_TUNER_NM_INT_H

#include <stddef.h>
#include <stdint.h>

#include "distance.h" /* struct tdesc */
#include "gp.h"
#include "graph.h"
#include "hset.h"
#include "morph.h"    /* struct morph_limits */
#include "tpe.h"
#include "tuner_int.h"

#define NM_STEP 3.0   /* largest main-chain distance of one morphism (deeper: 3 layers) */
#define NM_WINDOW_DEFAULT 1000   /* classArgs.gp_window: the GP is exact up to this many */
#define NM_PROPOSER_LIMIT 1000   /* tuner_proposer_limit: the state file is 8 MB there */
#define NM_LEFT_WINDOW (-2)   /* hist_item of a trial that left the GP's window */
#define NM_NOTED_USABLE (-3)  /* ... noted by nm_window_shed: in the set of those seen */
#define NM_NOTED_UNUSABLE (-4) /* ... noted by nm_window_shed: its arch.json is not usable */

struct nm_item {
	size_t hist;           /* index into t->hist */
	struct tgraph graph;
	struct tdesc desc;
	int row;               /* GP row */
};

struct nm_cand {
	struct tgraph graph;
	struct tdesc desc;
	int parent_item;       /* history item this chain starts from */
	int parent_cand;       /* previous candidate in the chain, or -1 */
	int kind;              /* morphism from the parent */
	double delta;          /* main-chain distance to the parent */
	double mean, std, acq;
	/* kept for a batch (classArgs.search_batch > 1): its kernel row by
	 * history entry, and its chain's history trial by entry (the window may
	 * move both before the batch ends) */
	size_t *khist;
	double *kv;
	int nnz;
	size_t parent_hist;
};

struct nm_batch;

struct nm_elem {
	double value;
	int item, cand;        /* one of them is >= 0 */
	unsigned long order;   /* insertion order: ties pop first-in first */
};

struct nm {
	struct tpe_options tpe;
	struct gp gp;
	struct nm_item *items;
	int nitems, aitems;
	int *hist_item;        /* (ahist) t->hist index -> item; -1 none, NM_LEFT_WINDOW */
	size_t ahist;
	struct hset seen;      /* hashes of every trial's architecture */
	struct editdist_vocab vocab; /* the layers of every descriptor the search makes */
	struct tgraph start;
	const char *start_name;
	struct morph_limits lim;
	double beta, t_min, cooling, cutoff;
	int n_neighbours;
	int pruning;           /* classArgs.search_pruning: 0 = scan everything (tests) */
	int window;            /* classArgs.gp_window: most GP rows; 0: every trial (exact) */
	int window_best;       /* classArgs.gp_window_best: rows the best finished trials keep */
	size_t noted;          /* trials nm_window_shed has noted (a bulk load's first ones) */
	int search_batch;      /* classArgs.search_batch: most proposals from one search */
	unsigned long results; /* results observed (finished or failed trials) */
	struct nm_batch *kept; /* the last search's candidates, or NULL */
	struct tpool *pool;
	struct tuner_nm_stats stats;
};

/* Make room in nm->hist_item for history entry idx. */
void nm_hist_item_reserve(struct nm *nm, size_t idx);
/* The item of history entry idx: 1, or 0 (with a warning) when the search
 * ignores it. */
int nm_make_item(const struct tuner *t, struct nm *nm, size_t idx, struct nm_item *item);
/* Add an item (nm takes it) as the next GP row's. */
void nm_add_item(struct nm *nm, const struct nm_item *item);
/* Observe a new item: its kernel row against the items, its target (its
 * metric, the worst for a failure, the prediction while pending), a GP row
 * and nm_add_item. */
void nm_enter(const struct tuner *t, struct nm *nm, struct nm_item *item);

/* The search (tuner_nm_search.c): x's sparse kernel row against every
 * item (idx gets GP rows; both of nitems room), returning its length; the
 * next architecture, NULL when nothing new is within the limits; and
 * whether any item may be a parent (with weight inheritance only a
 * finished trial). */
int nm_kernel_row(struct nm *nm, const struct tdesc *x, int *idx, double *kv);
cJSON *nm_search_arch(struct tuner *t, struct trng *r);
/* A candidate's mean, std and UCB acquisition from its sparse kernel row
 * (idx: GP rows) against the GP as it is. */
void nm_cand_predict(const struct nm *nm, struct nm_cand *c, const int *idx, const double *kv,
		     int nnz);
int nm_any_parent(const struct tuner *t, const struct nm *nm);
/* The history trial a candidate's chain starts from, as its proposal
 * names it and inherits through. */
struct nm_parent {
	const struct tgraph *graph;
	const cJSON *arch;
	size_t hist;
};
/* Candidate ci of a search's cands as the proposal's aah-arch/1 document
 * (its meta: parent trial, morphisms, the record to inherit through, the
 * prediction). */
cJSON *nm_candidate_doc(const struct tuner *t, const struct nm *nm, const struct nm_cand *cands,
			int ci, const struct nm_parent *parent);

/* A batch (tuner_nm_batch.c, classArgs.search_batch): a search's
 * candidates kept (nm takes cands[0..n), the best, already proposed, at
 * `best`); the next proposal from them while no result has come since
 * and fewer than search_batch were taken (NULL: search again); drop them. */
void nm_batch_keep(const struct tuner *t, struct nm *nm, struct nm_cand *cands, int n, int best);
cJSON *nm_batch_next(struct tuner *t);
void nm_batch_drop(struct nm *nm);
/* History entry hist got its item: a batch whose rows cover it without it
 * (a trial observed before its network was known) ends. */
void nm_batch_entered(struct nm *nm, size_t hist);
void nm_cand_release(struct nm_cand *c);

/* The window (tuner_nm_window.c): remove members past nm->window, the
 * oldest first among those not one of the best window_best finished ones;
 * and whether trial idx, which left the window, stays out (1, its
 * arch.json dropped) or comes back (0: it finished better than the
 * window_best-th best member). */
void nm_window_fit(struct tuner *t, struct nm *nm);
int nm_window_keeps_out(struct tuner *t, const struct nm *nm, size_t idx);
/* A fresh tuner's whole history [0, t->nhist) at once (tuner_ops.load):
 * one at a time while it fits the window; past it, only the trials the
 * window ends with (the best window_best finished, the most recent others)
 * enter the GP, in order, and the others only the set of those seen. */
int nm_window_load(struct tuner *t);
/* During that load, past gp_window trials: trial idx's architecture into
 * the set of those seen, and every gp_window trials the arch.json of each
 * trial the window cannot end with dropped (tuner_nm_window.c). */
void nm_window_shed(struct tuner *t, size_t idx);

/* The state cache (tuner_ops.state_save and state_load). */
int nm_state_save(const struct tuner *t, cJSON *header, unsigned char **payload, size_t *len);
int nm_state_load(struct tuner *t, const cJSON *header, const unsigned char *payload, size_t len);

#endif
