/* Unit tests for the tuner's search: the incremental GP, the thread pool,
 * TPE, and the NetworkMorphism tuner end to end (valid, distinct and
 * reproducible proposals; pending trials; experiment directories). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fileio.h"
#include "gp_dense.h" /* rbf, dense_solve */
#include "jsonfile.h"
#include "runner/tuner/gp.h"
#include "runner/tuner/graph.h"
#include "runner/tuner/pool.h"
#include "runner/tuner/tpe.h"
#include "runner/tuner/tuner.h"
#include "runner/tuner/tuner_int.h"
#include "util.h"

static char tmpdir[64];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/aah-tsearch-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	util_set_quiet(1);
}

static void teardown(void)
{
	fileio_remove_tree(tmpdir);
}

TestSuite(tuner_search, .init = setup, .fini = teardown);

/* ---- GP against a dense direct solve ---- */

#define NP 40
static double pts[NP + 10][3];

Test(tuner_search, gp_matches_dense_solution)
{
	struct trng r;
	trng_seed(&r, 1, 0);
	struct gp g;
	gp_init(&g);
	double ys[NP];
	int idx[NP];
	double kv[NP];
	for (int i = 0; i < NP; i++) {
		for (int k = 0; k < 3; k++)
			pts[i][k] = 3 * trng_uniform(&r);
		ys[i] = sin(pts[i][0]) + pts[i][1];
		for (int j = 0; j < i; j++) {
			idx[j] = j;
			kv[j] = rbf(pts[i], pts[j]);
		}
		cr_assert_eq(gp_add(&g, idx, kv, i, ys[i]), i);
	}
	cr_assert_eq(g.n, NP);
	/* L L^T = K + diag(jitter) */
	for (int i = 0; i < NP; i++)
		for (int j = 0; j <= i; j++) {
			double s = 0;
			for (int k = 0; k <= j; k++)
				s += g.L[(size_t)i * (i + 1) / 2 + k] * g.L[(size_t)j * (j + 1) / 2 + k];
			double want = i == j ? 1.0 + g.jitter[i] : rbf(pts[i], pts[j]);
			cr_assert_float_eq(s, want, 1e-9, "(%d,%d)", i, j);
		}
	/* predictions against a dense solve */
	for (int t = 0; t < 5; t++) {
		double x[3] = { 3 * trng_uniform(&r), 3 * trng_uniform(&r), 3 * trng_uniform(&r) };
		static double a[NP * (NP + 1)];
		double sol[NP], mean = 0, var = 1, m, v;
		for (int i = 0; i < NP; i++) {
			for (int j = 0; j < NP; j++)
				a[i * (NP + 1) + j] = i == j ? 1.0 + g.jitter[i] : rbf(pts[i], pts[j]);
			a[i * (NP + 1) + NP] = ys[i];
		}
		dense_solve(NP, a, sol);
		for (int i = 0; i < NP; i++) {
			idx[i] = i;
			kv[i] = rbf(x, pts[i]);
			mean += kv[i] * sol[i];
		}
		/* variance: k^T K^-1 k through a second solve */
		for (int i = 0; i < NP; i++) {
			for (int j = 0; j < NP; j++)
				a[i * (NP + 1) + j] = i == j ? 1.0 + g.jitter[i] : rbf(pts[i], pts[j]);
			a[i * (NP + 1) + NP] = kv[i];
		}
		dense_solve(NP, a, sol);
		for (int i = 0; i < NP; i++)
			var -= kv[i] * sol[i];
		gp_predict(&g, idx, kv, NP, &m, &v);
		cr_assert_float_eq(m, mean, 1e-6);
		cr_assert_float_eq(v, var < 0 ? 0 : var, 1e-6);
	}
	gp_release(&g);
}

