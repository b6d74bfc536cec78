/* cmd_render.c: `render`: print the Kubernetes documents of one trial
 * (headless Service + Indexed Job; with trial.launcher: mpi, first the
 * Secret of its ssh keys, made anew for every render) for `kubectl apply
 * -f -`, exactly as the kubernetes backend would submit them. */
#include "runner/cmd/cmd.h"
#include "fileio.h"
#include "jsonfile.h"
#include "runner/backend/kubernetes.h" /* kubernetes_*: config, names, documents, YAML */
#include "runner/launch.h"
#include "runner/cmd/options.h"
#include "runner/config/workdir.h"
#include "runner/store/expdir.h" /* expdir_file, expdir_place_name */
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Hyperparameters already proposed for the trial, if any. */
static cJSON *trial_params(const char *expdir, unsigned seq)
{
	char *p = expdir_trial_file(expdir, seq, EXPDIR_PARAMS);
	cJSON *doc = NULL, *params = NULL;
	if (fileio_exists(p) && jsonfile_read(p, &doc) == 0)
		params = cJSON_DetachItemFromObjectCaseSensitive(doc, "parameters");
	cJSON_Delete(doc);
	free(p);
	return params;
}

static int render(const struct aah_config *cfg, const char *exp_id, const char *expdir,
		  const char *workdir, unsigned seq, unsigned attempt, const char *format)
{
	struct kubernetes_config kc;
	if (kubernetes_config_load(cfg, &kc) < 0)
		return 1;
	unsigned nodes = (unsigned)cfg->trial.nodes;
	char *job = kubernetes_job_name(cfg->experiment_name, exp_id, seq, attempt);
	char **hosts = xcalloc(nodes, sizeof(*hosts));
	kubernetes_trial_hosts(job, nodes, hosts);
	cJSON *params = trial_params(expdir, seq);
	char place[EXPDIR_PLACE_SIZE];   /* the attempt's first launch writes there */
	struct launch_params lp = {
		.cfg = cfg,
		.expdir = expdir,
		.workdir = workdir,
		.experiment_id = exp_id,
		.trial_seq = seq,
		.attempt = attempt,
		.place = expdir_place_name(attempt, 0, place),
		.hosts = (const char *const *)hosts,
		.port = cfg->trial.master_port ? (unsigned)cfg->trial.master_port : 29500,
		.gpus = NULL,
		.elastic = cfg->pool.devices != 0,   /* a pool trial, as the runner launches it */
		.params = params,
		.propose_runner = strcmp(cfg->tuner.placement, "trial") ? NULL : "aah-runner",
	};
	struct aah_launch l;
	cJSON *docs = NULL;
	launch_build(&l, &lp);
	int rc = kubernetes_spec_trial(cfg, &kc, &l, job, &docs) < 0 ? 1 : 0;
	if (rc == 0 && !strcmp(format, "json")) {
		char *s = kubernetes_json_emit(docs);
		fputs(s, stdout);
		free(s);
	} else if (rc == 0) {
		struct strbuf sb = STRBUF_INIT;
		kubernetes_yaml_emit(&sb, docs);
		fputs(strbuf_str(&sb), stdout);
		strbuf_release(&sb);
	}
	kubernetes_mpi_scrub(docs);
	cJSON_Delete(docs);
	launch_release(&l);
	cJSON_Delete(params);
	for (unsigned i = 0; i < nodes; i++)
		free(hosts[i]);
	free(hosts);
	free(job);
	kubernetes_config_release(&kc);
	return rc;
}

int cmd_render(int argc, const char **argv)
{
	const char *config = NULL, *experiment = NULL, *workdir = NULL, *format = "yaml", **rest;
	long trial = 1, attempt = 1;
	const struct option_spec opts[] = {
		{ "config", 'c', OPT_STRING, &config, "FILE",
		  "the config.yml, also as the only argument (or use --experiment)" },
		{ "experiment", 'e', OPT_STRING, &experiment, "ID",
		  "render for an existing experiment (its id, config and proposals)" },
		{ "workdir", 0, OPT_STRING, &workdir, "DIR", "override the config's workdir" },
		{ "trial", 't', OPT_LONG, OPT_NUMBER(&trial, 1, 999999), "N", "trial sequence number (default 1)" },
		{ "attempt", 0, OPT_LONG, OPT_NUMBER(&attempt, 1, 1000), "N", "attempt number (default 1)" },
		{ "output", 'o', OPT_STRING, &format, "FORMAT", "yaml (default) or json" },
		{ NULL },
	};
	int n = options_parse(argc, argv, opts,
			      "aah-runner render ([-c] config.yml | --experiment ID) [--trial N] "
			      "[-o yaml|json]" CMD_EXIT_HELP,
			      &rest);
	if (n < 0)
		return n == -2 ? 0 : CMD_EXIT_CONFIG;
	const char *given = n == 1 ? rest[0] : NULL;   /* points into argv */
	free(rest);
	if (given && !config) {
		config = given;
		n = 0;
	}
	if (n > 0 || !!config == !!experiment || trial < 1 || trial > 999999 || attempt < 1 ||
	    attempt > 999 || (strcmp(format, "yaml") && strcmp(format, "json"))) {
		error("render: give -c FILE or --experiment ID, a --trial from 1 to 999999, "
		      "and -o yaml or json (see 'aah-runner render --help')");
		return CMD_EXIT_CONFIG;
	}
	struct aah_config cfg;
	int rc;
	if (experiment) {
		struct experiment e;
		if (cmd_open_experiment(workdir, experiment, &e, &cfg) < 0)
			return 1;
		rc = render(&cfg, e.id, e.dir, e.workdir, (unsigned)trial, (unsigned)attempt, format);
		experiment_release(&e);
	} else {
		if (cmd_load_config(config, &cfg) < 0)
			return CMD_EXIT_CONFIG;
		/* No experiment yet: a placeholder id of the real form. */
		char *wd = workdir ? fileio_absolute(workdir)
				   : cfg.workdir ? xstrdup(cfg.workdir) : workdir_default();
		char *expdir = xstrfmt("%s/experiments/%s", wd, KUBERNETES_PLACEHOLDER_EXPERIMENT);
		rc = render(&cfg, KUBERNETES_PLACEHOLDER_EXPERIMENT, expdir, wd, (unsigned)trial,
			    (unsigned)attempt, format);
		free(expdir);
		free(wd);
	}
	config_release(&cfg);
	return rc;
}
