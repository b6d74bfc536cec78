/* cuda_conv.c: conv2d on cuDNN's legacy convolution API, NHWC.
 *
 *   x: (n, H, W, Cin)   w: (Cout, K, K, Cin) (cuDNN's NHWC filter, KRSC)
 *   b: (Cout)           y: (n, Ho, Wo, Cout)
 *
 * cuDNN pads symmetrically; a layer padded unevenly ("same" with an even
 * kernel or an odd size at stride 2) has its input copied into a zero
 * frame of pad_t, pad_l, pad_b, pad_r first (cuda_pad) and its input
 * gradient cropped back out of one (cuda_crop). The bias is a kernel of
 * its own, its gradient a per-channel sum (cuda_eltwise.cu); where the
 * model folds the bias into the batchnorm after the layer
 * (ops_layer.bias_folded), training adds neither (the batchnorm takes the
 * bias's part, kernels/cuda/cuda_bn.cu) and inference adds it.
 *
 * Math is CUDNN_FMA_MATH: true fp32, no TF32, so the results meet ref's
 * fp32 tolerance. With ctx->conv_type bf16 or fp16 (--precision) cuDNN
 * computes on tensor cores with fp32 accumulation (16-bit descriptors,
 * fp32 compute type) from 16-bit x, w and dy into 16-bit y, dx and dw.
 * Tensors stored in that type are read and written as they are (under
 * bf16 the model stores activations and their gradients in bf16:
 * ops_layer.in_type, out_type); the rest goes through a copy (cuda_convert):
 * the fp32 master weights and their gradients always, the network's fp32
 * input, and under fp16 every activation. In fp16 a value past 65504
 * becomes inf, which the trainer's loss scale catches in the gradients.
 * The bias is added where the sums are fp32, else to the stored 16-bit y
 * (rounding it a second time). Where the model asks (ops_layer.add_dx0:
 * the input feeds another layer too, whose gradient is already in dx[0]),
 * the backward-data pass adds into dx[0] with a beta of 1, cuDNN's blend
 * in fp32 rounded once, instead of writing a part the model accumulates
 * (AAH_CUDA_ADD_DX=0: never asked). Algorithms come from cuDNN's heuristics
 * (cudnnGet*Algorithm_v7) once per batch size: with --conv_algo direct the
 * implicit-GEMM ones where cuDNN lists them as usable, else its first; each
 * runs with the math type the heuristics gave it (cuda_conv_math). A 16-bit
 * layer for which cuDNN lists no usable algorithm (a first layer of 1 or 3
 * input channels may have none in the legacy API) falls back to fp32, saying
 * so once, converting its 16-bit tensors: it is not padded to 8 channels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/cuda_ctx.h"

/* A layer's descriptors and algorithms for one batch size (l->priv). */
struct conv_plan {
	int n;
	enum ops_dtype asked;   /* ctx->conv_type when the plan was made */
	enum ops_dtype type;    /* descriptors and buffers: fp32, bf16 or fp16 */
	int padded;             /* uneven padding: x goes through a (hp, wp) frame */
	int hp, wp;
	cudnnTensorDescriptor_t x, y;
	cudnnFilterDescriptor_t w;
	cudnnConvolutionDescriptor_t conv;
	cudnnConvolutionFwdAlgo_t fwd;
	cudnnConvolutionBwdDataAlgo_t bwd_data;
	cudnnConvolutionBwdFilterAlgo_t bwd_filter;
	cudnnMathType_t fwd_math, bwd_data_math, bwd_filter_math;
	size_t pass_ws[3];      /* bytes: each pass's workspace (enum pass) */
	size_t ws;              /* bytes: the largest of the three */
	int measured[3];        /* each pass's algorithm measured (or not to be) */
};

enum pass { FWD, BWD_DATA, BWD_FILTER };

static void plan_free(struct conv_plan *p)
{
	if (!p)
		return;
	if (p->x)
		cudnnDestroyTensorDescriptor(p->x);
	if (p->y)
		cudnnDestroyTensorDescriptor(p->y);
	if (p->w)
		cudnnDestroyFilterDescriptor(p->w);
	if (p->conv)
		cudnnDestroyConvolutionDescriptor(p->conv);
	free(p);
}

