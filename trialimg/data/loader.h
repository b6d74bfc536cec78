/* loader.h: batches from a dataset, assembled by worker threads ahead of
 * the training loop (a ring of prefetched batches). Batch content depends
 * only on (seed, epoch, batch index), never on thread timing. */
#ifndef AAH_LOADER_H
#define AAH_LOADER_H

#include <pthread.h>
#include <stdio.h>
#include <stdint.h>

#include "trialimg/data/dataset.h"
#include "util.h" /* UTIL_ERROR_MAX */

enum { LOADER_DEPTH = 4, LOADER_CHUNK = 8 /* samples a worker takes at once */ };

struct loader_batch {
	int n;          /* samples in this batch */
	float *x;       /* (n, h, w, c) */
	int *y;         /* (n) */
	int error;      /* set when a sample could not be produced */
	char why[UTIL_ERROR_MAX]; /* the first such sample's message (it names the
				   * file), the worker thread's own last error */
};

struct loader {
	const struct dataset *ds;
	int batch, train, rank, world;
	uint64_t seed;
	int *order;                     /* (ds->n) sample order of this epoch */
	int epoch, n_batches;
	struct loader_batch slot[LOADER_DEPTH];
	int slot_batch[LOADER_DEPTH];   /* batch held by each slot, -1 = none */
	int next_fill, next_take, in_flight, holding, quit;
	int next_chunk;                 /* of batch next_fill, the next to claim */
	int left[LOADER_DEPTH];         /* chunks of each slot's batch not done */
	int bad_at[LOADER_DEPTH];       /* its first failed sample (n: none yet) */
	pthread_mutex_t mu;
	pthread_cond_t work, ready;
	int n_workers;
	pthread_t *workers;
	FILE *trace;                    /* loader_trace's file, or NULL */
};

/* Does a training set hold one global batch (batch x world samples)? The
 * trainer asks before it allocates anything sized by the batch. */
int loader_check_batch(const struct dataset *ds, int batch, int world);
/* The cores this process may run on (its affinity mask, lowered to a
 * cgroup v2 CPU quota): the workers a loader starts when asked for 0. */
int loader_cores(void);
/* Training loaders shuffle each epoch and drop the last partial batch; each
 * of `world` ranks reads its own shard. Evaluation loaders read every sample
 * in order, including a final partial batch. */
int loader_init(struct loader *l, const struct dataset *ds, int batch, int train, int workers,
		uint64_t seed, int rank, int world);  /* workers 0: loader_cores() */
/* Start epoch e (0-based); ends any epoch in progress. */
void loader_start_epoch(struct loader *l, int epoch);
/* The same, from batch `first` of the epoch (a trial resumed mid-epoch). */
void loader_start_epoch_at(struct loader *l, int epoch, int first);
/* The next batch of the epoch, or NULL at its end. The batch stays valid
 * until the next call. A batch with `error` set failed in a worker thread:
 * its `why` carries that thread's message, which the consumer passes on
 * (util_last_error() on the consumer's thread knows nothing of it). */
const struct loader_batch *loader_next(struct loader *l);
/* From now on append each batch loader_next hands out to path.rank<rank>
 * (opened for appending: a resumed run goes on in the same file), one line
 * "epoch E batch B world W rank R: i i ...", the samples' numbers in the
 * dataset. A test's view of which rank read what; a batch handed out is a
 * batch trained, except one taken when the trial was stopped by a signal. */
int loader_trace(struct loader *l, const char *path);
void loader_release(struct loader *l);

#endif
