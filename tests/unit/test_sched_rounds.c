/* When the scheduler's loop polls its running trials (sched_round_due,
 * runner/scheduler.c): at the poll interval, at once for an ended child
 * or a journal line, never sooner than three times the last round's
 * looking. Both ways the
 * loop once spun are pinned: a due time a few microseconds after a cheap
 * round (thousands of polls a second beside two trainers), and a due time
 * before the three-times rule allows (a loop that woke with nothing to do
 * until then, at 4,096 running trials). */
#include <criterion/criterion.h>

#include "runner/scheduler_int.h"

/* the local backend's interval; a round that began at 100 s */
#define INTERVAL 0.05
#define LAST 100.0

Test(sched_rounds, a_cheap_round_waits_for_the_interval)
{
	/* two trials: the round looked for 10 us */
	struct sched_rounds r = { INTERVAL, LAST, LAST + 3 * 10e-6 };
	cr_assert_float_eq(sched_round_due(&r, 0), LAST + INTERVAL, 1e-12);
}

Test(sched_rounds, an_ended_child_or_a_journal_line_is_polled_as_soon_as_the_rule_allows)
{
	struct sched_rounds r = { INTERVAL, LAST, LAST + 3 * 10e-6 };
	cr_assert_float_eq(sched_round_due(&r, 1), LAST + 3 * 10e-6, 1e-12);
}

Test(sched_rounds, a_long_look_holds_off_the_interval_and_a_soon_round_alike)
{
	/* thousands of trials: the round looked for 30 ms, so none for 90 */
	struct sched_rounds r = { INTERVAL, LAST, LAST + 0.03 + 3 * 0.03 };
	cr_assert_float_eq(sched_round_due(&r, 0), LAST + 0.12, 1e-12);
	cr_assert_float_eq(sched_round_due(&r, 1), LAST + 0.12, 1e-12);
}

Test(sched_rounds, the_first_round_is_due_at_once)
{
	struct sched_rounds r = { INTERVAL, -INTERVAL, 0 };
	cr_assert_leq(sched_round_due(&r, 0), 0.0);
}
