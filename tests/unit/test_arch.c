/* Unit tests for common/arch (aah-arch/1): every arch file in the repository
 * parses; the reader accepts exactly what docs/schemas/arch.schema.json
 * accepts (python3-jsonschema judges the same documents); errors name the
 * file and the layer; shapes, parameters and FLOPs of a net computed by
 * hand; and tuner graph -> arch.json -> arch -> tuner graph is exact. */
#include <criterion/criterion.h>
#include <ftw.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arch.h"
#include "fileio.h"
#include "jsonfile.h"
#include "runner/tuner/graph.h"
#include "runner/tuner/morph.h"
#include "util.h"

static char tmpdir[64];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/aah-arch-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	util_set_quiet(1);
}

static void teardown(void)
{
	fileio_remove_tree(tmpdir);
}

TestSuite(arch, .init = setup, .fini = teardown);

static const char *root(void)
{
	return getenv("AAH_ROOT") ? getenv("AAH_ROOT") : ".";
}

static int parse_text(struct arch *a, const char *text, const char *file)
{
	cJSON *doc = cJSON_Parse(text);
	cr_assert_not_null(doc, "bad test JSON: %s", text);
	int rc = arch_parse(a, doc, file);
	cJSON_Delete(doc);
	return rc;
}

/* python3-jsonschema's verdict on every file named in paths (n of them):
 * valid[i] = 1 when the schema accepts paths[i]. */
static void schema_verdicts(char *const *paths, int n, int *valid)
{
	char *schema = xstrfmt("%s/docs/schemas/arch.schema.json", root());
	char *out = xstrfmt("%s/verdicts.txt", tmpdir);
	const char *prog =
		"import json, sys, jsonschema\n"
		"s = json.load(open(sys.argv[1]))\n"
		"s.pop('$id', None)  # a relative $id breaks local $ref resolution\n"
		"v = jsonschema.Draft7Validator(s)\n"
		"with open(sys.argv[2], 'w') as out:\n"
		"    for f in sys.argv[3:]:\n"
		"        out.write('%d\\n' % v.is_valid(json.load(open(f))))\n";
	char **argv = xcalloc((size_t)n + 6, sizeof(char *));
	argv[0] = "/usr/bin/python3";
	argv[1] = "-c";
	argv[2] = (char *)prog;
	argv[3] = schema;
	argv[4] = out;
	for (int i = 0; i < n; i++)
		argv[5 + i] = paths[i];
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "python3-jsonschema failed (status %d)",
		  WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	FILE *f = fopen(out, "r");
	cr_assert_not_null(f);
	for (int i = 0; i < n; i++)
		cr_assert_eq(fscanf(f, "%d", &valid[i]), 1, "no verdict for %s", paths[i]);
	fclose(f);
	free(argv);
	free(out);
	free(schema);
}

/* ---- every arch file of the repository ------------------------------------- */

static char *found[256];
static int nfound;

static int collect(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	size_t n = strlen(path);
	cJSON *doc = NULL;
	if (flag != FTW_F || n < 5 || strcmp(path + n - 5, ".json") || jsonfile_read(path, &doc))
		return 0;
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(doc, "format");
	if (cJSON_IsString(f) && !strncmp(f->valuestring, "aah-arch/", 9) && nfound < 256)
		found[nfound++] = xstrdup(path);
	cJSON_Delete(doc);
	return 0;
}

Test(arch, every_arch_file_in_the_repository_parses_and_fits_the_schema)
{
	char *dirs[2] = { xstrfmt("%s/examples", root()), xstrfmt("%s/tests/fixtures", root()) };
	nfound = 0;
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(nftw(dirs[i], collect, 16, FTW_PHYS), 0, "cannot walk %s", dirs[i]);
		free(dirs[i]);
	}
	/* examples/fashion-mnist-cnn.json and tests/fixtures/arch/{cnn2,cnn_nobn,resnet_small}.json */
	cr_assert_geq(nfound, 4, "only %d arch files found", nfound);
	int *valid = xcalloc((size_t)nfound, sizeof(int));
	schema_verdicts(found, nfound, valid);
	for (int i = 0; i < nfound; i++) {
		struct arch a;
		cr_assert_eq(arch_load(&a, found[i]), 0, "%s", util_last_error());
		cr_assert(valid[i], "the schema rejects %s", found[i]);
		cr_assert_gt(a.flops_fwd, 0, "%s", found[i]);
		cr_assert_eq(a.layers[a.output].out.c, a.num_classes, "%s", found[i]);
		arch_release(&a);
		free(found[i]);
	}
	free(valid);
}

