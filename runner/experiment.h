/* experiment.h: an experiment in memory, as its runner and `status` see it:
 * create the directory, open it by replaying the journal, record events.
 * The files and their formats are expdir's (runner/store/expdir.h). */
#ifndef AAH_EXPERIMENT_H
#define AAH_EXPERIMENT_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "runner/config/config.h"
#include "strvec.h"
#include "runner/store/expdir.h" /* enum trial_state, enum expdir_event_kind, expdir_trial_dir */

struct trial_rec {
	unsigned seq;             /* 1-based; the trial id is expdir_trial_id(seq) */
	enum trial_state state;
	unsigned attempt;         /* 1-based attempt now running or last run */
	char *job;                /* backend job id of the last submission, or NULL */
	int slot;                 /* -1 when none */
	char *gpus;               /* devices of the slot, or NULL */
	double submitted;         /* wall time of the last submission, 0 if none */
	double finished;          /* wall time it settled, 0 if not */
	double best_acc;          /* NaN when unknown */
	double flops;
	int exit_code;
	char *reason;
	struct strvec retries;     /* "attempt N: why it ended", one per retry */
	struct strvec notes;       /* "attempt N: what its backend said", trial_note events */
};

struct experiment {
	char *id;
	char *dir;                /* absolute experiment directory */
	char *workdir;            /* the work directory holding it, absolute (expdir_workdir) */
	char *name;
	double created;
	unsigned long next_event; /* seq of the next journal line */
	struct trial_rec *trials; /* index seq-1 */
	size_t ntrials;
	int done;
	char *done_reason;
	double run_seconds;       /* runner time spent by earlier sessions */
	double session_start;     /* wall time the current/last session started */
	double last_event_ts;
	int lock_fd;              /* runner.lock while this process runs it */
};

#define EXPERIMENT_ID_LEN 8

/* Create <workdir>/experiments/<new id>/ with the config (and search space)
 * copied in, experiment.json and the first journal line. */
int experiment_create(struct experiment *e, const struct aah_config *cfg, const char *workdir);
/* Open an existing experiment by replaying its journal. */
int experiment_open(struct experiment *e, const char *dir);
void experiment_release(struct experiment *e);

/* Append one event (fields is consumed; may be NULL) and apply it to the
 * in-memory state exactly as replay would. */
int experiment_record(struct experiment *e, enum expdir_event_kind event, cJSON *fields);
/* With FILEIO_NOSYNC: for an event the next synced event makes durable. */
int experiment_record_flags(struct experiment *e, enum expdir_event_kind event, cJSON *fields,
			    unsigned flags);

/* Become the experiment's one runner: lock runner.lock (non-blocking) and
 * write runner.pid. Fails when another runner holds it. */
int experiment_lock(struct experiment *e);
/* pid of the runner holding the experiment, or 0 when none does. */
long experiment_runner_pid(const struct experiment *e);

/* The record of trial seq, growing the table as needed. */
struct trial_rec *experiment_trial(struct experiment *e, unsigned seq);
/* Best accuracy over finished trials (NaN when none). */
double experiment_best_accuracy(const struct experiment *e);

#endif