cudnnMathType_t cuda_conv_math(enum ops_dtype type, cudnnMathType_t listed)
{
	return type == OPS_F32 ? CUDNN_FMA_MATH : listed;
}

/* NO_ALGO: cuDNN lists no usable algorithm for the layer in p->type */
enum { NO_ALGO = -2 };

/* The most workspace a pass's algorithm may take: one that needs more is
 * passed over, so the memory plan counts cuDNN's workspace before the
 * device is known (conv_workspace). The implicit-GEMM algorithms take
 * little or none, and cuDNN lists them for every layer. */
#define CONV_WS_MAX ((size_t)256 << 20)

/* One of the algorithms cuDNN lists or measures for a pass, whatever its
 * perf struct's type. */
struct algo_choice {
	cudnnStatus_t status;
	int algo, math;
	size_t memory;
};

#define CHOICES(perf, n, out)                                                          \
	for (int k_ = 0; k_ < (n); k_++)                                               \
		(out)[k_] = (struct algo_choice){(perf)[k_].status, (int)(perf)[k_].algo, \
						 (int)(perf)[k_].mathType, (perf)[k_].memory}

/* The first of n that can run here (cuDNN says so, within CONV_WS_MAX), or
 * with direct the one whose algorithm is `direct` where it can; -1: none. */
static int usable(const struct algo_choice *c, int n, int direct)
{
	int pick = -1;
	for (int k = 0; k < n; k++)
		if (c[k].status == CUDNN_STATUS_SUCCESS && c[k].memory <= CONV_WS_MAX &&
		    (pick < 0 || c[k].algo == direct))
			pick = k;
	return pick;
}

static const char *const pass_name[] = {"forward", "backward-data", "backward-filter"};

/* AAH_CUDA_ALGO_LOG=1: one stderr line a pass of a layer as its plan is
 * made, the heuristics' pick and what they listed before it that needed
 * more than CONV_WS_MAX (at AIPerf's batch the first choices may: the
 * lease's part 7 asks). */
static void log_pick(int layer, int n, enum pass which, const struct algo_choice *c, int pick)
{
	const char *v = getenv("AAH_CUDA_ALGO_LOG");
	if (!v || strcmp(v, "1") != 0)
		return;
	int over = 0, first = -1;
	for (int k = 0; k < pick; k++)
		if (c[k].status == CUDNN_STATUS_SUCCESS && c[k].memory > CONV_WS_MAX && over++ == 0)
			first = k;
	fprintf(stderr, "cuda conv layer %d batch %d %s: algo %d math %d %.1f MiB; %d listed before it "
		"need more than %zu MiB", layer, n, pass_name[which], c[pick].algo, c[pick].math,
		(double)c[pick].memory / (1 << 20), over, CONV_WS_MAX >> 20);
	if (first >= 0)
		fprintf(stderr, " (the first: algo %d, %.1f MiB)", c[first].algo,
			(double)c[first].memory / (1 << 20));
	fputc('\n', stderr);
}

/* p's algorithm, math and workspace for a pass */
static void set_pass(struct conv_plan *p, enum pass which, int algo, int math, size_t ws)
{
	cudnnMathType_t m = cuda_conv_math(p->type, (cudnnMathType_t)math);
	switch (which) {
	case FWD:
		p->fwd = (cudnnConvolutionFwdAlgo_t)algo, p->fwd_math = m;
		break;
	case BWD_DATA:
		p->bwd_data = (cudnnConvolutionBwdDataAlgo_t)algo, p->bwd_data_math = m;
		break;
	default:
		p->bwd_filter = (cudnnConvolutionBwdFilterAlgo_t)algo, p->bwd_filter_math = m;
		break;
	}
	p->pass_ws[which] = ws;
	p->ws = 0;
	for (int k = 0; k < 3; k++)
		p->ws = p->pass_ws[k] > p->ws ? p->pass_ws[k] : p->ws;
}

/* cuDNN's heuristics for every pass (cudnnGet*Algorithm_v7): the first
 * listed that can run here, or with --conv_algo direct the implicit-GEMM
 * one where it can. */
