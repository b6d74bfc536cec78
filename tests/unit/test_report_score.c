/* Unit tests for runner/report: loading an experiment, AIPerf's score over
 * time with hand-computed values, the validity rules, and the outputs. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner/report/report.h"
#include "tests/fixtures/report/fixture.h"

static char tmpdir[64];
static char *dir;
#define T0 1000.0

static void setup(void)
{
	strcpy(tmpdir, "/tmp/aah-report-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	util_set_quiet(1);
	dir = fx_exp_create(tmpdir, "exp00001", T0);
	cr_assert_not_null(dir);
}

static void teardown(void)
{
	fileio_remove_tree(tmpdir);
	free(dir);
}

TestSuite(report, .init = setup, .fini = teardown);

#define close_to(a, b) cr_assert(fabs((double)(a) - (double)(b)) <= 1e-9 * fabs((double)(b)) + 1e-12, "%s = %.17g, expected %.17g", #a, (double)(a), (double)(b))

/* Two trials (times in seconds after T0):
 *   A: 600 s: 1e12 FLOPs cumulative, acc 0.5;  1000 s: 2e12, acc 0.6
 *   B: 900 s: 3e12, acc 0.7;                   1500 s: 6e12, acc 0.65
 * The last epoch ends at 1500 s = 0.41667 h, so the points are 0.2, 0.3,
 * 0.4, 0.5 h (arange(0.2, 0.41667 + 0.1, 0.1)). A starts at T0, the
 * creation, so AIPerf's clock (the first trial start) starts there too. */
static void two_trials(void)
{
	cr_assert_eq(fx_trial_events(dir, "000001", 0, T0, T0 + 1001, "succeeded"), 0);
	cr_assert_eq(fx_trial_events(dir, "000002", 1, T0 + 2, T0 + 1501, "early_stopped"), 0);
	cr_assert_eq(fx_epoch(dir, "000001", 1, T0 + 600, 0.8e12, 0.2e12, 0.5, 100), 0);
	cr_assert_eq(fx_epoch(dir, "000001", 2, T0 + 1000, 1.6e12, 0.4e12, 0.6, 110), 0);
	cr_assert_eq(fx_epoch(dir, "000002", 1, T0 + 900, 2.5e12, 0.5e12, 0.7, 50), 0);
	cr_assert_eq(fx_epoch(dir, "000002", 2, T0 + 1500, 5e12, 1e12, 0.65, 55), 0);
	cr_assert_eq(fx_arch(dir, "000002"), 0);
}

Test(report, score_matches_hand_computed_samples)
{
	two_trials();
	struct report_exp exp;
	struct report_score sc;
	struct report_options opt = REPORT_OPTIONS_INIT;
	cr_assert_eq(report_load(dir, &exp), 0);
	cr_assert_eq(exp.ntrials, 2);
	cr_assert_eq(report_score(&exp, &opt, &sc), 0);
	cr_assert_eq(sc.nsamples, 4);
	/* 0.2 h: only A's first epoch: 1e12 / 600 s */
	close_to(sc.samples[0].hours, 0.2);
	close_to(sc.samples[0].elapsed_s, 600);
	close_to(sc.samples[0].flops, 1e12);
	close_to(sc.samples[0].score, 1e12 / 600);
	close_to(sc.samples[0].regulated, 1e12 / 600 * log(2));
	close_to(sc.samples[0].error, 50);
	/* 0.3 h and 0.4 h: A up to 1000 s (2e12) + B's first (3e12), over 1000 s */
	for (int i = 1; i <= 2; i++) {
		close_to(sc.samples[i].flops, 5e12);
		close_to(sc.samples[i].elapsed_s, 1000);
		close_to(sc.samples[i].score, 5e9);
		close_to(sc.samples[i].regulated, 5e9 * fabs(log(0.3)));
		close_to(sc.samples[i].error, 30);
	}
	/* 0.5 h: everything: 2e12 + 6e12 over 1500 s; best stays 0.7 */
	close_to(sc.samples[3].hours, 0.5);
	close_to(sc.samples[3].flops, 8e12);
	close_to(sc.samples[3].score, 8e12 / 1500);
	close_to(sc.final.regulated, 8e12 / 1500 * fabs(log(1 - 0.7)));
	close_to(sc.final.error, 30);
	cr_assert(sc.final_from_samples);
	close_to(sc.duration_s, 1500);
	/* AIPerf rules: 1500 s < 1 h, and 0.7 is not above 0.70 */
	cr_assert_not(sc.valid);
	cr_assert_eq(sc.nfailed, 2);
	cr_assert(strstr(sc.failed[0], "min-duration"));
	cr_assert(strstr(sc.failed[1], "min-accuracy"));
	cr_assert_str_eq(exp.trials[exp.best].id, "000002");
	cr_assert_not_null(exp.best_arch);
	report_score_release(&sc);
	report_exp_release(&exp);
}

