/* tfrindex.h: the index of one TFRecord file (aah-tfrecord-index/1, see
 * docs/formats.md), made once by reading the file and kept beside it, or
 * in a cache directory when its directory is not writable; a stale or
 * damaged index is rebuilt, never trusted. */
#ifndef AAH_TFRINDEX_H
#define AAH_TFRINDEX_H

#include <stddef.h>
#include <stdint.h>

/* One record: the first two fields are DALI's tfrecord2idx columns. */
struct tfrindex_rec {
	uint64_t offset;    /* of the record's length field in the file */
	uint64_t length;    /* of the whole framed record: 12 + data + 4 */
	int64_t label;      /* image/class/label as written (AIPerf: 1-based) */
	uint32_t jpeg_at;   /* image/encoded's bytes inside the record's data */
	uint32_t jpeg_len;
};

/* Where an index came from, for the caller's summary line. */
enum tfrindex_origin {
	TFRINDEX_READ,      /* a valid index was read; the data was not */
	TFRINDEX_MADE,      /* the data was read and the index saved */
	TFRINDEX_UNSAVED,   /* the data was read; no place took the index */
};

struct tfrindex {
	struct tfrindex_rec *r; /* (n) in file order */
	size_t n;
	enum tfrindex_origin origin;
	char *where;            /* the index file read or written; NULL when unsaved */
};

/* The index of the TFRecord file at path: read from beside it
 * (path.aah-index) or from the cache (tfrindex_cache_path) when one of
 * them matches the file's size and mtime and is whole, else made by
 * reading every record (both checksums and the tf.Example checked; a bad
 * record is reported by file, record and byte) and saved beside the file,
 * or in the cache when that fails. An index that is there but does not
 * match is reported with a warning and rebuilt. */
int tfrindex_load(struct tfrindex *x, const char *path);
void tfrindex_release(struct tfrindex *x);

/* The cache directory: $AAH_CACHE_DIR, else $XDG_CACHE_HOME/aah, else
 * $HOME/.cache/aah (NULL when none is set); and the path of path's index
 * in it: <cache>/tfrecord-index/<hash of the absolute path>-<name>.aah-index.
 * The caller frees both. */
char *tfrindex_cache_dir(void);
char *tfrindex_cache_path(const char *path);

/* The index text for records r (n) of a file of `size` bytes modified at
 * mtime_ns, and its parser: 0 and the records (the caller frees *r), or -1
 * with what is wrong in why (a static string) and the 1-based line in
 * *line. Exposed for the tests and the fuzzer. */
char *tfrindex_format(const struct tfrindex_rec *r, size_t n, uint64_t size, int64_t mtime_ns,
		      size_t *len);
int tfrindex_parse(const char *text, size_t len, uint64_t size, int64_t mtime_ns,
		   struct tfrindex_rec **r, size_t *n, const char **why, size_t *line);

#endif
