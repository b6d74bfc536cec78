/* models.c: the initial architectures the search starts from. */
#include "morph.h"
#include "util.h"

static int pool_fits(int h, int kernel)
{
	return h >= kernel;
}

int tmodel_cnn(struct tgraph *g, int width, int channels, int num_classes)
{
	if (width < 1 || channels < 1 || num_classes < 2)
		return error("cnn generator: bad input_width %d, input_channel %d or n_output_node %d",
			     width, channels, num_classes);
	tgraph_init(g, width, width, channels, num_classes);
	int node = 0, h = width;
	for (int i = 0; i < 3; i++) {   /* MODEL_LEN 3 => pooling after every block */
		node = tgraph_add1(g, ARCH_RELU, node, 0, 0, 0);
		node = tgraph_add1(g, ARCH_BATCHNORM, node, 0, 0, 0);
		node = tgraph_add1(g, ARCH_CONV2D, node, 64, 3, 1);
		if (pool_fits(h, 2)) {
			node = tgraph_add1(g, ARCH_MAXPOOL, node, 0, 2, 2);
			h /= 2;
		}
	}
	node = tgraph_add1(g, ARCH_GLOBAL_AVG_POOL, node, 0, 0, 0);
	node = tgraph_add1(g, ARCH_DROPOUT, node, 0, 0, 0);
	node = tgraph_add1(g, ARCH_DENSE, node, 64, 0, 0);
	node = tgraph_add1(g, ARCH_RELU, node, 0, 0, 0);
	node = tgraph_add1(g, ARCH_DENSE, node, num_classes, 0, 0);
	g->output = node - 1;
	return tgraph_infer(g);
}

static int conv_bn(struct tgraph *g, int node, int filters, int kernel, int stride)
{
	node = tgraph_add1(g, ARCH_CONV2D, node, filters, kernel, stride);
	g->layers[node - 1].op.bias = 0;
	return tgraph_add1(g, ARCH_BATCHNORM, node, 0, 0, 0);
}

static int check_resnet_input(int width, int channels, int num_classes)
{
	if (width < 32 || channels < 1 || num_classes < 2)
		return error("resnet-50: input_width %d must be at least 32 and n_output_node %d "
			     "at least 2", width, num_classes);
	return 0;
}

int tmodel_resnet50_v15(struct tgraph *g, int width, int channels, int num_classes)
{
	static const int blocks[4] = { 3, 4, 6, 3 };
	if (check_resnet_input(width, channels, num_classes))
		return -1;
	tgraph_init(g, width, width, channels, num_classes);
	int node = conv_bn(g, 0, 64, 7, 2);
	node = tgraph_add1(g, ARCH_RELU, node, 0, 0, 0);
	node = tgraph_add1(g, ARCH_MAXPOOL, node, 0, 3, 2);
	g->layers[node - 1].op.padding = ARCH_SAME;
	for (int s = 0; s < 4; s++) {
		int f = 64 << s;
		for (int b = 0; b < blocks[s]; b++) {
			int stride = (b == 0 && s > 0) ? 2 : 1;
			int shortcut = node;
			int m = conv_bn(g, node, f, 1, 1);
			m = tgraph_add1(g, ARCH_RELU, m, 0, 0, 0);
			m = conv_bn(g, m, f, 3, stride);
			m = tgraph_add1(g, ARCH_RELU, m, 0, 0, 0);
			m = conv_bn(g, m, 4 * f, 1, 1);
			if (b == 0)
				shortcut = conv_bn(g, node, 4 * f, 1, stride);
			struct tlayer add = { .op.type = ARCH_ADD, .nin = 2, .in = { m, shortcut } };
			node = tgraph_add(g, &add);
			node = tgraph_add1(g, ARCH_RELU, node, 0, 0, 0);
		}
	}
	node = tgraph_add1(g, ARCH_GLOBAL_AVG_POOL, node, 0, 0, 0);
	node = tgraph_add1(g, ARCH_DENSE, node, num_classes, 0, 0);
	g->output = node - 1;
	return tgraph_infer(g);
}

/* A layer of AIPerf's Keras model: convolutions with a bias, batch norm with
 * epsilon 1e-4 (layers.py to_real_tf_layer). */
static int aiperf_layer(struct tgraph *g, enum arch_type type, int in, int filters, int kernel,
			int stride)
{
	int node = tgraph_add1(g, type, in, filters, kernel, stride);
	if (type == ARCH_BATCHNORM)
		g->layers[node - 1].op.eps = 1e-4;
	if (type == ARCH_CONV2D || type == ARCH_MAXPOOL)
		g->layers[node - 1].op.padding = ARCH_SAME;
	return node;
}

static int add2(struct tgraph *g, int a, int b)
{
	struct tlayer add = { .op.type = ARCH_ADD, .nin = 2, .in = { a, b } };
	return tgraph_add(g, &add);
}

int tmodel_resnet50(struct tgraph *g, int width, int channels, int num_classes)
{
	static const int blocks[4] = { 3, 4, 6, 3 };
	if (check_resnet_input(width, channels, num_classes))
		return -1;
	tgraph_init(g, width, width, channels, num_classes);
	int node = aiperf_layer(g, ARCH_CONV2D, 0, 64, 7, 2);
	node = aiperf_layer(g, ARCH_BATCHNORM, node, 0, 0, 0);
	node = aiperf_layer(g, ARCH_RELU, node, 0, 0, 0);
	node = aiperf_layer(g, ARCH_MAXPOOL, node, 0, 3, 2);
	/* layers in resnet50.json's order: in a block's first unit the
	 * shortcut's conv comes before the two last batch norms */
	for (int s = 0; s < 4; s++) {
		int f = 64 << s;
		for (int b = 0; b < blocks[s]; b++) {
			int stride = (b == 0 && s > 0) ? 2 : 1;
			int m = aiperf_layer(g, ARCH_CONV2D, node, f, 1, stride);
			m = aiperf_layer(g, ARCH_BATCHNORM, m, 0, 0, 0);
			m = aiperf_layer(g, ARCH_RELU, m, 0, 0, 0);
			m = aiperf_layer(g, ARCH_CONV2D, m, f, 3, 1);
			m = aiperf_layer(g, ARCH_BATCHNORM, m, 0, 0, 0);
			m = aiperf_layer(g, ARCH_RELU, m, 0, 0, 0);
			m = aiperf_layer(g, ARCH_CONV2D, m, 4 * f, 1, 1);
			if (b == 0) {
				int sc = aiperf_layer(g, ARCH_CONV2D, node, 4 * f, 1, stride);
				m = aiperf_layer(g, ARCH_BATCHNORM, m, 0, 0, 0);
				sc = aiperf_layer(g, ARCH_BATCHNORM, sc, 0, 0, 0);
				node = add2(g, m, sc);
			} else {
				m = aiperf_layer(g, ARCH_BATCHNORM, m, 0, 0, 0);
				node = add2(g, m, node);
			}
			node = aiperf_layer(g, ARCH_RELU, node, 0, 0, 0);
		}
	}
	node = aiperf_layer(g, ARCH_GLOBAL_AVG_POOL, node, 0, 0, 0);
	node = aiperf_layer(g, ARCH_DENSE, node, num_classes, 0, 0);
	g->output = node - 1;
	return tgraph_infer(g);
}