static int pick_algos(struct ops_ctx *ctx, const struct ops_layer *l, struct conv_plan *p)
{
	cudnnHandle_t h = cuda_ctx(ctx)->dnn;
	int direct = ctx->conv_algo == OPS_CONV_DIRECT, got = 0;
	struct algo_choice ch[3][16];
	int n[3];
	cudnnConvolutionFwdAlgoPerf_t f[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
	cudnnConvolutionBwdDataAlgoPerf_t d[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
	cudnnConvolutionBwdFilterAlgoPerf_t g[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
	size_t sz[3];
	CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(h, p->x, p->w, p->conv, p->y,
							   CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, f));
	CHOICES(f, n[FWD] = got, ch[FWD]);
	CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
		h, p->w, p->y, p->conv, p->x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, d));
	CHOICES(d, n[BWD_DATA] = got, ch[BWD_DATA]);
	CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
		h, p->x, p->y, p->conv, p->w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, g));
	CHOICES(g, n[BWD_FILTER] = got, ch[BWD_FILTER]);
	static const int implicit[3] = {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
					CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
					CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1};
	int pick[3];
	for (int k = 0; k < 3; k++)
		if ((pick[k] = usable(ch[k], n[k], direct ? implicit[k] : -1)) < 0)
			return error("cuDNN has no %s convolution algorithm for this layer within "
				     "%zu MiB of workspace", pass_name[k], CONV_WS_MAX >> 20), NO_ALGO;
	for (int k = 0; k < 3; k++)
		log_pick(l->index, p->n, (enum pass)k, ch[k], pick[k]);
	CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
		h, p->x, p->w, p->conv, p->y, (cudnnConvolutionFwdAlgo_t)ch[FWD][pick[FWD]].algo,
		&sz[FWD]));
	CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
		h, p->w, p->y, p->conv, p->x,
		(cudnnConvolutionBwdDataAlgo_t)ch[BWD_DATA][pick[BWD_DATA]].algo, &sz[BWD_DATA]));
	CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
		h, p->x, p->y, p->conv, p->w,
		(cudnnConvolutionBwdFilterAlgo_t)ch[BWD_FILTER][pick[BWD_FILTER]].algo,
		&sz[BWD_FILTER]));
	for (int k = 0; k < 3; k++)
		set_pass(p, (enum pass)k, ch[k][pick[k]].algo, ch[k][pick[k]].math, sz[k]);
	return 0;
}

/* cuDNN describes no tensor of 2^31 values or more: a batch whose input
 * (in its zero frame) or output is that large cannot run in one call. */
#define CUDNN_MAX_VALUES ((size_t)1 << 31)

static size_t largest_tensor(const struct ops_layer *l, int n)
{
	const struct ops_layer_cfg *c = &l->cfg;
	const struct ops_shape *s = &l->in[0];
	size_t x = (size_t)n * (s->h + c->pad_t + c->pad_b) * (s->w + c->pad_l + c->pad_r) * s->c;
	size_t y = (size_t)n * ops_shape_size(&l->out);
	return x > y ? x : y;
}

static int plan_init(struct ops_ctx *ctx, const struct ops_layer *l, int n, enum ops_dtype type,
		     struct conv_plan *p)
{
	if (largest_tensor(l, n) >= CUDNN_MAX_VALUES)
		return error("conv2d layer %d: a batch of %d makes a tensor of %zu values, past the "
			     "2^31 cuDNN takes: train with a smaller batch (the memory plan caps it "
			     "so, aah-trial --plan)", l->index, n, largest_tensor(l, n));
	const struct ops_layer_cfg *c = &l->cfg;
	const struct ops_shape *s = &l->in[0];
	int pad_h = c->pad_t, pad_w = c->pad_l, h = s->h, w = s->w;
	p->n = n;
	p->asked = ctx->conv_type;
	p->type = type;
	cudnnDataType_t dt = p->type == OPS_BF16  ? CUDNN_DATA_BFLOAT16
			     : p->type == OPS_F16 ? CUDNN_DATA_HALF
						  : CUDNN_DATA_FLOAT;
	p->padded = cuda_conv_framed(c);
	if (p->padded) {
		p->hp = h + c->pad_t + c->pad_b;
		p->wp = w + c->pad_l + c->pad_r;
		h = p->hp, w = p->wp, pad_h = pad_w = 0;
	}
	CUDNN_CHECK(cudnnCreateTensorDescriptor(&p->x));
	CUDNN_CHECK(cudnnCreateTensorDescriptor(&p->y));
	CUDNN_CHECK(cudnnCreateFilterDescriptor(&p->w));
	CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&p->conv));
	CUDNN_CHECK(cudnnSetTensor4dDescriptor(p->x, CUDNN_TENSOR_NHWC, dt, n, s->c, h, w));
	CUDNN_CHECK(cudnnSetTensor4dDescriptor(p->y, CUDNN_TENSOR_NHWC, dt, n, l->out.c, l->out.h,
					       l->out.w));
	CUDNN_CHECK(cudnnSetFilter4dDescriptor(p->w, dt, CUDNN_TENSOR_NHWC, c->units, s->c, c->kernel,
					       c->kernel));
	CUDNN_CHECK(cudnnSetConvolution2dDescriptor(p->conv, pad_h, pad_w, c->stride, c->stride, 1, 1,
						    CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
	CUDNN_CHECK(cudnnSetConvolutionMathType(p->conv,
						p->type != OPS_F32 ? CUDNN_TENSOR_OP_MATH
								   : CUDNN_FMA_MATH));
	int on, oc, oh, ow;
	CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(p->conv, p->x, p->w, &on, &oc, &oh, &ow));
	if (on != n || oc != l->out.c || oh != l->out.h || ow != l->out.w)
		return error("conv2d layer %d: cuDNN computes a %dx%dx%d output, the model %dx%dx%d",
			     l->index, oh, ow, oc, l->out.h, l->out.w, l->out.c);
	return pick_algos(ctx, l, p);
}

