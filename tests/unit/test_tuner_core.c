/* Unit tests for runner/tuner: registry, search-space parser, None and
 * Random tuners, history loading and experiment-level proposals. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fileio.h"
#include "jsonfile.h"
#include "runner/tuner/space.h"
#include "runner/tuner/tuner.h"
#include "runner/tuner/tuner_int.h"
#include "util.h"

static char tmpdir[64];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/aah-tuner-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	util_set_quiet(1);
}

static void teardown(void)
{
	fileio_remove_tree(tmpdir);
}

TestSuite(tuner_core, .init = setup, .fini = teardown);

static cJSON *parse(const char *text)
{
	cJSON *d = NULL;
	cr_assert_eq(jsonfile_parse("test", text, &d), 0, "bad test JSON: %s", text);
	return d;
}

static cJSON *fixture(const char *name)
{
	char *path = xstrfmt("%s/tests/fixtures/tuner/%s", getenv("AAH_ROOT") ? getenv("AAH_ROOT") : ".", name);
	cJSON *d = NULL;
	cr_assert_eq(jsonfile_read(path, &d), 0, "cannot read %s", path);
	free(path);
	return d;
}

Test(tuner_core, registry_entries_complete)
{
	size_t n;
	const struct tuner_ops *const *r = tuner_registry(&n);
	cr_assert_eq(n, 4);
	for (size_t i = 0; i < n; i++) {
		cr_assert_not_null(r[i]->name);
		cr_assert_not_null(r[i]->propose, "%s has no propose", r[i]->name);
		cr_assert(tuner_known(r[i]->name));
		cr_assert_not_null(strstr(tuner_known_names(), r[i]->name));
	}
	cr_assert(tuner_known("NetworkMorphism"));
	cr_assert(tuner_known("TPE"));
	cr_assert(tuner_known("Random"));
	cr_assert(tuner_known("None"));
	cr_assert(!tuner_known("Anneal"));
	cr_assert(!tuner_known(NULL));
	struct tuner *t;
	struct tuner_config cfg = { .name = "SMAC" };
	cr_assert_eq(tuner_create(&t, &cfg), -1);
	cr_assert_not_null(strstr(util_last_error(), "SMAC"));
}

Test(tuner_core, upstream_spaces_load)
{
	const char *files[] = { "aah-imagenet-search_space.json", "aiperf-thu-imagenet-search_space.json" };
	for (size_t f = 0; f < 2; f++) {
		cJSON *doc = fixture(files[f]);
		struct space sp;
		cr_assert_eq(space_parse(&sp, doc), 0, "%s: %s", files[f], util_last_error());
		cr_assert_eq(sp.n, 3);
		cr_assert_str_eq(sp.params[0].name, "dropout_rate");
		cr_assert_eq(sp.params[0].type, SPACE_UNIFORM);
		cr_assert_eq(sp.params[1].type, SPACE_CHOICE);
		cr_assert_eq(sp.params[1].nchoices, 3);
		cr_assert_eq(sp.params[2].type, SPACE_UNIFORM);
		cr_assert_eq(sp.params[2].a, 12);
		space_release(&sp);
		cJSON_Delete(doc);
	}
}

Test(tuner_core, every_type_parses_and_samples_in_range)
{
	cJSON *doc = parse("{"
		"\"c\": {\"_type\":\"choice\",\"_value\":[3,\"x\",true]},"
		"\"ri\": {\"_type\":\"randint\",\"_value\":[2,5]},"
		"\"u\": {\"_type\":\"uniform\",\"_value\":[-1,1]},"
		"\"qu\": {\"_type\":\"quniform\",\"_value\":[0,10,2.5]},"
		"\"lu\": {\"_type\":\"loguniform\",\"_value\":[0.001,0.1]},"
		"\"qlu\": {\"_type\":\"qloguniform\",\"_value\":[1,100,5]},"
		"\"n\": {\"_type\":\"normal\",\"_value\":[0,1]},"
		"\"qn\": {\"_type\":\"qnormal\",\"_value\":[10,3,1]},"
		"\"ln\": {\"_type\":\"lognormal\",\"_value\":[0,0.5]}}");
	struct space sp;
	cr_assert_eq(space_parse(&sp, doc), 0, "%s", util_last_error());
	cr_assert_eq(sp.n, 9);
	struct trng r;
	trng_seed(&r, 7, 0);
	int seen_choice[3] = { 0, 0, 0 };
	int seen_int[5] = { 0 };
	for (int i = 0; i < 2000; i++) {
		cJSON *s = space_sample(&sp, &r);
		cJSON *c = cJSON_GetObjectItem(s, "c");
		if (cJSON_IsNumber(c)) seen_choice[0]++;
		else if (cJSON_IsString(c)) seen_choice[1]++;
		else if (cJSON_IsTrue(c)) seen_choice[2]++;
		double ri = cJSON_GetObjectItem(s, "ri")->valuedouble;
		cr_assert(ri >= 2 && ri <= 4 && ri == floor(ri), "randint %g", ri);
		seen_int[(int)ri]++;
		double u = cJSON_GetObjectItem(s, "u")->valuedouble;
		cr_assert(u >= -1 && u <= 1);
		double qu = cJSON_GetObjectItem(s, "qu")->valuedouble;
		cr_assert(qu >= 0 && qu <= 10 && fmod(qu, 2.5) == 0, "quniform %g", qu);
		double lu = cJSON_GetObjectItem(s, "lu")->valuedouble;
		cr_assert(lu >= 0.001 && lu <= 0.1);
		double qlu = cJSON_GetObjectItem(s, "qlu")->valuedouble;
		cr_assert(qlu >= 1 && qlu <= 100 && (qlu == 1 || fmod(qlu, 5) == 0), "qlu %g", qlu);
		double qn = cJSON_GetObjectItem(s, "qn")->valuedouble;
		cr_assert(qn == floor(qn));
		cr_assert(cJSON_GetObjectItem(s, "ln")->valuedouble > 0);
		cJSON_Delete(s);
	}
	for (int i = 0; i < 3; i++)
		cr_assert(seen_choice[i] > 500, "choice %d seen %d times", i, seen_choice[i]);
	for (int i = 2; i < 5; i++)
		cr_assert(seen_int[i] > 500);
	space_release(&sp);
	cJSON_Delete(doc);
}

Test(tuner_core, errors_name_the_key)
{
	const struct { const char *text, *want; } cases[] = {
		{ "{\"lr\": {\"_type\":\"gaussian\",\"_value\":[0,1]}}", "'lr'" },
		{ "{\"lr\": {\"_type\":\"uniform\",\"_value\":[0]}}", "'lr'" },
		{ "{\"lr\": {\"_type\":\"uniform\",\"_value\":[1,0]}}", "'lr'" },
		{ "{\"lr\": {\"_type\":\"loguniform\",\"_value\":[0,1]}}", "'lr'" },
		{ "{\"bs\": {\"_type\":\"choice\",\"_value\":[]}}", "'bs'" },
		{ "{\"bs\": {\"_type\":\"choice\",\"_value\":[{\"_name\":\"a\"}]}}", "'bs'" },
		{ "{\"bs\": {\"_value\":[1]}}", "'bs'" },
		{ "{\"bs\": 3}", "'bs'" },
		{ "{\"k\": {\"_type\":\"randint\",\"_value\":[1.5,3]}}", "'k'" },
		{ "{\"q\": {\"_type\":\"quniform\",\"_value\":[1,3,0]}}", "'q'" },
		{ "{\"s\": {\"_type\":\"normal\",\"_value\":[1,-1]}}", "'s'" },
		{ "{\"s\": {\"_type\":\"uniform\",\"_value\":[\"a\",1]}}", "'s'" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *doc = parse(cases[i].text);
		struct space sp;
		cr_assert_eq(space_parse(&sp, doc), -1, "accepted %s", cases[i].text);
		cr_assert_not_null(strstr(util_last_error(), cases[i].want), "%s -> %s", cases[i].text,
				   util_last_error());
		cJSON_Delete(doc);
	}
}

Test(tuner_core, none_proposes_nothing)
{
	struct tuner *t;
	struct tuner_config cfg = { .name = "None", .seed = 1 };
	cr_assert_eq(tuner_create(&t, &cfg), 0);
	cJSON *a = (cJSON *)1, *p = (cJSON *)1;
	cr_assert_eq(tuner_propose(t, 1, &a, &p), 0);
	cr_assert_null(a);
	cr_assert_null(p);
	tuner_free(t);
}

static char *propose_text(const char *name, const cJSON *space, uint64_t seed, unsigned seq)
{
	struct tuner *t;
	struct tuner_config cfg = { .name = name, .search_space = space, .seed = seed };
	cr_assert_eq(tuner_create(&t, &cfg), 0, "%s", util_last_error());
	cJSON *a, *p;
	cr_assert_eq(tuner_propose(t, seq, &a, &p), 0);
	cr_assert_null(a);
	cr_assert_not_null(p);
	cr_assert_eq(jsonfile_check_format("params", p, "aah-params", 1), 0);
	cr_assert_eq(cJSON_GetObjectItem(p, "trial_seq")->valuedouble, seq);
	char *s = cJSON_PrintUnformatted(cJSON_GetObjectItem(p, "parameters"));
	cJSON_Delete(p);
	tuner_free(t);
	return s;
}

Test(tuner_core, random_is_seeded_and_reproducible)
{
	cJSON *space = fixture("aah-imagenet-search_space.json");
	char *a = propose_text("Random", space, 42, 3);
	char *b = propose_text("Random", space, 42, 3);
	char *c = propose_text("Random", space, 43, 3);
	char *d = propose_text("Random", space, 42, 4);
	cr_assert_str_eq(a, b);
	cr_assert_str_neq(a, c);
	cr_assert_str_neq(a, d);
	cJSON *pa = parse(a);
	cr_assert_not_null(cJSON_GetObjectItem(pa, "dropout_rate"));
	cr_assert_not_null(cJSON_GetObjectItem(pa, "kernel_size"));
	cr_assert_not_null(cJSON_GetObjectItem(pa, "batch_size"));
	cJSON_Delete(pa);
	free(a); free(b); free(c); free(d);
	cJSON_Delete(space);
}

static void write_file(const char *rel, const char *text)
{
	char *path = xstrfmt("%s/%s", tmpdir, rel);
	char *dir = xstrdup(path);
	*strrchr(dir, '/') = 0;
	cr_assert_eq(fileio_mkdir_p(dir, 0755), 0);
	cr_assert_eq(fileio_write_atomic(path, text, strlen(text)), 0);
	free(dir);
	free(path);
}

/* An implementation used to watch what the generic layer hands over. */
Test(tuner_core, load_history_reads_states)
{
	write_file("trials/000001/params.json", "{\"format\":\"aah-params/1\",\"trial_seq\":1,\"parameters\":{}}");
	write_file("trials/000001/result.json", "{\"format\":\"aah-result/1\",\"status\":\"succeeded\",\"best_val_acc\":0.75}");
	write_file("trials/000002/params.json", "{\"format\":\"aah-params/1\",\"trial_seq\":2,\"parameters\":{}}");
	write_file("trials/000002/result.json", "{\"format\":\"aah-result/1\",\"status\":\"failed\",\"best_val_acc\":0.9}");
	write_file("trials/000003/params.json", "{\"format\":\"aah-params/1\",\"trial_seq\":3,\"parameters\":{}}");
	write_file("trials/000004/trial.log", "nothing proposed yet\n");
	write_file("trials/000010/params.json", "{\"format\":\"aah-params/1\",\"trial_seq\":10,\"parameters\":{}}");
	write_file("trials/000010/result.json", "{\"format\":\"aah-result/1\",\"status\":\"early_stopped\",\"best_val_acc\":0.5}");
	write_file("trials/notatrial/params.json", "{}");
	struct tuner *t;
	struct tuner_config cfg = { .name = "Random", .seed = 1 };
	cr_assert_eq(tuner_create(&t, &cfg), 0);
	cr_assert_eq(tuner_load_history(t, tmpdir), 0, "%s", util_last_error());
	cr_assert_eq(t->nhist, 4);
	cr_assert_eq(t->hist[0].seq, 1);
	cr_assert_eq(t->hist[0].state, TUNER_OBS_DONE);
	cr_assert_float_eq(t->hist[0].metric, 0.75, 1e-12);
	cr_assert_eq(t->hist[1].state, TUNER_OBS_FAILED);
	cr_assert_eq(t->hist[2].state, TUNER_OBS_PENDING);
	cr_assert_eq(t->hist[3].seq, 10);
	cr_assert_eq(t->hist[3].state, TUNER_OBS_DONE);
	/* observing the same trial again updates it in place */
	struct tuner_observation o = { .trial_seq = 3, .state = TUNER_OBS_DONE, .metric = 0.6 };
	cr_assert_eq(tuner_observe(t, &o), 0);
	cr_assert_eq(t->nhist, 4);
	cr_assert_eq(t->hist[2].state, TUNER_OBS_DONE);
	cr_assert_float_eq(t->hist[2].metric, 0.6, 1e-12);
	tuner_free(t);
}

