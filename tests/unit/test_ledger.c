/* Unit tests for runner/ledger.c: the seed scenario through the journal,
 * every reader replaying to the same shares, a torn last line (a writer
 * killed mid-append), experiment-wide priorities, a pool size that does not
 * match, and several processes joining at once under the lock. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fileio.h"
#include "runner/ledger.h"
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
