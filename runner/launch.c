/* launch.c: the launch contract for every rank of a trial. */
#include "runner/launch.h"
#include "runner/nni/nnitrial.h" /* nnitrial_env: the names NNI's SDK reads */
#include "runner/store/expdir.h" /* expdir_trial_id, expdir_trial_dir */
#include "fileio.h"
#include "jsonfile.h"
#include "strbuf.h"
#include "util.h"

#include <libgen.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void launch_command_argv(struct strvec *argv, const char *command)
{
	/* Anything a shell would interpret sends the command through /bin/sh. */
	if (strpbrk(command, "$`\\\"'|&;<>(){}*?[]~#=!\n")) {
		strvec_push(argv, "/bin/sh");
		strvec_push(argv, "-c");
		strvec_pushf(argv, "%s \"$@\"", command);
		strvec_push(argv, "aah-trial");
		return;
	}
	strvec_split(argv, command);
}

static void format_number(struct strbuf *sb, double v)
{
	char buf[64];
	if (v == floor(v) && fabs(v) < 1e15) {
		snprintf(buf, sizeof(buf), "%.0f", v);
	} else {
		snprintf(buf, sizeof(buf), "%.15g", v);
		if (strtod(buf, NULL) != v)
			snprintf(buf, sizeof(buf), "%.17g", v);
	}
	strbuf_addstr(sb, buf);
}

void launch_push_params(struct strvec *argv, const cJSON *params)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, params) {
		struct strbuf sb = STRBUF_INIT;
		strbuf_addf(&sb, "--%s=", it->string);
		if (cJSON_IsNumber(it))
			format_number(&sb, it->valuedouble);
		else if (cJSON_IsString(it))
			strbuf_addstr(&sb, it->valuestring);
		else if (cJSON_IsBool(it))
			strbuf_addstr(&sb, cJSON_IsTrue(it) ? "true" : "false");
		else {
			char *s = cJSON_PrintUnformatted(it);
			strbuf_addstr(&sb, s);
			cJSON_free(s);
		}
		strvec_push(argv, sb.buf);
		strbuf_release(&sb);
	}
}

unsigned long launch_trial_seed(long experiment_seed, unsigned trial_seq)
{
	/* splitmix64's finaliser over (seed, seq): neighbouring trials and
	 * neighbouring seeds land far apart. */
	uint64_t z = (uint64_t)experiment_seed * 0x9e3779b97f4a7c15ull + trial_seq;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (unsigned long)(z % 2147483647ull) + 1;
}

/* The i-th device of a comma list such as "2,3" (or i itself when absent). */
static char *device_at(const char *gpus, unsigned i)
{
	if (!gpus)
		return xstrfmt("%u", i);
	const char *p = gpus;
	for (unsigned k = 0; k < i && p; k++) {
		p = strchr(p, ',');
		if (p)
			p++;
	}
	if (!p)
		return xstrfmt("%u", i);
	return xstrndup(p, strcspn(p, ","));
}

/* The devices of node `node` in a launch's list: its own gpn of them when
 * the list names nodes x gpn (a pool's grant: one device per rank, ranks on
 * one host), else the whole list (the devices each host gives its node). */
static char *node_devices(const char *gpus, unsigned node, unsigned gpn, unsigned nodes)
{
	if (!gpus)
		return NULL;
	unsigned n = 1;
	for (const char *p = gpus; *p; p++)
		n += *p == ',';
	if (nodes < 2 || n < nodes * gpn)
		return xstrdup(gpus);
	struct strbuf sb = STRBUF_INIT;
	for (unsigned k = 0; k < gpn; k++) {
		char *d = device_at(gpus, node * gpn + k);
		strbuf_addf(&sb, "%s%s", k ? "," : "", d);
		free(d);
	}
	return strbuf_detach(&sb, NULL);
}

