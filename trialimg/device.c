/* device.c: the trial's compute backend and its device. */
#include <math.h>   /* lround */
#include <stdint.h> /* SIZE_MAX */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h" /* fileio_mkdir_p: the algorithms' cache */
#include "trialimg/device.h"
#include "trialimg/memplan.h" /* memplan_build, memplan_max_batch */
#include "trialimg/model.h"
#include "util.h"

/* cuDNN's measured algorithms (kernels/cuda/cuda_find.c) kept for the
 * work directory's trials, that share its GPUs' kinds: the runner's
 * AAH_WORKDIR/cache/cudnn-algos, unless AAH_CUDA_ALGO_CACHE names another
 * file. Without a work directory nothing is kept. */
static void algo_cache(void)
{
	const char *w = getenv("AAH_WORKDIR");
	if (getenv("AAH_CUDA_ALGO_CACHE") || !w || !*w)
		return;
	char *dir = xstrfmt("%s/cache", w), *file = xstrfmt("%s/cudnn-algos", dir);
	if (fileio_mkdir_p(dir, 0755) == 0)
		setenv("AAH_CUDA_ALGO_CACHE", file, 1);
	free(dir);
	free(file);
}

int device_start(struct trial_device *d, struct ops_ctx *ops, const struct args *a,
		 uint64_t seed)
{
	const char *name = a->backend;
	memset(d, 0, sizeof(*d));
	if (!strcmp(name, "auto"))
		name = ops_backend_auto(d->why, sizeof(d->why));
	if (ops_ctx_init_on(ops, name, a->threads, seed, a->device))
		return -1;
	snprintf(d->backend, sizeof(d->backend), "%s", ops->be->name);
	if ((ops->be->caps & OPS_CAP_GPU) && ops->be->device_info) {
		if (ops->be->device_info(ops, &d->dev))
			return -1;
		d->gpu = 1;
		algo_cache();
	}
	return 0;
}

/* AIPerf's multiplier where the search space has no batch_size */
#define AIPERF_BATCH_PER_GIB 14

void device_batch_rule(struct trial_device *d, const struct args *a, int *batch)
{
	if (strcmp(a->batch_rule, "aiperf"))
		return;
	if (!d->gpu) {
		printf("aah-trial: --batch_rule aiperf: no GPU here, batch %d (--batch_size) kept\n",
		       *batch);
		return;
	}
	long gib = lround(d->dev.mem_gib);
	/* the tuner's batch_size is AIPerf's multiplier (as it gave it, before
	 * any --batch_scale), and wins over the command's --batch_size */
	double per = a->batch_tuned > 0 ? a->batch_tuned : AIPERF_BATCH_PER_GIB;
	*batch = (int)(per * (double)gib);
	snprintf(d->batch_rule, sizeof(d->batch_rule), "aiperf: %g (%s) x %ld GiB = %d", per,
		 a->batch_tuned > 0 ? "params.json's batch_size" : "the rule's", gib, *batch);
	printf("aah-trial: batch %d per GPU by AIPerf's rule, %s\n", *batch, d->batch_rule);
}

/* A "<key> <kB> kB" line's value of a /proc file, in bytes (0: none). */
static size_t proc_kb(const char *path, const char *key)
{
	FILE *f = fopen(path, "r");
	char k[64], line[256];
	unsigned long long v, r = 0;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %llu", k, &v) == 2 && !strcmp(k, key))
			r = v * 1024;
	if (f)
		fclose(f);
	return (size_t)r;
}

/* The first number in a one-line file (cgroup's memory.max, ...): 0 when
 * absent or "max". */
static size_t file_bytes(const char *path)
{
	FILE *f = fopen(path, "r");
	unsigned long long v = 0;
	if (f && fscanf(f, "%llu", &v) != 1)
		v = 0;
	if (f)
		fclose(f);
	return (size_t)v;
}

/* The bytes this trial's step may still take, and where the figure comes
 * from (for messages): a GPU's free memory; on the host --memory_limit,
 * else the cgroup's limit, less what the process holds now (its data),
 * else the machine's available memory. */
static size_t memory_free(const struct trial_device *d, const struct args *a, char *what,
			  size_t what_size)
{
	if (d->gpu) {
		size_t total = (size_t)(d->dev.mem_gib * 1073741824.0);
		snprintf(what, what_size, "cuda:%d's free memory", d->dev.index);
		return d->dev.mem_free ? d->dev.mem_free : total;
	}
	size_t held = proc_kb("/proc/self/status", "VmRSS:");
	size_t limit = (size_t)(a->memory_limit * 1048576.0);
	if (limit)
		snprintf(what, what_size, "--memory_limit %g MiB less the %.0f MiB held", a->memory_limit,
			 (double)held / 1048576.0);
	else if ((limit = file_bytes("/sys/fs/cgroup/memory.max")) ||
		 ((limit = file_bytes("/sys/fs/cgroup/memory/memory.limit_in_bytes")) &&
		  limit < ((size_t)1 << 60)))
		snprintf(what, what_size, "the cgroup's memory limit %.0f MiB less the %.0f MiB held",
			 (double)limit / 1048576.0, (double)held / 1048576.0);
	else {
		size_t av = proc_kb("/proc/meminfo", "MemAvailable:");
		snprintf(what, what_size, "the memory available (MemAvailable)");
		return av ? av : SIZE_MAX;
	}
	return limit > held ? limit - held : 0;
}

