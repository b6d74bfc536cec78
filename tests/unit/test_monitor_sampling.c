/* Unit tests for trialimg/monitor: the sampling thread writes aah-monitor/1
 * lines that match /proc, stops promptly, works without NVML, and the
 * report reads what it writes. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda_skip.h"
#include "jsonfile.h"
#include "runner/report/report.h"
#include "tests/fixtures/report/fixture.h"
#include "trialimg/monitor.h"

static char tmpdir[64];
extern char **environ;

static void setup(void)
{
	strcpy(tmpdir, "/tmp/aah-monitor-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	util_set_quiet(1);
}

static void teardown(void)
{
	fileio_remove_tree(tmpdir);
}

TestSuite(monitor, .init = setup, .fini = teardown, .timeout = 60);

struct lines {
	cJSON *doc[4096];
	size_t n;
};

static int keep(const cJSON *line, void *arg)
{
	struct lines *l = arg;
	if (l->n < 4096)
		l->doc[l->n++] = cJSON_Duplicate(line, 1);
	return 0;
}

static char *monitor_file(const char *dir)
{
	char host[64] = "";
	gethostname(host, sizeof(host) - 1);
	return xstrfmt("%s/monitor-%s.jsonl", dir, host);
}

static void read_lines(const char *dir, struct lines *l)
{
	char *p = monitor_file(dir);
	l->n = 0;
	cr_assert_eq(jsonfile_read_lines(p, keep, l), 0, "%s", util_last_error());
	free(p);
}

/* Wait until the monitor has written at least want complete lines into dir:
 * the event, not a fixed sleep; fails loudly after a generous 50 s. */
static void wait_lines(const char *dir, int want)
{
	char *p = monitor_file(dir);
	int n = 0;
	for (double t0 = util_monotonic(); util_monotonic() - t0 < 50;) {
		FILE *f = fopen(p, "r");
		int c;
		n = 0;
		while (f && (c = fgetc(f)) != EOF)
			n += c == '\n';
		if (f)
			fclose(f);
		if (n >= want)
			break;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	cr_assert_geq(n, want, "the monitor wrote %d of %d lines into %s in 50 s", n, want, p);
	free(p);
}

static void free_lines(struct lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		cJSON_Delete(l->doc[i]);
	l->n = 0;
}

static int proc_cpus(void)
{
	FILE *f = fopen("/proc/stat", "r");
	char line[512];
	int n = 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "cpu", 3) && line[3] >= '0' && line[3] <= '9')
			n++;
	fclose(f);
	return n;
}

static volatile int spin_stop;

static void *spin(void *arg)
{
	(void)arg;
	volatile unsigned long x = 0;
	while (!spin_stop)
		x++;
	return NULL;
}

static double num(const cJSON *o, const char *a, const char *b)
{
	const cJSON *v = cJSON_GetObjectItem(o, a);
	if (b)
		v = cJSON_GetObjectItem(v, b);
	cr_assert(cJSON_IsNumber(v), "%s.%s missing", a, b ? b : "");
	return v->valuedouble;
}

/* monitor_start that must sample (the first of this host) */
static struct monitor *start(const char *dir, double interval_s)
{
	struct monitor *m = NULL;
	cr_assert_eq(monitor_start(dir, interval_s, &m), 1, "%s", util_last_error());
	cr_assert_not_null(m);
	return m;
}

