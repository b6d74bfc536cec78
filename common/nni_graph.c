/* nni_graph.c: NNI's graph JSON -> struct arch.
 *
 * The format (NNI networkmorphism_tuner/graph.py, Graph.json_out):
 *   "input_shape": [H, W, C]
 *   "node_list":   [[node id, shape], ...]   a tensor per node; node 0 the input
 *   "layer_list":  [[layer id, [Stub type, in, out, fields...]], ...]
 * where in is a node id (a list of them for StubAdd and StubConcatenate),
 * out the node the layer writes, and the fields are those of
 * layers.py's layer_description_extractor. The other members (adj_list,
 * operation_history, ...) repeat what these say and are not read.
 *
 * How each layer becomes an aah layer is what AIPerf's Keras model builds
 * (layers.py to_real_tf_layer): Conv2D with padding "same" and a bias,
 * MaxPool2D, BatchNormalization(momentum 0.9, epsilon 1e-4), Dense with a
 * bias. Where the file's own node shapes say a window op pads differently
 * (NNI writes a pool's output as floor(H / stride)), the padding that gives
 * the file's shape is taken, so that the counted graph is the file's. */
#include "nni_graph.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "jsonfile.h" /* jsonfile_read */
#include "util.h"

/* NNI's layer types: the aah type and how many fields follow [type, in, out]. */
static const struct nni_type {
	const char *name;
	enum arch_type type;
	int nfields;
} nni_types[] = {
	{ "StubConv2d", ARCH_CONV2D, 5 },               /* in_ch, filters, kernel, stride, padding */
	{ "StubBatchNormalization2d", ARCH_BATCHNORM, 1 }, /* num_features */
	{ "StubReLU", ARCH_RELU, 0 },
	{ "StubPooling2d", ARCH_MAXPOOL, 3 },           /* kernel, stride, padding */
	{ "StubGlobalPooling2d", ARCH_GLOBAL_AVG_POOL, 0 },
	{ "StubDense", ARCH_DENSE, 2 },                 /* input_units, units */
	{ "StubDropout1d", ARCH_DROPOUT, 1 },           /* rate */
	{ "StubDropout2d", ARCH_DROPOUT, 1 },
	{ "StubAdd", ARCH_ADD, 0 },
	{ "StubConcatenate", ARCH_CONCAT, 0 },
	{ "StubFlatten", ARCH_FLATTEN, 0 },
};

int nni_graph_is(const cJSON *doc)
{
	return cJSON_IsObject(doc) && cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "layer_list")) &&
	       cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "node_list"));
}

/* An integer JSON number in [min, max]. */
static int int_item(const cJSON *item, int min, int max, int *out)
{
	if (!cJSON_IsNumber(item))
		return -1;
	double v = item->valuedouble;
	if (!(v >= min && v <= max) || v != (double)(int)v)
		return -1;
	*out = (int)v;
	return 0;
}

/* A node's shape: [H, W, C] (rank 4 in aah's terms) or [C] (rank 2). */
static int read_shape(const cJSON *s, struct arch_shape *out)
{
	int n = cJSON_GetArraySize(s), v[3];
	if (!cJSON_IsArray(s) || (n != 3 && n != 1))
		return -1;
	for (int i = 0; i < n; i++)
		if (int_item(cJSON_GetArrayItem(s, i), 1, INT_MAX, &v[i]))
			return -1;
	*out = n == 3 ? (struct arch_shape){ 4, v[0], v[1], v[2] } : (struct arch_shape){ 2, 1, 1, v[0] };
	return 0;
}

static int same_shape(const struct arch_shape *x, const struct arch_shape *y)
{
	return x->rank == y->rank && x->h == y->h && x->w == y->w && x->c == y->c;
}

struct conv {
	const char *file;
	int nnodes;
	struct arch_shape *shape; /* (nnodes) node_list's shapes */
	int *writer;              /* (nnodes) index in layer_list of the layer writing it; -1 none */
	int *read;                /* (nnodes) how many layers read it */
};

