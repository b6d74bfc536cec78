/* Unit tests for runner/pool/ledger.c: the seed scenario through the journal,
 * every reader replaying to the same shares, a torn last line (a writer
 * killed mid-append), experiment-wide priorities, a pool size that does not
 * match, several processes joining at once under the lock, and devices
 * that move only at the shrinker's step boundary (never more held than the
 * pool, no device id held twice). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fileio.h"
#include "runner/pool/ledger.h"
#include "util.h"

static char tmpdir[64];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/aah-ledger-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void teardown(void)
{
	fileio_remove_tree(tmpdir);
}

TestSuite(ledger, .init = setup, .fini = teardown);

static unsigned share_of(struct ledger *l, const char *id)
{
	const struct ledger_training *t = ledger_find(l, id);
	return t ? t->share : 0;
}

/* A fresh reader of the same work directory: what a resumed runner sees. */
static unsigned fresh_share(const char *id)
{
	struct ledger l;
	ledger_init(&l, tmpdir);
	cr_assert_eq(ledger_read(&l), 0);
	unsigned s = share_of(&l, id);
	ledger_release(&l);
	return s;
}

Test(ledger, the_seed_scenario_journaled_and_replayed)
{
	struct ledger l;
	ledger_init(&l, tmpdir);
	cr_assert_eq(ledger_join(&l, 8, "exp1/000001", 5000, 1, 8), 0);
	cr_assert_eq(share_of(&l, "exp1/000001"), 8);
	cr_assert_eq(ledger_join(&l, 8, "exp2/000001", 5000, 1, 8), 0);
	cr_assert_eq(share_of(&l, "exp1/000001"), 4);
	cr_assert_eq(share_of(&l, "exp2/000001"), 4);
	cr_assert_eq(ledger_set_priority(&l, "exp2", 10000), 1);
	cr_assert_eq(share_of(&l, "exp1/000001"), 3);
	cr_assert_eq(share_of(&l, "exp2/000001"), 5);
	cr_assert_eq(fresh_share("exp1/000001"), 3);
	cr_assert_eq(fresh_share("exp2/000001"), 5);
	cr_assert_eq(ledger_leave(&l, "exp1/000001"), 0);
	cr_assert_null(ledger_find(&l, "exp1/000001"));
	cr_assert_eq(share_of(&l, "exp2/000001"), 8);
	cr_assert_eq(fresh_share("exp2/000001"), 8);
	cr_assert_eq(l.allocations, 4);
	ledger_release(&l);

	/* The journal says the same, in order. */
	char *p = xstrfmt("%s/pool/ledger.jsonl", tmpdir), *text;
	size_t len;
	cr_assert_eq(fileio_read(p, 0, &text, &len), 0);
	const char *want[] = {
		"\"shares\":{\"exp1/000001\":8}",
		"\"shares\":{\"exp1/000001\":4,\"exp2/000001\":4}",
		"\"shares\":{\"exp1/000001\":3,\"exp2/000001\":5}",
		"\"shares\":{\"exp2/000001\":8}",
	};
	const char *at = text;
	for (size_t i = 0; i < 4; i++) {
		at = strstr(at, want[i]);
		cr_assert_not_null(at, "allocation %zu (%s) missing or out of order in:\n%s", i,
				   want[i], text);
	}
	free(text);
	free(p);
}

Test(ledger, a_torn_last_line_is_cut_by_the_next_writer)
{
	struct ledger l;
	ledger_init(&l, tmpdir);
	cr_assert_eq(ledger_join(&l, 4, "a/000001", 10, 1, 4), 0);
	char *p = xstrfmt("%s/pool/ledger.jsonl", tmpdir);
	FILE *f = fopen(p, "a");
	fputs("{\"format\":\"aah-ledger/1\",\"seq\":99,\"event\":\"jo", f);   /* killed here */
	fclose(f);
	cr_assert_eq(fresh_share("a/000001"), 4);     /* readers skip the torn line */
	cr_assert_eq(ledger_join(&l, 4, "b/000001", 10, 1, 4), 0);
	cr_assert_eq(fresh_share("a/000001"), 2);
	cr_assert_eq(fresh_share("b/000001"), 2);
	char *text;
	size_t len;
	cr_assert_eq(fileio_read(p, 0, &text, &len), 0);
	cr_assert_null(strstr(text, "\"event\":\"jo\n"));
	cr_assert_null(strstr(text, "\"seq\":99"));
	free(text);
	free(p);
	ledger_release(&l);
}

