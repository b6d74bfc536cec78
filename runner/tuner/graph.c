/* graph.c: graph IR, shape inference, hashing and the main chain. */
#include "graph.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

static const char *const type_names[TL_NTYPES] = {
	[TL_CONV] = "conv2d",       [TL_BN] = "batchnorm", [TL_RELU] = "relu",
	[TL_MAXPOOL] = "maxpool",   [TL_AVGPOOL] = "avgpool",
	[TL_GAP] = "global_avg_pool", [TL_DENSE] = "dense", [TL_DROPOUT] = "dropout",
	[TL_ADD] = "add",           [TL_CONCAT] = "concat", [TL_FLATTEN] = "flatten",
};

const char *tgraph_type_name(int type)
{
	return type >= 0 && type < TL_NTYPES ? type_names[type] : "?";
}

void tgraph_init(struct tgraph *g, int h, int w, int c, int num_classes)
{
	memset(g, 0, sizeof(*g));
	g->input = (struct tshape){ 4, h, w, c };
	g->num_classes = num_classes;
	g->output = -1;
}

void tgraph_release(struct tgraph *g)
{
	free(g->layers);
	free(g->shapes);
	g->layers = NULL;
	g->shapes = NULL;
	g->nlayers = g->alayers = g->ashapes = 0;
	g->output = -1;
}

void tgraph_copy(struct tgraph *dst, const struct tgraph *src)
{
	*dst = *src;
	dst->alayers = src->nlayers ? src->nlayers + 8 : 8;
	dst->layers = xmalloc((size_t)dst->alayers * sizeof(*dst->layers));
	memcpy(dst->layers, src->layers, (size_t)src->nlayers * sizeof(*src->layers));
	dst->ashapes = dst->alayers + 1;
	dst->shapes = xmalloc((size_t)dst->ashapes * sizeof(*dst->shapes));
	if (src->shapes)
		memcpy(dst->shapes, src->shapes, (size_t)(src->nlayers + 1) * sizeof(*src->shapes));
}

int tgraph_add(struct tgraph *g, const struct tlayer *l)
{
	if (g->nlayers == g->alayers) {
		g->alayers = g->alayers ? 2 * g->alayers : 32;
		g->layers = xrealloc(g->layers, (size_t)g->alayers * sizeof(*g->layers));
	}
	g->layers[g->nlayers] = *l;
	return ++g->nlayers;
}

int tgraph_add1(struct tgraph *g, int type, int in, int filters, int kernel, int stride)
{
	struct tlayer l = { .type = (uint8_t)type, .nin = 1, .in = { in }, .filters = filters,
			    .kernel = kernel, .stride = stride, .bias = 1,
			    .padding = (type == TL_MAXPOOL || type == TL_AVGPOOL) ? TG_VALID : TG_SAME };
	if (type == TL_DROPOUT)
		l.rate = 0.25;
	return tgraph_add(g, &l);
}

void tgraph_redirect(struct tgraph *g, int from, int to, int except)
{
	for (int i = 0; i < g->nlayers; i++) {
		if (i == except)
			continue;
		for (int j = 0; j < g->layers[i].nin; j++)
			if (g->layers[i].in[j] == from)
				g->layers[i].in[j] = to;
	}
	if (g->output + 1 == from && to > 0)
		g->output = to - 1;
}

/* Depth-first post-order from the output, inputs in order: the same
 * structure always gives the same order, whatever the layer indices. */