static int read_nodes(struct conv *c, const cJSON *list)
{
	c->nnodes = cJSON_GetArraySize(list);
	c->shape = xcalloc((size_t)(c->nnodes ? c->nnodes : 1), sizeof(*c->shape));
	c->writer = xcalloc((size_t)(c->nnodes ? c->nnodes : 1), sizeof(int));
	c->read = xcalloc((size_t)(c->nnodes ? c->nnodes : 1), sizeof(int));
	char *seen = xcalloc((size_t)(c->nnodes ? c->nnodes : 1), 1);
	int i = 0, rc = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, list) {
		int id;
		if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 ||
		    int_item(cJSON_GetArrayItem(e, 0), 0, c->nnodes - 1, &id)) {
			rc = error("%s: node_list[%d] must be [node id below %d, shape]", c->file, i,
				   c->nnodes);
			break;
		}
		if (seen[id]++) {
			rc = error("%s: node_list[%d]: node %d is listed twice", c->file, i, id);
			break;
		}
		if (read_shape(cJSON_GetArrayItem(e, 1), &c->shape[id])) {
			rc = error("%s: node_list[%d]: the shape of node %d must be [H, W, C] or [C] of "
				   "positive integers", c->file, i, id);
			break;
		}
		c->writer[id] = -1;
		i++;
	}
	free(seen);
	return rc;
}

static const struct nni_type *find_type(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(nni_types); i++)
		if (!strcmp(nni_types[i].name, name))
			return &nni_types[i];
	return NULL;
}

/* The description [type, in, out, fields...] of layer_list[k]; its NNI id. */
static int layer_desc(const struct conv *c, const cJSON *entry, int k, const cJSON **desc,
		      int *nni_id)
{
	if (!cJSON_IsArray(entry) || cJSON_GetArraySize(entry) != 2 ||
	    int_item(cJSON_GetArrayItem(entry, 0), 0, INT_MAX, nni_id) ||
	    !cJSON_IsArray(cJSON_GetArrayItem(entry, 1)))
		return error("%s: layer_list[%d] must be [layer id, [type, input, output, ...]]",
			     c->file, k);
	*desc = cJSON_GetArrayItem(entry, 1);
	return 0;
}

/* Choose the padding of a window op (conv2d, maxpool) that turns the input
 * node's shape into the output node's, "same" first (what Keras builds). */
static int fit_padding(const struct conv *c, struct arch_op *op, int in, int out, const char *what)
{
	struct arch_shape got;
	for (int pad = ARCH_SAME; pad <= ARCH_VALID; pad++) {
		op->padding = (enum arch_padding)pad;
		if (arch_op_shape(op, &c->shape[in], 1, &got, NULL) == 0 && same_shape(&got, &c->shape[out]))
			return 0;
	}
	return error("%s: no padding (same or valid) turns node %d (%dx%dx%d) into node %d "
		     "(%dx%dx%d) with kernel %d and stride %d", what, in, c->shape[in].h,
		     c->shape[in].w, c->shape[in].c, out, c->shape[out].h, c->shape[out].w,
		     c->shape[out].c, op->kernel, op->stride);
}