Test(ledger, an_experiment_priority_covers_its_trainings_to_come)
{
	struct ledger l;
	ledger_init(&l, tmpdir);
	cr_assert_eq(ledger_join(&l, 6, "a/000001", 100, 1, 6), 0);
	cr_assert_eq(ledger_set_priority(&l, "b", 200), 0);      /* none of b's yet */
	cr_assert_eq(ledger_join(&l, 6, "b/000001", 100, 1, 6), 0);
	cr_assert_eq(ledger_find(&l, "b/000001")->priority, 200);
	cr_assert_eq(share_of(&l, "a/000001"), 2);
	cr_assert_eq(share_of(&l, "b/000001"), 4);
	/* a training's own priority wins over its experiment's */
	cr_assert_eq(ledger_set_priority(&l, "b/000001", 100), 1);
	cr_assert_eq(share_of(&l, "b/000001"), 3);
	cr_assert_eq(ledger_set_priority(&l, "b", 0), -1);
	ledger_release(&l);
}

Test(ledger, a_different_pool_size_is_refused)
{
	struct ledger l;
	ledger_init(&l, tmpdir);
	cr_assert_eq(ledger_join(&l, 8, "a/000001", 1, 1, 8), 0);
	cr_assert_eq(ledger_join(&l, 4, "b/000001", 1, 1, 4), -1);
	cr_assert(strstr(util_last_error(), "has 8 devices, this experiment says 4"));
	ledger_release(&l);
}

Test(ledger, applied_devices_are_kept_and_replayed)
{
	struct ledger l;
	ledger_init(&l, tmpdir);
	cr_assert_eq(ledger_join(&l, 8, "a/000001", 1, 1, 8), 0);
	cr_assert_eq(ledger_find(&l, "a/000001")->applied, 0);
	cr_assert_eq(ledger_applied(&l, "a/000001", 8), 0);
	ledger_release(&l);
	ledger_init(&l, tmpdir);
	cr_assert_eq(ledger_read(&l), 0);
	cr_assert_eq(ledger_find(&l, "a/000001")->applied, 8);
	ledger_release(&l);
}

/* Eight processes join at once: the lock serialises them, nothing is lost,
 * every line's seq is distinct, and the last allocation gives 1 each. */
