/* Unit tests for runner/expdir: trial state names, trial ids and paths,
 * attempts' places (and runner/store/place.c, a place made ready),
 * journal append and replay (torn last line, unknown events, bad lines),
 * experiment.json, result.json and metrics.jsonl, and the in-memory
 * experiment (runner/experiment.c) built on the replay. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "runner/store/expdir.h"
#include "runner/store/place.h"
#include "runner/experiment.h"
#include "strvec.h"
#include "util.h"

static char tmpdir[64];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/aah-expdir-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	util_set_quiet(1);
}

static void teardown(void)
{
	fileio_remove_tree(tmpdir);
}

TestSuite(expdir, .init = setup, .fini = teardown);

/* Write <tmpdir>/<name> with exactly text (no newline added). */
static void put(const char *name, const char *text)
{
	char *p = xstrfmt("%s/%s", tmpdir, name);
	char *slash = strrchr(p, '/');
	*slash = '\0';
	cr_assert_eq(fileio_mkdir_p(p, 0755), 0);
	*slash = '/';
	cr_assert_eq(fileio_write_atomic(p, text, strlen(text)), 0);
	free(p);
}

/* stderr of a stretch of code, into a file; end returns what was written. */
static int saved_fd = -1;
static char errpath[96];

static void stderr_begin(void)
{
	snprintf(errpath, sizeof(errpath), "%s/stderr.txt", tmpdir);
	fflush(stderr);
	saved_fd = dup(2);
	int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert(fd >= 0 && saved_fd >= 0);
	dup2(fd, 2);
	close(fd);
	util_set_quiet(0);
}

static char *stderr_end(void)
{
	util_set_quiet(1);
	fflush(stderr);
	dup2(saved_fd, 2);
	close(saved_fd);
	char *text;
	cr_assert_eq(fileio_read(errpath, 0, &text, NULL), 0);
	unlink(errpath);
	return text;
}

#define EXP_JSON "{\"format\":\"aah-experiment/1\",\"id\":\"abcd1234\",\"name\":\"t\",\"created\":5}\n"

/* ---- trial states ---- */

Test(expdir, every_state_name_round_trips)
{
	static const char *const want[TRIAL_NSTATES] = {
		"queued", "running", "succeeded", "early_stopped", "failed", "canceled", "unknown",
	};
	for (int s = 0; s < TRIAL_NSTATES; s++) {
		enum trial_state back = TRIAL_NSTATES;
		cr_assert_str_eq(expdir_state_name((enum trial_state)s), want[s]);
		cr_assert_eq(expdir_state_parse(want[s], &back), 0, "%s", want[s]);
		cr_assert_eq(back, (enum trial_state)s, "%s", want[s]);
	}
	enum trial_state out = TRIAL_RUNNING;
	cr_assert_eq(expdir_state_parse("waiting", &out), -1);
	cr_assert_eq(expdir_state_parse("", &out), -1);
	cr_assert_eq(out, TRIAL_RUNNING);
	cr_assert_str_eq(expdir_state_name(TRIAL_NSTATES), "unknown");
}

Test(expdir, final_states_are_the_settled_ones)
{
	cr_assert_not(expdir_state_final(TRIAL_QUEUED));
	cr_assert_not(expdir_state_final(TRIAL_RUNNING));
	cr_assert_not(expdir_state_final(TRIAL_UNKNOWN));
	cr_assert(expdir_state_final(TRIAL_SUCCEEDED));
	cr_assert(expdir_state_final(TRIAL_EARLY_STOPPED));
	cr_assert(expdir_state_final(TRIAL_FAILED));
	cr_assert(expdir_state_final(TRIAL_CANCELED));
}

/* ---- ids and paths ---- */

