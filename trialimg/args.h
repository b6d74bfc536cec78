/* args.h: every argument and environment variable aah-trial accepts, in one
 * table that also generates --help, and the resolution of rank, world size,
 * rendezvous, trial directory, arch and params (docs/trainer.md). */
#ifndef AAH_ARGS_H
#define AAH_ARGS_H

#include <stdio.h>

struct args {
	/* AIPerf trial arguments */
	double batch_size;       /* tuner values may be fractional: truncated */
	double batch_scale;      /* AIPerf: the tuner's batch_size times this (0: off) */
	char *batch_rule;        /* --batch_rule: "off", or "aiperf" (device_batch_rule) */
	double batch_tuned;      /* params.json's batch_size as the tuner gave it; 0: none */
	int epochs, warmup_1, warmup_2, warmup_3;
	int inherited_epochs;    /* budget of a trial that inherits weights; 0 = staged */
	double inherited_lr_scale; /* its learning rate, as a fraction of the usual one */
	double initial_lr, final_lr, smooth_factor;
	char *train_data_dir, *val_data_dir, *ip;
	int slave, num_parallel_calls;
	/* aah */
	char *arch, *params, *dataset, *trial_dir, *precision, *backend, *augment, *conv_algo;
	char *data_trace;         /* --data_trace: each rank's training samples, for tests */
	int elastic;              /* --elastic: follow <trial_dir>/world_size */
	int global_batch;         /* --global_batch: each rank takes it / world; 0 = batch_size x world */
	int threads, patience, stop_diverged, resume, trial_seq, max_epochs, train_samples, val_samples;
	int partial_epoch;       /* --partial_epoch: a deadline fits the budget to the step */
	long seed;
	double weight_decay, momentum;
	double monitor_interval; /* seconds between resource samples (0: off) */
	double deadline;         /* Unix time to be done by (0: none) */
	double time_budget;      /* seconds this trial may take in all (0: none) */
	double loss_scale;       /* fp16: the loss scale to start from */
	int loss_scale_interval; /* fp16: good steps before the scale doubles */
	/* hyperparameters from the tuner (--name=value and params.json) */
	double dropout_rate, learning_rate;
	int kernel_size;
	/* launch contract */
	char *init_method, *data_url, *train_url;
	int rank, world_size;
	int device;               /* --device: the visible GPU this rank takes (its local rank) */
	double dist_timeout;
	char *master_addr, *master_port, *nccl_comm_id, *worker_hosts, *experiment_id, *trial_id;
	int help;
	int probe;
	int plan;                /* --plan: print the memory plan and exit */
	double memory_limit;     /* --memory_limit: MiB a CPU trial may use (0: the cgroup's) */
	int usage;               /* nothing to train was named: print the usage, exit 2 */
	/* which table entries were set, and from where (ARGS_FROM_*) */
	unsigned char from[80];
	/* resolved rendezvous (when world_size > 1) */
	char *rdv_host;
	int rdv_port;
};

/* Most compute threads (--threads); more than the CPUs online are lowered
 * to that count with a warning. */
#define ARGS_MAX_THREADS 1024

enum { ARGS_FROM_DEFAULT, ARGS_FROM_ENV, ARGS_FROM_PARAMS, ARGS_FROM_ARGV };

/* Parse argv and the environment (env_get: getenv or a test double), then
 * params.json and the derived values. Unknown arguments are reported once
 * on stderr and ignored. A call naming no trial directory (--trial_dir,
 * AAH_TRIAL_DIR, --train_url), --arch or --params fails with a->usage set.
 * The caller releases with args_release. */
int args_parse(struct args *a, int argc, char **argv, const char *(*env_get)(const char *));
void args_release(struct args *a);
void args_help(FILE *f);
/* The usage lines alone (for a call that names nothing to train). */
void args_usage(FILE *f);
/* Was the named field (e.g. "--dropout_rate") set, and from where? */
int args_source(const struct args *a, const char *name);

#endif
