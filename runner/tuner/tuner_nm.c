/* tuner_nm.c: the "NetworkMorphism" tuner: NNI's network morphism search
 * (GP over edit distances, UCB acquisition, simulated annealing over
 * morphism neighbours) for the architecture, TPE for the hyperparameters.
 * This file: the observations and the tuner's ops; the search is in
 * tuner_nm_search.c.
 *
 * Where it differs from NNI, and why:
 * - The kernel is exp(-d^2) on the edit distance directly (NNI's predict
 *   uses that; its fit adds a Bourgain embedding that would rebuild the whole
 *   matrix per observation). Distances past `distance_cutoff` (6: exp(-36)
 *   is below double precision next to 1) are not computed exactly; the
 *   banded Levenshtein stops early.
 * - The Cholesky factor grows one row per observation and escalates the
 *   jitter of a row that is not positive definite instead of dropping the
 *   observation (NNI issue 3324).
 * - Trials still training are GP observations at their predicted mean, so
 *   concurrent proposals differ; exact duplicates (canonical hash) of any
 *   trial or earlier candidate are skipped instead of NNI's O(n) distance
 *   scan per candidate.
 * - A candidate's neighbours in the history are found from its parent's
 *   distance scan by the triangle inequality (one morphism moves the
 *   main-chain distance by at most NM_STEP), so a parent's 8 children cost one
 *   scan of the history, not eight. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distance.h"
#include "gp.h"
#include "nni_graph.h" /* nni_graph_load: tuner.initialArch */
#include "hset.h"  /* hset_insert, hset_has: architectures seen */
#include "pool.h"
#include "tpe.h"
#include "tuner_int.h"
#include "tuner_nm_int.h" /* struct nm, its items; the state cache (tuner_nm_cache.c) */
#include "util.h"

/* ---- observations -------------------------------------------------------- */

static double internal_y(const struct nm *nm, double metric)
{
	return nm->tpe.maximize ? metric : -metric;
}

/* A failed trial counts as the worst finished one (0 when none). */
static double failed_y(const struct tuner *t, const struct nm *nm)
{
	double worst = 0;
	int any = 0;
	for (size_t i = 0; i < t->nhist; i++)
		if (t->hist[i].state == TUNER_OBS_DONE) {
			double y = internal_y(nm, t->hist[i].metric);
			if (!any || y < worst)
				worst = y;
			any = 1;
		}
	return worst;
}

void nm_hist_item_reserve(struct nm *nm, size_t idx)
{
	if (idx < nm->ahist)
		return;
	size_t a = nm->ahist;
	nm->ahist = idx < 64 ? 128 : 2 * idx;
	nm->hist_item = xrealloc(nm->hist_item, nm->ahist * sizeof(int));
	for (size_t i = a; i < nm->ahist; i++)
		nm->hist_item[i] = -1;
}

int nm_make_item(const struct tuner *t, struct nm *nm, size_t idx, struct nm_item *item)
{
	const struct tuner_hist *h = &t->hist[idx];
	*item = (struct nm_item){ .hist = idx, .row = -1 };
	if (!h->arch)
		return 0;
	char *what = xstrfmt("trial %u arch.json", h->seq);
	int usable = tgraph_from_json(&item->graph, h->arch, what) == 0;
	free(what);
	if (!usable) {
		warning("network morphism: trial %u: its arch.json is not usable; the search "
			"ignores it", h->seq);
		return 0;
	}
	if (item->graph.num_classes != nm->start.num_classes ||
	    memcmp(&item->graph.input, &nm->start.input, sizeof(item->graph.input))) {
		warning("network morphism: trial %u has another input or class count; ignored", h->seq);
		tgraph_release(&item->graph);
		return 0;
	}
	tdesc_from_graph(&item->desc, &item->graph);
	editdist_vocab_tokens(&nm->vocab, &item->desc);
	return 1;
}

