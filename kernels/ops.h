/* ops.h: the compute op table: tensors and per-layer-type forward/backward
 * operations, implemented by kernels/ref (the reference), kernels/cpu
 * (oneDNN + plain C) and kernels/cuda (cuDNN, cuBLASLt, CUDA kernels)
 * behind the same interface. */
#ifndef AAH_OPS_H
#define AAH_OPS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" { /* the cuda backend's kernel families are C++ */
#endif

/* The ops, which index ops_backend.layer. The trainer maps each layer type
 * of its network file onto one (trialimg/model.c); kernels know nothing of
 * the file format. */
enum ops_type {
	OPS_CONV2D,
	OPS_BATCHNORM,
	OPS_RELU,
	OPS_MAXPOOL,
	OPS_AVGPOOL,
	OPS_GLOBAL_AVG_POOL,
	OPS_DENSE,
	OPS_DROPOUT,
	OPS_ADD,
	OPS_CONCAT,
	OPS_FLATTEN,
	OPS_NTYPES
};

struct ops_ledger; /* kernels/ledger.h */

/* Shape of one sample of an activation; a batch of n samples is stored NHWC,
 * batch first: element (i, y, x, ch) lives at ((i*h + y)*w + x)*c + ch.
 * Rank-2 tensors (after flatten / global_avg_pool / dense) have h = w = 1. */
struct ops_shape {
	int h, w, c;
};

static inline size_t ops_shape_size(const struct ops_shape *s)
{
	return (size_t)s->h * (size_t)s->w * (size_t)s->c;
}

/* How a batch of activations lies in memory. NHWC (above) is the contract
 * of every op. BLOCKED8 and BLOCKED16 are oneDNN's nChw8c and nChw16c for c
 * a multiple of the block width B, the same size: the channels in blocks of
 * B, batch first, then the block, then NHWC of its B channels: element
 * (i, y, x, ch) lives at (((i*c/B + ch/B)*h + y)*w + x)*B + ch%B, i.e. an
 * NHWC batch of n*c/B samples of B channels. A backend names the one
 * blocked layout its ops take in ops_ctx.blocked (the CPU backend: the
 * width of the vector registers oneDNN's kernels use on this machine); an
 * op is handed such a tensor (input, output and their gradients alike) only
 * when its ops_layer_ops.blocked is set; the model picks the layouts
 * (trialimg/model_exec.c). */
enum ops_layout { OPS_NHWC, OPS_BLOCKED8, OPS_BLOCKED16 };

/* The channel block width of a layout: 1 for NHWC. */
static inline int ops_layout_block(enum ops_layout layout)
{
	return layout == OPS_BLOCKED16 ? 16 : layout == OPS_BLOCKED8 ? 8 : 1;
}

/* Whether a tensor of shape s may be kept in blocked layout `layout`. */
static inline int ops_blockable(const struct ops_shape *s, enum ops_layout layout)
{
	return layout != OPS_NHWC && s->c % ops_layout_block(layout) == 0 && s->h * s->w > 1;
}

/* Static description of one layer. */
struct ops_layer_cfg {
	enum ops_type type;
	int kernel, stride;                 /* conv2d, maxpool, avgpool */
	int pad_t, pad_l, pad_b, pad_r;     /* resolved from "same"/"valid" */
	int units;                          /* conv2d filters, dense units */
	int bias;                           /* conv2d, dense */
	float eps, momentum;                /* batchnorm */
	float rate;                         /* dropout */
	int fuse_relu;                      /* batchnorm, add: the output goes
					     * through a relu (fused by the model) */
};

/* One layer instance. The model owns every pointer below (carved from its
 * big blocks); an op backend owns only `priv`, freed by release(). */
/* Element types of casts: fp32, and bf16 and fp16 stored as their 16-bit
 * patterns (uint16_t). */
enum ops_dtype { OPS_F32, OPS_BF16, OPS_F16 };