static char *join_hosts(char **hosts, unsigned n, unsigned port_base, int with_ports)
{
	struct strbuf sb = STRBUF_INIT;
	for (unsigned i = 0; i < n; i++) {
		if (i)
			strbuf_addch(&sb, ',');
		strbuf_addstr(&sb, hosts[i]);
		if (with_ports)
			strbuf_addf(&sb, ":%u", port_base + i);
	}
	return strbuf_detach(&sb, NULL);
}

static void add_env(struct launch_rank *r, const struct aah_launch *l,
		    const struct launch_params *p, unsigned local_dev)
{
	struct strvec *e = &r->env;
	const struct aah_config *cfg = p->cfg;
	char *hosts = join_hosts(l->hosts, l->nodes, 0, 0);

	strvec_setenv(e, "AAH_EXPERIMENT_ID", l->experiment_id);
	strvec_setenv(e, "AAH_TRIAL_ID", l->trial_id);
	strvec_pushf(e, "AAH_TRIAL_SEQ=%u", l->trial_seq);
	strvec_pushf(e, "AAH_ATTEMPT=%u", l->attempt);
	/* AIPerf's --slave: a round of the epoch budget is this many trials */
	strvec_pushf(e, "AAH_SLAVE=%ld", cfg->trial_concurrency);
	if (p->deadline > 0)
		strvec_pushf(e, "AAH_DEADLINE=%.0f", floor(p->deadline));
	/* trial.maxExecShare: the trial's own time, in whole seconds (at least 1) */
	if (cfg->trial.max_exec_share > 0 && cfg->max_exec_duration > 0)
		strvec_pushf(e, "AAH_TIME_BUDGET=%.0f",
			     fmax(1.0, floor(cfg->trial.max_exec_share * cfg->max_exec_duration)));
	if (cfg->seed > 0) /* the command line's --seed, if any, still wins */
		strvec_pushf(e, "AAH_SEED=%lu", launch_trial_seed(cfg->seed, l->trial_seq));
	strvec_setenv(e, "AAH_TRIAL_DIR", l->place_dir);
	strvec_setenv(e, "AAH_WORKDIR", l->workdir);
	strvec_setenv(e, "AAH_EXPERIMENT_DIR", l->expdir);
	strvec_pushf(e, "MA_NUM_HOSTS=%u", l->nodes);
	strvec_pushf(e, "VC_WORKER_NUM=%u", l->nodes);
	if (!l->mpi) {
		strvec_pushf(e, "VC_TASK_INDEX=%u", r->node);
		strvec_pushf(e, "VK_TASK_INDEX=%u", r->node);
	}
	strvec_setenv(e, "VC_WORKER_HOSTS", hosts);
	strvec_setenv(e, "MASTER_ADDR", l->hosts[0]);
	strvec_pushf(e, "MASTER_PORT=%u", l->port);
	strvec_pushf(e, "MA_NUM_GPUS=%u", l->gpus_per_node);
	strvec_setenv(e, "MA_TASK_NAME", "worker");
	strvec_setenv(e, "MA_VJ_NAME", l->job_name);
	if (!l->mpi)
		strvec_pushf(e, "MA_CURRENT_INSTANCE_NAME=%s-worker-%u", l->job_name, r->node);
	char *rank_table = expdir_file(l->place_dir, EXPDIR_RANK_TABLE);
	strvec_setenv(e, "RANK_TABLE_FILE", rank_table);
	free(rank_table);
	if (!l->mpi)
		strvec_pushf(e, "RANK_ID=%u", r->rank);
	strvec_pushf(e, "RANK_SIZE=%u", l->nranks);
	if (l->per_device)
		strvec_pushf(e, "DEVICE_ID=%u", local_dev);
	if (l->gpus_per_node) {
		char *devs = node_devices(p->gpus, r->node, l->gpus_per_node, l->nodes);
		if (l->per_device) {
			char *dev = device_at(devs, local_dev);
			strvec_setenv(e, "CUDA_VISIBLE_DEVICES", dev);
			free(dev);
		} else if (devs) {
			strvec_setenv(e, "CUDA_VISIBLE_DEVICES", devs);
		}
		free(devs);
	}
	if (cfg->trial.nccl_comm_id)
		strvec_pushf(e, "NCCL_COMM_ID=%s:%u", l->hosts[0], l->port);
	if (l->tf_style) {
		cJSON *tf = cJSON_CreateObject(), *cluster = cJSON_AddObjectToObject(tf, "cluster");
		cJSON *w = cJSON_AddArrayToObject(cluster, "worker");
		for (unsigned i = 0; i < l->nodes; i++) {
			char *hp = xstrfmt("%s:%u", l->hosts[i], l->port + 1 + i);
			cJSON_AddItemToArray(w, cJSON_CreateString(hp));
			free(hp);
		}
		cJSON *ps = cJSON_AddArrayToObject(cluster, "ps");
		char *ps0 = xstrfmt("%s:%u", l->hosts[0], l->port);
		cJSON_AddItemToArray(ps, cJSON_CreateString(ps0));
		free(ps0);
		cJSON *task = cJSON_AddObjectToObject(tf, "task");
		cJSON_AddStringToObject(task, "type", "worker");
		cJSON_AddNumberToObject(task, "index", r->node);
		char *s = cJSON_PrintUnformatted(tf);
		strvec_setenv(e, "TF_CONFIG", s);
		cJSON_free(s);
		cJSON_Delete(tf);
		/* the same cluster as the flat variables of TensorFlow 1 ps/worker scripts */
		char *workers = join_hosts(l->hosts, l->nodes, l->port + 1, 1);
		strvec_pushf(e, "TF_PS_HOSTS=%s:%u", l->hosts[0], l->port);
		strvec_setenv(e, "TF_WORKER_HOSTS", workers);
		strvec_setenv(e, "TF_JOB_NAME", "worker");
		strvec_pushf(e, "TF_TASK_INDEX=%u", r->node);
		free(workers);
	}
	nnitrial_env(e, l->experiment_id, l->trial_id, l->trial_seq, l->place_dir);
	const struct ynode *extra = cfg->trial.env;
	for (size_t i = 0; extra && i < extra->n; i++)
		strvec_setenv(e, extra->keys[i], extra->children[i]->value);
	free(hosts);
}

