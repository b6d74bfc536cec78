/* html.c: report.html, one self-contained page: inline CSS and SVG, no
 * script, nothing fetched from the network. Every chart is an <svg> with an
 * id (chart-error, chart-score, chart-regulated, chart-timeline,
 * chart-accuracy, chart-series, chart-util, and chart-pool where the experiment used a
 * device pool) whose data points carry a class, so a test (or a reader's
 * tool) can find them in the DOM. */
#include "runner/report/report.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define W 760.0
#define H 280.0
#define ML 80.0   /* margins: left, right, top, bottom */
#define MR 20.0
#define MT 24.0
#define MB 44.0

struct axis {
	double lo, hi;
	int log;      /* log10 scale */
	int noticks;  /* the chart draws its own labels */
};

static double axis_pos(const struct axis *a, double v, double from, double to)
{
	double lo = a->lo, hi = a->hi;
	if (a->log) {
		v = log10(v > 0 ? v : a->lo);
		lo = log10(lo);
		hi = log10(hi);
	}
	double f = hi > lo ? (v - lo) / (hi - lo) : 0.5;
	return from + f * (to - from);
}

static double x_of(const struct axis *a, double v) { return axis_pos(a, v, ML, W - MR); }
static double y_of(const struct axis *a, double v) { return axis_pos(a, v, H - MB, MT); }

/* A range that includes lo..hi with some room, nice for ticks. */
static struct axis axis_make(double lo, double hi, int zero, int logscale)
{
	struct axis a = { lo, hi, 0, 0 };
	if (logscale && lo > 0 && hi / lo > 100) {
		a.log = 1;
		a.lo = pow(10, floor(log10(lo)));
		a.hi = pow(10, ceil(log10(hi)));
		return a;
	}
	if (zero && a.lo > 0)
		a.lo = 0;
	if (!(a.hi > a.lo))
		a.hi = a.lo + (a.lo != 0 ? fabs(a.lo) : 1);
	return a;
}

/* Short tick text: "%g" with an SI prefix when a unit is given. */
static void tick_label(struct strbuf *sb, double v, const char *unit)
{
	static const char prefixes[] = " kMGTPEZY";
	size_t i = 0;
	if (fabs(v) < 1e-12)
		v = 0;
	while (unit && fabs(v) >= 1000.0 && i + 2 < sizeof(prefixes)) {
		v /= 1000.0;
		i++;
	}
	strbuf_addf(sb, "%.3g", v);
	if (unit && i)
		strbuf_addf(sb, " %c%s", prefixes[i], unit);
	else if (unit)
		strbuf_addf(sb, " %s", unit);
}

static void axes(struct strbuf *sb, const struct axis *x, const struct axis *y, const char *xlabel,
		 const char *ylabel, const char *xunit, const char *yunit)
{
	strbuf_addf(sb, "<line class=\"axis\" x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\"/>"
		    "<line class=\"axis\" x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\"/>\n",
		    ML, H - MB, W - MR, H - MB, ML, H - MB, ML, MT);
	for (int k = 0; k < 2; k++) {
		const struct axis *a = k ? y : x;
		double step, first;
		if (a->noticks)
			continue;
		if (a->log) {
			step = 0;
			first = a->lo;
		} else {
			double raw = (a->hi - a->lo) / 5, mag = pow(10, floor(log10(raw)));
			double norm = raw / mag;
			step = mag * (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10);
			first = ceil(a->lo / step) * step;
			if (!(step > 0))
				continue;
		}
		for (double v = first; v <= a->hi * (1 + 1e-9) + 1e-300;
		     v = a->log ? v * 10 : v + step) {
			struct strbuf lab = STRBUF_INIT;
			tick_label(&lab, v, k ? yunit : xunit);
			if (k)
				strbuf_addf(sb, "<line class=\"grid\" x1=\"%g\" y1=\"%.1f\" x2=\"%g\" y2=\"%.1f\"/>"
					    "<text class=\"tick\" x=\"%g\" y=\"%.1f\" text-anchor=\"end\">",
					    ML, y_of(a, v), W - MR, y_of(a, v), ML - 6, y_of(a, v) + 4);
			else
				strbuf_addf(sb, "<text class=\"tick\" x=\"%.1f\" y=\"%g\" text-anchor=\"middle\">",
					    x_of(a, v), H - MB + 16);
			strbuf_addstr_html(sb, strbuf_str(&lab));
			strbuf_addstr(sb, "</text>\n");
			strbuf_release(&lab);
		}
	}
	strbuf_addf(sb, "<text class=\"label\" x=\"%g\" y=\"%g\" text-anchor=\"middle\">", (ML + W - MR) / 2,
		    H - 8);
	strbuf_addstr_html(sb, xlabel);
	strbuf_addf(sb, "</text><text class=\"label\" x=\"14\" y=\"%g\" text-anchor=\"middle\" "
		    "transform=\"rotate(-90 14 %g)\">", (MT + H - MB) / 2, (MT + H - MB) / 2);
	strbuf_addstr_html(sb, ylabel);
	strbuf_addstr(sb, "</text>\n");
}

