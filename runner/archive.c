/* archive.c: collect an experiment directory into one archive with a
 * SHA-256 MANIFEST (and an Ed25519 signature over it), and verify one. */
#include "runner/archive.h"
#include "fileio.h"
#include "util.h"

#include <archive.h>        /* libarchive: archive_write_*, archive_read_* */
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>    /* EVP_Digest*, EVP_DigestSign*, Ed25519 */
#include <openssl/pem.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define IO_CHUNK (1u << 18)
#define MANIFEST_MAX ((size_t)256 << 20)
/* The compressor thread's queue: tar blocks travel in buffers of this size. */
#define PIPE_BUF_SIZE ((size_t)1 << 20)
#define PIPE_NBUF 4

static void hex(const unsigned char *d, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[d[i] >> 4];
		out[2 * i + 1] = digits[d[i] & 15];
	}
	out[2 * n] = '\0';
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static int has_suffix(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && !strcmp(s + a - b, suf);
}

/* ---- collect ---- */

struct collector {
	struct archive *a;
	const char *prefix;         /* member name prefix: the directory's base name */
	dev_t skip_dev;             /* the output file, when inside the directory */
	ino_t skip_ino;
	struct strbuf manifest;
	struct archive_collect_stats *st;
	unsigned char *buf;         /* (IO_CHUNK) */
	EVP_MD_CTX *md;
	struct timespec newest;     /* latest mtime archived: MANIFEST's, for repeatable archives */
};

static int write_header(struct collector *c, const char *rel, const struct stat *st)
{
	struct archive_entry *e = archive_entry_new();
	char *name = xstrfmt("%s/%s", c->prefix, rel);
	archive_entry_set_pathname(e, name);
	archive_entry_set_filetype(e, S_ISDIR(st->st_mode) ? AE_IFDIR : AE_IFREG);
	archive_entry_set_perm(e, st->st_mode & 07777);
	archive_entry_set_size(e, S_ISDIR(st->st_mode) ? 0 : st->st_size);
	archive_entry_set_mtime(e, st->st_mtim.tv_sec, 0);   /* whole seconds: no pax header per file */
	if (st->st_mtim.tv_sec > c->newest.tv_sec ||
	    (st->st_mtim.tv_sec == c->newest.tv_sec && st->st_mtim.tv_nsec > c->newest.tv_nsec))
		c->newest = st->st_mtim;
	archive_entry_set_uid(e, 0);
	archive_entry_set_gid(e, 0);
	int r = archive_write_header(c->a, e);
	archive_entry_free(e);
	if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
		error("cannot write '%s' into the archive: %s", name, archive_error_string(c->a));
		free(name);
		return -1;
	}
	free(name);
	return 0;
}

/* Archive the regular file open at fd (size and mode in st). Closes fd. */
static int add_file(struct collector *c, int fd, const struct stat *st, const char *rel)
{
	if (write_header(c, rel, st) < 0) {
		close(fd);
		return -1;
	}
	EVP_DigestInit_ex(c->md, EVP_sha256(), NULL);
	off_t left = st->st_size;
	int r = 0;
	while (left > 0 && r == 0) {
		size_t want = left < (off_t)IO_CHUNK ? (size_t)left : IO_CHUNK;
		ssize_t n = read(fd, c->buf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? error_errno("cannot read '%s'", rel)
				  : error("'%s' shrank while it was archived; run collect again", rel);
			break;
		}
		EVP_DigestUpdate(c->md, c->buf, (size_t)n);
		if (archive_write_data(c->a, c->buf, (size_t)n) != n)
			r = error("cannot write '%s' into the archive: %s", rel, archive_error_string(c->a));
		left -= n;
	}
	if (r < 0) {
		close(fd);
		return -1;
	}
	close(fd);
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned dl = 0;
	char h[2 * EVP_MAX_MD_SIZE + 1];
	EVP_DigestFinal_ex(c->md, d, &dl);
	hex(d, dl, h);
	strbuf_addf(&c->manifest, "%s  %s\n", h, rel);
	c->st->files++;
	c->st->bytes += (uint64_t)st->st_size;
	return 0;
}