struct ops_layer {
	struct ops_layer_cfg cfg;
	int index;                          /* position in the sorted graph */
	int n_in;
	int no_dx0;                         /* backward is never asked for dx[0]
					     * (input 0 is the network's input):
					     * a backend may keep nothing for it */
	int add_dx0;                        /* backward adds its gradient of input
					     * 0 into what dx[0] holds: set by the
					     * model for the call, where the op
					     * said it can (ops_layer_ops.adds_dx0) */
	const struct ops_shape *in;         /* (n_in) input shapes */
	struct ops_shape out;
	/* layouts of the inputs (n_in; NULL: all NHWC) and of the output; an
	 * op's gradients share the layouts of the tensors they belong to */
	const enum ops_layout *in_layout;
	enum ops_layout out_layout;
	/* element types of the inputs (n_in; NULL: all fp32) and of the
	 * output: OPS_F32, or OPS_BF16 where the model stores the tensor so
	 * (ops_ctx.act_type, ops_layer_ops.bf16); an op's gradients share the
	 * types of the tensors they belong to. x, y, dy and dx point at values
	 * of these types: the pointers say float, a bf16 tensor holds 16-bit
	 * patterns (kernels/ref's ref_f32_to_bf16 rounds to them). A layer's types are fixed once its model is
	 * planned (trialimg/memplan.h). */
	const enum ops_dtype *in_type;
	enum ops_dtype out_type;
	/* parameters and their gradients (NULL when the type has none) */
	float *w, *dw;      /* conv2d: (Cout, K, K, Cin); dense: (units, Cin) */
	float *b, *db;      /* conv2d, dense: (Cout) */
	float *gamma, *dgamma, *beta, *dbeta;   /* batchnorm: (C) */
	float *run_mean, *run_var;          /* batchnorm running stats: (C) */
	float *save_mean, *save_var;        /* batchnorm batch stats: (C) */
	uint8_t *mask;                      /* dropout's keep mask, or max pooling's
					     * argmax (ops_layer_ops.keeps_mask):
					     * (N, H, W, C) of the output */
	/* conv2d: the types its last pass read its operands in and stored its
	 * sums in before any cast to fp32, set by the backend: a layer may
	 * compute in fp32 where ctx->conv_type asks bf16 (cpu_conv.c), and a
	 * GPU backend may store bf16 sums; tests hold each to its own bound */
	enum ops_dtype ran, ran_out;
	/* The bias of a conv2d whose only reader is this batchnorm, which it
	 * does not depend on (the batch's mean takes it out exactly): the
	 * conv2d skips it in training (bias_folded), this layer counts it in
	 * its running mean (fold_b: (C), the conv2d's b) and writes its
	 * gradient zero (fold_db: the conv2d's db), as the exact math gives.
	 * Set by the model where the backend's ops fold biases
	 * (ops_layer_ops.folds_bias); NULL, 0: none. */
	int bias_folded;                    /* conv2d */
	const float *fold_b;                /* batchnorm */
	float *fold_db;                     /* batchnorm */
	void *priv;                         /* backend state */
};

/* Backend-wide state: the engine, the stream, the threads. */
struct ops_ctx {
	const struct ops_backend *be;
	int threads;
	uint64_t seed;      /* dropout masks derive from (seed, step, layer) */
	uint64_t step;      /* the trainer's global step */
	enum ops_dtype conv_type; /* convolutions read their operands in this type
				   * (bf16, fp16: copies where a tensor is stored
				   * in another); weights stay fp32 (the master
				   * copies) */
	enum ops_dtype act_type; /* the type the model stores activations and
				  * their gradients in where every op on a
				  * tensor takes it (ops_layer_ops.bf16): OPS_F32,
				  * or OPS_BF16, set by set_precision */
	int conv_algo;      /* OPS_CONV_* */
	int nhwc_only;      /* the model keeps every activation NHWC */
	enum ops_layout blocked; /* the blocked layout this backend's blocked
				  * ops take, set by its init; OPS_NHWC: none */
	int device;         /* a GPU backend: which visible device it takes (the
			     * rank's local rank, modulo the visible count) */
	void *priv;
};

