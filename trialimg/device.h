/* device.h: the trial's compute backend: --backend auto resolved, started on
 * the rank's own device, and what trial.log and result.json say about it
 * (the backend, why it was picked, the device's name and memory). */
#ifndef AAH_TRIAL_DEVICE_H
#define AAH_TRIAL_DEVICE_H

#include <cjson/cJSON.h>

#include "kernels/ops.h"
#include "trialimg/args.h"

struct trial_device {
	char backend[16];         /* what runs: "cuda", "cpu", ... ("" before the start) */
	char why[640];            /* --backend auto's reason; "" when it was named */
	int gpu;                  /* a GPU backend started: dev holds its device */
	char batch_rule[160];      /* how a rule chose the batch, "aiperf: 14 (the rule's)
				   * x 79 GiB = 1106"; "" when --batch_size gave it */
	int batch_asked;          /* the batch before the memory plan's check */
	int batch;                /* the batch per rank that trains (0: none yet) */
	struct ops_device dev;
};

struct model;
struct memplan;

/* Start ops on a->backend ("auto": ops_backend_auto) on the rank's device
 * (a->device), seeded with seed; d says what started. */
int device_start(struct trial_device *d, struct ops_ctx *ops, const struct args *a,
		 uint64_t seed);
/* AIPerf's batch rule (--batch_rule aiperf) on a started GPU backend: the
 * batch per GPU is params.json's batch_size (AIPerf's search space gives
 * 12 to 14), or 14 where it leaves the batch to the rule, times the GPU's
 * memory in GiB, rounded (utils.MinGpuMem: a 32 GiB V100 gives 32, so 448).
 * *batch gets it and d->batch_rule says how; without a GPU, or with the
 * rule off, *batch stays and so does d->batch_rule (""). */
void device_batch_rule(struct trial_device *d, const struct args *a, int *batch);
/* The memory plan of a step at *batch (memplan_build on ops, into *plan)
 * checked against the memory the trial may use: a GPU's free memory; on
 * the host --memory_limit, else the cgroup's limit, less what the process
 * holds already, else the machine's available memory. Where it does not
 * fit, --batch_rule aiperf takes the largest batch that does (one line in
 * trial.log, d->batch_rule says so) where the trial has one rank (ranks
 * capping each on its own could disagree); otherwise -1 with the plan's
 * figures.
 * d->batch_asked gets the batch asked for. */
int device_fit_batch(struct trial_device *d, const struct args *a, const struct model *m,
		     const struct ops_ctx *ops, int *batch, struct memplan *plan);
/* One line on stdout (trial.log): the backend, why, the device and the
 * precision that runs. */
void device_log(const struct trial_device *d, const char *precision, int rank, int world);
/* result.json's "backend", "devices" (["cuda:0"] or ["cpu:<cores>"]: the
 * report's GPU rule reads them), "device_names", "device_memory_gib" and,
 * "batch" (per rank) and, where the rule chose or capped it, "batch_rule"
 * and "batch_asked". */
void device_result(const struct trial_device *d, cJSON *r, long cores);

#endif
