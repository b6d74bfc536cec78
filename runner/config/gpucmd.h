/* gpucmd.h: AIPerf's GPU command form under aah: the GPUs named in the
 * trial command rather than counted by trial.gpuNum. */
#ifndef AAH_RUNNER_CONFIG_GPUCMD_H
#define AAH_RUNNER_CONFIG_GPUCMD_H

#include <stddef.h>

/* The number of device ids of the first CUDA_VISIBLE_DEVICES=... assignment
 * in cmd (a word of its own: at the start, or after a blank, ';', '&', '|',
 * '(' or `export `), its value copied into ids (ids_size bytes, quotes
 * dropped); 0 where cmd has none. */
int gpucmd_visible_devices(const char *cmd, char *ids, size_t ids_size);

/* A warning (malloc'd; NULL when none is due) for a command that names
 * several GPUs in CUDA_VISIBLE_DEVICES with trial.gpuNum 0 or 1, as AIPerf's
 * own configs do: aah-trial there would train one process on the first of
 * them. It names file:line:col and the one-line fix (gpuNum: N). */
char *gpucmd_notice(const char *file, unsigned line, unsigned col, const char *cmd,
		    long gpu_num);

#endif
