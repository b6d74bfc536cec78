/* arch.c: aah-arch/1 documents <-> struct arch, and the rules of every
 * layer type (fields, shapes, parameters, FLOPs). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "jsonfile.h" /* jsonfile_read, json_get_* */
#include "util.h"

#define FORMAT "aah-arch/1"
#define MAX_LAYERS 10000
#define MAX_UNITS 65536 /* conv2d filters, dense units */
#define MAX_WINDOW 31   /* kernel and stride */
#define MAX_SIDE 4096   /* input height, width, channels */
#define MAX_CLASSES 100000
#define MAX_ID 64
#define BN_EPS 1e-5
#define BN_MOMENTUM 0.9

/* Every type's name and the fields it has besides id, type and inputs. */
static const struct {
	const char *name;
	const char *fields[6];
} types[ARCH_NTYPES] = {
	[ARCH_CONV2D] = { "conv2d", { "filters", "kernel", "stride", "padding", "bias" } },
	[ARCH_BATCHNORM] = { "batchnorm", { "epsilon", "momentum" } },
	[ARCH_RELU] = { "relu", { NULL } },
	[ARCH_MAXPOOL] = { "maxpool", { "kernel", "stride", "padding" } },
	[ARCH_AVGPOOL] = { "avgpool", { "kernel", "stride", "padding" } },
	[ARCH_GLOBAL_AVG_POOL] = { "global_avg_pool", { NULL } },
	[ARCH_DENSE] = { "dense", { "units", "bias" } },
	[ARCH_DROPOUT] = { "dropout", { "rate" } },
	[ARCH_ADD] = { "add", { NULL } },
	[ARCH_CONCAT] = { "concat", { NULL } },
	[ARCH_FLATTEN] = { "flatten", { NULL } },
};

static const char *const paddings[] = { [ARCH_SAME] = "same", [ARCH_VALID] = "valid" };

static const char *const doc_fields[] = { "format", "input", "num_classes", "layers", "output",
					  "meta", NULL };
static const char *const input_fields[] = { "height", "width", "channels", NULL };
static const char *const layer_fields[] = { "id", "type", "inputs", NULL };

const char *arch_type_name(int type)
{
	return type >= 0 && type < ARCH_NTYPES ? types[type].name : "?";
}

int arch_type_parse(const char *name)
{
	for (int t = 0; t < ARCH_NTYPES; t++)
		if (!strcmp(types[t].name, name))
			return t;
	return -1;
}

void arch_op_init(struct arch_op *op, enum arch_type type)
{
	memset(op, 0, sizeof(*op));
	op->type = type;
	switch (type) {
	case ARCH_CONV2D:
		op->stride = 1;
		op->padding = ARCH_SAME;
		op->bias = 1;
		break;
	case ARCH_MAXPOOL:
	case ARCH_AVGPOOL:
		op->padding = ARCH_VALID;
		break;
	case ARCH_DENSE:
		op->bias = 1;
		break;
	case ARCH_BATCHNORM:
		op->eps = BN_EPS;
		op->momentum = BN_MOMENTUM;
		break;
	default:
		break;
	}
}

/* ---- the rules of one op ------------------------------------------------- */

/* Report only when there is a `what` to name: the tuner's validity checks
 * run quietly on every candidate graph. */
#define FAIL(...) (what ? error(__VA_ARGS__) : -1)

static int windowed(enum arch_type t)
{
	return t == ARCH_CONV2D || t == ARCH_MAXPOOL || t == ARCH_AVGPOOL;
}

