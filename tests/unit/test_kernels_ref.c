/* Every op of every compute backend in ops_backends() against kernels/ref
 * (the `ref` backend) on the same random inputs: forward outputs, batch and
 * running statistics, dropout masks, input and parameter gradients, the
 * loss, SGD and gradient accumulation, compared value by value: fp32 with
 * |a - b| <= atol + rtol*|b| (b the reference); bf16 and fp16 reductions
 * with the bound of fp_bound.h, per value, from the formats' unit
 * roundoffs, the reduction's length and the sum of |products|.
 *
 * Every backend in the table is covered without a change here (cuda too,
 * when the build found nvcc and cuDNN): a backend that cannot start on this
 * machine ("skipped: no CUDA device ..." for cuda on a machine without a
 * GPU), lacks an op, or lacks bf16 is reported as a skipped run saying so;
 * fp16 cases run only on backends with OPS_CAP_FP16 (cuda, and ref's
 * emulation: the CPU backend has no fp16 at all).
 * Where a device exists the comparison runs in full. The CPU backend must
 * have every op.
 *
 * Cases whose tensors are stored in bf16 (ref_case.acts: what the model
 * gives ops with ops_layer_ops.bf16 under bf16) run the backend on the
 * bf16 patterns of inputs already rounded to bf16, and ref in fp32 on
 * those same values: an op that sums (conv2d) is held to fp_bound.h's
 * bound with its bf16 output, every other op to ref's value rounded to
 * bf16 (bf16_store_tol). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_skip.h"
#include "kernels/cpu/cpu_probe.h" /* cpu_probe_skip: the forced bf16 test */
#include "kernels/ops.h"
#include "kernels/ref/ref.h" /* ref_bf16_round, ref_f16_round */
#include "fp_bound.h"         /* fp_bound_check: the bf16 and fp16 bound */
#include "util.h"

enum kind { LAYER, LOSS, SGD, ACCUMULATE, UNSCALE };

struct ref_case {
	const char *what;           /* named in every failure and skip */
	enum kind kind;
	struct ops_layer_cfg cfg;   /* LAYER */
	int n, n_in;                /* batch, inputs */
	struct ops_shape in[3], out;
	int train;                  /* 0: an inference forward only, no backward */
	int no_dx;                  /* backward with no input gradient wanted */
	int conv_algo;              /* OPS_CONV_AUTO or OPS_CONV_DIRECT */
	enum ops_dtype type;        /* precision: OPS_F32 (0), OPS_BF16, OPS_F16 */
	enum ops_dtype acts;        /* the backend's tensors stored in this type:
				     * OPS_F32 (0) or OPS_BF16, but for: */
	int in_f32, out_f32;        /* an fp32 input (the network's), an fp32
				     * output (global_avg_pool's, for a dense) */
	int count;                  /* LOSS: classes (n samples); SGD, ACCUMULATE, UNSCALE: values */
	float smoothing;            /* LOSS */
};

#define CONV(k, s, t, l, b, r, u, bi) \
	.kind = LAYER, .cfg = {.type = OPS_CONV2D, .kernel = k, .stride = s, .pad_t = t, \
			       .pad_l = l, .pad_b = b, .pad_r = r, .units = u, .bias = bi}
#define POOL(ty, k, s, t, l, b, r) \
	.kind = LAYER, .cfg = {.type = ty, .kernel = k, .stride = s, .pad_t = t, .pad_l = l, \
			       .pad_b = b, .pad_r = r}

