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
	char why[256];            /* --backend auto's reason; "" when it was named */
	int gpu;                  /* a GPU backend started: dev holds its device */
	struct ops_device dev;
};

/* Start ops on a->backend ("auto": ops_backend_auto) on the rank's device
 * (a->device), seeded with seed; d says what started. */
int device_start(struct trial_device *d, struct ops_ctx *ops, const struct args *a,
		 uint64_t seed);
/* One line on stdout (trial.log): the backend, why, the device and the
 * precision that runs. */
void device_log(const struct trial_device *d, const char *precision, int rank, int world);
/* result.json's "backend", "devices" (["cuda:0"] or ["cpu:<cores>"]: the
 * report's GPU rule reads them), "device_names" and "device_memory_gib". */
void device_result(const struct trial_device *d, cJSON *r, long cores);

#endif
