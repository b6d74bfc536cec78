/* Unit tests for common/: strbuf, fileio, jsonfile, util. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "jsonfile.h"
#include "strbuf.h"
#include "strvec.h"
#include "trialimg/elastic.h" /* elastic_target: a library call that is quiet for a moment */
#include "util.h"

static char tmpdir[64];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/aah-common-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	util_set_quiet(1);
}

static void teardown(void)
{
	fileio_remove_tree(tmpdir);
}

TestSuite(common, .init = setup, .fini = teardown);

Test(common, strbuf_grows_and_caps)
{
	struct strbuf sb;
	strbuf_init(&sb, 10);
	strbuf_addstr(&sb, "hello");
	strbuf_addf(&sb, " %d", 12345);
	cr_assert_eq(sb.len, 10);
	cr_assert(sb.overflow);
	cr_assert_str_eq(strbuf_str(&sb), "hello 1234");
	strbuf_release(&sb);
	cr_assert_str_eq(strbuf_str(&sb), "");
}

Test(common, strbuf_html_escape)
{
	struct strbuf sb = STRBUF_INIT;
	strbuf_addstr_html(&sb, "<a href=\"x\">&'</a>");
	cr_assert_str_eq(sb.buf, "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
	strbuf_release(&sb);
}

Test(common, atomic_write_and_read)
{
	char *p = xstrfmt("%s/a/b/f.txt", tmpdir);
	char *d = xstrfmt("%s/a/b", tmpdir);
	cr_assert_eq(fileio_mkdir_p(d, 0755), 0);
	cr_assert_eq(fileio_write_atomic(p, "abc", 3), 0);
	char *text;
	size_t len;
	cr_assert_eq(fileio_read(p, 0, &text, &len), 0);
	cr_assert_eq(len, 3);
	cr_assert_str_eq(text, "abc");
	free(text);
	cr_assert_eq(fileio_read(p, 2, &text, &len), -1, "size limit must be enforced");
	free(p);
	free(d);
}

Test(common, mkdir_p_makes_what_is_missing_and_names_what_is_in_the_way)
{
	char *deep = xstrfmt("%s/m/n/o", tmpdir), *file = xstrfmt("%s/m/f", tmpdir);
	char *under = xstrfmt("%s/m/f/p", tmpdir);
	struct stat st;
	cr_assert_eq(fileio_mkdir_p(deep, 0755), 0);
	cr_assert(stat(deep, &st) == 0 && S_ISDIR(st.st_mode));
	cr_assert_eq(fileio_mkdir_p(deep, 0755), 0, "one that exists is no error");
	cr_assert_eq(fileio_write_atomic(file, "x", 1), 0);
	util_set_quiet(1);
	cr_assert_eq(fileio_mkdir_p(under, 0755), -1, "a file where a directory goes");
	util_set_quiet(0);
	cr_assert(strstr(util_last_error(), "/m/f"), "%s", util_last_error());
	free(deep);
	free(file);
	free(under);
}

/* One sync of a filesystem, by any path on it: a file written unsynced
 * reads back after it; a path that is not there is named. */
Test(common, sync_fs_syncs_by_any_path_and_names_a_missing_one)
{
	char *file = xstrfmt("%s/s.json", tmpdir), *gone = xstrfmt("%s/none/x", tmpdir), *text;
	cr_assert_eq(fileio_write_atomic_flags(file, "{}", 2, FILEIO_NOSYNC), 0);
	cr_assert_eq(fileio_sync_fs(tmpdir), 0, "%s", util_last_error());
	cr_assert_eq(fileio_sync_fs(file), 0, "%s", util_last_error());
	cr_assert_eq(fileio_read(file, 16, &text, NULL), 0);
	cr_assert_str_eq(text, "{}");
	util_set_quiet(1);
	cr_assert_eq(fileio_sync_fs(gone), -1);
	util_set_quiet(0);
	cr_assert(strstr(util_last_error(), "/none/x"), "%s", util_last_error());
	free(text);
	free(file);
	free(gone);
}

/* A file of /proc says size 0: it is read whole, past the first page too. */
Test(common, read_gives_a_proc_file_whole)
{
	char *text;
	size_t len;
	cr_assert_eq(fileio_read("/proc/self/stat", 0, &text, &len), 0);
	cr_assert(len > 20 && text[len - 1] == '\n' && strlen(text) == len);
	free(text);
	/* smaps: a record of each mapping, the libraries' too: pages of it */
	cr_assert_eq(fileio_read("/proc/self/smaps", 0, &text, &len), 0);
	cr_assert(len > 4096 && text[len - 1] == '\n' && strlen(text) == len, "%zu bytes", len);
	free(text);
}

static int count_line(const cJSON *line, void *arg)
{
	(void)line;
	(*(int *)arg)++;
	return 0;
}

/* fileio_copy: any size, atomically; FILEIO_WHOLE_LINES stops after the
 * last newline (a line being appended as it is read stays out). */
Test(common, copy_whole_and_by_lines)
{
	char *a = xstrfmt("%s/a", tmpdir), *b = xstrfmt("%s/b", tmpdir);
	size_t n = (3u << 20) + 5;     /* past the copy's 1 MiB pieces */
	char *big = xmalloc(n);
	for (size_t i = 0; i < n; i++)
		big[i] = i % 97 == 96 ? '\n' : (char)('a' + i % 26);
	cr_assert_eq(fileio_write_atomic(a, big, n), 0);
	cr_assert_eq(fileio_copy(a, b, 0), 0);
	char *text;
	size_t len;
	cr_assert_eq(fileio_read(b, 0, &text, &len), 0);
	cr_assert(len == n && !memcmp(text, big, n));
	free(text);
	cr_assert_eq(fileio_copy(a, b, FILEIO_WHOLE_LINES), 0);
	cr_assert_eq(fileio_read(b, 0, &text, &len), 0);
	size_t whole = n;
	while (whole && big[whole - 1] != '\n')
		whole--;
	cr_assert(whole < n && len == whole && !memcmp(text, big, whole), "%zu of %zu", len, whole);
	free(text);
	cr_assert_eq(fileio_write_atomic(a, "no newline", 10), 0);
	cr_assert_eq(fileio_copy(a, b, FILEIO_WHOLE_LINES), 0);
	cr_assert_eq(fileio_read(b, 0, &text, &len), 0);
	cr_assert_eq(len, 0);
	free(text);
	char *missing = xstrfmt("%s/none", tmpdir);
	cr_assert_eq(fileio_copy(missing, b, 0), -1);
	cr_assert(strstr(util_last_error(), "cannot open"), "%s", util_last_error());
	free(missing);
	free(big);
	free(a);
	free(b);
}

Test(common, jsonl_skips_torn_last_line)
{
	char *p = xstrfmt("%s/j.jsonl", tmpdir);
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddNumberToObject(doc, "x", 1);
	cr_assert_eq(jsonfile_append(p, doc), 0);
	cr_assert_eq(jsonfile_append(p, doc), 0);
	cJSON_Delete(doc);
	FILE *f = fopen(p, "a");
	fputs("{\"x\":", f);
	fclose(f);
	int n = 0;
	cr_assert_eq(jsonfile_read_lines(p, count_line, &n), 0);
	cr_assert_eq(n, 2);
	free(p);
}

Test(common, json_errors_name_file_and_field)
{
	cJSON *doc;
	cr_assert_eq(jsonfile_parse("x.json", "{\n \"a\": 1,\n}", &doc), -1);
	cr_assert(strstr(util_last_error(), "x.json:3:"), "got: %s", util_last_error());
	cr_assert_eq(jsonfile_parse("x.json", "{\"a\": \"s\", \"format\": \"aah-result/2\"}", &doc), 0);
	long v;
	cr_assert_eq(json_get_int("x.json", doc, "a", 0, 0, 10, &v), -1);
	cr_assert(strstr(util_last_error(), "\"a\""));
	cr_assert_eq(jsonfile_check_format("x.json", doc, "aah-result", 1), -1);
	cr_assert_eq(jsonfile_check_format("x.json", doc, "aah-result", 2), 0);
	cJSON_Delete(doc);
}

/* The bounds of json_get_int are exact at the ends of long: 2^63 is not
 * LONG_MAX (as a double they are equal), -2^63 is LONG_MIN (issue 13). */
Test(common, json_get_int_bounds_are_exact)
{
	cJSON *doc;
	long v = 7;
	cr_assert_eq(jsonfile_parse("x.json",
				    "{\"big\": 9223372036854775808, \"top\": 9223372036854774784,"
				    " \"low\": -9223372036854775808, \"huge\": 1e300}", &doc), 0);
	cr_assert_eq(json_get_int("x.json", doc, "big", 0, 0, LONG_MAX, &v), -1,
		     "2^63 was let through as %ld", v);
	cr_assert(strstr(util_last_error(), "\"big\""), "got: %s", util_last_error());
	cr_assert_eq(json_get_int("x.json", doc, "huge", 0, LONG_MIN, LONG_MAX, &v), -1);
	cr_assert_eq(json_get_int("x.json", doc, "top", 0, 0, LONG_MAX, &v), 0);
	cr_assert_eq(v, 9223372036854774784l);
	cr_assert_eq(json_get_int("x.json", doc, "top", 0, 0, 9223372036854774783l, &v), -1);
	cr_assert_eq(json_get_int("x.json", doc, "low", 0, LONG_MIN, 0, &v), 0);
	cr_assert_eq(v, LONG_MIN);
	cr_assert_eq(json_get_int("x.json", doc, "low", 0, LONG_MIN + 1, 0, &v), -1);
	cJSON_Delete(doc);
}

/* A JSON error says where and what was expected there (issue 13, defect 8). */
Test(common, json_errors_say_what_was_expected)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "{\"a\": [1, 2]\n", "x.json:2:1: invalid JSON: expected ',' or '}', found the end of the file" },
		{ "{\"a\": \"s\" \"b\": 1}", "x.json:1:11: invalid JSON: expected ',' or '}', found '\"'" },
		{ "[1 2]", "x.json:1:4: invalid JSON: expected ',' or ']', found '2'" },
		{ "{\n \"a\": 1,\n}", "x.json:3:1: invalid JSON: expected a key in double quotes, found '}'" },
		{ "{a: 1}", "x.json:1:2: invalid JSON: expected a key in double quotes or '}', found 'a'" },
		{ "{\"a\" 1}", "x.json:1:6: invalid JSON: expected ':' after the key, found '1'" },
		{ "{\"a\": }", "x.json:1:7: invalid JSON: expected a value (an object, array, string, number, true, false or null), found '}'" },
		{ "[1e]", "x.json:1:4: invalid JSON: a bad number: expected digits, found ']'" },
		{ "[\"ab", "x.json:1:5: invalid JSON: a string is not closed: expected '\"', found the end of the file" },
		{ "{} x", "x.json:1:4: invalid JSON: expected the end of the file after the JSON document, found 'x'" },
		{ "", "x.json:1:1: invalid JSON: expected a value (an object, array, string, number, true, false or null), found the end of the file" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		cJSON *doc = NULL;
		cr_assert_eq(jsonfile_parse("x.json", cases[i].text, &doc), -1, "%s", cases[i].text);
		cr_assert_str_eq(util_last_error(), cases[i].want, "for %s", cases[i].text);
	}
}

