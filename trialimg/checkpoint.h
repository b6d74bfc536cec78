/* checkpoint.h: a trial's checkpoint file (checkpoint/state.bin): a header
 * with where training stands (AAHCKPT4; AAHCKPT3, before a budget's part of
 * an epoch, and AAHCKPT2, before the fp16 loss scale, still read), then the
 * parameters, the SGD velocities and the batchnorm statistics of the model.
 * Written at every epoch's end and at an elastic resize (train.c), read to
 * resume and, weights only, by a child that inherits its parent's
 * (inherit.c). */
#ifndef AAH_CHECKPOINT_H
#define AAH_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

struct model;

struct ckpt_header {
	char magic[8];
	uint64_t n_params, n_stats;
	int32_t epoch, best_epoch, bad_epochs, budget;
	int64_t step;
	double best_acc, final_acc, train_flops, eval_flops, wall;
	int32_t global_batch, resume_batch;   /* batches of epoch `epoch` done */
	double carry[3];
	/* from AAHCKPT3 on: the fp16 loss scale (0 in other precisions) */
	float loss_scale;
	int32_t loss_scale_good;
	int64_t loss_scale_steps, loss_scale_skipped;
	/* from AAHCKPT4 on: the part of an epoch that ends the budget (0: a
	 * whole one; --partial_epoch) */
	double budget_part;
};
#define CKPT_MAGIC "AAHCKPT4"
/* A checkpoint written before the budget's part: its header ends at the loss scale. */
#define CKPT_MAGIC_3 "AAHCKPT3"
#define CKPT_HEADER_3 offsetof(struct ckpt_header, budget_part)
/* A checkpoint written before the loss scale: its header ends at carry. */
#define CKPT_MAGIC_2 "AAHCKPT2"
#define CKPT_HEADER_2 offsetof(struct ckpt_header, loss_scale)

/* Write h (its magic set here) and m's parameters, velocities and
 * statistics to path atomically, making dir first. */
int checkpoint_write(const char *dir, const char *path, const struct ckpt_header *h,
		     const struct model *m);
/* Read the checkpoint at path into m (parameters, velocities, statistics)
 * and its header into *h (zero past an older header's end). It must be
 * one of m's network: else -1 with the error naming `whose`. */
int checkpoint_load(const char *path, struct model *m, struct ckpt_header *h, const char *whose);
/* The parameters and batchnorm statistics of a checkpoint (written by a
 * trial of m's network) into m, allocated by model_alloc. */
int checkpoint_weights(const char *path, struct model *m);
/* The header of the checkpoint at path: 1 read, 0 when the file is no
 * checkpoint this trainer reads, -1 when it cannot be opened. */
int checkpoint_peek(const char *path, struct ckpt_header *h);

#endif