void nm_add_item(struct nm *nm, const struct nm_item *item)
{
	if (nm->nitems == nm->aitems) {
		nm->aitems = nm->aitems ? 2 * nm->aitems : 64;
		nm->items = xrealloc(nm->items, (size_t)nm->aitems * sizeof(*nm->items));
	}
	nm_batch_entered(nm, item->hist);
	nm->hist_item[item->hist] = nm->nitems;
	nm->items[nm->nitems++] = *item;
	hset_insert(&nm->seen, item->desc.hash);
}

static int nm_observe(struct tuner *t, size_t idx, const struct tuner_hist *old)
{
	struct nm *nm = t->priv;
	const struct tuner_hist *h = &t->hist[idx];
	double t0 = util_monotonic();
	(void)old;
	if (h->state == TUNER_OBS_DONE || h->state == TUNER_OBS_FAILED)
		nm->results++;   /* a batch's candidates were scored without it */
	nm_hist_item_reserve(nm, idx);
	int it = nm->hist_item[idx];
	if (it == NM_LEFT_WINDOW && nm_window_keeps_out(t, nm, idx)) {
		nm->stats.observe_seconds += util_monotonic() - t0;
		return 0;   /* it stays out: only one of the best comes back */
	}
	if (it >= 0) {   /* a known trial changed state */
		double y = nm->gp.y[nm->items[it].row];
		if (h->state == TUNER_OBS_DONE)
			y = internal_y(nm, h->metric);
		else if (h->state == TUNER_OBS_FAILED)
			y = failed_y(t, nm);
		gp_set_y(&nm->gp, nm->items[it].row, y);
		nm->stats.observe_seconds += util_monotonic() - t0;
		return 0;
	}
	struct nm_item item;
	if (!nm_make_item(t, nm, idx, &item))
		return 0;
	nm_enter(t, nm, &item);
	nm_window_fit(t, nm);
	nm->stats.observe_seconds += util_monotonic() - t0;
	return 0;
}

void nm_enter(const struct tuner *t, struct nm *nm, struct nm_item *item)
{
	const struct tuner_hist *h = &t->hist[item->hist];
	size_t n = (size_t)nm->nitems;
	int *idxs = xmalloc((n ? n : 1) * sizeof(int));
	double *kv = xmalloc((n ? n : 1) * sizeof(double));
	int nnz = nm_kernel_row(nm, &item->desc, idxs, kv);
	double y;
	if (h->state == TUNER_OBS_DONE) {
		y = internal_y(nm, h->metric);
	} else if (h->state == TUNER_OBS_FAILED) {
		y = failed_y(t, nm);
	} else {
		double var;
		gp_predict(&nm->gp, idxs, kv, nnz, &y, &var);
	}
	item->row = gp_add(&nm->gp, idxs, kv, nnz, y);
	free(kv);
	free(idxs);
	nm_add_item(nm, item);
}

/* ---- the tuner ----------------------------------------------------------- */

static int nm_propose(struct tuner *t, unsigned seq, struct trng *rng, cJSON **arch,
		      cJSON **params)
{
	struct nm *nm = t->priv;
	double t0 = util_monotonic();
	/* The start network; again, with another seed and hyperparameters, for
	 * the slots that open before any trial has finished when children
	 * inherit weights (a child needs a trained parent). */
	int first = nm->nitems == 0 && !hset_has(&nm->seen, tgraph_hash(&nm->start));
	if (first || (t->inherit_weights && !nm_any_parent(t, nm))) {
		cJSON *meta = cJSON_CreateObject();
		cJSON_AddStringToObject(meta, "tuner", "NetworkMorphism");
		cJSON_AddStringToObject(meta, "start", nm->start_name);
		*arch = tgraph_to_json(&nm->start, meta);
		cJSON_Delete(meta);
	} else {
		*arch = nm_batch_next(t);
		if (!*arch)
			*arch = nm_search_arch(t, rng);
		if (!*arch)
			return error("network morphism: no new architecture within the limits "
				     "(max_layers %d, max_params %llu, max_flops %.4g); raise them",
				     nm->lim.max_layers, (unsigned long long)nm->lim.max_params,
				     nm->lim.max_flops);
	}
	*params = tuner_params_doc(t, seq, tuner_tpe_parameters(t, &nm->tpe, rng));
	nm->stats.proposals++;
	nm->stats.propose_seconds += util_monotonic() - t0;
	return 0;
}

