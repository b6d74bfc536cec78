/* proc.c: child processes from argv and env vectors. */
#include "runner/backend/proc.h"
#include "runner/backend/proc_report.h" /* proc_report_fail, PROC_HOLD_FD */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static void child_exec(const struct proc_spec *spec, int errfd, int in_fd, int out_fd,
		       int err_fd, int hold_r, int hold_w)
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	if (spec->new_session && setsid() < 0)
		proc_report_fail(errfd, PROC_STEP_SETUP, errno, spec->cwd, spec->argv[0]);
	if (in_fd >= 0 && dup2(in_fd, 0) < 0)
		proc_report_fail(errfd, PROC_STEP_SETUP, errno, spec->cwd, spec->argv[0]);
	if (out_fd >= 0 && dup2(out_fd, 1) < 0)
		proc_report_fail(errfd, PROC_STEP_SETUP, errno, spec->cwd, spec->argv[0]);
	if (err_fd >= 0 && dup2(err_fd, 2) < 0)
		proc_report_fail(errfd, PROC_STEP_SETUP, errno, spec->cwd, spec->argv[0]);
	if (spec->cwd && chdir(spec->cwd) < 0)
		proc_report_fail(errfd, PROC_STEP_CWD, errno, spec->cwd, spec->argv[0]);
	if (spec->env)
		environ = (char **)spec->env;
	if (hold_r >= 0) {
		char go;
		close(hold_w);
		ssize_t n;
		do
			n = read(hold_r, &go, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1 && !(n == 0 && spec->hold_orphaned && spec->hold_orphaned(spec->hold_arg)))
			_exit(125);
	}
	execvp(spec->argv[0], (char *const *)spec->argv);
	proc_report_fail(errfd, PROC_STEP_EXEC, errno, spec->cwd, spec->argv[0]);
}

/* Read the child's report from fd (closed here): 0 when it exec'd (EOF:
 * the pipe is close-on-exec), else -1 with its reason; the child, which
 * exits after reporting, is then reaped into *status. */
static int read_report(int fd, pid_t child, int *status, enum proc_step *step)
{
	struct proc_report rep;
	ssize_t n;
	do
		n = read(fd, &rep, sizeof(rep));
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n != (ssize_t)sizeof(rep))
		return 0;
	while (waitpid(child, status, 0) < 0 && errno == EINTR)
		;
	rep.msg[sizeof(rep.msg) - 1] = '\0';
	*step = (enum proc_step)rep.step;
	return error("%s", rep.msg);
}

/* SIGPIPE is held back around writes to a child's pipe: a child that has
 * exited must not kill this process (the write fails instead). */
static void sigpipe_hold(sigset_t *old)
{
	sigset_t pipe_set;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigprocmask(SIG_BLOCK, &pipe_set, old);
}

static void sigpipe_restore(const sigset_t *old)
{
	sigset_t pipe_set;
	struct timespec zero = { 0, 0 };
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	while (sigtimedwait(&pipe_set, NULL, &zero) > 0)
		;
	sigprocmask(SIG_SETMASK, old, NULL);
}

/* A pipe end on a descriptor above aah-hold's two (fd itself when it is):
 * the spawn's dup2 onto PROC_HOLD_FD and PROC_REPORT_FD must not overwrite
 * one before it is copied. */
static int above_hold_fds(int fd)
{
	if (fd > PROC_REPORT_FD)
		return fd;
	int moved = fcntl(fd, F_DUPFD_CLOEXEC, PROC_REPORT_FD + 1);
	close(fd);
	return moved;
}

/* The held child started in aah-hold (spec->hold_helper) by posix_spawn:
 * its session, stdio, signals and environment set by the spawn, its hold
 * pipe and error report on aah-hold's descriptors. */
