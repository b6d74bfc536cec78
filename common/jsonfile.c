/* jsonfile.c: JSON documents on disk with checked reads and atomic writes. */
#include "jsonfile.h"
#include "fileio.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Why text is not JSON, for jsonfile_parse's message: cJSON says only where
 * it stopped, this walk says what was expected there. */
enum { JSON_SCAN_DEPTH = 1000 };   /* cJSON's own nesting limit */

struct jscan {
	const char *s;
	size_t i;           /* where the walk stands, then where it failed */
};

static int scan_string(struct jscan *j, const char **why)
{
	j->i++;   /* the opening quote */
	for (;;) {
		unsigned char c = (unsigned char)j->s[j->i];
		if (!c) {
			*why = "a string is not closed: expected '\"'";
			return -1;
		}
		if (c == '"') {
			j->i++;
			return 0;
		}
		if (c < 0x20) {
			*why = "a control character inside a string: expected '\"' or an escape like \\n";
			return -1;
		}
		if (c == '\\') {
			c = (unsigned char)j->s[++j->i];
			if (!c || !strchr("\"\\/bfnrtu", c)) {
				*why = "a bad escape: expected one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX";
				return -1;
			}
			for (int k = 0; c == 'u' && k < 4; k++)
				if (!isxdigit((unsigned char)j->s[j->i + 1 + (size_t)k])) {
					j->i += 1 + (size_t)k;
					*why = "a bad \\u escape: expected 4 hex digits";
					return -1;
				}
			if (c == 'u')
				j->i += 4;
		}
		j->i++;
	}
}

static int scan_digits(struct jscan *j)
{
	size_t from = j->i;
	while (isdigit((unsigned char)j->s[j->i]))
		j->i++;
	return j->i > from ? 0 : -1;
}

/* A number, true, false or null at j->i. */
static int scan_scalar(struct jscan *j, const char **why)
{
	static const char *const words[] = { "true", "false", "null" };
	for (size_t k = 0; k < ARRAY_SIZE(words); k++) {
		size_t n = strlen(words[k]);
		if (!strncmp(j->s + j->i, words[k], n)) {
			j->i += n;
			return 0;
		}
	}
	*why = "expected a value (an object, array, string, number, true, false or null)";
	if (j->s[j->i] == '-')
		j->i++;
	if (j->s[j->i] == '0')
		j->i++;
	else if (scan_digits(j) < 0)
		return -1;
	*why = "a bad number: expected digits";
	if (j->s[j->i] == '.' && (j->i++, scan_digits(j) < 0))
		return -1;
	if (j->s[j->i] == 'e' || j->s[j->i] == 'E') {
		j->i++;
		if (j->s[j->i] == '+' || j->s[j->i] == '-')
			j->i++;
		if (scan_digits(j) < 0)
			return -1;
	}
	return 0;
}

/* NULL when text is JSON; else what was expected, with *at its offset. */
static const char *json_expected(const char *text, size_t *at)
{
	enum { VALUE, VALUE_OR_CLOSE, KEY, KEY_OR_CLOSE, COLON, COMMA_OR_CLOSE, DONE } want = VALUE;
	char stack[JSON_SCAN_DEPTH];   /* the open containers, '{' or '[' */
	size_t depth = 0;
	struct jscan j = { .s = text };
	const char *why = NULL;
	for (;;) {
		while (text[j.i] == ' ' || text[j.i] == '\t' || text[j.i] == '\n' || text[j.i] == '\r')
			j.i++;
		char c = text[j.i];
		char top = depth ? stack[depth - 1] : 0;
		if ((want == VALUE_OR_CLOSE && c == ']') || (want == KEY_OR_CLOSE && c == '}') ||
		    (want == COMMA_OR_CLOSE && c == (top == '{' ? '}' : ']'))) {
			j.i++;
			depth--;
			want = depth ? COMMA_OR_CLOSE : DONE;
			continue;
		}
		switch (want) {
		case VALUE:
		case VALUE_OR_CLOSE:
			if (c == '{' || c == '[') {
				if (depth == JSON_SCAN_DEPTH) {
					why = "nesting deeper than 1000 levels";
					break;
				}
				stack[depth++] = c;
				j.i++;
				want = c == '{' ? KEY_OR_CLOSE : VALUE_OR_CLOSE;
				continue;
			}
			if ((c == '"' ? scan_string(&j, &why) : scan_scalar(&j, &why)) < 0)
				break;
			want = depth ? COMMA_OR_CLOSE : DONE;
			continue;
		case KEY:
		case KEY_OR_CLOSE:
			why = want == KEY ? "expected a key in double quotes"
					  : "expected a key in double quotes or '}'";
			if (c != '"' || scan_string(&j, &why) < 0)
				break;
			want = COLON;
			continue;
		case COLON:
			why = "expected ':' after the key";
			if (c != ':')
				break;
			j.i++;
			want = VALUE;
			continue;
		case COMMA_OR_CLOSE:
			why = top == '{' ? "expected ',' or '}'" : "expected ',' or ']'";
			if (c != ',')
				break;
			j.i++;
			want = top == '{' ? KEY : VALUE;
			continue;
		case DONE:
			if (!c)
				return NULL;
			why = "expected the end of the file after the JSON document";
			break;
		}
		*at = j.i;
		return why;
	}
}

