/* nni_config.c: NNI's v2 experiment config -> aah's keys (nni_config.h).
 * The facts are NNI's (nni/experiment/config/: experiment_config.py,
 * training_service.py, training_services/local.py, algorithm.py,
 * utils/public.py): keys match without regard to case or underscores, a
 * duration is seconds or a number with s, m, h or d (rounded up to a
 * second), algorithm names match without regard to case. */
#include "runner/config/nni_config.h"
#include "util.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind {
	K_RENAME,        /* the value as it is, under aah's key */
	K_DURATION,      /* NNI's duration, in seconds under aah's key */
	K_IGNORE,        /* no effect in aah (note: why) */
	K_REFUSE,        /* refused (note: why) */
	K_V1,            /* NNI v1's key in a v2 file: refused (aah: v2's name for it) */
	K_TYPE,          /* experimentType: hpo */
	K_ALGORITHM,     /* tuner: or assessor: (aah: the section) */
	K_SERVICE,       /* trainingService */
	K_PLATFORM,      /* trainingService.platform */
	K_SPACE,         /* searchSpace: kept by the mapping (nni_config.search_space) */
	K_PER_GPU,       /* trainingService.maxTrialNumberPerGpu: 1 */
	K_REUSE,         /* trainingService.reuseMode: false */
};

struct v2_key {
	const char *name;         /* NNI's camelCase */
	enum kind kind;
	const char *aah;          /* aah's key (RENAME, DURATION, ALGORITHM); v2's name (V1) */
	const char *note;
	int marker;               /* a key only v2 has: the file is v2 */
};

#define TRIAL_COMMAND_NOTE "run as written, nothing appended: the trial reads parameter.cfg"
#define MANAGER_NOTE "no effect: aah's trials report through files on the shared tree, not to an address"

static const struct v2_key top_keys[] = {
	{ "experimentName", K_RENAME, "experimentName", NULL, 0 },
	{ "experimentType", K_TYPE, NULL, NULL, 1 },
	{ "searchSpaceFile", K_RENAME, "searchSpacePath", NULL, 1 },
	{ "searchSpace", K_SPACE, NULL, NULL, 1 },
	{ "trialCommand", K_RENAME, "trial.command", TRIAL_COMMAND_NOTE, 1 },
	{ "trialCodeDirectory", K_RENAME, "trial.codeDir", NULL, 1 },
	{ "trialConcurrency", K_RENAME, "trialConcurrency", NULL, 0 },
	{ "trialGpuNumber", K_RENAME, "trial.gpuNum", NULL, 1 },
	{ "maxExperimentDuration", K_DURATION, "maxExecDuration", NULL, 1 },
	{ "maxTrialNumber", K_RENAME, "maxTrialNum", NULL, 1 },
	{ "maxTrialDuration", K_DURATION, "trial.timeout", "an attempt past it is canceled and fails", 1 },
	{ "nniManagerIp", K_IGNORE, NULL, MANAGER_NOTE, 1 },
	{ "useAnnotation", K_RENAME, "useAnnotation", NULL, 0 },
	{ "debug", K_RENAME, "debug", NULL, 0 },
	{ "logLevel", K_RENAME, "logLevel", NULL, 0 },
	{ "experimentWorkingDirectory", K_RENAME, "workdir",
	  "experiments go to <it>/experiments/<id>", 1 },
	{ "tunerGpuIndices", K_IGNORE, NULL, "no effect: aah's tuners run on the CPU", 1 },
	{ "tuner", K_ALGORITHM, "tuner", NULL, 0 },
	{ "assessor", K_ALGORITHM, "assessor", NULL, 0 },
	{ "advisor", K_REFUSE, NULL, "is not taken: aah has no advisors (Hyperband, BOHB): give a tuner", 1 },
	{ "trainingService", K_SERVICE, NULL, NULL, 1 },
	{ "sharedStorage", K_REFUSE, NULL, "is not needed: aah's trials share the work directory "
	  "the backends mount (/userhome): set experimentWorkingDirectory there", 1 },
	/* NNI v1's names for what v2 names otherwise */
	{ "maxExecDuration", K_V1, "maxExperimentDuration", NULL, 0 },
	{ "maxTrialNum", K_V1, "maxTrialNumber", NULL, 0 },
	{ "trainingServicePlatform", K_V1, "trainingService.platform", NULL, 0 },
	{ "searchSpacePath", K_V1, "searchSpaceFile", NULL, 0 },
	{ NULL },
};

