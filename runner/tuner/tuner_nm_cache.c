/* tuner_nm_cache.c: the network morphism tuner's state in tuner.cache: its
 * GP rows with the observations they cover, so that a proposal inside a
 * trial does not refit the whole history (docs/tuner.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner_nm_int.h"
#include "util.h"

/* One observation the cached state covers, as the payload stores it. */
struct nm_entry {
	uint32_t seq;
	int32_t state;
	int32_t row;       /* GP row, -1: ignored by the search */
	uint32_t pad;
	double metric;
	uint64_t hash;     /* tgraph_hash of its architecture (0 when ignored) */
};

/* What the cached GP rows depend on besides the history: classArgs (the
 * cutoff, the optimisation direction, the start model) and the start graph
 * (tuner.initialArch). */
static void config_hash(const struct tuner *t, const struct nm *nm, char out[17])
{
	char *args = cJSON_PrintUnformatted(t->class_args);
	uint64_t sh = tgraph_hash(&nm->start);
	uint64_t h = tuner_fnv(TUNER_FNV_INIT, args, strlen(args));
	h = tuner_fnv(h, &sh, sizeof(sh));
	snprintf(out, 17, "%016llx", (unsigned long long)h);
	free(args);
}

int nm_state_save(const struct tuner *t, cJSON *header, unsigned char **payload,
		  size_t *len)
{
	const struct nm *nm = t->priv;
	char cfg[17];
	size_t head = t->nhist * sizeof(struct nm_entry);
	if (nm->gp.removed)   /* the runner proposes on the master by then */
		return error("network morphism: past classArgs.gp_window (%d) the GP's state is "
			     "not cached", nm->window);
	config_hash(t, nm, cfg);
	cJSON_AddStringToObject(header, "config", cfg);
	cJSON_AddNumberToObject(header, "gp_rows", nm->gp.n);
	cJSON_AddNumberToObject(header, "gp_escalations", nm->gp.escalations);
	cJSON_AddNumberToObject(header, "gp_lost", nm->gp.lost);
	cJSON_AddNumberToObject(header, "gp_max_jitter", nm->gp.max_jitter);
	*len = head + gp_state_bytes(nm->gp.n);
	*payload = xcalloc(*len ? *len : 1, 1);
	for (size_t i = 0; i < t->nhist; i++) {
		const struct tuner_hist *h = &t->hist[i];
		int it = i < nm->ahist ? nm->hist_item[i] : -1;
		struct nm_entry e = { .seq = h->seq, .state = (int32_t)h->state,
				      .row = it >= 0 ? nm->items[it].row : -1, .metric = h->metric,
				      .hash = it >= 0 ? nm->items[it].desc.hash : 0 };
		memcpy(*payload + i * sizeof(e), &e, sizeof(e));
	}
	gp_state_pack(&nm->gp, *payload + head);
	return 0;
}

static int header_int(const cJSON *header, const char *key, double max, int *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(header, key);
	if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= max) ||
	    v->valuedouble != (int)v->valuedouble)
		return -1;
	*out = (int)v->valuedouble;
	return 0;
}

int nm_state_load(struct tuner *t, const cJSON *header, const unsigned char *payload,
		  size_t len)
{
	struct nm *nm = t->priv;
	char cfg[17];
	int rows, esc, lost;
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(header, "config");
	const cJSON *mj = cJSON_GetObjectItemCaseSensitive(header, "gp_max_jitter");
	size_t head = t->nhist * sizeof(struct nm_entry);
	config_hash(t, nm, cfg);
	if (nm->nitems || nm->gp.n || !cJSON_IsString(c) || strcmp(c->valuestring, cfg) ||
	    header_int(header, "gp_rows", (double)t->nhist, &rows) < 0 ||
	    header_int(header, "gp_escalations", (double)t->nhist, &esc) < 0 ||
	    header_int(header, "gp_lost", (double)t->nhist, &lost) < 0 || !cJSON_IsNumber(mj) ||
	    len != head + gp_state_bytes(rows))
		return 0;
	/* every covered observation as the history has it now, in order */
	struct nm_item *items = xcalloc(t->nhist ? t->nhist : 1, sizeof(*items));
	int nitems = 0, match = 1;
	for (size_t i = 0; i < t->nhist && match; i++) {
		const struct tuner_hist *h = &t->hist[i];
		struct nm_entry e;
		memcpy(&e, payload + i * sizeof(e), sizeof(e));
		int usable = nm_make_item(t, nm, i, &items[nitems]);
		match = e.seq == h->seq && e.state == (int32_t)h->state &&
			h->state != TUNER_OBS_PENDING &&
			!memcmp(&e.metric, &h->metric, sizeof(double)) &&
			(usable ? e.row == nitems && e.hash == items[nitems].desc.hash
				: e.row == -1 && e.hash == 0);
		if (usable) {
			items[nitems].row = nitems;
			nitems++;
		}
	}
	if (!match || nitems != rows) {
		for (int i = 0; i < nitems; i++) {
			tgraph_release(&items[i].graph);
			tdesc_release(&items[i].desc);
		}
		free(items);
		return 0;
	}
	if (t->nhist)
		nm_hist_item_reserve(nm, t->nhist - 1);
	for (int i = 0; i < nitems; i++)
		nm_add_item(nm, &items[i]);
	free(items);
	gp_state_unpack(&nm->gp, rows, payload + head);
	nm->gp.escalations = esc;
	nm->gp.lost = lost;
	nm->gp.max_jitter = mj->valuedouble;
	return 1;
}
