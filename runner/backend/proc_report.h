/* proc_report.h: how a child that cannot become its program says why,
 * shared by the forked child (proc.c) and aah-hold (hold_main.c), the
 * small program a held child waits in when the runner spawns it. */
#ifndef AAH_PROC_REPORT_H
#define AAH_PROC_REPORT_H

/* The step at which a child could not become the program. */
enum proc_step {
	PROC_STEP_NONE,            /* it ran (or has not been released yet) */
	PROC_STEP_SETUP,           /* its session or stdio */
	PROC_STEP_CWD,             /* spec->cwd */
	PROC_STEP_EXEC,            /* argv[0] */
};

/* What a child that cannot become the program writes on the error pipe,
 * in one write (smaller than PIPE_BUF, so whole or not at all). */
struct proc_report {
	int step;                  /* enum proc_step */
	char msg[512];             /* "cannot run '...': ..." */
};

/* aah-hold's descriptors: it waits for a byte on PROC_HOLD_FD and reports
 * on PROC_REPORT_FD (both close-on-exec once it runs). */
#define PROC_HOLD_FD 3
#define PROC_REPORT_FD 4

/* Report why the child cannot become prog (cwd: the directory it could
 * not enter at PROC_STEP_CWD) on fd and exit 127. When nobody reads the
 * pipe any more (the runner died while the child was held) the reason
 * goes to stderr, the log, instead of a silent SIGPIPE. */
_Noreturn void proc_report_fail(int fd, enum proc_step step, int err, const char *cwd,
				const char *prog);

#endif
