/* Unit tests for trialimg/model: arch.json parsing and checks, shapes, and
 * AIPerf FLOPs per layer type. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "trialimg/model.h"
#include "util.h"

/* A one-layer-of-interest graph: input -> [pre] -> X -> flatten -> dense(2). */
static char *arch(int h, int w, int c, const char *layers, const char *last)
{
	return xstrfmt("{\"format\":\"aah-arch/1\",\"input\":{\"height\":%d,\"width\":%d,"
		       "\"channels\":%d},\"num_classes\":2,\"output\":\"out\",\"layers\":[%s,"
		       "{\"id\":\"f\",\"type\":\"flatten\",\"inputs\":[\"%s\"]},"
		       "{\"id\":\"out\",\"type\":\"dense\",\"inputs\":[\"f\"],\"units\":2}]}",
		       h, w, c, layers, last);
}

static int parse(struct model *m, const char *text)
{
	cJSON *doc = cJSON_Parse(text);
	cr_assert_not_null(doc, "bad test JSON: %s", text);
	int rc = model_parse(m, doc, "arch.json");
	cJSON_Delete(doc);
	return rc;
}

static void expect_error(const char *layers, const char *last, const char *needle)
{
	struct model m;
	char *t = arch(8, 8, 3, layers, last);
	util_set_quiet(1);
	cr_assert_eq(parse(&m, t), -1, "accepted: %s", t);
	cr_assert_not_null(strstr(util_last_error(), needle), "error '%s' lacks '%s'",
			   util_last_error(), needle);
	free(t);
}

Test(model, fixtures_parse_with_shapes)
{
	struct model m;
	char *p = xstrfmt("%s/tests/fixtures/arch/resnet_small.json",
			  getenv("AAH_ROOT") ? getenv("AAH_ROOT") : ".");
	cr_assert_eq(model_load(&m, p), 0, "%s", util_last_error());
	int i = model_find(&m, "down");
	cr_assert_geq(i, 0);
	cr_assert_eq(m.layers[i].op.out.h, 14);
	cr_assert_eq(m.layers[i].op.out.c, 64);
	/* same padding, stride 2, 28 -> 14: total pad 1, split top 0 / bottom 1 */
	cr_assert_eq(m.layers[i].op.cfg.pad_t, 0);
	cr_assert_eq(m.layers[i].op.cfg.pad_b, 1);
	int g = model_find(&m, "gap");
	cr_assert(m.layers[g].rank2);
	cr_assert_eq(m.layers[g].op.out.c, 64);
	/* sorted: every input comes before its user */
	for (int k = 0; k < m.n_layers; k++)
		for (int j = 0; j < m.layers[k].op.n_in; j++)
			cr_assert_lt(m.layers[k].inputs[j], k + 1);
	model_release(&m, NULL);
	free(p);
}

Test(model, layers_in_any_order_are_sorted)
{
	struct model m;
	char *t = arch(4, 4, 1,
		       "{\"id\":\"b\",\"type\":\"relu\",\"inputs\":[\"a\"]},"
		       "{\"id\":\"a\",\"type\":\"conv2d\",\"inputs\":[\"input\"],\"filters\":2,\"kernel\":3}",
		       "b");
	cr_assert_eq(parse(&m, t), 0, "%s", util_last_error());
	cr_assert_str_eq(m.layers[0].id, "a");
	cr_assert_str_eq(m.layers[1].id, "b");
	model_release(&m, NULL);
	free(t);
}