/* The schema's ranges of the fields op's type has. */
static int check_fields(const struct arch_op *op, const char *what)
{
	if ((op->type == ARCH_CONV2D || op->type == ARCH_DENSE) &&
	    (op->units < 1 || op->units > MAX_UNITS))
		return FAIL("%s: field \"%s\" must be an integer in [1, %d]", what,
			    op->type == ARCH_DENSE ? "units" : "filters", MAX_UNITS);
	if (windowed(op->type) && (op->kernel < 1 || op->kernel > MAX_WINDOW))
		return FAIL("%s: field \"kernel\" must be an integer in [1, %d]", what, MAX_WINDOW);
	if (windowed(op->type) && (op->stride < 1 || op->stride > MAX_WINDOW))
		return FAIL("%s: field \"stride\" must be an integer in [1, %d]", what, MAX_WINDOW);
	if (op->type == ARCH_BATCHNORM && !(op->eps > 0))
		return FAIL("%s: field \"epsilon\" must be positive", what);
	if (op->type == ARCH_BATCHNORM && !(op->momentum >= 0 && op->momentum <= 1))
		return FAIL("%s: field \"momentum\" must be in [0, 1]", what);
	if (op->type == ARCH_DROPOUT && !(op->rate >= 0 && op->rate < 1))
		return FAIL("%s: field \"rate\" must be in [0, 1)", what);
	return 0;
}

/* Output extent of a window op along one axis (0: nothing fits), and the
 * padding before (lo) and after (hi) it: "same" as TensorFlow, the extra
 * row or column at the end. */
static int window(const struct arch_op *op, int in, int *lo, int *hi)
{
	*lo = *hi = 0;
	if (op->padding == ARCH_VALID)
		return in < op->kernel ? 0 : (in - op->kernel) / op->stride + 1;
	int out = (in + op->stride - 1) / op->stride;
	int total = (out - 1) * op->stride + op->kernel - in;
	if (total > 0) {
		*lo = total / 2;
		*hi = total - *lo;
	}
	return out;
}

int arch_op_shape(const struct arch_op *op, const struct arch_shape *in, int n_in,
		  struct arch_shape *out, const char *what)
{
	const char *tn = arch_type_name(op->type);
	const struct arch_shape *s = &in[0];
	int lo, hi;
	if (op->type == ARCH_ADD || op->type == ARCH_CONCAT) {
		if (n_in < 2)
			return FAIL("%s: a %s layer needs at least two inputs", what, tn);
	} else if (n_in != 1) {
		return FAIL("%s: a %s layer takes exactly one input, not %d", what, tn, n_in);
	}
	if (check_fields(op, what))
		return -1;
	*out = *s;
	switch (op->type) {
	case ARCH_CONV2D:
	case ARCH_MAXPOOL:
	case ARCH_AVGPOOL:
		if (s->rank != 4)
			return FAIL("%s: %s needs an (N, H, W, C) input, got a rank-2 one", what, tn);
		out->h = window(op, s->h, &lo, &hi);
		out->w = window(op, s->w, &lo, &hi);
		if (out->h < 1 || out->w < 1)
			return FAIL("%s: kernel %d is larger than its input (%dx%d) with valid padding",
				    what, op->kernel, s->h, s->w);
		if (op->type == ARCH_CONV2D)
			out->c = op->units;
		break;
	case ARCH_GLOBAL_AVG_POOL:
		if (s->rank != 4)
			return FAIL("%s: global_avg_pool needs an (N, H, W, C) input", what);
		*out = (struct arch_shape){ 2, 1, 1, s->c };
		break;
	case ARCH_FLATTEN:
		*out = (struct arch_shape){ 2, 1, 1, s->h * s->w * s->c };
		break;
	case ARCH_DENSE:
		if (s->rank != 2)
			return FAIL("%s: dense needs a rank-2 input (insert flatten or global_avg_pool "
				    "before it)", what);
		out->c = op->units;
		break;
	case ARCH_ADD:
	case ARCH_CONCAT:
		for (int k = 1; k < n_in; k++) {
			const struct arch_shape *t = &in[k];
			int same_hw = t->rank == s->rank && t->h == s->h && t->w == s->w;
			if (op->type == ARCH_ADD && (!same_hw || t->c != s->c))
				return FAIL("%s: add needs identical shapes, got %dx%dx%d and %dx%dx%d",
					    what, s->h, s->w, s->c, t->h, t->w, t->c);
			if (op->type == ARCH_CONCAT && !same_hw)
				return FAIL("%s: concat needs the same height and width, got %dx%d and "
					    "%dx%d", what, s->h, s->w, t->h, t->w);
			if (op->type == ARCH_CONCAT)
				out->c += t->c;
		}
		break;
	case ARCH_BATCHNORM:
	case ARCH_RELU:
	case ARCH_DROPOUT:
		break;
	default:
		return FAIL("%s: unknown layer type %d", what, (int)op->type);
	}
	return 0;
}

