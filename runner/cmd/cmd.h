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
int cmd_priority(int argc, const char **argv);
/* `aah-runner slurm-conf HOSTS`: slurm.conf and gres.conf from a host list. */
int cmd_slurm_conf(int argc, const char **argv);
/* `aah-runner slurm-launch <trial-dir>`: run by srun once per rank. */
int cmd_slurm_launch(int argc, const char **argv);

/* Shared by the commands: open an experiment (id or path) and load the
 * config copied into it, relative paths resolving where the user's config
 * was. The caller releases both. */
int cmd_open_experiment(const char *workdir, const char *arg, struct experiment *e,
			struct aah_config *cfg);
/* Exit status of a command given a bad config or bad usage (check, create,
 * render, ...): 'aah-runner --help' and docs/config.md state it. */
#define CMD_EXIT_CONFIG 2
/* The end of those commands' usage line in --help. */
#define CMD_EXIT_HELP "\n\nexit status: 0: ok; 1: the command failed; 2: a usage or config error"

/* Load a config and check what spans modules (tuner and backend names). */
int cmd_load_config(const char *path, struct aah_config *cfg);
/* cmd_load_config and everything create reads beside the config: the
 * search space, tuner.initialArch and the tuner built from them. check and
 * create both call it, so a config check passes is one create accepts.
 * Errors name the config's file:line:col and the key that led to the file
 * at fault. On success the caller releases *cfg. */
int cmd_check_config(const char *path, struct aah_config *cfg);

#endif