Test(tuner_search, gp_duplicates_escalate_jitter_instead_of_skipping)
{
	struct gp g;
	gp_init(&g);
	int idx[4] = { 0, 1, 2, 3 };
	double kv[4] = { 1.0, 1.0, 1.0, 1.0 };
	/* four copies of the same point: singular without jitter */
	for (int i = 0; i < 4; i++)
		cr_assert_eq(gp_add(&g, idx, kv, i, 0.5 + 0.1 * i), i);
	cr_assert_eq(g.n, 4);
	cr_assert(g.escalations >= 3, "escalations %d", g.escalations);
	double m, v;
	gp_predict(&g, idx, kv, 4, &m, &v);
	/* the first copy has the smallest jitter and dominates */
	cr_assert(fabs(m - 0.5) < 0.01, "mean %g is not near the first value 0.5", m);
	cr_assert(v < 1e-3);
	for (int i = 0; i < 4; i++)
		cr_assert(isfinite(g.alpha[i]));
	gp_release(&g);
}

Test(tuner_search, gp_set_y_equals_adding_with_the_final_value)
{
	struct gp a, b;
	gp_init(&a);
	gp_init(&b);
	int idx[3] = { 0, 1, 2 };
	double kv[3] = { 0.5, 0.2, 0.1 };
	double y1[3] = { 0.1, 0.7, 0.3 }, y2[3] = { 0.1, 0.2, 0.3 };
	for (int i = 0; i < 3; i++) {
		gp_add(&a, idx, kv, i, y1[i]);
		gp_add(&b, idx, kv, i, y2[i]);
	}
	gp_set_y(&a, 1, 0.2);
	for (int i = 0; i < 3; i++)
		cr_assert_float_eq(a.alpha[i], b.alpha[i], 1e-12);
	gp_release(&a);
	gp_release(&b);
}

/* ---- pool ---- */

struct sumctx {
	double *out;
};

static void square_range(void *ctx, size_t b, size_t e)
{
	struct sumctx *c = ctx;
	for (size_t i = b; i < e; i++)
		c->out[i] = (double)i * (double)i;
}

Test(tuner_search, pool_covers_every_index_once)
{
	unsigned counts[] = { 1, 2, 4 };
	for (int k = 0; k < 3; k++) {
		struct tpool *p = tpool_create(counts[k]);
		for (size_t n = 0; n < 5000; n += 997) {
			double *out = xcalloc(n + 1, sizeof(double));
			struct sumctx c = { out };
			for (size_t i = 0; i < n; i++)
				out[i] = -1;
			tpool_run(p, n, 1, square_range, &c);
			for (size_t i = 0; i < n; i++)
				cr_assert_eq(out[i], (double)i * (double)i);
			free(out);
		}
		tpool_free(p);
	}
}

/* ---- TPE ---- */

static double objective(double x)
{
	return 1.0 - (x - 0.3) * (x - 0.3);
}

Test(tuner_search, tpe_concentrates_near_the_optimum)
{
	cJSON *doc = NULL;
	cr_assert_eq(jsonfile_parse("t", "{\"x\":{\"_type\":\"uniform\",\"_value\":[0,1]},"
					 "\"c\":{\"_type\":\"choice\",\"_value\":[\"a\",\"b\",\"c\"]}}", &doc), 0);
	struct space sp;
	cr_assert_eq(space_parse(&sp, doc), 0);
	struct tpe_options o = TPE_OPTIONS_DEFAULT;
	struct trng r;
	trng_seed(&r, 3, 0);
	enum { N = 120 };
	struct tpe_obs obs[N];
	cJSON *keep[N];
	double err_late = 0, err_random = 0;
	int chose_b = 0;
	for (int i = 0; i < N; i++) {
		cJSON *p = tpe_suggest(&sp, obs, (size_t)i, &o, &r);
		double x = cJSON_GetObjectItem(p, "x")->valuedouble;
		const char *c = cJSON_GetObjectItem(p, "c")->valuestring;
		cr_assert(x >= 0 && x <= 1);
		obs[i].params = p;
		obs[i].metric = objective(x) - (strcmp(c, "b") ? 0.2 : 0.0);
		keep[i] = p;
		if (i >= N - 60) {
			err_late += fabs(x - 0.3);
			chose_b += !strcmp(c, "b");
			err_random += fabs(trng_uniform(&r) - 0.3);
		}
	}
	cr_assert(err_late < 0.6 * err_random, "TPE error %g vs random %g", err_late, err_random);
	cr_assert(chose_b > 35, "TPE chose the best category %d times of 60", chose_b);
	for (int i = 0; i < N; i++)
		cJSON_Delete(keep[i]);
	space_release(&sp);
	cJSON_Delete(doc);
}

