/* test_tuner_state.c: the tuner state cache of placement: trial
 * (tuner.cache): a proposer that starts from the cache proposes exactly what
 * a full replay proposes, and a cache that is corrupt, truncated, stale, of
 * another experiment, format or configuration is refused, replayed past and
 * rewritten. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "jsonfile.h"
#include "runner/tuner/tuner.h"
#include "util.h"

static char tmpdir[64];
static char *cache;
static cJSON *ca, *sp;
static struct tuner_config cfg;

static void setup(void)
{
	strcpy(tmpdir, "/tmp/aah-tstate-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	cache = xstrfmt("%s/tuner.cache", tmpdir);
	cr_assert_eq(jsonfile_parse("t", "{\"optimize_mode\":\"maximize\",\"input_width\":28,"
				    "\"input_channel\":1,\"n_output_node\":10}", &ca), 0);
	cr_assert_eq(jsonfile_parse("t", "{\"dropout_rate\":{\"_type\":\"uniform\",\"_value\":[0,0.2]}}",
				    &sp), 0);
	cfg = (struct tuner_config){ .name = "NetworkMorphism", .class_args = ca, .search_space = sp,
				     .seed = 5, .threads = 1 };
}

static void teardown(void)
{
	fileio_remove_tree(tmpdir);
	free(cache);
	cJSON_Delete(ca);
	cJSON_Delete(sp);
}

TestSuite(tuner_state, .init = setup, .fini = teardown);

/* Trial seq finishes: every fifth fails, the others score by their seq. */
static void finish(unsigned seq)
{
	char *p = xstrfmt("%s/trials/%06u/result.json", tmpdir, seq);
	char *doc = seq % 5 == 0
		? xstrdup("{\"format\":\"aah-result/1\",\"status\":\"failed\",\"best_val_acc\":0}")
		: xstrfmt("{\"format\":\"aah-result/1\",\"status\":\"succeeded\","
			  "\"best_val_acc\":%.6f}", 0.5 + 0.4 * ((seq * 37) % 11) / 11.0);
	cr_assert_eq(fileio_write_atomic(p, doc, strlen(doc)), 0);
	free(doc);
	free(p);
}

/* A fresh proposer for trial seq, with the cache (key) or replaying (NULL);
 * returns the observations taken from the cache. */
static long propose(const char *key, unsigned seq, cJSON **arch, cJSON **params)
{
	struct tuner *t;
	cr_assert_eq(tuner_create(&t, &cfg), 0, "%s", util_last_error());
	tuner_defer(t);
	cr_assert_eq(tuner_load_history(t, tmpdir), 0, "%s", util_last_error());
	long got = tuner_catch_up(t, key ? cache : NULL, key);
	cr_assert_geq(got, 0, "%s", util_last_error());
	cr_assert_eq(tuner_propose(t, seq, arch, params), 0, "%s", util_last_error());
	tuner_free(t);
	return got;
}

/* The cached proposal for seq equals the replayed one; returns what the
 * cached proposer took from the cache. */
static long same_proposal(const char *key, unsigned seq)
{
	cJSON *a1, *p1, *a2, *p2;
	long got = propose(key, seq, &a1, &p1);
	propose(NULL, seq, &a2, &p2);
	cr_assert(cJSON_Compare(a1, a2, 1), "trial %u: the cached proposer's arch differs", seq);
	cr_assert(cJSON_Compare(p1, p2, 1), "trial %u: the cached proposer's params differ", seq);
	cJSON_Delete(a1);
	cJSON_Delete(p1);
	cJSON_Delete(a2);
	cJSON_Delete(p2);
	return got;
}

/* Propose trials 1..n through `aah-runner propose`'s path, two in flight
 * (trial k finishes when k + 2 is proposed). */
static void grow(unsigned from, unsigned n)
{
	for (unsigned s = from; s <= n; s++) {
		if (s > 2)
			finish(s - 2);
		cr_assert_eq(tuner_propose_cached(tmpdir, "exp-a", &cfg, s), 0, "%s", util_last_error());
	}
}

static cJSON *header(void)
{
	char *data;
	size_t len;
	cr_assert_eq(fileio_read(cache, 0, &data, &len), 0);
	char *nl = strchr(data, '\n');
	cr_assert_not_null(nl);
	*nl = 0;
	cJSON *h = cJSON_Parse(data);
	cr_assert_not_null(h);
	free(data);
	return h;
}

static int observations(void)
{
	cJSON *h = header();
	int n = cJSON_GetObjectItem(h, "observations")->valueint;
	cJSON_Delete(h);
	return n;
}

