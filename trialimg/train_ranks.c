/* train_ranks.c: a trial's ranks: their means over the CPU ring, the
 * gradients' allreduce, and the elastic world size (trialimg/elastic.h). */
#include <stdio.h>

#include "trialimg/checkpoint.h" /* checkpoint_peek */
#include "trialimg/elastic.h"    /* elastic_target, ELASTIC_EXIT_RESIZE */
#include "trialimg/train_int.h"
#include "fileio.h"              /* fileio_exists */
#include "util.h"

/* ---- elastic world size ---------------------------------------------------- */

/* buf <- its mean over the ranks on the CPU ring, n values of the model's
 * memory: through the host copy where the model is on a device. */
int train_ring_mean(struct trial *t, float *buf, size_t n)
{
	if (ops_sync(&t->ops, buf, n * sizeof(float), OPS_TO_HOST) ||
	    dist_allreduce_mean(t->dist, buf, n))
		return -1;
	return ops_sync(&t->ops, buf, n * sizeof(float), OPS_TO_DEVICE);
}

/* Batchnorm running statistics averaged over the ranks. */
int train_allreduce_stats(struct trial *t)
{
	return t->m.n_stats ? train_ring_mean(t, t->m.stats, t->m.n_stats) : 0;
}

/* The global batch is kept across world sizes: from the checkpoint a trial
 * resumes from (each rank then takes global / world), else --global_batch,
 * else batch_size x world. The global batches, the steps per epoch and so the LR schedule are
 * the same whatever the world size. */
int train_elastic_batch(struct trial *t)
{
	int g = t->a->global_batch;
	if (g > 0 && g % t->world)
		return error("--global_batch %d does not split over %d ranks", g, t->world);
	if (g > 0)
		t->batch = g / t->world;
	t->global_batch = t->batch * t->world;
	if (!t->a->resume || !fileio_exists(t->ckpt_path))
		return 0;
	struct ckpt_header h;
	int got = checkpoint_peek(t->ckpt_path, &h);
	if (got < 0)
		return -1;
	if (!got || h.global_batch < 1)
		return 0;     /* train_load_checkpoint says what is wrong with it */
	if (h.global_batch % t->world)
		return error("the global batch %d of '%s' does not split over %d ranks", h.global_batch,
			     t->ckpt_path, t->world);
	t->global_batch = h.global_batch;
	t->batch = h.global_batch / t->world;
	return 0;
}

/* At a step boundary, after the allreduce and the update: has the runner
 * asked for another world size (trialimg/elastic.h)? Rank 0 reads, every
 * rank follows. On a change the epoch's sums so far become global, rank 0
 * saves a mid-epoch checkpoint (`done` batches of this epoch), and the
 * trial stops: 1. Else 0; -1 on error. */
int train_elastic_step(struct trial *t, struct epoch_stats *s, int done)
{
	if (!t->a->elastic)
		return 0;
	int target = t->rank == 0 ? elastic_target(t->a->trial_dir) : 0;
	if (t->dist && dist_broadcast(t->dist, &target, sizeof(target)))
		return -1;
	if (target < 0 || target == t->world || (target > 0 && t->global_batch % target))
		return 0;     /* nothing asked, or a size the global batch does not split over */
	if (step_read(&t->st, &s->loss, &s->correct))   /* the sums so far */
		return -1;
	float sums[3] = {(float)s->loss, (float)s->correct, (float)s->seen};
	if (t->dist && (dist_allreduce_mean(t->dist, sums, 3) || train_allreduce_stats(t)))
		return -1;
	for (int k = 0; k < 3; k++)
		t->carry[k] = (double)sums[k] * t->world;
	t->resume_batch = done;
	int saved = 1;
	if (t->rank == 0) {
		saved = train_save_checkpoint(t) == 0;
		if (saved)
			printf("aah-trial: world size %d -> %d at step %ld (epoch %d, batch %d): "
			       "checkpoint saved, exiting %d for the relaunch\n", t->world, target,
			       t->step, t->epoch + 1, done, ELASTIC_EXIT_RESIZE);
		fflush(stdout);
	}
	/* every rank leaves after the checkpoint is whole */
	if (t->dist && dist_broadcast(t->dist, &saved, sizeof(saved)))
		return -1;
	return saved ? 1 : -1;
}

/* The gradients' mean over the ranks: on the device where the backend
 * joined the ranks (NCCL), else on the CPU ring. */
int train_allreduce_grads(struct trial *t)
{
	if (t->device_comm)
		return t->ops.be->allreduce_mean(&t->ops, t->m.grads, t->m.n_params);
	return train_ring_mean(t, t->m.grads, t->m.n_params);
}

/* Rank 0's communicator id to every rank, over the rendezvous's ring. */
int train_share_comm_id(void *arg, void *id, size_t len)
{
	return dist_broadcast(arg, id, len);
}

/* step.h's allreduce: the gradients' mean over the ranks. */
int train_grads_mean(void *arg)
{
	return train_allreduce_grads(arg);
}

