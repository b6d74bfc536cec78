/* config.c: config.yml -> struct aah_config: the loader (its key tables
 * in config_keys.c, read through config_table.c) and the checks between
 * keys that no one key's table can make. */
#include "runner/config/config.h"
#include "runner/config/config_int.h" /* config_parse_table, config_fail_at */
#include "runner/config/gpucmd.h"
#include "fileio.h"
#include "jsonfile.h"
#include "strbuf.h"
#include "util.h"

#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A folded multi-line command keeps the backslashes its author meant as
 * line continuations ("a \ b"); drop a backslash that stands alone. */
static void unfold_command(char *cmd)
{
	char *w = cmd;
	for (char *r = cmd; *r; r++) {
		if (*r == '\\' && (r == cmd || r[-1] == ' ') && (r[1] == ' ' || !r[1])) {
			if (r[1])
				r++;
			continue;
		}
		*w++ = *r;
	}
	*w = '\0';
	while (w > cmd && w[-1] == ' ')
		*--w = '\0';
}

/* The per-training bounds against each other and the pool. */
static int check_pool(const struct config_ctx *c, const struct aah_config *cfg)
{
	const struct aah_config_pool *p = &cfg->pool;
	const struct ynode *pool = ynode_get(cfg->root, "pool");
	const struct ynode *n = ynode_get(pool, "minDevices");
	unsigned line = n ? n->line : pool ? pool->line : 1, col = n ? n->col : pool ? pool->col : 1;
	if (p->max_devices > 0 && p->min_devices > p->max_devices)
		return config_fail_at(c, line, col, "pool.minDevices", "must not be above pool.maxDevices", NULL);
	if (p->devices > 0 && p->min_devices > p->devices)
		return config_fail_at(c, line, col, "pool.minDevices", "must not be above pool.devices", NULL);
	if (p->devices == CONFIG_POOL_QUOTA && cfg->trial.gpu_num != 1) {
		/* a quota of GPUs sizes a pool of GPUs, one rank each */
		n = ynode_get(pool, "devices");
		return config_fail_at(c, n->line, n->col, "pool.devices",
			       "quota counts the namespace's GPUs: it needs trial.gpuNum 1 "
			       "(one rank on each GPU of a training's share)", NULL);
	}
	if (p->devices != 0 && cfg->trial.gpu_num > 1) {
		/* the ledger grants devices one rank each (docs/pool.md) */
		n = ynode_get(ynode_get(cfg->root, "trial"), "gpuNum");
		return config_fail_at(c, n->line, n->col, "trial.gpuNum",
			       "must be 0 or 1 with pool.devices: a pool's device is one GPU, "
			       "and a training runs one rank on each device of its share", NULL);
	}
	return 0;
}

/* trial.processMode: one process per GPU unless the config says otherwise
 * (aah-trial trains on one device per process). A mode that would leave a
 * node's GPUs unused is refused when it was not asked for, and warned
 * about (cfg->notice, by check and create) when it was: a trial command of
 * one's own may drive them all. */
static int process_mode(const struct config_ctx *c, struct aah_config *cfg, const struct ynode *trial)
{
	long gpus = cfg->trial.gpu_num;
	int mpi = !strcmp(cfg->trial.launcher, "mpi");
	const struct ynode *n = ynode_get(trial, "processMode");
	if (!cfg->trial.process_mode) {
		if (gpus > 1 && mpi) {
			char *why = xstrfmt(" (%ld GPUs of each node's %ld would stay unused): drop it "
					    "for one process per GPU, or set trial.processMode: node to "
					    "accept that", gpus - 1, gpus);
			n = ynode_get(trial, "launcher");
			config_fail_at(c, n->line, n->col, "trial.launcher",
				"'mpi' starts one process per node", why);
			free(why);
			return -1;
		}
		cfg->trial.process_mode = xstrdup(gpus > 0 && !mpi ? "device" : "node");
		return 0;
	}
	if (!strcmp(cfg->trial.process_mode, "node") && gpus > 1)
		cfg->notice = xstrfmt("%s:%u:%u: 'trial.processMode' node with trial.gpuNum %ld: "
				      "aah-trial trains on one GPU per process, so %ld of each "
				      "node's GPUs stay unused unless the trial command drives them "
				      "itself (the default, device, runs one per GPU)",
				      c->file, n->line, n->col, gpus, gpus - 1);
	return 0;
}

