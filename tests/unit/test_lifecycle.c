/* The trial lifecycle as one rule (runner/lifecycle.c), pinned as a table:
 * each row is a trial (its journaled state, attempt and relaunches), its
 * job's status (or none: a resumed runner, a queued trial at the end of the
 * budget), its outcome (result.json), the
 * config (trial.retries, trial.timeout, pool.devices), the pool's view
 * (result visible, told another size, devices it ran on), a stop or the end
 * of maxExecDuration, and the one action lifecycle_decide must return with
 * a substring of the reason it journals. The rows cover what the bats
 * suites drive through the runner (trial_retry, trial_outcome,
 * trial_deadline, runner_crash, runner_finished, fault_injection,
 * k8s_preempt, elastic_pool, pool) and the edges they do not reach. */
#include <criterion/criterion.h>

#include "runner/lifecycle.h"
#include "runner/pool/pooltrial.h" /* POOLTRIAL_EXIT_RESIZE */
#include "strvec.h"
#include "util.h" /* xstrlcpy */

#include <math.h>
#include <stdio.h>
#include <string.h>

#define DIR "/w/experiments/abcd1234/trials/000001"
#define NO_REASON NULL     /* .why: the reason must be "" */
#define EXIT_RESIZE POOLTRIAL_EXIT_RESIZE
#define EXIT_PEER_LOST 86  /* a rank that lost its peer (launch.h LAUNCH_EXIT_PEER_LOST) */
#define PREEMPTED "pod j-1 was disrupted (PreemptionByScheduler) and the other ranks lost it (Job j)"

struct row {
	const char *name;
	/* the trial, as journaled */
	int nojob;                /* no job to poll: the journal alone decides (a runner
				   * resumes, or a queued trial at the end of the budget) */
	enum trial_state tstate;  /* nojob rows; a polled trial is running */
	unsigned attempt;         /* 0 = 1 */
	const char *treason;      /* the journal's reason (nojob rows) */
	unsigned relaunched;      /* relaunches of this attempt in its record */
	double ran;               /* seconds since it was submitted */
	/* its job */
	enum aah_job_state job;
	int exit_code;
	const char *job_reason;
	int disrupted;
	/* its outcome: result.json 1 read, 0 none, -1 unreadable */
	int have;
	enum trial_state result;
	const char *result_reason; /* its stop_reason */
	/* the config and the pool */
	long retries;
	double timeout;
	long pool;                /* pool.devices */
	int visible, told_other;
	unsigned running_on;
	int stopping, timeup;
	/* what must become of it */
	enum lifecycle_kind kind;
	enum trial_state state;   /* SETTLE, RETRY */
	unsigned next;            /* the attempt it runs as next (RETRY, REQUEUE, RESIZE, RELAUNCH) */
	const char *why;          /* a substring of the reason; NO_REASON: "" */
};

