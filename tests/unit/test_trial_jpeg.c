/* Unit tests for trialimg/data/jpegdir.c's decode at the size needed: on
 * RGB JPEGs of ImageNet's sizes with a natural image's spectrum (amplitude
 * ~ 1/frequency: value noise summed over octaves, written here), the
 * augmented samples of the scaled, cropped decode are those of a full-size
 * decode (ds->jpeg_full) within the tolerance docs/trainer.md states. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include "fileio.h"
#include "trialimg/data/dataset.h"
#include "util.h"

static char tmp[64];

static void setup(void)
{
	strcpy(tmp, "/tmp/aah-jpeg-XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
	util_set_quiet(1);
}

static void teardown(void)
{
	fileio_remove_tree(tmp);
}

TestSuite(jpeg, .init = setup, .fini = teardown);

static uint64_t next(uint64_t *s)
{
	return dataset_rng(s);
}

/* h x w x 3 pixels: octaves of bilinear value noise, cell 2..128 pixels,
 * the same amplitude in each (a 1/f spectrum in two dimensions), channels partly
 * shared as a photograph's are. */
static uint8_t *natural(int h, int w, uint64_t seed)
{
	float *acc = xcalloc((size_t)h * w * 3, sizeof(float));
	for (int cell = 2; cell <= 128; cell *= 2) {
		int gh = h / cell + 2, gw = w / cell + 2;
		float *g = xmalloc(sizeof(float) * (size_t)gh * gw * 4);
		for (int i = 0; i < gh * gw * 4; i++)
			g[i] = (float)(next(&seed) >> 40) / (float)(1 << 24) - 0.5f;
		for (int y = 0; y < h; y++)
			for (int x = 0; x < w; x++) {
				float fy = (float)y / cell, fx = (float)x / cell;
				int y0 = (int)fy, x0 = (int)fx;
				fy -= y0, fx -= x0;
				for (int k = 0; k < 4; k++) {
					const float *p = g + k;
#define G(yy, xx) p[((size_t)(yy) * gw + (xx)) * 4]
					float v = (1 - fy) * ((1 - fx) * G(y0, x0) + fx * G(y0, x0 + 1)) +
						  fy * ((1 - fx) * G(y0 + 1, x0) + fx * G(y0 + 1, x0 + 1));
#undef G
					float *o = acc + ((size_t)y * w + x) * 3;
					float a = 22.0f; /* the same in every octave: 1/f in 2-D */
					if (k == 3) /* shared by the channels: luminance */
						o[0] += a * v, o[1] += a * v, o[2] += a * v;
					else
						o[k] += 0.5f * a * v;
				}
			}
		free(g);
	}
	uint8_t *px = xmalloc((size_t)h * w * 3);
	for (size_t i = 0; i < (size_t)h * w * 3; i++) {
		float v = 128 + acc[i];
		px[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
	}
	free(acc);
	return px;
}

/* As a camera writes it: RGB, 4:2:0 chroma, quality 90; baseline or
 * progressive (a few per cent of ImageNet's JPEGs are). */
static void write_rgb_jpeg(const char *path, const uint8_t *px, int h, int w, int progressive)
{
	struct jpeg_compress_struct c;
	struct jpeg_error_mgr e;
	FILE *f = fopen(path, "wb");
	cr_assert_not_null(f);
	c.err = jpeg_std_error(&e);
	jpeg_create_compress(&c);
	jpeg_stdio_dest(&c, f);
	c.image_width = (JDIMENSION)w, c.image_height = (JDIMENSION)h, c.input_components = 3;
	c.in_color_space = JCS_RGB;
	jpeg_set_defaults(&c);
	jpeg_set_quality(&c, 90, TRUE);
	if (progressive)
		jpeg_simple_progression(&c);
	jpeg_start_compress(&c, TRUE);
	while (c.next_scanline < c.image_height) {
		JSAMPROW row = (JSAMPROW)(px + (size_t)c.next_scanline * w * 3);
		jpeg_write_scanlines(&c, &row, 1);
	}
	jpeg_finish_compress(&c);
	jpeg_destroy_compress(&c);
	fclose(f);
}

/* The first FULL_SCALE are decoded at full scale for a 224 output (their
 * crops are narrower than 448, or the image smaller than the output); the
 * others at 1/2 or 1/4. */
enum { FULL_SCALE = 5 };
static const struct {
	int h, w, progressive;
} sizes[] = {{350, 400, 0}, {375, 500, 0}, {500, 333, 0}, {375, 500, 1}, {90, 120, 0},
	     {900, 1200, 0}, {1600, 2100, 0}, {1200, 900, 1}};

/* tmp/img/c<k>/img.jpg, one image of each size (sorted: c0 is sizes[0]). */
static char *write_set(void)
{
	char *root = xstrfmt("%s/img", tmp);
	for (size_t k = 0; k < ARRAY_SIZE(sizes); k++) {
		char *d = xstrfmt("%s/c%zu", root, k), *p = xstrfmt("%s/img.jpg", d); /* c0..c7 sort */
		cr_assert_eq(fileio_mkdir_p(d, 0755), 0);
		uint8_t *px = natural(sizes[k].h, sizes[k].w, 11 + k);
		write_rgb_jpeg(p, px, sizes[k].h, sizes[k].w, sizes[k].progressive);
		free(px);
		free(p);
		free(d);
	}
	return root;
}

/* Mean and largest |a - b| over n floats normalised by ds, in 0..255 pixel units. */
static void diff(const struct dataset *ds, const float *a, const float *b, size_t n,
		 double *mean, double *max)
{
	double s = 0, m = 0;
	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)a[i] - b[i]) * ds->std[i % 3] * 255;
		s += d;
		m = d > m ? d : m;
	}
	*mean = s / n;
	*max = m;
}

