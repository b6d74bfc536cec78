/* monitor.c: resource sampling thread for aah-trial (see monitor.h).
 *
 * Cost: each sample reads /proc/stat, /proc/meminfo and /proc/net/dev (a few
 * KiB) and, with NVML, makes four calls per GPU; the thread sleeps on a
 * condition variable between samples, so monitor_stop is prompt. Each line
 * records the thread's own CPU time ("monitor_cpu_s") so its cost is visible
 * in the data. */
#include "trialimg/monitor.h"
#include "fileio.h"
#include "strbuf.h"
#include "util.h"

#include <dlfcn.h>           /* dlopen (util_dlsym): NVML is optional */
#include <errno.h>
#include <fcntl.h>           /* open */
#include <pthread.h>
#include <sys/file.h>        /* flock: one sampler per host */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_CPUS 1024
#define MAX_GPUS 64

/* The few NVML types and calls used (NVML's ABI: nvml.h is not needed). */
typedef struct nvml_device *nvml_device_t;
struct nvml_utilization { unsigned gpu, memory; };
struct nvml_memory { unsigned long long total, free, used; };
/* nvmlUtilization_t and nvmlMemory_t (v1) as NVML's API reference gives them */
_Static_assert(sizeof(struct nvml_utilization) == 8, "nvmlUtilization_t is two unsigned ints");
_Static_assert(sizeof(struct nvml_memory) == 24, "nvmlMemory_t is three unsigned long longs");

struct nvml {
	void *lib;
	int (*init)(void);
	int (*shutdown)(void);
	int (*count)(unsigned *);
	int (*handle)(unsigned, nvml_device_t *);
	int (*util)(nvml_device_t, struct nvml_utilization *);
	int (*mem)(nvml_device_t, struct nvml_memory *);
	int (*power)(nvml_device_t, unsigned *);
	int (*temp)(nvml_device_t, int, unsigned *);  /* optional: NULL when the library lacks it */
	char status[256];            /* "ok", or "unavailable: <why>" */
	unsigned ngpus;
	nvml_device_t dev[MAX_GPUS];
};

struct cpu_times { unsigned long long busy, total; };

struct monitor {
	char *path;
	int lock_fd;                       /* holds the flock: this process samples the host */
	char host[64];
	double interval;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop;
	long samples;
	struct nvml nvml;
	int ncpus;                         /* per-core entries in prev (index 0 = all) */
	struct cpu_times prev[MAX_CPUS + 1];
};

/* Load NVML; on any failure n->lib stays NULL and n->status says why (the
 * dlerror text, the missing symbol, or nvmlInit's return code). */
static void nvml_open(struct nvml *n)
{
	static const char *const names[] = {
		"nvmlInit_v2", "nvmlShutdown", "nvmlDeviceGetCount_v2",
		"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetUtilizationRates",
		"nvmlDeviceGetMemoryInfo", "nvmlDeviceGetPowerUsage",
	};
	const char *name = getenv("AAH_NVML_LIB");
	memset(n, 0, sizeof(*n));
	n->lib = dlopen(name && *name ? name : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!n->lib) {
		const char *why = dlerror();
		snprintf(n->status, sizeof(n->status), "unavailable: %s", why ? why : "dlopen failed");
		return;
	}
	void *fns[] = { &n->init, &n->shutdown, &n->count, &n->handle, &n->util, &n->mem, &n->power };
	char why[200] = "";
	for (size_t i = 0; i < sizeof(names) / sizeof(*names) && !why[0]; i++)
		if (util_dlsym(n->lib, names[i], fns[i]))
			snprintf(why, sizeof(why), "no %s in the library", names[i]);
	int rc = why[0] ? 0 : n->init();
	if (rc)
		snprintf(why, sizeof(why), "nvmlInit_v2 returned %d", rc);
	if (why[0]) {
		dlclose(n->lib);
		memset(n, 0, sizeof(*n));
		snprintf(n->status, sizeof(n->status), "unavailable: %s", why);
		return;
	}
	xstrlcpy(n->status, "ok", sizeof(n->status));
	if (util_dlsym(n->lib, "nvmlDeviceGetTemperature", &n->temp))
		n->temp = NULL;
	unsigned count = 0;
	if (n->count(&count) != 0)
		count = 0;
	for (unsigned i = 0; i < count && n->ngpus < MAX_GPUS; i++)
		if (n->handle(i, &n->dev[n->ngpus]) == 0)
			n->ngpus++;
}

static void nvml_close(struct nvml *n)
{
	if (!n->lib)
		return;
	n->shutdown();
	dlclose(n->lib);
	memset(n, 0, sizeof(*n));
}

