/* tfrindex.c: a TFRecord file's index, its text form and where it is kept.
 *
 *   aah-tfrecord-index/1 size=<bytes> mtime=<seconds>.<nanoseconds> records=<n>
 *   <offset> <length> <label> <jpeg_at> <jpeg_len>      (n lines)
 *   end crc32c=<8 hex digits of the CRC-32C of every byte above>
 *
 * The first two columns are DALI's tfrecord2idx's. The header ties the
 * index to one version of its data file; the records must tile the file
 * exactly; the checksum catches any other damage. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h> /* flock */
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"  /* fileio_read, fileio_write_atomic_flags, fileio_mkdir_p */
#include "strbuf.h"
#include "trialimg/data/tfrecord.h" /* tfrecord_open, tfrecord_next, tfrecord_crc32c */
#include "trialimg/data/tfrindex.h"
#include "util.h"

#define MAGIC "aah-tfrecord-index/1"
#define SUFFIX ".aah-index"

/* ---- text form ------------------------------------------------------------ */

char *tfrindex_format(const struct tfrindex_rec *r, size_t n, uint64_t size, int64_t mtime_ns,
		      size_t *len)
{
	struct strbuf sb = STRBUF_INIT;
	char tail[32];
	strbuf_addf(&sb, MAGIC " size=%llu mtime=%lld.%09lld records=%zu\n",
		    (unsigned long long)size, (long long)(mtime_ns / 1000000000),
		    (long long)(mtime_ns % 1000000000), n);
	for (size_t i = 0; i < n; i++)
		strbuf_addf(&sb, "%llu %llu %lld %u %u\n", (unsigned long long)r[i].offset,
			    (unsigned long long)r[i].length, (long long)r[i].label, r[i].jpeg_at,
			    r[i].jpeg_len);
	snprintf(tail, sizeof(tail), "end crc32c=%08x\n", tfrecord_crc32c(sb.buf, sb.len));
	strbuf_addstr(&sb, tail);
	return strbuf_detach(&sb, len);
}

/* A decimal number without sign or spaces, then `sep`; advances *p. */
static int num(const char **p, const char *end, char sep, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	if (s == end || *s < '0' || *s > '9')
		return -1;
	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		if (x > (UINT64_MAX - 9) / 10)
			return -1;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	if (s == end || *s != sep)
		return -1;
	*p = s + 1;
	*v = x;
	return 0;
}

static int word(const char **p, const char *end, const char *w)
{
	size_t n = strlen(w);
	if ((size_t)(end - *p) < n || memcmp(*p, w, n))
		return -1;
	*p += n;
	return 0;
}

