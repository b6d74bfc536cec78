/* train_files.c: a trial's set-up and its own files: the network and the
 * data sets, the checkpoint (the format: trialimg/checkpoint.c),
 * metrics.jsonl and result.json. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"   /* fileio_write_atomic, fileio_exists */
#include "jsonfile.h" /* jsonfile_append, jsonfile_write */
#include "strbuf.h"
#include "trialimg/checkpoint.h" /* checkpoint_write, checkpoint_load */
#include "trialimg/schedule.h"   /* schedule_least_part */
#include "trialimg/train_int.h"
#include "util.h"

/* Tuner hyperparameters that change the network: every dropout's rate;
 * the kernel of conv layers past the 175th layer (AIPerf's rule). */
static void apply_hparams(const struct args *a, struct arch *arch)
{
	for (int i = 0; i < arch->n_layers; i++) {
		struct arch_op *op = &arch->layers[i].op;
		if (a->dropout_rate >= 0 && a->dropout_rate < 1 && op->type == ARCH_DROPOUT)
			op->rate = a->dropout_rate;
		if (a->kernel_size > 0 && i >= 175 && op->type == ARCH_CONV2D)
			op->kernel = a->kernel_size;
	}
}

int train_setup(struct trial *t)
{
	const struct args *a = t->a;
	const char *name = a->arch ? a->arch : "built-in default arch";
	struct arch arch = ARCH_INIT;
	cJSON *doc = NULL;
	int rc = -1;
	if (a->arch) {
		if (jsonfile_read(a->arch, &doc) || arch_read(&arch, doc, a->arch))
			goto out;
	} else {
		if (dataset_open(&t->tr, "auto", a->train_data_dir, 1, NULL))
			goto out;
		model_default_arch(&arch, t->tr.shape.h, t->tr.shape.w, t->tr.shape.c,
				   t->tr.classes < 2 ? 2 : t->tr.classes);
	}
	apply_hparams(a, &arch);
	if (arch_check(&arch, name))
		goto out;
	model_build(&t->m, &arch);
	if (!a->arch)
		printf("aah-trial: no arch.json: training the built-in small CNN\n");
	else if (dataset_open(&t->tr, "auto", a->train_data_dir, 1, &t->m.input))
		goto out;
	if (dataset_set_augment(&t->tr, a->augment))
		goto out;
	if (dataset_open(&t->va, "auto", a->val_data_dir, 0, &t->m.input))
		goto out;
	if (t->tr.classes > t->m.num_classes || t->va.classes > t->m.num_classes) {
		error("the data has %d classes but the network has num_classes %d",
		      t->tr.classes > t->va.classes ? t->tr.classes : t->va.classes, t->m.num_classes);
		goto out;
	}
	if (a->train_samples > 0 && a->train_samples < t->tr.n)
		t->tr.n = a->train_samples;
	if (a->val_samples > 0 && a->val_samples < t->va.n)
		t->va.n = a->val_samples;
	rc = 0;
out:
	arch_release(&arch);
	cJSON_Delete(doc);
	return rc;
}

/* ---- checkpoint (the file: trialimg/checkpoint.c) ----------------------------- */

int train_save_checkpoint(struct trial *t)
{
	struct model *m = &t->m;
	if (t->ops_ok && ops_sync(&t->ops, m->block, m->state_bytes, OPS_TO_HOST))
		return -1;
	struct ckpt_header h = {
		.n_params = m->n_params, .n_stats = m->n_stats,
		.epoch = t->epoch, .best_epoch = t->best_epoch, .bad_epochs = t->bad_epochs,
		.budget = t->budget, .step = t->step, .best_acc = t->best_acc,
		.final_acc = t->final_acc, .train_flops = t->train_flops, .eval_flops = t->eval_flops,
		.wall = t->wall_before + util_monotonic() - t->t0,
		.global_batch = t->global_batch, .resume_batch = t->resume_batch,
		.carry = { t->carry[0], t->carry[1], t->carry[2] },
		.loss_scale = t->scaled ? t->ls.scale : 0, .loss_scale_good = t->ls.good,
		.loss_scale_steps = t->ls.steps, .loss_scale_skipped = t->ls.skipped,
		.budget_part = t->part,
	};
	return checkpoint_write(t->ckpt_dir, t->ckpt_path, &h, m);
}