/* aah's trial: section in a v2 file: its own keys, less v1's. */
static const struct v2_key trial_keys[] = {
	{ "command", K_V1, "trialCommand", NULL, 0 },
	{ "codeDir", K_V1, "trialCodeDirectory", NULL, 0 },
	{ "gpuNum", K_V1, "trialGpuNumber", NULL, 0 },
	{ NULL },
};

static const struct v2_key algorithm_keys[] = {
	{ "name", K_RENAME, NULL, NULL, 0 },   /* builtinTunerName / builtinAssessorName */
	{ "classArgs", K_RENAME, "classArgs", NULL, 0 },
	{ "className", K_REFUSE, NULL, "names a custom algorithm, an NNI Python class; aah's "
	  "are built in: give a name (tuners NetworkMorphism, TPE, Random)", 0 },
	{ "codeDirectory", K_REFUSE, NULL, "belongs to a custom algorithm, an NNI Python class; aah's "
	  "are built in: give a name", 0 },
	{ "builtinTunerName", K_V1, "tuner.name", NULL, 0 },
	{ "builtinAssessorName", K_V1, "assessor.name", NULL, 0 },
	{ NULL },
};

static const struct v2_key service_keys[] = {
	{ "platform", K_PLATFORM, "trainingServicePlatform", NULL, 0 },
	{ "trialCommand", K_RENAME, "trial.command", TRIAL_COMMAND_NOTE, 0 },
	{ "trialCodeDirectory", K_RENAME, "trial.codeDir", NULL, 0 },
	{ "trialGpuNumber", K_RENAME, "trial.gpuNum", NULL, 0 },
	{ "nniManagerIp", K_IGNORE, NULL, MANAGER_NOTE, 0 },
	{ "debug", K_RENAME, "debug", NULL, 0 },
	{ "useActiveGpu", K_IGNORE, NULL, "no effect: each slot gets GPUs of its own "
	  "(CUDA_VISIBLE_DEVICES), whatever else runs on them", 0 },
	{ "maxTrialNumberPerGpu", K_PER_GPU, NULL, NULL, 0 },
	{ "gpuIndices", K_REFUSE, NULL, "is not taken: aah gives slot k the GPUs from "
	  "k * trialGpuNumber on; hide others from the runner with CUDA_VISIBLE_DEVICES", 0 },
	{ "reuseMode", K_REUSE, NULL, NULL, 0 },
	{ NULL },
};

/* NNI's built-in algorithms (nni/runtime/default_config/builtin_algorithms.yml):
 * the name, and the alias it also answers to. */
static const char *const algorithms[][2] = {
	{ "TPE", NULL }, { "TPE_legacy", NULL }, { "Random", NULL }, { "Anneal", NULL },
	{ "Evolution", NULL }, { "SMAC", NULL }, { "Batch", "BatchTuner" }, { "GridSearch", NULL },
	{ "NetworkMorphism", NULL }, { "Metis", "MetisTuner" }, { "GP", "GPTuner" },
	{ "PBT", "PBTTuner" }, { "PPO", "PPOTuner" }, { "DNGO", "DNGOTuner" },
	{ "RegularizedEvolutionTuner", NULL }, { "Hyperband", NULL }, { "BOHB", NULL },
	{ "Medianstop", NULL }, { "Curvefitting", NULL },
};

/* NNI's training services aah does not drive, and what to use instead. */
static const char *const nni_platforms[][2] = {
	{ "remote", "aah reaches other machines through their Docker engines over ssh: "
		    "platform: docker with docker.hosts (docs/docker.md), or slurm" },
	{ "kubeflow", "aah submits its own Kubernetes Jobs: platform: kubernetes "
		      "(docs/kubernetes.md)" },
	{ "frameworkcontroller", "aah submits its own Kubernetes Jobs: platform: kubernetes "
				 "(docs/kubernetes.md)" },
	{ "openpai", "OpenPAI is a service aah does not drive" },
	{ "aml", "Azure Machine Learning is a service aah does not drive" },
	{ "adl", "AdaptDL is a service aah does not drive" },
	{ "dlc", "Alibaba's DLC is a service aah does not drive" },
};

/* NNI's key matching: case and underscores do not count. */
static int same_key(const char *a, const char *b)
{
	for (;; a++, b++) {
		while (*a == '_')
			a++;
		while (*b == '_')
			b++;
		if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
			return 0;
		if (!*a)
			return 1;
	}
}