/* -2: a whole index of another version of the file (stale), -1: damaged. */
int tfrindex_parse(const char *text, size_t len, uint64_t size, int64_t mtime_ns,
		   struct tfrindex_rec **out, size_t *count, const char **why, size_t *line)
{
	const char *p = text, *end = text + len;
	uint64_t fsize, sec, nsec, n, crc;
	*out = NULL;
	*count = 0;
	*line = 1;
	if (word(&p, end, MAGIC " size=") || num(&p, end, ' ', &fsize) || word(&p, end, "mtime=") ||
	    num(&p, end, '.', &sec) || num(&p, end, ' ', &nsec) || word(&p, end, "records=") ||
	    num(&p, end, '\n', &n) || nsec >= 1000000000 || sec > INT64_MAX / 1000000000 - 1) {
		*why = "its header is not " MAGIC " size=N mtime=S.NS records=N";
		return -1;
	}
	/* every record line takes at least 10 bytes: no count beyond that */
	if (n > len / 10) {
		*why = "it lists more records than its length can hold";
		return -1;
	}
	struct tfrindex_rec *r = xmalloc(sizeof(*r) * (n ? n : 1));
	uint64_t at = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t label, jat, jlen;
		++*line;
		if (num(&p, end, ' ', &r[i].offset) || num(&p, end, ' ', &r[i].length) ||
		    num(&p, end, ' ', &label) || num(&p, end, ' ', &jat) || num(&p, end, '\n', &jlen) ||
		    label > INT64_MAX || jat > UINT32_MAX || jlen > UINT32_MAX) {
			*why = "a record line is not five numbers";
			goto bad;
		}
		if (r[i].offset != at || r[i].length < 16 || r[i].length > size - at ||
		    jat + jlen > r[i].length - 16) {
			*why = "its records do not tile the file";
			goto bad;
		}
		r[i].label = (int64_t)label;
		r[i].jpeg_at = (uint32_t)jat;
		r[i].jpeg_len = (uint32_t)jlen;
		at += r[i].length;
	}
	++*line;
	size_t body = (size_t)(p - text);
	crc = 0;
	int hex = !word(&p, end, "end crc32c=") && end - p == 9 && p[8] == '\n';
	for (int k = 0; hex && k < 8; k++) {
		char c = p[k];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		hex = d >= 0;
		crc = crc << 4 | (uint64_t)(d & 15);
	}
	if (!hex) {
		*why = "its last line is not end crc32c=XXXXXXXX (a truncated index?)";
		goto bad;
	}
	if (crc != tfrecord_crc32c(text, body)) {
		*why = "its checksum does not match";
		goto bad;
	}
	if (fsize != size || (int64_t)(sec * 1000000000 + nsec) != mtime_ns) {
		*why = "it was made for another version of the file (its size or mtime differ)";
		free(r);
		return -2;
	}
	if (at != size) {
		*why = "its records do not tile the file";
		goto bad;
	}
	*out = r;
	*count = n;
	return 0;
bad:
	free(r);
	return -1;
}

/* ---- where it is kept ----------------------------------------------------- */

char *tfrindex_cache_dir(void)
{
	const char *v;
	if ((v = getenv("AAH_CACHE_DIR")) && *v)
		return xstrdup(v);
	if ((v = getenv("XDG_CACHE_HOME")) && *v)
		return xstrfmt("%s/aah", v);
	if ((v = getenv("HOME")) && *v)
		return xstrfmt("%s/.cache/aah", v);
	return NULL;
}

