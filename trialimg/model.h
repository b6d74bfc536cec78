/* model.h: a checked network (common/arch, aah-arch/1) -> the trainer's
 * topologically sorted layer graph over the op table, its parameters,
 * activations, gradients and optimiser state carved from a few large
 * blocks, and the forward/backward/update passes. */
#ifndef AAH_MODEL_H
#define AAH_MODEL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "arch.h"        /* struct arch, enum arch_type */
#include "kernels/ops.h" /* struct ops_layer, struct ops_ctx */
#include "trialimg/memplan.h" /* struct memplan */

/* Tensor ids: 0 is the network input, t = i + 1 is the output of layer i
 * (in sorted order). */
struct model_layer {
	char *id;                /* arch.json id */
	enum arch_type type;     /* arch.json type; op.cfg.type is the op that runs it */
	int *inputs;             /* (op.n_in) tensor ids */
	int rank2;               /* output is (N, C) */
	struct ops_shape *in_shapes; /* (op.n_in) */
	struct ops_layer op;
	double flops_fwd, flops_bwd; /* per image, AIPerf rules (arch_op_flops) */
	size_t n_weights, n_biases;  /* parameters (decayed, not decayed) */
	int n_users;             /* layers reading this output */
	int fused;               /* relu folded into the batchnorm before it:
				  * act/dact alias that layer's, no op runs */
	float *act, *dact;       /* (batch, out), in layout op.out_layout and
				  * type op.out_type (bf16: 16-bit patterns) */
	enum ops_layout *in_layouts; /* (op.n_in), op.in_layout points here */
	enum ops_dtype *in_types;    /* (op.n_in), op.in_type points here: the
				      * plan's (memplan.type) */
};

#define MODEL_BLOCK_ALIGN 256

struct model {
	struct ops_shape input;
	int num_classes;
	int n_layers;
	struct model_layer *layers;  /* sorted: inputs before users */
	int output;                  /* index of the logits layer */
	double flops_fwd, flops_bwd; /* per image, whole network */
	/* filled by model_alloc: */
	int batch;                   /* capacity */
	size_t n_params, n_decayed;  /* params [0, n_decayed) get weight decay */
	float *params, *grads, *velocity; /* (n_params) each */
	size_t n_stats;
	float *stats;                /* batchnorm running + batch statistics */
	int keep_grads;              /* set before model_alloc: every activation
				      * gradient keeps its own buffer (tests read
				      * them after the backward) */
	int host_input;              /* set before the plan: the batch is handed to
				      * the ops where it lies, never uploaded into
				      * an input slot (bench_train --input pageable) */
	struct memplan_input in;     /* the input slot, where the plan has one
				      * (plan.input): model_forward and
				      * model_backward are handed in.x */
	struct memplan plan;         /* what the block holds, where (memplan.h) */
	void *block;                 /* the plan's one allocation: params, grads,
				      * velocity, stats, then activations, their
				      * gradients, fan-out scratch and dropout masks,
				      * carved as kernels/carve.h does, each region at
				      * a multiple of MODEL_BLOCK_ALIGN; for a device
				      * backend's plan (!plan.on_host) mapped address
				      * space, written only in its state
				      * (model_resident) */
	size_t block_bytes;
	size_t state_bytes;          /* the block's first bytes: params .. stats */
	float *acts, *dacts;         /* the activations and gradients regions */
	size_t n_masks;
	char *scratch;               /* fan-out gradients: (plan.scratch_rows,
				      * scratch_stride bytes) */
	uint8_t *masks;              /* dropout masks: (n_masks) */
	size_t scratch_stride;       /* bytes */
	char *seen;                  /* (n_layers+1) backward bookkeeping */
	int max_in;
	const float **xs;            /* (max_in) input pointers of one op call */
	float **dxs;                 /* (max_in) input-gradient pointers */
	/* the layouts of the tensors (n_layers + 1), picked on the first pass
	 * for the backend, its nhwc_only and its blocked layout (model_layouts) */
	enum ops_layout *layouts;
	const struct ops_backend *layout_be;
	int layout_nhwc_only;
	enum ops_layout layout_blocked;
	double *prof;                /* optional (n_layers, 2): seconds in forward,
				      * backward; set by the caller, who frees it */
};

