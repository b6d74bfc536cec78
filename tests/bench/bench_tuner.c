/* bench_tuner: NetworkMorphism propose and observe latency against history
 * size, for CnnGenerator-sized and ResNet-50-sized models. Histories are
 * built from the tuner's own morphisms with synthetic accuracies and fed
 * through tuner_observe, exactly as the runner does. Up to n = 1000 also the
 * proposers of tuner.placement: trial, replaying the history or starting from
 * the state cache (tuner.cache).
 *
 *   bench_tuner [--sizes 10,100,1000,5000] [--reps 3] [--threads 2] [--models small,resnet]
 *   bench_tuner --ramp N [--models small|resnet] [--threads 2] [--search-batch K]
 *
 * Prints one table row per (model, n) with the targets side by side. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runner/tuner/graph.h"
#include "runner/tuner/morph.h"
#include "runner/tuner/tuner.h"
#include "runner/tuner/tuner_int.h"
#include "util.h"

struct model_kind {
	const char *name;
	const char *class_args;
	double propose_target_ms;   /* at n = 1000 */
	int width;
};

static const struct model_kind kinds[] = {
	{ "small", "{\"input_width\":32,\"input_channel\":3,\"n_output_node\":10}", 100, 32 },
	{ "resnet", "{\"input_width\":224,\"input_channel\":3,\"n_output_node\":1000,\"cooling\":0.5}",
	  1000, 224 },
};

struct hist_model {
	struct tgraph g;
	double acc;
};

static double synthetic_accuracy(const struct tgraph *g, struct trng *r)
{
	struct tdesc d;
	tdesc_from_graph(&d, g);
	double acc = 0.95 - 0.6 / (1.0 + 0.05 * d.nlayers + 0.2 * d.nskips) + 0.01 * trng_normal(r);
	tdesc_release(&d);
	return acc;
}

/* CPU seconds of the whole process (all threads): unlike wall time, it does
 * not grow when other jobs share the machine. */
static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return n ? v[n / 2] : 0;
}

/* One new history model: a morphism of a good or a recent model. */
static int grow_history(struct hist_model *h, int n, struct trng *r, const struct morph_limits *lim)
{
	for (int tries = 0; tries < 100; tries++) {
		int p;
		if (trng_below(r, 2)) {
			int lo = n > 50 ? n - 50 : 0;
			p = lo + (int)trng_below(r, (uint64_t)(n - lo));
		} else {   /* best of 5 random: exploitation */
			p = (int)trng_below(r, (uint64_t)n);
			for (int k = 0; k < 4; k++) {
				int q = (int)trng_below(r, (uint64_t)n);
				if (h[q].acc > h[p].acc)
					p = q;
			}
		}
		tgraph_copy(&h[n].g, &h[p].g);
		if (morph_apply(&h[n].g, (int)trng_below(r, MORPH_NKINDS), r, lim) == 0) {
			h[n].acc = synthetic_accuracy(&h[n].g, r);
			return 0;
		}
		tgraph_release(&h[n].g);
	}
	return -1;
}

static int observe_model(struct tuner *t, unsigned seq, const struct hist_model *m, double *ms)
{
	cJSON *arch = tgraph_to_json(&m->g, NULL);
	struct tuner_observation o = { seq, arch, NULL, TUNER_OBS_DONE, m->acc };
	double t0 = util_monotonic();
	int rc = tuner_observe(t, &o);
	*ms = 1e3 * (util_monotonic() - t0);
	cJSON_Delete(arch);
	return rc;
}

/* A fresh proposer of n models that starts from the state cache (written
 * by the previous proposer, n - 1 models): the cost of each proposal with
 * tuner.placement: trial since tuner.cache. Its proposal must equal the
 * replaying proposer's (arch, params). */
