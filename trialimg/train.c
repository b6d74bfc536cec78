/* train.c: the training loop of one trial (its set-up and files:
 * train_files.c; its ranks: train_ranks.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"   /* fileio_exists, fileio_mkdir_p */
#include "trialimg/inherit.h" /* inherit_weights */
#include "trialimg/monitor.h" /* monitor_start, monitor_stop */
#include "trialimg/schedule.h" /* the epoch budget, the deadline's, the LR */
#include "trialimg/train.h"
#include "trialimg/train_int.h"
#include "util.h"

/* ---- the deadline ---------------------------------------------------------- */

/* Epochs vary with the other work on the machine and the checkpoint written
 * after each: every fit to the deadline leaves a twentieth to spare. */
#define DEADLINE_MARGIN 1.05

/* An evaluation's time over an epoch's training time, by their FLOPs (the
 * evaluation runs the forward pass alone). */
static double eval_ratio(const struct trial *t)
{
	const struct model *m = &t->m;
	return (double)t->va.n * m->flops_fwd /
		((double)t->steps_per_epoch * t->batch * t->world * (m->flops_fwd + m->flops_bwd));
}

/* Seconds from an epoch of `m` on these data to the next: its training steps
 * and rank 0's evaluation, estimated from the training time of `steps`
 * steps (the evaluation runs the forward pass alone). */
static double epoch_estimate(const struct trial *t, double seconds, long steps)
{
	double train = seconds / (double)steps * (double)t->steps_per_epoch;
	return train * (1.0 + eval_ratio(t));
}

/* Under --deadline and --time_budget: the budget that still fits, decided
 * by rank 0 from its clock and followed by every rank; epoch_seconds is the
 * epoch estimate and left_in_epoch what the epoch under way still needs (0
 * between epochs). `grow` lets the budget take the end of the run (only
 * from the first estimate of a run's first epoch, while the schedule is at
 * its start); a time budget only shrinks it (schedule_time_budget). The
 * cosine schedule follows the new budget. Returns the budget, or -1 on a
 * communication error. */
static int fit_deadline(struct trial *t, double epoch_seconds, double left_in_epoch, int grow)
{
	const struct args *a = t->a;
	/* the budget in epochs, and the part of an epoch that ends it */
	double fitted[2] = {t->budget, t->part};
	if (t->rank == 0) {
		double e = epoch_seconds * DEADLINE_MARGIN, left = left_in_epoch * DEADLINE_MARGIN;
		int budget = t->budget;
		double part = t->part;
		if (a->deadline > 0) {
			double remaining = a->deadline - util_now();
			double now = budget_epochs(budget, part);
			double b = schedule_deadline_epochs(t->epoch, now, remaining, e, left, grow);
			if (!a->partial_epoch)   /* whole epochs: schedule_deadline_budget's */
				b = floor(b);
			else if (left > 0 && b == t->epoch + 1) {
				/* nothing past the epoch under way fits: where that
				 * epoch cannot end in time either, end it at the part
				 * that can, its evaluation whole */
				double r = eval_ratio(t);
				b = schedule_cut_under_way(t->epoch, 1.0 - left / e, remaining,
							   e / (1.0 + r), e * r / (1.0 + r));
			}
			budget = (int)ceil(b);
			part = b - floor(b);
			if (b != now)   /* whole epochs print as such */
				printf(a->partial_epoch
				       ? "aah-trial: deadline in %.0f s at %.1f s per epoch: "
					 "budget %.2f -> %.2f epochs\n"
				       : "aah-trial: deadline in %.0f s at %.1f s per epoch: "
					 "budget %.0f -> %.0f epochs\n",
				       remaining, epoch_seconds, now, b);
		}
		if (a->time_budget > 0) {
			double spent = t->wall_before + util_monotonic() - t->t0;
			int b = schedule_time_budget(t->epoch, budget, t->own_budget,
						     a->time_budget - spent, e, left);
			if (b != budget) {
				printf("aah-trial: time budget %.0f s, %.0f s spent, at %.1f s per "
				       "epoch: budget %d -> %d epochs\n", a->time_budget, spent,
				       epoch_seconds, budget, b);
				part = 0;   /* a cut to whole epochs */
			}
			budget = b;
		}
		fflush(stdout);
		fitted[0] = budget;
		fitted[1] = part;
	}
	if (t->dist && dist_broadcast(t->dist, fitted, sizeof(fitted)))
		return -1;
	int budget = (int)fitted[0];
	if (budget_epochs(budget, fitted[1]) < budget_epochs(t->budget, t->part))
		t->deadline_cut = 1;
	t->budget = budget;
	t->part = fitted[1];
	return budget;
}