static void svg_open(struct strbuf *sb, const char *id, const char *title)
{
	strbuf_addf(sb, "<figure><figcaption>%s</figcaption>\n<svg id=\"%s\" class=\"chart\" "
		    "xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %g %g\" width=\"%g\" height=\"%g\">\n",
		    title, id, W, H, W, H);
}

static void svg_close(struct strbuf *sb)
{
	strbuf_addstr(sb, "</svg></figure>\n");
}

/* Which field of a sample a chart shows. */
enum sample_field { F_ERROR, F_SCORE, F_REGULATED };

static double field(const struct report_sample *s, enum sample_field f)
{
	return f == F_ERROR ? s->error : f == F_SCORE ? s->score : s->regulated;
}

static void chart_samples(struct strbuf *sb, const struct report_score *sc, const char *id,
			  const char *title, enum sample_field f, const char *ylabel, const char *unit)
{
	svg_open(sb, id, title);
	if (!sc->nsamples || (sc->no_score && f != F_ERROR)) {
		strbuf_addf(sb, "<text class=\"empty\" x=\"%g\" y=\"%g\" text-anchor=\"middle\">%s</text>\n",
			    W / 2, H / 2, sc->nsamples ? "no Score: the trials counted no FLOPs"
						   : "no sample point yet");
		svg_close(sb);
		return;
	}
	double xmax = 0, ymin = INFINITY, ymax = -INFINITY;
	for (size_t i = 0; i < sc->nsamples; i++) {
		double v = field(&sc->samples[i], f);
		xmax = fmax(xmax, sc->samples[i].hours);
		ymin = fmin(ymin, v);
		ymax = fmax(ymax, v);
	}
	struct axis x = axis_make(0, xmax, 1, 0);
	struct axis y = axis_make(ymin, f == F_ERROR ? fmax(ymax, 100) : ymax, 1, 0);
	axes(sb, &x, &y, "hours since the start", ylabel, NULL, unit);
	strbuf_addstr(sb, "<polyline class=\"series\" points=\"");
	for (size_t i = 0; i < sc->nsamples; i++)
		strbuf_addf(sb, "%.1f,%.1f ", x_of(&x, sc->samples[i].hours),
			    y_of(&y, field(&sc->samples[i], f)));
	strbuf_addstr(sb, "\"/>\n");
	for (size_t i = 0; i < sc->nsamples; i++) {
		strbuf_addf(sb, "<circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\"><title>%.2f h: ",
			    x_of(&x, sc->samples[i].hours), y_of(&y, field(&sc->samples[i], f)),
			    sc->samples[i].hours);
		tick_label(sb, field(&sc->samples[i], f), unit);
		strbuf_addstr(sb, "</title></circle>\n");
	}
	svg_close(sb);
}

/* Where a trial's bar ends: its finish, else (running) the latest data of
 * the experiment, capped by the clock. */
static double bar_end(const struct report_trial *tr, double horizon)
{
	if (tr->finished > 0)
		return tr->finished;
	if (tr->nepochs && tr->state != TRIAL_RUNNING)
		return tr->epochs[tr->nepochs - 1].ts;
	return fmax(horizon, tr->submitted);
}

