/* gp.h: Gaussian process regression on a precomputed kernel (the tuner's
 * exp(-d^2) over edit distances) with a Cholesky factor that grows by one
 * row per observation (O(n^2)) and escalates the jitter of a new row until
 * it is positive definite, instead of skipping the update (NNI issue 3324);
 * rows can also be removed (O(n^2)), for the tuner's window of observations
 * (docs/tuner.md). */
#ifndef AAH_TUNER_GP_H
#define AAH_TUNER_GP_H

#include <stddef.h>

struct tpool;

struct gp {
	int n, cap;
	double *L;       /* packed lower Cholesky factor of K + diag(jitter): row i at i(i+1)/2;
			  * NULL once a row was removed (the inverse then carries it all) */
	double *kinv;    /* packed lower (K + diag(jitter))^-1, kept for O(nnz^2) variances */
	double *y;       /* (n) targets */
	double *alpha;   /* (n) kinv * y */
	double *jitter;  /* (n) diagonal added to each row */
	double base_jitter;   /* NNI's alpha: 1e-10 */
	int escalations;      /* rows that needed more than base_jitter */
	int lost;             /* rows whose kernel row was numerically unusable */
	int removed;          /* rows removed (gp_remove) so far; L is gone after the first */
	double max_jitter;    /* largest jitter any row needed */
	struct tpool *pool;   /* not owned; NULL = serial */
};

void gp_init(struct gp *g);
void gp_release(struct gp *g);
/* Add a point with target y; its kernel against the existing points is the
 * sparse row (idx[k], kval[k]) (others 0; k(x, x) = 1). Returns its row. */
int gp_add(struct gp *g, const int *idx, const double *kval, int nnz, double y);
/* Remove row i (rows after it move up by one): the inverse downdated by the
 * block rule, alpha with it; O(n^2). The first removal drops L: from then
 * on gp_add takes the new pivot from the inverse. */
void gp_remove(struct gp *g, int i);
/* Change the target of row i (a pending trial finished): O(n). */
void gp_set_y(struct gp *g, int i, double y);
/* Posterior mean and variance at a point with the sparse kernel row. */
void gp_predict(const struct gp *g, const int *idx, const double *kval, int nnz, double *mean,
		double *var);

/* The state of the first rows (all of it: gp_state_bytes(g->n)) as bytes
 * in native order: L, kinv, y, alpha, jitter (the tuner's state cache); only
 * of a GP that never removed a row (it has L). */
size_t gp_state_bytes(int rows);
void gp_state_pack(const struct gp *g, unsigned char *out);
/* Replace an empty g's rows by packed ones (escalations, lost and
 * max_jitter are the caller's). */
void gp_state_unpack(struct gp *g, int rows, const unsigned char *in);

#endif