Test(model, rejects_malformed_graphs_naming_the_layer)
{
	expect_error("{\"id\":\"a\",\"type\":\"relu\",\"inputs\":[\"b\"]},"
		     "{\"id\":\"b\",\"type\":\"relu\",\"inputs\":[\"a\"]}", "b", "cycle");
	expect_error("{\"id\":\"a\",\"type\":\"relu\",\"inputs\":[\"nosuch\"]}", "a",
		     "layer 'a': input 'nosuch'");
	expect_error("{\"id\":\"a\",\"type\":\"conv2d\",\"inputs\":[\"input\"],\"filters\":4,\"kernel\":3},"
		     "{\"id\":\"s\",\"type\":\"add\",\"inputs\":[\"a\",\"input\"]}", "s",
		     "layer 's': add needs identical shapes");
	expect_error("{\"id\":\"a\",\"type\":\"softmax\",\"inputs\":[\"input\"]}", "a",
		     "layer 'a': unknown type");
	expect_error("{\"id\":\"a\",\"type\":\"conv2d\",\"inputs\":[\"input\"],\"kernel\":3}", "a",
		     "layer 'a': missing field \"filters\"");
	expect_error("{\"id\":\"a\",\"type\":\"relu\",\"inputs\":[\"input\"],\"kernel\":3}", "a",
		     "layer 'a': field \"kernel\" is not allowed");
	expect_error("{\"id\":\"a\",\"type\":\"maxpool\",\"inputs\":[\"input\"],\"kernel\":9}", "a",
		     "layer 'a': kernel 9 is larger");
	expect_error("{\"id\":\"a\",\"type\":\"relu\",\"inputs\":[\"input\"]},"
		     "{\"id\":\"a\",\"type\":\"relu\",\"inputs\":[\"input\"]}", "a",
		     "layer 'a': duplicate id");
	expect_error("{\"id\":\"a\",\"type\":\"relu\",\"inputs\":[\"input\"]},"
		     "{\"id\":\"dead\",\"type\":\"relu\",\"inputs\":[\"input\"]}", "a",
		     "layer 'dead'");
	expect_error("{\"id\":\"g\",\"type\":\"global_avg_pool\",\"inputs\":[\"input\"]},"
		     "{\"id\":\"c\",\"type\":\"conv2d\",\"inputs\":[\"g\"],\"filters\":2,\"kernel\":1}",
		     "c", "layer 'c': conv2d needs an (N, H, W, C) input");
}

Test(model, dense_needs_rank2_and_output_is_dense)
{
	struct model m;
	util_set_quiet(1);
	const char *t = "{\"format\":\"aah-arch/1\",\"input\":{\"height\":4,\"width\":4,\"channels\":1},"
			"\"num_classes\":2,\"output\":\"d\",\"layers\":["
			"{\"id\":\"d\",\"type\":\"dense\",\"inputs\":[\"input\"],\"units\":2}]}";
	cr_assert_eq(parse(&m, t), -1);
	cr_assert_not_null(strstr(util_last_error(), "layer 'd': dense needs a rank-2 input"));
	t = "{\"format\":\"aah-arch/1\",\"input\":{\"height\":4,\"width\":4,\"channels\":1},"
	    "\"num_classes\":3,\"output\":\"d\",\"layers\":["
	    "{\"id\":\"f\",\"type\":\"flatten\",\"inputs\":[\"input\"]},"
	    "{\"id\":\"d\",\"type\":\"dense\",\"inputs\":[\"f\"],\"units\":2}]}";
	cr_assert_eq(parse(&m, t), -1);
	cr_assert_not_null(strstr(util_last_error(), "layer 'd': the output must be"));
}

/* FLOPs of the layer `id` in a graph (per image, AIPerf's profiler rules). */
static void flops_of(int h, int w, int c, const char *layers, const char *last, const char *id,
		     double fwd, double bwd)
{
	struct model m;
	char *t = arch(h, w, c, layers, last);
	cr_assert_eq(parse(&m, t), 0, "%s", util_last_error());
	int i = model_find(&m, id);
	cr_assert_geq(i, 0);
	cr_assert_float_eq(m.layers[i].flops_fwd, fwd, 1e-6, "%s fwd %g != %g", id,
			   m.layers[i].flops_fwd, fwd);
	cr_assert_float_eq(m.layers[i].flops_bwd, bwd, 1e-6, "%s bwd %g != %g", id,
			   m.layers[i].flops_bwd, bwd);
	model_release(&m, NULL);
	free(t);
}