static double latest_data(const struct report_exp *exp, double now)
{
	double t = exp->created;
	for (size_t i = 0; i < exp->ntrials; i++) {
		const struct report_trial *tr = &exp->trials[i];
		t = fmax(t, fmax(tr->submitted, tr->finished));
		if (tr->nepochs)
			t = fmax(t, tr->epochs[tr->nepochs - 1].ts);
	}
	if (exp->nutil)
		t = fmax(t, exp->util[exp->nutil - 1].ts);
	return now > exp->created ? fmin(t, now) : t;
}

static void chart_timeline(struct strbuf *sb, const struct report_exp *exp, double clock)
{
	svg_open(sb, "chart-timeline", "Trials per slot over time (gaps are idle slots)");
	int maxslot = -1;
	double tmax = exp->created, now = latest_data(exp, clock);
	for (size_t i = 0; i < exp->ntrials; i++) {
		const struct report_trial *tr = &exp->trials[i];
		if (tr->submitted <= 0)
			continue;
		if (tr->slot > maxslot)
			maxslot = tr->slot;
		tmax = fmax(tmax, bar_end(tr, now));
	}
	struct axis x = axis_make(0, (tmax - exp->created) / 3600.0, 1, 0);
	int rows = maxslot + 2;     /* row 0: trials without a slot */
	struct axis y = { 0, rows, 0, 1 };
	axes(sb, &x, &y, "hours since the start", "slot", NULL, NULL);
	double rowh = (H - MB - MT) / rows;
	int every = rows > 24 ? rows / 12 : 1;
	for (int s = -1; s <= maxslot; s += every) {
		strbuf_addf(sb, "<text class=\"tick\" x=\"%g\" y=\"%.1f\" text-anchor=\"end\">",
			    ML - 6, y_of(&y, s + 1.5) + 4);
		if (s < 0)
			strbuf_addstr(sb, "none</text>\n");
		else
			strbuf_addf(sb, "%d</text>\n", s);
	}
	for (size_t i = 0; i < exp->ntrials; i++) {
		const struct report_trial *tr = &exp->trials[i];
		if (tr->submitted <= 0)
			continue;
		double x0 = x_of(&x, (tr->submitted - exp->created) / 3600.0);
		double x1 = x_of(&x, (bar_end(tr, now) - exp->created) / 3600.0);
		double y0 = y_of(&y, tr->slot + 2) + 1;
		strbuf_addf(sb, "<rect class=\"trial %s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
			    "height=\"%.1f\"><title>trial %s, slot %d, %s</title></rect>\n",
			    expdir_state_name(tr->state), x0, y0, fmax(x1 - x0, 0.5),
			    fmax(rowh - 2, 0.5), tr->id, tr->slot, expdir_state_name(tr->state));
	}
	svg_close(sb);
}

/* chart-accuracy of trials that counted no FLOPs (NNI trial code): their
 * best accuracy by trial number. */
static void chart_accuracy_by_trial(struct strbuf *sb, const struct report_exp *exp)
{
	size_t n = 0;
	for (size_t i = 0; i < exp->ntrials; i++)
		n += exp->trials[i].nepochs > 0;
	if (!n) {
		strbuf_addf(sb, "<text class=\"empty\" x=\"%g\" y=\"%g\" text-anchor=\"middle\">no finished "
			    "epoch yet</text>\n", W / 2, H / 2);
		svg_close(sb);
		return;
	}
	struct axis x = axis_make(0, (double)exp->trials[exp->ntrials - 1].seq + 1, 1, 0);
	struct axis y = { 0, 1, 0, 0 };
	axes(sb, &x, &y, "trial (no FLOPs counted)", "best validation accuracy", NULL, NULL);
	for (size_t i = 0; i < exp->ntrials; i++) {
		const struct report_trial *tr = &exp->trials[i];
		if (!tr->nepochs)
			continue;
		strbuf_addf(sb, "<circle class=\"trial-pt %s\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\">"
			    "<title>trial %s: %.2f%%</title></circle>\n", (long)i == exp->best ? "best" : "",
			    x_of(&x, tr->seq), y_of(&y, tr->best_acc), tr->id, 100 * tr->best_acc);
	}
	svg_close(sb);
}

/* chart-series draws at most this many trials' lines: past it, the best */
#define SERIES_MAX 200

/* a trial chart-series may draw: its best accuracy and index */
struct series_key {
	double acc;
	size_t i;
};

