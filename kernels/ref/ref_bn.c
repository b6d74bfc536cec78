/* ref_bn.c: batch normalisation per channel, by its definition.
 *
 *   x, y: (n, H, W, C)   gamma, beta, run_*, save_*: (C)
 *
 * Over the m = n*H*W values of channel c:
 *
 *   training:   mean = sum x / m,  var = sum (x - mean)^2 / m (biased)
 *               save_mean, save_var = mean, var (the batch's, for backward)
 *               run_mean = momentum*run_mean + (1 - momentum)*mean
 *               run_var  = momentum*run_var  + (1 - momentum)*var * m/(m-1)
 *               (the unbiased variance in the running average, as PyTorch)
 *   inference:  mean, var = run_mean, run_var
 *   then        xhat = (x - mean) / sqrt(var + eps),  y = gamma*xhat + beta
 *   fuse_relu:  y = max(y, 0) (the model folds a following relu in)
 *
 * Backward (from the saved batch statistics), with g = dy, or dy where
 * y > 0 under fuse_relu, and istd = 1 / sqrt(var + eps):
 *
 *   dbeta  = sum g,   dgamma = sum g*xhat
 *   dx     = gamma*istd/m * (m*g - dbeta - xhat*dgamma)
 */
#include <math.h>

#include "kernels/ref/ref.h"

static int bn_forward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
		      float *y, int train)
{
	(void)ctx;
	const struct ops_shape *s = &l->in[0];
	size_t m = (size_t)n * s->h * s->w;   /* values per channel; value k of c is x[k*C + c] */
	for (int c = 0; c < s->c; c++) {
		double mean, var;
		if (train) {
			double sum = 0, sq = 0;
			for (size_t k = 0; k < m; k++)
				sum += x[0][k * s->c + c];
			mean = sum / (double)m;
			for (size_t k = 0; k < m; k++) {
				double d = x[0][k * s->c + c] - mean;
				sq += d * d;
			}
			var = sq / (double)m;
			l->save_mean[c] = (float)mean;
			l->save_var[c] = (float)var;
			double unbiased = m > 1 ? var * (double)m / (double)(m - 1) : var;
			float mo = l->cfg.momentum;
			l->run_mean[c] = (float)(mo * l->run_mean[c] + (1.0 - mo) * mean);
			l->run_var[c] = (float)(mo * l->run_var[c] + (1.0 - mo) * unbiased);
		} else {
			mean = l->run_mean[c];
			var = l->run_var[c];
		}
		double istd = 1.0 / sqrt(var + l->cfg.eps);
		for (size_t k = 0; k < m; k++) {
			double xhat = (x[0][k * s->c + c] - mean) * istd;
			double v = l->gamma[c] * xhat + l->beta[c];
			if (l->cfg.fuse_relu && v < 0)
				v = 0;
			y[k * s->c + c] = (float)v;
		}
	}
	return 0;
}

static int bn_backward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
		       const float *y, const float *dy, float *const *dx)
{
	(void)ctx;
	const struct ops_shape *s = &l->in[0];
	size_t m = (size_t)n * s->h * s->w;
	for (int c = 0; c < s->c; c++) {
		double mean = l->save_mean[c];
		double istd = 1.0 / sqrt((double)l->save_var[c] + l->cfg.eps);
		double dbeta = 0, dgamma = 0;
		for (size_t k = 0; k < m; k++) {
			size_t at = k * s->c + c;
			double g = l->cfg.fuse_relu && !(y[at] > 0) ? 0.0 : dy[at];
			dbeta += g;
			dgamma += g * (x[0][at] - mean) * istd;
		}
		l->dbeta[c] = (float)dbeta;
		l->dgamma[c] = (float)dgamma;
		for (size_t k = 0; dx[0] && k < m; k++) {
			size_t at = k * s->c + c;
			double g = l->cfg.fuse_relu && !(y[at] > 0) ? 0.0 : dy[at];
			double xhat = (x[0][at] - mean) * istd;
			dx[0][at] = (float)(l->gamma[c] * istd / (double)m *
					    ((double)m * g - dbeta - xhat * dgamma));
		}
	}
	return 0;
}

const struct ops_layer_ops ref_bn_ops = {
	.type = OPS_BATCHNORM,
	.name = "batch normalization",
	.forward = bn_forward,
	.backward = bn_backward,
};
