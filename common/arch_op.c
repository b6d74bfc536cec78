/* arch_op.c: the rules of each layer type of aah-arch/1 (arch.h): its name,
 * defaults and fields' ranges, output shape, parameters and FLOPs. */
#include <string.h>

#include "arch.h"
#include "arch_int.h" /* arch_types, the window rule, ARCH_BN_* */
#include "util.h"

#define MAX_UNITS 65536 /* conv2d filters, dense units */
#define MAX_WINDOW 31   /* kernel and stride */

const struct arch_type_info arch_types[ARCH_NTYPES] = {
	[ARCH_CONV2D] = { "conv2d", { "filters", "kernel", "stride", "padding", "bias" } },
	[ARCH_BATCHNORM] = { "batchnorm", { "epsilon", "momentum" } },
	[ARCH_RELU] = { "relu", { NULL } },
	[ARCH_MAXPOOL] = { "maxpool", { "kernel", "stride", "padding" } },
	[ARCH_AVGPOOL] = { "avgpool", { "kernel", "stride", "padding" } },
	[ARCH_GLOBAL_AVG_POOL] = { "global_avg_pool", { NULL } },
	[ARCH_DENSE] = { "dense", { "units", "bias" } },
	[ARCH_DROPOUT] = { "dropout", { "rate" } },
	[ARCH_ADD] = { "add", { NULL } },
	[ARCH_CONCAT] = { "concat", { NULL } },
	[ARCH_FLATTEN] = { "flatten", { NULL } },
};

const char *arch_type_name(int type)
{
	return type >= 0 && type < ARCH_NTYPES ? arch_types[type].name : "?";
}

int arch_type_parse(const char *name)
{
	for (int t = 0; t < ARCH_NTYPES; t++)
		if (!strcmp(arch_types[t].name, name))
			return t;
	return -1;
}

void arch_op_init(struct arch_op *op, enum arch_type type)
{
	memset(op, 0, sizeof(*op));
	op->type = type;
	switch (type) {
	case ARCH_CONV2D:
		op->stride = 1;
		op->padding = ARCH_SAME;
		op->bias = 1;
		break;
	case ARCH_MAXPOOL:
	case ARCH_AVGPOOL:
		op->padding = ARCH_VALID;
		break;
	case ARCH_DENSE:
		op->bias = 1;
		break;
	case ARCH_BATCHNORM:
		op->eps = ARCH_BN_EPS;
		op->momentum = ARCH_BN_MOMENTUM;
		break;
	default:
		break;
	}
}

/* ---- the rules of one op ------------------------------------------------- */

/* Report only when there is a `what` to name: the tuner's validity checks
 * run quietly on every candidate graph. */
#define FAIL(...) (what ? error(__VA_ARGS__) : -1)

int arch_op_windowed(enum arch_type t)
{
	return t == ARCH_CONV2D || t == ARCH_MAXPOOL || t == ARCH_AVGPOOL;
}

/* The schema's ranges of the fields op's type has. */
int arch_op_check_fields(const struct arch_op *op, const char *what)
{
	if ((op->type == ARCH_CONV2D || op->type == ARCH_DENSE) &&
	    (op->units < 1 || op->units > MAX_UNITS))
		return FAIL("%s: field \"%s\" must be an integer in [1, %d]", what,
			    op->type == ARCH_DENSE ? "units" : "filters", MAX_UNITS);
	if (arch_op_windowed(op->type) && (op->kernel < 1 || op->kernel > MAX_WINDOW))
		return FAIL("%s: field \"kernel\" must be an integer in [1, %d]", what, MAX_WINDOW);
	if (arch_op_windowed(op->type) && (op->stride < 1 || op->stride > MAX_WINDOW))
		return FAIL("%s: field \"stride\" must be an integer in [1, %d]", what, MAX_WINDOW);
	if (op->type == ARCH_BATCHNORM && !(op->eps > 0))
		return FAIL("%s: field \"epsilon\" must be positive", what);
	if (op->type == ARCH_BATCHNORM && !(op->momentum >= 0 && op->momentum <= 1))
		return FAIL("%s: field \"momentum\" must be in [0, 1]", what);
	if (op->type == ARCH_DROPOUT && !(op->rate >= 0 && op->rate < 1))
		return FAIL("%s: field \"rate\" must be in [0, 1)", what);
	return 0;
}

/* Output extent of a window op along one axis (0: nothing fits), and the
 * padding before (lo) and after (hi) it: "same" as TensorFlow, the extra
 * row or column at the end. */
int arch_op_window(const struct arch_op *op, int in, int *lo, int *hi)
{
	*lo = *hi = 0;
	if (op->padding == ARCH_VALID)
		return in < op->kernel ? 0 : (in - op->kernel) / op->stride + 1;
	int out = (in + op->stride - 1) / op->stride;
	int total = (out - 1) * op->stride + op->kernel - in;
	if (total > 0) {
		*lo = total / 2;
		*hi = total - *lo;
	}
	return out;
}

