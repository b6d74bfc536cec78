/* proc.h: child processes from argv and env vectors (never a shell
 * string): start in a process group, log to a file, poll, wait with a
 * timeout, kill the group, or run to completion capturing output. */
#ifndef AAH_PROC_H
#define AAH_PROC_H

#include <sys/types.h>

#include "runner/backend/proc_report.h" /* enum proc_step */
#include "strbuf.h"

struct proc_spec {
	const char *const *argv;   /* argv[0] is looked up in PATH */
	const char *const *env;    /* the whole environment; NULL = inherit */
	const char *cwd;           /* NULL = inherit */
	const char *log_path;      /* stdout+stderr appended here; NULL = inherit */
	int new_session;           /* setsid(): own session and process group */
	int hold;                  /* the child waits for proc_release() before exec */
	/* With hold: called in the child when this process died before the
	 * release; nonzero = go on to exec anyway, 0 = exit unexecuted. */
	int (*hold_orphaned)(void *arg);
	void *hold_arg;
	/* With hold: aah-hold's path. The child is spawned into it (no copy of
	 * this process's memory, as a fork makes) and waits there; NULL: a
	 * forked child waits. With it, hold_orphaned is not called: the
	 * orphaned child runs hold_orphan_argv with argv after it (which runs
	 * the program or exits), or exits unexecuted when that is NULL. */
	const char *hold_helper;
	const char *const *hold_orphan_argv;
};

struct proc {
	pid_t pid;                 /* also the process group id with new_session */
	int exited;                /* 1 once reaped */
	int status;                /* raw wait status once exited */
	double started;            /* util_monotonic() at start */
	int hold_fd;               /* write end of the hold pipe, or -1 */
	int report_fd;             /* held: read end of the child's error report, or -1 */
	enum proc_step failed_step; /* why proc_start or proc_release failed */
};

#define PROC_INIT { 0, 0, 0, 0, -1, -1, PROC_STEP_NONE }

/* The exit code proc_run_capture reports for a child it killed at its
 * timeout (timeout(1)'s code, so a shell reader sees the usual value). */
#define PROC_TIMEOUT_STATUS 124

/* Start a child. Fails (with the reason, and p->failed_step) when the
 * program cannot be executed, not only when fork fails; a held child says
 * so at proc_release. */
int proc_start(struct proc *p, const struct proc_spec *spec);
/* Let a held child go on to exec, and wait until it has: fails with the
 * child's reason ("cannot run '...': ...", "cannot enter directory '...':
 * ...") and p->failed_step when it could not; the child is then reaped. */
int proc_release(struct proc *p);
/* proc_release without the wait: the child's word on its exec is left for
 * proc_reported (fails only when the child had already gone, with why). */
int proc_release_nowait(struct proc *p);
/* A released child's word on its exec: 0 it ran (or was read before), -1
 * it could not (as proc_release fails: the reason, p->failed_step, the
 * child reaped), 1 not said yet (only without wait; with wait: until it
 * has). */
int proc_reported(struct proc *p, int wait);
/* Non-blocking: 1 if the child has exited (status set), 0 if running. */
int proc_poll(struct proc *p);
/* Wait up to timeout seconds (< 0: forever): 1 exited, 0 still running. */
int proc_wait(struct proc *p, double timeout);
/* Signal the child's whole process group (or the child alone). */
int proc_signal(const struct proc *p, int sig);
/* SIGTERM the group, wait up to grace seconds, then SIGKILL; reaps it. */
void proc_terminate(struct proc *p, double grace);
/* Exit code (0..255), or 128+signal for a signalled child. */
int proc_exit_code(const struct proc *p);

/* Run to completion with stdin from `input` (may be NULL), capturing stdout
 * and stderr (either may be NULL to discard), within timeout seconds (<= 0:
 * none). *exit_code is the child's (PROC_TIMEOUT_STATUS on timeout). A
 * child that exits before reading all its input makes the write fail; it
 * does not raise SIGPIPE here. Returns -1 only when the program could not
 * be run at all. Backends run their tools through backend_run_tool. */
int proc_run_capture(const char *const *argv, const char *const *env, const char *input,
		     double timeout, struct strbuf *out, struct strbuf *err, int *exit_code);

#endif
