/* train_int.h: private to trialimg/train*.c: one trial's state while it
 * trains, and what its files share: the set-up and the trial's own files
 * (train_files.c: the network and data, checkpoint, metrics.jsonl,
 * result.json), the ranks and the elastic world size (train_ranks.c), the
 * loop (train.c). */
#ifndef AAH_TRAIN_INT_H
#define AAH_TRAIN_INT_H

#include <signal.h> /* sig_atomic_t */

#include "kernels/loss_scale.h"
#include "trialimg/args.h"
#include "trialimg/data/loader.h"
#include "trialimg/device.h"
#include "trialimg/dist.h"
#include "trialimg/model.h"
#include "trialimg/step.h"

struct trial {
	const struct args *a;
	const char *precision;      /* what the backend runs: --precision, auto resolved */
	struct ops_ctx ops;
	int ops_ok;
	struct trial_device dev;    /* the backend that runs and its device */
	struct model m;
	struct dataset tr, va;
	struct loader tl, vl;
	struct dist *dist;
	int rank, world, batch, budget, patience;
	int own_budget;               /* the budget before any time fitted it */
	long steps_per_epoch, step;
	int epoch;                    /* epochs completed */
	double best_acc, final_acc;
	int best_epoch, bad_epochs;
	double train_flops, eval_flops, wall_before, t0;
	struct step st;               /* the step: upload, ops, replay (step.h) */
	/* elastic: the global batch, kept when the world size changes; where a
	 * mid-epoch checkpoint stopped and the epoch's global sums until then
	 * (loss, correct, seen) */
	int global_batch, resume_batch;
	double carry[3];
	char *metrics_path, *result_path, *ckpt_dir, *ckpt_path;
	char inherited_from[16];      /* parent trial id when the weights are inherited */
	double lr_scale;              /* --inherited_lr_scale when inherited, else 1 */
	/* --deadline: the slowest epoch this run has timed (0: none yet), and
	 * whether the budget was cut to fit */
	double slowest_epoch;
	int deadline_cut;
	/* --deadline: this run's set-up to its first step (0: a resumed run),
	 * and its fastest epoch's training (for a whole epoch) and evaluation
	 * (0: none yet): result.json's result_floor_seconds */
	double setup_seconds, fastest_train, fastest_eval;
	/* --partial_epoch: the last epoch of the budget trains this share of
	 * an epoch's steps (0: all of them) */
	double part;
	/* the gradients' mean over the ranks is the backend's (NCCL), not
	 * the CPU ring's */
	int device_comm;
	/* --precision fp16: the loss is scaled by ls.scale before backward */
	int scaled;
	struct loss_scale ls;
};

struct epoch_stats {
	double loss, seconds, train_seconds, eval_seconds;
	long steps;                   /* training steps this run took in the epoch */
	long correct, seen;
	double val_loss;
	long val_correct, val_seen;
	float lr;
};

/* A budget of `budget` epochs, the last of them `part` of one (0: whole). */
static inline double budget_epochs(int budget, double part)
{
	return part > 0 ? budget - 1 + part : budget;
}

/* train_files.c */
/* The network (--arch, or the built-in one for the data) and the data sets. */
/* --deadline or --time_budget: the epoch budget is fitted to a time */
static inline int train_timed(const struct args *a)
{
	return a->deadline > 0 || a->time_budget > 0;
}

int train_setup(struct trial *t);
int train_save_checkpoint(struct trial *t);
int train_load_checkpoint(struct trial *t);
/* result.json, from rank 0 (status, the stop's reason) */
int train_write_result(struct trial *t, const char *status, const char *reason);
/* one epoch's line of metrics.jsonl */
int train_write_metrics(struct trial *t, const struct epoch_stats *s);
/* metrics.jsonl cut back to the checkpoint's epoch, on a resume */
int train_trim_metrics(const struct trial *t);

/* train_ranks.c */
/* buf <- its mean over the ranks on the CPU ring, n values of the model's
 * memory (through the host copy where the model is on a device). */
int train_ring_mean(struct trial *t, float *buf, size_t n);
int train_allreduce_stats(struct trial *t);
int train_elastic_batch(struct trial *t);
int train_elastic_step(struct trial *t, struct epoch_stats *s, int done);
int train_allreduce_grads(struct trial *t);
/* step.h's allreduce, and the communicator id's way to every rank */
int train_grads_mean(void *arg);
int train_share_comm_id(void *arg, void *id, size_t len);

#endif
