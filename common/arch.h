/* arch.h: aah-arch/1, the network architecture format
 * (docs/schemas/arch.schema.json): the layer types and their names, reading
 * and writing, validation, shape inference, parameter counts and AIPerf's
 * FLOP rules. The tuner's graph and the trainer's model are both built from
 * the struct arch this module reads; no other code knows the format. */
#ifndef AAH_ARCH_H
#define AAH_ARCH_H

#include <cjson/cJSON.h>
#include <stdint.h>

/* Layer types, in the order of the schema's "type" enum. */
enum arch_type {
	ARCH_CONV2D,
	ARCH_BATCHNORM,
	ARCH_RELU,
	ARCH_MAXPOOL,
	ARCH_AVGPOOL,
	ARCH_GLOBAL_AVG_POOL,
	ARCH_DENSE,
	ARCH_DROPOUT,
	ARCH_ADD,
	ARCH_CONCAT,
	ARCH_FLATTEN,
	ARCH_NTYPES
};

enum arch_padding { ARCH_SAME, ARCH_VALID };

/* The file's name of a type ("conv2d"; "?" out of range), and back (-1). */
const char *arch_type_name(int type);
int arch_type_parse(const char *name);

/* What one layer computes: its type and the fields that type has. Fields a
 * type does not have stay 0. */
struct arch_op {
	enum arch_type type;
	int units;                  /* conv2d filters, dense units */
	int kernel, stride;         /* conv2d, maxpool, avgpool */
	enum arch_padding padding;  /* conv2d, maxpool, avgpool */
	int bias;                   /* conv2d, dense: 0 or 1 */
	double rate;                /* dropout */
	double eps, momentum;       /* batchnorm */
};

/* The schema's defaults for a type: bias on, conv2d stride 1 and padding
 * same, pools padding valid (their stride defaults to the kernel, which the
 * caller sets), batchnorm epsilon 1e-5 and momentum 0.9. */
void arch_op_init(struct arch_op *op, enum arch_type type);

/* Shape of one sample: rank 4 is (H, W, C); rank 2 is (C) with h = w = 1. */
struct arch_shape {
	int rank;
	int h, w, c;
};

/* The output shape of op over its n_in input shapes: 0, or -1 when the op
 * does not fit them (input count, ranks, sizes, field ranges); the error,
 * "<what>: <reason>", is reported only when what is not NULL. */
int arch_op_shape(const struct arch_op *op, const struct arch_shape *in, int n_in,
		  struct arch_shape *out, const char *what);
/* Whether op can produce the logits of num_classes classes. */
int arch_op_is_logits(const struct arch_op *op, int num_classes);
/* Trainable parameters of op over input in[0]: weights (conv2d, dense)
 * and the rest (their biases, batchnorm's gamma and beta). */
void arch_op_params(const struct arch_op *op, const struct arch_shape *in, uint64_t *weights,
		    uint64_t *others);
/* 2 FLOPs per multiply-add of a conv2d or dense forward, 0 for other types:
 * the cost tuner.maxFlops bounds. */
double arch_op_mac_flops(const struct arch_op *op, const struct arch_shape *in,
			 const struct arch_shape *out);
/* FLOPs per image by AIPerf's profiler rules (docs/trainer.md,
 * docs/aiperf.md), forward and backward. first_conv: op is the network's
 * first conv2d in topological order, which profiler.py charges half the
 * backward of the others (meant for the conv on the input, which computes no
 * data gradient). */
void arch_op_flops(const struct arch_op *op, const struct arch_shape *in,
		   const struct arch_shape *out, int first_conv, double *fwd, double *bwd);

/* Nodes are tensors: node 0 is the network input, node k + 1 the output of
 * layers[k]. */
struct arch_layer {
	char *id;                   /* the file's id */
	struct arch_op op;
	int n_in;
	int *in;                    /* (n_in) input nodes */
	/* filled by arch_check: */
	struct arch_shape out;
	int pad_t, pad_l, pad_b, pad_r; /* conv2d, pools: "same" split as TensorFlow */
	uint64_t weights, others;   /* arch_op_params */
	double flops_fwd, flops_bwd; /* per image, arch_op_flops */
};

struct arch {
	struct arch_shape input;
	int num_classes;
	int n_layers, alloc;
	struct arch_layer *layers;  /* (n_layers) in file order */
	int output;                 /* index of the layer producing the logits */
	/* filled by arch_check: */
	int *order;                 /* (n_layers) inputs before users, stable in file order */
	double flops_fwd, flops_bwd; /* per image, whole network */
};

#define ARCH_INIT { { 4, 0, 0, 0 }, 0, 0, 0, NULL, -1, NULL, 0, 0 }

/* An empty network on (h, w, c) inputs. */
void arch_init(struct arch *a, int h, int w, int c, int num_classes);
void arch_release(struct arch *a);
/* Append a layer reading the nodes in (copied, as is id); returns its node. */
int arch_add(struct arch *a, const char *id, const struct arch_op *op, int n_in, const int *in);
/* Index of the layer called id, -1 when absent. */
int arch_find(const struct arch *a, const char *id);

/* Read doc into a (which the caller releases, also on error): every field
 * and reference the schema defines, checked. Errors name the file and the
 * layer. */
int arch_read(struct arch *a, const cJSON *doc, const char *file);
/* Check the graph and fill the order, shapes, parameters and FLOPs: acyclic,
 * every layer fits its inputs and reaches the output, and the output gives
 * num_classes logits. Call it again after editing ops. */
int arch_check(struct arch *a, const char *file);
/* arch_read + arch_check; arch_load reads the file first. */
int arch_parse(struct arch *a, const cJSON *doc, const char *file);
int arch_load(struct arch *a, const char *path);

/* The aah-arch/1 document of a (layers in its order, every field, except
 * batchnorm's at their defaults); the caller frees it. */
cJSON *arch_to_json(const struct arch *a);

#endif
