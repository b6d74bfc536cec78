/* Unit tests for common/nni_graph (NNI graph JSON -> struct arch): AIPerf's
 * resnet50.json converts into the tuner's default ImageNet start layer for
 * layer; aah's FLOPs of that graph and of NNI's CnnGenerator CNN equal, per
 * layer type, what AIPerf's profiler.py computes; bad files fail naming the
 * file, the NNI layer and the field. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "jsonfile.h"
#include "nni_graph.h"
#include "runner/tuner/graph.h"
#include "runner/tuner/morph.h"
#include "util.h"

static void setup(void)
{
	util_set_quiet(1);
}

TestSuite(nni_graph, .init = setup);

static char *fixture(const char *name)
{
	const char *root = getenv("AAH_ROOT") ? getenv("AAH_ROOT") : ".";
	return xstrfmt("%s/tests/fixtures/aiperf/%s", root, name);
}

static void load(struct arch *a, const char *name)
{
	char *path = fixture(name);
	cr_assert_eq(nni_graph_load(a, path), 0, "%s", util_last_error());
	free(path);
}

/* profiler.py's per-layer-type totals per image (its fw*flops and bw*flops
 * locals). Source: AIPerf (github.com/thu-pacman/AIPerf) commit
 * 4dc060a302c5f2f67b120f263708b926464a0855, scripts/reports/profiler.py, run
 * unchanged by tests/fixtures/aiperf/profiler_totals.py with Debian's
 * python3: `python3 tests/fixtures/aiperf/profiler_totals.py profiler.py
 * tests/fixtures/aiperf/<graph>.json` (tests/fixtures/aiperf/SOURCE.md). */
struct profiler_totals {
	const char *graph;
	double conv, bn, relu, add, maxpool, avgpool, dense, softmax; /* forward */
	double bconv, bbn, bdense;                                     /* backward, the others are 0 */
	double eval, train;                                            /* its return values */
};

static const struct profiler_totals profiler[] = {
	{ "resnet50.json", 7711850496, 74109952, 9081856, 5519360, 1806336.0, 106496, 4096000, 12999,
	  15234582912, 1908.0, 12290000, 7806583495.0, 23053458315.0 },
	{ "cnn-cifar10.json", 27131904, 164864, 23616, 0, 86016.0, 1216, 9472, 960, 50875776, 108.0,
	  28564, 27418048.0, 78322496.0 },
	{ "cnn-fashion-mnist.json", 18966528, 115248, 16528, 0, 65856.0, 768, 9472, 960, 37178496,
	  108.0, 28564, 19175360.0, 56382528.0 },
};

static void sum_by_type(const struct arch *a, double *fwd, double *bwd)
{
	memset(fwd, 0, ARCH_NTYPES * sizeof(double));
	memset(bwd, 0, ARCH_NTYPES * sizeof(double));
	for (int i = 0; i < a->n_layers; i++) {
		fwd[a->layers[i].op.type] += a->layers[i].flops_fwd;
		bwd[a->layers[i].op.type] += a->layers[i].flops_bwd;
	}
}

Test(nni_graph, flops_by_layer_type_equal_profiler_py)
{
	for (size_t k = 0; k < ARRAY_SIZE(profiler); k++) {
		const struct profiler_totals *p = &profiler[k];
		struct arch a;
		double fwd[ARCH_NTYPES], bwd[ARCH_NTYPES];
		load(&a, p->graph);
		sum_by_type(&a, fwd, bwd);
		/* exact: every figure is an integer, or a power-of-two fraction, well
		 * inside a double's 53 bits */
		cr_expect_eq(fwd[ARCH_CONV2D], p->conv, "%s conv %.1f", p->graph, fwd[ARCH_CONV2D]);
		cr_expect_eq(fwd[ARCH_BATCHNORM], p->bn, "%s bn %.1f", p->graph, fwd[ARCH_BATCHNORM]);
		cr_expect_eq(fwd[ARCH_RELU], p->relu, "%s relu %.1f", p->graph, fwd[ARCH_RELU]);
		cr_expect_eq(fwd[ARCH_ADD], p->add, "%s add %.1f", p->graph, fwd[ARCH_ADD]);
		cr_expect_eq(fwd[ARCH_MAXPOOL], p->maxpool, "%s maxpool %.1f", p->graph, fwd[ARCH_MAXPOOL]);
		cr_expect_eq(fwd[ARCH_GLOBAL_AVG_POOL], p->avgpool, "%s global avg pool %.1f", p->graph,
			     fwd[ARCH_GLOBAL_AVG_POOL]);
		/* aah charges the softmax with the dense layer that feeds it */
		cr_expect_eq(fwd[ARCH_DENSE], p->dense + p->softmax, "%s dense %.1f", p->graph,
			     fwd[ARCH_DENSE]);
		cr_expect_eq(bwd[ARCH_CONV2D], p->bconv, "%s conv bwd %.1f", p->graph, bwd[ARCH_CONV2D]);
		cr_expect_eq(bwd[ARCH_BATCHNORM], p->bbn, "%s bn bwd %.1f", p->graph, bwd[ARCH_BATCHNORM]);
		cr_expect_eq(bwd[ARCH_DENSE], p->bdense, "%s dense bwd %.1f", p->graph, bwd[ARCH_DENSE]);
		cr_expect_eq(a.flops_fwd, p->eval, "%s eval %.1f", p->graph, a.flops_fwd);
		cr_expect_eq(a.flops_fwd + a.flops_bwd, p->train, "%s train %.1f", p->graph,
			     a.flops_fwd + a.flops_bwd);
		arch_release(&a);
	}
}

