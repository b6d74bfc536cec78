/* Unit tests for the tuner's edit distance (NNI semantics): hand-computed
 * layer, Levenshtein, skip-connection and Hungarian cases, and the banded
 * version against the full one. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runner/tuner/distance.h"
#include "runner/tuner/morph.h"
#include "util.h"

static struct tdesc_layer conv(int f, int k, int s)
{
	return (struct tdesc_layer){ .type = ARCH_CONV2D, .filters = f, .kernel = (int16_t)k, .stride = (int16_t)s };
}

static struct tdesc_layer plain(int type)
{
	return (struct tdesc_layer){ .type = (int8_t)type };
}

static struct tdesc mk(struct tdesc_layer *l, int n, struct tdesc_skip *s, int ns)
{
	return (struct tdesc){ .layers = l, .nlayers = n, .skips = s, .nskips = ns };
}

Test(tuner_distance, layer_costs)
{
	struct tdesc_layer a = conv(64, 3, 1), b = conv(128, 3, 1), c = conv(64, 5, 2);
	struct tdesc_layer r = plain(ARCH_RELU), bn = plain(ARCH_BATCHNORM);
	struct tdesc_layer p2 = { .type = ARCH_MAXPOOL, .kernel = 2, .stride = 2, .padding = ARCH_VALID };
	struct tdesc_layer p3 = { .type = ARCH_MAXPOOL, .kernel = 3, .stride = 2, .padding = ARCH_VALID };
	struct tdesc_layer ap = { .type = ARCH_AVGPOOL, .kernel = 2, .stride = 2, .padding = ARCH_VALID };
	cr_assert_float_eq(editdist_layer(&a, &a), 0.0, 1e-12);
	cr_assert_float_eq(editdist_layer(&a, &b), 0.5 / 3, 1e-12);
	/* kernel 3 vs 5: 2/5; stride 1 vs 2: 1/2 */
	cr_assert_float_eq(editdist_layer(&a, &c), (0.4 + 0.5) / 3, 1e-12);
	cr_assert_float_eq(editdist_layer(&a, &r), 1.0, 1e-12);
	cr_assert_float_eq(editdist_layer(&r, &bn), 1.0, 1e-12);
	cr_assert_float_eq(editdist_layer(&r, &r), 0.0, 1e-12);
	cr_assert_float_eq(editdist_layer(&p2, &p3), (1.0 / 3) / 3, 1e-12);
	cr_assert_float_eq(editdist_layer(&p2, &ap), 1.0, 1e-12);
}

Test(tuner_distance, levenshtein_hand_cases)
{
	struct tdesc_layer A[] = { plain(ARCH_RELU), plain(ARCH_BATCHNORM), conv(64, 3, 1) };
	struct tdesc_layer B[] = { plain(ARCH_RELU), conv(128, 3, 1) };
	struct tdesc_layer C[] = { plain(ARCH_RELU), plain(ARCH_RELU) };
	struct tdesc a = mk(A, 3, NULL, 0), b = mk(B, 2, NULL, 0), c = mk(C, 2, NULL, 0), e = mk(NULL, 0, NULL, 0);
	/* delete bn (1) + substitute conv 64 -> 128 (1/6) */
	cr_assert_float_eq(editdist_layers(&a, &b), 1.0 + 1.0 / 6, 1e-12);
	cr_assert_float_eq(editdist_layers(&b, &a), 1.0 + 1.0 / 6, 1e-12);
	cr_assert_float_eq(editdist_layers(&e, &c), 2.0, 1e-12);
	/* relu relu vs relu conv: one substitution of cost 1 */
	cr_assert_float_eq(editdist_layers(&b, &c), 1.0, 1e-12);
	cr_assert_float_eq(editdist(&a, &a), 0.0, 1e-12);
}

