/* nnitrial.h: NNI's trial side as the runner serves it (docs/nni.md): the
 * env NNI's SDK reads, the trial's parameter.cfg, and what the trial
 * reports (nnirec.h) read back into aah's own files, metrics.jsonl (one
 * line per PERIODICAL record) and result.json (the FINAL one, or the error
 * that fails the trial), so that status, the report, metrics and the tuner
 * see an NNI trial as any other. Also where the Python module aah ships
 * (runner/nni/python/nni) lies. */
#ifndef AAH_NNITRIAL_H
#define AAH_NNITRIAL_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "runner/config/config.h" /* struct aah_config: trial.env's NNI_PLATFORM */
#include "strvec.h"

/* NNI's names for a trial: its NNI_TRIAL_JOB_ID is aah's trial id, its
 * parameter_id and NNI_TRIAL_SEQ_ID count from 0 as NNI's do (seq - 1). */
#define NNITRIAL_PARAMETER_ID(seq) ((long)(seq) - 1)

/* The names NNI's SDK reads, added to a rank's env: NNI_PLATFORM (local),
 * NNI_EXP_ID, NNI_TRIAL_JOB_ID, NNI_SYS_DIR and NNI_OUTPUT_DIR (the
 * launch's place: the trial directory, or attempt-N[.K] in it,
 * docs/formats.md), NNI_TRIAL_SEQ_ID, MULTI_PHASE (false). */
void nnitrial_env(struct strvec *env, const char *experiment_id, const char *trial_id,
		  unsigned seq, const char *place_dir);

/* Before a trial's job is submitted into place_dir (every time: a retry, a
 * requeue): a new run in the trial's .nni/run.json (a trial's runs are
 * counted across its places, as its trial.log is one), the place's
 * earlier .nni/metrics kept as .nni/metrics.<run>, a result.json there
 * read from its records removed. flags: run.json's (FILEIO_NOSYNC: the
 * caller makes it durable before the job is journaled). */
int nnitrial_prepare(const char *trial_dir, const char *place_dir, unsigned flags);

/* parameter.cfg in the launch's place as NNI's dispatcher writes it:
 * {"parameter_id": seq - 1, "parameter_source": "algorithm",
 *  "parameters": params (an object; NULL: {}), "parameter_index": 0}. */
int nnitrial_write_parameters(const char *place_dir, unsigned seq, const cJSON *params);

/* What the runner has read of each trial it watches (a runner that starts
 * again reads each trial's files from its run's start, skipping what its
 * metrics.jsonl and result.json already hold). */
struct nnitrial_watch {
	struct nnitrial_seen *v;  /* (n) by seq - 1; owned */
	size_t n;
};
#define NNITRIAL_WATCH_INIT { NULL, 0 }
void nnitrial_watch_release(struct nnitrial_watch *w);

/* Read what trial seq reported since the last call: each new PERIODICAL
 * record becomes a metrics.jsonl line (timestamped now), the FINAL one
 * result.json (succeeded); a bad record, or a trial that ended (`ended`:
 * its processes are gone) after reporting without a FINAL one, writes a
 * result.json that fails it, with the reason, also appended to trial.log.
 * The records come from .nni/metrics, or from trial.log where trial.env
 * sets NNI_PLATFORM to another platform than local (or REUSE_MODE true:
 * NNI's SDK prints them then). A trial that writes aah's own files, or no
 * NNI record at all, is left alone. The files are those of the place of
 * its last launch (place: expdir_place_name's; NULL or "": the trial
 * directory), trial.log the trial's. -1 when a file cannot be written. */
int nnitrial_sync(struct nnitrial_watch *w, const struct aah_config *cfg, const char *expdir,
		  unsigned seq, const char *place, int ended);

/* The directory holding aah's `nni` package, found beside this aah-runner
 * (installed: <prefix>/lib/aah/python; in the build tree:
 * runner/nni/python), or NULL. The caller frees it. */
char *nnitrial_module_dir(void);

/* env's PYTHONPATH with the module's directory in front (none found:
 * unchanged). A user's own NNI still wins: the module defers to it. */
void nnitrial_python_path(struct strvec *env, const char *module_dir);

#endif