Test(report, rules_pass_with_lower_thresholds_and_fail_on_precision)
{
	two_trials();
	cr_assert_eq(fx_result(dir, "000001", "succeeded", 0.6, "fp16", "cuda:0"), 0);
	cr_assert_eq(fx_result(dir, "000002", "early_stopped", 0.7, "bf16", "cuda:1"), 0);
	struct report_exp exp;
	struct report_score sc;
	struct report_options opt = REPORT_OPTIONS_INIT;
	opt.min_duration_s = 1500;
	opt.min_accuracy = 0.69;
	cr_assert_eq(report_load(dir, &exp), 0);
	cr_assert_eq(report_score(&exp, &opt, &sc), 0);
	cr_assert(sc.valid, "failed: %s", sc.nfailed ? sc.failed[0] : "");
	report_score_release(&sc);
	report_exp_release(&exp);

	cr_assert_eq(fx_result(dir, "000001", "succeeded", 0.6, "fp8", "cuda:0"), 0);
	cr_assert_eq(report_load(dir, &exp), 0);
	cr_assert_eq(report_score(&exp, &opt, &sc), 0);
	cr_assert_not(sc.valid);
	cr_assert_eq(sc.nfailed, 1);
	cr_assert(strstr(sc.failed[0], "min-precision") && strstr(sc.failed[0], "000001"),
		  "%s", sc.failed[0]);
	report_score_release(&sc);
	report_exp_release(&exp);

	/* fp32 is not below fp16, but on a GPU AIPerf trains mixed precision */
	cr_assert_eq(fx_result(dir, "000001", "succeeded", 0.6, "fp32", "cuda:0"), 0);
	cr_assert_eq(report_load(dir, &exp), 0);
	cr_assert_eq(report_score(&exp, &opt, &sc), 0);
	cr_assert_not(sc.valid);
	cr_assert_eq(sc.nfailed, 1);
	cr_assert(strstr(sc.failed[0], "gpu-precision: trial 000001 trained in fp32 on a GPU"),
		  "%s", sc.failed[0]);
	report_score_release(&sc);
	opt.gpu_fp32_ok = 1;
	cr_assert_eq(report_score(&exp, &opt, &sc), 0);
	cr_assert(sc.valid, "failed: %s", sc.nfailed ? sc.failed[0] : "");
	report_score_release(&sc);
	report_exp_release(&exp);
}

Test(report, precision_ranks)
{
	cr_assert_lt(report_precision_rank("fp8"), report_precision_rank("fp16"));
	cr_assert_eq(report_precision_rank("bf16"), report_precision_rank("fp16"));
	cr_assert_gt(report_precision_rank("fp32"), report_precision_rank("bf16"));
	cr_assert_eq(report_precision_rank("fp12"), -1);
}

Test(report, configurable_sample_points_and_skipped_early_points)
{
	/* one trial, epochs at 0.25 h and 0.35 h: with points every 0.1 h from
	 * 0.1 h, the 0.1 h and 0.2 h points see no epoch and are skipped */
	cr_assert_eq(fx_epoch(dir, "000001", 1, T0 + 900, 1e12, 0, 0.9, 1), 0);
	cr_assert_eq(fx_epoch(dir, "000001", 2, T0 + 1260, 2e12, 0, 0.95, 1), 0);
	struct report_exp exp;
	struct report_score sc;
	struct report_options opt = REPORT_OPTIONS_INIT;
	opt.sample_first_h = 0.1;
	cr_assert_eq(report_load(dir, &exp), 0);
	cr_assert_eq(report_score(&exp, &opt, &sc), 0);
	/* arange(0.1, 0.35 + 0.1, 0.1) = 0.1 .. 0.4: 4 points, 2 skipped */
	cr_assert_eq(sc.nsamples, 2);
	close_to(sc.samples[0].hours, 0.3);
	close_to(sc.samples[0].score, 1e12 / 900);
	close_to(sc.samples[1].hours, 0.4);
	close_to(sc.samples[1].score, 2e12 / 1260);
	close_to(sc.samples[1].regulated, 2e12 / 1260 * fabs(log(0.05)));
	report_score_release(&sc);
	report_exp_release(&exp);
	/* the trial's state comes from nothing: no journal, no result */
	cr_assert_eq(opt.sample_step_h, 0.1);
}