static const struct ref_case cases[] = {
	{"conv2d 3x3/1 same 10x10x16->32, auto (Winograd on the CPU)", CONV(3, 1, 1, 1, 1, 1, 32, 1),
	 .n = 2, .n_in = 1, .in = {{10, 10, 16}}, .out = {10, 10, 32}, .train = 1,
	 .conv_algo = OPS_CONV_AUTO},
	{"conv2d 3x3/1 same 10x10x16->32, direct", CONV(3, 1, 1, 1, 1, 1, 32, 1),
	 .n = 2, .n_in = 1, .in = {{10, 10, 16}}, .out = {10, 10, 32}, .train = 1,
	 .conv_algo = OPS_CONV_DIRECT},
	{"conv2d 3x3/1 same odd 5x5x16->16, auto", CONV(3, 1, 1, 1, 1, 1, 16, 1),
	 .n = 2, .n_in = 1, .in = {{5, 5, 16}}, .out = {5, 5, 16}, .train = 1,
	 .conv_algo = OPS_CONV_AUTO},
	{"conv2d 3x3/2 same odd 7x6x3->4x3x5, direct", CONV(3, 2, 1, 0, 1, 1, 5, 1),
	 .n = 3, .n_in = 1, .in = {{7, 6, 3}}, .out = {4, 3, 5}, .train = 1,
	 .conv_algo = OPS_CONV_DIRECT},
	{"conv2d 3x3/2 same odd 7x6x3->4x3x5, auto", CONV(3, 2, 1, 0, 1, 1, 5, 1),
	 .n = 3, .n_in = 1, .in = {{7, 6, 3}}, .out = {4, 3, 5}, .train = 1,
	 .conv_algo = OPS_CONV_AUTO},
	{"conv2d 3x3/2 same, no input gradient", CONV(3, 2, 1, 0, 1, 1, 5, 1),
	 .n = 3, .n_in = 1, .in = {{7, 6, 3}}, .out = {4, 3, 5}, .train = 1, .no_dx = 1},
	{"conv2d 1x1/1 valid 5x5x7->3, no bias", CONV(1, 1, 0, 0, 0, 0, 3, 0),
	 .n = 1, .n_in = 1, .in = {{5, 5, 7}}, .out = {5, 5, 3}, .train = 1},
	{"conv2d 5x5/1 valid 9x8x2->5x4x4", CONV(5, 1, 0, 0, 0, 0, 4, 1),
	 .n = 2, .n_in = 1, .in = {{9, 8, 2}}, .out = {5, 4, 4}, .train = 1},
	{"conv2d 2x2/2 valid odd 5x5x3->2x2x4", CONV(2, 2, 0, 0, 0, 0, 4, 1),
	 .n = 2, .n_in = 1, .in = {{5, 5, 3}}, .out = {2, 2, 4}, .train = 1},
	{"bf16 conv2d 3x3/1 same 6x6x8->8", CONV(3, 1, 1, 1, 1, 1, 8, 1),
	 .n = 2, .n_in = 1, .in = {{6, 6, 8}}, .out = {6, 6, 8}, .train = 1, .type = OPS_BF16},
	{"bf16 conv2d 3x3/2 same odd 7x6x3->4x3x5", CONV(3, 2, 1, 0, 1, 1, 5, 1),
	 .n = 3, .n_in = 1, .in = {{7, 6, 3}}, .out = {4, 3, 5}, .train = 1, .type = OPS_BF16},
	{"bf16 conv2d 3x3/1 same 6x6x1->8, one input channel (a first layer)",
	 CONV(3, 1, 1, 1, 1, 1, 8, 1), .n = 2, .n_in = 1, .in = {{6, 6, 1}}, .out = {6, 6, 8},
	 .train = 1, .no_dx = 1, .type = OPS_BF16},
	{"bf16 conv2d 1x1/1 valid 5x5x7->3, no bias, no input gradient",
	 CONV(1, 1, 0, 0, 0, 0, 3, 0), .n = 2, .n_in = 1, .in = {{5, 5, 7}}, .out = {5, 5, 3},
	 .train = 1, .no_dx = 1, .type = OPS_BF16},
	{"fp16 conv2d 3x3/1 same 6x6x8->8", CONV(3, 1, 1, 1, 1, 1, 8, 1),
	 .n = 2, .n_in = 1, .in = {{6, 6, 8}}, .out = {6, 6, 8}, .train = 1, .type = OPS_F16},
	{"fp16 conv2d 3x3/2 same odd 7x6x3->4x3x5", CONV(3, 2, 1, 0, 1, 1, 5, 1),
	 .n = 3, .n_in = 1, .in = {{7, 6, 3}}, .out = {4, 3, 5}, .train = 1, .type = OPS_F16},
	{"fp16 conv2d 1x1/1 valid 5x5x7->3, no bias, no input gradient",
	 CONV(1, 1, 0, 0, 0, 0, 3, 0), .n = 2, .n_in = 1, .in = {{5, 5, 7}}, .out = {5, 5, 3},
	 .train = 1, .no_dx = 1, .type = OPS_F16},

	{"batchnorm training 3x3x4", .kind = LAYER,
	 .cfg = {.type = OPS_BATCHNORM, .eps = 1e-3f, .momentum = 0.9f},
	 .n = 3, .n_in = 1, .in = {{3, 3, 4}}, .out = {3, 3, 4}, .train = 1},
	{"batchnorm training odd 5x3x7, fused relu", .kind = LAYER,
	 .cfg = {.type = OPS_BATCHNORM, .eps = 1e-5f, .momentum = 0.99f, .fuse_relu = 1},
	 .n = 2, .n_in = 1, .in = {{5, 3, 7}}, .out = {5, 3, 7}, .train = 1},
	{"batchnorm training, no input gradient", .kind = LAYER,
	 .cfg = {.type = OPS_BATCHNORM, .eps = 1e-3f, .momentum = 0.9f},
	 .n = 2, .n_in = 1, .in = {{4, 4, 3}}, .out = {4, 4, 3}, .train = 1, .no_dx = 1},
	{"batchnorm inference 4x4x3", .kind = LAYER,
	 .cfg = {.type = OPS_BATCHNORM, .eps = 1e-3f, .momentum = 0.9f},
	 .n = 2, .n_in = 1, .in = {{4, 4, 3}}, .out = {4, 4, 3}},
	{"batchnorm inference, fused relu", .kind = LAYER,
	 .cfg = {.type = OPS_BATCHNORM, .eps = 1e-3f, .momentum = 0.9f, .fuse_relu = 1},
	 .n = 2, .n_in = 1, .in = {{4, 4, 3}}, .out = {4, 4, 3}},

	{"relu 3x4x5", .kind = LAYER, .cfg = {.type = OPS_RELU},
	 .n = 2, .n_in = 1, .in = {{3, 4, 5}}, .out = {3, 4, 5}, .train = 1},
	{"relu inference", .kind = LAYER, .cfg = {.type = OPS_RELU},
	 .n = 1, .n_in = 1, .in = {{3, 3, 2}}, .out = {3, 3, 2}},

	{"maxpool 2x2/2 tiled 4x6x5", POOL(OPS_MAXPOOL, 2, 2, 0, 0, 0, 0),
	 .n = 2, .n_in = 1, .in = {{4, 6, 5}}, .out = {2, 3, 5}, .train = 1},
	{"maxpool 2x2/2 same odd 5x5x3", POOL(OPS_MAXPOOL, 2, 2, 0, 0, 1, 1),
	 .n = 2, .n_in = 1, .in = {{5, 5, 3}}, .out = {3, 3, 3}, .train = 1},
	{"maxpool 3x3/2 pad 1 overlapping 7x7x3", POOL(OPS_MAXPOOL, 3, 2, 1, 1, 1, 1),
	 .n = 2, .n_in = 1, .in = {{7, 7, 3}}, .out = {4, 4, 3}, .train = 1},
	{"maxpool 3x3/1 valid 5x6x2", POOL(OPS_MAXPOOL, 3, 1, 0, 0, 0, 0),
	 .n = 3, .n_in = 1, .in = {{5, 6, 2}}, .out = {3, 4, 2}, .train = 1},
	{"maxpool 2x2/2 inference odd 5x5x3", POOL(OPS_MAXPOOL, 2, 2, 0, 0, 1, 1),
	 .n = 2, .n_in = 1, .in = {{5, 5, 3}}, .out = {3, 3, 3}},

	{"avgpool 3x3/2 pad 1 5x5x2", POOL(OPS_AVGPOOL, 3, 2, 1, 1, 1, 1),
	 .n = 2, .n_in = 1, .in = {{5, 5, 2}}, .out = {3, 3, 2}, .train = 1},
	{"avgpool 2x2/1 same 3x3x8", POOL(OPS_AVGPOOL, 2, 1, 0, 0, 1, 1),
	 .n = 3, .n_in = 1, .in = {{3, 3, 8}}, .out = {3, 3, 8}, .train = 1},
	{"avgpool 2x2/2 valid odd 7x7x3", POOL(OPS_AVGPOOL, 2, 2, 0, 0, 0, 0),
	 .n = 2, .n_in = 1, .in = {{7, 7, 3}}, .out = {3, 3, 3}, .train = 1},

	{"global_avg_pool 3x3x4", .kind = LAYER, .cfg = {.type = OPS_GLOBAL_AVG_POOL},
	 .n = 2, .n_in = 1, .in = {{3, 3, 4}}, .out = {1, 1, 4}, .train = 1},
	{"global_avg_pool odd 5x7x3", .kind = LAYER, .cfg = {.type = OPS_GLOBAL_AVG_POOL},
	 .n = 3, .n_in = 1, .in = {{5, 7, 3}}, .out = {1, 1, 3}, .train = 1},

	{"dense 10->6", .kind = LAYER, .cfg = {.type = OPS_DENSE, .units = 6, .bias = 1},
	 .n = 3, .n_in = 1, .in = {{1, 1, 10}}, .out = {1, 1, 6}, .train = 1},
	{"dense from 2x3x4->5, no bias", .kind = LAYER, .cfg = {.type = OPS_DENSE, .units = 5},
	 .n = 2, .n_in = 1, .in = {{2, 3, 4}}, .out = {1, 1, 5}, .train = 1},
	{"dense 7->3, no input gradient", .kind = LAYER,
	 .cfg = {.type = OPS_DENSE, .units = 3, .bias = 1},
	 .n = 5, .n_in = 1, .in = {{1, 1, 7}}, .out = {1, 1, 3}, .train = 1, .no_dx = 1},

	{"dropout 0.4 training 2x3x4", .kind = LAYER, .cfg = {.type = OPS_DROPOUT, .rate = 0.4f},
	 .n = 2, .n_in = 1, .in = {{2, 3, 4}}, .out = {2, 3, 4}, .train = 1},
	{"dropout 0 training", .kind = LAYER, .cfg = {.type = OPS_DROPOUT, .rate = 0},
	 .n = 2, .n_in = 1, .in = {{2, 3, 4}}, .out = {2, 3, 4}, .train = 1},
	{"dropout 0.3 inference", .kind = LAYER, .cfg = {.type = OPS_DROPOUT, .rate = 0.3f},
	 .n = 2, .n_in = 1, .in = {{3, 3, 3}}, .out = {3, 3, 3}},

	{"add of 3 inputs 2x2x3", .kind = LAYER, .cfg = {.type = OPS_ADD},
	 .n = 2, .n_in = 3, .in = {{2, 2, 3}, {2, 2, 3}, {2, 2, 3}}, .out = {2, 2, 3}, .train = 1},
	{"add of 2 inputs, fused relu", .kind = LAYER, .cfg = {.type = OPS_ADD, .fuse_relu = 1},
	 .n = 2, .n_in = 2, .in = {{3, 2, 5}, {3, 2, 5}}, .out = {3, 2, 5}, .train = 1},

	{"concat 2x3x2 + 2x3x3", .kind = LAYER, .cfg = {.type = OPS_CONCAT},
	 .n = 2, .n_in = 2, .in = {{2, 3, 2}, {2, 3, 3}}, .out = {2, 3, 5}, .train = 1},
	{"concat of 3 rank-2 5 + 1 + 4", .kind = LAYER, .cfg = {.type = OPS_CONCAT},
	 .n = 3, .n_in = 3, .in = {{1, 1, 5}, {1, 1, 1}, {1, 1, 4}}, .out = {1, 1, 10}, .train = 1},

	{"flatten 2x3x2", .kind = LAYER, .cfg = {.type = OPS_FLATTEN},
	 .n = 2, .n_in = 1, .in = {{2, 3, 2}}, .out = {1, 1, 12}, .train = 1},

	{"bf16 tensors: conv2d 3x3/1 same 6x6x16->16", CONV(3, 1, 1, 1, 1, 1, 16, 1),
	 .n = 2, .n_in = 1, .in = {{6, 6, 16}}, .out = {6, 6, 16}, .train = 1, .type = OPS_BF16,
	 .acts = OPS_BF16},
	{"bf16 tensors: conv2d 1x1/2 valid odd 7x7x8->4x4x16, no bias", CONV(1, 2, 0, 0, 0, 0, 16, 0),
	 .n = 3, .n_in = 1, .in = {{7, 7, 8}}, .out = {4, 4, 16}, .train = 1, .type = OPS_BF16,
	 .acts = OPS_BF16},
	{"bf16 tensors: conv2d 3x3/1 same 6x6x1->3, one channel in, three out",
	 CONV(3, 1, 1, 1, 1, 1, 3, 1), .n = 2, .n_in = 1, .in = {{6, 6, 1}}, .out = {6, 6, 3},
	 .train = 1, .type = OPS_BF16, .acts = OPS_BF16},
	{"bf16 tensors: conv2d 3x3/2 same 7x6x3->4x3x5 from an fp32 network input",
	 CONV(3, 2, 1, 0, 1, 1, 5, 1), .n = 3, .n_in = 1, .in = {{7, 6, 3}}, .out = {4, 3, 5},
	 .train = 1, .no_dx = 1, .type = OPS_BF16, .acts = OPS_BF16, .in_f32 = 1},
	{"bf16 tensors: batchnorm training odd 5x3x7, fused relu", .kind = LAYER,
	 .cfg = {.type = OPS_BATCHNORM, .eps = 1e-5f, .momentum = 0.99f, .fuse_relu = 1},
	 .n = 2, .n_in = 1, .in = {{5, 3, 7}}, .out = {5, 3, 7}, .train = 1, .type = OPS_BF16,
	 .acts = OPS_BF16},
	{"bf16 tensors: batchnorm training 4x4x16", .kind = LAYER,
	 .cfg = {.type = OPS_BATCHNORM, .eps = 1e-3f, .momentum = 0.9f},
	 .n = 3, .n_in = 1, .in = {{4, 4, 16}}, .out = {4, 4, 16}, .train = 1, .type = OPS_BF16,
	 .acts = OPS_BF16},
	{"bf16 tensors: batchnorm training, no input gradient", .kind = LAYER,
	 .cfg = {.type = OPS_BATCHNORM, .eps = 1e-3f, .momentum = 0.9f},
	 .n = 2, .n_in = 1, .in = {{4, 4, 3}}, .out = {4, 4, 3}, .train = 1, .no_dx = 1,
	 .type = OPS_BF16, .acts = OPS_BF16},
	{"bf16 tensors: batchnorm inference, fused relu", .kind = LAYER,
	 .cfg = {.type = OPS_BATCHNORM, .eps = 1e-3f, .momentum = 0.9f, .fuse_relu = 1},
	 .n = 2, .n_in = 1, .in = {{4, 4, 3}}, .out = {4, 4, 3}, .type = OPS_BF16,
	 .acts = OPS_BF16},
	{"bf16 tensors: relu 3x4x5", .kind = LAYER, .cfg = {.type = OPS_RELU},
	 .n = 2, .n_in = 1, .in = {{3, 4, 5}}, .out = {3, 4, 5}, .train = 1, .type = OPS_BF16,
	 .acts = OPS_BF16},
	{"bf16 tensors: maxpool 3x3/2 pad 1 overlapping 7x7x3", POOL(OPS_MAXPOOL, 3, 2, 1, 1, 1, 1),
	 .n = 2, .n_in = 1, .in = {{7, 7, 3}}, .out = {4, 4, 3}, .train = 1, .type = OPS_BF16,
	 .acts = OPS_BF16},
	{"bf16 tensors: maxpool 2x2/2 tiled 4x6x16", POOL(OPS_MAXPOOL, 2, 2, 0, 0, 0, 0),
	 .n = 2, .n_in = 1, .in = {{4, 6, 16}}, .out = {2, 3, 16}, .train = 1, .type = OPS_BF16,
	 .acts = OPS_BF16},
	{"bf16 tensors: avgpool 3x3/2 pad 1 5x5x2", POOL(OPS_AVGPOOL, 3, 2, 1, 1, 1, 1),
	 .n = 2, .n_in = 1, .in = {{5, 5, 2}}, .out = {3, 3, 2}, .train = 1, .type = OPS_BF16,
	 .acts = OPS_BF16},
	{"bf16 tensors: global_avg_pool odd 5x7x3", .kind = LAYER,
	 .cfg = {.type = OPS_GLOBAL_AVG_POOL}, .n = 3, .n_in = 1, .in = {{5, 7, 3}},
	 .out = {1, 1, 3}, .train = 1, .type = OPS_BF16, .acts = OPS_BF16},
	{"bf16 tensors: global_avg_pool 3x3x16 to an fp32 output", .kind = LAYER,
	 .cfg = {.type = OPS_GLOBAL_AVG_POOL}, .n = 2, .n_in = 1, .in = {{3, 3, 16}},
	 .out = {1, 1, 16}, .train = 1, .type = OPS_BF16, .acts = OPS_BF16, .out_f32 = 1},
	{"bf16 tensors: add of 3 inputs 2x2x3", .kind = LAYER, .cfg = {.type = OPS_ADD},
	 .n = 2, .n_in = 3, .in = {{2, 2, 3}, {2, 2, 3}, {2, 2, 3}}, .out = {2, 2, 3}, .train = 1,
	 .type = OPS_BF16, .acts = OPS_BF16},
	{"bf16 tensors: concat 2x3x2 + 2x3x3", .kind = LAYER, .cfg = {.type = OPS_CONCAT},
	 .n = 2, .n_in = 2, .in = {{2, 3, 2}, {2, 3, 3}}, .out = {2, 3, 5}, .train = 1,
	 .type = OPS_BF16, .acts = OPS_BF16},
	{"bf16 tensors: add of 2 inputs, fused relu", .kind = LAYER,
	 .cfg = {.type = OPS_ADD, .fuse_relu = 1}, .n = 2, .n_in = 2,
	 .in = {{3, 2, 5}, {3, 2, 5}}, .out = {3, 2, 5}, .train = 1, .type = OPS_BF16,
	 .acts = OPS_BF16},

	{"loss 4 x 5 classes, smoothing 0.1", .kind = LOSS, .n = 4, .count = 5, .smoothing = 0.1f},
	{"loss 7 x 10 classes, no smoothing", .kind = LOSS, .n = 7, .count = 10},
	{"sgd over 37 values", .kind = SGD, .count = 37},
	{"accumulate over 101 values", .kind = ACCUMULATE, .count = 101},
	{"accumulate over 101 bf16 values", .kind = ACCUMULATE, .count = 101, .type = OPS_BF16,
	 .acts = OPS_BF16},
	{"fp16 loss-scale unscale of 1000 gradients, finite and with an inf or a NaN",
	 .kind = UNSCALE, .count = 1000},
};