/* Under --deadline and --partial_epoch, in the epoch that ends the budget:
 * rank 0 checks the rest of it and its evaluation against the time left, at
 * the pace of `steps` steps in `seconds` so far this epoch, and ends it at the
 * part that still fits where they no longer do, half the spare used
 * (schedule_guard_part); every rank follows. An epoch slower than the one
 * its budget was fitted to (the machine's other work) then ends before the
 * deadline with a result, instead of training on into it and being
 * canceled there. Returns -1 on a communication error. */
static int guard_deadline(struct trial *t, double seconds, long steps, long done)
{
	double part = t->part;
	if (t->rank == 0) {
		double r = eval_ratio(t);
		double train = seconds / (double)steps * (double)t->steps_per_epoch;
		double remaining = t->a->deadline - util_now();
		double planned = t->part > 0 ? t->part : 1;
		double p = schedule_guard_part((double)done / (double)t->steps_per_epoch, planned,
					       remaining, train, train * r, DEADLINE_MARGIN);
		if (p < planned) {
			printf("aah-trial: deadline in %.0f s at %.1f s per epoch (this epoch's pace): "
			       "budget %.2f -> %.2f epochs\n", remaining, train * (1.0 + r),
			       budget_epochs(t->budget, t->part), t->epoch + p);
			fflush(stdout);
			part = p;
		}
	}
	if (t->dist && dist_broadcast(t->dist, &part, sizeof(part)))
		return -1;
	if (part != t->part) {
		t->part = part;
		t->deadline_cut = 1;
	}
	return 0;
}

/* Steps of an epoch this trial trains: all of them but in the last epoch
 * of a budget that ends in a part of one (--partial_epoch). */
static long epoch_steps(const struct trial *t, int epoch)
{
	if (t->part <= 0 || epoch != t->budget - 1)
		return t->steps_per_epoch;
	long n = lround(t->part * (double)t->steps_per_epoch);
	return n > 0 ? n : 1;
}

/* ---- the loop ------------------------------------------------------------ */

/* The LR of a step: the cosine over the budget as it stands (a deadline
 * can shorten or lengthen it), scaled for an inheriting child. */
static float step_lr(const struct trial *t, long step)
{
	long total = t->steps_per_epoch * (t->budget - 1) + epoch_steps(t, t->budget - 1);
	return (float)(t->lr_scale * schedule_lr(t->a, step, total));
}

/* Epochs this run trains to: the budget, or --max_epochs when smaller. */
static int last_epoch(const struct trial *t)
{
	int max = t->a->max_epochs;
	return max > 0 && max < t->budget ? max : t->budget;
}

/* AAH_CUDA_LEDGER=1: what the backend queued in one step (its third, the
 * kernels set up), and the step it replays, into trial.log. */
static void log_ledger(struct trial *t, int done)
{
	struct ops_ledger *l = ops_ledger_of(&t->ops);
	const char *want = getenv("AAH_CUDA_LEDGER");
	if (!l || !want || strcmp(want, "1") || t->epoch || t->rank)
		return;
	if (done == 2) {
		ledger_reset(l);
		return;
	}
	if (done != 3)
		return;
	printf("aah-trial: ledger of step 3%s:\n", t->st.graph_n ? " (a replay)" : "");
	ledger_print(l, "aah-trial:   ", 1, stdout);
	if (t->st.graph_n) {
		printf("aah-trial: ledger of the captured step (%ld graph nodes, %ld of them the "
		       "backend's own kernels):\n", t->st.nodes, t->st.own);
		ledger_print(&t->st.captured, "aah-trial:   ", 1, stdout);
	}
	fflush(stdout);
}

/* Once, after the first step: an op that runs one of the backend's slow
 * reference kernels makes the whole trial tens of times slower. */
static void warn_slow_path(struct trial *t)
{
	const char *slow = t->ops.be->slow_path ? t->ops.be->slow_path(&t->ops) : NULL;
	if (slow)
		printf("aah-trial: warning: %s runs %s on a slow reference kernel on this "
		       "machine\n", t->ops.be->name, slow);
}

