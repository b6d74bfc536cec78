/* graph.h: the tuner's network graph IR (nodes = tensors with shapes,
 * layers = edges) over common/arch's layer ops and rules, its conversion
 * to and from aah-arch/1, the canonical hash and the distance descriptor. */
#ifndef AAH_TUNER_GRAPH_H
#define AAH_TUNER_GRAPH_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "arch.h" /* struct arch_op, struct arch_shape, the layer rules */

#define TG_MAX_INPUTS 8

/* One layer = one edge set: inputs are node ids, and layer i produces node
 * i + 1 (node 0 is the network input). */
/* How a morphism asks a child to start a layer it added, so that the child
 * computes its parent's function (weight inheritance, morph_record.c). */
enum tg_init {
	TG_INIT_INHERIT = 0,   /* not added by a morphism: the parent's layer */
	TG_INIT_RANDOM,        /* its consumers ignore it at first: any weights */
	TG_INIT_IDENTITY,      /* conv/dense: output channel o = input o; BN: y = x */
	TG_INIT_ZERO,          /* contributes nothing (the branch of an add) */
};

struct tlayer {
	struct arch_op op;
	int nin;
	int in[TG_MAX_INPUTS]; /* input node ids; in[0] is the main path */
	int init;              /* enum tg_init, set by the morphism that added it */
};

struct tgraph {
	struct arch_shape input;
	int num_classes;
	struct tlayer *layers;  /* (nlayers) */
	int nlayers, alayers;
	int output;             /* layer index producing the logits */
	struct arch_shape *shapes; /* (nlayers + 1) node shapes after tgraph_infer */
	int ashapes;
};

#define TGRAPH_INIT { { 4, 0, 0, 0 }, 0, NULL, 0, 0, -1, NULL, 0 }

void tgraph_init(struct tgraph *g, int h, int w, int c, int num_classes);
void tgraph_release(struct tgraph *g);
void tgraph_copy(struct tgraph *dst, const struct tgraph *src);
/* Append a layer; returns its output node id. */
int tgraph_add(struct tgraph *g, const struct tlayer *l);
/* The same for a one-input layer of the format's defaults (arch_op_init)
 * with these fields (0 where the type has none); dropout rate 0.25. */
int tgraph_add1(struct tgraph *g, enum arch_type type, int in, int filters, int kernel, int stride);
/* Make every consumer of node `from` (except layer `except`) read `to`. */
void tgraph_redirect(struct tgraph *g, int from, int to, int except);

/* Check the graph by the format's rules (arch_op_shape): acyclic, every
 * shape valid, output a dense with num_classes units; fills g->shapes.
 * Errors say which layer is wrong. */
int tgraph_infer(struct tgraph *g);
/* The same check without error messages: 1 when valid (shapes filled). */
int tgraph_valid(struct tgraph *g);
/* Topological order of the layers that feed the output (order must hold
 * nlayers ints); returns the count, or -1 on a cycle. */
int tgraph_topo(const struct tgraph *g, int *order);
/* Trainable parameters (after tgraph_infer). */
uint64_t tgraph_params(const struct tgraph *g);
/* Forward FLOPs per image of the conv and dense layers (arch_op_mac_flops);
 * the cost a FLOP limit on proposals compares. */
double tgraph_flops(const struct tgraph *g);
/* Layers reachable from the output. */
int tgraph_size(const struct tgraph *g);
/* Structural hash: equal for graphs that differ only in layer ids/order. */
uint64_t tgraph_hash(const struct tgraph *g);

/* The main chain: from the output back to the input along in[0]; layer
 * indices in forward order into chain (nlayers ints); returns the count. */
int tgraph_main_chain(const struct tgraph *g, int *chain);

/* aah-arch/1 through common/arch. to_arch keeps the layers that feed the
 * output, in a canonical depth-first order, with ids "<type>_<position>";
 * from_arch takes a checked arch. The json forms add `meta` (may be NULL)
 * to the document, and name `file` in errors. */
void tgraph_to_arch(const struct tgraph *g, struct arch *a);
int tgraph_from_arch(struct tgraph *g, const struct arch *a, const char *file);
/* tgraph_to_arch that also tells where each layer went: arch_of (nlayers
 * ints) gets the arch layer index of graph layer i, -1 when it does not
 * feed the output. */
void tgraph_to_arch_map(const struct tgraph *g, struct arch *a, int *arch_of);
cJSON *tgraph_to_json(const struct tgraph *g, const cJSON *meta);
int tgraph_from_json(struct tgraph *g, const cJSON *doc, const char *file);

/* The distance descriptor (NNI's NetworkDescriptor): main-chain layers and
 * skip connections (start node index, end node index, add/concat). */
struct tdesc_layer {
	int8_t type;
	int8_t padding;
	int16_t kernel, stride;
	int32_t filters;
};

struct tdesc_skip {
	int a, b;    /* main-chain node indices */
	int type;    /* ARCH_ADD or ARCH_CONCAT */
};

struct tdesc {
	struct tdesc_layer *layers;  /* (nlayers) */
	int nlayers;
	struct tdesc_skip *skips;    /* (nskips) sorted */
	int nskips;
	uint64_t hash;               /* tgraph_hash of the graph */
	int has_counts;              /* counts[] filled (tdesc_from_graph does) */
	uint16_t counts[ARCH_NTYPES];  /* main-chain layers per type: a distance lower bound */
	int *tok;                    /* (nlayers) tokens in vocab (editdist_vocab_tokens), or NULL */
	const struct editdist_vocab *vocab;
};

int tdesc_from_graph(struct tdesc *d, const struct tgraph *g);
void tdesc_release(struct tdesc *d);

#endif
