/* args.c: the argument table, --help, parsing and resolution. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jsonfile.h" /* jsonfile_read */
#include "fileio.h"   /* fileio_exists */
#include "kernels/ops.h" /* ops_conv_algo_parse, ops_precision_known */
#include "trialimg/args.h"
#include "util.h"

enum kind { K_INT, K_NUM, K_STR, K_BOOL };

/* The values a K_INT or K_NUM entry takes, shown by --help; a value
 * outside is refused naming the argument (every number has one). */
struct range {
	double min, max;
};
#define RANGE(lo, hi) (&(const struct range){ (lo), (hi) })

struct spec {
	const char *name;   /* "--batch_size"; NULL for environment-only values */
	const char *alias;  /* another accepted spelling */
	const char *env;    /* comma-separated variables, first set wins */
	enum kind kind;
	size_t off;
	const struct range *range;  /* K_INT, K_NUM; NULL for the others */
	const char *def;
	const char *help;
};

#define F(field) offsetof(struct args, field)

/* Precedence for every entry: argv > params.json (hyperparameters) > the
 * environment variables in the order listed > the default. */
static const struct spec table[] = {
	{"--batch_size", NULL, NULL, K_NUM, F(batch_size), RANGE(1, 65536), "128", "training batch size per rank (AIPerf; tuner hyperparameter)"},
	{"--batch_scale", NULL, "AAH_BATCH_SCALE", K_NUM, F(batch_scale), RANGE(0, 4096), "0", "AIPerf's batch: params.json's batch_size times this (the smallest GPU memory in GiB) wins over --batch_size (0: off)"},
	{"--epochs", "--epoch", NULL, K_INT, F(epochs), RANGE(1, 100000), "60", "epoch budget of trials after the three warm-up rounds (AIPerf)"},
	{"--warmup_1", NULL, NULL, K_INT, F(warmup_1), RANGE(1, 100000), "15", "epoch budget of round 0: trial_seq-1 < slave (AIPerf)"},
	{"--warmup_2", NULL, NULL, K_INT, F(warmup_2), RANGE(1, 100000), "30", "epoch budget of round 1 (AIPerf)"},
	{"--warmup_3", NULL, NULL, K_INT, F(warmup_3), RANGE(1, 100000), "45", "epoch budget of round 2 (AIPerf)"},
	{"--inherited_epochs", NULL, NULL, K_INT, F(inherited_epochs), RANGE(0, 100000), "0", "epoch budget of a trial that starts from its parent's weights (morph.json beside arch.json; 0: the staged budget above)"},
	{"--inherited_lr_scale", NULL, NULL, K_NUM, F(inherited_lr_scale), RANGE(0, 1), "1", "learning rate of such a trial, as a fraction of the one it would start from (--initial_lr or the tuner's): it fine-tunes weights that are already trained"},
	{"--initial_lr", NULL, NULL, K_NUM, F(initial_lr), RANGE(0, 100), "0.1", "learning rate at the first step (AIPerf)"},
	{"--final_lr", NULL, NULL, K_NUM, F(final_lr), RANGE(0, 100), "0", "learning rate the cosine decay ends at (AIPerf)"},
	{"--smooth_factor", NULL, NULL, K_NUM, F(smooth_factor), RANGE(0, 1), "0.1", "label smoothing (AIPerf)"},
	{"--train_data_dir", NULL, "AAH_TRAIN_DATA_DIR", K_STR, F(train_data_dir), NULL, NULL, "training data (default: --dataset's directory)"},
	{"--val_data_dir", NULL, "AAH_VAL_DATA_DIR", K_STR, F(val_data_dir), NULL, NULL, "validation data (default: --train_data_dir)"},
	{"--slave", NULL, "AAH_SLAVE", K_INT, F(slave), RANGE(1, 10000), "2", "trial concurrency; a round of the epoch budget is `slave` trials (AIPerf; the runner sets AAH_SLAVE to trialConcurrency, which the command's own --slave overrides)"},
	{"--ip", NULL, NULL, K_STR, F(ip), NULL, "127.0.0.1", "AIPerf master address (accepted, unused)"},
	{"--num_parallel_calls", NULL, NULL, K_INT, F(num_parallel_calls), RANGE(0, 256), "0", "data loader worker threads, each decoding 8 samples of a batch at a time (AIPerf); 0: one per core this rank may run on (its CPU affinity and cgroup quota)"},
	{"--arch", NULL, NULL, K_STR, F(arch), NULL, NULL, "aah-arch/1 file (default <trial_dir>/arch.json, else a built-in small CNN)"},
	{"--params", NULL, NULL, K_STR, F(params), NULL, NULL, "aah-params/1 file (default <trial_dir>/params.json when present)"},
	{"--dataset", NULL, "AAH_DATASET", K_STR, F(dataset), NULL, "/usr/share/datasets/fashion-mnist", "data directory used when --train_data_dir is not given"},
	{"--trial_dir", NULL, "AAH_TRIAL_DIR", K_STR, F(trial_dir), NULL, NULL, "where metrics.jsonl, result.json, checkpoint/ go (default: cwd)"},
	{"--threads", NULL, "AAH_THREADS,OMP_NUM_THREADS", K_INT, F(threads), RANGE(0, ARGS_MAX_THREADS), "0", "compute threads (0: all cores)"},
	{"--seed", NULL, "AAH_SEED", K_INT, F(seed), RANGE(0, 4294967295), "1", "seed of initialisation, shuffling, augmentation and dropout"},
	{"--precision", NULL, "AAH_PRECISION", K_STR, F(precision), NULL, "auto", "compute precision: fp32; bf16: bf16 convolutions (fp32 master weights) where a quick trial run of oneDNN's bf16 kernel works on this machine, on a cuda GPU of compute capability 8.0 or newer, and emulated on ref; fp16: fp16 convolutions under a dynamic loss scale (--loss_scale) on a cuda GPU (compute capability 8.0 or newer, as for every cuda run), and emulated on ref; auto: bf16 on a GPU that has it, fp32 elsewhere; fast: also bf16 on a CPU with bf16 instructions (AVX512-BF16, AMX: --probe's bf16_native), where it trains about 1.4x faster, and fp32 on one without, where oneDNN would emulate it slower. result.json records what ran"},
	{"--loss_scale", NULL, NULL, K_NUM, F(loss_scale), RANGE(1, 16777216), "65536", "fp16 only: the loss scale to start from; a step whose gradients overflow is skipped and the scale halved, and --loss_scale_interval good steps in a row double it (bounds 1 and 2^24)"},
	{"--loss_scale_interval", NULL, NULL, K_INT, F(loss_scale_interval), RANGE(1, 1000000), "2000", "fp16 only: good steps in a row before the loss scale doubles"},
	{"--backend", NULL, "AAH_BACKEND", K_STR, F(backend), NULL, "auto", "compute backend of kernels/ops.h: auto (cuda where this aah-trial has it built in and a CUDA device is visible, else cpu; the log and result.json say which and why), cpu (oneDNN), cuda (NVIDIA GPU: cuDNN, cuBLASLt and CUDA kernels; in builds that found nvcc and cuDNN), ref (kernels/ref, the plain-C reference ops every backend is tested against: single-threaded and slow, for checking a result), refdev (ref's ops on a pretend device whose host copies read NaN until synced: checks the trainer's syncs of a device-resident model), or cudahost (the cuda backend's own kernels compiled for the CPU, convolutions and dense layers ref's: checks them without a GPU, slowly)"},
	{"--batch_rule", NULL, "AAH_BATCH_RULE", K_STR, F(batch_rule), NULL, "off", "aiperf: on a GPU, each rank's batch is AIPerf's rule, params.json's batch_size (else 14, where the search space leaves it to the rule) times the GPU's memory in GiB, rounded (cudaGetDeviceProperties' total: what nvidia-smi and NVML report); recorded in result.json and the log. Elsewhere --batch_size stays. Either is then checked against the step's memory plan: where it does not fit, the largest batch that does trains (the log and result.json's batch_asked say so). off: --batch_size (and --batch_scale) as given; one that does not fit fails before training"},
	{"--augment", NULL, "AAH_AUGMENT", K_STR, F(augment), NULL, "auto", "training augmentation: none, or a comma list of flip and shift[=N] (up to N pixels, default 2); auto: flip for CIFAR-10 and JPEG folders, none for IDX"},
	{"--conv_algo", NULL, "AAH_CONV_ALGO", K_STR, F(conv_algo), NULL, "auto", "convolutions: auto (Winograd for 3x3 stride-1 layers where the backend has it) or direct"},
	{"--stop_diverged", NULL, NULL, K_BOOL, F(stop_diverged), NULL, "0", "stop after an epoch whose training loss is not finite, or above ln(classes) + 0.05 while val_acc is at chance (<= 1.5/classes)"},
	{"--patience", NULL, NULL, K_INT, F(patience), RANGE(0, 100000), "0", "early stop after this many epochs without a better val_acc (0: AIPerf's min(6+2*round, 20))"},
	{"--resume", NULL, NULL, K_BOOL, F(resume), NULL, "0", "continue from <trial_dir>/checkpoint when one exists"},
	{"--global_batch", NULL, NULL, K_INT, F(global_batch), RANGE(0, 1000000), "0", "samples per step over all ranks; each rank takes global_batch / world_size, which must be whole (0: batch_size x world_size). Elastic trials set it, so every world size trains the same batches"},
	{"--data_trace", NULL, "AAH_DATA_TRACE", K_STR, F(data_trace), NULL, NULL, "append each training batch's sample numbers to <this>.rank<r>, one line per batch (\"epoch E batch B world W rank R: i ...\"): which rank read what, for tests of sharding, resize and resume"},
	{"--elastic", NULL, NULL, K_BOOL, F(elastic), NULL, "0", "at each step boundary follow <trial_dir>/world_size: on a new size save a mid-epoch checkpoint and exit 85, to be relaunched on it with --resume (global batch kept)"},
	{"--monitor_interval", NULL, "AAH_MONITOR_INTERVAL", K_NUM, F(monitor_interval), RANGE(0, 86400), "30", "seconds between CPU/memory/network/GPU samples in <trial_dir>/device_info, one sampler per host, its first rank (0: off)"},
	{"--trial_seq", NULL, "AAH_TRIAL_SEQ", K_INT, F(trial_seq), RANGE(0, 999999), "0", "1-based trial sequence number (default: params.json trial_seq, else AAH_TRIAL_ID, else 1)"},
	{"--deadline", NULL, "AAH_DEADLINE", K_NUM, F(deadline), RANGE(0, 1e11), "0", "Unix time (seconds) by which the trial should be done: the epoch budget shrinks to the epochs that still fit, judged from the slowest epoch so far (in the first, from its first eighth), and the cosine LR schedule with it, so that the last epoch ends annealed instead of being canceled; judged at the start, a budget whose end would leave less than another budget grows into it, to under twice its size (0: none; the runner sets it under trial.fitExecDuration)"},
	{"--partial_epoch", NULL, NULL, K_BOOL, F(partial_epoch), NULL, "0", "with --deadline, fit the budget to the step rather than to the last whole epoch: the epoch that ends it may train only a part of the training set (a tenth or more), validated as any other, so that a trial grown into the end of the run ends at it instead of leaving it idle (a time budget still cuts to whole epochs)"},
	{"--time_budget", NULL, "AAH_TIME_BUDGET", K_NUM, F(time_budget), RANGE(0, 1e9), "0", "seconds this trial may take, counted from its start (a resumed trial's earlier runs included): the epoch budget shrinks to the epochs that fit, judged as under --deadline, and the cosine LR schedule with it; it never grows. With --deadline, the sooner of the two ends counts (0: none; the runner sets it under trial.maxExecShare)"},
	{"--max_epochs", NULL, NULL, K_INT, F(max_epochs), RANGE(0, 100000), "0", "stop after this many epochs in total; the LR schedule still spans the budget (0: none)"},
	{"--train_samples", NULL, NULL, K_INT, F(train_samples), RANGE(0, 1000000000), "0", "use only the first N training samples (0: all)"},
	{"--val_samples", NULL, NULL, K_INT, F(val_samples), RANGE(0, 1000000000), "0", "use only the first N validation samples (0: all)"},
	{"--weight_decay", NULL, NULL, K_NUM, F(weight_decay), RANGE(0, 1), "0.0001", "L2 weight decay on conv/dense weights"},
	{"--momentum", NULL, NULL, K_NUM, F(momentum), RANGE(0, 1), "0.9", "SGD momentum"},
	{"--dropout_rate", NULL, NULL, K_NUM, F(dropout_rate), RANGE(-1, 1), "-1", "tuner hyperparameter: rate of every dropout layer (-1: arch's own)"},
	{"--kernel_size", NULL, NULL, K_INT, F(kernel_size), RANGE(0, 31), "0", "tuner hyperparameter: kernel of conv layers past the 175th layer, as AIPerf (0: arch's own)"},
	{"--learning_rate", NULL, NULL, K_NUM, F(learning_rate), RANGE(-1, 100), "-1", "tuner hyperparameter: replaces --initial_lr when set"},
	{"--init_method", NULL, NULL, K_STR, F(init_method), NULL, NULL, "rendezvous tcp://host:port (rank 0 listens); else MASTER_ADDR:MASTER_PORT, NCCL_COMM_ID, first of VC_WORKER_HOSTS:MASTER_PORT"},
	{"--rank", NULL, "RANK,OMPI_COMM_WORLD_RANK,PMI_RANK,VC_TASK_INDEX,VK_TASK_INDEX,RANK_ID,SLURM_PROCID", K_INT, F(rank), RANGE(0, 65535), "0", "this process's rank"},
	{"--device", NULL, "LOCAL_RANK,OMPI_COMM_WORLD_LOCAL_RANK,SLURM_LOCALID,DEVICE_ID", K_INT, F(device), RANGE(0, 65535), "0", "GPU backends: which of the visible devices this rank trains on, modulo their number (its local rank; one, where the launch gave each rank its own CUDA_VISIBLE_DEVICES)"},
	{"--world_size", NULL, "WORLD_SIZE,OMPI_COMM_WORLD_SIZE,PMI_SIZE,VC_WORKER_NUM,MA_NUM_HOSTS,RANK_SIZE,SLURM_NTASKS", K_INT, F(world_size), RANGE(1, 65536), "1", "number of ranks"},
	{"--dist_timeout", NULL, "AAH_DIST_TIMEOUT", K_NUM, F(dist_timeout), RANGE(0.1, 86400), "120", "seconds to wait for every rank at the rendezvous"},
	{"--data_url", NULL, NULL, K_STR, F(data_url), NULL, NULL, "ModelArts data location: used as --train_data_dir when that is not given"},
	{"--train_url", NULL, NULL, K_STR, F(train_url), NULL, NULL, "ModelArts output location: used as --trial_dir when nothing else names one"},
	{NULL, NULL, "MASTER_ADDR", K_STR, F(master_addr), NULL, NULL, "rendezvous host (PyTorch form)"},
	{NULL, NULL, "MASTER_PORT", K_STR, F(master_port), NULL, NULL, "rendezvous port (PyTorch form)"},
	{NULL, NULL, "NCCL_COMM_ID", K_STR, F(nccl_comm_id), NULL, NULL, "rendezvous host:port"},
	{NULL, NULL, "VC_WORKER_HOSTS", K_STR, F(worker_hosts), NULL, NULL, "comma-joined hosts in rank order (Volcano)"},
	{NULL, NULL, "AAH_EXPERIMENT_ID", K_STR, F(experiment_id), NULL, NULL, "experiment id (logged)"},
	{NULL, NULL, "AAH_TRIAL_ID", K_STR, F(trial_id), NULL, NULL, "trial id; its number is the default trial_seq"},
	{"--memory_limit", NULL, "AAH_MEMORY_LIMIT", K_NUM, F(memory_limit), RANGE(0, 1e12), "0", "MiB of host memory a CPU trial may use (0: the cgroup's limit, memory.max, else what the machine has available): the memory plan of a step must fit in it less what the trial holds already (its data), see --batch_rule"},
	{"--plan", NULL, NULL, K_BOOL, F(plan), NULL, "0", "print the memory plan of a training step of --arch at --batch_size and --precision on --backend (cpu, or cuda: no device needed) in bytes per image and fixed bytes (with --memory_limit: also the largest batch that fits in it), and exit"},
	{"--probe", NULL, NULL, K_BOOL, F(probe), NULL, "0", "print what this machine gives the cpu backend (CPU model, the ISA oneDNN dispatches to, the activation layout of its fast kernels, bf16 and Winograd convolutions) and exit"},
	{"--help", "-h", NULL, K_BOOL, F(help), NULL, "0", "print this table and exit"},
};

