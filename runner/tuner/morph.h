/* morph.h: initial models (NNI CnnGenerator, ResNet-50 v1 and v1.5) and network
 * morphisms (deeper, wider, add-skip, concat-skip) on the graph IR. */
#ifndef AAH_TUNER_MORPH_H
#define AAH_TUNER_MORPH_H

#include <stdint.h>

#include "graph.h"
#include "rng.h"

/* NNI's CnnGenerator (model_len 3, width 64): [relu, bn, conv3x3, maxpool]
 * x 3, global_avg_pool, dropout 0.25, dense 64, relu, dense n. */
int tmodel_cnn(struct tgraph *g, int width, int channels, int num_classes);
/* AIPerf's start for ImageNet-sized inputs: ResNet-50 v1 (a downsampling
 * unit strides its first 1x1 convolution), layer for layer what
 * nni_graph_read makes of AIPerf's resnet50.json at 224x224x3 and 1000
 * classes (tests/unit/test_nni_graph.c checks it). */
int tmodel_resnet50(struct tgraph *g, int width, int channels, int num_classes);
/* ResNet-50 v1.5 (stride on the 3x3, no conv bias: torchvision's), chosen
 * by classArgs.start_model "resnet50-v1.5". */
int tmodel_resnet50_v15(struct tgraph *g, int width, int channels, int num_classes);

enum morph_kind { MORPH_DEEPER, MORPH_WIDER, MORPH_ADD_SKIP, MORPH_CONCAT_SKIP, MORPH_NKINDS };

struct morph_limits {
	int max_layers;        /* layers reachable from the output */
	uint64_t max_params;
	double max_flops;      /* tgraph_flops; 0 = no limit */
};

const char *morph_name(int kind);
/* Apply one random morphism of the given kind to g in place. Returns 0 on
 * success (g valid and within the limits), 1 when this kind has no valid
 * application here (g unchanged), -1 on error. */
int morph_apply(struct tgraph *g, int kind, struct trng *r, const struct morph_limits *lim);
/* Up to n_max distinct-kind-random neighbours as NNI's transform(): tries
 * 2 * n_max random morphisms of random kinds. out[] gets initialised
 * graphs (the caller releases them), kinds[] the morphism of each. */
int morph_neighbours(const struct tgraph *g, struct trng *r, const struct morph_limits *lim,
		     int n_max, struct tgraph *out, int *kinds);

#endif