Test(report, short_run_has_final_values_at_the_last_epoch)
{
	cr_assert_eq(fx_epoch(dir, "000001", 1, T0 + 60, 6e11, 0, 0.3, 1), 0);
	struct report_exp exp;
	struct report_score sc;
	struct report_options opt = REPORT_OPTIONS_INIT;
	cr_assert_eq(report_load(dir, &exp), 0);
	cr_assert_eq(report_score(&exp, &opt, &sc), 0);
	cr_assert_eq(sc.nsamples, 0);
	cr_assert_not(sc.final_from_samples);
	close_to(sc.final.score, 1e10);
	close_to(sc.final.error, 70);
	report_score_release(&sc);
	report_exp_release(&exp);
}

Test(report, retried_attempt_adds_its_flops_again)
{
	cr_assert_eq(fx_epoch(dir, "000001", 1, T0 + 100, 1e12, 0, 0.2, 1), 0);
	cr_assert_eq(fx_epoch(dir, "000001", 2, T0 + 200, 2e12, 0, 0.3, 1), 0);
	cr_assert_eq(fx_epoch(dir, "000001", 1, T0 + 300, 1e12, 0, 0.25, 1), 0);
	struct report_exp exp;
	struct report_score sc;
	struct report_options opt = REPORT_OPTIONS_INIT;
	opt.sample_first_h = opt.sample_step_h = 0.5;
	cr_assert_eq(report_load(dir, &exp), 0);
	cr_assert_eq(report_score(&exp, &opt, &sc), 0);
	cr_assert_eq(sc.nsamples, 1);
	close_to(sc.samples[0].flops, 3e12);
	close_to(sc.samples[0].best_acc, 0.3);
	report_score_release(&sc);
	report_exp_release(&exp);
}

Test(report, journal_states_and_a_running_experiment)
{
	two_trials();
	cr_assert_eq(fx_trial_events(dir, "000003", 0, T0 + 1002, 0, NULL), 0);
	cr_assert_eq(fx_trial_events(dir, "000004", 1, T0 + 1502, T0 + 1600, "failed"), 0);
	cr_assert_eq(fx_journal(dir, T0 + 1700, "trial_created",
				"\"trial\":\"000005\",\"trial_seq\":5,\"attempt\":1"), 0);
	/* a torn last line, as a reader sees while the trainer writes */
	char *torn = xstrfmt("%s/trials/000003/metrics.jsonl", dir);
	char *tdir = xstrfmt("%s/trials/000003", dir);
	cr_assert_eq(fileio_mkdir_p(tdir, 0755), 0);
	free(tdir);
	FILE *f = fopen(torn, "w");
	cr_assert_not_null(f);
	fputs("{\"format\":\"aah-metrics/1\",\"epo", f);   /* no newline: mid-write */
	fclose(f);
	free(torn);
	struct report_exp exp;
	cr_assert_eq(report_load(dir, &exp), 0);
	cr_assert_eq(exp.ntrials, 5);
	static const enum trial_state want[] = { TRIAL_SUCCEEDED, TRIAL_EARLY_STOPPED,
		TRIAL_RUNNING, TRIAL_FAILED, TRIAL_QUEUED };
	for (size_t i = 0; i < 5; i++)
		cr_assert_eq(exp.trials[i].state, want[i], "trial %zu: %s", i,
			     expdir_state_name(exp.trials[i].state));
	cr_assert_eq(exp.trials[1].slot, 1);
	cr_assert_eq(exp.trials[2].nepochs, 0);
	cr_assert_not(exp.done);

	struct report_score sc;
	struct report_options opt = REPORT_OPTIONS_INIT;
	opt.now = T0 + 1800;
	cr_assert_eq(report_score(&exp, &opt, &sc), 0);
	struct strbuf sb = STRBUF_INIT;
	report_prometheus(&sb, &exp, &sc);
	cr_assert(strstr(sb.buf, "aah_trials{experiment=\"exp00001\",state=\"running\"} 1\n"), "%s", sb.buf);
	cr_assert(strstr(sb.buf, "aah_trials{experiment=\"exp00001\",state=\"queued\"} 1\n"));
	cr_assert(strstr(sb.buf, "aah_best_accuracy{experiment=\"exp00001\"} 0.69999999999999996\n"));
	cr_assert(strstr(sb.buf, "aah_trial_images_per_second{experiment=\"exp00001\",trial=\"000002\"} 55\n"));
	cr_assert_eq(fx_count(sb.buf, "# TYPE "), fx_count(sb.buf, "# HELP "));
	strbuf_reset(&sb);
	report_summary(&sb, &exp, &sc);
	cr_assert(strstr(sb.buf, "Failed"));
	cr_assert(strstr(sb.buf, "Final Score:           5.33 GFLOPS"), "%s", sb.buf);
	cr_assert(strstr(sb.buf, "Best trial:            000002"));
	cr_assert(strstr(sb.buf, "conv1"));
	strbuf_release(&sb);
	report_score_release(&sc);
	report_exp_release(&exp);
}

