/* Unit tests for runner/nni: NNI's records as NNI's own SDK writes them
 * (tests/fixtures/nni/golden, made by NNI's code: SOURCE.md), every kind of
 * bad record refused with its place named, parameter.cfg byte for byte as
 * NNI's dispatcher writes it, and the runner's reading of a trial's
 * records into metrics.jsonl and result.json (nnitrial_sync): as they come,
 * once each, across a runner that starts again, a second run, and the log
 * route. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "jsonfile.h"
#include "runner/config/config.h"
#include "runner/nni/nnirec.h"
#include "runner/nni/nnitrial.h"
#include "runner/store/outcome.h"
#include "util.h"

#define GOLDEN "tests/fixtures/nni/golden"

static char tmpdir[64];
static char *expdir, *trial;   /* <tmp>/exp and its trial 000001 */

static void setup(void)
{
	strcpy(tmpdir, "/tmp/aah-nni-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	expdir = xstrfmt("%s/exp", tmpdir);
	trial = xstrfmt("%s/trials/000001", expdir);
	cr_assert_eq(fileio_mkdir_p(trial, 0755), 0);
	util_set_quiet(1);
}

static void teardown(void)
{
	fileio_remove_tree(tmpdir);
	free(expdir);
	free(trial);
}

TestSuite(nnirec, .init = setup, .fini = teardown);
TestSuite(nnitrial, .init = setup, .fini = teardown);

static char *slurp(const char *path, size_t *len)
{
	char *text = NULL;
	cr_assert_eq(fileio_read(path, 0, &text, len), 0, "%s", path);
	return text;
}

static const struct nnirec_trial golden_trial = { "000001", 0 };

static void assert_golden_records(const struct nnirec_list *l)
{
	static const double values[] = { 0.5, 0.625, 0.75, 0.8125 };
	cr_assert_eq(l->n, 4);
	for (size_t i = 0; i < 4; i++) {
		cr_assert_eq(l->v[i].type, i < 3 ? NNIREC_PERIODICAL : NNIREC_FINAL);
		cr_assert_eq(l->v[i].sequence, i < 3 ? (long)i : 0);
		cr_assert_float_eq(l->v[i].value, values[i], 1e-12);
	}
	cr_assert_str_eq(l->v[2].value_json, "{\"default\": 0.75, \"loss\": 0.4}");
}

Test(nnirec, reads_what_nnis_own_sdk_wrote_to_its_metrics_file)
{
	size_t len, used;
	char *buf = slurp(GOLDEN "/metrics", &len);
	struct nnirec_list l = NNIREC_LIST_INIT;
	cr_assert_eq(nnirec_read_frames("m", buf, len, 0, 1, &golden_trial, &l, &used), 0,
		     "%s", util_last_error());
	cr_assert_eq(used, len);
	assert_golden_records(&l);
	nnirec_list_release(&l);
	free(buf);
}

Test(nnirec, reads_what_nnis_own_sdk_printed_on_stdout)
{
	size_t len, used;
	unsigned long lines;
	char *buf = slurp(GOLDEN "/stdout", &len);
	struct nnirec_list l = NNIREC_LIST_INIT;
	cr_assert_eq(nnirec_read_lines("log", buf, len, 1, 1, &golden_trial, &l, &used, &lines), 0,
		     "%s", util_last_error());
	cr_assert_eq(used, len);
	cr_assert_eq(lines, 5);   /* four records and the line of ids */
	assert_golden_records(&l);
	nnirec_list_release(&l);
	free(buf);
}

/* Every cut of the golden file: whole records before the cut are read, the
 * rest left for later while the trial runs, and an error once it ended. */
Test(nnirec, a_record_cut_short_waits_while_the_trial_runs_and_fails_it_after)
{
	size_t len;
	char *buf = slurp(GOLDEN "/metrics", &len);
	size_t ends[] = { 107, 216, 354, 459 };   /* where each record ends */
	for (size_t cut = 1; cut < len; cut++) {
		struct nnirec_list l = NNIREC_LIST_INIT;
		size_t used, whole = 0;
		while (whole < 4 && ends[whole] <= cut)
			whole++;
		cr_assert_eq(nnirec_read_frames("m", buf, cut, 0, 0, &golden_trial, &l, &used), 0);
		cr_assert_eq(l.n, whole, "cut at %zu", cut);
		cr_assert_eq(used, whole ? ends[whole - 1] : 0);
		nnirec_list_release(&l);
		if (cut == used)
			continue;   /* on a boundary: nothing cut */
		cr_assert_eq(nnirec_read_frames("m", buf, cut, 0, 1, &golden_trial, &l, &used), -1);
		cr_assert(strstr(util_last_error(), "is cut short"), "%s", util_last_error());
		cr_assert_eq(l.n, whole);
		nnirec_list_release(&l);
	}
	free(buf);
}

/* A file holding one record, its JSON given. */
static int one(const char *json, struct nnirec_list *l)
{
	char *frame = xstrfmt("ME%06zu%s\n", strlen(json) + 1, json);
	size_t used;
	int r = nnirec_read_frames("/t/.nni/metrics", frame, strlen(frame), 40, 1,
				   &(struct nnirec_trial){ "000003", 2 }, l, &used);
	free(frame);
	return r;
}

#define REC(id, pid, type, value) \
	"{\"parameter_id\": " pid ", \"trial_job_id\": \"" id "\", \"type\": \"" type \
	"\", \"sequence\": 0, \"value\": \"" value "\"}"

static void refused(const char *json, const char *why)
{
	struct nnirec_list l = NNIREC_LIST_INIT;
	cr_assert_eq(one(json, &l), -1, "%s was taken", json);
	cr_assert_eq(l.n, 0);
	cr_assert(strstr(util_last_error(), "'/t/.nni/metrics': the record at byte 40"),
		  "%s", util_last_error());
	cr_assert(strstr(util_last_error(), why), "'%s' lacks '%s'", util_last_error(), why);
	nnirec_list_release(&l);
}

Test(nnirec, garbage_is_refused_with_its_place_and_reason)
{
	refused(REC("000003", "2", "PERIODICAL", "abc"), "'value' is 'abc', not a number");
	refused(REC("000003", "2", "PERIODICAL", "NaN"), "not a number");
	refused(REC("000003", "2", "PERIODICAL", "\\\"0.9\\\""), "not a number");
	refused(REC("000003", "2", "FINAL", "{\\\"loss\\\": 0.1}"), "not a number");
	refused(REC("000003", "2", "FINAL", "2.5"), "outside [0, 1]");
	refused(REC("000007", "2", "PERIODICAL", "0.5"),
		"comes from trial '000007', not from this one ('000003')");
	refused(REC("000003", "5", "PERIODICAL", "0.5"),
		"is for parameter 5; this trial was given parameter 2");
	refused(REC("000003", "null", "PERIODICAL", "0.5"), "before it called nni.get_next_parameter()");
	refused(REC("000003", "2", "SOMETHING", "0.5"), "'type' is 'SOMETHING'");
	refused("{\"trial_job_id\": \"000003\", \"type\": \"REQUEST_PARAMETER\", \"sequence\": 0, "
		"\"parameter_index\": 0}", "asks for parameters");
	refused("{\"parameter_id\": 2, \"trial_job_id\": \"000003\", \"type\": \"FINAL\", "
		"\"sequence\": 0, \"value\": 0.5}", "'value' is not a string of JSON");
	refused("{\"parameter_id\": 2, \"trial_job_id\": \"000003\", \"type\": \"FINAL\", "
		"\"sequence\": -1, \"value\": \"0.5\"}", "'sequence' is not a count");
	refused("[1, 2]", "is not a JSON object");
	refused("{\"parameter_id\": 2,", "is not a JSON object");
}

Test(nnirec, a_dict_metric_counts_its_default)
{
	struct nnirec_list l = NNIREC_LIST_INIT;
	cr_assert_eq(one(REC("000003", "2", "FINAL", "{\\\"default\\\": 0.25, \\\"loss\\\": 3}"), &l), 0,
		     "%s", util_last_error());
	cr_assert_eq(l.n, 1);
	cr_assert_float_eq(l.v[0].value, 0.25, 1e-12);
	nnirec_list_release(&l);
}

Test(nnirec, a_frame_without_ME_and_six_digits_is_not_nnis)
{
	static const char *const bad[] = { "XX000010{}", "ME00a010{}", "ME", "M", "{\"a\": 1}" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct nnirec_list l = NNIREC_LIST_INIT;
		size_t used = 99;
		int r = nnirec_read_frames("m", bad[i], strlen(bad[i]), 0, 1, &golden_trial, &l, &used);
		cr_assert_eq(r, -1, "'%s' was taken", bad[i]);
		cr_assert_eq(used, 0);
		nnirec_list_release(&l);
	}
	/* while the trial runs, a valid start of a header waits; another fails now */
	struct nnirec_list l = NNIREC_LIST_INIT;
	size_t used;
	cr_assert_eq(nnirec_read_frames("m", "ME00", 4, 0, 0, &golden_trial, &l, &used), 0);
	cr_assert_eq(nnirec_read_frames("m", "MX00", 4, 0, 0, &golden_trial, &l, &used), -1);
	cr_assert(strstr(util_last_error(), "does not start with ME"), "%s", util_last_error());
}

Test(nnirec, a_log_line_cut_short_waits_then_fails)
{
	const char *log = "epoch 1\nNNISDK_MEb'{\"parameter_id\": 0, \"trial_job_id\": \"000001\"";
	struct nnirec_list l = NNIREC_LIST_INIT;
	size_t used;
	unsigned long lines;
	cr_assert_eq(nnirec_read_lines("log", log, strlen(log), 7, 0, &golden_trial, &l, &used, &lines), 0);
	cr_assert_eq(used, 8);
	cr_assert_eq(lines, 1);
	cr_assert_eq(nnirec_read_lines("log", log, strlen(log), 7, 1, &golden_trial, &l, &used, &lines), -1);
	cr_assert(strstr(util_last_error(), "'log' line 8: the NNISDK_MEb line has no closing quote"),
		  "%s", util_last_error());
	cr_assert_eq(l.n, 0);
}

/* ---- the runner's side: parameter.cfg and what a trial reports ---- */

Test(nnitrial, parameter_cfg_is_what_nnis_dispatcher_writes)
{
	cJSON *p = cJSON_Parse("{\"lr\": 0.05, \"hidden\": 32, \"activation\": \"relu\"}");
	cr_assert_eq(nnitrial_write_parameters(trial, 1, p), 0);
	char *path = xstrfmt("%s/parameter.cfg", trial);
	size_t a, b;
	char *mine = slurp(path, &a), *nnis = slurp(GOLDEN "/parameter.cfg", &b);
	cr_assert_eq(a, b, "%s\n%s", mine, nnis);
	cr_assert_eq(memcmp(mine, nnis, a), 0, "%s\n%s", mine, nnis);
	free(mine);
	free(nnis);
	/* no proposal: no parameters, still a file NNI's SDK reads (it would wait forever) */
	cr_assert_eq(nnitrial_write_parameters(trial, 7, NULL), 0);
	mine = slurp(path, &a);
	cr_assert_str_eq(mine, "{\"parameter_id\": 6, \"parameter_source\": \"algorithm\", "
			       "\"parameters\": {}, \"parameter_index\": 0}");
	free(mine);
	free(path);
	cJSON_Delete(p);
}

Test(nnitrial, the_env_names_nnis_sdk_reads)
{
	struct strvec env = STRVEC_INIT;
	nnitrial_env(&env, "abcd1234", "000005", 5, "/w/t");
	cr_assert_str_eq(strvec_getenv(&env, "NNI_PLATFORM"), "local");
	cr_assert_str_eq(strvec_getenv(&env, "NNI_EXP_ID"), "abcd1234");
	cr_assert_str_eq(strvec_getenv(&env, "NNI_TRIAL_JOB_ID"), "000005");
	cr_assert_str_eq(strvec_getenv(&env, "NNI_SYS_DIR"), "/w/t");
	cr_assert_str_eq(strvec_getenv(&env, "NNI_OUTPUT_DIR"), "/w/t");
	cr_assert_str_eq(strvec_getenv(&env, "NNI_TRIAL_SEQ_ID"), "4");
	cr_assert_str_eq(strvec_getenv(&env, "MULTI_PHASE"), "false");
	strvec_clear(&env);
}

static struct aah_config cfg;   /* trial.env only */

static void set_env(const char *yaml)
{
	struct ynode *n = NULL;
	if (yaml)
		cr_assert_eq(yamltree_parse("env", yaml, strlen(yaml), &n), 0);
	ynode_free((struct ynode *)cfg.trial.env);
	cfg.trial.env = n;
}

/* The first n bytes of the golden metrics file appended to the trial's. */
static void trial_writes(size_t from, size_t to)
{
	size_t len;
	char *buf = slurp(GOLDEN "/metrics", &len);
	char *path = xstrfmt("%s/.nni/metrics", trial);
	FILE *f = fopen(path, "ab");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(buf + from, 1, to - from, f), to - from);
	fclose(f);
	free(path);
	free(buf);
}