/* ---- inputs ---------------------------------------------------------------- */

static uint64_t rng_state;

static double urand(void)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* count values uniform in [lo, hi), in a new buffer the caller frees */
static float *random_tensor(size_t count, double lo, double hi)
{
	float *v = xmalloc((count ? count : 1) * sizeof(float));
	for (size_t i = 0; i < count; i++)
		v[i] = (float)(lo + (hi - lo) * urand());
	return v;
}

static float *copy_of(const float *v, size_t count)
{
	float *c = xmalloc((count ? count : 1) * sizeof(float));
	memcpy(c, v, count * sizeof(float));
	return c;
}

/* ---- comparing --------------------------------------------------------------- */

struct tol {
	double atol, rtol;
};

/* fp32: the backend rounds its sums in float, ref sums in double (the CPU
 * backend is within 5% of this tolerance, Winograd included), and
 * Winograd's transforms leave no simpler bound to derive. bf16 and fp16
 * reductions are held to fp_bound.h's bound instead (check_layer). */
static const struct tol fp32_tol = {1e-4, 1e-3};

static const char *type_name(enum ops_dtype t)
{
	return t == OPS_BF16 ? "bf16" : t == OPS_F16 ? "fp16" : "fp32";
}

/* How many values of a (the backend) are farther from b (ref) than
 * t.atol + t.rtol |b| + per_mag |mag| (mag NULL: b), or NaN where b is
 * not; *worst gets the farthest of them. */
static size_t count_outside(const float *a, const float *b, const float *mag, size_t count,
			    struct tol t, double per_mag, size_t *worst)
{
	size_t bad = 0;
	double worst_excess = 0;
	*worst = 0;
	for (size_t i = 0; i < count; i++) {
		double m = fabs(mag ? mag[i] : b[i]);
		double excess = fabs((double)a[i] - b[i]) - (t.atol + t.rtol * fabs(b[i]) + per_mag * m);
		if (excess > 0 || isnan(a[i]) != isnan(b[i])) {
			if (!bad || excess > worst_excess)
				*worst = i, worst_excess = excess;
			bad++;
		}
	}
	return bad;
}

/* Asserts every value of a (the backend) is close to b (ref). */
static void expect_close(const char *be, const struct ref_case *c, const char *tensor,
			 const float *a, const float *b, size_t count, struct tol t)
{
	size_t worst, bad = count_outside(a, b, NULL, count, t, 0, &worst);
	cr_assert_eq(bad, 0, "%s: %s: %s: %zu of %zu values differ from ref; worst [%zu]: %s %.9g, "
		     "ref %.9g", be, c->what, tensor, bad, count, worst, be, (double)a[worst],
		     (double)b[worst]);
}

/* How many times a bf16 case's op rounds a value to bf16 on its way: once
 * where it computes in fp32 and stores the result; an add of n inputs
 * rounds each partial sum (n - 1); oneDNN's average and max pooling add
 * each window's share of the gradient into the bf16 gradient, once per
 * window over a value. */
static int bf16_roundings(const struct ref_case *c)
{
	if (c->cfg.type == OPS_ADD)
		return c->n_in - 1;
	if (c->cfg.type == OPS_AVGPOOL || c->cfg.type == OPS_MAXPOOL) {
		int w = (c->cfg.kernel + c->cfg.stride - 1) / c->cfg.stride;
		return w * w;
	}
	return 1;
}

/* Whether ref on |inputs| gives the magnitude each value is rounded at:
 * ops linear in their input (the partial sums' magnitudes are at most the
 * sums of |terms|), and max pooling's backward, linear in dy once the
 * maxima are found (inputs_abs keeps its x). */
static int store_linear(const struct ref_case *c)
{
	return c->cfg.type == OPS_ADD || c->cfg.type == OPS_AVGPOOL ||
	       c->cfg.type == OPS_GLOBAL_AVG_POOL || c->cfg.type == OPS_MAXPOOL;
}

