/* Unit tests for the tuner's graph IR: initial models, aah-arch/1 writing
 * (validated against docs/schemas/arch.schema.json by python3-jsonschema),
 * reading, hashing, descriptors and random morphism chains. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fileio.h"
#include "jsonfile.h"
#include "runner/tuner/graph.h"
#include "runner/tuner/morph.h"
#include "util.h"

static char tmpdir[64];
static int nfiles;

static void setup(void)
{
	strcpy(tmpdir, "/tmp/aah-tgraph-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	nfiles = 0;
	util_set_quiet(1);
}

static void teardown(void)
{
	fileio_remove_tree(tmpdir);
}

TestSuite(tuner_graph, .init = setup, .fini = teardown);

static void save(const struct tgraph *g)
{
	cJSON *d = tgraph_to_json(g, NULL);
	char *path = xstrfmt("%s/arch%05d.json", tmpdir, nfiles++);
	cr_assert_eq(jsonfile_write(path, d), 0);
	free(path);
	cJSON_Delete(d);
}

/* Validate every saved file against the schema in one python3 child. */
static void validate_saved(void)
{
	const char *root = getenv("AAH_ROOT") ? getenv("AAH_ROOT") : ".";
	char *schema = xstrfmt("%s/docs/schemas/arch.schema.json", root);
	const char *prog =
		"import json, sys, glob, jsonschema\n"
		"s = json.load(open(sys.argv[1]))\n"
		"s.pop('$id', None)  # a relative $id breaks local $ref resolution\n"
		"v = jsonschema.Draft7Validator(s)\n"
		"n = 0\n"
		"for f in sorted(glob.glob(sys.argv[2] + '/arch*.json')):\n"
		"    errs = list(v.iter_errors(json.load(open(f))))\n"
		"    if errs:\n"
		"        print(f, errs[0].message); sys.exit(1)\n"
		"    n += 1\n"
		"sys.exit(0 if n == int(sys.argv[3]) else 2)\n";
	char *count = xstrfmt("%d", nfiles);
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		char *argv[] = { "/usr/bin/python3", "-c", (char *)prog, schema, tmpdir, count, NULL };
		execv(argv[0], argv);
		_exit(127);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "python3 crashed");
	cr_assert_neq(WEXITSTATUS(st), 127, "cannot run /usr/bin/python3");
	cr_assert_eq(WEXITSTATUS(st), 0, "schema validation failed (%d files)", nfiles);
	free(count);
	free(schema);
}

static void roundtrip(struct tgraph *g)
{
	cJSON *d = tgraph_to_json(g, NULL);
	struct tgraph h;
	cr_assert_eq(tgraph_from_json(&h, d, "written"), 0, "%s", util_last_error());
	cr_assert_eq(tgraph_hash(&h), tgraph_hash(g));
	cr_assert_eq(tgraph_params(&h), tgraph_params(g));
	cJSON *d2 = tgraph_to_json(&h, NULL);
	cr_assert(cJSON_Compare(d, d2, 1), "write(read(write(g))) differs from write(g)");
	cJSON_Delete(d);
	cJSON_Delete(d2);
	tgraph_release(&h);
}

Test(tuner_graph, cnn_generator_shape_and_params)
{
	struct tgraph g;
	cr_assert_eq(tmodel_cnn(&g, 28, 1, 10), 0, "%s", util_last_error());
	cr_assert_eq(tgraph_size(&g), 17);
	/* convs 640 + 36928 + 36928, bns 2 + 128 + 128, dense 4160 + 650 */
	cr_assert_eq(tgraph_params(&g), 79564);
	/* 2 x (9*1*64*28*28 + 9*64*64*14*14 + 9*64*64*7*7 + 64*64 + 64*10) */
	cr_assert_float_eq(tgraph_flops(&g), 18976000.0, 0.5);
	cr_assert_eq(g.shapes[g.output + 1].rank, 2);
	cr_assert_eq(g.shapes[g.output + 1].c, 10);
	int chain[64];
	cr_assert_eq(tgraph_main_chain(&g, chain), 17);
	/* 28 -> 14 -> 7 -> 3 after three 2x2 valid pools */
	cr_assert_eq(g.shapes[chain[11] + 1].h, 3);
	save(&g);
	roundtrip(&g);
	tgraph_release(&g);
	validate_saved();
}