/* The layer's plan for batch size n, made on first use. */
static int plan_of(struct ops_ctx *ctx, struct ops_layer *l, int n, struct conv_plan **out)
{
	struct conv_plan *p = l->priv;
	if (!p || p->n != n || p->asked != ctx->conv_type) {
		int fell_back = p && p->asked == ctx->conv_type && p->type != p->asked;
		plan_free(p);
		l->priv = p = xcalloc(1, sizeof(*p));
		int rc = plan_init(ctx, l, n, ctx->conv_type, p);
		if (rc == NO_ALGO && ctx->conv_type != OPS_F32) {
			if (!fell_back)
				warning("conv2d layer %d (%d input channels): cuDNN has no %s "
					"algorithm for it; it runs in fp32", l->index, l->in[0].c,
					ctx->conv_type == OPS_BF16 ? "bf16" : "fp16");
			plan_free(p);
			l->priv = p = xcalloc(1, sizeof(*p));
			rc = plan_init(ctx, l, n, OPS_F32, p);
		}
		if (rc) {
			plan_free(p);
			l->priv = NULL;
			return -1;
		}
	}
	*out = p;
	return 0;
}

/* Whether pass `which` is still to be measured: its first call then takes
 * CONV_WS_MAX of workspace, what cudnnFind* may try. */
static int to_measure(const struct ops_layer *l, const struct conv_plan *p, enum pass which)
{
	double flops = 2.0 * p->n * l->out.h * l->out.w * l->cfg.units * l->cfg.kernel *
		       l->cfg.kernel * l->in[0].c;
	return !p->measured[which] && cuda_find_wanted(flops);
}

/* The workspace a pass's call takes: its algorithm's, or CONV_WS_MAX when
 * it is measured first. */
static size_t pass_workspace(const struct ops_layer *l, const struct conv_plan *p, enum pass which)
{
	return to_measure(l, p, which) ? CONV_WS_MAX : p->pass_ws[which];
}

/* Pass `which` measured once (cudnnFind*Ex on the op's own operands a, b
 * and output out, ws of CONV_WS_MAX bytes; the output is written again by
 * the pass itself) or taken from the measurements kept for this device
 * (cuda_find.c); the fastest that can run here replaces the heuristics'. */
