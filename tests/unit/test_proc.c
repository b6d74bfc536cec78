/* Unit tests for runner/proc.c: argv/env vectors, capture, stdin, timeouts,
 * exec failures, process groups and held starts. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <stdlib.h>

#include "fileio.h"
#include "runner/backend/proc.h"
#include "strvec.h"
#include "util.h"

TestSuite(proc, .init = NULL);

Test(proc, capture_stdout_stderr_and_exit_code)
{
	const char *argv[] = { "sh", "-c", "echo out; echo err >&2; exit 3", NULL };
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	int code;
	cr_assert_eq(proc_run_capture(argv, NULL, NULL, 10, &out, &err, &code), 0);
	cr_assert_eq(code, 3);
	cr_assert_str_eq(out.buf, "out\n");
	cr_assert_str_eq(err.buf, "err\n");
	strbuf_release(&out);
	strbuf_release(&err);
}

Test(proc, values_are_arguments_not_shell_text)
{
	const char *argv[] = { "printf", "%s|", "$(echo no)", "a b", "; exit 9", NULL };
	struct strbuf out = STRBUF_INIT;
	int code;
	cr_assert_eq(proc_run_capture(argv, NULL, NULL, 10, &out, NULL, &code), 0);
	cr_assert_eq(code, 0);
	cr_assert_str_eq(out.buf, "$(echo no)|a b|; exit 9|");
	strbuf_release(&out);
}

Test(proc, env_vector_replaces_environment)
{
	struct strvec env = STRVEC_INIT;
	strvec_push(&env, "PATH=/usr/bin:/bin");
	strvec_setenv(&env, "AAH_X", "1");
	strvec_setenv(&env, "AAH_X", "two words");
	const char *argv[] = { "sh", "-c", "echo \"$AAH_X|${HOME:-unset}\"", NULL };
	struct strbuf out = STRBUF_INIT;
	int code;
	cr_assert_eq(proc_run_capture(argv, strvec_view(&env), NULL, 10, &out, NULL, &code), 0);
	cr_assert_str_eq(out.buf, "two words|unset\n");
	strbuf_release(&out);
	strvec_clear(&env);
}

Test(proc, stdin_is_fed)
{
	const char *argv[] = { "wc", "-c", NULL };
	struct strbuf out = STRBUF_INIT;
	int code;
	cr_assert_eq(proc_run_capture(argv, NULL, "12345", 10, &out, NULL, &code), 0);
	cr_assert_eq(atoi(out.buf), 5);
	strbuf_release(&out);
}

/* A child that never reads its stdin: the write fails, SIGPIPE does not
 * end this process, and the child's own status comes back. */
Test(proc, unread_input_is_not_fatal)
{
	const char *argv[] = { "sh", "-c", "exit 3", NULL };
	size_t n = (size_t)4 << 20;
	char *input = malloc(n + 1);
	cr_assert_not_null(input);
	memset(input, 'x', n);
	input[n] = '\0';
	signal(SIGPIPE, SIG_DFL); /* as in a caller that does not ignore it */
	int code = -1;
	cr_assert_eq(proc_run_capture(argv, NULL, input, 10, NULL, NULL, &code), 0);
	cr_assert_eq(code, 3);
	free(input);
}

/* The grandchild holds the output pipe for an hour: a timeout that missed
 * it would wait for the pipe to close and fail on the test's timeout. */
Test(proc, timeout_kills_the_whole_group, .timeout = 60)
{
	const char *argv[] = { "sh", "-c", "sleep 3600 & sleep 3600", NULL };
	int code;
	cr_assert_eq(proc_run_capture(argv, NULL, NULL, 0.5, NULL, NULL, &code), 0);
	cr_assert_eq(code, PROC_TIMEOUT_STATUS);
	cr_assert_eq(PROC_TIMEOUT_STATUS, 124, "the status timeout(1) uses");
}

Test(proc, missing_program_is_an_error)
{
	util_set_quiet(1);
	const char *argv[] = { "aah-no-such-program", NULL };
	int code;
	cr_assert_eq(proc_run_capture(argv, NULL, NULL, 5, NULL, NULL, &code), -1);
	cr_assert(strstr(util_last_error(), "aah-no-such-program"));
	struct proc p;
	struct proc_spec spec = { .argv = argv };
	cr_assert_eq(proc_start(&p, &spec), -1);
}

/* The one-letter state of pid from /proc/<pid>/stat; 'X' when it is gone. */
static char proc_state(long pid)
{
	char path[64], state = 'X';
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
			state = '?';
		fclose(f);
	}
	return state;
}

/* aah-hold, built beside the runner: build/aah-hold from
 * build/tests/unit/test_proc. The caller frees it. */
