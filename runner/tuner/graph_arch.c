/* graph_arch.c: the graph IR <-> aah-arch/1, through common/arch (which
 * owns the format: names, fields, checks). */
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "util.h"

void tgraph_to_arch(const struct tgraph *g, struct arch *a)
{
	tgraph_to_arch_map(g, a, NULL);
}

void tgraph_to_arch_map(const struct tgraph *g, struct arch *a, int *arch_of)
{
	int *order = xmalloc((size_t)(g->nlayers ? g->nlayers : 1) * sizeof(int));
	int *node = xmalloc((size_t)(g->nlayers + 1) * sizeof(int)); /* graph node -> arch node */
	int n = tgraph_topo(g, order);
	arch_init(a, g->input.h, g->input.w, g->input.c, g->num_classes);
	node[0] = 0;
	for (int k = 0; k < n; k++) {
		const struct tlayer *l = &g->layers[order[k]];
		int in[TG_MAX_INPUTS];
		for (int j = 0; j < l->nin; j++)
			in[j] = node[l->in[j]];
		char *id = xstrfmt("%s_%d", arch_type_name(l->op.type), k + 1);
		node[order[k] + 1] = arch_add(a, id, &l->op, l->nin, in);
		free(id);
	}
	a->output = n > 0 ? node[g->output + 1] - 1 : -1;
	if (arch_of) {
		for (int i = 0; i < g->nlayers; i++)
			arch_of[i] = -1;
		for (int k = 0; k < n; k++)
			arch_of[order[k]] = node[order[k] + 1] - 1;
	}
	free(node);
	free(order);
}

cJSON *tgraph_to_json(const struct tgraph *g, const cJSON *meta)
{
	struct arch a;
	tgraph_to_arch(g, &a);
	cJSON *d = arch_to_json(&a);
	arch_release(&a);
	if (meta)
		cJSON_AddItemToObject(d, "meta", cJSON_Duplicate(meta, 1));
	return d;
}

int tgraph_from_arch(struct tgraph *g, const struct arch *a, const char *file)
{
	tgraph_init(g, a->input.h, a->input.w, a->input.c, a->num_classes);
	for (int i = 0; i < a->n_layers; i++) {
		const struct arch_layer *al = &a->layers[i];
		struct tlayer l = { .op = al->op, .nin = al->n_in };
		if (al->n_in > TG_MAX_INPUTS) {
			tgraph_release(g);
			return error("%s: layer '%s': the tuner joins at most %d inputs, not %d", file,
				     al->id, TG_MAX_INPUTS, al->n_in);
		}
		memcpy(l.in, al->in, (size_t)al->n_in * sizeof(int));
		tgraph_add(g, &l);
	}
	g->output = a->output;
	/* arch_check inferred every shape by the same rules */
	g->ashapes = g->nlayers + 1;
	g->shapes = xmalloc((size_t)g->ashapes * sizeof(*g->shapes));
	g->shapes[0] = g->input;
	for (int i = 0; i < a->n_layers; i++)
		g->shapes[i + 1] = a->layers[i].out;
	return 0;
}

int tgraph_from_json(struct tgraph *g, const cJSON *doc, const char *file)
{
	struct arch a;
	tgraph_init(g, 0, 0, 0, 0);
	if (arch_parse(&a, doc, file))
		return -1;
	int rc = tgraph_from_arch(g, &a, file);
	arch_release(&a);
	return rc;
}