static int measure(struct ops_ctx *ctx, const struct ops_layer *l, struct conv_plan *p,
		   enum pass which, const void *a, const void *b, void *out, void *ws)
{
	if (!to_measure(l, p, which)) {
		p->measured[which] = 1;
		return 0;
	}
	p->measured[which] = 1;
	int cx, hx, wx, ph, pw, sh, sw, dh, dw;
	cudnnDataType_t dt;
	cudnnConvolutionMode_t mode;
	CUDNN_CHECK(cudnnGetConvolution2dDescriptor(p->conv, &ph, &pw, &sh, &sw, &dh, &dw, &mode, &dt));
	cx = l->in[0].c, hx = p->padded ? p->hp : l->in[0].h, wx = p->padded ? p->wp : l->in[0].w;
	char shape[256];
	snprintf(shape, sizeof(shape), "%s:n%d:%dx%dx%d:k%d:s%d:p%d,%d:u%d:t%d", pass_name[which],
		 p->n, hx, wx, cx, l->cfg.kernel, l->cfg.stride, ph, pw, l->cfg.units, (int)p->type);
	struct cuda_found f;
	if (!cuda_find_lookup(ctx, shape, &f)) {
		cudnnHandle_t h = cuda_ctx(ctx)->dnn;
		struct algo_choice ch[16];
		int got = 0;
		CUDNN_CHECK(cudnnSetConvolutionMathType(p->conv, p->type != OPS_F32 ? CUDNN_TENSOR_OP_MATH
										: CUDNN_FMA_MATH));
		ledger_launch(&cuda_ctx(ctx)->ledger, "cudnn find", NULL, 0);
		if (which == FWD) {
			cudnnConvolutionFwdAlgoPerf_t r[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
			CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
				h, p->x, a, p->w, b, p->conv, p->y, out, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
				&got, r, ws, CONV_WS_MAX));
			CHOICES(r, got, ch);
		} else if (which == BWD_DATA) {
			cudnnConvolutionBwdDataAlgoPerf_t r[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
			CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(
				h, p->w, a, p->y, b, p->conv, p->x, out,
				CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, r, ws, CONV_WS_MAX));
			CHOICES(r, got, ch);
		} else {
			cudnnConvolutionBwdFilterAlgoPerf_t r[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
			CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
				h, p->x, a, p->y, b, p->conv, p->w, out,
				CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, r, ws, CONV_WS_MAX));
			CHOICES(r, got, ch);
		}
		int k = usable(ch, got, -1);   /* fastest first */
		if (k < 0)
			return 0;                  /* the heuristics' stays */
		f = (struct cuda_found){.algo = ch[k].algo, .math = ch[k].math, .ws = ch[k].memory};
		cuda_find_store(ctx, shape, &f);
	}
	set_pass(p, which, f.algo, f.math, f.ws);
	return 0;
}

/* Whether the backward-data pass for a batch of n can add into dx[0]
 * (ops_layer_ops.adds_dx0): the forward's plan for n reads and writes the
 * input as it is stored, in no frame, and its algorithm is measured
 * already (cudnnFind writes its output, what is there would be lost). */
static int conv_adds_dx0(struct ops_ctx *ctx, const struct ops_layer *l, int n)
{
	const struct conv_plan *p = l->priv;
	return cuda_run(ctx)->add_dx && p && p->n == n && p->asked == ctx->conv_type &&
	       !p->padded && p->type == ops_in_type(l, 0) && !to_measure(l, p, BWD_DATA);
}

/* x (of type t) as cuDNN reads it: x itself, or x in its zero frame. */
static int framed(struct ops_ctx *ctx, const struct ops_layer *l, const struct conv_plan *p,
		  int n, enum ops_dtype t, void *x, void **xf)
{
	const struct ops_shape *s = &l->in[0];
	*xf = x;
	if (!p->padded)
		return 0;
	if (cuda_scratch(ctx, cuda_bytes((size_t)n * p->hp * p->wp * s->c, t), xf))
		return -1;
	return cuda_pad(ctx, t, n, s->h, s->w, s->c, p->hp, p->wp, l->cfg.pad_t,
				       l->cfg.pad_l, x, *xf);
}

/* count values at x, stored as t, as cuDNN reads them (in p->type): x
 * itself, or a copy in scratch. */
static int operand(struct ops_ctx *ctx, const struct conv_plan *p, size_t count, void *x,
		   enum ops_dtype t, void **out)
{
	*out = x;
	if (t == p->type)
		return 0;
	if (cuda_scratch(ctx, cuda_bytes(count, p->type), out))
		return -1;
	return cuda_convert(ctx, count, x, t, *out, p->type);
}

/* The nw fp32 weights at w (device copy gw) as cuDNN reads them: their
 * twin where the backend keeps one in p->type (ops_backend.twin), else
 * operand()'s. */
