/* cmd_create.c: `create`, `resume` and `check`: load a config, make or
 * open the experiment, and run the scheduler in the foreground or detached. */
#include "runner/cmd/cmd.h"
#include "arch.h"     /* struct arch */
#include "nni_graph.h" /* nni_graph_load: tuner.initialArch is checked whatever the tuner */
#include "fileio.h"
#include "runner/backend/backend.h"
#include "runner/cmd/options.h"
#include "runner/pool/pooltrial.h" /* pooltrial_pool_size: pool.devices: quota */
#include "runner/scheduler.h"
#include "runner/scheduler_tuner.h"
#include "runner/tuner/space.h" /* space_parse: search-space errors at searchSpacePath */
#include "runner/tuner/tuner.h"
#include "runner/config/workdir.h"
#include "strvec.h"
#include "util.h"

#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cmd_load_config(const char *path, struct aah_config *cfg)
{
	if (backend_config_load(path, cfg) < 0)
		return -1;
	if (!tuner_known(cfg->tuner.builtin_tuner_name)) {
		const struct ynode *n = ynode_get(ynode_get(cfg->root, "tuner"), "builtinTunerName");
		error("%s:%u:%u: '%s' has an unknown value '%s'; expected one of: %s", path,
		      n ? n->line : 1, n ? n->col : 1,
		      nni_config_written(cfg->nni, "tuner.builtinTunerName"),
		      cfg->tuner.builtin_tuner_name, tuner_known_names());
		config_release(cfg);
		return -1;
	}
	if (backend_validate_config(cfg) < 0) {
		config_release(cfg);
		return -1;
	}
	return 0;
}

/* What the config names beside itself: the key whose file fails to load
 * (its error in util_last_error()), or NULL when all of it loads. */
static const char *failing_key(struct tuner_config *tc,
			       const char *initial)
{
	struct space sp;
	if (space_parse(&sp, tc->search_space) < 0)
		return "searchSpacePath";
	space_release(&sp);
	struct arch arch;
	int r = initial ? nni_graph_load(&arch, initial) : 0;
	if (initial)
		arch_release(&arch);
	if (r < 0)
		return "tuner.initialArch";
	struct tuner *t = NULL;
	tc->initial_arch = initial;
	tc->threads = 1;   /* built to be checked, not to search */
	r = tuner_create(&t, tc);
	tuner_free(t);
	return r < 0 ? "tuner" : NULL;
}

/* Where a refusal is shown: a tuner's refusal of one of its classArgs at
 * that key when the config writes it (a default it refuses has no line of
 * its own: the tuner's), any other at the key that failed. Owned. */
static char *refused_at(const struct aah_config *cfg, const char *key, const char *why)
{
	const char *p = strstr(why, "classArgs.");
	if (strcmp(key, "tuner") || !p)
		return xstrdup(key);
	p += strlen("classArgs.");
	char *name = xstrndup(p, strspn(p, "abcdefghijklmnopqrstuvwxyz_0123456789"));
	const struct ynode *ca = ynode_get(ynode_get(cfg->root, "tuner"), "classArgs");
	char *at = *name && ynode_get(ca, name) ? xstrfmt("tuner.classArgs.%s", name) : xstrdup(key);
	free(name);
	return at;
}

static int check_config_files(struct aah_config *cfg)
{
	struct tuner_config tc;
	cJSON *class_args, *space;
	if (scheduler_tuner_config(cfg, NULL, &tc, &class_args, &space) < 0)
		return -1;   /* reported at searchSpacePath */
	char *initial = scheduler_tuner_initial_arch(cfg, NULL);
	int held = util_hold_errors(1);
	const char *key = failing_key(&tc, initial);
	util_hold_errors(held);
	int r = 0;
	const struct ynode *inline_space = cfg->nni ? cfg->nni->search_space : NULL;
	if (key && !strcmp(key, "searchSpacePath") && inline_space) {   /* NNI v2's searchSpace */
		r = error("%s:%u:%u: 'searchSpace': %s", cfg->name, inline_space->line,
			  inline_space->col, util_last_error());
	} else if (key && !strcmp(key, "searchSpacePath")) {
		char *file = config_search_space_file(cfg);
		r = config_error_at(cfg, key, "'%s': %s", file, util_last_error());
		free(file);
	} else if (key) {
		char *at = refused_at(cfg, key, util_last_error());
		r = config_error_at(cfg, at, "%s", util_last_error());
		free(at);
	}
	free(initial);
	cJSON_Delete(class_args);
	cJSON_Delete(space);
	return r;
}

int cmd_check_config(const char *path, struct aah_config *cfg)
{
	if (cmd_load_config(path, cfg) < 0)
		return -1;
	if (backend_check_config(cfg) < 0 || check_config_files(cfg) < 0) {
		config_release(cfg);
		return -1;
	}
	if (cfg->notice)
		warning("%s", cfg->notice);
	return 0;
}