static void add_argv(struct launch_rank *r, const struct aah_launch *l,
		     const struct launch_params *p)
{
	struct strvec *a = &r->argv;
	const struct aah_config *cfg = p->cfg;
	if (p->propose_runner) {
		strvec_push(a, p->propose_runner);
		strvec_push(a, "propose");
		strvec_push(a, "--experiment");
		strvec_push(a, l->expdir);
		strvec_pushf(a, "--trial=%u", l->trial_seq);
		strvec_push(a, "--exec");
		strvec_push(a, "--");
	}
	launch_command_argv(a, cfg->trial.command);
	if (cfg->nni)
		return;   /* NNI's v2 form: as written; the trial reads parameter.cfg */
	strvec_push(a, "--init_method");
	strvec_pushf(a, "tcp://%s:%u", l->hosts[0], l->port);
	if (!l->mpi) {
		strvec_push(a, "--rank");
		strvec_pushf(a, "%u", r->rank);
	}
	strvec_push(a, "--world_size");
	strvec_pushf(a, "%u", l->nranks);
	if (cfg->trial.data_url) {
		strvec_push(a, "--data_url");
		strvec_push(a, cfg->trial.data_url);
	}
	strvec_push(a, "--train_url");
	strvec_push(a, cfg->trial.train_url ? cfg->trial.train_url : l->place_dir);
	if (l->tf_style) {
		char *workers = join_hosts(l->hosts, l->nodes, l->port + 1, 1);
		strvec_push(a, "--task_index");
		strvec_pushf(a, "%u", r->node);
		strvec_push(a, "--ps_hosts");
		strvec_pushf(a, "%s:%u", l->hosts[0], l->port);
		strvec_push(a, "--worker_hosts");
		strvec_push(a, workers);
		strvec_push(a, "--job_name");
		strvec_push(a, "worker");
		free(workers);
	}
	if (p->resume)
		strvec_push(a, "--resume");
	if (p->elastic)
		strvec_push(a, "--elastic");
	if (p->params)
		launch_push_params(a, p->params);
}