Test(report, html_has_every_chart_and_its_points)
{
	two_trials();
	cr_assert_eq(fx_trial_events(dir, "000003", 0, T0 + 1002, 0, NULL), 0);
	cr_assert_eq(fx_append(dir, "trials/000001/device_info/monitor-h.jsonl",
			       "{\"format\":\"aah-monitor/1\",\"ts\":1300,\"cpu\":{\"busy_pct\":50,\"cores\":[50]},"
			       "\"mem\":{\"used_pct\":20},\"gpus\":[{\"index\":0,\"util_pct\":90}]}"), 0);
	cr_assert_eq(fx_append(dir, "trials/000001/device_info/monitor-h.jsonl",
			       "{\"format\":\"aah-monitor/1\",\"ts\":1600,\"cpu\":{\"busy_pct\":70,\"cores\":[70]},"
			       "\"mem\":{\"used_pct\":25},\"gpus\":[]}"), 0);
	struct report_exp exp;
	struct report_score sc;
	struct report_options opt = REPORT_OPTIONS_INIT;
	opt.now = T0 + 1800;
	cr_assert_eq(report_load(dir, &exp), 0);
	cr_assert_eq(exp.nutil, 2);
	cr_assert_eq(exp.util[0].gpu, 90);
	cr_assert_eq(exp.util[1].gpu, -1);
	cr_assert_eq(report_score(&exp, &opt, &sc), 0);
	struct strbuf sb = STRBUF_INIT;
	report_html(&sb, &exp, &opt, &sc);
	const char *h = sb.buf;
	static const char *const charts[] = { "chart-error", "chart-score", "chart-regulated",
		"chart-timeline", "chart-accuracy", "chart-util" };
	for (size_t i = 0; i < 6; i++) {
		char *id = xstrfmt("<svg id=\"%s\"", charts[i]);
		cr_assert_eq(fx_count(h, id), 1, "%s", charts[i]);
		free(id);
	}
	cr_assert_eq(fx_count(h, "<circle class=\"pt\""), 3 * sc.nsamples);
	cr_assert_eq(fx_count(h, "<rect class=\"trial "), 3);
	cr_assert_eq(fx_count(h, "<rect class=\"trial running\""), 1);
	cr_assert_eq(fx_count(h, "<circle class=\"trial-pt"), 2);
	cr_assert_eq(fx_count(h, "<circle class=\"trial-pt best\""), 1);
	cr_assert_eq(fx_count(h, "<tr class=\"sample\">"), 4);
	cr_assert_eq(fx_count(h, "<polyline class=\"util"), 3);
	cr_assert(strstr(h, "id=\"verdict\">Failed<"));
	cr_assert(strstr(h, "min-duration"));
	cr_assert(strstr(h, "<td>global_avg_pool</td>"));
	cr_assert_null(strstr(h, "<script"));
	cr_assert_null(strstr(h, "http://") && !strstr(h, "http://www.w3.org/2000/svg") ? "x" : NULL);

	cJSON *doc = report_results_json(&exp, &opt, &sc);
	cr_assert_str_eq(cJSON_GetObjectItem(doc, "result")->valuestring, "Failed");
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "samples")), 4);
	cr_assert_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "trials_by_state"), "running")->valueint, 1);
	cJSON_Delete(doc);
	strbuf_release(&sb);
	report_score_release(&sc);
	report_exp_release(&exp);
}

/* Past 200 trials with epochs, chart-series draws the 200 best (at 2,000
 * trials their lines were 8.8 of the page's 9.6 MB): trial k reaches
 * 0.5 + k/1000, so trials 51 to 250 are drawn and 1 to 50 are not. */
Test(report, the_series_chart_draws_the_200_best_of_more_trials)
{
	for (int k = 1; k <= 250; k++) {
		char id[16];
		snprintf(id, sizeof(id), "%06d", k);
		cr_assert_eq(fx_trial_events(dir, id, k % 4, T0 + k, T0 + k + 100, "succeeded"), 0);
		cr_assert_eq(fx_epoch(dir, id, 1, T0 + k + 90, 1e9, 1e9, 0.5 + k / 1000.0, 10), 0);
	}
	struct report_exp exp;
	struct report_score sc;
	struct report_options opt = REPORT_OPTIONS_INIT;
	cr_assert_eq(report_load(dir, &exp), 0);
	cr_assert_eq(report_score(&exp, &opt, &sc), 0);
	struct strbuf sb = STRBUF_INIT;
	report_html(&sb, &exp, &opt, &sc);
	const char *h = sb.buf;
	cr_assert(strstr(h, "Validation accuracy by epoch, per trial: the 200 best of 250 trials"));
	cr_assert_eq(fx_count(h, "<polyline class=\"trial-series"), 200);
	cr_assert_eq(fx_count(h, "<circle class=\"epoch-pt\""), 200);
	cr_assert(strstr(h, "<title>trial 000250</title></polyline>"));
	cr_assert(strstr(h, "<title>trial 000051</title></polyline>"));
	cr_assert_null(strstr(h, "<title>trial 000050</title></polyline>"));
	cr_assert_null(strstr(h, "<title>trial 000001</title></polyline>"));
	cr_assert_eq(fx_count(h, "<rect class=\"trial "), 250, "the timeline keeps every trial");
	strbuf_release(&sb);
	report_score_release(&sc);
	report_exp_release(&exp);
}

