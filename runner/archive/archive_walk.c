/* archive_walk.c: collect's reader thread (see archive_walk.h). */
#include "runner/archive/archive_walk.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>   /* SHA-256 of every file */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK ((size_t)256 << 10)          /* bytes per item of a large file */
#define QUEUE_BYTES ((size_t)16 << 20)     /* bytes in flight at most */
#define BATCH_ITEMS 256                     /* items handed over at once ... */
#define BATCH_BYTES ((size_t)1 << 20)       /* ... or this many bytes */
#define POOL_MAX 80                         /* > QUEUE_BYTES / CHUNK + batches in hand */

struct archive_walk {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct archive_walk_item *head, *tail;  /* the shared queue, under lock */
	size_t queued;              /* its cost: bytes of data + 256 per item */
	/* the walker's batch, not yet shared (walker thread only) */
	struct archive_walk_item *bhead, *btail;
	size_t bitems, bcost;
	/* the batch being consumed (consumer only) */
	struct archive_walk_item *chead;
	size_t ccost;
	/* full-size chunk buffers for reuse, under lock: allocating and
	 * unmapping one per 256 KiB made the kernel zero pages and shoot down
	 * TLBs across the two threads */
	unsigned char *pool[POOL_MAX];
	size_t npool;
	int done, failed, stop;
	int rootfd;
	struct stat skip[2];
	size_t nskip;
	const struct strvec *leave; /* paths below the root left out, sorted; or NULL */
	struct strbuf *manifest;
	struct archive_collect_stats *stats;
	EVP_MD_CTX *md;
};

/* Hand the walker's batch over; waits while the queue is full. Returns -1
 * when told to stop. Batches keep the hand-offs (and wake-ups) few. */
static int flush(struct archive_walk *w)
{
	if (!w->bhead)
		return 0;
	pthread_mutex_lock(&w->lock);
	while (w->queued >= QUEUE_BYTES && !w->stop)
		pthread_cond_wait(&w->cond, &w->lock);
	int stop = w->stop;
	if (!stop) {
		if (w->tail)
			w->tail->next = w->bhead;
		else
			w->head = w->bhead;
		w->tail = w->btail;
		w->queued += w->bcost;
		pthread_cond_broadcast(&w->cond);
	}
	pthread_mutex_unlock(&w->lock);
	if (stop) {
		while (w->bhead) {
			struct archive_walk_item *it = w->bhead;
			w->bhead = it->next;
			archive_walk_item_free(w, it);
		}
	}
	w->bhead = w->btail = NULL;
	w->bitems = w->bcost = 0;
	return stop ? -1 : 0;
}

static int push(struct archive_walk *w, struct archive_walk_item *it)
{
	if (w->btail)
		w->btail->next = it;
	else
		w->bhead = it;
	w->btail = it;
	w->bitems++;
	w->bcost += it->len + 256;
	if (w->bitems >= BATCH_ITEMS || w->bcost >= BATCH_BYTES)
		return flush(w);
	return 0;
}

void archive_walk_hex(const unsigned char *d, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[d[i] >> 4];
		out[2 * i + 1] = digits[d[i] & 15];
	}
	out[2 * n] = '\0';
}

/* Read, hash and queue the regular file open at fd. Closes fd. */
static int walk_file(struct archive_walk *w, int fd, const struct stat *st, const char *rel)
{
	EVP_DigestInit_ex(w->md, EVP_sha256(), NULL);
	off_t left = st->st_size;
	int first = 1, r = 0;
	while (r == 0 && (first || left > 0)) {
		size_t want = left < (off_t)CHUNK ? (size_t)left : CHUNK;
		struct archive_walk_item *it = xcalloc(1, sizeof(*it));
		if (want == CHUNK) {
			pthread_mutex_lock(&w->lock);
			it->data = w->npool ? w->pool[--w->npool] : NULL;
			pthread_mutex_unlock(&w->lock);
			if (!it->data)
				it->data = xmalloc(CHUNK);
			it->pooled = 1;
		} else {
			it->data = xmalloc(want ? want : 1);
		}
		size_t got = 0;
		while (got < want) {
			ssize_t n = read(fd, it->data + got, want - got);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				r = n < 0 ? error_errno("cannot read '%s'", rel)
					  : error("'%s' shrank while it was archived; run collect again", rel);
				break;
			}
			got += (size_t)n;
		}
		if (r < 0) {
			archive_walk_item_free(w, it);
			break;
		}
		EVP_DigestUpdate(w->md, it->data, got);
		it->len = got;
		if (first) {
			it->rel = xstrdup(rel);
			it->st = *st;
			first = 0;
		}
		left -= (off_t)got;
		r = push(w, it);
	}
	close(fd);
	if (r < 0)
		return -1;
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned dl = 0;
	char h[2 * EVP_MAX_MD_SIZE + 1];
	EVP_DigestFinal_ex(w->md, d, &dl);
	archive_walk_hex(d, dl, h);
	strbuf_addf(w->manifest, "%s  %s\n", h, rel);
	w->stats->files++;
	w->stats->bytes += (uint64_t)st->st_size;
	return 0;
}