/* The op of one layer from its fields; in is its (first) input node. */
static int read_op(const struct conv *c, const struct nni_type *t, const cJSON *desc, int in, int out,
		   struct arch_op *op, const char *what)
{
	int f[5] = { 0 };
	arch_op_init(op, t->type);
	if (cJSON_GetArraySize(desc) != 3 + t->nfields)
		return error("%s: a %s has %d fields after [type, input, output], not %d", what,
			     t->name, t->nfields, cJSON_GetArraySize(desc) - 3);
	for (int i = 0; i < t->nfields && t->type != ARCH_DROPOUT; i++)
		if (int_item(cJSON_GetArrayItem(desc, 3 + i), 0, INT_MAX, &f[i]))
			return error("%s: field %d of a %s must be a non-negative integer", what, 3 + i,
				     t->name);
	const struct arch_shape *s = &c->shape[in];
	switch (t->type) {
	case ARCH_CONV2D:
		if (f[0] != s->c)
			return error("%s: input_channel %d, but node %d has %d channels", what, f[0],
				     in, s->c);
		op->units = f[1];
		op->kernel = f[2];
		op->stride = f[3];
		return fit_padding(c, op, in, out, what);
	case ARCH_MAXPOOL:
		op->kernel = f[0];
		op->stride = f[1];
		return fit_padding(c, op, in, out, what);
	case ARCH_BATCHNORM:
		if (f[0] != s->c)
			return error("%s: num_features %d, but node %d has %d channels", what, f[0], in,
				     s->c);
		op->eps = 1e-4; /* AIPerf's Keras BatchNormalization */
		return 0;
	case ARCH_DENSE:
		if ((double)f[0] != (double)s->h * s->w * s->c)
			return error("%s: input_units %d, but node %d holds %.0f values", what, f[0], in,
				     (double)s->h * s->w * s->c);
		op->units = f[1];
		return 0;
	case ARCH_DROPOUT: {
		const cJSON *r = cJSON_GetArrayItem(desc, 3);
		if (!cJSON_IsNumber(r))
			return error("%s: field 3 (rate) of a %s must be a number", what, t->name);
		op->rate = r->valuedouble;
		return 0;
	}
	default:
		return 0;
	}
}

/* The input nodes of a layer: one id, or a list (StubAdd, StubConcatenate). */
static int read_inputs(struct conv *c, const cJSON *item, int *in, int *n_in, const char *what)
{
	const cJSON *one = item;
	*n_in = 0;
	if (cJSON_IsArray(item)) {
		cJSON_ArrayForEach(one, item) {
			if (*n_in == 8)
				return error("%s: more than 8 inputs", what);
			if (int_item(one, 0, c->nnodes - 1, &in[(*n_in)++]))
				return error("%s: input %d must be a node id below %d", what, *n_in - 1,
					     c->nnodes);
		}
		if (!*n_in)
			return error("%s: the input list is empty", what);
	} else if (int_item(one, 0, c->nnodes - 1, &in[(*n_in)++])) {
		return error("%s: the input must be a node id below %d", what, c->nnodes);
	}
	return 0;
}

/* First pass: which layer writes each node. */
static int find_writers(struct conv *c, const cJSON *layers)
{
	int k = 0;
	const cJSON *entry;
	cJSON_ArrayForEach(entry, layers) {
		const cJSON *desc;
		int id, out;
		if (layer_desc(c, entry, k, &desc, &id))
			return -1;
		if (int_item(cJSON_GetArrayItem(desc, 2), 1, c->nnodes - 1, &out))
			return error("%s: layer %d: the output must be a node id from 1 to %d", c->file,
				     id, c->nnodes - 1);
		if (c->writer[out] >= 0)
			return error("%s: layer %d: node %d is already the output of layer_list[%d]",
				     c->file, id, out, c->writer[out]);
		c->writer[out] = k++;
	}
	return 0;
}

static int add_layers(struct conv *c, struct arch *a, const cJSON *layers)
{
	int k = 0;
	const cJSON *entry;
	cJSON_ArrayForEach(entry, layers) {
		const cJSON *desc;
		int id, in[8], n_in, out = 0;
		layer_desc(c, entry, k, &desc, &id);
		int_item(cJSON_GetArrayItem(desc, 2), 1, c->nnodes - 1, &out);
		char *what = xstrfmt("%s: layer %d", c->file, id);
		const cJSON *tn = cJSON_GetArrayItem(desc, 0);
		const struct nni_type *t = cJSON_IsString(tn) ? find_type(tn->valuestring) : NULL;
		struct arch_op op;
		int rc = -1;
		if (!t)
			error("%s: type %s%s%s is not one aah reads (2-D Stub layers: conv, pooling, "
			      "batch norm, dense, dropout, add, concatenate, flatten)", what,
			      cJSON_IsString(tn) ? "\"" : "", cJSON_IsString(tn) ? tn->valuestring : "(not a string)",
			      cJSON_IsString(tn) ? "\"" : "");
		else if (read_inputs(c, cJSON_GetArrayItem(desc, 1), in, &n_in, what) == 0 &&
			 read_op(c, t, desc, in[0], out, &op, what) == 0)
			rc = 0;
		for (int j = 0; rc == 0 && j < n_in; j++) {
			c->read[in[j]]++;
			if (in[j] != 0 && c->writer[in[j]] < 0)
				rc = error("%s: input node %d is written by no layer", what, in[j]);
			else
				in[j] = in[j] ? c->writer[in[j]] + 1 : 0;
		}
		if (rc == 0) {
			char *lid = xstrfmt("%s_%d", arch_type_name(t->type), id);
			arch_add(a, lid, &op, n_in, in);
			free(lid);
		}
		free(what);
		if (rc)
			return -1;
		k++;
	}
	return 0;
}

