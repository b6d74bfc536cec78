/* Unit tests for trialimg/data/tfrindex: a TFRecord file's index is made on
 * the first open and saved beside it, read (not the data) on the next,
 * rebuilt when the data file changes or the index is damaged, kept in the
 * cache directory when the place beside the file refuses it; a record
 * corrupted after its index was made is reported by file and record when
 * it is read. Data: copies of tests/fixtures/tfrecord. Running as root
 * here, a read-only directory cannot be made with chmod: a directory in
 * the index's place stands for a place that refuses the write. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "trialimg/data/dataset.h"
#include "trialimg/data/tfrecord.h"
#include "trialimg/data/tfrindex.h"
#include "util.h"

static char tmp[64];
static char *data, *shard, *ix; /* tmp/tfr, its train-00001-of-00002, that one's index */
static const struct ops_shape want = {28, 28, 1};

static void copy(const char *from, const char *to)
{
	char *buf;
	size_t len;
	cr_assert_eq(fileio_read(from, 1 << 24, &buf, &len), 0, "%s", util_last_error());
	cr_assert_eq(fileio_write_atomic(to, buf, len), 0);
	free(buf);
}

static void setup(void)
{
	const char *root = getenv("AAH_ROOT") ? getenv("AAH_ROOT") : ".";
	strcpy(tmp, "/tmp/aah-tfrindex-XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
	util_set_quiet(1);
	data = xstrfmt("%s/tfr", tmp);
	cr_assert_eq(fileio_mkdir_p(data, 0755), 0);
	static const char *names[] = {"train-00000-of-00002", "train-00001-of-00002",
				      "validation-00000-of-00001"};
	for (int i = 0; i < 3; i++) {
		char *from = xstrfmt("%s/tests/fixtures/tfrecord/%s", root, names[i]);
		char *to = xstrfmt("%s/%s", data, names[i]);
		copy(from, to);
		free(from);
		free(to);
	}
	shard = xstrfmt("%s/train-00001-of-00002", data);
	ix = xstrfmt("%s.aah-index", shard);
	char *cache = xstrfmt("%s/cache", tmp);
	setenv("AAH_CACHE_DIR", cache, 1);
	free(cache);
}

static void teardown(void)
{
	fileio_remove_tree(tmp);
	free(data);
	free(shard);
	free(ix);
}

TestSuite(tfrindex, .init = setup, .fini = teardown);

static struct stat stat_of(const char *p)
{
	struct stat st;
	cr_assert_eq(stat(p, &st), 0, "stat '%s'", p);
	return st;
}

static void set_mtime(const char *p, struct timespec t)
{
	struct timespec ts[2] = {t, t};
	cr_assert_eq(utimensat(AT_FDCWD, p, ts, 0), 0);
}

static void flip(const char *p, long at)
{
	int fd = open(p, O_RDWR);
	unsigned char c;
	cr_assert(fd >= 0);
	cr_assert_eq(pread(fd, &c, 1, at), 1);
	c ^= 0x10;
	cr_assert_eq(pwrite(fd, &c, 1, at), 1);
	close(fd);
}

static enum tfrindex_origin load(const char *path, size_t want_n)
{
	struct tfrindex x;
	cr_assert_eq(tfrindex_load(&x, path), 0, "%s", util_last_error());
	cr_assert_eq(x.n, want_n);
	enum tfrindex_origin o = x.origin;
	tfrindex_release(&x);
	return o;
}

Test(tfrindex, made_on_first_open_and_read_on_the_second)
{
	struct dataset d;
	cr_assert_eq(dataset_open(&d, "auto", data, 1, &want), 0, "%s", util_last_error());
	cr_assert_eq(d.n, 40);
	dataset_release(&d);
	struct stat first = stat_of(ix);
	char *ix0 = xstrfmt("%s/train-00000-of-00002.aah-index", data);
	cr_assert(fileio_exists(ix0));
	/* the DALI columns: record 0 at byte 0, each next one where the last ends */
	char *text;
	size_t len;
	cr_assert_eq(fileio_read(ix, 0, &text, &len), 0);
	cr_assert_eq(strncmp(text, "aah-tfrecord-index/1 size=21072 mtime=", 38), 0, "%s", text);
	cr_assert_not_null(strstr(text, " records=20\n0 "), "%s", text);
	free(text);
	cr_assert_eq(load(shard, 20), TFRINDEX_READ);

	/* the second open reads the index, not the data: a record corrupted
	 * with the file's size and mtime kept is not seen at open ... */
	struct tfrindex x;
	cr_assert_eq(tfrindex_load(&x, shard), 0);
	long r3 = (long)x.r[3].offset;
	tfrindex_release(&x);
	struct stat before = stat_of(shard);
	flip(shard, r3 + 12 + 100);
	set_mtime(shard, before.st_mtim);
	cr_assert_eq(dataset_open(&d, "auto", data, 1, &want), 0, "%s", util_last_error());
	struct stat second = stat_of(ix);
	cr_assert_eq(second.st_ino, first.st_ino, "the index was written again");
	cr_assert_eq(second.st_mtim.tv_nsec, first.st_mtim.tv_nsec);
	/* ... but when the sample is read, naming the file and the record */
	float px[784];
	cr_assert_eq(d.get(&d, 20 + 3, px, 1, 5), -1);
	char *msg = xstrfmt("'%s': record 3 at byte %ld: the data's checksum does not match", shard,
			    r3);
	cr_assert_not_null(strstr(util_last_error(), msg), "%s", util_last_error());
	cr_assert_eq(d.get(&d, 20 + 4, px, 1, 5), 0, "%s", util_last_error());
	dataset_release(&d);
	free(msg);
	free(ix0);
}

Test(tfrindex, rebuilt_when_the_data_file_changes)
{
	cr_assert_eq(load(shard, 20), TFRINDEX_MADE);
	/* the same bytes with another mtime: stale, rebuilt, then read */
	struct stat st = stat_of(shard);
	st.st_mtim.tv_sec -= 100;
	set_mtime(shard, st.st_mtim);
	cr_assert_eq(load(shard, 20), TFRINDEX_MADE);
	cr_assert_not_null(strstr(util_last_error(), "is stale"), "%s", util_last_error());
	cr_assert_eq(load(shard, 20), TFRINDEX_READ);
	/* another file in its place, its mtime kept: the size tells */
	char *other = xstrfmt("%s/train-00000-of-00002", data);
	char *buf, *more;
	size_t len, len2;
	cr_assert_eq(fileio_read(shard, 0, &buf, &len), 0);
	cr_assert_eq(fileio_read(other, 0, &more, &len2), 0);
	buf = xrealloc(buf, len + len2);
	memcpy(buf + len, more, len2);
	st = stat_of(shard);
	cr_assert_eq(fileio_write_atomic(shard, buf, len + len2), 0);
	set_mtime(shard, st.st_mtim);
	cr_assert_eq(load(shard, 40), TFRINDEX_MADE);
	cr_assert_eq(load(shard, 40), TFRINDEX_READ);
	free(buf);
	free(more);
	free(other);
}

/* Writes text to the index, opens: rebuilt with a warning holding `why`. */
static void damaged(const char *text, size_t len, const char *why)
{
	cr_assert_eq(fileio_write_atomic(ix, text, len), 0);
	cr_assert_eq(load(shard, 20), TFRINDEX_MADE, "index '%.*s' was trusted", (int)len, text);
	cr_assert_not_null(strstr(util_last_error(), why), "%s (wanted '%s')", util_last_error(),
			   why);
	cr_assert_eq(load(shard, 20), TFRINDEX_READ);
}

Test(tfrindex, rebuilt_when_the_index_is_damaged)
{
	cr_assert_eq(load(shard, 20), TFRINDEX_MADE);
	char *good;
	size_t len;
	cr_assert_eq(fileio_read(ix, 0, &good, &len), 0);
	char *bad = xmalloc(len);
	/* record 0's label changed: the records still tile, the checksum tells */
	memcpy(bad, good, len);
	char *label = strchr(strchr(strchr(bad, '\n') + 1, ' ') + 1, ' ') + 1;
	*label = *label == '9' ? '8' : (char)(*label + 1);
	damaged(bad, len, "its checksum does not match");
	/* cut short, and cut inside its last line */
	damaged(good, len / 2, "is damaged at line");
	damaged(good, len - 3, "(a truncated index?)");
	damaged("", 0, "its header is not");
	damaged("garbage\n", 8, "its header is not");
	/* a whole, checksummed index whose records do not tile the file */
	struct tfrindex_rec r[2] = {{0, 100, 1, 0, 10}, {100, 50, 1, 0, 10}};
	struct stat st = stat_of(shard);
	int64_t mt = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	size_t n;
	char *t = tfrindex_format(r, 2, (uint64_t)st.st_size, mt, &n);
	damaged(t, n, "its records do not tile the file");
	free(t);
	/* every strict prefix of a good index is refused */
	for (size_t k = 0; k < len; k += 7) {
		struct tfrindex_rec *out;
		size_t cnt, line;
		const char *why;
		cr_assert_eq(tfrindex_parse(good, k, (uint64_t)st.st_size, mt, &out, &cnt, &why, &line),
			     -1, "prefix of %zu bytes", k);
	}
	free(good);
	free(bad);
}

Test(tfrindex, kept_in_the_cache_when_refused_beside_the_file)
{
	cr_assert_eq(mkdir(ix, 0755), 0);
	cr_assert_eq(load(shard, 20), TFRINDEX_MADE);
	char *cached = tfrindex_cache_path(shard);
	cr_assert_not_null(cached);
	cr_assert_eq(strncmp(cached, tmp, strlen(tmp)), 0, "%s", cached);
	cr_assert(fileio_exists(cached), "no '%s'", cached);
	struct tfrindex x;
	cr_assert_eq(tfrindex_load(&x, shard), 0);
	cr_assert_eq(x.origin, TFRINDEX_READ);
	cr_assert_str_eq(x.where, cached);
	tfrindex_release(&x);
	/* keyed by the path: another path's index is another file */
	char *other = xstrfmt("%s/train-00000-of-00002", data), *oc = tfrindex_cache_path(other);
	cr_assert_str_neq(oc, cached);
	/* with nowhere to save it, the index is made on every open, and said so */
	setenv("AAH_CACHE_DIR", "/proc/aah-no-such-cache", 1);
	cr_assert_eq(unlink(cached), 0);
	cr_assert_eq(load(shard, 20), TFRINDEX_UNSAVED);
	cr_assert_not_null(strstr(util_last_error(), "cannot save the index"), "%s",
			   util_last_error());
	free(other);
	free(oc);
	free(cached);
}

Test(tfrindex, files_indexed_in_parallel_keep_their_order_and_the_first_error)
{
	/* 12 files (copies of the two train shards): threads index them at once,
	 * the samples stay in file order */
	char *many = xstrfmt("%s/many", tmp);
	cr_assert_eq(fileio_mkdir_p(many, 0755), 0);
	for (int k = 0; k < 12; k++) {
		char *from = xstrfmt("%s/train-%05d-of-00002", data, k % 2);
		char *to = xstrfmt("%s/train-%05d-of-00012", many, k);
		copy(from, to);
		free(from);
		free(to);
	}
	struct dataset a, b;
	cr_assert_eq(dataset_open(&a, "auto", data, 1, &want), 0, "%s", util_last_error());
	for (int pass = 0; pass < 2; pass++) { /* made, then read */
		cr_assert_eq(dataset_open(&b, "auto", many, 1, &want), 0, "%s", util_last_error());
		cr_assert_eq(b.n, 6 * a.n);
		for (int i = 0; i < b.n; i++) {
			cr_assert_eq(b.labels[i], a.labels[i % a.n], "sample %d", i);
			cr_assert_eq(b.tfr->s[i].file, (uint32_t)(i / 20), "sample %d", i);
			cr_assert_eq(b.tfr->s[i].offset, a.tfr->s[i % a.n].offset, "sample %d", i);
		}
		dataset_release(&b);
	}
	dataset_release(&a);
	/* files 3, 7 and 10 corrupt (no index yet): the error is file 3's,
	 * however the threads' work interleaves */
	for (int round = 0; round < 5; round++) {
		int bad[] = {10, 7, 3};
		for (int k = 0; k < 3; k++) {
			char *f = xstrfmt("%s/train-%05d-of-00012", many, bad[k]), *x = xstrfmt("%s.aah-index", f);
			unlink(x);
			if (round == 0)
				flip(f, 12 + 50);
			free(f);
			free(x);
		}
		struct dataset d;
		cr_assert_eq(dataset_open(&d, "auto", many, 1, &want), -1);
		char *msg = xstrfmt("'%s/train-00003-of-00012': record 0 at byte 0: the data's checksum",
				    many);
		cr_assert_not_null(strstr(util_last_error(), msg), "%s", util_last_error());
		free(msg);
	}
	free(many);
}

struct loading_thread {
	struct tfrindex x;
	int rc;
};

static void *load_shard(void *arg)
{
	struct loading_thread *t = arg;
	t->rc = tfrindex_load(&t->x, shard);
	return NULL;
}

Test(tfrindex, a_file_another_process_is_indexing_is_waited_for_not_read_again)
{
	/* the other process (a rank of the same trial, another trial) holds
	 * the data file's flock while it indexes: this test stands in for it */
	int other = open(shard, O_RDONLY);
	cr_assert(other >= 0);
	cr_assert_eq(flock(other, LOCK_EX), 0);
	struct loading_thread t;
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, load_shard, &t), 0);
	usleep(200 * 1000); /* without the lock the thread would index the file meanwhile */
	/* "its" index: made of a copy with the same bytes and mtime */
	char *twin_dir = xstrfmt("%s/twin", tmp), *twin = xstrfmt("%s/x.tfrecord", twin_dir);
	char *twin_ix = xstrfmt("%s.aah-index", twin);
	cr_assert_eq(fileio_mkdir_p(twin_dir, 0755), 0);
	copy(shard, twin);
	set_mtime(twin, stat_of(shard).st_mtim);
	cr_assert_eq(load(twin, 20), TFRINDEX_MADE);
	cr_assert_eq(rename(twin_ix, ix), 0);
	cr_assert_eq(flock(other, LOCK_UN), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(t.rc, 0, "%s", util_last_error());
	cr_assert_eq(t.x.origin, TFRINDEX_READ, "the file was indexed twice");
	cr_assert_eq(t.x.n, 20);
	tfrindex_release(&t.x);
	close(other);
	free(twin_dir);
	free(twin);
	free(twin_ix);
}
