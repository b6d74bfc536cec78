/* tfrecorddir.c: a directory of TFRecord files of tf.Example records as
 * AIPerf's scripts/build_data/build_imagenet_data.py writes ImageNet
 * (train-00000-of-01024 ..., validation-00000-of-00128 ...), read as an
 * image set whose samples go through the JPEG folders' decode and
 * augmentation (jpegdir.c).
 *
 * Opening reads every record once: both checksums, the Example's label and
 * where its JPEG lies; a sample read later reads its record again by
 * offset and checks its checksums again. Labels: build_imagenet_data.py
 * writes image/class/label in 1..1000 (0 unused) and AIPerf's input
 * pipeline (examples/trials/network_morphism/imagenet/dataset.py,
 * _parse_example_proto) trains on label - 1; so does this reader. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "trialimg/data/dataset.h"
#include "trialimg/data/tfrecord.h" /* tfrecord_open, tfrecord_next, tfrecord_example_parse */
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

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted names of the TFRecord files in dir; with split ("train",
 * "validation") only those named "<split>-..." when there are any. */
static int list(const char *dir, const char *split, char ***out, int *count)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0, cap = 0, n_split = 0;
	char **v = NULL;
	size_t sl = split ? strlen(split) : 0;
	if (!d)
		return error_errno("cannot open directory '%s'", dir);
	while ((e = readdir(d))) {
		struct stat st;
		if (e->d_name[0] == '.' || !tfrecord_name(e->d_name))
			continue;
		char *p = xstrfmt("%s/%s", dir, e->d_name);
		int ok = !stat(p, &st) && S_ISREG(st.st_mode);
		free(p);
		if (!ok)
			continue;
		if (n == cap)
			v = xrealloc(v, sizeof(*v) * (cap = cap ? 2 * cap : 64));
		v[n++] = xstrdup(e->d_name);
		n_split += split && !strncmp(e->d_name, split, sl) && e->d_name[sl] == '-';
	}
	closedir(d);
	if (n_split) {
		int k = 0;
		for (int i = 0; i < n; i++)
			if (!strncmp(v[i], split, sl) && v[i][sl] == '-')
				v[k++] = v[i];
			else
				free(v[i]);
		n = k;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_str);
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

static int tfr_get(const struct dataset *ds, int i, float *out, int train, uint64_t rng)
{
	const struct tfrecord_sample *s = &ds->tfr->s[i];
	const char *path = ds->tfr->files[s->file];
	uint8_t *buf = xmalloc(s->len ? s->len : 1);
	int rc = tfrecord_read_at(path, s->record, s->offset, s->len, buf);
	if (!rc) {
		char *name = xstrfmt("'%s' record %u", path, s->record);
		rc = dataset_jpeg_get_mem(ds, name, buf + s->jpeg_at, s->jpeg_len, out, train, rng);
		free(name);
	}
	free(buf);
	return rc;
}

/* Indexes every record of one file into ds. */
static int index_file(struct dataset *ds, int file, int *cap)
{
	struct tfrecord_index *x = ds->tfr;
	struct tfrecord_reader r;
	const uint8_t *data;
	size_t len;
	uint64_t at;
	int rc;
	if (tfrecord_open(&r, x->files[file]))
		return -1;
	while ((rc = tfrecord_next(&r, &data, &len, &at)) == 1) {
		struct tfrecord_example ex;
		long rec = r.index - 1;
		const char *why = tfrecord_example_parse(data, len, &ex);
		if (!why && (ex.label < 1 || ex.label > MAX_LABEL)) {
			rc = error("'%s': record %ld at byte %llu: image/class/label %lld is out of range "
				   "1..%d (AIPerf's ImageNet records number classes from 1; aah "
				   "trains on label - 1, as AIPerf does)", x->files[file], rec,
				   (unsigned long long)(at - 12), (long long)ex.label, MAX_LABEL);
			break;
		}
		if (!why && (len > UINT32_MAX || rec > (long)UINT32_MAX))
			why = "the record is too large";
		if (why) {
			rc = error("'%s': record %ld at byte %llu: %s", x->files[file], rec,
				   (unsigned long long)(at - 12), why);
			break;
		}
		if (ds->n == *cap) {
			*cap = *cap ? 2 * *cap : 1024;
			x->s = xrealloc(x->s, sizeof(*x->s) * *cap);
			ds->labels = xrealloc(ds->labels, sizeof(int) * *cap);
		}
		x->s[ds->n] = (struct tfrecord_sample){
			.offset = at, .file = (uint32_t)file, .record = (uint32_t)rec,
			.len = (uint32_t)len, .jpeg_at = (uint32_t)(ex.jpeg - data),
			.jpeg_len = (uint32_t)ex.jpeg_len,
		};
		ds->labels[ds->n++] = (int)(ex.label - 1);
		if (ex.label > ds->classes)
			ds->classes = (int)ex.label;
	}
	tfrecord_close(&r);
	return rc < 0 ? -1 : 0;
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
	for (int i = 0; i < n; i++) {
		ds->tfr->files[i] = xstrfmt("%s/%s", dir, names[i]);
		free(names[i]);
	}
	free(names);
	if (n == 0)
		return error("'%s' has no TFRecord files (train-NNNNN-of-NNNNN, "
			     "validation-NNNNN-of-NNNNN or *.tfrecord)", dir);
	for (int i = 0; i < n; i++)
		if (index_file(ds, i, &cap))
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
	for (int i = 0; i < ds->tfr->n_files; i++)
		free(ds->tfr->files[i]);
	free(ds->tfr->files);
	free(ds->tfr->s);
	free(ds->tfr);
	ds->tfr = NULL;
}