_Static_assert(ARRAY_SIZE(table) <= 80, "struct args.from is too small");

void args_usage(FILE *f)
{
	fprintf(f, "usage: aah-trial --trial_dir DIR [--arch FILE] [--params FILE] [--name=value | --name value]...\n"
		   "       aah-trial --arch FILE | --params FILE [...]   (the trial directory is then the current one)\n"
		   "       aah-trial --probe | --help\n");
}

void args_help(FILE *f)
{
	args_usage(f);
	fprintf(f, "Trains one aah-arch/1 network and writes metrics.jsonl, result.json and\n"
		   "checkpoint/ into the trial directory. Precedence: command line, then\n"
		   "params.json (hyperparameters), then the environment variables in the\n"
		   "order listed, then the default. Unknown arguments are reported and ignored.\n"
		   "A number outside its range is refused.\n\n");
	for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
		const struct spec *s = &table[i];
		fprintf(f, "  %-22s %s\n", s->name ? s->name : "(environment)", s->help);
		if (s->alias)
			fprintf(f, "  %-22s also spelled %s\n", "", s->alias);
		if (s->env)
			fprintf(f, "  %-22s env: %s\n", "", s->env);
		if (s->def)
			fprintf(f, "  %-22s default: %s\n", "", s->def);
		if (s->range)
			fprintf(f, "  %-22s range: %.15g to %.15g\n", "", s->range->min, s->range->max);
	}
}