char *launch_mpi_host(const struct aah_launch *l, unsigned node)
{
	return xstrfmt("%s-worker-%u.%s", l->job_name, node, l->job_name);
}

/* ModelArts' MPI form: the hostfile, one line per host with its ranks as
 * slots, and the one mpirun that starts them. The hosts are the backend's
 * (enum launch_mpi_hosts): all 127.0.0.1 as one line (local), the placed
 * ones (Slurm's allocation), or named as ModelArts names them,
 * ${MA_VJ_NAME}-${MA_TASK_NAME}-N.${MA_VJ_NAME}. */
static void build_mpi(struct aah_launch *l, enum launch_mpi_hosts how)
{
	int local = how == LAUNCH_MPI_LOOPBACK;
	int slurm = how == LAUNCH_MPI_PLACED;
	unsigned per_node = l->nranks / l->nodes;
	l->hostfile = expdir_file(l->place_dir, EXPDIR_HOSTFILE);
	strvec_init(&l->hostfile_lines);
	strvec_init(&l->mpirun_argv);
	if (local)
		strvec_pushf(&l->hostfile_lines, "127.0.0.1 slots=%u", l->nranks);
	for (unsigned i = 0; !local && i < l->nodes; i++) {
		/* slurm: placeholders; slurm-launch --mpi writes the real hosts */
		char *host = slurm ? xstrdup(l->hosts[i]) : launch_mpi_host(l, i);
		strvec_pushf(&l->hostfile_lines, "%s slots=%u", host, per_node);
		free(host);
	}

	struct strvec *a = &l->mpirun_argv;
	strvec_push(a, "mpirun");
	/* Open MPI refuses root unless told; containers run as root. */
	if (!local || geteuid() == 0)
		strvec_push(a, "--allow-run-as-root");
	strvec_push(a, "--oversubscribe");
	strvec_push(a, "--hostfile");
	strvec_push(a, l->hostfile);
	strvec_push(a, "-np");
	strvec_pushf(a, "%u", l->nranks);
	strvec_push(a, "--mca");
	strvec_push(a, "btl");
	strvec_push(a, "self,tcp");
	if (local) {
		strvec_push(a, "--mca");
		strvec_push(a, "btl_tcp_if_include");
		strvec_push(a, "lo");
	}
	/* The contract's names reach ranks on other hosts too. */
	const struct strvec *env = &l->ranks[0].env;
	for (size_t i = 0; i < env->n; i++) {
		strvec_push(a, "-x");
		strvec_pushf(a, "%.*s", (int)strcspn(env->v[i], "="), env->v[i]);
	}
	for (size_t i = 0; i < l->ranks[0].argv.n; i++)
		strvec_push(a, l->ranks[0].argv.v[i]);
}