Test(tuner_distance, skip_hand_cases)
{
	struct tdesc_skip s1[] = { { 1, 4, ARCH_ADD } }, s2[] = { { 2, 4, ARCH_ADD } }, s3[] = { { 1, 4, ARCH_CONCAT } };
	struct tdesc_skip s4[] = { { 1, 4, ARCH_ADD }, { 5, 9, ARCH_ADD } }, s5[] = { { 5, 9, ARCH_ADD } };
	struct tdesc a = mk(NULL, 0, s1, 1), b = mk(NULL, 0, s2, 1), c = mk(NULL, 0, s3, 1);
	struct tdesc d = mk(NULL, 0, s4, 2), e = mk(NULL, 0, s5, 1), none = mk(NULL, 0, NULL, 0);
	/* (|1-2| + |3-2|) / (max(1,2) + max(3,2)) = 2/5 */
	cr_assert_float_eq(editdist_skips(&a, &b), 0.4, 1e-12);
	cr_assert_float_eq(editdist_skips(&a, &c), 1.0, 1e-12);
	/* (5,9) matches (5,9) at 0, plus one unmatched connection */
	cr_assert_float_eq(editdist_skips(&d, &e), 1.0, 1e-12);
	cr_assert_float_eq(editdist_skips(&d, &none), 2.0, 1e-12);
	cr_assert_float_eq(editdist(&d, &e), EDITDIST_KERNEL_LAMBDA * 1.0, 1e-12);
}

Test(tuner_distance, hungarian_hand_cases)
{
	const double sq[] = { 4, 1, 3, 2, 0, 5, 3, 2, 2 };
	cr_assert_float_eq(editdist_assignment(sq, 3, 3), 5.0, 1e-12);
	const double rect[] = { 1, 2, 3, 2, 4, 6 };
	cr_assert_float_eq(editdist_assignment(rect, 2, 3), 4.0, 1e-12);
	const double tall[] = { 1, 2, 2, 4, 3, 6 };
	cr_assert_float_eq(editdist_assignment(tall, 3, 2), 4.0, 1e-12);
}

static double brute(const double *c, int n, int *perm, int k, char *used)
{
	if (k == n) {
		double s = 0;
		for (int i = 0; i < n; i++)
			s += c[i * n + perm[i]];
		return s;
	}
	double best = 1e300;
	for (int j = 0; j < n; j++) {
		if (used[j])
			continue;
		used[j] = 1;
		perm[k] = j;
		double v = brute(c, n, perm, k + 1, used);
		if (v < best)
			best = v;
		used[j] = 0;
	}
	return best;
}

Test(tuner_distance, hungarian_matches_brute_force)
{
	struct trng r;
	trng_seed(&r, 11, 0);
	for (int t = 0; t < 300; t++) {
		int n = 1 + (int)trng_below(&r, 6);
		double c[36];
		int perm[6];
		char used[6] = { 0 };
		for (int i = 0; i < n * n; i++)
			c[i] = trng_below(&r, 3) ? trng_uniform(&r) : 1.0;
		cr_assert_float_eq(editdist_assignment(c, n, n), brute(c, n, perm, 0, used), 1e-9);
	}
}

/* A conv of 16 to 64 filters, kernel 1 or 3, or a plain layer of one of the
 * first four types. */
static struct tdesc_layer random_layer(struct trng *r)
{
	if (trng_below(r, 2))
		return conv(16 << trng_below(r, 3), 1 + 2 * (int)trng_below(r, 2), 1);
	return plain((int)trng_below(r, 4));
}

/* A bounded distance's rule: up to the bound, the full value; past it,
 * some value past it. */
static void check_bounded(double bd, double full, double bound, int *in, int *out)
{
	if (full <= bound) {
		cr_assert_float_eq(bd, full, 1e-9, "bounded %g full %g bound %g", bd, full, bound);
		(*in)++;
	} else {
		cr_assert(bd > bound, "bounded %g <= bound %g but full is %g", bd, bound, full);
		(*out)++;
	}
}

Test(tuner_distance, bounded_agrees_with_full)
{
	struct trng r;
	trng_seed(&r, 5, 0);
	struct tdesc_layer la[40], lb[40];
	int checked_in = 0, checked_out = 0;
	for (int t = 0; t < 3000; t++) {
		int na = (int)trng_below(&r, 40), nb = (int)trng_below(&r, 40);
		if (t % 2) {   /* similar sequences, like morphism relatives */
			nb = na;
		}
		for (int i = 0; i < na; i++)
			la[i] = random_layer(&r);
		for (int i = 0; i < nb; i++)
			lb[i] = (t % 2 && trng_below(&r, 6)) ? la[i] :
				trng_below(&r, 2) ? conv(16 << trng_below(&r, 3), 3, 1) : plain((int)trng_below(&r, 4));
		struct tdesc a = mk(la, na, NULL, 0), b = mk(lb, nb, NULL, 0);
		double full = editdist_layers(&a, &b);
		double bound = 0.5 + (double)trng_below(&r, 10);
		check_bounded(editdist_layers_bounded(&a, &b, bound), full, bound, &checked_in,
			      &checked_out);
	}
	cr_assert(checked_in > 300 && checked_out > 300, "in %d out %d", checked_in, checked_out);
}