int arch_op_is_logits(const struct arch_op *op, int num_classes)
{
	return op->type == ARCH_DENSE && op->units == num_classes;
}

void arch_op_params(const struct arch_op *op, const struct arch_shape *in, uint64_t *weights,
		    uint64_t *others)
{
	uint64_t bias = op->bias ? (uint64_t)op->units : 0;
	*weights = *others = 0;
	if (op->type == ARCH_CONV2D) {
		*weights = (uint64_t)op->kernel * op->kernel * in->c * op->units;
		*others = bias;
	} else if (op->type == ARCH_DENSE) {
		*weights = (uint64_t)in->h * in->w * in->c * op->units;
		*others = bias;
	} else if (op->type == ARCH_BATCHNORM) {
		*others = 2 * (uint64_t)in->c;
	}
}

double arch_op_mac_flops(const struct arch_op *op, const struct arch_shape *in,
			 const struct arch_shape *out)
{
	if (op->type == ARCH_CONV2D)
		return 2.0 * op->kernel * op->kernel * in->c * op->units * out->h * out->w;
	if (op->type == ARCH_DENSE)
		return 2.0 * in->h * in->w * in->c * op->units;
	return 0;
}

void arch_op_flops(const struct arch_op *op, const struct arch_shape *in,
		   const struct arch_shape *out, int first_conv, double *fwd, double *bwd)
{
	double in_size = (double)in->h * in->w * in->c, u = op->units;
	double k2 = (double)op->kernel * op->kernel * in->c * op->units;
	*fwd = *bwd = 0;
	switch (op->type) {
	case ARCH_CONV2D:
		*fwd = arch_op_mac_flops(op, in, out);
		*bwd = k2 * ((first_conv ? 2.0 : 4.0) * out->h * out->w + 2);
		break;
	case ARCH_MAXPOOL:
	case ARCH_AVGPOOL:
		*fwd = in_size * op->kernel * op->kernel / op->stride / op->stride;
		break;
	case ARCH_BATCHNORM:
		*fwd = 7.0 * in_size; /* macc*2 + add + div*4 */
		*bwd = 36.0;          /* AIPerf: (29 + 7) per image */
		break;
	case ARCH_RELU:
	case ARCH_ADD:
		*fwd = in_size;
		break;
	case ARCH_GLOBAL_AVG_POOL:
		/* adds, then a divide per channel at 4 FLOPs (profiler.py coeff['div']) */
		*fwd = ((double)in->h * in->w - 1) * in->c + 4.0 * in->c;
		break;
	case ARCH_DENSE: /* with the softmax that follows the logits */
		*fwd = arch_op_mac_flops(op, in, out) + (8.0 * u + (u - 1) + 4.0 * u);
		*bwd = 4.0 * in_size * u + 2.0 * (in_size + 1) * u;
		break;
	default:
		break;
	}
}

/* ---- the network ------------------------------------------------------------ */

void arch_init(struct arch *a, int h, int w, int c, int num_classes)
{
	*a = (struct arch)ARCH_INIT;
	a->input = (struct arch_shape){ 4, h, w, c };
	a->num_classes = num_classes;
}

void arch_release(struct arch *a)
{
	for (int i = 0; i < a->n_layers; i++) {
		free(a->layers[i].id);
		free(a->layers[i].in);
	}
	free(a->layers);
	free(a->order);
	*a = (struct arch)ARCH_INIT;
}