Test(jpeg, scaled_decode_matches_full_size_within_the_tolerance)
{
	char *root = write_set();
	struct ops_shape want = {224, 224, 3};
	struct dataset fast, full;
	cr_assert_eq(dataset_open(&fast, "imagefolder", root, 1, &want), 0, "%s", util_last_error());
	cr_assert_eq(dataset_open(&full, "imagefolder", root, 1, &want), 0, "%s", util_last_error());
	full.jpeg_full = 1;
	size_t n = 224 * 224 * 3;
	float *a = xmalloc(sizeof(float) * n), *b = xmalloc(sizeof(float) * n);
	/* at full scale, cropping alone changes only the chroma upsampling at
	 * the edges of the iMCU columns kept; scaled, the DCT's downscale
	 * averages what full-size bilinear sampling picks one pixel of */
	double worst_mean = 0, sum_mean = 0;
	int draws = 0;
	for (int i = 0; i < fast.n; i++)
		for (int r = 0; r < 40; r++) {
			int train = r > 0;
			cr_assert_eq(fast.get(&fast, i, a, train, 1000 + r), 0, "%s", util_last_error());
			cr_assert_eq(full.get(&full, i, b, train, 1000 + r), 0, "%s", util_last_error());
			double mean, max;
			diff(&fast, a, b, n, &mean, &max);
			cr_log_info("%dx%d %s %d: mean %.2f max %.1f", sizes[i].h, sizes[i].w,
				    train ? "train" : "eval", r, mean, max);
			if (i < FULL_SCALE) {
				cr_assert_lt(mean, 0.05, "%dx%d draw %d: mean %g", sizes[i].h, sizes[i].w, r, mean);
				cr_assert_lt(max, 8.0, "%dx%d draw %d: max %g", sizes[i].h, sizes[i].w, r, max);
			}
			worst_mean = mean > worst_mean ? mean : worst_mean;
			sum_mean += mean;
			draws++;
		}
	printf("scaled vs full-size decode: mean |diff| %.2f (worst draw %.2f) of 255\n",
	       sum_mean / draws, worst_mean);
	cr_assert_lt(worst_mean, 5.0);
	cr_assert_lt(sum_mean / draws, 2.0);
	cr_assert_gt(worst_mean, 0.5, "no image was decoded scaled: the test tests nothing");
	free(a);
	free(b);
	dataset_release(&fast);
	dataset_release(&full);
	free(root);
}
