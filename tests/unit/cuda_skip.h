/* cuda_skip.h: what a GPU test does when its backend does not start.
 *
 * - "no CUDA device ..." (no GPU on this machine): the test is skipped,
 *   saying "skipped: no CUDA device ..." - unless AAH_REQUIRE_CUDA is set
 *   (to anything but 0; tests/gpu/lease.sh sets it on the device
 *   machine), where that skip is a failure;
 * - any other start-up error (a cuDNN or library version, a device aah
 *   refuses, an out-of-memory) is a failure always, never a skip or a pass;
 * - a build without the backend: skipped, a failure under AAH_REQUIRE_CUDA.
 *
 * Each ends the test there. */
#ifndef AAH_TESTS_CUDA_SKIP_H
#define AAH_TESTS_CUDA_SKIP_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static inline int cuda_required(void)
{
	const char *v = getenv("AAH_REQUIRE_CUDA");
	return v && *v && strcmp(v, "0");
}

/* GPU backend `backend` did not start (why: its util_last_error()) for
 * `what`, the case being tested. Macros, so that a failure names the
 * test's own line. */
#define cuda_unavailable(backend, why, what)                                                    \
	do {                                                                                    \
		const char *cuda_why_ = (why);                                                  \
		if (strncmp(cuda_why_, "no CUDA device", 14))                                   \
			cr_assert_fail("%s failed to start (not for want of a device): %s: %s", \
				       (backend), cuda_why_, (what));                           \
		if (cuda_required())                                                            \
			cr_assert_fail("AAH_REQUIRE_CUDA=1: skipped: %s [backend %s]: %s",      \
				       cuda_why_, (backend), (what));                           \
		cr_skip_test("skipped: %s [backend %s]: %s", cuda_why_, (backend), (what));     \
	} while (0)

/* This build has no GPU backend (AAH_CUDA=0, or no CUDA where it was built). */
#define cuda_not_built(what)                                                                    \
	do {                                                                                    \
		if (cuda_required())                                                            \
			cr_assert_fail("AAH_REQUIRE_CUDA=1: skipped: the cuda backend is not "  \
				       "built in: %s", (what));                                 \
		cr_skip_test("skipped: the cuda backend is not built in (AAH_CUDA=0 or no "     \
			     "CUDA): %s", (what));                                              \
	} while (0)

#endif