static int set_value(struct args *a, const struct spec *s, const char *v, const char *where)
{
	char *p = (char *)a + s->off;
	double d;
	switch (s->kind) {
	case K_INT:
	case K_NUM:
		/* integers may come as floats from tuners ("5.0") */
		if (util_parse_double(v, &d) || (s->kind == K_INT && d != floor(d)))
			return error("%s: '%s' is not %s", where, v,
				     s->kind == K_INT ? "an integer" : "a number");
		if (!s->range)
			BUG("number argument %s has no range", s->name);
		if (!(d >= s->range->min && d <= s->range->max))
			return error("%s%s%s must be between %.15g and %.15g, got %s",
				     s->name && strcmp(where, s->name) ? where : "",
				     s->name && strcmp(where, s->name) ? ": " : "",
				     s->name ? s->name : where, s->range->min, s->range->max, v);
		if (s->kind == K_NUM)
			*(double *)p = d;
		else if (s->off == F(seed))
			*(long *)p = (long)d;
		else
			*(int *)p = (int)d;
		return 0;
	case K_STR:
		free(*(char **)p);
		*(char **)p = xstrdup(v);
		return 0;
	case K_BOOL:
		if (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "True"))
			*(int *)p = 1;
		else if (!strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "False"))
			*(int *)p = 0;
		else
			return error("%s: '%s' is not a boolean", where, v);
		return 0;
	}
	return 0;
}

