/* archive_form.h: the exact bytes collect writes: the tar header of each
 * member, and a check that an archive is byte for byte in that form, with
 * nothing after its end. */
#ifndef AAH_RUNNER_ARCHIVE_FORM_H
#define AAH_RUNNER_ARCHIVE_FORM_H

#include <stdint.h>
#include <sys/types.h>

#include "strbuf.h"

struct archive;
struct archive_entry;

/* The tar format collect writes: GNU tar (long names when needed). */
int archive_form_set_format(struct archive *a);
/* Fill e as collect writes a member: name, type (AE_IFREG or AE_IFDIR),
 * permission bits, size, mtime in whole seconds, owner 0:0, no user or
 * group name. */
void archive_form_entry(struct archive_entry *e, const char *name, mode_t type, mode_t perm,
			int64_t size, int64_t mtime);

/* Check that the archive at path is exactly what collect writes: at most one
 * zstd frame or gzip member, nothing after it; inside, one regular-file
 * member after another, each header byte for byte the one
 * archive_form_entry gives for its name, size, mode and mtime, zero padding,
 * the two zero end blocks and nothing after them. Returns 0 when it is, 1
 * when not (one line "form: ..." added to problems), -1 when path cannot be
 * opened. */
int archive_form_check(const char *path, struct strbuf *problems);

#endif