Test(common, held_errors_are_kept_not_printed)
{
	util_set_quiet(0);
	fflush(stderr);
	int saved = dup(2), fd[2];
	cr_assert_eq(pipe(fd), 0);
	dup2(fd[1], 2);
	int old = util_hold_errors(1);
	error("held %d", 1);
	util_hold_errors(old);
	error("printed %d", 2);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(fd[1]);
	char buf[256] = "";
	ssize_t n = read(fd[0], buf, sizeof(buf) - 1);
	close(fd[0]);
	buf[n > 0 ? n : 0] = '\0';
	cr_assert_eq(old, 0);
	cr_assert_str_eq(util_last_error(), "printed 2");
	cr_assert(!strstr(buf, "held 1"), "printed: %s", buf);
	cr_assert(strstr(buf, "printed 2"), "printed: %s", buf);
	util_set_quiet(1);
}

/* A caller passes a callee's words on with its own context
 * (`error("rank 0: %s", util_last_error())`, util.h): the message is
 * formatted aside, so the context does not overwrite the words it quotes
 * ("rank 0: rank 0:  rank closed ..." before). */
Test(common, an_error_may_quote_the_last_one)
{
	util_set_quiet(1);
	error("the next rank closed the connection");
	error("rank %d: %s", 0, util_last_error());
	cr_assert_str_eq(util_last_error(), "rank 0: the next rank closed the connection");
	errno = ENOENT;
	error_errno("cannot read '%s'", util_last_error());
	cr_assert_str_eq(util_last_error(),
			 "cannot read 'rank 0: the next rank closed the connection': "
			 "No such file or directory");
}

