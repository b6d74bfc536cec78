/* util.h: error reporting, checked allocation and small helpers shared by
 * aah-runner and aah-trial. */
#ifndef AAH_UTIL_H
#define AAH_UTIL_H

#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
#define noreturn [[noreturn]] /* the cuda backend's kernel families are C++ */
extern "C" {
#else
#include <stdnoreturn.h>
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Library code reports and returns -1: `return error("cannot open '%s'", p);`
 *
 * error(), error_errno() and warning() print the message on stderr and keep
 * it as the calling thread's last error (a _Thread_local buffer):
 * util_last_error() never returns another thread's message. So a caller
 * passes a callee's words on (`error("cannot submit: %s", util_last_error())`)
 * only when the callee failed on the same thread. Work done on another
 * thread hands its message over in its own result: the worker copies
 * util_last_error() into the shared object (as the data loader's
 * loader_batch.why, UTIL_ERROR_MAX bytes so it arrives whole) and the
 * consumer reads it after the lock or the join that hands the result over. */
enum { UTIL_ERROR_MAX = 1024 }; /* longest kept message, with its NUL */
int error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Like error() with ": strerror(errno)" appended. */
int error_errno(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Only main() and cmd_*() may die. */
noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
noreturn void die_errno(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
noreturn void bug_at(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define BUG(...) bug_at(__FILE__, __LINE__, __VA_ARGS__)

/* Program name used as the message prefix ("aah-runner", "aah-trial"). */
void util_set_progname(const char *name);
/* Silence errors and warnings (tests that provoke them on purpose; code
 * that tries something that may fail). It holds for every thread (set it
 * before starting any); die() prints anyway. Returns the value before, for
 * the caller to restore: `int was = util_set_quiet(1); ... util_set_quiet(was);`
 * nests, so that a library call never turns a caller's silence off. */
int util_set_quiet(int quiet);
/* This thread's last message from error(), error_errno() or warning() (""
 * before the first); valid until this thread's next one. */
const char *util_last_error(void);
/* While held (hold != 0), this thread's error() and error_errno() keep their
 * message as util_last_error() without printing it, so a caller can report
 * it once with its own context ("c.yml:2:18: 'searchSpacePath': <message>").
 * Warnings still print. Returns the previous setting, to restore. */
int util_hold_errors(int hold);

/* dlsym(lib, name) stored into the function pointer at fnptr (an object
 * pointer turned into a function pointer, as POSIX allows): 0, or -1 when
 * lib has no such symbol. */
int util_dlsym(void *lib, const char *name, void *fnptr);

/* Allocation that never returns NULL (dies on out-of-memory). */
void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* Formatted allocation; the caller owns the result. */
char *xstrfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Bounded copy that always terminates; returns -1 when truncated. */
int xstrlcpy(char *dst, const char *src, size_t size);

/* Wall clock in seconds since the epoch, and a monotonic clock in seconds. */
double util_now(void);
double util_monotonic(void);

/* Strict number parsing: the whole string must be a number in range. */
int util_parse_long(const char *s, long min, long max, long *out);
int util_parse_double(const char *s, double *out);

/* Levenshtein distance of two short strings (for "did you mean"). */
size_t util_edit_distance(const char *a, const char *b);

#ifdef __cplusplus
}
#undef noreturn
#endif

#endif