int launch_build(struct aah_launch *l, const struct launch_params *p)
{
	const struct aah_config *cfg = p->cfg;
	memset(l, 0, sizeof(*l));
	if (cfg->trial.nodes < 1 || cfg->trial.gpu_num < 0)
		BUG("launch: config not validated");
	l->experiment_id = xstrdup(p->experiment_id);
	char id[EXPDIR_TRIAL_ID_SIZE];
	l->trial_id = xstrdup(expdir_trial_id(p->trial_seq, id));
	l->trial_seq = p->trial_seq;
	l->attempt = p->attempt;
	l->expdir = xstrdup(p->expdir);
	l->workdir = xstrdup(p->workdir);
	l->trial_dir = expdir_trial_dir(p->expdir, p->trial_seq);
	l->place_dir = expdir_place_dir(p->expdir, p->trial_seq, p->place);
	l->cwd = config_resolve(cfg, cfg->trial.code_dir);
	l->job_name = xstrfmt("aah-%s-%s", p->experiment_id, l->trial_id);
	l->nodes = p->nodes ? p->nodes : (unsigned)cfg->trial.nodes;
	l->gpus_per_node = (unsigned)cfg->trial.gpu_num;
	l->per_device = !strcmp(cfg->trial.process_mode, "device");
	l->tf_style = !strcmp(cfg->trial.launch_style, "tensorflow");
	l->mpi = !strcmp(cfg->trial.launcher, "mpi");
	l->elastic = p->elastic;
	l->port = p->port;
	l->hosts = xcalloc(l->nodes, sizeof(*l->hosts));
	for (unsigned i = 0; i < l->nodes; i++)
		l->hosts[i] = xstrdup(p->hosts[i]);

	unsigned per_node = l->per_device ? l->gpus_per_node : 1;
	l->nranks = l->nodes * per_node;
	l->ranks = xcalloc(l->nranks, sizeof(*l->ranks));
	for (unsigned node = 0; node < l->nodes; node++) {
		for (unsigned d = 0; d < per_node; d++) {
			struct launch_rank *r = &l->ranks[node * per_node + d];
			r->rank = node * per_node + d;
			r->node = node;
			r->host = xstrdup(l->hosts[node]);
			strvec_init(&r->env);
			strvec_init(&r->argv);
			add_env(r, l, p, d);
			add_argv(r, l, p);
		}
	}
	if (l->mpi)
		build_mpi(l, p->mpi_hosts);
	return 0;
}

static cJSON *strvec_env_json(const struct strvec *env)
{
	cJSON *o = cJSON_CreateObject();
	for (size_t i = 0; i < env->n; i++) {
		const char *eq = strchr(env->v[i], '=');
		char *k = xstrndup(env->v[i], (size_t)(eq - env->v[i]));
		cJSON_AddStringToObject(o, k, eq + 1);
		free(k);
	}
	return o;
}

cJSON *launch_to_json(const struct aah_launch *l)
{
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "format", "aah-launch/1");
	cJSON_AddStringToObject(doc, "experiment", l->experiment_id);
	cJSON_AddStringToObject(doc, "trial", l->trial_id);
	cJSON_AddNumberToObject(doc, "trial_seq", l->trial_seq);
	cJSON_AddNumberToObject(doc, "attempt", l->attempt);
	cJSON_AddStringToObject(doc, "job_name", l->job_name);
	cJSON_AddNumberToObject(doc, "nodes", l->nodes);
	cJSON_AddNumberToObject(doc, "gpus_per_node", l->gpus_per_node);
	cJSON_AddStringToObject(doc, "mode", l->per_device ? "device" : "node");
	cJSON_AddStringToObject(doc, "style", l->tf_style ? "tensorflow" : "pytorch");
	if (l->mpi) {
		cJSON *m = cJSON_AddObjectToObject(doc, "mpi");
		cJSON_AddStringToObject(m, "hostfile", l->hostfile);
		cJSON *lines = cJSON_AddArrayToObject(m, "hosts");
		for (size_t k = 0; k < l->hostfile_lines.n; k++)
			cJSON_AddItemToArray(lines, cJSON_CreateString(l->hostfile_lines.v[k]));
		cJSON *argv = cJSON_AddArrayToObject(m, "argv");
		for (size_t k = 0; k < l->mpirun_argv.n; k++)
			cJSON_AddItemToArray(argv, cJSON_CreateString(l->mpirun_argv.v[k]));
	}
	cJSON *ranks = cJSON_AddArrayToObject(doc, "ranks");
	for (unsigned i = 0; i < l->nranks; i++) {
		const struct launch_rank *r = &l->ranks[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "rank", r->rank);
		cJSON_AddNumberToObject(o, "node", r->node);
		cJSON_AddStringToObject(o, "host", r->host);
		cJSON_AddItemToObject(o, "env", strvec_env_json(&r->env));
		cJSON *argv = cJSON_AddArrayToObject(o, "argv");
		for (size_t k = 0; k < r->argv.n; k++)
			cJSON_AddItemToArray(argv, cJSON_CreateString(r->argv.v[k]));
		cJSON_AddItemToArray(ranks, o);
	}
	return doc;
}