Test(model, flops_conv)
{
	/* on the input: 2*k^2*Cin*Cout*Ho*Wo = 2*9*3*4*64; bwd k^2*Cin*Cout*(2*HoWo+2) */
	flops_of(8, 8, 3, "{\"id\":\"a\",\"type\":\"conv2d\",\"inputs\":[\"input\"],\"filters\":4,\"kernel\":3}",
		 "a", "a", 13824, 108.0 * 130);
	/* a second conv (stride 2, 8 -> 4): bwd uses 4*HoWo+2 */
	flops_of(8, 8, 3,
		 "{\"id\":\"a\",\"type\":\"conv2d\",\"inputs\":[\"input\"],\"filters\":4,\"kernel\":3},"
		 "{\"id\":\"b\",\"type\":\"conv2d\",\"inputs\":[\"a\"],\"filters\":5,\"kernel\":1,\"stride\":2}",
		 "b", "b", 2.0 * 1 * 4 * 5 * 16, 20.0 * (4 * 16 + 2));
}

Test(model, flops_dense_includes_softmax)
{
	/* dense 48 -> 2: 2*48*2 + softmax(2*8 + 1 + 2*4); bwd 4*48*2 + 2*49*2 */
	flops_of(4, 4, 3, "{\"id\":\"a\",\"type\":\"relu\",\"inputs\":[\"input\"]}", "a", "out",
		 192 + 25, 384 + 196);
}

Test(model, flops_batchnorm_relu_add)
{
	flops_of(4, 4, 3, "{\"id\":\"a\",\"type\":\"batchnorm\",\"inputs\":[\"input\"]}", "a", "a",
		 7.0 * 48, 36);
	flops_of(4, 4, 3, "{\"id\":\"a\",\"type\":\"relu\",\"inputs\":[\"input\"]}", "a", "a", 48, 0);
	flops_of(4, 4, 3,
		 "{\"id\":\"r\",\"type\":\"relu\",\"inputs\":[\"input\"]},"
		 "{\"id\":\"a\",\"type\":\"add\",\"inputs\":[\"r\",\"input\"]}", "a", "a", 48, 0);
}

Test(model, flops_pooling)
{
	/* maxpool and avgpool: input size * k^2 / s^2 */
	flops_of(8, 8, 2, "{\"id\":\"a\",\"type\":\"maxpool\",\"inputs\":[\"input\"],\"kernel\":2}",
		 "a", "a", 128, 0);
	flops_of(8, 8, 2,
		 "{\"id\":\"a\",\"type\":\"avgpool\",\"inputs\":[\"input\"],\"kernel\":3,\"stride\":1,\"padding\":\"same\"}",
		 "a", "a", 128.0 * 9, 0);
	/* global average pool: (H*W - 1)*C adds + C divides at 4 (profiler.py) */
	flops_of(8, 8, 2, "{\"id\":\"a\",\"type\":\"global_avg_pool\",\"inputs\":[\"input\"]}",
		 "a", "a", 63.0 * 2 + 4 * 2, 0);
}

Test(model, flops_free_layers)
{
	flops_of(4, 4, 3,
		 "{\"id\":\"r\",\"type\":\"relu\",\"inputs\":[\"input\"]},"
		 "{\"id\":\"a\",\"type\":\"concat\",\"inputs\":[\"r\",\"input\"]}", "a", "a", 0, 0);
	flops_of(4, 4, 3, "{\"id\":\"a\",\"type\":\"dropout\",\"inputs\":[\"input\"],\"rate\":0.5}",
		 "a", "a", 0, 0);
	flops_of(4, 4, 3, "{\"id\":\"a\",\"type\":\"dropout\",\"inputs\":[\"input\"],\"rate\":0.5}",
		 "a", "f", 0, 0);
}