struct dir_entry {
	char *name;
	unsigned char type;     /* readdir's d_type; DT_UNKNOWN when the fs does not say */
};

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct dir_entry *)a)->name, ((const struct dir_entry *)b)->name);
}

static int walk_dir(struct archive_walk *w, int dirfd, const char *rel);

/* One directory entry. Symbolic links are never opened: O_NOFOLLOW on every
 * open, and what was opened is checked with fstat on the descriptor. */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int walk_entry(struct archive_walk *w, int dirfd, const struct dir_entry *de,
		      const char *child)
{
	struct stat st;
	unsigned char type = de->type;
	if (w->leave && w->leave->n &&
	    bsearch(&child, w->leave->v, w->leave->n, sizeof(*w->leave->v), cmp_str)) {
		w->stats->superseded++;   /* a launch's that no longer counts */
		return 0;
	}
	if (type == DT_UNKNOWN) {
		if (fstatat(dirfd, de->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return error_errno("cannot stat '%s'", child);
		type = S_ISREG(st.st_mode) ? DT_REG : S_ISDIR(st.st_mode) ? DT_DIR
			: S_ISLNK(st.st_mode) ? DT_LNK : DT_FIFO;
	}
	if (type != DT_REG && type != DT_DIR) {
		warning("left out '%s': %s", child, type == DT_LNK ? "symbolic links are not followed"
			: "not a regular file or directory");
		w->stats->skipped++;
		return 0;
	}
	int fd = openat(dirfd, de->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY |
			(type == DT_DIR ? O_DIRECTORY : O_NONBLOCK));
	if (fd < 0 && errno == ELOOP) {      /* became a link since readdir */
		warning("left out '%s': symbolic links are not followed", child);
		w->stats->skipped++;
		return 0;
	}
	if (fd < 0)
		return error_errno("cannot open '%s'", child);
	if (fstat(fd, &st) < 0) {
		close(fd);
		return error_errno("cannot stat '%s'", child);
	}
	for (size_t i = 0; i < w->nskip; i++) {
		if (st.st_dev == w->skip[i].st_dev && st.st_ino == w->skip[i].st_ino) {
			close(fd);   /* the archive being written, or the one it replaces */
			return 0;
		}
	}
	if (type == DT_DIR && S_ISDIR(st.st_mode))
		return walk_dir(w, fd, child);  /* no member: directories are implied by names */
	if (type == DT_REG && S_ISREG(st.st_mode) && archive_name_is_archive(de->name)) {
		close(fd);   /* an earlier archive: archives do not nest */
		warning("left out '%s': an earlier archive", child);
		w->stats->archives++;
		return 0;
	}
	if (type == DT_REG && S_ISREG(st.st_mode))
		return walk_file(w, fd, &st, child);
	close(fd);
	return error("'%s' changed type while it was archived; run collect again", child);
}

/* Walk the directory open at dirfd, at rel below the root ("" for the
 * root). Takes ownership of dirfd. */
static int walk_dir(struct archive_walk *w, int dirfd, const char *rel)
{
	DIR *d = fdopendir(dirfd);
	if (!d) {
		close(dirfd);
		return error_errno("cannot read directory '%s'", *rel ? rel : ".");
	}
	struct dir_entry *ents = NULL;
	size_t n = 0, alloc = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == alloc) {
			alloc = alloc ? 2 * alloc : 32;
			ents = xrealloc(ents, alloc * sizeof(*ents));
		}
		ents[n].name = xstrdup(de->d_name);
		ents[n++].type = de->d_type;
	}
	if (n)
		qsort(ents, n, sizeof(*ents), cmp_entry);
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		char *child = *rel ? xstrfmt("%s/%s", rel, ents[i].name) : xstrdup(ents[i].name);
		if (strpbrk(ents[i].name, "\n\\"))
			r = error("cannot archive '%s': its name has a newline or a backslash", child);
		else
			r = walk_entry(w, dirfd, &ents[i], child);
		free(child);
	}
	for (size_t i = 0; i < n; i++)
		free(ents[i].name);
	free(ents);
	closedir(d);
	return r;
}