struct dir_entry {
	char *name;
	unsigned char type;     /* readdir's d_type; DT_UNKNOWN when the fs does not say */
};

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct dir_entry *)a)->name, ((const struct dir_entry *)b)->name);
}

static int add_dir(struct collector *c, int dirfd, const char *rel);

/* One directory entry. Symbolic links are never opened: O_NOFOLLOW on every
 * open, and what was opened is checked with fstat on the descriptor. */
static int add_entry(struct collector *c, int dirfd, const struct dir_entry *de, const char *child)
{
	struct stat st;
	unsigned char type = de->type;
	if (type == DT_UNKNOWN) {
		if (fstatat(dirfd, de->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return error_errno("cannot stat '%s'", child);
		type = S_ISREG(st.st_mode) ? DT_REG : S_ISDIR(st.st_mode) ? DT_DIR
			: S_ISLNK(st.st_mode) ? DT_LNK : DT_FIFO;
	}
	if (type == DT_LNK) {
		warning("left out '%s': symbolic links are not followed", child);
		c->st->skipped++;
		return 0;
	}
	if (type != DT_REG && type != DT_DIR) {
		warning("left out '%s': not a regular file or directory", child);
		c->st->skipped++;
		return 0;
	}
	int fd = openat(dirfd, de->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY |
			(type == DT_DIR ? O_DIRECTORY : O_NONBLOCK));
	if (fd < 0 && errno == ELOOP) {      /* became a link since readdir */
		warning("left out '%s': symbolic links are not followed", child);
		c->st->skipped++;
		return 0;
	}
	if (fd < 0)
		return error_errno("cannot open '%s'", child);
	if (fstat(fd, &st) < 0) {
		close(fd);
		return error_errno("cannot stat '%s'", child);
	}
	if (st.st_dev == c->skip_dev && st.st_ino == c->skip_ino) {
		close(fd);           /* the archive being written */
		return 0;
	}
	if (type == DT_DIR && S_ISDIR(st.st_mode))
		return add_dir(c, fd, child);   /* no member: names in a directory are not covered by MANIFEST */
	if (type == DT_REG && S_ISREG(st.st_mode))
		return add_file(c, fd, &st, child);
	close(fd);
	return error("'%s' changed type while it was archived; run collect again", child);
}

/* Archive the directory open at dirfd, whose path relative to the root is
 * rel ("" for the root). Takes ownership of dirfd. */
static int add_dir(struct collector *c, int dirfd, const char *rel)
{
	DIR *d = fdopendir(dirfd);
	if (!d) {
		close(dirfd);
		return error_errno("cannot read directory '%s'", *rel ? rel : ".");
	}
	struct dir_entry *ents = NULL;
	size_t n = 0, alloc = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == alloc) {
			alloc = alloc ? 2 * alloc : 32;
			ents = xrealloc(ents, alloc * sizeof(*ents));
		}
		ents[n].name = xstrdup(de->d_name);
		ents[n++].type = de->d_type;
	}
	if (n)
		qsort(ents, n, sizeof(*ents), cmp_entry);
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		char *child = *rel ? xstrfmt("%s/%s", rel, ents[i].name) : xstrdup(ents[i].name);
		if (strpbrk(ents[i].name, "\n\\"))
			r = error("cannot archive '%s': its name has a newline or a backslash", child);
		else
			r = add_entry(c, dirfd, &ents[i], child);
		free(child);
	}
	for (size_t i = 0; i < n; i++)
		free(ents[i].name);
	free(ents);
	closedir(d);
	return r;
}

static int add_blob(struct collector *c, const char *name, const void *data, size_t len)
{
	struct stat st;
	memset(&st, 0, sizeof(st));
	st.st_mode = S_IFREG | 0644;
	st.st_size = (off_t)len;
	st.st_mtim = c->newest;
	if (write_header(c, name, &st) < 0)
		return -1;
	if (len && archive_write_data(c->a, data, len) != (la_ssize_t)len)
		return error("cannot write '%s' into the archive: %s", name, archive_error_string(c->a));
	return 0;
}