int arch_add(struct arch *a, const char *id, const struct arch_op *op, int n_in, const int *in)
{
	if (a->n_layers == a->alloc) {
		a->alloc = a->alloc ? 2 * a->alloc : 32;
		a->layers = xrealloc(a->layers, (size_t)a->alloc * sizeof(*a->layers));
	}
	struct arch_layer *l = &a->layers[a->n_layers];
	memset(l, 0, sizeof(*l));
	l->id = xstrdup(id);
	l->op = *op;
	l->n_in = n_in;
	l->in = xmalloc((size_t)(n_in > 0 ? n_in : 1) * sizeof(int));
	memcpy(l->in, in, (size_t)n_in * sizeof(int));
	return ++a->n_layers;
}

int arch_find(const struct arch *a, const char *id)
{
	for (int i = 0; i < a->n_layers; i++)
		if (!strcmp(a->layers[i].id, id))
			return i;
	return -1;
}

/* ---- reading ----------------------------------------------------------------- */

/* The schema's "id" and "ref" pattern: ^[A-Za-z_][A-Za-z0-9_.-]{0,63}$ */
static int valid_id(const char *s)
{
	static const char first[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_";
	static const char rest[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_0123456789.-";
	size_t n = strlen(s);
	return n >= 1 && n <= MAX_ID && strchr(first, s[0]) && strspn(s, rest) == n;
}

static int listed(const char *const *names, const char *key)
{
	for (; names && *names; names++)
		if (!strcmp(*names, key))
			return 1;
	return 0;
}

/* additionalProperties: false. Null counts as present (the schema has no
 * nullable field). type_name names the layer type in the error, or NULL. */
static int check_members(const cJSON *obj, const char *const *fields, const char *const *more,
			 const char *what, const char *type_name)
{
	const cJSON *m;
	cJSON_ArrayForEach(m, obj) {
		if (!listed(fields, m->string) && !listed(more, m->string)) {
			if (type_name)
				return error("%s: field \"%s\" is not allowed for type %s", what,
					     m->string, type_name);
			return error("%s: field \"%s\" is not allowed", what, m->string);
		}
		if (cJSON_IsNull(m))
			return error("%s: field \"%s\" is null", what, m->string);
	}
	return 0;
}

static int get_int(const char *what, const cJSON *o, const char *key, int optional, int *out)
{
	long v = *out;
	if (json_get_int(what, o, key, optional, INT_MIN, INT_MAX, &v))
		return -1;
	*out = (int)v;
	return 0;
}

/* The fields of op's type, over the defaults of arch_op_init. */
static int read_fields(struct arch_op *op, const cJSON *o, const char *what)
{
	const char *pad = NULL;
	switch (op->type) {
	case ARCH_CONV2D:
		if (get_int(what, o, "filters", 0, &op->units))
			return -1;
		/* fall through */
	case ARCH_MAXPOOL:
	case ARCH_AVGPOOL:
		if (get_int(what, o, "kernel", 0, &op->kernel))
			return -1;
		if (op->type != ARCH_CONV2D)
			op->stride = op->kernel;
		if (get_int(what, o, "stride", 1, &op->stride) ||
		    json_get_string(what, o, "padding", 1, &pad) ||
		    (op->type == ARCH_CONV2D && json_get_bool(what, o, "bias", 1, &op->bias)))
			return -1;
		if (pad && !strcmp(pad, paddings[ARCH_SAME]))
			op->padding = ARCH_SAME;
		else if (pad && !strcmp(pad, paddings[ARCH_VALID]))
			op->padding = ARCH_VALID;
		else if (pad)
			return error("%s: padding must be \"same\" or \"valid\", not \"%s\"", what, pad);
		break;
	case ARCH_DENSE:
		if (get_int(what, o, "units", 0, &op->units) || json_get_bool(what, o, "bias", 1, &op->bias))
			return -1;
		break;
	case ARCH_BATCHNORM:
		if (json_get_number(what, o, "epsilon", 1, &op->eps) ||
		    json_get_number(what, o, "momentum", 1, &op->momentum))
			return -1;
		break;
	case ARCH_DROPOUT:
		if (json_get_number(what, o, "rate", 0, &op->rate))
			return -1;
		break;
	default:
		break;
	}
	return check_fields(op, what);
}

struct idref {
	const char *id;
	int layer;
};

static int cmp_idref(const void *a, const void *b)
{
	return strcmp(((const struct idref *)a)->id, ((const struct idref *)b)->id);
}

/* The node called ref: 0 for "input", k + 1 for layer k, -1 when absent. */
static int find_node(const struct idref *ids, int n, const char *ref)
{
	if (!strcmp(ref, "input"))
		return 0;
	struct idref key = { ref, 0 };
	const struct idref *r = bsearch(&key, ids, (size_t)n, sizeof(*ids), cmp_idref);
	return r ? r->layer + 1 : -1;
}

/* First pass: every layer is an object with a valid, unique id. Fills ids
 * (pointing into doc), sorted. */
static int read_ids(const cJSON *layers, struct idref *ids, int n, const char *file)
{
	const cJSON *o;
	int i = 0;
	cJSON_ArrayForEach(o, layers) {
		char *what = xstrfmt("%s: layer #%d", file, i + 1);
		int rc = 0;
		if (!cJSON_IsObject(o))
			rc = error("%s: not an object", what);
		else if (json_get_string(what, o, "id", 0, &ids[i].id))
			rc = -1;
		else if (!strcmp(ids[i].id, "input"))
			rc = error("%s: id \"input\" is reserved for the network input", what);
		else if (!valid_id(ids[i].id))
			rc = error("%s: id \"%s\" must be 1 to %d letters, digits, '_', '.' or '-', "
				   "not starting with a digit, '.' or '-'", what, ids[i].id, MAX_ID);
		free(what);
		if (rc)
			return -1;
		ids[i].layer = i;
		i++;
	}
	qsort(ids, (size_t)n, sizeof(*ids), cmp_idref);
	for (int k = 1; k < n; k++)
		if (!strcmp(ids[k].id, ids[k - 1].id)) {
			int later = ids[k].layer > ids[k - 1].layer ? ids[k].layer : ids[k - 1].layer;
			return error("%s: layer '%s': duplicate id (layer #%d)", file, ids[k].id,
				     later + 1);
		}
	return 0;
}

/* Second pass: layer i's type, inputs and fields; appended to a. */
static int read_layer(struct arch *a, const cJSON *o, int i, const struct idref *ids, int n,
		      const char *what)
{
	const char *id = cJSON_GetObjectItemCaseSensitive(o, "id")->valuestring, *type;
	const cJSON *ins = cJSON_GetObjectItemCaseSensitive(o, "inputs"), *e;
	struct arch_op op;
	if (json_get_string(what, o, "type", 0, &type))
		return -1;
	int t = arch_type_parse(type);
	if (t < 0)
		return error("%s: unknown type \"%s\"", what, type);
	if (!cJSON_IsArray(ins) || cJSON_GetArraySize(ins) < 1)
		return error("%s: missing or empty \"inputs\"", what);
	if (check_members(o, layer_fields, types[t].fields, what, types[t].name))
		return -1;
	arch_op_init(&op, (enum arch_type)t);
	if (read_fields(&op, o, what))
		return -1;
	int n_in = cJSON_GetArraySize(ins), k = 0;
	int *in = xmalloc((size_t)n_in * sizeof(int));
	cJSON_ArrayForEach(e, ins) {
		int node = cJSON_IsString(e) ? find_node(ids, n, e->valuestring) : -1, rc = 0;
		if (!cJSON_IsString(e))
			rc = error("%s: inputs must be layer ids", what);
		else if (node < 0)
			rc = error("%s: input '%s' is not a layer of this graph", what, e->valuestring);
		else if (node == i + 1)
			rc = error("%s: reads its own output (a cycle)", what);
		if (rc) {
			free(in);
			return -1;
		}
		in[k++] = node;
	}
	arch_add(a, id, &op, n_in, in);
	free(in);
	return 0;
}

static int read_doc(struct arch *a, const cJSON *doc, const char *file)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(doc, "format");
	const cJSON *in = cJSON_GetObjectItemCaseSensitive(doc, "input");
	const cJSON *layers = cJSON_GetObjectItemCaseSensitive(doc, "layers");
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(doc, "meta");
	const char *out_id;
	long h, w, c, classes;
	if (!cJSON_IsObject(doc))
		return error("%s: not a JSON object", file);
	if (!cJSON_IsString(f))
		return error("%s: missing \"format\" (expected \"%s\")", file, FORMAT);
	if (strcmp(f->valuestring, FORMAT))
		return error("%s: format is \"%s\", expected \"%s\"", file, f->valuestring, FORMAT);
	if (check_members(doc, doc_fields, NULL, file, NULL))
		return -1;
	if (!cJSON_IsObject(in))
		return error("%s: missing object \"input\"", file);
	char *what = xstrfmt("%s: input", file);
	int rc = check_members(in, input_fields, NULL, what, NULL) ||
		 json_get_int(what, in, "height", 0, 1, MAX_SIDE, &h) ||
		 json_get_int(what, in, "width", 0, 1, MAX_SIDE, &w) ||
		 json_get_int(what, in, "channels", 0, 1, MAX_SIDE, &c);
	free(what);
	if (rc || json_get_int(file, doc, "num_classes", 0, 2, MAX_CLASSES, &classes) ||
	    json_get_string(file, doc, "output", 0, &out_id))
		return -1;
	if (meta && !cJSON_IsObject(meta))
		return error("%s: field \"meta\" must be an object", file);
	int n = cJSON_IsArray(layers) ? cJSON_GetArraySize(layers) : 0;
	if (n < 1 || n > MAX_LAYERS)
		return error("%s: \"layers\" must be an array of 1 to %d layers", file, MAX_LAYERS);

	arch_init(a, (int)h, (int)w, (int)c, (int)classes);
	a->alloc = n;
	a->layers = xmalloc((size_t)n * sizeof(*a->layers));
	struct idref *ids = xmalloc((size_t)n * sizeof(*ids));
	rc = read_ids(layers, ids, n, file);
	const cJSON *o = layers->child;
	for (int i = 0; i < n && !rc; i++, o = o->next) {
		what = xstrfmt("%s: layer '%s'", file, cJSON_GetObjectItemCaseSensitive(o, "id")->valuestring);
		rc = read_layer(a, o, i, ids, n, what);
		free(what);
	}
	int out = rc ? 0 : find_node(ids, n, out_id);
	free(ids);
	if (!rc && out < 1)
		rc = error("%s: output '%s' is not a layer", file, out_id);
	a->output = out - 1;
	return rc;
}

int arch_read(struct arch *a, const cJSON *doc, const char *file)
{
	*a = (struct arch)ARCH_INIT;
	if (read_doc(a, doc, file) == 0)
		return 0;
	arch_release(a);
	return -1;
}

/* ---- checking ------------------------------------------------------------------ */

static void heap_push(int *heap, int *n, int v)
{
	int i = (*n)++;
	for (; i > 0 && heap[(i - 1) / 2] > v; i = (i - 1) / 2)
		heap[i] = heap[(i - 1) / 2];
	heap[i] = v;
}

static int heap_pop(int *heap, int *n)
{
	int top = heap[0], v = heap[--*n], i = 0;
	for (;;) {
		int c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && heap[c + 1] < heap[c])
			c++;
		if (heap[c] >= v)
			break;
		heap[i] = heap[c];
		i = c;
	}
	heap[i] = v;
	return top;
}