Test(common, edit_distance)
{
	cr_assert_eq(util_edit_distance("maxTrialNum", "maxTrailNum"), 2);
	cr_assert_eq(util_edit_distance("", "abc"), 3);
	cr_assert_eq(util_edit_distance("gpuNum", "gpuNum"), 0);
}

/* One thread's share of last_error_is_per_thread. */
struct error_job {
	int id, n;
	int wrong;        /* times util_last_error() was not this thread's message */
	char seen[128];   /* the first wrong one */
	pthread_barrier_t *start;
};

static void *report_own_errors(void *arg)
{
	struct error_job *j = arg;
	char want[128];
	pthread_barrier_wait(j->start); /* both threads write at once */
	for (int i = 0; i < j->n; i++) {
		if (i % 2) {
			errno = ENOENT;
			error_errno("thread %d, error %d", j->id, i);
			snprintf(want, sizeof(want), "thread %d, error %d: %s", j->id, i,
				 strerror(ENOENT));
		} else {
			error("thread %d, error %d", j->id, i);
			snprintf(want, sizeof(want), "thread %d, error %d", j->id, i);
		}
		if (strcmp(util_last_error(), want) && !j->wrong++)
			xstrlcpy(j->seen, util_last_error(), sizeof(j->seen));
	}
	return NULL;
}

