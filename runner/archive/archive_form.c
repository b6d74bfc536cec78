/* archive_form.c: the exact bytes collect writes, and verify's check that an
 * archive has them and nothing else. The member digests of MANIFEST cover
 * names and contents; this covers every other byte: tar header fields,
 * padding, the end blocks, and whatever follows them or the compressed
 * stream (`cat a.tar.zst b.tar.zst` decompresses as one stream). */
#include "runner/archive/archive_form.h"
#include "util.h"

#include <archive.h>        /* libarchive: archive_write_* (the headers collect writes) */
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>           /* inflate: one gzip member */
#include <zstd.h>           /* ZSTD_decompressStream: one zstd frame */

#define BLOCK 512
#define IN_CHUNK ((size_t)1 << 17)
#define LONG_NAME_MAX ((int64_t)1 << 16)

int archive_form_set_format(struct archive *a)
{
	if (archive_write_set_format_gnutar(a) != ARCHIVE_OK)
		return error("cannot set up the tar format: %s", archive_error_string(a));
	return 0;
}

void archive_form_entry(struct archive_entry *e, const char *name, mode_t type, mode_t perm,
			int64_t size, int64_t mtime)
{
	archive_entry_set_pathname(e, name);
	archive_entry_set_filetype(e, type == AE_IFDIR ? AE_IFDIR : AE_IFREG);
	archive_entry_set_perm(e, perm & 0777);   /* no setuid, setgid or sticky bit */
	archive_entry_set_size(e, type == AE_IFDIR ? 0 : size);
	archive_entry_set_mtime(e, (time_t)mtime, 0);   /* whole seconds: no pax header per file */
	archive_entry_set_uid(e, 0);
	archive_entry_set_gid(e, 0);
}

/* ---- the decompressed stream ---- */

enum codec { CODEC_TAR, CODEC_ZSTD, CODEC_GZIP };

struct rawin {
	int fd;
	enum codec codec;
	unsigned char *in;          /* (in_len) bytes read from the file; in_pos used */
	size_t in_len, in_pos;
	int file_eof;
	int stream_end;             /* the zstd frame or gzip member ended */
	ZSTD_DCtx *zd;
	z_stream z;
	int z_live;
	const char *damage;         /* why the compressed stream cannot be read */
	uint64_t pos;               /* bytes of the tar stream handed out */
};

static int refill(struct rawin *r)
{
	if (r->in_pos < r->in_len || r->file_eof)
		return 0;
	ssize_t n;
	do
		n = read(r->fd, r->in, IN_CHUNK);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return error_errno("cannot read the archive");
	r->in_len = (size_t)n;
	r->in_pos = 0;
	r->file_eof = n == 0;
	return 0;
}

/* Up to n bytes of the tar stream; fewer at its end or when r->damage is set.
 * -1 on a read error. */
static ssize_t raw_read(struct rawin *r, unsigned char *buf, size_t n)
{
	size_t got = 0;
	while (got < n && !r->stream_end && !r->damage) {
		if (refill(r) < 0)
			return -1;
		/* at the end of the file a decoder may still hold output */
		int no_input = r->in_pos == r->in_len;
		size_t before = got;
		if (r->codec == CODEC_TAR) {
			size_t k = r->in_len - r->in_pos < n - got ? r->in_len - r->in_pos : n - got;
			memcpy(buf + got, r->in + r->in_pos, k);
			r->in_pos += k;
			got += k;
			r->stream_end = no_input;
		} else if (r->codec == CODEC_ZSTD) {
			ZSTD_inBuffer ib = { r->in, r->in_len, r->in_pos };
			ZSTD_outBuffer ob = { buf + got, n - got, 0 };
			size_t ret = ZSTD_decompressStream(r->zd, &ob, &ib);
			if (ZSTD_isError(ret)) {
				r->damage = ZSTD_getErrorName(ret);
				break;
			}
			r->in_pos = ib.pos;
			got += ob.pos;
			r->stream_end = ret == 0;
		} else {
			r->z.next_in = r->in + r->in_pos;
			r->z.avail_in = (uInt)(r->in_len - r->in_pos);
			r->z.next_out = buf + got;
			r->z.avail_out = (uInt)(n - got);
			int ret = inflate(&r->z, Z_NO_FLUSH);
			r->in_pos = r->in_len - r->z.avail_in;
			got = n - r->z.avail_out;
			if (ret == Z_STREAM_END)
				r->stream_end = 1;
			else if (ret != Z_OK && ret != Z_BUF_ERROR)
				r->damage = r->z.msg ? r->z.msg : "damaged gzip data";
		}
		if (no_input && got == before && !r->stream_end && !r->damage)
			r->damage = "the compressed stream is cut short";
	}
	r->pos += got;
	return (ssize_t)got;
}

