/* score.c: AIPerf's Score, Regulated Score and Error over time, and the
 * benchmark's validity rules.
 *
 * Definitions (AIPerf scripts/reports/score.py):
 *  - sample points at first, first+step, ... hours after the start, up to the
 *    first point at or past the last epoch (numpy arange(first, dur+step, step));
 *  - at a point P, only epochs that ended before P count: FLOPs = sum over
 *    trials of the trial's FLOPs up to its last such epoch; best = the highest
 *    val_acc among them; elapsed = the end of the latest such epoch minus the
 *    start;
 *  - Score = FLOPs / elapsed; Regulated = Score * |ln(1 - best)|;
 *    Error = 100 - 100 * best. A point with elapsed <= 0 is skipped.
 * Every trial counts, whatever its final state (stopped trials did the work).
 * A trial whose epoch counter restarts (a retried attempt) adds its FLOPs
 * again from zero.
 *
 * Where aah and score.py can differ, both ways are here (docs/aiperf.md):
 *  - the clock starts at the earliest trial start (score.py: the smallest
 *    start_date of the trials' first hyperparameter set), not at creation;
 *  - an epoch is charged as score.py charges it, ImageNet's fixed image
 *    counts times the trial's FLOPs per image (report.epochCharge "aiperf";
 *    "auto" takes it when every trial's arch has 1000 classes), or by the
 *    images the trainer counted ("images"); flops_images keeps the latter;
 *    an epoch's "part" (aah-trial --partial_epoch) scales its training
 *    images in both;
 *  - the validity rules are the README's (at least 1 h, not below fp16, best
 *    accuracy above 70%, GPUs in mixed precision: bf16 or fp16) or report.py's (failed when the final Error is
 *    above 95%), report.rules. */
#include "runner/report/report.h"
#include "runner/config/config.h" /* config_report_keys: AIPerf's rules, once */
#include "util.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ev {
	double ts;
	double flops;       /* cumulative, by the images counted */
	double charge;      /* one epoch by AIPerf's counts; 0 without an arch */
	double acc;
	size_t trial;
	int epoch;
	int result;         /* an NNI trial's FINAL result: an accuracy, no work */
};

static int cmp_ev(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;
	if (x->ts != y->ts)
		return (x->ts > y->ts) - (x->ts < y->ts);
	if (x->trial != y->trial)
		return (x->trial > y->trial) - (x->trial < y->trial);
	return (x->epoch > y->epoch) - (x->epoch < y->epoch);
}

/* The smallest error kept for |ln(error)|: a perfect accuracy would give an
 * infinite Regulated Score. */
#define MIN_ERROR 1e-9

static void fill_values(struct report_sample *s)
{
	s->score = s->elapsed_s > 0 ? s->flops / s->elapsed_s : 0;
	double err = 1.0 - s->best_acc;
	if (err < MIN_ERROR)
		err = MIN_ERROR;
	s->regulated = s->score * fabs(log(err));
	s->error = 100.0 - 100.0 * s->best_acc;
}

static const char *const precisions[] = { "int4", "int8", "fp8", "fp16", "bf16", "tf32",
					  "fp32", "fp64" };

int report_precision_rank(const char *name)
{
	/* bf16 and fp16 are the same width for the rule; tf32 counts with fp32 */
	static const int rank[] = { 0, 1, 2, 3, 3, 4, 4, 5 };
	for (size_t i = 0; i < ARRAY_SIZE(precisions); i++)
		if (name && !strcmp(name, precisions[i]))
			return rank[i];
	return -1;
}

static void add_failed(struct report_score *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void add_failed(struct report_score *s, const char *fmt, ...)
{
	if (s->nfailed == REPORT_MAX_RULES)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->failed[s->nfailed++], sizeof(s->failed[0]), fmt, ap);
	va_end(ap);
}

/* report.py: "!!! Test failed due to low accuracy !!!" past 95% Error. */
#define REPORT_PY_MAX_ERROR 95.0

static void check_report_py_rules(struct report_score *s)
{
	if (!s->nepochs)
		add_failed(s, "no epoch has finished yet");
	else if (s->final.error > REPORT_PY_MAX_ERROR)
		add_failed(s, "report.py: Error %.2f%% is above %.0f%% (low accuracy)", s->final.error,
			   REPORT_PY_MAX_ERROR);
	s->valid = s->nfailed == 0;
}

const char report_no_score[] =
	"the trials counted no FLOPs: their code is not aah-trial (an NNI trial reports "
	"accuracies only) and no tuner proposed them an architecture to count by AIPerf's rule "
	"(docs/report.md)";