Test(expdir, trial_ids_and_paths)
{
	char id[EXPDIR_TRIAL_ID_SIZE];
	unsigned seq = 0;
	cr_assert_str_eq(expdir_trial_id(1, id), "000001");
	cr_assert_str_eq(expdir_trial_id(999999, id), "999999");
	cr_assert_eq(expdir_trial_seq("000042", &seq), 0);
	cr_assert_eq(seq, 42);
	static const char *const bad[] = { "42", "0000042", "000000", "+00001", " 00001", "00004a", "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		cr_assert_eq(expdir_trial_seq(bad[i], &seq), -1, "'%s'", bad[i]);
	cr_assert_eq(seq, 42);
	char *d = expdir_trial_dir("/x/exp", 7);
	cr_assert_str_eq(d, "/x/exp/trials/000007");
	free(d);
	d = expdir_trial_file("/x/exp", 12, EXPDIR_PARAMS);
	cr_assert_str_eq(d, "/x/exp/trials/000012/params.json");
	free(d);
	d = expdir_file("/x/t", EXPDIR_TRIAL_LOG);
	cr_assert_str_eq(d, "/x/t/trial.log");
	free(d);
	for (int f = 0; f < EXPDIR_NFILES; f++)
		cr_assert(strchr(expdir_file_name((enum expdir_file)f), '.') ||
			  !strcmp(expdir_file_name((enum expdir_file)f), "hostfile") ||
			  !strcmp(expdir_file_name((enum expdir_file)f), "waiting"));
}

Test(expdir, a_waiting_trial_says_why_until_it_runs)
{
	char *exp = xstrfmt("%s/exp", tmpdir), *dir = expdir_trial_dir(exp, 3);
	cr_assert_eq(fileio_mkdir_p(dir, 0755), 0);
	cr_assert_null(expdir_waiting_get(exp, 3));
	cr_assert_eq(expdir_waiting_set(exp, 3, "waiting for admission: queue q"), 0);
	char *why = expdir_waiting_get(exp, 3);
	cr_assert_str_eq(why, "waiting for admission: queue q");
	free(why);
	cr_assert_eq(expdir_waiting_set(exp, 3, NULL), 0);
	cr_assert_null(expdir_waiting_get(exp, 3));
	cr_assert_eq(expdir_waiting_set(exp, 3, NULL), 0);   /* nothing to remove */
	free(dir);
	free(exp);
}

Test(expdir, the_work_directory_is_two_levels_up)
{
	char *w = expdir_workdir("/nonexistent-aah/work/experiments/abc");
	cr_assert_str_eq(w, "/nonexistent-aah/work");
	free(w);
	w = expdir_workdir("/experiments/abc");
	cr_assert_str_eq(w, "/");
	free(w);
}

Test(expdir, trial_list_is_sorted_and_skips_other_names)
{
	unsigned *seqs;
	size_t n = 99;
	cr_assert_eq(expdir_trial_list(tmpdir, &seqs, &n), 0);   /* no trials/ yet */
	cr_assert_eq(n, 0);
	cr_assert_null(seqs);
	put("trials/000010/x", "");
	put("trials/000002/x", "");
	put("trials/000001/x", "");
	put("trials/junk/x", "");
	put("trials/0000003/x", "");
	cr_assert_eq(expdir_trial_list(tmpdir, &seqs, &n), 0);
	cr_assert_eq(n, 3);
	cr_assert_eq(seqs[0], 1);
	cr_assert_eq(seqs[1], 2);
	cr_assert_eq(seqs[2], 10);
	free(seqs);
}

/* ---- the journal ---- */

struct seen {
	size_t n;
	enum expdir_event_kind kind[16];
	long seq[16];
	unsigned trial[16];
	char name[16][32];
	struct expdir_event last_finished;
	char reason[64];
};

static int collect(const struct expdir_event *ev, void *arg)
{
	struct seen *s = arg;
	cr_assert_lt(s->n, 16);
	s->kind[s->n] = ev->kind;
	s->seq[s->n] = ev->seq;
	s->trial[s->n] = ev->trial_seq;
	xstrlcpy(s->name[s->n], ev->name, sizeof(s->name[0]));
	s->n++;
	if (ev->kind == EXPDIR_EV_TRIAL_FINISHED) {
		s->last_finished = *ev;
		xstrlcpy(s->reason, ev->reason ? ev->reason : "(null)", sizeof(s->reason));
	}
	return 0;
}

#define J(seq, rest) "{\"format\":\"aah-journal/1\",\"seq\":" #seq ",\"ts\":" #seq "00," rest "}\n"

static const char journal[] =
	J(0, "\"event\":\"experiment_created\",\"id\":\"abcd1234\",\"name\":\"t\"")
	J(1, "\"event\":\"runner_started\",\"pid\":1,\"resume\":false")
	J(2, "\"event\":\"trial_created\",\"trial\":\"000001\",\"trial_seq\":1,\"attempt\":1")
	J(3, "\"event\":\"trial_submitted\",\"trial\":\"000001\",\"trial_seq\":1,\"attempt\":1,"
	     "\"backend\":\"local\",\"job\":\"11.5,12.6\",\"slot\":1,\"gpus\":\"2,3\"")
	J(4, "\"event\":\"trial_finished\",\"trial\":\"000001\",\"trial_seq\":1,\"attempt\":1,"
	     "\"state\":\"early_stopped\",\"exit_code\":0,\"reason\":\"\",\"best_val_acc\":0.75,\"flops\":9")
	/* the report's fixtures name the trial by "trial" alone */
	J(5, "\"event\":\"trial_created\",\"trial\":\"000002\",\"attempt\":1");

Test(expdir, replay_decodes_every_field)
{
	put("journal.jsonl", journal);
	struct seen s = { 0 };
	cr_assert_eq(expdir_replay(tmpdir, collect, &s), 0);
	cr_assert_eq(s.n, 6);
	static const enum expdir_event_kind want[] = {
		EXPDIR_EV_EXPERIMENT_CREATED, EXPDIR_EV_RUNNER_STARTED, EXPDIR_EV_TRIAL_CREATED,
		EXPDIR_EV_TRIAL_SUBMITTED, EXPDIR_EV_TRIAL_FINISHED, EXPDIR_EV_TRIAL_CREATED,
	};
	for (size_t i = 0; i < 6; i++) {
		cr_assert_eq(s.kind[i], want[i], "line %zu", i);
		cr_assert_eq(s.seq[i], (long)i);
		cr_assert_str_eq(s.name[i], expdir_event_name(want[i]));
	}
	cr_assert_eq(s.trial[0], 0);
	cr_assert_eq(s.trial[3], 1);
	cr_assert_eq(s.trial[5], 2);
	cr_assert_eq(s.last_finished.state, TRIAL_EARLY_STOPPED);
	cr_assert_eq(s.last_finished.exit_code, 0);
	cr_assert_eq(s.last_finished.best_val_acc, 0.75);
	cr_assert_eq(s.last_finished.flops, 9);
	cr_assert_eq(s.last_finished.ts, 400);
	cr_assert_str_eq(s.reason, "");
}

/* Replay the journal above with extra appended; *err gets what went to stderr. */
static int replay_with(const char *extra, struct seen *s, char **err)
{
	char *text = xstrfmt("%s%s", journal, extra);
	put("journal.jsonl", text);
	free(text);
	stderr_begin();
	int r = expdir_replay(tmpdir, collect, s);
	*err = stderr_end();
	return r;
}

Test(expdir, replay_skips_a_torn_last_line_with_a_warning)
{
	struct seen s = { 0 };
	char *err;
	int r = replay_with("{\"format\":\"aah-journal/1\",\"seq\":6,\"ts\":600,\"event\":\"trial_sub",
			    &s, &err);
	cr_assert_eq(r, 0);
	cr_assert_eq(s.n, 6);
	cr_assert_eq(s.seq[5], 5);
	cr_assert(strstr(err, "journal.jsonl:7: ignoring incomplete last line (interrupted write)"),
		  "%s", err);
	free(err);

	/* The experiment sees the same: trial 2 queued, the next line is seq 6. */
	put("experiment.json", EXP_JSON);
	struct experiment e;
	cr_assert_eq(experiment_open(&e, tmpdir), 0);
	cr_assert_eq(e.next_event, 6);
	cr_assert_eq(e.ntrials, 2);
	cr_assert_eq(e.trials[1].state, TRIAL_QUEUED);
	experiment_release(&e);
}

Test(expdir, an_unknown_event_is_ignored_silently_but_its_seq_counts)
{
	struct seen s = { 0 };
	char *err;
	int r = replay_with(J(6, "\"event\":\"trial_paused\",\"trial\":\"000009\",\"trial_seq\":9"),
			    &s, &err);
	cr_assert_eq(r, 0);
	cr_assert_eq(s.n, 7);
	cr_assert_eq(s.kind[6], EXPDIR_EV_UNKNOWN);
	cr_assert_str_eq(s.name[6], "trial_paused");
	cr_assert_eq(s.seq[6], 6);
	cr_assert_eq(s.trial[6], 0);
	cr_assert_str_eq(err, "");
	free(err);

	put("experiment.json", EXP_JSON);
	struct experiment e;
	cr_assert_eq(experiment_open(&e, tmpdir), 0);
	cr_assert_eq(e.next_event, 7);
	cr_assert_eq(e.ntrials, 2);    /* trial 9 was not made up */
	cr_assert_eq(e.trials[0].state, TRIAL_EARLY_STOPPED);
	experiment_release(&e);
}

Test(expdir, bad_lines_are_errors)
{
	static const char *const bad[] = {
		"{\"seq\":0,\"ts\":1}\n",                                            /* no event */
		"{\"seq\":0,\"event\":7}\n",                                         /* not a string */
		"{\"seq\":0,\"event\":\"trial_created\",\"attempt\":1}\n",           /* no trial */
		"{\"seq\":0,\"event\":\"trial_retry\",\"trial\":\"7\"}\n",           /* not an id */
		"{\"seq\":0,\"event\":\"trial_created\",\"trial_seq\":0}\n",         /* out of range */
		"{\"seq\":0,\"event\":\"trial_finished\",\"trial_seq\":1,\"state\":\"running\"}\n",
		"{\"seq\":0,\"event\":\"trial_finished\",\"trial_seq\":1,\"state\":\"waiting\"}\n",
		"{\"seq\":0,\"event\":\"trial_finished\",\"trial_seq\":1}\n",
		"{\"seq\":0,\"event\":\"runner_started\"}\nnot json\n{\"seq\":2,\"event\":\"runner_started\"}\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		put("journal.jsonl", bad[i]);
		struct seen s = { 0 };
		cr_assert_eq(expdir_replay(tmpdir, collect, &s), -1, "%s", bad[i]);
	}
	char *p = xstrfmt("%s/journal.jsonl", tmpdir);
	unlink(p);
	free(p);
	struct seen s = { 0 };
	cr_assert_not(expdir_journal_exists(tmpdir));
	cr_assert_eq(expdir_replay(tmpdir, collect, &s), -1);
	cr_assert_eq(s.n, 0);
}

/* Found by tests/fuzz (corpus/journal/crash-slot-1e86): a number too large
 * for its field was converted anyway (undefined behaviour; a garbage slot). */
Test(expdir, integer_fields_out_of_range_are_errors_naming_the_field)
{
	static const struct { const char *line, *field; } bad[] = {
		{ "{\"seq\":1e300,\"event\":\"runner_started\"}\n", "\"seq\"" },
		{ "{\"seq\":-2,\"event\":\"runner_started\"}\n", "\"seq\"" },
		{ "{\"seq\":0.5,\"event\":\"runner_started\"}\n", "\"seq\"" },
		{ "{\"seq\":0,\"event\":\"trial_created\",\"trial_seq\":1,\"attempt\":-1}\n",
		  "\"attempt\"" },
		{ "{\"seq\":0,\"event\":\"trial_created\",\"trial_seq\":1,\"attempt\":1e20}\n",
		  "\"attempt\"" },
		{ "{\"seq\":0,\"event\":\"trial_submitted\",\"trial_seq\":1,\"slot\":5.5e86}\n",
		  "\"slot\"" },
		{ "{\"seq\":0,\"event\":\"trial_finished\",\"trial_seq\":1,\"state\":\"failed\","
		  "\"exit_code\":-1e19}\n", "\"exit_code\"" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		put("journal.jsonl", bad[i].line);
		struct seen s = { 0 };
		stderr_begin();
		int r = expdir_replay(tmpdir, collect, &s);
		char *err = stderr_end();
		cr_assert_eq(r, -1, "%s", bad[i].line);
		cr_assert_eq(s.n, 0, "%s", bad[i].line);
		cr_assert(strstr(err, bad[i].field), "%s: %s", bad[i].line, err);
		free(err);
	}
	/* the edges still read */
	put("journal.jsonl", "{\"seq\":0,\"event\":\"trial_finished\",\"trial_seq\":1,"
			     "\"state\":\"failed\",\"exit_code\":-2147483648,\"attempt\":0}\n");
	struct seen s = { 0 };
	cr_assert_eq(expdir_replay(tmpdir, collect, &s), 0);
	cr_assert_eq(s.n, 1);
	cr_assert_eq(s.last_finished.exit_code, INT_MIN);
}

static int stop_at_two(const struct expdir_event *ev, void *arg)
{
	(void)arg;
	return ev->seq == 2 ? -1 : 0;
}

Test(expdir, a_visitor_error_stops_the_replay)
{
	put("journal.jsonl", journal);
	cr_assert_eq(expdir_replay(tmpdir, stop_at_two, NULL), -1);
}

Test(expdir, append_writes_the_documented_line_and_visits_it)
{
	put("journal.jsonl", "");
	for (int k = 0; k < EXPDIR_EV_UNKNOWN; k++) {
		cJSON *f = cJSON_CreateObject();
		cJSON_AddStringToObject(f, "trial", "000003");
		cJSON_AddNumberToObject(f, "trial_seq", 3);
		cJSON_AddStringToObject(f, "state", "canceled");
		struct seen s = { 0 };
		cr_assert_eq(expdir_journal_append(tmpdir, (unsigned long)k + 10,
						   (enum expdir_event_kind)k, f, 0, collect, &s), 0);
		cr_assert_eq(s.n, 1);
		cr_assert_eq(s.kind[0], (enum expdir_event_kind)k);
		cr_assert_eq(s.seq[0], k + 10);
	}
	struct seen s = { 0 };
	cr_assert_eq(expdir_replay(tmpdir, collect, &s), 0);
	cr_assert_eq(s.n, EXPDIR_EV_UNKNOWN);
	for (int k = 0; k < EXPDIR_EV_UNKNOWN; k++) {
		cr_assert_eq(s.kind[k], (enum expdir_event_kind)k);
		int trial_event = !strncmp(expdir_event_name((enum expdir_event_kind)k), "trial_", 6);
		cr_assert_eq(s.trial[k], trial_event ? 3u : 0u, "%s", s.name[k]);
	}
	/* The line's keys come in the order the tests and tools grep for. */
	char *p = xstrfmt("%s/journal.jsonl", tmpdir), *text;
	cr_assert_eq(fileio_read(p, 0, &text, NULL), 0);
	cr_assert(strstr(text, "{\"format\":\"aah-journal/1\",\"seq\":15,\"ts\":"), "%s", text);
	cr_assert(strstr(text, ",\"event\":\"trial_submitted\",\"trial\":\"000003\",\"trial_seq\":3,"),
		  "%s", text);
	free(text);
	free(p);
}

Test(expdir, journal_has_job_matches_whole_rank_ids)
{
	put("journal.jsonl", journal);
	cr_assert(expdir_journal_has_job(tmpdir, "11.5"));
	cr_assert(expdir_journal_has_job(tmpdir, "12.6"));
	cr_assert_not(expdir_journal_has_job(tmpdir, "11"));
	cr_assert_not(expdir_journal_has_job(tmpdir, "1.5"));
	cr_assert_not(expdir_journal_has_job(tmpdir, "5,12"));
	cr_assert_not(expdir_journal_has_job(tmpdir, ""));
	cr_assert_not(expdir_journal_has_job("/nonexistent/aah", "11.5"));
}

/* ---- the experiment on the replay ---- */

Test(expdir, record_applies_exactly_what_replay_rebuilds)
{
	put("experiment.json", EXP_JSON);
	put("journal.jsonl", "");
	struct experiment live, again;
	cr_assert_eq(experiment_open(&live, tmpdir), 0);
	cJSON *f = cJSON_CreateObject();
	cJSON_AddStringToObject(f, "name", "demo");
	cr_assert_eq(experiment_record(&live, EXPDIR_EV_EXPERIMENT_CREATED, f), 0);
	for (unsigned seq = 1; seq <= 3; seq++) {
		f = cJSON_CreateObject();
		cJSON_AddNumberToObject(f, "trial_seq", seq);
		cJSON_AddNumberToObject(f, "attempt", 1);
		cr_assert_eq(experiment_record_flags(&live, EXPDIR_EV_TRIAL_CREATED, f, FILEIO_NOSYNC), 0);
	}
	f = cJSON_CreateObject();
	cJSON_AddNumberToObject(f, "trial_seq", 2);
	cJSON_AddStringToObject(f, "job", "77");
	cJSON_AddNumberToObject(f, "slot", 0);
	cr_assert_eq(experiment_record(&live, EXPDIR_EV_TRIAL_SUBMITTED, f), 0);
	f = cJSON_CreateObject();
	cJSON_AddNumberToObject(f, "trial_seq", 3);
	cJSON_AddStringToObject(f, "job", "78");
	cJSON_AddNumberToObject(f, "slot", 1);
	cr_assert_eq(experiment_record(&live, EXPDIR_EV_TRIAL_SUBMITTED, f), 0);
	f = cJSON_CreateObject();
	cJSON_AddNumberToObject(f, "trial_seq", 3);
	cJSON_AddStringToObject(f, "state", "failed");
	cJSON_AddStringToObject(f, "reason", "boom");
	cJSON_AddNumberToObject(f, "exit_code", 3);
	cr_assert_eq(experiment_record(&live, EXPDIR_EV_TRIAL_FINISHED, f), 0);
	f = cJSON_CreateObject();
	cJSON_AddNumberToObject(f, "trial_seq", 3);
	cJSON_AddNumberToObject(f, "attempt", 2);
	cr_assert_eq(experiment_record(&live, EXPDIR_EV_TRIAL_RETRY, f), 0);
	f = cJSON_CreateObject();
	cJSON_AddStringToObject(f, "reason", "max_trials");
	cr_assert_eq(experiment_record(&live, EXPDIR_EV_EXPERIMENT_DONE, f), 0);

	cr_assert_eq(experiment_open(&again, tmpdir), 0);
	cr_assert_eq(live.next_event, 9);
	cr_assert_eq(again.next_event, live.next_event);
	cr_assert_str_eq(again.name, "demo");
	cr_assert_str_eq(again.done_reason, "max_trials");
	cr_assert(again.done);
	cr_assert_eq(again.ntrials, 3);
	static const enum trial_state want[] = { TRIAL_QUEUED, TRIAL_RUNNING, TRIAL_QUEUED };
	for (size_t i = 0; i < 3; i++) {
		const struct trial_rec *a = &live.trials[i], *b = &again.trials[i];
		cr_assert_eq(a->state, want[i], "trial %zu", i + 1);
		cr_assert_eq(b->state, a->state, "trial %zu", i + 1);
		cr_assert_eq(b->attempt, a->attempt);
		cr_assert_eq(b->slot, a->slot);
		cr_assert_eq(b->exit_code, a->exit_code);
		cr_assert_eq(!b->job, !a->job);
	}
	cr_assert_str_eq(again.trials[1].job, "77");
	cr_assert_eq(again.trials[2].attempt, 2);
	cr_assert_null(again.trials[2].job);        /* the retry forgot the failed job */
	cr_assert_eq(again.trials[2].slot, -1);
	cr_assert_str_eq(again.trials[2].reason, "boom");
	experiment_release(&live);
	experiment_release(&again);
}

/* Every name in dir but . and .., into out. */
static int list_names(const char *dir, struct strvec *out)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	for (struct dirent *de; (de = readdir(d));)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			strvec_push(out, de->d_name);
	closedir(d);
	return 0;
}

/* A create that fails part way (here: tuner.initialArch cannot be copied)
 * leaves no experiment and no half-built directory; one that succeeds
 * leaves exactly its directory (issue 13, defect 4). */
Test(expdir, a_failed_create_leaves_nothing_behind)
{
	put("c/config.yml", "trial:\n  command: x\n");
	char *cfgpath = xstrfmt("%s/c/config.yml", tmpdir);
	char *cdir = xstrfmt("%s/c", tmpdir);
	char *wd = xstrfmt("%s/wd", tmpdir), *exps = xstrfmt("%s/wd/experiments", tmpdir);
	struct aah_config cfg = { .path = cfgpath, .base_dir = cdir, .experiment_name = "t" };
	struct experiment e;
	cfg.tuner.initial_arch = "missing.json";
	cr_assert_eq(experiment_create(&e, &cfg, wd), -1);
	cr_assert_null(e.dir);
	struct strvec left = STRVEC_INIT;
	cr_assert_eq(list_names(exps, &left), 0);
	cr_assert_eq(left.n, 0, "left behind: %s", left.n ? left.v[0] : "");
	strvec_clear(&left);

	cfg.tuner.initial_arch = NULL;
	cr_assert_eq(experiment_create(&e, &cfg, wd), 0);
	cr_assert_eq(list_names(exps, &left), 0);
	cr_assert_eq(left.n, 1);
	cr_assert_str_eq(left.v[0], e.id);
	char *want = xstrfmt("%s/%s", exps, e.id);
	cr_assert_str_eq(e.dir, want);
	struct experiment again;
	cr_assert_eq(experiment_open(&again, e.dir), 0);
	cr_assert_str_eq(again.id, e.id);
	cr_assert_str_eq(again.name, "t");
	experiment_release(&again);
	experiment_release(&e);
	strvec_clear(&left);
	free(want);
	free(exps);
	free(wd);
	free(cdir);
	free(cfgpath);
}

/* ---- experiment.json ---- */

Test(expdir, info_round_trips_and_needs_id_and_created)
{
	struct expdir_info in = { .id = "k3x9q2ab", .name = "n", .config_source = "/c/config.yml",
				  .workdir = "/w", .created = 12.5, .seed = 7 };
	struct expdir_info out;
	cr_assert_eq(expdir_info_write(tmpdir, &in), 0);
	cr_assert_eq(expdir_info_read(tmpdir, &out), 0);
	cr_assert_str_eq(out.id, "k3x9q2ab");
	cr_assert_str_eq(out.name, "n");
	cr_assert_str_eq(out.config_source, "/c/config.yml");
	cr_assert_str_eq(out.workdir, "/w");
	cr_assert_eq(out.created, 12.5);
	cr_assert_eq(out.seed, 7);
	expdir_info_release(&out);
	put("experiment.json", "{\"format\":\"aah-experiment/1\",\"created\":1}\n");
	cr_assert_eq(expdir_info_read(tmpdir, &out), -1);
	put("experiment.json", "{\"format\":\"aah-experiment/1\",\"id\":\"x\"}\n");
	cr_assert_eq(expdir_info_read(tmpdir, &out), -1);
	put("experiment.json", "{\"format\":\"aah-result/1\",\"id\":\"x\",\"created\":1}\n");
	cr_assert_eq(expdir_info_read(tmpdir, &out), -1);
}

/* A seed that the config's range (0 to 2^31-1) does not hold is an error
 * naming the file and the field, never a conversion (issue 13). */
Test(expdir, info_seed_out_of_range_is_an_error)
{
	static const char *const bad[] = { "1e300", "-1", "2147483648", "1.5", "\"7\"" };
	struct expdir_info out;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *doc = xstrfmt("{\"format\":\"aah-experiment/1\",\"id\":\"x\",\"created\":1,"
				    "\"seed\":%s}\n", bad[i]);
		put("experiment.json", doc);
		free(doc);
		cr_assert_eq(expdir_info_read(tmpdir, &out), -1, "seed %s was accepted as %ld", bad[i],
			     out.seed);
		cr_assert(strstr(util_last_error(), "experiment.json") &&
				  strstr(util_last_error(), "\"seed\""),
			  "seed %s: %s", bad[i], util_last_error());
	}
	put("experiment.json", "{\"format\":\"aah-experiment/1\",\"id\":\"x\",\"created\":1,"
			       "\"seed\":2147483647}\n");
	cr_assert_eq(expdir_info_read(tmpdir, &out), 0);
	cr_assert_eq(out.seed, 2147483647);
	expdir_info_release(&out);
}

