/* backend.h: the backend interface (local, docker, kubernetes, slurm).
 * A backend file holds only the mechanism; backend.c holds the policy
 * (logging, retries of transient failures, journaling the submission, and
 * running external tools with a timeout: backend_run_tool). */
#ifndef AAH_BACKEND_H
#define AAH_BACKEND_H

#include "runner/config/config.h"
#include "runner/launch.h"
#include "strbuf.h"

#define AAH_CAP_MULTINODE 1u  /* ranks of a trial may run on several hosts */
#define AAH_CAP_GPU       2u  /* can hand GPUs to a trial */
#define AAH_CAP_REATTACH  4u  /* a resumed runner can follow jobs it did not start */
#define AAH_CAP_CONTAINER 8u  /* trials run in containers (images) */
#define AAH_CAP_MPI       16u /* can start trial.launcher: mpi's one mpirun */
#define AAH_CAP_ELASTIC   32u /* relaunches a pool trial on a new world size (--elastic) */

enum aah_job_state {
	AAH_JOB_PENDING,
	AAH_JOB_RUNNING,
	AAH_JOB_SUCCEEDED,   /* every rank exited 0 */
	AAH_JOB_FAILED,      /* a rank failed (exit_code, reason) */
	AAH_JOB_TIMEOUT,     /* the backend's own deadline ended it */
	AAH_JOB_CANCELED,
	AAH_JOB_LOST,        /* the backend no longer knows the job */
};

const char *aah_job_state_name(enum aah_job_state s);

struct aah_job_status {
	const char *job;            /* in: the job id submit returned */
	enum aah_job_state state;   /* out */
	int exit_code;              /* out: first failing rank's code, or -1 */
	char reason[256];           /* out: the backend's own words */
	char note[256];             /* out, optional: news of a job still on its way (a queue
				     * holds it, a pod was preempted), for the journal */
	int disrupted;              /* out, with AAH_JOB_FAILED: it failed because the cluster
				     * took a node away (a pod preempted or evicted, the other
				     * ranks losing it); the scheduler runs the same attempt
				     * again from its checkpoint, not charged as a retry */
};

struct aah_backend_ctx {
	const struct aah_backend *backend;
	const struct aah_config *cfg;
	const char *expdir;
	const char *experiment_id;
	void *priv;                 /* the backend's state, from init */
	/* Called by submit, exactly once, with the job id before any rank can
	 * start running (so a crash never leaves an unrecorded running job). */
	int (*on_submitted)(struct aah_backend_ctx *ctx, const char *job, void *arg);
	void *on_submitted_arg;
	int submitted_called;       /* set by backend_notify_submitted */
	/* Set by the caller around a batch of submissions, for a backend with
	 * release_held: each leaves its ranks held, its on_submitted record
	 * need not be durable yet, and backend_release_held lets them all go
	 * once the caller has made the batch's records durable together. */
	int defer_release;
};

/* Everything generic code knows of a backend is in its entry: its name
 * (trainingServicePlatform's value and its config section's key), what it
 * can do (caps), how its MPI hostfile names hosts, and its config keys.
 * Generic code asks these, never the name. */
struct aah_backend {
	const char *name;           /* trainingServicePlatform value and section key */
	const char *help;           /* its section's line in docs/config.md */
	unsigned caps;              /* AAH_CAP_* */
	enum launch_mpi_hosts mpi_hosts; /* with AAH_CAP_MPI: the hostfile's host names */
	const struct cfg_key *config_keys; /* its config section, or NULL */
	size_t config_size;         /* size of the struct config_keys fill */
	int (*init)(struct aah_backend_ctx *ctx);
	/* Host names of a trial's nodes, in rank order, and the rendezvous port.
	 * NULL: every node is 127.0.0.1 and a free local port is used. */
	int (*place)(struct aah_backend_ctx *ctx, unsigned trial_seq, unsigned attempt,
		     char **hosts, unsigned nodes, unsigned *port);
	/* Submit; *job (owned by the caller) identifies it for poll and cancel. */
	int (*submit)(struct aah_backend_ctx *ctx, const struct aah_launch *l, char **job);
	int (*poll)(struct aah_backend_ctx *ctx, struct aah_job_status *st);
	int (*cancel)(struct aah_backend_ctx *ctx, const char *job);
	/* Optional: let go of every rank submitted held (ctx->defer_release)
	 * since the last call, or with go 0 end them unstarted. A rank that
	 * cannot start fails its job at poll, with why. */
	void (*release_held)(struct aah_backend_ctx *ctx, int go);
	/* Optional: clean up after a job settled (logs copied, containers removed). */
	int (*reap)(struct aah_backend_ctx *ctx, const char *job, const char *trial_dir);
	void (*fini)(struct aah_backend_ctx *ctx);
	/* Optional: the rules of its config section beyond the key table (an
	 * image that is a reference, a namespace that is a DNS label), for
	 * `check` and `create`; errors name file:line:col and the key. */
	int (*check_config)(const struct aah_config *cfg);
	/* Optional: what the backend keeps of its own beyond the trials, for
	 * `status` (docker: its hosts that are down, since when and why), read
	 * from the experiment directory; appends nothing when there is none. */
	void (*status)(const char *expdir, struct strbuf *sb);
	/* Optional: the GPUs the cluster lets this experiment use, for
	 * pool.devices: quota (kubernetes: the namespace's ResourceQuota on
	 * requests.nvidia.com/gpu). */
	int (*pool_quota)(const struct aah_config *cfg, unsigned *devices);
};

/* The registry: one static table, ended by NULL; the first is the default
 * platform. Each backend_<name> is declared in its own runner/backend/<name>.h. */
extern const struct aah_backend *const aah_backends[];
const struct aah_backend *backend_find(const char *name);

