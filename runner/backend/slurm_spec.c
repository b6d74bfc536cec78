/* slurm_spec.c: the Slurm backend's pure parts: config keys, the sbatch
 * script and argv, the state mapping and the parsers of Slurm's output.
 * Nothing here runs a program, so all of it is unit-tested. */
#include "runner/backend/slurm.h"
#include "runner/backend/proc.h" /* PROC_TIMEOUT_STATUS */
#include "runner/store/expdir.h" /* expdir_file */
#include "util.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SC(f) offsetof(struct slurm_config, f)
const struct cfg_key slurm_config_keys[] = {
	{ "partition", CFG_STR, SC(partition), 0, NULL, NULL, "(cluster default)",
	  "sbatch --partition of every trial job" },
	{ "account", CFG_STR, SC(account), 0, NULL, NULL, "(none)", "sbatch --account" },
	{ "qos", CFG_STR, SC(qos), 0, NULL, NULL, "(none)", "sbatch --qos" },
	{ "cpusPerTask", CFG_INT, SC(cpus_per_task), CFG_RANGE(1, 4096), NULL, NULL, "1",
	  "sbatch --cpus-per-task: CPUs of each rank" },
	{ "mem", CFG_STR, SC(mem), 0, NULL, NULL, "(cluster default)",
	  "sbatch --mem: memory per node, e.g. 64G" },
	{ "gresName", CFG_STR, SC(gres_name), 0, NULL, NULL, "gpu",
	  "GRES name of the GPUs: --gres=<gresName>:<trial.gpuNum>" },
	{ "timeLimit", CFG_DURATION, SC(time_limit), CFG_RANGE(0, CFG_YEAR), NULL, NULL, "(trial.timeout)",
	  "sbatch --time (rounded up to minutes); 0 takes trial.timeout, and none when both are 0" },
	{ "tasksPerNode", CFG_INT, SC(tasks_per_node), CFG_RANGE(1, 1024), NULL, NULL, "1",
	  "trial nodes packed onto one Slurm node (trial.nodes must be a multiple); in a device "
	  "pool the most, the job taking the largest count up to it that divides the share" },
	{ "sbatchArgs", CFG_ANY, SC(sbatch_args), 0, NULL, NULL, "[]",
	  "extra sbatch arguments, a list of strings (e.g. [--constraint=a100, --exclusive])" },
	{ "runner", CFG_STR, SC(runner), 0, NULL, NULL, "(this aah-runner)",
	  "path of aah-runner on the compute nodes (it starts each rank: slurm-launch)" },
	{ "pollInterval", CFG_DURATION, SC(poll_interval), CFG_RANGE(0.01, 3600), NULL, NULL, "2s",
	  "time between two squeue queries (one query covers every job of the experiment)" },
	{ "commandTimeout", CFG_DURATION, SC(command_timeout), CFG_RANGE(0.1, CFG_DAY), NULL, NULL, "30s",
	  "how long sbatch, squeue, sacct, scontrol or scancel may take before it counts as failed" },
	{ NULL },
};

void slurm_format_time(double seconds, char *buf, size_t n)
{
	long minutes = (long)ceil(seconds / 60.0);
	if (minutes < 1)
		minutes = 1;
	snprintf(buf, n, "%ld-%02ld:%02ld:00", minutes / 1440, minutes / 60 % 24, minutes % 60);
}

/* sbatch reads "#SBATCH --opt=value" lines itself: a value must not end the
 * line or open a quote; one with blanks is double-quoted. */
static int directive(struct strbuf *out, const char *opt, const char *value)
{
	for (const char *p = value; *p; p++)
		if (iscntrl((unsigned char)*p) || *p == '"')
			return error("slurm: the value of %s ('%s') has a quote or control character "
				     "that an #SBATCH line cannot carry", opt, value);
	if (!*value)
		return error("slurm: %s must not be empty", opt);
	if (strpbrk(value, " \t'\\"))
		strbuf_addf(out, "#SBATCH %s=\"%s\"\n", opt, value);
	else
		strbuf_addf(out, "#SBATCH %s=%s\n", opt, value);
	return 0;
}

/* Slurm tasks on one Slurm node: ranks of a trial node times nodes packed. */
static unsigned tasks_per_slurm_node(const struct aah_launch *l, unsigned per)
{
	unsigned ranks_per_node = l->nranks / l->nodes;
	return ranks_per_node * per;
}

/* Trial nodes on one Slurm node. A trial of a device pool runs on its
 * share, any number: tasksPerNode is then the most, and the job takes the
 * largest count up to it that divides the share (3 of tasksPerNode 8: one
 * Slurm node with 3 tasks), so that every Slurm node holds as many ranks
 * (what slurm-launch maps ranks to hosts by). */