static int weights(struct ops_ctx *ctx, const struct conv_plan *p, const float *w, size_t nw,
		   void *gw, void **out)
{
	enum ops_dtype t;
	void *tw = p->type != OPS_F32 ? cuda_twin_at(ctx, w, nw, &t) : NULL;
	if (tw && t == p->type) {
		*out = tw;
		return 0;
	}
	return operand(ctx, p, nw, gw, OPS_F32, out);
}

/* Where cuDNN writes count values (in p->type) meant for y, stored as t: y
 * itself, or scratch that stored() then converts into y. */
static int result(struct ops_ctx *ctx, const struct conv_plan *p, size_t count, void *y,
		  enum ops_dtype t, void **out)
{
	*out = y;
	return t != p->type ? cuda_scratch(ctx, cuda_bytes(count, p->type), out) : 0;
}

static int stored(struct ops_ctx *ctx, const struct conv_plan *p, size_t count, void *r, void *y,
		  enum ops_dtype t)
{
	return r != y ? cuda_convert(ctx, count, r, p->type, y, t) : 0;
}

/* Values in x as cuDNN reads it (in its frame when padded unevenly). */
static size_t framed_count(const struct ops_layer *l, const struct conv_plan *p, int n)
{
	const struct ops_shape *s = &l->in[0];
	return p->padded ? (size_t)n * p->hp * p->wp * s->c : (size_t)n * ops_shape_size(s);
}

/* What a cuDNN call moves: its operands, read and written once each. */
static void counted(struct cuda_ctx *c, const char *what, const struct conv_plan *p, size_t nx,
		    size_t nw, size_t ny)
{
	size_t e = ops_dtype_size(p->type);
	ledger_launch(&c->ledger, what, NULL, (double)(nx + nw + ny) * e);
}

static int conv_forward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			float *y, int train)
{
	struct cuda_ctx *c = cuda_ctx(ctx);
	struct conv_plan *p;
	enum ops_dtype tx = ops_in_type(l, 0), ty = l->out_type;
	size_t nx = (size_t)n * ops_shape_size(&l->in[0]), ny = (size_t)n * ops_shape_size(&l->out);
	size_t nw = (size_t)l->cfg.units * l->cfg.kernel * l->cfg.kernel * l->in[0].c;
	void *gx, *gxf, *gw, *gb = NULL, *gy, *ws, *lx, *lw, *ly;
	const float one = 1, zero = 0;
	if (cuda_begin(ctx) || plan_of(ctx, l, n, &p) || cuda_in(ctx, x[0], cuda_bytes(nx, tx), &gx) ||
	    cuda_in(ctx, l->w, nw * 4, &gw) ||
	    (l->cfg.bias && !(train && l->bias_folded) &&
	     cuda_in(ctx, l->b, (size_t)l->cfg.units * 4, &gb)) ||
	    cuda_out(ctx, y, cuda_bytes(ny, ty), 0, &gy) ||
	    cuda_scratch(ctx, pass_workspace(l, p, FWD), &ws) || framed(ctx, l, p, n, tx, gx, &gxf) ||
	    operand(ctx, p, framed_count(l, p, n), gxf, tx, &lx) ||
	    weights(ctx, p, l->w, nw, gw, &lw) || result(ctx, p, ny, gy, ty, &ly) ||
	    measure(ctx, l, p, FWD, lx, lw, ly, ws))
		return -1;
	l->ran = l->ran_out = p->type;   /* the sums land in p->type, then stored() */
	CUDNN_CHECK(cudnnSetConvolutionMathType(p->conv, p->fwd_math));
	counted(c, "cudnn conv fwd", p, framed_count(l, p, n), nw, ny);
	CUDNN_CHECK(cudnnConvolutionForward(c->dnn, &one, p->x, lx, p->w, lw, p->conv, p->fwd, ws,
					    p->pass_ws[FWD], &zero, p->y, ly));
	/* the bias where the sums are fp32 (cuDNN's, else y's once stored): a
	 * 16-bit y that cuDNN wrote is rounded again with it */
	if (gb && p->type == OPS_F32 &&
	    cuda_bias_add(ctx, OPS_F32, ny / l->cfg.units, l->cfg.units, gb, ly))
		return -1;
	if (stored(ctx, p, ny, ly, gy, ty))
		return -1;
	if (gb && p->type != OPS_F32 &&
	    cuda_bias_add(ctx, ty, ny / l->cfg.units, l->cfg.units, gb, gy))
		return -1;
	return cuda_end(ctx);
}