/* A tensor of a bf16 case's op that sums no products, or of a conv2d that
 * computed in fp32 and stored bf16: each of its roundings moves a value by
 * at most 2^-8 of the magnitude rounded (the |inputs| run's value av where
 * the op is linear, else |ref|), and the fp32 tolerance stays for what the
 * two sides compute differently in fp32. */
static void expect_stored(const char *be, const struct ref_case *c, const char *tensor,
			  const float *a, const float *r, const float *av, size_t count)
{
	int rounds = bf16_roundings(c);
	size_t worst, bad = count_outside(a, r, av, count, fp32_tol, rounds * 0x1p-8, &worst);
	cr_assert_eq(bad, 0, "%s: %s: %s: %zu of %zu values outside %d bf16 rounding(s) of ref; "
		     "worst [%zu]: %s %.9g, ref %.9g", be, c->what, tensor, bad, count, rounds, worst,
		     be, (double)a[worst], (double)r[worst]);
}

/* ---- one layer op on one backend --------------------------------------------- */

/* A layer and the tensors one backend's run of a case writes. */
struct side {
	struct ops_layer l;
	enum ops_dtype in_type[3];   /* the backend's, where the case stores bf16 */
	float *y, *dx[3];
	float *param[2], *grad[2];   /* w, b (conv2d, dense) or gamma, beta (batchnorm) */
	float *stat[4];              /* batchnorm: run_mean, run_var, save_mean, save_var */
	uint8_t *mask;               /* dropout */
};

/* What both sides start from. */
struct inputs {
	float *x[3], *dy;
	float *param[2];
	size_t nparam[2];
	float *run_mean, *run_var;
};

static void inputs_init(struct inputs *in, const struct ref_case *c)
{
	memset(in, 0, sizeof(*in));
	for (int k = 0; k < c->n_in; k++)
		in->x[k] = random_tensor((size_t)c->n * ops_shape_size(&c->in[k]), -1, 1);
	in->dy = random_tensor((size_t)c->n * ops_shape_size(&c->out), -1, 1);
	int cin = c->in[0].c;
	switch (c->cfg.type) {
	case OPS_CONV2D:
		in->nparam[0] = (size_t)c->cfg.units * c->cfg.kernel * c->cfg.kernel * cin;
		in->nparam[1] = c->cfg.bias ? (size_t)c->cfg.units : 0;
		break;
	case OPS_DENSE:
		in->nparam[0] = (size_t)c->cfg.units * ops_shape_size(&c->in[0]);
		in->nparam[1] = c->cfg.bias ? (size_t)c->cfg.units : 0;
		break;
	case OPS_BATCHNORM:
		in->nparam[0] = in->nparam[1] = (size_t)cin;
		in->run_mean = random_tensor((size_t)cin, -0.5, 0.5);
		in->run_var = random_tensor((size_t)cin, 0.5, 1.5);
		break;
	default:
		break;
	}
	for (int k = 0; k < 2; k++)
		if (in->nparam[k])
			in->param[k] = random_tensor(in->nparam[k], -0.5, 0.5);
	if (c->acts != OPS_BF16) /* else both sides read the values bf16 holds */
		return;
	for (int k = 0; k < c->n_in && !c->in_f32; k++)
		for (size_t i = 0; i < (size_t)c->n * ops_shape_size(&c->in[k]); i++)
			in->x[k][i] = ref_bf16_round(in->x[k][i]);
	for (size_t i = 0; i < (size_t)c->n * ops_shape_size(&c->out) && !c->out_f32; i++)
		in->dy[i] = ref_bf16_round(in->dy[i]);
}

/* The types of a bf16 case's input and output tensors on the backend. */
static enum ops_dtype x_type(const struct ref_case *c)
{
	return c->acts == OPS_BF16 && !c->in_f32 ? OPS_BF16 : OPS_F32;
}

static enum ops_dtype y_type(const struct ref_case *c)
{
	return c->acts == OPS_BF16 && !c->out_f32 ? OPS_BF16 : OPS_F32;
}

/* count floats as a new buffer of type t (bf16: their patterns, ref_cast) */
static void *stored(const float *v, size_t count, enum ops_dtype t)
{
	if (t == OPS_F32)
		return copy_of(v, count);
	uint16_t *h = xmalloc((count ? count : 1) * sizeof(uint16_t));
	cr_assert_eq(ref_cast(NULL, count, v, OPS_F32, h, t), 0, "%s", util_last_error());
	return h;
}

static void unstored(float *v, const void *p, size_t count, enum ops_dtype t)
{
	if (t == OPS_F32)
		memcpy(v, p, count * sizeof(float));
	else
		cr_assert_eq(ref_cast(NULL, count, p, t, v, OPS_F32), 0, "%s", util_last_error());
}

static void inputs_release(struct inputs *in)
{
	for (int k = 0; k < 3; k++)
		free(in->x[k]);
	free(in->dy);
	free(in->param[0]), free(in->param[1]);
	free(in->run_mean), free(in->run_var);
}

static void side_init(struct side *s, const struct ref_case *c, const struct inputs *in)
{
	memset(s, 0, sizeof(*s));
	s->l.cfg = c->cfg;
	s->l.index = 4;
	s->l.n_in = c->n_in;
	s->l.in = c->in;
	s->l.out = c->out;
	size_t ny = (size_t)c->n * ops_shape_size(&c->out);
	s->y = xmalloc(ny * sizeof(float));
	for (int k = 0; k < c->n_in; k++)
		if (!c->no_dx)
			s->dx[k] = xmalloc((size_t)c->n * ops_shape_size(&c->in[k]) * sizeof(float));
	for (int k = 0; k < 2; k++)
		if (in->param[k]) {
			s->param[k] = copy_of(in->param[k], in->nparam[k]);
			s->grad[k] = xcalloc(in->nparam[k], sizeof(float));
		}
	if (c->cfg.type == OPS_BATCHNORM) {
		int ch = c->in[0].c;
		s->stat[0] = copy_of(in->run_mean, (size_t)ch);
		s->stat[1] = copy_of(in->run_var, (size_t)ch);
		s->stat[2] = xcalloc((size_t)ch, sizeof(float));
		s->stat[3] = xcalloc((size_t)ch, sizeof(float));
		s->l.gamma = s->param[0], s->l.dgamma = s->grad[0];
		s->l.beta = s->param[1], s->l.dbeta = s->grad[1];
		s->l.run_mean = s->stat[0], s->l.run_var = s->stat[1];
		s->l.save_mean = s->stat[2], s->l.save_var = s->stat[3];
	} else {
		s->l.w = s->param[0], s->l.dw = s->grad[0];
		s->l.b = s->param[1], s->l.db = s->grad[1];
	}
	if (c->cfg.type == OPS_DROPOUT)
		s->l.mask = s->mask = xcalloc(ny, 1);
}

static void side_release(struct side *s, struct ops_ctx *ctx)
{
	const struct ops_layer_ops *op = ctx->be->layer[s->l.cfg.type];
	if (op->release)
		op->release(ctx, &s->l);
	free(s->y);
	for (int k = 0; k < 3; k++)
		free(s->dx[k]);
	for (int k = 0; k < 2; k++)
		free(s->param[k]), free(s->grad[k]);
	for (int k = 0; k < 4; k++)
		free(s->stat[k]);
	free(s->mask);
}

/* Forward (and backward when the case trains) of one side from the inputs:
 * on the tensors' types of a bf16 case where the op takes them (ref's ops
 * do not: it computes in fp32 on the same values), the results then
 * written back as floats. */
static void run_side(const struct ref_case *c, struct ops_ctx *ctx, struct side *s,
		     const struct inputs *in)
{
	const char *be = ctx->be->name;
	const struct ops_layer_ops *op = ctx->be->layer[c->cfg.type];
	int store = c->acts != OPS_F32 && op->bf16;
	enum ops_dtype xt = store ? x_type(c) : OPS_F32, yt = store ? y_type(c) : OPS_F32;
	size_t ny = (size_t)c->n * ops_shape_size(&c->out);
	void *x[3] = {NULL}, *dx[3] = {NULL}, *y = s->y, *dy = in->dy;
	for (int k = 0; k < c->n_in; k++) {
		size_t nx = (size_t)c->n * ops_shape_size(&c->in[k]);
		s->in_type[k] = xt;
		x[k] = store ? stored(in->x[k], nx, xt) : in->x[k];
		dx[k] = store && s->dx[k] ? xmalloc(nx * ops_dtype_size(xt)) : s->dx[k];
	}
	if (store) {
		s->l.in_type = s->in_type;
		s->l.out_type = yt;
		y = xmalloc(ny * ops_dtype_size(yt));
		dy = stored(in->dy, ny, yt);
	}
	const float *xs[3] = {x[0], x[1], x[2]};
	float *dxs[3] = {dx[0], dx[1], dx[2]};
	cr_assert_eq(op->forward(ctx, &s->l, c->n, xs, y, c->train), 0, "%s: %s: forward: %s",
		     be, c->what, util_last_error());
	if (c->train)
		cr_assert_eq(op->backward(ctx, &s->l, c->n, xs, y, dy, dxs), 0,
			     "%s: %s: backward: %s", be, c->what, util_last_error());
	if (!store)
		return;
	unstored(s->y, y, ny, yt);
	for (int k = 0; k < c->n_in; k++) {
		if (s->dx[k])
			unstored(s->dx[k], dx[k], (size_t)c->n * ops_shape_size(&c->in[k]), xt);
		free(x[k]);
		free(dx[k]);
	}
	free(y);
	free(dy);
}

