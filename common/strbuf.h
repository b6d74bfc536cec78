/* strbuf.h: growable, always NUL-terminated text buffer with a size cap. */
#ifndef AAH_STRBUF_H
#define AAH_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

struct strbuf {
	char *buf;      /* NUL-terminated; never NULL after init */
	size_t len;     /* bytes used, excluding the NUL */
	size_t alloc;   /* bytes allocated */
	size_t cap;     /* hard limit on len; 0 = STRBUF_DEFAULT_CAP */
	int overflow;   /* set once an append was cut at the cap */
};

#define STRBUF_DEFAULT_CAP ((size_t)1 << 30)
#define STRBUF_INIT { NULL, 0, 0, 0, 0 }

void strbuf_init(struct strbuf *sb, size_t cap);
void strbuf_release(struct strbuf *sb);
/* Hand the buffer to the caller (who frees it) and reset sb. */
char *strbuf_detach(struct strbuf *sb, size_t *len);
void strbuf_reset(struct strbuf *sb);
void strbuf_add(struct strbuf *sb, const void *data, size_t len);
void strbuf_addstr(struct strbuf *sb, const char *s);
void strbuf_addch(struct strbuf *sb, char c);
void strbuf_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap);
/* Append s with HTML special characters escaped. */
void strbuf_addstr_html(struct strbuf *sb, const char *s);
void strbuf_trim_trailing(struct strbuf *sb);
/* Return the current contents ("" for a fresh buffer). */
const char *strbuf_str(const struct strbuf *sb);

#endif
