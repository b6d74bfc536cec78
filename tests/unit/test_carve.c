/* Unit tests for kernels/carve: regions of one allocation at aligned
 * offsets, in order, without overlap; bad layouts refused by name; and the
 * model's training state carved so (parameters, gradients, velocities,
 * batchnorm statistics in one block). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/carve.h"
#include "trialimg/model.h"
#include "util.h"

Test(carve, regions_at_aligned_offsets_in_order)
{
	struct carve c;
	cr_assert_eq(carve_init(&c, 256), 0);
	cr_assert_eq(carve_add(&c, "a", 10), 0);
	cr_assert_eq(carve_add(&c, "empty", 0), 1);
	cr_assert_eq(carve_add(&c, "b", 300), 2);
	cr_assert_eq(carve_add(&c, "c", 256), 3);
	cr_assert_eq(c.r[0].offset, 0);
	cr_assert_eq(c.r[1].offset, 256);
	cr_assert_eq(c.r[2].offset, 256);        /* an empty region takes no room */
	cr_assert_eq(c.r[3].offset, 768);        /* 256 + 300 = 556, up to 768 */
	cr_assert_eq(c.total, 1024);
	char *base = (char *)0x10000;
	cr_assert_eq(carve_at(&c, base, 3), base + 768);
	struct carve one;
	cr_assert_eq(carve_init(&one, 1), 0);    /* alignment 1: packed */
	carve_add(&one, "x", 3);
	carve_add(&one, "y", 5);
	cr_assert_eq(one.r[1].offset, 3);
	cr_assert_eq(one.total, 8);
}

Test(carve, bad_layouts_are_refused_by_name)
{
	struct carve c;
	util_set_quiet(1);
	cr_assert_lt(carve_init(&c, 0), 0);
	cr_assert_lt(carve_init(&c, 96), 0);
	cr_assert(strstr(util_last_error(), "alignment 96"));
	cr_assert_eq(carve_init(&c, 256), 0);
	cr_assert_eq(carve_add(&c, "first", 1), 0);
	cr_assert_lt(carve_add(&c, "huge", SIZE_MAX - 100), 0);
	cr_assert(strstr(util_last_error(), "'huge'"));
	cr_assert_eq(c.n, 1);                    /* a refused region leaves the layout as it was */
	cr_assert_eq(c.total, 1);
	for (int i = 1; i < CARVE_MAX; i++)
		cr_assert_eq(carve_add(&c, "more", 8), i);
	cr_assert_lt(carve_add(&c, "one too many", 8), 0);
	cr_assert(strstr(util_last_error(), "'one too many'"));
}

/* The model's state block: four regions in order, aligned, apart, zeroed
 * where training expects zeros (gradients, velocities). */
Test(carve, the_model_state_is_one_block)
{
	struct model m;
	char *p = xstrfmt("%s/tests/fixtures/arch/resnet_small.json",
			  getenv("AAH_ROOT") ? getenv("AAH_ROOT") : ".");
	cr_assert_eq(model_load(&m, p), 0, "%s", util_last_error());
	cr_assert_eq(model_alloc(&m, 2, 1), 0, "%s", util_last_error());
	cr_assert_gt(m.n_params, 0);
	cr_assert_gt(m.n_stats, 0);
	char *b = m.block;
	size_t np = m.n_params * sizeof(float);
	float *const parts[] = { m.params, m.grads, m.velocity, m.stats };
	size_t sizes[] = { np, np, np, m.n_stats * sizeof(float) }, end = 0;
	for (int i = 0; i < 4; i++) {
		size_t off = (size_t)((char *)parts[i] - b);
		cr_assert_eq(off % MODEL_BLOCK_ALIGN, 0, "region %d at %zu", i, off);
		cr_assert_geq(off, end, "region %d overlaps the one before", i);
		end = off + sizes[i];
	}
	cr_assert_leq(end, m.block_bytes);
	for (size_t k = 0; k < m.n_params; k++)
		cr_assert(m.grads[k] == 0 && m.velocity[k] == 0);
	int nonzero = 0;                         /* the initialised weights are there */
	for (size_t k = 0; k < m.n_params; k++)
		nonzero += m.params[k] != 0;
	cr_assert_gt(nonzero, 0);
	model_release(&m, NULL);
	free(p);
}
