/* archive.c: collect an experiment directory into one archive with a
 * SHA-256 MANIFEST (and an Ed25519 signature over it), and verify one. */
#include "runner/archive/archive.h"
#include "runner/archive/archive_form.h" /* archive_form_entry, archive_form_check */
#include "runner/archive/archive_walk.h" /* archive_walk_start, _next, _finish */
#include "fileio.h"
#include "runner/store/journal.h" /* the trials' last places, from the journal */
#include "strvec.h"
#include "util.h"

#include <archive.h>        /* libarchive: archive_write_*, archive_read_* */
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>    /* EVP_Digest*, EVP_DigestSign*, Ed25519 */
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>           /* the .tar.zst stream, written with its checksum */

#define IO_CHUNK (1u << 18)
#define MANIFEST_MAX ((size_t)256 << 20)

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* ---- collect ---- */

struct collector {
	struct archive *a;
	const char *prefix;         /* member name prefix: the directory's base name */
	struct strbuf manifest;
	struct archive_collect_stats *st;
	struct timespec newest;     /* latest mtime archived: MANIFEST's, for repeatable archives */
};

static int write_header(struct collector *c, const char *rel, const struct stat *st)
{
	struct archive_entry *e = archive_entry_new();
	char *name = xstrfmt("%s/%s", c->prefix, rel);
	archive_form_entry(e, name, S_ISDIR(st->st_mode) ? AE_IFDIR : AE_IFREG, st->st_mode,
			   st->st_size, st->st_mtim.tv_sec);
	if (st->st_mtim.tv_sec > c->newest.tv_sec ||
	    (st->st_mtim.tv_sec == c->newest.tv_sec && st->st_mtim.tv_nsec > c->newest.tv_nsec))
		c->newest = st->st_mtim;
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

static const struct {
	const char *suffix;
	enum compression comp;
} archive_names[] = {
	{ ".tar.zst", COMP_ZSTD }, { ".tzst", COMP_ZSTD },
	{ ".tar.gz", COMP_GZIP }, { ".tgz", COMP_GZIP },
	{ ".tar", COMP_NONE },
};

/* The compression an archive name asks for; -1 when it is no archive name. */
static int name_compression(const char *name, size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(archive_names); i++) {
		size_t l = strlen(archive_names[i].suffix);
		if (len >= l && !memcmp(name + len - l, archive_names[i].suffix, l))
			return (int)archive_names[i].comp;
	}
	return -1;
}

int archive_name_is_archive(const char *name)
{
	size_t len = strlen(name);
	const char *tmp = strstr(name, ".tmp.");
	if (tmp) {                   /* "<archive>.tmp.<pid>", left by a killed collect */
		const char *d = tmp + strlen(".tmp.");
		size_t digits = strspn(d, "0123456789");
		if (digits && !d[digits])
			len = (size_t)(tmp - name);
	}
	return name_compression(name, len) >= 0;
}

static int compression_of(const char *out, enum compression *comp)
{
	int c = name_compression(out, strlen(out));
	if (c < 0)
		return error("'%s': the archive name must end in .tar.zst, .tzst, .tar.gz, .tgz or .tar",
			     out);
	*comp = (enum compression)c;
	return 0;
}

/* zstd output: libarchive's zstd filter writes frames without a content
 * checksum, so a flipped bit that the decoder still accepts (a changed
 * back-reference can rename a member in the tar header and in MANIFEST
 * alike) would verify. The tar stream is compressed here instead, one frame
 * with its XXH64 checksum, which every zstd decoder checks. */
struct zsink {
	int fd;
	ZSTD_CStream *z;
	unsigned char *buf;         /* compressed bytes on their way to fd */
	size_t cap;
};

static int zsink_drain(struct zsink *s, ZSTD_inBuffer *in, ZSTD_EndDirective end)
{
	size_t left;
	do {
		ZSTD_outBuffer out = { s->buf, s->cap, 0 };
		left = ZSTD_compressStream2(s->z, &out, in, end);
		if (ZSTD_isError(left))
			return error("zstd: %s", ZSTD_getErrorName(left));
		if (out.pos && fileio_write_all(s->fd, s->buf, out.pos) < 0)
			return error_errno("cannot write the archive");
	} while (in->pos < in->size || (end == ZSTD_e_end && left));
	return 0;
}

static la_ssize_t zsink_write(struct archive *a, void *data, const void *buf, size_t len)
{
	(void)a;
	ZSTD_inBuffer in = { buf, len, 0 };
	return zsink_drain(data, &in, ZSTD_e_continue) < 0 ? -1 : (la_ssize_t)len;
}

