/* dataset.h: labelled image sets for training: Fashion-MNIST / MNIST IDX
 * files (gzipped or raw), CIFAR-10 binary batches, ImageNet-style JPEG
 * folders and TFRecord files of tf.Example (AIPerf's ImageNet), each
 * producing normalised NHWC float samples. */
#ifndef AAH_DATASET_H
#define AAH_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/ops.h" /* struct ops_shape */

struct dataset {
	char *dir;
	const char *kind;          /* "idx", "cifar10", "imagefolder", "tfrecord" */
	int n;                     /* samples */
	int classes;
	struct ops_shape shape;    /* of one produced sample */
	uint8_t *pixels;           /* in-memory sets: (n, h, w, c) */
	int *labels;               /* (n) */
	char **paths;              /* image folders: (n) file paths */
	struct tfrecord_index *tfr; /* TFRecord sets: files and record offsets */
	float mean[3], std[3];     /* per-channel normalisation of [0,1] pixels */
	/* Training augmentation: flip half the images horizontally; shift each
	 * image by up to `shift` pixels in x and y, filling with black. The
	 * openers set each set's default (CIFAR-10 and JPEG folders flip). */
	int flip, shift;
	/* JPEG sets: decode every image whole at full size, the reference the
	 * scaled and cropped decode is tested against (jpegdir.c). */
	int jpeg_full;
	/* Writes sample i (normalised, shape) into out; train enables the
	 * augmentation, whose randomness comes from rng alone. */
	int (*get)(const struct dataset *ds, int i, float *out, int train, uint64_t rng);
};

/* Opens the train or test split in dir. kind: "auto" (detected from the
 * files), "fashion-mnist", "mnist", "idx", "cifar10", "imagefolder" or
 * "tfrecord".
 * `want` is the network input: image folders are cropped/resized to it;
 * other sets must match it. Errors name the file. */
int dataset_open(struct dataset *ds, const char *kind, const char *dir, int train,
		 const struct ops_shape *want);
void dataset_release(struct dataset *ds);

/* Per-format openers behind dataset_open. */
int dataset_open_idx(struct dataset *ds, const char *dir, int train);
int dataset_open_cifar10(struct dataset *ds, const char *dir, int train);
int dataset_open_imagefolder(struct dataset *ds, const char *dir, const struct ops_shape *want);
/* In tfrecord.c: does dir hold TFRecord files (see there for the names)? */
int dataset_is_tfrecord(const char *dir);
int dataset_open_tfrecord(struct dataset *ds, const char *dir, int train,
			  const struct ops_shape *want);
void dataset_release_tfrecord(struct dataset *ds);

/* The JPEG path of image folders, shared with TFRecord sets (jpegdir.c):
 * shape, ImageNet normalisation and flip for the network input `want`;
 * and one sample from JPEG bytes in memory (errors name `name`). */
void dataset_jpeg_setup(struct dataset *ds, const struct ops_shape *want);
int dataset_jpeg_get_mem(const struct dataset *ds, const char *name, const void *jpeg, size_t len,
			 float *out, int train, uint64_t rng);

/* Sets flip and shift from a --augment value: "auto" (the set's default),
 * "none", or a comma list of "flip" and "shift[=N]" (N pixels, default 2).
 * Errors name the offending item. */
int dataset_set_augment(struct dataset *ds, const char *spec);

/* Shared by the in-memory sets: pixels -> normalised floats, flip and shift. */
int dataset_get_memory(const struct dataset *ds, int i, float *out, int train, uint64_t rng);
uint64_t dataset_rng(uint64_t *state);

#endif
