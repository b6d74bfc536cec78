/* outcome.h: a trial's outcome, the one reading of it that the scheduler,
 * the tuner, `status`, `report` and `metrics` share: its state, best and
 * final accuracy, epochs, FLOPs, precision and devices, from its directory
 * (result.json, metrics.jsonl, through expdir) and the journal's state.
 *
 * The rule (docs/formats.md, "A trial's outcome"): the epochs are
 * metrics.jsonl's; a trial that wrote none (a shell trial that writes only
 * result.json) has one epoch with result.json's best_val_acc and
 * total_flops. The best accuracy is the highest val_acc of the epochs, the
 * final one the last epoch's, the FLOPs the last epoch's cumulative count:
 * where result.json's figures disagree with its epochs, the epochs win,
 * since they are what the score counts, but for an NNI trial, whose result
 * is its FINAL value (the one NNI's tuners learn): result.json's
 * best_val_acc, the epochs being its intermediate results. The state is the
 * journal's; where the journal names none (TRIAL_UNKNOWN), result.json's
 * status. */
#ifndef AAH_OUTCOME_H
#define AAH_OUTCOME_H

#include <stddef.h>

#include "runner/store/expdir.h" /* enum trial_state, struct expdir_result, struct expdir_epoch */

struct outcome {
	enum trial_state state;   /* the journal's, else result.json's; TRIAL_UNKNOWN */
	double best_acc;          /* the highest val_acc of the epochs (an NNI trial: its FINAL
				   * result); NaN when none */
	double final_acc;         /* the last epoch's val_acc (NNI: FINAL); NaN when none */
	double flops;             /* the last epoch's cumulative FLOPs; 0 when none */
	size_t nepochs;
	struct expdir_epoch *epochs; /* (nepochs), file order; owned */
	char precision[16];       /* result.json's "precision"; "" when unknown */
	int on_gpu;               /* result.json's "devices" names a GPU */
	int have_result;          /* 1: result.json read; 0: none (yet); -1: unreadable */
	struct expdir_result result; /* when have_result is 1 */
};

/* Read trial seq's outcome into *o (release it with outcome_release) from
 * the place of its last launch (the journal's trial_rec.place; NULL: the
 * trial directory): only the attempt that counts is read, never what a
 * launch cut off before it wrote in its own place.
 * journal_state: the trial's state in the journal, or TRIAL_UNKNOWN;
 * end_ts: when it finished (the time of a result-only epoch; 0: when
 * result.json was written). 0, or -1 (error reported) when result.json or
 * metrics.jsonl cannot be read: *o then holds what could be, and can be
 * released. */
int outcome_read(const char *expdir, unsigned seq, const char *place,
		 enum trial_state journal_state, double end_ts, struct outcome *o);
void outcome_release(struct outcome *o);

/* A trial the tuner learns from: it ended well (succeeded or stopped
 * early) with a best accuracy; the others count as failed. */
int outcome_learnable(enum trial_state state, double best_acc);

#endif