Test(tuner_graph, resnet50_matches_reference_params)
{
	struct tgraph g;
	/* v1.5, torchvision's (AIPerf's v1 start: test_nni_graph.c) */
	cr_assert_eq(tmodel_resnet50_v15(&g, 224, 3, 1000), 0, "%s", util_last_error());
	/* torchvision resnet50: 25,557,032 parameters (no conv bias) */
	cr_assert_eq(tgraph_params(&g), 25557032ULL);
	/* about 4.1 G multiply-adds, the figure published for ResNet-50 */
	cr_assert(tgraph_flops(&g) > 8.0e9 && tgraph_flops(&g) < 8.4e9, "%g", tgraph_flops(&g));
	struct tdesc d;
	tdesc_from_graph(&d, &g);
	cr_assert_eq(d.nskips, 16);
	int adds = 0;
	for (int i = 0; i < d.nlayers; i++)
		adds += d.layers[i].type == ARCH_ADD;
	cr_assert_eq(adds, 16);
	/* identity blocks start where the previous block ended (its relu) */
	for (int i = 0; i < d.nskips; i++)
		cr_assert(d.skips[i].a < d.skips[i].b);
	tdesc_release(&d);
	save(&g);
	roundtrip(&g);
	tgraph_release(&g);
	validate_saved();
}

