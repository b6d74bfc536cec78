/* model.c: arch.json -> checked layer graph -> parameters and passes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonfile.h" /* jsonfile_read, json_get_* */
#include "trialimg/model.h"
#include "util.h"

/* Keys each type accepts besides id, type, inputs (arch.schema.json). */
static const char *const type_keys[OPS_NTYPES][6] = {
	[OPS_CONV2D] = {"filters", "kernel", "stride", "padding", "bias"},
	[OPS_BATCHNORM] = {"epsilon", "momentum"},
	[OPS_MAXPOOL] = {"kernel", "stride", "padding"},
	[OPS_AVGPOOL] = {"kernel", "stride", "padding"},
	[OPS_DENSE] = {"units", "bias"},
	[OPS_DROPOUT] = {"rate"},
};

struct raw_layer {
	const cJSON *j;
	const char *id;
	int type;
	int n_in;
	int *src;       /* raw index of each input, -1 = network input */
	int same;       /* padding "same" */
	int sorted;     /* position after sorting */
};

static int check_keys(const struct raw_layer *r)
{
	const cJSON *k;
	cJSON_ArrayForEach(k, r->j) {
		const char *key = k->string;
		if (!strcmp(key, "id") || !strcmp(key, "type") || !strcmp(key, "inputs"))
			continue;
		int ok = 0;
		for (int i = 0; i < 6 && type_keys[r->type][i]; i++)
			ok |= !strcmp(type_keys[r->type][i], key);
		if (!ok)
			return error("layer '%s': field \"%s\" is not allowed for type %s", r->id, key,
				     ops_type_name(r->type));
	}
	return 0;
}

/* Reads the per-type fields of raw layer r into cfg (defaults as the schema). */
static int read_fields(struct raw_layer *r, struct ops_layer_cfg *cfg)
{
	char what[96];
	long v;
	double d;
	const char *pad = NULL;
	int b = 1;
	snprintf(what, sizeof(what), "layer '%s'", r->id);
	memset(cfg, 0, sizeof(*cfg));
	cfg->type = r->type;
	switch (r->type) {
	case OPS_CONV2D:
		if (json_get_int(what, r->j, "filters", 0, 1, 65536, &v))
			return -1;
		cfg->units = (int)v;
		/* fall through */
	case OPS_MAXPOOL:
	case OPS_AVGPOOL:
		if (json_get_int(what, r->j, "kernel", 0, 1, 31, &v))
			return -1;
		cfg->kernel = (int)v;
		v = r->type == OPS_CONV2D ? 1 : cfg->kernel;
		if (json_get_int(what, r->j, "stride", 1, 1, 31, &v))
			return -1;
		cfg->stride = (int)v;
		if (json_get_string(what, r->j, "padding", 1, &pad))
			return -1;
		if (!pad)
			pad = r->type == OPS_CONV2D ? "same" : "valid";
		if (strcmp(pad, "same") && strcmp(pad, "valid"))
			return error("%s: padding must be \"same\" or \"valid\", not \"%s\"", what, pad);
		r->same = !strcmp(pad, "same");
		if (r->type == OPS_CONV2D) {
			if (json_get_bool(what, r->j, "bias", 1, &b))
				return -1;
			cfg->bias = b;
		}
		break;
	case OPS_BATCHNORM:
		d = 1e-5;
		if (json_get_number(what, r->j, "epsilon", 1, &d))
			return -1;
		if (!(d > 0))
			return error("%s: epsilon must be positive", what);
		cfg->eps = (float)d;
		d = 0.9;
		if (json_get_number(what, r->j, "momentum", 1, &d))
			return -1;
		if (d < 0 || d > 1)
			return error("%s: momentum must be in [0, 1]", what);
		cfg->momentum = (float)d;
		break;
	case OPS_DENSE:
		if (json_get_int(what, r->j, "units", 0, 1, 65536, &v) ||
		    json_get_bool(what, r->j, "bias", 1, &b))
			return -1;
		cfg->units = (int)v;
		cfg->bias = b;
		break;
	case OPS_DROPOUT:
		if (json_get_number(what, r->j, "rate", 0, &d))
			return -1;
		if (d < 0 || d >= 1)
			return error("%s: rate must be in [0, 1)", what);
		cfg->rate = (float)d;
		break;
	default:
		break;
	}
	int single = r->type != OPS_ADD && r->type != OPS_CONCAT;
	if (single && r->n_in != 1)
		return error("%s: a %s layer takes exactly one input, not %d", what,
			     ops_type_name(r->type), r->n_in);
	if (!single && r->n_in < 2)
		return error("%s: a %s layer needs at least two inputs", what, ops_type_name(r->type));
	return 0;
}