static int conv_backward(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			 const float *y, const float *dy, float *const *dx)
{
	(void)y;
	struct cuda_ctx *c = cuda_ctx(ctx);
	const struct ops_shape *s = &l->in[0];
	struct conv_plan *p;
	enum ops_dtype tx = ops_in_type(l, 0), ty = l->out_type;
	size_t nx = (size_t)n * ops_shape_size(s), ny = (size_t)n * ops_shape_size(&l->out);
	size_t nw = (size_t)l->cfg.units * l->cfg.kernel * l->cfg.kernel * s->c;
	void *gx, *gxf, *gw, *gdw, *gdb = NULL, *gdy, *gdx, *ws, *lx, *lw, *ldy, *ldw;
	const float one = 1, zero = 0, beta_dx = l->add_dx0 ? 1 : 0;
	size_t nxf, wsb;
	if (cuda_begin(ctx) || plan_of(ctx, l, n, &p))
		return -1;
	if (l->add_dx0 && !conv_adds_dx0(ctx, l, n))
		return error("conv2d layer %d: asked to add its input gradient, which it "
			     "cannot here", l->index);
	wsb = pass_workspace(l, p, BWD_FILTER);
	if (dx[0] && pass_workspace(l, p, BWD_DATA) > wsb)
		wsb = pass_workspace(l, p, BWD_DATA);
	if (cuda_in(ctx, x[0], cuda_bytes(nx, tx), &gx) ||
	    cuda_in(ctx, l->w, nw * 4, &gw) || cuda_in(ctx, dy, cuda_bytes(ny, ty), &gdy) ||
	    cuda_out(ctx, l->dw, nw * 4, 0, &gdw) ||
	    (l->cfg.bias && !l->bias_folded &&
	     cuda_out(ctx, l->db, (size_t)l->cfg.units * 4, 0, &gdb)) ||
	    /* staged (AAH_CUDA_STAGED=1), a gradient added into is copied in */
	    cuda_out(ctx, dx[0], cuda_bytes(nx, tx), l->add_dx0, &gdx) ||
	    cuda_scratch(ctx, wsb, &ws) ||
	    framed(ctx, l, p, n, tx, gx, &gxf) ||
	    operand(ctx, p, nxf = framed_count(l, p, n), gxf, tx, &lx) ||
	    operand(ctx, p, ny, gdy, ty, &ldy) || result(ctx, p, nw, gdw, OPS_F32, &ldw) ||
	    measure(ctx, l, p, BWD_FILTER, lx, ldy, ldw, ws))
		return -1;
	l->ran = l->ran_out = p->type;
	/* from dy as stored: the bias is not part of the 16-bit convolution */
	if (gdb && cuda_bias_grad(ctx, ty, ny / l->cfg.units, l->cfg.units, gdy, gdb))
		return -1;
	CUDNN_CHECK(cudnnSetConvolutionMathType(p->conv, p->bwd_filter_math));
	counted(c, "cudnn conv bwd filter", p, nxf, nw, ny);
	CUDNN_CHECK(cudnnConvolutionBackwardFilter(c->dnn, &one, p->x, lx, p->y, ldy, p->conv,
						   p->bwd_filter, ws, p->pass_ws[BWD_FILTER], &zero, p->w,
						   ldw));
	if (stored(ctx, p, nw, ldw, gdw, OPS_F32))
		return -1;
	if (gdx) {
		void *gdxf = gdx, *ldx;   /* the input gradient in the frame, then cropped */
		if ((p->padded && cuda_scratch(ctx, cuda_bytes(nxf, tx), &gdxf)) ||
		    weights(ctx, p, l->w, nw, gw, &lw) || result(ctx, p, nxf, gdxf, tx, &ldx) ||
		    measure(ctx, l, p, BWD_DATA, lw, ldy, ldx, ws))
			return -1;
		CUDNN_CHECK(cudnnSetConvolutionMathType(p->conv, p->bwd_data_math));
		counted(c, "cudnn conv bwd data", p, nxf * (l->add_dx0 ? 2 : 1), nw, ny);
		CUDNN_CHECK(cudnnConvolutionBackwardData(c->dnn, &one, p->w, lw, p->y, ldy, p->conv,
							 p->bwd_data, ws, p->pass_ws[BWD_DATA], &beta_dx,
							 p->x, ldx));
		if (stored(ctx, p, nxf, ldx, gdxf, tx))
			return -1;
		if (p->padded && cuda_crop(ctx, tx, n, s->h, s->w, s->c, p->hp, p->wp,
					      l->cfg.pad_t, l->cfg.pad_l, gdxf, gdx))
			return -1;
	}
	return cuda_end(ctx);
}