static int zsink_close(struct archive *a, void *data)
{
	(void)a;
	ZSTD_inBuffer in = { NULL, 0, 0 };
	return zsink_drain(data, &in, ZSTD_e_end) < 0 ? ARCHIVE_FATAL : ARCHIVE_OK;
}

static int zsink_init(struct zsink *s, int fd)
{
	s->fd = fd;
	s->cap = ZSTD_CStreamOutSize();
	s->buf = xmalloc(s->cap);
	s->z = ZSTD_createCStream();
	if (!s->z ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(s->z, ZSTD_c_compressionLevel, 3)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(s->z, ZSTD_c_checksumFlag, 1)))
		return error("cannot set up zstd compression");
	return 0;
}

static void zsink_release(struct zsink *s)
{
	ZSTD_freeCStream(s->z);
	free(s->buf);
}

/* Open a for writing into fd: zstd through s, gzip through libarchive. */
static int open_output(struct archive *a, enum compression comp, int fd, struct zsink *s)
{
	int r = ARCHIVE_OK;
	if (comp == COMP_GZIP)
		r = archive_write_add_filter_gzip(a);
	if (r != ARCHIVE_OK)
		return error("cannot set up compression: %s", archive_error_string(a));
	if (comp != COMP_ZSTD)
		r = archive_write_open_fd(a, fd);
	else if (zsink_init(s, fd) < 0)
		return -1;
	else
		r = archive_write_open2(a, s, NULL, zsink_write, zsink_close, NULL);
	return r == ARCHIVE_OK ? 0 : error("%s", archive_error_string(a));
}

