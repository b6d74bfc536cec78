/* strvec.h: NULL-terminated vectors of owned strings (argv, envp). */
#ifndef AAH_STRVEC_H
#define AAH_STRVEC_H

#include <stddef.h>

struct strvec {
	char **v;     /* NULL-terminated; never NULL after init */
	size_t n;
	size_t alloc;
};

#define STRVEC_INIT { NULL, 0, 0 }

void strvec_init(struct strvec *sv);
void strvec_clear(struct strvec *sv);
void strvec_push(struct strvec *sv, const char *s);
void strvec_pushf(struct strvec *sv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strvec_pushv(struct strvec *sv, const char *const *v);
/* Environment form: set NAME=value, replacing an earlier NAME. */
void strvec_setenv(struct strvec *sv, const char *name, const char *value);
/* The value of NAME in an environment vector, or NULL. */
const char *strvec_getenv(const struct strvec *sv, const char *name);
/* Split on runs of blanks (no quoting). */
void strvec_split(struct strvec *sv, const char *s);
/* View as the const form exec and friends take. */
const char *const *strvec_view(const struct strvec *sv);

#endif
