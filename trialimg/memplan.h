/* memplan.h: the memory plan of a training step: every buffer the model
 * needs for a batch, sized and placed from the layer graph before anything
 * is allocated, as the regions of one block (kernels/carve.h).
 *
 * What it keeps (docs/trainer.md, "Memory"):
 * - parameters, their gradients, the optimiser's velocities and the
 *   batchnorm statistics: fixed, fp32;
 * - activations and their gradients in ctx->act_type (bf16 under the CPU
 *   backend's bf16) where the tensor's producer and every reader take it
 *   (ops_layer_ops.bf16; an op of one type, all but conv2d and
 *   global_avg_pool, has all its tensors in one), fp32 elsewhere: the
 *   network's input and the logits always (memplan.type);
 * - each layer's output that is not a fused relu's (a fused relu's output
 *   is its batchnorm's or add's, in place): the forward writes it and the
 *   backward reads it (every op's backward is handed x and y);
 * - but an output the backend can recompute (ops_layer_ops.recompute: the
 *   CPU's batchnorm) whose input is kept is not kept: its buffer lives, as
 *   a gradient does, from its last reader to itself, in the forward and
 *   again in the backward, where it is recomputed before the backward of
 *   the last reader that reads it (ops_layer_ops.backward_skips: an add
 *   reads no input), or not at all; such buffers whose lives do not
 *   overlap share bytes;
 * - each output's gradient only while it is live: from the backward of
 *   its last reader (which writes it first) to its producer's backward
 *   (which reads it last); buffers whose lives do not overlap share bytes;
 * - the fan-out scratch: a later reader's part of the gradient of a tensor
 *   with several readers, added into the first one's;
 * - the masks (dropout's; max pooling's argmax where the backend keeps
 *   it, ops_layer_ops.keeps_mask) and the workspace the backend keeps per
 *   layer (ops_layer_ops.workspace);
 * - where the backend uploads the batch (ops_backend.upload: a device),
 *   the input slot: the batch in the type the first layers read (bf16
 *   where all of them take it), its labels, the step's variables, and
 *   their fp32 upload (memplan_input). */
#ifndef AAH_MEMPLAN_H
#define AAH_MEMPLAN_H

#include <stddef.h>
#include <stdio.h>

#include "kernels/carve.h"
#include "kernels/ops.h" /* enum ops_dtype */

struct model;
struct ops_ctx;

/* The block's regions, in order. */
enum {
	MEMPLAN_PARAMS,
	MEMPLAN_GRADS,
	MEMPLAN_VELOCITY,
	MEMPLAN_STATS,
	MEMPLAN_ACTS,
	MEMPLAN_DACTS,
	MEMPLAN_SCRATCH,
	MEMPLAN_MASKS,
	MEMPLAN_INPUT,
	MEMPLAN_NREGIONS
};

/* The input slot of a backend that uploads the batch (ops_backend.upload):
 * where the model reads it, inside the block. */
struct memplan_input {
	void *x;                       /* (batch, input) of type */
	enum ops_dtype type;           /* the first layers' (bf16 where they all take it) */
	struct ops_step_vars *vars;    /* and right after them: */
	int *labels;                   /* (batch) */
	void *staging;                 /* fp32 x, vars, labels: what the upload copies in */
};

struct memplan {
	int batch;
	enum ops_dtype *type;    /* (n_layers + 1) each tensor's type, the
				  * network's input first: its output's and its
				  * gradient's (ops_layer.in_type, out_type) */
	int n_layers;
	int n_bf16;              /* how many of the layers' outputs are bf16 */
	struct carve lay;        /* the block: MEMPLAN_* regions */
	size_t *act_off;         /* (n_layers) byte offset of each output in
				  * MEMPLAN_ACTS; a fused relu: its producer's */
	size_t *dact_off;        /* (n_layers) the same for the gradients, in
				  * MEMPLAN_DACTS */
	size_t scratch_stride;   /* bytes per fan-out scratch row */
	int scratch_rows;
	size_t workspace;        /* bytes the backend's ops allocate for the
				  * batch beyond workspace_fixed (outside the
				  * block; ops_layer_ops.workspace) */
	size_t workspace_fixed;  /* the part that does not grow with the batch
				  * (weights in the kernels' layout) */
	size_t host;             /* host memory of the step outside the model:
				  * the loaders' batches and the logits' gradient */
	int on_host;             /* the backend computes in host memory: host
				  * counts in memplan_total */
	size_t dacts_unshared;   /* the gradients' bytes without sharing */
	int *rec_last;           /* (n_layers) a recomputed output: its last
				  * reader, where its buffer's life ends; -1:
				  * kept */
	int *rec_at;             /* (n_layers) the layer before whose backward
				  * it is recomputed: the last reader whose
				  * backward reads it, else itself where its own
				  * backward reads it; -1: none does (or kept) */
	char *masked;            /* (n_layers) the layer keeps a byte per output
				  * value from its forward to its backward
				  * (ops_layer.mask: dropout, and max pooling
				  * where the op keeps its argmax) */
	size_t acts_kept;        /* MEMPLAN_ACTS: the kept outputs' bytes, then
				  * the recomputed ones' */
	int max_batch;           /* the largest batch the backend's ops take
				  * (ops_layer_ops.max_batch; 0: no limit) */
	int input;               /* the backend uploads the batch into the
				  * block's input slot (MEMPLAN_INPUT), where
				  * the model reads it: ctx's backend has
				  * ops_backend.upload and the model's
				  * host_input is not set */
	size_t acts_recomputed_unshared; /* theirs without sharing */
};

/* Plans m (model_build'ed) for batches of up to `batch` on ctx's backend
 * under its settings (be, conv_type, conv_algo: it need not be started;
 * NULL: no backend, no workspace counted, nothing recomputed). keep_grads:
 * every output and gradient keeps its own buffer (tests that read them
 * after the backward). -1 (after error()) when a size
 * overflows. memplan_release frees it. */
int memplan_build(struct memplan *p, const struct model *m, int batch, const struct ops_ctx *ctx,
		  int keep_grads);
void memplan_release(struct memplan *p);
/* The input slot's pieces in region (the block's MEMPLAN_INPUT); all NULL
 * where the plan has none (p->input 0). */
void memplan_input(const struct memplan *p, const struct model *m, void *region,
		   struct memplan_input *in);
/* Bytes of the block's regions MEMPLAN_PARAMS..MEMPLAN_STATS (with their
 * alignment): what does not depend on the batch. */
size_t memplan_fixed(const struct memplan *p);
/* Everything the plan allocates in the backend's memory: the block, the
 * backend's workspace and, for a host backend, the host buffers. */
size_t memplan_total(const struct memplan *p);
/* The largest batch in [1, batch] whose plan's total fits in `limit`
 * bytes and that the backend's ops take (memplan.max_batch); 0 when not
 * even 1 does (or on error, after error()). */
int memplan_max_batch(const struct model *m, int batch, const struct ops_ctx *ctx, size_t limit);

/* The layout of each tensor of m on ctx's backend (n_layers + 1 into lay,
 * the network's input first): the rule model_layouts applies (model.h),
 * which the plan sizes the convolutions' conversions at NHWC edges by. */
void memplan_layouts(const struct model *m, const struct ops_ctx *ctx, enum ops_layout *lay);
/* The plan in bytes per image by kind and fixed bytes, for --plan; ctx:
 * the one it was built for. */
void memplan_print(const struct memplan *p, const struct ops_ctx *ctx, FILE *out);

#endif