static unsigned nodes_per_job_node(const struct slurm_config *sc, const struct aah_config *cfg,
				   unsigned nodes)
{
	unsigned per = (unsigned)sc->tasks_per_node;
	if (cfg->pool.devices <= 0 || !nodes)
		return per;
	if (per > nodes)
		per = nodes;
	while (nodes % per)
		per--;
	return per;
}

int slurm_script_build(const struct slurm_config *sc, const struct aah_config *cfg,
		       const struct aah_launch *l, const char *code_dir, struct strbuf *out)
{
	unsigned per = nodes_per_job_node(sc, cfg, l->nodes);
	if (l->nodes % per)
		return error("slurm: trial.nodes (%u) is not a multiple of slurm.tasksPerNode (%u)",
			     l->nodes, per);
	unsigned slurm_nodes = l->nodes / per;
	double limit = sc->time_limit > 0 ? sc->time_limit : cfg->trial.timeout;
	char buf[64];
	int r = 0;

	strbuf_addstr(out, "#!/bin/sh\n");
	strbuf_addstr(out, "# aah trial job, written by aah-runner; submitted as\n"
			   "#   sbatch [options] slurm.sh <aah-runner> <trial dir>\n");
	strbuf_addstr(out, l->mpi ? "# `aah-runner slurm-launch --mpi` writes the hostfile from\n"
				    "# SLURM_JOB_NODELIST and runs one mpirun that starts every rank.\n"
				  : "# srun starts one task per rank; in each, `aah-runner slurm-launch`\n"
				    "# turns SLURM_PROCID and SLURM_JOB_NODELIST into the launch contract.\n");
	r |= directive(out, "--job-name", l->job_name);
	snprintf(buf, sizeof(buf), "%u", slurm_nodes);
	r |= directive(out, "--nodes", buf);
	snprintf(buf, sizeof(buf), "%u", tasks_per_slurm_node(l, per));
	r |= directive(out, "--ntasks-per-node", buf);
	snprintf(buf, sizeof(buf), "%ld", sc->cpus_per_task);
	r |= directive(out, "--cpus-per-task", buf);
	if (l->gpus_per_node > 0) {
		snprintf(buf, sizeof(buf), "%s:%u", sc->gres_name,
			 l->gpus_per_node * per);
		r |= directive(out, "--gres", buf);
	}
	if (sc->mem)
		r |= directive(out, "--mem", sc->mem);
	if (sc->partition)
		r |= directive(out, "--partition", sc->partition);
	if (sc->account)
		r |= directive(out, "--account", sc->account);
	if (sc->qos)
		r |= directive(out, "--qos", sc->qos);
	if (limit > 0) {
		slurm_format_time(limit, buf, sizeof(buf));
		r |= directive(out, "--time", buf);
	}
	char *log = expdir_file(l->trial_dir, EXPDIR_TRIAL_LOG);
	r |= directive(out, "--output", log);
	free(log);
	r |= directive(out, "--open-mode", "append");
	r |= directive(out, "--chdir", code_dir);
	strbuf_addstr(out, "#SBATCH --no-requeue\n");
	strbuf_addstr(out, "#SBATCH --kill-on-invalid-dep=yes\n");
	strbuf_addstr(out,
		      "set -u\n"
		      "echo \"aah: slurm job $SLURM_JOB_ID on $SLURM_JOB_NODELIST "
		      "($SLURM_NTASKS tasks)\"\n");
	if (l->mpi) /* ModelArts' MPI form: one mpirun over the allocation */
		strbuf_addstr(out, "exec \"$1\" slurm-launch --mpi \"$2\"\n");
	else
		strbuf_addstr(out,
			      "exec srun --kill-on-bad-exit=1 --cpus-per-task=\"${SLURM_CPUS_PER_TASK:-1}\" \\\n"
			      "\t\"$1\" slurm-launch \"$2\"\n");
	return r ? -1 : 0;
}

int slurm_sbatch_argv(const struct slurm_config *sc, const char *script, const char *runner,
		      const struct aah_launch *l, struct strvec *argv)
{
	strvec_push(argv, "sbatch");
	strvec_push(argv, "--parsable");
	/* Held until the job id is in the journal; then released. */
	strvec_push(argv, "--hold");
	const struct ynode *extra = sc->sbatch_args;
	if (extra && extra->kind != YNODE_SEQ)
		return error("slurm.sbatchArgs must be a list of strings");
	for (size_t i = 0; extra && i < extra->n; i++) {
		if (extra->children[i]->kind != YNODE_SCALAR)
			return error("slurm.sbatchArgs: item %zu is not a string", i + 1);
		strvec_push(argv, extra->children[i]->value);
	}
	strvec_push(argv, script);
	strvec_push(argv, runner);
	strvec_push(argv, l->place_dir);   /* slurm-launch reads its launch.json */
	return 0;
}

