/* gp_dense.h: what the tuner's GP tests check its solves against: the
 * RBF kernel on three-dimensional points and a dense direct solve. Header
 * only: test_tuner_search.c and test_tuner_window.c include it. */
#ifndef AAH_TESTS_GP_DENSE_H
#define AAH_TESTS_GP_DENSE_H

#include <math.h>

static double rbf(const double *a, const double *b)
{
	double d = 0;
	for (int i = 0; i < 3; i++)
		d += (a[i] - b[i]) * (a[i] - b[i]);
	return exp(-d);
}

/* Solve the n x (n+1) augmented system in a (Gauss-Jordan, partial
 * pivoting) into x. */
static void dense_solve(int n, double *a, double *x)
{
	for (int c = 0; c < n; c++) {
		int p = c;
		for (int r = c + 1; r < n; r++)
			if (fabs(a[r * (n + 1) + c]) > fabs(a[p * (n + 1) + c]))
				p = r;
		for (int k = 0; k <= n; k++) {
			double t = a[c * (n + 1) + k];
			a[c * (n + 1) + k] = a[p * (n + 1) + k];
			a[p * (n + 1) + k] = t;
		}
		for (int r = 0; r < n; r++) {
			if (r == c)
				continue;
			double f = a[r * (n + 1) + c] / a[c * (n + 1) + c];
			for (int k = c; k <= n; k++)
				a[r * (n + 1) + k] -= f * a[c * (n + 1) + k];
		}
	}
	for (int r = 0; r < n; r++)
		x[r] = a[r * (n + 1) + n] / a[r * (n + 1) + r];
}

#endif