static const struct row rows[] = {
	/* ---- a job still on its way ---- */
	{ "running, no trial.timeout", .job = AAH_JOB_RUNNING, .ran = 1e6, .kind = LIFECYCLE_WAIT,
	  .why = NO_REASON },
	{ "pending in a cluster queue", .job = AAH_JOB_PENDING, .job_reason = "queue full",
	  .kind = LIFECYCLE_WAIT, .why = NO_REASON },
	{ "running, within trial.timeout", .job = AAH_JOB_RUNNING, .timeout = 2, .ran = 1.5,
	  .kind = LIFECYCLE_WAIT, .why = NO_REASON },
	{ "running exactly trial.timeout: not over it yet", .job = AAH_JOB_RUNNING, .timeout = 1,
	  .ran = 1, .kind = LIFECYCLE_WAIT, .why = NO_REASON },
	{ "running past trial.timeout (trial_deadline, runner_experiment)", .job = AAH_JOB_RUNNING,
	  .timeout = 1, .ran = 1.2, .kind = LIFECYCLE_CANCEL, .why = "over the trial timeout of 1s" },
	{ "pending past trial.timeout: the queue's wait counts", .job = AAH_JOB_PENDING,
	  .timeout = 2, .ran = 30, .kind = LIFECYCLE_CANCEL, .why = "over the trial timeout of 2s" },
	{ "running past trial.timeout in a pool", .job = AAH_JOB_RUNNING, .timeout = 60, .ran = 61,
	  .pool = 8, .kind = LIFECYCLE_CANCEL, .why = "over the trial timeout of 60s" },
	{ "running past trial.timeout while stopping: cancel all the same", .job = AAH_JOB_RUNNING,
	  .timeout = 1, .ran = 5, .stopping = 1, .kind = LIFECYCLE_CANCEL, .why = "timeout of 1s" },
	{ "running in a pool: it waits (and is told its share)", .job = AAH_JOB_RUNNING, .pool = 8,
	  .kind = LIFECYCLE_WAIT, .why = NO_REASON },

	/* ---- a job that exited 0 ---- */
	{ "succeeded with result succeeded", .job = AAH_JOB_SUCCEEDED, .have = 1,
	  .result = TRIAL_SUCCEEDED, .kind = LIFECYCLE_SETTLE, .state = TRIAL_SUCCEEDED,
	  .why = NO_REASON },
	{ "succeeded with result early_stopped", .job = AAH_JOB_SUCCEEDED, .have = 1,
	  .result = TRIAL_EARLY_STOPPED, .kind = LIFECYCLE_SETTLE, .state = TRIAL_EARLY_STOPPED,
	  .why = NO_REASON },
	{ "succeeded, retries left, ended well: no retry", .job = AAH_JOB_SUCCEEDED, .have = 1,
	  .result = TRIAL_SUCCEEDED, .retries = 3, .kind = LIFECYCLE_SETTLE,
	  .state = TRIAL_SUCCEEDED, .why = NO_REASON },
	{ "exit 0 without result.json", .job = AAH_JOB_SUCCEEDED, .kind = LIFECYCLE_SETTLE,
	  .state = TRIAL_FAILED, .why = "no valid result.json in " DIR },
	{ "exit 0 without result.json, a retry left", .job = AAH_JOB_SUCCEEDED, .retries = 1,
	  .kind = LIFECYCLE_RETRY, .state = TRIAL_FAILED, .next = 2, .why = "no valid result.json" },
	{ "exit 0, result.json unreadable", .job = AAH_JOB_SUCCEEDED, .have = -1,
	  .kind = LIFECYCLE_SETTLE, .state = TRIAL_FAILED, .why = "no valid result.json" },
	{ "exit 0, result.json says failed", .job = AAH_JOB_SUCCEEDED, .have = 1,
	  .result = TRIAL_FAILED, .kind = LIFECYCLE_SETTLE, .state = TRIAL_FAILED,
	  .why = "result.json says status 'failed'" },
	{ "exit 0, result.json failed with a reason (an NNI trial's bad record): it is said",
	  .job = AAH_JOB_SUCCEEDED, .have = 1, .result = TRIAL_FAILED,
	  .result_reason = "error: 'x': the record at byte 0 is cut short",
	  .kind = LIFECYCLE_SETTLE, .state = TRIAL_FAILED,
	  .why = "result.json says status 'failed': error: 'x': the record at byte 0 is cut short" },
	{ "exit 0, result.json says canceled", .job = AAH_JOB_SUCCEEDED, .have = 1,
	  .result = TRIAL_CANCELED, .kind = LIFECYCLE_SETTLE, .state = TRIAL_FAILED,
	  .why = "result.json says status 'canceled'" },
	{ "exit 0, result.json with no known status", .job = AAH_JOB_SUCCEEDED, .have = 1,
	  .result = TRIAL_UNKNOWN, .kind = LIFECYCLE_SETTLE, .state = TRIAL_FAILED,
	  .why = "result.json has no known status" },
	{ "exit 0 in a pool", .job = AAH_JOB_SUCCEEDED, .have = 1, .result = TRIAL_SUCCEEDED,
	  .pool = 8, .visible = 1, .running_on = 8, .kind = LIFECYCLE_SETTLE,
	  .state = TRIAL_SUCCEEDED, .why = NO_REASON },
	{ "exit 0 while stopping: it ended well", .job = AAH_JOB_SUCCEEDED, .have = 1,
	  .result = TRIAL_SUCCEEDED, .stopping = 1, .kind = LIFECYCLE_SETTLE,
	  .state = TRIAL_SUCCEEDED, .why = NO_REASON },

	/* ---- a job that failed ---- */
	{ "a rank exited 7, one retry left (trial_retry)", .job = AAH_JOB_FAILED, .exit_code = 7,
	  .job_reason = "a rank exited with status 7", .retries = 1, .kind = LIFECYCLE_RETRY,
	  .state = TRIAL_FAILED, .next = 2, .why = "a rank exited with status 7" },
	{ "a rank exited 7 on the last retry", .job = AAH_JOB_FAILED, .exit_code = 7, .attempt = 2,
	  .job_reason = "a rank exited with status 7", .retries = 1, .kind = LIFECYCLE_SETTLE,
	  .state = TRIAL_FAILED, .why = "a rank exited with status 7" },
	{ "a rank exited 7, no retries", .job = AAH_JOB_FAILED, .exit_code = 7,
	  .job_reason = "a rank exited with status 7", .kind = LIFECYCLE_SETTLE,
	  .state = TRIAL_FAILED, .why = "status 7" },
	{ "attempt 3 of retries 5", .job = AAH_JOB_FAILED, .exit_code = 1, .attempt = 3,
	  .job_reason = "x", .retries = 5, .kind = LIFECYCLE_RETRY, .state = TRIAL_FAILED,
	  .next = 4, .why = "x" },
	{ "a failed exit with a good result.json is still a failure", .job = AAH_JOB_FAILED,
	  .exit_code = 139, .job_reason = "a rank was killed by signal 11", .have = 1,
	  .result = TRIAL_SUCCEEDED, .kind = LIFECYCLE_SETTLE, .state = TRIAL_FAILED,
	  .why = "signal 11" },
	{ "a failure the backend gave no words", .job = AAH_JOB_FAILED, .exit_code = 1,
	  .job_reason = "", .kind = LIFECYCLE_SETTLE, .state = TRIAL_FAILED,
	  .why = "the job failed" },
	{ "a failure once maxExecDuration is up: no retry", .job = AAH_JOB_FAILED, .exit_code = 1,
	  .job_reason = "boom", .retries = 2, .timeup = 1, .kind = LIFECYCLE_SETTLE,
	  .state = TRIAL_FAILED, .why = "boom" },
	{ "a failure while stopping: its retry is journaled, run by the resume", .job = AAH_JOB_FAILED,
	  .exit_code = 1, .job_reason = "boom", .retries = 1, .stopping = 1,
	  .kind = LIFECYCLE_RETRY, .state = TRIAL_FAILED, .next = 2, .why = "boom" },
	{ "could not be started (slurm_backend: a partition sbatch refuses)", .job = AAH_JOB_FAILED,
	  .exit_code = -1, .job_reason = "could not be started: sbatch: error: invalid partition",
	  .kind = LIFECYCLE_SETTLE, .state = TRIAL_FAILED, .why = "could not be started: sbatch" },
	{ "could not be started, a retry left", .job = AAH_JOB_FAILED, .exit_code = -1,
	  .job_reason = "could not be started: no image", .retries = 1, .kind = LIFECYCLE_RETRY,
	  .state = TRIAL_FAILED, .next = 2, .why = "could not be started" },
	{ "exit 86 not marked disrupted: a failure like any other", .job = AAH_JOB_FAILED,
	  .exit_code = EXIT_PEER_LOST, .job_reason = "a rank exited with status 86",
	  .retries = 1, .kind = LIFECYCLE_RETRY, .state = TRIAL_FAILED, .next = 2,
	  .why = "status 86" },

	/* ---- a job nobody can tell about any more (a runner killed, then resumed) ---- */
	{ "lost, its result.json succeeded (runner_crash, runner_finished)", .job = AAH_JOB_LOST,
	  .job_reason = "the process is gone", .have = 1, .result = TRIAL_SUCCEEDED,
	  .kind = LIFECYCLE_SETTLE, .state = TRIAL_SUCCEEDED, .why = NO_REASON },
	{ "lost, its result.json early_stopped", .job = AAH_JOB_LOST, .have = 1,
	  .result = TRIAL_EARLY_STOPPED, .job_reason = "gone", .kind = LIFECYCLE_SETTLE,
	  .state = TRIAL_EARLY_STOPPED, .why = NO_REASON },
	{ "lost without result.json", .job = AAH_JOB_LOST, .job_reason = "the process is gone",
	  .kind = LIFECYCLE_SETTLE, .state = TRIAL_FAILED, .why = "the process is gone" },
	{ "lost without result.json, a retry left (fault_injection)", .job = AAH_JOB_LOST,
	  .job_reason = "the process is gone", .retries = 1, .kind = LIFECYCLE_RETRY,
	  .state = TRIAL_FAILED, .next = 2, .why = "the process is gone" },
	{ "lost, result.json says failed", .job = AAH_JOB_LOST, .job_reason = "gone", .have = 1,
	  .result = TRIAL_FAILED, .kind = LIFECYCLE_SETTLE, .state = TRIAL_FAILED, .why = "gone" },
	{ "lost, result.json unreadable", .job = AAH_JOB_LOST, .job_reason = "", .have = -1,
	  .kind = LIFECYCLE_SETTLE, .state = TRIAL_FAILED, .why = "the job failed" },

	/* ---- a job canceled (a stop, maxExecDuration, a backend's own cancel) ---- */
	{ "canceled by a stop (fault_injection: kill during stop)", .job = AAH_JOB_CANCELED,
	  .job_reason = "stopped", .stopping = 1, .kind = LIFECYCLE_SETTLE,
	  .state = TRIAL_CANCELED, .why = "stopped" },
	{ "canceled while stopping, whatever the backend said", .job = AAH_JOB_CANCELED,
	  .job_reason = "Job j deleted", .stopping = 1, .kind = LIFECYCLE_SETTLE,
	  .state = TRIAL_CANCELED, .why = "stopped" },
	{ "canceled at maxExecDuration (runner_experiment)", .job = AAH_JOB_CANCELED,
	  .job_reason = "experiment budget (maxExecDuration) reached", .timeup = 1,
	  .kind = LIFECYCLE_SETTLE, .state = TRIAL_CANCELED, .why = "experiment budget" },
	{ "canceled, its result written before (runner_finished)", .job = AAH_JOB_CANCELED,
	  .job_reason = "stopped", .stopping = 1, .have = 1, .result = TRIAL_SUCCEEDED,
	  .kind = LIFECYCLE_SETTLE, .state = TRIAL_SUCCEEDED, .why = NO_REASON },
	{ "canceled at maxExecDuration after its result (runner_finished)", .job = AAH_JOB_CANCELED,
	  .job_reason = "experiment budget", .timeup = 1, .have = 1, .result = TRIAL_EARLY_STOPPED,
	  .kind = LIFECYCLE_SETTLE, .state = TRIAL_EARLY_STOPPED, .why = NO_REASON },
	{ "canceled with no words", .job = AAH_JOB_CANCELED, .job_reason = "",
	  .kind = LIFECYCLE_SETTLE, .state = TRIAL_CANCELED, .why = "canceled" },
	{ "canceled, retries left: a cancel is never retried", .job = AAH_JOB_CANCELED,
	  .job_reason = "Job j deleted", .retries = 3, .kind = LIFECYCLE_SETTLE,
	  .state = TRIAL_CANCELED, .why = "Job j deleted" },
	{ "canceled, result.json says failed", .job = AAH_JOB_CANCELED, .job_reason = "x",
	  .have = 1, .result = TRIAL_FAILED, .kind = LIFECYCLE_SETTLE, .state = TRIAL_CANCELED,
	  .why = "x" },

	/* ---- a job past a deadline ---- */
	{ "past trial.timeout, canceled (runner_experiment)", .job = AAH_JOB_TIMEOUT,
	  .job_reason = "over the trial timeout of 1s", .kind = LIFECYCLE_SETTLE,
	  .state = TRIAL_FAILED, .why = "timed out: over the trial timeout of 1s" },
	{ "past trial.timeout, a retry left", .job = AAH_JOB_TIMEOUT,
	  .job_reason = "over the trial timeout of 1s", .retries = 1, .kind = LIFECYCLE_RETRY,
	  .state = TRIAL_FAILED, .next = 2, .why = "timed out: over" },
	{ "past trial.timeout, its result written before", .job = AAH_JOB_TIMEOUT,
	  .job_reason = "over the trial timeout of 1s", .have = 1, .result = TRIAL_SUCCEEDED,
	  .kind = LIFECYCLE_SETTLE, .state = TRIAL_SUCCEEDED, .why = NO_REASON },
	{ "the backend's own deadline (slurm_backend)", .job = AAH_JOB_TIMEOUT,
	  .job_reason = "slurm job 5 TIMEOUT: over its Slurm time limit", .kind = LIFECYCLE_SETTLE,
	  .state = TRIAL_FAILED, .why = "timed out: slurm job 5 TIMEOUT" },
	{ "activeDeadlineSeconds (k8s_backend)", .job = AAH_JOB_TIMEOUT,
	  .job_reason = "Job passed its activeDeadlineSeconds", .kind = LIFECYCLE_SETTLE,
	  .state = TRIAL_FAILED, .why = "timed out: Job passed" },

	/* ---- the device pool: a resize ---- */
	{ "exit 85 in a pool: resized (elastic_pool, pool)", .job = AAH_JOB_FAILED,
	  .exit_code = EXIT_RESIZE, .job_reason = "every rank exited with status 85", .pool = 8,
	  .running_on = 8, .kind = LIFECYCLE_RESIZE, .next = 1,
	  .why = "resized at a step boundary (it ran on 8 devices)" },
	{ "exit 85 in a pool, retries left: not charged", .job = AAH_JOB_FAILED, .attempt = 2,
	  .exit_code = EXIT_RESIZE, .job_reason = "x", .pool = 8, .running_on = 3, .retries = 3,
	  .kind = LIFECYCLE_RESIZE, .next = 2, .why = "(it ran on 3 devices)" },
	{ "exit 85 in a pool while stopping: still requeued", .job = AAH_JOB_FAILED,
	  .exit_code = EXIT_RESIZE, .job_reason = "x", .pool = 8, .running_on = 4, .stopping = 1,
	  .kind = LIFECYCLE_RESIZE, .next = 1, .why = "resized" },
	/* once maxExecDuration is up no queued trial runs again (fill_slots),
	 * so a requeued one would keep the experiment from ever being done:
	 * it settles as a trial running at that moment does (cancel_running) */
	{ "exit 85 in a pool once maxExecDuration is up: canceled, not requeued",
	  .job = AAH_JOB_FAILED, .exit_code = EXIT_RESIZE, .job_reason = "x", .pool = 8,
	  .running_on = 4, .timeup = 1, .retries = 2, .kind = LIFECYCLE_SETTLE,
	  .state = TRIAL_CANCELED,
	  .why = "experiment budget (maxExecDuration) reached while it was being resized "
		 "(it ran on 4 devices)" },
	{ "presumed resized (lost) once maxExecDuration is up: canceled", .job = AAH_JOB_LOST,
	  .job_reason = "gone", .pool = 8, .told_other = 1, .running_on = 4, .timeup = 1,
	  .kind = LIFECYCLE_SETTLE, .state = TRIAL_CANCELED,
	  .why = "experiment budget (maxExecDuration) reached while it was being resized" },
	{ "exit 85 once maxExecDuration is up while stopping: stopped, resumable",
	  .job = AAH_JOB_FAILED, .exit_code = EXIT_RESIZE, .job_reason = "x", .pool = 8,
	  .running_on = 4, .timeup = 1, .stopping = 1, .kind = LIFECYCLE_SETTLE,
	  .state = TRIAL_CANCELED, .why = "stopped" },
	{ "exit 85 and disrupted in a pool: the resize wins", .job = AAH_JOB_FAILED,
	  .exit_code = EXIT_RESIZE, .disrupted = 1, .job_reason = PREEMPTED, .pool = 8,
	  .running_on = 5, .kind = LIFECYCLE_RESIZE, .next = 1, .why = "resized" },
	{ "exit 85 outside a pool: a failure", .job = AAH_JOB_FAILED, .exit_code = EXIT_RESIZE,
	  .job_reason = "a rank exited with status 85", .kind = LIFECYCLE_SETTLE,
	  .state = TRIAL_FAILED, .why = "status 85" },
	{ "another exit in a pool: a failure", .job = AAH_JOB_FAILED, .exit_code = 1,
	  .job_reason = "a rank exited with status 1", .pool = 8, .running_on = 8, .retries = 1,
	  .kind = LIFECYCLE_RETRY, .state = TRIAL_FAILED, .next = 2, .why = "status 1" },
	{ "lost in a pool, no result, told another size: presumed resized (elastic_pool crash)",
	  .job = AAH_JOB_LOST, .job_reason = "gone", .pool = 8, .told_other = 1, .running_on = 4,
	  .kind = LIFECYCLE_RESIZE, .next = 1, .why = "(it ran on 4 devices)" },
	{ "lost in a pool, no result, told its own size: failed", .job = AAH_JOB_LOST,
	  .job_reason = "gone", .pool = 8, .running_on = 4, .kind = LIFECYCLE_SETTLE,
	  .state = TRIAL_FAILED, .why = "gone" },
	{ "lost in a pool, told another size, its result there: the result decides",
	  .job = AAH_JOB_LOST, .job_reason = "gone", .pool = 8, .told_other = 1, .visible = 1,
	  .have = 1, .result = TRIAL_SUCCEEDED, .running_on = 4, .kind = LIFECYCLE_SETTLE,
	  .state = TRIAL_SUCCEEDED, .why = NO_REASON },
	{ "lost in a pool, told another size, an unreadable result there: failed",
	  .job = AAH_JOB_LOST, .job_reason = "gone", .pool = 8, .told_other = 1, .visible = 1,
	  .have = -1, .running_on = 4, .kind = LIFECYCLE_SETTLE, .state = TRIAL_FAILED,
	  .why = "gone" },
	{ "lost outside a pool, told another size: no resize", .job = AAH_JOB_LOST,
	  .job_reason = "gone", .told_other = 1, .kind = LIFECYCLE_SETTLE, .state = TRIAL_FAILED,
	  .why = "gone" },
	{ "canceled in a pool: no resize", .job = AAH_JOB_CANCELED, .exit_code = EXIT_RESIZE,
	  .job_reason = "stopped", .stopping = 1, .pool = 8, .told_other = 1,
	  .kind = LIFECYCLE_SETTLE, .state = TRIAL_CANCELED, .why = "stopped" },
	{ "timed out in a pool with exit 85: no resize", .job = AAH_JOB_TIMEOUT,
	  .exit_code = EXIT_RESIZE, .job_reason = "over the trial timeout of 9s", .pool = 8,
	  .kind = LIFECYCLE_SETTLE, .state = TRIAL_FAILED, .why = "timed out" },

	/* ---- a node taken away by the cluster (k8s_preempt) ---- */
	{ "a preempted pod: relaunched from its checkpoint, attempt 1 again", .job = AAH_JOB_FAILED,
	  .exit_code = EXIT_PEER_LOST, .disrupted = 1, .job_reason = PREEMPTED,
	  .kind = LIFECYCLE_RELAUNCH, .next = 1,
	  .why = "relaunched from its checkpoint: pod j-1 was disrupted (PreemptionByScheduler)" },
	{ "a preempted pod, retries left: not charged", .job = AAH_JOB_FAILED, .attempt = 2,
	  .disrupted = 1, .job_reason = PREEMPTED, .retries = 2, .kind = LIFECYCLE_RELAUNCH,
	  .next = 2, .why = "relaunched from its checkpoint" },
	{ "the 10th disruption of an attempt: relaunched", .job = AAH_JOB_FAILED, .disrupted = 1,
	  .job_reason = PREEMPTED, .relaunched = 9, .kind = LIFECYCLE_RELAUNCH, .next = 1,
	  .why = "relaunched" },
	{ "the 11th disruption of an attempt: a failure", .job = AAH_JOB_FAILED, .disrupted = 1,
	  .job_reason = PREEMPTED, .relaunched = 10, .kind = LIFECYCLE_SETTLE,
	  .state = TRIAL_FAILED, .why = PREEMPTED },
	{ "the 11th disruption, a retry left: retried as attempt 2", .job = AAH_JOB_FAILED,
	  .disrupted = 1, .job_reason = PREEMPTED, .relaunched = 10, .retries = 1,
	  .kind = LIFECYCLE_RETRY, .state = TRIAL_FAILED, .next = 2, .why = "was disrupted" },
	{ "a preempted pod after 3 relaunches of its attempt: the 4th", .job = AAH_JOB_FAILED,
	  .attempt = 2, .disrupted = 1, .job_reason = PREEMPTED, .relaunched = 3, .retries = 1,
	  .kind = LIFECYCLE_RELAUNCH, .next = 2, .why = "relaunched" },
	{ "disrupted while stopping: a failure", .job = AAH_JOB_FAILED, .disrupted = 1,
	  .job_reason = PREEMPTED, .stopping = 1, .kind = LIFECYCLE_SETTLE, .state = TRIAL_FAILED,
	  .why = "was disrupted" },
	{ "disrupted once maxExecDuration is up: a failure", .job = AAH_JOB_FAILED, .disrupted = 1,
	  .job_reason = PREEMPTED, .retries = 1, .timeup = 1, .kind = LIFECYCLE_SETTLE,
	  .state = TRIAL_FAILED, .why = "was disrupted" },
	{ "disrupted but lost: the result decides", .job = AAH_JOB_LOST, .disrupted = 1,
	  .job_reason = "gone", .have = 1, .result = TRIAL_SUCCEEDED, .kind = LIFECYCLE_SETTLE,
	  .state = TRIAL_SUCCEEDED, .why = NO_REASON },
	{ "disrupted but canceled: canceled", .job = AAH_JOB_CANCELED, .disrupted = 1,
	  .job_reason = "Job j deleted", .kind = LIFECYCLE_SETTLE, .state = TRIAL_CANCELED,
	  .why = "Job j deleted" },
	{ "disrupted in a pool (k8s_elastic): relaunched", .job = AAH_JOB_FAILED, .disrupted = 1,
	  .exit_code = EXIT_PEER_LOST, .job_reason = PREEMPTED, .pool = 8, .running_on = 2,
	  .kind = LIFECYCLE_RELAUNCH, .next = 1, .why = "relaunched from its checkpoint" },

	/* ---- a runner resumes: the journal alone decides (runner_crash, fault_injection) ---- */
	{ "resume: stopped on purpose, requeued as the same attempt", .nojob = 1,
	  .tstate = TRIAL_CANCELED, .treason = "stopped", .kind = LIFECYCLE_REQUEUE, .next = 1,
	  .why = "stopped" },
	{ "resume: stopped in attempt 2, requeued as attempt 2", .nojob = 1, .attempt = 2,
	  .tstate = TRIAL_CANCELED, .treason = "stopped", .retries = 1, .kind = LIFECYCLE_REQUEUE,
	  .next = 2, .why = "stopped" },
	{ "resume: canceled at maxExecDuration stays canceled", .nojob = 1,
	  .tstate = TRIAL_CANCELED, .treason = "experiment budget (maxExecDuration) reached",
	  .kind = LIFECYCLE_WAIT, .why = NO_REASON },
	{ "resume: canceled with no reason stays canceled", .nojob = 1, .tstate = TRIAL_CANCELED,
	  .kind = LIFECYCLE_WAIT, .why = NO_REASON },
	{ "resume: killed between a failure and its retry", .nojob = 1, .tstate = TRIAL_FAILED,
	  .treason = "a rank exited with status 7", .retries = 1, .kind = LIFECYCLE_RETRY,
	  .next = 2, .why = "status 7" },
	{ "resume: a failure with no reason, a retry due", .nojob = 1, .tstate = TRIAL_FAILED,
	  .retries = 1, .kind = LIFECYCLE_RETRY, .next = 2, .why = NO_REASON },
	{ "resume: a failure with its retries spent", .nojob = 1, .tstate = TRIAL_FAILED,
	  .attempt = 2, .treason = "x", .retries = 1, .kind = LIFECYCLE_WAIT, .why = NO_REASON },
	{ "resume: a failure, no retries", .nojob = 1, .tstate = TRIAL_FAILED, .treason = "x",
	  .kind = LIFECYCLE_WAIT, .why = NO_REASON },
	{ "resume: running, slotted again", .nojob = 1, .tstate = TRIAL_RUNNING,
	  .kind = LIFECYCLE_WAIT, .why = NO_REASON },
	{ "resume: queued", .nojob = 1, .tstate = TRIAL_QUEUED, .kind = LIFECYCLE_WAIT,
	  .why = NO_REASON },
	{ "resume: succeeded", .nojob = 1, .tstate = TRIAL_SUCCEEDED, .retries = 2,
	  .kind = LIFECYCLE_WAIT, .why = NO_REASON },
	{ "resume: early_stopped", .nojob = 1, .tstate = TRIAL_EARLY_STOPPED,
	  .kind = LIFECYCLE_WAIT, .why = NO_REASON },

	/* ---- queued when maxExecDuration is up: no slot is filled any more ---- */
	{ "queued at maxExecDuration (waiting for its pool share): canceled (pool, elastic_pool)",
	  .nojob = 1, .tstate = TRIAL_QUEUED, .timeup = 1, .pool = 8, .kind = LIFECYCLE_SETTLE,
	  .state = TRIAL_CANCELED,
	  .why = "experiment budget (maxExecDuration) reached while it waited to run" },
	{ "queued for its retry at maxExecDuration: canceled, not retried", .nojob = 1,
	  .tstate = TRIAL_QUEUED, .attempt = 2, .retries = 3, .timeup = 1,
	  .kind = LIFECYCLE_SETTLE, .state = TRIAL_CANCELED, .why = "while it waited to run" },
	{ "queued for a relaunch at maxExecDuration: canceled", .nojob = 1,
	  .tstate = TRIAL_QUEUED, .relaunched = 2, .timeup = 1, .kind = LIFECYCLE_SETTLE,
	  .state = TRIAL_CANCELED, .why = "while it waited to run" },
	{ "queued at maxExecDuration while stopping: canceled all the same", .nojob = 1,
	  .tstate = TRIAL_QUEUED, .timeup = 1, .stopping = 1, .kind = LIFECYCLE_SETTLE,
	  .state = TRIAL_CANCELED, .why = "while it waited to run" },
	{ "running at maxExecDuration, no job polled: its job decides, later", .nojob = 1,
	  .tstate = TRIAL_RUNNING, .timeup = 1, .kind = LIFECYCLE_WAIT, .why = NO_REASON },
	{ "failed at maxExecDuration, no job polled: stays failed", .nojob = 1,
	  .tstate = TRIAL_FAILED, .attempt = 2, .retries = 1, .timeup = 1,
	  .kind = LIFECYCLE_WAIT, .why = NO_REASON },
};