static int spawn_in_helper(const struct proc_spec *spec, int in_fd, int out_fd, int err_fd,
			   int hold_r, int report_w, pid_t *child)
{
	size_t norphan = 0, nargv = 0;
	while (spec->hold_orphan_argv && spec->hold_orphan_argv[norphan])
		norphan++;
	while (spec->argv[nargv])
		nargv++;
	char count[24];
	snprintf(count, sizeof(count), "%zu", norphan);
	const char **argv = xcalloc(3 + norphan + nargv + 1, sizeof(*argv));
	argv[0] = spec->hold_helper;
	argv[1] = spec->cwd ? spec->cwd : "";
	argv[2] = count;
	if (norphan)
		memcpy(argv + 3, spec->hold_orphan_argv, norphan * sizeof(*argv));
	memcpy(argv + 3 + norphan, spec->argv, nargv * sizeof(*argv));

	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, dfl;
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE);
	sigaddset(&dfl, SIGTERM);
	sigaddset(&dfl, SIGINT);
	sigaddset(&dfl, SIGCHLD);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
					       (spec->new_session ? POSIX_SPAWN_SETSID : 0));
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &dfl);
	if (in_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
	if (out_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
	if (err_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
	posix_spawn_file_actions_adddup2(&fa, hold_r, PROC_HOLD_FD);
	posix_spawn_file_actions_adddup2(&fa, report_w, PROC_REPORT_FD);
	int err = posix_spawn(child, spec->hold_helper, &fa, &attr, (char *const *)argv,
			      (char *const *)(spec->env ? spec->env : (const char *const *)environ));
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	free(argv);
	if (err) {
		errno = err;
		return error_errno("cannot start '%s' through %s", spec->argv[0], spec->hold_helper);
	}
	return 0;
}

/* Fork and exec with the given stdio fds (-1 = inherit) into p. With hold,
 * the child waits for a byte on a pipe before exec: p->hold_fd receives
 * the pipe's write end and p->report_fd the read end of its error report. */
static void close_pipes(const int pfd[2], const int hold_pipe[2])
{
	for (int i = 0; i < 2; i++) {
		if (pfd[i] >= 0)
			close(pfd[i]);
		if (hold_pipe[i] >= 0)
			close(hold_pipe[i]);
	}
}

static int spawn(const struct proc_spec *spec, int in_fd, int out_fd, int err_fd,
		 struct proc *p, int hold)
{
	int pfd[2], hold_pipe[2] = { -1, -1 };
	if (!spec->argv || !spec->argv[0])
		BUG("proc: empty argv");
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return error_errno("cannot create a pipe");
	if (hold && pipe2(hold_pipe, O_CLOEXEC) < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return error_errno("cannot create a pipe");
	}
	pid_t child = -1;
	if (hold && spec->hold_helper) {
		pfd[1] = above_hold_fds(pfd[1]);
		hold_pipe[0] = above_hold_fds(hold_pipe[0]);
		if (pfd[1] < 0 || hold_pipe[0] < 0)
			error_errno("cannot create a pipe");
		else if (spawn_in_helper(spec, in_fd, out_fd, err_fd, hold_pipe[0], pfd[1],
					 &child) < 0)
			child = -1;
		if (child < 0) {
			p->failed_step = PROC_STEP_SETUP;
			close_pipes(pfd, hold_pipe);
			return -1;
		}
	} else {
		child = fork();
		if (child < 0) {
			close_pipes(pfd, hold_pipe);
			return error_errno("cannot fork to run '%s'", spec->argv[0]);
		}
	}
	if (!child) {
		close(pfd[0]);
		child_exec(spec, pfd[1], in_fd, out_fd, err_fd, hold_pipe[0], hold_pipe[1]);
	}
	close(pfd[1]);
	p->pid = child;
	if (hold) {
		/* The report is read at release: the child may still fail then. */
		close(hold_pipe[0]);
		p->hold_fd = hold_pipe[1];
		p->report_fd = pfd[0];
		return 0;
	}
	if (read_report(pfd[0], child, &p->status, &p->failed_step) < 0) {
		p->exited = 1;
		return -1;
	}
	return 0;
}

int proc_start(struct proc *p, const struct proc_spec *spec)
{
	int out_fd = -1, in_fd = -1;
	*p = (struct proc)PROC_INIT;
	if (spec->log_path) {
		out_fd = open(spec->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (out_fd < 0)
			return error_errno("cannot open log '%s'", spec->log_path);
	}
	in_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int r = spawn(spec, in_fd, out_fd, out_fd, p, spec->hold);
	if (out_fd >= 0)
		close(out_fd);
	if (in_fd >= 0)
		close(in_fd);
	if (r < 0)
		return -1;
	p->started = util_monotonic();
	return 0;
}

int proc_release_nowait(struct proc *p)
{
	if (p->hold_fd < 0)
		return 0;
	sigset_t old;
	sigpipe_hold(&old);
	ssize_t w = write(p->hold_fd, "g", 1);
	int werr = errno;
	sigpipe_restore(&old);
	close(p->hold_fd);
	p->hold_fd = -1;
	if (w == 1)
		return 0;
	/* It has gone: one that could not run has said why before it went. */
	if (proc_reported(p, 1) < 0)
		return -1;
	errno = werr;
	return error_errno("cannot release process %ld", (long)p->pid);
}

int proc_reported(struct proc *p, int wait)
{
	if (p->report_fd < 0)
		return 0;
	if (!wait) {
		struct pollfd pfd = { .fd = p->report_fd, .events = POLLIN };
		int n;
		do
			n = poll(&pfd, 1, 0);
		while (n < 0 && errno == EINTR);
		if (n == 0)
			return 1;
	}
	int fd = p->report_fd;
	p->report_fd = -1;
	if (read_report(fd, p->pid, &p->status, &p->failed_step) < 0) {
		p->exited = 1;
		return -1;
	}
	return 0;
}

int proc_release(struct proc *p)
{
	int r = proc_release_nowait(p);
	return r < 0 ? -1 : proc_reported(p, 1);
}

int proc_poll(struct proc *p)
{
	if (p->exited)
		return 1;
	int st;
	pid_t r = waitpid(p->pid, &st, WNOHANG);
	if (r == p->pid) {
		p->exited = 1;
		p->status = st;
		return 1;
	}
	if (r < 0 && errno == ECHILD) {
		/* Not our child any more (reaped elsewhere): treat as lost. */
		p->exited = 1;
		p->status = 255 << 8;
		return 1;
	}
	return 0;
}

int proc_wait(struct proc *p, double timeout)
{
	double until = util_monotonic() + timeout;
	struct timespec ts = { 0, 5 * 1000 * 1000 };
	for (;;) {
		if (proc_poll(p))
			return 1;
		if (timeout >= 0 && util_monotonic() >= until)
			return 0;
		nanosleep(&ts, NULL);
		if (ts.tv_nsec < 50 * 1000 * 1000)
			ts.tv_nsec += 5 * 1000 * 1000;
	}
}

int proc_signal(const struct proc *p, int sig)
{
	if (p->exited || p->pid <= 0)
		return 0;
	if (kill(-p->pid, sig) == 0)
		return 0;
	if (kill(p->pid, sig) == 0 || errno == ESRCH)
		return 0;
	return error_errno("cannot signal process %ld", (long)p->pid);
}

void proc_terminate(struct proc *p, double grace)
{
	if (p->hold_fd >= 0) {   /* never released: let it exit unexecuted */
		close(p->hold_fd);
		p->hold_fd = -1;
	}
	if (p->report_fd >= 0) {
		close(p->report_fd);
		p->report_fd = -1;
	}
	if (p->exited)
		return;
	proc_signal(p, SIGTERM);
	if (proc_wait(p, grace))
		goto reap_group;
	proc_signal(p, SIGKILL);
	proc_wait(p, -1);
reap_group:
	/* Leftover members of the group get the same end. */
	kill(-p->pid, SIGKILL);
}

int proc_exit_code(const struct proc *p)
{
	if (WIFEXITED(p->status))
		return WEXITSTATUS(p->status);
	if (WIFSIGNALED(p->status))
		return 128 + WTERMSIG(p->status);
	return 255;
}

static void drain(int *fd, struct strbuf *sb)
{
	char buf[8192];
	ssize_t n = read(*fd, buf, sizeof(buf));
	if (n > 0) {
		if (sb)
			strbuf_add(sb, buf, (size_t)n);
		return;
	}
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	close(*fd);
	*fd = -1;
}

static int run_capture(const char *const *argv, const char *const *env, const char *input,
		       double timeout, struct strbuf *out, struct strbuf *err, int *exit_code);

/* SIGPIPE is held back around the run: a child that exits before reading
 * its stdin must not kill this process. */
int proc_run_capture(const char *const *argv, const char *const *env, const char *input,
		     double timeout, struct strbuf *out, struct strbuf *err, int *exit_code)
{
	sigset_t old;
	sigpipe_hold(&old);
	int r = run_capture(argv, env, input, timeout, out, err, exit_code);
	sigpipe_restore(&old);
	return r;
}

static int run_capture(const char *const *argv, const char *const *env, const char *input,
		       double timeout, struct strbuf *out, struct strbuf *err, int *exit_code)
{
	int in[2], o[2], e[2];
	struct proc_spec spec = { .argv = argv, .env = env, .new_session = 1 };
	struct proc p = PROC_INIT;
	if (pipe2(in, O_CLOEXEC) < 0)
		return error_errno("cannot create a pipe");
	if (pipe2(o, O_CLOEXEC) < 0 || pipe2(e, O_CLOEXEC) < 0)
		return error_errno("cannot create a pipe");
	int r = spawn(&spec, in[0], o[1], e[1], &p, 0);
	close(in[0]);
	close(o[1]);
	close(e[1]);
	if (r < 0) {
		close(in[1]);
		close(o[0]);
		close(e[0]);
		return -1;
	}
	p.started = util_monotonic();
	size_t in_len = input ? strlen(input) : 0, in_off = 0;
	int in_fd = in[1], out_fd = o[0], err_fd = e[0];
	if (!in_len) {
		close(in_fd);
		in_fd = -1;
	} else {
		fcntl(in_fd, F_SETFL, O_NONBLOCK);
	}
	int timed_out = 0;
	while (out_fd >= 0 || err_fd >= 0) {
		struct pollfd fds[3];
		int nf = 0;
		if (out_fd >= 0)
			fds[nf++] = (struct pollfd){ .fd = out_fd, .events = POLLIN };
		if (err_fd >= 0)
			fds[nf++] = (struct pollfd){ .fd = err_fd, .events = POLLIN };
		if (in_fd >= 0)
			fds[nf++] = (struct pollfd){ .fd = in_fd, .events = POLLOUT };
		int wait_ms = 200;
		if (timeout > 0) {
			double left = p.started + timeout - util_monotonic();
			if (left <= 0) {
				timed_out = 1;
				break;
			}
			if (left * 1000 < wait_ms)
				wait_ms = (int)(left * 1000) + 1;
		}
		if (poll(fds, (nfds_t)nf, wait_ms) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < nf; i++) {
			if (!fds[i].revents)
				continue;
			if (fds[i].fd == out_fd)
				drain(&out_fd, out);
			else if (fds[i].fd == err_fd)
				drain(&err_fd, err);
			else if (fds[i].fd == in_fd) {
				ssize_t w = write(in_fd, input + in_off, in_len - in_off);
				if (w > 0)
					in_off += (size_t)w;
				if ((w < 0 && errno != EAGAIN && errno != EINTR) || in_off == in_len) {
					close(in_fd);
					in_fd = -1;
				}
			}
		}
	}
	if (in_fd >= 0)
		close(in_fd);
	if (out_fd >= 0)
		close(out_fd);
	if (err_fd >= 0)
		close(err_fd);
	if (timed_out) {
		proc_terminate(&p, 2);
		*exit_code = PROC_TIMEOUT_STATUS;
		return 0;
	}
	double left = timeout > 0 ? p.started + timeout - util_monotonic() : -1;
	if (!proc_wait(&p, timeout > 0 ? (left > 0 ? left : 0) : -1)) {
		proc_terminate(&p, 2);
		*exit_code = PROC_TIMEOUT_STATUS;
		return 0;
	}
	*exit_code = proc_exit_code(&p);
	return 0;
}