int tgraph_topo(const struct tgraph *g, int *order)
{
	int n = g->nlayers, cnt = 0, sp = 0, rc = 0;
	if (g->output < 0 || g->output >= n)
		return -1;
	char *color = xcalloc((size_t)n, 1);            /* 0 new, 1 on stack, 2 done */
	int *stack = xmalloc((size_t)n * sizeof(int));  /* layer */
	int *next = xmalloc((size_t)n * sizeof(int));   /* next input to visit */
	stack[sp] = g->output;
	next[sp++] = 0;
	color[g->output] = 1;
	while (sp) {
		int i = stack[sp - 1];
		const struct tlayer *l = &g->layers[i];
		if (next[sp - 1] < l->nin) {
			int src = l->in[next[sp - 1]++] - 1;
			if (src < 0 || src >= n || color[src] == 2)
				continue;
			if (color[src] == 1) {
				rc = -1;
				break;
			}
			color[src] = 1;
			stack[sp] = src;
			next[sp++] = 0;
			continue;
		}
		color[i] = 2;
		order[cnt++] = i;
		sp--;
	}
	free(next);
	free(stack);
	free(color);
	return rc < 0 ? -1 : cnt;
}

static int out_dim(int in, int kernel, int stride, int padding)
{
	if (padding == TG_SAME)
		return (in + stride - 1) / stride;
	return in >= kernel ? (in - kernel) / stride + 1 : 0;
}

#define ERR(...) (report ? error(__VA_ARGS__) : -1)

static int infer_layer(struct tgraph *g, int i, int report)
{
	const struct tlayer *l = &g->layers[i];
	const struct tshape *s = &g->shapes[l->in[0]];
	struct tshape o = *s;
	const char *tn = tgraph_type_name(l->type);
	for (int j = 0; j < l->nin; j++)
		if (l->in[j] < 0 || l->in[j] > g->nlayers)
			return ERR("arch: layer %d (%s) reads a missing node", i, tn);
	switch (l->type) {
	case TL_CONV:
	case TL_MAXPOOL:
	case TL_AVGPOOL:
		if (s->rank != 4)
			return ERR("arch: layer %d (%s) needs an image (rank 4) input", i, tn);
		if (l->kernel < 1 || l->kernel > 31 || l->stride < 1 || l->stride > 31)
			return ERR("arch: layer %d (%s) has a bad kernel or stride", i, tn);
		o.h = out_dim(s->h, l->kernel, l->stride, l->padding);
		o.w = out_dim(s->w, l->kernel, l->stride, l->padding);
		if (o.h < 1 || o.w < 1)
			return ERR("arch: layer %d (%s) shrinks %dx%d to nothing", i, tn, s->h, s->w);
		if (l->type == TL_CONV) {
			if (l->filters < 1 || l->filters > 65536)
				return ERR("arch: layer %d (conv2d) has bad filters %d", i, l->filters);
			o.c = l->filters;
		}
		break;
	case TL_BN:
	case TL_RELU:
	case TL_DROPOUT:
		break;
	case TL_GAP:
	case TL_FLATTEN:
		if (s->rank != 4)
			return ERR("arch: layer %d (%s) needs a rank 4 input", i, tn);
		o = (struct tshape){ 2, 1, 1, l->type == TL_GAP ? s->c : s->h * s->w * s->c };
		break;
	case TL_DENSE:
		if (s->rank != 2)
			return ERR("arch: layer %d (dense) needs a rank 2 input (add flatten or "
				     "global_avg_pool)", i);
		if (l->filters < 1 || l->filters > 65536)
			return ERR("arch: layer %d (dense) has bad units %d", i, l->filters);
		o.c = l->filters;
		break;
	case TL_ADD:
	case TL_CONCAT:
		if (l->nin < 2)
			return ERR("arch: layer %d (%s) needs two or more inputs", i, tn);
		for (int j = 1; j < l->nin; j++) {
			const struct tshape *t = &g->shapes[l->in[j]];
			if (l->type == TL_ADD && memcmp(t, s, sizeof(*t)))
				return ERR("arch: layer %d (add) joins different shapes", i);
			if (l->type == TL_CONCAT) {
				if (t->rank != s->rank || t->h != s->h || t->w != s->w)
					return ERR("arch: layer %d (concat) joins different sizes", i);
				o.c += t->c;
			}
		}
		break;
	default:
		return ERR("arch: layer %d has an unknown type", i);
	}
	if (l->nin > 1 && l->type != TL_ADD && l->type != TL_CONCAT)
		return ERR("arch: layer %d (%s) takes one input", i, tn);
	g->shapes[i + 1] = o;
	return 0;
}