/* What a training step reads besides the model and the batch, kept where
 * the model is (a device backend: uploaded with the batch, so a replayed
 * step reads this step's values, ops_backend.upload). */
struct ops_step_vars {
	float lr;           /* SGD's learning rate */
	float loss_scale;   /* fp16's dynamic loss scale, else 1 */
	uint64_t step;      /* the trainer's global step (dropout's masks) */
};

/* A started GPU backend's device, for the logs and result.json. */
struct ops_device {
	int index;          /* among the visible devices (CUDA_VISIBLE_DEVICES) */
	char name[96];      /* "NVIDIA H100 80GB HBM3" */
	double mem_gib;     /* its total memory, GiB */
	size_t mem_free;    /* bytes free when it was asked (0: unknown) */
	int cc_major, cc_minor;
};

/* x: n_in input activations (n samples each); y: the output.
 * backward overwrites dx[i] (NULL: that input needs no gradient) and
 * accumulates nothing, but for dx[0] where ops_layer.add_dx0 asks:
 * parameter gradients dw/db/... are overwritten too. */
struct ops_layer_ops {
	enum ops_type type;     /* the slot of ops_backend.layer it fills */
	const char *name;       /* what it computes, in messages: "convolution" */
	int (*forward)(struct ops_ctx *ctx, struct ops_layer *l, int n,
		       const float *const *x, float *y, int train);
	int (*backward)(struct ops_ctx *ctx, struct ops_layer *l, int n,
			const float *const *x, const float *y, const float *dy,
			float *const *dx);
	void (*release)(struct ops_ctx *ctx, struct ops_layer *l);
	/* y again, bit for bit what the last training forward wrote, from x and
	 * what that forward kept (batchnorm: save_mean, save_var): the model
	 * then keeps no buffer for y between the passes and calls this in the
	 * backward before the first reader of y needs it (trialimg/memplan.h).
	 * NULL: y is kept. */
	int (*recompute)(struct ops_ctx *ctx, struct ops_layer *l, int n, const float *const *x,
			 float *y);
	/* Bytes this op allocates for itself for a batch of n under ctx's
	 * settings (conv_type, conv_algo; ctx need not be started), from the
	 * shapes alone: what it keeps from its forward to its backward and
	 * what it holds between calls; *scratch gets the bytes it needs only
	 * while it runs (one scratchpad serves all ops: the largest counts).
	 * The trainer's memory plan counts them (trialimg/memplan.h); NULL:
	 * none. */
	size_t (*workspace)(const struct ops_ctx *ctx, const struct ops_layer *l, int n,
			    size_t *scratch);
	/* What this op's backward never reads (OPS_SKIPS_*; 0: it may read
	 * its inputs and its output): a recomputed output that no backward
	 * reads is not recomputed (trialimg/memplan.h). */
	unsigned backward_skips;
	/* Reads and writes tensors in ctx->blocked too. Every op but conv2d and
	 * global_avg_pool (whose rank-2 output stays NHWC) then takes its
	 * inputs and output in one layout. */
	int blocked;
	/* Reads and writes tensors stored in bf16 too (ops_layer.in_type,
	 * out_type). Every op but conv2d and global_avg_pool (whose rank-2
	 * output may stay fp32 for the fp32 ops after it) then takes its
	 * inputs and output in one type. */
	int bf16;
	/* conv2d: leaves its bias out in training where the model says a
	 * batchnorm of batch statistics alone reads its output
	 * (ops_layer.bias_folded), adds it in inference; batchnorm: counts
	 * that bias in its running mean and writes its gradient zero
	 * (ops_layer.fold_b, fold_db). Both, or the model folds nothing. */
	int folds_bias;
	/* The largest batch the op can run (a library's limit: cuDNN takes no
	 * tensor of 2^31 values), from the shapes alone; NULL or 0: none. The
	 * memory plan caps the batch by it (trialimg/memplan.h). */
	int (*max_batch)(const struct ops_ctx *ctx, const struct ops_layer *l);
	/* maxpool: the training forward writes in ops_layer.mask, a byte per
	 * output value, where in its window the maximum was (ky * K + kx),
	 * and the backward reads it instead of finding the maxima again; the
	 * model keeps it from one pass to the other, as dropout's mask
	 * (trialimg/memplan.h). With mask NULL the op finds them again. */
	int keeps_mask;
	/* Whether backward can add its gradient of input 0 into what dx[0]
	 * holds (ops_layer.add_dx0) for a batch of n, after a training
	 * forward of it: where input 0 feeds another layer whose gradient is
	 * already there, the model then needs no buffer and no accumulate
	 * for this one's part. NULL: never (cuda_conv.c: cuDNN's beta). */
	int (*adds_dx0)(struct ops_ctx *ctx, const struct ops_layer *l, int n);
};

