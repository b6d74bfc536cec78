/* fileio.h: crash-safe file writes (temp + fsync + rename), whole-file reads,
 * directory helpers and advisory locks. */
#ifndef AAH_FILEIO_H
#define AAH_FILEIO_H

#include <stddef.h>

/* Read a whole file (at most max bytes; 0 = 64 MiB). The caller frees *out,
 * which is NUL-terminated. */
int fileio_read(const char *path, size_t max, char **out, size_t *len);
/* Write data to path atomically: path.tmp.<pid>, fsync, rename, fsync dir. */
int fileio_write_atomic(const char *path, const void *data, size_t len);
/* Append one line (a '\n' is added) with O_APPEND and fsync it. */
int fileio_append_line(const char *path, const char *line);

/* FILEIO_NOSYNC: still atomic against a crashed process (temp + rename, one
 * write per line), but not forced to disk now: for data whose loss in a
 * power failure costs nothing (it is rewritten), or that a later synced
 * write to the same file makes durable. */
#define FILEIO_NOSYNC 1u
int fileio_write_atomic_flags(const char *path, const void *data, size_t len, unsigned flags);
int fileio_append_line_flags(const char *path, const char *line, unsigned flags);
/* Copy file from to file to, atomically (to's temp, then rename), in
 * pieces (any size). FILEIO_WHOLE_LINES: only up to from's last '\n' (a
 * line being appended as it is read is left out). */
#define FILEIO_WHOLE_LINES 2u
int fileio_copy(const char *from, const char *to, unsigned flags);
/* write(2) all of data, retrying on EINTR and short writes; -1 with errno. */
int fileio_write_all(int fd, const void *data, size_t len);
/* mkdir -p with the given mode. */
int fileio_mkdir_p(const char *path, unsigned mode);
int fileio_fsync_dir(const char *dir);
/* Make everything written on the filesystem that holds path durable
 * (syncfs(2)): one flush for many files written FILEIO_NOSYNC. */
int fileio_sync_fs(const char *path);
int fileio_exists(const char *path);
/* Remove a directory tree (no symlinks followed). */
int fileio_remove_tree(const char *path);
/* Exclusive advisory lock on path (created if missing). Returns an fd to
 * pass to fileio_unlock, or -1. */
int fileio_lock(const char *path);
void fileio_unlock(int fd);
/* Absolute form of a path (need not exist). The caller frees the result. */
char *fileio_absolute(const char *path);
/* The absolute path of the running program (/proc/self/exe resolved), or
 * NULL with the error set. The caller frees it. */
char *fileio_self_exe(void);

struct strvec;
/* The one sorted listing of a directory: the names of dir's entries that
 * keep accepts (NULL: every one; it gets the entry's path and name), those
 * starting with '.' left out, sorted by strcmp, appended to *names. -1
 * when dir cannot be opened, with errno set and no message: the caller
 * says what that means to it. */
int fileio_list_dir(const char *dir, int (*keep)(const char *path, const char *name, void *arg),
		    void *arg, struct strvec *names);

#endif
