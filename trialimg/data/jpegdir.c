/* jpegdir.c: ImageNet-style folders (one subfolder per class) of JPEG files,
 * decoded with libjpeg-turbo. Training: random-resized crop (area 8%-100%,
 * aspect 3/4-4/3) and horizontal flip; validation: the central 87.5% square
 * (resize to size/0.875 + center crop), both resized bilinearly.
 *
 * The crop is drawn from the image's size alone, so it is known before a
 * pixel is decoded: the JPEG is decoded at the smallest DCT scale (1/8,
 * 1/4, 1/2, 1) at which the crop still covers the output, and only the
 * rows and the iMCU columns the resize reads. The result differs from a
 * full-size decode of the same crop (ds->jpeg_full) by what the DCT's
 * downscale averages where the full-size sampling picks one pixel: a
 * tolerance docs/trainer.md gives and tests/unit/test_trial_data.c checks. */
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jpeglib.h>

#include "trialimg/data/dataset.h"
#include "fileio.h" /* fileio_list_dir */
#include "strvec.h"
#include "util.h"

struct jerr {
	struct jpeg_error_mgr mgr;
	jmp_buf jump;
	char msg[JMSG_LENGTH_MAX];
};

static void jerr_exit(j_common_ptr cinfo)
{
	struct jerr *e = (struct jerr *)cinfo->err;
	e->mgr.format_message(cinfo, e->msg);
	longjmp(e->jump, 1);
}

static void jerr_quiet(j_common_ptr cinfo, int level)
{
	(void)cinfo, (void)level;
}

static double unit(uint64_t *rng)
{
	return (double)(dataset_rng(rng) >> 11) / 9007199254740992.0;
}

/* The crop of an image of h x w pixels, in its full-size pixels: top,
 * left, height, width; and whether the output is flipped. */
struct crop {
	double y, x, h, w;
	int flip;
};

static struct crop crop_box(const struct dataset *ds, int h, int w, int train, uint64_t rng)
{
	struct crop c = {0, 0, h, w, 0};
	if (train) {
		for (int t = 0; t < 10; t++) {
			double area = h * w * (0.08 + 0.92 * unit(&rng));
			double ratio = exp(log(3.0 / 4) + (log(4.0 / 3) - log(3.0 / 4)) * unit(&rng));
			double tw = sqrt(area * ratio), th = sqrt(area / ratio);
			if (tw <= w && th <= h) {
				c.w = tw, c.h = th;
				c.x = (w - c.w) * unit(&rng);
				c.y = (h - c.h) * unit(&rng);
				break;
			}
		}
		c.flip = unit(&rng) < 0.5 && ds->flip;
	} else {
		double side = (h < w ? h : w) * 0.875;
		c.h = c.w = side;
		c.y = (h - side) / 2;
		c.x = (w - side) / 2;
	}
	return c;
}

/* The DCT scale m/8 to decode at: the smallest of 1/8, 1/4, 1/2 (those
 * libjpeg-turbo's SIMD code has reduced IDCTs for) at which the crop still
 * has at least the output's pixels in both directions, else 1. */
static int dct_scale(const struct crop *c, const struct ops_shape *s)
{
	for (int m = 1; m < 8; m *= 2)
		if (c->h * m / 8 >= s->h && c->w * m / 8 >= s->w)
			return m;
	return 8;
}

/* A decoded part of an image: rows [y0, y0 + h) and columns [x0, x0 + w)
 * of the image decoded at scale m/8 (px: (h, w, channels)). */
struct part {
	uint8_t *px;
	int y0, x0, h, w, m;
};

/* The first and last pixel (at scale f) that a bilinear sampling of n
 * points over [at, at + len) full-size pixels reads, within [0, size). */
static void span(double at, double len, int n, double f, int size, int *lo, int *hi)
{
	double a = (at + 0.5 * len / n) * f - 0.5, b = (at + (n - 0.5) * len / n) * f - 0.5;
	*lo = (int)floor(a);
	*hi = (int)floor(b) + 1;
	*lo = *lo < 0 ? 0 : *lo >= size ? size - 1 : *lo;
	*hi = *hi < 0 ? 0 : *hi >= size ? size - 1 : *hi;
}

/* Decodes the part of a JPEG (from the open file f, or from mem, len
 * bytes, when f is NULL) that the crop drawn from rng needs: at the DCT
 * scale dct_scale() picks and only the rows and columns the sampling
 * reads (jpeg_skip_scanlines, jpeg_crop_scanline), or, with ds->jpeg_full,
 * all of it at full size. The caller frees p->px. Errors name `name`. */
