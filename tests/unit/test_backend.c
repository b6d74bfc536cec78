/* Unit tests for runner/backend/backend.c backend_run_tool: the one way a
 * backend runs an external tool (timeout, retries of transient failures,
 * the timeout status, a hook between runs, a missing program). The tools
 * are small sh scripts that log each run to a file. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "runner/backend/backend.h"
#include "runner/proc.h" /* PROC_TIMEOUT_STATUS */
#include "strbuf.h"
#include "util.h"

static char tmpdir[64];
static char *runs;   /* the log each script appends to */

static void setup(void)
{
	strcpy(tmpdir, "/tmp/aah-backend-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	runs = xstrfmt("%s/runs", tmpdir);
	util_set_quiet(1);
}

static void teardown(void)
{
	fileio_remove_tree(tmpdir);
	free(runs);
}

TestSuite(backend, .init = setup, .fini = teardown);

/* The run log's text ("" when nothing ran). */
static char *run_log(void)
{
	char *text = NULL;
	if (!fileio_exists(runs))
		return xstrdup("");
	cr_assert_eq(fileio_read(runs, 0, &text, NULL), 0);
	return text;
}

/* sh -c <script> with $1 = the run log. */
static int run_sh(const struct backend_tool *tool, const char *script, struct strbuf *out,
		  struct strbuf *err)
{
	const char *argv[] = { "sh", "-c", script, "sh", runs, NULL };
	return backend_run_tool(tool, argv, NULL, out, err);
}

static int later(const char *err, int exit_code)
{
	return exit_code == 2 && strstr(err, "try later") != NULL;
}

Test(backend, success_runs_once_and_captures)
{
	const struct backend_tool tool = { .name = "t", .missing = "m", .timeout = 10,
					   .retries = 3, .pause = 0.01, .transient = later };
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	strbuf_addstr(&out, "stale");
	int code = run_sh(&tool, "echo run >> \"$1\"; echo hello; echo warn >&2", &out, &err);
	cr_assert_eq(code, 0);
	cr_assert_str_eq(out.buf, "hello\n");
	cr_assert_str_eq(err.buf, "warn");   /* trailing blanks trimmed */
	char *log = run_log();
	cr_assert_str_eq(log, "run\n");
	free(log);
	strbuf_release(&out);
	strbuf_release(&err);
}

Test(backend, transient_failures_are_run_again_up_to_retries)
{
	const struct backend_tool tool = { .name = "t", .missing = "m", .timeout = 10,
					   .retries = 2, .pause = 0.01, .transient = later };
	struct strbuf err = STRBUF_INIT;
	int code = run_sh(&tool, "echo run >> \"$1\"; echo 'busy, try later' >&2; exit 2", NULL,
			  &err);
	cr_assert_eq(code, 2);
	cr_assert_str_eq(err.buf, "busy, try later");
	char *log = run_log();
	cr_assert_str_eq(log, "run\nrun\nrun\n");
	free(log);
	strbuf_release(&err);
}

Test(backend, permanent_failures_are_not_run_again)
{
	const struct backend_tool tool = { .name = "t", .missing = "m", .timeout = 10,
					   .retries = 2, .pause = 0.01, .transient = later };
	int code = run_sh(&tool, "echo run >> \"$1\"; echo 'no such queue' >&2; exit 2", NULL,
			  NULL);
	cr_assert_eq(code, 2);
	char *log = run_log();
	cr_assert_str_eq(log, "run\n");
	free(log);

	/* Without a transient() only a timeout is worth another run. */
	const struct backend_tool plain = { .name = "t", .missing = "m", .timeout = 10,
					    .retries = 2, .pause = 0.01 };
	cr_assert_eq(unlink(runs), 0);
	cr_assert_eq(run_sh(&plain, "echo run >> \"$1\"; echo 'try later' >&2; exit 2", NULL, NULL),
		     2);
	log = run_log();
	cr_assert_str_eq(log, "run\n");
	free(log);
}

Test(backend, a_timeout_gives_the_timeout_status_and_is_run_again)
{
	const struct backend_tool tool = { .name = "t", .missing = "m", .timeout = 0.3,
					   .retries = 1, .pause = 0.01 };
	struct strbuf out = STRBUF_INIT;
	int code = run_sh(&tool, "echo run >> \"$1\"; echo partial; exec sleep 30", &out, NULL);
	cr_assert_eq(code, PROC_TIMEOUT_STATUS);
	char *log = run_log();
	cr_assert_str_eq(log, "run\nrun\n");
	free(log);
	strbuf_release(&out);
}

Test(backend, the_last_run_decides_and_out_holds_only_its_output)
{
	const struct backend_tool tool = { .name = "t", .missing = "m", .timeout = 10,
					   .retries = 3, .pause = 0.01, .transient = later };
	struct strbuf out = STRBUF_INIT;
	/* Fails the first time, succeeds the second. */
	int code = run_sh(&tool,
			  "if [ -e \"$1\" ]; then echo second; exit 0; fi;"
			  "echo run >> \"$1\"; echo first; echo 'try later' >&2; exit 2",
			  &out, NULL);
	cr_assert_eq(code, 0);
	cr_assert_str_eq(out.buf, "second\n");
	strbuf_release(&out);
}

static void note_retry(void *arg)
{
	FILE *f = fopen(arg, "a");
	cr_assert_not_null(f);
	fputs("cleanup\n", f);
	fclose(f);
}

Test(backend, before_retry_runs_between_runs_only)
{
	struct backend_tool tool = { .name = "t", .missing = "m", .timeout = 10, .retries = 2,
				     .pause = 0.01, .transient = later,
				     .before_retry = note_retry };
	tool.arg = runs;
	run_sh(&tool, "echo run >> \"$1\"; echo 'try later' >&2; exit 2", NULL, NULL);
	char *log = run_log();
	cr_assert_str_eq(log, "run\ncleanup\nrun\ncleanup\nrun\n");
	free(log);
}

Test(backend, a_missing_program_names_the_tool_and_the_remedy)
{
	const struct backend_tool tool = { .name = "kubernetes",
					   .missing = "install kubectl or set kubernetes.kubectl",
					   .timeout = 10, .retries = 3, .pause = 0.01 };
	const char *argv[] = { "aah-no-such-kubectl", "get", NULL };
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	cr_assert_eq(backend_run_tool(&tool, argv, NULL, &out, &err), -1);
	const char *e = util_last_error();
	cr_assert(strstr(e, "kubernetes: cannot run aah-no-such-kubectl"), "%s", e);
	cr_assert(strstr(e, "install kubectl or set kubernetes.kubectl"), "%s", e);
	strbuf_release(&out);
	strbuf_release(&err);
}

/* ---- the registry: every entry has what the scheduler calls ----------------- */

Test(backend_table, every_backend_has_its_required_operations)
{
	int n = 0;
	for (const struct aah_backend *const *b = aah_backends; *b; b++, n++) {
		const struct aah_backend *be = *b;
		cr_assert(be->name && *be->name, "backend %d has no name", n);
		cr_assert(be->submit && be->poll && be->cancel,
			  "backend '%s' lacks submit, poll or cancel", be->name);
		cr_assert_eq(backend_find(be->name), be, "backend_find('%s')", be->name);
		cr_assert_eq(!be->config_keys, !be->config_size,
			     "backend '%s': a key table needs its struct size, and only then",
			     be->name);
	}
	cr_assert_eq(n, 4, "local, kubernetes, slurm and docker");
	cr_assert_null(backend_find("nope"));
}