#define NROWS (sizeof(rows) / sizeof(rows[0]))

/* The trial record of row r. Its retries list says 20 relaunches of its
 * attempt in prose: only the record's count (relaunches) may decide. */
static void trial_of(const struct row *r, struct trial_rec *t)
{
	memset(t, 0, sizeof(*t));
	t->seq = 1;
	t->state = r->nojob ? r->tstate : TRIAL_RUNNING;
	t->attempt = r->attempt ? r->attempt : 1;
	t->reason = (char *)r->treason;
	t->submitted = 1000 - r->ran;
	t->best_acc = NAN;
	t->slot = -1;
	t->relaunches = r->relaunched;
	strvec_init(&t->retries);
	strvec_pushf(&t->retries, "attempt %u: a rank exited with status 3", t->attempt);
	for (unsigned i = 0; i < 20; i++)
		strvec_pushf(&t->retries, "attempt %u: " LIFECYCLE_RELAUNCH_WHY "%s", t->attempt,
			     PREEMPTED);
}

static void decide_row(const struct row *r, struct trial_rec *t, struct lifecycle_action *act)
{
	struct aah_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	cfg.trial.retries = r->retries;
	cfg.trial.timeout = r->timeout;
	cfg.pool.devices = r->pool;
	struct aah_job_status st = { .job = "job-1", .state = r->job, .exit_code = r->exit_code,
				     .disrupted = r->disrupted };
	snprintf(st.reason, sizeof(st.reason), "%s", r->job_reason ? r->job_reason : "");
	struct outcome out;
	memset(&out, 0, sizeof(out));
	out.best_acc = out.final_acc = NAN;
	out.state = TRIAL_UNKNOWN;
	out.have_result = r->have;
	out.result.status = r->have > 0 ? r->result : TRIAL_UNKNOWN;
	if (r->result_reason)
		xstrlcpy(out.result.stop_reason, r->result_reason, sizeof(out.result.stop_reason));
	trial_of(r, t);
	int ended = !r->nojob && lifecycle_job_ended(r->job);
	struct lifecycle_in in = {
		.cfg = &cfg,
		.trial = t,
		.job = r->nojob ? NULL : &st,
		.outcome = ended ? &out : NULL,
		.trial_dir = DIR,
		.pool = { .in_pool = r->pool > 0, .result_visible = r->visible,
			  .told_other = r->told_other, .running_on = r->running_on },
		.now = 1000,
		.stopping = r->stopping,
		.timeup = r->timeup,
	};
	memset(act, 0x5a, sizeof(*act));   /* every field it returns must be set */
	lifecycle_decide(&in, act);
}

