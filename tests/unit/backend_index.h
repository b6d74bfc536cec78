/* backend_index.h: Criterion parameters that make one test of each compute
 * backend in ops_backends(), so that a backend that cannot start here is a
 * skip of its own and the others still run. Header only:
 *
 *   ParameterizedTestParameters(suite, name) { return backend_index_params(); }
 *   ParameterizedTest(size_t *b, suite, name) { use(backend_index_get(b)); }
 */
#ifndef AAH_TEST_BACKEND_INDEX_H
#define AAH_TEST_BACKEND_INDEX_H

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "kernels/ops.h" /* ops_backends */

#define BACKEND_INDEX_MAX 16

static size_t backend_index_[BACKEND_INDEX_MAX];

static inline struct criterion_test_params backend_index_params(void)
{
	size_t nb;
	ops_backends(&nb);
	nb = nb < BACKEND_INDEX_MAX ? nb : BACKEND_INDEX_MAX;
	for (size_t i = 0; i < nb; i++)
		backend_index_[i] = i;
	return cr_make_param_array(size_t, backend_index_, nb);
}

/* The backend a test's parameter names; fails the test where the table
 * above was too small to hold every backend. */
static inline const struct ops_backend *backend_index_get(const size_t *b)
{
	size_t nb;
	const struct ops_backend *const *be = ops_backends(&nb);
	cr_assert_leq(nb, BACKEND_INDEX_MAX, "more backends than backend_index.h holds");
	return be[*b];
}

#endif
