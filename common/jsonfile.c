/* jsonfile.c: JSON documents on disk with checked reads and atomic writes. */
#include "jsonfile.h"
#include "fileio.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int jsonfile_parse(const char *what, const char *text, cJSON **out)
{
	const char *end = NULL;
	cJSON *doc = cJSON_ParseWithOpts(text, &end, 1);
	if (!doc) {
		size_t off = end ? (size_t)(end - text) : 0;
		size_t line = 1, col = 1;
		for (size_t i = 0; i < off && text[i]; i++) {
			if (text[i] == '\n') {
				line++;
				col = 1;
			} else {
				col++;
			}
		}
		return error("%s:%zu:%zu: invalid JSON", what, line, col);
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
	if (d != floor(d) || d < (double)min || d > (double)max)
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