static void expect_same_layers(const struct tgraph *g, const struct arch *a, const char *what)
{
	cr_assert_eq(g->nlayers, a->n_layers, "%s: %d layers, the file %d", what, g->nlayers,
		     a->n_layers);
	for (int i = 0; i < a->n_layers; i++) {
		const struct arch_op *x = &g->layers[i].op, *y = &a->layers[i].op;
		cr_assert(x->type == y->type && x->units == y->units && x->kernel == y->kernel &&
			  x->stride == y->stride && x->padding == y->padding && x->bias == y->bias &&
			  x->eps == y->eps && x->momentum == y->momentum && x->rate == y->rate,
			  "%s: layer %d is %s %d k%d s%d p%d, the file's '%s' %s %d k%d s%d p%d", what, i,
			  arch_type_name(x->type), x->units, x->kernel, x->stride, x->padding,
			  a->layers[i].id, arch_type_name(y->type), y->units, y->kernel, y->stride,
			  y->padding);
		cr_assert_eq(g->layers[i].nin, a->layers[i].n_in, "%s: layer %d", what, i);
		for (int j = 0; j < a->layers[i].n_in; j++)
			cr_assert_eq(g->layers[i].in[j], a->layers[i].in[j], "%s: layer %d input %d", what,
				     i, j);
	}
	cr_assert_eq(g->output, a->output, "%s", what);
}

Test(nni_graph, the_default_imagenet_start_is_aiperfs_resnet50_json)
{
	struct arch a;
	struct tgraph g;
	load(&a, "resnet50.json");
	cr_assert_eq(a.n_layers, 174);
	cr_assert_eq(a.num_classes, 1000);
	cr_assert_eq(tmodel_resnet50(&g, 224, 3, 1000), 0, "%s", util_last_error());
	expect_same_layers(&g, &a, "resnet50");
	/* torchvision's 25,557,032 plus Keras's conv biases (26,560 filters) */
	cr_assert_eq(tgraph_params(&g), 25583592ULL, "%llu", (unsigned long long)tgraph_params(&g));
	/* v1: the downsampling unit of stage 2 strides its first 1x1 conv */
	const struct arch_layer *c = &a.layers[arch_find(&a, "conv2d_36")];
	cr_assert(c->op.kernel == 1 && c->op.stride == 2 && c->out.h == 28, "%d %d %d", c->op.kernel,
		  c->op.stride, c->out.h);
	cr_assert_eq(a.layers[arch_find(&a, "conv2d_39")].op.stride, 1);

	/* v1.5 keeps its name and costs about 6% more */
	struct tgraph v15;
	cr_assert_eq(tmodel_resnet50_v15(&v15, 224, 3, 1000), 0);
	double ratio = tgraph_flops(&v15) / tgraph_flops(&g);
	cr_assert(ratio > 1.05 && ratio < 1.07, "v1.5 / v1 = %g", ratio);
	tgraph_release(&v15);
	tgraph_release(&g);
	arch_release(&a);
}