/* ---- result.json ---- */

Test(expdir, result_good_missing_and_bad)
{
	struct expdir_result r;
	cr_assert_eq(expdir_result_read(tmpdir, &r), 0);        /* none yet */
	cr_assert_eq(r.status, TRIAL_UNKNOWN);
	cr_assert(isnan(r.best_val_acc));

	put("result.json", "{\"format\":\"aah-result/1\",\"status\":\"early_stopped\","
			   "\"stop_reason\":\"early_stop\",\"best_val_acc\":0.875,\"total_flops\":1.5e12,"
			   "\"precision\":\"bf16\",\"devices\":[\"cpu:1\",\"cuda:0\"],\"new_field\":1}\n");
	cr_assert_eq(expdir_result_read(tmpdir, &r), 1);
	cr_assert_eq(r.status, TRIAL_EARLY_STOPPED);
	cr_assert_eq(r.best_val_acc, 0.875);
	cr_assert_eq(r.total_flops, 1.5e12);
	cr_assert_str_eq(r.precision, "bf16");
	cr_assert_str_eq(r.stop_reason, "early_stop");
	cr_assert(r.on_gpu);

	put("result.json", "{\"format\":\"aah-result/1\",\"status\":\"exploded\",\"devices\":[\"cpu:2\"]}\n");
	cr_assert_eq(expdir_result_read(tmpdir, &r), 1);
	cr_assert_eq(r.status, TRIAL_UNKNOWN);
	cr_assert(isnan(r.best_val_acc));
	cr_assert_eq(r.total_flops, 0);
	cr_assert_str_eq(r.precision, "");
	cr_assert_not(r.on_gpu);

	static const char *const bad[] = {
		"{\"format\":\"aah-result/1\",\"status\":\"succ",                  /* torn */
		"{\"status\":\"succeeded\",\"best_val_acc\":0.5}\n",               /* no format */
		"{\"format\":\"aah-result/2\",\"status\":\"succeeded\"}\n",        /* newer major */
		"{\"format\":\"aah-result/1\",\"status\":3}\n",                    /* wrong type */
		"{\"format\":\"aah-result/1\",\"best_val_acc\":\"0.5\"}\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		put("result.json", bad[i]);
		cr_assert_eq(expdir_result_read(tmpdir, &r), -1, "%s", bad[i]);
	}
}