/* Output extent and TensorFlow-style padding of a window op along one axis. */
static int window(const struct raw_layer *r, const struct ops_layer_cfg *c, int in, int *out,
		  int *lo, int *hi)
{
	if (r->same) {
		*out = (in + c->stride - 1) / c->stride;
		int total = (*out - 1) * c->stride + c->kernel - in;
		if (total < 0)
			total = 0;
		*lo = total / 2;
		*hi = total - *lo;
	} else {
		if (in < c->kernel)
			return error("layer '%s': kernel %d is larger than its input (%d) with valid "
				     "padding", r->id, c->kernel, in);
		*out = (in - c->kernel) / c->stride + 1;
		*lo = 0;
		*hi = (*out - 1) * c->stride + c->kernel - in; /* the unused tail, <= 0 */
		if (*hi < 0)
			*hi = 0;
	}
	return 0;
}

/* Shapes, padding and AIPerf FLOPs of sorted layer i. */
static int infer_layer(struct model *m, int i, const struct raw_layer *r)
{
	struct model_layer *L = &m->layers[i];
	struct ops_layer_cfg *c = &L->op.cfg;
	const struct ops_shape *s = &L->in_shapes[0];
	int in_rank2 = L->inputs[0] ? m->layers[L->inputs[0] - 1].rank2 : 0;
	struct ops_shape o = *s;
	double in_size = (double)ops_shape_size(s);
	L->rank2 = in_rank2;
	switch (c->type) {
	case OPS_CONV2D:
	case OPS_MAXPOOL:
	case OPS_AVGPOOL:
		if (in_rank2)
			return error("layer '%s': %s needs an (N, H, W, C) input, got a rank-2 one",
				     L->id, ops_type_name(c->type));
		if (window(r, c, s->h, &o.h, &c->pad_t, &c->pad_b) ||
		    window(r, c, s->w, &o.w, &c->pad_l, &c->pad_r))
			return -1;
		if (c->type == OPS_CONV2D) {
			double k2 = (double)c->kernel * c->kernel * s->c * c->units;
			o.c = c->units;
			L->flops_fwd = 2.0 * k2 * o.h * o.w;
			/* AIPerf: the conv on the network input has no data gradient */
			L->flops_bwd = k2 * ((L->inputs[0] ? 4.0 : 2.0) * o.h * o.w + 2);
			L->n_weights = (size_t)c->kernel * c->kernel * s->c * c->units;
			L->n_biases = c->bias ? (size_t)c->units : 0;
		} else {
			L->flops_fwd = in_size * c->kernel * c->kernel / c->stride / c->stride;
		}
		break;
	case OPS_BATCHNORM:
		L->flops_fwd = 7.0 * in_size; /* macc*2 + add + div*4 */
		L->flops_bwd = 36.0;          /* AIPerf: (29 + 7) per image */
		L->n_biases = 2 * (size_t)s->c;
		break;
	case OPS_RELU:
		L->flops_fwd = in_size;
		break;
	case OPS_GLOBAL_AVG_POOL:
		if (in_rank2)
			return error("layer '%s': global_avg_pool needs an (N, H, W, C) input", L->id);
		o = (struct ops_shape){1, 1, s->c};
		L->rank2 = 1;
		L->flops_fwd = ((double)s->h * s->w - 1) * s->c + s->c;
		break;
	case OPS_FLATTEN:
		o = (struct ops_shape){1, 1, (int)ops_shape_size(s)};
		L->rank2 = 1;
		break;
	case OPS_DENSE:
		if (!in_rank2)
			return error("layer '%s': dense needs a rank-2 input (insert flatten or "
				     "global_avg_pool before it)", L->id);
		o = (struct ops_shape){1, 1, c->units};
		L->flops_fwd = 2.0 * in_size * c->units +
			       (8.0 * c->units + (c->units - 1) + 4.0 * c->units); /* + softmax */
		L->flops_bwd = 4.0 * in_size * c->units + 2.0 * (in_size + 1) * c->units;
		L->n_weights = (size_t)in_size * c->units;
		L->n_biases = c->bias ? (size_t)c->units : 0;
		break;
	case OPS_DROPOUT:
		break;
	case OPS_ADD:
	case OPS_CONCAT:
		for (int k = 1; k < L->op.n_in; k++) {
			const struct ops_shape *t = &L->in_shapes[k];
			int rk = L->inputs[k] ? m->layers[L->inputs[k] - 1].rank2 : 0;
			int same_hw = t->h == s->h && t->w == s->w && rk == in_rank2;
			if (c->type == OPS_ADD && (!same_hw || t->c != s->c))
				return error("layer '%s': add needs identical shapes, got %dx%dx%d and "
					     "%dx%dx%d", L->id, s->h, s->w, s->c, t->h, t->w, t->c);
			if (c->type == OPS_CONCAT && !same_hw)
				return error("layer '%s': concat needs the same height and width, got "
					     "%dx%d and %dx%d", L->id, s->h, s->w, t->h, t->w);
			if (c->type == OPS_CONCAT)
				o.c += t->c;
		}
		if (c->type == OPS_ADD)
			L->flops_fwd = in_size;
		break;
	default:
		BUG("unhandled type %d", c->type);
	}
	L->op.out = o;
	return 0;
}

