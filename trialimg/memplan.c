/* memplan.c: the memory plan of a training step (see memplan.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trialimg/data/loader.h" /* LOADER_DEPTH */
#include "trialimg/memplan.h"
#include "trialimg/model.h" /* struct model, MODEL_BLOCK_ALIGN */
#include "util.h"

/* each buffer inside a region starts at a multiple of this (a cache line,
 * the widest vector load) */
#define MEMPLAN_ALIGN 64

static size_t round_up(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* The layer whose buffers a layer's output uses: a fused relu writes in
 * place into its producer's. */
static int owner(const struct model *m, int i)
{
	while (m->layers[i].fused)
		i = m->layers[i].inputs[0] - 1;
	return i;
}

/* A gradient buffer: live from the backward of layer `from` (the first to
 * write it: its last reader, or before the backward for the logits) down to
 * that of layer `to` (its producer, which reads it last). */
struct live {
	int layer;              /* its owner */
	int from, to;           /* layer indices, from >= to */
	size_t bytes, off;
};

static int by_from(const void *a, const void *b)
{
	const struct live *x = a, *y = b;
	if (x->from != y->from)
		return x->from > y->from ? -1 : 1;
	return x->layer > y->layer ? -1 : x->layer < y->layer;
}

/* First fit: each buffer, in the order the backward needs them, at the
 * lowest offset clear of every placed buffer whose life overlaps its own.
 * Returns the bytes the region needs. */
static size_t place(struct live *v, int n, int keep)
{
	size_t end = 0;
	for (int i = 0; i < n; i++) {
		size_t off = 0;
		for (int moved = 1; moved;) {
			moved = 0;
			for (int j = 0; j < i; j++) {
				int overlap = keep || (v[j].to <= v[i].from && v[i].to <= v[j].from);
				if (overlap && off < v[j].off + v[j].bytes && v[j].off < off + v[i].bytes) {
					off = v[j].off + v[j].bytes;
					moved = 1;
				}
			}
		}
		v[i].off = off;
		if (off + v[i].bytes > end)
			end = off + v[i].bytes;
	}
	return end;
}

/* Whether layer j's backward writes its input k's gradient to the fan-out
 * scratch (model_backward): when it is not the first to write that
 * gradient, the last of the tensor's readers, and its first input of it. */
static int into_scratch(const struct model *m, const int *last, int j, int k)
{
	int t = m->layers[j].inputs[k];
	if (!t)
		return 0;
	if (last[t] != j)
		return 1;
	for (int q = 0; q < k; q++)
		if (m->layers[j].inputs[q] == t)
			return 1;
	return 0;
}

static int takes_bf16(const struct ops_layer_ops *o)
{
	return o && o->bf16;
}

static int takes_blocked(const struct ops_layer_ops *o)
{
	return o && o->blocked;
}

/* Whether ops of type t keep one layout and one type over their inputs and
 * output (all but conv2d and global_avg_pool). */
static int joint(enum ops_type t)
{
	return t != OPS_CONV2D && t != OPS_GLOBAL_AVG_POOL;
}

/* A tensor keeps a form (a blocked layout, bf16) where its producer may
 * write it so (ok[t], set by the caller, the network's input first) and
 * every reader takes it (takes: the reader's op); an op that keeps one
 * form over all its tensors (joint) with one tensor out of it takes all of
 * its tensors out. */
static void spread(const struct model *m, const struct ops_backend *be,
		   int (*takes)(const struct ops_layer_ops *), char *ok)
{
	for (int i = 0; i < m->n_layers; i++) {
		const struct model_layer *L = &m->layers[i];
		if (!takes(be->layer[L->op.cfg.type]))
			for (int k = 0; k < L->op.n_in; k++)
				ok[L->inputs[k]] = 0;
	}
	for (int changed = 1; changed;) {
		changed = 0;
		for (int i = 0; i < m->n_layers; i++) {
			const struct model_layer *L = &m->layers[i];
			if (!joint(L->op.cfg.type))
				continue;
			int out = !ok[i + 1], all = out;
			for (int k = 0; k < L->op.n_in; k++) {
				out |= !ok[L->inputs[k]];
				all &= !ok[L->inputs[k]];
			}
			if (!out || all)
				continue;
			ok[i + 1] = 0;
			for (int k = 0; k < L->op.n_in; k++)
				ok[L->inputs[k]] = 0;
			changed = 1;
		}
	}
}

/* Each tensor's type (memplan.type): ctx->act_type where its producer and
 * every reader take it (spread), fp32 for the logits, and for the
 * network's input but where the backend uploads it into the input slot
 * (the upload converts it). */
static void plan_types(struct memplan *p, const struct model *m, const struct ops_ctx *ctx)
{
	int n = m->n_layers;
	enum ops_dtype t = ctx ? ctx->act_type : OPS_F32;
	char *ok = xcalloc((size_t)n + 1, 1);
	ok[0] = p->input && t == OPS_BF16;
	for (int i = 0; t == OPS_BF16 && i < n; i++) {
		const struct model_layer *L = &m->layers[i];
		ok[i + 1] = i != m->output && takes_bf16(ctx->be->layer[L->op.cfg.type]);
		for (int k = 0; !L->fused && k < L->op.n_in; k++)
			if (!L->inputs[k] && !takes_bf16(ctx->be->layer[L->op.cfg.type]))
				ok[0] = 0;
	}
	if (t == OPS_BF16)
		spread(m, ctx->be, takes_bf16, ok);
	for (int i = 0; i <= n; i++) {
		p->type[i] = ok[i] ? t : OPS_F32;
		p->n_bf16 += i > 0 && ok[i];
	}
	free(ok);
}

void memplan_layouts(const struct model *m, const struct ops_ctx *ctx, enum ops_layout *lay)
{
	int n = m->n_layers;
	char *ok = xcalloc((size_t)n + 1, 1);
	for (int i = 0; i < n; i++) {
		const struct model_layer *L = &m->layers[i];
		ok[i + 1] = !ctx->nhwc_only && takes_blocked(ctx->be->layer[L->op.cfg.type]) &&
			    !L->rank2 && ops_blockable(&L->op.out, ctx->blocked);
	}
	spread(m, ctx->be, takes_blocked, ok);
	for (int i = 0; i <= n; i++)
		lay[i] = ok[i] ? ctx->blocked : OPS_NHWC;
	free(ok);
}

/* The layer's op with the types the plan gives its tensors and the
 * layouts the model will pick (lay), for the backend's workspace (its own
 * in_type is set by model_alloc_planned, its layouts by model_layouts). */
static struct ops_layer typed(const struct memplan *p, const struct model_layer *L,
			      const enum ops_layout *lay, enum ops_dtype *in_type,
			      enum ops_layout *in_layout)
{
	struct ops_layer op = L->op;
	for (int k = 0; k < op.n_in; k++) {
		in_type[k] = p->type[L->inputs[k]];
		in_layout[k] = lay[L->inputs[k]];
	}
	op.in_type = in_type;
	op.out_type = p->type[op.index + 1];
	op.in_layout = in_layout;
	op.out_layout = lay[op.index + 1];
	return op;
}

/* Whether layer i's output may be recomputed in the backward rather than
 * kept: its op can (ops_layer_ops.recompute), it is not the logits, and
 * its input is kept (or the network's), so the backward has it. */
static int recomputable(const struct model *m, const struct memplan *p,
			const struct ops_layer_ops *lo, int i)
{
	const struct model_layer *L = &m->layers[i];
	if (!lo || !lo->recompute || L->fused || i == m->output || L->op.n_in != 1)
		return 0;
	int t = L->inputs[0];
	return !t || p->rec_last[owner(m, t - 1)] < 0;
}

static int mul_ok(size_t a, size_t b, size_t *r)
{
	if (b && a > SIZE_MAX / b)
		return 0;
	*r = a * b;
	return 1;
}

/* The input slot's pieces at base (memplan_input): the batch in its type,
 * the step's vars and the labels right after them, and their staging,
 * fp32 x, vars and labels in one piece (one copy in); its bytes. */
static size_t input_layout(const struct memplan *p, const struct model *m, char *base,
			   struct memplan_input *in)
{
	size_t nx = (size_t)p->batch * ops_shape_size(&m->input), at;
	size_t tail = sizeof(struct ops_step_vars) + (size_t)p->batch * sizeof(int);
	memset(in, 0, sizeof(*in));
	if (!p->input)
		return 0;
	in->type = p->type[0];
	in->x = base;
	at = round_up(nx * ops_dtype_size(in->type), MEMPLAN_ALIGN);
	in->vars = (struct ops_step_vars *)(base + at);
	in->labels = (int *)(base + at + sizeof(struct ops_step_vars));
	at = round_up(at + tail, MEMPLAN_ALIGN);
	in->staging = base + at;
	return at + nx * sizeof(float) + tail;
}

int memplan_build(struct memplan *p, const struct model *m, int batch, const struct ops_ctx *ctx,
		  int keep_grads)
{
	int n = m->n_layers;
	size_t nparams = 0, nstats = 0, nmask = 0, fan = 0, scratch0 = 0, scratch1 = 0;
	int rows = 0;
	memset(p, 0, sizeof(*p));
	p->batch = batch;
	p->n_layers = n;
	p->input = ctx && ctx->be->upload && !m->host_input;
	p->type = xcalloc((size_t)n + 1, sizeof(*p->type));
	p->masked = xcalloc((size_t)n + 1, 1);
	plan_types(p, m, ctx);
	int max_in = 1;
	for (int i = 0; i < n; i++)
		max_in = m->layers[i].op.n_in > max_in ? m->layers[i].op.n_in : max_in;
	enum ops_dtype *in_type = xcalloc((size_t)max_in, sizeof(*in_type));
	enum ops_layout *in_layout = xcalloc((size_t)max_in, sizeof(*in_layout));
	enum ops_layout *lay = xcalloc((size_t)n + 1, sizeof(*lay));
	if (ctx)
		memplan_layouts(m, ctx, lay);
	p->act_off = xcalloc((size_t)n + 1, sizeof(size_t));
	p->dact_off = xcalloc((size_t)n + 1, sizeof(size_t));
	struct live *v = xcalloc((size_t)n + 1, sizeof(*v));
	int nv = 0, *last = xcalloc((size_t)n + 1, sizeof(int)); /* each tensor's last reader */
	for (int j = 0; j < n; j++)
		for (int k = 0; !m->layers[j].fused && k < m->layers[j].op.n_in; k++)
			last[m->layers[j].inputs[k]] = j;
	size_t acts = 0;
	p->rec_last = xmalloc(((size_t)n + 1) * sizeof(int));
	p->rec_at = xmalloc(((size_t)n + 1) * sizeof(int));
	for (int i = 0; i <= n; i++)
		p->rec_last[i] = p->rec_at[i] = -1;
	for (int i = 0; i < n; i++) {
		const struct model_layer *L = &m->layers[i];
		size_t vals, bytes;
		if (!mul_ok((size_t)batch, ops_shape_size(&L->op.out), &vals) ||
		    !mul_ok(vals, ops_dtype_size(p->type[i + 1]), &bytes)) {
			free(v);
			free(last);
			free(in_type);
			free(in_layout);
			free(lay);
			memplan_release(p);
			return error("batch %d: layer '%s' would pass SIZE_MAX bytes", batch, L->id);
		}
		nparams += L->n_weights + L->n_biases;
		if (L->op.cfg.type == OPS_BATCHNORM)
			nstats += 4 * (size_t)L->op.out.c;
		const struct ops_layer_ops *lo = ctx ? ctx->be->layer[L->op.cfg.type] : NULL;
		p->masked[i] = L->op.cfg.type == OPS_DROPOUT ||
			       (L->op.cfg.type == OPS_MAXPOOL && lo && lo->keeps_mask);
		if (p->masked[i])
			nmask += vals;
		if (lo && lo->max_batch) {
			struct ops_layer op = typed(p, L, lay, in_type, in_layout);
			int most = lo->max_batch(ctx, &op);
			if (most > 0 && (!p->max_batch || most < p->max_batch))
				p->max_batch = most;
		}
		if (lo && lo->workspace) { /* the batch's part and the fixed part */
			struct ops_layer op = typed(p, L, lay, in_type, in_layout);
			size_t s0, s1, w0 = lo->workspace(ctx, &op, 0, &s0);
			size_t w1 = lo->workspace(ctx, &op, batch, &s1);
			p->workspace_fixed += w0;
			p->workspace += w1 - w0;
			scratch0 = s0 > scratch0 ? s0 : scratch0;
			scratch1 = s1 > scratch1 ? s1 : scratch1;
		}
		if (L->fused)
			continue;
		for (int k = 0; k < L->op.n_in; k++) /* fan-out scratch rows */
			if (into_scratch(m, last, i, k)) {
				int t = L->inputs[k];
				size_t tv = (size_t)batch * ops_shape_size(&m->layers[t - 1].op.out) *
					    ops_dtype_size(p->type[t]);
				fan = tv > fan ? tv : fan;
				rows = k + 1 > rows ? k + 1 : rows;
			}
		if (!keep_grads && recomputable(m, p, lo, i)) {
			p->rec_last[i] = i; /* placed below, once its readers are known */
		} else {
			p->act_off[i] = acts;
			acts += round_up(bytes, MEMPLAN_ALIGN);
		}
		v[nv++] = (struct live){ .layer = i, .from = i == m->output ? n : -1, .to = i,
					  .bytes = round_up(bytes, MEMPLAN_ALIGN) };
	}
	/* each gradient's first writer: the last of the readers of its owner
	 * and of the fused relus on it; a recomputed output is needed again
	 * before the backward of the last of those that reads its input */
	for (int j = 0; j < n; j++)
		for (int k = 0; k < m->layers[j].op.n_in; k++) {
			int t = m->layers[j].inputs[k];
			if (!t || m->layers[j].fused)
				continue;
			int o = owner(m, t - 1);
			for (int q = 0; q < nv; q++)
				if (v[q].layer == o && v[q].from < j)
					v[q].from = j;
			if (p->rec_last[o] >= 0 && p->rec_at[o] < j &&
			    !(ctx->be->layer[m->layers[j].op.cfg.type]->backward_skips & OPS_SKIPS_X))
				p->rec_at[o] = j;
		}
	for (int q = 0; q < nv; q++)
		if (v[q].from < v[q].to) /* read by no one: never written */
			v[q].from = v[q].to;
	free(last);
	free(in_type);
	free(in_layout);
	free(lay);
	qsort(v, (size_t)nv, sizeof(*v), by_from);
	/* a recomputed output lives as its gradient does, from its last
	 * reader to itself: in the forward from its writing to its last read,
	 * in the backward from its recomputing to its own layer's backward */
	struct live *r = xcalloc((size_t)nv + 1, sizeof(*r));
	int nr = 0;
	for (int q = 0; q < nv; q++)
		if (p->rec_last[v[q].layer] >= 0) {
			r[nr++] = v[q];
			p->rec_last[v[q].layer] = v[q].from;
			p->acts_recomputed_unshared += v[q].bytes;
		}
	for (int q = 0; q < nr; q++) { /* read again by none but itself, or by none */
		int i = r[q].layer;
		if (p->rec_at[i] < 0 &&
		    !(ctx->be->layer[m->layers[i].op.cfg.type]->backward_skips & OPS_SKIPS_Y))
			p->rec_at[i] = i;
	}
	p->acts_kept = acts;
	acts += place(r, nr, 0);
	for (int q = 0; q < nr; q++)
		p->act_off[r[q].layer] = p->acts_kept + r[q].off;
	free(r);
	size_t dacts = place(v, nv, keep_grads);
	for (int q = 0; q < nv; q++) {
		p->dact_off[v[q].layer] = v[q].off;
		p->dacts_unshared += v[q].bytes;
	}
	free(v);
	for (int i = 0; i < n; i++)
		if (m->layers[i].fused) {
			p->act_off[i] = p->act_off[owner(m, i)];
			p->dact_off[i] = p->dact_off[owner(m, i)];
		}
	/* two loaders (training, validation), LOADER_DEPTH batches each, of
	 * fp32 images and int labels (trialimg/data/loader.c) */
	p->host = (size_t)batch * 2 * LOADER_DEPTH *
		  (ops_shape_size(&m->input) * sizeof(float) + sizeof(int));
	p->workspace_fixed += scratch0;
	if (ctx)   /* the parameters' 16-bit twin (ops_twin, model_resident) */
		p->workspace_fixed += round_up(ops_twin_bytes(ctx, nparams), MEMPLAN_ALIGN);
	p->workspace += scratch1 - scratch0;
	p->on_host = !ctx || !(ctx->be->caps & OPS_CAP_GPU);
	p->scratch_stride = round_up(fan, MEMPLAN_ALIGN);
	p->scratch_rows = rows;
	size_t np = (nparams ? nparams : 1) * sizeof(float);
	struct carve *c = &p->lay;
	struct memplan_input in;
	if (carve_init(c, MODEL_BLOCK_ALIGN) || carve_add(c, "parameters", np) < 0 ||
	    carve_add(c, "gradients", np) < 0 || carve_add(c, "velocities", np) < 0 ||
	    carve_add(c, "batchnorm statistics", (nstats ? nstats : 1) * sizeof(float)) < 0 ||
	    carve_add(c, "activations", acts) < 0 || carve_add(c, "activation gradients", dacts) < 0 ||
	    carve_add(c, "fan-out gradients", (size_t)rows * p->scratch_stride) < 0 ||
	    carve_add(c, "masks", nmask) < 0 || carve_add(c, "input", input_layout(p, m, NULL, &in)) < 0) {
		memplan_release(p);
		return -1;
	}
	return 0;
}

void memplan_input(const struct memplan *p, const struct model *m, void *region,
		   struct memplan_input *in)
{
	input_layout(p, m, region, in);
}

void memplan_release(struct memplan *p)
{
	free(p->act_off);
	free(p->dact_off);
	free(p->rec_last);
	free(p->rec_at);
	free(p->type);
	free(p->masked);
	memset(p, 0, sizeof(*p));
}

size_t memplan_fixed(const struct memplan *p)
{
	return p->lay.r[MEMPLAN_ACTS].offset;
}

size_t memplan_total(const struct memplan *p)
{
	return p->lay.total + p->workspace_fixed + p->workspace + (p->on_host ? p->host : 0);
}

int memplan_max_batch(const struct model *m, int batch, const struct ops_ctx *ctx, size_t limit)
{
	int lo = 0, hi = batch; /* lo fits (0: nothing yet), hi + 1 does not */
	struct memplan one;
	if (memplan_build(&one, m, 1, ctx, 0))
		return 0;
	if (one.max_batch && one.max_batch < hi)
		hi = one.max_batch;
	memplan_release(&one);
	while (lo < hi) {
		int mid = lo + (hi - lo + 1) / 2;
		struct memplan p;
		if (memplan_build(&p, m, mid, ctx, 0))
			return 0;
		size_t total = memplan_total(&p);
		memplan_release(&p);
		if (total <= limit)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

static double mb(size_t b, int per)
{
	return (double)b / 1e6 / per;
}

void memplan_print(const struct memplan *p, const struct ops_ctx *ctx, FILE *out)
{
	const struct carve *c = &p->lay;
	int n = p->batch;
	size_t per = c->r[MEMPLAN_ACTS].bytes + c->r[MEMPLAN_DACTS].bytes +
		     c->r[MEMPLAN_SCRATCH].bytes + c->r[MEMPLAN_MASKS].bytes +
		     c->r[MEMPLAN_INPUT].bytes + p->workspace;
	size_t fixed = memplan_fixed(p) + p->workspace_fixed;
	int ws = ctx && ctx->be->layer[OPS_CONV2D] && ctx->be->layer[OPS_CONV2D]->workspace;
	fprintf(out, "per image (grows with the batch), MB:\n");
	char types[96];
	if (p->n_bf16)
		snprintf(types, sizeof(types), "bf16: %d of %d outputs, the rest fp32", p->n_bf16,
			 p->n_layers);
	else
		snprintf(types, sizeof(types), "fp32");
	fprintf(out, "  kept activations      %9.2f  (every output but a fused relu's%s; %s)\n",
		mb(p->acts_kept, n), p->acts_recomputed_unshared ? " and a recomputed one's" : "",
		types);
	if (p->acts_recomputed_unshared)
		fprintf(out, "  recomputed activations%9.2f  (batchnorm outputs, again in the backward: "
			"the most live at once; %.2f with one buffer each)\n",
			mb(c->r[MEMPLAN_ACTS].bytes - p->acts_kept, n),
			mb(p->acts_recomputed_unshared, n));
	else
		fprintf(out, "  recomputed activations%9.2f  (none: this backend recomputes no output)\n", 0.0);
	fprintf(out, "  activation gradients  %9.2f  (the most live at once; %.2f with one buffer each)\n",
		mb(c->r[MEMPLAN_DACTS].bytes, n), mb(p->dacts_unshared, n));
	fprintf(out, "  fan-out gradients     %9.2f\n", mb(c->r[MEMPLAN_SCRATCH].bytes, n));
	fprintf(out, "  masks                 %9.2f  (dropout's; max pooling's argmax on a GPU)\n",
		mb(c->r[MEMPLAN_MASKS].bytes, n));
	if (p->input)
		fprintf(out, "  input slot            %9.2f  (the batch as the first layers read it, "
			"%s, and its fp32 upload)\n", mb(c->r[MEMPLAN_INPUT].bytes, n),
			p->type[0] == OPS_BF16 ? "bf16" : "fp32");
	fprintf(out, "  backend workspace     %9.2f%s\n", mb(p->workspace, n),
		!ws ? "  (not counted: this backend declares none before it runs)"
		: ctx->be->caps & OPS_CAP_GPU
			? "  (its copies around convolutions; cuDNN's and cuBLASLt's workspace, "
			  "the most their algorithms may take, is fixed, below)"
			: "");
	fprintf(out, "  total                 %9.2f\n", mb(per, n));
	fprintf(out, "fixed, MB:\n");
	fprintf(out, "  parameters            %9.2f  (fp32 master weights)\n",
		mb(c->r[MEMPLAN_PARAMS].bytes, 1));
	fprintf(out, "  gradients             %9.2f\n", mb(c->r[MEMPLAN_GRADS].bytes, 1));
	fprintf(out, "  optimizer state       %9.2f  (SGD momentum)\n",
		mb(c->r[MEMPLAN_VELOCITY].bytes, 1));
	fprintf(out, "  batchnorm statistics  %9.2f\n", mb(c->r[MEMPLAN_STATS].bytes, 1));
	fprintf(out, "  backend workspace     %9.2f\n", mb(p->workspace_fixed, 1));
	fprintf(out, "  total                 %9.2f\n", mb(fixed, 1));
	fprintf(out, "host, outside the model: %.2f MB per image (the loaders' batches)%s\n",
		mb(p->host, n), p->on_host ? ", counted below" : ", not on the device");
	fprintf(out, "total at batch %d: %.3f GiB\n", n, (double)memplan_total(p) / 1073741824.0);
	if (p->max_batch && n > p->max_batch)
		fprintf(out, "but this backend takes batches of at most %d (a tensor past what its "
			"library describes)\n", p->max_batch);
}
