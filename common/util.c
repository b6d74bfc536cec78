/* util.c: error reporting, checked allocation and small helpers. */
#include "util.h"

#include <dlfcn.h> /* dlsym */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *progname = "aah";
static int quiet;
static _Thread_local char last_error[UTIL_ERROR_MAX]; /* per thread: see util.h */
static _Thread_local int held;                         /* util_hold_errors */

void util_set_progname(const char *name)
{
	progname = name;
}

int util_set_quiet(int q)
{
	int was = quiet;
	quiet = q;
	return was;
}

const char *util_last_error(void)
{
	return last_error;
}

int util_hold_errors(int hold)
{
	int old = held;
	held = hold;
	return old;
}

int util_dlsym(void *lib, const char *name, void *fnptr)
{
	void *p = dlsym(lib, name);
	if (!p)
		return -1;
	memcpy(fnptr, &p, sizeof(p));
	return 0;
}

/* Keeps the message as this thread's last error and prints it when `print`:
 * a fatal one always, an error unless quiet or held, a warning unless quiet. */
static void report(const char *prefix, int print, const char *fmt, va_list ap, const char *suffix)
{
	/* formatted aside first: an argument may be util_last_error() itself */
	char msg[sizeof(last_error)];
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (suffix && n >= 0 && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - (size_t)n, ": %s", suffix);
	memcpy(last_error, msg, sizeof(msg));
	if (print)
		fprintf(stderr, "%s: %s%s\n", progname, prefix, last_error);
}

int error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	report("error: ", !quiet && !held, fmt, ap, NULL);
	va_end(ap);
	return -1;
}

int error_errno(const char *fmt, ...)
{
	int e = errno;
	va_list ap;
	va_start(ap, fmt);
	report("error: ", !quiet && !held, fmt, ap, strerror(e));
	va_end(ap);
	errno = e;
	return -1;
}

void warning(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	report("warning: ", !quiet, fmt, ap, NULL);
	va_end(ap);
}

void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	report("fatal: ", 1, fmt, ap, NULL);
	va_end(ap);
	exit(2);
}

void die_errno(const char *fmt, ...)
{
	int e = errno;
	va_list ap;
	va_start(ap, fmt);
	report("fatal: ", 1, fmt, ap, strerror(e));
	va_end(ap);
	exit(2);
}

void bug_at(const char *file, int line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: BUG: %s:%d: %s\n", progname, file, line, msg);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		die("out of memory allocating %zu bytes", n);
	return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
	if (!p)
		die("out of memory allocating %zu x %zu bytes", nmemb, size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		die("out of memory allocating %zu bytes", n);
	return q;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *p = xmalloc(len + 1);
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

char *xstrfmt(const char *fmt, ...)
{
	va_list ap;
	char *out;
	va_start(ap, fmt);
	int n = vasprintf(&out, fmt, ap);
	va_end(ap);
	if (n < 0)
		die("out of memory formatting a string");
	return out;
}

int xstrlcpy(char *dst, const char *src, size_t size)
{
	size_t len = strlen(src);
	if (!size)
		return -1;
	if (len >= size) {
		memcpy(dst, src, size - 1);
		dst[size - 1] = '\0';
		return -1;
	}
	memcpy(dst, src, len + 1);
	return 0;
}

double util_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

double util_monotonic(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int util_parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;
	if (!s || !*s)
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int util_parse_double(const char *s, double *out)
{
	char *end;
	double v;
	if (!s || !*s)
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}

size_t util_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 64 || lb > 64)
		return la > lb ? la : lb;
	size_t row[65];
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
			size_t best = diag + cost;
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}
