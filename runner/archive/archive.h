/* archive.h: the verifiable log archive of an experiment: collect (tar.zst or
 * tar.gz through libarchive, with a SHA-256 MANIFEST and an optional Ed25519
 * signature over it) and verify. */
#ifndef AAH_RUNNER_ARCHIVE_H
#define AAH_RUNNER_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"

/* Member names inside the archive: "<prefix>/<path relative to the
 * experiment directory>", prefix being the directory's base name, then
 * "<prefix>/MANIFEST" (sha256sum format: "<hex>  <path>\n", sorted by
 * path bytes, so `cd <prefix> && sha256sum -c MANIFEST` checks an extracted
 * copy) and, when signed, "<prefix>/MANIFEST.sig" (64 raw bytes, Ed25519
 * over MANIFEST; `openssl pkeyutl -verify -rawin` checks it). */
#define ARCHIVE_MANIFEST "MANIFEST"
#define ARCHIVE_SIGNATURE "MANIFEST.sig"

struct archive_collect_stats {
	size_t files;          /* regular files archived (MANIFEST excluded) */
	uint64_t bytes;        /* their total size */
	size_t skipped;        /* symbolic links and special files left out */
	size_t archives;       /* earlier archives left out (archive_name_is_archive) */
	size_t superseded;     /* entries left out that launches wrote which no longer count */
};

/* Archive the experiment directory `dir` into `out` (.tar.zst, .tzst,
 * .tar.gz, .tgz or .tar, by its name). Regular files only (directories are
 * implied by their files' names; an empty one is left out): symbolic links
 * are never followed (they are left out, with a warning),
 * `out` itself is left out when it lies inside `dir`, and so is every
 * earlier archive (archive_name_is_archive), with a warning. So is what a
 * trial's launches wrote that no longer count: every place (expdir.h)
 * but its last launch's, which is the trial's as the journal knows it.
 * Order is the byte order of the paths, depth first. `sign_key` (or NULL)
 * is a PEM Ed25519 private key. The archive is written to a temporary
 * name and renamed. */
/* Whether a file name is one collect could have written: it ends in
 * .tar.zst, .tzst, .tar.gz, .tgz or .tar, maybe followed by the
 * ".tmp.<pid>" of an interrupted collect. collect leaves such files out. */
int archive_name_is_archive(const char *name);

int archive_collect(const char *dir, const char *out, const char *sign_key,
		    struct archive_collect_stats *stats);

struct archive_verify_result {
	size_t members;        /* regular-file members checked */
	size_t differ, missing, added;
	int form;              /* 1: bytes outside the digests are not what collect writes */
	int signature;         /* 1 valid, 0 absent, -1 invalid, 2 present but not checked */
	struct strbuf problems; /* one line per problem: "differs: <path>", "form: ...", ... */
};
#define ARCHIVE_VERIFY_RESULT_INIT { .problems = STRBUF_INIT }

/* Stream `path`, recompute every digest and compare with its MANIFEST;
 * with `pubkey` (a PEM Ed25519 public key, or NULL) the signature must be
 * present and valid. Returns 0 when everything matches, 1 when problems were
 * found (listed in res->problems), -1 when the archive cannot be read. */
int archive_verify(const char *path, const char *pubkey, struct archive_verify_result *res);
void archive_verify_result_release(struct archive_verify_result *res);

#endif
