/* schedule.c: AIPerf's training schedule of one trial (schedule.h). */
#include "trialimg/schedule.h"

#include <math.h>

int schedule_epoch_budget(const struct args *a, int *patience)
{
	int round = (a->trial_seq - 1) / a->slave;
	if (patience)
		*patience = a->patience > 0 ? a->patience : (6 + 2 * round < 20 ? 6 + 2 * round : 20);
	return round == 0 ? a->warmup_1 : round == 1 ? a->warmup_2 : round == 2 ? a->warmup_3 : a->epochs;
}

double schedule_deadline_epochs(int done, double budget, double remaining, double epoch_seconds,
				double left_in_epoch, int grow)
{
	if (epoch_seconds <= 0)
		return budget;
	int under_way = left_in_epoch > 0;
	double spare = remaining - left_in_epoch;
	double fit = spare > 0 ? spare / epoch_seconds : 0;
	if (fit > 2.0 * budget)
		fit = 2.0 * budget;
	double whole = floor(fit), part = fit - whole;
	double b = done + under_way + whole + (part >= SCHEDULE_MIN_PART ? part : 0);
	if (b <= budget)
		return b;
	return grow && floor(b) - budget < budget ? b : budget;
}

double schedule_cut_under_way(int done, double at, double remaining, double train_seconds,
			      double eval_seconds)
{
	if (train_seconds <= 0)
		return done + 1;
	double part = at + (remaining - eval_seconds) / train_seconds;
	return part < 1 && part >= SCHEDULE_MIN_PART && part >= at ? done + part : done + 1;
}

double schedule_guard_part(double at, double planned, double remaining, double train_seconds,
			   double eval_seconds, double margin)
{
	double need = (planned - at) * train_seconds + eval_seconds;
	if (train_seconds <= 0 || need * (1.0 + (margin - 1.0) / 2) <= remaining)
		return planned;
	double part = at + (remaining / margin - eval_seconds) / train_seconds;
	return part > at ? part : at;
}

long schedule_probe_steps(long steps_per_epoch)
{
	long p = steps_per_epoch / 8;
	return 1 + (p > 0 ? p : 1);
}

double schedule_least_part(long steps_per_epoch)
{
	if (steps_per_epoch <= 0)
		return 1;
	double at = (double)schedule_probe_steps(steps_per_epoch) / (double)steps_per_epoch;
	return at < 1 ? at : 1;
}

int schedule_deadline_budget(int done, int budget, double remaining, double epoch_seconds,
			     double left_in_epoch, int grow)
{
	/* the whole epochs of the budget to the step; one grown into a part of
	 * an epoch past the budget is the budget */
	return (int)floor(schedule_deadline_epochs(done, budget, remaining, epoch_seconds,
						   left_in_epoch, grow));
}

int schedule_time_budget(int done, int budget, int own, double remaining, double epoch_seconds,
			 double left_in_epoch)
{
	int b = schedule_deadline_budget(done, budget, remaining, epoch_seconds, left_in_epoch, 0);
	return budget > own && b >= own ? budget : b;
}

double schedule_lr(const struct args *a, long t, long total)
{
	if (total <= 1)
		return a->initial_lr;
	double p = (double)t / (double)(total - 1);
	return a->final_lr + (a->initial_lr - a->final_lr) * 0.5 * (1.0 + cos(M_PI * p));
}