int arch_op_shape(const struct arch_op *op, const struct arch_shape *in, int n_in,
		  struct arch_shape *out, const char *what)
{
	const char *tn = arch_type_name(op->type);
	const struct arch_shape *s = &in[0];
	int lo, hi;
	if (op->type == ARCH_ADD || op->type == ARCH_CONCAT) {
		if (n_in < 2)
			return FAIL("%s: a %s layer needs at least two inputs", what, tn);
	} else if (n_in != 1) {
		return FAIL("%s: a %s layer takes exactly one input, not %d", what, tn, n_in);
	}
	if (arch_op_check_fields(op, what))
		return -1;
	*out = *s;
	switch (op->type) {
	case ARCH_CONV2D:
	case ARCH_MAXPOOL:
	case ARCH_AVGPOOL:
		if (s->rank != 4)
			return FAIL("%s: %s needs an (N, H, W, C) input, got a rank-2 one", what, tn);
		out->h = arch_op_window(op, s->h, &lo, &hi);
		out->w = arch_op_window(op, s->w, &lo, &hi);
		if (out->h < 1 || out->w < 1)
			return FAIL("%s: kernel %d is larger than its input (%dx%d) with valid padding",
				    what, op->kernel, s->h, s->w);
		if (op->type == ARCH_CONV2D)
			out->c = op->units;
		break;
	case ARCH_GLOBAL_AVG_POOL:
		if (s->rank != 4)
			return FAIL("%s: global_avg_pool needs an (N, H, W, C) input", what);
		*out = (struct arch_shape){ 2, 1, 1, s->c };
		break;
	case ARCH_FLATTEN:
		*out = (struct arch_shape){ 2, 1, 1, s->h * s->w * s->c };
		break;
	case ARCH_DENSE:
		if (s->rank != 2)
			return FAIL("%s: dense needs a rank-2 input (insert flatten or global_avg_pool "
				    "before it)", what);
		out->c = op->units;
		break;
	case ARCH_ADD:
	case ARCH_CONCAT:
		for (int k = 1; k < n_in; k++) {
			const struct arch_shape *t = &in[k];
			int same_hw = t->rank == s->rank && t->h == s->h && t->w == s->w;
			if (op->type == ARCH_ADD && (!same_hw || t->c != s->c))
				return FAIL("%s: add needs identical shapes, got %dx%dx%d and %dx%dx%d",
					    what, s->h, s->w, s->c, t->h, t->w, t->c);
			if (op->type == ARCH_CONCAT && !same_hw)
				return FAIL("%s: concat needs the same height and width, got %dx%d and "
					    "%dx%d", what, s->h, s->w, t->h, t->w);
			if (op->type == ARCH_CONCAT)
				out->c += t->c;
		}
		break;
	case ARCH_BATCHNORM:
	case ARCH_RELU:
	case ARCH_DROPOUT:
		break;
	default:
		return FAIL("%s: unknown layer type %d", what, (int)op->type);
	}
	return 0;
}

int arch_op_is_logits(const struct arch_op *op, int num_classes)
{
	return op->type == ARCH_DENSE && op->units == num_classes;
}

void arch_op_params(const struct arch_op *op, const struct arch_shape *in, uint64_t *weights,
		    uint64_t *others)
{
	uint64_t bias = op->bias ? (uint64_t)op->units : 0;
	*weights = *others = 0;
	if (op->type == ARCH_CONV2D) {
		*weights = (uint64_t)op->kernel * op->kernel * in->c * op->units;
		*others = bias;
	} else if (op->type == ARCH_DENSE) {
		*weights = (uint64_t)in->h * in->w * in->c * op->units;
		*others = bias;
	} else if (op->type == ARCH_BATCHNORM) {
		*others = 2 * (uint64_t)in->c;
	}
}

double arch_op_mac_flops(const struct arch_op *op, const struct arch_shape *in,
			 const struct arch_shape *out)
{
	if (op->type == ARCH_CONV2D)
		return 2.0 * op->kernel * op->kernel * in->c * op->units * out->h * out->w;
	if (op->type == ARCH_DENSE)
		return 2.0 * in->h * in->w * in->c * op->units;
	return 0;
}

void arch_op_flops(const struct arch_op *op, const struct arch_shape *in,
		   const struct arch_shape *out, int first_conv, double *fwd, double *bwd)
{
	double in_size = (double)in->h * in->w * in->c, u = op->units;
	double k2 = (double)op->kernel * op->kernel * in->c * op->units;
	*fwd = *bwd = 0;
	switch (op->type) {
	case ARCH_CONV2D:
		*fwd = arch_op_mac_flops(op, in, out);
		*bwd = k2 * ((first_conv ? 2.0 : 4.0) * out->h * out->w + 2);
		break;
	case ARCH_MAXPOOL:
	case ARCH_AVGPOOL:
		*fwd = in_size * op->kernel * op->kernel / op->stride / op->stride;
		break;
	case ARCH_BATCHNORM:
		*fwd = 7.0 * in_size; /* macc*2 + add + div*4 */
		*bwd = 36.0;          /* AIPerf: (29 + 7) per image */
		break;
	case ARCH_RELU:
	case ARCH_ADD:
		*fwd = in_size;
		break;
	case ARCH_GLOBAL_AVG_POOL:
		/* adds, then a divide per channel at 4 FLOPs (profiler.py coeff['div']) */
		*fwd = ((double)in->h * in->w - 1) * in->c + 4.0 * in->c;
		break;
	case ARCH_DENSE: /* with the softmax that follows the logits */
		*fwd = arch_op_mac_flops(op, in, out) + (8.0 * u + (u - 1) + 4.0 * u);
		*bwd = 4.0 * in_size * u + 2.0 * (in_size + 1) * u;
		break;
	default:
		break;
	}
}