/* ---- the reader and the schema agree ---------------------------------------- */

/* One document: input 8x8x3 -> first layer (id `id`, body `first`) ->
 * relu -> global_avg_pool -> dense(2), with the parts a case changes. */
struct schema_case {
	int valid;                /* what both the schema and arch_parse must say */
	const char *first, *id;   /* the first layer (NULL: a conv2d "c") */
	const char *format, *classes, *input_extra, *top_extra;
};

static char *case_text(const struct schema_case *c)
{
	const char *id = c->id ? c->id : "c";
	return xstrfmt("{\"format\":\"%s\",\"input\":{\"height\":8,\"width\":8,\"channels\":3%s},"
		       "\"num_classes\":%s,\"output\":\"d\"%s,\"layers\":[{\"id\":\"%s\",%s},"
		       "{\"id\":\"r\",\"type\":\"relu\",\"inputs\":[\"%s\"]},"
		       "{\"id\":\"g\",\"type\":\"global_avg_pool\",\"inputs\":[\"r\"]},"
		       "{\"id\":\"d\",\"type\":\"dense\",\"units\":2,\"inputs\":[\"g\"]}]}",
		       c->format ? c->format : "aah-arch/1", c->input_extra ? c->input_extra : "",
		       c->classes ? c->classes : "2", c->top_extra ? c->top_extra : "", id,
		       c->first ? c->first
				: "\"type\":\"conv2d\",\"inputs\":[\"input\"],\"filters\":4,\"kernel\":3",
		       id);
}

#define CONV "\"type\":\"conv2d\",\"inputs\":[\"input\"],"
#define POOL "\"type\":\"maxpool\",\"inputs\":[\"input\"],"
#define BN "\"type\":\"batchnorm\",\"inputs\":[\"input\"]"
#define DROP "\"type\":\"dropout\",\"inputs\":[\"input\"]"

