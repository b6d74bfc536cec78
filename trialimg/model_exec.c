/* model_exec.c: the model's memory blocks, parameter initialisation and the
 * forward / backward / update passes over the op table. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h> /* mmap, munmap */

#include "kernels/carve.h"
#include "trialimg/model.h"
#include "util.h"

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = (*s += 0x9e3779b97f4a7c15ull);
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static float rng_uniform(uint64_t *s, float a)
{
	return a * (float)(2.0 * ((double)(rng_next(s) >> 11) / 9007199254740992.0) - 1.0);
}

int model_alloc(struct model *m, int batch, uint64_t seed)
{
	struct memplan p;
	if (memplan_build(&p, m, batch, NULL, m->keep_grads))
		return -1;
	return model_alloc_planned(m, &p, seed);
}

int model_alloc_planned(struct model *m, struct memplan *plan, uint64_t seed)
{
	size_t nw = 0, nb = 0, nstats = 0, nmask = 0;
	int max_in = 1, batch = plan->batch;
	for (int i = 0; i < m->n_layers; i++) {
		struct model_layer *L = &m->layers[i];
		nw += L->n_weights;
		nb += L->n_biases;
		if (L->op.cfg.type == OPS_BATCHNORM)
			nstats += 4 * (size_t)L->op.out.c;
		if (plan->masked[i])
			nmask += (size_t)batch * ops_shape_size(&L->op.out);
		if (L->op.n_in > max_in)
			max_in = L->op.n_in;
	}
	m->plan = *plan;
	memset(plan, 0, sizeof(*plan));
	m->batch = batch;
	m->n_params = nw + nb;
	m->n_decayed = nw;
	m->n_stats = nstats;
	/* everything in one block, carved once (kernels/carve.h) */
	const struct carve *lay = &m->plan.lay;
	m->block_bytes = lay->total;
	m->state_bytes = lay->r[MEMPLAN_STATS].offset + lay->r[MEMPLAN_STATS].bytes;
	if (m->plan.on_host) {
		m->block = xcalloc(1, lay->total);
	} else {
		/* a device backend keeps all but the state on its device
		 * (model_resident): the host writes only the state, so the
		 * rest is address space, reserved nowhere (at AIPerf's batch
		 * it can be more than the host's memory, which calloc's
		 * accounting would refuse) */
		m->block = mmap(NULL, lay->total, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m->block == MAP_FAILED) {
			m->block = NULL;
			return error("cannot map %zu bytes of address space for the model", lay->total);
		}
	}
	m->params = carve_at(lay, m->block, MEMPLAN_PARAMS);
	m->grads = carve_at(lay, m->block, MEMPLAN_GRADS);
	m->velocity = carve_at(lay, m->block, MEMPLAN_VELOCITY);
	m->stats = carve_at(lay, m->block, MEMPLAN_STATS);
	m->acts = carve_at(lay, m->block, MEMPLAN_ACTS);
	m->dacts = carve_at(lay, m->block, MEMPLAN_DACTS);
	m->scratch = carve_at(lay, m->block, MEMPLAN_SCRATCH);
	m->masks = carve_at(lay, m->block, MEMPLAN_MASKS);
	memplan_input(&m->plan, m, carve_at(lay, m->block, MEMPLAN_INPUT), &m->in);
	m->n_masks = nmask;
	m->scratch_stride = m->plan.scratch_stride;
	m->seen = xcalloc(m->n_layers + 1, 1);
	m->max_in = max_in;
	m->xs = xcalloc(max_in, sizeof(*m->xs));
	m->dxs = xcalloc(max_in, sizeof(*m->dxs));

	size_t pw = 0, pb = nw, ps = 0, pm = 0;
	uint64_t rng = seed * 0x2545f4914f6cdd1dull + 1;
	for (int i = 0; i < m->n_layers; i++) {
		struct model_layer *L = &m->layers[i];
		struct ops_layer *op = &L->op;
		size_t t = (size_t)batch * ops_shape_size(&op->out);
		L->act = (float *)((char *)m->acts + m->plan.act_off[i]);
		L->dact = (float *)((char *)m->dacts + m->plan.dact_off[i]);
		op->out_type = m->plan.type[i + 1];
		for (int k = 0; k < op->n_in; k++)
			L->in_types[k] = m->plan.type[L->inputs[k]];
		switch (op->cfg.type) {
		case OPS_CONV2D:
		case OPS_DENSE: {
			op->w = m->params + pw;
			op->dw = m->grads + pw;
			pw += L->n_weights;
			size_t fan_in = L->n_weights / (size_t)op->cfg.units;
			float a = op->cfg.type == OPS_CONV2D
					  ? sqrtf(6.0f / (float)fan_in)                 /* He */
					  : sqrtf(6.0f / (float)(fan_in + op->cfg.units)); /* Glorot */
			for (size_t k = 0; k < L->n_weights; k++)
				op->w[k] = rng_uniform(&rng, a);
			if (op->cfg.bias) {
				op->b = m->params + pb;
				op->db = m->grads + pb;
				pb += L->n_biases;
			}
			break;
		}
		case OPS_BATCHNORM: {
			int c = op->out.c;
			op->gamma = m->params + pb;
			op->dgamma = m->grads + pb;
			op->beta = op->gamma + c;
			op->dbeta = op->dgamma + c;
			pb += 2 * (size_t)c;
			for (int k = 0; k < c; k++)
				op->gamma[k] = 1.0f;
			op->run_mean = m->stats + ps;
			op->run_var = op->run_mean + c;
			op->save_mean = op->run_var + c;
			op->save_var = op->save_mean + c;
			ps += 4 * (size_t)c;
			for (int k = 0; k < c; k++)
				op->run_var[k] = 1.0f;
			break;
		}
		default:
			break;
		}
		if (m->plan.masked[i]) {   /* dropout's, or max pooling's argmax */
			op->mask = m->masks + pm;
			pm += t;
		}
	}
	return 0;
}

