/* docker_spec.c: the Docker backend's pure parts: config keys, the argv of
 * one rank's container and the reading of `docker inspect` (unit-tested
 * against golden argv and captured inspect output). */
#include "runner/backend/docker.h"
#include "runner/backend/docker_hosts.h"
#include "runner/backend/mpi_ssh.h" /* mpi_ssh_client_config, mpi_ssh_sshd_config */
#include "strbuf.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DC(f) offsetof(struct docker_config, f)
const struct cfg_key docker_config_keys[] = {
	{ "image", CFG_STR, DC(image), 0, NULL, NULL, "aah-trial:cpu",
	  "image every rank runs (the trial command runs inside it)" },
	{ "mounts", CFG_ANY, DC(mounts), 0, NULL, NULL, "[/userhome:/userhome]",
	  "bind mounts, a list of src:dst[:opts] (-v); the experiment directory must be inside one" },
	{ "user", CFG_STR, DC(user), 0, NULL, NULL, "(the image's)", "--user, e.g. 1000:1000" },
	{ "network", CFG_STR, DC(network), 0, NULL, NULL, "host",
	  "--network; host lets the ranks meet on MASTER_ADDR:MASTER_PORT" },
	{ "shmSize", CFG_STR, DC(shm_size), 0, NULL, NULL, "(docker's 64m)",
	  "--shm-size, e.g. 16g for data loader workers" },
	{ "workdir", CFG_STR, DC(workdir), 0, NULL, NULL, "(trial.codeDir)",
	  "working directory inside the container (-w)" },
	{ "runArgs", CFG_ANY, DC(run_args), 0, NULL, NULL, "[]",
	  "extra docker create arguments, a list of strings (e.g. [--ipc=host])" },
	{ "binary", CFG_STR, DC(binary), 0, NULL, NULL, "docker",
	  "the docker command (or a compatible one)" },
	{ "pollInterval", CFG_DURATION, DC(poll_interval), CFG_RANGE(0.01, 3600), NULL, NULL, "1s",
	  "time between two docker inspect queries of a job" },
	{ "commandTimeout", CFG_DURATION, DC(command_timeout), CFG_RANGE(0.1, CFG_DAY), NULL, NULL, "60s",
	  "how long one docker command may take before it counts as failed" },
	{ "hosts", CFG_ANY, DC(hosts), 0, NULL, NULL, "(this machine's engine)",
	  "nodes reached by docker -H ssh://user@address:port: a list of {address, user, port, "
	  "slots or gpus}, or the path of AIPerf's servers.json (docs/docker.md)" },
	{ "hostTimeout", CFG_DURATION, DC(host_timeout), CFG_RANGE(0.1, CFG_DAY), NULL, NULL, "60s",
	  "how long a host may fail every docker command before it is marked down and its trials "
	  "are retried elsewhere" },
	{ NULL },
};

int docker_check_config(const struct aah_config *cfg)
{
	struct docker_config dc;
	memset(&dc, 0, sizeof(dc));
	int r = config_parse_section(cfg, "docker", config_section(cfg, "docker"),
				     docker_config_keys, &dc);
	const char *im = dc.image;
	if (r == 0 && (!im || !*im || strcspn(im, " \t\n") != strlen(im))) {
		const struct ynode *n = ynode_get(config_section(cfg, "docker"), "image");
		r = error("%s:%u:%u: 'docker.image' must be an image reference without blanks",
			  cfg->path ? cfg->path : "config", n ? n->line : 1, n ? n->col : 1);
	}
	struct docker_hosts hs;
	if (r == 0 && docker_hosts_parse(cfg, &hs) < 0)
		r = -1;
	else if (r == 0 && hs.n) {
		if (cfg->pool.devices != (long)hs.slots)
			r = config_error_at(cfg, "pool.devices",
					    "must be %u, the slots of docker.hosts (each trial's "
					    "ranks run on devices of the pool, a device on a slot)",
					    hs.slots);
		else if (!strcmp(cfg->trial.launcher, "mpi") && cfg->pool.max_devices > (long)hs.n)
			r = config_error_at(cfg, "pool.maxDevices",
					    "must be at most %u with trial.launcher: mpi on "
					    "docker.hosts (one node per host)", hs.n);
		else if (!strcmp(cfg->trial.launcher, "mpi") && cfg->pool.max_devices <= 0 && hs.n < hs.slots)
			r = config_error_at(cfg, "pool.maxDevices",
					    "must be set, at most %u, with trial.launcher: mpi on "
					    "docker.hosts (one node per host)", hs.n);
		docker_hosts_release(&hs);
	}
	config_release_section(docker_config_keys, &dc);
	return r;
}