/* The tuner reads a trial's outcome by the one rule (runner/store/outcome.h): the
 * epochs of metrics.jsonl over result.json's figures, and the journal's
 * final state over result.json's status. */
Test(tuner_core, load_history_reads_the_outcome_rule)
{
	write_file("trials/000001/params.json", "{\"format\":\"aah-params/1\",\"trial_seq\":1,\"parameters\":{}}");
	write_file("trials/000001/result.json", "{\"format\":\"aah-result/1\",\"status\":\"succeeded\",\"best_val_acc\":0.91}");
	write_file("trials/000001/metrics.jsonl", "{\"timestamp\":1,\"val_acc\":0.55}\n{\"timestamp\":2,\"val_acc\":0.62}\n");
	write_file("trials/000002/params.json", "{\"format\":\"aah-params/1\",\"trial_seq\":2,\"parameters\":{}}");
	write_file("trials/000002/result.json", "{\"format\":\"aah-result/1\",\"status\":\"succeeded\",\"best_val_acc\":0.8}");
	/* the runner failed trial 2 (its exit status), whatever its result.json says */
	write_file("journal.jsonl",
		   "{\"seq\":0,\"ts\":1,\"event\":\"trial_created\",\"trial_seq\":2}\n"
		   "{\"seq\":1,\"ts\":2,\"event\":\"trial_finished\",\"trial_seq\":2,\"state\":\"failed\"}\n");
	struct tuner *t;
	struct tuner_config cfg = { .name = "Random", .seed = 1 };
	cr_assert_eq(tuner_create(&t, &cfg), 0);
	cr_assert_eq(tuner_load_history(t, tmpdir), 0, "%s", util_last_error());
	cr_assert_eq(t->nhist, 2);
	cr_assert_eq(t->hist[0].state, TUNER_OBS_DONE);
	cr_assert_float_eq(t->hist[0].metric, 0.62, 1e-12);
	cr_assert_eq(t->hist[1].state, TUNER_OBS_FAILED);
	tuner_free(t);
}