static const struct schema_case cases[] = {
	{ 1, NULL, NULL, NULL, NULL, NULL, NULL },
	{ 1, CONV "\"filters\":4,\"kernel\":3,\"stride\":2,\"padding\":\"valid\",\"bias\":false", NULL, NULL, NULL, NULL, NULL },
	{ 1, CONV "\"filters\":65536,\"kernel\":31,\"stride\":31", NULL, NULL, NULL, NULL, NULL },
	{ 0, CONV "\"kernel\":3", NULL, NULL, NULL, NULL, NULL },
	{ 0, CONV "\"filters\":0,\"kernel\":3", NULL, NULL, NULL, NULL, NULL },
	{ 0, CONV "\"filters\":65537,\"kernel\":3", NULL, NULL, NULL, NULL, NULL },
	{ 0, CONV "\"filters\":4,\"kernel\":32", NULL, NULL, NULL, NULL, NULL },
	{ 0, CONV "\"filters\":4,\"kernel\":2.5", NULL, NULL, NULL, NULL, NULL },
	{ 1, CONV "\"filters\":4,\"kernel\":3.0", NULL, NULL, NULL, NULL, NULL },
	{ 0, CONV "\"filters\":4,\"kernel\":3,\"stride\":0", NULL, NULL, NULL, NULL, NULL },
	{ 0, CONV "\"filters\":4,\"kernel\":3,\"stride\":null", NULL, NULL, NULL, NULL, NULL },
	{ 0, CONV "\"filters\":4,\"kernel\":3,\"padding\":\"full\"", NULL, NULL, NULL, NULL, NULL },
	{ 0, CONV "\"filters\":4,\"kernel\":3,\"bias\":1", NULL, NULL, NULL, NULL, NULL },
	{ 0, CONV "\"filters\":4,\"kernel\":3,\"units\":4", NULL, NULL, NULL, NULL, NULL },
	{ 0, CONV "\"filters\":\"4\",\"kernel\":3", NULL, NULL, NULL, NULL, NULL },
	{ 1, POOL "\"kernel\":2", NULL, NULL, NULL, NULL, NULL },
	{ 1, POOL "\"kernel\":3,\"stride\":1,\"padding\":\"same\"", NULL, NULL, NULL, NULL, NULL },
	{ 0, POOL "\"stride\":2", NULL, NULL, NULL, NULL, NULL },
	{ 0, POOL "\"kernel\":2,\"bias\":true", NULL, NULL, NULL, NULL, NULL },
	{ 1, "\"type\":\"avgpool\",\"inputs\":[\"input\"],\"kernel\":2", NULL, NULL, NULL, NULL, NULL },
	{ 1, BN, NULL, NULL, NULL, NULL, NULL },
	{ 1, BN ",\"epsilon\":0.001,\"momentum\":0", NULL, NULL, NULL, NULL, NULL },
	{ 1, BN ",\"momentum\":1", NULL, NULL, NULL, NULL, NULL },
	{ 0, BN ",\"epsilon\":0", NULL, NULL, NULL, NULL, NULL },
	{ 0, BN ",\"momentum\":1.5", NULL, NULL, NULL, NULL, NULL },
	{ 0, BN ",\"rate\":0.5", NULL, NULL, NULL, NULL, NULL },
	{ 1, DROP ",\"rate\":0", NULL, NULL, NULL, NULL, NULL },
	{ 1, DROP ",\"rate\":0.999", NULL, NULL, NULL, NULL, NULL },
	{ 0, DROP, NULL, NULL, NULL, NULL, NULL },
	{ 0, DROP ",\"rate\":1", NULL, NULL, NULL, NULL, NULL },
	{ 0, DROP ",\"rate\":-0.1", NULL, NULL, NULL, NULL, NULL },
	{ 1, "\"type\":\"relu\",\"inputs\":[\"input\"]", NULL, NULL, NULL, NULL, NULL },
	{ 0, "\"type\":\"relu\",\"inputs\":[\"input\"],\"kernel\":3", NULL, NULL, NULL, NULL, NULL },
	{ 0, "\"type\":\"relu\",\"inputs\":[\"input\",\"input\"]", NULL, NULL, NULL, NULL, NULL },
	{ 0, "\"type\":\"relu\",\"inputs\":[]", NULL, NULL, NULL, NULL, NULL },
	{ 0, "\"type\":\"relu\",\"inputs\":[3]", NULL, NULL, NULL, NULL, NULL },
	{ 0, "\"type\":\"relu\",\"inputs\":\"input\"", NULL, NULL, NULL, NULL, NULL },
	{ 0, "\"type\":\"relu\"", NULL, NULL, NULL, NULL, NULL },
	{ 0, "\"type\":\"softmax\",\"inputs\":[\"input\"]", NULL, NULL, NULL, NULL, NULL },
	{ 0, "\"inputs\":[\"input\"]", NULL, NULL, NULL, NULL, NULL },
	{ 1, "\"type\":\"add\",\"inputs\":[\"input\",\"input\"]", NULL, NULL, NULL, NULL, NULL },
	{ 1, "\"type\":\"concat\",\"inputs\":[\"input\",\"input\",\"input\"]", NULL, NULL, NULL, NULL, NULL },
	{ 0, "\"type\":\"add\",\"inputs\":[\"input\"]", NULL, NULL, NULL, NULL, NULL },
	{ 0, "\"type\":\"concat\",\"inputs\":[\"input\",\"input\"],\"axis\":3", NULL, NULL, NULL, NULL, NULL },
	{ 1, NULL, "x.y-z_1", NULL, NULL, NULL, NULL },
	{ 1, NULL, "_01234567890123456789012345678901234567890123456789012345678901a", NULL, NULL, NULL, NULL },
	{ 0, NULL, "_01234567890123456789012345678901234567890123456789012345678901ab", NULL, NULL, NULL, NULL },
	{ 0, NULL, "1abc", NULL, NULL, NULL, NULL },
	{ 0, NULL, "a b", NULL, NULL, NULL, NULL },
	{ 0, NULL, "input", NULL, NULL, NULL, NULL },
	{ 0, NULL, NULL, "aah-arch/2", NULL, NULL, NULL },
	{ 0, NULL, NULL, "aah-arch/1.1", NULL, NULL, NULL },
	{ 0, NULL, NULL, NULL, "1", NULL, NULL },
	{ 0, NULL, NULL, NULL, "100001", NULL, NULL },
	{ 0, NULL, NULL, NULL, NULL, ",\"depth\":1", NULL },
	{ 1, NULL, NULL, NULL, NULL, NULL, ",\"meta\":{\"parent\":3}" },
	{ 0, NULL, NULL, NULL, NULL, NULL, ",\"meta\":\"from trial 3\"" },
	{ 0, NULL, NULL, NULL, NULL, NULL, ",\"comment\":\"x\"" },
};

