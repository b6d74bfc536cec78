/* cmd_slurm_launch.c: `aah-runner slurm-launch <trial-dir>`, the in-job launcher.
 * srun runs it once per rank. Its only inputs are the trial's launch.json
 * (written by the runner) and Slurm's own variables: it picks the rank
 * SLURM_PROCID, puts the job's real host names (scontrol show hostnames
 * SLURM_JOB_NODELIST) in place of the placeholders, and execs the trial
 * with the contract's environment and argv, aah's nni module first on its
 * PYTHONPATH (as the local backend does). No shell parses any value. */
#include "fileio.h"
#include "jsonfile.h"
#include "runner/cmd/cmd.h" /* cmd_slurm_launch */
#include "runner/backend/slurm.h" /* slurm_subst_hosts; backend_run_tool */
#include "runner/nni/nnitrial.h" /* nnitrial_module_dir, nnitrial_python_path */
#include "runner/store/expdir.h" /* expdir_file */
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

static int env_long(const char *name, long max, long *out)
{
	const char *v = getenv(name);
	if (!v)
		return error("slurm-launch: %s is not set (run this only under srun)", name);
	if (util_parse_long(v, 0, max, out) < 0)
		return error("slurm-launch: %s='%s' is not a number", name, v);
	return 0;
}

/* The job's nodes in order: `scontrol show hostnames $SLURM_JOB_NODELIST`. */
static int job_hosts(struct strvec *hosts)
{
	const char *list = getenv("SLURM_JOB_NODELIST");
	if (!list)
		list = getenv("SLURM_NODELIST");
	if (!list)
		return error("slurm-launch: SLURM_JOB_NODELIST is not set");
	const char *argv[] = { "scontrol", "show", "hostnames", list, NULL };
	static const struct backend_tool scontrol = {
		.name = "slurm-launch", .missing = "is slurm-client installed?", .timeout = 60,
	};
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	int code = backend_run_tool(&scontrol, argv, NULL, &out, &err);
	int r = code < 0 ? -1 : 0;
	if (r == 0 && code != 0)
		r = error("slurm-launch: scontrol show hostnames %s: %s", list, err.buf);
	if (r == 0)
		strvec_split(hosts, out.buf);
	if (r == 0 && hosts->n == 0)
		r = error("slurm-launch: no host in SLURM_JOB_NODELIST '%s'", list);
	strbuf_release(&out);
	strbuf_release(&err);
	return r;
}

/* rank_table.json with the real host names; every rank writes the same
 * text atomically before its own trial starts. */
static int write_rank_table(const char *dir, char *const *hosts, unsigned nhosts, unsigned per)
{
	char *path = expdir_file(dir, EXPDIR_RANK_TABLE), *text = NULL;
	int r = fileio_read(path, 0, &text, NULL);
	if (r == 0 && strstr(text, "@aah-host-")) {
		char *real = slurm_subst_hosts(text, hosts, nhosts, per);
		r = fileio_write_atomic(path, real, strlen(real));
		free(real);
	}
	free(text);
	free(path);
	return r;
}

