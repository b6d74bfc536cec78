/* graph.h: the tuner's network graph IR (nodes = tensors with shapes,
 * layers = edges), aah-arch/1 reading and writing, shape inference,
 * parameter counts, the canonical hash and the distance descriptor. */
#ifndef AAH_TUNER_GRAPH_H
#define AAH_TUNER_GRAPH_H

#include <cjson/cJSON.h>
#include <stdint.h>

enum tlayer_type {
	TL_CONV,
	TL_BN,
	TL_RELU,
	TL_MAXPOOL,
	TL_AVGPOOL,
	TL_GAP,
	TL_DENSE,
	TL_DROPOUT,
	TL_ADD,
	TL_CONCAT,
	TL_FLATTEN,
	TL_NTYPES
};

enum { TG_SAME = 0, TG_VALID = 1 };
#define TG_MAX_INPUTS 8

struct tshape {
	int rank;       /* 4: (N, H, W, C); 2: (N, C) */
	int h, w, c;    /* rank 2: c only */
};

/* One layer = one edge set: inputs are node ids, and layer i produces node
 * i + 1 (node 0 is the network input). */
struct tlayer {
	uint8_t type;          /* enum tlayer_type */
	uint8_t nin;
	uint8_t padding;       /* TG_SAME / TG_VALID (conv, pools) */
	uint8_t bias;          /* conv, dense */
	int in[TG_MAX_INPUTS]; /* input node ids; in[0] is the main path */
	int filters;           /* conv filters / dense units */
	int kernel, stride;    /* conv, pools */
	double rate;           /* dropout */
	double eps, momentum;  /* batchnorm; 0 = default */
};

struct tgraph {
	struct tshape input;
	int num_classes;
	struct tlayer *layers;  /* (nlayers) */
	int nlayers, alayers;
	int output;             /* layer index producing the logits */
	struct tshape *shapes;  /* (nlayers + 1) node shapes after tgraph_infer */
	int ashapes;
};

#define TGRAPH_INIT { { 4, 0, 0, 0 }, 0, NULL, 0, 0, -1, NULL, 0 }

void tgraph_init(struct tgraph *g, int h, int w, int c, int num_classes);
void tgraph_release(struct tgraph *g);
void tgraph_copy(struct tgraph *dst, const struct tgraph *src);
/* Append a layer reading node `in0` (and more inputs through l->in); returns
 * its output node id. */
int tgraph_add(struct tgraph *g, const struct tlayer *l);
int tgraph_add1(struct tgraph *g, int type, int in, int filters, int kernel, int stride);
/* Make every consumer of node `from` (except layer `except`) read `to`. */
void tgraph_redirect(struct tgraph *g, int from, int to, int except);

/* Check the graph: acyclic, every shape valid, output a dense with
 * num_classes units; fills g->shapes. Errors say which layer is wrong. */
int tgraph_infer(struct tgraph *g);
/* The same check without error messages: 1 when valid (shapes filled). */
int tgraph_valid(struct tgraph *g);
/* Topological order of the layers that feed the output (order must hold
 * nlayers ints); returns the count, or -1 on a cycle. */
int tgraph_topo(const struct tgraph *g, int *order);
/* Trainable parameters (after tgraph_infer). */
uint64_t tgraph_params(const struct tgraph *g);
/* Forward FLOPs per image of the conv and dense layers (2 per multiply-add,
 * as AIPerf counts them); the cost a FLOP limit on proposals compares. */
double tgraph_flops(const struct tgraph *g);
/* Layers reachable from the output. */
int tgraph_size(const struct tgraph *g);
/* Structural hash: equal for graphs that differ only in layer ids/order. */
uint64_t tgraph_hash(const struct tgraph *g);

/* The main chain: from the output back to the input along in[0]; layer
 * indices in forward order into chain (nlayers ints); returns the count. */
int tgraph_main_chain(const struct tgraph *g, int *chain);

/* aah-arch/1: `meta` (may be NULL) is copied into the document. */
cJSON *tgraph_to_json(const struct tgraph *g, const cJSON *meta);
int tgraph_from_json(struct tgraph *g, const cJSON *doc);

const char *tgraph_type_name(int type);

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
	int type;    /* TL_ADD or TL_CONCAT */
};

struct tdesc {
	struct tdesc_layer *layers;  /* (nlayers) */
	int nlayers;
	struct tdesc_skip *skips;    /* (nskips) sorted */
	int nskips;
	uint64_t hash;               /* tgraph_hash of the graph */
	int has_counts;              /* counts[] filled (tdesc_from_graph does) */
	uint16_t counts[TL_NTYPES];  /* main-chain layers per type: a distance lower bound */
};

int tdesc_from_graph(struct tdesc *d, const struct tgraph *g);
void tdesc_release(struct tdesc *d);

#endif