enum {
	OPS_SKIPS_X = 1u << 0, /* its inputs x */
	OPS_SKIPS_Y = 1u << 1, /* its output y */
};

static inline enum ops_layout ops_in_layout(const struct ops_layer *l, int k)
{
	return l->in_layout ? l->in_layout[k] : OPS_NHWC;
}

static inline enum ops_dtype ops_in_type(const struct ops_layer *l, int k)
{
	return l->in_type ? l->in_type[k] : OPS_F32;
}

/* Bytes of one value of type t. */
static inline size_t ops_dtype_size(enum ops_dtype t)
{
	return t == OPS_F32 ? sizeof(float) : sizeof(uint16_t);
}

/* How convolutions compute: AUTO lets the backend use a faster algorithm
 * (Winograd on the CPU) where it has one for the layer; DIRECT never. */
enum { OPS_CONV_AUTO, OPS_CONV_DIRECT };
/* "auto" or "direct" -> OPS_CONV_*; -1 otherwise (the caller names the
 * setting in its error, with OPS_CONV_ALGO_NAMES). */
#define OPS_CONV_ALGO_NAMES "auto, direct"
int ops_conv_algo_parse(const char *name);

enum {
	OPS_CAP_FP32 = 1u << 0,
	OPS_CAP_BF16 = 1u << 1,
	OPS_CAP_GPU = 1u << 2,
	OPS_CAP_FP16 = 1u << 3,     /* --precision fp16 (on a capable device) */
};

