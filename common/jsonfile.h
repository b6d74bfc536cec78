/* jsonfile.h: JSON documents on disk (cJSON): checked reads, atomic writes,
 * typed field access whose errors name the file and the field. */
#ifndef AAH_JSONFILE_H
#define AAH_JSONFILE_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* Parse a JSON file (at most 64 MiB). The caller owns *out (cJSON_Delete).
 * Errors name the file and the byte offset of a syntax error. */
int jsonfile_read(const char *path, cJSON **out);
/* Parse a JSON text; `what` names it in error messages. */
int jsonfile_parse(const char *what, const char *text, cJSON **out);
/* Write a document atomically, pretty-printed with a trailing newline. */
int jsonfile_write(const char *path, const cJSON *doc);
/* Append a compact one-line document to a JSON-lines file (fsync'd). */
int jsonfile_append(const char *path, const cJSON *doc);
/* The same with FILEIO_* flags. */
int jsonfile_write_flags(const char *path, const cJSON *doc, unsigned flags);
int jsonfile_append_flags(const char *path, const cJSON *doc, unsigned flags);
/* Read a JSON-lines file; calls fn for each complete, valid line. A torn last
 * line (a crash mid-write) is skipped with a warning, not an error. */
int jsonfile_read_lines(const char *path, int (*fn)(const cJSON *line, void *arg), void *arg);

/* Check that doc has "format": "<name>/<major>..." for the given name and
 * major version. */
int jsonfile_check_format(const char *what, const cJSON *doc, const char *name, int major);

/* Field getters: return -1 with an error naming `what` and the key when the
 * field is missing (unless optional) or of the wrong type. */
int json_get_string(const char *what, const cJSON *obj, const char *key, int optional,
		    const char **out);
int json_get_number(const char *what, const cJSON *obj, const char *key, int optional,
		    double *out);
int json_get_int(const char *what, const cJSON *obj, const char *key, int optional,
		 long min, long max, long *out);
int json_get_bool(const char *what, const cJSON *obj, const char *key, int optional, int *out);

#endif
