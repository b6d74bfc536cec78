/* fuzz_tfrecord.c: the input as a serialized tf.Example ->
 * tfrecord_example_parse (checksums would keep most mutations away from the
 * decoder otherwise); then as a TFRecord file -> tfrecord_next over every
 * record, tfrecord_example_parse of each record's data, and
 * tfrecord_read_at of each record again by its offset (the paths of
 * trialimg/data/tfrecorddir.c short of the JPEG decoder, libjpeg-turbo's);
 * and the input as an aah-tfrecord-index/1 text -> tfrindex_parse. */
#include <stdlib.h>

#include "fuzz.h"
#include "trialimg/data/tfrecord.h" /* tfrecord_open, tfrecord_next, tfrecord_example_parse */
#include "trialimg/data/tfrindex.h" /* tfrindex_parse */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfrecord_reader r;
	struct tfrecord_example ex;
	const uint8_t *rec;
	size_t len;
	uint64_t at;
	volatile unsigned sink = 0;
	if (!tfrecord_example_parse(data, size, &ex) && ex.jpeg_len)
		sink += ex.jpeg[0] + ex.jpeg[ex.jpeg_len - 1] + (unsigned)ex.label;
	struct tfrindex_rec *ix;
	size_t n_ix, line;
	const char *why;
	/* a file of 1 GB: large enough that the tiling rarely stops the parse */
	if (!tfrindex_parse((const char *)data, size, 1 << 30, 0, &ix, &n_ix, &why, &line) && n_ix)
		sink += (unsigned)ix[n_ix - 1].length;
	free(ix);
	const char *path = fuzz_write("train-00000-of-00001", data, size);
	if (tfrecord_open(&r, path))
		return 0;
	while (tfrecord_next(&r, &rec, &len, &at) == 1) {
		if (!tfrecord_example_parse(rec, len, &ex) && ex.jpeg_len)
			sink += ex.jpeg[0] + ex.jpeg[ex.jpeg_len - 1] + (unsigned)ex.label;
		uint8_t *again = malloc(len ? len : 1);
		if (again && !tfrecord_read_at(path, r.index - 1, at, len, again))
			sink += len ? again[len - 1] : 0;
		free(again);
	}
	tfrecord_close(&r);
	(void)sink;
	return 0;
}