static double gib(size_t b)
{
	return (double)b / 1073741824.0;
}

int device_fit_batch(struct trial_device *d, const struct args *a, const struct model *m,
		     const struct ops_ctx *ops, int *batch, struct memplan *plan)
{
	char what[160];
	size_t avail = memory_free(d, a, what, sizeof(what));
	d->batch_asked = d->batch = *batch;
	if (memplan_build(plan, m, *batch, ops, 0))
		return -1;
	size_t need = memplan_total(plan);
	int most = plan->max_batch;
	if (most && *batch > most) {   /* the backend's limit, before the memory's */
		memplan_release(plan);
		if (strcmp(a->batch_rule, "aiperf") || a->world_size > 1)
			return error("batch %d is more than the %s backend takes: at most %d (a tensor "
				     "past what its library describes); lower --batch_size", *batch,
				     ops->be->name, most);
		printf("aah-trial: --batch_rule aiperf: batch %d is more than the %s backend takes "
		       "(a tensor past what its library describes): batch %d\n", *batch,
		       ops->be->name, most);
		int asked = *batch, rc;
		*batch = most;
		rc = device_fit_batch(d, a, m, ops, batch, plan);
		d->batch_asked = asked;
		size_t len = strlen(d->batch_rule);
		snprintf(d->batch_rule + len, sizeof(d->batch_rule) - len, "%sbatch %d capped to %d by "
			 "the backend", len ? ", " : "aiperf: ", asked, most);
		return rc;
	}
	if (need <= avail)
		return 0;
	size_t fixed = memplan_fixed(plan) + plan->workspace_fixed;
	double per = (double)(need - fixed) / *batch;
	memplan_release(plan);
	int fit = memplan_max_batch(m, *batch, ops, avail);
	const char *hint = "lower --batch_size, or let --batch_rule aiperf take what fits";
	if (fit < 1)
		hint = "not even one image fits";
	else if (a->world_size > 1) /* ranks capping each on its own could disagree */
		hint = "with several ranks, give them all a --batch_size that fits";
	if (strcmp(a->batch_rule, "aiperf") || fit < 1 || a->world_size > 1)
		return error("batch %d does not fit: its memory plan needs %.2f GiB (%.2f MB per image, "
			     "%.2f GiB fixed), %s is %.2f GiB, enough for batch %d; %s", *batch,
			     gib(need), per / 1e6, gib(fixed), what, gib(avail), fit, hint);
	printf("aah-trial: --batch_rule aiperf: batch %d needs %.2f GiB by the memory plan (%.2f MB "
	       "per image, %.2f GiB fixed), %s is %.2f GiB: training with batch %d, the largest "
	       "that fits\n", *batch, gib(need), per / 1e6, gib(fixed), what, gib(avail), fit);
	fflush(stdout);
	size_t len = strlen(d->batch_rule);
	snprintf(d->batch_rule + len, sizeof(d->batch_rule) - len, "%sbatch %d capped to %d by the "
		 "memory plan", len ? ", " : "aiperf: ", *batch, fit);
	*batch = d->batch = fit;
	return memplan_build(plan, m, *batch, ops, 0);
}

void device_log(const struct trial_device *d, const char *precision, int rank, int world)
{
	if (d->gpu)
		printf("aah-trial: rank %d of %d: backend %s%s%s%s, device cuda:%d %s (%.1f GiB, "
		       "compute capability %d.%d), precision %s\n", rank, world, d->backend,
		       d->why[0] ? " (auto: " : "", d->why, d->why[0] ? ")" : "", d->dev.index,
		       d->dev.name, d->dev.mem_gib, d->dev.cc_major, d->dev.cc_minor, precision);
	else
		printf("aah-trial: rank %d of %d: backend %s%s%s%s, precision %s\n", rank, world,
		       d->backend, d->why[0] ? " (auto: " : "", d->why, d->why[0] ? ")" : "",
		       precision);
	fflush(stdout);
}

void device_result(const struct trial_device *d, cJSON *r, long cores)
{
	if (d->backend[0])
		cJSON_AddStringToObject(r, "backend", d->backend);
	cJSON *dev = cJSON_AddArrayToObject(r, "devices");
	/* a GPU backend trains on one device per rank (the report counts a
	 * trial on "cuda:*" as a GPU run) */
	char *s = d->gpu ? xstrfmt("cuda:%d", d->dev.index) : xstrfmt("cpu:%ld", cores);
	cJSON_AddItemToArray(dev, cJSON_CreateString(s));
	free(s);
	if (d->batch)
		cJSON_AddNumberToObject(r, "batch", d->batch);
	if (d->batch_rule[0]) {
		cJSON_AddStringToObject(r, "batch_rule", d->batch_rule);
		cJSON_AddNumberToObject(r, "batch_asked", d->batch_asked);
	}
	if (!d->gpu)
		return;
	cJSON *names = cJSON_AddArrayToObject(r, "device_names");
	cJSON_AddItemToArray(names, cJSON_CreateString(d->dev.name));
	cJSON_AddNumberToObject(r, "device_memory_gib", d->dev.mem_gib);
}
