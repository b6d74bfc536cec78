/* monitor.h: the trial's resource monitor: a thread that samples CPU per
 * core, memory, network bytes and, when NVML can be loaded, every GPU's
 * utilisation, memory, power and temperature, as aah-monitor/1 JSON lines;
 * one per host of a trial. */
#ifndef AAH_MONITOR_H
#define AAH_MONITOR_H

struct monitor;

/* Start sampling into <dir>/monitor-<host>.jsonl (dir is created; the
 * trainer passes <trial dir>/device_info). A sample covers the interval
 * since the previous one; one is written every interval_s seconds and a
 * last one at monitor_stop. NVML is loaded with dlopen("libnvidia-ml.so.1")
 * ($AAH_NVML_LIB overrides the name); without it the lines have no "gpus"
 * and "nvml" says why. Every rank calls it; the first on each host (an
 * flock of <dir>/monitor-<host>.lock) samples it: 1 and *out set; 0 and
 * *out NULL for the others; -1 (after error()) when the file cannot be
 * created. The caller owns *out and passes it to monitor_stop. */
int monitor_start(const char *dir, double interval_s, struct monitor **out);
/* Write the last sample, join the thread, free m. NULL is allowed. */
void monitor_stop(struct monitor *m);
/* "ok" when NVML loaded, else "unavailable: <why>" (dlerror's text, the
 * missing symbol, or nvmlInit_v2's code); every line carries it as "nvml". */
const char *monitor_nvml_status(const struct monitor *m);
/* Number of GPUs NVML reported (0 without NVML). */
int monitor_gpu_count(const struct monitor *m);
/* Lines written so far. */
long monitor_samples(struct monitor *m);

#endif