static void check_rules(const struct report_exp *exp, const struct report_options *opt,
			struct report_score *s)
{
	if (!strcmp(s->rules, "report.py")) {
		check_report_py_rules(s);
		return;
	}
	if (!s->nepochs) {
		add_failed(s, "no epoch has finished yet");
	} else {
		if (s->no_score)
			add_failed(s, "no-score: the trials counted no FLOPs, so the run has accuracies "
				   "and no Score (docs/report.md)");
		if (s->duration_s < opt->min_duration_s)
			add_failed(s, "min-duration: ran %.2f h, the rules need at least %.2f h",
				   s->duration_s / 3600, opt->min_duration_s / 3600);
		if (!(s->final.best_acc > opt->min_accuracy))
			add_failed(s, "min-accuracy: best accuracy %.2f%%, the rules need more than %.2f%%",
				   100 * s->final.best_acc, 100 * opt->min_accuracy);
	}
	int min_rank = report_precision_rank(opt->min_precision);
	if (min_rank < 0) {
		add_failed(s, "min-precision: unknown precision '%s' in the options", opt->min_precision);
	} else {
		for (size_t i = 0; i < exp->ntrials; i++) {
			const struct report_trial *tr = &exp->trials[i];
			if (!tr->precision[0])
				continue;
			if (report_precision_rank(tr->precision) < min_rank) {
				add_failed(s, "min-precision: trial %s trained in %s, below %s", tr->id,
					   tr->precision, opt->min_precision);
				break;
			}
		}
	}
	for (size_t i = 0; !opt->gpu_fp32_ok && i < exp->ntrials; i++) {
		const struct report_trial *tr = &exp->trials[i];
		if (tr->on_gpu && report_precision_rank(tr->precision) >= report_precision_rank("fp32")) {
			add_failed(s, "gpu-precision: trial %s trained in %s on a GPU; AIPerf's rule "
				   "trains GPUs in mixed precision (bf16 or fp16)", tr->id, tr->precision);
			break;
		}
	}
	s->valid = s->nfailed == 0;
}

/* report.epochCharge: "auto" is AIPerf's when every trial with an arch
 * classifies 1000 classes (ImageNet, where score.py's counts hold). */
static const char *epoch_charge(const struct report_exp *exp, const char *opt)
{
	if (opt && strcmp(opt, "auto"))
		return !strcmp(opt, "aiperf") ? "aiperf" : "images";
	int imagenet = 0;
	for (size_t i = 0; i < exp->ntrials; i++) {
		if (!exp->trials[i].classes)
			continue;
		if (exp->trials[i].classes != 1000)
			return "images";
		imagenet = 1;
	}
	return imagenet ? "aiperf" : "images";
}

int report_score(const struct report_exp *exp, const struct report_options *opt,
		 struct report_score *out)
{
	memset(out, 0, sizeof(*out));
	if (!(opt->sample_step_h > 0) || !(opt->sample_first_h > 0))
		return error("sample points need a positive first point and step (got %g h, %g h)",
			     opt->sample_first_h, opt->sample_step_h);

	size_t n = 0, k = 0, nres = 0;
	for (size_t i = 0; i < exp->ntrials; i++) {
		n += exp->trials[i].nepochs;
		nres += exp->trials[i].nepochs && !isnan(exp->trials[i].result_acc);
	}
	n += nres;
	struct ev *ev = xmalloc((n ? n : 1) * sizeof(*ev));
	for (size_t i = 0; i < exp->ntrials; i++) {
		const struct report_trial *tr = &exp->trials[i];
		for (size_t j = 0; j < tr->nepochs; j++) {
			const struct expdir_epoch *e = &tr->epochs[j];
			/* a part of an epoch (--partial_epoch) trained that part */
			double charge = tr->img_fwd * REPORT_AIPERF_EVAL_IMAGES +
					(tr->img_fwd + tr->img_bwd) * REPORT_AIPERF_TRAIN_IMAGES *
					e->part;
			ev[k++] = (struct ev){ e->ts, e->flops, charge, e->val_acc, i, e->epoch, 0 };
		}
		if (tr->nepochs && !isnan(tr->result_acc))   /* known when its last epoch ended */
			ev[k++] = (struct ev){ tr->epochs[tr->nepochs - 1].ts, 0, 0, tr->result_acc, i,
					       INT_MAX, 1 };
	}
	qsort(ev, n, sizeof(*ev), cmp_ev);
	out->nepochs = n - nres;
	out->rules = opt->rules && !strcmp(opt->rules, "report.py") ? "report.py" : "readme";
	out->charge = epoch_charge(exp, opt->charge);
	int aiperf = !strcmp(out->charge, "aiperf");

