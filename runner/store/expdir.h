/* expdir.h: the experiment directory on disk, its one reader and writer of
 * the formats in docs/formats.md: trial states and their names, trial ids
 * and paths, journal events (append, decode, replay), experiment.json,
 * result.json and metrics.jsonl.
 *
 * The split with experiment.h: expdir knows files and formats and keeps no
 * state between calls; struct experiment (experiment.c) is the in-memory
 * experiment a runner or `status` builds by replaying the journal through
 * expdir, and the report builds its own view (report/load.c) the same way. */
#ifndef AAH_EXPDIR_H
#define AAH_EXPDIR_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* ---- trial states ------------------------------------------------------ */

/* The order is the order the report lists states in. */
enum trial_state {
	TRIAL_QUEUED,         /* created or retried, not submitted */
	TRIAL_RUNNING,        /* last event trial_submitted */
	TRIAL_SUCCEEDED,
	TRIAL_EARLY_STOPPED,
	TRIAL_FAILED,
	TRIAL_CANCELED,
	TRIAL_UNKNOWN,        /* a trial directory the journal does not name */
	TRIAL_NSTATES
};

/* The one name of a state ("queued", "succeeded", ...), as the journal,
 * `status`, results.json and the Prometheus text write it. */
const char *expdir_state_name(enum trial_state s);
/* 0 with *out set, or -1 for a name that is not a state. */
int expdir_state_parse(const char *name, enum trial_state *out);
/* A trial in this state has settled: it will not run again by itself. */
int expdir_state_final(enum trial_state s);

/* ---- trial ids and paths ------------------------------------------------ */

#define EXPDIR_TRIAL_MAX 999999u    /* ids have six digits */
#define EXPDIR_TRIAL_ID_SIZE 16     /* holds the id of any unsigned */

/* The id of trial seq ("000001"), written into buf and returned. */
const char *expdir_trial_id(unsigned seq, char buf[EXPDIR_TRIAL_ID_SIZE]);
/* The sequence number of a trial id: six digits, 1..EXPDIR_TRIAL_MAX.
 * 0, or -1 when id is not a trial id. */
int expdir_trial_seq(const char *id, unsigned *seq);
/* <expdir>/trials/<id>. The caller frees it. */
char *expdir_trial_dir(const char *expdir, unsigned seq);
/* The files of a trial directory (docs/formats.md), named in one table. */
enum expdir_file {
	EXPDIR_ARCH,              /* arch.json: the network (aah-arch/1), the tuner's */
	EXPDIR_PARAMS,            /* params.json: the hyperparameters, written last */
	EXPDIR_MORPH,             /* morph.json: how it grew from its parent (aah-morph/1) */
	EXPDIR_RESULT,            /* result.json (aah-result/1), the trainer's */
	EXPDIR_METRICS,           /* metrics.jsonl (aah-metrics/1), the trainer's */
	EXPDIR_LAUNCH,            /* launch.json: the launch contract */
	EXPDIR_RANK_TABLE,        /* rank_table.json */
	EXPDIR_HOSTFILE,          /* hostfile: trial.launcher mpi's */
	EXPDIR_TRIAL_LOG,         /* trial.log: every rank's output */
	EXPDIR_WAITING,           /* waiting: why the backend holds the running trial's job back */
	EXPDIR_NFILES
};
/* The file's name in a trial directory ("arch.json"). */
const char *expdir_file_name(enum expdir_file f);
/* <trial_dir>/<the file's name>. The caller frees it. */
char *expdir_file(const char *trial_dir, enum expdir_file f);
/* <expdir>/trials/<id>/<the file's name>. The caller frees it. */
char *expdir_trial_file(const char *expdir, unsigned seq, enum expdir_file f);
/* A running trial's job held back (a cluster queue has not admitted it):
 * set writes why into its `waiting` file (when it says something else),
 * NULL removes the file; get returns the line, or NULL when it runs. The
 * caller frees what get returns. */
int expdir_waiting_set(const char *expdir, unsigned seq, const char *why);
char *expdir_waiting_get(const char *expdir, unsigned seq);
/* ---- attempts' places (docs/formats.md, "Attempts and their places") ---- */

/* Every launch of a trial writes into a place of its own, named in its
 * trial_submitted ("place"): the trial's first launch into the trial
 * directory itself (""), the first launch of attempt N > 1 into
 * "attempt-N", a later launch K of attempt N (K = 1, 2, ...: relaunched
 * after its cluster lost it, requeued after a stop) into "attempt-N.K".
 * Only a resize, whose ranks all exited, goes on in its launch's place. */