/* The tuner learns a trial from its last launch's place (docs/formats.md,
 * "Attempts and their places"), never from what a launch cut off before it
 * wrote in its own, and keeps that place for a child's morph.json. */
Test(tuner_core, load_history_reads_the_last_launchs_place)
{
	write_file("trials/000001/params.json", "{\"format\":\"aah-params/1\",\"trial_seq\":1,\"parameters\":{}}");
	/* attempt 1, cut off, wrote 0.91 in the trial directory; attempt 2 0.62 */
	write_file("trials/000001/result.json", "{\"format\":\"aah-result/1\",\"status\":\"succeeded\",\"best_val_acc\":0.91}");
	write_file("trials/000001/attempt-2/result.json", "{\"format\":\"aah-result/1\",\"status\":\"succeeded\",\"best_val_acc\":0.62}");
	write_file("journal.jsonl",
		   "{\"seq\":0,\"ts\":1,\"event\":\"trial_submitted\",\"trial_seq\":1,\"attempt\":1,\"job\":\"a\",\"slot\":0}\n"
		   "{\"seq\":1,\"ts\":2,\"event\":\"trial_submitted\",\"trial_seq\":1,\"attempt\":2,\"job\":\"b\",\"slot\":0,\"place\":\"attempt-2\"}\n"
		   "{\"seq\":2,\"ts\":3,\"event\":\"trial_finished\",\"trial_seq\":1,\"attempt\":2,\"state\":\"succeeded\"}\n");
	struct tuner *t;
	struct tuner_config cfg = { .name = "Random", .seed = 1 };
	cr_assert_eq(tuner_create(&t, &cfg), 0);
	cr_assert_eq(tuner_load_history(t, tmpdir), 0, "%s", util_last_error());
	cr_assert_eq(t->nhist, 1);
	cr_assert_eq(t->hist[0].state, TUNER_OBS_DONE);
	cr_assert_float_eq(t->hist[0].metric, 0.62, 1e-12);
	cr_assert_str_eq(t->hist[0].place, "attempt-2");
	/* the master tuner's observation names the place the same way */
	struct tuner_observation o = { .trial_seq = 5, .state = TUNER_OBS_DONE, .metric = 0.5 };
	cr_assert_eq(tuner_observe_at(t, &o, "attempt-3.1"), 0);
	cr_assert_str_eq(t->hist[1].place, "attempt-3.1");
	cr_assert_eq(tuner_observe(t, &o), 0);
	cr_assert_str_eq(t->hist[1].place, "", "tuner_observe: the trial directory");
	tuner_free(t);
}