/* Kahn's algorithm taking the first ready layer in file order: a file that
 * lists inputs before their users keeps its order. */
static int toposort(struct arch *a, const char *file)
{
	int n = a->n_layers, done = 0, nheap = 0, nedges = 0;
	int *pending = xcalloc((size_t)n, sizeof(int));
	int *first = xcalloc((size_t)n + 1, sizeof(int)); /* users of k: user[first[k]..first[k+1]) */
	for (int i = 0; i < n; i++)
		for (int j = 0; j < a->layers[i].n_in; j++)
			if (a->layers[i].in[j] > 0) {
				pending[i]++;
				first[a->layers[i].in[j] - 1]++;
				nedges++;
			}
	for (int k = 1; k < n; k++)
		first[k] += first[k - 1];   /* the end of k's users, for now */
	first[n] = nedges;
	int *user = xmalloc((size_t)(nedges ? nedges : 1) * sizeof(int));
	for (int i = n - 1; i >= 0; i--)
		for (int j = 0; j < a->layers[i].n_in; j++)
			if (a->layers[i].in[j] > 0)
				user[--first[a->layers[i].in[j] - 1]] = i;
	int *heap = xmalloc((size_t)n * sizeof(int));
	for (int i = 0; i < n; i++)
		if (!pending[i])
			heap_push(heap, &nheap, i);
	while (nheap) {
		int i = heap_pop(heap, &nheap);
		a->order[done++] = i;
		for (int k = first[i]; k < first[i + 1]; k++)
			if (--pending[user[k]] == 0)
				heap_push(heap, &nheap, user[k]);
	}
	int rc = 0;
	for (int i = 0; i < n && done < n && !rc; i++)
		if (pending[i])
			rc = error("%s: layer '%s': part of a cycle in the graph", file, a->layers[i].id);
	free(heap);
	free(user);
	free(first);
	free(pending);
	return rc;
}

