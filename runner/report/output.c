/* output.c: the text outputs of a report: terminal summary, results.json
 * (aah-results/1) and the Prometheus text exposition. */
#include "runner/report/report.h"
#include "fileio.h" /* fileio_exists */
#include "runner/pool/ledger.h" /* ledger_read: the device pool */
#include "runner/pool/pooltrial.h" /* pooltrial_waiting: reserved, not running */
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void report_si(struct strbuf *sb, double v, const char *unit)
{
	static const char prefixes[] = " kMGTPEZY";
	size_t i = 0;
	double a = fabs(v);
	while (a >= 1000.0 && i + 1 < sizeof(prefixes) - 1) {
		a /= 1000.0;
		v /= 1000.0;
		i++;
	}
	if (i)
		strbuf_addf(sb, "%.2f %c%s", v, prefixes[i], unit);
	else
		strbuf_addf(sb, "%.2f %s", v, unit);
}

static void count_states(const struct report_exp *exp, size_t counts[TRIAL_NSTATES])
{
	memset(counts, 0, TRIAL_NSTATES * sizeof(*counts));
	for (size_t i = 0; i < exp->ntrials; i++)
		counts[exp->trials[i].state]++;
}

static void layer_line(struct strbuf *sb, const cJSON *layer)
{
	const cJSON *f;
	int first = 1;
	cJSON_ArrayForEach(f, layer) {
		if (!strcmp(f->string, "id") || !strcmp(f->string, "type") ||
		    !strcmp(f->string, "inputs"))
			continue;
		char *v = cJSON_PrintUnformatted(f);
		strbuf_addf(sb, "%s%s=%s", first ? "" : " ", f->string, v ? v : "?");
		cJSON_free(v);
		first = 0;
	}
}

const char *report_rules_name(const struct report_score *sc)
{
	return !strcmp(sc->rules, "report.py") ? "rules of AIPerf's report.py" : "rules of AIPerf's README";
}

const char *report_charge_name(const struct report_score *sc)
{
	return !strcmp(sc->charge, "aiperf") ? "epochs charged as AIPerf's score.py: 1,280,000 + "
					       "50,000 images each"
					     : "epochs charged by the images trained";
}

void report_clock_line(struct strbuf *sb, const struct report_exp *exp)
{
	strbuf_addf(sb, "  Clock:                 starts at the first trial, %.0f s after the "
		    "experiment was created (AIPerf's clock; docs/aiperf.md)\n",
		    exp->start - exp->created);
}

void report_slot_idle(const struct report_exp *exp, double **idle, int *n)
{
	double end = exp->created;
	int maxslot = -1;
	for (size_t i = 0; i < exp->ntrials; i++) {
		const struct report_trial *tr = &exp->trials[i];
		end = fmax(end, tr->finished);
		if (tr->submitted > 0 && tr->slot > maxslot)
			maxslot = tr->slot;
	}
	*n = maxslot + 1;
	*idle = NULL;
	if (*n <= 0 || !(end > exp->created))
		return;
	double *busy = xcalloc((size_t)*n, sizeof(double));
	for (size_t i = 0; i < exp->ntrials; i++) {
		const struct report_trial *tr = &exp->trials[i];
		if (tr->submitted <= 0 || tr->slot < 0)
			continue;
		double b = fmax(tr->submitted, exp->created);
		double e = tr->finished > 0 ? fmin(tr->finished, end) : end;
		if (e > b)
			busy[tr->slot] += e - b;
	}
	for (int k = 0; k < *n; k++)
		busy[k] = fmax(0.0, 1.0 - busy[k] / (end - exp->created));
	*idle = busy;
}