Test(tuner_graph, reader_rejects_bad_graphs)
{
	const struct { const char *text, *want; } cases[] = {
		{ "{\"format\":\"aah-arch/1\",\"input\":{\"height\":8,\"width\":8,\"channels\":1},\"num_classes\":2,"
		  "\"layers\":[{\"id\":\"a\",\"type\":\"relu\",\"inputs\":[\"b\"]},{\"id\":\"b\",\"type\":\"relu\",\"inputs\":[\"a\"]},"
		  "{\"id\":\"g\",\"type\":\"global_avg_pool\",\"inputs\":[\"b\"]},{\"id\":\"d\",\"type\":\"dense\",\"units\":2,\"inputs\":[\"g\"]}],"
		  "\"output\":\"d\"}", "cycle" },
		{ "{\"format\":\"aah-arch/1\",\"input\":{\"height\":8,\"width\":8,\"channels\":1},\"num_classes\":2,"
		  "\"layers\":[{\"id\":\"d\",\"type\":\"dense\",\"units\":2,\"inputs\":[\"x\"]}],\"output\":\"d\"}", "'x'" },
		{ "{\"format\":\"aah-arch/1\",\"input\":{\"height\":8,\"width\":8,\"channels\":1},\"num_classes\":2,"
		  "\"layers\":[{\"id\":\"d\",\"type\":\"dense\",\"units\":2,\"inputs\":[\"input\"]}],\"output\":\"d\"}", "dense needs a rank-2 input" },
		{ "{\"format\":\"aah-arch/1\",\"input\":{\"height\":8,\"width\":8,\"channels\":1},\"num_classes\":3,"
		  "\"layers\":[{\"id\":\"f\",\"type\":\"flatten\",\"inputs\":[\"input\"]},{\"id\":\"d\",\"type\":\"dense\",\"units\":2,\"inputs\":[\"f\"]}],"
		  "\"output\":\"d\"}", "num_classes" },
		{ "{\"format\":\"aah-arch/1\",\"input\":{\"height\":8,\"width\":8,\"channels\":1},\"num_classes\":2,"
		  "\"layers\":[{\"id\":\"c\",\"type\":\"conv2d\",\"filters\":4,\"kernel\":3,\"inputs\":[\"input\"]},"
		  "{\"id\":\"a\",\"type\":\"add\",\"inputs\":[\"c\",\"input\"]},{\"id\":\"f\",\"type\":\"flatten\",\"inputs\":[\"a\"]},"
		  "{\"id\":\"d\",\"type\":\"dense\",\"units\":2,\"inputs\":[\"f\"]}],\"output\":\"d\"}", "add" },
		{ "{\"format\":\"aah-arch/2\",\"input\":{\"height\":8,\"width\":8,\"channels\":1},\"num_classes\":2,"
		  "\"layers\":[],\"output\":\"d\"}", "aah-arch" },
		{ "{\"format\":\"aah-arch/1\",\"input\":{\"height\":8,\"width\":8,\"channels\":1},\"num_classes\":2,"
		  "\"layers\":[{\"id\":\"c\",\"type\":\"softmax\",\"inputs\":[\"input\"]}],\"output\":\"c\"}", "softmax" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *d = NULL;
		cr_assert_eq(jsonfile_parse("t", cases[i].text, &d), 0);
		struct tgraph g;
		cr_assert_eq(tgraph_from_json(&g, d, "t"), -1, "case %zu accepted", i);
		cr_assert_not_null(strstr(util_last_error(), cases[i].want), "case %zu: %s", i,
				   util_last_error());
		cJSON_Delete(d);
	}
}

Test(tuner_graph, hash_ignores_ids_and_order_but_not_structure)
{
	const char *a = "{\"format\":\"aah-arch/1\",\"input\":{\"height\":8,\"width\":8,\"channels\":1},\"num_classes\":2,"
		"\"layers\":[{\"id\":\"c\",\"type\":\"conv2d\",\"filters\":4,\"kernel\":3,\"inputs\":[\"input\"]},"
		"{\"id\":\"g\",\"type\":\"global_avg_pool\",\"inputs\":[\"c\"]},{\"id\":\"d\",\"type\":\"dense\",\"units\":2,\"inputs\":[\"g\"]}],"
		"\"output\":\"d\"}";
	const char *b = "{\"format\":\"aah-arch/1\",\"input\":{\"height\":8,\"width\":8,\"channels\":1},\"num_classes\":2,"
		"\"layers\":[{\"id\":\"out\",\"type\":\"dense\",\"units\":2,\"inputs\":[\"pool\"]},"
		"{\"id\":\"pool\",\"type\":\"global_avg_pool\",\"inputs\":[\"x1\"]},"
		"{\"id\":\"x1\",\"type\":\"conv2d\",\"filters\":4,\"kernel\":3,\"stride\":1,\"inputs\":[\"input\"]}],"
		"\"output\":\"out\"}";
	const char *c = "{\"format\":\"aah-arch/1\",\"input\":{\"height\":8,\"width\":8,\"channels\":1},\"num_classes\":2,"
		"\"layers\":[{\"id\":\"c\",\"type\":\"conv2d\",\"filters\":5,\"kernel\":3,\"inputs\":[\"input\"]},"
		"{\"id\":\"g\",\"type\":\"global_avg_pool\",\"inputs\":[\"c\"]},{\"id\":\"d\",\"type\":\"dense\",\"units\":2,\"inputs\":[\"g\"]}],"
		"\"output\":\"d\"}";
	const char *texts[3] = { a, b, c };
	uint64_t h[3];
	for (int i = 0; i < 3; i++) {
		cJSON *d = NULL;
		struct tgraph g;
		cr_assert_eq(jsonfile_parse("t", texts[i], &d), 0);
		cr_assert_eq(tgraph_from_json(&g, d, "t"), 0, "%s", util_last_error());
		h[i] = tgraph_hash(&g);
		tgraph_release(&g);
		cJSON_Delete(d);
	}
	cr_assert_eq(h[0], h[1]);
	cr_assert_neq(h[0], h[2]);
}

static void check_chain_result(struct tgraph *g, const struct morph_limits *lim, uint64_t parent_hash)
{
	cr_assert_eq(tgraph_infer(g), 0, "%s", util_last_error());
	cr_assert(tgraph_size(g) <= lim->max_layers);
	cr_assert(tgraph_params(g) <= lim->max_params);
	cr_assert(lim->max_flops <= 0 || tgraph_flops(g) <= lim->max_flops);
	cr_assert_neq(tgraph_hash(g), parent_hash, "a morphism left the graph unchanged");
	struct tdesc d;
	tdesc_from_graph(&d, g);
	for (int i = 0; i < d.nskips; i++)
		cr_assert(d.skips[i].a < d.skips[i].b && d.skips[i].b <= d.nlayers);
	tdesc_release(&d);
}

Test(tuner_graph, random_morphism_chains_stay_valid, .timeout = 120)
{
	struct morph_limits lim = { .max_layers = 120, .max_params = 4u << 20 };
	struct trng r;
	trng_seed(&r, 2024, 1);
	int applied[MORPH_NKINDS] = { 0 }, total = 0, limited = 0;
	for (int chain = 0; chain < 400; chain++) {
		struct tgraph g;
		cr_assert_eq(tmodel_cnn(&g, chain % 2 ? 32 : 28, chain % 2 ? 3 : 1, 10), 0);
		for (int step = 0; step < 12; step++) {
			int kind = (int)trng_below(&r, MORPH_NKINDS);
			uint64_t before = tgraph_hash(&g);
			int rc = morph_apply(&g, kind, &r, &lim);
			cr_assert_geq(rc, 0);
			if (rc == 1) {
				limited++;
				cr_assert_eq(tgraph_hash(&g), before, "a refused morphism changed the graph");
				continue;
			}
			applied[kind]++;
			total++;
			check_chain_result(&g, &lim, before);
		}
		if (chain % 40 == 0) {
			roundtrip(&g);
			save(&g);
		}
		tgraph_release(&g);
	}
	for (int k = 0; k < MORPH_NKINDS; k++)
		cr_assert(applied[k] > 100, "%s applied only %d times", morph_name(k), applied[k]);
	cr_assert(total > 3000, "only %d morphisms applied (%d refused)", total, limited);
	cr_assert(limited > 0, "the limits never bit");
	validate_saved();
}

/* A FLOP limit refuses exactly the morphisms that would cross it. */
Test(tuner_graph, flop_limit_bounds_every_morphism, .timeout = 60)
{
	struct morph_limits lim = { .max_layers = 120, .max_params = 1u << 24 };
	struct trng r;
	trng_seed(&r, 7, 1);
	int applied = 0, refused = 0;
	for (int chain = 0; chain < 60; chain++) {
		struct tgraph g;
		cr_assert_eq(tmodel_cnn(&g, 28, 1, 10), 0);
		lim.max_flops = 2.0 * tgraph_flops(&g);
		for (int step = 0; step < 10; step++) {
			uint64_t before = tgraph_hash(&g);
			double cost = tgraph_flops(&g);
			int rc = morph_apply(&g, (int)trng_below(&r, MORPH_NKINDS), &r, &lim);
			cr_assert_geq(rc, 0);
			if (rc == 1) {
				refused++;
				cr_assert_eq(tgraph_hash(&g), before);
				cr_assert_float_eq(tgraph_flops(&g), cost, 0.5);
				continue;
			}
			applied++;
			check_chain_result(&g, &lim, before);
		}
		tgraph_release(&g);
	}
	cr_assert(applied > 50 && refused > 50, "applied %d, refused %d", applied, refused);
}

Test(tuner_graph, resnet_morphisms_stay_valid, .timeout = 120)
{
	struct tgraph base;
	cr_assert_eq(tmodel_resnet50(&base, 224, 3, 1000), 0);
	struct morph_limits lim = { .max_layers = 400, .max_params = 64u << 20 };
	struct trng r;
	trng_seed(&r, 7, 2);
	int ok = 0;
	for (int chain = 0; chain < 20; chain++) {
		struct tgraph g;
		tgraph_copy(&g, &base);
		for (int step = 0; step < 6; step++) {
			uint64_t before = tgraph_hash(&g);
			int rc = morph_apply(&g, (int)trng_below(&r, MORPH_NKINDS), &r, &lim);
			cr_assert_geq(rc, 0);
			if (rc == 0) {
				check_chain_result(&g, &lim, before);
				ok++;
			}
		}
		if (chain % 5 == 0) {
			roundtrip(&g);
			save(&g);
		}
		tgraph_release(&g);
	}
	cr_assert(ok > 60, "only %d ResNet morphisms applied", ok);
	tgraph_release(&base);
	validate_saved();
}

Test(tuner_graph, neighbours_are_distinct_valid_graphs)
{
	struct tgraph g, nb[8];
	int kinds[8];
	struct morph_limits lim = { .max_layers = 200, .max_params = 1u << 24 };
	struct trng r;
	trng_seed(&r, 3, 3);
	cr_assert_eq(tmodel_cnn(&g, 32, 3, 10), 0);
	int n = morph_neighbours(&g, &r, &lim, 8, nb, kinds);
	cr_assert_eq(n, 8);
	for (int i = 0; i < n; i++) {
		check_chain_result(&nb[i], &lim, tgraph_hash(&g));
		tgraph_release(&nb[i]);
	}
	tgraph_release(&g);
}
