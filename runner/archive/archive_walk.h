/* archive_walk.h: collect's reader thread: walks an experiment directory in
 * archive order (depth first, names in byte order), reads and hashes every
 * regular file, and hands its bytes over through a bounded queue, so the
 * file system calls and SHA-256 overlap with tar framing and compression. */
#ifndef AAH_RUNNER_ARCHIVE_WALK_H
#define AAH_RUNNER_ARCHIVE_WALK_H

#include <stddef.h>
#include <sys/stat.h>

#include "runner/archive/archive.h"
#include "strbuf.h"
#include "strvec.h"

struct archive_walk_item {
	char *rel;                 /* path below the root, on a file's first chunk; else NULL */
	struct stat st;            /* the file's, on its first chunk */
	unsigned char *data;       /* (len) bytes of the file, in order */
	size_t len;
	int pooled;                /* data is a reusable full-size chunk */
	struct archive_walk_item *next;
};

struct archive_walk;

/* Start walking the directory open at rootfd (not closed). The files
 * skip[0..nskip) (device and inode: the archive being written, and the one
 * it will replace) are left out, and so are the entries whose path below
 * the root is in leave (sorted by strcmp; NULL: none). Symbolic
 * links are never followed. Each regular file adds "<sha256>  <rel>\n" to
 * manifest and counts in stats; both belong to the walker until
 * archive_walk_finish. */
struct archive_walk *archive_walk_start(int rootfd, const struct stat *skip, size_t nskip,
					const struct strvec *leave, struct strbuf *manifest,
					struct archive_collect_stats *stats);
/* The next chunk, waiting for it; NULL at the end or after an error. The
 * caller frees it with archive_walk_item_free (which may keep its buffer). */
struct archive_walk_item *archive_walk_next(struct archive_walk *w);
void archive_walk_item_free(struct archive_walk *w, struct archive_walk_item *it);
/* Stop (early or at the end), join the thread, free w. Returns 0, or -1
 * when the walk failed (the error was reported). */
int archive_walk_finish(struct archive_walk *w);

/* The n bytes at d as lowercase hex into out (2n + 1 bytes): a digest as
 * the manifest writes it; collect and verify both use it. */
void archive_walk_hex(const unsigned char *d, size_t n, char *out);

#endif
