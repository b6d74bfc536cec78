/* fileio.c: crash-safe file writes, whole-file reads, directories, locks. */
#include "fileio.h"
#include "strvec.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int fileio_read(const char *path, size_t max, char **out, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return error_errno("cannot open '%s'", path);
	if (fstat(fd, &st) < 0) {
		close(fd);
		return error_errno("cannot stat '%s'", path);
	}
	if (!max)
		max = (size_t)64 << 20;
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		return error("'%s' is a directory, not a file", path);
	}
	if ((size_t)st.st_size > max) {
		close(fd);
		return error("'%s' is too large (%lld bytes, limit %zu)", path,
			     (long long)st.st_size, max);
	}
	/* A file of /proc says size 0: one read of a page, not doubling from a byte. */
	size_t cap = st.st_size ? (size_t)st.st_size + 1 : 4096, n = 0;
	char *buf = xmalloc(cap);
	for (;;) {
		if (n + 1 >= cap) {
			if (cap > max) {
				free(buf);
				close(fd);
				return error("'%s' is too large (limit %zu bytes)", path, max);
			}
			cap *= 2;
			buf = xrealloc(buf, cap);
		}
		ssize_t r = read(fd, buf + n, cap - n - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			free(buf);
			close(fd);
			return error_errno("cannot read '%s'", path);
		}
		if (!r)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*out = buf;
	if (len)
		*len = n;
	return 0;
}

int fileio_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int fileio_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return error_errno("cannot open directory '%s'", dir);
	if (fsync(fd) < 0 && errno != EINVAL) {
		close(fd);
		return error_errno("cannot fsync directory '%s'", dir);
	}
	close(fd);
	return 0;
}

int fileio_sync_fs(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return error_errno("cannot open '%s'", path);
	int r = syncfs(fd);
	int err = errno;
	close(fd);
	errno = err;
	return r < 0 ? error_errno("cannot sync the filesystem of '%s'", path) : 0;
}

int fileio_write_atomic(const char *path, const void *data, size_t len)
{
	return fileio_write_atomic_flags(path, data, len, 0);
}

/* Test hook (docs/design-notes.md, "Test hooks"): with
 * AAH_FAULT_STOP_WRITING=<name>, a process writing a file of that name
 * stops itself (SIGSTOP) halfway through its temp file, after saying so on
 * stderr: the event a test waits for before it kills the process mid-write.
 * Returns how much to write before the stop: all of len when not asked. */
static size_t fault_stop_at(const char *path, size_t len)
{
	const char *want = getenv("AAH_FAULT_STOP_WRITING");
	const char *base = strrchr(path, '/');
	return want && *want && !strcmp(want, base ? base + 1 : path) ? len / 2 : len;
}

static void fault_stop(const char *tmp)
{
	fprintf(stderr, "aah: fault hook: stopped while writing '%s'\n", tmp);
	fflush(stderr);
	raise(SIGSTOP);
}

int fileio_write_atomic_flags(const char *path, const void *data, size_t len, unsigned flags)
{
	int sync = !(flags & FILEIO_NOSYNC);
	char *tmp = xstrfmt("%s.tmp.%ld", path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		int r = error_errno("cannot create '%s'", tmp);
		free(tmp);
		return r;
	}
	size_t first = fault_stop_at(path, len);
	int w = fileio_write_all(fd, data, first);
	if (w == 0 && first < len) {
		fault_stop(tmp);
		w = fileio_write_all(fd, (const char *)data + first, len - first);
	}
	if (w < 0 || (sync && fsync(fd) < 0)) {
		error_errno("cannot write '%s'", tmp);
		close(fd);
		unlink(tmp);
		free(tmp);
		return -1;
	}
	close(fd);
	if (rename(tmp, path) < 0) {
		error_errno("cannot rename '%s' to '%s'", tmp, path);
		unlink(tmp);
		free(tmp);
		return -1;
	}
	free(tmp);
	if (!sync)
		return 0;
	char *copy = xstrdup(path);
	int r = fileio_fsync_dir(dirname(copy));
	free(copy);
	return r;
}