int cmd_open_experiment(const char *workdir, const char *arg, struct experiment *e,
			struct aah_config *cfg)
{
	char *dir;
	if (workdir_experiment_dir(workdir, arg, &dir) < 0)
		return -1;
	int r = experiment_open(e, dir);
	if (r == 0 && cfg) {
		char *path = xstrfmt("%s/config.yml", dir);
		r = cmd_load_config(path, cfg);
		free(path);
		struct expdir_info info;
		if (r == 0 && expdir_info_read(e->dir, &info) == 0) {
			if (info.seed > 0)
				cfg->seed = info.seed;
			if (info.config_source) {
				/* Relative paths in the config mean what they meant at create. */
				free(cfg->base_dir);
				cfg->base_dir = xstrdup(dirname(info.config_source));
			}
			expdir_info_release(&info);
		}
		if (r < 0)
			experiment_release(e);
	}
	free(dir);
	return r;
}

static char *self_exe(void)
{
	int was = util_set_quiet(1);
	char *p = fileio_self_exe();
	util_set_quiet(was);
	return p ? p : xstrdup("aah-runner");
}

/* Fork into the background; the child's output goes to runner.log. Returns
 * 1 in the parent (which should exit), 0 in the child. */
static int detach(const struct experiment *e)
{
	char *log = xstrfmt("%s/runner.log", e->dir);
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		die_errno("cannot fork to detach");
	if (pid > 0) {
		printf("running in the background (pid %ld); log: %s\n", (long)pid, log);
		free(log);
		return 1;
	}
	setsid();
	int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
	}
	if (in >= 0) {
		dup2(in, 0);
		close(in);
	}
	free(log);
	return 0;
}

/* pool.devices: quota: the pool's size from the cluster, once, before any
 * trial joins it (runner/pool/pooltrial.h, pooltrial_pool_size). */
static int size_pool(struct aah_config *cfg, const char *workdir)
{
	unsigned quota, devices;
	if (cfg->pool.devices != CONFIG_POOL_QUOTA)
		return 0;
	if (backend_pool_quota(cfg, &quota) < 0 || pooltrial_pool_size(workdir, quota, &devices) < 0)
		return -1;
	if (cfg->pool.min_devices > (long)devices)
		return config_error_at(cfg, "pool.minDevices", "must not be above the pool's %u "
				       "devices (pool.devices: quota)", devices);
	/* stderr: create's stdout starts with the experiment id */
	fprintf(stderr, "device pool: %u devices (pool.devices: quota)\n", devices);
	cfg->pool.devices = devices;
	return 0;
}

/* What the runner chooses for the tuner, in words: with tuner.placement
 * trial past the tuner's proposer limit, which trials it proposes instead
 * (scheduler_tuner_master_from); at many slots, the batch of its own
 * proposals (scheduler_tuner_search_batch). */
static void placement_note(const struct aah_config *cfg, FILE *out)
{
	long from = 1;
	if (!strcmp(cfg->tuner.placement, "trial")) {
		int held = util_hold_errors(1);   /* a tuner that cannot be made is said elsewhere */
		from = scheduler_tuner_master_from(cfg, NULL);
		util_hold_errors(held);
	}
	if (from > 1)
		fprintf(out, "tuner.placement trial: trials 1 to %ld propose in their own "
			"containers; the runner proposes from trial %ld on (past %ld trials "
			"the tuner's state would cost O(n^2) bytes per proposal; docs/scale.md)\n",
			from - 1, from, from - 1);
	unsigned batch = from > 0 ? scheduler_tuner_search_batch(cfg) : 0;
	if (batch)
		fprintf(out, "tuner NetworkMorphism: at %ld trials at a time the runner makes up to "
			"%u proposals from each search while no result comes in "
			"(classArgs.search_batch: %u; 1: one search a proposal; docs/tuner.md)\n",
			cfg->trial_concurrency, batch, batch);
}

static int run(const struct aah_config *cfg, struct experiment *e, int detached, int quiet)
{
	if (detached && detach(e))
		return 0;
	if (experiment_lock(e) < 0)
		return 1;
	char *exe = self_exe();
	struct scheduler_opts opts = { .runner_exe = exe, .progress = !quiet };
	int r = scheduler_run(cfg, e, &opts);
	free(exe);
	if (r < 0)
		return 1;
	if (!quiet) {
		printf("experiment %s %s\n", e->id,
		       e->done ? "done" : "stopped (continue with 'aah-runner resume')");
	}
	return 0;
}