static int raw_open(struct rawin *r, const char *path)
{
	memset(r, 0, sizeof(*r));
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0)
		return error_errno("cannot open archive '%s'", path);
	r->in = xmalloc(IN_CHUNK);
	if (refill(r) < 0)
		return -1;
	static const unsigned char zstd_magic[4] = { 0x28, 0xb5, 0x2f, 0xfd }, gzip_magic[2] = { 0x1f, 0x8b };
	if (r->in_len >= 4 && !memcmp(r->in, zstd_magic, 4)) {
		r->codec = CODEC_ZSTD;
		r->zd = ZSTD_createDCtx();
	} else if (r->in_len >= 2 && !memcmp(r->in, gzip_magic, 2)) {
		r->codec = CODEC_GZIP;
		r->z_live = inflateInit2(&r->z, 15 + 16) == Z_OK;   /* gzip wrapper only */
		if (!r->z_live)
			return error("cannot set up zlib");
	}
	if (r->codec == CODEC_ZSTD && !r->zd)
		return error("cannot set up zstd");
	return 0;
}

static void raw_close(struct rawin *r)
{
	if (r->fd >= 0)
		close(r->fd);
	ZSTD_freeDCtx(r->zd);
	if (r->z_live)
		inflateEnd(&r->z);
	free(r->in);
}

/* ---- the tar stream ---- */