/* ---- NetworkMorphism ---- */

static cJSON *class_args(const char *extra)
{
	char *text = xstrfmt("{\"optimize_mode\":\"maximize\",\"task\":\"cv\",\"input_width\":28,"
			     "\"input_channel\":1,\"n_output_node\":10%s}", extra);
	cJSON *d = NULL;
	cr_assert_eq(jsonfile_parse("t", text, &d), 0);
	free(text);
	return d;
}

static cJSON *space_doc(void)
{
	cJSON *d = NULL;
	cr_assert_eq(jsonfile_parse("t", "{\"dropout_rate\":{\"_type\":\"uniform\",\"_value\":[0,0.2]},"
				     "\"kernel_size\":{\"_type\":\"choice\",\"_value\":[3,5,7]}}", &d), 0);
	return d;
}

/* A synthetic accuracy that likes depth and skip connections, saturating. */
static double fake_accuracy(const cJSON *arch)
{
	struct tgraph g;
	cr_assert_eq(tgraph_from_json(&g, arch, "proposal"), 0, "%s", util_last_error());
	struct tdesc d;
	tdesc_from_graph(&d, &g);
	double acc = 0.9 - 0.5 / (1.0 + 0.1 * d.nlayers + 0.3 * d.nskips);
	tdesc_release(&d);
	tgraph_release(&g);
	return acc;
}

static uint64_t arch_hash(const cJSON *arch)
{
	struct tgraph g;
	cr_assert_eq(tgraph_from_json(&g, arch, "proposal"), 0, "%s", util_last_error());
	uint64_t h = tgraph_hash(&g);
	tgraph_release(&g);
	return h;
}

Test(tuner_search, nm_proposes_valid_distinct_archs, .timeout = 60)
{
	cJSON *ca = class_args(""), *sp = space_doc();
	struct tuner_config cfg = { .name = "NetworkMorphism", .class_args = ca, .search_space = sp,
				    .seed = 77, .threads = 2 };
	struct tuner *t;
	cr_assert_eq(tuner_create(&t, &cfg), 0, "%s", util_last_error());
	enum { N = 40 };
	uint64_t hashes[N];
	for (unsigned s = 1; s <= N; s++) {
		cJSON *arch, *params;
		cr_assert_eq(tuner_propose(t, s, &arch, &params), 0, "trial %u: %s", s, util_last_error());
		cr_assert_not_null(arch);
		cr_assert_not_null(params);
		const cJSON *meta = cJSON_GetObjectItem(arch, "meta");
		cr_assert_not_null(meta);
		if (s == 1)
			cr_assert_str_eq(cJSON_GetObjectItem(meta, "start")->valuestring, "cnn");
		else
			cr_assert_not_null(cJSON_GetObjectItem(meta, "parent_trial"));
		const cJSON *p = cJSON_GetObjectItem(params, "parameters");
		cr_assert_not_null(cJSON_GetObjectItem(p, "dropout_rate"));
		cr_assert_not_null(cJSON_GetObjectItem(p, "kernel_size"));
		hashes[s - 1] = arch_hash(arch);
		for (unsigned k = 0; k + 1 < s; k++)
			cr_assert_neq(hashes[k], hashes[s - 1], "trial %u repeats trial %u", s, k + 1);
		/* every third trial stays pending while the next ones are proposed */
		if (s % 3) {
			struct tuner_observation o = { .trial_seq = s, .arch = arch, .params = params,
						       .state = s % 7 ? TUNER_OBS_DONE : TUNER_OBS_FAILED,
						       .metric = fake_accuracy(arch) };
			cr_assert_eq(tuner_observe(t, &o), 0);
		}
		cJSON_Delete(arch);
		cJSON_Delete(params);
	}
	struct tuner_nm_stats st;
	cr_assert_eq(tuner_nm_stats(t, &st), 0);
	cr_assert_eq(st.history, N);
	cr_assert(st.expansions > 0 && st.candidates > st.expansions);
	tuner_free(t);
	cJSON_Delete(ca);
	cJSON_Delete(sp);
}

