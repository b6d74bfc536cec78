/* tfrecord.h: the TFRecord file format (length-prefixed records, each
 * framed by masked CRC-32C checksums) and the two tf.Example features an
 * ImageNet record carries: the encoded JPEG and the integer label. */
#ifndef AAH_TFRECORD_H
#define AAH_TFRECORD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* CRC-32C (Castagnoli) of n bytes, and TFRecord's mask of it:
 * ((crc >> 15) | (crc << 17)) + 0xa282ead8. */
uint32_t tfrecord_crc32c(const void *p, size_t n);
uint32_t tfrecord_masked_crc(const void *p, size_t n);

/* A sequential reader of one file. Every record's length and data
 * checksums are checked; errors name the file, the record's index and its
 * byte offset. */
struct tfrecord_reader {
	FILE *f;
	char *path;
	uint64_t size;      /* of the file */
	uint64_t offset;    /* of the next record's header */
	long index;         /* of the next record, from 0 */
	uint8_t *buf;       /* the last record's data (cap bytes) */
	size_t cap;
};

int tfrecord_open(struct tfrecord_reader *r, const char *path);
/* 1 and the record's data (valid until the next call) and the byte offset
 * of that data in the file; 0 at the end of the file; -1 on a corrupt or
 * truncated record. */
int tfrecord_next(struct tfrecord_reader *r, const uint8_t **data, size_t *len,
		  uint64_t *data_offset);
void tfrecord_close(struct tfrecord_reader *r);

/* Reads record `index` of path again from its known place (its data of len
 * bytes at data_offset) into buf, checking both checksums; errors as
 * above. Thread-safe: it opens the file itself. */
int tfrecord_read_at(const char *path, long index, uint64_t data_offset, size_t len,
		     uint8_t *buf);
/* The same through fd, open on path (pread: threads may share fd). */
int tfrecord_read_fd(int fd, const char *path, long index, uint64_t data_offset, size_t len,
		     uint8_t *buf);

/* The features of a tf.Example that an image set needs. */
struct tfrecord_example {
	const uint8_t *jpeg;   /* "image/encoded": points into the record */
	size_t jpeg_len;
	int64_t label;         /* "image/class/label" */
};

/* Decodes a serialized tf.Example (protobuf wire format, every length
 * checked against the buffer). NULL on success, else what is wrong, in
 * words (a static string). Unknown fields and other features are
 * skipped; the last value of a repeated key wins, as in protobuf maps. */
const char *tfrecord_example_parse(const uint8_t *buf, size_t len, struct tfrecord_example *ex);

/* The index of a TFRecord image set (tfrecorddir.c, struct dataset's tfr). */
/* Where sample i's JPEG is: its record's data (len bytes at offset in
 * files[file]) and the JPEG's place inside that data. */
struct tfrecord_sample {
	uint64_t offset;
	uint32_t file, record;
	uint32_t len, jpeg_at, jpeg_len;
};

struct tfrecord_index {
	int n_files;
	char **files;                /* (n_files) paths */
	_Atomic int *fd;             /* (n_files) each file's descriptor, opened at its
				      * first sample's read and shared by the threads
				      * (-1: not yet; -2: open refused, e.g. out of
				      * descriptors: each read opens the file) */
	struct tfrecord_sample *s;   /* (ds->n) */
};

#endif