/* ---- states ------------------------------------------------------------ */

struct state_map {
	const char *name;
	enum aah_job_state state;
	int final;
	const char *what;         /* said after the state, or NULL */
	int disrupted;            /* the cluster took a node (or the job) away */
};

/* Slurm's job states (squeue %T long names; sacct may add " by <uid>"). */
static const struct state_map state_table[] = {
	{ "PENDING", AAH_JOB_PENDING, 0, NULL, 0 },
	{ "CONFIGURING", AAH_JOB_PENDING, 0, NULL, 0 },
	{ "REQUEUED", AAH_JOB_PENDING, 0, NULL, 0 },
	{ "REQUEUE_HOLD", AAH_JOB_PENDING, 0, NULL, 0 },
	{ "REQUEUE_FED", AAH_JOB_PENDING, 0, NULL, 0 },
	{ "RESV_DEL_HOLD", AAH_JOB_PENDING, 0, NULL, 0 },
	{ "RUNNING", AAH_JOB_RUNNING, 0, NULL, 0 },
	{ "COMPLETING", AAH_JOB_RUNNING, 0, NULL, 0 },
	{ "SUSPENDED", AAH_JOB_RUNNING, 0, NULL, 0 },
	{ "STOPPED", AAH_JOB_RUNNING, 0, NULL, 0 },
	{ "SIGNALING", AAH_JOB_RUNNING, 0, NULL, 0 },
	{ "STAGE_OUT", AAH_JOB_RUNNING, 0, NULL, 0 },
	{ "RESIZING", AAH_JOB_RUNNING, 0, NULL, 0 },
	{ "COMPLETED", AAH_JOB_SUCCEEDED, 1, NULL, 0 },
	{ "FAILED", AAH_JOB_FAILED, 1, NULL, 0 },
	{ "NODE_FAIL", AAH_JOB_FAILED, 1, "a node of the job failed", 1 },
	{ "BOOT_FAIL", AAH_JOB_FAILED, 1, "a node failed to boot", 1 },
	{ "OUT_OF_MEMORY", AAH_JOB_FAILED, 1, "out of memory", 0 },
	{ "PREEMPTED", AAH_JOB_FAILED, 1, "preempted", 1 },
	{ "REVOKED", AAH_JOB_FAILED, 1, NULL, 0 },
	{ "SPECIAL_EXIT", AAH_JOB_FAILED, 1, NULL, 0 },
	{ "CANCELLED", AAH_JOB_FAILED, 1, "canceled outside aah (scancel)", 0 }, /* a failed attempt */
	{ "TIMEOUT", AAH_JOB_TIMEOUT, 1, "over its Slurm time limit", 0 },
	{ "DEADLINE", AAH_JOB_TIMEOUT, 1, "over its Slurm time limit", 0 },
};

static const struct state_map *state_find(const char *state)
{
	size_t len = strcspn(state, " +");
	for (size_t i = 0; i < ARRAY_SIZE(state_table); i++)
		if (strlen(state_table[i].name) == len && !strncmp(state_table[i].name, state, len))
			return &state_table[i];
	return NULL;
}

enum aah_job_state slurm_map_state(const char *state, int canceled_by_us, int *final)
{
	const struct state_map *m = state_find(state);
	if (!m) {
		/* A state this table does not know: keep following the job. */
		*final = 0;
		return AAH_JOB_RUNNING;
	}
	*final = m->final;
	/* Ours: canceled once it ended, not while COMPLETING (its processes may
	 * still run then: a stop waits until squeue shows it no more). */
	if (canceled_by_us && m->final)
		return AAH_JOB_CANCELED;
	return m->state;
}

int slurm_state_disrupted(const char *state)
{
	const struct state_map *m = state_find(state);
	return m && m->disrupted;
}

void slurm_describe(const char *job, const char *state, const char *reason, int exit_code,
		    char *buf, size_t n)
{
	const struct state_map *m = state_find(state);
	size_t len = strcspn(state, " ");
	int off = snprintf(buf, n, "slurm job %s %.*s%s%s", job, (int)len, state,
			   m && m->what ? ": " : "", m && m->what ? m->what : "");
	if (off < 0 || (size_t)off >= n)
		return;
	if (reason && *reason && strcmp(reason, "None"))
		off += snprintf(buf + off, n - (size_t)off, " (%s)", reason);
	if (off >= 0 && (size_t)off < n && exit_code > 128)
		snprintf(buf + off, n - (size_t)off, ", killed by signal %d", exit_code - 128);
	else if (off >= 0 && (size_t)off < n && exit_code > 0)
		snprintf(buf + off, n - (size_t)off, ", exit code %d", exit_code);
}