Test(arch, reader_accepts_exactly_what_the_schema_accepts)
{
	int n = (int)ARRAY_SIZE(cases);
	char **paths = xcalloc((size_t)n, sizeof(char *));
	int *valid = xcalloc((size_t)n, sizeof(int));
	for (int i = 0; i < n; i++) {
		char *text = case_text(&cases[i]);
		paths[i] = xstrfmt("%s/case%02d.json", tmpdir, i);
		cr_assert_eq(fileio_write_atomic(paths[i], text, strlen(text)), 0);
		free(text);
	}
	schema_verdicts(paths, n, valid);
	for (int i = 0; i < n; i++) {
		struct arch a;
		int ok = arch_load(&a, paths[i]) == 0;
		cr_assert_eq(valid[i], cases[i].valid, "case %d: the schema says %d", i, valid[i]);
		cr_assert_eq(ok, cases[i].valid, "case %d: arch_load says %d (%s)", i, ok,
			     ok ? "" : util_last_error());
		arch_release(&a);
		free(paths[i]);
	}
	free(valid);
	free(paths);
}

/* The enum and its names are the schema's "type" enum, in its order. */
Test(arch, type_names_are_the_schema_enum)
{
	char *path = xstrfmt("%s/docs/schemas/arch.schema.json", root());
	cJSON *schema;
	cr_assert_eq(jsonfile_read(path, &schema), 0, "%s", util_last_error());
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(schema, "definitions");
	e = cJSON_GetObjectItemCaseSensitive(e, "layer");
	e = cJSON_GetObjectItemCaseSensitive(e, "properties");
	e = cJSON_GetObjectItemCaseSensitive(e, "type");
	e = cJSON_GetObjectItemCaseSensitive(e, "enum");
	cr_assert_eq(cJSON_GetArraySize(e), ARCH_NTYPES);
	for (int t = 0; t < ARCH_NTYPES; t++) {
		const char *name = cJSON_GetArrayItem(e, t)->valuestring;
		cr_assert_str_eq(arch_type_name(t), name);
		cr_assert_eq(arch_type_parse(name), t);
	}
	cr_assert_eq(arch_type_parse("softmax"), -1);
	cr_assert_str_eq(arch_type_name(ARCH_NTYPES), "?");
	cJSON_Delete(schema);
	free(path);
}

/* ---- errors name the file and the layer --------------------------------------- */

#define HEAD "{\"format\":\"aah-arch/1\",\"input\":{\"height\":8,\"width\":8,\"channels\":3},\"num_classes\":2,"
#define TAIL "{\"id\":\"g\",\"type\":\"global_avg_pool\",\"inputs\":[\"r\"]}," \
	     "{\"id\":\"d\",\"type\":\"dense\",\"units\":2,\"inputs\":[\"g\"]}]}"

