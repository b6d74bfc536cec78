/* idx.c: MNIST / Fashion-MNIST IDX files, gzipped or raw (zlib reads both). */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "fileio.h" /* fileio_exists */
#include "trialimg/data/dataset.h"
#include "util.h"

/* Reads a whole IDX file (name or name.gz in dir). The caller frees *out. */
static int read_idx(const char *dir, const char *name, int want_dims, int dims[3],
		    uint8_t **out, size_t *count, char **used)
{
	char *path = xstrfmt("%s/%s.gz", dir, name);
	if (!fileio_exists(path)) {
		free(path);
		path = xstrfmt("%s/%s", dir, name);
	}
	*used = path;
	gzFile f = gzopen(path, "rb");
	if (!f)
		return error_errno("cannot open '%s'", path);
	unsigned char hdr[4], d[4];
	int rc = -1;
	if (gzread(f, hdr, 4) != 4 || hdr[0] || hdr[1] || hdr[2] != 0x08 || hdr[3] != want_dims) {
		error("'%s': not an IDX file of unsigned bytes with %d dimensions", path, want_dims);
		goto out;
	}
	*count = 1;
	for (int i = 0; i < want_dims; i++) {
		if (gzread(f, d, 4) != 4) {
			error("'%s': truncated header", path);
			goto out;
		}
		dims[i] = (int)((uint32_t)d[0] << 24 | (uint32_t)d[1] << 16 | (uint32_t)d[2] << 8 | d[3]);
		if (dims[i] <= 0 || dims[i] > (1 << 26)) {
			error("'%s': bad dimension %d", path, dims[i]);
			goto out;
		}
		*count *= (size_t)dims[i];
	}
	*out = xmalloc(*count);
	size_t got = 0;
	while (got < *count) {
		unsigned chunk = *count - got > (1u << 30) ? (1u << 30) : (unsigned)(*count - got);
		int r = gzread(f, *out + got, chunk);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	if (got != *count) {
		error("'%s': truncated or corrupt data (%zu of %zu bytes)", path, got, *count);
		free(*out);
		*out = NULL;
		goto out;
	}
	rc = 0;
out:
	gzclose(f);
	return rc;
}

int dataset_open_idx(struct dataset *ds, const char *dir, int train)
{
	const char *pre = train ? "train" : "t10k";
	char *iname = xstrfmt("%s-images-idx3-ubyte", pre), *lname = xstrfmt("%s-labels-idx1-ubyte", pre);
	char *ipath = NULL, *lpath = NULL;
	uint8_t *lab = NULL;
	int idims[3], ldims[3], rc = -1;
	size_t ni, nl;
	if (read_idx(dir, iname, 3, idims, &ds->pixels, &ni, &ipath) ||
	    read_idx(dir, lname, 1, ldims, &lab, &nl, &lpath))
		goto out;
	if (idims[0] != ldims[0]) {
		error("'%s' has %d images but '%s' has %d labels", ipath, idims[0], lpath, ldims[0]);
		goto out;
	}
	ds->dir = xstrdup(dir);
	ds->kind = "idx";
	ds->n = idims[0];
	ds->shape = (struct ops_shape){idims[1], idims[2], 1};
	ds->labels = xmalloc(sizeof(int) * (size_t)ds->n);
	ds->classes = 0;
	for (int i = 0; i < ds->n; i++) {
		ds->labels[i] = lab[i];
		if (lab[i] + 1 > ds->classes)
			ds->classes = lab[i] + 1;
	}
	ds->mean[0] = 0.2860f; /* Fashion-MNIST statistics; fine for MNIST too */
	ds->std[0] = 0.3530f;
	ds->get = dataset_get_memory;
	rc = 0;
out:
	free(lab);
	free(iname);
	free(lname);
	free(ipath);
	free(lpath);
	return rc;
}