/* The output: the one node no layer reads, written by a dense layer. */
static int find_output(struct conv *c, struct arch *a)
{
	int out = -1;
	for (int n = 1; n < c->nnodes; n++) {
		if (c->read[n] || c->writer[n] < 0)
			continue;
		if (out >= 0)
			return error("%s: nodes %d and %d are both read by no layer; a graph has one output",
				     c->file, out, n);
		out = n;
	}
	if (out < 0)
		return error("%s: every node is read by a layer: the graph has no output", c->file);
	const struct arch_layer *l = &a->layers[c->writer[out]];
	if (l->op.type != ARCH_DENSE)
		return error("%s: the output node %d is written by '%s', not by a dense layer (the logits)",
			     c->file, out, l->id);
	a->output = c->writer[out];
	a->num_classes = l->op.units;
	return 0;
}

/* After arch_check: every output shape is the file's. */
static int check_shapes(const struct conv *c, const struct arch *a)
{
	for (int n = 1; n < c->nnodes; n++) {
		int k = c->writer[n];
		if (k < 0)
			continue;
		const struct arch_shape *got = &a->layers[k].out, *want = &c->shape[n];
		if (!same_shape(got, want))
			return error("%s: layer '%s' gives %dx%dx%d, but node %d is %dx%dx%d in node_list",
				     c->file, a->layers[k].id, got->h, got->w, got->c, n, want->h,
				     want->w, want->c);
	}
	return 0;
}

int nni_graph_read(struct arch *a, const cJSON *doc, const char *file)
{
	struct conv c = { .file = file };
	struct arch_shape input;
	*a = (struct arch)ARCH_INIT;
	if (!nni_graph_is(doc))
		return error("%s: not an NNI graph: it needs \"layer_list\" and \"node_list\" arrays", file);
	if (read_shape(cJSON_GetObjectItemCaseSensitive(doc, "input_shape"), &input) || input.rank != 4)
		return error("%s: \"input_shape\" must be [H, W, C] of positive integers", file);
	arch_init(a, input.h, input.w, input.c, 0);
	const cJSON *layers = cJSON_GetObjectItemCaseSensitive(doc, "layer_list");
	int rc = read_nodes(&c, cJSON_GetObjectItemCaseSensitive(doc, "node_list"));
	if (rc == 0 && c.nnodes < 2)
		rc = error("%s: node_list needs the input node and at least one more", file);
	if (rc == 0 && !same_shape(&c.shape[0], &input))
		rc = error("%s: node 0 (the input) is %dx%dx%d, but input_shape is %dx%dx%d", file,
			   c.shape[0].h, c.shape[0].w, c.shape[0].c, input.h, input.w, input.c);
	if (rc == 0)
		rc = find_writers(&c, layers);
	if (rc == 0)
		rc = add_layers(&c, a, layers);
	if (rc == 0)
		rc = find_output(&c, a);
	if (rc == 0)
		rc = arch_check(a, file);
	if (rc == 0)
		rc = check_shapes(&c, a);
	free(c.shape);
	free(c.writer);
	free(c.read);
	if (rc)
		arch_release(a);
	return rc ? -1 : 0;
}

int nni_graph_load(struct arch *a, const char *path)
{
	cJSON *doc;
	*a = (struct arch)ARCH_INIT;
	if (jsonfile_read(path, &doc))
		return -1;
	int rc = nni_graph_is(doc) ? nni_graph_read(a, doc, path) : arch_parse(a, doc, path);
	cJSON_Delete(doc);
	return rc;
}