static int cached_proposer(const struct tuner_config *cfg, const struct hist_model *h, int n,
			   const cJSON *arch, const cJSON *params)
{
	char dir[] = "/tmp/bench-tuner-XXXXXX";
	if (!mkdtemp(dir))
		return error_errno("cannot create a temporary directory");
	char *path = xstrfmt("%s/tuner.cache", dir);
	double ms, t0 = 0, c0 = 0;
	long got = -1;
	cJSON *a = NULL, *p = NULL;
	for (int pass = 0; pass < 2; pass++) {   /* 0: the previous proposer */
		struct tuner *f;
		int m = pass ? n : n - 1;
		t0 = util_monotonic();
		c0 = cpu_now();
		if (tuner_create(&f, cfg) < 0)
			return -1;
		tuner_defer(f);
		for (int i = 0; i < m; i++)
			if (observe_model(f, (unsigned)i + 1, &h[i], &ms) < 0)
				return -1;
		got = tuner_catch_up(f, path, "bench");
		if (got < 0 || (pass && tuner_propose(f, (unsigned)n + 1, &a, &p) < 0))
			return -1;
		tuner_free(f);
	}
	int same = cJSON_Compare(a, arch, 1) && cJSON_Compare(p, params, 1);
	printf("        cached proposer (placement: trial, tuner.cache of n-1 + 1 replayed) at n=%d: "
	       "%.1f ms wall, %.1f ms cpu (all threads); %ld from the cache; same proposal: %s\n", n,
	       1e3 * (util_monotonic() - t0), 1e3 * (cpu_now() - c0), got, same ? "yes" : "NO");
	cJSON_Delete(a);
	cJSON_Delete(p);
	unlink(path);
	rmdir(dir);
	free(path);
	return same ? 0 : error("bench_tuner: the cached proposer proposed something else");
}

/* A NetworkMorphism tuner with k's class arguments (*ca: the caller's to
 * delete; *cfg: for more tuners alike). */
static int search_batch = 1;   /* --search-batch: classArgs.search_batch */

static int kind_tuner(const struct model_kind *k, unsigned threads, struct tuner_config *cfg,
		      cJSON **ca, struct tuner **t)
{
	*ca = cJSON_Parse(k->class_args);
	if (search_batch > 1)
		cJSON_AddNumberToObject(*ca, "search_batch", search_batch);
	*cfg = (struct tuner_config){ .name = "NetworkMorphism", .class_args = *ca, .seed = 1,
				      .threads = threads };
	return tuner_create(t, cfg);
}

