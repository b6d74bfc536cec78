/* cmd_propose.c: `propose`: the tuner's proposal for one trial, written
 * into its directory; with --exec, then run the trial command with the
 * hyperparameters appended (the tuner placed inside the trial, as AAH) and
 * in parameter.cfg (NNI's SDK reads them there).
 * The tuner's state is cached in <expdir>/tuner.cache between proposers. */
#include "runner/cmd/cmd.h"
#include "fileio.h"
#include "jsonfile.h"
#include "runner/launch.h"
#include "runner/cmd/options.h"
#include "runner/nni/nnitrial.h" /* nnitrial_write_parameters: NNI's parameter.cfg */
#include "runner/scheduler_tuner.h"
#include "runner/tuner/tuner.h"
#include "runner/store/expdir.h" /* expdir_file */
#include "runner/store/place.h"  /* place_copy_proposal */
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The proposal as the trial takes it: parameter.cfg for NNI's SDK in the
 * launch's place (place: AAH_TRIAL_DIR; NULL: the trial directory), and
 * appended as --name=value (but for an NNI v2 config: NNI appends none). */
static int exec_trial(const char *expdir, unsigned seq, const char *place, const char **cmd,
		      int append)
{
	struct strvec argv = STRVEC_INIT;
	char *pp = expdir_trial_file(expdir, seq, EXPDIR_PARAMS);
	char *dir = place ? xstrdup(place) : expdir_trial_dir(expdir, seq);
	cJSON *doc = NULL;
	strvec_pushv(&argv, cmd);
	int r = fileio_exists(pp) ? jsonfile_read(pp, &doc) : 0;
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(doc, "parameters");
	if (r == 0)
		r = nnitrial_write_parameters(dir, seq, params);
	if (r == 0 && append)
		launch_push_params(&argv, params);
	cJSON_Delete(doc);
	free(dir);
	free(pp);
	if (r < 0) {
		strvec_clear(&argv);
		return 1;
	}
	fflush(NULL);
	execvp(argv.v[0], argv.v);
	error_errno("propose: cannot run '%s'", argv.v[0]);
	strvec_clear(&argv);
	return 127;
}

int cmd_propose(int argc, const char **argv)
{
	const char *expdir = NULL, **rest;
	long trial = 0;
	int do_exec = 0;
	const struct option_spec opts[] = {
		{ "experiment", 'e', OPT_STRING, &expdir, "DIR", "the experiment directory (or id)" },
		{ "trial", 't', OPT_LONG, OPT_NUMBER(&trial, 1, 999999), "N", "trial sequence number (default $AAH_TRIAL_SEQ)" },
		{ "exec", 0, OPT_FLAG, &do_exec, NULL,
		  "then run the command after '--' with the hyperparameters appended" },
		{ NULL },
	};
	int n = options_parse(argc, argv, opts,
			      "aah-runner propose --experiment DIR [--trial N] [--exec -- command...]",
			      &rest);
	if (n < 0)
		return n == -2 ? 0 : 2;
	if (!expdir)
		expdir = getenv("AAH_EXPERIMENT_DIR");
	if (!trial && getenv("AAH_TRIAL_SEQ"))
		util_parse_long(getenv("AAH_TRIAL_SEQ"), 1, 999999, &trial);
	if (!expdir || trial < 1 || (do_exec && !n) || (!do_exec && n)) {
		free(rest);
		error("propose: need --experiment DIR and --trial N%s",
		      do_exec ? ", and a command after '--'" : "");
		return 2;
	}
	struct experiment e;
	struct aah_config cfg;
	if (cmd_open_experiment(NULL, expdir, &e, &cfg) < 0) {
		free(rest);
		return 1;
	}
	struct tuner_config tc;
	cJSON *ca, *space;
	int r = scheduler_tuner_config(&cfg, e.dir, &tc, &ca, &space);
	char *initial = scheduler_tuner_initial_arch(&cfg, e.dir);
	tc.initial_arch = initial;
	if (r == 0)
		r = tuner_propose_cached(e.dir, e.id, &tc, (unsigned)trial);
	free(initial);
	cJSON_Delete(ca);
	cJSON_Delete(space);
	/* a launch in a place of its own (AAH_TRIAL_DIR) reads the proposal there */
	const char *place = getenv("AAH_TRIAL_DIR");
	if (r == 0 && do_exec && place) {
		char *dir = expdir_trial_dir(e.dir, (unsigned)trial);
		r = place_copy_proposal(dir, place);
		free(dir);
	}
	int rc = r < 0 ? 1 : 0;
	if (r == 0 && do_exec)
		rc = exec_trial(e.dir, (unsigned)trial, place, rest, !cfg.nni);
	experiment_release(&e);
	config_release(&cfg);
	free(rest);
	return rc;
}