/* qsort order: best accuracy first, then trial order */
static int by_best_acc(const void *a, const void *b)
{
	const struct series_key *x = a, *y = b;
	if (x->acc != y->acc)
		return x->acc > y->acc ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* Which trials chart-series draws (drawn[i]): every one with an epoch, or
 * past SERIES_MAX of them the SERIES_MAX best (a line a trial: at 2,000
 * trials they were 8.8 of the page's 9.6 MB, and no reader follows them).
 * Returns how many trials have an epoch. */
static size_t series_pick(const struct report_exp *exp, unsigned char *drawn)
{
	struct series_key *k = xcalloc(exp->ntrials ? exp->ntrials : 1, sizeof(*k));
	size_t n = 0;
	for (size_t i = 0; i < exp->ntrials; i++)
		if (exp->trials[i].nepochs)
			k[n++] = (struct series_key){ isnan(exp->trials[i].best_acc) ? -INFINITY
						      : exp->trials[i].best_acc, i };
	if (n > SERIES_MAX)
		qsort(k, n, sizeof(*k), by_best_acc);
	for (size_t m = 0; m < n && m < SERIES_MAX; m++)
		drawn[k[m].i] = 1;
	free(k);
	return n;
}

/* chart-series: the trials' epochs (an NNI trial's intermediate results):
 * validation accuracy by epoch, one line per trial, of the best
 * SERIES_MAX trials where there are more. */
static void chart_series(struct strbuf *sb, const struct report_exp *exp)
{
	unsigned char *drawn = xcalloc(exp->ntrials ? exp->ntrials : 1, 1);
	size_t n = series_pick(exp, drawn);
	int emax = 0;
	for (size_t i = 0; i < exp->ntrials; i++)
		for (size_t j = 0; drawn[i] && j < exp->trials[i].nepochs; j++)
			emax = exp->trials[i].epochs[j].epoch > emax ? exp->trials[i].epochs[j].epoch : emax;
	if (n > SERIES_MAX) {
		char *title = xstrfmt("Validation accuracy by epoch, per trial: the %d best of %zu "
				      "trials", SERIES_MAX, n);
		svg_open(sb, "chart-series", title);
		free(title);
	} else {
		svg_open(sb, "chart-series", "Validation accuracy by epoch, per trial");
	}
	if (!emax) {
		strbuf_addf(sb, "<text class=\"empty\" x=\"%g\" y=\"%g\" text-anchor=\"middle\">no finished "
			    "epoch yet</text>\n", W / 2, H / 2);
		svg_close(sb);
		free(drawn);
		return;
	}
	struct axis x = axis_make(0, emax, 1, 0);
	struct axis y = { 0, 1, 0, 0 };
	axes(sb, &x, &y, "epoch (an NNI trial: its intermediate result)", "validation accuracy",
	     NULL, NULL);
	for (size_t i = 0; i < exp->ntrials; i++) {
		const struct report_trial *tr = &exp->trials[i];
		if (!drawn[i])
			continue;
		strbuf_addf(sb, "<polyline class=\"trial-series c%zu\" points=\"", i % 8);
		for (size_t j = 0; j < tr->nepochs; j++)
			strbuf_addf(sb, "%.1f,%.1f ", x_of(&x, tr->epochs[j].epoch),
				    y_of(&y, tr->epochs[j].val_acc));
		strbuf_addf(sb, "\"><title>trial %s</title></polyline>\n", tr->id);
		for (size_t j = 0; j < tr->nepochs; j++)
			strbuf_addf(sb, "<circle class=\"epoch-pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"2\"><title>"
				    "trial %s, epoch %d: %.4f</title></circle>\n",
				    x_of(&x, tr->epochs[j].epoch), y_of(&y, tr->epochs[j].val_acc), tr->id,
				    tr->epochs[j].epoch, tr->epochs[j].val_acc);
	}
	svg_close(sb);
	free(drawn);
}

static void chart_accuracy(struct strbuf *sb, const struct report_exp *exp)
{
	svg_open(sb, "chart-accuracy", "Best accuracy vs FLOPs per trial");
	double fmin_ = INFINITY, fmax_ = 0;
	size_t n = 0;
	for (size_t i = 0; i < exp->ntrials; i++) {
		const struct report_trial *tr = &exp->trials[i];
		if (!tr->nepochs || !(tr->flops > 0))
			continue;
		fmin_ = fmin(fmin_, tr->flops);
		fmax_ = fmax(fmax_, tr->flops);
		n++;
	}
	if (!n) {
		chart_accuracy_by_trial(sb, exp);
		return;
	}
	struct axis x = axis_make(fmin_, fmax_, 1, 1);
	struct axis y = { 0, 1, 0, 0 };
	axes(sb, &x, &y, x.log ? "FLOPs of the trial (log scale)" : "FLOPs of the trial",
	     "best validation accuracy", "FLOPs", NULL);
	for (size_t i = 0; i < exp->ntrials; i++) {
		const struct report_trial *tr = &exp->trials[i];
		if (!tr->nepochs || !(tr->flops > 0))
			continue;
		strbuf_addf(sb, "<circle class=\"trial-pt %s\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\">"
			    "<title>trial %s: %.2f%%, ", (long)i == exp->best ? "best" : "",
			    x_of(&x, tr->flops), y_of(&y, tr->best_acc), tr->id, 100 * tr->best_acc);
		report_si(sb, tr->flops, "FLOPs");
		strbuf_addstr(sb, "</title></circle>\n");
	}
	svg_close(sb);
}

static void chart_util(struct strbuf *sb, const struct report_exp *exp)
{
	svg_open(sb, "chart-util", "Resource utilisation (device_info samples of every trial)");
	if (!exp->nutil) {
		strbuf_addf(sb, "<text class=\"empty\" x=\"%g\" y=\"%g\" text-anchor=\"middle\">no "
			    "resource samples</text>\n", W / 2, H / 2);
		svg_close(sb);
		return;
	}
	double tmax = 0;
	for (size_t i = 0; i < exp->nutil; i++)
		tmax = fmax(tmax, (exp->util[i].ts - exp->created) / 3600.0);
	struct axis x = axis_make(0, tmax, 1, 0);
	struct axis y = { 0, 100, 0, 0 };
	axes(sb, &x, &y, "hours since the start", "utilisation %", NULL, NULL);
	/* samples of every trial and host, averaged in time buckets */
	enum { NB = 240 };
	double sum[3][NB] = { { 0 } }, cnt[3][NB] = { { 0 } };
	double span = fmax(tmax, 1e-9);
	for (size_t i = 0; i < exp->nutil; i++) {
		const struct report_util *u = &exp->util[i];
		double h = (u->ts - exp->created) / 3600.0;
		int b = (int)(h / span * (NB - 1) + 0.5);
		if (b < 0)
			b = 0;
		if (b >= NB)
			b = NB - 1;
		double v[3] = { u->cpu, u->mem, u->gpu };
		for (int k = 0; k < 3; k++) {
			if (v[k] < 0)
				continue;
			sum[k][b] += v[k];
			cnt[k][b]++;
		}
	}
	static const char *const cls[] = { "cpu", "mem", "gpu" };
	for (int k = 0; k < 3; k++) {
		int any = 0;
		for (int b = 0; b < NB; b++) {
			if (!cnt[k][b])
				continue;
			if (!any)
				strbuf_addf(sb, "<polyline class=\"util %s\" points=\"", cls[k]);
			any = 1;
			strbuf_addf(sb, "%.1f,%.1f ", x_of(&x, span * b / (NB - 1)),
				    y_of(&y, sum[k][b] / cnt[k][b]));
		}
		if (any)
			strbuf_addstr(sb, "\"/>\n");
	}
	strbuf_addf(sb, "<text class=\"legend cpu\" x=\"%g\" y=\"%g\">CPU busy</text>"
		    "<text class=\"legend mem\" x=\"%g\" y=\"%g\">memory used</text>"
		    "<text class=\"legend gpu\" x=\"%g\" y=\"%g\">GPU</text>\n",
		    W - MR - 220, MT + 2, W - MR - 150, MT + 2, W - MR - 50, MT + 2);
	svg_close(sb);
}

/* A marker of a pool event at (x, y): grow a triangle up, shrink one down,
 * preempt a cross, resume a circle; start and end are the line's ends. */
static void pool_marker(struct strbuf *sb, enum report_pool_kind kind, double x, double y)
{
	const char *k = report_pool_kind_name(kind);
	switch (kind) {
	case REPORT_POOL_GROW:
	case REPORT_POOL_SHRINK: {
		double d = kind == REPORT_POOL_GROW ? -5 : 5;
		strbuf_addf(sb, "<polygon class=\"pool-ev %s\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\">",
			    k, x, y + d, x - 4.5, y - d * 0.6, x + 4.5, y - d * 0.6);
		break;
	}
	case REPORT_POOL_PREEMPT:
		strbuf_addf(sb, "<path class=\"pool-ev %s\" d=\"M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f\">",
			    k, x - 4, y - 4, x + 4, y + 4, x - 4, y + 4, x + 4, y - 4);
		break;
	case REPORT_POOL_RESUME:
		strbuf_addf(sb, "<circle class=\"pool-ev %s\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\">", k, x, y);
		break;
	default:
		return;
	}
	strbuf_addf(sb, "<title>%s</title></%s>\n", k,
		    kind == REPORT_POOL_RESUME ? "circle" : kind == REPORT_POOL_PREEMPT ? "path" : "polygon");
}

/* Devices held by each training of the pool over time: a step line each
 * (this experiment's drawn thicker), markers where it grew, shrank, was
 * preempted or resumed. Lines at the same height are drawn 2 px apart. */
static void chart_pool(struct strbuf *sb, const struct report_exp *exp, double clock)
{
	const struct report_pool *p = &exp->pool;
	if (!p->devices)
		return;
	svg_open(sb, "chart-pool", "Devices of the pool held by each training over time "
		 "(this experiment's thicker)");
	double end = isinf(p->to) ? clock : p->to;
	for (size_t e = 0; e < p->nev; e++)
		end = fmax(end, p->ev[e].ts);
	double scale = end - p->from < 3600 ? 1 : 3600;
	struct axis x = axis_make(0, (end - p->from) / scale, 1, 0);
	struct axis y = axis_make(0, p->devices, 1, 0);
	axes(sb, &x, &y, scale == 1 ? "seconds since the experiment was created"
				    : "hours since the experiment was created", "devices held", NULL, NULL);
	for (size_t i = 0; i < p->n; i++) {
		const struct report_pool_training *t = &p->t[i];
		double dy = ((double)i - (p->n - 1) / 2.0) * 2.0;
		unsigned d = 0;
		size_t k = 0;
		for (; k < t->nsteps && t->steps[k].ts <= p->from; k++)
			d = t->steps[k].devices;
		double px = x_of(&x, 0), py = y_of(&y, d) + dy, lx = px, ly = d ? py : NAN;
		strbuf_addf(sb, "<polyline class=\"pool-line c%zu%s\" points=\"%.1f,%.1f", i % 8,
			    t->mine ? " mine" : "", px, py);
		for (; k < t->nsteps && t->steps[k].ts <= end; k++) {
			px = x_of(&x, (t->steps[k].ts - p->from) / scale);
			strbuf_addf(sb, " %.1f,%.1f", px, py);
			py = y_of(&y, t->steps[k].devices) + dy;
			strbuf_addf(sb, " %.1f,%.1f", px, py);
			if (isnan(ly) && t->steps[k].devices) {
				lx = px;
				ly = py;
			}
		}
		strbuf_addf(sb, " %.1f,%.1f\"><title>[%zu] ", x_of(&x, (end - p->from) / scale), py, i + 1);
		strbuf_addstr_html(sb, t->id);
		strbuf_addf(sb, ", priority %ld</title></polyline>\n", t->priority_last);
		strbuf_addf(sb, "<text class=\"pool-label c%zu\" x=\"%.1f\" y=\"%.1f\">[%zu]</text>\n",
			    i % 8, lx + 3, (isnan(ly) ? y_of(&y, 0) : ly) - 4, i + 1);
	}
	for (size_t e = 0; e < p->nev; e++) {
		const struct report_pool_event *ev = &p->ev[e];
		double dy = ((double)ev->training - (p->n - 1) / 2.0) * 2.0;
		pool_marker(sb, ev->kind, x_of(&x, (ev->ts - p->from) / scale), y_of(&y, ev->to) + dy);
	}
	static const enum report_pool_kind legend[] = { REPORT_POOL_GROW, REPORT_POOL_SHRINK,
							REPORT_POOL_PREEMPT, REPORT_POOL_RESUME };
	for (size_t k = 0; k < ARRAY_SIZE(legend); k++) {
		double lx = W - MR - 300 + 75 * (double)k;
		strbuf_addf(sb, "<g class=\"pool-legend\">");
		pool_marker(sb, legend[k], lx, MT - 12);
		strbuf_addf(sb, "<text class=\"legend\" x=\"%.1f\" y=\"%.1f\">%s</text></g>\n", lx + 8,
			    MT - 8, report_pool_kind_name(legend[k]));
	}
	svg_close(sb);
	strbuf_addstr(sb, "<ol id=\"pool-trainings\">\n");
	for (size_t i = 0; i < p->n; i++) {
		const struct report_pool_training *t = &p->t[i];
		strbuf_addf(sb, "<li class=\"c%zu%s\">", i % 8, t->mine ? " mine" : "");
		strbuf_addstr_html(sb, t->id);
		strbuf_addf(sb, ", priority %ld", t->priority_first);
		if (t->priority_last != t->priority_first)
			strbuf_addf(sb, " &rarr; %ld", t->priority_last);
		strbuf_addstr(sb, t->mine ? " (this experiment)</li>\n" : "</li>\n");
	}
	strbuf_addf(sb, "</ol>\n<p>A pool of %u devices, from the work directory's "
		    "pool/ledger.jsonl (docs/pool.md).</p>\n", p->devices);
}

static const char css[] =
	"body{font-family:sans-serif;margin:2em;color:#222;max-width:64em}"
	"table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:2px 8px;"
	"text-align:right}th{background:#eee}.verdict{font-size:1.4em;padding:.4em .8em;"
	"display:inline-block}.Succeed{background:#d4f4d4}.Failed{background:#f8d0d0}"
	"figure{margin:1em 0}figcaption{font-weight:bold}svg .axis{stroke:#444}"
	"svg .grid{stroke:#ddd}svg .tick,svg .label,svg .legend{font-size:11px;fill:#333}"
	"svg .series{fill:none;stroke:#1f77b4;stroke-width:1.5}svg .pt{fill:#1f77b4}"
	"svg .trial{fill:#9ecae1;stroke:#3182bd;stroke-width:.5}svg .trial.failed{fill:#f4a6a6}"
	"svg .trial.running{fill:#fdd49e}svg .trial.canceled{fill:#ccc}"
	"svg .trial-pt{fill:#3182bd;fill-opacity:.6}svg .trial-pt.best{fill:#d62728;fill-opacity:1}"
	"svg .cpu{stroke:#1f77b4;fill:#1f77b4}svg .mem{stroke:#2ca02c;fill:#2ca02c}"
	"svg .gpu{stroke:#d62728;fill:#d62728}svg polyline.util{fill:none;stroke-width:1.5}"
	"svg text.legend{stroke:none}"
	"svg .pool-line{fill:none;stroke-width:1.5;stroke-opacity:.75}svg .pool-line.mine{stroke-width:3;"
	"stroke-opacity:1}svg .pool-ev{stroke:#222;stroke-width:1;fill:#fff}svg .pool-ev.grow{fill:#2ca02c}"
	"svg .pool-ev.shrink{fill:#ff7f0e}svg .pool-ev.preempt{stroke:#d62728;stroke-width:2}"
	"svg .pool-ev.resume{fill:#9467bd}.c0{stroke:#1f77b4;color:#1f77b4}.c1{stroke:#d62728;color:#d62728}"
	".c2{stroke:#2ca02c;color:#2ca02c}.c3{stroke:#9467bd;color:#9467bd}.c4{stroke:#8c564b;"
	"color:#8c564b}.c5{stroke:#e377c2;color:#e377c2}.c6{stroke:#7f7f7f;color:#7f7f7f}"
	".c7{stroke:#bcbd22;color:#bcbd22}svg text.pool-label{stroke:none;fill:currentColor;font-size:11px}"
	"li.mine{font-weight:bold}svg .trial-series{fill:none;stroke-width:1.5}svg .epoch-pt{fill:#555}"
	"td:last-child{text-align:left}";

void report_html(struct strbuf *sb, const struct report_exp *exp,
		 const struct report_options *opt, const struct report_score *sc)
{
	double clock = opt->now > 0 ? opt->now : util_now();
	const char *verdict = sc->valid ? "Succeed" : "Failed";
	strbuf_addstr(sb, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
		      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
		      "style-src 'unsafe-inline'\">\n<title>aah report ");
	strbuf_addstr_html(sb, exp->id);
	strbuf_addf(sb, "</title>\n<style>%s</style></head>\n<body>\n<h1>AIPerf report: ", css);
	strbuf_addstr_html(sb, exp->id);
	if (exp->name[0]) {
		strbuf_addstr(sb, " (");
		strbuf_addstr_html(sb, exp->name);
		strbuf_addch(sb, ')');
	}
	strbuf_addf(sb, "</h1>\n<p class=\"verdict %s\" id=\"verdict\">%s</p>\n", verdict, verdict);
	strbuf_addf(sb, "<p id=\"rules\">Judged by the %s; %s; the clock starts at the first "
		    "trial, %.0f s after the experiment was created. Where aah and <a "
		    "href=\"https://github.com/thu-pacman/AIPerf\">AIPerf</a> agree and differ, rule "
		    "by rule: docs/aiperf.md in aah's sources.</p>\n", report_rules_name(sc),
		    report_charge_name(sc), exp->start - exp->created);
	if (sc->nfailed) {
		strbuf_addstr(sb, "<ul id=\"failed-rules\">\n");
		for (size_t i = 0; i < sc->nfailed; i++) {
			strbuf_addstr(sb, "<li>");
			strbuf_addstr_html(sb, sc->failed[i]);
			strbuf_addstr(sb, "</li>\n");
		}
		strbuf_addstr(sb, "</ul>\n");
	}
	if (!exp->done)
		strbuf_addstr(sb, "<p><em>The experiment is still running (or stopped without "
			      "experiment_done): values so far.</em></p>\n");
	if (sc->no_score)
		strbuf_addf(sb, "<p id=\"no-score\"><strong>This run has no Score, only accuracies:"
			    "</strong> %s.</p>\n", report_no_score);
	strbuf_addstr(sb, "<table id=\"summary\"><tr><th>Final Score</th><td>");
	if (sc->no_score)
		strbuf_addstr(sb, "none");
	else
		report_si(sb, sc->final.score, "FLOPS");
	strbuf_addstr(sb, "</td></tr><tr><th>Final Regulated Score</th><td>");
	if (sc->no_score)
		strbuf_addstr(sb, "none");
	else
		report_si(sb, sc->final.regulated, "FLOPS");
	strbuf_addf(sb, "</td></tr><tr><th>Error</th><td>%.2f%%</td></tr>"
		    "<tr><th>Duration</th><td>%.2f h</td></tr><tr><th>Trials</th><td>%zu</td></tr>",
		    sc->final.error, sc->duration_s / 3600, exp->ntrials);
	size_t counts[TRIAL_NSTATES] = { 0 };
	for (size_t i = 0; i < exp->ntrials; i++)
		counts[exp->trials[i].state]++;
	for (int s = 0; s < TRIAL_NSTATES; s++)
		if (counts[s])
			strbuf_addf(sb, "<tr><th>%s</th><td>%zu</td></tr>",
				    expdir_state_name((enum trial_state)s), counts[s]);
	strbuf_addstr(sb, "</table>\n");
	chart_samples(sb, sc, "chart-error", "Error (%) over time", F_ERROR, "Error (%)", NULL);
	chart_samples(sb, sc, "chart-score", "Score over time", F_SCORE, "Score", "FLOPS");
	chart_samples(sb, sc, "chart-regulated", "Regulated Score over time", F_REGULATED,
		      "Regulated Score", "FLOPS");
	chart_timeline(sb, exp, clock);
	chart_accuracy(sb, exp);
	chart_series(sb, exp);
	chart_util(sb, exp);
	chart_pool(sb, exp, clock);
	report_html_trials(sb, exp);
	report_html_arch(sb, exp);
	report_html_samples(sb, sc);
	strbuf_addstr(sb, "</body></html>\n");
}