static const struct arch_shape *node_shape(const struct arch *a, int node)
{
	return node ? &a->layers[node - 1].out : &a->input;
}

/* Every layer must lead to the output (its gradient is defined). */
static int check_live(const struct arch *a, const char *file)
{
	int n = a->n_layers, rc = 0;
	char *live = xcalloc((size_t)n, 1);
	live[a->output] = 1;
	for (int k = n - 1; k >= 0; k--) {
		const struct arch_layer *l = &a->layers[a->order[k]];
		if (live[a->order[k]])
			for (int j = 0; j < l->n_in; j++)
				if (l->in[j])
					live[l->in[j] - 1] = 1;
	}
	for (int k = 0; k < n && !rc; k++)
		if (!live[a->order[k]])
			rc = error("%s: layer '%s': its output never reaches the output layer '%s'", file,
				   a->layers[a->order[k]].id, a->layers[a->output].id);
	free(live);
	return rc;
}

/* Shape, padding, parameters and FLOPs of layer i, whose inputs are done. */
static int check_layer(struct arch *a, int i, struct arch_shape *ins, int *convs, const char *file)
{
	struct arch_layer *l = &a->layers[i];
	for (int j = 0; j < l->n_in; j++)
		ins[j] = *node_shape(a, l->in[j]);
	if (arch_op_shape(&l->op, ins, l->n_in, &l->out, NULL)) {
		char *what = xstrfmt("%s: layer '%s'", file, l->id);
		arch_op_shape(&l->op, ins, l->n_in, &l->out, what);
		free(what);
		return -1;
	}
	l->pad_t = l->pad_l = l->pad_b = l->pad_r = 0;
	if (windowed(l->op.type)) {
		window(&l->op, ins[0].h, &l->pad_t, &l->pad_b);
		window(&l->op, ins[0].w, &l->pad_l, &l->pad_r);
	}
	arch_op_params(&l->op, &ins[0], &l->weights, &l->others);
	int first = l->op.type == ARCH_CONV2D && (*convs)++ == 0;
	arch_op_flops(&l->op, &ins[0], &l->out, first, &l->flops_fwd, &l->flops_bwd);
	a->flops_fwd += l->flops_fwd;
	a->flops_bwd += l->flops_bwd;
	return 0;
}