struct ops_backend {
	const char *name;
	unsigned caps;
	int (*init)(struct ops_ctx *ctx);
	void (*fini)(struct ops_ctx *ctx);
	/* "fp32", "bf16" or "fp16": -1 when this machine cannot run it; 1 when
	 * it runs fp32 instead (the CPU backend's bf16 on a CPU without bf16
	 * kernels), the reason left as the last error (util.h). */
	int (*set_precision)(struct ops_ctx *ctx, const char *precision);
	/* What `--precision auto` runs on this machine, decided once the
	 * backend has started; NULL: "fp32". */
	const char *(*default_precision)(struct ops_ctx *ctx);
	/* What `--precision fast` runs: bf16 where this machine computes it
	 * in hardware and fp32 where it would only emulate it; callable before
	 * init (the plan asks it); NULL: what auto runs. */
	const char *(*fast_precision)(struct ops_ctx *ctx);
	const struct ops_layer_ops *layer[OPS_NTYPES];  /* NULL: unsupported */
	/* The first of the ops built so far that runs a slow reference kernel,
	 * named with its kernel ("batch_normalization (bnorm_ref:any)"); NULL
	 * when there is none, or the backend keeps no such record. */
	const char *(*slow_path)(struct ops_ctx *ctx);
	/* Softmax cross-entropy with label smoothing over (n, classes) logits:
	 * dlogits = scale * d(mean loss)/d(logits) (scale: fp16's loss scale,
	 * else 1); adds the summed loss and the number of correct argmax
	 * predictions into *loss_sum and *correct, or, on a backend with
	 * loss_read, into sums of its own that loss_read hands over. dlogits
	 * may be NULL (evaluation). */
	int (*loss)(struct ops_ctx *ctx, int n, int classes, const float *logits,
		    const int *labels, float smoothing, float scale, float *dlogits,
		    double *loss_sum, long *correct);
	/* A GPU backend's loss keeps its sums on the device so that a step
	 * waits for nothing: this adds them into *loss_sum and *correct and
	 * zeroes them (the host waits for the device); a label the loss found
	 * out of range is its error. NULL: loss adds them itself
	 * (ops_loss_read does nothing). */
	int (*loss_read)(struct ops_ctx *ctx, double *loss_sum, long *correct);
	/* SGD with momentum: v = mu*v + g + wd*w; w -= lr*v, over count values. */
	int (*sgd)(struct ops_ctx *ctx, size_t count, float *w, const float *g,
		   float *v, float lr, float mu, float wd);
	/* y[i] += x[i] over count values of type t: gradient accumulation for
	 * tensors with several users (t: the tensor's, ops_layer.out_type). */
	int (*accumulate)(struct ops_ctx *ctx, size_t count, enum ops_dtype t, void *y,
			  const void *x);
	/* fp16's loss scale: *finite = whether all count values of g are
	 * finite; when they are, g[i] *= inv (1/scale). When not, g is left
	 * undefined: the trainer skips the step, and the next backward pass
	 * overwrites it. */
	int (*unscale)(struct ops_ctx *ctx, size_t count, float *g, float inv, int *finite);
	/* y = x converted from xt to yt over count values: fp32 -> bf16 or fp16
	 * rounds to nearest, ties to even (fp16: overflow to inf, subnormals
	 * kept), the way back is exact; NaN stays a NaN (its payload may not).
	 * One side is OPS_F32. NULL: the backend has no casts. */
	int (*cast)(struct ops_ctx *ctx, size_t count, const void *x, enum ops_dtype xt, void *y,
		    enum ops_dtype yt);
	/* Device residency (cuda); NULL on backends whose ops work in host
	 * memory. resident: from now on the backend keeps the bytes at p on its
	 * device, the first `copy` of them copied there now and the rest zeros
	 * (bytes the host never wrote: the model's activations and gradients,
	 * whose host pages then need never exist); ops given pointers into them use the device
	 * copy in place, and the host copy goes stale. sync brings the host copy
	 * up to date (to_device 0) or, after the host wrote there, the device's
	 * (1). forget drops the device copy of the block made resident at p,
	 * before the host frees it. ops_resident, ops_sync and ops_forget below
	 * call them where they exist. */
	int (*resident)(struct ops_ctx *ctx, void *p, size_t bytes, size_t copy);
	int (*sync)(struct ops_ctx *ctx, void *p, size_t bytes, int to_device);
	void (*forget)(struct ops_ctx *ctx, void *p);
	/* From now on the backend keeps a twin of the count fp32 values at p
	 * (the model's parameters) in t (bf16 or fp16): made now from them,
	 * rewritten by sgd as it updates them and by sync after the host wrote
	 * them; ops that read those values in t (a 16-bit convolution's
	 * weights) read the twin instead of converting them every pass. Its
	 * memory is ops_twin_bytes's. Released with the context or forget of
	 * p's block. NULL: the backend keeps none. */
	int (*twin)(struct ops_ctx *ctx, const float *p, size_t count, enum ops_dtype t);
	/* Data parallel on the device (NCCL on cuda); NULL where the trainer's
	 * CPU ring averages the gradients. comm_init makes this context rank
	 * `rank` of `world`: share(arg, id, len) must hand rank 0's id of len
	 * bytes to every rank (the trainer's rendezvous does). */
	int (*comm_init)(struct ops_ctx *ctx, int rank, int world,
			 int (*share)(void *arg, void *id, size_t len), void *arg);
	/* buf <- the mean of buf over the ranks, count values. */
	int (*allreduce_mean)(struct ops_ctx *ctx, float *buf, size_t count);
	/* GPU backends: how many devices this process can see, without
	 * starting the backend (0 with the reason in *why when none: no
	 * driver, none listed; -1 with it when those it sees are too old for
	 * it: ops_gpu_supported); NULL on host backends. */
	int (*visible_devices)(char *why, size_t why_size);
	/* GPU backends: the started backend's device. */
	int (*device_info)(struct ops_ctx *ctx, struct ops_device *dev);
	/* Waits until every op queued so far has finished (a GPU backend's ops
	 * return once queued); NULL where ops finish before they return. */
	int (*finish)(struct ops_ctx *ctx);
	/* What the backend has queued since the ledger's last reset: launches,
	 * bytes, copies, waits (kernels/ledger.h); NULL: it keeps none. */
	struct ops_ledger *(*ledger)(struct ops_ctx *ctx);
	/* Device backends: the coming step's batch, into the model's input
	 * slot inside a resident block (trialimg/memplan.h): n samples of x
	 * (count fp32 values, host memory), the step's vars and the labels go
	 * to staging (fp32 x, vars, labels, one after the other: one copy),
	 * and from there x to x_dev as type xt (fp32, or bf16 where the first
	 * layers read bf16), vars to vars_dev and the labels right after them
	 * (labels_dev), before the next op queued runs. The copy overlaps what was queued
	 * before it (a GPU: from pinned memory, on a copy stream); x and labels
	 * may be reused once upload returns. NULL on host backends: the model
	 * reads the batch where it lies. */
	int (*upload)(struct ops_ctx *ctx, const float *x, size_t count, const int *labels, int n,
		      const struct ops_step_vars *vars, void *staging, void *x_dev,
		      enum ops_dtype xt, int *labels_dev, struct ops_step_vars *vars_dev);
	/* Backends that replay a step (the cuda backend: a CUDA graph): capture
	 * starts recording what is queued instead of running it, with ops that
	 * read lr, the loss scale and the step from the vars_dev of the last
	 * upload; captured(key) ends it and keeps it as step `key` (nodes: the
	 * graph's nodes, own: those running the backend's own kernels, -1 where
	 * unknown); replay(key) queues it again. An op that cannot be recorded
	 * (one that waits for the device, stages host memory) fails the
	 * capture: captured() then says why and keeps nothing. NULL: none. */
	int (*capture)(struct ops_ctx *ctx);
	int (*captured)(struct ops_ctx *ctx, int key, long *nodes, long *own);
	int (*replay)(struct ops_ctx *ctx, int key);
};

