/* tpe.c: Tree-structured Parzen Estimator (see tpe.h). */
#include "tpe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct gmm {
	double *w, *mu, *sigma;   /* (n) */
	int n;
	double low, high;         /* truncation; -inf/inf when unbounded */
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* hyperopt's adaptive_parzen_normal: the prior plus one component per
 * observation, widths from the gaps to the neighbours. */
static void parzen(struct gmm *g, const double *obs, int n, double prior_w, double prior_mu,
		   double prior_sigma)
{
	int m = n + 1;
	double *mus = xmalloc((size_t)m * sizeof(double));
	g->w = xmalloc((size_t)m * sizeof(double));
	g->mu = mus;
	g->sigma = xmalloc((size_t)m * sizeof(double));
	g->n = m;
	memcpy(mus, obs, (size_t)n * sizeof(double));
	qsort(mus, (size_t)n, sizeof(double), cmp_double);
	int pp = 0;
	while (pp < n && mus[pp] < prior_mu)
		pp++;
	memmove(&mus[pp + 1], &mus[pp], (size_t)(n - pp) * sizeof(double));
	mus[pp] = prior_mu;
	if (m == 1) {
		g->sigma[0] = prior_sigma;
	} else if (m == 2) {
		g->sigma[0] = g->sigma[1] = prior_sigma * 0.5;
	} else {
		for (int i = 1; i < m - 1; i++) {
			double a = mus[i] - mus[i - 1], b = mus[i + 1] - mus[i];
			g->sigma[i] = a > b ? a : b;
		}
		g->sigma[0] = mus[1] - mus[0];
		g->sigma[m - 1] = mus[m - 1] - mus[m - 2];
	}
	double maxs = prior_sigma, mins = prior_sigma / (m + 1 < 100 ? m + 1 : 100);
	double tot = 0;
	for (int i = 0; i < m; i++) {
		if (g->sigma[i] < mins)
			g->sigma[i] = mins;
		if (g->sigma[i] > maxs)
			g->sigma[i] = maxs;
		g->w[i] = i == pp ? prior_w : 1.0;
		tot += g->w[i];
	}
	g->sigma[pp] = prior_sigma;
	for (int i = 0; i < m; i++)
		g->w[i] /= tot;
}

static void gmm_free(struct gmm *g)
{
	free(g->w);
	free(g->mu);
	free(g->sigma);
}

static double phi(double z)
{
	return 0.5 * erfc(-z / M_SQRT2);
}

static double gmm_logpdf(const struct gmm *g, double x)
{
	double p = 0;
	for (int i = 0; i < g->n; i++) {
		double z = (x - g->mu[i]) / g->sigma[i];
		double mass = phi((g->high - g->mu[i]) / g->sigma[i]) - phi((g->low - g->mu[i]) / g->sigma[i]);
		if (mass < 1e-300)
			mass = 1e-300;
		p += g->w[i] * exp(-0.5 * z * z) / (g->sigma[i] * sqrt(2 * M_PI) * mass);
	}
	return log(p > 1e-300 ? p : 1e-300);
}

static double gmm_sample(const struct gmm *g, struct trng *r)
{
	for (int tries = 0; tries < 1000; tries++) {
		double u = trng_uniform(r), acc = 0;
		int k = g->n - 1;
		for (int i = 0; i < g->n; i++) {
			acc += g->w[i];
			if (u < acc) {
				k = i;
				break;
			}
		}
		double x = g->mu[k] + g->sigma[k] * trng_normal(r);
		if (x >= g->low && x <= g->high)
			return x;
	}
	return (g->low + g->high) / 2;   /* pathological truncation */
}

/* Continuous parameter in internal coordinates (log for log types). */
static double suggest_continuous(const struct space_param *p, const double *below, int nb,
				 const double *above, int na, const struct tpe_options *o,
				 struct trng *r)
{
	double low = -INFINITY, high = INFINITY, mu, sigma;
	switch (p->type) {
	case SPACE_UNIFORM:
	case SPACE_QUNIFORM:
		low = p->a;
		high = p->b;
		break;
	case SPACE_LOGUNIFORM:
	case SPACE_QLOGUNIFORM:
		low = log(p->a);
		high = log(p->b);
		break;
	default:
		break;
	}
	if (isfinite(low)) {
		mu = (low + high) / 2;
		sigma = high - low;
		if (sigma <= 0)
			return low;
	} else {
		mu = p->a;
		sigma = p->b;
	}
	struct gmm gb, ga;
	parzen(&gb, below, nb, o->prior_weight, mu, sigma);
	parzen(&ga, above, na, o->prior_weight, mu, sigma);
	gb.low = ga.low = low;
	gb.high = ga.high = high;
	double best = 0, best_score = -INFINITY;
	for (int c = 0; c < o->n_ei; c++) {
		double x = gmm_sample(&gb, r);
		double s = gmm_logpdf(&gb, x) - gmm_logpdf(&ga, x);
		if (s > best_score) {
			best_score = s;
			best = x;
		}
	}
	gmm_free(&gb);
	gmm_free(&ga);
	return best;
}