static size_t count_lines(const char *name)
{
	char *path = xstrfmt("%s/%s", trial, name), *text = NULL;
	size_t n = 0;
	if (fileio_exists(path) && fileio_read(path, 0, &text, NULL) == 0)
		for (char *p = text; *p; p++)
			n += *p == '\n';
	free(text);
	free(path);
	return n;
}

Test(nnitrial, records_become_epochs_and_a_result_as_they_come_once_each)
{
	struct nnitrial_watch w = NNITRIAL_WATCH_INIT;
	set_env(NULL);
	cr_assert_eq(nnitrial_prepare(trial, trial, 0), 0);
	trial_writes(0, 150);              /* record 1 whole, record 2 half */
	cr_assert_eq(nnitrial_sync(&w, &cfg, expdir, 1, NULL, 0), 0);
	cr_assert_eq(count_lines("metrics.jsonl"), 1);
	trial_writes(150, 354);            /* records 2 and 3 */
	cr_assert_eq(nnitrial_sync(&w, &cfg, expdir, 1, NULL, 0), 0);
	cr_assert_eq(nnitrial_sync(&w, &cfg, expdir, 1, NULL, 0), 0);
	cr_assert_eq(count_lines("metrics.jsonl"), 3);
	/* a runner that starts again reads them all again, and adds none twice */
	struct nnitrial_watch w2 = NNITRIAL_WATCH_INIT;
	cr_assert_eq(nnitrial_sync(&w2, &cfg, expdir, 1, NULL, 0), 0);
	cr_assert_eq(count_lines("metrics.jsonl"), 3);
	trial_writes(354, 459);            /* FINAL */
	cr_assert_eq(nnitrial_sync(&w2, &cfg, expdir, 1, NULL, 1), 0);
	cr_assert_eq(count_lines("metrics.jsonl"), 3);

	struct outcome o;
	cr_assert_eq(outcome_read(expdir, 1, NULL, TRIAL_UNKNOWN, 0, &o), 0);
	cr_assert_eq(o.state, TRIAL_SUCCEEDED);
	cr_assert_eq(o.nepochs, 3);
	cr_assert_float_eq(o.epochs[1].val_acc, 0.625, 1e-12);
	cr_assert_eq(o.epochs[2].epoch, 3);
	cr_assert_float_eq(o.best_acc, 0.8125, 1e-12, "the FINAL value is the trial's result");
	cr_assert_float_eq(o.flops, 0, 0);
	outcome_release(&o);
	nnitrial_watch_release(&w);
	nnitrial_watch_release(&w2);
}

