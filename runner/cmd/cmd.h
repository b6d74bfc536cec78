/* cmd.h: the subcommands of aah-runner, one cmd_<name>.c each. Each takes
 * argv with argv[0] the subcommand name and returns the exit code. */
#ifndef AAH_CMD_H
#define AAH_CMD_H

#include "runner/config/config.h"
#include "runner/experiment.h"

int cmd_create(int argc, const char **argv);
int cmd_resume(int argc, const char **argv);
int cmd_stop(int argc, const char **argv);
int cmd_status(int argc, const char **argv);
int cmd_list(int argc, const char **argv);
int cmd_propose(int argc, const char **argv);
int cmd_check(int argc, const char **argv);
int cmd_render(int argc, const char **argv);
/* `aah-runner slurm-launch <trial-dir>`: run by srun once per rank. */
int cmd_slurm_launch(int argc, const char **argv);

/* Shared by the commands: open an experiment (id or path) and load the
 * config copied into it, relative paths resolving where the user's config
 * was. The caller releases both. */
int cmd_open_experiment(const char *workdir, const char *arg, struct experiment *e,
			struct aah_config *cfg);
/* Load a config and check what spans modules (tuner and backend names). */
int cmd_load_config(const char *path, struct aah_config *cfg);

#endif