/* The registry's backends as the platforms a config may name, in order
 * (what config_load and config_top_keys take). */
void backend_platforms(struct config_platforms *p);
/* config_load with the registry's platforms. */
int backend_config_load(const char *path, struct aah_config *cfg);

/* The names of the backends with every capability of caps, "a, b and c"
 * (the caller frees it). */
char *backend_names_with(unsigned caps);

/* Check each backend's config section against its key table. */
int backend_validate_config(const struct aah_config *cfg);
/* The rules of the experiment's own backend (its check_config), if any. */
int backend_check_config(const struct aah_config *cfg);
/* pool.devices: quota: the GPUs the experiment's backend says the cluster
 * lets it use (its pool_quota); errors name the config's key. */
int backend_pool_quota(const struct aah_config *cfg, unsigned *devices);

/* Generic wrappers: these hold the policy. */
int backend_init(struct aah_backend_ctx *ctx, const struct aah_backend *b,
		 const struct aah_config *cfg, const char *expdir, const char *exp_id);
int backend_place(struct aah_backend_ctx *ctx, unsigned trial_seq, unsigned attempt,
		  char **hosts, unsigned nodes, unsigned *port);
int backend_submit(struct aah_backend_ctx *ctx, const struct aah_launch *l, char **job);
int backend_poll(struct aah_backend_ctx *ctx, struct aah_job_status *st);
int backend_cancel(struct aah_backend_ctx *ctx, const char *job);
int backend_reap(struct aah_backend_ctx *ctx, const char *job, const char *trial_dir);
void backend_fini(struct aah_backend_ctx *ctx);
/* Whether submissions can be batched behind one durable record
 * (defer_release), and the end of such a batch (go 0: it was not made
 * durable; the held ranks end unstarted). */
int backend_can_defer_release(const struct aah_backend_ctx *ctx);
void backend_release_held(struct aah_backend_ctx *ctx, int go);
/* For backends: record the submission now (see on_submitted). */
int backend_notify_submitted(struct aah_backend_ctx *ctx, const char *job);

/* One external program a backend drives (docker, kubectl, sbatch, ...):
 * how long one run may take and which failures are worth another run. */
struct backend_tool {
	const char *name;           /* who runs it, in messages: "docker", "slurm" */
	const char *missing;        /* what to do when it cannot be run at all */
	double timeout;             /* seconds one run may take; <= 0: no limit */
	long retries;               /* extra runs after a transient failure */
	double pause;               /* seconds before the first extra run; it doubles,
				     * up to 16 times this */
	/* Is a failed run worth another one? A run killed at its timeout
	 * always is; NULL: only that one. */
	int (*transient)(const char *err, int exit_code);
	/* Optional: called before each extra run (to undo what a run that
	 * timed out may have left behind). */
	void (*before_retry)(void *arg);
	void *arg;
};

/* Run argv (argv[0] looked up in PATH) with `input` on its stdin (may be
 * NULL), stdout into *out and stderr into *err (either may be NULL; both
 * are emptied first; stderr loses its trailing blanks). Each run ends at
 * tool->timeout; a transient failure is run again up to tool->retries
 * times, with a warning. Returns the exit code of the last run
 * (PROC_TIMEOUT_STATUS when it was killed at its timeout), or -1 when the
 * program cannot be run at all (the error names it and tool->missing). */
int backend_run_tool(const struct backend_tool *tool, const char *const *argv,
		     const char *input, struct strbuf *out, struct strbuf *err);

/* A backend's jobs by id: the one list every backend keeps. The backend's
 * own job struct begins with a struct backend_job (its `job` member);
 * job.id is the backend's job id. */
struct backend_job {
	char *id;
	struct backend_job *next, *prev;
};
struct backend_jobs {
	struct backend_job *head;
	struct backend_job **index;   /* (icap) open addressing by id; NULL empty, or a tombstone */
	size_t icap, iused;           /* slots, slots ever filled since the last rebuild */
	size_t size;   /* of the backend's job struct */
	void *owner;   /* init's first argument: the backend's state */
	/* Optional: fill a job backend_jobs_get just made from its id (the
	 * rest zeroed); -1: no job can have that id, and none is added. */
	int (*init)(void *owner, struct backend_job *j);
	/* Optional: release what the backend holds in j (not id, not j). */
	void (*release)(struct backend_job *j);
};
#define BACKEND_JOBS_INIT(type, init_fn, release_fn, owner_p) \
	{ .size = sizeof(type), .owner = (owner_p), .init = (init_fn), .release = (release_fn) }
/* for each job j of list l, a `type *` */
#define backend_jobs_each(l, type, j) \
	for (type *j = (type *)(l)->head; j; j = (type *)j->job.next)
/* The job `id`, or NULL. */
void *backend_jobs_find(const struct backend_jobs *l, const char *id);
/* The job `id`: made (zeroed, then init) and added when the list has none
 * (a runner that resumes polls jobs it did not submit); NULL when init
 * refuses the id. */
void *backend_jobs_get(struct backend_jobs *l, const char *id);
/* Add j (l->size bytes from xcalloc, filled by the backend) under id
 * (copied); the list owns j. */
void backend_jobs_add(struct backend_jobs *l, struct backend_job *j, const char *id);
/* Free one job (release, then its id and itself): j, not in the list. */
void backend_jobs_free(struct backend_jobs *l, struct backend_job *j);
/* Take the job `id` out of the list and free it; nothing when none. */
void backend_jobs_drop(struct backend_jobs *l, const char *id);
/* Free every job. */
void backend_jobs_clear(struct backend_jobs *l);

/* A free TCP port on the loopback interface (for local rendezvous). */
unsigned backend_free_port(void);

#endif