/* The skip distance with a bound: the matching's floor (each skip of the
 * smaller side at its cheapest partner) may end it early, but only past
 * the bound; up to it, the same value as the whole matching. And the
 * whole distance with a bound (what the search's kernel rows use), layers
 * and skips together. */
Test(tuner_distance, bounded_skips_agree_with_the_matching)
{
	struct trng r;
	trng_seed(&r, 9, 0);
	struct tdesc_skip sa[20], sb[20];
	struct tdesc_layer la[8], lb[8];
	int checked_in = 0, checked_out = 0, total_in = 0, total_out = 0;
	for (int t = 0; t < 3000; t++) {
		int na = (int)trng_below(&r, 20), nb = (int)trng_below(&r, 20);
		for (int i = 0; i < na + nb; i++) {
			int from = 1 + (int)trng_below(&r, 60);
			struct tdesc_skip k = { from, from + 2 + (int)trng_below(&r, 12),
						trng_below(&r, 4) ? ARCH_ADD : ARCH_CONCAT };
			if (i < na)
				sa[i] = k;
			else   /* a relative: often one of a's moved a little */
				sb[i - na] = (na && trng_below(&r, 2)) ?
					(struct tdesc_skip){ sa[(i - na) % na].a + (int)trng_below(&r, 2),
							     sa[(i - na) % na].b, sa[(i - na) % na].type } : k;
		}
		struct tdesc a = mk(NULL, 0, sa, na), b = mk(NULL, 0, sb, nb);
		double full = editdist_skips(&a, &b);
		double bound = 0.1 * (double)trng_below(&r, 60);
		double bd = editdist_skips_bounded(&a, &b, bound);
		check_bounded(bd, full, bound, &checked_in, &checked_out);
		cr_assert(bd <= full + 1e-9, "bounded %g above the matching's %g", bd, full);
		int nla = (int)trng_below(&r, 8), nlb = (int)trng_below(&r, 8);
		for (int i = 0; i < nla || i < nlb; i++) {
			la[i] = random_layer(&r);
			lb[i] = trng_below(&r, 3) ? la[i] : random_layer(&r);
		}
		struct tdesc c = mk(la, nla, sa, na), d = mk(lb, nlb, sb, nb);
		double tb = 0.25 * (double)trng_below(&r, 40);
		check_bounded(editdist_bounded(&c, &d, tb, NULL), editdist(&c, &d), tb, &total_in,
			      &total_out);
	}
	cr_assert(checked_in > 300 && checked_out > 300, "in %d out %d", checked_in, checked_out);
	cr_assert(total_in > 300 && total_out > 300, "in %d out %d", total_in, total_out);
	/* every pair of another type: the floor (2) is past 1.5 */
	struct tdesc_skip add[] = { { 1, 4, ARCH_ADD }, { 10, 20, ARCH_ADD } };
	struct tdesc_skip cat[] = { { 1, 4, ARCH_CONCAT }, { 10, 20, ARCH_CONCAT } };
	struct tdesc x = mk(NULL, 0, add, 2), y = mk(NULL, 0, cat, 2);
	cr_assert_float_eq(editdist_skips_bounded(&x, &y, 1.5), 2.0, 1e-12);
	cr_assert_float_eq(editdist_skips_bounded(&x, &y, 2.0), 2.0, 1e-12);
}

/* The Levenshtein recurrence as written down, every cell of the table:
 * what the banded, prefix- and suffix-stripping version must equal. */
