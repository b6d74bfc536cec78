/* Unit tests for runner/backend/local.c: following processes a resumed
 * runner did not start (by pid and kernel start time), and canceling them.
 * The followed processes are children of this test that it never reaps, as
 * under a PID 1 or a subreaper that does not reap (issue 13, items 1, 2).
 * And its own submissions: a rank's word on its exec is heard after the
 * submission returns, with a bounded number of pipes left open. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runner/backend/backend.h"
#include "runner/backend/local.h" /* backend_local, LOCAL_UNHEARD_MAX */
#include "runner/launch.h"        /* struct aah_launch */
#include "fileio.h"
#include "util.h"

TestSuite(local_backend);

/* State letter and start time (field 22) of /proc/<pid>/stat; 0 if gone. */
static char proc_state(pid_t pid, unsigned long long *start)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')'), state = 0;
	if (!p || sscanf(p, ") %c", &state) != 1)
		return 0;
	int field = 2;
	while (*p && field < 22)
		if (*p++ == ' ')
			field++;
	if (start && sscanf(p, "%llu", start) != 1)
		*start = 0;
	return state;
}

/* A child that exits at once and is left unreaped: a zombie. */
static pid_t zombie(unsigned long long *start)
{
	int go[2];
	cr_assert_eq(pipe(go), 0);
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (!pid) {
		char c;
		close(go[1]);
		ssize_t n = read(go[0], &c, 1); /* wait until our start time is read */
		_exit(n == 1 ? 0 : 1);
	}
	close(go[0]);
	cr_assert(proc_state(pid, start), "no /proc entry for child %ld", (long)pid);
	cr_assert_eq(write(go[1], "g", 1), 1);
	close(go[1]);
	/* Wait for the event (the zombie state), bounded and loud. */
	char st = 0;
	for (int i = 0; i < 6000 && (st = proc_state(pid, NULL)) != 'Z'; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	cr_assert_eq(st, 'Z', "child %ld is not a zombie after 60 s (state %c)", (long)pid, st);
	return pid;
}

/* Follow a zombie as a resumed runner would, optionally cancel it, and
 * poll it: it ended before any cancel, so it is lost (its result.json
 * decides), never running, never canceled. */
static void follow_zombie(int cancel)
{
	struct aah_backend_ctx ctx;
	unsigned long long start;
	pid_t pid = zombie(&start);
	char *job = xstrfmt("%ld.%llu", (long)pid, start);
	cr_assert_eq(backend_init(&ctx, &backend_local, NULL, "/nonexistent", "x"), 0);
	if (cancel)
		cr_assert_eq(backend_cancel(&ctx, job), 0);
	struct aah_job_status st = { .job = job };
	cr_assert_eq(backend_poll(&ctx, &st), 0);
	cr_assert_eq(st.state, AAH_JOB_LOST, "state %d%s (a zombie is not running)", st.state,
		     cancel ? " after a cancel of an ended job" : "");
	backend_fini(&ctx);
	waitpid(pid, NULL, 0);
	free(job);
}

Test(local_backend, an_adopted_zombie_has_ended)
{
	follow_zombie(0);
}

/* A cancel that comes after the process ended does not make it canceled. */
Test(local_backend, a_cancel_after_the_end_is_no_cancel)
{
	follow_zombie(1);
}

/* A live adopted process is canceled: SIGTERM to its group. */
Test(local_backend, a_live_adopted_process_is_canceled)
{
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (!pid) {
		setsid();
		execlp("sleep", "sleep", "300", (char *)NULL);
		_exit(127);
	}
	unsigned long long start = 0;
	char st0 = 0;
	/* Wait until it runs sleep in its own session (its start time is fixed). */
	for (int i = 0; i < 6000; i++) {
		char path[64], comm[64] = "";
		snprintf(path, sizeof(path), "/proc/%ld/comm", (long)pid);
		FILE *f = fopen(path, "r");
		if (f) {
			if (!fgets(comm, sizeof(comm), f))
				comm[0] = '\0';
			fclose(f);
		}
		if (!strcmp(comm, "sleep\n") && getpgid(pid) == pid)
			break;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	st0 = proc_state(pid, &start);
	cr_assert(st0 && st0 != 'Z', "the child is not running (state %c)", st0);
	char *job = xstrfmt("%ld.%llu", (long)pid, start);
	struct aah_backend_ctx ctx;
	cr_assert_eq(backend_init(&ctx, &backend_local, NULL, "/nonexistent", "x"), 0);
	struct aah_job_status st = { .job = job };
	cr_assert_eq(backend_poll(&ctx, &st), 0);
	cr_assert_eq(st.state, AAH_JOB_RUNNING);
	cr_assert_eq(backend_cancel(&ctx, job), 0);
	cr_assert_eq(backend_poll(&ctx, &st), 0);
	cr_assert_eq(st.state, AAH_JOB_CANCELED, "state %d after a cancel", st.state);
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	backend_fini(&ctx);
	free(job);
}

/* Open file descriptors of this process. */
static unsigned open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	cr_assert(d);
	unsigned n = 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* A one-rank launch of argv in a trial directory of its own under dir. */
static void one_rank(struct aah_launch *l, struct launch_rank *rank, const char *dir,
		     const char *const *argv)
{
	*l = (struct aah_launch){ 0 };
	*rank = (struct launch_rank){ 0 };
	for (size_t i = 0; argv[i]; i++)
		strvec_push(&rank->argv, argv[i]);
	l->trial_id = "000001";
	l->trial_dir = (char *)dir;
	l->expdir = (char *)dir;
	l->nranks = 1;
	l->ranks = rank;
}

/* Poll job until it is no longer running (bounded and loud). */
static void poll_to_end(struct aah_backend_ctx *ctx, struct aah_job_status *st)
{
	for (int i = 0; i < 6000; i++) {
		cr_assert_eq(backend_poll(ctx, st), 0);
		if (st->state != AAH_JOB_RUNNING)
			return;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	cr_assert_fail("job %s still running after 60 s", st->job);
}

/* Submissions do not wait for each rank's exec: its word (the pipe it
 * closes by exec'ing) is read at a poll, or all at once when
 * LOCAL_UNHEARD_MAX ranks may be unheard. Without that bound a wave of
 * submissions would keep one pipe each open until the next poll. */
Test(local_backend, released_ranks_are_heard_later_with_a_bounded_number_of_pipes)
{
	char dir[] = "/tmp/aah-local-XXXXXX";
	cr_assert(mkdtemp(dir));
	const char *const argv[] = { "sleep", "60", NULL };
	struct aah_launch l;
	struct launch_rank rank;
	one_rank(&l, &rank, dir, argv);
	struct aah_backend_ctx ctx;
	cr_assert_eq(backend_init(&ctx, &backend_local, NULL, dir, "x"), 0);
	enum { JOBS = 3 * LOCAL_UNHEARD_MAX + 5 };
	char *jobs[JOBS];
	unsigned base = open_fds(), most = 0;
	for (unsigned k = 0; k < JOBS; k++) {
		cr_assert_eq(backend_submit(&ctx, &l, &jobs[k]), 0, "submission %u: %s", k,
			     util_last_error());
		unsigned now = open_fds() - base;
		most = now > most ? now : most;
	}
	cr_assert_leq(most, LOCAL_UNHEARD_MAX, "%u pipes open after a submission (at most %d)",
		      most, LOCAL_UNHEARD_MAX);
	cr_assert_geq(most, 1, "no submission left its rank's word to be heard later");
	for (unsigned k = 0; k < JOBS; k++) {
		struct aah_job_status st = { .job = jobs[k] };
		cr_assert_eq(backend_poll(&ctx, &st), 0);
		cr_assert_eq(st.state, AAH_JOB_RUNNING, "job %u: state %d (%s)", k, st.state,
			     st.reason);
		cr_assert_eq(backend_cancel(&ctx, jobs[k]), 0);
		cr_assert_eq(backend_poll(&ctx, &st), 0);
		cr_assert_eq(st.state, AAH_JOB_CANCELED, "job %u: state %d", k, st.state);
		free(jobs[k]);
	}
	cr_assert_eq(open_fds(), base, "pipes left open after every job ended");
	backend_fini(&ctx);
	strvec_clear(&rank.argv);
	char *log = xstrfmt("%s/trial.log", dir);
	unlink(log);
	free(log);
	rmdir(dir);
}

/* A rank that cannot become its program: the submission has returned, so
 * its job fails at a poll, with the reason and the key to fix, in the
 * job's reason and in trial.log, as a start failure (exit code -1). */
Test(local_backend, a_rank_that_cannot_run_fails_its_job_at_a_poll_with_why)
{
	char dir[] = "/tmp/aah-local-XXXXXX";
	cr_assert(mkdtemp(dir));
	const char *const argv[] = { "/nonexistent/bin/trainer", NULL };
	struct aah_launch l;
	struct launch_rank rank;
	one_rank(&l, &rank, dir, argv);
	struct aah_backend_ctx ctx;
	cr_assert_eq(backend_init(&ctx, &backend_local, NULL, dir, "x"), 0);
	char *job = NULL;
	unsigned base = open_fds();
	cr_assert_eq(backend_submit(&ctx, &l, &job), 0, "%s", util_last_error());
	struct aah_job_status st = { .job = job };
	poll_to_end(&ctx, &st);
	const char *want = "could not be started: cannot run '/nonexistent/bin/trainer': "
			   "No such file or directory (check trial.command)";
	cr_assert_eq(st.state, AAH_JOB_FAILED, "state %d (%s)", st.state, st.reason);
	cr_assert_eq(st.exit_code, -1);
	cr_assert_str_eq(st.reason, want);
	char *log = xstrfmt("%s/trial.log", dir), *text = NULL;
	cr_assert_eq(fileio_read(log, 1 << 20, &text, NULL), 0);
	cr_assert(strstr(text, want + strlen("could not be started: ")), "trial.log: %s", text);
	cr_assert_eq(open_fds(), base, "its pipe is left open");
	free(text);
	unlink(log);
	free(log);
	backend_fini(&ctx);
	free(job);
	strvec_clear(&rank.argv);
	rmdir(dir);
}
