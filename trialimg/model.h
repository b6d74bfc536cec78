/* model.h: arch.json (aah-arch/1) -> a checked, topologically sorted layer
 * graph with shapes and AIPerf FLOPs, its parameters, activations,
 * gradients and optimiser state carved from a few large blocks, and the
 * forward/backward/update passes over the op table. */
#ifndef AAH_MODEL_H
#define AAH_MODEL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/ops.h" /* struct ops_layer, struct ops_ctx */

/* Tensor ids: 0 is the network input, t = i + 1 is the output of layer i
 * (in sorted order). */
struct model_layer {
	char *id;                /* arch.json id */
	int *inputs;             /* (op.n_in) tensor ids */
	int rank2;               /* output is (N, C) */
	struct ops_shape *in_shapes; /* (op.n_in) */
	struct ops_layer op;
	double flops_fwd, flops_bwd; /* per image, AIPerf rules */
	size_t n_weights, n_biases;  /* parameters (decayed, not decayed) */
	int n_users;             /* layers reading this output */
	int fused;               /* relu folded into the batchnorm before it:
				  * act/dact alias that layer's, no op runs */
	float *act, *dact;       /* (batch, out) */
};

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
	float *acts, *dacts;         /* activations and their gradients */
	float *scratch;              /* fan-out gradients: (max_in, batch, max tensor) */
	uint8_t *masks;              /* dropout masks */
	size_t scratch_stride;
	char *seen;                  /* (n_layers+1) backward bookkeeping */
	int max_in;
	const float **xs;            /* (max_in) input pointers of one op call */
	float **dxs;                 /* (max_in) input-gradient pointers */
	double *prof;                /* optional (n_layers, 2): seconds in forward,
				      * backward; set by the caller, who frees it */
};

/* Parse and check an aah-arch/1 document (`what` names it in errors). Every
 * error names the layer id. The model owns its strings; model_release. */
int model_parse(struct model *m, const cJSON *doc, const char *what);
int model_load(struct model *m, const char *path);
/* A small default CNN for (h, w, c) inputs and `classes` outputs, used when
 * a trial has no arch.json: conv32-bn-relu-maxpool, conv64-bn-relu, global
 * average pool, dense (stable at AIPerf's default learning rate 0.1). The
 * caller frees the document. */
cJSON *model_default_arch(int h, int w, int c, int classes);
/* Allocate the blocks for batches of up to `batch` samples and initialise
 * the parameters from seed (He / Glorot uniform, zero biases, BN 1/0). */
int model_alloc(struct model *m, int batch, uint64_t seed);
/* Forward n samples of x (n, input) to the logits model_logits(m). */
int model_forward(struct model *m, struct ops_ctx *ctx, const float *x, int n, int train);
const float *model_logits(const struct model *m);
/* Backward from d(loss)/d(logits), (n, classes): fills m->grads. */
int model_backward(struct model *m, struct ops_ctx *ctx, const float *x, int n,
		   const float *dlogits);
/* One SGD step over every parameter (weight decay on weights only). */
int model_update(struct model *m, struct ops_ctx *ctx, float lr, float momentum, float wd);
void model_release(struct model *m, struct ops_ctx *ctx);
/* Index of a layer by id, -1 when absent. */
int model_find(const struct model *m, const char *id);

#endif
