/* step.h: one training step over the op table, as the trainer, bench_train
 * and the tests run it: the batch into the model's input slot where the
 * backend uploads it (a device: ops_backend.upload), forward, the loss
 * (its gradient written into the model's own buffer, its sums kept by the
 * backend until ops_loss_read), backward, the gradients' mean over the
 * ranks, fp16's loss scale, the update. Where the backend replays steps
 * (the cuda backend's CUDA graphs) the second step of the full batch is
 * captured and every later one replayed: the host then queues one launch a
 * step instead of a thousand. */
#ifndef AAH_STEP_H
#define AAH_STEP_H

#include "kernels/ledger.h"     /* struct ops_ledger */
#include "kernels/loss_scale.h" /* struct loss_scale */
#include "trialimg/model.h"

struct step {
	struct model *m;
	struct ops_ctx *ctx;
	float smoothing, momentum, weight_decay;
	struct loss_scale *ls;        /* fp16's dynamic loss scale; NULL: none */
	/* the gradients' mean over the ranks (NULL: one rank); on_device: it
	 * is queued on the backend's stream (NCCL), so a replay can hold it */
	int (*allreduce)(void *arg);
	void *arg;
	int on_device;
	int graph;                    /* replay the captured step (AAH_CUDA_GRAPH=0,
				       * step_init's reasons: 0, why in why) */
	char why[256];
	int graph_n;                  /* the batch size the captured step holds; 0: none */
	int runs;                     /* steps run */
	long nodes, own;              /* the captured graph's nodes, own kernels */
	struct ops_ledger captured;   /* what the captured step queued */
	double loss;                  /* the loss's sums on a host backend (a */
	long correct;                 /* device's keeps its own): step_read */
};

/* Fills s for m on ctx with the trainer's settings (the caller sets ls,
 * allreduce, arg and on_device first): whether steps are replayed, and
 * why not. */
void step_init(struct step *s, struct model *m, struct ops_ctx *ctx, float smoothing,
	       float momentum, float weight_decay);
/* One training step on n samples of x and their labels (host memory; or
 * already in the model's input slot when x is m->in.x), at learning rate
 * lr, the trainer's global step `step`: 1 when the update was applied, 0
 * when fp16's loss scale skipped it (an inf or a NaN), -1 on error. */
int step_train(struct step *s, const float *x, const int *labels, int n, float lr,
	       uint64_t step);
/* The forward pass and the loss (no gradient) of n samples: evaluation. */
int step_eval(struct step *s, const float *x, const int *labels, int n);
/* The summed loss and the correct predictions of the steps (training or
 * evaluation) since the last read, added into *loss and *correct: on a
 * device backend the one wait for it (ops_loss_read). */
int step_read(struct step *s, double *loss, long *correct);

#endif