static EVP_PKEY *read_key(const char *path, int private)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		error_errno("cannot open key '%s'", path);
		return NULL;
	}
	EVP_PKEY *k = private ? PEM_read_PrivateKey(f, NULL, NULL, NULL)
			      : PEM_read_PUBKEY(f, NULL, NULL, NULL);
	fclose(f);
	if (!k) {
		error("'%s' is not a PEM %s key", path, private ? "private" : "public");
		return NULL;
	}
	if (EVP_PKEY_id(k) != EVP_PKEY_ED25519) {
		EVP_PKEY_free(k);
		error("'%s' is not an Ed25519 key (make one with: openssl genpkey -algorithm ed25519)",
		      path);
		return NULL;
	}
	return k;
}

static int sign_manifest(const char *key, const struct strbuf *m, unsigned char sig[64])
{
	EVP_PKEY *k = read_key(key, 1);
	if (!k)
		return -1;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	size_t len = 64;
	int ok = ctx && EVP_DigestSignInit(ctx, NULL, NULL, NULL, k) == 1 &&
		 EVP_DigestSign(ctx, sig, &len, (const unsigned char *)m->buf, m->len) == 1 &&
		 len == 64;
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(k);
	return ok ? 0 : error("cannot sign the manifest with '%s'", key);
}

enum compression { COMP_NONE, COMP_ZSTD, COMP_GZIP };

static int compression_of(const char *out, enum compression *comp)
{
	if (has_suffix(out, ".tar.zst") || has_suffix(out, ".tzst"))
		*comp = COMP_ZSTD;
	else if (has_suffix(out, ".tar.gz") || has_suffix(out, ".tgz"))
		*comp = COMP_GZIP;
	else if (has_suffix(out, ".tar"))
		*comp = COMP_NONE;
	else
		return error("'%s': the archive name must end in .tar.zst, .tzst, .tar.gz, .tgz or .tar",
			     out);
	return 0;
}

/* ---- the compressor thread ----
 * The tar stream (libarchive, GNU format) goes through a queue of buffers to
 * a second thread that compresses it (libarchive's raw format with the zstd
 * or gzip filter) and writes the file: reading, hashing and tar framing
 * overlap with compression, as the two processes of `tar | zstd` do. */

struct zpipe {
	struct archive *z;           /* raw format + compression filter, on the output fd */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned char *buf[PIPE_NBUF];  /* each (PIPE_BUF_SIZE) */
	size_t len[PIPE_NBUF];
	unsigned head, count;        /* filled buffers waiting: head .. head+count-1 */
	size_t fill;                 /* bytes in the buffer being filled, (head+count) % N */
	int closing, failed, started;
	char err[256];
};

static void *zpipe_run(void *arg)
{
	struct zpipe *p = arg;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->count && !p->closing)
			pthread_cond_wait(&p->cond, &p->lock);
		if (!p->count)
			break;
		unsigned slot = p->head;
		pthread_mutex_unlock(&p->lock);
		la_ssize_t w = archive_write_data(p->z, p->buf[slot], p->len[slot]);
		pthread_mutex_lock(&p->lock);
		if (w != (la_ssize_t)p->len[slot]) {
			p->failed = 1;
			snprintf(p->err, sizeof(p->err), "%s", archive_error_string(p->z));
		}
		p->head = (p->head + 1) % PIPE_NBUF;
		p->count--;
		pthread_cond_broadcast(&p->cond);
		if (p->failed)
			break;
	}
	int failed = p->failed;
	pthread_mutex_unlock(&p->lock);
	if (!failed && archive_write_close(p->z) != ARCHIVE_OK) {
		pthread_mutex_lock(&p->lock);
		p->failed = 1;
		snprintf(p->err, sizeof(p->err), "%s", archive_error_string(p->z));
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
	}
	return NULL;
}

