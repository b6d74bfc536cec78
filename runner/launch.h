/* launch.h: the launch contract: the env and argv every rank of a trial
 * receives (ModelArts / Volcano / PyTorch / TensorFlow forms), written to
 * the trial's launch.json and rank_table.json. */
#ifndef AAH_LAUNCH_H
#define AAH_LAUNCH_H

#include <cjson/cJSON.h>

#include "runner/config/config.h"
#include "strvec.h"

struct launch_rank {
	unsigned rank;            /* global rank: node index, or device index in device mode */
	unsigned node;            /* node index 0..nodes-1 */
	char *host;               /* the node's host name */
	struct strvec env;        /* injected NAME=value pairs only */
	struct strvec argv;       /* the full command line */
};

/* Exit status of a rank that failed because another rank of its trial was
 * lost mid-collective (aah-trial's TRAIN_EXIT_PEER_LOST): not the cause. */
#define LAUNCH_EXIT_PEER_LOST 86

struct aah_launch {
	char *experiment_id;
	char *trial_id;           /* "000001" */
	unsigned trial_seq;
	unsigned attempt;
	char *trial_dir;          /* the trial's directory: its proposal, its trial.log */
	char *place_dir;          /* where this launch writes and reads (AAH_TRIAL_DIR,
				   * --train_url, launch.json): its place in the trial
				   * directory (runner/store/expdir.h), or the directory itself */
	char *cwd;                /* the trial's working directory: trial.codeDir, resolved
				   * against the config's folder (config_resolve) */
	char *expdir;
	char *workdir;
	char *job_name;           /* "aah-<exp>-<trial>", DNS-1123 label */
	unsigned nodes;
	unsigned gpus_per_node;
	int per_device;           /* processMode: device */
	int elastic;              /* in a device pool: its ranks take --elastic and all exit
				   * POOLTRIAL_EXIT_RESIZE to be resized */
	int tf_style;             /* launchStyle: tensorflow */
	unsigned port;
	char **hosts;             /* nodes entries */
	unsigned nranks;
	struct launch_rank *ranks;/* nranks entries */
	/* trial.launcher: mpi (ModelArts' MPI form): one mpirun starts every
	 * rank; each takes its rank from mpirun's env, so rank-specific names
	 * and --rank are left out of env and argv. */
	int mpi;
	char *hostfile;           /* <place dir>/hostfile */
	struct strvec hostfile_lines; /* "<host> slots=<ranks on it>" */
	struct strvec mpirun_argv;/* mpirun ... <the trial command> */
};

/* How trial.launcher: mpi's hostfile names a trial's hosts: the backend
 * says (struct aah_backend's mpi_hosts). */
enum launch_mpi_hosts {
	LAUNCH_MPI_NAMED,         /* as ModelArts names them: <job>-worker-N.<job> */
	LAUNCH_MPI_LOOPBACK,      /* every rank on this host: one 127.0.0.1 line */
	LAUNCH_MPI_PLACED,        /* the hosts the backend placed (Slurm: placeholders
				   * its launcher replaces with the allocation's) */
};

struct launch_params {
	const struct aah_config *cfg;
	const char *expdir;       /* absolute */
	const char *workdir;      /* absolute */
	const char *experiment_id;
	unsigned trial_seq;
	unsigned attempt;
	const char *place;        /* the launch's place (expdir_place_name); NULL or "": the
				   * trial directory */
	const char *const *hosts; /* cfg->trial.nodes host names in rank order */
	unsigned port;            /* rendezvous port */
	const char *gpus;         /* this slot's devices, e.g. "2,3"; NULL = none */
	int resume;               /* run before: pass --resume */
	unsigned nodes;           /* ranks (nodes) of this run; 0 = trial.nodes */
	int elastic;              /* in a device pool: pass --elastic */
	enum launch_mpi_hosts mpi_hosts; /* the backend's way (launcher: mpi) */
	const cJSON *params;      /* hyperparameters (object), or NULL */
	double deadline;          /* Unix time the experiment's budget ends: AAH_DEADLINE; 0 = none */
	/* Tuner placed in the trial: run "<runner> propose ... --exec --" first. */
	const char *propose_runner; /* path of aah-runner, or NULL for none */
};

/* Build the contract. The caller releases l with launch_release. */
int launch_build(struct aah_launch *l, const struct launch_params *p);
/* Write launch.json and rank_table.json into the launch's place. */
int launch_write(const struct aah_launch *l);
cJSON *launch_to_json(const struct aah_launch *l);
void launch_release(struct aah_launch *l);

/* The trial command as an argv: split on blanks when it has no shell syntax,
 * else ["/bin/sh", "-c", "<command> \"$@\"", "aah-trial"]: values appended
 * later become "$@", so they never pass through the shell's parser. */
void launch_command_argv(struct strvec *argv, const char *command);

/* The trainer seed of a trial (AAH_SEED), 1 to 2^31-1: a function of the
 * experiment's seed and the trial's sequence number only, so two
 * experiments created with the same seed train every trial alike; every
 * attempt of a trial gets the same seed. */
unsigned long launch_trial_seed(long experiment_seed, unsigned trial_seq);

/* ModelArts' name of node N in the MPI form,
 * ${MA_VJ_NAME}-${MA_TASK_NAME}-N.${MA_VJ_NAME}. The caller frees it. */
char *launch_mpi_host(const struct aah_launch *l, unsigned node);

/* Append hyperparameters as --name=value (numbers in shortest form). */
void launch_push_params(struct strvec *argv, const cJSON *params);

#endif