static int check_semantics(const struct config_ctx *c, struct aah_config *cfg)
{
	const struct ynode *trial = ynode_get(cfg->root, "trial");
	const struct ynode *cmd = ynode_get(trial, "command");
	if (!cfg->trial.command || !*cfg->trial.command) {
		unsigned line = cmd ? cmd->line : trial->line, col = cmd ? cmd->col : trial->col;
		return config_fail_at(c, line, col, "trial.command", "must not be empty", NULL);
	}
	unfold_command(cfg->trial.command);
	cfg->notice = gpucmd_notice(c->file, cmd ? cmd->line : 0, cmd ? cmd->col : 0,
				    cfg->trial.command, cfg->trial.gpu_num);
	if (cfg->use_annotation) {
		const struct ynode *n = ynode_get(cfg->root, "useAnnotation");
		return config_fail_at(c, n->line, n->col, "useAnnotation",
			       "is not supported by aah; set it to false", NULL);
	}
	const struct ynode *env = cfg->trial.env;
	if (env) {
		if (env->kind != YNODE_MAP)
			return config_fail_at(c, env->line, env->col, "trial.env",
				       "must be a mapping of NAME: value", NULL);
		for (size_t i = 0; i < env->n; i++)
			if (env->children[i]->kind != YNODE_SCALAR)
				return config_fail_at(c, env->children[i]->line, env->children[i]->col,
					       "trial.env", "values must be strings", NULL);
	}
	const struct ynode *ca = cfg->tuner.class_args;
	if (ca && ca->kind != YNODE_MAP)
		return config_fail_at(c, ca->line, ca->col, "tuner.classArgs", "must be a mapping", NULL);
	if (check_pool(c, cfg) < 0 || process_mode(c, cfg, trial) < 0)
		return -1;
	if (!strcmp(cfg->trial.process_mode, "device") && cfg->trial.gpu_num < 1) {
		const struct ynode *n = ynode_get(trial, "processMode");
		return config_fail_at(c, n->line, n->col, "trial.processMode",
			       "'device' needs trial.gpuNum of at least 1", NULL);
	}
	if (cfg->trial.max_exec_share > 0 && cfg->max_exec_duration <= 0) {
		const struct ynode *n = ynode_get(trial, "maxExecShare");
		return config_fail_at(c, n->line, n->col, "trial.maxExecShare",
			       "needs a maxExecDuration to take a share of", NULL);
	}
	if (!strcmp(cfg->trial.launcher, "mpi") &&
	    (strcmp(cfg->trial.process_mode, "node") || strcmp(cfg->trial.launch_style, "pytorch"))) {
		const struct ynode *n = ynode_get(trial, "launcher");
		return config_fail_at(c, n->line, n->col, "trial.launcher",
			       "'mpi' needs trial.processMode 'node' and trial.launchStyle 'pytorch'", NULL);
	}
	return 0;
}

const struct ynode *config_section(const struct aah_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->platforms.n; i++)
		if (!strcmp(cfg->platforms.names[i], name))
			return cfg->sections[i];
	BUG("no backend '%s' in the registry", name);
}

int config_load(const char *path, struct aah_config *cfg, const struct config_platforms *p)
{
	struct config_ctx c = { .file = path, .cfg = cfg };
	struct config_top top;
	config_top_keys(&top, p);
	memset(cfg, 0, sizeof(*cfg));
	cfg->platforms = *p;
	if (nni_config_load(path, p->names, p->n, &cfg->root, &cfg->nni) < 0)
		return -1;
	cfg->path = fileio_absolute(path);
	cfg->name = xstrdup(path);
	char *dir = xstrdup(cfg->path);
	cfg->base_dir = xstrdup(dirname(dir));
	free(dir);
	if (cfg->root->kind != YNODE_MAP) {
		error("%s:%u:%u: a config must be a mapping of keys", path, cfg->root->line,
		      cfg->root->col);
		goto fail;
	}
	if (config_parse_table(&c, "", cfg->root, top.keys, (char *)cfg, 1, 1) < 0 ||
	    check_semantics(&c, cfg) < 0)
		goto fail;
	if (cfg->workdir) {
		char *abs = config_resolve(cfg, cfg->workdir);
		free(cfg->workdir);
		cfg->workdir = abs;
	}
	return 0;
fail:
	config_release(cfg);
	return -1;
}

void config_release(struct aah_config *cfg)
{
	if (cfg->platforms.n) {      /* loaded, or failed past its start */
		struct config_top top;
		config_top_keys(&top, &cfg->platforms);
		config_release_table(top.keys, (char *)cfg);
	}
	ynode_free(cfg->root);
	nni_config_free(cfg->nni);
	free(cfg->notice);
	free(cfg->path);
	free(cfg->name);
	free(cfg->base_dir);
	memset(cfg, 0, sizeof(*cfg));
}

char *config_search_space_file(const struct aah_config *cfg)
{
	if (!cfg->search_space_path || !*cfg->search_space_path)
		return NULL;
	return config_resolve(cfg, cfg->search_space_path);
}

char *config_resolve(const struct aah_config *cfg, const char *path)
{
	return path[0] == '/' ? xstrdup(path) : xstrfmt("%s/%s", cfg->base_dir, path);
}

int config_error_at(const struct aah_config *cfg, const char *key, const char *fmt, ...)
{
	const struct ynode *n = cfg->root;
	char *path = xstrdup(key);
	for (char *seg = path, *dot; n && seg; seg = dot) {
		dot = strchr(seg, '.');
		if (dot)
			*dot++ = '\0';
		n = ynode_get(n, seg);
	}
	free(path);
	struct strbuf sb = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	error("%s:%u:%u: '%s': %s", cfg->name ? cfg->name : cfg->path, n ? n->line : 1,
	      n ? n->col : 1, nni_config_written(cfg->nni, key), sb.buf);
	strbuf_release(&sb);
	return -1;
}

int config_search_space(const struct aah_config *cfg, cJSON **out)
{
	char *p = config_search_space_file(cfg);
	*out = NULL;
	if (!p)
		return 0;
	int held = util_hold_errors(1);
	int r = jsonfile_read(p, out);
	util_hold_errors(held);
	if (r < 0) {
		r = config_error_at(cfg, "searchSpacePath", "%s", util_last_error());
	} else if (!cJSON_IsObject(*out)) {
		cJSON_Delete(*out);
		*out = NULL;
		r = config_error_at(cfg, "searchSpacePath",
				    "'%s' must be a JSON object of parameters "
				    "({\"name\": {\"_type\": ..., \"_value\": [...]}})", p);
	}
	free(p);
	return r;
}