/* libarchive's write callback of the tar side: queue the bytes. */
static la_ssize_t zpipe_write(struct archive *a, void *client, const void *data, size_t len)
{
	struct zpipe *p = client;
	const unsigned char *d = data;
	size_t left = len;
	while (left) {
		pthread_mutex_lock(&p->lock);
		while (p->count == PIPE_NBUF && !p->failed)
			pthread_cond_wait(&p->cond, &p->lock);
		if (p->failed) {
			pthread_mutex_unlock(&p->lock);
			archive_set_error(a, EIO, "compression failed: %s", p->err);
			return -1;
		}
		unsigned slot = (p->head + p->count) % PIPE_NBUF;
		pthread_mutex_unlock(&p->lock);
		size_t n = PIPE_BUF_SIZE - p->fill < left ? PIPE_BUF_SIZE - p->fill : left;
		memcpy(p->buf[slot] + p->fill, d, n);
		p->fill += n;
		d += n;
		left -= n;
		if (p->fill == PIPE_BUF_SIZE) {
			pthread_mutex_lock(&p->lock);
			p->len[slot] = p->fill;
			p->count++;
			p->fill = 0;
			pthread_cond_broadcast(&p->cond);
			pthread_mutex_unlock(&p->lock);
		}
	}
	return (la_ssize_t)len;
}

/* Flush the partial buffer, let the thread finish, report its error. */
static int zpipe_finish(struct zpipe *p)
{
	if (!p->started)
		return 0;
	pthread_mutex_lock(&p->lock);
	while (p->count == PIPE_NBUF && !p->failed)
		pthread_cond_wait(&p->cond, &p->lock);
	if (p->fill && !p->failed) {
		unsigned slot = (p->head + p->count) % PIPE_NBUF;
		p->len[slot] = p->fill;
		p->count++;
		p->fill = 0;
	}
	p->closing = 1;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	p->started = 0;
	return p->failed ? error("cannot compress the archive: %s", p->err) : 0;
}

static int zpipe_close_cb(struct archive *a, void *client)
{
	(void)a;
	return zpipe_finish(client) < 0 ? ARCHIVE_FATAL : ARCHIVE_OK;
}

static int zpipe_start(struct zpipe *p, int fd, enum compression comp)
{
	memset(p, 0, sizeof(*p));
	p->z = archive_write_new();
	int r = archive_write_set_format_raw(p->z);
	if (r == ARCHIVE_OK && comp == COMP_ZSTD) {
		r = archive_write_add_filter_zstd(p->z);
		if (r == ARCHIVE_OK)      /* the level zstd(1) uses by default */
			r = archive_write_set_filter_option(p->z, "zstd", "compression-level", "3");
	} else if (r == ARCHIVE_OK) {
		r = archive_write_add_filter_gzip(p->z);
	}
	archive_write_set_bytes_per_block(p->z, 64 * 1024);
	archive_write_set_bytes_in_last_block(p->z, 1);
	if (r == ARCHIVE_OK)
		r = archive_write_open_fd(p->z, fd);
	struct archive_entry *e = archive_entry_new();
	archive_entry_set_pathname(e, "tar");
	archive_entry_set_filetype(e, AE_IFREG);
	if (r == ARCHIVE_OK)
		r = archive_write_header(p->z, e);
	archive_entry_free(e);
	if (r != ARCHIVE_OK)
		return error("cannot set up compression: %s", archive_error_string(p->z));
	for (int i = 0; i < PIPE_NBUF; i++)
		p->buf[i] = xmalloc(PIPE_BUF_SIZE);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	if (pthread_create(&p->thread, NULL, zpipe_run, p) != 0)
		return error("cannot start the compressor thread");
	p->started = 1;
	return 0;
}