static const struct spec *lookup(const char *name, size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
		const char *n[2] = {table[i].name, table[i].alias};
		for (int k = 0; k < 2; k++)
			if (n[k] && strlen(n[k]) == len && !strncmp(n[k], name, len))
				return &table[i];
	}
	return NULL;
}

int args_source(const struct args *a, const char *name)
{
	const struct spec *s = lookup(name, strlen(name));
	return s ? a->from[s - table] : -1;
}

/* Hyperparameters in params.json "parameters" that name a table entry. */
static int read_params(struct args *a)
{
	cJSON *doc;
	if (jsonfile_read(a->params, &doc))
		return -1;
	int rc = jsonfile_check_format(a->params, doc, "aah-params", 1);
	long seq;
	if (!rc && a->from[lookup("--trial_seq", 11) - table] < ARGS_FROM_ENV &&
	    cJSON_GetObjectItemCaseSensitive(doc, "trial_seq")) {
		rc = json_get_int(a->params, doc, "trial_seq", 0, 1, 1000000000L, &seq);
		a->trial_seq = (int)seq;
		a->from[lookup("--trial_seq", 11) - table] = ARGS_FROM_PARAMS;
	}
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(doc, "parameters"), *e;
	cJSON_ArrayForEach(e, p) {
		if (rc)
			break;
		char *name = xstrfmt("--%s", e->string);
		const struct spec *s = lookup(name, strlen(name));
		free(name);
		/* AIPerf's imagenet_train.py: the command's --batch_size is only the
		 * first trials' batch; a tuned one is the search space's value times
		 * the smallest GPU memory in GiB (utils.MinGpuMem) */
		int aiperf_batch = s && s->off == F(batch_size) && a->batch_scale > 0;
		if (s && s->off == F(batch_size) && cJSON_IsNumber(e))
			a->batch_tuned = e->valuedouble;   /* --batch_rule aiperf's multiplier */
		if (!s || (a->from[s - table] == ARGS_FROM_ARGV && !aiperf_batch))
			continue;
		char *v = cJSON_IsString(e) ? xstrdup(e->valuestring)
					     : cJSON_IsNumber(e) ? xstrfmt("%.17g", e->valuedouble) : NULL;
		if (v) {
			rc = set_value(a, s, v, a->params);
			a->from[s - table] = ARGS_FROM_PARAMS;
			if (aiperf_batch)
				a->batch_size *= a->batch_scale;
		}
		free(v);
	}
	cJSON_Delete(doc);
	return rc;
}