Test(tuner_search, nm_concurrent_pending_proposals_differ)
{
	cJSON *ca = class_args("");
	struct tuner_config cfg = { .name = "NetworkMorphism", .class_args = ca, .seed = 5, .threads = 1 };
	struct tuner *t;
	cr_assert_eq(tuner_create(&t, &cfg), 0);
	uint64_t h[6];
	for (unsigned s = 1; s <= 6; s++) {   /* nothing ever finishes */
		cJSON *arch, *params;
		cr_assert_eq(tuner_propose(t, s, &arch, &params), 0, "%s", util_last_error());
		h[s - 1] = arch_hash(arch);
		for (unsigned k = 0; k + 1 < s; k++)
			cr_assert_neq(h[k], h[s - 1]);
		cJSON_Delete(arch);
		cJSON_Delete(params);
	}
	tuner_free(t);
	cJSON_Delete(ca);
}

static unsigned parent_of(const cJSON *arch)
{
	const cJSON *meta = cJSON_GetObjectItem(arch, "meta");
	const cJSON *p = cJSON_GetObjectItem(meta, "parent_trial");
	return cJSON_IsNumber(p) ? (unsigned)p->valuedouble : 0;
}

/* With weight inheritance a child needs a finished parent: before any trial
 * has finished the slots train the start network (each with its own seed
 * and hyperparameters), and a trial still training is never a parent. The
 * quickstart's trial 2 used to be a morph of the running trial 1, trained
 * from random weights, and never left chance accuracy. */
Test(tuner_search, nm_inheriting_children_have_finished_parents, .timeout = 60)
{
	cJSON *ca = class_args("");
	struct tuner_config cfg = { .name = "NetworkMorphism", .class_args = ca, .seed = 9,
				    .threads = 1, .inherit_weights = 1 };
	struct tuner *t;
	cr_assert_eq(tuner_create(&t, &cfg), 0, "%s", util_last_error());
	enum { N = 12 };
	cJSON *arch[N + 1], *params[N + 1];
	int done[N + 1] = { 0 };
	for (unsigned s = 1; s <= N; s++) {
		cr_assert_eq(tuner_propose(t, s, &arch[s], &params[s]), 0, "%s", util_last_error());
		unsigned p = parent_of(arch[s]);
		int any_done = 0;
		for (unsigned k = 1; k < s; k++)
			any_done |= done[k];
		if (!any_done) {
			cr_assert_eq(p, 0, "trial %u morphs trial %u before any trial finished", s, p);
			cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(arch[s], "meta"),
							     "start")->valuestring, "cnn");
		} else {
			cr_assert(p >= 1 && p < s && done[p], "trial %u's parent %u has not finished",
				  s, p);
		}
		/* trials 1 and 2 stay pending until trial 4 is proposed; then
		 * every even trial finishes at once and every odd one stays pending */
		if (s == 3 || s == 4) {
			unsigned k = s - 2;
			struct tuner_observation o = { k, arch[k], params[k], TUNER_OBS_DONE, 0.8 + 0.01 * k };
			cr_assert_eq(tuner_observe(t, &o), 0);
			done[k] = 1;
		}
		if (s > 4 && s % 2 == 0) {
			struct tuner_observation o = { s, arch[s], params[s], TUNER_OBS_DONE, 0.85 };
			cr_assert_eq(tuner_observe(t, &o), 0);
			done[s] = 1;
		} else if (!done[s]) {
			struct tuner_observation o = { s, arch[s], params[s], TUNER_OBS_PENDING, 0 };
			cr_assert_eq(tuner_observe(t, &o), 0);
		}
	}
	cr_assert_eq(parent_of(arch[2]), 0);
	cr_assert_eq(parent_of(arch[3]), 0);
	for (unsigned s = 1; s <= N; s++) {
		cJSON_Delete(arch[s]);
		cJSON_Delete(params[s]);
	}
	tuner_free(t);
	cJSON_Delete(ca);
}