Test(report, missing_experiment_json_is_an_error)
{
	char *p = xstrfmt("%s/experiment.json", dir);
	cr_assert_eq(unlink(p), 0);
	free(p);
	struct report_exp exp;
	cr_assert_eq(report_load(dir, &exp), -1);
}

Test(report, si_prefixes)
{
	struct strbuf sb = STRBUF_INIT;
	report_si(&sb, 5333333333.3, "FLOPS");
	cr_assert_str_eq(sb.buf, "5.33 GFLOPS");
	strbuf_reset(&sb);
	report_si(&sb, 12, "FLOPS");
	cr_assert_str_eq(sb.buf, "12.00 FLOPS");
	strbuf_release(&sb);
}

Test(report, an_empty_experiment_still_reports)
{
	struct report_exp exp;
	struct report_score sc;
	struct report_options opt = REPORT_OPTIONS_INIT;
	cr_assert_eq(report_load(dir, &exp), 0);
	cr_assert_eq(exp.ntrials, 0);
	cr_assert_eq(exp.best, -1);
	cr_assert_eq(report_score(&exp, &opt, &sc), 0);
	cr_assert_eq(sc.nsamples, 0);
	cr_assert_not(sc.valid);
	cr_assert(strstr(sc.failed[0], "no epoch"));
	struct strbuf sb = STRBUF_INIT;
	report_html(&sb, &exp, &opt, &sc);
	cr_assert_eq(fx_count(sb.buf, "no sample point yet"), 3);
	cr_assert(strstr(sb.buf, "No trial has reported an accuracy yet"));
	strbuf_reset(&sb);
	report_summary(&sb, &exp, &sc);
	cr_assert(strstr(sb.buf, "Trials:                0\n"), "%s", sb.buf);
	strbuf_release(&sb);
	report_score_release(&sc);
	report_exp_release(&exp);
	opt.sample_step_h = 0;
	cr_assert_eq(report_load(dir, &exp), 0);
	cr_assert_eq(report_score(&exp, &opt, &sc), -1);
	report_exp_release(&exp);
}

/* Issue 13 #6: a step too small for the run (1e-9 h wrote a 364 MB report;
 * 1e-10 h silently had no sample) is refused with the count, not cut. */
Test(report, a_step_making_too_many_points_is_refused)
{
	cr_assert_eq(fx_epoch(dir, "000001", 1, T0 + 900, 1e12, 0, 0.9, 1), 0);
	cr_assert_eq(fx_epoch(dir, "000001", 2, T0 + 1800, 2e12, 0, 0.95, 1), 0);
	struct report_exp exp;
	struct report_score sc;
	struct report_options opt = REPORT_OPTIONS_INIT;
	cr_assert_eq(report_load(dir, &exp), 0);
	const double steps[] = { 1e-9, 1e-10 };
	for (size_t i = 0; i < ARRAY_SIZE(steps); i++) {
		opt.sample_first_h = opt.sample_step_h = steps[i];
		cr_assert_eq(report_score(&exp, &opt, &sc), -1, "step %g h was accepted", steps[i]);
		cr_assert(strstr(util_last_error(), "more than 100000"), "%s", util_last_error());
	}
	/* 1000 points over the 0.5 h run, those after the first epoch kept */
	opt.sample_first_h = opt.sample_step_h = 0.5 / 1000;
	cr_assert_eq(report_score(&exp, &opt, &sc), 0, "%s", util_last_error());
	cr_assert_geq(sc.nsamples, 500);
	report_score_release(&sc);
	report_exp_release(&exp);
}

/* Issue 17: AIPerf's clock, its epoch charge and report.py's rules. Trial A
 * is submitted 300 s after the creation, B at 400 s; each runs epochs of the
 * 1000-class net below, whose FLOPs per image are counted by hand:
 * global_avg_pool on 4x4x1: (16-1) adds + a divide at 4 = 19;
 * dense 1 -> 1000: 2*1000 + softmax 8*1000 + 999 + 4*1000 = 14999 forward,
 * 4*1000 + 2*2*1000 = 8000 backward. */
#define IMG_FWD (19.0 + 14999.0)
#define IMG_BWD 8000.0

