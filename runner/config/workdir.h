/* workdir.h: where experiments live, and turning a user's experiment
 * argument (an id or a path) into an experiment directory. */
#ifndef AAH_WORKDIR_H
#define AAH_WORKDIR_H

/* The default work directory: $AAH_WORKDIR, else ./aah-work (absolute).
 * The caller frees the result. */
char *workdir_default(void);

/* Resolve an experiment argument: an existing directory holding
 * experiment.json is used as is; otherwise `arg` is an id looked up under
 * <workdir>/experiments/ (workdir NULL = workdir_default()). On success the
 * caller frees *out. Errors say where it looked. */
int workdir_experiment_dir(const char *workdir, const char *arg, char **out);

#endif
