/* morph.c: network morphisms on the graph IR. Each one edits a copy-safe
 * graph in place, re-infers the shapes and checks the limits; a result that
 * is invalid or too large is undone. */
#include <stdlib.h>
#include <string.h>

#include "morph.h"
#include "util.h"

static const char *const morph_names[MORPH_NKINDS] = {
	[MORPH_DEEPER] = "deeper",
	[MORPH_WIDER] = "wider",
	[MORPH_ADD_SKIP] = "add_skip",
	[MORPH_CONCAT_SKIP] = "concat_skip",
};

const char *morph_name(int kind)
{
	return kind >= 0 && kind < MORPH_NKINDS ? morph_names[kind] : "?";
}

/* Main-chain layers whose outputs are images (before the global pooling).
 * Returns the count; cand gets main-chain layer indices in order. */
static int image_chain(const struct tgraph *g, int *chain, int *cand)
{
	int n = tgraph_main_chain(g, chain), m = 0;
	for (int k = 0; k < n; k++) {
		if (g->shapes[chain[k] + 1].rank != 4)
			break;
		cand[m++] = chain[k];
	}
	return m;
}

static int within(const struct tgraph *g, const struct morph_limits *lim)
{
	if (lim && lim->max_layers > 0 && tgraph_size(g) > lim->max_layers)
		return 0;
	if (lim && lim->max_params > 0 && tgraph_params(g) > lim->max_params)
		return 0;
	if (lim && lim->max_flops > 0 && tgraph_flops(g) > lim->max_flops)
		return 0;
	return 1;
}

static void shuffle(int *a, int n, struct trng *r)
{
	for (int i = n - 1; i > 0; i--) {
		int j = (int)trng_below(r, (uint64_t)i + 1);
		int t = a[i];
		a[i] = a[j];
		a[j] = t;
	}
}

static int deeper(struct tgraph *g, struct trng *r, const int *cand, int m)
{
	static const int kernels[3] = { 1, 3, 5 };
	int nr = 0;
	int *rl = xmalloc((size_t)(m ? m : 1) * sizeof(int));
	for (int k = 0; k < m; k++)
		if (g->layers[cand[k]].op.type == ARCH_RELU)
			rl[nr++] = cand[k];
	if (!nr) {
		free(rl);
		return 1;
	}
	int x = rl[trng_below(r, (uint64_t)nr)] + 1;
	free(rl);
	int c = g->shapes[x].c;
	int conv = tgraph_add1(g, ARCH_CONV2D, x, c, kernels[trng_below(r, 3)], 1);
	g->layers[conv - 1].op.bias = 0;
	g->layers[conv - 1].init = TG_INIT_IDENTITY;
	int bn = tgraph_add1(g, ARCH_BATCHNORM, conv, 0, 0, 0);
	g->layers[bn - 1].init = TG_INIT_IDENTITY;
	int relu = tgraph_add1(g, ARCH_RELU, bn, 0, 0, 0);   /* x >= 0 already: relu(x) = x */
	tgraph_redirect(g, x, relu, conv - 1);
	return 0;
}

/* Double a main-chain conv (not the last one, as NNI's wide_layer_ids). A
 * conv whose channels reach an add cannot be widened alone: undone. */
static int wider(struct tgraph *g, struct trng *r, const int *cand, int m,
		 const struct morph_limits *lim)
{
	int *cv = xmalloc((size_t)(m ? m : 1) * sizeof(int)), nc = 0, rc = 1;
	for (int k = 0; k < m; k++)
		if (g->layers[cand[k]].op.type == ARCH_CONV2D)
			cv[nc++] = cand[k];
	nc--;   /* never the last conv */
	shuffle(cv, nc > 0 ? nc : 0, r);
	for (int k = 0; k < nc && rc == 1; k++) {
		int old = g->layers[cv[k]].op.units;
		if (2 * old > 65536)
			continue;
		g->layers[cv[k]].op.units = 2 * old;
		if (tgraph_valid(g) && within(g, lim)) {
			rc = 0;
			break;
		}
		g->layers[cv[k]].op.units = old;
	}
	free(cv);
	return rc;
}