static char *hold_helper(void)
{
	char *self = realpath("/proc/self/exe", NULL);
	cr_assert_not_null(self);
	char *path = xstrfmt("%.*s/../../aah-hold", (int)(strrchr(self, '/') - self), self);
	free(self);
	char *real = realpath(path, NULL);
	cr_assert_not_null(real, "no aah-hold at %s (make all builds it)", path);
	free(path);
	return real;
}

/* 1 when pid still runs the program a held child waits in (this test's
 * own program when forked, else aah-hold): it has not exec'd. */
static int still_held(long pid, const char *helper)
{
	char path[64], mine[4096] = "", theirs[4096] = "";
	snprintf(path, sizeof(path), "/proc/%ld/exe", pid);
	ssize_t a = helper ? (ssize_t)strlen(helper) : readlink("/proc/self/exe", mine, sizeof(mine) - 1);
	if (helper)
		xstrlcpy(mine, helper, sizeof(mine));
	ssize_t b = readlink(path, theirs, sizeof(theirs) - 1);
	return a > 0 && b > 0 && !strcmp(mine, theirs);
}

static void pause_10ms(void)
{
	usleep(10000);
}

/* No "has not run after 200 ms": the child is seen blocked (state S) before
 * its exec, which in the held child is only the wait for the release.
 * helper: aah-hold's path, or NULL for the forked child. */
static void held_child_waits(const char *helper)
{
	char path[] = "/tmp/aah-proc-XXXXXX";
	int fd = mkstemp(path);
	close(fd);
	char *cmd = xstrfmt("echo ran >> %s", path);
	const char *argv[] = { "sh", "-c", cmd, NULL };
	struct proc p;
	struct proc_spec spec = { .argv = argv, .new_session = 1, .hold = 1,
				  .hold_helper = helper };
	cr_assert_eq(proc_start(&p, &spec), 0);
	double t0 = util_monotonic();
	while (!(still_held(p.pid, helper) && proc_state(p.pid) == 'S')) {
		cr_assert(still_held(p.pid, helper), "a held child must not exec before release");
		cr_assert_lt(util_monotonic() - t0, 60, "the held child never blocked (state %c)",
			     proc_state(p.pid));
		pause_10ms();
	}
	cr_assert_eq(getpgid(p.pid), p.pid, "the held child leads its own process group");
	FILE *f = fopen(path, "r");
	cr_assert_eq(fgetc(f), EOF, "a held child must not run before release");
	fclose(f);
	cr_assert_eq(proc_release(&p), 0);
	cr_assert_eq(proc_wait(&p, 10), 1);
	cr_assert_eq(proc_exit_code(&p), 0);
	f = fopen(path, "r");
	char buf[16] = "";
	cr_assert_not_null(fgets(buf, sizeof(buf), f));
	cr_assert_str_eq(buf, "ran\n");
	fclose(f);

	/* Never released: it exits without running. */
	truncate(path, 0);
	cr_assert_eq(proc_start(&p, &spec), 0);
	proc_terminate(&p, 5);
	f = fopen(path, "r");
	cr_assert_eq(fgetc(f), EOF);
	fclose(f);
	unlink(path);
	free(cmd);
}

Test(proc, held_child_waits_for_release, .timeout = 120)
{
	held_child_waits(NULL);
}

Test(proc, held_child_waits_for_release_in_aah_hold, .timeout = 120)
{
	char *helper = hold_helper();
	held_child_waits(helper);
	free(helper);
}

/* A held child in aah-hold whose runner dies before the release (its end
 * of the hold pipe closes): it runs hold_orphan_argv with the program's
 * argv after it, or exits 125 unexecuted without one. Its stdout is the
 * log, its environment the spec's. */
Test(proc, held_child_in_aah_hold_orphaned, .timeout = 120)
{
	char *helper = hold_helper();
	char log[] = "/tmp/aah-proc-XXXXXX";
	int fd = mkstemp(log);
	close(fd);
	const char *orphan[] = { "/bin/sh", "-c", "echo \"orphan $AAH_X $0 $1\"", NULL };
	const char *argv[] = { "trainer", "--epochs=2", NULL };
	const char *env[] = { "AAH_X=x1", NULL };
	struct proc p;
	struct proc_spec spec = { .argv = argv, .env = env, .log_path = log, .new_session = 1,
				  .hold = 1, .hold_helper = helper, .hold_orphan_argv = orphan };
	cr_assert_eq(proc_start(&p, &spec), 0);
	close(p.hold_fd);   /* as when the runner dies */
	p.hold_fd = -1;
	cr_assert_eq(proc_wait(&p, 60), 1, "the orphan did not exit within 60 s");
	cr_assert_eq(proc_exit_code(&p), 0);
	char *text = NULL;
	cr_assert_eq(fileio_read(log, 4096, &text, NULL), 0);
	cr_assert_str_eq(text, "orphan x1 trainer --epochs=2\n");
	free(text);

	/* Without an orphan command it exits unexecuted. */
	truncate(log, 0);
	spec.hold_orphan_argv = NULL;
	cr_assert_eq(proc_start(&p, &spec), 0);
	close(p.hold_fd);
	p.hold_fd = -1;
	cr_assert_eq(proc_wait(&p, 60), 1);
	cr_assert_eq(proc_exit_code(&p), 125);
	cr_assert_eq(fileio_read(log, 4096, &text, NULL), 0);
	cr_assert_str_eq(text, "");
	free(text);
	proc_terminate(&p, 5);
	unlink(log);
	free(helper);
}