/* ---- parsers ----------------------------------------------------------- */

int slurm_parse_exit(const char *s)
{
	long code, sig;
	char *end;
	if (!s || !isdigit((unsigned char)*s))
		return -1;
	code = strtol(s, &end, 10);
	if (*end != ':' || !isdigit((unsigned char)end[1]))
		return -1;
	sig = strtol(end + 1, &end, 10);
	if ((*end && !isspace((unsigned char)*end)) || code > 255 || sig > 127)
		return -1;
	return sig ? 128 + (int)sig : (int)code;
}

static void copy_field(char *dst, size_t n, const char *s, size_t len)
{
	if (len >= n)
		len = n - 1;
	memcpy(dst, s, len);
	dst[len] = '\0';
}

int slurm_parse_rows(const char *text, int with_exit, struct slurm_row *rows, int max)
{
	int count = 0;
	for (const char *line = text; *line && count < max;) {
		size_t len = strcspn(line, "\n");
		const char *f[4] = { NULL };
		size_t fl[4] = { 0 };
		int nf = 0;
		for (const char *p = line; nf < 4 && p <= line + len;) {
			size_t w = strcspn(p, "|\n");
			if (p + w > line + len)
				w = (size_t)(line + len - p);
			f[nf] = p;
			fl[nf++] = w;
			p += w + 1;
		}
		int need = with_exit ? 3 : 2;
		if (nf >= need && fl[0] > 0 && isdigit((unsigned char)f[0][0])) {
			struct slurm_row *r = &rows[count++];
			copy_field(r->id, sizeof(r->id), f[0], fl[0]);
			copy_field(r->state, sizeof(r->state), f[1], fl[1]);
			r->exit_code = -1;
			r->reason[0] = '\0';
			if (with_exit) {
				char code[32];
				copy_field(code, sizeof(code), f[2], fl[2]);
				r->exit_code = slurm_parse_exit(code);
				if (nf > 3)
					copy_field(r->reason, sizeof(r->reason), f[3], fl[3]);
			} else if (nf > 2) {
				copy_field(r->reason, sizeof(r->reason), f[2], fl[2]);
			}
		}
		line += len;
		if (*line == '\n')
			line++;
	}
	return count;
}

int slurm_scontrol_exit(const char *text)
{
	for (const char *p = text; (p = strstr(p, "ExitCode=")); p++)
		if (p == text || isspace((unsigned char)p[-1]))
			return slurm_parse_exit(p + strlen("ExitCode="));
	return -1;
}

int slurm_error_transient(const char *err, int exit_code)
{
	static const char *const transient[] = {
		"Unable to contact slurm controller",
		"Socket timed out",
		"temporarily unable",
		"Resource temporarily unavailable",
		"Zero Bytes were transmitted",
		"Connection refused",
		"Transport endpoint is not connected",
		"Slurm backup controller in standby mode",
	};
	if (exit_code == PROC_TIMEOUT_STATUS)
		return 1;
	for (size_t i = 0; i < ARRAY_SIZE(transient); i++)
		if (err && strstr(err, transient[i]))
			return 1;
	return 0;
}

int slurm_parse_job_id(const char *out, char *id, size_t n)
{
	while (*out && isspace((unsigned char)*out))
		out++;
	size_t len = strspn(out, "0123456789");
	if (!len || len >= n || (out[len] && out[len] != ';' && !isspace((unsigned char)out[len])))
		return -1;
	copy_field(id, n, out, len);
	return 0;
}

char *slurm_subst_hosts(const char *s, char *const *hosts, unsigned nhosts, unsigned per)
{
	struct strbuf sb = STRBUF_INIT;
	const char *p = s;
	strbuf_addstr(&sb, "");
	while (*p) {
		const char *at = strstr(p, "@aah-host-");
		unsigned idx;
		int used = 0;
		if (!at) {
			strbuf_addstr(&sb, p);
			break;
		}
		strbuf_add(&sb, p, (size_t)(at - p));
		if (sscanf(at, "@aah-host-%u@%n", &idx, &used) == 1 && used > 0 &&
		    idx / per < nhosts) {
			strbuf_addstr(&sb, hosts[idx / per]);
			p = at + used;
		} else {
			strbuf_addch(&sb, '@');
			p = at + 1;
		}
	}
	return strbuf_detach(&sb, NULL);
}
