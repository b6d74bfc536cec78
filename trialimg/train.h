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
 * mid-epoch checkpoint, no result: trialimg/elastic.h). */
int train_run(const struct args *a, volatile sig_atomic_t *stop);

#endif