Test(tuner_core, propose_experiment_writes_and_keeps)
{
	cJSON *space = fixture("aiperf-thu-imagenet-search_space.json");
	struct tuner_config cfg = { .name = "Random", .search_space = space, .seed = 9 };
	cr_assert_eq(tuner_propose_experiment(tmpdir, &cfg, 7), 0, "%s", util_last_error());
	char *path = xstrfmt("%s/trials/000007/params.json", tmpdir);
	cJSON *p1 = NULL;
	cr_assert_eq(jsonfile_read(path, &p1), 0);
	cr_assert_eq(jsonfile_check_format("params", p1, "aah-params", 1), 0);
	cr_assert_str_eq(cJSON_GetObjectItem(p1, "tuner")->valuestring, "Random");
	cr_assert_eq(cJSON_GetObjectItem(p1, "trial_seq")->valueint, 7);
	/* a different seed would give another sample, but the proposal is kept */
	cfg.seed = 10;
	cr_assert_eq(tuner_propose_experiment(tmpdir, &cfg, 7), 0);
	cJSON *p2 = NULL;
	cr_assert_eq(jsonfile_read(path, &p2), 0);
	cr_assert(cJSON_Compare(p1, p2, 1));
	char *lock = xstrfmt("%s/tuner.lock", tmpdir);
	cr_assert(fileio_exists(lock));
	/* None writes nothing */
	cfg.name = "None";
	cr_assert_eq(tuner_propose_experiment(tmpdir, &cfg, 8), 0);
	char *p8 = xstrfmt("%s/trials/000008/params.json", tmpdir);
	cr_assert(!fileio_exists(p8));
	cr_assert_eq(tuner_propose_experiment(tmpdir, &cfg, 0), -1);
	free(p8);
	free(lock);
	cJSON_Delete(p1);
	cJSON_Delete(p2);
	free(path);
	cJSON_Delete(space);
}