static int split_hostport(const char *hp, char **host, int *port, const char *what)
{
	const char *colon = strrchr(hp, ':');
	long p;
	if (!colon || colon == hp || util_parse_long(colon + 1, 1, 65535, &p))
		return error("%s: '%s' is not host:port", what, hp);
	*host = xstrndup(hp, (size_t)(colon - hp));
	*port = (int)p;
	return 0;
}

/* Rendezvous: --init_method > MASTER_ADDR:MASTER_PORT > NCCL_COMM_ID >
 * first host of VC_WORKER_HOSTS with MASTER_PORT. */
static int resolve_rendezvous(struct args *a)
{
	if (a->init_method) {
		if (strncmp(a->init_method, "tcp://", 6))
			return error("--init_method '%s': only tcp://host:port is supported",
				     a->init_method);
		return split_hostport(a->init_method + 6, &a->rdv_host, &a->rdv_port, "--init_method");
	}
	if (a->master_addr && a->master_port) {
		char *hp = xstrfmt("%s:%s", a->master_addr, a->master_port);
		int rc = split_hostport(hp, &a->rdv_host, &a->rdv_port, "MASTER_ADDR:MASTER_PORT");
		free(hp);
		return rc;
	}
	if (a->nccl_comm_id)
		return split_hostport(a->nccl_comm_id, &a->rdv_host, &a->rdv_port, "NCCL_COMM_ID");
	if (a->worker_hosts && a->master_port) {
		size_t n = strcspn(a->worker_hosts, ",");
		char *hp = xstrfmt("%.*s:%s", (int)n, a->worker_hosts, a->master_port);
		int rc = split_hostport(hp, &a->rdv_host, &a->rdv_port, "VC_WORKER_HOSTS");
		free(hp);
		return rc;
	}
	return a->world_size > 1 ? error("world size %d needs a rendezvous: pass --init_method "
					 "tcp://host:port or set MASTER_ADDR and MASTER_PORT",
					 a->world_size)
				 : 0;
}