static char *trial_log(void)
{
	char *path = xstrfmt("%s/trial.log", trial), *text = NULL;
	if (fileio_exists(path))
		cr_assert_eq(fileio_read(path, 0, &text, NULL), 0);
	free(path);
	return text ? text : xstrdup("");
}

Test(nnitrial, garbage_fails_the_trial_with_the_reason_in_its_log_and_no_number)
{
	struct nnitrial_watch w = NNITRIAL_WATCH_INIT;
	set_env(NULL);
	cr_assert_eq(nnitrial_prepare(trial, trial, 0), 0);
	trial_writes(0, 107);
	char *path = xstrfmt("%s/.nni/metrics", trial);
	cr_assert_eq(fileio_append_line(path, "ME000020{\"value\": \"garbage"), 0);
	trial_writes(107, 459);            /* what follows the garbage is not read */
	cr_assert_eq(nnitrial_sync(&w, &cfg, expdir, 1, NULL, 0), 0);
	struct outcome o;
	cr_assert_eq(outcome_read(expdir, 1, NULL, TRIAL_UNKNOWN, 0, &o), 0);
	cr_assert_eq(o.state, TRIAL_FAILED);
	cr_assert_eq(o.nepochs, 1, "the record before it stays");
	cr_assert_float_eq(o.best_acc, 0.5, 1e-12);
	cr_assert(!strncmp(o.result.stop_reason, "error: '.nni/metrics': the record at byte 107 is not "
			   "a JSON object", 60), "%s", o.result.stop_reason);
	outcome_release(&o);
	char *log = trial_log();
	cr_assert(strstr(log, "aah-runner: nni: '") && strstr(log, "byte 107") &&
		  strstr(log, "; the trial fails\n"), "%s", log);
	free(log);
	/* once failed, nothing more is read */
	cr_assert_eq(nnitrial_sync(&w, &cfg, expdir, 1, NULL, 1), 0);
	cr_assert_eq(count_lines("metrics.jsonl"), 1);
	free(path);
	nnitrial_watch_release(&w);
}