static int train_epoch(struct trial *t, struct epoch_stats *s, volatile sig_atomic_t *stop)
{
	const struct args *a = t->a;
	struct model *m = &t->m;
	const struct loader_batch *b;
	double t0 = util_monotonic();
	int done = t->resume_batch;   /* batches of this epoch run */
	/* with a deadline and no epoch timed yet, an eighth of the epoch gives
	 * the first estimate, timed from the end of its first step (which
	 * also sets up the kernels) */
	int first = done + 1, probe = 0;
	double t_first = t0;
	if (train_timed(a) && !t->slowest_epoch)
		probe = done + (int)schedule_probe_steps(t->steps_per_epoch);
	/* after it (or from the start of a later epoch), every eighth of an
	 * epoch: the deadline's guard in the epoch that ends the budget */
	long eighth = t->steps_per_epoch / 8 > 0 ? t->steps_per_epoch / 8 : 1;
	int guarded = a->deadline > 0 && a->partial_epoch;
	loader_start_epoch_at(&t->tl, t->epoch, done);
	if (t->rank == 0) {           /* what a mid-epoch checkpoint carried */
		s->loss += t->carry[0];
		s->correct += lround(t->carry[1]);
		s->seen += lround(t->carry[2]);
	}
	t->resume_batch = 0;
	memset(t->carry, 0, sizeof(t->carry));
	/* the epoch's LR is its last step's; a trial resized at the last step
	 * of an epoch resumes with none of it left to run */
	if (t->step)
		s->lr = step_lr(t, t->step - 1);
	while ((b = loader_next(&t->tl))) {
		if (*stop)
			return 1;
		if (b->error)
			return error("cannot read a training batch: %s", b->why);
		float lr = step_lr(t, t->step);
		log_ledger(t, done);
		if (step_train(&t->st, b->x, b->y, b->n, lr, (uint64_t)t->step) < 0)
			return -1;
		s->seen += b->n;
		s->lr = lr;
		t->step++;
		int resize = train_elastic_step(t, s, ++done);
		if (resize)
			return resize < 0 ? -1 : 2;
		if (done == first)
			t_first = util_monotonic();
		if (done == 1 && t->epoch == 0)
			warn_slow_path(t);
		if (done == probe && done < t->steps_per_epoch) {
			double est = epoch_estimate(t, util_monotonic() - t_first, done - first);
			double left = est * (double)(t->steps_per_epoch - done) / t->steps_per_epoch;
			/* grow only a run that started with the schedule */
			int grow = t->epoch == 0 && first == 1;
			if (fit_deadline(t, est, left, grow) < 0)
				return -1;
		} else if (guarded && done > probe && done > first && (done - first) % eighth == 0 &&
			   t->epoch == t->budget - 1 &&
			   guard_deadline(t, util_monotonic() - t_first, done - first, done) < 0) {
			return -1;
		}
		if (t->part > 0 && done >= epoch_steps(t, t->epoch))
			break;   /* the part of an epoch that ends the budget */
	}
	if (step_read(&t->st, &s->loss, &s->correct))   /* the device's sums, once an epoch */
		return -1;
	if (t->dist) { /* global sums; running statistics averaged over ranks */
		float sums[3] = {(float)s->loss, (float)s->correct, (float)s->seen};
		if (dist_allreduce_mean(t->dist, sums, 3) || train_allreduce_stats(t))
			return -1;
		s->loss = (double)sums[0] * t->world;
		s->correct = lround((double)sums[1] * t->world);
		s->seen = lround((double)sums[2] * t->world);
	}
	s->train_seconds = util_monotonic() - t0;
	s->steps = done - first + 1;
	t->train_flops += (m->flops_fwd + m->flops_bwd) * (double)s->seen;
	return 0;
}

static int evaluate(struct trial *t, struct epoch_stats *s, volatile sig_atomic_t *stop)
{
	struct model *m = &t->m;
	const struct loader_batch *b;
	double t0 = util_monotonic();
	loader_start_epoch(&t->vl, 0);
	while ((b = loader_next(&t->vl))) {
		if (*stop)
			return 1;
		if (b->error)
			return error("cannot read a validation batch: %s", b->why);
		if (step_eval(&t->st, b->x, b->y, b->n))
			return -1;
		s->val_seen += b->n;
	}
	if (step_read(&t->st, &s->val_loss, &s->val_correct))
		return -1;
	t->eval_flops += m->flops_fwd * (double)s->val_seen;
	s->eval_seconds = util_monotonic() - t0;
	return 0;
}