int arch_check(struct arch *a, const char *file)
{
	int n = a->n_layers, max_in = 1, rc = 0, convs = 0;
	if (n < 1 || a->output < 0 || a->output >= n)
		return error("%s: no output layer", file);
	free(a->order);
	a->order = xmalloc((size_t)n * sizeof(int));
	a->flops_fwd = a->flops_bwd = 0;
	if (toposort(a, file))
		return -1;
	for (int i = 0; i < n; i++)
		if (a->layers[i].n_in > max_in)
			max_in = a->layers[i].n_in;
	struct arch_shape *ins = xmalloc((size_t)max_in * sizeof(*ins));
	for (int k = 0; k < n && !rc; k++)
		rc = check_layer(a, a->order[k], ins, &convs, file);
	free(ins);
	if (rc)
		return -1;
	const struct arch_layer *o = &a->layers[a->output];
	if (!arch_op_is_logits(&o->op, a->num_classes))
		return error("%s: layer '%s': the output must be a dense layer with %d units "
			     "(num_classes)", file, o->id, a->num_classes);
	return check_live(a, file);
}

int arch_parse(struct arch *a, const cJSON *doc, const char *file)
{
	if (arch_read(a, doc, file))
		return -1;
	if (arch_check(a, file) == 0)
		return 0;
	arch_release(a);
	return -1;
}

