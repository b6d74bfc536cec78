/* device.c: the trial's compute backend and its device. */
#include <math.h>   /* lround */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trialimg/device.h"
#include "util.h"

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
	if (!d->gpu)
		return;
	cJSON *names = cJSON_AddArrayToObject(r, "device_names");
	cJSON_AddItemToArray(names, cJSON_CreateString(d->dev.name));
	cJSON_AddNumberToObject(r, "device_memory_gib", d->dev.mem_gib);
	if (d->batch_rule[0])
		cJSON_AddStringToObject(r, "batch_rule", d->batch_rule);
}