int args_parse(struct args *a, int argc, char **argv, const char *(*env_get)(const char *))
{
	memset(a, 0, sizeof(*a));
	for (size_t i = 0; i < ARRAY_SIZE(table); i++)
		if (table[i].def && set_value(a, &table[i], table[i].def, "default"))
			BUG("bad default for %s", table[i].name);
	/* environment */
	for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
		const char *e = table[i].env;
		while (e && *e) {
			size_t n = strcspn(e, ",");
			char *var = xstrndup(e, n);
			const char *v = env_get(var);
			int rc = 0, hit = v && *v;
			if (hit)
				rc = set_value(a, &table[i], v, var);
			free(var);
			if (rc)
				return -1;
			if (hit) {
				a->from[i] = ARGS_FROM_ENV;
				break;
			}
			e += n + (e[n] == ',');
		}
	}
	/* command line */
	char **unknown = xcalloc(argc + 1, sizeof(char *));
	int n_unknown = 0, rc = 0;
	for (int i = 1; i < argc && !rc; i++) {
		const char *arg = argv[i];
		if (arg[0] != '-') {
			warning("ignoring stray argument '%s'", arg);
			continue;
		}
		const char *eq = strchr(arg, '=');
		size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
		const struct spec *s = lookup(arg, len);
		const char *v = eq ? eq + 1 : NULL;
		int takes_next = !eq && i + 1 < argc && strncmp(argv[i + 1], "--", 2);
		if (!s) {
			int seen = 0;
			for (int k = 0; k < n_unknown; k++)
				seen |= strlen(unknown[k]) == len && !strncmp(unknown[k], arg, len);
			if (!seen) {
				unknown[n_unknown++] = xstrndup(arg, len);
				warning("ignoring unknown argument '%.*s'", (int)len, arg);
			}
			i += takes_next;
			continue;
		}
		if (!v && s->kind == K_BOOL)
			v = "1";
		else if (!v && takes_next)
			v = argv[++i];
		else if (!v) {
			rc = error("%s needs a value", s->name);
			break;
		}
		rc = set_value(a, s, v, s->name);
		a->from[s - table] = ARGS_FROM_ARGV;
	}
	for (int k = 0; k < n_unknown; k++)
		free(unknown[k]);
	free(unknown);
	if (rc || a->help || a->probe || a->plan)
		return rc;

	if (!a->trial_dir && !a->train_url && !a->arch && !a->params) {
		a->usage = 1;
		return error("nothing to train: give --trial_dir DIR (or AAH_TRIAL_DIR), "
			     "--arch or --params");
	}

	/* derived defaults */
	if (!a->trial_dir)
		a->trial_dir = a->train_url ? xstrdup(a->train_url) : getcwd(NULL, 0);
	if (!a->params) {
		char *p = xstrfmt("%s/params.json", a->trial_dir);
		if (fileio_exists(p))
			a->params = p;
		else
			free(p);
	}
	if (a->params && read_params(a))
		return -1;
	if (!a->arch) {
		char *p = xstrfmt("%s/arch.json", a->trial_dir);
		if (fileio_exists(p))
			a->arch = p;
		else
			free(p);
	}
	if (!a->train_data_dir)
		a->train_data_dir = xstrdup(a->data_url ? a->data_url : a->dataset);
	if (!a->val_data_dir)
		a->val_data_dir = xstrdup(a->train_data_dir);
	if (a->trial_seq <= 0) {
		long seq;
		a->trial_seq = a->trial_id && !util_parse_long(a->trial_id, 1, 1000000000L, &seq) ? (int)seq : 1;
	}
	if (a->learning_rate > 0)
		a->initial_lr = a->learning_rate;
	if ((int)a->batch_size < 1)
		return error("--batch_size %g: must be at least 1", a->batch_size);
	if (a->batch_size != floor(a->batch_size))
		warning("--batch_size %g is not a whole number: training with %d per rank (tuner "
			"values are truncated, as AIPerf)", a->batch_size, (int)a->batch_size);
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	if (online > 0 && a->threads > online) {
		warning("--threads %d is more than the %ld CPUs online: using %ld", a->threads,
			online, online);
		a->threads = (int)online;
	}
	if (a->world_size < 1 || a->rank < 0 || a->rank >= a->world_size)
		return error("rank %d is outside world size %d", a->rank, a->world_size);
	if (a->slave < 1)
		return error("--slave must be at least 1");
	if (!ops_precision_known(a->precision))
		return error("--precision %s: must be one of %s", a->precision, OPS_PRECISION_NAMES);
	if (ops_conv_algo_parse(a->conv_algo) < 0)
		return error("--conv_algo %s: must be one of %s", a->conv_algo, OPS_CONV_ALGO_NAMES);
	if (strcmp(a->batch_rule, "off") && strcmp(a->batch_rule, "aiperf"))
		return error("--batch_rule %s: must be off or aiperf", a->batch_rule);
	return resolve_rendezvous(a);
}

void args_release(struct args *a)
{
	for (size_t i = 0; i < ARRAY_SIZE(table); i++)
		if (table[i].kind == K_STR) {
			char **p = (char **)((char *)a + table[i].off);
			free(*p);
			*p = NULL;
		}
	free(a->rdv_host);
	a->rdv_host = NULL;
}