static int cmp_path(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* What no longer counts of trial t (below the experiment directory dir):
 * every place but its last launch's and, when that is not the trial
 * directory itself, what the launch there wrote (all but the trial's own
 * entries), as paths below dir into leave. */
static void superseded(const char *dir, const struct trial_rec *t, struct strvec *leave)
{
	struct strvec names = STRVEC_INIT;
	char *tdir = expdir_trial_dir(dir, t->seq);
	char id[EXPDIR_TRIAL_ID_SIZE];
	if (fileio_list_dir(tdir, NULL, NULL, &names) == 0) {
		for (size_t i = 0; i < names.n; i++) {
			const char *n = names.v[i];
			int place = expdir_place_valid(n);
			if (place ? !t->place || strcmp(n, t->place) : t->place && !expdir_trial_owns(n))
				strvec_pushf(leave, "trials/%s/%s", expdir_trial_id(t->seq, id), n);
		}
	}
	strvec_clear(&names);
	free(tdir);
}

/* Every trial's superseded entries (superseded()), sorted; none when the
 * journal cannot be read (a directory that is not an experiment's). */
static void superseded_all(const char *dir, struct strvec *leave)
{
	struct journal jr;
	if (!expdir_journal_exists(dir))
		return;
	int was_quiet = util_set_quiet(1);
	int r = journal_replay(&jr, dir);
	util_set_quiet(was_quiet);
	if (r < 0) {
		warning("collect: the journal cannot be read, every attempt's files are archived: %s",
			util_last_error());
		return;
	}
	for (size_t i = 0; i < jr.ntrials; i++)
		if (jr.trials[i].attempt)
			superseded(dir, &jr.trials[i], leave);
	journal_release(&jr);
	if (leave->n)
		qsort(leave->v, leave->n, sizeof(*leave->v), cmp_path);
}

/* Write every chunk the reader thread hands over. */
static int add_tree(struct collector *c, int rootfd, const struct stat *skip, size_t nskip,
		    const struct strvec *leave)
{
	struct archive_walk *w = archive_walk_start(rootfd, skip, nskip, leave, &c->manifest, c->st);
	if (!w)
		return -1;
	struct archive_walk_item *it;
	int r = 0;
	while (r == 0 && (it = archive_walk_next(w))) {
		if (it->rel)
			r = write_header(c, it->rel, &it->st);
		if (r == 0 && it->len && archive_write_data(c->a, it->data, it->len) != (la_ssize_t)it->len)
			r = error("cannot write into the archive: %s", archive_error_string(c->a));
		archive_walk_item_free(w, it);
	}
	return archive_walk_finish(w) < 0 ? -1 : r;
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
	struct zsink zs = { 0 };
	strbuf_init(&c.manifest, MANIFEST_MAX);
	char *tmp = xstrfmt("%s.tmp.%ld", out, (long)getpid());
	int r = -1, outfd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	struct stat ost;
	if (outfd < 0 || fstat(outfd, &ost) < 0) {
		error_errno("cannot create '%s'", tmp);
		goto out;
	}
	c.a = archive_write_new();
	enum compression comp = COMP_NONE;
	if (compression_of(out, &comp) < 0)
		goto out;
	/* GNU tar's format: long names when needed, and headers about twice as
	 * cheap to write as pax's for many small files */
	if (archive_form_set_format(c.a) < 0)
		goto out;
	archive_write_set_bytes_per_block(c.a, 64 * 1024);
	archive_write_set_bytes_in_last_block(c.a, 1);
	if (open_output(c.a, comp, outfd, &zs) < 0) {
		error("cannot open '%s' for writing", tmp);
		goto out;
	}
	struct stat skip[2] = { ost };
	size_t nskip = 1;
	if (stat(out, &skip[1]) == 0)     /* an earlier archive of the same name */
		nskip++;
	struct strvec leave = STRVEC_INIT;
	superseded_all(root, &leave);
	int walked = add_tree(&c, rootfd, skip, nskip, &leave);
	strvec_clear(&leave);
	if (walked < 0)
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
	zsink_release(&zs);
	if (outfd >= 0)
		close(outfd);
	if (r < 0)
		unlink(tmp);
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
	archive_walk_hex(d, dl, digest);
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

/* Whether some path of the sorted manifest lies below directory dir. */
static int is_parent(const char *dir, const struct member *want, size_t nw)
{
	size_t l = strlen(dir), lo = 0, hi = nw;
	while (lo < hi) {                  /* first path >= dir */
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(want[mid].path, dir) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < nw && !strncmp(want[i].path, dir, l); i++)
		if (want[i].path[l] == '/')
			return 1;
	return 0;
}

int archive_verify(const char *path, const char *pubkey, struct archive_verify_result *res)
{
	struct archive *a = archive_read_new();
	/* Only what collect writes, and only built in: filter_all would also
	 * run external programs (lrzip, lzop, grzip...) on a hostile archive,
	 * and a reader that answers ARCHIVE_WARN here would fall back to one. */
	if (archive_read_support_filter_none(a) != ARCHIVE_OK ||
	    archive_read_support_filter_gzip(a) != ARCHIVE_OK ||
	    archive_read_support_filter_zstd(a) != ARCHIVE_OK ||
	    archive_read_support_format_tar(a) != ARCHIVE_OK) {
		error("this libarchive cannot read gzip and zstd itself: %s", archive_error_string(a));
		archive_read_free(a);
		return -1;
	}
	if (archive_read_open_filename(a, path, IO_CHUNK) != ARCHIVE_OK) {
		error("cannot open archive '%s': %s", path, archive_error_string(a));
		archive_read_free(a);
		return -1;
	}
	struct member *have = NULL, *want = NULL;
	size_t nh = 0, nw = 0, alloc = 0;
	char **dirs = NULL;            /* directory members, relative, no trailing '/' */
	size_t ndirs = 0, dirs_alloc = 0;
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
		mode_t type = archive_entry_filetype(e);
		if (type == AE_IFDIR && (!strcmp(name, prefix) || (rel && (!*rel || !strcmp(rel, "/")))))
			continue;           /* the top directory itself */
		if (type == AE_IFDIR && rel) {
			/* collect writes none, tar writes one per directory: kept for a
			 * check that each is the parent of a file in MANIFEST */
			if (ndirs == dirs_alloc) {
				dirs_alloc = dirs_alloc ? 2 * dirs_alloc : 64;
				dirs = xrealloc(dirs, dirs_alloc * sizeof(*dirs));
			}
			size_t l = strlen(rel);
			dirs[ndirs++] = xstrndup(rel, l && rel[l - 1] == '/' ? l - 1 : l);
			continue;
		}
		/* anything else that is not a regular file was added */
		if (!rel || !*rel || type != AE_IFREG) {
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
	for (size_t i = 0; i < ndirs; i++)
		if (!is_parent(dirs[i], want, nw))
			problem(res, &res->added, "added", dirs[i]);
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
	/* every byte the digests do not cover: headers, padding, what follows */
	int f = archive_form_check(path, &res->problems);
	if (f < 0)
		goto out;
	res->form = f;
	r = res->differ || res->missing || res->added || res->form ||
	    (pubkey && res->signature != 1) ? 1 : 0;
out:
	for (size_t i = 0; i < ndirs; i++)
		free(dirs[i]);
	free(dirs);
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