Test(monitor, samples_match_proc_and_see_a_busy_core)
{
	setenv("AAH_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
	char *dir = xstrfmt("%s/trial/device_info", tmpdir);
	double t0 = util_now();
	struct monitor *m = start(dir, 0.05);
	cr_assert_not_null(m);
	cr_assert_eq(monitor_gpu_count(m), 0);
	pthread_t th;
	spin_stop = 0;
	pthread_create(&th, NULL, spin, NULL);
	wait_lines(dir, 4);
	spin_stop = 1;
	pthread_join(th, NULL);
	monitor_stop(m);
	double t1 = util_now();
	unsetenv("AAH_NVML_LIB");

	struct lines l;
	read_lines(dir, &l);
	cr_assert_geq(l.n, 4, "%zu samples", l.n);
	int ncpu = proc_cpus();
	double max_busy = 0, prev_ts = 0;
	for (size_t i = 0; i < l.n; i++) {
		const cJSON *d = l.doc[i];
		cr_assert_eq(jsonfile_check_format("monitor", d, "aah-monitor", 1), 0);
		double ts_i = num(d, "ts", NULL);
		cr_assert(ts_i >= t0 - 0.01 && ts_i <= t1 + 0.01);
		cr_assert_geq(ts_i, prev_ts);
		prev_ts = ts_i;
		double busy = num(d, "cpu", "busy_pct");
		cr_assert(busy >= 0 && busy <= 100, "busy %g", busy);
		if (busy > max_busy)
			max_busy = busy;
		cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "cpu"), "cores")),
			     ncpu);
		cr_assert_gt(num(d, "mem", "total_bytes"), 0);
		double used = num(d, "mem", "used_pct");
		cr_assert(used > 0 && used < 100);
		cr_assert_geq(num(d, "net", "rx_bytes"), 0);
		cr_assert_null(cJSON_GetObjectItem(d, "gpus"));   /* no GPU fields at all */
		/* dlopen's own reason, naming the library it could not open */
		const char *nv = cJSON_GetStringValue(cJSON_GetObjectItem(d, "nvml"));
		cr_assert(nv && !strncmp(nv, "unavailable: /nonexistent/libnvidia-ml.so.1: ", 45) &&
			  strstr(nv, "No such file"), "nvml: %s", nv ? nv : "(none)");
		cr_assert_geq(num(d, "monitor_cpu_s", NULL), 0);
	}
	/* one core spun for the whole time: at least half a core's share */
	cr_assert_geq(max_busy, 50.0 / ncpu, "max busy %g%% on %d cpus", max_busy, ncpu);
	/* MemTotal agrees with /proc/meminfo */
	FILE *f = fopen("/proc/meminfo", "r");
	unsigned long long kb = 0;
	cr_assert_eq(fscanf(f, "MemTotal: %llu kB", &kb), 1);
	fclose(f);
	cr_assert_eq(num(l.doc[0], "mem", "total_bytes"), (double)kb * 1024);
	free_lines(&l);
	free(dir);
}

/* An hour's interval under the suite's 60 s timeout: a stop that waited for
 * the interval to end fails loudly on the timeout, not on a wall-clock bet. */
Test(monitor, stop_is_prompt_and_writes_the_last_interval)
{
	char *dir = xstrfmt("%s/d", tmpdir);
	struct monitor *m = start(dir, 3600);
	cr_assert_not_null(m);
	monitor_stop(m);
	struct lines l;
	read_lines(dir, &l);
	cr_assert_eq(l.n, 1);
	cr_assert_eq(num(l.doc[0], "interval_s", NULL), 3600);
	free_lines(&l);
	monitor_stop(NULL);
	free(dir);
}

/* The real NVML where there is one (the GPU test: skipped here, where the
 * default libnvidia-ml.so.1 is absent, after checking the line says why). */
Test(monitor, nvml_on_this_machine)
{
	unsetenv("AAH_NVML_LIB");
	struct monitor *m = start(tmpdir, 10);
	cr_assert_not_null(m);
	int n = monitor_gpu_count(m);
	char *status = xstrdup(monitor_nvml_status(m));
	monitor_stop(m);
	struct lines l;
	read_lines(tmpdir, &l);
	cr_assert_eq(l.n, 1);
	const cJSON *gpus = cJSON_GetObjectItem(l.doc[0], "gpus");
	cr_assert_eq(cJSON_GetArraySize(gpus), n);
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(l.doc[0], "nvml")), status);
	if (strcmp(status, "ok")) {
		cr_assert_eq(n, 0);
		cr_assert(!strncmp(status, "unavailable: ", 13) && strlen(status) > 13, "%s", status);
		free_lines(&l);
		cr_assert(!cuda_required(), "AAH_REQUIRE_CUDA=1: skipped: no NVML on this machine (%s)",
			  status);
		cr_skip_test("skipped: no NVML on this machine (%s)", status);
	}
	cr_assert_gt(n, 0, "NVML loaded but reports no GPU");
	for (int i = 0; i < n; i++) {
		const cJSON *g = cJSON_GetArrayItem(gpus, i);
		double util = num(g, "util_pct", NULL), used = num(g, "mem_used_bytes", NULL);
		double total = num(g, "mem_total_bytes", NULL), watts = num(g, "power_w", NULL);
		cr_assert(util >= 0 && util <= 100, "gpu %d util %g", i, util);
		cr_assert(total > (1ull << 30) && used <= total, "gpu %d memory %g of %g", i, used, total);
		cr_assert(watts > 0 && watts < 5000, "gpu %d power %g W", i, watts);
		double temp = num(g, "temp_c", NULL);
		cr_assert(temp > 0 && temp < 120, "gpu %d temperature %g C", i, temp);
	}
	free_lines(&l);
	free(status);
}

