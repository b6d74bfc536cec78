/* cuda_blaslt.h: cuBLASLt's entry points, loaded at run time.
 *
 * The programs do not link libcublasLt: its start-up (relocating and
 * initialising half a gigabyte of library) cost every process that linked
 * it 0.4 s, aah-trial --help and each unit test's process included, GPU or
 * not. The cuda backend loads it with dlopen when it first opens a context
 * (cuda_open), and the dense layer calls it through this table. The table
 * is filled once per process and never changes after: it holds what the
 * dynamic linker held before, so the contexts share it; the library stays
 * loaded until the process ends (a layer's descriptors may be freed after
 * its context). */
#ifndef AAH_KERNELS_CUDA_BLASLT_H
#define AAH_KERNELS_CUDA_BLASLT_H

#include <cublasLt.h>

/* The library file: libcublasLt.so.<major> of the headers aah built with. */
#define CUDA_BLASLT_STR_(x) #x
#define CUDA_BLASLT_STR(x) CUDA_BLASLT_STR_(x)
#define CUDA_BLASLT_LIB "libcublasLt.so." CUDA_BLASLT_STR(CUBLAS_VER_MAJOR)

/* The functions aah calls, each with its declared type. */
struct cuda_blaslt {
	__typeof__(cublasLtGetVersion) *version;
	__typeof__(cublasLtGetStatusString) *status_string;
	__typeof__(cublasLtCreate) *create;
	__typeof__(cublasLtDestroy) *destroy;
	__typeof__(cublasLtMatmul) *matmul;
	__typeof__(cublasLtMatmulAlgoGetHeuristic) *algo_heuristic;
	__typeof__(cublasLtMatmulDescCreate) *desc_create;
	__typeof__(cublasLtMatmulDescDestroy) *desc_destroy;
	__typeof__(cublasLtMatmulDescSetAttribute) *desc_set;
	__typeof__(cublasLtMatmulPreferenceCreate) *pref_create;
	__typeof__(cublasLtMatmulPreferenceDestroy) *pref_destroy;
	__typeof__(cublasLtMatmulPreferenceSetAttribute) *pref_set;
	__typeof__(cublasLtMatrixLayoutCreate) *layout_create;
	__typeof__(cublasLtMatrixLayoutDestroy) *layout_destroy;
};

/* Fill *t from the library `file` (a name dlopen searches for, or a path):
 * 0, or -1 through error() naming the file and dlopen's reason, a missing
 * function, or a library of another major version than the headers'. The
 * library stays loaded. */
int cuda_blaslt_load(struct cuda_blaslt *t, const char *file);

/* The process's table, loaded from CUDA_BLASLT_LIB on the first call (any
 * thread); NULL after error() when it cannot be, on every call. */
const struct cuda_blaslt *cuda_blaslt_open(void);

/* cuBLASLt's name for s once the library is loaded; its number before. */
const char *cuda_blaslt_status(cublasStatus_t s);

#endif