static void *walk_run(void *arg)
{
	struct archive_walk *w = arg;
	int fd = dup(w->rootfd);
	int r = fd < 0 ? error_errno("cannot duplicate a descriptor") : walk_dir(w, fd, "");
	if (r == 0)
		r = flush(w);
	pthread_mutex_lock(&w->lock);
	w->done = 1;
	w->failed = r < 0 && !w->stop;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

struct archive_walk *archive_walk_start(int rootfd, const struct stat *skip, size_t nskip,
					const struct strvec *leave, struct strbuf *manifest,
					struct archive_collect_stats *stats)
{
	struct archive_walk *w = xcalloc(1, sizeof(*w));
	w->rootfd = rootfd;
	w->leave = leave;
	for (size_t i = 0; i < nskip && i < 2; i++)
		w->skip[w->nskip++] = skip[i];
	w->manifest = manifest;
	w->stats = stats;
	w->md = EVP_MD_CTX_new();
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	if (!w->md || pthread_create(&w->thread, NULL, walk_run, w) != 0) {
		error("cannot start the reader thread");
		EVP_MD_CTX_free(w->md);
		pthread_mutex_destroy(&w->lock);
		pthread_cond_destroy(&w->cond);
		free(w);
		return NULL;
	}
	return w;
}

/* Give the consumed cost back to the walker, under the lock. */
static void release(struct archive_walk *w)
{
	pthread_mutex_lock(&w->lock);
	w->queued -= w->ccost;
	w->ccost = 0;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

struct archive_walk_item *archive_walk_next(struct archive_walk *w)
{
	if (w->ccost >= BATCH_BYTES)
		release(w);      /* let the walker refill while this batch drains */
	if (!w->chead) {         /* take the whole shared queue at once */
		pthread_mutex_lock(&w->lock);
		w->queued -= w->ccost;
		w->ccost = 0;
		pthread_cond_broadcast(&w->cond);
		while (!w->head && !w->done)
			pthread_cond_wait(&w->cond, &w->lock);
		if (!w->failed) {
			w->chead = w->head;
			w->head = w->tail = NULL;
		}
		pthread_mutex_unlock(&w->lock);
	}
	struct archive_walk_item *it = w->chead;
	if (it) {
		w->chead = it->next;
		it->next = NULL;
		w->ccost += it->len + 256;
	}
	return it;
}

void archive_walk_item_free(struct archive_walk *w, struct archive_walk_item *it)
{
	if (!it)
		return;
	if (it->pooled) {
		pthread_mutex_lock(&w->lock);
		if (w->npool < POOL_MAX) {
			w->pool[w->npool++] = it->data;
			it->data = NULL;
		}
		pthread_mutex_unlock(&w->lock);
	}
	free(it->rel);
	free(it->data);
	free(it);
}

int archive_walk_finish(struct archive_walk *w)
{
	pthread_mutex_lock(&w->lock);
	w->stop = 1;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	int failed = w->failed;
	struct archive_walk_item *lists[3] = { w->head, w->chead, w->bhead };
	for (int i = 0; i < 3; i++) {
		while (lists[i]) {
			struct archive_walk_item *it = lists[i];
			lists[i] = it->next;
			archive_walk_item_free(w, it);
		}
	}
	for (size_t i = 0; i < w->npool; i++)
		free(w->pool[i]);
	EVP_MD_CTX_free(w->md);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	free(w);
	return failed ? -1 : 0;
}