static const float *tensor(const struct model *m, const float *x, int t)
{
	return t ? m->layers[t - 1].act : x;
}

/* A conv2d whose output one batchnorm alone reads gives that batchnorm its
 * bias where the backend's ops fold biases (ops_layer_ops.folds_bias): the
 * batch's mean takes the bias out exactly, so training need not add it
 * nor sum its gradient (kernels/ops.h, ops_layer.fold_b). */
static void fold_biases(struct model *m, const struct ops_backend *be)
{
	const struct ops_layer_ops *conv = be->layer[OPS_CONV2D], *bn = be->layer[OPS_BATCHNORM];
	int on = conv && bn && conv->folds_bias && bn->folds_bias;
	for (int i = 0; i < m->n_layers; i++) {
		struct ops_layer *op = &m->layers[i].op;
		op->bias_folded = 0;
		op->fold_b = NULL;
		op->fold_db = NULL;
	}
	for (int i = 0; on && i < m->n_layers; i++) {
		struct model_layer *L = &m->layers[i];
		int t = L->inputs[0];
		if (L->op.cfg.type != OPS_BATCHNORM || !t)
			continue;
		struct model_layer *P = &m->layers[t - 1];
		if (P->op.cfg.type != OPS_CONV2D || !P->op.cfg.bias || P->n_users != 1 || !P->op.b)
			continue;
		P->op.bias_folded = 1;
		L->op.fold_b = P->op.b;
		L->op.fold_db = P->op.db;
	}
}

void model_layouts(struct model *m, struct ops_ctx *ctx)
{
	const struct ops_backend *be = ctx->be;
	enum ops_layout *lay = m->layouts;
	memplan_layouts(m, ctx, lay);
	for (int i = 0; i < m->n_layers; i++) {
		struct model_layer *L = &m->layers[i];
		int same = L->op.out_layout == lay[i + 1];
		for (int k = 0; k < L->op.n_in; k++)
			same &= L->in_layouts[k] == lay[L->inputs[k]];
		/* its plans hold the old layouts (a plan of another backend is not
		 * this one's to free: a model runs on one backend) */
		if (!same && (!m->layout_be || m->layout_be == be) && be->layer[L->op.cfg.type] &&
		    be->layer[L->op.cfg.type]->release)
			be->layer[L->op.cfg.type]->release(ctx, &L->op);
		L->op.out_layout = lay[i + 1];
		for (int k = 0; k < L->op.n_in; k++)
			L->in_layouts[k] = lay[L->inputs[k]];
	}
	fold_biases(m, be);
	m->layout_be = be;
	m->layout_nhwc_only = ctx->nhwc_only;
	m->layout_blocked = ctx->blocked;
}

int model_forward(struct model *m, struct ops_ctx *ctx, const float *x, int n, int train)
{
	if (n > m->batch)
		BUG("batch %d over capacity %d", n, m->batch);
	if (m->layout_be != ctx->be || m->layout_nhwc_only != ctx->nhwc_only ||
	    m->layout_blocked != ctx->blocked)
		model_layouts(m, ctx);
	for (int i = 0; i < m->n_layers; i++) {
		struct model_layer *L = &m->layers[i];
		if (L->fused)
			continue;
		for (int k = 0; k < L->op.n_in; k++)
			m->xs[k] = tensor(m, x, L->inputs[k]);
		double t0 = m->prof ? util_monotonic() : 0;
		if (ctx->be->layer[L->op.cfg.type]->forward(ctx, &L->op, n, m->xs, L->act, train))
			return error("layer '%s': forward failed", L->id);
		if (m->prof)
			m->prof[2 * i] += util_monotonic() - t0;
	}
	return 0;
}

const float *model_logits(const struct model *m)
{
	return m->layers[m->output].act;
}

float *model_dlogits(const struct model *m)
{
	return m->layers[m->output].dact;
}

/* The outputs the plan does not keep that layer j's backward (or, for
 * j's own, nothing later) reads, again in their buffers before it
 * (memplan.h) */
