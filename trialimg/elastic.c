/* elastic.c: the world size the runner asks of a trial. */
#include "trialimg/elastic.h"
#include "fileio.h"
#include "util.h"

#include <stdlib.h>

int elastic_target(const char *trial_dir)
{
	char *p = xstrfmt("%s/world_size", trial_dir), *text = NULL;
	size_t len;
	long v = -1;
	int was_quiet = util_set_quiet(1);
	if (fileio_exists(p) && fileio_read(p, 64, &text, &len) == 0) {
		char *end;
		v = strtol(text, &end, 10);
		if (end == text || v < 0 || v > 65536)
			v = -1;
	}
	util_set_quiet(was_quiet);
	free(text);
	free(p);
	return (int)v;
}