static const struct v2_key *lookup(const struct v2_key *table, const char *key)
{
	for (const struct v2_key *k = table; k->name; k++)
		if (same_key(k->name, key))
			return k;
	return NULL;
}

/* The first key only v2 has (index into root's keys), or -1. */
static long v2_marker(const struct ynode *root)
{
	for (size_t i = 0; root && root->kind == YNODE_MAP && i < root->n; i++) {
		const struct v2_key *k = lookup(top_keys, root->keys[i]);
		if (k && k->marker)
			return (long)i;
	}
	return -1;
}

int nni_config_is_v2(const struct ynode *root)
{
	return v2_marker(root) >= 0;
}

/* ---- the translation ---------------------------------------------------- */

struct tr {
	const char *file;
	const char *const *platforms;
	size_t nplatforms;
	struct ynode *out;        /* aah's tree */
	struct nni_config *m;
	char marker[160];         /* "'trialCommand' at 3:1": what makes the file v2 */
	const char *platform;     /* trainingService.platform, once known */
};

static void entry(struct tr *t, const char *written, unsigned line, unsigned col, const char *aah,
		  char *note)
{
	struct nni_config *m = t->m;
	m->v = xrealloc(m->v, (m->n + 1) * sizeof(*m->v));
	m->v[m->n++] = (struct nni_config_entry){ xstrdup(written), line, col,
						   aah ? xstrdup(aah) : NULL, note };
}

static int refuse(const struct tr *t, const char *written, unsigned line, unsigned col,
		  const char *why)
{
	return error("%s:%u:%u: '%s' %s", t->file, line, col, written, why);
}

/* Put node (owned) at aah's dotted key in the output tree, making the
 * sections on the way; a key put twice is refused naming both places. */
static int put(struct tr *t, const char *aah, const char *written, unsigned line, unsigned col,
	       struct ynode *node)
{
	char *path = xstrdup(aah), *seg = path, *dot;
	struct ynode *map = t->out;
	while ((dot = strchr(seg, '.'))) {
		*dot = '\0';
		struct ynode *sub = (struct ynode *)ynode_get(map, seg);
		if (!sub) {
			sub = ynode_new_map(line, col);
			ynode_map_add(map, seg, line, col, sub);
		} else if (sub->kind != YNODE_MAP) {
			break;
		}
		map = sub;
		seg = dot + 1;
	}
	if (!dot && !ynode_get(map, seg)) {
		ynode_map_add(map, seg, line, col, node);
		free(path);
		return 0;
	}
	const struct nni_config_entry *first = NULL;
	for (size_t i = 0; i < t->m->n && !first; i++)
		if (t->m->v[i].aah && !strncmp(t->m->v[i].aah, aah, strlen(t->m->v[i].aah)))
			first = &t->m->v[i];
	char *why = first ? xstrfmt("gives '%s' again: '%s' at %u:%u gave it already", aah,
				    first->written, first->line, first->col)
			  : xstrfmt("gives '%s' again", aah);
	int r = refuse(t, written, line, col, why);
	free(why);
	free(path);
	ynode_free(node);
	return r;
}

/* NNI's parse_time: seconds, or a number with s, m, h or d (any case),
 * rounded up to a second. -1: not a duration above 0. */
static double nni_seconds(const char *s)
{
	static const struct { char unit; double secs; } units[] = {
		{ 'd', 86400 }, { 'h', 3600 }, { 'm', 60 }, { 's', 1 },
	};
	char *end;
	double v = strtod(s, &end), mult = 1;
	while (*end == ' ')
		end++;
	if (end == s)
		return -1;
	if (*end) {
		size_t u = 0;
		while (u < ARRAY_SIZE(units) && tolower((unsigned char)*end) != units[u].unit)
			u++;
		if (u == ARRAY_SIZE(units) || end[1])
			return -1;
		mult = units[u].secs;
		v = ceil(v * mult);
	}
	return isfinite(v) && v > 0 ? v : -1;
}

static int map_duration(struct tr *t, const struct v2_key *k, const char *written,
			unsigned line, unsigned col, const struct ynode *v)
{
	double secs = v->kind == YNODE_SCALAR ? nni_seconds(v->value) : -1;
	if (secs < 0)
		return refuse(t, written, v->line, v->col,
			      "must be a duration above 0 as NNI writes it: seconds, or a number "
			      "with s, m, h or d (30m, 2h, 1d)");
	char text[64];
	snprintf(text, sizeof(text), "%.0f", secs);
	char *note = k->note ? xstrfmt("%.0f s; %s", secs, k->note) : xstrfmt("%.0f s", secs);
	entry(t, written, line, col, k->aah, note);
	return put(t, k->aah, written, line, col, ynode_new_scalar(text, 1, v->line, v->col));
}