/* Read /proc/stat: t[0] all CPUs, t[1..] each core. Returns the core count. */
static int read_cpu(struct cpu_times *t)
{
	FILE *f = fopen("/proc/stat", "r");
	if (!f)
		return -1;
	char line[512];
	int n = 0;
	while (fgets(line, sizeof(line), f) && n <= MAX_CPUS) {
		if (strncmp(line, "cpu", 3))
			break;
		unsigned long long v[10] = { 0 };
		char *p = strchr(line, ' ');
		for (int i = 0; i < 10 && p; i++)
			v[i] = strtoull(p, &p, 10);
		unsigned long long idle = v[3] + v[4], total = 0;
		for (int i = 0; i < 8; i++)          /* guest time is already in user */
			total += v[i];
		t[n].busy = total - idle;
		t[n].total = total;
		n++;
	}
	fclose(f);
	return n - 1;
}

static double pct(const struct cpu_times *now, const struct cpu_times *then)
{
	unsigned long long dt = now->total - then->total;
	return dt ? 100.0 * (double)(now->busy - then->busy) / (double)dt : 0.0;
}

static void add_mem(struct strbuf *sb)
{
	FILE *f = fopen("/proc/meminfo", "r");
	unsigned long long total = 0, avail = 0, v;
	char key[64], line[256];
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s %llu", key, &v) != 2)
			continue;
		if (!strcmp(key, "MemTotal:"))
			total = v * 1024;
		else if (!strcmp(key, "MemAvailable:"))
			avail = v * 1024;
	}
	if (f)
		fclose(f);
	strbuf_addf(sb, ",\"mem\":{\"total_bytes\":%llu,\"available_bytes\":%llu,\"used_pct\":%.2f}",
		    total, avail, total ? 100.0 * (double)(total - avail) / (double)total : 0.0);
}

static void add_net(struct strbuf *sb)
{
	FILE *f = fopen("/proc/net/dev", "r");
	unsigned long long rx = 0, tx = 0;
	char line[512];
	while (f && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = '\0';
		char *name = line + strspn(line, " ");
		if (!strcmp(name, "lo"))
			continue;
		unsigned long long v[9] = { 0 };
		char *p = colon + 1;
		for (int i = 0; i < 9; i++)
			v[i] = strtoull(p, &p, 10);
		rx += v[0];
		tx += v[8];
	}
	if (f)
		fclose(f);
	strbuf_addf(sb, ",\"net\":{\"rx_bytes\":%llu,\"tx_bytes\":%llu}", rx, tx);
}

/* NVML's NVML_TEMPERATURE_GPU: the die's sensor */
#define NVML_TEMPERATURE_GPU 0

static void add_gpus(struct strbuf *sb, struct nvml *n)
{
	strbuf_addstr(sb, ",\"nvml\":\"");
	for (const char *c = n->status; *c; c++)      /* dlerror text: keep the JSON valid */
		strbuf_addch(sb, *c == '"' || *c == '\\' || (unsigned char)*c < 0x20 ? '\'' : *c);
	strbuf_addch(sb, '"');
	if (!n->lib)
		return;   /* no NVML: no GPU fields at all, "nvml" says why */
	strbuf_addstr(sb, ",\"gpus\":[");
	for (unsigned i = 0; i < n->ngpus; i++) {
		struct nvml_utilization u = { 0, 0 };
		struct nvml_memory m = { 0, 0, 0 };
		unsigned mw = 0;
		int okay_u = n->util(n->dev[i], &u) == 0, okay_m = n->mem(n->dev[i], &m) == 0;
		int okay_p = n->power(n->dev[i], &mw) == 0;
		strbuf_addf(sb, "%s{\"index\":%u", i ? "," : "", i);
		if (okay_u)
			strbuf_addf(sb, ",\"util_pct\":%u,\"mem_util_pct\":%u", u.gpu, u.memory);
		if (okay_m)
			strbuf_addf(sb, ",\"mem_used_bytes\":%llu,\"mem_total_bytes\":%llu", m.used, m.total);
		if (okay_p)
			strbuf_addf(sb, ",\"power_w\":%.3f", mw / 1000.0);
		unsigned temp = 0;
		if (n->temp && n->temp(n->dev[i], NVML_TEMPERATURE_GPU, &temp) == 0)
			strbuf_addf(sb, ",\"temp_c\":%u", temp);
		strbuf_addch(sb, '}');
	}
	strbuf_addch(sb, ']');
}