void report_summary(struct strbuf *sb, const struct report_exp *exp,
		    const struct report_score *sc)
{
	size_t counts[TRIAL_NSTATES];
	count_states(exp, counts);
	strbuf_addf(sb, "Experiment %s%s%s%s\n", exp->id, exp->name[0] ? " (" : "", exp->name,
		    exp->name[0] ? ")" : "");
	strbuf_addf(sb, "  Result:                %s (%s)\n", sc->valid ? "Succeed" : "Failed",
		    report_rules_name(sc));
	for (size_t i = 0; i < sc->nfailed; i++)
		strbuf_addf(sb, "    failed rule:         %s\n", sc->failed[i]);
	if (sc->no_score) {   /* accuracies only: a 0 would read as a slow machine */
		strbuf_addf(sb, "  Final Score:           none: %s\n", report_no_score);
		strbuf_addstr(sb, "  Final Regulated Score: none");
	} else {
		strbuf_addstr(sb, "  Final Score:           ");
		report_si(sb, sc->final.score, "FLOPS");
		strbuf_addstr(sb, "\n  Final Regulated Score: ");
		report_si(sb, sc->final.regulated, "FLOPS");
	}
	strbuf_addf(sb, "\n  Error:                 %.2f%%\n", sc->final.error);
	strbuf_addstr(sb, "  FLOPs:                 ");
	report_si(sb, sc->final.flops, "FLOP");
	strbuf_addf(sb, " (%s; by images trained ", report_charge_name(sc));
	report_si(sb, sc->final.flops_images, "FLOP");
	strbuf_addstr(sb, ")\n");
	report_clock_line(sb, exp);
	strbuf_addf(sb, "  Duration:              %.2f h (%zu epochs, %zu sample points%s)\n",
		    sc->duration_s / 3600, sc->nepochs, sc->nsamples,
		    sc->final_from_samples ? "" : "; values at the last epoch");
	strbuf_addf(sb, "  Trials:                %zu", exp->ntrials);
	for (int s = 0; s < TRIAL_NSTATES; s++)
		if (counts[s])
			strbuf_addf(sb, ", %zu %s", counts[s], expdir_state_name((enum trial_state)s));
	size_t inherited = 0;
	for (size_t i = 0; i < exp->ntrials; i++)
		inherited += exp->trials[i].inherited_from[0] != 0;
	if (inherited)   /* FLOPs count each trial's own epochs only */
		strbuf_addf(sb, "; %zu started from a parent's weights", inherited);
	strbuf_addch(sb, '\n');
	double *idle;
	int nslots;
	report_slot_idle(exp, &idle, &nslots);
	if (idle) {
		strbuf_addstr(sb, "  Slot idle:            ");
		for (int k = 0; k < nslots; k++)
			strbuf_addf(sb, "%s slot %d %.2f%%", k ? "," : "", k, 100 * idle[k]);
		strbuf_addch(sb, '\n');
	}
	free(idle);
	report_pool_summary(sb, &exp->pool);
	if (exp->best >= 0) {
		const struct report_trial *b = &exp->trials[exp->best];
		strbuf_addf(sb, "  Best trial:            %s (accuracy %.2f%%", b->id, 100 * b->best_acc);
		if (b->inherited_from[0])
			strbuf_addf(sb, ", from the weights of %s", b->inherited_from);
		if (b->backend[0])
			strbuf_addf(sb, "; %s%s%s%s%s", b->backend, b->device[0] ? " on " : "", b->device,
				    b->precision[0] ? ", " : "", b->precision);
		strbuf_addstr(sb, ")\n");
		const cJSON *layers = cJSON_GetObjectItemCaseSensitive(exp->best_arch, "layers");
		const cJSON *l;
		cJSON_ArrayForEach(l, layers) {
			const cJSON *id = cJSON_GetObjectItemCaseSensitive(l, "id");
			const cJSON *type = cJSON_GetObjectItemCaseSensitive(l, "type");
			strbuf_addf(sb, "    %-16s %-16s ", cJSON_IsString(id) ? id->valuestring : "?",
				    cJSON_IsString(type) ? type->valuestring : "?");
			layer_line(sb, l);
			strbuf_addch(sb, '\n');
		}
	}
}