Test(monitor, bad_arguments)
{
	struct monitor *m = NULL;
	cr_assert_eq(monitor_start(tmpdir, 0, &m), -1);
	cr_assert_null(m);
	cr_assert_eq(monitor_start("/proc/cannot/create", 1, &m), -1);
	cr_assert_null(m);
}

/* Every rank calls monitor_start; one process per host samples it (one
 * file per host): a second one on the same host gets 0, and takes over
 * once the first has stopped. */
Test(monitor, one_sampler_per_host)
{
	char *dir = xstrfmt("%s/one/device_info", tmpdir);
	struct monitor *m = start(dir, 3600), *other = NULL;
	/* flock is per open file description: a second open in this process
	 * stands for another rank of the host */
	cr_assert_eq(monitor_start(dir, 3600, &other), 0, "%s", util_last_error());
	cr_assert_null(other);
	monitor_stop(m);
	cr_assert_eq(monitor_start(dir, 3600, &other), 1, "%s", util_last_error());
	monitor_stop(other);
	free(dir);
}

Test(monitor, the_report_plots_what_the_monitor_writes)
{
	char *dir = fx_exp_create(tmpdir, "exp00001", util_now() - 10);
	cr_assert_not_null(dir);
	char *dev = xstrfmt("%s/trials/000001/device_info", dir);
	struct monitor *m = start(dev, 0.02);
	cr_assert_not_null(m);
	wait_lines(dev, 2);
	monitor_stop(m);
	struct report_exp exp;
	cr_assert_eq(report_load(dir, &exp), 0);
	cr_assert_geq(exp.nutil, 2);
	struct report_score sc;
	struct report_options opt = REPORT_OPTIONS_INIT;
	cr_assert_eq(report_score(&exp, &opt, &sc), 0);
	struct strbuf sb = STRBUF_INIT;
	report_html(&sb, &exp, &opt, &sc);
	cr_assert(strstr(sb.buf, "<polyline class=\"util cpu\""));
	cr_assert(strstr(sb.buf, "<polyline class=\"util mem\""));
	/* a GPU line exactly where the monitor sampled a GPU (NVML there) */
	bool gpu = false;
	for (size_t i = 0; i < exp.nutil; i++)
		gpu = gpu || exp.util[i].gpu >= 0;
	cr_assert_eq(strstr(sb.buf, "<polyline class=\"util gpu\"") != NULL, gpu,
		     "the report %s a GPU line, and the samples %s GPU data",
		     gpu ? "lacks" : "has", gpu ? "have" : "have no");
	strbuf_release(&sb);
	report_score_release(&sc);
	report_exp_release(&exp);
	free(dev);
	free(dir);
}

/* Build tests/fixtures/report/fake_nvml.c (NVML's ABI, fixed readings) into
 * tmpdir/name, with -D<define> when define is given; skips the test where
 * cc cannot (run from the repository root). */
static char *build_stand_in(const char *name, const char *define)
{
	char *so = xstrfmt("%s/%s", tmpdir, name);
	char *def = xstrfmt("-D%s", define ? define : "FAKE_NVML");
	const char *argv[] = { "cc", "-shared", "-fPIC", def, "-o", so,
			       "tests/fixtures/report/fake_nvml.c", NULL };
	pid_t pid;
	int status = -1;
	if (posix_spawnp(&pid, "cc", NULL, NULL, (char *const *)argv, environ) == 0)
		waitpid(pid, &status, 0);
	free(def);
	if (status != 0)
		cr_skip_test("skipped: cannot build the stand-in NVML (cc, run from the repository root)");
	return so;
}