/* The rank table v1.0 (Ascend/ModelArts form): servers in node order, one
 * device entry per rank process (per device in device mode, else one). */
static cJSON *rank_table_json(const struct aah_launch *l)
{
	cJSON *doc = cJSON_CreateObject();
	char *n = xstrfmt("%u", l->nodes);
	cJSON_AddStringToObject(doc, "status", "completed");
	cJSON_AddStringToObject(doc, "version", "1.0");
	cJSON_AddStringToObject(doc, "server_count", n);
	free(n);
	cJSON *servers = cJSON_AddArrayToObject(doc, "server_list");
	for (unsigned node = 0; node < l->nodes; node++) {
		cJSON *s = cJSON_CreateObject();
		cJSON_AddStringToObject(s, "server_id", l->hosts[node]);
		cJSON *devs = cJSON_AddArrayToObject(s, "device");
		for (unsigned i = 0; i < l->nranks; i++) {
			if (l->ranks[i].node != node)
				continue;
			cJSON *d = cJSON_CreateObject();
			char *id = xstrfmt("%u", l->per_device ? l->ranks[i].rank % l->gpus_per_node : 0);
			char *rk = xstrfmt("%u", l->ranks[i].rank);
			cJSON_AddStringToObject(d, "device_id", id);
			cJSON_AddStringToObject(d, "device_ip", l->hosts[node]);
			cJSON_AddStringToObject(d, "rank_id", rk);
			free(id);
			free(rk);
			cJSON_AddItemToArray(devs, d);
		}
		cJSON_AddItemToArray(servers, s);
	}
	return doc;
}

int launch_write(const struct aah_launch *l)
{
	if (fileio_mkdir_p(l->place_dir, 0755) < 0)
		return -1;
	char *p1 = expdir_file(l->place_dir, EXPDIR_LAUNCH);
	char *p2 = expdir_file(l->place_dir, EXPDIR_RANK_TABLE);
	cJSON *d1 = launch_to_json(l), *d2 = rank_table_json(l);
	/* Rewritten at every submission, so a power cut costs nothing. */
	int r = jsonfile_write_flags(p1, d1, FILEIO_NOSYNC) < 0 ||
			jsonfile_write_flags(p2, d2, FILEIO_NOSYNC) < 0 ? -1 : 0;
	cJSON_Delete(d1);
	cJSON_Delete(d2);
	free(p1);
	free(p2);
	if (r == 0 && l->mpi) {
		struct strbuf sb = STRBUF_INIT;
		for (size_t k = 0; k < l->hostfile_lines.n; k++)
			strbuf_addf(&sb, "%s\n", l->hostfile_lines.v[k]);
		r = fileio_write_atomic_flags(l->hostfile, sb.buf, sb.len, FILEIO_NOSYNC);
		strbuf_release(&sb);
	}
	return r;
}

void launch_release(struct aah_launch *l)
{
	for (unsigned i = 0; i < l->nranks; i++) {
		free(l->ranks[i].host);
		strvec_clear(&l->ranks[i].env);
		strvec_clear(&l->ranks[i].argv);
	}
	for (unsigned i = 0; l->hosts && i < l->nodes; i++)
		free(l->hosts[i]);
	free(l->hosts);
	free(l->ranks);
	free(l->experiment_id);
	free(l->trial_id);
	free(l->expdir);
	free(l->workdir);
	free(l->trial_dir);
	free(l->place_dir);
	free(l->cwd);
	free(l->job_name);
	if (l->mpi) {
		free(l->hostfile);
		strvec_clear(&l->hostfile_lines);
		strvec_clear(&l->mpirun_argv);
	}
	memset(l, 0, sizeof(*l));
}