Test(tuner_core, concurrent_proposers_each_write_one_trial)
{
	cJSON *space = fixture("aiperf-thu-imagenet-search_space.json");
	struct tuner_config cfg = { .name = "Random", .search_space = space, .seed = 5 };
	pid_t pids[4];
	for (int i = 0; i < 4; i++) {
		pids[i] = fork();
		cr_assert(pids[i] >= 0);
		if (pids[i] == 0)
			_exit(tuner_propose_experiment(tmpdir, &cfg, (unsigned)(1 + i % 2)) == 0 ? 0 : 1);
	}
	for (int i = 0; i < 4; i++) {
		int st;
		cr_assert_eq(waitpid(pids[i], &st, 0), pids[i]);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	for (unsigned s = 1; s <= 2; s++) {
		char *path = xstrfmt("%s/trials/%06u/params.json", tmpdir, s);
		cJSON *p = NULL;
		cr_assert_eq(jsonfile_read(path, &p), 0);
		cr_assert_eq(cJSON_GetObjectItem(p, "trial_seq")->valueint, (int)s);
		cJSON_Delete(p);
		free(path);
	}
	cJSON_Delete(space);
}

Test(tuner_core, tpe_checks_optimize_mode)
{
	cJSON *ca = parse("{\"optimize_mode\":\"sideways\"}");
	struct tuner *t;
	struct tuner_config cfg = { .name = "TPE", .class_args = ca };
	cr_assert_eq(tuner_create(&t, &cfg), -1);
	cr_assert_not_null(strstr(util_last_error(), "optimize_mode"));
	cJSON_Delete(ca);
}
