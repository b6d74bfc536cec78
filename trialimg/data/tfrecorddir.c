/* tfrecorddir.c: a directory of TFRecord files of tf.Example records as
 * AIPerf's scripts/build_data/build_imagenet_data.py writes ImageNet
 * (train-00000-of-01024 ..., validation-00000-of-00128 ...), read as an
 * image set whose samples go through the JPEG folders' decode and
 * augmentation (jpegdir.c).
 *
 * Opening reads each file's index (tfrindex.c: every record's place, its
 * label and where its JPEG lies; a thread per core, each taking the next
 * file), made once by reading the file (both checksums and the Example
 * checked). A sample read later reads its record by offset, through one
 * descriptor per file opened at the file's first read and shared by the
 * loader's threads (no open() per sample on a network filesystem), and
 * checks both checksums: a record corrupted after its index was made is
 * reported by file, record and byte when it is read.
 *
 * Labels: build_imagenet_data.py
 * writes image/class/label in 1..1000 (0 unused) and AIPerf's input
 * pipeline (examples/trials/network_morphism/imagenet/dataset.py,
 * _parse_example_proto) trains on label - 1; so does this reader. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <unistd.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "trialimg/data/dataset.h"
#include "trialimg/data/tfrecord.h" /* struct tfrecord_index, tfrecord_read_at */
#include "trialimg/data/tfrindex.h" /* tfrindex_load */
#include "trialimg/data/loader.h" /* loader_cores */
#include "fileio.h" /* fileio_list_dir */
#include "strvec.h"
#include "util.h"

enum { MAX_LABEL = 1 << 20 };