/* --deadline: the fastest epoch's training (for a whole epoch) and
 * evaluation so far, for result.json's result_floor_seconds. */
static void time_fastest(struct trial *t, const struct epoch_stats *s)
{
	if (s->steps <= 0 || s->eval_seconds <= 0)
		return;
	double train = s->train_seconds / (double)s->steps * (double)t->steps_per_epoch;
	if (!t->fastest_train || train < t->fastest_train)
		t->fastest_train = train;
	if (!t->fastest_eval || s->eval_seconds < t->fastest_eval)
		t->fastest_eval = s->eval_seconds;
}

static int run(struct trial *t, volatile sig_atomic_t *stop, const char **status,
	       const char **reason)
{
	const struct args *a = t->a;
	dist_stop_on(stop);   /* SIGTERM ends a rendezvous too, not only the training */
	if (t->world > 1 &&
	    dist_init(&t->dist, a->rdv_host, a->rdv_port, t->rank, t->world, a->dist_timeout))
		return -1;
	/* the backend first: its device decides the batch under AIPerf's rule */
	if (device_start(&t->dev, &t->ops, a, (uint64_t)a->seed * 7919 + t->rank))
		return -1;
	t->ops_ok = 1;
	const char *prec = ops_precision_pick(&t->ops, a->precision);
	int ran = t->ops.be->set_precision(&t->ops, prec);
	if (ran < 0)
		return -1;
	if (ran > 0) { /* the backend runs fp32 instead; result.json records that */
		printf("aah-trial: --precision %s: %s; training in fp32\n", prec, util_last_error());
		prec = "fp32";
	} else if (ops_precision_emulated(&t->ops, prec)) {
		printf("aah-trial: warning: --precision %s: this CPU has no bf16 instructions "
		       "(--probe's bf16_native), so bf16 is emulated, slower than fp32; "
		       "--precision fast trains fp32 here\n", a->precision);
	}
	t->precision = prec;
	device_log(&t->dev, prec, t->rank, t->world);
	if (train_setup(t))
		return -1;
	t->batch = (int)a->batch_size;
	device_batch_rule(&t->dev, a, &t->batch);
	if (train_elastic_batch(t))
		return -1;
	if (loader_check_batch(&t->tr, t->batch, t->world))  /* before sizing anything by it */
		return -1;
	struct memplan plan;  /* the step's memory, checked before it is allocated; a cap
			       * only lowers the batch */
	t->ops.conv_algo = ops_conv_algo_parse(a->conv_algo); /* args_parse checked it */
	if (device_fit_batch(&t->dev, a, &t->m, &t->ops, &t->batch, &plan))
		return -1;
	model_alloc_planned(&t->m, &plan, (uint64_t)a->seed); /* the model takes the plan */
	if (t->dist && t->ops.be->comm_init) {
		if (t->ops.be->comm_init(&t->ops, t->rank, t->world, train_share_comm_id, t->dist))
			return -1;
		t->device_comm = 1;
	}
	t->scaled = !strcmp(prec, "fp16");
	if (t->scaled && loss_scale_init(&t->ls, (float)a->loss_scale, a->loss_scale_interval))
		return -1;
	int workers = a->num_parallel_calls; /* 0: the rank's cores (loader_cores) */
	if (loader_init(&t->tl, &t->tr, t->batch, 1, workers, (uint64_t)a->seed, t->rank, t->world) ||
	    loader_init(&t->vl, &t->va, t->batch, 0, workers, (uint64_t)a->seed, 0, 1) ||
	    (a->data_trace && loader_trace(&t->tl, a->data_trace)))
		return -1;
	int resumed = a->resume && fileio_exists(t->ckpt_path);
	/* resumed from its own checkpoint, a child keeps its inherited budget,
	 * learning rate and record, but not its parent's weights */
	if (resumed
		    ? inherit_parent_id(a->trial_dir, t->inherited_from) < 0
		    : inherit_from_parent(&t->m, a->trial_dir, (uint64_t)a->seed,
					  t->inherited_from) < 0)
		return -1;
	t->budget = schedule_epoch_budget(a, &t->patience);
	if (t->inherited_from[0] && a->inherited_epochs > 0)
		t->budget = a->inherited_epochs;
	t->own_budget = t->budget;
	t->lr_scale = t->inherited_from[0] ? a->inherited_lr_scale : 1.0;
	if (t->inherited_from[0])
		printf("aah-trial: starts from the weights of trial %s (morph.json), learning rate "
		       "x%g\n", t->inherited_from, t->lr_scale);
	t->steps_per_epoch = t->tr.n / ((long)t->batch * t->world);
	if (resumed && train_load_checkpoint(t))
		return -1;
	if (model_resident(&t->m, &t->ops))   /* the weights are final: to the device */
		return -1;
	t->st.ls = t->scaled ? &t->ls : NULL;
	t->st.allreduce = t->dist ? train_grads_mean : NULL;
	t->st.arg = t;
	t->st.on_device = t->device_comm;
	step_init(&t->st, &t->m, &t->ops, (float)a->smooth_factor, (float)a->momentum,
		  (float)a->weight_decay);
	if (t->ops.be->capture && !t->st.graph)
		printf("aah-trial: every step runs its ops one by one: %s\n", t->st.why);
	if (a->resume && train_trim_metrics(t))
		return -1;
	printf("aah-trial: trial_seq %d, budget %d epochs, patience %d, %d layers, %zu parameters, "
	       "%.3g train / %.3g eval FLOPs per image, %d train / %d val images, batch %d x %d "
	       "rank(s)\n", a->trial_seq, t->budget, t->patience, t->m.n_layers, t->m.n_params,
	       t->m.flops_fwd + t->m.flops_bwd, t->m.flops_fwd, t->tr.n, t->va.n, t->batch, t->world);
	fflush(stdout);
	*status = "succeeded";
	*reason = "budget";
	if (!resumed)   /* its set-up, up to the first step */
		t->setup_seconds = util_monotonic() - t->t0;
	while (t->epoch < last_epoch(t)) {   /* a deadline can change the budget */
		struct epoch_stats s = {0};
		double t0 = util_monotonic();
		int rc = train_epoch(t, &s, stop);
		if (!rc && t->rank == 0)
			rc = evaluate(t, &s, stop);
		if (rc)
			return rc;
		/* rank 0 decides; every rank follows */
		t->epoch++;
		/* rank 0's validation accuracy and training loss */
		double seen[2] = {(double)s.val_correct / (double)(s.val_seen ? s.val_seen : 1),
				  s.loss / (double)(s.seen ? s.seen : 1)};
		if (t->dist && dist_broadcast(t->dist, seen, sizeof(seen)))
			return -1;
		double acc = seen[0];
		t->final_acc = acc;
		if (acc > t->best_acc) {
			t->best_acc = acc;
			t->best_epoch = t->epoch;
			t->bad_epochs = 0;
		} else {
			t->bad_epochs++;
		}
		s.seconds = util_monotonic() - t0;
		if (t->rank == 0) {
			time_fastest(t, &s);
			/* metrics first: a kill between the two reruns the epoch, and the
			 * rerun's line replaces this one (expdir_metrics_read) */
			if (train_write_metrics(t, &s) || train_save_checkpoint(t))
				return -1;
			printf("epoch %d/%d: loss %.4f acc %.4f val_loss %.4f val_acc %.4f lr %.5f "
			       "%.0f img/s %.1fs\n", t->epoch, t->budget, s.loss / s.seen,
			       (double)s.correct / s.seen, s.val_loss / s.val_seen, acc, s.lr,
			       s.seen / s.train_seconds, s.seconds);
			fflush(stdout);
		}
		/* Diverged: a loss that is not a number, or a whole epoch that ends
		 * worse than the uniform guess the network starts near (ln K, label
		 * smoothing included) while validation sits at chance. Patience
		 * would spend several more epochs on it. Opt-in (--stop_diverged):
		 * AIPerf stops trials on patience alone. */
		int K = t->m.num_classes;
		if (t->a->stop_diverged &&
		    (!isfinite(seen[1]) || (seen[1] > log((double)K) + 0.05 && acc <= 1.5 / K))) {
			*status = "early_stopped";
			*reason = "diverged";
			printf("aah-trial: stopped: training diverged (loss %.4f, val_acc %.4f at "
			       "chance 1/%d)\n", seen[1], acc, K);
			break;
		}
		if (t->bad_epochs >= t->patience && t->epoch < t->budget) {
			*status = "early_stopped";
			*reason = "early_stop";
			printf("aah-trial: early stop: no better val_acc for %d epochs\n", t->bad_epochs);
			break;
		}
		if (s.seconds > t->slowest_epoch)
			t->slowest_epoch = s.seconds;
		if (train_timed(a) && t->epoch < t->budget) {
			int b = fit_deadline(t, t->slowest_epoch, 0, 0);
			if (b < 0)
				return -1;
			if (b == t->epoch) {
				printf("aah-trial: stopped: no further epoch fits in the time left\n");
				break;
			}
		}
	}
	if (t->deadline_cut && !strcmp(*reason, "budget"))
		*reason = "deadline";
	return 0;
}