char *tfrindex_cache_path(const char *path)
{
	char *dir = tfrindex_cache_dir();
	if (!dir)
		return NULL;
	char *abs = fileio_absolute(path);
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	for (const char *s = abs; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	const char *base = strrchr(abs, '/');
	char *p = xstrfmt("%s/tfrecord-index/%016llx-%s" SUFFIX, dir, (unsigned long long)h,
			  base ? base + 1 : abs);
	free(abs);
	free(dir);
	return p;
}

/* ---- load or make ----------------------------------------------------------- */

/* 1 and the records when `at` holds a valid index of the file; 0 when there
 * is none; a stale or damaged one counts as none, and is reported unless
 * quiet. */
static int try_read(struct tfrindex *x, const char *at, uint64_t size, int64_t mtime_ns,
		    int quiet)
{
	char *text;
	size_t len, line;
	const char *why;
	if (!fileio_exists(at))
		return 0;
	int held = util_hold_errors(1);
	int rc = fileio_read(at, (size_t)1 << 34, &text, &len);
	util_hold_errors(held);
	if (rc) {
		if (!quiet)
			warning("cannot read the index '%s' (%s): rebuilding it", at, util_last_error());
		return 0;
	}
	rc = tfrindex_parse(text, len, size, mtime_ns, &x->r, &x->n, &why, &line);
	free(text);
	if (rc == -2 && !quiet)
		warning("the index '%s' is stale: %s; rebuilding it", at, why);
	else if (rc && !quiet)
		warning("the index '%s' is damaged at line %zu: %s; rebuilding it", at, line, why);
	if (rc)
		return 0;
	x->origin = TFRINDEX_READ;
	x->where = xstrdup(at);
	return 1;
}

/* Reads every record of path into x. */
static int scan(struct tfrindex *x, const char *path)
{
	struct tfrecord_reader rd;
	const uint8_t *data;
	size_t len, cap = 0;
	uint64_t at;
	int rc;
	if (tfrecord_open(&rd, path))
		return -1;
	while ((rc = tfrecord_next(&rd, &data, &len, &at)) == 1) {
		struct tfrecord_example ex;
		const char *why = tfrecord_example_parse(data, len, &ex);
		if (!why && len > UINT32_MAX)
			why = "the record is too large";
		if (why) {
			rc = error("'%s': record %ld at byte %llu: %s", path, rd.index - 1,
				   (unsigned long long)(at - 12), why);
			break;
		}
		if (x->n == cap)
			x->r = xrealloc(x->r, sizeof(*x->r) * (cap = cap ? 2 * cap : 1024));
		x->r[x->n++] = (struct tfrindex_rec){
			.offset = at - 12, .length = 12 + len + 4, .label = ex.label,
			.jpeg_at = (uint32_t)(ex.jpeg - data), .jpeg_len = (uint32_t)ex.jpeg_len,
		};
	}
	tfrecord_close(&rd);
	return rc < 0 ? -1 : 0;
}

/* Writes the index text to `at` (making the cache's directory); quiet. */
static int save(const char *at, const char *text, size_t len, int mkdir)
{
	int held = util_hold_errors(1), rc = 0;
	if (mkdir) {
		char *dir = xstrdup(at);
		*strrchr(dir, '/') = 0;
		rc = fileio_mkdir_p(dir, 0755);
		free(dir);
	}
	rc = rc || fileio_write_atomic_flags(at, text, len, FILEIO_NOSYNC);
	util_hold_errors(held);
	return rc ? -1 : 0;
}

int tfrindex_load(struct tfrindex *x, const char *path)
{
	struct stat st;
	memset(x, 0, sizeof(*x));
	if (stat(path, &st))
		return error_errno("cannot stat '%s'", path);
	uint64_t size = (uint64_t)st.st_size;
	int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	char *beside = xstrfmt("%s" SUFFIX, path), *cache = tfrindex_cache_path(path);
	int rc = 0, lock = -1;
	if (try_read(x, beside, size, mtime, 1) || (cache && try_read(x, cache, size, mtime, 1)))
		goto out;
	/* one process indexes a file at a time (ranks and trials on a node open
	 * the same set at once): the others wait on the data file's flock, then
	 * read what it saved. Where flock is refused (some NFS mounts without a
	 * writable descriptor), each indexes on its own. */
	lock = open(path, O_RDONLY | O_CLOEXEC);
	while (lock >= 0 && flock(lock, LOCK_EX) && errno == EINTR)
		;
	if (try_read(x, beside, size, mtime, 0) || (cache && try_read(x, cache, size, mtime, 0)))
		goto out;
	if (scan(x, path)) {
		tfrindex_release(x);
		rc = -1;
		goto out;
	}
	/* the data read must be the version the index will claim */
	struct stat now;
	size_t len;
	char *text = tfrindex_format(x->r, x->n, size, mtime, &len);
	x->origin = TFRINDEX_UNSAVED;
	if (stat(path, &now) || now.st_size != st.st_size ||
	    now.st_mtim.tv_sec != st.st_mtim.tv_sec || now.st_mtim.tv_nsec != st.st_mtim.tv_nsec)
		warning("'%s' changed while it was indexed: the index is not saved", path);
	else if (!save(beside, text, len, 0))
		x->where = xstrdup(beside);
	else if (cache && !save(cache, text, len, 1))
		x->where = xstrdup(cache);
	else
		warning("cannot save the index of '%s' beside it or in '%s' (set AAH_CACHE_DIR to a "
			"writable directory): every open reads the whole file", path,
			cache ? cache : "the cache: no AAH_CACHE_DIR, XDG_CACHE_HOME or HOME");
	if (x->where)
		x->origin = TFRINDEX_MADE;
	free(text);
out:
	if (lock >= 0)
		close(lock); /* and its flock */
	free(beside);
	free(cache);
	return rc;
}

void tfrindex_release(struct tfrindex *x)
{
	free(x->r);
	free(x->where);
	memset(x, 0, sizeof(*x));
}