Test(expdir, result_visible_lists_the_place_first)
{
	char *t4 = expdir_place_dir(tmpdir, 4, NULL), *a2 = expdir_place_dir(tmpdir, 4, "attempt-2");
	char *t5 = expdir_place_dir(tmpdir, 5, "");
	cr_assert_not(expdir_result_visible(t4));
	put("trials/000004/result.json", "{}\n");
	cr_assert(expdir_result_visible(t4));
	cr_assert_not(expdir_result_visible(a2), "another place's result is not this one's");
	put("trials/000004/attempt-2/result.json", "{}\n");
	cr_assert(expdir_result_visible(a2));
	cr_assert_not(expdir_result_visible(t5));
	free(t4);
	free(a2);
	free(t5);
}

/* Every launch's place: the first the trial directory, then one per
 * attempt and per later launch of an attempt; only those names are
 * places, and only they (with the proposal and the log) are the trial's. */
Test(expdir, places_are_named_one_per_launch)
{
	char b[EXPDIR_PLACE_SIZE];
	cr_assert_str_eq(expdir_place_name(1, 0, b), "");
	cr_assert_str_eq(expdir_place_name(0, 0, b), "");
	cr_assert_str_eq(expdir_place_name(2, 0, b), "attempt-2");
	cr_assert_str_eq(expdir_place_name(1, 1, b), "attempt-1.1");
	cr_assert_str_eq(expdir_place_name(3, 12, b), "attempt-3.12");
	cr_assert_str_eq(expdir_place_name(4294967295u, 4294967295u, b),
			 "attempt-4294967295.4294967295");
	static const char *const good[] = { "", "attempt-2", "attempt-1.1", "attempt-10.3" };
	static const char *const bad[] = { "attempt-1", "attempt-0", "attempt-02", "attempt-2.0",
					   "attempt-2.", "attempt-", "attempt-2/..", "../x", "x",
					   "attempt-2.1.1", "attempt--2", "attempt-+2", " attempt-2" };
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
		cr_assert(expdir_place_valid(good[i]), "%s", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		cr_assert_not(expdir_place_valid(bad[i]), "%s", bad[i]);
	char *d = expdir_place_dir("/e", 7, "attempt-2"), *r = expdir_place_dir("/e", 7, NULL);
	cr_assert_str_eq(d, "/e/trials/000007/attempt-2");
	cr_assert_str_eq(r, "/e/trials/000007");
	free(d);
	free(r);
	cr_assert(expdir_trial_owns("arch.json"));
	cr_assert(expdir_trial_owns("trial.log"));
	cr_assert(expdir_trial_owns("attempt-2.1"));
	cr_assert_not(expdir_trial_owns("result.json"));
	cr_assert_not(expdir_trial_owns("metrics.jsonl"));
	cr_assert_not(expdir_trial_owns("checkpoint"));
	cr_assert_not(expdir_trial_owns("launch.json"));
	cr_assert_not(expdir_trial_owns(""));
}

/* A journal's trial_submitted names a place only as expdir_place_name does. */
Test(expdir, a_journal_place_must_be_a_place)
{
	struct seen s = { 0 };
	char *err;
	int r = replay_with(J(6, "\"event\":\"trial_submitted\",\"trial_seq\":1,\"attempt\":2,"
				 "\"job\":\"j\",\"slot\":0,\"place\":\"attempt-2\""),
			    &s, &err);
	cr_assert_eq(r, 0);
	free(err);
	s.n = 0;
	r = replay_with(J(6, "\"event\":\"trial_submitted\",\"trial_seq\":1,\"attempt\":2,"
			     "\"job\":\"j\",\"slot\":0,\"place\":\"../../x\""),
			&s, &err);
	cr_assert_eq(r, -1);
	cr_assert(strstr(err, "\"place\" '../../x' is not an attempt's place"), "%s", err);
	free(err);
}

/* trial_submitted's network: all three fields, numbers a network has, or
 * none of them. */
Test(expdir, a_journal_network_cost_names_all_its_fields)
{
	static const char *const bad[][2] = {
		{ "\"arch_classes\":10", "missing field \"arch_flops_fwd\"" },
		{ "\"arch_classes\":10,\"arch_flops_fwd\":5", "missing field \"arch_flops_bwd\"" },
		{ "\"arch_classes\":0,\"arch_flops_fwd\":5,\"arch_flops_bwd\":9", "arch_classes" },
		{ "\"arch_classes\":10,\"arch_flops_fwd\":\"5\",\"arch_flops_bwd\":9",
		  "field \"arch_flops_fwd\" must be a number" },
		{ "\"arch_classes\":10,\"arch_flops_fwd\":0,\"arch_flops_bwd\":9",
		  "not a network's FLOPs per image" },
	};
	struct seen s = { 0 };
	char *err;
	int r = replay_with(J(6, "\"event\":\"trial_submitted\",\"trial_seq\":1,\"attempt\":1,"
				 "\"job\":\"j\",\"slot\":0,\"arch_classes\":10,"
				 "\"arch_flops_fwd\":5e8,\"arch_flops_bwd\":1e9"),
			    &s, &err);
	cr_assert_eq(r, 0, "%s", err);
	free(err);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		char *line = xstrfmt("{\"format\":\"aah-journal/1\",\"seq\":6,\"ts\":600,"
				     "\"event\":\"trial_submitted\",\"trial_seq\":1,\"attempt\":1,"
				     "\"job\":\"j\",\"slot\":0,%s}\n", bad[i][0]);
		s.n = 0;
		r = replay_with(line, &s, &err);
		cr_assert_eq(r, -1, "%s", bad[i][0]);
		cr_assert(strstr(err, bad[i][1]) && strstr(err, "journal.jsonl"), "%s: %s", bad[i][0],
			  err);
		free(err);
		free(line);
	}
}

