/* cuda_blaslt.c: cuBLASLt loaded with dlopen when the cuda backend opens
 * (cuda_blaslt.h says why). */
#include <dlfcn.h>   /* dlopen, dlerror */
#include <pthread.h> /* pthread_once */
#include <stddef.h> /* offsetof */
#include <stdio.h>
#include <string.h>

#include "kernels/cuda/cuda_blaslt.h"
#include "util.h"

int cuda_blaslt_load(struct cuda_blaslt *t, const char *file)
{
	static const struct {
		const char *name;
		size_t at;      /* the pointer's offset in struct cuda_blaslt */
	} fns[] = {
#define FN(name, field) { #name, offsetof(struct cuda_blaslt, field) }
		FN(cublasLtGetVersion, version),
		FN(cublasLtGetStatusString, status_string),
		FN(cublasLtCreate, create),
		FN(cublasLtDestroy, destroy),
		FN(cublasLtMatmul, matmul),
		FN(cublasLtMatmulAlgoGetHeuristic, algo_heuristic),
		FN(cublasLtMatmulDescCreate, desc_create),
		FN(cublasLtMatmulDescDestroy, desc_destroy),
		FN(cublasLtMatmulDescSetAttribute, desc_set),
		FN(cublasLtMatmulPreferenceCreate, pref_create),
		FN(cublasLtMatmulPreferenceDestroy, pref_destroy),
		FN(cublasLtMatmulPreferenceSetAttribute, pref_set),
		FN(cublasLtMatrixLayoutCreate, layout_create),
		FN(cublasLtMatrixLayoutDestroy, layout_destroy),
#undef FN
	};
	_Static_assert(sizeof(fns) / sizeof(*fns) * sizeof(void (*)(void)) ==
			       sizeof(struct cuda_blaslt),
		       "every entry point of struct cuda_blaslt is in fns[]");
	memset(t, 0, sizeof(*t));
	void *lib = dlopen(file, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *why = dlerror();
		return error("cannot load cuBLASLt ('%s'): %s; the cuda backend needs CUDA %d's "
			     "libraries on the library path (LD_LIBRARY_PATH or ldconfig)",
			     file, why ? why : "dlopen failed", CUBLAS_VER_MAJOR);
	}
	for (size_t i = 0; i < sizeof(fns) / sizeof(*fns); i++) {
		if (util_dlsym(lib, fns[i].name, (char *)t + fns[i].at)) {
			memset(t, 0, sizeof(*t));
			return error("cuBLASLt '%s' has no %s: it is not the library aah was built "
				     "for (CUDA %d)", file, fns[i].name, CUBLAS_VER_MAJOR);
		}
	}
	size_t major = t->version() / 10000;
	if (major != CUBLAS_VER_MAJOR) {
		memset(t, 0, sizeof(*t));
		return error("cuBLASLt '%s' is version %zu.x; aah was built with %d.x's headers: "
			     "rebuild aah, or put CUDA %d's libraries on the library path",
			     file, major, CUBLAS_VER_MAJOR, CUBLAS_VER_MAJOR);
	}
	return 0;
}

/* The process's table and how loading it went (cuda_blaslt_open). */
static struct cuda_blaslt blaslt;
static int blaslt_rc;
static char blaslt_why[512];
static pthread_once_t blaslt_once = PTHREAD_ONCE_INIT;

static void blaslt_load_once(void)
{
	int was = util_hold_errors(1);
	blaslt_rc = cuda_blaslt_load(&blaslt, CUDA_BLASLT_LIB);
	util_hold_errors(was);
	if (blaslt_rc)
		snprintf(blaslt_why, sizeof(blaslt_why), "%s", util_last_error());
}

const struct cuda_blaslt *cuda_blaslt_open(void)
{
	pthread_once(&blaslt_once, blaslt_load_once);
	if (blaslt_rc) {
		error("%s", blaslt_why);
		return NULL;
	}
	return &blaslt;
}

const char *cuda_blaslt_status(cublasStatus_t s)
{
	static _Thread_local char num[40];
	/* a status reaches here only from a call through the loaded table */
	if (blaslt.status_string)
		return blaslt.status_string(s);
	snprintf(num, sizeof(num), "cuBLAS status %d", (int)s);
	return num;
}