static int all_digits(const char *s, size_t n)
{
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

/* A shard name "<prefix>-NNNNN-of-NNNNN", or a name ending in .tfrecord or
 * .tfrecords. */
static int tfrecord_name(const char *name)
{
	const char *dot = strrchr(name, '.');
	if (dot && (!strcmp(dot, ".tfrecord") || !strcmp(dot, ".tfrecords")))
		return 1;
	const char *of = strstr(name, "-of-");
	if (!of || !all_digits(of + 4, strlen(of + 4)))
		return 0;
	const char *dash = of;
	while (dash > name && dash[-1] != '-')
		dash--;
	return dash > name + 1 && all_digits(dash, (size_t)(of - dash));
}

static int keep_tfrecord(const char *path, const char *name, void *arg)
{
	struct stat st;
	(void)arg;
	return tfrecord_name(name) && !stat(path, &st) && S_ISREG(st.st_mode);
}

/* The sorted names of the TFRecord files in dir; with split ("train",
 * "validation") only those named "<split>-..." when there are any. */
static int list(const char *dir, const char *split, char ***out, int *count)
{
	struct strvec sv = STRVEC_INIT;
	if (fileio_list_dir(dir, keep_tfrecord, NULL, &sv) < 0)
		return error_errno("cannot open directory '%s'", dir);
	char **v = sv.v;
	int n = (int)sv.n, n_split = 0;
	size_t sl = split ? strlen(split) : 0;
	for (int i = 0; split && i < n; i++)
		n_split += !strncmp(v[i], split, sl) && v[i][sl] == '-';
	if (n_split) {
		int k = 0;
		for (int i = 0; i < n; i++)
			if (!strncmp(v[i], split, sl) && v[i][sl] == '-')
				v[k++] = v[i];
			else
				free(v[i]);
		v[n = k] = NULL;
	}
	*out = v;
	*count = n;
	return 0;
}

int dataset_is_tfrecord(const char *dir)
{
	char **v;
	int n;
	if (list(dir, NULL, &v, &n))
		return 0;
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
	return n > 0;
}

/* files[f]'s shared descriptor, opened by the first thread that reads
 * from it (a thread that loses the race closes its own); -1 when the
 * process may not keep it open. */
static int file_fd(struct tfrecord_index *x, uint32_t f)
{
	int fd = atomic_load(&x->fd[f]);
	if (fd != -1)
		return fd < 0 ? -1 : fd;
	int mine = open(x->files[f], O_RDONLY | O_CLOEXEC), none = -1;
	if (mine < 0) {
		if (errno == EMFILE || errno == ENFILE)
			atomic_compare_exchange_strong(&x->fd[f], &none, -2);
		return -1;
	}
	if (atomic_compare_exchange_strong(&x->fd[f], &none, mine))
		return mine;
	close(mine);
	return none < 0 ? -1 : none;
}

static int tfr_get(const struct dataset *ds, int i, float *out, int train, uint64_t rng)
{
	const struct tfrecord_sample *s = &ds->tfr->s[i];
	const char *path = ds->tfr->files[s->file];
	uint8_t *buf = xmalloc(s->len ? s->len : 1);
	int fd = file_fd(ds->tfr, s->file);
	int rc = fd >= 0 ? tfrecord_read_fd(fd, path, s->record, s->offset, s->len, buf)
			 : tfrecord_read_at(path, s->record, s->offset, s->len, buf);
	if (!rc) {
		char *name = xstrfmt("'%s' record %u", path, s->record);
		rc = dataset_jpeg_get_mem(ds, name, buf + s->jpeg_at, s->jpeg_len, out, train, rng);
		free(name);
	}
	free(buf);
	return rc;
}

/* Adds the records of file `file`, from its index ix, to ds. */
static int add_file(struct dataset *ds, int file, const struct tfrindex *ix, int *cap)
{
	struct tfrecord_index *x = ds->tfr;
	const char *path = x->files[file];
	if (ix->n > (size_t)(INT32_MAX - ds->n))
		return error("'%s': too many records in the set (at most %d)", path, INT32_MAX);
	for (size_t k = 0; k < ix->n; k++) {
		const struct tfrindex_rec *r = &ix->r[k];
		if (r->label < 1 || r->label > MAX_LABEL)
			return error("'%s': record %zu at byte %llu: image/class/label %lld is out of "
				     "range 1..%d (AIPerf's ImageNet records number classes from 1; aah "
				     "trains on label - 1, as AIPerf does)", path, k,
				     (unsigned long long)r->offset, (long long)r->label, MAX_LABEL);
		if (ds->n == *cap) {
			*cap = *cap ? 2 * *cap : 1024;
			x->s = xrealloc(x->s, sizeof(*x->s) * *cap);
			ds->labels = xrealloc(ds->labels, sizeof(int) * *cap);
		}
		x->s[ds->n] = (struct tfrecord_sample){
			.offset = r->offset + 12, .file = (uint32_t)file, .record = (uint32_t)k,
			.len = (uint32_t)(r->length - 16), .jpeg_at = r->jpeg_at,
			.jpeg_len = r->jpeg_len,
		};
		ds->labels[ds->n++] = (int)(r->label - 1);
		if (r->label > ds->classes)
			ds->classes = (int)r->label;
	}
	return 0;
}

/* The files' indexes, loaded (read, or made: tfrindex_load) by threads
 * that each take the next file; the first failing file's message is kept,
 * and no file after it is started. */
struct loading {
	char **files;
	struct tfrindex *ix;    /* (n) */
	int n, next, failed;    /* failed: the lowest failing file, n when none */
	char why[UTIL_ERROR_MAX];
	pthread_mutex_t mu;
};

static void *load_files(void *arg)
{
	struct loading *g = arg;
	util_hold_errors(1); /* this thread's errors go to g->why, printed once */
	pthread_mutex_lock(&g->mu);
	while (g->next < g->n && g->next < g->failed) {
		int i = g->next++;
		pthread_mutex_unlock(&g->mu);
		int rc = tfrindex_load(&g->ix[i], g->files[i]);
		pthread_mutex_lock(&g->mu);
		if (rc && i < g->failed) {
			g->failed = i;
			xstrlcpy(g->why, util_last_error(), sizeof(g->why));
		}
	}
	pthread_mutex_unlock(&g->mu);
	return NULL;
}

static int load_indexes(struct dataset *ds, int *cap)
{
	struct loading g = {.files = ds->tfr->files, .n = ds->tfr->n_files};
	g.ix = xcalloc((size_t)g.n, sizeof(*g.ix));
	g.failed = g.n;
	pthread_mutex_init(&g.mu, NULL);
	int n_threads = loader_cores() < g.n ? loader_cores() : g.n, started = 0;
	pthread_t *t = xcalloc((size_t)n_threads, sizeof(*t));
	for (; started < n_threads - 1; started++)
		if (pthread_create(&t[started], NULL, load_files, &g))
			break;
	int held = util_hold_errors(1);
	load_files(&g); /* this thread too, holding its errors like the others */
	util_hold_errors(held);
	for (int i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	int made[3] = {0, 0, 0}, rc = g.failed < g.n ? error("%s", g.why) : 0;
	for (int i = 0; i < g.n && !rc; i++) {
		made[g.ix[i].origin]++;
		rc = add_file(ds, i, &g.ix[i], cap);
	}
	if (!rc && (made[TFRINDEX_MADE] || made[TFRINDEX_UNSAVED]))
		printf("aah-trial: TFRecord set '%s': %d file(s) indexed now (%d saved), %d read "
		       "from their index\n", ds->dir, made[TFRINDEX_MADE] + made[TFRINDEX_UNSAVED],
		       made[TFRINDEX_MADE], made[TFRINDEX_READ]);
	for (int i = 0; i < g.n; i++)
		tfrindex_release(&g.ix[i]);
	free(g.ix);
	free(t);
	pthread_mutex_destroy(&g.mu);
	return rc;
}

int dataset_open_tfrecord(struct dataset *ds, const char *dir, int train,
			  const struct ops_shape *want)
{
	char **names;
	int n, cap = 0;
	if (!want)
		return error("TFRecord set '%s': the network input size is needed", dir);
	if (list(dir, train ? "train" : "validation", &names, &n))
		return -1;
	ds->dir = xstrdup(dir);
	ds->kind = "tfrecord";
	ds->tfr = xcalloc(1, sizeof(*ds->tfr));
	ds->tfr->files = xcalloc(n ? (size_t)n : 1, sizeof(char *));
	ds->tfr->n_files = n;
	ds->tfr->fd = xmalloc(sizeof(*ds->tfr->fd) * (n ? (size_t)n : 1));
	for (int i = 0; i < n; i++)
		atomic_init(&ds->tfr->fd[i], -1);
	for (int i = 0; i < n; i++) {
		ds->tfr->files[i] = xstrfmt("%s/%s", dir, names[i]);
		free(names[i]);
	}
	free(names);
	if (n == 0)
		return error("'%s' has no TFRecord files (train-NNNNN-of-NNNNN, "
			     "validation-NNNNN-of-NNNNN or *.tfrecord)", dir);
	if (load_indexes(ds, &cap))
		return -1;
	if (ds->n == 0)
		return error("'%s': its TFRecord files hold no records", dir);
	dataset_jpeg_setup(ds, want);
	ds->get = tfr_get;
	return 0;
}

void dataset_release_tfrecord(struct dataset *ds)
{
	if (!ds->tfr)
		return;
	for (int i = 0; i < ds->tfr->n_files; i++) {
		free(ds->tfr->files[i]);
		if (ds->tfr->fd && atomic_load(&ds->tfr->fd[i]) >= 0)
			close(atomic_load(&ds->tfr->fd[i]));
	}
	free(ds->tfr->fd);
	free(ds->tfr->files);
	free(ds->tfr->s);
	free(ds->tfr);
	ds->tfr = NULL;
}
