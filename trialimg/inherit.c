/* inherit.c: a child's weights from its parent's, through aah-morph/1.
 *
 * Every tensor of the child gets a channel reference per channel: the
 * parent channel whose value it carries (-1: none the child's function
 * depends on at first). Layers map in sorted order; a weighted layer reads
 * its input references to find the parent weight of each input channel and
 * divides it among the input channels that carry the same parent channel. */
#include <libgen.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "jsonfile.h"
#include "trialimg/inherit.h"
#include "trialimg/checkpoint.h" /* checkpoint_weights: the parent's */
#include "util.h"

enum init { IN_NONE, IN_INHERIT, IN_RANDOM, IN_IDENTITY, IN_ZERO };

struct map {
	const struct model *child, *parent;
	int *from;       /* (child layers) parent layer index, -1 */
	int *init;       /* (child layers) enum init */
	int **ref;       /* (child layers + 1) per channel of each tensor */
	uint64_t rng;
	float noise;
};

static uint64_t rnd(uint64_t *s)
{
	uint64_t x = (*s += 0x9e3779b97f4a7c15ull);
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static float uniform(uint64_t *s)   /* in [-1, 1) */
{
	return (float)(2.0 * ((double)(rnd(s) >> 11) / 9007199254740992.0) - 1.0);
}

static int channels(const struct model *m, int tensor)
{
	return tensor == 0 ? m->input.c : m->layers[tensor - 1].op.out.c;
}

static int read_record(struct map *mp, const cJSON *rec)
{
	const struct model *c = mp->child, *p = mp->parent;
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(rec, "format");
	if (!cJSON_IsString(f) || strcmp(f->valuestring, "aah-morph/1"))
		return error("morph.json: format must be \"aah-morph/1\"");
	const cJSON *it, *inh = cJSON_GetObjectItemCaseSensitive(rec, "inherit");
	cJSON_ArrayForEach(it, inh) {
		const cJSON *l = cJSON_GetObjectItemCaseSensitive(it, "layer");
		const cJSON *fr = cJSON_GetObjectItemCaseSensitive(it, "from");
		if (!cJSON_IsString(l) || !cJSON_IsString(fr))
			return error("morph.json: inherit: every entry needs \"layer\" and \"from\"");
		int ci = model_find(c, l->valuestring), pi = model_find(p, fr->valuestring);
		if (ci < 0)
			return error("morph.json: inherit: no layer '%s' in arch.json", l->valuestring);
		if (pi < 0)
			return error("morph.json: inherit: no layer '%s' in the parent's arch.json",
				     fr->valuestring);
		if (c->layers[ci].type != p->layers[pi].type)
			return error("morph.json: layer '%s' inherits from '%s' of another type",
				     l->valuestring, fr->valuestring);
		mp->from[ci] = pi;
		mp->init[ci] = IN_INHERIT;
	}
	const cJSON *op, *ops = cJSON_GetObjectItemCaseSensitive(rec, "operations");
	cJSON_ArrayForEach(op, ops) {
		const cJSON *added = cJSON_GetObjectItemCaseSensitive(op, "layers");
		cJSON_ArrayForEach(it, added) {
			const cJSON *l = cJSON_GetObjectItemCaseSensitive(it, "layer");
			const cJSON *in = cJSON_GetObjectItemCaseSensitive(it, "init");
			int ci = cJSON_IsString(l) ? model_find(c, l->valuestring) : -1;
			if (ci < 0)
				return error("morph.json: operations: added layer '%s' is not in arch.json",
					     cJSON_IsString(l) ? l->valuestring : "?");
			const char *s = cJSON_IsString(in) ? in->valuestring : "random";
			mp->init[ci] = !strcmp(s, "identity") ? IN_IDENTITY
				     : !strcmp(s, "zero")     ? IN_ZERO
				     : !strcmp(s, "random")   ? IN_RANDOM : IN_NONE;
			if (mp->init[ci] == IN_NONE)
				return error("morph.json: layer '%s': unknown init '%s'", l->valuestring, s);
		}
	}
	for (int i = 0; i < c->n_layers; i++)
		if (mp->init[i] == IN_NONE)
			return error("morph.json: layer '%s' is neither inherited nor added by an "
				     "operation", c->layers[i].id);
	return 0;
}

/* Weighted layer: conv2d (Cout, K, K, Cin) or dense (units, Cin). */
static int map_weights(struct map *mp, int i)
{
	const struct model_layer *L = &mp->child->layers[i];
	const struct ops_layer *op = &L->op;
	const int *rin = mp->ref[L->inputs[0]];
	int cin = L->in_shapes[0].c, units = op->cfg.units, *rout = mp->ref[i + 1];
	int kk = op->cfg.type == OPS_CONV2D ? op->cfg.kernel * op->cfg.kernel : 1;
	size_t per = (size_t)kk * (size_t)cin;
	const struct model_layer *P = mp->from[i] >= 0 ? &mp->parent->layers[mp->from[i]] : NULL;
	int pin = P ? P->in_shapes[0].c : 0, pu = P ? P->op.cfg.units : 0;
	if (P && op->cfg.type == OPS_CONV2D && P->op.cfg.kernel != op->cfg.kernel)
		return error("morph.json: layer '%s': kernel %d, its parent's %d", L->id,
			     op->cfg.kernel, P->op.cfg.kernel);
	/* how many input channels carry each parent channel */
	int maxref = P ? pin : cin;
	for (int k = 0; k < cin; k++)
		if (rin[k] >= maxref)
			maxref = rin[k] + 1;
	int *cnt = xcalloc((size_t)maxref + 1, sizeof(int));
	for (int k = 0; k < cin; k++)
		if (rin[k] >= 0)
			cnt[rin[k]]++;
	if (P)
		for (int k = 0; k < cin; k++)
			if (rin[k] >= pin) {
				free(cnt);
				return error("morph.json: layer '%s': input channel %d has no parent "
					     "channel (parent '%s' reads %d)", L->id, k, P->id, pin);
			}
	switch (mp->init[i]) {
	case IN_INHERIT:
		for (int o = 0; o < units; o++) {
			rout[o] = o % pu;
			const float *pw = P->op.w + (size_t)(o % pu) * (size_t)kk * (size_t)pin;
			float *w = op->w + (size_t)o * per;
			for (int t = 0; t < kk; t++)
				for (int k = 0; k < cin; k++)
					w[(size_t)t * cin + k] = rin[k] < 0 ? 0.0f
						: pw[(size_t)t * pin + rin[k]] / (float)cnt[rin[k]];
			/* Copies of one parent channel: +-noise of their share, summing to zero. */
			for (int k = 0; k < cin && mp->noise > 0; k++) {
				if (rin[k] < 0 || cnt[rin[k]] < 2)
					continue;
				int first = -1;
				for (int j = 0; j < k && first < 0; j++)
					if (rin[j] == rin[k])
						first = j;
				if (first < 0)
					continue;   /* the first copy absorbs the others' noise */
				for (int t = 0; t < kk; t++) {
					float e = mp->noise * w[(size_t)t * cin + k] * uniform(&mp->rng);
					w[(size_t)t * cin + k] += e;
					w[(size_t)t * cin + first] -= e;
				}
			}
			if (op->b && P->op.b)
				op->b[o] = P->op.b[o % pu];
		}
		break;
	case IN_IDENTITY:
		memset(op->w, 0, (size_t)units * per * sizeof(float));
		for (int o = 0; o < units; o++) {
			rout[o] = rin[o % cin];
			float *w = op->w + (size_t)o * per + (size_t)(kk / 2) * cin;
			for (int k = 0; k < cin; k++)
				if (rout[o] >= 0 && rin[k] == rout[o])
					w[k] = 1.0f / (float)cnt[rin[k]];
			if (op->b)
				op->b[o] = 0;
		}
		break;
	case IN_ZERO:
		memset(op->w, 0, (size_t)units * per * sizeof(float));
		if (op->b)
			memset(op->b, 0, (size_t)units * sizeof(float));
		/* fall through */
	default:
		for (int o = 0; o < units; o++)
			rout[o] = -1;
	}
	free(cnt);
	return 0;
}

static int map_batchnorm(struct map *mp, int i)
{
	const struct model_layer *L = &mp->child->layers[i];
	const struct ops_layer *op = &L->op;
	const int *rin = mp->ref[L->inputs[0]];
	int c = op->out.c;
	memcpy(mp->ref[i + 1], rin, (size_t)c * sizeof(int));
	if (mp->init[i] == IN_IDENTITY) {
		for (int k = 0; k < c; k++) {   /* y = x at the running statistics */
			op->run_mean[k] = 0;
			op->run_var[k] = 1;
			op->gamma[k] = sqrtf(1.0f + op->cfg.eps);
			op->beta[k] = 0;
		}
		return 0;
	}
	if (mp->init[i] != IN_INHERIT)
		return 0;
	const struct ops_layer *P = &mp->parent->layers[mp->from[i]].op;
	for (int k = 0; k < c; k++) {
		int r = rin[k];
		if (r < 0)
			continue;
		if (r >= P->out.c)
			return error("morph.json: layer '%s': channel %d has no parent channel", L->id, k);
		op->gamma[k] = P->gamma[r];
		op->beta[k] = P->beta[r];
		op->run_mean[k] = P->run_mean[r];
		op->run_var[k] = P->run_var[r];
	}
	return 0;
}

/* Layers without weights: references pass through, join or flatten. */
static void map_refs(struct map *mp, int i)
{
	const struct model_layer *L = &mp->child->layers[i];
	int *rout = mp->ref[i + 1], c = L->op.out.c;
	const struct model_layer *P = mp->from[i] >= 0 ? &mp->parent->layers[mp->from[i]] : NULL;
	if (L->type == ARCH_CONCAT) {
		int at = 0, off = 0;
		for (int k = 0; k < L->op.n_in; k++) {
			const int *rin = mp->ref[L->inputs[k]];
			int n = L->in_shapes[k].c;
			for (int j = 0; j < n; j++)   /* a new concat: only its main input counts */
				rout[at + j] = (P || k == 0) && rin[j] >= 0 ? rin[j] + off : -1;
			at += n;
			off += P && k < P->op.n_in ? P->in_shapes[k].c : 0;
		}
	} else if (L->type == ARCH_FLATTEN) {
		const int *rin = mp->ref[L->inputs[0]];
		int ic = L->in_shapes[0].c, hw = L->in_shapes[0].h * L->in_shapes[0].w;
		int pc = P ? P->in_shapes[0].c : ic;
		for (int s = 0; s < hw; s++)
			for (int k = 0; k < ic; k++)
				rout[s * ic + k] = rin[k] >= 0 ? s * pc + rin[k] : -1;
	} else {
		memcpy(rout, mp->ref[L->inputs[0]], (size_t)c * sizeof(int));
	}
}

int inherit_map(struct model *child, const struct model *parent, const cJSON *record,
		uint64_t seed, float noise)
{
	int n = child->n_layers, rc = 0;
	struct map mp = { .child = child, .parent = parent, .rng = seed * 0x2545f4914f6cdd1dull + 7,
			  .noise = noise };
	mp.from = xmalloc((size_t)(n ? n : 1) * sizeof(int));
	mp.init = xcalloc((size_t)(n ? n : 1), sizeof(int));
	mp.ref = xcalloc((size_t)n + 1, sizeof(int *));
	for (int i = 0; i < n; i++)
		mp.from[i] = -1;
	for (int t = 0; t <= n; t++) {
		int c = channels(child, t);
		mp.ref[t] = xmalloc((size_t)(c ? c : 1) * sizeof(int));
	}
	for (int k = 0; k < child->input.c; k++)
		mp.ref[0][k] = k;
	if (child->input.c != parent->input.c)
		rc = error("morph.json: the child and its parent read different inputs");
	if (rc == 0)
		rc = read_record(&mp, record);
	for (int i = 0; i < n && rc == 0; i++) {
		switch (child->layers[i].op.cfg.type) {
		case OPS_CONV2D:
		case OPS_DENSE:
			rc = map_weights(&mp, i);
			break;
		case OPS_BATCHNORM:
			rc = map_batchnorm(&mp, i);
			break;
		default:
			map_refs(&mp, i);
		}
	}
	for (int t = 0; t <= n; t++)
		free(mp.ref[t]);
	free(mp.ref);
	free(mp.init);
	free(mp.from);
	return rc;
}

/* Where the parent of morph.json rec is: its "parent_dir", a path from
 * trial_dir (the runner writes it when the parent's checkpoint is in an
 * attempt's own place, docs/formats.md), else the parent's trial directory
 * beside trial_dir. NULL when parent_dir is not a relative path. */
static char *parent_dir(const char *trial_dir, const cJSON *rec, const char *id)
{
	const cJSON *pd = cJSON_GetObjectItemCaseSensitive(rec, "parent_dir");
	if (pd) {
		if (!cJSON_IsString(pd) || !*pd->valuestring || pd->valuestring[0] == '/')
			return NULL;
		return xstrfmt("%s/%s", trial_dir, pd->valuestring);
	}
	char *td = xstrdup(trial_dir);
	char *p = xstrfmt("%s/%s", dirname(td), id);
	free(td);
	return p;
}

/* The parent named by trial_dir's morph.json: 1 with *rec, the parent's
 * arch.json and checkpoint paths and parent_id set when it has both, 0 when
 * there is no record or (with a warning) the parent has no checkpoint, -1
 * on a bad record. */
static int find_parent(const char *trial_dir, cJSON **rec, char **pa, char **pc,
		       char parent_id[16])
{
	char *rp = xstrfmt("%s/morph.json", trial_dir);
	int rc = 0;
	*rec = NULL;
	*pa = *pc = NULL;
	parent_id[0] = '\0';
	if (!fileio_exists(rp)) {
		free(rp);
		return 0;
	}
	if (jsonfile_read(rp, rec) < 0) {
		free(rp);
		return -1;
	}
	const cJSON *pt = cJSON_GetObjectItemCaseSensitive(*rec, "parent_trial");
	if (!cJSON_IsString(pt) || !*pt->valuestring || strchr(pt->valuestring, '/') ||
	    strlen(pt->valuestring) >= 16) {
		rc = error("%s: parent_trial must be a trial id such as \"000003\"", rp);
		goto out;
	}
	char *pdir = parent_dir(trial_dir, *rec, pt->valuestring);
	if (!pdir) {
		rc = error("%s: parent_dir must be a relative path to the parent's directory", rp);
		goto out;
	}
	*pa = xstrfmt("%s/arch.json", pdir);
	*pc = xstrfmt("%s/checkpoint/state.bin", pdir);
	free(pdir);
	if (!fileio_exists(*pa) || !fileio_exists(*pc)) {
		warning("%s: trial %s has no arch.json or checkpoint: training from scratch", rp,
			pt->valuestring);
	} else {
		snprintf(parent_id, 16, "%s", pt->valuestring);
		rc = 1;
	}
out:
	if (rc != 1) {
		cJSON_Delete(*rec);
		free(*pa);
		free(*pc);
		*rec = NULL;
		*pa = *pc = NULL;
	}
	free(rp);
	return rc;
}

int inherit_from_parent(struct model *m, const char *trial_dir, uint64_t seed,
			char parent_id[16])
{
	cJSON *rec;
	char *pa, *pc;
	int rc = find_parent(trial_dir, &rec, &pa, &pc, parent_id);
	if (rc != 1)
		return rc;
	struct model p = { 0 };
	if (model_load(&p, pa) < 0 || model_alloc(&p, 1, 0) < 0 ||
	    checkpoint_weights(pc, &p) < 0 || inherit_map(m, &p, rec, seed, 0.05f) < 0) {
		parent_id[0] = '\0';
		rc = -1;
	}
	model_release(&p, NULL);
	free(pc);
	free(pa);
	cJSON_Delete(rec);
	return rc;
}

int inherit_parent_id(const char *trial_dir, char parent_id[16])
{
	cJSON *rec;
	char *pa, *pc;
	int rc = find_parent(trial_dir, &rec, &pa, &pc, parent_id);
	free(pc);
	free(pa);
	cJSON_Delete(rec);
	return rc;
}