static int decode(const struct dataset *ds, const char *name, FILE *f, const void *mem, size_t len,
		  int train, uint64_t rng, struct crop *c, struct part *p)
{
	const struct ops_shape *s = &ds->shape;
	struct jpeg_decompress_struct cinfo;
	struct jerr err;
	volatile int rc = -1;
	uint8_t *volatile buf = NULL;
	memset(p, 0, sizeof(*p));
	cinfo.err = jpeg_std_error(&err.mgr);
	err.mgr.error_exit = jerr_exit;
	err.mgr.emit_message = jerr_quiet;
	if (setjmp(err.jump)) {
		error("%s: corrupt JPEG: %s", name, err.msg);
		free(buf);
		buf = NULL;
		goto out;
	}
	jpeg_create_decompress(&cinfo);
	if (f)
		jpeg_stdio_src(&cinfo, f);
	else
		jpeg_mem_src(&cinfo, mem, (unsigned long)len);
	jpeg_read_header(&cinfo, TRUE);
	cinfo.out_color_space = s->c == 1 ? JCS_GRAYSCALE : JCS_RGB;
	*c = crop_box(ds, (int)cinfo.image_height, (int)cinfo.image_width, train, rng);
	p->m = ds->jpeg_full ? 8 : dct_scale(c, s);
	cinfo.scale_num = (unsigned)p->m;
	cinfo.scale_denom = 8;
	jpeg_start_decompress(&cinfo);
	int y1 = (int)cinfo.output_height - 1, x1 = (int)cinfo.output_width - 1;
	if (!ds->jpeg_full) {
		span(c->y, c->h, s->h, p->m / 8.0, (int)cinfo.output_height, &p->y0, &y1);
		span(c->x, c->w, s->w, p->m / 8.0, (int)cinfo.output_width, &p->x0, &x1);
		JDIMENSION xoff = (JDIMENSION)p->x0, width = (JDIMENSION)(x1 - p->x0 + 1);
		if (width < cinfo.output_width)
			jpeg_crop_scanline(&cinfo, &xoff, &width); /* widened to whole iMCUs */
		else
			xoff = 0;
		p->x0 = (int)xoff;
		if (p->y0 > 0)
			jpeg_skip_scanlines(&cinfo, (JDIMENSION)p->y0);
		p->y0 = (int)cinfo.output_scanline;
	}
	p->w = (int)cinfo.output_width;
	p->h = y1 - p->y0 + 1;
	size_t row = (size_t)p->w * s->c;
	buf = xmalloc(row * (size_t)p->h);
	for (int k = 0; k < p->h; k++) {
		JSAMPROW r = buf + row * k;
		jpeg_read_scanlines(&cinfo, &r, 1);
	}
	if (cinfo.output_scanline == cinfo.output_height)
		jpeg_finish_decompress(&cinfo);
	rc = 0;
out:
	jpeg_destroy_decompress(&cinfo);
	p->px = buf;
	return rc;
}

/* The two source pixels (clamped to [0, size)) and the weight of the
 * second for each of n outputs sampling [at, at + len) full-size pixels,
 * read at scale f from a part starting at pixel `from`. */
static void taps(double at, double len, int n, double f, int from, int size, int *a, int *b,
		 float *wb)
{
	for (int i = 0; i < n; i++) {
		double v = (at + (i + 0.5) * len / n) * f - 0.5 - from;
		int i0 = (int)floor(v);
		wb[i] = (float)(v - i0);
		a[i] = i0 < 0 ? 0 : i0 >= size ? size - 1 : i0;
		b[i] = i0 + 1 < 0 ? 0 : i0 + 1 >= size ? size - 1 : i0 + 1;
	}
}

/* The crop c of the decoded part p, resized bilinearly into out
 * (ds->shape, normalised), flipped when c says so. */
static void crop_resize(const struct dataset *ds, const struct part *p, const struct crop *c,
			float *out)
{
	const struct ops_shape *s = &ds->shape;
	const int C = s->c;
	int *ya = xmalloc(sizeof(int) * (size_t)(2 * s->h + 2 * s->w)), *yb = ya + s->h;
	int *xa = yb + s->h, *xb = xa + s->w;
	float *wy = xmalloc(sizeof(float) * (size_t)(s->h + s->w)), *wx = wy + s->h;
	float scale[3], bias[3];
	taps(c->y, c->h, s->h, p->m / 8.0, p->y0, p->h, ya, yb, wy);
	taps(c->x, c->w, s->w, p->m / 8.0, p->x0, p->w, xa, xb, wx);
	for (int k = 0; k < C; k++) {
		scale[k] = 1.0f / (255.0f * ds->std[k]);
		bias[k] = -ds->mean[k] / ds->std[k];
	}
	/* per output row: the two source rows blended over the columns the
	 * row reads (contiguous: vectorised), then each output pixel from two
	 * of those columns */
	int lo = xa[0] < xb[s->w - 1] ? xa[0] : xb[s->w - 1];
	int hi = xa[0] > xb[s->w - 1] ? xa[0] : xb[s->w - 1];
	for (int x = 0; x < s->w; x++) {
		lo = xa[x] < lo ? xa[x] : lo;
		hi = xb[x] > hi ? xb[x] : hi;
	}
	size_t row = (size_t)p->w * C, n = (size_t)(hi - lo + 1) * C;
	float *mix = xmalloc(sizeof(float) * n);
	for (int y = 0; y < s->h; y++) {
		const uint8_t *ra = p->px + (size_t)ya[y] * row + (size_t)lo * C;
		const uint8_t *rb = p->px + (size_t)yb[y] * row + (size_t)lo * C;
		float fy = wy[y], gy = 1 - fy;
		for (size_t i = 0; i < n; i++)
			mix[i] = gy * ra[i] + fy * rb[i];
		float *o = out + (size_t)y * s->w * C;
		for (int x = 0; x < s->w; x++) {
			float *q = o + (size_t)(c->flip ? s->w - 1 - x : x) * C;
			const float *a = mix + (size_t)(xa[x] - lo) * C, *b = mix + (size_t)(xb[x] - lo) * C;
			float fx = wx[x], gx = 1 - fx;
			if (C == 3) { /* RGB, unrolled */
				q[0] = (gx * a[0] + fx * b[0]) * scale[0] + bias[0];
				q[1] = (gx * a[1] + fx * b[1]) * scale[1] + bias[1];
				q[2] = (gx * a[2] + fx * b[2]) * scale[2] + bias[2];
				continue;
			}
			for (int k = 0; k < C; k++)
				q[k] = (gx * a[k] + fx * b[k]) * scale[k] + bias[k];
		}
	}
	free(mix);
	free(ya);
	free(wy);
}