static const char *canonical_algorithm(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(algorithms); i++)
		for (int k = 0; k < 2; k++)
			if (algorithms[i][k] && !strcasecmp(algorithms[i][k], name))
				return algorithms[i][0];
	return NULL;
}

/* tuner: {name, classArgs} (or assessor:), with aah's own tuner keys as
 * they are. */
static int map_algorithm(struct tr *t, const struct v2_key *top, const char *written,
			 const struct ynode *v)
{
	int tuner = !strcmp(top->aah, "tuner");
	if (v->kind != YNODE_MAP)
		return refuse(t, written, v->line, v->col, "must be a mapping: {name, classArgs}");
	for (size_t i = 0; i < v->n; i++) {
		const struct ynode *c = v->children[i];
		const struct v2_key *k = lookup(algorithm_keys, v->keys[i]);
		char *w = xstrfmt("%s.%s", written, v->keys[i]);
		char *aah = NULL;
		int r = 0;
		unsigned line = v->key_line[i], col = v->key_col[i];
		if (k && k->kind == K_REFUSE) {
			r = refuse(t, w, line, col, k->note);
		} else if (k && k->kind == K_V1) {
			char *why = xstrfmt("is NNI v1's key, and this file is v2 (%s): write '%s'",
					    t->marker, k->aah);
			r = refuse(t, w, line, col, why);
			free(why);
		} else if (k && !k->aah) {   /* name */
			const char *name = c->kind == YNODE_SCALAR ? canonical_algorithm(c->value) : NULL;
			aah = xstrfmt("%s.%s", top->aah, tuner ? "builtinTunerName" : "builtinAssessorName");
			char *note = !tuner ? xstrdup("accepted; aah runs no assessor: a trial stops early "
						      "by its own patience")
				     : name && strcmp(name, c->value) ? xstrfmt("NNI's %s", name) : NULL;
			entry(t, w, line, col, aah, note);
			r = put(t, aah, w, line, col,
				name ? ynode_new_scalar(name, 1, c->line, c->col) : ynode_dup(c));
		} else {   /* classArgs, or one of aah's own tuner keys */
			aah = xstrfmt("%s.%s", top->aah, k ? k->aah : v->keys[i]);
			entry(t, w, line, col, aah, k ? NULL : xstrdup("aah's own key"));
			r = put(t, aah, w, line, col, ynode_dup(c));
		}
		free(aah);
		free(w);
		if (r < 0)
			return -1;
	}
	return 0;
}

static const struct ynode *service_key(const struct ynode *v, const char *name, size_t *at)
{
	for (size_t i = 0; i < v->n; i++)
		if (same_key(v->keys[i], name)) {
			*at = i;
			return v->children[i];
		}
	return NULL;
}

/* trainingService.platform: one of aah's, or refused with what to use. */
static int map_platform(struct tr *t, const char *w, unsigned line, unsigned col,
			const struct ynode *p)
{
	for (size_t i = 0; p->kind == YNODE_SCALAR && i < t->nplatforms; i++)
		if (!strcmp(p->value, t->platforms[i])) {
			t->platform = t->platforms[i];
			entry(t, w, line, col, "trainingServicePlatform", NULL);
			return put(t, "trainingServicePlatform", w, line, col, ynode_dup(p));
		}
	const char *why = "a platform neither NNI nor aah knows";
	for (size_t i = 0; p->kind == YNODE_SCALAR && i < ARRAY_SIZE(nni_platforms); i++)
		if (!strcmp(p->value, nni_platforms[i][0]))
			why = nni_platforms[i][1];
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "is '%s': %s; aah's platforms:", p->kind == YNODE_SCALAR ? p->value : "?",
		    why);
	for (size_t i = 0; i < t->nplatforms; i++)
		strbuf_addf(&sb, "%s %s", i ? "," : "", t->platforms[i]);
	int r = refuse(t, w, p->line, p->col, sb.buf);
	strbuf_release(&sb);
	return r;
}