static struct tuner_nm_stats last_stats;   /* of the last propose_after_history */

/* Build a history, then tell it to a fresh tuner (each observation
 * `times` times over) and ask it for the next trial. */
static char *propose_after_told(uint64_t seed, unsigned threads, const char *extra, int times)
{
	cJSON *ca = class_args(extra), *sp = space_doc();
	struct tuner_config cfg = { .name = "NetworkMorphism", .class_args = ca, .search_space = sp,
				    .seed = 11, .threads = 1 };
	struct tuner *t;
	cr_assert_eq(tuner_create(&t, &cfg), 0);
	enum { N = 25 };
	cJSON *archs[N], *params[N];
	for (unsigned s = 1; s <= N; s++) {
		cr_assert_eq(tuner_propose(t, s, &archs[s - 1], &params[s - 1]), 0);
		struct tuner_observation o = { s, archs[s - 1], params[s - 1], TUNER_OBS_DONE,
					       fake_accuracy(archs[s - 1]) };
		if (s > N - 3)
			o.state = TUNER_OBS_PENDING;
		cr_assert_eq(tuner_observe(t, &o), 0);
	}
	tuner_free(t);
	cfg.seed = seed;
	cfg.threads = threads;
	cr_assert_eq(tuner_create(&t, &cfg), 0);
	for (unsigned s = 1; s <= N; s++) {
		struct tuner_observation o = { s, archs[s - 1], params[s - 1], TUNER_OBS_DONE,
					       fake_accuracy(archs[s - 1]) };
		if (s > N - 3)
			o.state = TUNER_OBS_PENDING;
		for (int k = 0; k < times; k++)
			cr_assert_eq(tuner_observe(t, &o), 0);
		cJSON_Delete(archs[s - 1]);
		cJSON_Delete(params[s - 1]);
	}
	cJSON *a, *p;
	cr_assert_eq(tuner_propose(t, N + 1, &a, &p), 0, "%s", util_last_error());
	cJSON *both = cJSON_CreateArray();
	cJSON_AddItemToArray(both, a);
	cJSON_AddItemToArray(both, p);
	char *text = cJSON_PrintUnformatted(both);
	cJSON_Delete(both);
	cr_assert_eq(tuner_nm_stats(t, &last_stats), 0);
	tuner_free(t);
	cJSON_Delete(ca);
	cJSON_Delete(sp);
	return text;
}

static char *propose_after_history(uint64_t seed, unsigned threads, const char *extra)
{
	return propose_after_told(seed, threads, extra, 1);
}

/* On a resume the tuner's thread loads the settled trials from the
 * experiment while the scheduler queues those that settle meanwhile: a
 * trial may be told twice. The tuner keeps one record a trial (the second
 * replaces the first), and its GP one row: the proposal after the history
 * told twice is the proposal after it told once, and the GP holds as many
 * observations. */
Test(tuner_search, nm_a_trial_told_twice_counts_once, .timeout = 60)
{
	char *once = propose_after_told(1234, 1, "", 1);
	struct tuner_nm_stats a = last_stats;
	char *twice = propose_after_told(1234, 1, "", 2);
	cr_assert_str_eq(once, twice);
	cr_assert_eq(last_stats.history, a.history, "%lu GP rows, told once: %lu",
		     last_stats.history, a.history);
	cr_assert_eq(a.history, 26, "%lu GP rows for 25 trials told and 1 proposed", a.history);
	free(once);
	free(twice);
}

Test(tuner_search, nm_same_seed_and_history_same_proposal, .timeout = 60)
{
	char *a = propose_after_history(1234, 1, "");
	char *b = propose_after_history(1234, 2, "");   /* thread count must not matter */
	char *c = propose_after_history(4321, 2, "");
	cr_assert_str_eq(a, b);
	cr_assert_str_neq(a, c);
	free(a);
	free(b);
	free(c);
}