char *docker_container_name(const struct aah_launch *l, unsigned rank)
{
	return xstrfmt("%s-%u", l->job_name, rank);
}

static int push_list(struct strvec *argv, const struct ynode *list, const char *key,
		     const char *flag)
{
	if (list->kind != YNODE_SEQ)
		return error("%s must be a list of strings", key);
	for (size_t i = 0; i < list->n; i++) {
		if (list->children[i]->kind != YNODE_SCALAR)
			return error("%s: item %zu is not a string", key, i + 1);
		if (flag)
			strvec_push(argv, flag);
		strvec_push(argv, list->children[i]->value);
	}
	return 0;
}

/* "0,1,2" -> "0,1,2" renumbered from 0 (the devices inside the container). */
static char *inside_devices(const char *gpus)
{
	struct strbuf sb = STRBUF_INIT;
	unsigned n = 1;
	for (const char *p = gpus; *p; p++)
		n += *p == ',';
	for (unsigned i = 0; i < n; i++)
		strbuf_addf(&sb, "%s%u", i ? "," : "", i);
	return strbuf_detach(&sb, NULL);
}

char *docker_mpi_address(unsigned node)
{
	unsigned n = node + 1;
	return xstrfmt("127.%u.%u.%u", (n >> 16) & 255, (n >> 8) & 255, n & 255);
}

/* The containers' ssh: one host network, a port and a loopback address of
 * their own each, root may run them. */
static struct mpi_ssh mpi_ssh_of(const struct docker_mpi *m)
{
	return (struct mpi_ssh){
		.dir = m->ssh_dir, .launcher = "launcher container", .workers = "worker containers",
		.listen = "<its loopback address>:<its port>",
	};
}

void docker_mpi_ssh_config(const struct aah_launch *l, const struct docker_mpi *m,
			   struct strbuf *sb)
{
	struct mpi_ssh s = mpi_ssh_of(m);
	struct mpi_ssh_host *h = xcalloc(l->nodes, sizeof(*h));
	for (unsigned i = 1; i < l->nodes; i++)
		h[i - 1] = (struct mpi_ssh_host){ launch_mpi_host(l, i), NULL, m->ports[i] };
	mpi_ssh_client_config(&s, h, l->nodes ? l->nodes - 1 : 0, sb);
	for (unsigned i = 1; i < l->nodes; i++)
		free(h[i - 1].alias);
	free(h);
}

void docker_mpi_known_hosts(const struct aah_launch *l, const struct docker_mpi *m,
			    const char *host_pub, struct strbuf *sb)
{
	for (unsigned i = 1; i < l->nodes; i++) {
		char *host = launch_mpi_host(l, i);
		mpi_ssh_known_host(host, m->ports[i], host_pub, sb);
		free(host);
	}
}

void docker_mpi_sshd_config(const struct docker_mpi *m, struct strbuf *sb)
{
	struct mpi_ssh s = mpi_ssh_of(m);
	mpi_ssh_sshd_config(&s, sb);
}

