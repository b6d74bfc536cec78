/* schedule.h: AIPerf's training schedule of one trial, pure: the staged
 * epoch budget and patience, the budget that fits a deadline, and the
 * cosine learning rate. */
#ifndef AAH_SCHEDULE_H
#define AAH_SCHEDULE_H

#include "trialimg/args.h"

/* AIPerf's staged budget: round = (trial_seq - 1) / slave picks warmup_1,
 * warmup_2, warmup_3 or epochs; patience min(6 + 2*round, 20). */
int schedule_epoch_budget(const struct args *a, int *patience);
/* --deadline: the epoch budget that fits `remaining` seconds, `done` epochs
 * complete, at epoch_seconds each; left_in_epoch is what the epoch under way
 * still needs (0 between epochs: the epoch under way always finishes here;
 * under --partial_epoch schedule_cut_under_way may end it early).
 * Between epochs, done means none fits. Never above budget, unless `grow`
 * and the time the budget would leave holds less than another budget: then
 * the epochs that fit (under twice the budget), so that the trial takes the
 * end of the run instead of leaving it to trials cut to an epoch or two. */
int schedule_deadline_budget(int done, int budget, double remaining, double epoch_seconds,
			     double left_in_epoch, int grow);
/* --partial_epoch: schedule_deadline_budget to the step, in epochs and
 * their fraction: the last epoch may be a part of one (a part under
 * SCHEDULE_MIN_PART of an epoch is dropped). `budget` may hold a part. */
#define SCHEDULE_MIN_PART 0.1
double schedule_deadline_epochs(int done, double budget, double remaining, double epoch_seconds,
				double left_in_epoch, int grow);
/* --partial_epoch, when nothing past the epoch under way fits: the part of
 * it whose remaining training (`train_seconds` for a whole epoch, `at` of
 * it already trained) and one whole evaluation (`eval_seconds`, the same
 * for a part) fit in `remaining`, as done + that part. The epoch under way
 * finishes (done + 1) where it fits, or where less than SCHEDULE_MIN_PART
 * of an epoch, or less than is already trained, would (the trainer's
 * guard, schedule_guard_part, then ends such an epoch at its next check). */
double schedule_cut_under_way(int done, double at, double remaining, double train_seconds,
			      double eval_seconds);
/* --partial_epoch, in the epoch that ends the budget, `planned` of it (1
 * for a whole one) and `at` of it trained: `planned` while the rest of it
 * (`train_seconds` for a whole epoch, at the pace it trains now) and one
 * whole evaluation (`eval_seconds`) fit in `remaining` with half the spare
 * of `margin` (1.05: a fortieth); once they do not, the part that fits with
 * the whole spare, or `at` where nothing more does (the epoch ends now).
 * Never later than planned: a check can only bring the end forward, and a
 * pace a little slower than the one the budget was fitted to, within its
 * spare, changes nothing. */
double schedule_guard_part(double at, double planned, double remaining, double train_seconds,
			   double eval_seconds, double margin);
/* Steps from an epoch's start to its first estimate under a deadline (the
 * first step, which also sets up the kernels, then an eighth of the epoch
 * timed), and the least part of an epoch a trial can end at: the share
 * trained at that estimate, over an eighth and so over SCHEDULE_MIN_PART
 * (--partial_epoch; without it a trial ends whole epochs only). */
long schedule_probe_steps(long steps_per_epoch);
double schedule_least_part(long steps_per_epoch);
/* --time_budget: the budget that fits `remaining` seconds of the trial's
 * own, as schedule_deadline_budget without growth, except for a budget a
 * deadline grew past the trial's `own`: that trial takes the end of the
 * run, and cutting it would leave a gap too short for another budget, so
 * the time budget leaves it whole when `own` fits, and cuts it as any
 * other budget when `own` does not. */
int schedule_time_budget(int done, int budget, int own, double remaining, double epoch_seconds,
			 double left_in_epoch);
/* Learning rate at step t of T: cosine from initial_lr to final_lr. */
double schedule_lr(const struct args *a, long t, long total);

#endif