Test(tuner_search, nm_class_args_are_checked)
{
	const char *bad[] = { ",\"cooling\":1.5", ",\"t_min\":0", ",\"distance_cutoff\":0",
			      ",\"beta\":-1", ",\"n_neighbours\":\"many\"" };
	const char *key[] = { "cooling", "t_min", "distance_cutoff", "beta", "n_neighbours" };
	for (int i = 0; i < 5; i++) {
		cJSON *ca = class_args(bad[i]);
		struct tuner_config cfg = { .name = "NetworkMorphism", .class_args = ca };
		struct tuner *t;
		cr_assert_eq(tuner_create(&t, &cfg), -1, "accepted %s", bad[i]);
		cr_assert_not_null(strstr(util_last_error(), key[i]), "%s", util_last_error());
		cJSON_Delete(ca);
	}
}

/* Validate trials/<id>/arch.json (with their meta) against the schema. */
static void validate_trials(const char *expdir, int want)
{
	const char *root = getenv("AAH_ROOT") ? getenv("AAH_ROOT") : ".";
	char *schema = xstrfmt("%s/docs/schemas/arch.schema.json", root);
	char *count = xstrfmt("%d", want);
	const char *prog =
		"import json, sys, glob, jsonschema\n"
		"s = json.load(open(sys.argv[1]))\n"
		"s.pop('$id', None)  # a relative $id breaks local $ref resolution\n"
		"v = jsonschema.Draft7Validator(s)\n"
		"files = sorted(glob.glob(sys.argv[2] + '/trials/*/arch.json'))\n"
		"for f in files:\n"
		"    errs = list(v.iter_errors(json.load(open(f))))\n"
		"    if errs:\n"
		"        print(f, errs[0].message); sys.exit(1)\n"
		"sys.exit(0 if len(files) == int(sys.argv[3]) else 2)\n";
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		char *argv[] = { "/usr/bin/python3", "-c", (char *)prog, schema, (char *)expdir, count, NULL };
		execv(argv[0], argv);
		_exit(127);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "schema validation of %s failed (%d)", expdir,
		  WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	free(count);
	free(schema);
}

Test(tuner_search, nm_experiment_directory_round_trip)
{
	cJSON *ca = class_args(""), *sp = space_doc();
	struct tuner_config cfg = { .name = "NetworkMorphism", .class_args = ca, .search_space = sp,
				    .seed = 3, .threads = 1 };
	cr_assert_eq(tuner_propose_experiment(tmpdir, &cfg, 1), 0, "%s", util_last_error());
	char *a1 = xstrfmt("%s/trials/000001/arch.json", tmpdir);
	char *r1 = xstrfmt("%s/trials/000001/result.json", tmpdir);
	cJSON *arch = NULL;
	cr_assert_eq(jsonfile_read(a1, &arch), 0);
	const char *res = "{\"format\":\"aah-result/1\",\"status\":\"succeeded\",\"best_val_acc\":0.8}";
	cr_assert_eq(fileio_write_atomic(r1, res, strlen(res)), 0);
	cr_assert_eq(tuner_propose_experiment(tmpdir, &cfg, 2), 0, "%s", util_last_error());
	char *a2 = xstrfmt("%s/trials/000002/arch.json", tmpdir);
	cJSON *arch2 = NULL;
	cr_assert_eq(jsonfile_read(a2, &arch2), 0);
	const cJSON *meta = cJSON_GetObjectItem(arch2, "meta");
	cr_assert_eq(cJSON_GetObjectItem(meta, "parent_trial")->valueint, 1);
	cr_assert_neq(arch_hash(arch), arch_hash(arch2));
	/* an initial arch file is used as the start */
	char *init = xstrfmt("%s/init.json", tmpdir);
	cr_assert_eq(jsonfile_write(init, arch2), 0);
	char *dir2 = xstrfmt("%s/exp2", tmpdir);
	cfg.initial_arch = init;
	cr_assert_eq(fileio_mkdir_p(dir2, 0755), 0);
	cr_assert_eq(tuner_propose_experiment(dir2, &cfg, 1), 0, "%s", util_last_error());
	char *a3 = xstrfmt("%s/trials/000001/arch.json", dir2);
	cJSON *arch3 = NULL;
	cr_assert_eq(jsonfile_read(a3, &arch3), 0);
	cr_assert_eq(arch_hash(arch3), arch_hash(arch2));
	cJSON_Delete(arch);
	cJSON_Delete(arch2);
	cJSON_Delete(arch3);
	free(a1); free(a2); free(a3); free(r1); free(init); free(dir2);
	cJSON_Delete(ca);
	cJSON_Delete(sp);
}

