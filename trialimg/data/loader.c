/* loader.c: worker threads fill a ring of LOADER_DEPTH batches, each
 * LOADER_CHUNK samples at a time; batch b goes to slot b % LOADER_DEPTH once
 * the consumer has moved past b - DEPTH. */
#include <sched.h> /* sched_getaffinity, CPU_COUNT */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "trialimg/data/loader.h"
#include "util.h"

/* Samples in batch b (a training batch is whole; evaluation's last is not)
 * and the number of b's first sample in the epoch's order. */
static int batch_n(const struct loader *l, int b, size_t *first)
{
	const struct dataset *ds = l->ds;
	*first = l->train ? ((size_t)b * l->world + l->rank) * l->batch : (size_t)b * l->batch;
	int n = l->batch;
	if (!l->train && *first + n > (size_t)ds->n)
		n = ds->n - (int)*first;
	return n;
}

static int n_chunks(const struct loader *l, int b)
{
	size_t first;
	return (batch_n(l, b, &first) + LOADER_CHUNK - 1) / LOADER_CHUNK;
}

/* Samples [c * LOADER_CHUNK, ...) of batch b into s: 0, or the first
 * failing sample's place in the batch with its message in why. */
static int fill(struct loader *l, int b, int c, struct loader_batch *s, char *why)
{
	const struct dataset *ds = l->ds;
	size_t per = ops_shape_size(&ds->shape), first;
	int n = batch_n(l, b, &first), bad = -1;
	int end = (c + 1) * LOADER_CHUNK < n ? (c + 1) * LOADER_CHUNK : n;
	for (int i = c * LOADER_CHUNK; i < end; i++) {
		int idx = l->order[first + i];
		uint64_t rng = l->seed ^ ((uint64_t)l->epoch << 40) ^ ((uint64_t)idx * 0x9e3779b97f4a7c15ull);
		s->y[i] = ds->labels[idx];
		if (ds->get(ds, idx, s->x + per * i, l->train, rng) && bad < 0) {
			bad = i; /* this worker's own message, handed over under l->mu */
			xstrlcpy(why, util_last_error(), UTIL_ERROR_MAX);
		}
	}
	return bad;
}

/* Each worker takes the next LOADER_CHUNK samples of the next batch to
 * fill, so more workers than LOADER_DEPTH share the batches; the last
 * chunk of a batch to finish hands the batch over. */
