/* jpegdir.c: ImageNet-style folders (one subfolder per class) of JPEG files,
 * decoded with libjpeg-turbo. Training: random-resized crop (area 8%-100%,
 * aspect 3/4-4/3) and horizontal flip; validation: the central 87.5% square
 * (resize to size/0.875 + center crop), both resized bilinearly. */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jpeglib.h>

#include "trialimg/data/dataset.h"
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

/* Decodes a JPEG from the open file f, or from mem (len bytes) when f is
 * NULL, into *px (h, w, channels); the caller frees *px. Errors name
 * `name`. */
static int decode(const char *name, FILE *f, const void *mem, size_t len, int channels,
		  uint8_t **px, int *h, int *w)
{
	struct jpeg_decompress_struct cinfo;
	struct jerr err;
	volatile int rc = -1;
	uint8_t *volatile buf = NULL;
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
	cinfo.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
	jpeg_start_decompress(&cinfo);
	*h = (int)cinfo.output_height;
	*w = (int)cinfo.output_width;
	size_t row = (size_t)*w * channels;
	buf = xmalloc(row * (size_t)*h);
	while (cinfo.output_scanline < cinfo.output_height) {
		JSAMPROW r = buf + row * cinfo.output_scanline;
		jpeg_read_scanlines(&cinfo, &r, 1);
	}
	jpeg_finish_decompress(&cinfo);
	rc = 0;
out:
	jpeg_destroy_decompress(&cinfo);
	*px = buf;
	return rc;
}

static double unit(uint64_t *rng)
{
	return (double)(dataset_rng(rng) >> 11) / 9007199254740992.0;
}

/* The augmentation and resize of a decoded image px (h, w, ds->shape.c)
 * into out (ds->shape, normalised). */
static void crop_resize(const struct dataset *ds, const uint8_t *px, int h, int w, float *out,
			int train, uint64_t rng)
{
	const struct ops_shape *s = &ds->shape;
	double cy, cx, ch, cw; /* crop box: top, left, height, width */
	int flip = 0;
	if (train) {
		ch = h, cw = w, cy = 0, cx = 0;
		for (int t = 0; t < 10; t++) {
			double area = h * w * (0.08 + 0.92 * unit(&rng));
			double ratio = exp(log(3.0 / 4) + (log(4.0 / 3) - log(3.0 / 4)) * unit(&rng));
			double tw = sqrt(area * ratio), th = sqrt(area / ratio);
			if (tw <= w && th <= h) {
				cw = tw, ch = th;
				cx = (w - cw) * unit(&rng);
				cy = (h - ch) * unit(&rng);
				break;
			}
		}
		flip = unit(&rng) < 0.5 && ds->flip;
	} else {
		double side = (h < w ? h : w) * 0.875;
		ch = cw = side;
		cy = (h - side) / 2;
		cx = (w - side) / 2;
	}
	for (int y = 0; y < s->h; y++) {
		double sy = cy + (y + 0.5) * ch / s->h - 0.5;
		int y0 = (int)floor(sy);
		double fy = sy - y0;
		int ya = y0 < 0 ? 0 : y0 >= h ? h - 1 : y0, yb = y0 + 1 >= h ? h - 1 : y0 + 1 < 0 ? 0 : y0 + 1;
		for (int x = 0; x < s->w; x++) {
			int ox = flip ? s->w - 1 - x : x;
			double sx = cx + (x + 0.5) * cw / s->w - 0.5;
			int x0 = (int)floor(sx);
			double fx = sx - x0;
			int xa = x0 < 0 ? 0 : x0 >= w ? w - 1 : x0, xb = x0 + 1 >= w ? w - 1 : x0 + 1 < 0 ? 0 : x0 + 1;
			for (int c = 0; c < s->c; c++) {
				double v = (1 - fy) * ((1 - fx) * px[((size_t)ya * w + xa) * s->c + c] +
						       fx * px[((size_t)ya * w + xb) * s->c + c]) +
					   fy * ((1 - fx) * px[((size_t)yb * w + xa) * s->c + c] +
						 fx * px[((size_t)yb * w + xb) * s->c + c]);
				out[((size_t)y * s->w + ox) * s->c + c] =
					(float)((v / 255.0 - ds->mean[c]) / ds->std[c]);
			}
		}
	}
}

static int jpeg_get(const struct dataset *ds, int i, float *out, int train, uint64_t rng)
{
	uint8_t *px;
	int h, w;
	FILE *f = fopen(ds->paths[i], "rb");
	if (!f)
		return error_errno("cannot open '%s'", ds->paths[i]);
	char *name = xstrfmt("'%s'", ds->paths[i]);
	int rc = decode(name, f, NULL, 0, ds->shape.c, &px, &h, &w);
	fclose(f);
	free(name);
	if (rc)
		return -1;
	crop_resize(ds, px, h, w, out, train, rng);
	free(px);
	return 0;
}

int dataset_jpeg_get_mem(const struct dataset *ds, const char *name, const void *jpeg, size_t len,
			 float *out, int train, uint64_t rng)
{
	uint8_t *px;
	int h, w;
	if (decode(name, NULL, jpeg, len, ds->shape.c, &px, &h, &w))
		return -1;
	crop_resize(ds, px, h, w, out, train, rng);
	free(px);
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

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of the entries of dir that are directories (want_dir) or
 * JPEG files. The caller frees the array and its strings. */
static int list(const char *dir, int want_dir, char ***out, int *count)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0, cap = 0;
	char **v = NULL;
	if (!d)
		return error_errno("cannot open directory '%s'", dir);
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *p = xstrfmt("%s/%s", dir, e->d_name);
		struct stat st;
		int ok = !stat(p, &st);
		free(p);
		if (!ok || (want_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)))
			continue;
		const char *dot = strrchr(e->d_name, '.');
		if (!want_dir && (!dot || (strcasecmp(dot, ".jpg") && strcasecmp(dot, ".jpeg"))))
			continue;
		if (n == cap)
			v = xrealloc(v, sizeof(*v) * (cap = cap ? 2 * cap : 64));
		v[n++] = xstrdup(e->d_name);
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), cmp_str);
	*out = v;
	*count = n;
	return 0;
}

int dataset_open_imagefolder(struct dataset *ds, const char *dir, const struct ops_shape *want)
{
	char **classes;
	int nc;
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
		char *sub = xstrfmt("%s/%s", dir, classes[c]), **files;
		int nf;
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