Test(common, last_error_is_per_thread)
{
	error("the main thread's own error");
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, 2);
	struct error_job job[2] = {{.id = 1, .n = 20000, .start = &start},
				   {.id = 2, .n = 20000, .start = &start}};
	pthread_t th[2];
	for (int k = 0; k < 2; k++)
		cr_assert_eq(pthread_create(&th[k], NULL, report_own_errors, &job[k]), 0);
	for (int k = 0; k < 2; k++)
		pthread_join(th[k], NULL);
	pthread_barrier_destroy(&start);
	for (int k = 0; k < 2; k++)
		cr_assert_eq(job[k].wrong, 0,
			     "thread %d read another message %d of %d times, first '%s'", job[k].id,
			     job[k].wrong, job[k].n, job[k].seen);
	cr_assert_str_eq(util_last_error(), "the main thread's own error");
}

/* util_set_quiet nests: a library call that silences itself for a moment
 * (here the trainer's read of world_size) leaves a caller's silence on.
 * Before, it set quiet to 0 on its way out and the caller's next warning
 * printed. */
static void setup_stderr(void)
{
	setup();
	cr_redirect_stderr();
}

Test(common, quiet_nests_through_a_library_call, .init = setup_stderr)
{
	int outer = util_set_quiet(1);
	cr_assert_eq(elastic_target("/nonexistent-aah-dir"), -1);
	warning("must stay silent");
	fflush(stderr);
	cr_assert_eq(util_set_quiet(outer), 1, "a library call turned quiet off");
	cr_assert_stderr_eq_str("");
}

static int keep_not_b(const char *path, const char *name, void *arg)
{
	(*(int *)arg)++;
	cr_assert(strstr(path, name) && strstr(path, tmpdir), "path '%s' for '%s'", path, name);
	return strcmp(name, "b");
}

/* The one sorted listing of a directory (issue 37): dot entries left out,
 * the filter asked, names sorted, appended after what the vector held. */
Test(common, list_dir_sorted_filtered)
{
	const char *names[] = { "c", "a10", "b", "a2", ".hidden" };
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
		char *p = xstrfmt("%s/%s", tmpdir, names[i]);
		cr_assert_eq(fileio_write_atomic(p, "x", 1), 0);
		free(p);
	}
	struct strvec v = STRVEC_INIT;
	strvec_push(&v, "first");
	int asked = 0;
	cr_assert_eq(fileio_list_dir(tmpdir, keep_not_b, &asked, &v), 0);
	cr_assert_eq(asked, 4, "the filter was asked of %d entries", asked);
	cr_assert_eq(v.n, 4);
	cr_assert_str_eq(v.v[0], "first");
	cr_assert_str_eq(v.v[1], "a10");
	cr_assert_str_eq(v.v[2], "a2");
	cr_assert_str_eq(v.v[3], "c");
	cr_assert_null(v.v[4]);
	strvec_clear(&v);
	char *none = xstrfmt("%s/none", tmpdir);
	cr_assert_eq(fileio_list_dir(none, NULL, NULL, &v), -1);
	cr_assert_eq(errno, ENOENT);
	cr_assert_eq(v.n, 0);
	free(none);
	strvec_clear(&v);
}
