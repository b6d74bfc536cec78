/* cuda_ctx.h: private to the cuda backend's C files that talk to the CUDA
 * runtime, cuDNN, cuBLASLt and NCCL (cuda_backend.c, cuda_conv.c,
 * cuda_dense.c, cuda_find.c, cuda_nccl.c): the context behind an op,
 * its staging arena, and the library calls' checks. */
#ifndef AAH_KERNELS_CUDA_CTX_H
#define AAH_KERNELS_CUDA_CTX_H

#include <cudnn.h>

#include "kernels/cuda/cuda_blaslt.h" /* struct cuda_blaslt: cuBLASLt, loaded at run time */

#include "kernels/cuda/cuda.h"

/* One piece of the staging arena: a host tensor's device copy for one op. */
struct cuda_stage {
	const void *host;
	void *dev;
	size_t bytes;
	int out;        /* copied back to host when the op ends */
	int filled;     /* holds the host values (copied in) */
};

#define CUDA_MAX_STAGES 24
#define CUDA_MAX_SPILLS 8
#define CUDA_MAX_MIRRORS 8
#define CUDA_MAX_GRAPHS 4
#define CUDA_MAX_FOUND 512

/* A convolution pass's algorithm as cuDNN measured it (cuda_find.c). */
struct cuda_found {
	char key[400];
	int algo;       /* cudnnConvolution*Algo_t */
	int math;       /* cudnnMathType_t */
	size_t ws;      /* its workspace, bytes */
};

/* A pass of at least this many FLOPs at the batch is measured (cuda_find.c). */
#define CUDA_FIND_FLOPS 2e9

/* Host memory the backend keeps on the device (ops_backend.resident): ops
 * use dev + (p - host) for a pointer p inside it, with no copy. */
struct cuda_mirror {
	char *host, *dev;
	size_t bytes;
};

struct cuda_ctx {
	int device;
	struct cuk_run run;     /* stream, multiprocessors, ledger, the loss's sums */
	struct ops_ledger ledger;
	cudnnHandle_t dnn;
	const struct cuda_blaslt *blas;   /* cuBLASLt's entry points (cuda_blaslt_open) */
	cublasLtHandle_t lt;
	/* the arena: one device block; an op that outgrows it gets spill
	 * blocks, and the next op starts from one block of the total size */
	char *arena, *spill[CUDA_MAX_SPILLS];
	size_t arena_cap, arena_used, arena_want;
	size_t spill_cap, spill_used;   /* of the last spill block */
	int nspill;
	struct cuda_stage st[CUDA_MAX_STAGES];
	int nst;
	void *comm;         /* ncclComm_t of a data-parallel trial (cuda_nccl.c) */
	struct cuda_mirror mirror[CUDA_MAX_MIRRORS];
	int nmirror;
	struct cuda_twins twins;   /* run.twins: the parameters in 16 bits */
	int staged_only;    /* AAH_CUDA_STAGED=1: resident() keeps nothing */
	/* the batch's way in (cuda_upload): two pinned host buffers in turn,
	 * each copied on the copy stream into the model's staging, then taken
	 * into the input slot on the op stream */
	cudaStream_t copy;
	char *pinned[2];
	size_t pinned_cap;
	int turn, used[2];
	cudaEvent_t copied[2];  /* pinned[k]'s copy has landed */
	cudaEvent_t taken;      /* the op stream has read the staging */
	int taken_once;
	const struct ops_step_vars *vars_dev;   /* the last upload's vars, device address */
	/* captured steps (CUDA graphs), by key (the batch size) */
	struct cuda_graph {
		int key;
		cudaGraphExec_t exec;
	} graph[CUDA_MAX_GRAPHS];
	int ngraph;
	/* cuDNN's measured algorithms: the cache file's, and this run's */
	struct cuda_found found[CUDA_MAX_FOUND];
	int nfound, found_loaded;
};

#define CUDNN_CHECK(call)                                                              \
	do {                                                                           \
		cudnnStatus_t s_ = (call);                                             \
		if (s_ != CUDNN_STATUS_SUCCESS)                                        \
			return error("%s:%d: %s: %s", __FILE__, __LINE__, #call,        \
				     cudnnGetErrorString(s_));                         \
	} while (0)
#define CUBLAS_CHECK(call)                                                             \
	do {                                                                           \
		cublasStatus_t s_ = (call);                                            \
		if (s_ != CUBLAS_STATUS_SUCCESS)                                       \
			return error("%s:%d: %s: %s", __FILE__, __LINE__, #call,        \
				     cuda_blaslt_status(s_));                          \
	} while (0)

static inline struct cuda_ctx *cuda_ctx(struct ops_ctx *ctx)
{
	return ctx->priv;
}

static inline cudaStream_t cuda_stream(struct ops_ctx *ctx)
{
	return cuda_ctx(ctx)->run.stream;
}

/* Ops of the cuDNN and cuBLASLt files. */
extern const struct ops_layer_ops cuda_conv_ops;               /* cuda_conv.c (cuDNN) */
extern const struct ops_layer_ops cuda_dense_ops;              /* cuda_dense.c (cuBLASLt) */
/* The math type a convolution runs with, given the one cuDNN's heuristics
 * listed for its algorithm: that one in bf16 and fp16; in fp32 always
 * CUDNN_FMA_MATH (the heuristics' default math would allow TF32, and their
 * ALLOW_CONVERSION fp16: neither meets ref's fp32 tolerance). */
cudnnMathType_t cuda_conv_math(enum ops_dtype type, cudnnMathType_t listed);
/* cuda_find.c: whether a pass of `flops` is measured (AAH_CUDA_FIND), and
 * the measurements kept for this device and cuDNN by the pass's shape
 * (lookup: 1 and *f where there is one). */
int cuda_find_wanted(double flops);
int cuda_find_lookup(struct ops_ctx *ctx, const char *shape, struct cuda_found *f);
void cuda_find_store(struct ops_ctx *ctx, const char *shape, const struct cuda_found *f);
/* NCCL (cuda_nccl.c; NULL in the op table of a build without nccl.h). */
int cuda_comm_init(struct ops_ctx *ctx, int rank, int world,
		   int (*share)(void *arg, void *id, size_t len), void *arg);
int cuda_allreduce_mean(struct ops_ctx *ctx, float *buf, size_t count);
void cuda_comm_free(struct cuda_ctx *c);

#endif
