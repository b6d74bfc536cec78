/* ref_train.c: the loss and the parameter update.
 *
 * loss: softmax cross-entropy with label smoothing s over K classes, for
 * each sample i of logits z: (n, K) and label t_i:
 *
 *   target[k] = s/K + (1 - s) * (k == t_i)
 *   p[k]      = exp(z[k]) / sum over j of exp(z[j])      (softmax)
 *   loss_i    = -sum over k of target[k] * log p[k]
 *   dz[i, k]  = (p[k] - target[k]) / n                   (of the mean loss)
 *
 * adding every loss_i to *loss_sum and, to *correct, the samples whose
 * first largest logit is the label's.
 *
 * sgd: v = mu*v + g + wd*w, then w = w - lr*v, value by value.
 * accumulate: y = y + x, value by value (bf16: summed in fp32, stored
 * rounded to nearest even). */
#include <math.h>

#include "kernels/ref/ref.h"
#include "util.h"

int ref_loss(struct ops_ctx *ctx, int n, int classes, const float *logits, const int *labels,
	     float smoothing, float scale, float *dlogits, double *loss_sum, long *correct)
{
	(void)ctx;
	for (int i = 0; i < n; i++) {
		const float *z = logits + (size_t)i * classes;
		if (labels[i] < 0 || labels[i] >= classes)
			return error("label %d of sample %d is outside [0, %d)", labels[i], i, classes);
		int best = 0;
		for (int k = 1; k < classes; k++)
			if (z[k] > z[best])
				best = k;
		/* log sum exp(z), shifted by the largest logit so exp cannot overflow */
		double sum = 0;
		for (int k = 0; k < classes; k++)
			sum += exp((double)z[k] - z[best]);
		double log_norm = z[best] + log(sum);
		double loss = 0;
		for (int k = 0; k < classes; k++) {
			double target = (double)smoothing / classes + (k == labels[i] ? 1.0 - smoothing : 0.0);
			double log_p = z[k] - log_norm;
			loss -= target * log_p;
			if (dlogits)
				dlogits[(size_t)i * classes + k] =
					(float)((exp(log_p) - target) / n) * scale;
		}
		*loss_sum += loss;
		*correct += best == labels[i];
	}
	return 0;
}

int ref_sgd(struct ops_ctx *ctx, size_t count, float *w, const float *g, float *v, float lr,
	    float mu, float wd)
{
	(void)ctx;
	for (size_t k = 0; k < count; k++) {
		v[k] = mu * v[k] + g[k] + wd * w[k];
		w[k] = w[k] - lr * v[k];
	}
	return 0;
}

int ref_accumulate(struct ops_ctx *ctx, size_t count, enum ops_dtype t, void *y, const void *x)
{
	(void)ctx;
	if (t == OPS_BF16) { /* the sum in fp32, stored rounded */
		uint16_t *yh = y;
		const uint16_t *xh = x;
		for (size_t k = 0; k < count; k++)
			yh[k] = ref_f32_to_bf16(ref_bf16_to_f32(yh[k]) + ref_bf16_to_f32(xh[k]));
		return 0;
	}
	if (t != OPS_F32)
		return error("accumulate: no tensor is stored in fp16");
	float *yf = y;
	const float *xf = x;
	for (size_t k = 0; k < count; k++)
		yf[k] = yf[k] + xf[k];
	return 0;
}

/* finite = no g[k] is inf or NaN; then g[k] = g[k] * inv. */
int ref_unscale(struct ops_ctx *ctx, size_t count, float *g, float inv, int *finite)
{
	(void)ctx;
	*finite = 1;
	for (size_t k = 0; k < count; k++)
		if (isinf(g[k]) || isnan(g[k]))
			*finite = 0;
	for (size_t k = 0; *finite && k < count; k++)
		g[k] = g[k] * inv;
	return 0;
}
