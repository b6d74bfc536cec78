/* bench_data: the data path alone, without training.
 * usage: bench_data make DIR N H W
 *          writes DIR/classK/NNNN.jpg: N RGB JPEGs of HxW (10 classes,
 *          textured so that they compress like photographs, quality 90)
 *        bench_data read DIR SIZE WORKERS BATCH [full]
 *          opens DIR as aah-trial does (format detected), reads one training
 *          epoch (random-resized crops to SIZExSIZEx3, flips) through the
 *          threaded loader with WORKERS threads and prints images/s, the
 *          format, the seconds dataset_open took and the CPU milliseconds
 *          (user + system, all threads) per image of the epoch: on a
 *          shared machine the CPU cost is the steadier figure. With
 *          "full", JPEGs are decoded whole at full size (the decode before
 *          DCT scaling and cropping, struct dataset's jpeg_full).
 *        bench_data first DIR SIZE WORKERS BATCH
 *          prints the seconds from dataset_open to the first training
 *          batch in hand, the seconds dataset_open took, and the samples. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <jpeglib.h>

#include "fileio.h" /* fileio_mkdir_p */
#include "trialimg/data/dataset.h"
#include "trialimg/data/loader.h"
#include "util.h"

static void make(const char *dir, int n, int h, int w)
{
	uint8_t *px = xmalloc((size_t)h * w * 3);
	uint64_t s = 12345;
	for (int i = 0; i < n; i++) {
		char *d = xstrfmt("%s/class%d", dir, i % 10);
		char *p = xstrfmt("%s/%04d.jpg", d, i);
		if (fileio_mkdir_p(d, 0755))
			die("cannot create '%s'", d);
		for (int y = 0; y < h; y++)
			for (int x = 0; x < w; x++)
				for (int c = 0; c < 3; c++) {
					s = s * 6364136223846793005ull + 1442695040888963407ull;
					int v = (x * (c + 1) + y * (i % 7 + 1)) / 3 + (int)(s >> 60);
					px[((size_t)y * w + x) * 3 + c] = (uint8_t)(v & 0xff);
				}
		struct jpeg_compress_struct cinfo;
		struct jpeg_error_mgr err;
		FILE *f = fopen(p, "wb");
		if (!f)
			die("cannot write '%s'", p);
		cinfo.err = jpeg_std_error(&err);
		jpeg_create_compress(&cinfo);
		jpeg_stdio_dest(&cinfo, f);
		cinfo.image_width = (JDIMENSION)w, cinfo.image_height = (JDIMENSION)h;
		cinfo.input_components = 3, cinfo.in_color_space = JCS_RGB;
		jpeg_set_defaults(&cinfo);
		jpeg_set_quality(&cinfo, 90, TRUE);
		jpeg_start_compress(&cinfo, TRUE);
		while (cinfo.next_scanline < cinfo.image_height) {
			JSAMPROW row = px + (size_t)cinfo.next_scanline * w * 3;
			jpeg_write_scanlines(&cinfo, &row, 1);
		}
		jpeg_finish_compress(&cinfo);
		jpeg_destroy_compress(&cinfo);
		fclose(f);
		free(p);
		free(d);
	}
	free(px);
}

static double cpu_seconds(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

static void read_epoch(const char *dir, int size, int workers, int batch, int full)
{
	struct ops_shape want = {size, size, 3};
	struct dataset ds;
	struct loader l;
	double t0 = util_monotonic();
	if (dataset_open(&ds, "auto", dir, 1, &want))
		die("cannot open '%s'", dir);
	double t_open = util_monotonic() - t0;
	ds.jpeg_full = full;
	if (loader_init(&l, &ds, batch, 1, workers, 1, 0, 1))
		die("cannot start the loader");
	t0 = util_monotonic();
	double c0 = cpu_seconds();
	loader_start_epoch(&l, 0);
	const struct loader_batch *b;
	long seen = 0;
	while ((b = loader_next(&l))) {
		if (b->error)
			die("%s", b->why);
		seen += b->n;
	}
	double dt = util_monotonic() - t0, cpu = cpu_seconds() - c0;
	printf("%.1f %s %.3f %.2f\n", (double)seen / dt, ds.kind, t_open, 1e3 * cpu / (double)seen);
	loader_release(&l);
	dataset_release(&ds);
}

static void first_batch(const char *dir, int size, int workers, int batch)
{
	struct ops_shape want = {size, size, 3};
	struct dataset ds;
	struct loader l;
	double t0 = util_monotonic();
	if (dataset_open(&ds, "auto", dir, 1, &want))
		die("cannot open '%s'", dir);
	double t_open = util_monotonic() - t0;
	if (loader_init(&l, &ds, batch, 1, workers, 1, 0, 1))
		die("cannot start the loader");
	loader_start_epoch(&l, 0);
	const struct loader_batch *b = loader_next(&l);
	if (!b || b->error)
		die("no first batch: %s", b ? b->why : "empty epoch");
	printf("%.3f %.3f %d\n", util_monotonic() - t0, t_open, ds.n);
	loader_release(&l);
	dataset_release(&ds);
}

int main(int argc, char **argv)
{
	if (argc == 6 && !strcmp(argv[1], "make"))
		make(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
	else if ((argc == 6 || (argc == 7 && !strcmp(argv[6], "full"))) && !strcmp(argv[1], "read"))
		read_epoch(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), argc == 7);
	else if (argc == 6 && !strcmp(argv[1], "first"))
		first_batch(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
	else
		die("usage: bench_data make DIR N H W | bench_data read DIR SIZE WORKERS BATCH [full] | "
		    "bench_data first DIR SIZE WORKERS BATCH");
	return 0;
}