int jsonfile_parse(const char *what, const char *text, cJSON **out)
{
	const char *end = NULL;
	cJSON *doc = cJSON_ParseWithOpts(text, &end, 1);
	if (!doc) {
		size_t off = end ? (size_t)(end - text) : 0;
		const char *why = json_expected(text, &off);
		size_t line = 1, col = 1;
		for (size_t i = 0; i < off && text[i]; i++) {
			if (text[i] == '\n') {
				line++;
				col = 1;
			} else {
				col++;
			}
		}
		if (!why)
			return error("%s:%zu:%zu: invalid JSON", what, line, col);
		if (!text[off])
			return error("%s:%zu:%zu: invalid JSON: %s, found the end of the file", what,
				     line, col, why);
		return error("%s:%zu:%zu: invalid JSON: %s, found '%c'", what, line, col, why,
			     isprint((unsigned char)text[off]) ? text[off] : '?');
	}
	*out = doc;
	return 0;
}

int jsonfile_read(const char *path, cJSON **out)
{
	char *text;
	if (fileio_read(path, 0, &text, NULL) < 0)
		return -1;
	int r = jsonfile_parse(path, text, out);
	free(text);
	return r;
}

int jsonfile_write(const char *path, const cJSON *doc)
{
	return jsonfile_write_flags(path, doc, 0);
}

int jsonfile_write_flags(const char *path, const cJSON *doc, unsigned flags)
{
	char *text = cJSON_Print(doc);
	if (!text)
		return error("cannot serialise JSON for '%s'", path);
	size_t n = strlen(text);
	char *buf = xmalloc(n + 2);
	memcpy(buf, text, n);
	buf[n] = '\n';
	buf[n + 1] = '\0';
	cJSON_free(text);
	int r = fileio_write_atomic_flags(path, buf, n + 1, flags);
	free(buf);
	return r;
}

int jsonfile_append(const char *path, const cJSON *doc)
{
	return jsonfile_append_flags(path, doc, 0);
}

int jsonfile_append_flags(const char *path, const cJSON *doc, unsigned flags)
{
	char *text = cJSON_PrintUnformatted(doc);
	if (!text)
		return error("cannot serialise JSON for '%s'", path);
	int r = fileio_append_line_flags(path, text, flags);
	cJSON_free(text);
	return r;
}

int jsonfile_read_lines(const char *path, int (*fn)(const cJSON *line, void *arg), void *arg)
{
	char *text;
	size_t len;
	if (fileio_read(path, (size_t)1 << 30, &text, &len) < 0)
		return -1;
	size_t lineno = 0;
	int r = 0;
	char *p = text;
	while (*p) {
		char *nl = strchr(p, '\n');
		lineno++;
		if (!nl) {
			warning("%s:%zu: ignoring incomplete last line (interrupted write)", path, lineno);
			break;
		}
		*nl = '\0';
		if (*p) {
			cJSON *doc = cJSON_Parse(p);
			if (!doc) {
				r = error("%s:%zu: invalid JSON line", path, lineno);
				break;
			}
			r = fn(doc, arg);
			cJSON_Delete(doc);
			if (r < 0)
				break;
		}
		p = nl + 1;
	}
	free(text);
	return r;
}

int jsonfile_check_format(const char *what, const cJSON *doc, const char *name, int major)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(doc, "format");
	size_t n = strlen(name);
	if (!cJSON_IsString(f))
		return error("%s: missing \"format\" (expected \"%s/%d\")", what, name, major);
	const char *s = f->valuestring;
	if (strncmp(s, name, n) || s[n] != '/' || atoi(s + n + 1) != major)
		return error("%s: format is \"%s\", expected \"%s/%d\"", what, s, name, major);
	return 0;
}

static const cJSON *field(const char *what, const cJSON *obj, const char *key, int optional,
			  int *missing)
{
	const cJSON *v = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
	*missing = !v || cJSON_IsNull(v);
	if (*missing && !optional)
		error("%s: missing field \"%s\"", what, key);
	return v;
}

int json_get_string(const char *what, const cJSON *obj, const char *key, int optional,
		    const char **out)
{
	int missing;
	const cJSON *v = field(what, obj, key, optional, &missing);
	if (missing)
		return optional ? 0 : -1;
	if (!cJSON_IsString(v))
		return error("%s: field \"%s\" must be a string", what, key);
	*out = v->valuestring;
	return 0;
}

int json_get_number(const char *what, const cJSON *obj, const char *key, int optional,
		    double *out)
{
	int missing;
	const cJSON *v = field(what, obj, key, optional, &missing);
	if (missing)
		return optional ? 0 : -1;
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
		return error("%s: field \"%s\" must be a number", what, key);
	*out = v->valuedouble;
	return 0;
}

int json_get_int(const char *what, const cJSON *obj, const char *key, int optional,
		 long min, long max, long *out)
{
	double d;
	int missing;
	field(what, obj, key, 1, &missing);
	if (missing) {
		if (optional)
			return 0;
		return error("%s: missing field \"%s\"", what, key);
	}
	if (json_get_number(what, obj, key, 0, &d) < 0)
		return -1;
	/* Converted only inside [-2^63, 2^63), where (long)d is defined; the
	 * range is then compared exactly: (double)LONG_MAX is 2^63 itself. */
	if (d != floor(d) || d < -0x1p63 || d >= 0x1p63 || (long)d < min || (long)d > max)
		return error("%s: field \"%s\" must be an integer in [%ld, %ld]", what, key, min,
			     max);
	*out = (long)d;
	return 0;
}

int json_get_bool(const char *what, const cJSON *obj, const char *key, int optional, int *out)
{
	int missing;
	const cJSON *v = field(what, obj, key, optional, &missing);
	if (missing)
		return optional ? 0 : -1;
	if (!cJSON_IsBool(v))
		return error("%s: field \"%s\" must be true or false", what, key);
	*out = cJSON_IsTrue(v);
	return 0;
}
