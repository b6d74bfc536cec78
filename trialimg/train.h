/* train.h: one trial: data, model, AIPerf's schedule (staged epoch budget,
 * cosine LR decay, label smoothing, early stopping), metrics.jsonl,
 * checkpoints, result.json. */
#ifndef AAH_TRAIN_H
#define AAH_TRAIN_H

#include <signal.h>

#include "trialimg/args.h"

/* AIPerf's staged budget: round = (trial_seq - 1) / slave picks warmup_1,
 * warmup_2, warmup_3 or epochs; patience min(6 + 2*round, 20). */
int train_epoch_budget(const struct args *a, int *patience);
/* --deadline: the epoch budget that fits `remaining` seconds, `done` epochs
 * complete, at epoch_seconds each; left_in_epoch is what the epoch under way
 * still needs (0 between epochs: the epoch under way always finishes).
 * Between epochs, done means none fits. Never above budget, unless `grow`
 * and the time the budget would leave holds less than another budget: then
 * the epochs that fit (under twice the budget), so that the trial takes the
 * end of the run instead of leaving it to trials cut to an epoch or two. */
int train_deadline_budget(int done, int budget, double remaining, double epoch_seconds,
			  double left_in_epoch, int grow);
/* Learning rate at step t of T: cosine from initial_lr to final_lr. */
double train_lr(const struct args *a, long t, long total);
/* The parameters and batchnorm statistics of a checkpoint (written by a
 * trial of m's network) into m, allocated by model_alloc. */
struct model;
int train_checkpoint_weights(const char *path, struct model *m);
/* Writes a failed result.json into trial_dir (for errors before training
 * starts, such as bad arguments). */
int train_write_failure(const char *trial_dir, const char *reason);
/* Runs the trial; writes result.json whatever happens (when it can).
 * Returns 0 when training finished (succeeded or early_stopped); 2 when it
 * stopped at a step boundary to be relaunched on another world size (a
 * mid-epoch checkpoint, no result: trialimg/elastic.h). */
int train_run(const struct args *a, volatile sig_atomic_t *stop);

#endif
