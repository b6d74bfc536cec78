/* strvec.c: NULL-terminated vectors of owned strings. */
#include "strvec.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *strvec_empty[1];

void strvec_init(struct strvec *sv)
{
	sv->v = (char **)strvec_empty;
	sv->n = 0;
	sv->alloc = 0;
}

void strvec_clear(struct strvec *sv)
{
	if (sv->alloc) {
		for (size_t i = 0; i < sv->n; i++)
			free(sv->v[i]);
		free(sv->v);
	}
	strvec_init(sv);
}

static void strvec_push_owned(struct strvec *sv, char *s)
{
	if (sv->n + 2 > sv->alloc) {
		size_t n = sv->alloc ? sv->alloc * 2 : 8;
		sv->v = xrealloc(sv->alloc ? sv->v : NULL, n * sizeof(*sv->v));
		sv->alloc = n;
	}
	sv->v[sv->n++] = s;
	sv->v[sv->n] = NULL;
}

void strvec_push(struct strvec *sv, const char *s)
{
	strvec_push_owned(sv, xstrdup(s));
}

void strvec_pushf(struct strvec *sv, const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		die("out of memory formatting a string");
	va_end(ap);
	strvec_push_owned(sv, s);
}

void strvec_pushv(struct strvec *sv, const char *const *v)
{
	for (; v && *v; v++)
		strvec_push(sv, *v);
}

void strvec_setenv(struct strvec *sv, const char *name, const char *value)
{
	size_t len = strlen(name);
	char *entry = xstrfmt("%s=%s", name, value);
	for (size_t i = 0; i < sv->n; i++) {
		if (!strncmp(sv->v[i], name, len) && sv->v[i][len] == '=') {
			free(sv->v[i]);
			sv->v[i] = entry;
			return;
		}
	}
	strvec_push_owned(sv, entry);
}

const char *strvec_getenv(const struct strvec *sv, const char *name)
{
	size_t len = strlen(name);
	for (size_t i = 0; i < sv->n; i++)
		if (!strncmp(sv->v[i], name, len) && sv->v[i][len] == '=')
			return sv->v[i] + len + 1;
	return NULL;
}

void strvec_split(struct strvec *sv, const char *s)
{
	while (*s) {
		while (*s == ' ' || *s == '\t' || *s == '\n')
			s++;
		const char *start = s;
		while (*s && *s != ' ' && *s != '\t' && *s != '\n')
			s++;
		if (s > start)
			strvec_push_owned(sv, xstrndup(start, (size_t)(s - start)));
	}
}

const char *const *strvec_view(const struct strvec *sv)
{
	return sv->v ? (const char *const *)sv->v : strvec_empty;
}