static int arg_int(const struct tuner *t, const char *key, double def, double min, double max,
		   double *out)
{
	if (tuner_arg_number(t, key, def, out) < 0)
		return -1;
	if (!(*out >= min && *out <= max))
		return error("tuner %s: classArgs.%s must be between %g and %g", t->name, key, min, max);
	return 0;
}

/* The builtin start models, by classArgs.start_model. */
static const struct start_model {
	const char *name;
	int (*make)(struct tgraph *g, int width, int channels, int num_classes);
} start_models[] = {
	{ "cnn", tmodel_cnn },
	{ "resnet50", tmodel_resnet50 },
	{ "resnet50-v1.5", tmodel_resnet50_v15 },
};

/* tuner.initialArch: an aah-arch/1 file, or an NNI graph (AIPerf's
 * resnet50.json) converted by common/nni_graph. */
static int load_start_file(struct tuner *t, struct nm *nm)
{
	struct arch a;
	nm->start_name = "file";
	tgraph_init(&nm->start, 0, 0, 0, 0);
	if (nni_graph_load(&a, t->initial_arch) < 0)
		return error("network morphism: initial arch '%s' is not usable", t->initial_arch);
	int rc = tgraph_from_arch(&nm->start, &a, t->initial_arch);
	arch_release(&a);
	if (rc < 0)
		return error("network morphism: initial arch '%s' is not usable", t->initial_arch);
	return 0;
}

static int load_start(struct tuner *t, struct nm *nm)
{
	double width, channels, classes;
	const char *model;
	if (arg_int(t, "input_width", 32, 1, 4096, &width) < 0 ||
	    arg_int(t, "input_channel", 3, 1, 4096, &channels) < 0 ||
	    arg_int(t, "n_output_node", 10, 2, 100000, &classes) < 0 ||
	    tuner_arg_string(t, "start_model", width >= 128 ? "resnet50" : "cnn", &model) < 0)
		return -1;
	if (t->initial_arch)
		return load_start_file(t, nm);
	for (size_t i = 0; i < ARRAY_SIZE(start_models); i++) {
		if (strcmp(model, start_models[i].name))
			continue;
		nm->start_name = start_models[i].name;
		return start_models[i].make(&nm->start, (int)width, (int)channels, (int)classes);
	}
	return error("tuner %s: classArgs.start_model '%s' is none of cnn, resnet50 (AIPerf's "
		     "ResNet-50 v1), resnet50-v1.5", t->name, model);
}

static void nm_release(struct tuner *t)
{
	struct nm *nm = t->priv;
	if (!nm)
		return;
	nm_batch_drop(nm);
	for (int i = 0; i < nm->nitems; i++) {
		tgraph_release(&nm->items[i].graph);
		tdesc_release(&nm->items[i].desc);
	}
	free(nm->items);
	free(nm->hist_item);
	gp_release(&nm->gp);
	hset_release(&nm->seen);
	editdist_vocab_release(&nm->vocab);
	tgraph_release(&nm->start);
	tpool_free(nm->pool);
	free(nm);
	t->priv = NULL;
}