/* One key of trainingService other than its platform. */
static int map_service_key(struct tr *t, const char *w, unsigned line, unsigned col,
			   const char *key, const struct ynode *c)
{
	const struct v2_key *k = lookup(service_keys, key);
	if (!k) {   /* the platform's own: aah's section of that backend */
		char *aah = xstrfmt("%s.%s", t->platform, key);
		entry(t, w, line, col, aah, xstrdup("the backend's own key"));
		int r = put(t, aah, w, line, col, ynode_dup(c));
		free(aah);
		return r;
	}
	int one = c->kind == YNODE_SCALAR && !strcmp(c->value, "1");
	int off = c->kind == YNODE_SCALAR && (!strcmp(c->value, "false") || !strcmp(c->value, "False"));
	switch (k->kind) {
	case K_RENAME:
		entry(t, w, line, col, k->aah, k->note ? xstrdup(k->note) : NULL);
		return put(t, k->aah, w, line, col, ynode_dup(c));
	case K_IGNORE:
		entry(t, w, line, col, NULL, xstrdup(k->note));
		return 0;
	case K_PER_GPU:
		if (!one)
			return refuse(t, w, c->line, c->col, "must be 1: aah runs one trial on a GPU at a time");
		entry(t, w, line, col, NULL, xstrdup("1: one trial on a GPU at a time, as aah runs them"));
		return 0;
	case K_REUSE:
		if (!off)
			return refuse(t, w, c->line, c->col, "must be false: aah starts each trial afresh");
		entry(t, w, line, col, NULL, xstrdup("false: each trial starts afresh, as aah runs them"));
		return 0;
	default:
		return refuse(t, w, line, col, k->note);
	}
}

static int map_service(struct tr *t, const char *written, const struct ynode *v)
{
	size_t at = 0;
	if (v->kind == YNODE_SEQ)
		return refuse(t, written, v->line, v->col,
			      "lists several training services (NNI's hybrid mode): aah runs an "
			      "experiment's trials on one platform");
	if (v->kind != YNODE_MAP)
		return refuse(t, written, v->line, v->col, "must be a mapping with a platform");
	const struct ynode *p = service_key(v, "platform", &at);
	if (!p)
		return refuse(t, written, v->line, v->col, "needs a platform (local, ...)");
	char *w = xstrfmt("%s.%s", written, v->keys[at]);
	int r = map_platform(t, w, v->key_line[at], v->key_col[at], p);
	free(w);
	for (size_t i = 0; r == 0 && i < v->n; i++) {
		if (i == at)
			continue;
		w = xstrfmt("%s.%s", written, v->keys[i]);
		r = map_service_key(t, w, v->key_line[i], v->key_col[i], v->keys[i], v->children[i]);
		free(w);
	}
	return r;
}

/* A key that is not v2's: aah's own, as it is (aah's trial: section key by
 * key, less v1's names). */
static int map_own(struct tr *t, const char *key, unsigned line, unsigned col,
		   const struct ynode *v)
{
	if (strcmp(key, "trial") || v->kind != YNODE_MAP) {
		entry(t, key, line, col, key, xstrdup("aah's own key"));
		return put(t, key, key, line, col, ynode_dup(v));
	}
	for (size_t i = 0; i < v->n; i++) {
		char *w = xstrfmt("trial.%s", v->keys[i]);
		const struct v2_key *k = lookup(trial_keys, v->keys[i]);
		int r;
		if (k) {
			char *why = xstrfmt("is NNI v1's key, and this file is v2 (%s): write '%s'",
					    t->marker, k->aah);
			r = refuse(t, w, v->key_line[i], v->key_col[i], why);
			free(why);
		} else {
			entry(t, w, v->key_line[i], v->key_col[i], w, xstrdup("aah's own key"));
			r = put(t, w, w, v->key_line[i], v->key_col[i], ynode_dup(v->children[i]));
		}
		free(w);
		if (r < 0)
			return -1;
	}
	return 0;
}