Test(nnitrial, a_trial_that_ends_without_its_final_result_fails)
{
	struct nnitrial_watch w = NNITRIAL_WATCH_INIT;
	set_env(NULL);
	cr_assert_eq(nnitrial_prepare(trial, trial, 0), 0);
	trial_writes(0, 216);
	cr_assert_eq(nnitrial_sync(&w, &cfg, expdir, 1, NULL, 1), 0);
	struct outcome o;
	cr_assert_eq(outcome_read(expdir, 1, NULL, TRIAL_UNKNOWN, 0, &o), 0);
	cr_assert_eq(o.state, TRIAL_FAILED);
	cr_assert(strstr(o.result.stop_reason, "reported 2 intermediate results; "
				       "nni.report_final_result was not called"), "%s",
		  o.result.stop_reason);
	outcome_release(&o);
	nnitrial_watch_release(&w);
}

Test(nnitrial, a_trial_of_aahs_own_formats_is_left_alone)
{
	struct nnitrial_watch w = NNITRIAL_WATCH_INIT;
	set_env(NULL);
	cr_assert_eq(nnitrial_prepare(trial, trial, 0), 0);
	char *res = xstrfmt("%s/result.json", trial);
	const char *own = "{\"format\":\"aah-result/1\",\"status\":\"succeeded\",\"best_val_acc\":0.9}\n";
	cr_assert_eq(fileio_write_atomic(res, own, strlen(own)), 0);
	cr_assert_eq(nnitrial_sync(&w, &cfg, expdir, 1, NULL, 1), 0);
	size_t n;
	char *text = slurp(res, &n);
	cr_assert_str_eq(text, own);
	cr_assert_eq(count_lines("metrics.jsonl"), 0);
	free(text);
	free(res);
	/* and a trial that never spoke NNI gets no result at its end */
	struct nnitrial_watch w2 = NNITRIAL_WATCH_INIT;
	cr_assert_eq(nnitrial_sync(&w2, &cfg, expdir, 2, NULL, 1), 0);
	char *other = xstrfmt("%s/trials/000002/result.json", expdir);
	cr_assert(!fileio_exists(other));
	free(other);
	nnitrial_watch_release(&w);
	nnitrial_watch_release(&w2);
}