int train_write_failure(const char *trial_dir, const char *reason)
{
	struct args a;
	struct trial t;
	memset(&a, 0, sizeof(a));
	memset(&t, 0, sizeof(t));
	a.precision = "fp32";
	t.a = &a;
	t.t0 = util_monotonic();
	t.world = 1;
	t.result_path = xstrfmt("%s/result.json", trial_dir);
	int rc = fileio_exists(trial_dir) ? train_write_result(&t, "failed", reason) : -1;
	free(t.result_path);
	return rc;
}

int train_run(const struct args *a, volatile sig_atomic_t *stop)
{
	struct trial t;
	memset(&t, 0, sizeof(t));
	t.a = a;
	t.t0 = util_monotonic();
	t.rank = a->rank;
	t.world = a->world_size;
	t.metrics_path = xstrfmt("%s/metrics.jsonl", a->trial_dir);
	t.result_path = xstrfmt("%s/result.json", a->trial_dir);
	t.ckpt_dir = xstrfmt("%s/checkpoint", a->trial_dir);
	t.ckpt_path = xstrfmt("%s/checkpoint/state.bin", a->trial_dir);
	const char *status = "failed", *reason = "error";
	int rc = fileio_mkdir_p(a->trial_dir, 0755);
	if (!rc && !a->resume && t.rank == 0 && fileio_exists(t.metrics_path) &&
	    remove(t.metrics_path))
		rc = error_errno("cannot remove the old '%s'", t.metrics_path);
	struct monitor *mon = NULL;
	if (!rc && a->monitor_interval > 0) {   /* every rank; the first of each host samples it */
		char *dev = xstrfmt("%s/device_info", a->trial_dir);
		if (monitor_start(dev, a->monitor_interval, &mon) < 0)
			warning("no resource samples for this trial");
		else if (mon && strcmp(monitor_nvml_status(mon), "ok"))
			printf("aah-trial: monitor: no GPU readings on this host, NVML %s\n",
			       monitor_nvml_status(mon));
		free(dev);
	}
	if (!rc)
		rc = run(&t, stop, &status, &reason);
	monitor_stop(mon);
	if (rc == 2) {
		/* stopped to be resized: no result, the relaunch goes on */
	} else if (rc > 0 || *stop) {
		train_write_result(&t, "failed", "canceled");
		fprintf(stderr, "aah-trial: canceled\n");
		rc = 1;
	} else if (rc < 0) {
		char *why = xstrfmt("error: %s", util_last_error());
		train_write_result(&t, "failed", why);
		free(why);
	} else if (train_write_result(&t, status, reason)) {
		rc = -1;
	}
	loader_release(&t.tl);
	loader_release(&t.vl);
	if (t.ops_ok)
		model_release(&t.m, &t.ops);
	else
		model_release(&t.m, NULL);
	if (t.ops_ok)
		ops_ctx_release(&t.ops);
	dataset_release(&t.tr);
	dataset_release(&t.va);
	int lost = rc < 0 && dist_lost_peer(t.dist);
	if (t.dist)
		dist_free(t.dist);
	free(t.metrics_path);
	free(t.result_path);
	free(t.ckpt_dir);
	free(t.ckpt_path);
	return rc == 2 ? 2 : lost ? 3 : rc ? (rc > 0 ? 1 : -1) : 0;
}