static int run_kind(const struct model_kind *k, const int *sizes, int nsizes, int reps,
		    unsigned threads)
{
	cJSON *ca;
	struct tuner_config cfg;
	struct tuner *t;
	if (kind_tuner(k, threads, &cfg, &ca, &t) < 0)
		return -1;
	int nmax = sizes[nsizes - 1];
	struct hist_model *h = xcalloc((size_t)nmax + 1, sizeof(*h));
	struct trng r;
	trng_seed(&r, 42, 0);
	struct morph_limits lim = { .max_layers = 0 };
	if (k->width >= 128)
		tmodel_resnet50(&h[0].g, k->width, 3, 1000);
	else
		tmodel_cnn(&h[0].g, k->width, 3, 10);
	lim.max_layers = tgraph_size(&h[0].g) + 100;
	uint64_t p0 = tgraph_params(&h[0].g);
	lim.max_params = 2 * p0 > (1u << 24) ? 2 * p0 : (1u << 24);
	h[0].acc = synthetic_accuracy(&h[0].g, &r);
	double obs_ms[64];
	int nobs = 0, n = 0, si = 0;
	double build_t0 = util_monotonic();
	unsigned seq = 1;
	while (si < nsizes) {
		double ms;
		if (n > 0 && grow_history(h, n, &r, &lim) < 0) {
			fprintf(stderr, "bench_tuner: cannot grow the history past %d\n", n);
			return -1;
		}
		if (observe_model(t, seq++, &h[n], &ms) < 0)
			return -1;
		obs_ms[nobs++ % 64] = ms;
		n++;
		if (n < sizes[si])
			continue;
		/* measure at this size: propose, then observe the proposal as done */
		struct tuner_nm_stats before, after;
		tuner_nm_stats(t, &before);
		double pms[16], oms[16], pcpu[16];
		int nrep = sizes[si] >= 5000 && reps > 1 ? 1 + reps / 3 : reps;
		for (int rep = 0; rep < nrep; rep++) {
			cJSON *arch, *params;
			double t0 = util_monotonic(), c0 = cpu_now();
			if (tuner_propose(t, seq, &arch, &params) < 0)
				return -1;
			pms[rep] = 1e3 * (util_monotonic() - t0);
			pcpu[rep] = 1e3 * (cpu_now() - c0);
			struct tgraph g;
			if (tgraph_from_json(&g, arch, "proposal") < 0)
				return -1;
			struct tuner_observation o = { seq, arch, params, TUNER_OBS_DONE,
						       synthetic_accuracy(&g, &r) };
			t0 = util_monotonic();
			if (tuner_observe(t, &o) < 0)
				return -1;
			oms[rep] = 1e3 * (util_monotonic() - t0);
			seq++;
			tgraph_release(&g);
			cJSON_Delete(arch);
			cJSON_Delete(params);
		}
		tuner_nm_stats(t, &after);
		int m = nobs < 64 ? nobs : 64;
		double obs_new = median(obs_ms, m);
		double p = median(pms, nrep);
		double pc = median(pcpu, nrep);
		printf("%-7s %6d %5d %11.1f %9.1f %10.2f %10.2f %12.0f %10.0f %9.0f %8.0f %8lu %9.1f\n", k->name,
		       sizes[si], nrep, p, pc, median(oms, nrep), obs_new,
		       (double)(after.distances - before.distances) / nrep,
		       (double)(after.candidates - before.candidates) / nrep,
		       (double)(after.expansions - before.expansions) / nrep,
		       (double)(after.expansions_history - before.expansions_history) / nrep,
		       after.gp_escalations,
		       util_monotonic() - build_t0);
		if (sizes[si] == 1000)
			printf("        propose at n=1000: %.1f ms wall, %.1f ms cpu (all threads), target "
			       "%.0f ms (ratio wall %.2f, cpu %.2f); observe %.2f ms, target 10 ms (ratio "
			       "%.2f)\n", p, pc, k->propose_target_ms, p / k->propose_target_ms,
			       pc / k->propose_target_ms, obs_new, obs_new / 10.0);
		if (sizes[si] <= 1000) {
			/* placement: trial: every proposer is a fresh tuner that replays
			 * the whole history before it proposes (no cached state) */
			struct tuner *f;
			double t0 = util_monotonic(), c0 = cpu_now(), replay_ms;
			if (tuner_create(&f, &cfg) < 0)
				return -1;
			for (int i = 0; i < n; i++)
				if (observe_model(f, (unsigned)i + 1, &h[i], &replay_ms) < 0)
					return -1;
			cJSON *arch, *params;
			if (tuner_propose(f, (unsigned)n + 1, &arch, &params) < 0)
				return -1;
			printf("        fresh proposer (placement: trial, history replayed) at n=%d: "
			       "%.1f ms wall, %.1f ms cpu (all threads)\n", n,
			       1e3 * (util_monotonic() - t0), 1e3 * (cpu_now() - c0));
			if (cached_proposer(&cfg, h, n, arch, params) < 0)
				return -1;
			cJSON_Delete(arch);
			cJSON_Delete(params);
			tuner_free(f);
		}
		fflush(stdout);
		nobs = 0;
		si++;
	}
	for (int i = 0; i < n; i++)
		tgraph_release(&h[i].g);
	free(h);
	tuner_free(t);
	cJSON_Delete(ca);
	return 0;
}

/* --history DIR: proposals from a kept experiment's own trials (e.g.
 * tests/scale/scale.py run --keep), whose search history is the real one,
 * not the synthetic one of run_kind; k gives the class arguments. Each
 * proposal starts from the same history (none is observed). */