static double textbook(const struct tdesc *a, const struct tdesc *b)
{
	int na = a->nlayers, nb = b->nlayers;
	double *t = xmalloc((size_t)(na + 1) * (size_t)(nb + 1) * sizeof(double));
#define T(i, j) t[(size_t)(i) * (size_t)(nb + 1) + (size_t)(j)]
	for (int i = 0; i <= na; i++)
		for (int j = 0; j <= nb; j++) {
			if (!i || !j) {
				T(i, j) = i + j;
				continue;
			}
			double v = T(i - 1, j - 1) + editdist_layer(&a->layers[i - 1], &b->layers[j - 1]);
			v = fmin(v, T(i - 1, j) + 1);
			T(i, j) = fmin(v, T(i, j - 1) + 1);
		}
	double r = T(na, nb);
#undef T
	free(t);
	return r;
}

/* Relatives share a prefix and a suffix and differ in between (the common
 * ends are stripped before the table); unrelated pairs share nothing. Every
 * bound: the bounded distance is the textbook one when that is within it.
 * With vocab, the descriptors take their tokens from it, as the tuner's do
 * (a small one: some pairs have them, some not); without, each pair makes
 * its own. *tokened counts the pairs that had them. */
static void check_against_textbook(struct editdist_vocab *vocab, int *tokened)
{
	struct trng r;
	trng_seed(&r, 17, 3);
	struct tdesc_layer la[80], lb[90];
	int within = 0, beyond = 0;
	*tokened = 0;
	for (int t = 0; t < 2000; t++) {
		int na = 1 + (int)trng_below(&r, 79);
		for (int i = 0; i < na; i++)
			la[i] = random_layer(&r);
		int nb = 0;
		if (t % 4) {   /* a relative: a few edits anywhere, some at the ends */
			for (int i = 0; i < na && nb < 88; i++) {
				uint64_t u = trng_below(&r, 20);
				if (u == 0)
					continue;                      /* deleted */
				if (u == 1)
					lb[nb++] = plain(ARCH_RELU);   /* inserted */
				lb[nb++] = u == 2 ? conv(8, 3, 2) : la[i];
			}
		} else {
			nb = (int)trng_below(&r, 80);
			for (int j = 0; j < nb; j++)
				lb[j] = plain((int)trng_below(&r, 4));
		}
		struct tdesc a = mk(la, na, NULL, 0), b = mk(lb, nb, NULL, 0);
		if (vocab) {
			editdist_vocab_tokens(vocab, &a);
			editdist_vocab_tokens(vocab, &b);
			*tokened += a.tok && b.tok;
		}
		double want = textbook(&a, &b);
		cr_assert_float_eq(editdist_layers(&a, &b), want, 1e-9, "na %d nb %d", na, nb);
		cr_assert_float_eq(editdist_layers(&b, &a), want, 1e-9, "na %d nb %d", na, nb);
		for (double bound = 0.5; bound <= 12; bound += 1.5) {
			double got = editdist_layers_bounded(&a, &b, bound);
			if (want <= bound) {
				cr_assert_float_eq(got, want, 1e-9, "bound %g", bound);
				within++;
			} else {
				cr_assert(got > bound, "bounded %g <= bound %g, textbook %g", got, bound, want);
				beyond++;
			}
		}
		free(a.tok);
		free(b.tok);
	}
	cr_assert(within > 1000 && beyond > 1000, "within %d beyond %d", within, beyond);
}

Test(tuner_distance, banded_and_stripped_equal_the_textbook_table)
{
	int tokened;
	check_against_textbook(NULL, &tokened);
	cr_assert_eq(tokened, 0);
}

/* The tuner's way: one vocabulary for every descriptor. It holds 9 of the
 * test's dozen distinct layers, so a pair with one of the others has no
 * tokens and makes its own, and the two meet in one test. */
