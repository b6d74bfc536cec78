/* strbuf.c: growable text buffer with a size cap. */
#include "strbuf.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char strbuf_empty[1];

void strbuf_init(struct strbuf *sb, size_t cap)
{
	sb->buf = strbuf_empty;
	sb->len = 0;
	sb->alloc = 0;
	sb->cap = cap;
	sb->overflow = 0;
}

void strbuf_release(struct strbuf *sb)
{
	if (sb->alloc)
		free(sb->buf);
	strbuf_init(sb, sb->cap);
}

char *strbuf_detach(struct strbuf *sb, size_t *len)
{
	char *out = sb->alloc ? sb->buf : xstrdup("");
	if (len)
		*len = sb->len;
	strbuf_init(sb, sb->cap);
	return out;
}

void strbuf_reset(struct strbuf *sb)
{
	sb->len = 0;
	if (sb->alloc)
		sb->buf[0] = '\0';
	sb->overflow = 0;
}

static size_t strbuf_room(struct strbuf *sb, size_t want)
{
	size_t cap = sb->cap ? sb->cap : STRBUF_DEFAULT_CAP;
	if (sb->len + want > cap) {
		sb->overflow = 1;
		want = cap - sb->len;
	}
	if (!sb->buf)
		strbuf_init(sb, sb->cap);
	if (sb->len + want + 1 > sb->alloc) {
		size_t n = sb->alloc ? sb->alloc : 64;
		while (n < sb->len + want + 1)
			n *= 2;
		char *p = sb->alloc ? sb->buf : NULL;
		p = xrealloc(p, n);
		if (!sb->alloc)
			p[0] = '\0';
		sb->buf = p;
		sb->alloc = n;
	}
	return want;
}

void strbuf_add(struct strbuf *sb, const void *data, size_t len)
{
	len = strbuf_room(sb, len);
	memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
}

void strbuf_addstr(struct strbuf *sb, const char *s)
{
	strbuf_add(sb, s, strlen(s));
}

void strbuf_addch(struct strbuf *sb, char c)
{
	strbuf_add(sb, &c, 1);
}

void strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
{
	va_list cp;
	va_copy(cp, ap);
	int n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return;
	size_t want = strbuf_room(sb, (size_t)n);
	if (want < (size_t)n) {
		char *tmp = xmalloc((size_t)n + 1);
		vsnprintf(tmp, (size_t)n + 1, fmt, ap);
		memcpy(sb->buf + sb->len, tmp, want);
		free(tmp);
	} else {
		vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	}
	sb->len += want;
	sb->buf[sb->len] = '\0';
}

void strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
}

void strbuf_addstr_html(struct strbuf *sb, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': strbuf_addstr(sb, "&lt;"); break;
		case '>': strbuf_addstr(sb, "&gt;"); break;
		case '&': strbuf_addstr(sb, "&amp;"); break;
		case '"': strbuf_addstr(sb, "&quot;"); break;
		case '\'': strbuf_addstr(sb, "&#39;"); break;
		default: strbuf_addch(sb, *s);
		}
	}
}

void strbuf_trim_trailing(struct strbuf *sb)
{
	while (sb->len && (sb->buf[sb->len - 1] == ' ' || sb->buf[sb->len - 1] == '\n' ||
			   sb->buf[sb->len - 1] == '\t' || sb->buf[sb->len - 1] == '\r'))
		sb->buf[--sb->len] = '\0';
}

const char *strbuf_str(const struct strbuf *sb)
{
	return sb->buf ? sb->buf : "";
}