/* The inputs with every value made positive: ref's run on them gives each
 * output's sum of |products| (fp_bound.h); max pooling's x is kept, so
 * that its backward routes |dy| where it routed dy. */
static void inputs_abs(struct inputs *a, const struct ref_case *c, const struct inputs *in)
{
	memset(a, 0, sizeof(*a));
	size_t ny = (size_t)c->n * ops_shape_size(&c->out);
	for (int k = 0; k < c->n_in; k++) {
		size_t nx = (size_t)c->n * ops_shape_size(&c->in[k]);
		a->x[k] = copy_of(in->x[k], nx);
		for (size_t i = 0; i < nx && c->cfg.type != OPS_MAXPOOL; i++)
			a->x[k][i] = fabsf(a->x[k][i]);
	}
	a->dy = copy_of(in->dy, ny);
	for (size_t i = 0; i < ny; i++)
		a->dy[i] = fabsf(a->dy[i]);
	for (int k = 0; k < 2; k++) {
		a->nparam[k] = in->nparam[k];
		if (!in->param[k])
			continue;
		a->param[k] = copy_of(in->param[k], in->nparam[k]);
		for (size_t i = 0; i < in->nparam[k]; i++)
			a->param[k][i] = fabsf(a->param[k][i]);
	}
}

/* How many products each value of a reduction's tensor sums (0: y, 1: dx,
 * 2: dw, 3: db), counted without the padding's zeros (an upper bound). */
static int reduction_terms(const struct ref_case *c, int tensor)
{
	int k2 = c->cfg.kernel * c->cfg.kernel, spatial = c->n * c->out.h * c->out.w;
	if (c->cfg.type == OPS_DENSE)
		return tensor == 0 ? (int)ops_shape_size(&c->in[0]) : tensor == 1 ? c->cfg.units : c->n;
	return tensor == 0 ? k2 * c->in[0].c : tensor == 1 ? k2 * c->cfg.units : spatial;
}

static double largest_abs(const float *v, size_t count)
{
	double m = 0;
	for (size_t i = 0; v && i < count; i++)
		m = fmax(m, fabs(v[i]));
	return m;
}

/* One tensor of a bf16 or fp16 reduction held to fp_bound.h's bound; with
 * AAH_BOUND_REPORT set, the worst value's figures go to stderr. */
static void expect_bounded(const char *be, const struct ref_case *c, const char *tensor,
			   const struct side *s, const struct side *r, const float *a,
			   const float *rv, const float *sums, size_t count, int which)
{
	struct fp_bound b = {
		.terms = reduction_terms(c, which),
		.bmax = which == 0 && c->cfg.bias ? largest_abs(r->param[1], (size_t)c->cfg.units) : 0,
		.operands = c->type, .out_a = s->l.ran_out, .out_r = r->l.ran_out,
		.operand_slack = which == 3,
		.bias_again = which == 0 && c->cfg.bias && s->l.out_type != OPS_F32,
	};
	struct fp_bound_worst w;
	size_t out = fp_bound_check(&b, a, rv, sums, count, &w);
	if (getenv("AAH_BOUND_REPORT"))
		fprintf(stderr, "bound: %s: %s: %s: worst [%zu] |%s - ref| = %.3g (%s %.9g, ref "
			"%.9g), bound %.3g (n %d, sum |products| %.4g): %.3f of it\n", be, c->what,
			tensor, w.at, be, w.diff, be, (double)a[w.at], (double)rv[w.at], w.bound,
			b.terms, w.sum, w.ratio);
	cr_assert_eq(out, 0, "%s: %s: %s: %zu of %zu values outside the %s bound; worst [%zu]: "
		     "%s %.9g, ref %.9g, |diff| %.3g > bound %.3g (n %d, sum |products| %.4g)",
		     be, c->what, tensor, out, count, type_name(c->type), w.at, be,
		     (double)a[w.at], (double)rv[w.at], w.diff, w.bound, b.terms, w.sum);
}

/* Forward (and backward when the case trains) on the backend of ctx and on
 * ref, from the same inputs; every output compared. A bf16 or fp16 case is
 * held to fp_bound.h's bound, or, where the backend computed the layer in
 * fp32 (ops_layer.ran: cpu_conv.c does where oneDNN has no fast bf16
 * kernel), to ref in fp32 with the fp32 tolerance. */
static void check_layer(const struct ref_case *c, struct ops_ctx *ctx, struct ops_ctx *ref,
			struct tol t)
{
	const char *be = ctx->be->name;
	struct inputs in, ab;
	struct side s, r, a;   /* the backend's, ref's, ref's on |inputs| */
	int sums = c->cfg.type == OPS_CONV2D || c->cfg.type == OPS_DENSE;
	int lowp = c->type != OPS_F32 && sums;
	int store = c->acts == OPS_BF16 && !sums; /* expect_stored */
	inputs_init(&in, c);
	side_init(&s, c, &in);
	side_init(&r, c, &in);
	size_t ny = (size_t)c->n * ops_shape_size(&c->out);

	run_side(c, ctx, &s, &in);
	if (lowp && s.l.ran == OPS_F32) {
		if (getenv("AAH_BOUND_REPORT"))
			fprintf(stderr, "bound: %s: %s: computed in fp32, %s asked: held to ref in "
				"fp32 with the fp32 tolerance\n", be, c->what, type_name(c->type));
		cr_assert_eq(ref->be->set_precision(ref, "fp32"), 0);
		lowp = 0;
		store = c->acts == OPS_BF16;
		t = fp32_tol;
	} else if (lowp) {
		cr_assert_eq(s.l.ran, c->type, "%s: %s: computed in %s, %s asked", be, c->what,
			     type_name(s.l.ran), type_name(c->type));
	}
	run_side(c, ref, &r, &in);
	int abs_run = lowp || (store && store_linear(c));
	if (abs_run) {
		inputs_abs(&ab, c, &in);
		side_init(&a, c, &ab);
		run_side(c, ref, &a, &ab);
	}
#define EXPECT(name, sv, rv, av, count, which)                                      \
	do {                                                                        \
		if (lowp)                                                           \
			expect_bounded(be, c, name, &s, &r, sv, rv, av, count, which); \
		else if (store && (which) < 2)                                      \
			expect_stored(be, c, name, sv, rv, av, count);              \
		else                                                                \
			expect_close(be, c, name, sv, rv, count, t);                \
	} while (0)
	EXPECT("y", s.y, r.y, abs_run ? a.y : NULL, ny, 0);
	if (c->cfg.type == OPS_BATCHNORM && c->train) {
		static const char *const names[] = {"run_mean", "run_var", "save_mean", "save_var"};
		for (int k = 0; k < 4; k++)
			expect_close(be, c, names[k], s.stat[k], r.stat[k], (size_t)c->in[0].c, t);
	}
	if (c->cfg.type == OPS_DROPOUT && c->train && c->cfg.rate > 0) {
		size_t kept = 0;
		for (size_t i = 0; i < ny; i++) {
			cr_assert_eq(s.mask[i], r.mask[i], "%s: %s: mask[%zu]", be, c->what, i);
			kept += s.mask[i];
		}
		cr_assert(kept > 0 && kept < ny, "%s: %s: a mask that keeps %zu of %zu", be,
			  c->what, kept, ny);
	}

	if (c->train) {
		static const char *const dx_names[] = {"dx[0]", "dx[1]", "dx[2]"};
		for (int k = 0; k < c->n_in && !c->no_dx; k++)
			EXPECT(dx_names[k], s.dx[k], r.dx[k], abs_run ? a.dx[k] : NULL,
			       (size_t)c->n * ops_shape_size(&c->in[k]), 1);
		static const char *const grad_names[] = {"d param[0] (dw, dgamma)",
							  "d param[1] (db, dbeta)"};
		for (int k = 0; k < 2; k++)
			if (in.param[k])
				EXPECT(grad_names[k], s.grad[k], r.grad[k], lowp ? a.grad[k] : NULL,
				       in.nparam[k], 2 + k);
	}
#undef EXPECT
	if (abs_run) {
		side_release(&a, ref);
		inputs_release(&ab);
	}
	side_release(&s, ctx);
	side_release(&r, ref);
	inputs_release(&in);
}

/* ---- the loss, SGD, accumulate ------------------------------------------------ */