#define EXPDIR_PLACE_SIZE 32
/* The place of attempt's launch-th launch (0: its first), into buf and returned. */
const char *expdir_place_name(unsigned attempt, unsigned launch, char buf[EXPDIR_PLACE_SIZE]);
/* 1 when place is "" or a name expdir_place_name gives. */
int expdir_place_valid(const char *place);
/* The directory of place (NULL or "": the trial directory). The caller frees it. */
char *expdir_place_dir(const char *expdir, unsigned seq, const char *place);
/* 1 when a trial directory's entry of that name is the trial's own (its
 * proposal, its log, an attempt's place), not something an attempt that
 * ran there wrote. */
int expdir_trial_owns(const char *name);

/* The work directory that holds an experiment directory
 * (<workdir>/experiments/<id>), absolute and resolved when it exists.
 * The caller frees it. */
char *expdir_workdir(const char *expdir);
/* The sequence numbers of the trial directories under <expdir>/trials, in
 * increasing order, into *seqs (the caller frees it); other names are
 * skipped. 0 (nothing when there is no trials/ yet), or -1. */
int expdir_trial_list(const char *expdir, unsigned **seqs, size_t *n);

/* ---- experiment.json ---------------------------------------------------- */

struct expdir_info {
	char *id;                 /* owned; required */
	char *name;               /* owned; NULL when absent */
	char *config_source;      /* owned; the user's config.yml at create, or NULL */
	char *workdir;            /* owned; the work directory at create, or NULL */
	double created;           /* Unix time; required */
	long seed;                /* 0 when absent */
};

/* Write <expdir>/experiment.json (aah-experiment/1). */
int expdir_info_write(const char *expdir, const struct expdir_info *info);
/* Read <expdir>/experiment.json. Errors name the file and the field. */
int expdir_info_read(const char *expdir, struct expdir_info *info);
void expdir_info_release(struct expdir_info *info);

/* ---- the journal (journal.jsonl, aah-journal/1) ------------------------ */

enum expdir_event_kind {
	EXPDIR_EV_EXPERIMENT_CREATED,
	EXPDIR_EV_RUNNER_STARTED,
	EXPDIR_EV_RUNNER_STOPPED,
	EXPDIR_EV_EXPERIMENT_DONE,
	EXPDIR_EV_TRIAL_CREATED,
	EXPDIR_EV_TRIAL_SUBMITTED,
	EXPDIR_EV_TRIAL_FINISHED,
	EXPDIR_EV_TRIAL_RETRY,
	EXPDIR_EV_TRIAL_NOTE,     /* what the backend said of a running job (a queue, a preemption) */
	EXPDIR_EV_UNKNOWN,        /* a name this version does not know */
};

/* The journal's name of an event kind ("trial_submitted", ...). */
const char *expdir_event_name(enum expdir_event_kind kind);

/* A master's proposal's network as arch_check counts it, journaled with
 * the trial's submission so that the report need not read every arch.json
 * for AIPerf's epoch charge: FLOPs per image forward and backward, and its
 * classes. classes 0: not journaled (no network, proposed in the trial, or
 * a journal before it); the trial's arch.json then says. */
struct expdir_arch_flops {
	double fwd, bwd;
	int classes;
};

/* One decoded journal line. Strings point into doc and live only as long
 * as the visit. Fields an event does not carry keep their "absent" value. */
struct expdir_event {
	enum expdir_event_kind kind;
	const char *name;         /* the "event" string as written */
	long seq;                 /* the line's "seq"; -1 when absent */
	double ts;                /* "ts", Unix time; 0 when absent */
	unsigned trial_seq;       /* trial_* events: the trial ("trial_seq" or "trial") */
	unsigned attempt;         /* trial_* events: "attempt"; 0 when absent */
	const char *job;          /* trial_submitted: backend job id; NULL when absent */
	const char *gpus;         /* trial_submitted: devices of the slot; NULL when absent */
	const char *place;        /* trial_submitted: the launch's place (expdir_place_name);
				   * NULL: the trial directory (and every journal before places) */
	unsigned relaunch;        /* trial_retry: the relaunch of its attempt this requeue
				   * is, 1-based; 0 when it is none, or the line predates
				   * the field (journal.h says how those count) */
	int keep_place;           /* trial_retry: the next launch goes on in the last one's
				   * place (a resize: every rank of it exited) */
	int slot;                 /* trial_submitted: -1 when absent */
	struct expdir_arch_flops arch; /* trial_submitted: "arch_flops_fwd", "arch_flops_bwd",
				   * "arch_classes"; classes 0 when absent */
	enum trial_state state;   /* trial_finished: a final state */
	int exit_code;            /* trial_finished: -1 when absent */
	double best_val_acc;      /* trial_finished: NaN when absent */
	double flops;             /* trial_finished: 0 when absent */
	const char *reason;       /* trial_finished, experiment_done, runner_stopped; or NULL */
	const char *exp_name;     /* experiment_created: "name"; or NULL */
	const cJSON *doc;         /* the whole line */
};