static int find_raw(const struct raw_layer *raw, int n, const char *id)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(raw[i].id, id))
			return i;
	return -2;
}

static int parse_layers(struct model *m, const cJSON *arr, struct raw_layer *raw, int n)
{
	for (int i = 0; i < n; i++) {
		struct raw_layer *r = &raw[i];
		const char *type;
		char what[64];
		r->j = cJSON_GetArrayItem(arr, i);
		snprintf(what, sizeof(what), "layer #%d", i + 1);
		if (!cJSON_IsObject(r->j))
			return error("%s: not an object", what);
		if (json_get_string(what, r->j, "id", 0, &r->id))
			return -1;
		if (!*r->id || !strcmp(r->id, "input"))
			return error("%s: id \"%s\" is reserved or empty", what, r->id);
		if (find_raw(raw, i, r->id) >= 0)
			return error("layer '%s': duplicate id", r->id);
		snprintf(what, sizeof(what), "layer '%s'", r->id);
		if (json_get_string(what, r->j, "type", 0, &type))
			return -1;
		r->type = ops_type_parse(type);
		if (r->type < 0)
			return error("layer '%s': unknown type \"%s\"", r->id, type);
		const cJSON *ins = cJSON_GetObjectItemCaseSensitive(r->j, "inputs");
		if (!cJSON_IsArray(ins) || cJSON_GetArraySize(ins) < 1)
			return error("layer '%s': missing or empty \"inputs\"", r->id);
		r->n_in = cJSON_GetArraySize(ins);
		if (check_keys(r))
			return -1;
	}
	for (int i = 0; i < n; i++) {
		struct raw_layer *r = &raw[i];
		const cJSON *ins = cJSON_GetObjectItemCaseSensitive(r->j, "inputs"), *e;
		r->src = xcalloc(r->n_in, sizeof(int));
		int k = 0;
		cJSON_ArrayForEach(e, ins) {
			if (!cJSON_IsString(e))
				return error("layer '%s': inputs must be layer ids", r->id);
			r->src[k] = strcmp(e->valuestring, "input") ? find_raw(raw, n, e->valuestring) : -1;
			if (r->src[k] == -2)
				return error("layer '%s': input '%s' is not a layer of this graph", r->id,
					     e->valuestring);
			if (r->src[k] == i)
				return error("layer '%s': reads its own output (a cycle)", r->id);
			k++;
		}
	}
	(void)m;
	return 0;
}

/* Kahn's algorithm, stable in file order; fills raw[].sorted and order[]. */
static int toposort(struct raw_layer *raw, int n, int *order)
{
	int *pending = xcalloc(n, sizeof(int)), done = 0;
	for (int i = 0; i < n; i++)
		for (int k = 0; k < raw[i].n_in; k++)
			pending[i] += raw[i].src[k] >= 0;
	for (int i = 0; i < n; i++)
		raw[i].sorted = -1;
	while (done < n) {
		int pick = -1;
		for (int i = 0; i < n && pick < 0; i++)
			if (raw[i].sorted < 0 && pending[i] == 0)
				pick = i;
		if (pick < 0)
			break;
		raw[pick].sorted = done;
		order[done++] = pick;
		for (int i = 0; i < n; i++)
			for (int k = 0; k < raw[i].n_in; k++)
				pending[i] -= raw[i].src[k] == pick;
	}
	free(pending);
	for (int i = 0; i < n; i++)
		if (raw[i].sorted < 0)
			return error("layer '%s': part of a cycle in the graph", raw[i].id);
	return 0;
}

int model_find(const struct model *m, const char *id)
{
	for (int i = 0; i < m->n_layers; i++)
		if (!strcmp(m->layers[i].id, id))
			return i;
	return -1;
}