int train_load_checkpoint(struct trial *t)
{
	struct model *m = &t->m;
	struct ckpt_header h;
	if (checkpoint_load(t->ckpt_path, m, &h, "this network (delete it or drop --resume)") < 0)
		return -1;
	t->epoch = h.epoch;
	t->best_epoch = h.best_epoch;
	t->bad_epochs = h.bad_epochs;
	t->step = h.step;
	t->best_acc = h.best_acc;
	t->final_acc = h.final_acc;
	t->train_flops = h.train_flops;
	t->eval_flops = h.eval_flops;
	t->wall_before = h.wall;
	t->resume_batch = h.resume_batch;
	memcpy(t->carry, h.carry, sizeof(t->carry));
	if (t->scaled && h.loss_scale >= t->ls.min_scale && h.loss_scale <= t->ls.max_scale) {
		t->ls.scale = h.loss_scale;    /* the scale fp16 had found, not a new start */
		t->ls.good = h.loss_scale_good;
		t->ls.steps = h.loss_scale_steps;
		t->ls.skipped = h.loss_scale_skipped;
	}
	/* an earlier run fitted the budget to a time: the LR schedule goes
	 * on along the cosine it was following (to the step only with
	 * --partial_epoch: without it the part's epoch trains whole, and a
	 * budget so back at this run's own was not cut) */
	if (train_timed(t->a) && h.budget > 0 &&
	    (h.budget != t->budget || h.budget_part > 0)) {
		double part = t->a->partial_epoch && h.budget_part > 0 && h.budget_part < 1
			? h.budget_part : 0;
		t->deadline_cut = budget_epochs(h.budget, part) < budget_epochs(t->budget, t->part);
		t->budget = h.budget;
		t->part = part;
	}
	if (t->resume_batch)
		printf("aah-trial: resumed from '%s' in epoch %d after batch %d, %d rank(s)\n",
		       t->ckpt_path, t->epoch + 1, t->resume_batch, t->world);
	else
		printf("aah-trial: resumed from '%s' after epoch %d\n", t->ckpt_path, t->epoch);
	return 0;
}

/* ---- result and metrics ---------------------------------------------------- */

int train_write_result(struct trial *t, const char *status, const char *reason)
{
	if (t->rank != 0 || !t->result_path)
		return 0;
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "format", "aah-result/1");
	cJSON_AddStringToObject(r, "status", status);
	cJSON_AddStringToObject(r, "stop_reason", reason);
	cJSON_AddNumberToObject(r, "best_val_acc", t->best_acc);
	cJSON_AddNumberToObject(r, "best_epoch", t->best_epoch);
	cJSON_AddNumberToObject(r, "final_val_acc", t->final_acc);
	cJSON_AddNumberToObject(r, "epochs_run", t->epoch);
	cJSON_AddNumberToObject(r, "train_flops", t->train_flops);
	cJSON_AddNumberToObject(r, "eval_flops", t->eval_flops);
	cJSON_AddNumberToObject(r, "total_flops", t->train_flops + t->eval_flops);
	cJSON_AddNumberToObject(r, "wall_seconds", t->wall_before + util_monotonic() - t->t0);
	/* what ran; before the backend decided "auto", the fp32 it starts in */
	const char *prec = t->precision ? t->precision : t->a->precision;
	cJSON_AddStringToObject(r, "precision", prec && strcmp(prec, "auto") ? prec : "fp32");
	if (t->scaled)
		cJSON_AddNumberToObject(r, "skipped_steps", (double)t->ls.skipped);
	device_result(&t->dev, r, t->a->threads > 0 ? t->a->threads : sysconf(_SC_NPROCESSORS_ONLN));
	cJSON_AddNumberToObject(r, "world_size", t->world);
	if (t->a->deadline > 0 && t->fastest_train > 0) {
		/* the least a launch of this network here takes to a result under
		 * a deadline: the runner starts none with less time left */
		double part = t->a->partial_epoch ? schedule_least_part(t->steps_per_epoch) : 1;
		cJSON_AddNumberToObject(r, "result_floor_seconds",
					t->setup_seconds + part * t->fastest_train + t->fastest_eval);
	}
	if (t->inherited_from[0]) /* its epochs and FLOPs are its own; the parent's are not here */
		cJSON_AddStringToObject(r, "inherited_from", t->inherited_from);
	int rc = jsonfile_write(t->result_path, r);
	cJSON_Delete(r);
	return rc;
}

