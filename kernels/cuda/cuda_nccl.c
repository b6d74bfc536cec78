/* cuda_nccl.c: data parallel on the device: an NCCL communicator per
 * trial, and the gradients' mean over the ranks by ncclAllReduce (ncclAvg).
 *
 * The id of the communicator is rank 0's ncclGetUniqueId, handed to the
 * other ranks by the caller's share() (the trainer's --init_method
 * rendezvous, trialimg/dist.c), so NCCL needs no address of its own.
 * NCCL_COMM_ID, which the runner may set for launchers that want it, is
 * cleared first: with it set, rank 0's NCCL would listen on that address
 * itself, which is the rendezvous's own port.
 *
 * The gradients are where the model keeps them: a host pointer is staged
 * through the arena as every op's is (cuda_backend.c), a device pointer
 * used in place. One process per GPU: CUDA_VISIBLE_DEVICES gives each rank
 * its device (the runner's per-device launch). */
#include <stdlib.h>

#include "kernels/cuda/cuda_ctx.h"

#ifdef AAH_HAVE_NCCL
#include <nccl.h>

#define NCCL_CHECK(call)                                                              \
	do {                                                                          \
		ncclResult_t r_ = (call);                                             \
		if (r_ != ncclSuccess)                                                \
			return error("%s:%d: %s: %s", __FILE__, __LINE__, #call,       \
				     ncclGetErrorString(r_));                         \
	} while (0)

int cuda_comm_init(struct ops_ctx *ctx, int rank, int world,
		   int (*share)(void *arg, void *id, size_t len), void *arg)
{
	struct cuda_ctx *c = cuda_ctx(ctx);
	ncclUniqueId id = {{0}};
	ncclComm_t comm;
	if (c->comm)
		return error("the cuda backend already has a communicator");
	unsetenv("NCCL_COMM_ID");
	if (rank == 0)
		NCCL_CHECK(ncclGetUniqueId(&id));
	if (share(arg, &id, sizeof(id)))
		return -1;
	CUDA_CHECK(cudaSetDevice(c->device));
	NCCL_CHECK(ncclCommInitRank(&comm, world, id, rank));
	c->comm = comm;
	return 0;
}

int cuda_allreduce_mean(struct ops_ctx *ctx, float *buf, size_t count)
{
	struct cuda_ctx *c = cuda_ctx(ctx);
	void *g;
	if (!c->comm)
		return error("allreduce before the NCCL communicator was made");
	if (cuda_begin(ctx) || cuda_out(ctx, buf, count * sizeof(float), 1, &g))
		return -1;
	ledger_launch(&c->ledger, "nccl allreduce", NULL, 2.0 * (double)count * sizeof(float));
	NCCL_CHECK(ncclAllReduce(g, g, count, ncclFloat, ncclAvg, c->comm, c->run.stream));
	return cuda_end(ctx);
}

void cuda_comm_free(struct cuda_ctx *c)
{
	if (c->comm)
		ncclCommDestroy(c->comm);
	c->comm = NULL;
}

#else /* no nccl.h: the trainer's CPU ring averages the gradients */

void cuda_comm_free(struct cuda_ctx *c)
{
	(void)c;
}

#endif