/* ops_backend.resident, .sync and .forget where the backend has them;
 * nothing (0) otherwise: the host copy is the only one. */
int ops_resident(struct ops_ctx *ctx, void *p, size_t bytes, size_t copy);
int ops_sync(struct ops_ctx *ctx, void *p, size_t bytes, int to_device);
void ops_forget(struct ops_ctx *ctx, void *p);
/* ops_backend.twin of count parameters at p in ctx's convolution type,
 * where the backend has it and that type is 16-bit; nothing (0)
 * otherwise. ops_twin_bytes: what it takes of the device (0: none). */
int ops_twin(struct ops_ctx *ctx, const float *p, size_t count);
size_t ops_twin_bytes(const struct ops_ctx *ctx, size_t count);
/* ops_backend.finish where the backend has it: before a clock is read. */
int ops_finish(struct ops_ctx *ctx);
/* ops_backend.loss_read where the backend has it: the loss's sums since
 * the last read added into *loss_sum and *correct; nothing otherwise. */
int ops_loss_read(struct ops_ctx *ctx, double *loss_sum, long *correct);
/* ops_backend.ledger where the backend keeps one; NULL otherwise. */
struct ops_ledger *ops_ledger_of(struct ops_ctx *ctx);
enum { OPS_TO_HOST = 0, OPS_TO_DEVICE = 1 };

