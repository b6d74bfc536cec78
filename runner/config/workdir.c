/* workdir.c: locating the work directory and experiment directories. */
#include "runner/config/workdir.h"
#include "fileio.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

char *workdir_default(void)
{
	const char *env = getenv("AAH_WORKDIR");
	return fileio_absolute(env && *env ? env : "aah-work");
}

static int is_experiment_dir(const char *dir)
{
	char *p = xstrfmt("%s/experiment.json", dir);
	int ok = fileio_exists(p);
	free(p);
	return ok;
}

int workdir_experiment_dir(const char *workdir, const char *arg, char **out)
{
	if (!arg || !*arg)
		return error("no experiment given (an id, or the path of an experiment directory)");
	if (strchr(arg, '/') || is_experiment_dir(arg)) {
		if (!is_experiment_dir(arg))
			return error("'%s' is not an experiment directory (no experiment.json)", arg);
		*out = fileio_absolute(arg);
		return 0;
	}
	char *wd = workdir ? xstrdup(workdir) : workdir_default();
	char *dir = xstrfmt("%s/experiments/%s", wd, arg);
	if (!is_experiment_dir(dir)) {
		error("no experiment '%s' in '%s/experiments' (set AAH_WORKDIR or pass --workdir)", arg,
		      wd);
		free(wd);
		free(dir);
		return -1;
	}
	free(wd);
	*out = dir;
	return 0;
}