/* Every layer must lead to the output: its gradient is defined. */
static int check_live(struct model *m)
{
	char *live = xcalloc(m->n_layers, 1);
	live[m->output] = 1;
	for (int i = m->n_layers - 1; i >= 0; i--)
		if (live[i])
			for (int k = 0; k < m->layers[i].op.n_in; k++)
				if (m->layers[i].inputs[k])
					live[m->layers[i].inputs[k] - 1] = 1;
	int rc = 0;
	for (int i = 0; i < m->n_layers && !rc; i++)
		if (!live[i])
			rc = error("layer '%s': its output never reaches the output layer '%s'",
				   m->layers[i].id, m->layers[m->output].id);
	free(live);
	return rc;
}

int model_parse(struct model *m, const cJSON *doc, const char *what)
{
	const cJSON *in, *arr;
	long h, w, c, classes;
	const char *out_id;
	memset(m, 0, sizeof(*m));
	if (jsonfile_check_format(what, doc, "aah-arch", 1))
		return -1;
	in = cJSON_GetObjectItemCaseSensitive(doc, "input");
	if (!cJSON_IsObject(in))
		return error("%s: missing object \"input\"", what);
	if (json_get_int(what, in, "height", 0, 1, 4096, &h) ||
	    json_get_int(what, in, "width", 0, 1, 4096, &w) ||
	    json_get_int(what, in, "channels", 0, 1, 4096, &c) ||
	    json_get_int(what, doc, "num_classes", 0, 2, 100000, &classes) ||
	    json_get_string(what, doc, "output", 0, &out_id))
		return -1;
	arr = cJSON_GetObjectItemCaseSensitive(doc, "layers");
	if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < 1)
		return error("%s: \"layers\" must be a non-empty array", what);
	m->input = (struct ops_shape){(int)h, (int)w, (int)c};
	m->num_classes = (int)classes;

	int n = cJSON_GetArraySize(arr), rc = -1;
	struct raw_layer *raw = xcalloc(n, sizeof(*raw));
	int *order = xcalloc(n, sizeof(int));
	if (parse_layers(m, arr, raw, n) || toposort(raw, n, order))
		goto out;
	m->n_layers = n;
	m->layers = xcalloc(n, sizeof(*m->layers));
	for (int s = 0; s < n; s++) {
		struct raw_layer *r = &raw[order[s]];
		struct model_layer *L = &m->layers[s];
		L->id = xstrdup(r->id);
		L->op.index = s;
		L->op.n_in = r->n_in;
		L->inputs = xcalloc(r->n_in, sizeof(int));
		L->in_shapes = xcalloc(r->n_in, sizeof(struct ops_shape));
		L->op.in = L->in_shapes;
		for (int k = 0; k < r->n_in; k++) {
			L->inputs[k] = r->src[k] < 0 ? 0 : raw[r->src[k]].sorted + 1;
			L->in_shapes[k] = L->inputs[k] ? m->layers[L->inputs[k] - 1].op.out : m->input;
			if (L->inputs[k])
				m->layers[L->inputs[k] - 1].n_users++;
		}
		if (read_fields(r, &L->op.cfg) || infer_layer(m, s, r))
			goto out;
		m->flops_fwd += L->flops_fwd;
		m->flops_bwd += L->flops_bwd;
	}
	m->output = model_find(m, out_id);
	if (m->output < 0) {
		error("%s: output '%s' is not a layer", what, out_id);
		goto out;
	}
	const struct model_layer *O = &m->layers[m->output];
	if (O->op.cfg.type != OPS_DENSE || O->op.cfg.units != m->num_classes) {
		error("layer '%s': the output must be a dense layer with %d units (num_classes)",
		      O->id, m->num_classes);
		goto out;
	}
	rc = check_live(m);
	/* batchnorm -> relu and add -> relu with no other reader: one fused op */
	for (int i = 0; !rc && i < n; i++) {
		struct model_layer *R = &m->layers[i];
		int b = R->inputs[0] - 1;
		if (R->op.cfg.type != OPS_RELU || b < 0 || i == m->output)
			continue;
		struct model_layer *B = &m->layers[b];
		if ((B->op.cfg.type == OPS_BATCHNORM || B->op.cfg.type == OPS_ADD) && B->n_users == 1 &&
		    b != m->output) {
			B->op.cfg.fuse_relu = 1;
			R->fused = 1;
		}
	}
out:
	for (int i = 0; i < n; i++)
		free(raw[i].src);
	free(raw);
	free(order);
	if (rc)
		model_release(m, NULL);
	return rc;
}

int model_load(struct model *m, const char *path)
{
	cJSON *doc;
	if (jsonfile_read(path, &doc))
		return -1;
	int rc = model_parse(m, doc, path);
	cJSON_Delete(doc);
	return rc;
}