static int nm_init(struct tuner *t)
{
	struct nm *nm = xcalloc(1, sizeof(*nm));
	double v;
	t->priv = nm;
	gp_init(&nm->gp);
	editdist_vocab_init(&nm->vocab, EDITDIST_VOCAB_MAX);
	if (tuner_tpe_options(t, &nm->tpe) < 0 || load_start(t, nm) < 0)
		return -1;
	if (tuner_arg_number(t, "beta", 2.576, &nm->beta) < 0 ||
	    tuner_arg_number(t, "t_min", 1e-4, &nm->t_min) < 0 ||
	    tuner_arg_number(t, "cooling", 0.9, &nm->cooling) < 0 ||
	    tuner_arg_number(t, "distance_cutoff", 6.0, &nm->cutoff) < 0 ||
	    arg_int(t, "n_neighbours", 8, 1, 256, &v) < 0)
		return -1;
	nm->n_neighbours = (int)v;
	if (arg_int(t, "search_pruning", 1, 0, 1, &v) < 0)
		return -1;
	nm->pruning = v != 0;
	if (arg_int(t, "search_batch", 1, 1, 256, &v) < 0)
		return -1;
	nm->search_batch = (int)v;
	if (arg_int(t, "gp_window", NM_WINDOW_DEFAULT, 0, 1e6, &v) < 0)
		return -1;
	nm->window = (int)v;
	if (nm->window && nm->window < 8)
		return error("tuner %s: classArgs.gp_window must be 0 (no window) or 8 or more",
			     t->name);
	if (arg_int(t, "gp_window_best", floor(v / 4), 0, 1e6, &v) < 0)
		return -1;
	nm->window_best = (int)v;
	if (nm->window && nm->window_best >= nm->window - 1)
		return error("tuner %s: classArgs.gp_window_best must be below gp_window - 1 (%d)",
			     t->name, nm->window - 1);
	if (!(nm->t_min > 0 && nm->t_min < 1))
		return error("tuner %s: classArgs.t_min must be in (0, 1)", t->name);
	if (!(nm->cooling > 0 && nm->cooling < 1))
		return error("tuner %s: classArgs.cooling must be in (0, 1)", t->name);
	if (!(nm->beta >= 0) || !(nm->cutoff >= 1))
		return error("tuner %s: classArgs.beta must be >= 0 and distance_cutoff >= 1", t->name);
	int size = tgraph_size(&nm->start);
	uint64_t params = tgraph_params(&nm->start);
	nm->lim.max_layers = t->max_layers ? (int)t->max_layers : size + 100;
	nm->lim.max_params = t->max_params ? t->max_params
					   : (params * 2 > (1u << 24) ? params * 2 : (1u << 24));
	nm->lim.max_flops = t->max_flops;
	if (t->max_flops > 0 && tgraph_flops(&nm->start) > t->max_flops)
		return error("network morphism: the initial model costs %.4g forward FLOPs per "
			     "image, over tuner.maxFlops %.4g", tgraph_flops(&nm->start), t->max_flops);
	if (size > nm->lim.max_layers || params > nm->lim.max_params)
		return error("network morphism: the initial model (%d layers, %llu parameters) is "
			     "already over the limits", size, (unsigned long long)params);
	nm->pool = tpool_create(t->threads);
	nm->gp.pool = nm->pool;
	return 0;
}

int tuner_nm_stats(const struct tuner *t, struct tuner_nm_stats *out)
{
	if (t->ops != &tuner_ops_nm)
		return error("tuner %s has no network morphism statistics", t->name);
	const struct nm *nm = t->priv;
	*out = nm->stats;
	out->gp_escalations = (unsigned long)nm->gp.escalations;
	out->history = (unsigned long)nm->nitems;
	return 0;
}

/* The state cache holds the exact GP only, 8 MB at 1000 trials. */
static unsigned nm_proposer_limit(const struct tuner *t)
{
	const struct nm *nm = t->priv;
	return nm->window > 0 && nm->window < NM_PROPOSER_LIMIT ? (unsigned)nm->window
								 : NM_PROPOSER_LIMIT;
}

const struct tuner_ops tuner_ops_nm = {
	.name = "NetworkMorphism",
	.caps = TUNER_CAP_ARCH | TUNER_CAP_PARAMS,
	.init = nm_init,
	.observe = nm_observe,
	.propose = nm_propose,
	.load = nm_window_load,
	.shed = nm_window_shed,
	.proposer_limit = nm_proposer_limit,
	.release = nm_release,
	.state_save = nm_state_save,
	.state_load = nm_state_load,
};