static void zpipe_release(struct zpipe *p)
{
	if (p->started) {        /* an error on the tar side: stop the thread */
		pthread_mutex_lock(&p->lock);
		p->failed = 1;
		p->closing = 1;
		snprintf(p->err, sizeof(p->err), "canceled");
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
		pthread_join(p->thread, NULL);
	}
	if (p->buf[0]) {
		pthread_mutex_destroy(&p->lock);
		pthread_cond_destroy(&p->cond);
	}
	for (int i = 0; i < PIPE_NBUF; i++)
		free(p->buf[i]);
	if (p->z)
		archive_write_free(p->z);
	memset(p, 0, sizeof(*p));
}

int archive_collect(const char *dir, const char *out, const char *sign_key,
		    struct archive_collect_stats *stats)
{
	struct archive_collect_stats local;
	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof(*stats));
	char *root = realpath(dir, NULL);
	if (!root)
		return error_errno("cannot resolve '%s'", dir);
	int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		error_errno("cannot open directory '%s'", root);
		free(root);
		return -1;
	}
	struct collector c = { .prefix = base_name(root), .st = stats };
	struct zpipe pipe;
	memset(&pipe, 0, sizeof(pipe));
	strbuf_init(&c.manifest, MANIFEST_MAX);
	char *tmp = xstrfmt("%s.tmp.%ld", out, (long)getpid());
	int r = -1, outfd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	struct stat ost;
	if (outfd < 0 || fstat(outfd, &ost) < 0) {
		error_errno("cannot create '%s'", tmp);
		goto out;
	}
	c.skip_dev = ost.st_dev;
	c.skip_ino = ost.st_ino;
	c.a = archive_write_new();
	c.buf = xmalloc(IO_CHUNK);
	c.md = EVP_MD_CTX_new();
	enum compression comp;
	if (compression_of(out, &comp) < 0)
		goto out;
	/* GNU tar's format: long names when needed, and headers about twice as
	 * cheap to write as pax's for many small files */
	if (archive_write_set_format_gnutar(c.a) != ARCHIVE_OK) {
		error("cannot set up the tar format: %s", archive_error_string(c.a));
		goto out;
	}
	archive_write_set_bytes_per_block(c.a, comp == COMP_NONE ? 64 * 1024 : (int)PIPE_BUF_SIZE);
	archive_write_set_bytes_in_last_block(c.a, 1);
	if (comp != COMP_NONE && zpipe_start(&pipe, outfd, comp) < 0)
		goto out;
	if ((comp == COMP_NONE ? archive_write_open_fd(c.a, outfd)
			       : archive_write_open(c.a, &pipe, NULL, zpipe_write, zpipe_close_cb)) !=
	    ARCHIVE_OK) {
		error("cannot open '%s' for writing: %s", tmp, archive_error_string(c.a));
		goto out;
	}
	int dupfd = dup(rootfd);
	if (dupfd < 0 || add_dir(&c, dupfd, "") < 0)
		goto out;
	if (c.manifest.overflow) {
		error("the manifest is larger than %zu bytes", MANIFEST_MAX);
		goto out;
	}
	if (add_blob(&c, ARCHIVE_MANIFEST, c.manifest.buf, c.manifest.len) < 0)
		goto out;
	if (sign_key) {
		unsigned char sig[64];
		if (sign_manifest(sign_key, &c.manifest, sig) < 0 ||
		    add_blob(&c, ARCHIVE_SIGNATURE, sig, sizeof(sig)) < 0)
			goto out;
	}
	if (archive_write_close(c.a) != ARCHIVE_OK) {
		error("cannot finish '%s': %s", tmp, archive_error_string(c.a));
		goto out;
	}
	if (fsync(outfd) < 0) {
		error_errno("cannot sync '%s'", tmp);
		goto out;
	}
	if (rename(tmp, out) < 0) {
		error_errno("cannot rename '%s' to '%s'", tmp, out);
		goto out;
	}
	r = 0;
out:
	if (c.a)
		archive_write_free(c.a);
	zpipe_release(&pipe);
	if (outfd >= 0)
		close(outfd);
	if (r < 0)
		unlink(tmp);
	EVP_MD_CTX_free(c.md);
	free(c.buf);
	strbuf_release(&c.manifest);
	free(tmp);
	close(rootfd);
	free(root);
	return r;
}