/* The trainer's model of a checked arch (arch_check), in the arch's order;
 * the model copies what it keeps. model_release frees it. */
void model_build(struct model *m, const struct arch *a);
/* The op that runs layers of an arch type. */
enum ops_type model_op_type(enum arch_type type);
/* arch_parse / arch_load (errors name `what` and the layer) + model_build. */
int model_parse(struct model *m, const cJSON *doc, const char *what);
int model_load(struct model *m, const char *path);
/* A small default CNN for (h, w, c) inputs and `classes` outputs, used when
 * a trial has no arch.json: conv32-bn-relu-maxpool, conv64-bn-relu, global
 * average pool, dense (stable at AIPerf's default learning rate 0.1). Fills
 * a (the caller checks and releases it). */
void model_default_arch(struct arch *a, int h, int w, int c, int classes);
/* Allocate the block for batches of up to `batch` samples as the memory
 * plan places it (memplan_build for no backend, fp32, m->keep_grads) and
 * initialise the parameters from seed (He / Glorot uniform, zero biases,
 * BN 1/0). */
int model_alloc(struct model *m, int batch, uint64_t seed);
/* The same for a plan the caller built for m (memplan_build); the model
 * takes *p over (model_release frees it) and *p is left empty. */
int model_alloc_planned(struct model *m, struct memplan *p, uint64_t seed);
/* Picks each activation's layout for ctx's backend: its blocked layout
 * (ctx->blocked) where the tensor's c is a multiple of the block width, its producer and all its readers
 * take blocked tensors and, for the ops that keep one layout (all but
 * conv2d and global_avg_pool), the other tensors of that op are blocked
 * too; OPS_NHWC everywhere else, so the input, flatten, dense and dropout
 * see NHWC and conversions happen only inside the convolutions at
 * those edges (the rule is memplan_layouts', which the plan sizes those
 * conversions by); and which conv2d biases the backend's batchnorms take
 * (ops_layer.fold_b). model_forward calls it when the backend changes. */
void model_layouts(struct model *m, struct ops_ctx *ctx);
/* Forward n samples of x (n, input) to the logits model_logits(m). */
int model_forward(struct model *m, struct ops_ctx *ctx, const float *x, int n, int train);
const float *model_logits(const struct model *m);
/* Where the loss writes d(loss)/d(logits) for model_backward: the logits'
 * gradient buffer, (batch, classes) fp32, inside the block (on the device
 * for a resident model). */
float *model_dlogits(const struct model *m);
/* Backward from d(loss)/d(logits), (n, classes): fills m->grads.
 * dlogits: model_dlogits(m), where the loss wrote it (nothing is copied),
 * or a host buffer, copied there first. */
int model_backward(struct model *m, struct ops_ctx *ctx, const float *x, int n,
		   const float *dlogits);
/* One SGD step over every parameter (weight decay on weights only). */
int model_update(struct model *m, struct ops_ctx *ctx, float lr, float momentum, float wd);
/* The model's memory kept on ctx's device from now on, where the backend
 * can (ops_resident: cuda), and the parameters' 16-bit twin where it keeps
 * one (ops_twin); call it once the host has written the weights
 * (initialised, inherited or loaded). The host copies of params, grads,
 * velocity and stats are then stale until ops_sync(..., OPS_TO_HOST), and
 * a host write to them needs ops_sync(..., OPS_TO_DEVICE). */
int model_resident(struct model *m, struct ops_ctx *ctx);
void model_release(struct model *m, struct ops_ctx *ctx);
/* Index of a layer by id, -1 when absent. */
int model_find(const struct model *m, const char *id);

#endif