/* Categorical parameter (choice index or randint offset). */
static double suggest_categorical(int k, double offset, const double *below, int nb,
				  const double *above, int na, const struct tpe_options *o,
				  struct trng *r)
{
	double *pb = xmalloc((size_t)k * sizeof(double)), *pa = xmalloc((size_t)k * sizeof(double));
	double tb = 0, ta = 0;
	for (int i = 0; i < k; i++)
		pb[i] = pa[i] = o->prior_weight;
	for (int i = 0; i < nb; i++) {
		long j = lround(below[i] - offset);
		if (j >= 0 && j < k)
			pb[j] += 1;
	}
	for (int i = 0; i < na; i++) {
		long j = lround(above[i] - offset);
		if (j >= 0 && j < k)
			pa[j] += 1;
	}
	for (int i = 0; i < k; i++) {
		tb += pb[i];
		ta += pa[i];
	}
	int best = 0;
	double best_score = -INFINITY;
	for (int c = 0; c < o->n_ei; c++) {
		double u = trng_uniform(r) * tb, acc = 0;
		int j = k - 1;
		for (int i = 0; i < k; i++) {
			acc += pb[i];
			if (u < acc) {
				j = i;
				break;
			}
		}
		double s = log(pb[j] / tb) - log(pa[j] / ta);
		if (s > best_score) {
			best_score = s;
			best = j;
		}
	}
	free(pa);
	free(pb);
	return offset + best;
}

struct ranked {
	double loss;
	size_t i;
};

static int cmp_ranked(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	if (x->loss != y->loss)
		return x->loss < y->loss ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

cJSON *tpe_suggest(const struct space *sp, const struct tpe_obs *obs, size_t n,
		   const struct tpe_options *o, struct trng *r)
{
	cJSON *out = cJSON_CreateObject();
	struct ranked *rk = xmalloc((n ? n : 1) * sizeof(*rk));
	double *below = xmalloc((n ? n : 1) * sizeof(double));
	double *above = xmalloc((n ? n : 1) * sizeof(double));
	for (size_t p = 0; p < sp->n; p++) {
		const struct space_param *sparam = &sp->params[p];
		/* the finished trials that have a usable value for this parameter */
		size_t m = 0;
		for (size_t i = 0; i < n; i++) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(obs[i].params, sparam->name);
			double x;
			if (!v || space_coord(sparam, v, &x) < 0 || !isfinite(obs[i].metric))
				continue;
			rk[m].loss = o->maximize ? -obs[i].metric : obs[i].metric;
			rk[m].i = i;
			below[m] = x;   /* temporarily: coordinate by rank slot */
			m++;
		}
		double x;
		if ((int)m < o->n_startup) {
			x = space_sample_coord(sparam, r);
		} else {
			double *coord = xmalloc(m * sizeof(double));
			for (size_t i = 0; i < m; i++) {
				coord[i] = below[i];
				rk[i].i = i;   /* index into coord */
			}
			qsort(rk, m, sizeof(*rk), cmp_ranked);
			int nbelow = (int)ceil(o->gamma * sqrt((double)m));
			if (nbelow < 1)
				nbelow = 1;
			if (nbelow > 25)
				nbelow = 25;   /* hyperopt's linear_forgetting cap */
			int nb = 0, na = 0;
			for (size_t i = 0; i < m; i++) {
				if ((int)i < nbelow)
					below[nb++] = coord[rk[i].i];
				else
					above[na++] = coord[rk[i].i];
			}
			free(coord);
			if (sparam->type == SPACE_CHOICE)
				x = suggest_categorical(sparam->nchoices, 0, below, nb, above, na, o, r);
			else if (sparam->type == SPACE_RANDINT)
				x = suggest_categorical((int)(sparam->b - sparam->a), sparam->a, below, nb, above,
							na, o, r);
			else
				x = suggest_continuous(sparam, below, nb, above, na, o, r);
		}
		cJSON_AddItemToObject(out, sparam->name, space_value(sparam, x));
	}
	free(above);
	free(below);
	free(rk);
	return out;
}
