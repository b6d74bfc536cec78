/* cifar.c: CIFAR-10 binary batches (data_batch_1..5.bin, test_batch.bin):
 * records of 1 label byte + 3072 bytes of planar 32x32 R, G, B. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h" /* fileio_read */
#include "trialimg/data/dataset.h"
#include "util.h"

enum { CIFAR_REC = 1 + 3072, CIFAR_PER_FILE = 10000 };

static int load_batch(struct dataset *ds, const char *path)
{
	char *buf;
	size_t len;
	if (fileio_read(path, 64u << 20, &buf, &len))
		return -1;
	if (len == 0 || len % CIFAR_REC) {
		free(buf);
		return error("'%s': size %zu is not a whole number of CIFAR-10 records", path, len);
	}
	size_t recs = len / CIFAR_REC, base = (size_t)ds->n;
	ds->pixels = xrealloc(ds->pixels, (base + recs) * 3072);
	ds->labels = xrealloc(ds->labels, (base + recs) * sizeof(int));
	for (size_t r = 0; r < recs; r++) {
		const unsigned char *rec = (const unsigned char *)buf + r * CIFAR_REC;
		if (rec[0] > 9) {
			int bad = rec[0];
			free(buf);
			return error("'%s': record %zu has label %d (corrupt file?)", path, r, bad);
		}
		ds->labels[base + r] = rec[0];
		uint8_t *px = ds->pixels + (base + r) * 3072;
		for (int p = 0; p < 1024; p++)
			for (int c = 0; c < 3; c++)
				px[p * 3 + c] = rec[1 + c * 1024 + p];
	}
	ds->n += (int)recs;
	free(buf);
	return 0;
}

int dataset_open_cifar10(struct dataset *ds, const char *dir, int train)
{
	static const float mean[3] = {0.4914f, 0.4822f, 0.4465f}, std[3] = {0.2470f, 0.2435f, 0.2616f};
	ds->dir = xstrdup(dir);
	ds->kind = "cifar10";
	ds->shape = (struct ops_shape){32, 32, 3};
	ds->classes = 10;
	memcpy(ds->mean, mean, sizeof(mean));
	memcpy(ds->std, std, sizeof(std));
	ds->get = dataset_get_memory;
	ds->flip = 1;
	for (int b = 1; b <= (train ? 5 : 1); b++) {
		char *p = train ? xstrfmt("%s/data_batch_%d.bin", dir, b) : xstrfmt("%s/test_batch.bin", dir);
		int rc = load_batch(ds, p);
		free(p);
		if (rc)
			return -1;
	}
	return 0;
}