Test(ledger, concurrent_runners_lose_nothing)
{
	enum { N = 8 };
	for (int i = 0; i < N; i++) {
		pid_t pid = fork();
		cr_assert_neq(pid, -1);
		if (pid == 0) {
			struct ledger l;
			ledger_init(&l, tmpdir);
			char id[32];
			snprintf(id, sizeof(id), "e%d/000001", i);
			_exit(ledger_join(&l, N, id, 10, 1, N) == 0 ? 0 : 1);
		}
	}
	for (int i = 0; i < N; i++) {
		int st;
		cr_assert_neq(wait(&st), -1);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	struct ledger l;
	ledger_init(&l, tmpdir);
	cr_assert_eq(ledger_read(&l), 0);
	cr_assert_eq(l.n, N);
	for (size_t i = 0; i < l.n; i++)
		cr_assert_eq(l.t[i].share, 1, "%s has %u", l.t[i].id, l.t[i].share);
	cr_assert_eq(l.next_seq, 1 + N + N);    /* pool, N joins, N allocations */
	ledger_release(&l);
}

/* The devices training id may be launched on now (ledger_claim). */
static unsigned claim(struct ledger *l, const char *id)
{
	unsigned got = 99;
	cr_assert_eq(ledger_claim(l, id, &got), 0);
	return got;
}

/* Every line of the journal leaves the pool with no more devices held than
 * it has, and no device id held by two trainings. */
static int held_within_the_pool(const struct ledger *l, const char *event, double ts,
				const char *training, void *arg)
{
	(void)event;
	(void)ts;
	(void)training;
	unsigned held = 0, *lines = arg;
	if (lines[0]++ < lines[1])
		return 0;   /* lines written the old way, not checked */
	char owner[64] = { 0 };
	for (size_t i = 0; i < l->n; i++) {
		held += l->t[i].applied;
		for (unsigned j = 0; j < l->t[i].applied; j++) {
			unsigned d = l->t[i].ids[j];
			cr_assert_lt(d, l->devices, "line %u: %s holds device %u of %u", *lines,
				     l->t[i].id, d, l->devices);
			cr_assert_eq(owner[d], 0, "line %u: device %u held twice", *lines, d);
			owner[d] = 1;
		}
	}
	cr_assert_leq(held, l->devices, "line %u: %u devices held of %u", *lines, held, l->devices);
	return 0;
}

/* Check every line of the journal from line `from` (0-based) on. */
static unsigned check_journal_from(unsigned from)
{
	struct ledger l;
	unsigned lines[2] = { 0, from };
	ledger_init(&l, tmpdir);
	cr_assert_eq(ledger_history(&l, held_within_the_pool, lines), 0);
	ledger_release(&l);
	return lines[0];
}

static unsigned check_journal(void)
{
	return check_journal_from(0);
}

/* The seed scenario with a slow shrinker: each grower is relaunched (or
 * starts) before the shrinker reached its step boundary. It keeps what it
 * has, or waits at 0, until the shrinker's `applied` gives the devices back;
 * then it gets devices nobody holds. */
Test(ledger, a_grower_waits_for_the_shrinker_to_give_devices_back)
{
	struct ledger l;
	ledger_init(&l, tmpdir);
	cr_assert_eq(ledger_join(&l, 8, "A/000001", 5000, 1, 8), 0);
	cr_assert_eq(claim(&l, "A/000001"), 8);
	/* B arrives: 4/4, but A still runs on 8 until its step boundary */
	cr_assert_eq(ledger_join(&l, 8, "B/000001", 5000, 1, 8), 0);
	cr_assert_eq(share_of(&l, "B/000001"), 4);
	cr_assert_eq(ledger_free_for(&l, "B/000001"), 0);
	cr_assert_eq(claim(&l, "B/000001"), 0);          /* B stays queued */
	cr_assert_eq(claim(&l, "A/000001"), 4);          /* A's step boundary */
	cr_assert_eq(claim(&l, "B/000001"), 4);
	cr_assert_eq(ledger_find(&l, "A/000001")->ids[0], 0);
	cr_assert_eq(ledger_find(&l, "B/000001")->ids[0], 4);
	/* 3/5: B may not grow into the device A still holds */
	cr_assert_eq(ledger_set_priority(&l, "B", 10000), 1);
	cr_assert_eq(ledger_free_for(&l, "B/000001"), 4);
	cr_assert_eq(claim(&l, "B/000001"), 4);          /* relaunched early: keeps 4 */
	cr_assert_eq(claim(&l, "A/000001"), 3);
	cr_assert_eq(ledger_free_for(&l, "B/000001"), 5);
	cr_assert_eq(claim(&l, "B/000001"), 5);
	char *ids = ledger_ids_text(ledger_find(&l, "B/000001"));
	cr_assert_str_eq(ids, "3-7");
	free(ids);
	/* A ends: B grows into all 8 */
	cr_assert_eq(ledger_leave(&l, "A/000001"), 0);
	cr_assert_eq(claim(&l, "B/000001"), 8);
	/* a share of 0 gives the devices back */
	cr_assert_eq(ledger_join(&l, 8, "C/000001", 1000000, 8, 8), 0);
	cr_assert_eq(share_of(&l, "B/000001"), 0);
	cr_assert_eq(claim(&l, "C/000001"), 0);
	cr_assert_eq(claim(&l, "B/000001"), 0);
	cr_assert_eq(claim(&l, "C/000001"), 8);
	ledger_release(&l);
	/* every line of the journal, replayed */
	cr_assert_gt(check_journal(), 15);
}

/* Ledgers written before device ids were journaled replay to ids too: the
 * lowest free, its own kept; and a line's ids that another holds are not
 * taken. */
Test(ledger, applied_lines_without_ids_get_free_ones)
{
	struct ledger l;
	ledger_init(&l, tmpdir);
	cr_assert_eq(ledger_join(&l, 8, "a/000001", 1, 1, 8), 0);
	cr_assert_eq(ledger_join(&l, 8, "b/000001", 1, 1, 8), 0);
	char *p = xstrfmt("%s/pool/ledger.jsonl", tmpdir);
	FILE *f = fopen(p, "a");
	fputs("{\"format\":\"aah-ledger/1\",\"seq\":4,\"ts\":1,\"event\":\"applied\","
	      "\"training\":\"a/000001\",\"devices\":4}\n"
	      "{\"format\":\"aah-ledger/1\",\"seq\":5,\"ts\":2,\"event\":\"applied\","
	      "\"training\":\"b/000001\",\"devices\":4,\"ids\":[0,1,6,7]}\n", f);
	fclose(f);
	free(p);
	cr_assert_eq(ledger_read(&l), 0);
	char *a = ledger_ids_text(ledger_find(&l, "a/000001"));
	char *b = ledger_ids_text(ledger_find(&l, "b/000001"));
	cr_assert_str_eq(a, "0-3");
	cr_assert_str_eq(b, "4-7");
	free(a);
	free(b);
	ledger_release(&l);
	check_journal();
}

/* A ledger from before devices moved at step boundaries can hold more than
 * the pool (A on 8 while B launched on 4): a shrink still goes ahead. */
Test(ledger, a_shrink_goes_ahead_when_the_pool_is_overheld)
{
	struct ledger l;
	ledger_init(&l, tmpdir);
	cr_assert_eq(ledger_join(&l, 8, "A/000001", 5, 1, 8), 0);
	cr_assert_eq(ledger_applied(&l, "A/000001", 8), 0);
	cr_assert_eq(ledger_join(&l, 8, "B/000001", 3, 1, 8), 0);
	cr_assert_eq(ledger_applied(&l, "B/000001", 4), 0);   /* the old runner's way */
	cr_assert_eq(share_of(&l, "A/000001"), 5);
	cr_assert_eq(ledger_free_for(&l, "A/000001"), 4);
	cr_assert_eq(claim(&l, "A/000001"), 5);
	cr_assert_eq(claim(&l, "B/000001"), 3);
	ledger_release(&l);
	check_journal_from(8);   /* from B's claim on: within the pool again */
}