Test(tuner_state, cached_proposals_equal_a_full_replay)
{
	const unsigned sizes[] = { 3, 9, 24, 45 };
	unsigned done = 0;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		grow(done + 1, sizes[i]);
		done = sizes[i];
		/* trials done - 1 and done are still training: the cache covers
		 * the finished prefix, the proposer replays the two pending */
		cr_assert_eq(observations(), (int)done - 2);
		cr_assert_eq(same_proposal("exp-a", done + 1), (long)done - 2);
	}
	/* a trial in the middle of the prefix finishing late: the prefix stops there */
	finish(done - 1);
	finish(done);
	cr_assert_eq(same_proposal("exp-a", done + 1), (long)done - 2);
	cr_assert_eq(observations(), (int)done);
	cr_assert_eq(same_proposal("exp-a", done + 1), (long)done);
}

static void rewrite_cache(long off, const char *bytes, size_t n, size_t truncate_to)
{
	char *data;
	size_t len;
	cr_assert_eq(fileio_read(cache, 0, &data, &len), 0);
	size_t at = off < 0 ? len + (size_t)off : (size_t)off;
	if (bytes)
		memcpy(data + at, bytes, n);
	cr_assert_eq(fileio_write_atomic(cache, data, truncate_to ? truncate_to : len), 0);
	free(data);
}

/* A refused cache: the proposal is still the replayed one, and the cache is
 * rewritten (the next proposer takes everything from it). */
static void refused(const char *key)
{
	cr_assert_eq(same_proposal(key, 21), 0, "a bad cache was used");
	cr_assert_eq(same_proposal(key, 21), 18, "the cache was not rewritten");
}

Test(tuner_state, corrupt_truncated_or_stale_caches_fall_back_and_are_rewritten)
{
	grow(1, 20);
	cr_assert_eq(same_proposal("exp-a", 21), 18);
	rewrite_cache(-100, "\x7f\x7f\x7f", 3, 0);     /* a flipped payload */
	refused("exp-a");
	char *data;
	size_t len;
	cr_assert_eq(fileio_read(cache, 0, &data, &len), 0);
	free(data);
	rewrite_cache(0, NULL, 0, len - 8);            /* truncated */
	refused("exp-a");
	rewrite_cache(0, NULL, 0, 20);                 /* torn inside the header */
	refused("exp-a");
	cr_assert_eq(fileio_write_atomic(cache, "", 0), 0);
	refused("exp-a");
	/* stale: a finished trial's result changed under the cache */
	char *r = xstrfmt("%s/trials/000004/result.json", tmpdir);
	const char *doc = "{\"format\":\"aah-result/1\",\"status\":\"succeeded\",\"best_val_acc\":0.99}";
	cr_assert_eq(fileio_write_atomic(r, doc, strlen(doc)), 0);
	free(r);
	refused("exp-a");
	/* stale: the cache covers trials the history no longer has */
	char *t18 = xstrfmt("%s/trials/000018", tmpdir);
	char *t19 = xstrfmt("%s/trials/000019", tmpdir);
	char *t20 = xstrfmt("%s/trials/000020", tmpdir);
	cr_assert_eq(fileio_remove_tree(t20), 0);
	cr_assert_eq(fileio_remove_tree(t19), 0);
	cr_assert_eq(fileio_remove_tree(t18), 0);
	cr_assert_eq(same_proposal("exp-a", 21), 0);
	cr_assert_eq(same_proposal("exp-a", 21), 17);
	free(t18);
	free(t19);
	free(t20);
}

Test(tuner_state, another_experiment_format_or_configuration_is_refused)
{
	grow(1, 20);
	cr_assert_eq(same_proposal("exp-b", 21), 0, "another experiment's cache was used");
	cr_assert_eq(same_proposal("exp-b", 21), 18);
	/* another format: the header says so (the checksum covers the payload) */
	cJSON *h = header();
	cr_assert_str_eq(cJSON_GetObjectItem(h, "format")->valuestring, "aah-tuner-state/1");
	cJSON_Delete(h);
	rewrite_cache(strlen("{\"format\":\"aah-tuner-state/"), "2", 1, 0);
	refused("exp-b");
	/* another configuration: a cutoff changes every kernel row */
	cJSON_AddNumberToObject(ca, "distance_cutoff", 4);
	cr_assert_eq(same_proposal("exp-b", 21), 0, "a cache of another configuration was used");
	cr_assert_eq(same_proposal("exp-b", 21), 18);
}