/* ---- verify ---- */

struct member {
	char *path;                  /* relative to the prefix */
	char digest[65];
};

static int cmp_member(const void *a, const void *b)
{
	return strcmp(((const struct member *)a)->path, ((const struct member *)b)->path);
}

static void problem(struct archive_verify_result *res, size_t *count, const char *what,
		    const char *path)
{
	(*count)++;
	strbuf_addf(&res->problems, "%s: %s\n", what, path);
}

/* Read the current entry's data; hash it, or keep it when keep is non-NULL. */
static int read_member(struct archive *a, EVP_MD_CTX *md, unsigned char *buf, char digest[65],
		       struct strbuf *keep)
{
	EVP_DigestInit_ex(md, EVP_sha256(), NULL);
	for (;;) {
		la_ssize_t n = archive_read_data(a, buf, IO_CHUNK);
		if (n < 0)
			return error("damaged archive: %s", archive_error_string(a));
		if (n == 0)
			break;
		EVP_DigestUpdate(md, buf, (size_t)n);
		if (keep)
			strbuf_add(keep, buf, (size_t)n);
	}
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned dl = 0;
	EVP_DigestFinal_ex(md, d, &dl);
	hex(d, dl, digest);
	return 0;
}

static int parse_manifest(const struct strbuf *m, struct member **out, size_t *n,
			  struct archive_verify_result *res)
{
	size_t alloc = 0;
	*out = NULL;
	*n = 0;
	const char *p = m->buf, *end = m->buf + m->len;
	size_t lineno = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		lineno++;
		size_t len = (size_t)(le - p);
		int ok = len > 66 && p[64] == ' ' && p[65] == ' ';
		for (size_t i = 0; ok && i < 64; i++)
			ok = (p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f');
		if (!ok) {
			char *where = xstrfmt("MANIFEST line %zu", lineno);
			problem(res, &res->differ, "malformed", where);
			free(where);
		} else {
			if (*n == alloc) {
				alloc = alloc ? 2 * alloc : 64;
				*out = xrealloc(*out, alloc * sizeof(**out));
			}
			struct member *mb = &(*out)[(*n)++];
			memcpy(mb->digest, p, 64);
			mb->digest[64] = '\0';
			mb->path = xstrndup(p + 66, len - 66);
		}
		p = le + 1;
	}
	if (*n)
		qsort(*out, *n, sizeof(**out), cmp_member);
	return 0;
}

static int check_signature(const char *pubkey, const struct strbuf *m, const struct strbuf *sig)
{
	EVP_PKEY *k = read_key(pubkey, 0);
	if (!k)
		return -2;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int ok = ctx && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, k) == 1 &&
		 EVP_DigestVerify(ctx, (const unsigned char *)sig->buf, sig->len,
				  (const unsigned char *)m->buf, m->len) == 1;
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(k);
	return ok ? 1 : -1;
}

static void compare(struct member *have, size_t nh, struct member *want, size_t nw,
		    struct archive_verify_result *res)
{
	size_t i = 0, j = 0;
	while (i < nh || j < nw) {
		if (i > 0 && i < nh && !strcmp(have[i].path, have[i - 1].path)) {
			problem(res, &res->added, "duplicate", have[i++].path);
			continue;
		}
		int c = i == nh ? 1 : j == nw ? -1 : strcmp(have[i].path, want[j].path);
		if (c < 0) {
			problem(res, &res->added, "added", have[i++].path);
		} else if (c > 0) {
			problem(res, &res->missing, "missing", want[j++].path);
		} else {
			if (strcmp(have[i].digest, want[j].digest))
				problem(res, &res->differ, "differs", have[i].path);
			i++;
			j++;
		}
	}
}

