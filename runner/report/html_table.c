/* html_table.c: the tables of report.html (html.c draws its charts and
 * writes the page): every trial, the best trial's architecture layer by
 * layer, and the Score's sample points. Every value from an experiment's
 * files is escaped. */
#include "runner/report/report.h"
#include "util.h"

#include <string.h>

void report_html_arch(struct strbuf *sb, const struct report_exp *exp)
{
	strbuf_addstr(sb, "<h2>Best architecture</h2>\n");
	if (exp->best < 0) {
		strbuf_addstr(sb, "<p>No trial has reported an accuracy yet.</p>\n");
		return;
	}
	const struct report_trial *b = &exp->trials[exp->best];
	strbuf_addf(sb, "<p>Trial %s, best validation accuracy %.2f%%.</p>\n", b->id, 100 * b->best_acc);
	const cJSON *layers = cJSON_GetObjectItemCaseSensitive(exp->best_arch, "layers");
	if (!exp->best_arch) {   /* no tuner proposed one: a TPE search, a trial's own network */
		strbuf_addstr(sb, "<p>No architecture was proposed to it: its network is its own "
			      "code's (no arch.json).</p>\n");
		return;
	}
	if (!cJSON_IsArray(layers)) {
		strbuf_addstr(sb, "<p>Its arch.json holds no layers.</p>\n");
		return;
	}
	strbuf_addstr(sb, "<table id=\"arch\"><tr><th>#</th><th>id</th><th>type</th><th>inputs</th>"
		      "<th>settings</th></tr>\n");
	const cJSON *l;
	int i = 0;
	cJSON_ArrayForEach(l, layers) {
		strbuf_addf(sb, "<tr><td>%d</td>", ++i);
		const cJSON *f;
		static const char *const keys[] = { "id", "type", "inputs" };
		for (size_t k = 0; k < ARRAY_SIZE(keys); k++) {
			f = cJSON_GetObjectItemCaseSensitive(l, keys[k]);
			strbuf_addstr(sb, "<td>");
			if (cJSON_IsString(f)) {
				strbuf_addstr_html(sb, f->valuestring);
			} else if (cJSON_IsArray(f)) {
				const cJSON *in;
				int first = 1;
				cJSON_ArrayForEach(in, f) {
					if (!cJSON_IsString(in))
						continue;
					strbuf_addstr(sb, first ? "" : ", ");
					strbuf_addstr_html(sb, in->valuestring);
					first = 0;
				}
			}
			strbuf_addstr(sb, "</td>");
		}
		strbuf_addstr(sb, "<td>");
		cJSON_ArrayForEach(f, l) {
			if (!strcmp(f->string, "id") || !strcmp(f->string, "type") ||
			    !strcmp(f->string, "inputs"))
				continue;
			char *v = cJSON_PrintUnformatted(f);
			strbuf_addstr_html(sb, f->string);
			strbuf_addch(sb, '=');
			strbuf_addstr_html(sb, v ? v : "?");
			strbuf_addch(sb, ' ');
			cJSON_free(v);
		}
		strbuf_addstr(sb, "</td></tr>\n");
	}
	strbuf_addstr(sb, "</table>\n");
}

/* Every trial: its state, epochs, best (an NNI trial: final) and last
 * accuracy, and why it ended where it did not succeed. */
void report_html_trials(struct strbuf *sb, const struct report_exp *exp)
{
	strbuf_addstr(sb, "<h2>Trials</h2>\n<table id=\"trials\"><tr><th>trial</th><th>state</th>"
		      "<th>epochs</th><th>best accuracy</th><th>last epoch</th><th>reason</th></tr>\n");
	for (size_t i = 0; i < exp->ntrials; i++) {
		const struct report_trial *tr = &exp->trials[i];
		strbuf_addf(sb, "<tr class=\"trial %s\"><td>%s</td><td>%s</td><td>%zu</td>",
			    expdir_state_name(tr->state), tr->id, expdir_state_name(tr->state), tr->nepochs);
		if (tr->nepochs)
			strbuf_addf(sb, "<td>%.4f</td><td>%.4f</td><td>", tr->best_acc,
				    tr->epochs[tr->nepochs - 1].val_acc);
		else
			strbuf_addstr(sb, "<td></td><td></td><td>");
		if (tr->state != TRIAL_SUCCEEDED)
			strbuf_addstr_html(sb, tr->reason);
		strbuf_addstr(sb, "</td></tr>\n");
	}
	strbuf_addstr(sb, "</table>\n");
}

void report_html_samples(struct strbuf *sb, const struct report_score *sc)
{
	strbuf_addstr(sb, "<h2>Sample points</h2>\n<table id=\"samples\"><tr><th>hours</th>"
		      "<th>elapsed (s)</th><th>FLOPs</th><th>Score</th><th>Regulated Score</th>"
		      "<th>Error (%)</th></tr>\n");
	for (size_t i = 0; i < sc->nsamples; i++) {
		const struct report_sample *s = &sc->samples[i];
		strbuf_addf(sb, "<tr class=\"sample\"><td>%.2f</td><td>%.0f</td><td>", s->hours,
			    s->elapsed_s);
		if (sc->no_score) {   /* accuracies only: no 0 that reads as a Score */
			strbuf_addstr(sb, "none</td><td>none</td><td>none");
		} else {
			report_si(sb, s->flops, "FLOPs");
			strbuf_addstr(sb, "</td><td>");
			report_si(sb, s->score, "FLOPS");
			strbuf_addstr(sb, "</td><td>");
			report_si(sb, s->regulated, "FLOPS");
		}
		strbuf_addf(sb, "</td><td>%.2f</td></tr>\n", s->error);
	}
	strbuf_addstr(sb, "</table>\n");
}