/* Called for every line in order; a negative return stops the replay and
 * is returned. An unknown event reaches the visitor as EXPDIR_EV_UNKNOWN
 * with only name, seq, ts and doc set, so that its seq still counts. */
typedef int (*expdir_visit_fn)(const struct expdir_event *ev, void *arg);

/* 1 when <expdir>/journal.jsonl exists. */
int expdir_journal_exists(const char *expdir);
/* Replay <expdir>/journal.jsonl through visit. A torn last line (a writer
 * killed mid-line) is skipped with a warning; a line that is not JSON, has
 * no "event" string, a trial event that names no trial or a trial_finished
 * without a final state are errors. A missing journal is an error. */
int expdir_replay(const char *expdir, expdir_visit_fn visit, void *arg);
/* Append event kind as line seq (fields is consumed; may be NULL), with
 * FILEIO_* flags, then hand the line to visit (may be NULL) exactly as
 * expdir_replay would. */
int expdir_journal_append(const char *expdir, unsigned long seq, enum expdir_event_kind kind,
			  cJSON *fields, unsigned flags, expdir_visit_fn visit, void *arg);
/* Force the journal's lines to disk (those appended with FILEIO_NOSYNC). */
int expdir_journal_sync(const char *expdir);
/* 1 when the journal has a trial_submitted whose job (comma-joined rank
 * ids) has part as one of its elements; 0 otherwise, also when the
 * journal cannot be read. */
int expdir_journal_has_job(const char *expdir, const char *part);

/* ---- result.json (aah-result/1) ------------------------------------------ */

struct expdir_result {
	enum trial_state status;  /* "status"; TRIAL_UNKNOWN when absent or not a state */
	double best_val_acc;      /* NaN when absent */
	double total_flops;       /* 0 when absent */
	char precision[16];       /* "" when absent */
	char backend[16];         /* the compute backend that ran ("cuda", "cpu"); "" when absent */
	char device[96];          /* "device_names"' first: the GPU's name; "" when absent */
	char stop_reason[160];    /* "" when absent */
	char inherited_from[16];  /* parent trial id of an inheriting trial; "" when absent */
	double result_floor;      /* "result_floor_seconds": the least a launch of its network
				   * takes to a result under a deadline; 0 when absent */
	int on_gpu;               /* "devices" names a GPU (cuda:N, gpu...) */
	int nni;                  /* "source" is "nni": the runner wrote it from an NNI trial's
				   * records, best_val_acc is its FINAL result (docs/nni.md) */
	double written;           /* the file's modification time, Unix time */
};

/* Read <trial_dir>/result.json: 1 when read, 0 when the trial has none
 * (yet), -1 (error reported) when it is not valid JSON, not aah-result/1,
 * or a field has the wrong type. */
int expdir_result_read(const char *trial_dir, struct expdir_result *res);
/* 1 when the result.json of a launch's place dir can be seen. The
 * directory is listed first: that revalidates an NFS client's cached view
 * of it. */
int expdir_result_visible(const char *dir);

/* ---- metrics.jsonl (aah-metrics/1) --------------------------------------- */

struct expdir_epoch {
	double ts;                /* "timestamp": Unix time the epoch ended */
	double val_acc;           /* in [0,1] */
	double flops;             /* cumulative train_flops + eval_flops of the trial */
	double images_per_sec;    /* 0 when absent */
	double part;              /* "part": the share of an epoch's steps trained (1 when
				   * absent; aah-trial --partial_epoch) */
	int epoch;                /* 1-based; the line's position when absent */
};

/* Read <trial_dir>/metrics.jsonl into *epochs (n of them, file order; the
 * caller frees *epochs). Lines without a numeric timestamp and val_acc are
 * not epochs and are skipped, as is a torn last line. 0 with *n = 0 when
 * there is no file yet; -1 when a line is not JSON. */
int expdir_metrics_read(const char *trial_dir, struct expdir_epoch **epochs, size_t *n);

/* ---- a trial's figures ---------------------------------------------------- */

/* The one rule for a trial's best accuracy, FLOPs and the epochs a score
 * counts: the epochs of metrics.jsonl; a trial that wrote none (a shell trial
 * that writes only result.json) has one epoch with res's best_val_acc and
 * total_flops, ended at end_ts (0: when result.json was written). Reads
 * metrics.jsonl like expdir_metrics_read; res is NULL when the trial has no
 * result.json. */
int expdir_trial_epochs(const char *trial_dir, const struct expdir_result *res, double end_ts,
			struct expdir_epoch **epochs, size_t *n);

#endif
