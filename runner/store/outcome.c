/* outcome.c: a trial's outcome from its directory and the journal's state:
 * the one rule of outcome.h. */
#include "runner/store/outcome.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int outcome_read(const char *expdir, unsigned seq, const char *place,
		 enum trial_state journal_state, double end_ts, struct outcome *o)
{
	memset(o, 0, sizeof(*o));
	o->best_acc = o->final_acc = NAN;
	o->state = journal_state;
	char *dir = expdir_place_dir(expdir, seq, place);
	int r = 0;
	o->have_result = expdir_result_read(dir, &o->result);
	if (o->have_result < 0)
		r = -1;
	const struct expdir_result *res = o->have_result > 0 ? &o->result : NULL;
	if (res) {
		xstrlcpy(o->precision, res->precision, sizeof(o->precision));
		o->on_gpu = res->on_gpu;
		if (o->state == TRIAL_UNKNOWN)
			o->state = res->status;
	}
	if (expdir_trial_epochs(dir, res, end_ts, &o->epochs, &o->nepochs) < 0)
		r = -1;
	for (size_t i = 0; i < o->nepochs; i++) {
		double a = o->epochs[i].val_acc;
		if (isnan(o->best_acc) || a > o->best_acc)
			o->best_acc = a;
	}
	if (o->nepochs) {
		o->final_acc = o->epochs[o->nepochs - 1].val_acc;
		o->flops = o->epochs[o->nepochs - 1].flops;
	}
	if (res && res->nni && !isnan(res->best_val_acc))   /* NNI's result is its FINAL one */
		o->best_acc = o->final_acc = res->best_val_acc;
	free(dir);
	return r;
}

void outcome_release(struct outcome *o)
{
	free(o->epochs);
	o->epochs = NULL;
	o->nepochs = 0;
}

int outcome_learnable(enum trial_state state, double best_acc)
{
	return (state == TRIAL_SUCCEEDED || state == TRIAL_EARLY_STOPPED) && !isnan(best_acc);
}