static void check_loss(const struct ref_case *c, struct ops_ctx *ctx, struct ops_ctx *ref)
{
	const char *be = ctx->be->name;
	int n = c->n, k = c->count;
	float *z = random_tensor((size_t)n * k, -3, 3);
	float *dz = xmalloc(sizeof(float) * n * k), *rdz = xmalloc(sizeof(float) * n * k);
	int *labels = xmalloc(sizeof(int) * n);
	for (int i = 0; i < n; i++)
		labels[i] = (int)(urand() * k);
	z[0 * k + labels[0]] = 9;   /* one sure hit, so "correct" is not always 0 */
	double loss = 0.5, rloss = 0.5;   /* both add to what is there */
	long correct = 2, rcorrect = 2;
	cr_assert_eq(ctx->be->loss(ctx, n, k, z, labels, c->smoothing, 1.0f, dz, &loss, &correct), 0);
	cr_assert_eq(ops_loss_read(ctx, &loss, &correct), 0, "%s", util_last_error());
	cr_assert_eq(ref->be->loss(ref, n, k, z, labels, c->smoothing, 1.0f, rdz, &rloss, &rcorrect),
		     0);
	expect_close(be, c, "dlogits", dz, rdz, (size_t)n * k, fp32_tol);
	cr_assert(fabs(loss - rloss) <= 1e-5 * fabs(rloss), "%s: %s: loss %.9g, ref %.9g", be,
		  c->what, loss, rloss);
	cr_assert_eq(correct, rcorrect, "%s: %s: correct %ld, ref %ld", be, c->what, correct,
		     rcorrect);
	cr_assert_gt(rcorrect, 2);
	free(z), free(dz), free(rdz), free(labels);
}

static void check_sgd(const struct ref_case *c, struct ops_ctx *ctx, struct ops_ctx *ref)
{
	size_t n = (size_t)c->count;
	float *w = random_tensor(n, -1, 1), *g = random_tensor(n, -1, 1), *v = random_tensor(n, -1, 1);
	float *rw = copy_of(w, n), *rv = copy_of(v, n);
	cr_assert_eq(ctx->be->sgd(ctx, n, w, g, v, 0.05f, 0.9f, 1e-3f), 0);
	cr_assert_eq(ref->be->sgd(ref, n, rw, g, rv, 0.05f, 0.9f, 1e-3f), 0);
	expect_close(ctx->be->name, c, "w", w, rw, n, fp32_tol);
	expect_close(ctx->be->name, c, "v", v, rv, n, fp32_tol);
	free(w), free(g), free(v), free(rw), free(rv);
}

/* fp32 within the tolerance; bf16 to the bit: both sum in fp32 and round
 * to nearest even. */
static void check_accumulate(const struct ref_case *c, struct ops_ctx *ctx, struct ops_ctx *ref)
{
	size_t n = (size_t)c->count;
	float *y = random_tensor(n, -1, 1), *x = random_tensor(n, -1, 1), *ry = copy_of(y, n);
	if (c->acts == OPS_BF16) {
		uint16_t *hy = stored(y, n, OPS_BF16), *hx = stored(x, n, OPS_BF16);
		uint16_t *rhy = stored(y, n, OPS_BF16);
		cr_assert_eq(ctx->be->accumulate(ctx, n, OPS_BF16, hy, hx), 0, "%s",
			     util_last_error());
		cr_assert_eq(ref->be->accumulate(ref, n, OPS_BF16, rhy, hx), 0);
		size_t moved = 0;
		for (size_t i = 0; i < n; i++) {
			cr_assert_eq(hy[i], rhy[i], "%s: %s: y[%zu] %#06x, ref %#06x", ctx->be->name,
				     c->what, i, hy[i], rhy[i]);
			moved += ref_bf16_to_f32(hy[i]) != ref_bf16_round(y[i]);
		}
		cr_assert_gt(moved, n / 2, "bf16 accumulate changed %zu of %zu values", moved, n);
		free(hy), free(hx), free(rhy);
	} else {
		cr_assert_eq(ctx->be->accumulate(ctx, n, OPS_F32, y, x), 0);
		cr_assert_eq(ref->be->accumulate(ref, n, OPS_F32, ry, x), 0);
		expect_close(ctx->be->name, c, "y", y, ry, n, fp32_tol);
	}
	free(y), free(x), free(ry);
}

/* Gradients scaled by 2^16 and back: finite ones are multiplied by 1/scale
 * as ref multiplies them (exactly: a power of two); one inf, -inf or NaN
 * anywhere, at the ends or inside, and neither says finite. */
static void check_unscale(const struct ref_case *c, struct ops_ctx *ctx, struct ops_ctx *ref)
{
	size_t n = (size_t)c->count;
	float *g = random_tensor(n, -65536, 65536), *rg = copy_of(g, n);
	int finite = -1, ref_finite = -1;
	cr_assert_eq(ctx->be->unscale(ctx, n, g, 0x1p-16f, &finite), 0, "%s", util_last_error());
	cr_assert_eq(ref->be->unscale(ref, n, rg, 0x1p-16f, &ref_finite), 0);
	cr_assert(finite == 1 && ref_finite == 1, "%s: finite %d, ref %d", ctx->be->name, finite,
		  ref_finite);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(g[i], rg[i], "%s: g[%zu] %.9g, ref %.9g", ctx->be->name, i,
			     (double)g[i], (double)rg[i]);
	const float bad[] = { INFINITY, -INFINITY, NAN };
	const size_t at[] = { 0, n / 2, n - 1 };
	for (size_t b = 0; b < ARRAY_SIZE(bad); b++)
		for (size_t k = 0; k < ARRAY_SIZE(at); k++) {
			float *h = random_tensor(n, -1, 1);
			h[at[k]] = bad[b];
			finite = -1;
			cr_assert_eq(ctx->be->unscale(ctx, n, h, 0.5f, &finite), 0);
			cr_assert_eq(finite, 0, "%s: %g at %zu taken as finite", ctx->be->name,
				     (double)bad[b], at[k]);
			h[at[k]] = bad[b];   /* undefined after a non-finite call: set again */
			cr_assert_eq(ref->be->unscale(ref, n, h, 0.5f, &ref_finite), 0);
			cr_assert_eq(ref_finite, 0);
			free(h);
		}
	free(g), free(rg);
}

/* ---- the runs: every backend but ref, times every case -------------------------- */

struct run {
	size_t backend;    /* index in ops_backends() */
	size_t c;          /* index in cases[] */
};

static void free_runs(struct criterion_test_params *p)
{
	cr_free(p->params);
}

ParameterizedTestParameters(kernels_ref, op_matches_ref)
{
	size_t nb, n = 0;
	const struct ops_backend *const *be = ops_backends(&nb);
	struct run *runs = cr_malloc(sizeof(*runs) * nb * ARRAY_SIZE(cases));
	for (size_t b = 0; b < nb; b++) {
		/* on the device machine (AAH_REQUIRE_CUDA=1) the GPU backends'
		 * cases alone: the host backends' are `make test`'s */
		if (cuda_required() && !(be[b]->caps & OPS_CAP_GPU))
			continue;
		for (size_t c = 0; strcmp(be[b]->name, "ref") && c < ARRAY_SIZE(cases); c++)
			if (cases[c].type != OPS_F16 || (be[b]->caps & OPS_CAP_FP16))
				runs[n++] = (struct run){b, c};
	}
	return cr_make_param_array(struct run, runs, n, free_runs);
}

/* Whether any op of the backend takes bf16 tensors. */
static int stores_bf16(const struct ops_backend *be)
{
	for (int t = 0; t < OPS_NTYPES; t++)
		if (be->layer[t] && be->layer[t]->bf16)
			return 1;
	return 0;
}

/* The case's convolution algorithm and precision on a started context, and
 * a fixed step (dropout masks depend on it and on the seed). */
static int setup(struct ops_ctx *ctx, const struct ref_case *c)
{
	ctx->step = 3;
	ctx->conv_algo = c->conv_algo;
	return ctx->be->set_precision(ctx, type_name(c->type));
}

static void ref_context(struct ops_ctx *ref, const struct ref_case *c)
{
	cr_assert_eq(ops_ctx_init(ref, "ref", 1, 7), 0, "ref: %s", util_last_error());
	cr_assert_eq(setup(ref, c), 0, "ref: %s: %s", c->what, util_last_error());
}

static void check_case(const struct ref_case *c, struct ops_ctx *ctx, struct ops_ctx *ref,
		       struct tol t)
{
	rng_state = 42 + (uint64_t)(c - cases);
	switch (c->kind) {
	case LAYER:
		check_layer(c, ctx, ref, t);
		break;
	case LOSS:
		check_loss(c, ctx, ref);
		break;
	case SGD:
		check_sgd(c, ctx, ref);
		break;
	case ACCUMULATE:
		check_accumulate(c, ctx, ref);
		break;
	case UNSCALE:
		check_unscale(c, ctx, ref);
		break;
	}
}

