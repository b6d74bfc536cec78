/* arch_json.c: aah-arch/1 documents read into struct arch and written
 * from it: every field and reference the schema defines, checked, errors
 * naming the file and the layer (the format's one reader and writer). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "arch_int.h" /* arch_types, arch_op_check_fields, ARCH_BN_* */
#include "jsonfile.h" /* json_get_* */
#include "util.h"

#define FORMAT "aah-arch/1"
#define MAX_LAYERS 10000
#define MAX_SIDE 4096   /* input height, width, channels */
#define MAX_CLASSES 100000
#define MAX_ID 64

static const char *const paddings[] = { [ARCH_SAME] = "same", [ARCH_VALID] = "valid" };

static const char *const doc_fields[] = { "format", "input", "num_classes", "layers", "output",
					  "meta", NULL };
static const char *const input_fields[] = { "height", "width", "channels", NULL };
static const char *const layer_fields[] = { "id", "type", "inputs", NULL };

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
	return arch_op_check_fields(op, what);
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
	if (check_members(o, layer_fields, arch_types[t].fields, what, arch_types[t].name))
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
		if (op->eps != ARCH_BN_EPS)
			cJSON_AddNumberToObject(o, "epsilon", op->eps);
		if (op->momentum != ARCH_BN_MOMENTUM)
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