static double thread_cpu_seconds(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0;
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sample(struct monitor *m)
{
	struct cpu_times now[MAX_CPUS + 1];
	int n = read_cpu(now);
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "{\"format\":\"aah-monitor/1\",\"ts\":%.3f,\"host\":\"", util_now());
	for (const char *c = m->host; *c; c++)
		if (*c != '"' && *c != '\\' && (unsigned char)*c >= 0x20)
			strbuf_addch(&sb, *c);
	strbuf_addf(&sb, "\",\"interval_s\":%g", m->interval);
	if (n >= 0) {
		if (n > m->ncpus)
			n = m->ncpus;
		strbuf_addf(&sb, ",\"cpu\":{\"busy_pct\":%.2f,\"cores\":[", pct(&now[0], &m->prev[0]));
		for (int i = 1; i <= n; i++)
			strbuf_addf(&sb, "%s%.1f", i > 1 ? "," : "", pct(&now[i], &m->prev[i]));
		strbuf_addstr(&sb, "]}");
		memcpy(m->prev, now, (size_t)(n + 1) * sizeof(*now));
	}
	add_mem(&sb);
	add_net(&sb);
	add_gpus(&sb, &m->nvml);
	strbuf_addf(&sb, ",\"monitor_cpu_s\":%.6f}", thread_cpu_seconds());
	if (fileio_append_line(m->path, strbuf_str(&sb)) == 0) {
		pthread_mutex_lock(&m->lock);
		m->samples++;
		pthread_mutex_unlock(&m->lock);
	}
	strbuf_release(&sb);
}

static void *run(void *arg)
{
	struct monitor *m = arg;
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	pthread_mutex_lock(&m->lock);
	for (;;) {
		double secs = m->interval;
		next.tv_sec += (time_t)secs;
		next.tv_nsec += (long)((secs - (double)(time_t)secs) * 1e9);
		if (next.tv_nsec >= 1000000000L) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000L;
		}
		int rc = 0;
		while (!m->stop && rc != ETIMEDOUT)
			rc = pthread_cond_timedwait(&m->cond, &m->lock, &next);
		int last = m->stop;
		pthread_mutex_unlock(&m->lock);
		sample(m);          /* on stop too: the last, partial interval */
		pthread_mutex_lock(&m->lock);
		if (last)
			break;
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

/* One sampler per host: the first process of the trial on it takes an
 * flock of <dir>/monitor-<host>.lock for its life. 1: taken here (*fd holds
 * it), 0: another process of the host has it, -1 after error(). */
static int take_host(const char *dir, const char *host, int *fd)
{
	char *p = xstrfmt("%s/monitor-%s.lock", dir, host);
	*fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	int r = 1;
	if (*fd < 0) {
		r = error_errno("cannot open '%s'", p);
	} else if (flock(*fd, LOCK_EX | LOCK_NB) < 0) {
		r = errno == EWOULDBLOCK ? 0 : error_errno("cannot lock '%s'", p);
		close(*fd);
		*fd = -1;
	}
	free(p);
	return r;
}

int monitor_start(const char *dir, double interval_s, struct monitor **out)
{
	*out = NULL;
	if (!(interval_s > 0))
		return error("monitor interval must be positive, not %g", interval_s);
	if (fileio_mkdir_p(dir, 0755) < 0)
		return -1;
	struct monitor *m = xcalloc(1, sizeof(*m));
	if (gethostname(m->host, sizeof(m->host) - 1) < 0 || !m->host[0])
		xstrlcpy(m->host, "localhost", sizeof(m->host));
	for (char *c = m->host; *c; c++)
		if (*c == '/')
			*c = '_';
	int taken = take_host(dir, m->host, &m->lock_fd);
	if (taken <= 0) {
		free(m);
		return taken;
	}
	m->path = xstrfmt("%s/monitor-%s.jsonl", dir, m->host);
	m->interval = interval_s;
	m->ncpus = read_cpu(m->prev);
	if (m->ncpus < 0)
		m->ncpus = 0;
	nvml_open(&m->nvml);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&m->lock, NULL);
	if (pthread_create(&m->thread, NULL, run, m) != 0) {
		nvml_close(&m->nvml);
		pthread_cond_destroy(&m->cond);
		pthread_mutex_destroy(&m->lock);
		close(m->lock_fd);
		free(m->path);
		free(m);
		return error("cannot start the monitor thread");
	}
	*out = m;
	return 1;
}

void monitor_stop(struct monitor *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->stop = 1;
	pthread_cond_signal(&m->cond);
	pthread_mutex_unlock(&m->lock);
	pthread_join(m->thread, NULL);
	nvml_close(&m->nvml);
	pthread_cond_destroy(&m->cond);
	pthread_mutex_destroy(&m->lock);
	close(m->lock_fd);
	free(m->path);
	free(m);
}

const char *monitor_nvml_status(const struct monitor *m)
{
	return m->nvml.status;
}

int monitor_gpu_count(const struct monitor *m)
{
	return (int)m->nvml.ngpus;
}

long monitor_samples(struct monitor *m)
{
	pthread_mutex_lock(&m->lock);
	long n = m->samples;
	pthread_mutex_unlock(&m->lock);
	return n;
}