/* One row: its action, reason, state and next attempt. (The rows are
 * walked in one test, not as Criterion parameters: those cross into the
 * test's process by value, and a row points at strings.) */
static void check_row(const struct row *r)
{
	struct trial_rec t;
	struct lifecycle_action act;
	decide_row(r, &t, &act);
	cr_expect_eq(act.kind, r->kind, "%s: %s, not %s", r->name, lifecycle_kind_name(act.kind),
		     lifecycle_kind_name(r->kind));
	cr_expect(memchr(act.reason, '\0', sizeof(act.reason)), "%s: reason not ended", r->name);
	if (r->why)
		cr_expect(strstr(act.reason, r->why), "%s: reason '%s' lacks '%s'", r->name,
			  act.reason, r->why);
	else
		cr_expect_str_empty(act.reason, "%s: reason '%s', not none", r->name, act.reason);
	if (r->kind == LIFECYCLE_SETTLE || (!r->nojob && r->kind == LIFECYCLE_RETRY))
		cr_expect_eq(act.state, r->state, "%s: state %s, not %s", r->name,
			     expdir_state_name(act.state), expdir_state_name(r->state));
	if (r->kind == LIFECYCLE_RETRY || r->kind == LIFECYCLE_REQUEUE ||
	    r->kind == LIFECYCLE_RESIZE || r->kind == LIFECYCLE_RELAUNCH)
		cr_expect_eq(act.attempt, r->next, "%s: attempt %u, not %u", r->name, act.attempt,
			     r->next);
	/* a relaunch says which of its attempt it is; nothing else is one */
	cr_expect_eq(act.relaunch, r->kind == LIFECYCLE_RELAUNCH ? r->relaunched + 1 : 0,
		     "%s: relaunch %u", r->name, act.relaunch);
	/* a settled trial keeps its attempt; only a retry charges another */
	if (r->kind == LIFECYCLE_SETTLE)
		cr_expect_eq(act.attempt, t.attempt, "%s", r->name);
	strvec_clear(&t.retries);
}