/* A retry fenced into a place of its own (attempt-2, docs/formats.md): its
 * SDK writes there, the runner reads and writes there, and the runs go on
 * counting from the trial's, so the epochs the place was given from the
 * first attempt (their nni_run 1) are not taken for the retry's. */
Test(nnitrial, a_retry_in_a_place_of_its_own_is_read_and_written_there)
{
	struct nnitrial_watch w = NNITRIAL_WATCH_INIT;
	set_env(NULL);
	cr_assert_eq(nnitrial_prepare(trial, trial, 0), 0);
	trial_writes(0, 107);
	cr_assert_eq(nnitrial_sync(&w, &cfg, expdir, 1, NULL, 1), 0);   /* no FINAL: failed */
	char *place = xstrfmt("%s/attempt-2", trial), *first = xstrfmt("%s/metrics.jsonl", trial);
	char *given = xstrfmt("%s/metrics.jsonl", place), *text = NULL;
	cr_assert_eq(fileio_mkdir_p(place, 0755), 0);
	cr_assert_eq(fileio_read(first, 0, &text, NULL), 0);   /* what place_prepare copies */
	cr_assert_eq(fileio_write_atomic(given, text, strlen(text)), 0);
	cr_assert_eq(nnitrial_prepare(trial, place, 0), 0);
	/* the SDK of the retry: its records in the place */
	size_t len;
	char *buf = slurp(GOLDEN "/metrics", &len), *sdk = xstrfmt("%s/.nni/metrics", place);
	cr_assert_eq(fileio_write_atomic(sdk, buf, len), 0);
	cr_assert_eq(nnitrial_sync(&w, &cfg, expdir, 1, "attempt-2", 1), 0);
	struct outcome o;
	cr_assert_eq(outcome_read(expdir, 1, "attempt-2", TRIAL_UNKNOWN, 0, &o), 0);
	cr_assert_eq(o.state, TRIAL_SUCCEEDED, "the retry's FINAL record decides it, in its place");
	outcome_release(&o);
	cr_assert_eq(outcome_read(expdir, 1, NULL, TRIAL_UNKNOWN, 0, &o), 0);
	cr_assert_eq(o.state, TRIAL_FAILED, "the first attempt's place keeps its own end");
	outcome_release(&o);
	free(text);
	cr_assert_eq(fileio_read(given, 0, &text, NULL), 0);
	size_t lines = 0;
	for (char *q = text; *q; q++)
		lines += *q == '\n';
	cr_assert_eq(lines, 4, "the epoch given from the first attempt, and the retry's three");
	cr_assert_not_null(strstr(text, "\"nni_run\":2"), "the retry is the trial's second run");
	free(text), free(buf), free(sdk), free(place), free(first), free(given);
	nnitrial_watch_release(&w);
}