ParameterizedTest(struct run *run, kernels_ref, op_matches_ref)
{
	size_t nb;
	const struct ops_backend *be = ops_backends(&nb)[run->backend];
	const struct ref_case *c = &cases[run->c];
	struct ops_ctx ctx, ref;
	util_set_quiet(1);   /* the reasons go into the skip messages */
	if (ops_ctx_init(&ctx, be->name, 2, 7)) {
		/* a GPU backend's init says "no CUDA device: ..." where there is none */
		if (be->caps & OPS_CAP_GPU)
			cuda_unavailable(be->name, util_last_error(), c->what);
		cr_skip_test("skipped: %s cannot start on this machine (%s): %s", be->name,
			     util_last_error(), c->what);
	}
	/* on the device machine (AAH_REQUIRE_CUDA=1) a GPU backend skips nothing */
	int must = (be->caps & OPS_CAP_GPU) && cuda_required();
	if (c->kind == LAYER && !be->layer[c->cfg.type]) {
		cr_assert(strcmp(be->name, "cpu"), "cpu: the CPU backend lacks an op: %s", c->what);
		cr_assert(!must, "AAH_REQUIRE_CUDA=1: skipped: %s has no such op: %s", be->name,
			  c->what);
		cr_skip_test("skipped: %s has no such op: %s", be->name, c->what);
	}
	if (setup(&ctx, c)) {
		cr_assert(!must, "AAH_REQUIRE_CUDA=1: skipped: %s has no %s on this machine (%s): %s",
			  be->name, type_name(c->type), util_last_error(), c->what);
		cr_skip_test("skipped: %s has no %s on this machine (%s): %s", be->name,
			     type_name(c->type), util_last_error(), c->what);
	}
	/* a declared capability, not the device's: skipped on the device too */
	if (c->acts != OPS_F32 && !(c->kind == LAYER ? be->layer[c->cfg.type]->bf16 : stores_bf16(be))) {
		cr_assert(strcmp(be->name, "cpu"), "cpu: stores no bf16 tensors for: %s", c->what);
		cr_skip_test("skipped: %s stores no tensor in bf16 for this op: %s", be->name, c->what);
	}
	ref_context(&ref, c);
	check_case(c, &ctx, &ref, fp32_tol);
	ops_ctx_release(&ref);
	ops_ctx_release(&ctx);
}

/* The CPU backend's bf16 convolutions against ref's bf16 emulation on every
 * machine where oneDNN has bf16 convolutions (AVX-512; the probe says so,
 * and the test skips saying why elsewhere): capped at AVX-512 without its BF16 instructions, oneDNN
 * runs emulated or reference bf16 kernels, which the trainer's probe
 * refuses (too slow to train with) but which round what the fast ones
 * round. So bf16 is turned on directly here, as test_kernels_grad.c does
 * (every layer computes in bf16, reference kernels too), and held to the
 * bound: the emulation must round the same values the same way
 * (ref_bf16_emulation_rounds shows the rounding is far outside the fp32
 * tolerance). */
Test(kernels_ref, cpu_bf16_conv_matches_ref_emulation)
{
	char skip[512];
	cr_assert_eq(cpu_probe_cap(dnnl_cpu_isa_avx512_core), 0, "%s", util_last_error());
	if (cpu_probe_skip(CPU_FEAT_BF16_CONV, skip, sizeof(skip)))
		cr_skip_test("%s", skip);
	int checked = 0;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const struct ref_case *c = &cases[i];
		if (c->type != OPS_BF16)
			continue;
		struct ops_ctx ctx, ref;
		cr_assert_eq(ops_ctx_init(&ctx, "cpu", 2, 7), 0);
		ctx.step = 3;
		ctx.conv_algo = c->conv_algo;
		ctx.conv_type = OPS_BF16;
		ref_context(&ref, c);
		cr_assert_eq(ref.conv_type, OPS_BF16);
		check_case(c, &ctx, &ref, fp32_tol);
		ops_ctx_release(&ref);
		ops_ctx_release(&ctx);
		checked++;
	}
	cr_assert_geq(checked, 2);
}

/* ref's 16-bit conv2d is its fp32 conv2d on input and weights rounded to
 * the type, and differs from fp32 on the raw ones. In fp16 the result is
 * rounded too (as cuDNN writes it), so the case has no bias. */
static void emulation_rounds(enum ops_dtype type, float (*round)(float))
{
	const struct ref_case *c = NULL;
	int bias = type == OPS_BF16;
	for (size_t i = 0; i < ARRAY_SIZE(cases) && !c; i++)
		if (cases[i].type == type && cases[i].cfg.bias == bias)
			c = &cases[i];
	cr_assert_not_null(c);
	struct ops_ctx ref;
	ref_context(&ref, c);
	rng_state = 5;
	struct inputs in;
	inputs_init(&in, c);
	struct side lo, raw, rounded;   /* 16-bit; fp32 on x, w; fp32 on rounded x, w */
	side_init(&lo, c, &in);
	side_init(&raw, c, &in);
	side_init(&rounded, c, &in);
	size_t nx = (size_t)c->n * ops_shape_size(&c->in[0]), ny = (size_t)c->n * ops_shape_size(&c->out);
	float *xr = copy_of(in.x[0], nx);
	for (size_t i = 0; i < nx; i++)
		xr[i] = round(xr[i]);
	for (size_t i = 0; i < in.nparam[0]; i++)
		rounded.param[0][i] = round(rounded.param[0][i]);
	const float *xs[1] = {in.x[0]}, *xrs[1] = {xr};
	const struct ops_layer_ops *op = ref.be->layer[OPS_CONV2D];
	cr_assert_eq(op->forward(&ref, &lo.l, c->n, xs, lo.y, 1), 0);
	cr_assert_eq(ref.be->set_precision(&ref, "fp32"), 0);
	cr_assert_eq(op->forward(&ref, &raw.l, c->n, xs, raw.y, 1), 0);
	cr_assert_eq(op->forward(&ref, &rounded.l, c->n, xrs, rounded.y, 1), 0);
	size_t outside = 0, moved = 0;
	for (size_t i = 0; i < ny; i++) {
		float want = type == OPS_F16 ? round(rounded.y[i]) : rounded.y[i];
		cr_assert_eq(lo.y[i], want, "y[%zu]: %s %.9g, fp32 of rounded %.9g", i,
			     type_name(type), (double)lo.y[i], (double)want);
		outside += fabs(lo.y[i] - raw.y[i]) > fp32_tol.atol + fp32_tol.rtol * fabs(raw.y[i]);
		moved += lo.y[i] != raw.y[i];
	}
	if (type == OPS_BF16)
		cr_assert_gt(outside, ny / 4, "bf16 moved only %zu of %zu values past the fp32 "
			     "tolerance", outside, ny);
	cr_assert_gt(moved, ny / 2, "%s moved only %zu of %zu values", type_name(type), moved, ny);
	free(xr);
	side_release(&lo, &ref);
	side_release(&raw, &ref);
	side_release(&rounded, &ref);
	inputs_release(&in);
	ops_ctx_release(&ref);
}

/* Values of a defective kernel's y and dw outside the bound around ref's
 * r, with a ref's run on |inputs| (the bound of check_layer's y and dw). */
static size_t outside_bound(const struct ref_case *c, const struct side *bad,
			    const struct side *r, const struct side *a)
{
	struct fp_bound_worst w;
	struct fp_bound y = {.terms = reduction_terms(c, 0), .operands = c->type,
			     .bmax = largest_abs(r->param[1], (size_t)c->cfg.units)};
	struct fp_bound dw = {.terms = reduction_terms(c, 2), .operands = c->type};
	size_t ny = (size_t)c->n * ops_shape_size(&c->out);
	size_t nw = (size_t)c->cfg.units * c->cfg.kernel * c->cfg.kernel * c->in[0].c;
	return fp_bound_check(&y, bad->y, r->y, a->y, ny, &w) +
	       fp_bound_check(&dw, bad->grad[0], r->grad[0], a->grad[0], nw, &w);
}

/* The bound catches real defects (fp_bound.h). Against ref's bf16 conv2d:
 * a kernel that sums the same bf16 operands in another order and precision
 * (fp32 on the rounded values: inside the bound), one that drops one term
 * of each sum reading one weight, and one that rounds its operands to fp16
 * where bf16 was asked (both outside). */