static int imagenet_arch(const char *trial)
{
	static const char doc[] =
		"{\"format\":\"aah-arch/1\",\"input\":{\"height\":4,\"width\":4,\"channels\":1},"
		"\"num_classes\":1000,\"output\":\"fc\",\"layers\":["
		"{\"id\":\"gap\",\"type\":\"global_avg_pool\",\"inputs\":[\"input\"]},"
		"{\"id\":\"fc\",\"type\":\"dense\",\"inputs\":[\"gap\"],\"units\":1000}]}\n";
	return fx_arch_doc(dir, trial, doc);
}

static void late_trials(void)
{
	cr_assert_eq(fx_trial_events(dir, "000001", 0, T0 + 300, T0 + 2000, "succeeded"), 0);
	cr_assert_eq(fx_trial_events(dir, "000002", 1, T0 + 400, T0 + 2000, "succeeded"), 0);
	cr_assert_eq(fx_epoch(dir, "000001", 1, T0 + 900, 1e9, 1e8, 0.5, 10), 0);
	cr_assert_eq(fx_epoch(dir, "000001", 2, T0 + 1500, 2e9, 2e8, 0.6, 10), 0);
	cr_assert_eq(fx_epoch(dir, "000002", 1, T0 + 1900, 3e9, 3e8, 0.04, 10), 0);
	cr_assert_eq(imagenet_arch("000001"), 0);
	cr_assert_eq(imagenet_arch("000002"), 0);
}

Test(report, aiperfs_clock_starts_at_the_first_trial_and_epochs_are_charged_as_score_py)
{
	late_trials();
	struct report_exp exp;
	struct report_score sc;
	struct report_options opt = REPORT_OPTIONS_INIT;
	cr_assert_eq(report_load(dir, &exp), 0);
	close_to(exp.created, T0);
	close_to(exp.start, T0 + 300);
	close_to(exp.trials[0].img_fwd, IMG_FWD);
	close_to(exp.trials[0].img_bwd, IMG_BWD);
	cr_assert_eq(report_score(&exp, &opt, &sc), 0);
	/* auto: every arch has 1000 classes */
	cr_assert_str_eq(sc.charge, "aiperf");
	double epoch = IMG_FWD * 50000 + (IMG_FWD + IMG_BWD) * 1280000;
	close_to(sc.final.flops, 3 * epoch);
	close_to(sc.final.flops_images, 5.5e9); /* cumulative: A 2.2e9, B 3.3e9 */
	/* elapsed from the first trial's start: 1900 - 300 s */
	close_to(sc.duration_s, 1600);
	close_to(sc.final.elapsed_s, 1600);
	close_to(sc.final.score, 3 * epoch / 1600);
	/* the first point, 0.2 h after the start (T0 + 1020), has A's first epoch */
	close_to(sc.samples[0].flops, epoch);
	close_to(sc.samples[0].elapsed_s, 600);
	report_score_release(&sc);

	opt.charge = "images";
	cr_assert_eq(report_score(&exp, &opt, &sc), 0);
	cr_assert_str_eq(sc.charge, "images");
	close_to(sc.final.flops, 5.5e9);
	close_to(sc.final.flops_images, 5.5e9); /* cumulative: A 2.2e9, B 3.3e9 */
	report_score_release(&sc);

	struct strbuf sb = STRBUF_INIT;
	opt.charge = NULL;
	cr_assert_eq(report_score(&exp, &opt, &sc), 0);
	report_summary(&sb, &exp, &sc);
	cr_assert(strstr(sb.buf, "Failed (rules of AIPerf's README)"), "%s", sb.buf);
	cr_assert(strstr(sb.buf, "epochs charged as AIPerf's score.py"), "%s", sb.buf);
	cr_assert(strstr(sb.buf, "starts at the first trial, 300 s after the experiment was created"),
		  "%s", sb.buf);
	cJSON *doc = report_results_json(&exp, &opt, &sc);
	close_to(cJSON_GetObjectItem(doc, "start")->valuedouble, T0 + 300);
	cr_assert_str_eq(cJSON_GetObjectItem(doc, "rule_set")->valuestring, "readme");
	cr_assert_str_eq(cJSON_GetObjectItem(doc, "aiperf_comparison")->valuestring, "docs/aiperf.md");
	cJSON_Delete(doc);
	strbuf_release(&sb);
	report_score_release(&sc);
	report_exp_release(&exp);
}

/* An epoch that trained a part of one (aah-trial --partial_epoch, "part"
 * in its metrics line) is charged that part of score.py's training
 * images, and its evaluation whole. */
