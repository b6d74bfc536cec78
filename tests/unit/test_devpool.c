/* Unit tests for runner/pool/devpool.c: the seed scenario of issue 16 (8
 * devices: 8, then 4/4, then 3/5 at priorities 5000/10000, then 0/8), and
 * the edges: more trainings than devices, a minimum above the fair share,
 * every maximum reached, ties. */
#include <criterion/criterion.h>

#include "runner/pool/devpool.h"

#define T(prio, mn, mx, arr) { .priority = (prio), .min = (mn), .max = (mx), .arrival = (arr) }

static unsigned sum(const struct devpool_training *t, size_t n)
{
	unsigned s = 0;
	for (size_t i = 0; i < n; i++)
		s += t[i].share;
	return s;
}

Test(devpool, the_seed_scenario_8_then_4_4_then_3_5_then_0_8)
{
	struct devpool_training one[] = { T(5000, 1, 8, 1) };
	cr_assert_eq(devpool_share(one, 1, 8), 8);
	cr_assert_eq(one[0].share, 8);

	struct devpool_training two[] = { T(5000, 1, 8, 1), T(5000, 1, 8, 2) };
	cr_assert_eq(devpool_share(two, 2, 8), 8);
	cr_assert_eq(two[0].share, 4);
	cr_assert_eq(two[1].share, 4);

	two[1].priority = 10000;       /* 1/3 and 2/3 of 8: 2.67 and 5.33 */
	cr_assert_eq(devpool_share(two, 2, 8), 8);
	cr_assert_eq(two[0].share, 3);
	cr_assert_eq(two[1].share, 5);

	/* training 1 ends: training 2 alone grows to 8 */
	cr_assert_eq(devpool_share(&two[1], 1, 8), 8);
	cr_assert_eq(two[1].share, 8);
}

Test(devpool, more_trainings_than_devices_admits_by_priority_then_arrival)
{
	struct devpool_training t[] = {
		T(100, 1, 4, 1), T(100, 1, 4, 2), T(300, 1, 4, 3), T(100, 1, 4, 4), T(200, 1, 4, 5),
	};
	cr_assert_eq(devpool_share(t, 5, 3), 3);
	cr_assert_eq(t[2].share, 1);   /* highest priority */
	cr_assert_eq(t[4].share, 1);   /* next */
	cr_assert_eq(t[0].share, 1);   /* the earliest of the equal rest */
	cr_assert_eq(t[1].share, 0);
	cr_assert_eq(t[3].share, 0);
}

Test(devpool, a_minimum_above_the_fair_share_is_honoured_and_the_rest_split)
{
	/* fair share would be 2 each; the first needs 5 */
	struct devpool_training t[] = { T(100, 5, 8, 1), T(100, 1, 8, 2), T(100, 1, 8, 3), T(100, 1, 8, 4) };
	cr_assert_eq(devpool_share(t, 4, 8), 8);
	cr_assert_eq(t[0].share, 5);
	cr_assert_eq(t[1].share + t[2].share + t[3].share, 3);
	cr_assert_eq(t[1].share, 1);
	cr_assert_eq(t[2].share, 1);
	cr_assert_eq(t[3].share, 1);
}

Test(devpool, a_minimum_that_does_not_fit_waits_and_a_smaller_one_goes_first)
{
	struct devpool_training t[] = { T(100, 6, 8, 1), T(900, 4, 8, 2), T(50, 2, 2, 3) };
	cr_assert_eq(devpool_share(t, 3, 8), 8);
	cr_assert_eq(t[0].share, 0);   /* 4 + 6 > 8 */
	cr_assert_eq(t[1].share, 6);   /* 8 * 900/950 = 7.6, but 2 are the third's minimum */
	cr_assert_eq(t[2].share, 2);
}

Test(devpool, every_maximum_reached_leaves_devices_idle)
{
	struct devpool_training t[] = { T(100, 1, 2, 1), T(900, 1, 3, 2) };
	cr_assert_eq(devpool_share(t, 2, 8), 5);
	cr_assert_eq(t[0].share, 2);
	cr_assert_eq(t[1].share, 3);
}

Test(devpool, a_maximum_cut_gives_the_rest_to_the_others)
{
	/* 8 * 3/4 = 6 for the first, but its max is 2: the other gets 6 */
	struct devpool_training t[] = { T(300, 1, 2, 1), T(100, 1, 8, 2) };
	cr_assert_eq(devpool_share(t, 2, 8), 8);
	cr_assert_eq(t[0].share, 2);
	cr_assert_eq(t[1].share, 6);
}

Test(devpool, equal_remainders_go_to_the_earlier_arrival)
{
	struct devpool_training t[] = { T(1, 1, 8, 3), T(1, 1, 8, 1), T(1, 1, 8, 2) };
	cr_assert_eq(devpool_share(t, 3, 8), 8);
	cr_assert_eq(t[1].share, 3);
	cr_assert_eq(t[2].share, 3);
	cr_assert_eq(t[0].share, 2);
}

Test(devpool, shares_always_sum_to_the_pool_when_maxima_allow)
{
	for (unsigned devices = 1; devices <= 16; devices++) {
		for (long p = 1; p <= 7; p++) {
			struct devpool_training t[] = { T(p, 1, 16, 1), T(3, 1, 16, 2), T(5, 1, 16, 3) };
			unsigned given = devpool_share(t, 3, devices);
			cr_assert_eq(given, devices, "devices %u p %ld", devices, p);
			cr_assert_eq(sum(t, 3), devices);
		}
	}
}

Test(devpool, no_trainings_and_an_empty_pool)
{
	cr_assert_eq(devpool_share(NULL, 0, 8), 0);
	struct devpool_training t[] = { T(1, 1, 1, 1) };
	cr_assert_eq(devpool_share(t, 1, 0), 0);
	cr_assert_eq(t[0].share, 0);
}