Test(arch, bad_files_name_the_file_and_the_layer)
{
	const struct { const char *text, *want; } bad[] = {
		{ HEAD "\"output\":\"d\",\"layers\":[{\"id\":\"r\",\"type\":\"softmax\",\"inputs\":[\"input\"]}," TAIL,
		  "layer 'r': unknown type \"softmax\"" },
		{ HEAD "\"output\":\"d\",\"layers\":[{\"id\":\"r\",\"type\":\"conv2d\",\"kernel\":3,\"inputs\":[\"input\"]}," TAIL,
		  "layer 'r': missing field \"filters\"" },
		{ HEAD "\"output\":\"d\",\"layers\":[{\"id\":\"r\",\"type\":\"relu\",\"inputs\":[\"nowhere\"]}," TAIL,
		  "layer 'r': input 'nowhere' is not a layer" },
		{ HEAD "\"output\":\"d\",\"layers\":[{\"id\":\"r\",\"type\":\"relu\",\"inputs\":[\"d\"]}," TAIL,
		  "part of a cycle" },
		{ HEAD "\"output\":\"d\",\"layers\":[{\"id\":\"c\",\"type\":\"conv2d\",\"filters\":4,\"kernel\":3,\"inputs\":[\"input\"]},"
		  "{\"id\":\"r\",\"type\":\"add\",\"inputs\":[\"c\",\"input\"]}," TAIL,
		  "layer 'r': add needs identical shapes, got 8x8x4 and 8x8x3" },
		{ HEAD "\"output\":\"d\",\"layers\":[{\"id\":\"x\",\"type\":\"relu\",\"inputs\":[\"input\"]},"
		  "{\"id\":\"r\",\"type\":\"relu\",\"inputs\":[\"input\"]}," TAIL,
		  "layer 'x': its output never reaches the output layer 'd'" },
		{ HEAD "\"output\":\"g\",\"layers\":[{\"id\":\"r\",\"type\":\"relu\",\"inputs\":[\"input\"]}," TAIL,
		  "layer 'g': the output must be a dense layer with 2 units" },
		{ HEAD "\"output\":\"d\",\"layers\":[{\"id\":\"r\",\"type\":\"relu\",\"inputs\":[\"input\"]},"
		  "{\"type\":\"relu\",\"inputs\":[\"r\"]}," TAIL,
		  "layer #2: missing field \"id\"" },
		{ HEAD "\"output\":\"d\",\"layers\":[3," TAIL, "layer #1: not an object" },
		{ HEAD "\"output\":\"d\",\"layers\":[{\"id\":\"r\",\"type\":\"relu\",\"inputs\":[\"input\"]},"
		  "{\"id\":\"r\",\"type\":\"relu\",\"inputs\":[\"input\"]}," TAIL,
		  "layer 'r': duplicate id (layer #2)" },
		{ HEAD "\"output\":\"d\",\"layers\":[{\"id\":\"r\",\"type\":\"maxpool\",\"kernel\":9,\"inputs\":[\"input\"]}," TAIL,
		  "layer 'r': kernel 9 is larger than its input (8x8)" },
		{ HEAD "\"output\":\"d\",\"layers\":[{\"id\":\"r\",\"type\":\"relu\",\"inputs\":[\"input\"],\"rate\":1}," TAIL,
		  "layer 'r': field \"rate\" is not allowed for type relu" },
		{ HEAD "\"output\":\"nope\",\"layers\":[{\"id\":\"r\",\"type\":\"relu\",\"inputs\":[\"input\"]}," TAIL,
		  "output 'nope' is not a layer" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char *path = xstrfmt("%s/bad%02zu.json", tmpdir, i);
		struct arch a;
		cr_assert_eq(fileio_write_atomic(path, bad[i].text, strlen(bad[i].text)), 0);
		cr_assert_eq(arch_load(&a, path), -1, "case %zu accepted", i);
		const char *err = util_last_error();
		cr_assert_eq(strncmp(err, path, strlen(path)), 0, "case %zu: '%s' does not start with the file",
			     i, err);
		cr_assert_not_null(strstr(err, bad[i].want), "case %zu: '%s' lacks '%s'", i, err, bad[i].want);
		cr_assert_eq(a.n_layers, 0, "case %zu: a failed read keeps layers", i);
		free(path);
	}
}

/* ---- a net computed by hand ---------------------------------------------------- */

/* Listed out of order on purpose: readers sort the layers. */
static const char *hand_net =
	"{\"format\":\"aah-arch/1\",\"input\":{\"height\":8,\"width\":8,\"channels\":3},\"num_classes\":3,"
	"\"output\":\"d\",\"layers\":["
	"{\"id\":\"d\",\"type\":\"dense\",\"units\":3,\"inputs\":[\"dr\"]},"
	"{\"id\":\"c1\",\"type\":\"conv2d\",\"filters\":4,\"kernel\":3,\"inputs\":[\"input\"]},"
	"{\"id\":\"b1\",\"type\":\"batchnorm\",\"inputs\":[\"c1\"]},"
	"{\"id\":\"r1\",\"type\":\"relu\",\"inputs\":[\"b1\"]},"
	"{\"id\":\"p1\",\"type\":\"maxpool\",\"kernel\":2,\"inputs\":[\"r1\"]},"
	"{\"id\":\"c2\",\"type\":\"conv2d\",\"filters\":6,\"kernel\":1,\"stride\":2,\"inputs\":[\"p1\"]},"
	"{\"id\":\"sk\",\"type\":\"avgpool\",\"kernel\":2,\"inputs\":[\"p1\"]},"
	"{\"id\":\"cat\",\"type\":\"concat\",\"inputs\":[\"c2\",\"sk\"]},"
	"{\"id\":\"c3\",\"type\":\"conv2d\",\"filters\":10,\"kernel\":1,\"inputs\":[\"cat\"]},"
	"{\"id\":\"a\",\"type\":\"add\",\"inputs\":[\"cat\",\"c3\"]},"
	"{\"id\":\"gap\",\"type\":\"global_avg_pool\",\"inputs\":[\"a\"]},"
	"{\"id\":\"dr\",\"type\":\"dropout\",\"rate\":0.5,\"inputs\":[\"gap\"]}]}";

static const struct {
	const char *id;
	int rank, h, w, c;
	double fwd, bwd;
	uint64_t weights, others;
} hand[] = {
	/* conv on the input: 2*3*3*3*4*8*8 forward; 3*3*3*4 * (2*8*8 + 2) backward */
	{ "c1", 4, 8, 8, 4, 13824, 108.0 * 130, 108, 4 },
	{ "b1", 4, 8, 8, 4, 7.0 * 256, 36, 0, 8 },            /* 7 HWC; 36; gamma, beta */
	{ "r1", 4, 8, 8, 4, 256, 0, 0, 0 },
	{ "p1", 4, 4, 4, 4, 256.0 * 4 / 4, 0, 0, 0 },         /* HWC k^2 / s^2 */
	/* same padding, stride 2: 4 -> 2; 2*1*1*4*6*2*2; 1*4*6 * (4*2*2 + 2) */
	{ "c2", 4, 2, 2, 6, 192, 24.0 * 18, 24, 6 },
	{ "sk", 4, 2, 2, 4, 64, 0, 0, 0 },
	{ "cat", 4, 2, 2, 10, 0, 0, 0, 0 },
	{ "c3", 4, 2, 2, 10, 800, 100.0 * 18, 100, 10 },
	{ "a", 4, 2, 2, 10, 40, 0, 0, 0 },
	{ "gap", 2, 1, 1, 10, 3 * 10 + 4 * 10, 0, 0, 0 },     /* (HW-1)C + 4C: a divide is 4 */
	{ "dr", 2, 1, 1, 10, 0, 0, 0, 0 },
	/* 2*10*3 + softmax 8*3 + 2 + 4*3; 4*10*3 + 2*11*3 */
	{ "d", 2, 1, 1, 3, 60 + 38, 120 + 66, 30, 3 },
};

Test(arch, shapes_params_and_flops_of_a_net_by_hand)
{
	struct arch a;
	cr_assert_eq(parse_text(&a, hand_net, "hand.json"), 0, "%s", util_last_error());
	double fwd = 0, bwd = 0;
	for (size_t k = 0; k < ARRAY_SIZE(hand); k++) {
		int i = arch_find(&a, hand[k].id);
		cr_assert_geq(i, 0, "no layer %s", hand[k].id);
		const struct arch_layer *l = &a.layers[i];
		cr_assert(l->out.rank == hand[k].rank && l->out.h == hand[k].h && l->out.w == hand[k].w &&
			  l->out.c == hand[k].c, "%s: %d (%dx%dx%d)", l->id, l->out.rank, l->out.h,
			  l->out.w, l->out.c);
		cr_assert_float_eq(l->flops_fwd, hand[k].fwd, 1e-9, "%s fwd %g", l->id, l->flops_fwd);
		cr_assert_float_eq(l->flops_bwd, hand[k].bwd, 1e-9, "%s bwd %g", l->id, l->flops_bwd);
		cr_assert_eq(l->weights, hand[k].weights, "%s", l->id);
		cr_assert_eq(l->others, hand[k].others, "%s", l->id);
		fwd += hand[k].fwd;
		bwd += hand[k].bwd;
	}
	cr_assert_float_eq(a.flops_fwd, 17392, 1e-9);
	cr_assert_float_eq(a.flops_bwd, 16494, 1e-9);
	cr_assert_float_eq(a.flops_fwd, fwd, 1e-9);
	cr_assert_float_eq(a.flops_bwd, bwd, 1e-9);
	/* "same", 3x3 stride 1 on 8: one row of padding each side */
	const struct arch_layer *c1 = &a.layers[arch_find(&a, "c1")];
	cr_assert(c1->pad_t == 1 && c1->pad_b == 1 && c1->pad_l == 1 && c1->pad_r == 1);
	/* the order puts inputs first and keeps the file's order otherwise */
	int pos[16];
	for (int k = 0; k < a.n_layers; k++)
		pos[a.order[k]] = k;
	for (int i = 0; i < a.n_layers; i++)
		for (int j = 0; j < a.layers[i].n_in; j++)
			if (a.layers[i].in[j])
				cr_assert_lt(pos[a.layers[i].in[j] - 1], pos[i], "%s", a.layers[i].id);
	cr_assert_str_eq(a.layers[a.order[0]].id, "c1");
	cr_assert_str_eq(a.layers[a.order[a.n_layers - 1]].id, "d");

	/* the tuner counts the same: conv and dense multiply-adds, all params */
	cJSON *doc = cJSON_Parse(hand_net);
	struct tgraph g;
	cr_assert_eq(tgraph_from_json(&g, doc, "hand.json"), 0, "%s", util_last_error());
	cr_assert_float_eq(tgraph_flops(&g), 13824 + 192 + 800 + 60, 1e-9);
	cr_assert_eq(tgraph_params(&g), 262 + 31);
	tgraph_release(&g);
	cJSON_Delete(doc);
	arch_release(&a);
}

/* The trainer applies tuner hyperparameters between read and check. */
Test(arch, check_after_an_edit_recomputes_everything)
{
	cJSON *doc = cJSON_Parse(hand_net);
	struct arch a;
	cr_assert_eq(arch_read(&a, doc, "hand.json"), 0, "%s", util_last_error());
	cr_assert_null(a.order, "arch_read checks nothing");
	int c1 = arch_find(&a, "c1");
	a.layers[c1].op.kernel = 5;
	cr_assert_eq(arch_check(&a, "hand.json"), 0, "%s", util_last_error());
	cr_assert_float_eq(a.layers[c1].flops_fwd, 2.0 * 25 * 3 * 4 * 64, 1e-9);
	cr_assert_eq(a.layers[c1].pad_t, 2);
	a.layers[c1].op.kernel = 40;
	cr_assert_eq(arch_check(&a, "hand.json"), -1);
	cr_assert_not_null(strstr(util_last_error(), "hand.json: layer 'c1': field \"kernel\""), "%s",
			   util_last_error());
	arch_release(&a);
	cJSON_Delete(doc);
}

/* ---- tuner graph -> arch.json -> arch -> tuner graph ------------------------------- */

static void same_arch(const struct arch *x, const struct arch *y)
{
	cr_assert(!memcmp(&x->input, &y->input, sizeof(x->input)) && x->num_classes == y->num_classes);
	cr_assert_eq(x->n_layers, y->n_layers);
	cr_assert_eq(x->output, y->output);
	for (int i = 0; i < x->n_layers; i++) {
		const struct arch_layer *a = &x->layers[i], *b = &y->layers[i];
		cr_assert_str_eq(a->id, b->id);
		cr_assert(a->op.type == b->op.type && a->op.units == b->op.units &&
			  a->op.kernel == b->op.kernel && a->op.stride == b->op.stride &&
			  a->op.padding == b->op.padding && a->op.bias == b->op.bias &&
			  a->op.rate == b->op.rate && a->op.eps == b->op.eps &&
			  a->op.momentum == b->op.momentum, "layer %s differs", a->id);
		cr_assert_eq(a->n_in, b->n_in);
		cr_assert(!memcmp(a->in, b->in, (size_t)a->n_in * sizeof(int)), "layer %s inputs", a->id);
	}
}

static void round_trip(const struct tgraph *g)
{
	struct arch from_graph, parsed;
	struct tgraph back;
	tgraph_to_arch(g, &from_graph);
	cJSON *d = arch_to_json(&from_graph);
	char *path = xstrfmt("%s/arch.json", tmpdir);
	cr_assert_eq(jsonfile_write(path, d), 0);
	cr_assert_eq(arch_load(&parsed, path), 0, "%s", util_last_error());
	same_arch(&from_graph, &parsed);
	/* every shape the tuner inferred, the reader infers (layers in topo order) */
	int *order = xmalloc((size_t)g->nlayers * sizeof(int));
	cr_assert_eq(tgraph_topo(g, order), parsed.n_layers);
	for (int i = 0; i < parsed.n_layers; i++)
		cr_assert(!memcmp(&parsed.layers[i].out, &g->shapes[order[i] + 1], sizeof(struct arch_shape)),
			  "layer %s shape", parsed.layers[i].id);
	free(order);
	cr_assert_eq(tgraph_from_arch(&back, &parsed, path), 0, "%s", util_last_error());
	cr_assert_eq(tgraph_hash(&back), tgraph_hash(g));
	cr_assert_eq(tgraph_params(&back), tgraph_params(g));
	cr_assert_float_eq(tgraph_flops(&back), tgraph_flops(g), 1e-9);
	cJSON *d2 = arch_to_json(&parsed);
	cr_assert(cJSON_Compare(d, d2, 1), "write(read(write(g))) differs from write(g)");
	cJSON_Delete(d2);
	cJSON_Delete(d);
	tgraph_release(&back);
	arch_release(&parsed);
	arch_release(&from_graph);
	free(path);
}

Test(arch, tuner_graph_round_trip_is_exact, .timeout = 60)
{
	struct morph_limits lim = { .max_layers = 150, .max_params = 1u << 26 };
	struct trng r;
	trng_seed(&r, 12, 1);
	for (int chain = 0; chain < 12; chain++) {
		struct tgraph g;
		if (chain == 0)
			cr_assert_eq(tmodel_resnet50(&g, 64, 3, 100), 0);
		else
			cr_assert_eq(tmodel_cnn(&g, 28 + 4 * (chain % 2), 1 + 2 * (chain % 2), 10), 0);
		round_trip(&g);
		for (int step = 0; step < 6; step++) {
			cr_assert_geq(morph_apply(&g, (int)trng_below(&r, MORPH_NKINDS), &r, &lim), 0);
			round_trip(&g);
		}
		tgraph_release(&g);
	}
}

/* Non-default batchnorm fields survive; defaults are left out as written. */
Test(arch, writer_keeps_batchnorm_fields_that_differ_from_the_defaults)
{
	const char *text = HEAD "\"output\":\"d\",\"layers\":[{\"id\":\"r\",\"type\":\"batchnorm\","
			   "\"epsilon\":0.001,\"momentum\":0,\"inputs\":[\"input\"]}," TAIL;
	struct arch a, b;
	cr_assert_eq(parse_text(&a, text, "bn.json"), 0, "%s", util_last_error());
	cJSON *d = arch_to_json(&a);
	const cJSON *l = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(d, "layers"), 0);
	cr_assert_float_eq(cJSON_GetObjectItemCaseSensitive(l, "epsilon")->valuedouble, 0.001, 1e-12);
	cr_assert_float_eq(cJSON_GetObjectItemCaseSensitive(l, "momentum")->valuedouble, 0, 1e-12);
	cr_assert_eq(arch_parse(&b, d, "written"), 0, "%s", util_last_error());
	cr_assert(b.layers[0].op.eps == 0.001 && b.layers[0].op.momentum == 0);
	struct arch_op def;
	arch_op_init(&def, ARCH_BATCHNORM);
	b.layers[0].op = def;
	cJSON *d2 = arch_to_json(&b);
	l = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(d2, "layers"), 0);
	cr_assert_null(cJSON_GetObjectItemCaseSensitive(l, "epsilon"));
	cr_assert_null(cJSON_GetObjectItemCaseSensitive(l, "momentum"));
	cJSON_Delete(d2);
	cJSON_Delete(d);
	arch_release(&b);
	arch_release(&a);
}