static cJSON *sample_json(const struct report_sample *s)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "hours", s->hours);
	cJSON_AddNumberToObject(o, "elapsed_s", s->elapsed_s);
	cJSON_AddNumberToObject(o, "flops", s->flops);
	cJSON_AddNumberToObject(o, "flops_images", s->flops_images);
	cJSON_AddNumberToObject(o, "score_flops", s->score);
	cJSON_AddNumberToObject(o, "regulated_score_flops", s->regulated);
	cJSON_AddNumberToObject(o, "best_acc", s->best_acc);
	cJSON_AddNumberToObject(o, "error_pct", s->error);
	return o;
}

cJSON *report_results_json(const struct report_exp *exp, const struct report_options *opt,
			   const struct report_score *sc)
{
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "format", "aah-results/1");
	cJSON_AddStringToObject(doc, "experiment", exp->id);
	cJSON_AddNumberToObject(doc, "created", exp->created);
	cJSON_AddNumberToObject(doc, "start", exp->start);
	cJSON_AddStringToObject(doc, "rule_set", sc->rules);
	cJSON_AddStringToObject(doc, "epoch_charge", sc->charge);
	cJSON_AddStringToObject(doc, "aiperf_comparison", "docs/aiperf.md");
	cJSON_AddBoolToObject(doc, "experiment_done", exp->done);
	cJSON_AddStringToObject(doc, "result", sc->valid ? "Succeed" : "Failed");
	if (sc->no_score)
		cJSON_AddStringToObject(doc, "no_score", report_no_score);
	cJSON *rules = cJSON_AddArrayToObject(doc, "failed_rules");
	for (size_t i = 0; i < sc->nfailed; i++)
		cJSON_AddItemToArray(rules, cJSON_CreateString(sc->failed[i]));
	cJSON *o = cJSON_AddObjectToObject(doc, "rules");
	cJSON_AddNumberToObject(o, "min_duration_s", opt->min_duration_s);
	cJSON_AddNumberToObject(o, "min_accuracy", opt->min_accuracy);
	cJSON_AddStringToObject(o, "min_precision", opt->min_precision);
	cJSON_AddNumberToObject(o, "sample_first_h", opt->sample_first_h);
	cJSON_AddNumberToObject(o, "sample_step_h", opt->sample_step_h);
	cJSON *fin = sample_json(&sc->final);
	cJSON_AddStringToObject(fin, "from", sc->final_from_samples ? "samples" : "last_epoch");
	cJSON_AddItemToObject(doc, "final", fin);
	cJSON_AddNumberToObject(doc, "duration_s", sc->duration_s);
	cJSON_AddNumberToObject(doc, "epochs", (double)sc->nepochs);
	size_t counts[TRIAL_NSTATES];
	count_states(exp, counts);
	o = cJSON_AddObjectToObject(doc, "trials_by_state");
	for (int s = 0; s < TRIAL_NSTATES; s++)
		cJSON_AddNumberToObject(o, expdir_state_name((enum trial_state)s), (double)counts[s]);
	if (exp->best >= 0) {
		cJSON_AddStringToObject(doc, "best_trial", exp->trials[exp->best].id);
		if (exp->best_arch)
			cJSON_AddItemToObject(doc, "best_arch", cJSON_Duplicate(exp->best_arch, 1));
	}
	cJSON *arr = cJSON_AddArrayToObject(doc, "samples");
	for (size_t i = 0; i < sc->nsamples; i++)
		cJSON_AddItemToArray(arr, sample_json(&sc->samples[i]));
	double *idle;
	int nslots;
	report_slot_idle(exp, &idle, &nslots);
	arr = cJSON_AddArrayToObject(doc, "slot_idle");
	for (int k = 0; idle && k < nslots; k++)
		cJSON_AddItemToArray(arr, cJSON_CreateNumber(idle[k]));
	free(idle);
	arr = cJSON_AddArrayToObject(doc, "trials");
	for (size_t i = 0; i < exp->ntrials; i++) {
		const struct report_trial *tr = &exp->trials[i];
		cJSON *t = cJSON_CreateObject();
		cJSON_AddStringToObject(t, "id", tr->id);
		cJSON_AddStringToObject(t, "state", expdir_state_name(tr->state));
		cJSON_AddNumberToObject(t, "slot", tr->slot);
		cJSON_AddNumberToObject(t, "epochs", (double)tr->nepochs);
		cJSON_AddNumberToObject(t, "best_acc", tr->best_acc);
		cJSON_AddNumberToObject(t, "flops", tr->flops);
		if (tr->precision[0])
			cJSON_AddStringToObject(t, "precision", tr->precision);
		if (tr->backend[0])
			cJSON_AddStringToObject(t, "backend", tr->backend);
		if (tr->device[0])
			cJSON_AddStringToObject(t, "device", tr->device);
		if (tr->reason[0])
			cJSON_AddStringToObject(t, "reason", tr->reason);
		if (tr->inherited_from[0])
			cJSON_AddStringToObject(t, "inherited_from", tr->inherited_from);
		cJSON_AddItemToArray(arr, t);
	}
	return doc;
}