/* Waits for the events (the pid file, the grandchild gone) with generous
 * bounds instead of fixed sleeps. */
Test(proc, terminate_reaches_grandchildren, .timeout = 120)
{
	char path[] = "/tmp/aah-proc-XXXXXX";
	int fd = mkstemp(path);
	close(fd);
	char *cmd = xstrfmt("sleep 3600 & echo $! > %s; wait", path);
	const char *argv[] = { "sh", "-c", cmd, NULL };
	struct proc p;
	struct proc_spec spec = { .argv = argv, .new_session = 1 };
	cr_assert_eq(proc_start(&p, &spec), 0);
	long pid = 0;
	for (double t0 = util_monotonic(); !pid && util_monotonic() - t0 < 60;) {
		pause_10ms();
		FILE *f = fopen(path, "r");
		if (f && fscanf(f, "%ld", &pid) != 1)
			pid = 0;
		if (f)
			fclose(f);
	}
	cr_assert(pid > 0, "the child wrote no grandchild pid into %s in 60 s", path);
	proc_terminate(&p, 5);
	/* Gone, or a zombie waiting for whoever adopted it to reap it. */
	char state = proc_state(pid);
	for (double t0 = util_monotonic(); state != 'X' && state != 'Z' && util_monotonic() - t0 < 60;) {
		pause_10ms();
		state = proc_state(pid);
	}
	cr_assert(state == 'X' || state == 'Z', "the grandchild survived 60 s (state %c)", state);
	unlink(path);
	free(cmd);
}

/* A held child that cannot become its program says why at release, and
 * dies of its own exit code, not of SIGPIPE on the error pipe (issue 13,
 * item 3). */
static void held_start_fails(const struct proc_spec *spec, const char *want,
			     enum proc_step step)
{
	util_set_quiet(1);
	struct proc p;
	cr_assert_eq(proc_start(&p, spec), 0);
	cr_assert_eq(proc_release(&p), -1, "release said the program ran");
	cr_assert_str_eq(util_last_error(), want);
	cr_assert_eq(p.failed_step, step);
	cr_assert_eq(proc_wait(&p, 60), 1, "the child did not exit within 60 s");
	cr_assert_eq(proc_exit_code(&p), 127, "exit code %d", proc_exit_code(&p));
}

/* The same words from the forked child and from aah-hold. */
Test(proc, held_start_reports_a_missing_program)
{
	const char *argv[] = { "/nonexistent/bin/trainer", NULL };
	char *helper = hold_helper();
	struct proc_spec spec = { .argv = argv, .new_session = 1, .hold = 1 };
	for (int in_helper = 0; in_helper < 2; in_helper++) {
		spec.hold_helper = in_helper ? helper : NULL;
		held_start_fails(&spec,
				 "cannot run '/nonexistent/bin/trainer': No such file or directory",
				 PROC_STEP_EXEC);
	}
	const char *in_path[] = { "aah-no-such-trainer", NULL };
	spec.argv = in_path;
	held_start_fails(&spec, "cannot run 'aah-no-such-trainer': not found in PATH",
			 PROC_STEP_EXEC);
	free(helper);
}

Test(proc, held_start_reports_a_missing_directory)
{
	const char *argv[] = { "true", NULL };
	char *helper = hold_helper();
	struct proc_spec spec = { .argv = argv, .cwd = "/nonexistent/code", .hold = 1 };
	for (int in_helper = 0; in_helper < 2; in_helper++) {
		spec.hold_helper = in_helper ? helper : NULL;
		held_start_fails(&spec,
				 "cannot enter directory '/nonexistent/code': No such file or directory",
				 PROC_STEP_CWD);
	}
	free(helper);
	spec.hold_helper = NULL;

	/* The same without a hold: the error comes from proc_start. */
	struct proc q;
	spec.hold = 0;
	cr_assert_eq(proc_start(&q, &spec), -1);
	cr_assert_str_eq(util_last_error(),
			 "cannot enter directory '/nonexistent/code': No such file or directory");
	cr_assert_eq(q.failed_step, PROC_STEP_CWD);
}
