/* model.c: a checked arch (common/arch) -> the trainer's sorted layer graph
 * over the op table, with relus fused into the layer before them. */
#include <stdlib.h>
#include <string.h>

#include "trialimg/model.h"
#include "util.h"

/* The op that runs each layer type: the one place where the file's types
 * meet the kernels' ops. */
static const enum ops_type op_types[ARCH_NTYPES] = {
	[ARCH_CONV2D] = OPS_CONV2D,
	[ARCH_BATCHNORM] = OPS_BATCHNORM,
	[ARCH_RELU] = OPS_RELU,
	[ARCH_MAXPOOL] = OPS_MAXPOOL,
	[ARCH_AVGPOOL] = OPS_AVGPOOL,
	[ARCH_GLOBAL_AVG_POOL] = OPS_GLOBAL_AVG_POOL,
	[ARCH_DENSE] = OPS_DENSE,
	[ARCH_DROPOUT] = OPS_DROPOUT,
	[ARCH_ADD] = OPS_ADD,
	[ARCH_CONCAT] = OPS_CONCAT,
	[ARCH_FLATTEN] = OPS_FLATTEN,
};

enum ops_type model_op_type(enum arch_type type)
{
	if ((unsigned)type >= ARCH_NTYPES)
		BUG("no op for layer type %d", (int)type);
	return op_types[type];
}

int model_find(const struct model *m, const char *id)
{
	for (int i = 0; i < m->n_layers; i++)
		if (!strcmp(m->layers[i].id, id))
			return i;
	return -1;
}

static struct ops_shape ops_shape_of(const struct arch_shape *s)
{
	return (struct ops_shape){ s->h, s->w, s->c };
}

static struct ops_layer_cfg cfg_of(const struct arch_layer *r)
{
	const struct arch_op *op = &r->op;
	return (struct ops_layer_cfg){
		.type = model_op_type(op->type),
		.kernel = op->kernel, .stride = op->stride,
		.pad_t = r->pad_t, .pad_l = r->pad_l, .pad_b = r->pad_b, .pad_r = r->pad_r,
		.units = op->units, .bias = op->bias,
		.eps = (float)op->eps, .momentum = (float)op->momentum, .rate = (float)op->rate,
	};
}

/* batchnorm -> relu and add -> relu with no other reader: one fused op */
static void fuse_relus(struct model *m)
{
	for (int i = 0; i < m->n_layers; i++) {
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
}

void model_build(struct model *m, const struct arch *a)
{
	int n = a->n_layers;
	int *pos = xmalloc((size_t)n * sizeof(int)); /* arch layer -> sorted position */
	memset(m, 0, sizeof(*m));
	m->input = ops_shape_of(&a->input);
	m->num_classes = a->num_classes;
	m->n_layers = n;
	m->layers = xcalloc((size_t)n, sizeof(*m->layers));
	m->layouts = xcalloc((size_t)n + 1, sizeof(enum ops_layout));
	for (int s = 0; s < n; s++)
		pos[a->order[s]] = s;
	for (int s = 0; s < n; s++) {
		const struct arch_layer *r = &a->layers[a->order[s]];
		struct model_layer *L = &m->layers[s];
		L->id = xstrdup(r->id);
		L->type = r->op.type;
		L->op.cfg = cfg_of(r);
		L->op.index = s;
		L->op.n_in = r->n_in;
		L->inputs = xcalloc((size_t)r->n_in, sizeof(int));
		L->in_shapes = xcalloc((size_t)r->n_in, sizeof(struct ops_shape));
		L->op.in = L->in_shapes;
		L->in_layouts = xcalloc((size_t)r->n_in, sizeof(enum ops_layout));
		L->op.in_layout = L->in_layouts;
		L->in_types = xcalloc((size_t)r->n_in, sizeof(enum ops_dtype));
		L->op.in_type = L->in_types;
		for (int k = 0; k < r->n_in; k++) {
			L->inputs[k] = r->in[k] ? pos[r->in[k] - 1] + 1 : 0;
			L->in_shapes[k] = L->inputs[k] ? m->layers[L->inputs[k] - 1].op.out : m->input;
			if (L->inputs[k])
				m->layers[L->inputs[k] - 1].n_users++;
		}
		L->op.no_dx0 = L->inputs[0] == 0;
		L->op.out = ops_shape_of(&r->out);
		L->rank2 = r->out.rank == 2;
		L->flops_fwd = r->flops_fwd;
		L->flops_bwd = r->flops_bwd;
		L->n_weights = (size_t)r->weights;
		L->n_biases = (size_t)r->others;
	}
	m->flops_fwd = a->flops_fwd;
	m->flops_bwd = a->flops_bwd;
	m->output = pos[a->output];
	free(pos);
	fuse_relus(m);
}

int model_parse(struct model *m, const cJSON *doc, const char *what)
{
	struct arch a;
	memset(m, 0, sizeof(*m));
	if (arch_parse(&a, doc, what))
		return -1;
	model_build(m, &a);
	arch_release(&a);
	return 0;
}

int model_load(struct model *m, const char *path)
{
	struct arch a;
	memset(m, 0, sizeof(*m));
	if (arch_load(&a, path))
		return -1;
	model_build(m, &a);
	arch_release(&a);
	return 0;
}

void model_default_arch(struct arch *a, int h, int w, int c, int classes)
{
	static const struct {
		const char *id;
		enum arch_type type;
		int units, kernel;
	} net[] = {
		{ "conv1", ARCH_CONV2D, 32, 3 }, { "bn1", ARCH_BATCHNORM, 0, 0 },
		{ "relu1", ARCH_RELU, 0, 0 },    { "pool1", ARCH_MAXPOOL, 0, 2 },
		{ "conv2", ARCH_CONV2D, 64, 3 }, { "bn2", ARCH_BATCHNORM, 0, 0 },
		{ "relu2", ARCH_RELU, 0, 0 },    { "gap", ARCH_GLOBAL_AVG_POOL, 0, 0 },
		{ "logits", ARCH_DENSE, 0, 0 },
	};
	arch_init(a, h, w, c, classes);
	for (size_t i = 0; i < ARRAY_SIZE(net); i++) {
		struct arch_op op;
		int in = (int)i; /* a chain: each layer reads the one before */
		arch_op_init(&op, net[i].type);
		op.units = net[i].type == ARCH_DENSE ? classes : net[i].units;
		op.kernel = net[i].kernel;
		if (net[i].type == ARCH_MAXPOOL)
			op.stride = op.kernel;
		arch_add(a, net[i].id, &op, 1, &in);
	}
	a->output = a->n_layers - 1;
}