static int map_top(struct tr *t, const char *key, unsigned line, unsigned col, const struct ynode *v)
{
	const struct v2_key *k = lookup(top_keys, key);
	if (!k)
		return map_own(t, key, line, col, v);
	switch (k->kind) {
	case K_RENAME:
		entry(t, key, line, col, k->aah, k->note ? xstrdup(k->note) : NULL);
		return put(t, k->aah, key, line, col, ynode_dup(v));
	case K_DURATION:
		return map_duration(t, k, key, line, col, v);
	case K_IGNORE:
		entry(t, key, line, col, NULL, xstrdup(k->note));
		return 0;
	case K_SPACE:
		if (v->kind != YNODE_MAP)
			return refuse(t, key, v->line, v->col, "must be a mapping of parameters "
				      "({name: {_type: ..., _value: [...]}})");
		if (t->m->search_space)
			return refuse(t, key, line, col, "is given twice");
		t->m->search_space = ynode_dup(v);
		entry(t, key, line, col, NULL, xstrdup("the search space inline, as searchSpaceFile holds it"));
		return 0;
	case K_TYPE:
		if (v->kind != YNODE_SCALAR || strcasecmp(v->value, "hpo"))
			return refuse(t, key, v->line, v->col,
				      "must be hpo: aah runs hyperparameter and network morphism "
				      "searches, not NNI's NAS experiments");
		entry(t, key, line, col, NULL, xstrdup("hpo: what aah runs"));
		return 0;
	case K_ALGORITHM:
		return map_algorithm(t, k, key, v);
	case K_SERVICE:
		return map_service(t, key, v);
	case K_V1: {
		char *why = xstrfmt("is NNI v1's key, and this file is v2 (%s): write '%s'", t->marker,
				    k->aah);
		int r = refuse(t, key, line, col, why);
		free(why);
		return r;
	}
	default:
		return refuse(t, key, line, col, k->note);
	}
}

int nni_config_translate(const char *file, const char *const *platforms, size_t nplatforms,
			 struct ynode **root, struct nni_config **out)
{
	struct ynode *in = *root;
	struct tr t = { .file = file, .platforms = platforms, .nplatforms = nplatforms };
	long mk = v2_marker(in);
	t.out = ynode_new_map(in->line, in->col);
	t.m = xcalloc(1, sizeof(*t.m));
	if (mk >= 0)
		snprintf(t.marker, sizeof(t.marker), "it has '%s' at %u:%u", in->keys[mk],
			 in->key_line[mk], in->key_col[mk]);
	int r = 0;
	for (size_t i = 0; r == 0 && i < in->n; i++)
		r = map_top(&t, in->keys[i], in->key_line[i], in->key_col[i], in->children[i]);
	if (r == 0 && !ynode_get(ynode_get(t.out, "trial"), "command"))
		r = refuse(&t, "trialCommand", in->line, in->col,
			   "is required: the command each trial runs (at the top or in trainingService)");
	if (r == 0 && t.m->search_space && ynode_get(t.out, "searchSpacePath")) {
		const struct ynode *n = t.m->search_space;
		r = refuse(&t, "searchSpace", n->line, n->col, "and searchSpaceFile are both given: give one");
	}
	if (r < 0) {
		ynode_free(t.out);
		nni_config_free(t.m);
		return -1;
	}
	ynode_free(in);
	*root = t.out;
	*out = t.m;
	return 0;
}

void nni_config_free(struct nni_config *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		free(m->v[i].written);
		free(m->v[i].aah);
		free(m->v[i].note);
	}
	free(m->v);
	ynode_free(m->search_space);
	free(m);
}

int nni_config_load(const char *path, const char *const *platforms, size_t nplatforms,
		    struct ynode **root, struct nni_config **out)
{
	*out = NULL;
	if (yamltree_load(path, root) < 0)
		return -1;
	if (!nni_config_is_v2(*root) || nni_config_translate(path, platforms, nplatforms, root, out) == 0)
		return 0;
	ynode_free(*root);
	*root = NULL;
	return -1;
}

const char *nni_config_written(const struct nni_config *m, const char *aah)
{
	if (!m)
		return aah;
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].aah && !strcmp(m->v[i].aah, aah))
			return m->v[i].written;
	for (const struct v2_key *k = top_keys; k->name; k++)
		if (k->kind != K_V1 && k->aah && !strcmp(k->aah, aah))
			return k->name;
	return aah;
}

void nni_config_describe(const struct nni_config *m, const char *file, struct strbuf *sb)
{
	for (size_t i = 0; i < m->n; i++) {
		const struct nni_config_entry *e = &m->v[i];
		strbuf_addf(sb, "  %s:%u:%u %s", file, e->line, e->col, e->written);
		if (e->aah)
			strbuf_addf(sb, " -> %s%s%s%s", e->aah, e->note ? " (" : "",
				    e->note ? e->note : "", e->note ? ")" : "");
		else
			strbuf_addf(sb, ": %s", e->note ? e->note : "no effect");
		strbuf_addch(sb, '\n');
	}
}