/* Label values: backslash, double quote and newline are escaped. */
static void prom_label(struct strbuf *sb, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			strbuf_addch(sb, '\\');
		if (*s == '\n')
			strbuf_addstr(sb, "\\n");
		else
			strbuf_addch(sb, *s);
	}
}

static void prom_head(struct strbuf *sb, const char *name, const char *help)
{
	strbuf_addf(sb, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

static void prom_value(struct strbuf *sb, const struct report_exp *exp, const char *name,
		       const char *extra_label, const char *extra_value, double v)
{
	strbuf_addf(sb, "%s{experiment=\"", name);
	prom_label(sb, exp->id);
	if (extra_label) {
		strbuf_addf(sb, "\",%s=\"", extra_label);
		prom_label(sb, extra_value);
	}
	strbuf_addf(sb, "\"} %.17g\n", v);
}

/* The experiment's trainings in the work directory's device pool: each
 * one's priority, share and the devices it runs on (runner/pool/ledger.h). */
static void prom_pool(struct strbuf *sb, const struct report_exp *exp)
{
	const char *wd = exp->workdir;
	char *journal = xstrfmt("%s/pool/ledger.jsonl", wd);
	struct ledger l;
	ledger_init(&l, wd);
	if (fileio_exists(journal) && ledger_read(&l) == 0) {
		static const char *const names[3][2] = {
			{ "aah_pool_priority", "Device pool priority of each running trial." },
			{ "aah_pool_devices", "Devices of each running trial's share of the pool." },
			{ "aah_pool_running_on", "Devices each running trial runs on now." },
		};
		size_t n = strlen(exp->id);
		for (int k = 0; k < 3; k++) {
			prom_head(sb, names[k][0], names[k][1]);
			for (size_t i = 0; i < l.n; i++) {
				const struct ledger_training *t = &l.t[i];
				if (strncmp(t->id, exp->id, n) || t->id[n] != '/')
					continue;
				double v = k == 0 ? (double)t->priority : k == 1 ? t->share : t->applied;
				char *waiting = k == 2 && v ? pooltrial_waiting(wd, t->id) : NULL;
				if (waiting)   /* reserved, not run on: its queue holds its Job */
					v = 0;
				free(waiting);
				prom_value(sb, exp, names[k][0], "trial", t->id + n + 1, v);
			}
		}
	}
	ledger_release(&l);
	free(journal);
}

/* How often each training of the experiment changed its devices, by kind:
 * a counter over the ledger's history (runner/report/pool.c). */
static void prom_pool_events(struct strbuf *sb, const struct report_exp *exp)
{
	const struct report_pool *p = &exp->pool;
	if (!p->devices)
		return;
	strbuf_addstr(sb, "# HELP aah_pool_events_total Device pool changes of each trial by kind "
		      "(start, grow, shrink, preempt, resume, end).\n"
		      "# TYPE aah_pool_events_total counter\n");
	size_t n = strlen(exp->id);
	for (size_t i = 0; i < p->n; i++) {
		if (!p->t[i].mine)
			continue;
		for (int k = 0; k < REPORT_POOL_NKINDS; k++) {
			unsigned count = 0;
			for (size_t e = 0; e < p->nev; e++)
				count += p->ev[e].training == i && p->ev[e].kind == (enum report_pool_kind)k;
			strbuf_addstr(sb, "aah_pool_events_total{experiment=\"");
			prom_label(sb, exp->id);
			strbuf_addstr(sb, "\",trial=\"");
			prom_label(sb, p->t[i].id + n + 1);
			strbuf_addf(sb, "\",kind=\"%s\"} %u\n", report_pool_kind_name((enum report_pool_kind)k),
				    count);
		}
	}
}

void report_prometheus(struct strbuf *sb, const struct report_exp *exp,
		       const struct report_score *sc)
{
	size_t counts[TRIAL_NSTATES];
	count_states(exp, counts);
	prom_head(sb, "aah_trials", "Trials of the experiment by state.");
	for (int s = 0; s < TRIAL_NSTATES; s++)
		prom_value(sb, exp, "aah_trials", "state", expdir_state_name((enum trial_state)s),
			   (double)counts[s]);
	prom_head(sb, "aah_best_accuracy", "Best validation accuracy so far, in [0,1].");
	prom_value(sb, exp, "aah_best_accuracy", NULL, NULL, sc->final.best_acc);
	prom_head(sb, "aah_error_percent", "AIPerf Error: 100 - 100 x best accuracy.");
	prom_value(sb, exp, "aah_error_percent", NULL, NULL, sc->final.error);
	prom_head(sb, "aah_score_flops", "AIPerf Score: FLOPs of finished epochs per second.");
	prom_value(sb, exp, "aah_score_flops", NULL, NULL, sc->final.score);
	prom_head(sb, "aah_regulated_score_flops", "AIPerf Regulated Score: Score x |ln(error)|.");
	prom_value(sb, exp, "aah_regulated_score_flops", NULL, NULL, sc->final.regulated);
	prom_head(sb, "aah_elapsed_seconds", "Seconds from the experiment start to the last epoch.");
	prom_value(sb, exp, "aah_elapsed_seconds", NULL, NULL, sc->duration_s);
	prom_head(sb, "aah_valid", "1 when every validity rule holds, else 0.");
	prom_value(sb, exp, "aah_valid", NULL, NULL, sc->valid);
	prom_head(sb, "aah_trial_images_per_second",
		  "Training images per second in the trial's last epoch.");
	for (size_t i = 0; i < exp->ntrials; i++) {
		const struct report_trial *tr = &exp->trials[i];
		if (tr->nepochs)
			prom_value(sb, exp, "aah_trial_images_per_second", "trial", tr->id,
				   tr->epochs[tr->nepochs - 1].images_per_sec);
	}
	prom_pool(sb, exp);
	prom_pool_events(sb, exp);
	prom_head(sb, "aah_trial_best_accuracy", "Best validation accuracy of each trial.");
	for (size_t i = 0; i < exp->ntrials; i++) {
		const struct report_trial *tr = &exp->trials[i];
		if (tr->nepochs)
			prom_value(sb, exp, "aah_trial_best_accuracy", "trial", tr->id, tr->best_acc);
	}
	/* the intermediate series: how far each trial is, and where it stands */
	prom_head(sb, "aah_trial_epochs", "Epochs (intermediate results) each trial reported.");
	for (size_t i = 0; i < exp->ntrials; i++)
		prom_value(sb, exp, "aah_trial_epochs", "trial", exp->trials[i].id,
			   (double)exp->trials[i].nepochs);
	prom_head(sb, "aah_trial_last_accuracy",
		  "Validation accuracy of each trial's last epoch (its latest intermediate result).");
	for (size_t i = 0; i < exp->ntrials; i++) {
		const struct report_trial *tr = &exp->trials[i];
		if (tr->nepochs)
			prom_value(sb, exp, "aah_trial_last_accuracy", "trial", tr->id,
				   tr->epochs[tr->nepochs - 1].val_acc);
	}
}