Test(tuner_search, live_tuner_syncs_an_experiment_directory, .timeout = 60)
{
	cJSON *ca = class_args(""), *sp = space_doc();
	struct tuner_config cfg = { .name = "NetworkMorphism", .class_args = ca, .search_space = sp,
				    .seed = 8, .threads = 2 };
	struct tuner *t;
	cr_assert_eq(tuner_create(&t, &cfg), 0);
	uint64_t h[10];
	for (unsigned s = 1; s <= 10; s++) {
		cr_assert_eq(tuner_propose_into(t, tmpdir, s), 0, "%s", util_last_error());
		/* asking again keeps the proposal */
		cr_assert_eq(tuner_propose_into(t, tmpdir, s), 0);
		char *ap = xstrfmt("%s/trials/%06u/arch.json", tmpdir, s);
		cJSON *arch = NULL;
		cr_assert_eq(jsonfile_read(ap, &arch), 0);
		h[s - 1] = arch_hash(arch);
		for (unsigned k = 0; k + 1 < s; k++)
			cr_assert_neq(h[k], h[s - 1]);
		if (s % 4) {   /* most trials finish before the next proposal */
			char *rp = xstrfmt("%s/trials/%06u/result.json", tmpdir, s);
			char *res = xstrfmt("{\"format\":\"aah-result/1\",\"status\":\"succeeded\","
					    "\"best_val_acc\":%.4f}", fake_accuracy(arch));
			cr_assert_eq(fileio_write_atomic(rp, res, strlen(res)), 0);
			free(res);
			free(rp);
		}
		cJSON_Delete(arch);
		free(ap);
	}
	validate_trials(tmpdir, 10);
	cr_assert_eq(tuner_load_history(t, tmpdir), 0);
	cr_assert_eq(t->nhist, 10);
	cr_assert_eq(t->hist[0].state, TUNER_OBS_DONE);
	cr_assert_eq(t->hist[3].state, TUNER_OBS_PENDING);
	/* a finished trial is not read again: its result cannot change */
	double m0 = t->hist[0].metric;
	char *rp = xstrfmt("%s/trials/000001/result.json", tmpdir);
	const char *res = "{\"format\":\"aah-result/1\",\"status\":\"succeeded\",\"best_val_acc\":0.01}";
	cr_assert_eq(fileio_write_atomic(rp, res, strlen(res)), 0);
	/* a pending one is: trial 4 finishes now */
	char *rp4 = xstrfmt("%s/trials/000004/result.json", tmpdir);
	const char *res4 = "{\"format\":\"aah-result/1\",\"status\":\"failed\"}";
	cr_assert_eq(fileio_write_atomic(rp4, res4, strlen(res4)), 0);
	cr_assert_eq(tuner_load_history(t, tmpdir), 0);
	cr_assert_float_eq(t->hist[0].metric, m0, 1e-12);
	cr_assert_eq(t->hist[3].state, TUNER_OBS_FAILED);
	free(rp4);
	free(rp);
	tuner_free(t);
	cJSON_Delete(ca);
	cJSON_Delete(sp);
}

/* The triangle-inequality pruning must not change anything: the same
 * history searched with and without it gives the same proposal, predicted
 * values included. */
Test(tuner_search, nm_pruning_is_exact, .timeout = 120)
{
	char *a = propose_after_history(99, 2, "");
	struct tuner_nm_stats pruned = last_stats;
	char *b = propose_after_history(99, 2, ",\"search_pruning\":0");
	cr_assert_str_eq(a, b);
	cr_assert(pruned.list_reuses > 0, "the pruned search never reused a parent's list");
	cr_assert(pruned.distances < last_stats.distances, "pruning computed %lu distances, "
		  "the full search %lu", pruned.distances, last_stats.distances);
	free(a);
	free(b);
}