Test(model, default_arch_is_valid)
{
	struct model m;
	struct arch a;
	model_default_arch(&a, 28, 28, 1, 10);
	cr_assert_eq(arch_check(&a, "default"), 0, "%s", util_last_error());
	model_build(&m, &a);
	arch_release(&a);
	cr_assert_eq(m.layers[m.output].op.out.c, 10);
	model_release(&m, NULL);
}

/* Every layer type of the file runs on its own op, and the names parse. */
Test(model, every_arch_type_maps_to_one_op)
{
	int used[OPS_NTYPES] = { 0 };
	for (int t = 0; t < ARCH_NTYPES; t++) {
		enum ops_type o = model_op_type((enum arch_type)t);
		cr_assert(o >= 0 && o < OPS_NTYPES, "%s maps to op %d", arch_type_name(t), (int)o);
		cr_assert_eq(used[o]++, 0, "%s shares op %d", arch_type_name(t), (int)o);
	}
	cr_assert_eq(ARCH_NTYPES, OPS_NTYPES);
	cr_assert_eq(model_op_type(arch_type_parse("global_avg_pool")), OPS_GLOBAL_AVG_POOL);
	cr_assert_eq(model_op_type(arch_type_parse("conv2d")), OPS_CONV2D);
	cr_assert_eq(arch_type_parse("softmax"), -1);
}

/* A backend whose accumulate fails: the backward pass must say so, not go
 * on with a gradient that lacks a branch (a layer with two users, "a"
 * here, sums its gradients with accumulate). */
static int accumulate_fails(struct ops_ctx *ctx, size_t count, enum ops_dtype t, void *y,
			    const void *x)
{
	(void)ctx, (void)count, (void)t, (void)y, (void)x;
	return error("accumulate: the device said no");
}

Test(model, a_failed_accumulate_fails_the_backward_pass)
{
	struct model m;
	struct ops_ctx ctx;
	char *t = arch(4, 4, 2,
		       "{\"id\":\"a\",\"type\":\"relu\",\"inputs\":[\"input\"]},"
		       "{\"id\":\"b\",\"type\":\"relu\",\"inputs\":[\"a\"]},"
		       "{\"id\":\"s\",\"type\":\"add\",\"inputs\":[\"a\",\"b\"]}",
		       "s");
	cr_assert_eq(parse(&m, t), 0, "%s", util_last_error());
	free(t);
	cr_assert_eq(model_alloc(&m, 2, 1), 0);
	cr_assert_eq(ops_ctx_init(&ctx, "ref", 1, 1), 0, "%s", util_last_error());
	float x[2 * 4 * 4 * 2], dz[2 * 2];
	for (size_t i = 0; i < sizeof(x) / sizeof(x[0]); i++)
		x[i] = (float)i / 8 - 1;
	for (size_t i = 0; i < 4; i++)
		dz[i] = 0.25f * (float)i - 0.3f;
	cr_assert_eq(model_forward(&m, &ctx, x, 2, 1), 0, "%s", util_last_error());
	cr_assert_eq(model_backward(&m, &ctx, x, 2, dz), 0, "%s", util_last_error());
	struct ops_backend failing = *ctx.be;
	failing.accumulate = accumulate_fails;
	ctx.be = &failing;
	util_set_quiet(1);
	cr_assert_eq(model_backward(&m, &ctx, x, 2, dz), -1, "a failed accumulate went unnoticed");
	cr_assert(strstr(util_last_error(), "accumulating the gradient of 'a' failed"), "%s",
		  util_last_error());
	ctx.be = ops_backend_find("ref");
	model_release(&m, &ctx);
	ops_ctx_release(&ctx);
}

/* A fixed-seed training run of resnet_small on the cpu backend, with the
 * plan the trainer makes for it (batchnorm outputs recomputed in the
 * backward: memplan.h) or one that keeps every output (keep_grads): the
 * losses of its steps and the state block after them. */