static int jpeg_get(const struct dataset *ds, int i, float *out, int train, uint64_t rng)
{
	struct part p;
	struct crop c;
	FILE *f = fopen(ds->paths[i], "rb");
	if (!f)
		return error_errno("cannot open '%s'", ds->paths[i]);
	char *name = xstrfmt("'%s'", ds->paths[i]);
	int rc = decode(ds, name, f, NULL, 0, train, rng, &c, &p);
	fclose(f);
	free(name);
	if (rc)
		return -1;
	crop_resize(ds, &p, &c, out);
	free(p.px);
	return 0;
}

int dataset_jpeg_get_mem(const struct dataset *ds, const char *name, const void *jpeg, size_t len,
			 float *out, int train, uint64_t rng)
{
	struct part p;
	struct crop c;
	if (decode(ds, name, NULL, jpeg, len, train, rng, &c, &p))
		return -1;
	crop_resize(ds, &p, &c, out);
	free(p.px);
	return 0;
}

void dataset_jpeg_setup(struct dataset *ds, const struct ops_shape *want)
{
	static const float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
	ds->shape = *want;
	for (int c = 0; c < 3; c++) {
		ds->mean[c] = want->c == 1 ? 0.449f : mean[c];
		ds->std[c] = want->c == 1 ? 0.226f : std[c];
	}
	ds->flip = 1;
}

static int keep_dir(const char *path, const char *name, void *arg)
{
	struct stat st;
	(void)name;
	(void)arg;
	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

static int keep_jpeg(const char *path, const char *name, void *arg)
{
	struct stat st;
	const char *dot = strrchr(name, '.');
	(void)arg;
	return dot && (!strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg")) && !stat(path, &st) &&
	       S_ISREG(st.st_mode);
}

/* Sorted names of the entries of dir that are directories (want_dir) or
 * JPEG files. The caller frees the array and its strings. */
static int list(const char *dir, int want_dir, char ***out, int *count)
{
	struct strvec v = STRVEC_INIT;
	if (fileio_list_dir(dir, want_dir ? keep_dir : keep_jpeg, NULL, &v) < 0)
		return error_errno("cannot open directory '%s'", dir);
	*out = v.v;
	*count = (int)v.n;
	return 0;
}

int dataset_open_imagefolder(struct dataset *ds, const char *dir, const struct ops_shape *want)
{
	char **classes = NULL;
	int nc = 0;
	if (!want)
		return error("image folder '%s': the network input size is needed", dir);
	if (list(dir, 1, &classes, &nc))
		return -1;
	if (nc == 0)
		return error("'%s' has no class subfolders (expected <dir>/<class>/*.jpg, or IDX, "
			     "CIFAR-10 or TFRecord files)", dir);
	ds->dir = xstrdup(dir);
	ds->kind = "imagefolder";
	ds->classes = nc;
	dataset_jpeg_setup(ds, want);
	int cap = 0;
	for (int c = 0; c < nc; c++) {
		char *sub = xstrfmt("%s/%s", dir, classes[c]), **files = NULL;
		int nf = 0;
		int rc = list(sub, 0, &files, &nf);
		for (int k = 0; !rc && k < nf; k++) {
			if (ds->n == cap) {
				cap = cap ? 2 * cap : 1024;
				ds->paths = xrealloc(ds->paths, sizeof(char *) * cap);
				ds->labels = xrealloc(ds->labels, sizeof(int) * cap);
			}
			ds->paths[ds->n] = xstrfmt("%s/%s", sub, files[k]);
			ds->labels[ds->n++] = c;
		}
		for (int k = 0; !rc && k < nf; k++)
			free(files[k]);
		if (!rc)
			free(files);
		free(sub);
		free(classes[c]);
		if (rc) {
			for (int k = c + 1; k < nc; k++)
				free(classes[k]);
			free(classes);
			return -1;
		}
	}
	free(classes);
	if (ds->n == 0)
		return error("'%s': no .jpg files in its class subfolders", dir);
	ds->get = jpeg_get;
	return 0;
}