int train_write_metrics(struct trial *t, const struct epoch_stats *s)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "format", "aah-metrics/1");
	cJSON_AddNumberToObject(j, "epoch", t->epoch);
	cJSON_AddNumberToObject(j, "train_loss", s->loss / (double)s->seen);
	cJSON_AddNumberToObject(j, "train_acc", (double)s->correct / (double)s->seen);
	cJSON_AddNumberToObject(j, "val_loss", s->val_loss / (double)s->val_seen);
	cJSON_AddNumberToObject(j, "val_acc", (double)s->val_correct / (double)s->val_seen);
	cJSON_AddNumberToObject(j, "lr", s->lr);
	cJSON_AddNumberToObject(j, "images_per_sec", (double)s->seen / s->train_seconds);
	cJSON_AddNumberToObject(j, "epoch_seconds", s->seconds);
	cJSON_AddNumberToObject(j, "train_flops", t->train_flops);
	cJSON_AddNumberToObject(j, "eval_flops", t->eval_flops);
	cJSON_AddNumberToObject(j, "timestamp", util_now());
	cJSON_AddNumberToObject(j, "rank", t->rank);
	cJSON_AddStringToObject(j, "precision", t->precision);
	if (t->part > 0 && t->epoch == t->budget)   /* the budget's last, a part of an epoch */
		cJSON_AddNumberToObject(j, "part", t->part);
	if (t->scaled) {
		cJSON_AddNumberToObject(j, "loss_scale", t->ls.scale);
		cJSON_AddNumberToObject(j, "skipped_steps", (double)t->ls.skipped);
	}
	int rc = jsonfile_append(t->metrics_path, j);
	cJSON_Delete(j);
	return rc;
}

/* Resuming from the checkpoint of epoch t->epoch: metrics.jsonl keeps the
 * lines up to that epoch only. A kill between an epoch's metrics line and
 * its checkpoint runs that epoch again; without this its line would be
 * there twice, and the score would count the epoch twice. */
struct kept_lines {
	int upto;
	struct strbuf sb;
};

static int keep_line(const cJSON *line, void *arg)
{
	struct kept_lines *k = arg;
	const cJSON *ep = cJSON_GetObjectItemCaseSensitive(line, "epoch");
	if (cJSON_IsNumber(ep) && ep->valueint > k->upto)
		return 0;
	char *s = cJSON_PrintUnformatted(line);
	strbuf_addstr(&k->sb, s);
	strbuf_addch(&k->sb, '\n');
	cJSON_free(s);
	return 0;
}

int train_trim_metrics(const struct trial *t)
{
	if (t->rank != 0 || !fileio_exists(t->metrics_path))
		return 0;
	struct kept_lines k = { t->epoch, STRBUF_INIT };
	int rc = jsonfile_read_lines(t->metrics_path, keep_line, &k);
	if (!rc)
		rc = fileio_write_atomic(t->metrics_path, k.sb.buf ? k.sb.buf : "", k.sb.len);
	strbuf_release(&k.sb);
	return rc;
}
