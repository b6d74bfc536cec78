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
#include "runner/store/journal.h" /* struct trial_rec, struct journal */

struct experiment {
	char *id;
	char *dir;                /* absolute experiment directory */
	char *workdir;            /* the work directory holding it, absolute (expdir_workdir) */
	/* What its journal says (runner/store/journal.h, the one reducer):
	 * e->journal for the reducer, each member also by its own name. */
	union {
		struct journal journal;
		struct {
			JOURNAL_FIELDS
		};
	};
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