/* An NVML that loads but cannot be used: the line says which part failed,
 * has no GPUs, and sampling goes on. */
static void expect_unavailable(const char *define, const char *why)
{
	char *so = build_stand_in("libbroken-nvml.so", define);
	setenv("AAH_NVML_LIB", so, 1);
	char *dir = xstrfmt("%s/%s", tmpdir, define);
	struct monitor *m = start(dir, 0.02);
	unsetenv("AAH_NVML_LIB");
	cr_assert_not_null(m);
	cr_assert_eq(monitor_gpu_count(m), 0);
	wait_lines(dir, 2);
	monitor_stop(m);
	struct lines l;
	read_lines(dir, &l);
	for (size_t i = 0; i < l.n; i++) {
		cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(l.doc[i], "nvml")), why);
		cr_assert_null(cJSON_GetObjectItem(l.doc[i], "gpus"));
		cr_assert_gt(num(l.doc[i], "mem", "total_bytes"), 0);
	}
	free_lines(&l);
	free(dir);
	free(so);
}

Test(monitor, nvml_without_a_symbol_or_failing_init_is_reported)
{
	expect_unavailable("FAKE_NO_POWER", "unavailable: no nvmlDeviceGetPowerUsage in the library");
	expect_unavailable("FAKE_INIT_FAILS", "unavailable: nvmlInit_v2 returned 9");
}

/* The NVML path, against a stand-in library with two GPUs (this machine has
 * no NVIDIA driver): dlopen, the symbols, the readings in the lines, and the
 * GPU line in the report. */
Test(monitor, gpu_readings_through_a_stand_in_nvml)
{
	char *so = build_stand_in("libfake-nvml.so", NULL);
	setenv("AAH_NVML_LIB", so, 1);
	char *dir = fx_exp_create(tmpdir, "exp00001", util_now() - 5);
	char *dev = xstrfmt("%s/trials/000001/device_info", dir);
	struct monitor *m = start(dev, 0.02);
	unsetenv("AAH_NVML_LIB");
	cr_assert_not_null(m);
	cr_assert_eq(monitor_gpu_count(m), 2);
	cr_assert_str_eq(monitor_nvml_status(m), "ok");
	wait_lines(dev, 2);
	monitor_stop(m);
	struct lines l;
	read_lines(dev, &l);
	cr_assert_geq(l.n, 2);
	const cJSON *gpus = cJSON_GetObjectItem(l.doc[0], "gpus");
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(l.doc[0], "nvml")), "ok");
	cr_assert_eq(cJSON_GetArraySize(gpus), 2);
	const cJSON *g1 = cJSON_GetArrayItem(gpus, 1);
	cr_assert_eq(num(g1, "index", NULL), 1);
	cr_assert_eq(num(g1, "util_pct", NULL), 80);
	cr_assert_eq(num(g1, "mem_util_pct", NULL), 7);
	cr_assert_eq(num(g1, "mem_used_bytes", NULL), (double)(3ull << 30));
	cr_assert_eq(num(g1, "mem_total_bytes", NULL), (double)(80ull << 30));
	cr_assert_eq(num(g1, "power_w", NULL), 123.456);
	cr_assert_eq(num(g1, "temp_c", NULL), 61);
	free_lines(&l);
	struct report_exp exp;
	cr_assert_eq(report_load(dir, &exp), 0);
	cr_assert_eq(exp.util[0].gpu, 60);     /* the mean of 40 and 80 */
	struct report_score sc;
	struct report_options opt = REPORT_OPTIONS_INIT;
	cr_assert_eq(report_score(&exp, &opt, &sc), 0);
	struct strbuf sb = STRBUF_INIT;
	report_html(&sb, &exp, &opt, &sc);
	cr_assert(strstr(sb.buf, "<polyline class=\"util gpu\""));
	strbuf_release(&sb);
	report_score_release(&sc);
	report_exp_release(&exp);
	free(dev);
	free(dir);
	free(so);
}