	double start = exp->start ? exp->start : exp->created;
	double last = start;   /* the last epoch's end (a FINAL result is no epoch) */
	for (size_t i = 0; i < n; i++)
		last = ev[i].result ? last : fmax(last, ev[i].ts);
	double dur_h = (last - start) / 3600.0;
	out->duration_s = last - start;
	double count = ceil((dur_h + opt->sample_step_h - opt->sample_first_h) / opt->sample_step_h - 1e-9);
	if (count > REPORT_MAX_SAMPLES) {
		free(ev);
		return error("a sample step of %g h makes %.3g sample points over the %.2f h run, "
			     "more than %d: use a larger step (--sample-step, report.sampleInterval)",
			     opt->sample_step_h, count, dur_h, REPORT_MAX_SAMPLES);
	}
	size_t npoints = count > 0 ? (size_t)count : 0;
	out->samples = xcalloc(npoints ? npoints : 1, sizeof(*out->samples));

	/* per trial: last cumulative FLOPs counted and its epoch number */
	double *seen = xcalloc(exp->ntrials ? exp->ntrials : 1, sizeof(*seen));
	int *seen_epoch = xcalloc(exp->ntrials ? exp->ntrials : 1, sizeof(*seen_epoch));
	double total = 0, total_aiperf = 0, best = 0, latest = start;
	size_t p = 0;
	for (size_t pt = 0; pt <= npoints; pt++) {
		/* the extra round (pt == npoints) takes every epoch: the final state */
		double hours = opt->sample_first_h + (double)pt * opt->sample_step_h;
		double stop = pt < npoints ? start + hours * 3600.0 : INFINITY;
		for (; p < n && ev[p].ts < stop; p++) {
			const struct ev *e = &ev[p];
			if (e->result) {   /* its accuracy counts; it did no work */
				best = e->acc > best ? e->acc : best;
				continue;
			}
			double add = e->flops;     /* a new attempt started over */
			if (e->epoch > seen_epoch[e->trial] && e->flops >= seen[e->trial])
				add = e->flops - seen[e->trial];
			total += add;
			total_aiperf += e->charge > 0 ? e->charge : add;
			seen[e->trial] = e->flops;
			seen_epoch[e->trial] = e->epoch;
			if (e->acc > best)
				best = e->acc;
			if (e->ts > latest)
				latest = e->ts;
		}
		struct report_sample s = { hours, latest - start, aiperf ? total_aiperf : total, total,
					   0, 0, best, 0 };
		fill_values(&s);
		if (pt == npoints) {
			if (!out->nsamples) {
				s.hours = s.elapsed_s / 3600.0;
				out->final = s;
			}
		} else if (s.elapsed_s > 0) {
			out->samples[out->nsamples++] = s;
		}
	}
	if (out->nsamples) {
		out->final = out->samples[out->nsamples - 1];
		out->final_from_samples = 1;
	}
	out->no_score = out->nepochs > 0 && !(out->final.flops > 0);
	free(seen);
	free(seen_epoch);
	free(ev);
	check_rules(exp, opt, out);
	return 0;
}

void report_score_release(struct report_score *s)
{
	free(s->samples);
	memset(s, 0, sizeof(*s));
}

void report_options_fill(struct report_options *opt, const struct aah_config_report *rep)
{
	if (isnan(opt->sample_first_h))
		opt->sample_first_h = rep->first_sample / 3600;
	if (isnan(opt->sample_step_h))
		opt->sample_step_h = rep->sample_interval / 3600;
	if (isnan(opt->min_duration_s))
		opt->min_duration_s = rep->min_duration;
	if (isnan(opt->min_accuracy))
		opt->min_accuracy = rep->min_accuracy;
	for (const char *const *p = config_precisions; !opt->min_precision && *p; p++)
		if (rep->min_precision && !strcmp(*p, rep->min_precision))
			opt->min_precision = *p;
	for (const char *const *p = config_report_rules; !opt->rules && *p; p++)
		if (rep->rules && !strcmp(*p, rep->rules))
			opt->rules = *p;
	for (const char *const *p = config_epoch_charges; !opt->charge && *p; p++)
		if (rep->epoch_charge && !strcmp(*p, rep->epoch_charge))
			opt->charge = *p;
}

struct report_options report_options_aiperf(void)
{
	struct report_options o = { NAN, NAN, NAN, NAN, NULL, 0.0, NULL, NULL, 0 };
	struct aah_config none = { 0 };
	struct aah_config_report rep = { 0 };
	if (config_parse_section(&none, "report", NULL, config_report_keys, &rep) < 0)
		BUG("the defaults of report: do not parse: %s", util_last_error());
	report_options_fill(&o, &rep);
	config_release_section(config_report_keys, &rep);
	o.rules = NULL;     /* readme */
	o.charge = NULL;    /* auto */
	return o;
}
