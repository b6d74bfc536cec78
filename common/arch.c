/* arch.c: a network of aah-arch/1 layers (arch.h): built, looked up and
 * checked as a whole (order, reach, shapes, parameters, FLOPs); a document
 * read and checked in one call. Each layer type's rules are in arch_op.c,
 * the format's reading and writing in arch_json.c. */
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "arch_int.h" /* arch_op_window, arch_op_windowed */
#include "jsonfile.h" /* jsonfile_read */
#include "util.h"

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
	if (arch_op_windowed(l->op.type)) {
		arch_op_window(&l->op, ins[0].h, &l->pad_t, &l->pad_b);
		arch_op_window(&l->op, ins[0].w, &l->pad_l, &l->pad_r);
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