int cmd_create(int argc, const char **argv)
{
	const char *config = NULL, *workdir = NULL, **rest;
	int detached = 0, quiet = 0, no_run = 0;
	long seed = -1;
	const struct option_spec opts[] = {
		{ "config", 'c', OPT_STRING, &config, "FILE",
		  "the experiment's config.yml (required; also as the only argument)" },
		{ "workdir", 0, OPT_STRING, &workdir, "DIR", "override the config's workdir" },
		{ "seed", 0, OPT_LONG, OPT_NUMBER(&seed, 0, 2147483647), "N", "override the config's seed" },
		{ "detach", 'd', OPT_FLAG, &detached, NULL, "run in the background (log in runner.log)" },
		{ "no-run", 0, OPT_FLAG, &no_run, NULL, "only create the experiment" },
		{ "quiet", 'q', OPT_FLAG, &quiet, NULL, "print only the experiment id" },
		{ NULL },
	};
	int n = options_parse(argc, argv, opts, "aah-runner create [-c] config.yml [options]"
			      CMD_EXIT_HELP, &rest);
	if (n < 0)
		return n == -2 ? 0 : CMD_EXIT_CONFIG;
	const char *given = n == 1 ? rest[0] : NULL;   /* points into argv */
	free(rest);
	if (n > 1 || !!given == !!config) {
		error("create: give the config with -c FILE (see 'aah-runner create --help')");
		return CMD_EXIT_CONFIG;
	}
	if (given)
		config = given;
	struct aah_config cfg;
	if (cmd_check_config(config, &cfg) < 0)
		return CMD_EXIT_CONFIG;
	if (seed >= 0)
		cfg.seed = seed;
	if (!cfg.seed) /* "from the clock", recorded in experiment.json for resume */
		cfg.seed = (long)((unsigned long)(util_now() * 1e6) % 2147483647ul) + 1;
	char *wd = workdir ? fileio_absolute(workdir)
			   : cfg.workdir ? xstrdup(cfg.workdir) : workdir_default();
	struct experiment e;
	int rc = 1;
	if (!no_run && size_pool(&cfg, wd) < 0)
		rc = CMD_EXIT_CONFIG;
	else if (experiment_create(&e, &cfg, wd) == 0) {
		printf("%s\n", e.id);
		fflush(stdout);
		if (!quiet)   /* stderr: create's stdout starts with the experiment id */
			placement_note(&cfg, stderr);
		rc = no_run ? 0 : run(&cfg, &e, detached, quiet);
		experiment_release(&e);
	}
	free(wd);
	config_release(&cfg);
	return rc;
}

int cmd_resume(int argc, const char **argv)
{
	const char *workdir = NULL, *arg;
	int detached = 0, quiet = 0;
	const struct option_spec opts[] = {
		{ "workdir", 0, OPT_STRING, &workdir, "DIR", "where experiments live" },
		{ "detach", 'd', OPT_FLAG, &detached, NULL, "run in the background" },
		{ "quiet", 'q', OPT_FLAG, &quiet, NULL, "no progress output" },
		{ NULL },
	};
	int r = options_parse_one(argc, argv, opts, "aah-runner resume <experiment> [options]",
				  "experiment", &arg);
	if (r)
		return r > 0 ? 0 : 2;
	struct experiment e;
	struct aah_config cfg;
	if (cmd_open_experiment(workdir, arg, &e, &cfg) < 0)
		return 1;
	int rc = 0;
	if (e.done)
		printf("experiment %s is already done (%s)\n", e.id, e.done_reason ? e.done_reason : "");
	else if (size_pool(&cfg, e.workdir) < 0)
		rc = 1;
	else
		rc = run(&cfg, &e, detached, quiet);
	experiment_release(&e);
	config_release(&cfg);
	return rc;
}

int cmd_check(int argc, const char **argv)
{
	const char *config = NULL, **rest;
	const struct option_spec opts[] = {
		{ "config", 'c', OPT_STRING, &config, "FILE",
		  "a config.yml to check (or give them as arguments)" },
		{ NULL },
	};
	int n = options_parse(argc, argv, opts, "aah-runner check [-c] config.yml...\n\n"
			      "A config in AIPerf's v1 form or NNI's v2 experiment config form: for "
			      "v2 it prints\nwhat each key becomes in aah's, or refuses it (docs/nni.md)."
			      CMD_EXIT_HELP, &rest);
	if (n < 0)
		return n == -2 ? 0 : CMD_EXIT_CONFIG;
	struct strvec files = STRVEC_INIT;
	if (config)
		strvec_push(&files, config);
	strvec_pushv(&files, rest);
	free(rest);
	int rc = 0;
	if (!files.n) {
		error("check: give one or more config files");
		rc = CMD_EXIT_CONFIG;
	}
	for (size_t i = 0; i < files.n; i++) {
		struct aah_config cfg;
		if (cmd_check_config(files.v[i], &cfg) < 0) {
			rc = CMD_EXIT_CONFIG;
			continue;
		}
		if (cfg.nni) {   /* what became of each key of NNI's v2 form */
			struct strbuf sb = STRBUF_INIT;
			nni_config_describe(cfg.nni, files.v[i], &sb);
			printf("%s: NNI v2 experiment config, read as aah's keys:\n%s", files.v[i], sb.buf);
			strbuf_release(&sb);
		}
		printf("%s: ok (%s backend, tuner %s, %ld trial(s) at a time)\n", files.v[i],
		       cfg.platform, cfg.tuner.builtin_tuner_name, cfg.trial_concurrency);
		placement_note(&cfg, stdout);
		config_release(&cfg);
	}
	strvec_clear(&files);
	return rc;
}
