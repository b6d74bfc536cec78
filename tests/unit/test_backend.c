/* Unit tests for runner/backend/backend.c backend_run_tool: the one way a
 * backend runs an external tool (timeout, retries of transient failures,
 * the timeout status, a hook between runs, a missing program). The tools
 * are small sh scripts that log each run to a file. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "runner/backend/backend.h"
#include "runner/backend/proc.h" /* PROC_TIMEOUT_STATUS */
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

/* ---- backends describe themselves: generic code names none -------------- */

struct name_scan {
	int hits;
	size_t files;
};

/* Every .c and .h under dir (but runner/backend/, the backends' own room):
 * a backend's name as a string literal ("docker") is a hit. */
static void scan_for_names(const char *dir, struct name_scan *sc)
{
	DIR *d = opendir(dir);
	cr_assert_not_null(d, "cannot list '%s' (run from the repository root)", dir);
	for (struct dirent *de; (de = readdir(d));) {
		if (de->d_name[0] == '.')
			continue;
		char *path = xstrfmt("%s/%s", dir, de->d_name);
		size_t len = strlen(de->d_name);
		if (de->d_type == DT_DIR) {
			if (strcmp(path, "runner/backend"))
				scan_for_names(path, sc);
		} else if (len > 2 && (!strcmp(de->d_name + len - 2, ".c") ||
				       !strcmp(de->d_name + len - 2, ".h"))) {
			char *text;
			cr_assert_eq(fileio_read(path, 0, &text, NULL), 0, "%s", path);
			sc->files++;
			for (const struct aah_backend *const *b = aah_backends; *b; b++) {
				char *lit = xstrfmt("\"%s\"", (*b)->name);
				for (const char *at = text; (at = strstr(at, lit)); at++) {
					cr_log_error("%s names the backend %s: ask its entry's "
						     "capabilities instead", path, lit);
					sc->hits++;
				}
				free(lit);
			}
			free(text);
		}
		free(path);
	}
	closedir(d);
}

Test(backend_table, no_backend_name_is_spelled_outside_its_room)
{
	struct name_scan sc = { 0 };
	const char *rooms[] = { "runner", "common", "trialimg", "kernels" };
	for (size_t i = 0; i < sizeof(rooms) / sizeof(rooms[0]); i++)
		scan_for_names(rooms[i], &sc);
	cr_assert_gt(sc.files, 100, "scanned only %zu files", sc.files);
	cr_assert_eq(sc.hits, 0, "%d backend names spelled outside runner/backend/", sc.hits);
}

Test(backend_table, every_entry_describes_itself)
{
	struct config_platforms p;
	backend_platforms(&p);
	for (const struct aah_backend *const *b = aah_backends; *b; b++) {
		cr_assert((*b)->help && *(*b)->help, "%s has no help line", (*b)->name);
		size_t i = (size_t)(b - aah_backends);
		cr_assert_str_eq(p.names[i], (*b)->name);
		cr_assert_eq(p.help[i], (*b)->help);
		if ((*b)->mpi_hosts != LAUNCH_MPI_NAMED)
			cr_assert((*b)->caps & AAH_CAP_MPI,
				  "%s names MPI hosts but cannot start mpirun", (*b)->name);
	}
	size_t n = 0;
	while (aah_backends[n])
		n++;
	cr_assert_eq(p.n, n);
}

Test(backend_table, the_mpi_refusal_lists_the_capable_backends)
{
	char *can = backend_names_with(AAH_CAP_MPI);
	for (const struct aah_backend *const *b = aah_backends; *b; b++)
		cr_assert_eq(!!strstr(can, (*b)->name), !!((*b)->caps & AAH_CAP_MPI), "%s: %s",
			     (*b)->name, can);
	free(can);
	char *all = backend_names_with(0);
	cr_assert(strstr(all, " and "), "%s", all);
	free(all);
}

/* The one job list every backend keeps (issue 37). */
struct test_job {
	struct backend_job job;
	int value;
};
static int released;
static int test_job_init(void *owner, struct backend_job *j)
{
	((struct test_job *)j)->value = *(int *)owner;
	return strcmp(j->id, "bad") ? 0 : -1;
}
static void test_job_release(struct backend_job *j)
{
	(void)j;
	released++;
}

Test(backend_jobs, get_find_add_drop_clear)
{
	int seed = 7;
	struct backend_jobs l = BACKEND_JOBS_INIT(struct test_job, test_job_init, test_job_release, &seed);
	released = 0;
	cr_assert_null(backend_jobs_find(&l, "a"));
	struct test_job *a = backend_jobs_get(&l, "a");
	cr_assert_not_null(a);
	cr_assert_eq(a->value, 7, "init did not run");
	cr_assert_eq(backend_jobs_get(&l, "a"), a, "a second get made a second job");
	cr_assert_eq(backend_jobs_find(&l, "a"), a);
	cr_assert_null(backend_jobs_get(&l, "bad"), "a refused id was added");
	cr_assert_eq(released, 1, "the refused job was not released");
	cr_assert_null(backend_jobs_find(&l, "bad"));
	struct test_job *b = xcalloc(1, sizeof(*b));
	b->value = 3;
	backend_jobs_add(&l, &b->job, "b");
	cr_assert_eq(backend_jobs_find(&l, "b"), b);
	int n = 0;
	backend_jobs_each(&l, struct test_job, j)
		n += j->value;
	cr_assert_eq(n, 10);
	backend_jobs_drop(&l, "a");
	cr_assert_null(backend_jobs_find(&l, "a"));
	cr_assert_eq(released, 2);
	backend_jobs_drop(&l, "nothing");
	cr_assert_eq(released, 2);
	backend_jobs_clear(&l);
	cr_assert_null(l.head);
	cr_assert_eq(released, 3);
}

/* Thousands of jobs come and go (docs/scale.md: 4,096 slots): every one is
 * found by its id through the index, also after many drops (tombstones)
 * and rebuilds, and the list still holds exactly the live ones. */
Test(backend_jobs, thousands_come_and_go)
{
	int seed = 1;
	struct backend_jobs l = BACKEND_JOBS_INIT(struct test_job, test_job_init, test_job_release, &seed);
	released = 0;
	char id[32];
	for (int round = 0; round < 5; round++) {
		for (int i = 0; i < 5000; i++) {
			snprintf(id, sizeof(id), "%d.%d", round, i);
			struct test_job *j = backend_jobs_get(&l, id);
			cr_assert_not_null(j);
			j->value = i;
		}
		for (int i = 0; i < 5000; i += 2) {   /* every other one ends */
			snprintf(id, sizeof(id), "%d.%d", round, i);
			backend_jobs_drop(&l, id);
		}
	}
	for (int round = 0; round < 5; round++)
		for (int i = 0; i < 5000; i++) {
			snprintf(id, sizeof(id), "%d.%d", round, i);
			struct test_job *j = backend_jobs_find(&l, id);
			if (i % 2)
				cr_assert(j && j->value == i, "job %s lost", id);
			else
				cr_assert_null(j, "dropped job %s found", id);
		}
	int n = 0;
	backend_jobs_each(&l, struct test_job, j) {
		cr_assert(j->value % 2, "dropped job %s in the list", j->job.id);
		n++;
	}
	cr_assert_eq(n, 5 * 2500);
	cr_assert_eq(released, 5 * 2500);
	backend_jobs_clear(&l);
	cr_assert_eq(released, 5 * 5000);
	cr_assert_null(backend_jobs_find(&l, "1.1"));
}