Test(nnitrial, a_second_run_keeps_the_first_runs_records_and_starts_afresh)
{
	struct nnitrial_watch w = NNITRIAL_WATCH_INIT;
	set_env(NULL);
	cr_assert_eq(nnitrial_prepare(trial, trial, 0), 0);
	trial_writes(0, 107);
	cr_assert_eq(nnitrial_sync(&w, &cfg, expdir, 1, NULL, 1), 0);   /* no FINAL: failed */
	cr_assert_eq(nnitrial_prepare(trial, trial, 0), 0);                  /* its retry */
	char *kept = xstrfmt("%s/.nni/metrics.1", trial), *res = xstrfmt("%s/result.json", trial);
	cr_assert(fileio_exists(kept));
	cr_assert(!fileio_exists(res), "the first run's failure does not decide the second");
	trial_writes(0, 459);
	cr_assert_eq(nnitrial_sync(&w, &cfg, expdir, 1, NULL, 1), 0);
	cr_assert_eq(count_lines("metrics.jsonl"), 4, "one of the first run, three of the second");
	struct outcome o;
	cr_assert_eq(outcome_read(expdir, 1, NULL, TRIAL_UNKNOWN, 0, &o), 0);
	cr_assert_eq(o.state, TRIAL_SUCCEEDED);
	cr_assert_eq(o.epochs[1].epoch, 1, "the second run's epochs count from 1 again");
	outcome_release(&o);
	free(kept);
	free(res);
	nnitrial_watch_release(&w);
}

Test(nnitrial, on_another_platform_the_records_come_from_the_log)
{
	struct nnitrial_watch w = NNITRIAL_WATCH_INIT;
	set_env("NNI_PLATFORM: remote");
	char *log = xstrfmt("%s/trial.log", trial);
	cr_assert_eq(fileio_append_line(log, "an earlier run's NNISDK_MEb'not ours'"), 0);
	cr_assert_eq(nnitrial_prepare(trial, trial, 0), 0);   /* the log of this run starts after it */
	size_t len;
	char *out = slurp(GOLDEN "/stdout", &len);
	FILE *f = fopen(log, "ab");
	cr_assert_eq(fwrite(out, 1, len, f), len);
	fclose(f);
	cr_assert_eq(nnitrial_sync(&w, &cfg, expdir, 1, NULL, 1), 0);
	cr_assert_eq(count_lines("metrics.jsonl"), 3);
	struct outcome o;
	cr_assert_eq(outcome_read(expdir, 1, NULL, TRIAL_UNKNOWN, 0, &o), 0);
	cr_assert_eq(o.state, TRIAL_SUCCEEDED);
	cr_assert_float_eq(o.best_acc, 0.8125, 1e-12);
	outcome_release(&o);
	/* a bad line is named by its number in the whole log */
	struct nnitrial_watch w2 = NNITRIAL_WATCH_INIT;
	cr_assert_eq(nnitrial_prepare(trial, trial, 0), 0);
	cr_assert_eq(fileio_append_line(log, "NNISDK_MEb'{\"nope\": 1}'"), 0);
	cr_assert_eq(nnitrial_sync(&w2, &cfg, expdir, 1, NULL, 1), 0);
	cr_assert_eq(outcome_read(expdir, 1, NULL, TRIAL_UNKNOWN, 0, &o), 0);
	cr_assert_eq(o.state, TRIAL_FAILED);
	cr_assert_str_eq(o.result.stop_reason, "error: 'trial.log' line 7: no 'type' string");
	outcome_release(&o);
	free(out);
	free(log);
	set_env(NULL);
	nnitrial_watch_release(&w);
	nnitrial_watch_release(&w2);
}
