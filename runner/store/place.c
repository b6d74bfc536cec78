/* place.c: an attempt's place made ready before its launch (place.h). */
#include "runner/store/place.h"
#include "runner/store/expdir.h" /* expdir_place_dir, expdir_file */
#include "fileio.h"              /* fileio_copy, fileio_list_dir */
#include "jsonfile.h"
#include "strvec.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* morph.json names its parent by its trial id, a sibling of the trial
 * directory, or by "parent_dir", a path from the file's own directory (the
 * tuner's, when the parent settled in a place of its own). In a place, one
 * level below, that path is one level longer. */
static int copy_morph(const char *from, const char *to)
{
	cJSON *doc;
	if (jsonfile_read(from, &doc) < 0)
		return -1;
	const char *dir = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "parent_dir"));
	const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "parent_trial"));
	char *up = dir ? xstrfmt("../%s", dir) : id ? xstrfmt("../../%s", id) : NULL;
	if (up) {
		cJSON_DeleteItemFromObjectCaseSensitive(doc, "parent_dir");
		cJSON_AddStringToObject(doc, "parent_dir", up);
	}
	int r = jsonfile_write(to, doc);
	free(up);
	cJSON_Delete(doc);
	return r;
}

int place_copy_proposal(const char *trial_dir, const char *place_dir)
{
	static const enum expdir_file proposal[] = { EXPDIR_ARCH, EXPDIR_PARAMS, EXPDIR_MORPH };
	int r = 0;
	if (!strcmp(trial_dir, place_dir))
		return 0;
	for (size_t i = 0; r == 0 && i < sizeof(proposal) / sizeof(proposal[0]); i++) {
		char *from = expdir_file(trial_dir, proposal[i]);
		char *to = expdir_file(place_dir, proposal[i]);
		if (fileio_exists(from))
			r = proposal[i] == EXPDIR_MORPH ? copy_morph(from, to) : fileio_copy(from, to, 0);
		free(from);
		free(to);
	}
	return r;
}

static int whole_file(const char *path, const char *name, void *arg)
{
	(void)path;
	(void)arg;
	return !strstr(name, ".tmp.");
}

/* from's checkpoint/ and the whole lines of its metrics.jsonl into to. */
static int copy_resume(const char *from, const char *to)
{
	char *src = xstrfmt("%s/checkpoint", from), *dst = xstrfmt("%s/checkpoint", to);
	struct strvec names = STRVEC_INIT;
	int r = 0;
	if (fileio_list_dir(src, whole_file, NULL, &names) == 0) {
		r = fileio_mkdir_p(dst, 0755);
		for (size_t i = 0; r == 0 && i < names.n; i++) {
			char *a = xstrfmt("%s/%s", src, names.v[i]), *b = xstrfmt("%s/%s", dst, names.v[i]);
			r = fileio_copy(a, b, 0);
			free(a);
			free(b);
		}
	}
	strvec_clear(&names);
	free(src);
	free(dst);
	char *m = expdir_file(from, EXPDIR_METRICS), *n = expdir_file(to, EXPDIR_METRICS);
	if (r == 0 && fileio_exists(m))
		r = fileio_copy(m, n, FILEIO_WHOLE_LINES);
	free(m);
	free(n);
	return r;
}

int place_prepare(const char *expdir, unsigned seq, const char *place, const char *from,
		  int resume)
{
	char *dir = expdir_place_dir(expdir, seq, place);
	int r = fileio_mkdir_p(dir, 0755);
	if (r == 0 && place && *place && strcmp(place, from ? from : "")) {
		char *trial = expdir_place_dir(expdir, seq, NULL);
		char *prev = expdir_place_dir(expdir, seq, from);
		r = place_copy_proposal(trial, dir);
		if (r == 0 && resume)
			r = copy_resume(prev, dir);
		free(prev);
		free(trial);
	}
	free(dir);
	return r;
}