static int infer(struct tgraph *g, int report)
{
	if (g->nlayers < 1 || g->output < 0 || g->output >= g->nlayers)
		return ERR("arch: no output layer");
	if (g->ashapes < g->nlayers + 1) {
		g->ashapes = g->nlayers + 1 + 16;
		g->shapes = xrealloc(g->shapes, (size_t)g->ashapes * sizeof(*g->shapes));
	}
	g->shapes[0] = g->input;
	int *order = xmalloc((size_t)g->nlayers * sizeof(int));
	int n = tgraph_topo(g, order), rc = 0;
	if (n < 0)
		rc = ERR("arch: the layers form a cycle");
	for (int k = 0; k < n && rc == 0; k++)
		rc = infer_layer(g, order[k], report);
	free(order);
	if (rc)
		return rc;
	const struct tlayer *o = &g->layers[g->output];
	if (o->type != TL_DENSE || o->filters != g->num_classes)
		return ERR("arch: the output layer must be a dense with num_classes (%d) units",
			     g->num_classes);
	return 0;
}

int tgraph_infer(struct tgraph *g)
{
	return infer(g, 1);
}

int tgraph_valid(struct tgraph *g)
{
	return infer(g, 0) == 0;
}

uint64_t tgraph_params(const struct tgraph *g)
{
	uint64_t p = 0;
	int *order = xmalloc((size_t)g->nlayers * sizeof(int));
	int n = tgraph_topo(g, order);
	for (int k = 0; k < n; k++) {
		const struct tlayer *l = &g->layers[order[k]];
		const struct tshape *s = &g->shapes[l->in[0]];
		if (l->type == TL_CONV)
			p += (uint64_t)l->kernel * l->kernel * s->c * l->filters + (l->bias ? l->filters : 0);
		else if (l->type == TL_DENSE)
			p += (uint64_t)s->c * l->filters + (l->bias ? l->filters : 0);
		else if (l->type == TL_BN)
			p += 2 * (uint64_t)s->c;
	}
	free(order);
	return p;
}

double tgraph_flops(const struct tgraph *g)
{
	double f = 0;
	int *order = xmalloc((size_t)g->nlayers * sizeof(int));
	int n = tgraph_topo(g, order);
	for (int k = 0; k < n; k++) {
		int i = order[k];
		const struct tlayer *l = &g->layers[i];
		const struct tshape *s = &g->shapes[l->in[0]], *o = &g->shapes[i + 1];
		if (l->type == TL_CONV)
			f += 2.0 * l->kernel * l->kernel * s->c * l->filters * o->h * o->w;
		else if (l->type == TL_DENSE)
			f += 2.0 * s->c * l->filters;
	}
	free(order);
	return f;
}

int tgraph_size(const struct tgraph *g)
{
	int *order = xmalloc((size_t)g->nlayers * sizeof(int));
	int n = tgraph_topo(g, order);
	free(order);
	return n;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	h *= 0xff51afd7ed558ccdULL;
	return h ^ (h >> 33);
}

uint64_t tgraph_hash(const struct tgraph *g)
{
	int *order = xmalloc((size_t)g->nlayers * sizeof(int));
	uint64_t *nh = xmalloc((size_t)(g->nlayers + 1) * sizeof(uint64_t));
	int n = tgraph_topo(g, order);
	nh[0] = mix(mix(mix(0x1234, (uint64_t)g->input.h), (uint64_t)g->input.w), (uint64_t)g->input.c);
	for (int k = 0; k < n; k++) {
		const struct tlayer *l = &g->layers[order[k]];
		uint64_t h = mix(0xabcdef, l->type);
		/* only the fields that the type uses */
		if (l->type == TL_CONV || l->type == TL_DENSE) {
			h = mix(h, (uint64_t)l->filters);
			h = mix(h, l->bias);
		}
		if (l->type == TL_CONV || l->type == TL_MAXPOOL || l->type == TL_AVGPOOL) {
			h = mix(h, (uint64_t)l->kernel);
			h = mix(h, (uint64_t)l->stride);
			h = mix(h, l->padding);
		}
		if (l->type == TL_DROPOUT) {
			uint64_t r;
			memcpy(&r, &l->rate, sizeof(r));
			h = mix(h, r);
		}
		for (int j = 0; j < l->nin; j++)
			h = mix(h, nh[l->in[j]]);
		nh[order[k] + 1] = h;
	}
	uint64_t res = n > 0 ? mix(nh[g->output + 1], (uint64_t)g->num_classes) : 0;
	free(nh);
	free(order);
	return res;
}

