/* fp_bound.h: the error bound a bf16 or fp16 reduction (conv2d, dense) is
 * held to against kernels/ref, per output value, from the formats' unit
 * roundoffs, the reduction's length and the sum of |products|. Header only:
 * the ops tests include it.
 *
 * The derivation. An output value is a sum of n products plus at most one
 * more term (a bias): s = sum_i p_i, p_i = a_i * b_i, the operands a_i, b_i
 * read in the low-precision format L (unit roundoff u_L: 2^-8 for bf16's 8
 * significant bits, 2^-11 for fp16's 11). Both sides read the same
 * operands: ref rounds x, w and dy to L to nearest, ties to even, as the
 * backends' copies are rounded (ref_conv.c). A product of two values of 8
 * (or 11) significant bits has at most 16 (22) and is exact in fp32, so
 * only the sums differ, and for a sum of m terms in any order or tree
 * (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., (3.5)
 * and Lemma 3.1), with S = sum_i |p_i|:
 *
 *     |fl(s) - s| <= gamma_m * S,    gamma_m = m u / (1 - m u),
 *
 * m = n + 1 counting the bias and the rounding of the result to fp32. The
 * backend accumulates in fp32; u_acc is taken as 2^-23, twice fp32's
 * 2^-24, so that an accumulator that truncates instead of rounding (tensor
 * cores may) is covered too. ref accumulates in double (u = 2^-53). Where
 * a side stores its sums in a 16-bit format before the cast to fp32 (cuda
 * writes bf16 and fp16 sums; ref writes fp16 sums as cuDNN does), that
 * rounding adds at most u_out of the sum's magnitude, which is at most
 * |r| + |bias| with r the reference value (taken with |r| for the value
 * and the largest |bias| of the layer). A side that adds the bias to its
 * 16-bit sums and stores the result in 16 bits again (cuda, where the
 * model stores y in bf16: cuDNN's legacy API writes y in the operands'
 * type) rounds a second time, by at most u_out of |sum + bias|, again at
 * most |r| + |bias| (bias_again: u_out(a) counts twice). So, for value i
 * of a tensor:
 *
 *     |a_i - r_i| <= (gamma_m(2^-23) + gamma_m(2^-53)) S_i
 *                    + ((1 + bias_again) u_out(a) + u_out(r)) (|r_i| + bmax)
 *                    + u_op S_i                 (operand_slack: see below)
 *                    + m 2^-126                 (subnormals flushed to 0)
 *
 * with u_out(fp32) = 0 (inside gamma). operand_slack = 1 (u_op = u_L) for
 * a sum that a backend may take over the fp32 operand instead of its
 * rounded copy: the bias gradient, which cuda sums from the fp32 dy
 * (cuda_conv.c); each term then moves by at most u_L |p_i|.
 *
 * S_i is computed by ref itself: the same op on |x|, |w|, |dy| (rounding
 * commutes with |.|) gives sum |x||w| for y, sum |dy||w| for dx, sum
 * |dy||x| for dw and sum |dy| for db, each with its own n (fp_bound_terms).
 *
 * What it does not cover, by design: an algorithm that transforms its
 * operands (Winograd, FFT) has error terms of another form; no backend
 * runs one in bf16 or fp16 (cpu_conv.c takes Winograd only in fp32). And a
 * layer that computes in fp32 where bf16 was asked (ops_layer.ran) is held
 * to ref in fp32 with the fp32 tolerance instead: it read operands that
 * were never rounded, so the bound above does not apply to it.
 *
 * What it catches, shown by kernels_ref::bf16_bound_catches_defects: a
 * dropped term moves s by |p_k|, far above gamma_m S for any product that
 * is not tiny; operands rounded to fp16 where bf16 was asked move s by
 * about u_bf16 sqrt(n) |p|, some 2^13 times gamma_m S. */
#ifndef AAH_TEST_FP_BOUND_H
#define AAH_TEST_FP_BOUND_H

#include <math.h>
#include <stddef.h>
#include <stdio.h>

#include "kernels/ops.h"

/* Unit roundoff of a storage format: half the distance from 1 to the next
 * value. fp32's own rounding is inside gamma, so it counts 0 here. */
static inline double fp_bound_u_out(enum ops_dtype t)
{
	return t == OPS_BF16 ? 0x1p-8 : t == OPS_F16 ? 0x1p-11 : 0;
}

static inline double fp_bound_u_operand(enum ops_dtype t)
{
	return t == OPS_BF16 ? 0x1p-8 : t == OPS_F16 ? 0x1p-11 : 0x1p-24;
}

static inline double fp_bound_gamma(int m, double u)
{
	return m * u / (1 - m * u);
}

/* One tensor's comparison: what the bound needs besides the values. */
struct fp_bound {
	int terms;                  /* n: products in each sum */
	double bmax;                /* largest |bias| added to each value (y), else 0 */
	enum ops_dtype operands;    /* the format the operands were rounded to */
	enum ops_dtype out_a, out_r; /* where each side stored its sums */
	int operand_slack;          /* 1: a side may sum the fp32 operand (db) */
	int bias_again;             /* 1: side a may round its stored sums again with the bias */
};

/* The bound for one value: r the reference, s the sum of |products|. */
static inline double fp_bound_of(const struct fp_bound *b, double r, double s)
{
	int m = b->terms + 1;
	return (fp_bound_gamma(m, 0x1p-23) + fp_bound_gamma(m, 0x1p-53)) * s +
	       ((1 + b->bias_again) * fp_bound_u_out(b->out_a) + fp_bound_u_out(b->out_r)) *
		       (fabs(r) + b->bmax) +
	       (b->operand_slack ? fp_bound_u_operand(b->operands) * s : 0) + m * 0x1p-126;
}

/* The worst value of one comparison, for the failure message and the
 * figures AAH_BOUND_REPORT prints. */
struct fp_bound_worst {
	size_t outside, at;
	double ratio, diff, bound, sum;   /* at the worst value: |a-r| / bound */
};

/* Counts the values of a (count of them) outside the bound around r, with
 * s the sums of |products|; *w gets the worst one (NaN on one side only
 * counts as outside). */
static inline size_t fp_bound_check(const struct fp_bound *b, const float *a, const float *r,
				    const float *s, size_t count, struct fp_bound_worst *w)
{
	*w = (struct fp_bound_worst){0};
	w->ratio = -1;
	for (size_t i = 0; i < count; i++) {
		if (isnan(a[i]) && isnan(r[i]))
			continue;
		double bound = fp_bound_of(b, r[i], s[i]), diff = fabs((double)a[i] - r[i]);
		double ratio = isnan(a[i]) || isnan(r[i]) || isnan(s[i]) ? INFINITY : diff / bound;
		if (ratio > 1)
			w->outside++;
		if (ratio > w->ratio)
			*w = (struct fp_bound_worst){w->outside, i, ratio, diff, bound, s[i]};
	}
	return w->outside;
}

#endif