Test(lifecycle, table)
{
	for (size_t i = 0; i < NROWS; i++)
		check_row(&rows[i]);
	cr_log_info("%zu rows", NROWS);
}

/* The table holds a row for every action and every job state. */
Test(lifecycle, the_table_covers_every_action_and_job_state)
{
	unsigned kinds = 0, jobs = 0;
	for (size_t i = 0; i < NROWS; i++) {
		kinds |= 1u << rows[i].kind;
		if (!rows[i].nojob)
			jobs |= 1u << rows[i].job;
	}
	cr_assert_eq(kinds, (1u << (LIFECYCLE_RELAUNCH + 1)) - 1, "kinds seen: %#x", kinds);
	cr_assert_eq(jobs, (1u << (AAH_JOB_LOST + 1)) - 1, "job states seen: %#x", jobs);
	for (int k = LIFECYCLE_WAIT; k <= LIFECYCLE_RELAUNCH; k++)
		cr_assert_str_neq(lifecycle_kind_name((enum lifecycle_kind)k), "?");
}

/* The same facts, the same action: nothing but its input decides. */
Test(lifecycle, deciding_twice_decides_the_same)
{
	for (size_t i = 0; i < NROWS; i++) {
		struct trial_rec t1, t2;
		struct lifecycle_action a1, a2;
		decide_row(&rows[i], &t1, &a1);
		decide_row(&rows[i], &t2, &a2);
		cr_assert_eq(a1.kind, a2.kind, "%s", rows[i].name);
		cr_assert_str_eq(a1.reason, a2.reason, "%s", rows[i].name);
		strvec_clear(&t1.retries);
		strvec_clear(&t2.retries);
	}
}