static int run_history(const struct model_kind *k, const char *dir, int reps, unsigned threads)
{
	cJSON *ca;
	struct tuner_config cfg;
	struct tuner *t;
	if (kind_tuner(k, threads, &cfg, &ca, &t) < 0)
		return -1;
	double t0 = util_monotonic();
	if (tuner_load_experiment(t, dir) < 0)   /* as the runner does when it starts */
		return -1;
	struct tuner_nm_stats before, after;
	tuner_nm_stats(t, &before);
	/* proposals take the numbers after the last trial (before.history
	 * counts only the GP's window) */
	unsigned next = t->nhist ? t->hist[t->nhist - 1].seq + 1 : 1;
	printf("history of %s: %zu trials loaded in %.2f s, %lu of them in the GP\n", dir,
	       t->nhist, util_monotonic() - t0, before.history);
	printf("%4s %11s %9s %10s %10s %9s %8s %8s  %s\n", "rep", "propose_ms", "prop_cpu", "dist",
	       "cand", "exp", "exp_hist", "reuses", "proposed");
	for (int rep = 0; rep < reps; rep++) {
		cJSON *arch, *params;
		double w0 = util_monotonic(), c0 = cpu_now();
		if (tuner_propose(t, next + (unsigned)rep, &arch, &params) < 0)
			return -1;
		double ms = 1e3 * (util_monotonic() - w0), cpu = 1e3 * (cpu_now() - c0);
		tuner_nm_stats(t, &after);
		const cJSON *hash = cJSON_GetObjectItem(cJSON_GetObjectItem(arch, "meta"), "hash");
		printf("%4d %11.1f %9.1f %10lu %10lu %9lu %8lu %8lu  %s\n", rep, ms, cpu,
		       after.distances - before.distances, after.candidates - before.candidates,
		       after.expansions - before.expansions,
		       after.expansions_history - before.expansions_history,
		       after.list_reuses - before.list_reuses,
		       cJSON_IsString(hash) ? hash->valuestring : "-");
		before = after;
		cJSON_Delete(arch);
		cJSON_Delete(params);
	}
	tuner_free(t);
	cJSON_Delete(ca);
	return 0;
}

/* --ramp N: N proposals in a row with none finished, every one pending: an
 * experiment's start, when every slot is free (4,096 of them at the scale
 * harness's largest size) and nothing has a result yet. Prints the cost by
 * quarter of n and a digest of the proposals' hashes, which two builds that
 * must propose the same share. */
static int run_ramp(const struct model_kind *k, int n, unsigned threads)
{
	cJSON *ca;
	struct tuner_config cfg;
	struct tuner *t;
	if (kind_tuner(k, threads, &cfg, &ca, &t) < 0)
		return -1;
	printf("ramp: %d proposals, none finished, model %s, %u threads\n", n, k->name, threads);
	printf("%13s %11s %9s %10s %10s %9s %9s\n", "proposals", "propose_ms", "prop_cpu",
	       "dist/prop", "cand/prop", "exp/prop", "batched");
	struct tuner_nm_stats before, after;
	tuner_nm_stats(t, &before);
	uint64_t digest = 1469598103934665603ull;   /* FNV-1a over the hashes */
	double w0 = util_monotonic(), c0 = cpu_now(), start = w0;
	int from = 1, step = n >= 4 ? n / 4 : 1;
	for (int seq = 1; seq <= n; seq++) {
		cJSON *arch, *params;
		if (tuner_propose(t, (unsigned)seq, &arch, &params) < 0)
			return -1;
		const cJSON *hash = cJSON_GetObjectItem(cJSON_GetObjectItem(arch, "meta"), "hash");
		for (const char *c = cJSON_IsString(hash) ? hash->valuestring : "-"; *c; c++)
			digest = (digest ^ (uint8_t)*c) * 1099511628211ull;
		cJSON_Delete(arch);
		cJSON_Delete(params);
		if (seq % step && seq != n)
			continue;
		double w = util_monotonic(), c = cpu_now(), m = (double)(seq - from + 1);
		tuner_nm_stats(t, &after);
		printf("%6d-%-6d %11.2f %9.2f %10.0f %10.1f %9.1f %8.0f%%\n", from, seq,
		       1e3 * (w - w0) / m, 1e3 * (c - c0) / m,
		       (double)(after.distances - before.distances) / m,
		       (double)(after.candidates - before.candidates) / m,
		       (double)(after.expansions - before.expansions) / m,
		       100.0 * (double)(after.batch_picks - before.batch_picks) / m);
		before = after;
		w0 = w;
		c0 = c;
		from = seq + 1;
	}
	printf("all %d: %.2f s, %.2f ms a proposal; digest of the proposals %016llx\n", n,
	       util_monotonic() - start, 1e3 * (util_monotonic() - start) / n,
	       (unsigned long long)digest);
	tuner_free(t);
	cJSON_Delete(ca);
	return 0;
}

