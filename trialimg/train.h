/* train.h: one trial: data, model, AIPerf's schedule (schedule.h: staged
 * epoch budget, cosine LR decay; label smoothing, early stopping), metrics.jsonl,
 * checkpoints (the file: checkpoint.h), result.json. */
#ifndef AAH_TRAIN_H
#define AAH_TRAIN_H

#include <signal.h>

#include "trialimg/args.h"

/* Writes a failed result.json into trial_dir (for errors before training
 * starts, such as bad arguments). */
int train_write_failure(const char *trial_dir, const char *reason);
/* Runs the trial; writes result.json whatever happens (when it can).
 * Returns 0 when training finished (succeeded or early_stopped); 2 when it
 * stopped at a step boundary to be relaunched on another world size (a
 * mid-epoch checkpoint, no result: trialimg/elastic.h); 3 when it failed
 * because another rank was lost (dist_lost_peer); else nonzero. */
int train_run(const struct args *a, volatile sig_atomic_t *stop);

/* Exit status of a rank that failed because another rank of its trial was
 * lost mid-collective (it exited, was killed, or stopped answering): the
 * launch contract's way to tell a runner that this rank itself is not the
 * cause (docs/launch.md). */
#define TRAIN_EXIT_PEER_LOST 86

#endif