/* A reason that would not fit is cut, never overrun: a long trial
 * directory, a backend's reason of the most it may say. */
Test(lifecycle, a_long_reason_is_cut_to_fit)
{
	char dir[1024], why[256];
	memset(dir, 'd', sizeof(dir) - 1);
	dir[sizeof(dir) - 1] = '\0';
	memset(why, 'w', sizeof(why) - 1);
	why[sizeof(why) - 1] = '\0';
	struct aah_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	struct trial_rec t = { .seq = 1, .state = TRIAL_RUNNING, .attempt = 1 };
	strvec_init(&t.retries);
	strvec_init(&t.notes);
	struct outcome out = { .have_result = 0 };
	struct aah_job_status st = { .job = "j", .state = AAH_JOB_SUCCEEDED };
	struct lifecycle_in in = { .cfg = &cfg, .trial = &t, .job = &st, .outcome = &out,
				   .trial_dir = dir };
	struct lifecycle_action act;
	lifecycle_decide(&in, &act);
	cr_assert_eq(strlen(act.reason), sizeof(act.reason) - 1);
	cr_assert(!strncmp(act.reason, "no valid result.json in ddd", 27));

	st.state = AAH_JOB_FAILED;
	st.disrupted = 1;
	memcpy(st.reason, why, sizeof(why));
	lifecycle_decide(&in, &act);
	cr_assert_eq(act.kind, LIFECYCLE_RELAUNCH);
	cr_assert_eq(strlen(act.reason), strlen(LIFECYCLE_RELAUNCH_WHY) + strlen(why));
	st.state = AAH_JOB_TIMEOUT;
	lifecycle_decide(&in, &act);
	cr_assert_eq(act.kind, LIFECYCLE_SETTLE);
	cr_assert_eq(strlen(act.reason), strlen("timed out: ") + strlen(why));
}

/* The outcome is not needed while the job runs, and a job that ended
 * without one read (NULL) counts as no result.json. */
Test(lifecycle, no_outcome_counts_as_no_result)
{
	struct aah_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	struct trial_rec t = { .seq = 1, .state = TRIAL_RUNNING, .attempt = 1 };
	struct aah_job_status st = { .job = "j", .state = AAH_JOB_LOST, .reason = "gone" };
	struct lifecycle_in in = { .cfg = &cfg, .trial = &t, .job = &st, .trial_dir = DIR };
	struct lifecycle_action act;
	lifecycle_decide(&in, &act);
	cr_assert_eq(act.kind, LIFECYCLE_SETTLE);
	cr_assert_eq(act.state, TRIAL_FAILED);
	cr_assert_str_eq(act.reason, "gone");
	st.state = AAH_JOB_SUCCEEDED;
	lifecycle_decide(&in, &act);
	cr_assert_str_eq(act.reason, "no valid result.json in " DIR);
}