int arch_load(struct arch *a, const char *path)
{
	cJSON *doc;
	*a = (struct arch)ARCH_INIT;
	if (jsonfile_read(path, &doc))
		return -1;
	int rc = arch_parse(a, doc, path);
	cJSON_Delete(doc);
	return rc;
}

/* ---- writing ----------------------------------------------------------------- */

static const char *node_id(const struct arch *a, int node)
{
	return node ? a->layers[node - 1].id : "input";
}

static void write_fields(cJSON *o, const struct arch_op *op)
{
	switch (op->type) {
	case ARCH_CONV2D:
		cJSON_AddNumberToObject(o, "filters", op->units);
		/* fall through */
	case ARCH_MAXPOOL:
	case ARCH_AVGPOOL:
		cJSON_AddNumberToObject(o, "kernel", op->kernel);
		cJSON_AddNumberToObject(o, "stride", op->stride);
		cJSON_AddStringToObject(o, "padding", paddings[op->padding]);
		if (op->type == ARCH_CONV2D)
			cJSON_AddBoolToObject(o, "bias", op->bias);
		break;
	case ARCH_DENSE:
		cJSON_AddNumberToObject(o, "units", op->units);
		cJSON_AddBoolToObject(o, "bias", op->bias);
		break;
	case ARCH_DROPOUT:
		cJSON_AddNumberToObject(o, "rate", op->rate);
		break;
	case ARCH_BATCHNORM:
		if (op->eps != BN_EPS)
			cJSON_AddNumberToObject(o, "epsilon", op->eps);
		if (op->momentum != BN_MOMENTUM)
			cJSON_AddNumberToObject(o, "momentum", op->momentum);
		break;
	default:
		break;
	}
}

cJSON *arch_to_json(const struct arch *a)
{
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "format", FORMAT);
	cJSON *in = cJSON_AddObjectToObject(d, "input");
	cJSON_AddNumberToObject(in, "height", a->input.h);
	cJSON_AddNumberToObject(in, "width", a->input.w);
	cJSON_AddNumberToObject(in, "channels", a->input.c);
	cJSON_AddNumberToObject(d, "num_classes", a->num_classes);
	cJSON *arr = cJSON_AddArrayToObject(d, "layers");
	for (int i = 0; i < a->n_layers; i++) {
		const struct arch_layer *l = &a->layers[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "id", l->id);
		cJSON_AddStringToObject(o, "type", arch_type_name(l->op.type));
		cJSON *ins = cJSON_AddArrayToObject(o, "inputs");
		for (int j = 0; j < l->n_in; j++)
			cJSON_AddItemToArray(ins, cJSON_CreateString(node_id(a, l->in[j])));
		write_fields(o, &l->op);
		cJSON_AddItemToArray(arr, o);
	}
	if (a->output >= 0 && a->output < a->n_layers)
		cJSON_AddStringToObject(d, "output", a->layers[a->output].id);
	return d;
}