/* The i-th entry of a comma list, or NULL. */
static char *list_item(const char *list, unsigned i)
{
	const char *p = list;
	for (unsigned k = 0; k < i && p; k++) {
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return p && *p ? xstrndup(p, strcspn(p, ",")) : NULL;
}

static int build_rank(const cJSON *doc, const char *what, const char *dir, long procid, long ntasks, long nodeid,
		      long localid, struct strvec *env, struct strvec *argv)
{
	const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(doc, "ranks");
	double nodes_d = 0;
	const char *mode = NULL;
	if (!cJSON_IsArray(ranks) || json_get_number(what, doc, "nodes", 0, &nodes_d) < 0 ||
	    json_get_string(what, doc, "mode", 1, &mode) < 0)
		return error("%s: not a launch contract", what);
	long nranks = cJSON_GetArraySize(ranks);
	if (ntasks != nranks)
		return error("slurm-launch: the job has %ld tasks but the trial %ld ranks", ntasks,
			     nranks);
	const cJSON *rank = cJSON_GetArrayItem(ranks, (int)procid);
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(rank, "env");
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(rank, "argv");
	double node_d = 0;
	if (!cJSON_IsObject(e) || !cJSON_IsArray(a) || cJSON_GetArraySize(a) < 1 ||
	    json_get_number(what, rank, "node", 0, &node_d) < 0)
		return error("%s: rank %ld is malformed", what, procid);

	struct strvec hosts = STRVEC_INIT;
	if (job_hosts(&hosts) < 0)
		return -1;
	unsigned nodes = (unsigned)nodes_d, per = nodes / (unsigned)hosts.n;
	int r = 0;
	if (!per || nodes % hosts.n)
		r = error("slurm-launch: %u trial nodes do not fit evenly on %zu Slurm nodes", nodes,
			  hosts.n);
	else if ((long)node_d / per != nodeid)
		r = error("slurm-launch: rank %ld belongs on Slurm node %ld but runs on node %ld "
			  "(tasks are not in block order)", procid, (long)node_d / per, nodeid);
	if (r == 0)
		r = write_rank_table(dir, hosts.v, (unsigned)hosts.n, per);

	/* Our environment (Slurm's included), then the contract on top. */
	char *slurm_gpus = getenv("CUDA_VISIBLE_DEVICES") ? xstrdup(getenv("CUDA_VISIBLE_DEVICES"))
							  : NULL;
	for (char **v = environ; r == 0 && *v; v++)
		strvec_push(env, *v);
	const cJSON *it;
	cJSON_ArrayForEach(it, e) {
		if (r < 0 || !cJSON_IsString(it))
			continue;
		char *val = slurm_subst_hosts(it->valuestring, hosts.v, (unsigned)hosts.n, per);
		strvec_setenv(env, it->string, val);
		free(val);
	}
	/* Slurm's GRES plugin chose the devices: they win over the runner's slots. */
	if (r == 0 && slurm_gpus && strvec_getenv(env, "CUDA_VISIBLE_DEVICES")) {
		char *dev = mode && !strcmp(mode, "device") ? list_item(slurm_gpus, (unsigned)localid)
							    : xstrdup(slurm_gpus);
		strvec_setenv(env, "CUDA_VISIBLE_DEVICES", dev ? dev : slurm_gpus);
		free(dev);
	}
	cJSON_ArrayForEach(it, a) {
		if (r == 0 && !cJSON_IsString(it))
			r = error("%s: rank %ld: argv holds a non-string", what, procid);
		if (r < 0)
			break;
		char *val = slurm_subst_hosts(it->valuestring, hosts.v, (unsigned)hosts.n, per);
		strvec_push(argv, val);
		free(val);
	}
	free(slurm_gpus);
	strvec_clear(&hosts);
	return r;
}

/* trial.launcher: mpi: the hostfile of the job's real hosts, each with its
 * share of the tasks as slots, and mpirun's argv with the real names in
 * place of the placeholders (args held rank 0's argv; it is replaced). */
static int build_mpirun(const cJSON *doc, const char *what, long ntasks, struct strvec *args)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(doc, "mpi");
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(m, "argv");
	const char *hostfile = NULL;
	double nodes_d = 0;
	if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) < 1 ||
	    json_get_string(what, m, "hostfile", 0, &hostfile) < 0 ||
	    json_get_number(what, doc, "nodes", 0, &nodes_d) < 0)
		return error("%s: no mpirun in this launch contract (trial.launcher is not mpi)", what);
	struct strvec hosts = STRVEC_INIT;
	if (job_hosts(&hosts) < 0)
		return -1;
	unsigned per = (unsigned)nodes_d / (unsigned)hosts.n;
	struct strbuf text = STRBUF_INIT;
	int r = 0;
	if (ntasks % (long)hosts.n)
		r = error("slurm-launch: %ld tasks do not fit evenly on %zu Slurm nodes", ntasks,
			  hosts.n);
	for (size_t i = 0; r == 0 && i < hosts.n; i++)
		strbuf_addf(&text, "%s slots=%ld\n", hosts.v[i], ntasks / (long)hosts.n);
	if (r == 0)
		r = fileio_write_atomic(hostfile, text.buf, text.len);
	strvec_clear(args);
	const cJSON *it;
	cJSON_ArrayForEach(it, a) {
		if (r == 0 && !cJSON_IsString(it))
			r = error("%s: mpi.argv holds a non-string", what);
		if (r < 0)
			break;
		char *val = slurm_subst_hosts(it->valuestring, hosts.v, (unsigned)hosts.n, per ? per : 1);
		strvec_push(args, val);
		free(val);
	}
	strbuf_release(&text);
	strvec_clear(&hosts);
	return r;
}

int cmd_slurm_launch(int argc, const char **argv)
{
	int mpi = argc == 3 && !strcmp(argv[1], "--mpi");
	if (mpi) {
		argv++;
		argc--;
	}
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: aah-runner slurm-launch [--mpi] <trial-dir>\n"
				"Run by srun inside a trial's Slurm job: starts rank $SLURM_PROCID "
				"of the trial's launch.json.\n"
				"--mpi: run once by the batch script instead: starts the contract's "
				"mpirun over the job's hosts.\n");
		return argc == 2 && !strcmp(argv[1], "--help") ? 0 : 2;
	}
	long procid = 0, ntasks, nodeid = 0, localid = 0;
	/* With --mpi this is the batch step on the job's first node: rank 0's
	 * environment is every rank's, and mpirun starts the ranks. */
	if ((!mpi && env_long("SLURM_PROCID", 1L << 20, &procid) < 0) ||
	    env_long("SLURM_NTASKS", 1L << 20, &ntasks) < 0 ||
	    (!mpi && env_long("SLURM_NODEID", 1L << 20, &nodeid) < 0))
		return 1;
	if (!mpi && getenv("SLURM_LOCALID"))
		env_long("SLURM_LOCALID", 1L << 20, &localid);
	if (procid >= ntasks) {
		error("slurm-launch: SLURM_PROCID %ld is not below SLURM_NTASKS %ld", procid, ntasks);
		return 1;
	}
	char *path = expdir_file(argv[1], EXPDIR_LAUNCH);
	cJSON *doc = NULL;
	struct strvec env = STRVEC_INIT, args = STRVEC_INIT;
	int r = jsonfile_read(path, &doc);
	if (r == 0)
		r = jsonfile_check_format(path, doc, "aah-launch", 1);
	if (r == 0)
		r = build_rank(doc, path, argv[1], procid, ntasks, nodeid, localid, &env, &args);
	if (r == 0 && mpi)
		r = build_mpirun(doc, path, ntasks, &args);
	char *nni_python = nnitrial_module_dir();
	nnitrial_python_path(&env, nni_python);
	free(nni_python);
	cJSON_Delete(doc);
	free(path);
	if (r < 0)
		return 1;
	fflush(NULL);
	execvpe(args.v[0], args.v, env.v);
	error_errno("slurm-launch: cannot run '%s'", args.v[0]);
	return 127;
}