int tgraph_main_chain(const struct tgraph *g, int *chain)
{
	int n = 0;
	for (int i = g->output; i >= 0 && n < g->nlayers; i = g->layers[i].in[0] - 1)
		chain[n++] = i;
	for (int a = 0, b = n - 1; a < b; a++, b--) {
		int t = chain[a];
		chain[a] = chain[b];
		chain[b] = t;
	}
	return n;
}

/* ---- descriptor --------------------------------------------------------- */

static int cmp_skip(const void *pa, const void *pb)
{
	const struct tdesc_skip *a = pa, *b = pb;
	if (a->a != b->a)
		return a->a < b->a ? -1 : 1;
	if (a->b != b->b)
		return a->b < b->b ? -1 : 1;
	return (a->type > b->type) - (a->type < b->type);
}

int tdesc_from_graph(struct tdesc *d, const struct tgraph *g)
{
	int *chain = xmalloc((size_t)g->nlayers * sizeof(int));
	int *pos = xmalloc((size_t)(g->nlayers + 1) * sizeof(int));   /* node -> main index */
	int n = tgraph_main_chain(g, chain);
	memset(d, 0, sizeof(*d));
	for (int i = 0; i <= g->nlayers; i++)
		pos[i] = -1;
	pos[0] = 0;
	for (int k = 0; k < n; k++)
		pos[chain[k] + 1] = k + 1;
	d->layers = xmalloc((size_t)(n ? n : 1) * sizeof(*d->layers));
	d->nlayers = n;
	int askips = 0;
	for (int k = 0; k < n; k++) {
		const struct tlayer *l = &g->layers[chain[k]];
		d->layers[k] = (struct tdesc_layer){ .type = (int8_t)l->type, .padding = (int8_t)l->padding,
						     .kernel = (int16_t)l->kernel, .stride = (int16_t)l->stride,
						     .filters = l->filters };
		if (l->type != TL_CONV && l->type != TL_MAXPOOL && l->type != TL_AVGPOOL)
			d->layers[k].kernel = d->layers[k].stride = d->layers[k].padding = 0;
		if (l->type != TL_CONV)
			d->layers[k].filters = 0;
		if (l->type == TL_ADD || l->type == TL_CONCAT)
			askips += l->nin - 1;
		if (d->counts[l->type] < UINT16_MAX)
			d->counts[l->type]++;
	}
	d->has_counts = 1;
	d->skips = xmalloc((size_t)(askips ? askips : 1) * sizeof(*d->skips));
	for (int k = 0; k < n; k++) {
		const struct tlayer *l = &g->layers[chain[k]];
		if (l->type != TL_ADD && l->type != TL_CONCAT)
			continue;
		for (int j = 1; j < l->nin; j++) {
			int node = l->in[j], guard = 0;
			while (pos[node] < 0 && node > 0 && guard++ < g->nlayers)
				node = g->layers[node - 1].in[0];
			if (pos[node] < 0)
				continue;
			d->skips[d->nskips++] = (struct tdesc_skip){ pos[node], k + 1, l->type };
		}
	}
	qsort(d->skips, (size_t)d->nskips, sizeof(*d->skips), cmp_skip);
	d->hash = tgraph_hash(g);
	free(pos);
	free(chain);
	return 0;
}

void tdesc_release(struct tdesc *d)
{
	free(d->layers);
	free(d->skips);
	memset(d, 0, sizeof(*d));
}
