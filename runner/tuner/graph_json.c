/* graph_json.c: aah-arch/1 documents <-> the graph IR. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "jsonfile.h"   /* json_get_int, json_get_number, jsonfile_check_format */
#include "util.h"

static char *layer_id(const struct tgraph *g, int node, const int *rank)
{
	if (node == 0)
		return xstrdup("input");
	return xstrfmt("%s_%d", tgraph_type_name(g->layers[node - 1].type), rank[node - 1]);
}

cJSON *tgraph_to_json(const struct tgraph *g, const cJSON *meta)
{
	int *order = xmalloc((size_t)(g->nlayers ? g->nlayers : 1) * sizeof(int));
	int *rank = xmalloc((size_t)(g->nlayers ? g->nlayers : 1) * sizeof(int));
	int n = tgraph_topo(g, order);
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "format", "aah-arch/1");
	cJSON *in = cJSON_AddObjectToObject(d, "input");
	cJSON_AddNumberToObject(in, "height", g->input.h);
	cJSON_AddNumberToObject(in, "width", g->input.w);
	cJSON_AddNumberToObject(in, "channels", g->input.c);
	cJSON_AddNumberToObject(d, "num_classes", g->num_classes);
	for (int k = 0; k < n; k++)
		rank[order[k]] = k + 1;
	cJSON *arr = cJSON_AddArrayToObject(d, "layers");
	for (int k = 0; k < n; k++) {
		const struct tlayer *l = &g->layers[order[k]];
		cJSON *o = cJSON_CreateObject();
		char *id = layer_id(g, order[k] + 1, rank);
		cJSON_AddStringToObject(o, "id", id);
		free(id);
		cJSON_AddStringToObject(o, "type", tgraph_type_name(l->type));
		cJSON *ins = cJSON_AddArrayToObject(o, "inputs");
		for (int j = 0; j < l->nin; j++) {
			char *ref = layer_id(g, l->in[j], rank);
			cJSON_AddItemToArray(ins, cJSON_CreateString(ref));
			free(ref);
		}
		switch (l->type) {
		case TL_CONV:
			cJSON_AddNumberToObject(o, "filters", l->filters);
			cJSON_AddNumberToObject(o, "kernel", l->kernel);
			cJSON_AddNumberToObject(o, "stride", l->stride);
			cJSON_AddStringToObject(o, "padding", l->padding == TG_SAME ? "same" : "valid");
			cJSON_AddBoolToObject(o, "bias", l->bias);
			break;
		case TL_MAXPOOL:
		case TL_AVGPOOL:
			cJSON_AddNumberToObject(o, "kernel", l->kernel);
			cJSON_AddNumberToObject(o, "stride", l->stride);
			cJSON_AddStringToObject(o, "padding", l->padding == TG_SAME ? "same" : "valid");
			break;
		case TL_DENSE:
			cJSON_AddNumberToObject(o, "units", l->filters);
			cJSON_AddBoolToObject(o, "bias", l->bias);
			break;
		case TL_DROPOUT:
			cJSON_AddNumberToObject(o, "rate", l->rate);
			break;
		case TL_BN:
			if (l->eps > 0)
				cJSON_AddNumberToObject(o, "epsilon", l->eps);
			if (l->momentum > 0)
				cJSON_AddNumberToObject(o, "momentum", l->momentum);
			break;
		default:
			break;
		}
		cJSON_AddItemToArray(arr, o);
	}
	char *out = layer_id(g, g->output + 1, rank);
	cJSON_AddStringToObject(d, "output", out);
	free(out);
	if (meta)
		cJSON_AddItemToObject(d, "meta", cJSON_Duplicate(meta, 1));
	free(rank);
	free(order);
	return d;
}

struct idref {
	const char *id;
	int node;
};

static int cmp_idref(const void *a, const void *b)
{
	return strcmp(((const struct idref *)a)->id, ((const struct idref *)b)->id);
}

static int find_node(const struct idref *ids, int n, const char *id)
{
	if (!strcmp(id, "input"))
		return 0;
	struct idref key = { id, 0 };
	const struct idref *r = bsearch(&key, ids, (size_t)n, sizeof(*ids), cmp_idref);
	return r ? r->node : -1;
}

static int get_small(const char *what, const cJSON *o, const char *key, int optional, long min,
		     long max, long def, int *out)
{
	long v = def;
	if (json_get_int(what, o, key, optional, min, max, &v) < 0)
		return -1;
	*out = (int)v;
	return 0;
}

