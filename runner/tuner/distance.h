/* distance.h: NNI's edit distance between network descriptors: Levenshtein
 * over main-chain layers with NNI's substitution costs, plus KERNEL_LAMBDA x
 * the Hungarian-matched skip-connection distance. Bounded variants stop
 * early once the result is known to exceed a bound. */
#ifndef AAH_TUNER_DISTANCE_H
#define AAH_TUNER_DISTANCE_H

#include "graph.h"

#define EDITDIST_KERNEL_LAMBDA 1.0

/* Substitution cost of two main-chain layers (0..1). */
double editdist_layer(const struct tdesc_layer *a, const struct tdesc_layer *b);
/* Full Levenshtein distance over main-chain layers. */
double editdist_layers(const struct tdesc *a, const struct tdesc *b);
/* Banded (Ukkonen) version: exact when the distance is <= bound, otherwise
 * some value > bound. */
double editdist_layers_bounded(const struct tdesc *a, const struct tdesc *b, double bound);
/* Skip-connection distance (Hungarian matching + count difference). */
double editdist_skips(const struct tdesc *a, const struct tdesc *b);
/* NNI's edit_distance(a, b). */
double editdist(const struct tdesc *a, const struct tdesc *b);
/* editdist, exact when <= bound, otherwise some value > bound; *layers (may
 * be NULL) gets the layer part under the same rule. */
double editdist_bounded(const struct tdesc *a, const struct tdesc *b, double bound, double *layers);

/* Minimum-cost assignment of an n x m cost matrix (row-major), matching
 * min(n, m) pairs; returns the total cost. */
double editdist_assignment(const double *cost, int n, int m);

#endif