Test(kernels_ref, bf16_bound_catches_defects)
{
	const struct ref_case *c = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(cases) && !c; i++)
		if (cases[i].type == OPS_BF16 && cases[i].cfg.bias && !cases[i].no_dx)
			c = &cases[i];
	cr_assert_not_null(c);
	struct ops_ctx ref, exact;   /* bf16 emulation; fp32 sums of the values it is given */
	ref_context(&ref, c);
	cr_assert_eq(ops_ctx_init(&exact, "ref", 1, 7), 0);
	exact.step = ref.step;
	rng_state = 11;
	struct inputs in, ab, lo[3];   /* lo: rounded to bf16; to fp16; bf16, one weight 0 */
	inputs_init(&in, c);
	inputs_abs(&ab, c, &in);
	float (*round[3])(float) = {ref_bf16_round, ref_f16_round, ref_bf16_round};
	size_t nx = (size_t)c->n * ops_shape_size(&c->in[0]);
	size_t ny = (size_t)c->n * ops_shape_size(&c->out);
	for (int k = 0; k < 3; k++) {
		memset(&lo[k], 0, sizeof(lo[k]));
		lo[k].x[0] = copy_of(in.x[0], nx);
		lo[k].dy = copy_of(in.dy, ny);
		for (int j = 0; j < 2; j++) {
			lo[k].nparam[j] = in.nparam[j];
			lo[k].param[j] = copy_of(in.param[j], in.nparam[j]);
		}
		for (size_t i = 0; i < nx; i++)
			lo[k].x[0][i] = round[k](lo[k].x[0][i]);
		for (size_t i = 0; i < ny; i++)
			lo[k].dy[i] = round[k](lo[k].dy[i]);
		for (size_t i = 0; i < in.nparam[0]; i++)
			lo[k].param[0][i] = round[k](lo[k].param[0][i]);
	}
	lo[2].param[0][c->in[0].c + 1] = 0;   /* output channel 0, tap (0, 1), channel 1 */
	struct side r, a, bad[3];
	side_init(&r, c, &in);
	side_init(&a, c, &ab);
	run_side(c, &ref, &r, &in);
	run_side(c, &ref, &a, &ab);
	size_t out[3];
	for (int k = 0; k < 3; k++) {
		side_init(&bad[k], c, &lo[k]);
		run_side(c, &exact, &bad[k], &lo[k]);
		out[k] = outside_bound(c, &bad[k], &r, &a);
	}
	if (getenv("AAH_BOUND_REPORT"))
		fprintf(stderr, "bound: defects on %s: values outside, of %zu: bf16 summed in fp32 "
			"%zu, fp16 operands %zu, a dropped term %zu\n", c->what,
			ny + in.nparam[0], out[0], out[1], out[2]);
	cr_assert_eq(out[0], 0, "bf16 operands summed in fp32: %zu values outside the bound", out[0]);
	cr_assert_gt(out[1], 0, "operands rounded to fp16 where bf16 was asked passed the bound");
	cr_assert_gt(out[2], 0, "a dropped term passed the bound");
	for (int k = 0; k < 3; k++) {
		side_release(&bad[k], &exact);
		inputs_release(&lo[k]);
	}
	side_release(&r, &ref);
	side_release(&a, &ref);
	inputs_release(&ab);
	inputs_release(&in);
	ops_ctx_release(&exact);
	ops_ctx_release(&ref);
}

Test(kernels_ref, ref_bf16_emulation_rounds)
{
	emulation_rounds(OPS_BF16, ref_bf16_round);
	/* round to nearest, ties to even; inf and NaN stay */
	cr_assert_eq(ref_bf16_round(1.0f), 1.0f);
	cr_assert_eq(ref_bf16_round(1.0f + 0x1p-8f), 1.0f);                   /* tie: to even */
	cr_assert_eq(ref_bf16_round(1.0f + 0x1p-7f + 0x1p-8f), 1.0f + 0x1p-6f); /* tie: to even */
	cr_assert_eq(ref_bf16_round(1.0f + 0x1p-8f + 0x1p-20f), 1.0f + 0x1p-7f);
	cr_assert_eq(ref_bf16_round(-3.0f - 0x1p-9f), -3.0f);
	cr_assert(isinf(ref_bf16_round(INFINITY)) && isnan(ref_bf16_round(NAN)));
}

/* fp16's range is what the loss scale works around: 65504 is its largest
 * value, 65520 and up round to inf, 2^-24 is its smallest and 2^-25 rounds
 * (a tie) to zero. */
Test(kernels_ref, ref_fp16_emulation_rounds)
{
	emulation_rounds(OPS_F16, ref_f16_round);
	cr_assert_eq(ref_f16_round(1.0f + 0x1p-11f), 1.0f);                   /* tie: to even */
	cr_assert_eq(ref_f16_round(1.0f + 0x1p-11f + 0x1p-20f), 1.0f + 0x1p-10f);
	cr_assert_eq(ref_f16_round(65519.0f), 65504.0f);
	cr_assert(isinf(ref_f16_round(65520.0f)) && ref_f16_round(65520.0f) > 0);
	cr_assert(isinf(ref_f16_round(-1e6f)) && ref_f16_round(-1e6f) < 0);
	cr_assert_eq(ref_f16_round(0x1p-24f), 0x1p-24f);
	cr_assert_eq(ref_f16_round(0x1p-25f), 0.0f);
	cr_assert(isnan(ref_f16_round(NAN)));
}

/* ops_layer_ops.recompute: on every backend that has one, batchnorm's
 * output again from its input and saved statistics is the training
 * forward's to the bit (the model trains on it, trialimg/memplan.h), in
 * every layout the backend takes, with and without a fused relu. */
static void recompute_matches(struct ops_ctx *ctx, enum ops_layout lay, int fuse, int n, int h,
			      int c)
{
	struct ops_shape s = { h, h, c };
	enum ops_layout in_lay[1] = { lay };
	struct ops_layer l = { 0 };
	l.cfg.type = OPS_BATCHNORM;
	l.cfg.eps = 1e-3f;
	l.cfg.momentum = 0.99f;
	l.cfg.fuse_relu = fuse;
	l.n_in = 1;
	l.in = &s;
	l.out = s;
	l.in_layout = in_lay;
	l.out_layout = lay;
	float *p = xcalloc(8 * (size_t)c, sizeof(float));
	float **f[] = { &l.gamma, &l.beta, &l.run_mean, &l.run_var, &l.save_mean, &l.save_var,
			&l.dgamma, &l.dbeta };
	for (size_t k = 0; k < ARRAY_SIZE(f); k++)
		*f[k] = p + k * (size_t)c;
	for (int i = 0; i < c; i++) {
		l.gamma[i] = 0.5f + (float)(i % 7) * 0.1f;
		l.beta[i] = (float)(i % 5) * 0.1f - 0.2f;
		l.run_var[i] = 1;
	}
	size_t count = (size_t)n * ops_shape_size(&s);
	rng_state = 42;
	float *x = random_tensor(count, -1.2, 2.1), *y = xmalloc(count * sizeof(float));
	float *again = xmalloc(count * sizeof(float));
	const float *xs[1] = { x };
	const struct ops_layer_ops *o = ctx->be->layer[OPS_BATCHNORM];
	cr_assert_eq(o->forward(ctx, &l, n, xs, y, 1), 0, "%s", util_last_error());
	memset(again, 0xff, count * sizeof(float)); /* NaN: an unwritten value differs */
	cr_assert_eq(o->recompute(ctx, &l, n, xs, again), 0, "%s", util_last_error());
	size_t differ = 0, first = 0;
	for (size_t i = count; i-- > 0;)
		if (memcmp(&y[i], &again[i], sizeof(float))) {
			differ++;
			first = i;
		}
	cr_assert_eq(differ, 0,
		     "%s: batchnorm %dx%dx%d batch %d, layout %d, relu %d: %zu of %zu values "
		     "recomputed differ; first [%zu]: %.9g, the forward wrote %.9g",
		     ctx->be->name, h, h, c, n, lay, fuse, differ, count, first, again[first],
		     y[first]);
	if (o->release)
		o->release(ctx, &l);
	free(p);
	free(x);
	free(y);
	free(again);
}

/* Every backend of the table with a batchnorm recompute, on the device
 * (gpu 1) or on the host (0); how many ran. */
static size_t recompute_on(int gpu)
{
	size_t nb, tried = 0;
	const struct ops_backend *const *all = ops_backends(&nb);
	for (size_t b = 0; b < nb; b++) {
		const struct ops_layer_ops *o = all[b]->layer[OPS_BATCHNORM];
		if (!o || !o->recompute || !(all[b]->caps & OPS_CAP_GPU) != !gpu)
			continue;
		struct ops_ctx ctx;
		if (ops_ctx_init(&ctx, all[b]->name, 2, 1)) {
			if (gpu)
				cuda_unavailable(all[b]->name, util_last_error(), "recompute");
			cr_assert_fail("%s: %s", all[b]->name, util_last_error());
		}
		recompute_matches(&ctx, OPS_NHWC, 1, 8, 14, 64);
		recompute_matches(&ctx, OPS_NHWC, 0, 4, 7, 3);
		if (ctx.blocked != OPS_NHWC && o->blocked) {
			recompute_matches(&ctx, ctx.blocked, 1, 8, 14, 64);
			recompute_matches(&ctx, ctx.blocked, 0, 2, 28, 32);
		}
		ops_ctx_release(&ctx);
		tried++;
	}
	return tried;
}

Test(kernels_ref, recomputed_batchnorm_is_the_forwards_to_the_bit)
{
	cr_assert_gt(recompute_on(0), 0, "no backend recomputes batchnorm: the cpu backend should");
}

/* The same on a GPU backend: cuda's recompute, run there. */
Test(kernels_ref, recomputed_batchnorm_is_the_forwards_to_the_bit_on_a_gpu)
{
	if (!recompute_on(1))
		cuda_not_built("batchnorm's recompute");
}