/* ---- metrics.jsonl ---- */

Test(expdir, metrics_epochs_in_file_order)
{
	struct expdir_epoch *ep = (void *)1;
	size_t n = 9;
	cr_assert_eq(expdir_metrics_read(tmpdir, &ep, &n), 0);   /* none yet */
	cr_assert_eq(n, 0);
	cr_assert_null(ep);
	put("metrics.jsonl",
	    "{\"format\":\"aah-metrics/1\",\"epoch\":1,\"val_acc\":0.5,\"timestamp\":100,"
	    "\"train_flops\":10,\"eval_flops\":2,\"images_per_sec\":33}\n"
	    "{\"format\":\"aah-metrics/1\",\"event\":\"checkpoint\",\"timestamp\":101}\n"
	    "\n"
	    "{\"format\":\"aah-metrics/1\",\"val_acc\":0.25,\"timestamp\":200,\"train_flops\":30}\n"
	    "{\"format\":\"aah-metrics/1\",\"epoch\":3,\"val_a");
	cr_assert_eq(expdir_metrics_read(tmpdir, &ep, &n), 0);
	cr_assert_eq(n, 2);
	cr_assert_eq(ep[0].epoch, 1);
	cr_assert_eq(ep[0].ts, 100);
	cr_assert_eq(ep[0].val_acc, 0.5);
	cr_assert_eq(ep[0].flops, 12);
	cr_assert_eq(ep[0].images_per_sec, 33);
	cr_assert_eq(ep[1].epoch, 2);              /* no "epoch": its position */
	cr_assert_eq(ep[1].flops, 30);
	cr_assert_eq(ep[1].images_per_sec, 0);
	free(ep);

	put("metrics.jsonl", "{\"val_acc\":0.5,\"timestamp\":1}\n{oops}\n{\"val_acc\":0.6,\"timestamp\":2}\n");
	cr_assert_eq(expdir_metrics_read(tmpdir, &ep, &n), -1);
	cr_assert_eq(n, 0);
	cr_assert_null(ep);
}