/* 1x1 stride that maps a's size onto b's with "same" padding, or 0. */
static int match_stride(const struct arch_shape *a, const struct arch_shape *b)
{
	for (int s = 1; s <= 31; s++)
		if ((a->h + s - 1) / s == b->h && (a->w + s - 1) / s == b->w)
			return s;
	return 0;
}

static int skip(struct tgraph *g, int kind, struct trng *r, const int *cand, int m)
{
	int n = m - 1;   /* never from/to the last image layer (NNI: deep ids[:-1]) */
	if (n < 2)
		return 1;
	for (int tries = 0; tries < 8; tries++) {
		int i = (int)trng_below(r, (uint64_t)n), j = (int)trng_below(r, (uint64_t)n);
		if (i == j)
			continue;
		if (i > j) {
			int t = i;
			i = j;
			j = t;
		}
		int a = cand[i], b = cand[j];
		if (g->layers[a].op.type == ARCH_ADD || g->layers[a].op.type == ARCH_CONCAT ||
		    g->layers[b].op.type == ARCH_ADD || g->layers[b].op.type == ARCH_CONCAT)
			continue;
		int start = a + 1, end = b + 1;
		struct arch_shape sa = g->shapes[start], sb = g->shapes[end];
		int s = match_stride(&sa, &sb);
		if (!s)
			continue;
		int relu = tgraph_add1(g, ARCH_RELU, start, 0, 0, 0);
		if (kind == MORPH_ADD_SKIP) {
			int conv = tgraph_add1(g, ARCH_CONV2D, relu, sb.c, 1, s);
			g->layers[conv - 1].init = TG_INIT_ZERO;
			struct tlayer add = { .op.type = ARCH_ADD, .nin = 2, .in = { end, conv } };
			int out = tgraph_add(g, &add);
			tgraph_redirect(g, end, out, out - 1);
		} else {
			int sk = relu;
			if (s > 1) {   /* its consumer starts at zero on it: any weights */
				sk = tgraph_add1(g, ARCH_CONV2D, relu, sa.c, 1, s);
				g->layers[sk - 1].init = TG_INIT_RANDOM;
			}
			struct tlayer cat = { .op.type = ARCH_CONCAT, .nin = 2, .in = { end, sk } };
			int cn = tgraph_add(g, &cat);
			int conv = tgraph_add1(g, ARCH_CONV2D, cn, sb.c, 1, 1);
			/* identity on the main channels, zero on the skip's */
			g->layers[conv - 1].init = TG_INIT_IDENTITY;
			tgraph_redirect(g, end, conv, cn - 1);
		}
		return 0;
	}
	return 1;
}

int morph_apply(struct tgraph *g, int kind, struct trng *r, const struct morph_limits *lim)
{
	if (!g->shapes && tgraph_infer(g) < 0)
		return -1;
	int *chain = xmalloc((size_t)g->nlayers * sizeof(int));
	int *cand = xmalloc((size_t)g->nlayers * sizeof(int));
	int m = image_chain(g, chain, cand), rc;
	if (kind == MORPH_WIDER) {
		rc = wider(g, r, cand, m, lim);   /* checks and undoes itself */
		if (rc == 1)
			tgraph_valid(g);
	} else {
		struct tgraph backup;
		tgraph_copy(&backup, g);
		rc = kind == MORPH_DEEPER ? deeper(g, r, cand, m) : skip(g, kind, r, cand, m);
		if (rc == 0 && !(tgraph_valid(g) && within(g, lim)))
			rc = 1;
		if (rc == 1) {
			tgraph_release(g);
			*g = backup;
		} else {
			tgraph_release(&backup);
		}
	}
	free(cand);
	free(chain);
	return rc;
}

int morph_neighbours(const struct tgraph *g, struct trng *r, const struct morph_limits *lim,
		     int n_max, struct tgraph *out, int *kinds)
{
	int n = 0;
	for (int t = 0; t < 2 * n_max && n < n_max; t++) {
		int kind = (int)trng_below(r, 3);
		if (kind == 2)
			kind = trng_below(r, 2) ? MORPH_CONCAT_SKIP : MORPH_ADD_SKIP;
		tgraph_copy(&out[n], g);
		int rc = morph_apply(&out[n], kind, r, lim);
		if (rc == 0) {
			kinds[n++] = kind;
			continue;
		}
		tgraph_release(&out[n]);
		if (rc < 0)
			return -1;
	}
	return n;
}