static int create_argv(const struct docker_config *dc, const struct aah_launch *l,
		       const struct docker_mpi *m, unsigned rank, const char *code_dir,
		       const struct docker_rank_host *on, struct strvec *argv)
{
	const struct launch_rank *r = &l->ranks[rank];
	const char *gpus = on && on->gpu ? on->gpu : strvec_getenv(&r->env, "CUDA_VISIBLE_DEVICES");
	char *name = docker_container_name(l, rank);

	strvec_push(argv, dc->binary);
	strvec_push(argv, "create");
	strvec_pushf(argv, "--name=%s", name);
	strvec_pushf(argv, "--label=aah.io/experiment=%s", l->experiment_id);
	strvec_pushf(argv, "--label=aah.io/trial=%s", l->trial_id);
	strvec_pushf(argv, "--label=aah.io/attempt=%u", l->attempt);
	strvec_pushf(argv, "--label=aah.io/rank=%u", r->rank);
	strvec_pushf(argv, "--network=%s", dc->network);
	if (dc->mounts && push_list(argv, dc->mounts, "docker.mounts", "-v") < 0)
		goto fail;
	if (dc->user)
		strvec_pushf(argv, "--user=%s", dc->user);
	if (dc->shm_size)
		strvec_pushf(argv, "--shm-size=%s", dc->shm_size);
	strvec_pushf(argv, "--workdir=%s", dc->workdir ? dc->workdir : code_dir);
	if (gpus && *gpus) {
		/* docker reads --gpus as CSV: a list of devices must be quoted. */
		if (strchr(gpus, ','))
			strvec_pushf(argv, "--gpus=\"device=%s\"", gpus);
		else
			strvec_pushf(argv, "--gpus=device=%s", gpus);
	}
	if (dc->run_args && push_list(argv, dc->run_args, "docker.runArgs", NULL) < 0)
		goto fail;
	if (on) {
		strvec_push(argv, "-e");
		strvec_pushf(argv, "AAH_HOST=%s", on->name);
	}
	if (m) {
		char *self = launch_mpi_host(l, r->node);
		strvec_pushf(argv, "--hostname=%s", self);
		free(self);
		for (unsigned i = 0; i < l->nodes; i++) {
			char *host = launch_mpi_host(l, i);
			char *addr = m->addrs && i ? xstrdup(m->addrs[i]) : docker_mpi_address(i);
			strvec_pushf(argv, "--add-host=%s:%s", host, addr);
			free(host);
			free(addr);
		}
		strvec_push(argv, "-e");
		strvec_pushf(argv, "AAH_MPI_SSH_DIR=%s", m->ssh_dir);
		strvec_push(argv, "-e");
		strvec_pushf(argv, "AAH_MPI_ROLE=%s", r->node ? "worker" : "launcher");
		if (!r->node) {
			strvec_push(argv, "-e");
			strvec_pushf(argv, "AAH_MPI_WORKERS=%u", l->nodes - 1);
			strvec_push(argv, "-e");
			strvec_pushf(argv, "OMPI_MCA_plm_rsh_agent=ssh -F %s/" MPI_SSH_CONFIG, m->ssh_dir);
			strvec_push(argv, "-e");
			strvec_push(argv, "OMPI_MCA_plm_rsh_no_tree_spawn=1");
			/* ModelArts' names are FQDNs: Open MPI would ssh to the
			 * first label alone. */
			strvec_push(argv, "-e");
			strvec_push(argv, "OMPI_MCA_orte_keep_fqdn_hostnames=1");
		}
	}
	for (size_t i = 0; i < r->env.n; i++) {
		const char *e = r->env.v[i];
		if (gpus && on && on->gpu && !strncmp(e, "CUDA_VISIBLE_DEVICES=", 21))
			continue;   /* the slot's GPU, below */
		if (gpus && !strncmp(e, "CUDA_VISIBLE_DEVICES=", 21)) {
			/* Inside, the container's devices count from 0. */
			char *inside = inside_devices(gpus);
			strvec_push(argv, "-e");
			strvec_pushf(argv, "CUDA_VISIBLE_DEVICES=%s", inside);
			free(inside);
			continue;
		}
		strvec_push(argv, "-e");
		strvec_push(argv, e);
	}
	if (on && on->gpu) {
		strvec_push(argv, "-e");
		strvec_push(argv, "CUDA_VISIBLE_DEVICES=0");
	}
	strvec_push(argv, dc->image);
	if (m && r->node) {
		char *addr = m->addrs ? xstrdup(m->addrs[r->node]) : docker_mpi_address(r->node);
		strvec_push(argv, "/usr/sbin/sshd");
		strvec_push(argv, "-D");
		strvec_push(argv, "-e");
		strvec_push(argv, "-f");
		strvec_pushf(argv, "%s/sshd_config", m->ssh_dir);
		strvec_push(argv, "-o");
		strvec_pushf(argv, "ListenAddress=%s:%u", addr, m->ports[r->node]);
		strvec_push(argv, "-o");
		strvec_pushf(argv, "PidFile=%s/sshd-%u.pid", m->ssh_dir, r->node);
		free(addr);
	} else {
		const struct strvec *cmd = m ? &l->mpirun_argv : &r->argv;
		for (size_t i = 0; i < cmd->n; i++)
			strvec_push(argv, cmd->v[i]);
	}
	free(name);
	return 0;
fail:
	free(name);
	return -1;
}

int docker_create_argv(const struct docker_config *dc, const struct aah_launch *l, unsigned rank,
		       const char *code_dir, struct strvec *argv)
{
	return create_argv(dc, l, NULL, rank, code_dir, NULL, argv);
}