struct cpu_run {
	double loss[3];
	char *state;
	size_t state_bytes, recomputed;
};

static void train_cpu(const char *precision, int keep_all, struct cpu_run *r)
{
	struct model m;
	struct ops_ctx ctx;
	char *path = xstrfmt("%s/tests/fixtures/arch/resnet_small.json",
			     getenv("AAH_ROOT") ? getenv("AAH_ROOT") : ".");
	cr_assert_eq(model_load(&m, path), 0, "%s", util_last_error());
	free(path);
	cr_assert_eq(ops_ctx_init(&ctx, "cpu", 1, 1), 0, "%s", util_last_error());
	cr_assert_geq(ctx.be->set_precision(&ctx, precision), 0, "%s", util_last_error());
	enum { BATCH = 8 };
	struct memplan p;
	cr_assert_eq(memplan_build(&p, &m, BATCH, &ctx, keep_all), 0, "%s", util_last_error());
	r->recomputed = p.acts_recomputed_unshared;
	cr_assert_eq(model_alloc_planned(&m, &p, 5), 0, "%s", util_last_error());
	size_t nx = BATCH * ops_shape_size(&m.input);
	float *x = xmalloc(nx * sizeof(float));
	float *dz = xmalloc((size_t)BATCH * m.num_classes * sizeof(float));
	int y[BATCH];
	for (size_t i = 0; i < nx; i++)
		x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
	for (int i = 0; i < BATCH; i++)
		y[i] = (i * 3) % m.num_classes;
	for (int step = 0; step < 3; step++) {
		long correct = 0;
		ctx.step = (uint64_t)step;
		r->loss[step] = 0;
		cr_assert_eq(model_forward(&m, &ctx, x, BATCH, 1), 0, "%s", util_last_error());
		cr_assert_eq(ctx.be->loss(&ctx, BATCH, m.num_classes, model_logits(&m), y, 0.1f, 1.0f,
					  dz, &r->loss[step], &correct),
			     0);
		cr_assert_eq(ops_loss_read(&ctx, &r->loss[step], &correct), 0, "%s",
			     util_last_error());
		cr_assert_eq(model_backward(&m, &ctx, x, BATCH, dz), 0, "%s", util_last_error());
		cr_assert_eq(model_update(&m, &ctx, 0.05f, 0.9f, 1e-4f), 0, "%s", util_last_error());
	}
	r->state_bytes = m.state_bytes;
	r->state = xmalloc(m.state_bytes);
	memcpy(r->state, m.block, m.state_bytes);
	model_release(&m, &ctx);
	ops_ctx_release(&ctx);
	free(x);
	free(dz);
}

Test(model, recomputed_batchnorm_trains_as_keeping_every_output, .timeout = 120)
{
	const char *precisions[] = { "fp32", "bf16" };
	for (size_t k = 0; k < ARRAY_SIZE(precisions); k++) {
		struct cpu_run a, b;
		train_cpu(precisions[k], 0, &a);
		train_cpu(precisions[k], 1, &b);
		cr_assert_gt(a.recomputed, 0, "%s: the cpu plan recomputes no batchnorm output",
			     precisions[k]);
		cr_assert_eq(b.recomputed, 0);
		for (int s = 0; s < 3; s++)
			cr_assert(!memcmp(&a.loss[s], &b.loss[s], sizeof(double)),
				  "%s: step %d's loss %.17g recomputing, %.17g keeping every output",
				  precisions[k], s, a.loss[s], b.loss[s]);
		cr_assert_eq(a.state_bytes, b.state_bytes);
		cr_assert(!memcmp(a.state, b.state, a.state_bytes),
			  "%s: the weights, gradients or statistics differ after 3 steps",
			  precisions[k]);
		free(a.state);
		free(b.state);
	}
}
