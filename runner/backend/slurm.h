/* slurm.h: the Slurm backend's pure parts (its config, the sbatch script and
 * argv, the mapping of Slurm job states, parsers of squeue/scontrol/sacct
 * output). */
#ifndef AAH_SLURM_H
#define AAH_SLURM_H

#include "runner/backend/backend.h"
#include "runner/config/config.h"
#include "runner/launch.h"
#include "strbuf.h"
#include "strvec.h"

struct slurm_config {
	char *partition;          /* --partition, or NULL */
	char *account;            /* --account, or NULL */
	char *qos;                /* --qos, or NULL */
	long cpus_per_task;       /* --cpus-per-task */
	char *mem;                /* --mem (per node), or NULL */
	char *gres_name;          /* "gpu" in --gres=gpu:G */
	double time_limit;        /* seconds; 0 = from trial.timeout */
	long tasks_per_node;      /* trial nodes packed onto one Slurm node */
	const struct ynode *sbatch_args; /* extra sbatch arguments (a list) */
	char *runner;             /* aah-runner as the compute nodes see it */
	double poll_interval;     /* seconds between squeue queries */
	double command_timeout;   /* seconds a Slurm command may take */
};

extern const struct cfg_key slurm_config_keys[];

/* The host names a trial's contract carries until the job runs: the
 * launcher replaces "@aah-host-<i>@" with the real name of trial node i. */
#define SLURM_HOST_PLACEHOLDER "@aah-host-%u@"

/* The job script and the sbatch argv for one trial. code_dir is the
 * absolute working directory of the ranks; runner is the path of aah-runner
 * on the compute nodes. Values that sbatch directives cannot carry safely
 * (newlines, quotes, control characters) are refused. */
int slurm_script_build(const struct slurm_config *sc, const struct aah_config *cfg,
		       const struct aah_launch *l, const char *code_dir, struct strbuf *out);
int slurm_sbatch_argv(const struct slurm_config *sc, const char *script, const char *runner,
		      const struct aah_launch *l, struct strvec *argv);
/* --time value ("D-HH:MM:SS", rounded up to whole minutes) of seconds. */
void slurm_format_time(double seconds, char *buf, size_t n);

/* A Slurm job state (squeue %T / sacct State, e.g. "CANCELLED by 0") with
 * its reason, mapped onto aah's states. canceled_by_us: aah canceled it. */
enum aah_job_state slurm_map_state(const char *state, int canceled_by_us, int *final);
/* Did Slurm end a job in this state because the cluster took a node (or
 * the job) away: NODE_FAIL, BOOT_FAIL, PREEMPTED? The runner then relaunches
 * the same attempt from its checkpoint, not charged (aah_job_status.disrupted). */
int slurm_state_disrupted(const char *state);
/* Reason text for st->reason from Slurm's state and reason. */
void slurm_describe(const char *job, const char *state, const char *reason, int exit_code,
		    char *buf, size_t n);

/* One line of `squeue -h -t all -o %i|%T|%r` or of `sacct -X -n -P -o
 * JobID,State,ExitCode,Reason`. */
struct slurm_row {
	char id[32];
	char state[48];
	char reason[96];
	int exit_code;            /* -1 when not given */
};
/* Parse every line of such output; returns the number of rows (at most max). */
int slurm_parse_rows(const char *text, int with_exit, struct slurm_row *rows, int max);
/* "3:0" -> 3, "0:9" -> 137 (128 + signal); -1 when malformed. */
int slurm_parse_exit(const char *s);
/* ExitCode=... out of `scontrol show job -o <id>`; -1 when absent. */
int slurm_scontrol_exit(const char *text);
/* Is this sbatch/squeue error worth trying again (controller unreachable)? */
int slurm_error_transient(const char *stderr_text, int exit_code);
/* The job id printed by `sbatch --parsable` ("123" or "123;cluster"). */
int slurm_parse_job_id(const char *out, char *id, size_t n);

/* Replace every SLURM_HOST_PLACEHOLDER in s by hosts[i / per]. */
char *slurm_subst_hosts(const char *s, char *const *hosts, unsigned nhosts, unsigned per);

extern const struct aah_backend backend_slurm;

#endif
