/* Unit tests for kernels/loss_scale: the dynamic loss scale of fp16
 * training grows after a run of good steps, backs off and skips the step on
 * inf/NaN, stays within its bounds, and refuses bad settings. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "kernels/loss_scale.h"
#include "util.h"

Test(loss_scale, grows_after_the_interval_and_backs_off_on_overflow)
{
	struct loss_scale s;
	cr_assert_eq(loss_scale_init(&s, 65536, 3), 0);
	cr_assert_eq(loss_scale_update(&s, 1), 1);
	cr_assert_eq(loss_scale_update(&s, 1), 1);
	cr_assert_eq(s.scale, 65536);
	cr_assert_eq(loss_scale_update(&s, 1), 1);        /* third good step: doubles */
	cr_assert_eq(s.scale, 131072);
	cr_assert_eq(loss_scale_update(&s, 1), 1);
	cr_assert_eq(loss_scale_update(&s, 1), 1);
	cr_assert_eq(loss_scale_update(&s, 0), 0);        /* overflow: skipped, halved */
	cr_assert_eq(s.scale, 65536);
	/* the run of good steps starts again after a backoff */
	cr_assert_eq(loss_scale_update(&s, 1), 1);
	cr_assert_eq(loss_scale_update(&s, 1), 1);
	cr_assert_eq(s.scale, 65536);
	cr_assert_eq(loss_scale_update(&s, 1), 1);
	cr_assert_eq(s.scale, 131072);
	cr_assert_eq(s.steps, 9);
	cr_assert_eq(s.skipped, 1);
}

Test(loss_scale, stays_within_its_bounds)
{
	struct loss_scale s;
	cr_assert_eq(loss_scale_init(&s, 4, 1), 0);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(loss_scale_update(&s, 0), 0);
	cr_assert_eq(s.scale, 1);                         /* floor: 1, every step still skipped */
	cr_assert_eq(s.skipped, 10);
	for (int i = 0; i < 40; i++)
		cr_assert_eq(loss_scale_update(&s, 1), 1);
	cr_assert_eq(s.scale, 16777216.0f);               /* ceiling: 2^24 */
}

Test(loss_scale, finds_inf_and_nan)
{
	float g[5] = { 0, -1e-30f, 65504, 3, 1 };
	cr_assert_eq(loss_scale_finite(g, 5), 1);
	cr_assert_eq(loss_scale_finite(g, 0), 1);
	g[4] = INFINITY;
	cr_assert_eq(loss_scale_finite(g, 5), 0);
	cr_assert_eq(loss_scale_finite(g, 4), 1);
	g[0] = NAN;
	cr_assert_eq(loss_scale_finite(g, 1), 0);
	g[0] = -INFINITY;
	cr_assert_eq(loss_scale_finite(g, 1), 0);
}

Test(loss_scale, refuses_bad_settings)
{
	struct loss_scale s;
	util_set_quiet(1);
	cr_assert_lt(loss_scale_init(&s, 0.5f, 10), 0);
	cr_assert(strstr(util_last_error(), "initial loss scale 0.5"));
	cr_assert_lt(loss_scale_init(&s, NAN, 10), 0);
	cr_assert_lt(loss_scale_init(&s, 1e9f, 10), 0);
	cr_assert_lt(loss_scale_init(&s, 1024, 0), 0);
	cr_assert(strstr(util_last_error(), "growth interval 0"));
}