/* The one rule for a trial's figures: metrics.jsonl's epochs, else one epoch
 * from result.json's best_val_acc and total_flops at the trial's end. */
Test(expdir, trial_epochs_fall_back_to_result_json)
{
	struct expdir_epoch *ep = NULL;
	size_t n = 9;
	cr_assert_eq(expdir_trial_epochs(tmpdir, NULL, 50, &ep, &n), 0);   /* nothing yet */
	cr_assert_eq(n, 0);
	put("result.json", "{\"format\":\"aah-result/1\",\"status\":\"succeeded\","
			   "\"best_val_acc\":0.5,\"total_flops\":3e9}");
	struct expdir_result res;
	cr_assert_eq(expdir_result_read(tmpdir, &res), 1);
	cr_assert_gt(res.written, 0);
	cr_assert_eq(expdir_trial_epochs(tmpdir, &res, 50, &ep, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_eq(ep[0].ts, 50);
	cr_assert_eq(ep[0].val_acc, 0.5);
	cr_assert_eq(ep[0].flops, 3e9);
	cr_assert_eq(ep[0].epoch, 1);
	free(ep);
	cr_assert_eq(expdir_trial_epochs(tmpdir, &res, 0, &ep, &n), 0);   /* end unknown */
	cr_assert_eq(ep[0].ts, res.written);
	free(ep);

	/* metrics.jsonl wins: its epochs are the figures */
	put("metrics.jsonl", "{\"format\":\"aah-metrics/1\",\"epoch\":1,\"val_acc\":0.25,"
			     "\"timestamp\":10,\"train_flops\":7}\n");
	cr_assert_eq(expdir_trial_epochs(tmpdir, &res, 50, &ep, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_eq(ep[0].val_acc, 0.25);
	cr_assert_eq(ep[0].flops, 7);
	free(ep);

	/* a result without best_val_acc adds no epoch */
	char *mp = xstrfmt("%s/metrics.jsonl", tmpdir);
	unlink(mp);
	free(mp);
	put("result.json", "{\"format\":\"aah-result/1\",\"status\":\"failed\"}");
	cr_assert_eq(expdir_result_read(tmpdir, &res), 1);
	cr_assert_eq(expdir_trial_epochs(tmpdir, &res, 50, &ep, &n), 0);
	cr_assert_eq(n, 0);
}

/* <tmpdir>/<name>'s text, or NULL when there is none; the caller frees it. */
static char *got(const char *name)
{
	char *p = xstrfmt("%s/%s", tmpdir, name), *text = NULL;
	if (fileio_exists(p) && fileio_read(p, 0, &text, NULL) < 0)
		text = NULL;
	free(p);
	return text;
}

#define T1 "trials/000001/"
#define MORPH "{\"format\":\"aah-morph/1\",\"parent_trial\":\"000003\",\"operations\":[],\"inherit\":[]}\n"

/* A place made ready: the trial's proposal copied in (morph.json's way to
 * its parent one level longer), and for a launch that resumes the last
 * place's checkpoint (whole files, not temps) and the whole lines of its
 * epochs, as they were then: what that launch writes later is not seen. */
Test(expdir, a_place_gets_the_proposal_and_the_last_checkpoint)
{
	put(T1 "arch.json", "{\"a\":1}\n");
	put(T1 "params.json", "{\"p\":2}\n");
	put(T1 "morph.json", MORPH);
	put(T1 "checkpoint/state.bin", "step 3");
	put(T1 "checkpoint/state.bin.tmp.77", "half");
	put(T1 "metrics.jsonl", "{\"epoch\":1}\n{\"epoch\":2}\n{\"epo");   /* a line being written */
	put(T1 "result.json", "{\"status\":\"failed\"}\n");
	cr_assert_eq(place_prepare(tmpdir, 1, "", NULL, 1), 0);     /* the trial dir: nothing */
	cr_assert_eq(place_prepare(tmpdir, 1, "attempt-2", NULL, 1), 0, "%s", util_last_error());
	char *a = got(T1 "attempt-2/arch.json"), *m = got(T1 "attempt-2/morph.json");
	char *c = got(T1 "attempt-2/checkpoint/state.bin"), *e = got(T1 "attempt-2/metrics.jsonl");
	char *tmp = got(T1 "attempt-2/checkpoint/state.bin.tmp.77"), *r = got(T1 "attempt-2/result.json");
	cr_assert_str_eq(a, "{\"a\":1}\n");
	cr_assert(strstr(m, "\"parent_dir\":\t\"../../000003\""), "%s", m);
	cr_assert_str_eq(c, "step 3");
	cr_assert_str_eq(e, "{\"epoch\":1}\n{\"epoch\":2}\n", "whole lines only");
	cr_assert_null(tmp, "a temp is no checkpoint");
	cr_assert_null(r, "a result is the launch's own");
	free(a); free(m); free(c); free(e);
	/* the next place, from attempt-2's: a parent_dir gets one level more,
	 * and what the trial directory's launch writes meanwhile is not seen */
	put(T1 "attempt-2/checkpoint/state.bin", "step 5");
	put(T1 "checkpoint/state.bin", "step 9 of a launch cut off");
	put(T1 "morph.json", "{\"format\":\"aah-morph/1\",\"parent_trial\":\"000003\","
			     "\"parent_dir\":\"../000003/attempt-2\"}\n");
	cr_assert_eq(place_prepare(tmpdir, 1, "attempt-2.1", "attempt-2", 1), 0);
	c = got(T1 "attempt-2.1/checkpoint/state.bin");
	m = got(T1 "attempt-2.1/morph.json");
	cr_assert_str_eq(c, "step 5");
	cr_assert(strstr(m, "\"parent_dir\":\t\"../../000003/attempt-2\""), "%s", m);
	free(c); free(m);
	/* no resume: the proposal alone; the same place again: nothing copied */
	cr_assert_eq(place_prepare(tmpdir, 1, "attempt-3", "attempt-2.1", 0), 0);
	cr_assert_null((c = got(T1 "attempt-3/checkpoint/state.bin")));
	cr_assert_null((e = got(T1 "attempt-3/metrics.jsonl")));
	a = got(T1 "attempt-3/params.json");
	cr_assert_str_eq(a, "{\"p\":2}\n");
	free(a);
	put(T1 "attempt-3/checkpoint/state.bin", "its own");
	cr_assert_eq(place_prepare(tmpdir, 1, "attempt-3", "attempt-3", 1), 0);
	c = got(T1 "attempt-3/checkpoint/state.bin");
	cr_assert_str_eq(c, "its own", "a resize goes on in its place");
	free(c);
}
