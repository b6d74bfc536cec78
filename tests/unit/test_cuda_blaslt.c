/* cuBLASLt loaded at run time (kernels/cuda/cuda_blaslt.h): no process
 * maps the library until the cuda backend opens, the table the load fills
 * calls the real library (CUDA's, here, GPU or not), and a library that is
 * missing or is not cuBLASLt is refused with an error that names it. A
 * build without the cuda backend has nothing to load: the suite says so. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#ifdef AAH_HAVE_CUDA
#include "kernels/cuda/cuda_blaslt.h"
#include "kernels/ops.h" /* ops_backend_find: links the whole cuda backend in */

/* Whether this process maps a file whose name holds `name`. */
static int mapped(const char *name)
{
	FILE *f = fopen("/proc/self/maps", "r");
	cr_assert_not_null(f);
	char line[4096];
	int found = 0;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, name) != NULL;
	fclose(f);
	return found;
}

/* Criterion runs each test in a fresh process: this one sees the
 * process as it starts, every linked library mapped. The program holds
 * the cuda backend's table, so every file of the backend: before cuBLASLt
 * was loaded at run time, that linked it, as aah-trial did. */
Test(cuda_blaslt, not_loaded_at_start)
{
	const struct ops_backend *cuda = ops_backend_find("cuda");
	cr_assert(cuda && cuda->layer[OPS_DENSE], "the cuda backend and its dense layer");
	cr_assert(mapped("libcudnn.so"), "cuDNN, linked, is in /proc/self/maps");
	cr_assert(!mapped("libcublasLt"), "libcublasLt is mapped before the backend opened");
}

Test(cuda_blaslt, loads_the_real_library)
{
	struct cuda_blaslt t;
	cr_assert_eq(cuda_blaslt_load(&t, CUDA_BLASLT_LIB), 0, "%s", util_last_error());
	cr_assert(mapped("libcublasLt"));
	void (*fns[sizeof(t) / sizeof(void (*)(void))])(void);
	memcpy(fns, &t, sizeof(t));
	for (size_t i = 0; i < sizeof(fns) / sizeof(*fns); i++)
		cr_assert_not_null(fns[i], "entry point %zu", i);
	cr_assert_eq(t.version() / 10000, (size_t)CUBLAS_VER_MAJOR);
	/* the library's own words for a status: the pointer is its function */
	const char *no = t.status_string(CUBLAS_STATUS_NOT_SUPPORTED);
	cr_assert(no && strstr(no, "not supported"), "%s", no ? no : "(null)");
}

Test(cuda_blaslt, missing_library_named)
{
	struct cuda_blaslt t;
	util_hold_errors(1);
	cr_assert_eq(cuda_blaslt_load(&t, "/nonexistent/libcublasLt.so.13"), -1);
	const char *why = util_last_error();
	cr_assert(strstr(why, "cannot load cuBLASLt ('/nonexistent/libcublasLt.so.13')") &&
		  strstr(why, "No such file") && strstr(why, "LD_LIBRARY_PATH"), "%s", why);
	cr_assert_null(t.matmul);
	cr_assert(!mapped("libcublasLt"));
}

/* A library that loads but is not cuBLASLt (CUDA's runtime): refused by
 * the first function it lacks, the table left empty. */
Test(cuda_blaslt, other_library_refused)
{
	struct cuda_blaslt t;
	util_hold_errors(1);
	cr_assert_eq(cuda_blaslt_load(&t, "libcudart.so"), -1);
	const char *why = util_last_error();
	cr_assert(strstr(why, "cuBLASLt 'libcudart.so' has no cublasLtGetVersion"), "%s", why);
	cr_assert_null(t.version);
	cr_assert_null(t.status_string);
}

/* The process's table: loaded once, the same on every call, and the
 * check macros' status names come from it once it is. */
Test(cuda_blaslt, open_once)
{
	char before[64];
	snprintf(before, sizeof(before), "%s", cuda_blaslt_status(CUBLAS_STATUS_NOT_SUPPORTED));
	cr_assert_str_eq(before, "cuBLAS status 15");
	const struct cuda_blaslt *a = cuda_blaslt_open(), *b = cuda_blaslt_open();
	cr_assert(a && a == b, "%s", util_last_error());
	cr_assert_str_eq(cuda_blaslt_status(CUBLAS_STATUS_NOT_SUPPORTED),
			 a->status_string(CUBLAS_STATUS_NOT_SUPPORTED));
	cr_assert_str_neq(cuda_blaslt_status(CUBLAS_STATUS_NOT_SUPPORTED), before);
}
#else
Test(cuda_blaslt, no_cuda_build)
{
	cr_skip_test("this build has no cuda backend (make config-info): nothing loads cuBLASLt");
}
#endif
