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
/* The same, exact when <= bound, otherwise some value > bound (the
 * matching is skipped when its floor is past the bound). */
double editdist_skips_bounded(const struct tdesc *a, const struct tdesc *b, double bound);
/* NNI's edit_distance(a, b). */
double editdist(const struct tdesc *a, const struct tdesc *b);
/* editdist, exact when <= bound, otherwise some value > bound; *layers (may
 * be NULL) gets the layer part under the same rule. */
double editdist_bounded(const struct tdesc *a, const struct tdesc *b, double bound, double *layers);

/* The distinct main-chain layers a search meets, each a token, and the
 * substitution cost (editdist_layer) of every pair: a cell of the distance
 * table is then one load, not a comparison of layers that branches on
 * their type and shape (a search of ResNet-50 morphs met at most 48 distinct
 * layers in 10,000 trials). */
#define EDITDIST_VOCAB_MAX 1024   /* a tuner's vocabulary: 8 MB of costs at most */
struct editdist_vocab {
	struct tdesc_layer *layer;  /* (n) by token */
	double *cost;               /* (cap x cap) cost of tokens a, b at [a * cap + b] */
	int *slot;                  /* (nslot) open addressing: token + 1, 0 empty */
	int n, cap, max, nslot;
};
void editdist_vocab_init(struct editdist_vocab *v, int max);
/* The token of l, a new one when it is new; -1 past max tokens. */
int editdist_vocab_token(struct editdist_vocab *v, const struct tdesc_layer *l);
/* Token d's layers (d->tok, d->vocab). Past max distinct layers d keeps
 * none, and its distances take each pair's own vocabulary (slower, the
 * same values). */
void editdist_vocab_tokens(struct editdist_vocab *v, struct tdesc *d);
void editdist_vocab_release(struct editdist_vocab *v);

/* Minimum-cost assignment of an n x m cost matrix (row-major), matching
 * min(n, m) pairs; returns the total cost. */
double editdist_assignment(const double *cost, int n, int m);

#endif