Test(report, a_part_of_an_epoch_is_charged_that_part_of_score_pys_images)
{
	late_trials();
	char *line = xstrfmt("{\"format\":\"aah-metrics/1\",\"epoch\":3,\"val_acc\":0.61,"
			     "\"train_flops\":2.5e9,\"eval_flops\":2.5e8,\"timestamp\":%.6f,"
			     "\"rank\":0,\"part\":0.25}", T0 + 1700);
	cr_assert_eq(fx_append(dir, "trials/000001/metrics.jsonl", line), 0);
	free(line);
	struct report_exp exp;
	struct report_score sc;
	struct report_options opt = REPORT_OPTIONS_INIT;
	cr_assert_eq(report_load(dir, &exp), 0);
	cr_assert_eq(report_score(&exp, &opt, &sc), 0);
	cr_assert_str_eq(sc.charge, "aiperf");
	double epoch = IMG_FWD * 50000 + (IMG_FWD + IMG_BWD) * 1280000;
	double part = IMG_FWD * 50000 + (IMG_FWD + IMG_BWD) * 1280000 * 0.25;
	close_to(sc.final.flops, 3 * epoch + part);
	close_to(sc.final.flops_images, 6.05e9); /* cumulative: A 2.75e9, B 3.3e9 */
	report_score_release(&sc);
	report_exp_release(&exp);
}

Test(report, report_py_rules_fail_only_on_low_accuracy)
{
	late_trials();
	struct report_exp exp;
	struct report_score sc;
	struct report_options opt = REPORT_OPTIONS_INIT;
	cr_assert_eq(report_load(dir, &exp), 0);
	/* README: under 1 h and 0.6 not above 0.7 */
	cr_assert_eq(report_score(&exp, &opt, &sc), 0);
	cr_assert_not(sc.valid);
	cr_assert_eq(sc.nfailed, 2);
	report_score_release(&sc);
	/* report.py: Error 40% is not above 95% */
	opt.rules = "report.py";
	cr_assert_eq(report_score(&exp, &opt, &sc), 0);
	cr_assert_str_eq(sc.rules, "report.py");
	cr_assert(sc.valid, "%s", sc.nfailed ? sc.failed[0] : "");
	report_score_release(&sc);
	report_exp_release(&exp);

	/* only B, whose best is 4%: Error 96% fails report.py */
	fileio_remove_tree(tmpdir);
	cr_assert_not_null(mkdtemp(strcpy(tmpdir, "/tmp/aah-report-XXXXXX")));
	free(dir);
	dir = fx_exp_create(tmpdir, "exp00002", T0);
	cr_assert_eq(fx_trial_events(dir, "000002", 1, T0 + 400, T0 + 2000, "succeeded"), 0);
	cr_assert_eq(fx_epoch(dir, "000002", 1, T0 + 1900, 3e9, 3e8, 0.04, 10), 0);
	cr_assert_eq(report_load(dir, &exp), 0);
	cr_assert_eq(report_score(&exp, &opt, &sc), 0);
	cr_assert_not(sc.valid);
	cr_assert_eq(sc.nfailed, 1);
	cr_assert(strstr(sc.failed[0], "report.py: Error 96.00% is above 95%"), "%s", sc.failed[0]);
	report_score_release(&sc);
	report_exp_release(&exp);
}

/* AIPerf's report rules are kept once, in config.c's key table (issue 37):
 * REPORT_OPTIONS_INIT reads them there and gives AIPerf's numbers. */
Test(report_options, aiperf_defaults_come_from_the_key_table)
{
	struct report_options o = REPORT_OPTIONS_INIT;
	cr_assert_eq(o.sample_first_h, 0.2);
	cr_assert_eq(o.sample_step_h, 0.1);
	cr_assert_eq(o.min_duration_s, 3600.0);
	cr_assert_eq(o.min_accuracy, 0.70);
	cr_assert_str_eq(o.min_precision, "fp16");
	cr_assert_null(o.rules);
	cr_assert_null(o.charge);
	cr_assert_eq(o.now, 0.0);
	cr_assert_eq(o.gpu_fp32_ok, 0);
}

/* An NNI trial (docs/nni.md): epochs the runner wrote from its PERIODICAL
 * records (no FLOPs), and its FINAL result in result.json (source nni). */
static void nni_trial(const char *trial, double t_end, double final)
{
	char *file = xstrfmt("trials/%s/metrics.jsonl", trial);
	for (int e = 1; e <= 2; e++) {
		char *line = xstrfmt("{\"format\":\"aah-metrics/1\",\"epoch\":%d,\"val_acc\":0.%d,"
				     "\"timestamp\":%.1f,\"source\":\"nni\",\"nni_run\":1,"
				     "\"nni_sequence\":%d,\"nni_value\":\"0.%d\"}", e, 4 + e,
				     T0 + 100 * e, e - 1, 4 + e);
		cr_assert_eq(fx_append(dir, file, line), 0);
		free(line);
	}
	char *p = xstrfmt("%s/trials/%s/result.json", dir, trial);
	char *doc = xstrfmt("{\"format\":\"aah-result/1\",\"status\":\"succeeded\",\"stop_reason\":"
			    "\"final result\",\"best_val_acc\":%g,\"final_val_acc\":%g,\"epochs_run\":2,"
			    "\"source\":\"nni\",\"nni_run\":1,\"nni_value\":\"%g\"}\n", final, final, final);
	cr_assert_eq(fileio_write_atomic(p, doc, strlen(doc)), 0);
	cr_assert_eq(fx_trial_events(dir, trial, 0, T0, t_end, "succeeded"), 0);
	free(doc);
	free(p);
	free(file);
}