Test(tuner_distance, a_shared_vocabulary_gives_the_textbook_table)
{
	struct editdist_vocab v;
	int tokened;
	editdist_vocab_init(&v, 9);
	check_against_textbook(&v, &tokened);
	cr_assert_eq(v.n, 9, "tokens %d", v.n);
	cr_assert(tokened > 50 && tokened < 1950, "pairs with tokens: %d of 2000", tokened);
	struct tdesc_layer known = v.layer[3], fresh = conv(4096, 7, 3);
	cr_assert_eq(editdist_vocab_token(&v, &known), 3);
	cr_assert_eq(editdist_vocab_token(&v, &fresh), -1, "past the vocabulary's 9 tokens");
	editdist_vocab_release(&v);
	/* past its first 16 tokens the cost matrix grows: every cost moves */
	editdist_vocab_init(&v, 40);
	for (int f = 1; f <= 40; f++) {
		struct tdesc_layer l = conv(f, f % 2 ? 1 : 3, 1);
		cr_assert_eq(editdist_vocab_token(&v, &l), f - 1);
	}
	for (int a = 0; a < v.n; a++)
		for (int b = 0; b < v.n; b++)
			cr_assert_eq(v.cost[(size_t)a * v.cap + b], editdist_layer(&v.layer[a], &v.layer[b]),
				     "tokens %d, %d", a, b);
	editdist_vocab_release(&v);
}

Test(tuner_distance, morphisms_have_their_expected_distance)
{
	struct tgraph g;
	cr_assert_eq(tmodel_cnn(&g, 28, 1, 10), 0);
	struct tdesc d0;
	tdesc_from_graph(&d0, &g);
	struct trng r;
	trng_seed(&r, 1, 1);
	struct morph_limits lim = { .max_layers = 500, .max_params = 1u << 26 };
	struct tgraph h;
	tgraph_copy(&h, &g);
	cr_assert_eq(morph_apply(&h, MORPH_DEEPER, &r, &lim), 0);
	struct tdesc d1;
	tdesc_from_graph(&d1, &h);
	cr_assert_eq(d1.nlayers, d0.nlayers + 3);
	cr_assert_float_eq(editdist(&d0, &d1), 3.0, 1e-12);
	tgraph_release(&h);
	tdesc_release(&d1);
	/* an add skip adds one main-chain layer and one skip connection */
	tgraph_copy(&h, &g);
	cr_assert_eq(morph_apply(&h, MORPH_ADD_SKIP, &r, &lim), 0);
	tdesc_from_graph(&d1, &h);
	cr_assert_eq(d1.nskips, 1);
	cr_assert_float_eq(editdist(&d0, &d1), 1.0 + EDITDIST_KERNEL_LAMBDA * 1.0, 1e-12);
	cr_assert_float_eq(editdist(&d1, &d0), editdist(&d0, &d1), 1e-12);
	tgraph_release(&h);
	tdesc_release(&d1);
	/* wider doubles one conv: 64 -> 128 costs (64/128)/3 */
	tgraph_copy(&h, &g);
	cr_assert_eq(morph_apply(&h, MORPH_WIDER, &r, &lim), 0);
	tdesc_from_graph(&d1, &h);
	cr_assert_float_eq(editdist(&d0, &d1), 0.5 / 3, 1e-12);
	tgraph_release(&h);
	tdesc_release(&d1);
	tdesc_release(&d0);
	tgraph_release(&g);
}

/* The type-count lower bound must never cut off a distance within the
 * bound: compare descriptors from real graphs with and without counts. */
Test(tuner_distance, type_count_bound_is_safe)
{
	struct trng r;
	trng_seed(&r, 9, 9);
	struct morph_limits lim = { .max_layers = 300, .max_params = 1u << 26 };
	struct tgraph g[40];
	struct tdesc d[40];
	cr_assert_eq(tmodel_cnn(&g[0], 32, 3, 10), 0);
	for (int i = 1; i < 40; i++) {
		tgraph_copy(&g[i], &g[trng_below(&r, (uint64_t)i)]);
		while (morph_apply(&g[i], (int)trng_below(&r, MORPH_NKINDS), &r, &lim) != 0)
			;
	}
	for (int i = 0; i < 40; i++)
		tdesc_from_graph(&d[i], &g[i]);
	for (int i = 0; i < 40; i++)
		for (int j = 0; j < 40; j++) {
			double full = editdist_layers(&d[i], &d[j]);
			for (double bound = 1; bound <= 9; bound += 2) {
				double b = editdist_layers_bounded(&d[i], &d[j], bound);
				if (full <= bound)
					cr_assert_float_eq(b, full, 1e-9);
				else
					cr_assert(b > bound);
			}
		}
	for (int i = 0; i < 40; i++) {
		tdesc_release(&d[i]);
		tgraph_release(&g[i]);
	}
}