int docker_create_host_argv(const struct docker_config *dc, const struct aah_launch *l,
			    const struct docker_mpi *m, unsigned rank, const char *code_dir,
			    const struct docker_rank_host *on, struct strvec *argv)
{
	return create_argv(dc, l, m, rank, code_dir, on, argv);
}

int docker_create_mpi_argv(const struct docker_config *dc, const struct aah_launch *l,
			   const struct docker_mpi *m, unsigned rank, const char *code_dir,
			   struct strvec *argv)
{
	return create_argv(dc, l, m, rank, code_dir, NULL, argv);
}

static void copy_str(char *dst, size_t n, const cJSON *item)
{
	dst[0] = '\0';
	if (cJSON_IsString(item) && item->valuestring)
		xstrlcpy(dst, item->valuestring, n);
}

int docker_parse_inspect(const char *json, struct docker_state *out, int max)
{
	cJSON *doc = cJSON_Parse(json);
	if (!cJSON_IsArray(doc)) {
		cJSON_Delete(doc);
		return error("docker inspect printed no JSON array");
	}
	int n = 0;
	const cJSON *c;
	cJSON_ArrayForEach(c, doc) {
		if (n >= max)
			break;
		const cJSON *st = cJSON_GetObjectItemCaseSensitive(c, "State");
		if (!cJSON_IsObject(st))
			continue;
		struct docker_state *d = &out[n++];
		memset(d, 0, sizeof(*d));
		copy_str(d->id, sizeof(d->id), cJSON_GetObjectItemCaseSensitive(c, "Id"));
		copy_str(d->name, sizeof(d->name), cJSON_GetObjectItemCaseSensitive(c, "Name"));
		copy_str(d->status, sizeof(d->status), cJSON_GetObjectItemCaseSensitive(st, "Status"));
		copy_str(d->error, sizeof(d->error), cJSON_GetObjectItemCaseSensitive(st, "Error"));
		const cJSON *code = cJSON_GetObjectItemCaseSensitive(st, "ExitCode");
		d->exit_code = cJSON_IsNumber(code) ? code->valueint : -1;
		d->oom_killed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st, "OOMKilled"));
	}
	cJSON_Delete(doc);
	return n;
}

enum aah_job_state docker_job_state(const struct docker_state *c, int n, int nranks,
				    int canceled, int *exit_code, char *reason, size_t rn)
{
	int running = 0, created = 0, done_ok = 0;
	const struct docker_state *failed = NULL;
	*exit_code = -1;
	reason[0] = '\0';
	for (int i = 0; i < n; i++) {
		const char *s = c[i].status;
		if (!strcmp(s, "exited") && c[i].exit_code == 0 && !c[i].oom_killed)
			done_ok++;
		else if (!strcmp(s, "exited") || !strcmp(s, "dead"))
			failed = failed ? failed : &c[i];
		else if (!strcmp(s, "created"))
			created++;
		else
			running++; /* running, paused, restarting, removing */
	}
	if (canceled && !running) {
		snprintf(reason, rn, "canceled");
		return AAH_JOB_CANCELED;
	}
	if (failed) {
		const char *name = failed->name[0] == '/' ? failed->name + 1 : failed->name;
		*exit_code = failed->exit_code;
		if (failed->oom_killed)
			snprintf(reason, rn, "container %s: out of memory (OOMKilled), exit code %d",
				 name, failed->exit_code);
		else if (!strcmp(failed->status, "dead"))
			snprintf(reason, rn, "container %s is dead%s%s", name,
				 failed->error[0] ? ": " : "", failed->error);
		else if (failed->exit_code > 128)
			snprintf(reason, rn, "container %s was killed by signal %d", name,
				 failed->exit_code - 128);
		else
			snprintf(reason, rn, "container %s exited with status %d%s%s", name,
				 failed->exit_code, failed->error[0] ? ": " : "", failed->error);
		return AAH_JOB_FAILED;
	}
	if (n < nranks) {
		snprintf(reason, rn, "%d of %d containers are gone (removed outside aah?)", nranks - n,
			 nranks);
		return running || created ? AAH_JOB_FAILED : AAH_JOB_LOST;
	}
	if (done_ok == nranks) {
		*exit_code = 0;
		return AAH_JOB_SUCCEEDED;
	}
	if (created && !running && !done_ok)
		return AAH_JOB_PENDING;
	return AAH_JOB_RUNNING;
}