/* The one model --ramp and --history take, by its name in --models. */
static const struct model_kind *one_kind(const char *models, const char *mode)
{
	for (size_t k = 0; k < ARRAY_SIZE(kinds); k++)
		if (!strcmp(models, kinds[k].name))
			return &kinds[k];
	die("%s needs --models small or --models resnet, not '%s'", mode, models);
}

int main(int argc, char **argv)
{
	const char *history = NULL;
	int ramp = 0;
	int sizes[8] = { 10, 100, 1000, 5000 }, nsizes = 4, reps = 3;
	unsigned threads = 2;
	const char *models = "small,resnet";
	util_set_progname("bench_tuner");
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--sizes")) {
			nsizes = 0;
			for (char *s = strtok(argv[i + 1], ","); s && nsizes < 8; s = strtok(NULL, ","))
				sizes[nsizes++] = atoi(s);
		} else if (!strcmp(argv[i], "--reps")) {
			reps = atoi(argv[i + 1]);
		} else if (!strcmp(argv[i], "--threads")) {
			threads = (unsigned)atoi(argv[i + 1]);
		} else if (!strcmp(argv[i], "--models")) {
			models = argv[i + 1];
		} else if (!strcmp(argv[i], "--history")) {
			history = argv[i + 1];
		} else if (!strcmp(argv[i], "--search-batch")) {
			search_batch = atoi(argv[i + 1]);
			if (search_batch < 1)
				die("--search-batch needs a number of proposals, not '%s'", argv[i + 1]);
		} else if (!strcmp(argv[i], "--ramp")) {
			ramp = atoi(argv[i + 1]);
			if (ramp < 1)
				die("--ramp needs a number of proposals, not '%s'", argv[i + 1]);
		} else {
			die("usage: bench_tuner [--sizes 10,100,1000,5000] [--reps 3] [--threads 2] "
			    "[--models small,resnet] [--history EXPERIMENT_DIR --models small|resnet] "
			    "[--ramp N --models small|resnet] [--search-batch K]");
		}
	}
	if (reps < 1 || reps > 16 || nsizes < 1)
		die("bad --reps or --sizes");
	if (ramp && history)
		die("--ramp and --history: one at a time");
	if (ramp)
		return run_ramp(one_kind(models, "--ramp"), ramp, threads) < 0;
	if (history)   /* the experiment's class arguments */
		return run_history(one_kind(models, "--history"), history, reps, threads) < 0;
	printf("NetworkMorphism tuner, %u threads; small = CnnGenerator 32x32x3 (t_min 1e-4, cooling "
	       "0.9), resnet = ResNet-50 224x224x3 (cooling 0.5)\n", threads);
	printf("%-7s %6s %5s %11s %9s %10s %10s %12s %10s %9s %8s %8s %9s\n", "model", "n", "reps",
	       "propose_ms", "prop_cpu", "obs_ms", "obs_ms_hist", "dist/prop", "cand/prop", "exp/prop", "exp_hist", "jitter+",
	       "elapsed_s");
	for (size_t k = 0; k < ARRAY_SIZE(kinds); k++)
		if (strstr(models, kinds[k].name) && run_kind(&kinds[k], sizes, nsizes, reps, threads) < 0)
			die("benchmark failed for %s", kinds[k].name);
	return 0;
}
