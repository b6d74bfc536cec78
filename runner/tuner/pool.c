/* pool.c: persistent worker threads for parallel-for loops. */
#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "util.h"

struct tpool {
	unsigned nthreads;          /* including the caller */
	pthread_t *workers;         /* (nthreads - 1) */
	pthread_mutex_t mu;
	pthread_cond_t start, done;
	unsigned long generation;
	int quit;
	unsigned busy;
	/* the current job */
	void (*fn)(void *, size_t, size_t);
	void *ctx;
	size_t n, chunk;
	atomic_size_t next;
};

static void work(struct tpool *p)
{
	for (;;) {
		size_t b = atomic_fetch_add(&p->next, p->chunk);
		if (b >= p->n)
			break;
		size_t e = b + p->chunk < p->n ? b + p->chunk : p->n;
		p->fn(p->ctx, b, e);
	}
}

static void *worker(void *arg)
{
	struct tpool *p = arg;
	unsigned long seen = 0;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->quit && p->generation == seen)
			pthread_cond_wait(&p->start, &p->mu);
		if (p->quit)
			break;
		seen = p->generation;
		pthread_mutex_unlock(&p->mu);
		work(p);
		pthread_mutex_lock(&p->mu);
		if (--p->busy == 0)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

struct tpool *tpool_create(unsigned threads)
{
	if (threads == 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		threads = c > 0 ? (unsigned)c : 1;
	}
	if (threads > 64)
		threads = 64;
	struct tpool *p = xcalloc(1, sizeof(*p));
	p->nthreads = threads;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->start, NULL);
	pthread_cond_init(&p->done, NULL);
	p->workers = xcalloc(threads, sizeof(pthread_t));
	for (unsigned i = 0; i + 1 < threads; i++)
		if (pthread_create(&p->workers[i], NULL, worker, p) != 0) {
			p->nthreads = i + 1;   /* run with what we have */
			break;
		}
	return p;
}

unsigned tpool_threads(const struct tpool *p)
{
	return p->nthreads;
}

void tpool_free(struct tpool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->quit = 1;
	pthread_cond_broadcast(&p->start);
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 0; i + 1 < p->nthreads; i++)
		pthread_join(p->workers[i], NULL);
	pthread_cond_destroy(&p->start);
	pthread_cond_destroy(&p->done);
	pthread_mutex_destroy(&p->mu);
	free(p->workers);
	free(p);
}

void tpool_run(struct tpool *p, size_t n, size_t min_chunk,
	       void (*fn)(void *ctx, size_t begin, size_t end), void *ctx)
{
	if (n == 0)
		return;
	if (!p || p->nthreads == 1 || n <= min_chunk) {
		fn(ctx, 0, n);
		return;
	}
	size_t chunk = n / (p->nthreads * 4);
	if (chunk < min_chunk)
		chunk = min_chunk ? min_chunk : 1;
	pthread_mutex_lock(&p->mu);
	p->fn = fn;
	p->ctx = ctx;
	p->n = n;
	p->chunk = chunk;
	atomic_store(&p->next, 0);
	p->busy = p->nthreads - 1;
	p->generation++;
	pthread_cond_broadcast(&p->start);
	pthread_mutex_unlock(&p->mu);
	work(p);
	pthread_mutex_lock(&p->mu);
	while (p->busy)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
}
