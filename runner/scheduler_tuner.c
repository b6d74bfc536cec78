/* scheduler_tuner.c: the tuner's configuration for an experiment (its
 * search space and first architecture, the copies in the experiment
 * winning), for the scheduler and for the create and propose commands. */
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "jsonfile.h"
#include "runner/scheduler.h"
#include "util.h"

int scheduler_tuner_config(const struct aah_config *cfg, const char *expdir,
			   struct tuner_config *tc, cJSON **class_args, cJSON **space)
{
	memset(tc, 0, sizeof(*tc));
	*class_args = cfg->tuner.class_args ? ynode_to_json(cfg->tuner.class_args) : NULL;
	*space = NULL;
	char *copied = expdir ? xstrfmt("%s/search_space.json", expdir) : NULL;
	int r;
	if (copied && fileio_exists(copied))
		r = jsonfile_read(copied, space);
	else
		r = config_search_space(cfg, space);
	free(copied);
	if (r < 0) {
		cJSON_Delete(*class_args);
		*class_args = NULL;
		return -1;
	}
	tc->name = cfg->tuner.builtin_tuner_name;
	tc->class_args = *class_args;
	tc->search_space = *space;
	tc->seed = (uint64_t)cfg->seed;
	tc->max_layers = (unsigned)cfg->tuner.max_layers;
	tc->max_params = (uint64_t)cfg->tuner.max_params;
	tc->max_flops = cfg->tuner.max_flops;
	tc->inherit_weights = cfg->tuner.inherit_weights;
	return 0;
}

char *scheduler_initial_arch(const struct aah_config *cfg, const char *expdir)
{
	/* The copy in the experiment wins: the user's file may have changed. */
	char *copied = expdir ? xstrfmt("%s/initial_arch.json", expdir) : NULL;
	if (copied && fileio_exists(copied))
		return copied;
	free(copied);
	const char *p = cfg->tuner.initial_arch;
	if (!p || !*p)
		return NULL;
	return config_resolve(cfg, p);
}
