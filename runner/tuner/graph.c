/* graph.c: graph IR, shape inference by the format's rules, hashing and the
 * main chain. */
#include "graph.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

void tgraph_init(struct tgraph *g, int h, int w, int c, int num_classes)
{
	memset(g, 0, sizeof(*g));
	g->input = (struct arch_shape){ 4, h, w, c };
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

int tgraph_add1(struct tgraph *g, enum arch_type type, int in, int filters, int kernel, int stride)
{
	struct tlayer l = { .nin = 1, .in = { in } };
	arch_op_init(&l.op, type);
	l.op.units = filters;
	l.op.kernel = kernel;
	l.op.stride = stride;
	if (type == ARCH_DROPOUT)
		l.op.rate = 0.25;
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

#define ERR(...) (report ? error(__VA_ARGS__) : -1)

static int infer_layer(struct tgraph *g, int i, int report)
{
	const struct tlayer *l = &g->layers[i];
	struct arch_shape in[TG_MAX_INPUTS];
	for (int j = 0; j < l->nin; j++) {
		if (l->in[j] < 0 || l->in[j] > g->nlayers)
			return ERR("arch: layer %d (%s) reads a missing node", i, arch_type_name(l->op.type));
		in[j] = g->shapes[l->in[j]];
	}
	if (arch_op_shape(&l->op, in, l->nin, &g->shapes[i + 1], NULL) == 0)
		return 0;
	if (report) {
		char *what = xstrfmt("arch: layer %d (%s)", i, arch_type_name(l->op.type));
		arch_op_shape(&l->op, in, l->nin, &g->shapes[i + 1], what);
		free(what);
	}
	return -1;
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
	if (!arch_op_is_logits(&g->layers[g->output].op, g->num_classes))
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
	uint64_t p = 0, weights, others;
	int *order = xmalloc((size_t)g->nlayers * sizeof(int));
	int n = tgraph_topo(g, order);
	for (int k = 0; k < n; k++) {
		const struct tlayer *l = &g->layers[order[k]];
		arch_op_params(&l->op, &g->shapes[l->in[0]], &weights, &others);
		p += weights + others;
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
		f += arch_op_mac_flops(&g->layers[i].op, &g->shapes[g->layers[i].in[0]], &g->shapes[i + 1]);
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
		const struct arch_op *op = &l->op;
		uint64_t h = mix(0xabcdef, op->type);
		/* only the fields that the type uses */
		if (op->type == ARCH_CONV2D || op->type == ARCH_DENSE) {
			h = mix(h, (uint64_t)op->units);
			h = mix(h, (uint64_t)op->bias);
		}
		if (op->type == ARCH_CONV2D || op->type == ARCH_MAXPOOL || op->type == ARCH_AVGPOOL) {
			h = mix(h, (uint64_t)op->kernel);
			h = mix(h, (uint64_t)op->stride);
			h = mix(h, op->padding);
		}
		if (op->type == ARCH_DROPOUT) {
			uint64_t r;
			memcpy(&r, &op->rate, sizeof(r));
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
		const struct arch_op *op = &l->op;
		d->layers[k] = (struct tdesc_layer){ .type = (int8_t)op->type, .padding = (int8_t)op->padding,
						     .kernel = (int16_t)op->kernel, .stride = (int16_t)op->stride,
						     .filters = op->units };
		if (op->type != ARCH_CONV2D && op->type != ARCH_MAXPOOL && op->type != ARCH_AVGPOOL)
			d->layers[k].kernel = d->layers[k].stride = d->layers[k].padding = 0;
		if (op->type != ARCH_CONV2D)
			d->layers[k].filters = 0;
		if (op->type == ARCH_ADD || op->type == ARCH_CONCAT)
			askips += l->nin - 1;
		if (d->counts[op->type] < UINT16_MAX)
			d->counts[op->type]++;
	}
	d->has_counts = 1;
	d->skips = xmalloc((size_t)(askips ? askips : 1) * sizeof(*d->skips));
	for (int k = 0; k < n; k++) {
		const struct tlayer *l = &g->layers[chain[k]];
		if (l->op.type != ARCH_ADD && l->op.type != ARCH_CONCAT)
			continue;
		for (int j = 1; j < l->nin; j++) {
			int node = l->in[j], guard = 0;
			while (pos[node] < 0 && node > 0 && guard++ < g->nlayers)
				node = g->layers[node - 1].in[0];
			if (pos[node] < 0)
				continue;
			d->skips[d->nskips++] = (struct tdesc_skip){ pos[node], k + 1, l->op.type };
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
	free(d->tok);
	memset(d, 0, sizeof(*d));
}