Test(report, an_nni_trials_final_result_is_its_accuracy_and_without_flops_there_is_no_score)
{
	nni_trial("000001", T0 + 300, 0.75);
	struct report_exp exp;
	struct report_score sc;
	struct report_options opt = REPORT_OPTIONS_INIT;
	opt.sample_first_h = opt.sample_step_h = 0.01;
	cr_assert_eq(report_load(dir, &exp), 0);
	cr_assert_float_eq(exp.trials[0].best_acc, 0.75, 1e-12, "the FINAL value, not the epochs' 0.6");
	cr_assert_eq(report_score(&exp, &opt, &sc), 0);
	cr_assert_eq(sc.nepochs, 2, "the FINAL result is no epoch");
	close_to(sc.duration_s, 200);
	close_to(sc.final.best_acc, 0.75);
	cr_assert(sc.no_score);
	close_to(sc.final.flops, 0);
	int said = 0;
	for (size_t i = 0; i < sc.nfailed; i++)
		said |= !strncmp(sc.failed[i], "no-score: ", 10);
	cr_assert(said, "the rules say there is no Score");
	struct strbuf sb = STRBUF_INIT;
	report_summary(&sb, &exp, &sc);
	cr_assert(strstr(sb.buf, "Final Score:           none: the trials counted no FLOPs"), "%s", sb.buf);
	strbuf_reset(&sb);
	report_html(&sb, &exp, &opt, &sc);
	cr_assert(strstr(sb.buf, "<p id=\"no-score\"><strong>This run has no Score, only accuracies"));
	cr_assert_eq(fx_count(sb.buf, "class=\"epoch-pt\""), 2);
	cr_assert(strstr(sb.buf, "No architecture was proposed to it: its network is its own code's"));
	cr_assert_eq(fx_count(sb.buf, ">no Score: the trials counted no FLOPs</text>"), 2,
		     "chart-score and chart-regulated draw no 0 line");
	cr_assert_eq(fx_count(sb.buf, "<td>none</td><td>none</td><td>none</td>"), sc.nsamples);
	cr_assert_gt(sc.nsamples, 0);
	cr_assert(strstr(sb.buf, "<tr class=\"trial succeeded\"><td>000001</td><td>succeeded</td><td>2</td>"
				 "<td>0.7500</td><td>0.6000</td>"), "%s", strstr(sb.buf, "id=\"trials\""));
	cJSON *res = report_results_json(&exp, &opt, &sc);
	cr_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(res, "no_score")));
	cJSON_Delete(res);
	strbuf_release(&sb);
	report_score_release(&sc);
	report_exp_release(&exp);
}

Test(report, an_nni_trial_with_an_imagenet_arch_is_charged_as_score_py_charges_it)
{
	nni_trial("000001", T0 + 300, 0.75);
	static const char arch[] =
		"{\"format\":\"aah-arch/1\",\"input\":{\"height\":8,\"width\":8,\"channels\":3},"
		"\"num_classes\":1000,\"output\":\"fc\",\"layers\":["
		"{\"id\":\"gap\",\"type\":\"global_avg_pool\",\"inputs\":[\"input\"]},"
		"{\"id\":\"fc\",\"type\":\"dense\",\"inputs\":[\"gap\"],\"units\":1000}]}\n";
	cr_assert_eq(fx_arch_doc(dir, "000001", arch), 0);
	struct report_exp exp;
	struct report_score sc;
	struct report_options opt = REPORT_OPTIONS_INIT;
	cr_assert_eq(report_load(dir, &exp), 0);
	cr_assert_eq(report_score(&exp, &opt, &sc), 0);
	cr_assert_str_eq(sc.charge, "aiperf");
	cr_assert(!sc.no_score);
	const struct report_trial *tr = &exp.trials[0];
	double per_epoch = tr->img_fwd * REPORT_AIPERF_EVAL_IMAGES +
			   (tr->img_fwd + tr->img_bwd) * REPORT_AIPERF_TRAIN_IMAGES;
	cr_assert_gt(per_epoch, 0);
	close_to(sc.final.flops, 2 * per_epoch);
	report_score_release(&sc);
	report_exp_release(&exp);
}
