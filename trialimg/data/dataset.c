/* dataset.c: format detection and the in-memory sample path. */
#include <stdlib.h>
#include <string.h>

#include "fileio.h" /* fileio_exists */
#include "trialimg/data/dataset.h"
#include "util.h"

uint64_t dataset_rng(uint64_t *state)
{
	uint64_t x = (*state += 0x9e3779b97f4a7c15ull);
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

int dataset_get_memory(const struct dataset *ds, int i, float *out, int train, uint64_t rng)
{
	const struct ops_shape *s = &ds->shape;
	const uint8_t *p = ds->pixels + (size_t)i * ops_shape_size(s);
	int flip = train && ds->flip && (dataset_rng(&rng) & 1);
	int dx = 0, dy = 0;
	if (train && ds->shift > 0) {
		uint64_t r = dataset_rng(&rng);
		int span = 2 * ds->shift + 1;
		dx = (int)(r % (uint64_t)span) - ds->shift;
		dy = (int)((r >> 32) % (uint64_t)span) - ds->shift;
	}
	for (int y = 0; y < s->h; y++) {
		int sy = y + dy;
		for (int x = 0; x < s->w; x++) {
			int sx = (flip ? s->w - 1 - x : x) + dx;
			float *o = out + ((size_t)y * s->w + x) * s->c;
			int inside = sy >= 0 && sy < s->h && sx >= 0 && sx < s->w;
			for (int c = 0; c < s->c; c++) {
				float v = inside ? p[((size_t)sy * s->w + sx) * s->c + c] / 255.0f : 0.0f;
				o[c] = (v - ds->mean[c]) / ds->std[c];
			}
		}
	}
	return 0;
}

int dataset_set_augment(struct dataset *ds, const char *spec)
{
	if (!spec || !strcmp(spec, "auto"))
		return 0;
	ds->flip = ds->shift = 0;
	if (!strcmp(spec, "none"))
		return 0;
	char *copy = xstrdup(spec), *save = NULL;
	int rc = 0;
	for (char *item = strtok_r(copy, ",", &save); item && !rc;
	     item = strtok_r(NULL, ",", &save)) {
		long n = -1; /* the shift asked for, -1 when not a well-formed one */
		if (!strcmp(item, "shift")) {
			n = 2;
		} else if (!strncmp(item, "shift=", 6)) {
			char *end;
			n = strtol(item + 6, &end, 10);
			if (end == item + 6 || *end)
				n = -1;
		}
		if (!strcmp(item, "flip"))
			ds->flip = 1;
		else if (ds->get != dataset_get_memory && !strncmp(item, "shift", 5))
			rc = error("--augment: shift applies to IDX and CIFAR-10 sets; '%s' "
				   "already crops at random", ds->dir);
		else if (n >= 0 && n < ds->shape.h && n < ds->shape.w)
			ds->shift = (int)n;
		else
			rc = error("--augment: '%s' is not one of none, flip, shift, shift=N "
				   "(N below the image size)", item);
	}
	free(copy);
	return rc;
}

static int has(const char *dir, const char *name)
{
	char *p = xstrfmt("%s/%s", dir, name);
	int r = fileio_exists(p);
	free(p);
	return r;
}

int dataset_open(struct dataset *ds, const char *kind, const char *dir, int train,
		 const struct ops_shape *want)
{
	memset(ds, 0, sizeof(*ds));
	if (!fileio_exists(dir))
		return error("data directory '%s' does not exist (set --train_data_dir / "
			     "--val_data_dir or --dataset)", dir);
	if (!strcmp(kind, "auto")) {
		if (has(dir, "train-images-idx3-ubyte.gz") || has(dir, "train-images-idx3-ubyte") ||
		    has(dir, "t10k-images-idx3-ubyte.gz") || has(dir, "t10k-images-idx3-ubyte"))
			kind = "idx";
		else if (has(dir, "data_batch_1.bin") || has(dir, "test_batch.bin"))
			kind = "cifar10";
		else if (has(dir, "cifar-10-batches-bin/test_batch.bin")) {
			char *sub = xstrfmt("%s/cifar-10-batches-bin", dir);
			int rc = dataset_open(ds, "cifar10", sub, train, want);
			free(sub);
			return rc;
		} else if (dataset_is_tfrecord(dir))
			kind = "tfrecord";
		else
			kind = "imagefolder";
	}
	int rc;
	if (!strcmp(kind, "idx") || !strcmp(kind, "fashion-mnist") || !strcmp(kind, "mnist"))
		rc = dataset_open_idx(ds, dir, train);
	else if (!strcmp(kind, "cifar10"))
		rc = dataset_open_cifar10(ds, dir, train);
	else if (!strcmp(kind, "imagefolder"))
		rc = dataset_open_imagefolder(ds, dir, want);
	else if (!strcmp(kind, "tfrecord"))
		rc = dataset_open_tfrecord(ds, dir, train, want);
	else
		return error("unknown dataset kind '%s' (fashion-mnist, mnist, cifar10, imagefolder, "
			     "tfrecord)", kind);
	if (rc) {
		dataset_release(ds);
		return -1;
	}
	if (want && (ds->shape.h != want->h || ds->shape.w != want->w || ds->shape.c != want->c)) {
		error("data in '%s' is %dx%dx%d but the network input is %dx%dx%d", dir, ds->shape.h,
		      ds->shape.w, ds->shape.c, want->h, want->w, want->c);
		dataset_release(ds);
		return -1;
	}
	return 0;
}

void dataset_release(struct dataset *ds)
{
	for (int i = 0; ds->paths && i < ds->n; i++)
		free(ds->paths[i]);
	free(ds->paths);
	dataset_release_tfrecord(ds);
	free(ds->pixels);
	free(ds->labels);
	free(ds->dir);
	memset(ds, 0, sizeof(*ds));
}