int archive_verify(const char *path, const char *pubkey, struct archive_verify_result *res)
{
	struct archive *a = archive_read_new();
	archive_read_support_filter_all(a);
	archive_read_support_format_tar(a);
	if (archive_read_open_filename(a, path, IO_CHUNK) != ARCHIVE_OK) {
		error("cannot open archive '%s': %s", path, archive_error_string(a));
		archive_read_free(a);
		return -1;
	}
	struct member *have = NULL, *want = NULL;
	size_t nh = 0, nw = 0, alloc = 0;
	struct strbuf manifest, sig;
	strbuf_init(&manifest, MANIFEST_MAX);
	strbuf_init(&sig, 4096);
	int seen_manifest = 0, seen_sig = 0, r = -1;
	char *prefix = NULL;
	unsigned char *buf = xmalloc(IO_CHUNK);
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	struct archive_entry *e;
	for (;;) {
		int rc = archive_read_next_header(a, &e);
		if (rc == ARCHIVE_EOF)
			break;
		if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
			error("damaged archive '%s': %s", path, archive_error_string(a));
			goto out;
		}
		const char *name = archive_entry_pathname(e);
		if (!name)
			name = "";
		if (!prefix) {
			const char *slash = strchr(name, '/');
			prefix = slash ? xstrndup(name, (size_t)(slash - name)) : xstrdup(name);
		}
		size_t pl = strlen(prefix);
		const char *rel = !strncmp(name, prefix, pl) && name[pl] == '/' ? name + pl + 1 : NULL;
		/* collect writes regular files only: anything else was added */
		if (!rel || !*rel || archive_entry_filetype(e) != AE_IFREG) {
			problem(res, &res->added, "added", name);
			continue;
		}
		char digest[65];
		int is_manifest = !strcmp(rel, ARCHIVE_MANIFEST), is_sig = !strcmp(rel, ARCHIVE_SIGNATURE);
		if ((is_manifest && seen_manifest) || (is_sig && seen_sig)) {
			problem(res, &res->added, "duplicate", rel);
			is_manifest = is_sig = 0;
		}
		if (is_manifest || is_sig) {
			struct strbuf *keep = is_manifest ? &manifest : &sig;
			if (read_member(a, md, buf, digest, keep) < 0)
				goto out;
			if (keep->overflow) {
				error("'%s' in '%s' is too large", rel, path);
				goto out;
			}
			*(is_manifest ? &seen_manifest : &seen_sig) = 1;
			continue;
		}
		if (read_member(a, md, buf, digest, NULL) < 0)
			goto out;
		if (nh == alloc) {
			alloc = alloc ? 2 * alloc : 256;
			have = xrealloc(have, alloc * sizeof(*have));
		}
		have[nh].path = xstrdup(rel);
		memcpy(have[nh].digest, digest, sizeof(digest));
		nh++;
		res->members++;
	}
	if (!seen_manifest) {
		error("'%s' has no %s member: it was not made by aah-runner collect, or it was cut",
		      path, ARCHIVE_MANIFEST);
		goto out;
	}
	parse_manifest(&manifest, &want, &nw, res);
	if (nh)
		qsort(have, nh, sizeof(*have), cmp_member);
	compare(have, nh, want, nw, res);
	res->signature = seen_sig ? 2 : 0;
	if (pubkey) {
		int s = seen_sig ? check_signature(pubkey, &manifest, &sig) : 0;
		if (s == -2)
			goto out;
		res->signature = s;
		if (s == 0)
			strbuf_addstr(&res->problems, "unsigned: the archive has no MANIFEST.sig\n");
		else if (s < 0)
			strbuf_addstr(&res->problems, "signature: MANIFEST.sig does not match MANIFEST "
				      "and the public key\n");
	}
	r = res->differ || res->missing || res->added || (pubkey && res->signature != 1) ? 1 : 0;
out:
	for (size_t i = 0; i < nh; i++)
		free(have[i].path);
	for (size_t i = 0; i < nw; i++)
		free(want[i].path);
	free(have);
	free(want);
	free(prefix);
	free(buf);
	EVP_MD_CTX_free(md);
	strbuf_release(&manifest);
	strbuf_release(&sig);
	archive_read_free(a);
	return r;
}

void archive_verify_result_release(struct archive_verify_result *res)
{
	strbuf_release(&res->problems);
}