int fileio_copy(const char *from, const char *to, unsigned flags)
{
	int in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return error_errno("cannot open '%s'", from);
	char *tmp = xstrfmt("%s.tmp.%ld", to, (long)getpid());
	int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		int r = error_errno("cannot create '%s'", tmp);
		close(in);
		free(tmp);
		return r;
	}
	size_t cap = (size_t)1 << 20;
	char *buf = xmalloc(cap);
	off_t total = 0, whole = 0;    /* bytes copied; those up to the last '\n' */
	int r = 0;
	for (;;) {
		ssize_t n = read(in, buf, cap);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = error_errno("cannot read '%s'", from);
			break;
		}
		if (!n)
			break;
		for (ssize_t i = n; i > 0; i--)
			if (buf[i - 1] == '\n') {
				whole = total + i;
				break;
			}
		if (fileio_write_all(out, buf, (size_t)n) < 0) {
			r = error_errno("cannot write '%s'", tmp);
			break;
		}
		total += n;
	}
	free(buf);
	close(in);
	if (r == 0 && (flags & FILEIO_WHOLE_LINES) && ftruncate(out, whole) < 0)
		r = error_errno("cannot cut '%s' to its whole lines", tmp);
	if (r == 0 && !(flags & FILEIO_NOSYNC) && fsync(out) < 0)
		r = error_errno("cannot write '%s'", tmp);
	close(out);
	if (r == 0 && rename(tmp, to) < 0)
		r = error_errno("cannot rename '%s' to '%s'", tmp, to);
	if (r < 0)
		unlink(tmp);
	free(tmp);
	return r;
}

int fileio_append_line(const char *path, const char *line)
{
	return fileio_append_line_flags(path, line, 0);
}

int fileio_append_line_flags(const char *path, const char *line, unsigned flags)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return error_errno("cannot open '%s' for appending", path);
	size_t n = strlen(line);
	char *buf = xmalloc(n + 1);
	memcpy(buf, line, n);
	buf[n] = '\n';
	/* One write() so concurrent appenders never interleave within a line. */
	int r = fileio_write_all(fd, buf, n + 1);
	free(buf);
	if (r < 0 || (!(flags & FILEIO_NOSYNC) && fdatasync(fd) < 0)) {
		error_errno("cannot append to '%s'", path);
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

int fileio_mkdir_p(const char *path, unsigned mode)
{
	/* Most calls find every parent there (a trial's files, thousands a
	 * minute at scale: docs/scale.md): one mkdir, not one per component. */
	if (mkdir(path, mode) == 0 || errno == EEXIST)
		return 0;
	if (errno != ENOENT)
		return error_errno("cannot create directory '%s'", path);
	char *p = xstrdup(path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST) {
			error_errno("cannot create directory '%s'", p);
			free(p);
			return -1;
		}
		*s = '/';
	}
	if (mkdir(p, mode) < 0 && errno != EEXIST) {
		error_errno("cannot create directory '%s'", p);
		free(p);
		return -1;
	}
	free(p);
	return 0;
}

int fileio_exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

int fileio_remove_tree(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : error_errno("cannot stat '%s'", path);
	if (!S_ISDIR(st.st_mode))
		return unlink(path) < 0 ? error_errno("cannot remove '%s'", path) : 0;
	DIR *d = opendir(path);
	if (!d)
		return error_errno("cannot open directory '%s'", path);
	struct dirent *e;
	int r = 0;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char *child = xstrfmt("%s/%s", path, e->d_name);
		if (fileio_remove_tree(child) < 0)
			r = -1;
		free(child);
	}
	closedir(d);
	if (rmdir(path) < 0)
		return error_errno("cannot remove directory '%s'", path);
	return r;
}

int fileio_lock(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return error_errno("cannot open lock file '%s'", path);
	while (flock(fd, LOCK_EX) < 0) {
		if (errno == EINTR)
			continue;
		error_errno("cannot lock '%s'", path);
		close(fd);
		return -1;
	}
	return fd;
}

void fileio_unlock(int fd)
{
	if (fd >= 0) {
		flock(fd, LOCK_UN);
		close(fd);
	}
}

char *fileio_self_exe(void)
{
	char *p = realpath("/proc/self/exe", NULL);
	if (!p)
		error_errno("cannot find this program's path in /proc/self/exe");
	return p;
}

char *fileio_absolute(const char *path)
{
	if (path[0] == '/')
		return xstrdup(path);
	char cwd[4096];
	if (!getcwd(cwd, sizeof(cwd)))
		return xstrdup(path);
	return xstrfmt("%s/%s", cwd, path);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int fileio_list_dir(const char *dir, int (*keep)(const char *path, const char *name, void *arg),
		    void *arg, struct strvec *names)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	size_t first = names->n;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (keep) {
			char *p = xstrfmt("%s/%s", dir, de->d_name);
			int ok = keep(p, de->d_name, arg);
			free(p);
			if (!ok)
				continue;
		}
		strvec_push(names, de->d_name);
	}
	closedir(d);
	if (names->n > first)
		qsort(names->v + first, names->n - first, sizeof(*names->v), cmp_name);
	return 0;
}