static int parse_layer(struct tlayer *l, const cJSON *o, const char *what)
{
	const char *type;
	if (json_get_string(what, o, "type", 0, &type) < 0)
		return -1;
	int t = -1;
	for (int k = 0; k < TL_NTYPES; k++)
		if (!strcmp(type, tgraph_type_name(k)))
			t = k;
	if (t < 0)
		return error("%s: unknown layer type '%s'", what, type);
	memset(l, 0, sizeof(*l));
	l->type = (uint8_t)t;
	l->bias = 1;
	const char *pad = NULL;
	int b = 1;
	switch (t) {
	case TL_CONV:
		if (get_small(what, o, "filters", 0, 1, 65536, 0, &l->filters) < 0 ||
		    get_small(what, o, "kernel", 0, 1, 31, 0, &l->kernel) < 0 ||
		    get_small(what, o, "stride", 1, 1, 31, 1, &l->stride) < 0 ||
		    json_get_string(what, o, "padding", 1, &pad) < 0 ||
		    json_get_bool(what, o, "bias", 1, &b) < 0)
			return -1;
		l->bias = (uint8_t)b;
		l->padding = TG_SAME;
		break;
	case TL_MAXPOOL:
	case TL_AVGPOOL:
		if (get_small(what, o, "kernel", 0, 1, 31, 0, &l->kernel) < 0 ||
		    get_small(what, o, "stride", 1, 1, 31, l->kernel, &l->stride) < 0 ||
		    json_get_string(what, o, "padding", 1, &pad) < 0)
			return -1;
		l->padding = TG_VALID;
		break;
	case TL_DENSE:
		if (get_small(what, o, "units", 0, 1, 65536, 0, &l->filters) < 0 ||
		    json_get_bool(what, o, "bias", 1, &b) < 0)
			return -1;
		l->bias = (uint8_t)b;
		break;
	case TL_DROPOUT:
		if (json_get_number(what, o, "rate", 0, &l->rate) < 0)
			return -1;
		if (!(l->rate >= 0 && l->rate < 1))
			return error("%s: dropout rate must be in [0, 1)", what);
		break;
	case TL_BN:
		if (json_get_number(what, o, "epsilon", 1, &l->eps) < 0 ||
		    json_get_number(what, o, "momentum", 1, &l->momentum) < 0)
			return -1;
		break;
	default:
		break;
	}
	if (pad) {
		if (!strcmp(pad, "same"))
			l->padding = TG_SAME;
		else if (!strcmp(pad, "valid"))
			l->padding = TG_VALID;
		else
			return error("%s: padding must be \"same\" or \"valid\"", what);
	}
	return 0;
}

int tgraph_from_json(struct tgraph *g, const cJSON *doc)
{
	const char *what = "arch";
	long h, w, c, nc;
	const cJSON *in = cJSON_GetObjectItemCaseSensitive(doc, "input");
	const cJSON *layers = cJSON_GetObjectItemCaseSensitive(doc, "layers");
	const char *outid;
	memset(g, 0, sizeof(*g));
	g->output = -1;
	if (jsonfile_check_format(what, doc, "aah-arch", 1) < 0)
		return -1;
	if (!cJSON_IsObject(in))
		return error("arch: missing object 'input'");
	if (json_get_int("arch input", in, "height", 0, 1, 4096, &h) < 0 ||
	    json_get_int("arch input", in, "width", 0, 1, 4096, &w) < 0 ||
	    json_get_int("arch input", in, "channels", 0, 1, 4096, &c) < 0 ||
	    json_get_int(what, doc, "num_classes", 0, 2, 100000, &nc) < 0 ||
	    json_get_string(what, doc, "output", 0, &outid) < 0)
		return -1;
	if (!cJSON_IsArray(layers) || cJSON_GetArraySize(layers) < 1)
		return error("arch: 'layers' must be a non-empty array");
	tgraph_init(g, (int)h, (int)w, (int)c, (int)nc);
	int n = cJSON_GetArraySize(layers);
	if (n > 10000)
		return error("arch: more than 10000 layers");
	struct idref *ids = xmalloc((size_t)n * sizeof(*ids));
	const cJSON *o;
	int k = 0, rc = -1;
	cJSON_ArrayForEach(o, layers) {
		if (json_get_string("arch layer", o, "id", 0, &ids[k].id) < 0)
			goto out;
		if (!strcmp(ids[k].id, "input")) {
			error("arch: a layer may not be called 'input'");
			goto out;
		}
		ids[k].node = k + 1;
		k++;
	}
	qsort(ids, (size_t)n, sizeof(*ids), cmp_idref);
	for (int i = 1; i < n; i++)
		if (!strcmp(ids[i].id, ids[i - 1].id)) {
			error("arch: layer id '%s' appears twice", ids[i].id);
			goto out;
		}
	k = 0;
	cJSON_ArrayForEach(o, layers) {
		struct tlayer l;
		char *lwhat = xstrfmt("arch layer '%s'", cJSON_GetObjectItem(o, "id")->valuestring);
		const cJSON *ins = cJSON_GetObjectItemCaseSensitive(o, "inputs"), *r;
		int bad = parse_layer(&l, o, lwhat) < 0;
		if (!bad && (!cJSON_IsArray(ins) || cJSON_GetArraySize(ins) < 1 ||
			     cJSON_GetArraySize(ins) > TG_MAX_INPUTS))
			bad = error("%s: 'inputs' must list 1 to %d layer ids", lwhat, TG_MAX_INPUTS);
		if (!bad)
			cJSON_ArrayForEach(r, ins) {
				int node = cJSON_IsString(r) ? find_node(ids, n, r->valuestring) : -1;
				if (node < 0) {
					bad = error("%s: input '%s' is not a layer", lwhat,
						    cJSON_IsString(r) ? r->valuestring : "?");
					break;
				}
				l.in[l.nin++] = node;
			}
		free(lwhat);
		if (bad)
			goto out;
		tgraph_add(g, &l);
		k++;
	}
	int on = find_node(ids, n, outid);
	if (on <= 0) {
		error("arch: output '%s' is not a layer", outid);
		goto out;
	}
	g->output = on - 1;
	rc = tgraph_infer(g);
out:
	free(ids);
	if (rc)
		tgraph_release(g);
	return rc;
}