static int recompute_for(struct model *m, struct ops_ctx *ctx, const float *x, int n, int j)
{
	for (int i = 0; i <= j; i++) {
		if (m->plan.rec_at[i] != j)
			continue;
		struct model_layer *L = &m->layers[i];
		for (int k = 0; k < L->op.n_in; k++)
			m->xs[k] = tensor(m, x, L->inputs[k]);
		if (ctx->be->layer[L->op.cfg.type]->recompute(ctx, &L->op, n, m->xs, L->act))
			return error("layer '%s': recomputing its output failed", L->id);
	}
	return 0;
}

int model_backward(struct model *m, struct ops_ctx *ctx, const float *x, int n,
		   const float *dlogits)
{
	struct model_layer *O = &m->layers[m->output];
	memset(m->seen, 0, m->n_layers + 1);
	size_t nd = (size_t)n * m->num_classes * sizeof(float);
	if (dlogits != O->dact) {   /* a buffer of the caller's */
		memcpy(O->dact, dlogits, nd);
		if (ops_sync(ctx, O->dact, nd, OPS_TO_DEVICE))
			return -1;
	}
	m->seen[m->output + 1] = 1;
	for (int i = m->n_layers - 1; i >= 0; i--) {
		struct model_layer *L = &m->layers[i];
		if (!m->seen[i + 1])
			BUG("layer '%s' has no gradient", L->id);
		if (L->fused) { /* its gradient already sits in the batchnorm's buffer */
			m->seen[L->inputs[0]] = 1;
			continue;
		}
		if (recompute_for(m, ctx, x, n, i))
			return -1;
		const struct ops_layer_ops *ops = ctx->be->layer[L->op.cfg.type];
		L->op.add_dx0 = 0;
		for (int k = 0; k < L->op.n_in; k++) {
			int t = L->inputs[k];
			m->xs[k] = tensor(m, x, t);
			if (!t) {
				m->dxs[k] = NULL;
			} else if (!m->seen[t]) {
				m->dxs[k] = m->layers[t - 1].dact;  /* first writer overwrites */
				m->seen[t] = 1;
			} else if (!k && ops->adds_dx0 && ops->adds_dx0(ctx, &L->op, n)) {
				m->dxs[k] = m->layers[t - 1].dact;  /* the op adds its part in */
				L->op.add_dx0 = 1;
			} else { /* a later part of a fan-out gradient: where the plan put it */
				if (k >= m->plan.scratch_rows ||
				    (size_t)n * ops_shape_size(&L->in_shapes[k]) *
						    ops_dtype_size(L->in_types[k]) >
					    m->scratch_stride)
					BUG("layer '%s' input %d: no fan-out scratch planned", L->id, k);
				m->dxs[k] = (float *)(m->scratch + (size_t)k * m->scratch_stride);
			}
		}
		double t0 = m->prof ? util_monotonic() : 0;
		if (ops->backward(ctx, &L->op, n, m->xs, L->act, L->dact, m->dxs))
			return error("layer '%s': backward failed", L->id);
		for (int k = 0; k < L->op.n_in; k++) {
			int t = L->inputs[k];
			if (t && m->dxs[k] != m->layers[t - 1].dact &&
			    ctx->be->accumulate(ctx, (size_t)n * ops_shape_size(&L->in_shapes[k]),
						L->in_types[k], m->layers[t - 1].dact, m->dxs[k]))
				return error("layer '%s': accumulating the gradient of '%s' failed",
					     L->id, m->layers[t - 1].id);
		}
		if (m->prof)
			m->prof[2 * i + 1] += util_monotonic() - t0;
	}
	return 0;
}

int model_update(struct model *m, struct ops_ctx *ctx, float lr, float momentum, float wd)
{
	if (ctx->be->sgd(ctx, m->n_decayed, m->params, m->grads, m->velocity, lr, momentum, wd))
		return -1;
	size_t d = m->n_decayed;
	return ctx->be->sgd(ctx, m->n_params - d, m->params + d, m->grads + d, m->velocity + d, lr,
			    momentum, 0.0f);
}

int model_resident(struct model *m, struct ops_ctx *ctx)
{
	/* and the parameters in 16 bits beside them, where the backend keeps
	 * them (its convolutions then read no conversion of their weights) */
	return ops_resident(ctx, m->block, m->block_bytes, m->state_bytes) ||
	       ops_twin(ctx, m->params, m->n_params);
}

void model_release(struct model *m, struct ops_ctx *ctx)
{
	if (ctx && m->block)
		ops_forget(ctx, m->block);
	for (int i = 0; m->layers && i < m->n_layers; i++) {
		struct model_layer *L = &m->layers[i];
		if (ctx && ctx->be->layer[L->op.cfg.type]->release)
			ctx->be->layer[L->op.cfg.type]->release(ctx, &L->op);
		free(L->id);
		free(L->inputs);
		free(L->in_shapes);
		free(L->in_layouts);
		free(L->in_types);
	}
	free(m->layers);
	if (m->block && !m->plan.on_host)
		munmap(m->block, m->block_bytes);
	else
		free(m->block);
	free(m->layouts);
	memplan_release(&m->plan);
	free(m->seen);
	free(m->xs);
	free(m->dxs);
	memset(m, 0, sizeof(*m));
}
