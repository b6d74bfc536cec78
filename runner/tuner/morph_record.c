/* morph_record.c: aah-morph/1 from a chain of morphisms on the graph IR. */
#include <stdlib.h>
#include <string.h>

#include "morph.h"
#include "morph_record.h"
#include "runner/store/expdir.h"   /* expdir_trial_id */
#include "util.h"

const char *morph_init_name(int init)
{
	switch (init) {
	case TG_INIT_RANDOM: return "random";
	case TG_INIT_IDENTITY: return "identity";
	case TG_INIT_ZERO: return "zero";
	default: return "inherit";
	}
}

static int has_weights(enum arch_type t)
{
	return t == ARCH_CONV2D || t == ARCH_DENSE || t == ARCH_BATCHNORM;
}

cJSON *morph_record(const struct tgraph *parent, const cJSON *parent_arch, unsigned parent_seq,
		    const char *parent_place, const struct tgraph *const *steps, const int *kinds,
		    int n)
{
	const struct tgraph *child = steps[n - 1];
	struct arch ca, pa;
	if (arch_parse(&pa, parent_arch, "parent arch.json") < 0)
		return NULL;
	int *arch_of = xmalloc((size_t)(child->nlayers ? child->nlayers : 1) * sizeof(int));
	tgraph_to_arch_map(child, &ca, arch_of);

	char id[EXPDIR_TRIAL_ID_SIZE];
	cJSON *rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "format", "aah-morph/1");
	cJSON_AddStringToObject(rec, "parent_trial", expdir_trial_id(parent_seq, id));
	if (parent_place && *parent_place) {
		char *dir = xstrfmt("../%s/%s", id, parent_place);
		cJSON_AddStringToObject(rec, "parent_dir", dir);
		free(dir);
	}
	cJSON *ops = cJSON_AddArrayToObject(rec, "operations");
	const struct tgraph *before = parent;
	for (int k = 0; k < n; k++) {
		const struct tgraph *g = steps[k];
		cJSON *op = cJSON_CreateObject();
		cJSON_AddStringToObject(op, "op", morph_name(kinds[k]));
		if (kinds[k] == MORPH_WIDER) {
			for (int i = 0; i < before->nlayers; i++) {
				if (g->layers[i].op.units == before->layers[i].op.units || arch_of[i] < 0)
					continue;
				cJSON_AddStringToObject(op, "layer", ca.layers[arch_of[i]].id);
				cJSON *u = cJSON_AddArrayToObject(op, "units");
				cJSON_AddItemToArray(u, cJSON_CreateNumber(before->layers[i].op.units));
				cJSON_AddItemToArray(u, cJSON_CreateNumber(g->layers[i].op.units));
			}
		} else {
			cJSON *added = cJSON_AddArrayToObject(op, "layers");
			for (int i = before->nlayers; i < g->nlayers; i++) {
				if (arch_of[i] < 0)
					continue;
				cJSON *l = cJSON_CreateObject();
				cJSON_AddStringToObject(l, "layer", ca.layers[arch_of[i]].id);
				if (has_weights(g->layers[i].op.type))
					cJSON_AddStringToObject(l, "init",
								morph_init_name(g->layers[i].init));
				cJSON_AddItemToArray(added, l);
			}
		}
		cJSON_AddItemToArray(ops, op);
		before = g;
	}
	cJSON *inherit = cJSON_AddArrayToObject(rec, "inherit");
	for (int i = 0; i < parent->nlayers && i < pa.n_layers; i++) {
		if (arch_of[i] < 0)
			continue;
		cJSON *l = cJSON_CreateObject();
		cJSON_AddStringToObject(l, "layer", ca.layers[arch_of[i]].id);
		cJSON_AddStringToObject(l, "from", pa.layers[i].id);
		cJSON_AddItemToArray(inherit, l);
	}
	free(arch_of);
	arch_release(&ca);
	arch_release(&pa);
	return rec;
}