/* The names --precision takes; ops_precision_known says whether name is
 * one of them (the caller names the setting in its error). */
#define OPS_PRECISION_NAMES "auto, fast, fp32, bf16, fp16"
int ops_precision_known(const char *name);
/* The precision `--precision auto` gives on ctx's backend (a started one). */
const char *ops_precision_auto(struct ops_ctx *ctx);
/* The precision asked ("fp32", "bf16", "fp16") as it is, "auto" as the
 * backend's default_precision and "fast" as its fast_precision. */
const char *ops_precision_pick(struct ops_ctx *ctx, const char *asked);
/* 1 where prec is bf16 and ctx's backend would train fp32 for --precision
 * fast: it computes bf16 here without bf16 instructions, slower than fp32
 * (the CPU below AVX512-BF16); 0 otherwise. */
int ops_precision_emulated(struct ops_ctx *ctx, const char *prec);
/* A GPU's default: bf16 from compute capability 8.0 (Ampere, Hopper: bf16
 * tensor cores), fp32 below. */
const char *ops_gpu_precision(int cc_major);
/* Whether the cuda backend runs on device `name` of compute capability
 * major.minor: 1; else 0 with *why (why_size bytes) naming the device, its
 * capability and why not (below 8.0: the kernels are built for sm_80, sm_90
 * and PTX compute_90; below 7.5 CUDA 13 cannot target it at all). */
int ops_gpu_supported(const char *name, int major, int minor, char *why, size_t why_size);
/* Converts n samples of shape s between any two layouts (plain C; the model
 * never needs it, tests and tools do). dst and src do not overlap. */
void ops_layout_convert(float *dst, enum ops_layout to, const float *src,
			enum ops_layout from, int n, const struct ops_shape *s);

/* The static table of backends; ops_backend_find("cpu") etc. */
const struct ops_backend *ops_backend_find(const char *name);
const struct ops_backend *const *ops_backends(size_t *count);

/* --backend auto: the first GPU backend built in that sees a device, else
 * "cpu"; *why (why_size bytes) says why, for the log: "8 CUDA devices
 * visible", "no CUDA device visible: <the runtime's reason>" or "no usable
 * CUDA device: <ops_gpu_supported's reason>; training on the CPU". */
const char *ops_backend_auto(char *why, size_t why_size);
/* Its decision, given what GPU backend `gpu`'s visible_devices returned
 * (devices, and reason where that is not above 0): gpu, or "cpu". */
const char *ops_auto_pick(const char *gpu, int devices, const char *reason, char *why,
			  size_t why_size);

/* ctx lifecycle: picks the backend ("auto": ops_backend_auto) and sets the
 * thread count (0 = all); ops_ctx_init_on also the device a GPU backend
 * takes (ops_ctx.device). */
int ops_ctx_init(struct ops_ctx *ctx, const char *backend, int threads, uint64_t seed);
int ops_ctx_init_on(struct ops_ctx *ctx, const char *backend, int threads, uint64_t seed,
		    int device);
void ops_ctx_release(struct ops_ctx *ctx);

/* The keep mask of dropout layer l at ctx->step over count values (1: keep,
 * probability 1 - l->cfg.rate), a function of (ctx->seed, ctx->step,
 * l->index) only: every backend draws the same mask, so their results can
 * be compared. */
void ops_dropout_mask(const struct ops_ctx *ctx, const struct ops_layer *l, size_t count,
		      uint8_t *mask);
/* The hash that mask starts from: value i is kept when 16-bit field i%4 of
 * splitmix64(base + i - i%4) is >= rate*65536 (the GPU draws it so). */
uint64_t ops_dropout_base(const struct ops_ctx *ctx, const struct ops_layer *l);

#ifdef __cplusplus
}
#endif

#endif