static void *worker(void *arg)
{
	struct loader *l = arg;
	char why[UTIL_ERROR_MAX];
	pthread_mutex_lock(&l->mu);
	for (;;) {
		while (!l->quit &&
		       !(l->next_fill < l->n_batches && l->next_fill < l->next_take + LOADER_DEPTH))
			pthread_cond_wait(&l->work, &l->mu);
		if (l->quit)
			break;
		int b = l->next_fill, k = b % LOADER_DEPTH, c = l->next_chunk++;
		struct loader_batch *s = &l->slot[k];
		if (c == 0) {
			size_t first;
			s->n = batch_n(l, b, &first);
			s->error = 0;
			l->left[k] = n_chunks(l, b);
			l->bad_at[k] = s->n;
		}
		if (l->next_chunk == n_chunks(l, b))
			l->next_fill++, l->next_chunk = 0;
		l->in_flight++;
		pthread_mutex_unlock(&l->mu);
		int bad = fill(l, b, c, s, why);
		pthread_mutex_lock(&l->mu);
		if (bad >= 0 && bad < l->bad_at[k]) { /* the batch's first failure, whoever ends first */
			l->bad_at[k] = bad;
			s->error = 1;
			xstrlcpy(s->why, why, sizeof(s->why));
		}
		l->in_flight--;
		if (--l->left[k] == 0)
			l->slot_batch[k] = b;
		pthread_cond_broadcast(&l->ready);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

int loader_cores(void)
{
	cpu_set_t set;
	int n = sched_getaffinity(0, sizeof(set), &set) ? 0 : CPU_COUNT(&set);
	if (n < 1)
		n = (int)sysconf(_SC_NPROCESSORS_ONLN);
	/* a CPU quota (cgroup v2: "<quota> <period>" or "max <period>") */
	FILE *f = fopen("/sys/fs/cgroup/cpu.max", "r");
	long quota, period;
	if (f && fscanf(f, "%ld %ld", &quota, &period) == 2 && quota > 0 && period > 0 &&
	    (quota + period - 1) / period < n)
		n = (int)((quota + period - 1) / period);
	if (f)
		fclose(f);
	return n < 1 ? 1 : n;
}

int loader_check_batch(const struct dataset *ds, int batch, int world)
{
	if ((size_t)batch * world > (size_t)ds->n)
		return error("batch size %d x %d ranks exceeds the %d training samples in '%s'",
			     batch, world, ds->n, ds->dir);
	return 0;
}

int loader_init(struct loader *l, const struct dataset *ds, int batch, int train, int workers,
		uint64_t seed, int rank, int world)
{
	memset(l, 0, sizeof(*l));
	if (batch < 1)
		return error("batch size must be positive");
	if (train && loader_check_batch(ds, batch, world))
		return -1;
	l->ds = ds;
	l->batch = batch;
	l->train = train;
	l->seed = seed;
	l->rank = rank;
	l->world = world;
	l->order = xmalloc(sizeof(int) * (size_t)ds->n);
	size_t per = ops_shape_size(&ds->shape);
	for (int k = 0; k < LOADER_DEPTH; k++) {
		l->slot[k].x = xmalloc(sizeof(float) * per * (size_t)batch);
		l->slot[k].y = xmalloc(sizeof(int) * (size_t)batch);
		l->slot_batch[k] = -1;
	}
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->work, NULL);
	pthread_cond_init(&l->ready, NULL);
	l->n_workers = workers < 1 ? loader_cores() : workers;
	l->workers = xcalloc(l->n_workers, sizeof(pthread_t));
	for (int i = 0; i < l->n_workers; i++)
		if (pthread_create(&l->workers[i], NULL, worker, l)) {
			l->n_workers = i;
			loader_release(l);
			return error("cannot start data loader threads");
		}
	return 0;
}

void loader_start_epoch(struct loader *l, int epoch)
{
	loader_start_epoch_at(l, epoch, 0);
}

void loader_start_epoch_at(struct loader *l, int epoch, int first)
{
	pthread_mutex_lock(&l->mu);
	l->n_batches = 0; /* stop claiming, then wait for fills in progress */
	while (l->in_flight)
		pthread_cond_wait(&l->ready, &l->mu);
	int n = l->ds->n;
	for (int i = 0; i < n; i++)
		l->order[i] = i;
	if (l->train) {
		uint64_t rng = l->seed * 0x2545f4914f6cdd1dull + (uint64_t)epoch + 1;
		for (int i = n - 1; i > 0; i--) {
			int j = (int)(dataset_rng(&rng) % (uint64_t)(i + 1));
			int t = l->order[i];
			l->order[i] = l->order[j];
			l->order[j] = t;
		}
	}
	l->epoch = epoch;
	l->next_fill = l->next_take = first;
	l->next_chunk = 0;
	l->holding = 0;
	for (int k = 0; k < LOADER_DEPTH; k++)
		l->slot_batch[k] = -1;
	l->n_batches = l->train ? n / (l->batch * l->world) : (n + l->batch - 1) / l->batch;
	pthread_cond_broadcast(&l->work);
	pthread_mutex_unlock(&l->mu);
}

int loader_trace(struct loader *l, const char *path)
{
	char *p = xstrfmt("%s.rank%d", path, l->rank);
	l->trace = fopen(p, "a");
	int rc = l->trace ? 0 : error_errno("cannot open the data trace '%s'", p);
	free(p);
	return rc;
}

/* The samples of batch b, as fill() takes them: a line of the trace. */
static void trace_batch(struct loader *l, int b)
{
	size_t first = l->train ? ((size_t)b * l->world + l->rank) * l->batch : (size_t)b * l->batch;
	int n = l->slot[b % LOADER_DEPTH].n;
	fprintf(l->trace, "epoch %d batch %d world %d rank %d:", l->epoch, b, l->world, l->rank);
	for (int i = 0; i < n; i++)
		fprintf(l->trace, " %d", l->order[first + i]);
	fputc('\n', l->trace);
	fflush(l->trace);
}

const struct loader_batch *loader_next(struct loader *l)
{
	pthread_mutex_lock(&l->mu);
	if (l->holding) {
		l->slot_batch[l->next_take % LOADER_DEPTH] = -1;
		l->next_take++;
		l->holding = 0;
		pthread_cond_broadcast(&l->work);
	}
	if (l->next_take >= l->n_batches) {
		pthread_mutex_unlock(&l->mu);
		return NULL;
	}
	int k = l->next_take % LOADER_DEPTH;
	while (l->slot_batch[k] != l->next_take)
		pthread_cond_wait(&l->ready, &l->mu);
	l->holding = 1;
	pthread_mutex_unlock(&l->mu);
	if (l->trace)
		trace_batch(l, l->next_take);
	return &l->slot[k];
}

void loader_release(struct loader *l)
{
	if (!l->workers)
		return;
	pthread_mutex_lock(&l->mu);
	l->quit = 1;
	pthread_cond_broadcast(&l->work);
	pthread_mutex_unlock(&l->mu);
	for (int i = 0; i < l->n_workers; i++)
		pthread_join(l->workers[i], NULL);
	for (int k = 0; k < LOADER_DEPTH; k++) {
		free(l->slot[k].x);
		free(l->slot[k].y);
	}
	free(l->workers);
	free(l->order);
	if (l->trace)
		fclose(l->trace);
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->work);
	pthread_cond_destroy(&l->ready);
	memset(l, 0, sizeof(*l));
}