static void conv_release(struct ops_ctx *ctx, struct ops_layer *l)
{
	(void)ctx;
	plan_free(l->priv);
	l->priv = NULL;
}

/* What the larger pass in type t takes of the backend's scratch arena
 * (cuda_scratch), which holds one op's buffers at a time: the input in
 * its zero frame where the padding is uneven; copies in t of what is
 * stored in another type (the input, the output or its gradient: the
 * network's fp32 input under bf16, all three under fp16; the fp32 weights
 * in 16 bits); cuDNN's 16-bit weight gradient before its cast to fp32;
 * the input gradient in its frame and in t; the bias gradient's double
 * sums. */
static size_t pass_scratch(const struct ops_layer *l, int n, enum ops_dtype t)
{
	const struct ops_layer_cfg *c = &l->cfg;
	const struct ops_shape *s = &l->in[0];
	enum ops_dtype tx = ops_in_type(l, 0), ty = l->out_type;
	int padded = cuda_conv_framed(c);
	size_t nxf = (size_t)n * (s->h + (padded ? c->pad_t + c->pad_b : 0)) *
		     (s->w + (padded ? c->pad_l + c->pad_r : 0)) * s->c;
	size_t ny = (size_t)n * ops_shape_size(&l->out);
	size_t nw = (size_t)c->units * c->kernel * c->kernel * s->c;
	size_t frame = padded ? cuda_scratch_bytes(cuda_bytes(nxf, tx)) : 0;
	size_t xc = tx != t ? cuda_scratch_bytes(cuda_bytes(nxf, t)) : 0;
	size_t yc = ty != t ? cuda_scratch_bytes(cuda_bytes(ny, t)) : 0;
	size_t wc = t != OPS_F32 ? cuda_scratch_bytes(cuda_bytes(nw, t)) : 0;
	size_t fwd = frame + xc + wc + yc;
	size_t bwd = cuda_bias_grad_scratch(c->units) + frame + xc + yc + wc;
	if (!l->no_dx0)
		bwd += frame + wc + xc;
	return fwd > bwd ? fwd : bwd;
}

/* pass_scratch in ctx->conv_type (a 16-bit layer whose input channels are
 * not a multiple of 8 may find no 16-bit algorithm and run in fp32,
 * plan_of: the larger of both), and cuDNN's workspace, at most CONV_WS_MAX
 * (its size is known only on the device). Between calls the layer keeps
 * nothing: 0. */
static size_t conv_workspace(const struct ops_ctx *ctx, const struct ops_layer *l, int n,
			     size_t *scratch)
{
	*scratch = pass_scratch(l, n, ctx->conv_type);
	if (ctx->conv_type != OPS_F32 && l->in[0].c % 8) {
		size_t f = pass_scratch(l, n, OPS_F32);
		*scratch = f > *scratch ? f : *scratch;
	}
	*scratch += cuda_scratch_bytes(CONV_WS_MAX);
	return 0;
}

/* The largest batch whose tensors cuDNN can describe. */
static int conv_max_batch(const struct ops_ctx *ctx, const struct ops_layer *l)
{
	(void)ctx;
	size_t one = largest_tensor(l, 1);
	size_t most = (CUDNN_MAX_VALUES - 1) / (one ? one : 1);
	return most > 1 << 30 ? 1 << 30 : (int)most;
}

const struct ops_layer_ops cuda_conv_ops = {
	.type = OPS_CONV2D,
	.name = "convolution",
	.forward = conv_forward,
	.backward = conv_backward,
	.release = conv_release,
	.workspace = conv_workspace,
	.bf16 = 1,
	.folds_bias = 1,
	.max_batch = conv_max_batch,
	.adds_dx0 = conv_adds_dx0,
};