Test(nni_graph, the_cnn_start_is_nnis_cnn_generator)
{
	struct arch a;
	struct tgraph g;
	load(&a, "cnn-cifar10.json");
	cr_assert_eq(tmodel_cnn(&g, 32, 3, 10), 0, "%s", util_last_error());
	/* the same layers; aah's own CNN keeps its batch norm epsilon 1e-5, and
	 * its pools' "valid", which on these even sizes pads as "same" does */
	for (int i = 0; i < g.nlayers; i++) {
		if (g.layers[i].op.type == ARCH_BATCHNORM)
			g.layers[i].op.eps = 1e-4;
		if (g.layers[i].op.type == ARCH_MAXPOOL)
			g.layers[i].op.padding = ARCH_SAME;
	}
	expect_same_layers(&g, &a, "cnn");
	tgraph_release(&g);
	arch_release(&a);
}

/* A minimal graph: input 8x8x3 -> conv(4, k3) -> gap -> dense(2). */
#define NODES "\"node_list\":[[0,[8,8,3]],[1,[8,8,4]],[2,[4]],[3,[2]]]"
#define LAYERS(conv) "\"layer_list\":[[0," conv "],[1,[\"StubGlobalPooling2d\",1,2]]," \
	"[2,[\"StubDense\",2,3,4,2]]]"

static const char *convert_error(const char *text)
{
	cJSON *doc;
	struct arch a;
	cr_assert_eq(jsonfile_parse("test", text, &doc), 0, "%s", util_last_error());
	int rc = nni_graph_read(&a, doc, "g.json");
	cJSON_Delete(doc);
	if (rc == 0) {
		arch_release(&a);
		return NULL;
	}
	return util_last_error();
}

Test(nni_graph, bad_graphs_are_named_by_file_layer_and_field)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "{\"input_shape\":[8,8,3]," NODES "," LAYERS("[\"StubConv2d\",0,1,3,4,3,1,1]") "}", NULL },
		{ "{\"input_shape\":[8,8,3]," NODES "," LAYERS("[\"StubConv2d\",0,1,5,4,3,1,1]") "}",
		  "g.json: layer 0: input_channel 5, but node 0 has 3 channels" },
		{ "{\"input_shape\":[8,8,3]," NODES "," LAYERS("[\"StubConv2d\",0,1,3,4,3,2,1]") "}",
		  "g.json: layer 0: no padding (same or valid) turns node 0" },
		{ "{\"input_shape\":[8,8,3]," NODES "," LAYERS("[\"StubConv3d\",0,1,3,4,3,1,1]") "}",
		  "g.json: layer 0: type \"StubConv3d\" is not one aah reads" },
		{ "{\"input_shape\":[8,8,3]," NODES "," LAYERS("[\"StubConv2d\",0,1,3,4,3,1]") "}",
		  "g.json: layer 0: a StubConv2d has 5 fields after [type, input, output], not 4" },
		{ "{\"input_shape\":[8,8,3]," NODES "," LAYERS("[\"StubConv2d\",7,1,3,4,3,1,1]") "}",
		  "g.json: layer 0: the input must be a node id below 4" },
		{ "{\"input_shape\":[8,8,3]," NODES "," LAYERS("[\"StubConv2d\",0,1,3,4,\"3\",1,1]") "}",
		  "g.json: layer 0: field 5 of a StubConv2d must be a non-negative integer" },
		{ "{\"input_shape\":[8,8]," NODES "," LAYERS("[\"StubConv2d\",0,1,3,4,3,1,1]") "}",
		  "g.json: \"input_shape\" must be [H, W, C]" },
		{ "{\"input_shape\":[8,8,3],\"node_list\":[[0,[8,8,3]],[1,[8,8,4]],[2,[4]],[3,[2]]],"
		  "\"layer_list\":[[0,[\"StubConv2d\",0,1,3,4,3,1,1]],[1,[\"StubGlobalPooling2d\",1,2]],"
		  "[2,[\"StubDense\",2,3,4,2]],[3,[\"StubReLU\",1,2]]]}",
		  "g.json: layer 3: node 2 is already the output of layer_list[1]" },
		{ "{\"layer_list\":[]}", "g.json: not an NNI graph" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *err = convert_error(cases[i].text);
		if (!cases[i].want) {
			cr_expect_null(err, "case %zu: %s", i, err);
			continue;
		}
		cr_expect(err && strstr(err, cases[i].want), "case %zu: got '%s', want '%s'", i,
			  err ? err : "(converted)", cases[i].want);
	}
}