static int form_problem(struct strbuf *problems, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int form_problem(struct strbuf *problems, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	strbuf_addstr(problems, "form: ");
	strbuf_vaddf(problems, fmt, ap);
	strbuf_addstr(problems, "\n");
	va_end(ap);
	return 1;
}

/* A numeric header field: octal digits, or GNU base-256 when its top bit is
 * set. Anything else reads as far as it goes: the header is then compared
 * byte for byte anyway. */
static int64_t field_num(const unsigned char *f, size_t len)
{
	int64_t v = 0;
	if (f[0] & 0x80) {
		v = f[0] & 0x3f;
		for (size_t i = 1; i < len && v < ((int64_t)1 << 54); i++)
			v = (v << 8) | f[i];
		return v;
	}
	size_t i = 0;
	while (i < len && f[i] == ' ')
		i++;
	for (; i < len && f[i] >= '0' && f[i] <= '7' && v < ((int64_t)1 << 60); i++)
		v = v * 8 + (f[i] - '0');
	return v;
}

static int is_zero(const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}

struct capture {
	struct strbuf *sb;
	int done;          /* the header is in: refuse the data padding that follows */
};

static la_ssize_t capture_write(struct archive *a, void *cd, const void *buf, size_t n)
{
	(void)a;
	struct capture *c = cd;
	if (c->done)
		return -1;
	strbuf_add(c->sb, buf, n);
	return (la_ssize_t)n;
}

/* The header bytes (a GNU long-name header and its blocks included) collect
 * writes for a regular file. */
static int canonical_header(const char *name, int64_t size, mode_t perm, int64_t mtime,
			    struct strbuf *out)
{
	struct archive *a = archive_write_new();
	struct archive_entry *e = archive_entry_new();
	struct capture c = { out, 0 };
	strbuf_reset(out);
	int r = archive_form_set_format(a) == 0 && archive_write_set_bytes_per_block(a, 0) == ARCHIVE_OK &&
		archive_write_open2(a, &c, NULL, capture_write, NULL, NULL) == ARCHIVE_OK ? 0 : -1;
	archive_form_entry(e, name, AE_IFREG, perm, size, mtime);
	if (r == 0) {
		int w = archive_write_header(a, e);
		r = w == ARCHIVE_OK || w == ARCHIVE_WARN ? 0 : -1;
	}
	c.done = 1;
	archive_entry_free(e);
	archive_write_free(a);
	return r;
}

/* Read and check one member whose first header block is h (at tar offset
 * at). Returns 0, 1 (a problem was added) or -1. */
static int check_member(struct rawin *r, const unsigned char *first, uint64_t at,
			struct strbuf *problems)
{
	struct strbuf seq = STRBUF_INIT, want = STRBUF_INIT;
	unsigned char h[BLOCK], *blocks = NULL;
	char *long_name = NULL;
	int ret = 0;
	memcpy(h, first, BLOCK);
	strbuf_add(&seq, h, BLOCK);
	while (h[156] == 'L') {            /* a GNU long name, then the real header */
		int64_t len = field_num(h + 124, 12);
		if (len <= 0 || len > LONG_NAME_MAX) {
			ret = form_problem(problems, "a long-name header at byte %llu of the tar stream "
					   "is not one collect writes", (unsigned long long)at);
			goto out;
		}
		size_t padded = ((size_t)len + BLOCK - 1) / BLOCK * BLOCK;
		blocks = xrealloc(blocks, padded);
		ssize_t n = raw_read(r, blocks, padded);
		if (n >= 0 && (size_t)n == padded)
			n = raw_read(r, h, BLOCK) == BLOCK ? n : -2;
		if (n == -1) {
			ret = -1;
			goto out;
		}
		if (n < 0 || (size_t)n != padded) {
			ret = form_problem(problems, "the tar stream ends inside the header at byte %llu",
					   (unsigned long long)at);
			goto out;
		}
		free(long_name);
		long_name = xstrndup((const char *)blocks, strnlen((const char *)blocks, (size_t)len));
		strbuf_add(&seq, blocks, padded);
		strbuf_add(&seq, h, BLOCK);
	}
	char *name = long_name ? xstrdup(long_name) : xstrndup((const char *)h, strnlen((const char *)h, 100));
	int64_t size = field_num(h + 124, 12);
	if (canonical_header(name, size, (mode_t)field_num(h + 100, 8), field_num(h + 136, 12), &want) < 0) {
		ret = form_problem(problems, "the header at byte %llu of the tar stream ('%s') is not "
				   "one collect writes", (unsigned long long)at, name);
	} else if (h[156] != '0' || want.len != seq.len || memcmp(want.buf, seq.buf, seq.len)) {
		size_t i = 0;
		while (i < seq.len && i < want.len && seq.buf[i] == want.buf[i])
			i++;
		ret = form_problem(problems, "byte %llu of the tar stream, in the header of '%s', is not "
				   "what collect writes", (unsigned long long)(at + i), name);
	}
	/* the data (its digest is checked against MANIFEST), then zero padding */
	unsigned char buf[1 << 14];
	uint64_t left = (uint64_t)size + (uint64_t)((BLOCK - size % BLOCK) % BLOCK);
	uint64_t data_left = (uint64_t)size;
	while (ret == 0 && left > 0) {
		size_t want_n = left < sizeof(buf) ? (size_t)left : sizeof(buf);
		ssize_t n = raw_read(r, buf, want_n);
		if (n < 0) {
			ret = -1;
			break;
		}
		if ((size_t)n < want_n) {
			ret = form_problem(problems, "the tar stream ends inside '%s'%s%s", name,
					   r->damage ? ": " : "", r->damage ? r->damage : "");
			break;
		}
		size_t data = data_left < (uint64_t)n ? (size_t)data_left : (size_t)n;
		if (!is_zero(buf + data, (size_t)n - data))
			ret = form_problem(problems, "the padding after '%s' is not zero", name);
		data_left -= data;
		left -= (uint64_t)n;
	}
	free(name);
out:
	free(blocks);
	free(long_name);
	strbuf_release(&seq);
	strbuf_release(&want);
	return ret;
}

static int check_stream(struct rawin *r, struct strbuf *problems)
{
	unsigned char h[BLOCK];
	for (;;) {
		uint64_t at = r->pos;
		ssize_t n = raw_read(r, h, BLOCK);
		if (n < 0)
			return -1;
		if (n < BLOCK)
			return form_problem(problems, "the tar stream ends at byte %llu without its end "
					    "blocks%s%s", (unsigned long long)r->pos,
					    r->damage ? ": " : "", r->damage ? r->damage : "");
		if (!is_zero(h, BLOCK)) {
			int c = check_member(r, h, at, problems);
			if (c)
				return c;
			continue;
		}
		n = raw_read(r, h, BLOCK);         /* the second end block */
		if (n < 0)
			return -1;
		if (n < BLOCK || !is_zero(h, BLOCK))
			return form_problem(problems, "the end blocks at byte %llu of the tar stream are "
					    "not two zero blocks", (unsigned long long)at);
		break;
	}
	uint64_t end = r->pos;
	unsigned char extra[BLOCK];
	ssize_t n = raw_read(r, extra, sizeof(extra));
	if (n < 0)
		return -1;
	if (n > 0)
		return form_problem(problems, "data after the end of the archive (at byte %llu of the "
				    "tar stream)", (unsigned long long)end);
	if (r->damage)
		return form_problem(problems, "the compressed stream is damaged after the end of the "
				    "archive: %s", r->damage);
	if (r->codec != CODEC_TAR) {
		if (refill(r) < 0)
			return -1;
		if (r->in_pos < r->in_len)
			return form_problem(problems, "data after the end of the compressed stream");
	}
	return 0;
}

int archive_form_check(const char *path, struct strbuf *problems)
{
	struct rawin r;
	int ret = raw_open(&r, path) < 0 ? -1 : check_stream(&r, problems);
	raw_close(&r);
	return ret;
}
