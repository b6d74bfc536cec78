/* hold_main.c: aah-hold, the small program a held child waits in.
 *
 *   aah-hold CWD N ORPHAN_ARGV(N words) PROGRAM [ARGS...]
 *
 * The runner spawns it (posix_spawn: nothing of the runner's memory is
 * copied, unlike a fork) with its session, stdio and environment set, the
 * hold pipe's read end on PROC_HOLD_FD and the error report's write end on
 * PROC_REPORT_FD. It enters CWD ("": stays), waits for the release byte and
 * becomes PROGRAM; when the pipe closes without the byte (the runner died
 * before the release) it becomes ORPHAN_ARGV followed by PROGRAM's argv
 * (the runner's `held-orphan`, which runs the program if the journal has
 * its launch), or exits 125 unexecuted when N is 0. Failures before the
 * program runs are reported as a forked child reports them (proc.c). */
#include "runner/backend/proc_report.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HOLD_UNEXECUTED 125

int main(int argc, char **argv)
{
	char *end;
	long n = argc > 3 ? strtol(argv[2], &end, 10) : -1;
	if (argc < 4 || *end || n < 0 || n > argc - 4) {
		fprintf(stderr, "usage: aah-hold CWD N ORPHAN_ARGV... PROGRAM [ARGS...]\n"
				"(aah-runner's local backend starts it; it is not for use by hand)\n");
		return 2;
	}
	const char *cwd = argv[1];
	char **orphan = argv + 3, **prog = argv + 3 + n;
	if (fcntl(PROC_HOLD_FD, F_SETFD, FD_CLOEXEC) < 0 ||
	    fcntl(PROC_REPORT_FD, F_SETFD, FD_CLOEXEC) < 0)
		proc_report_fail(PROC_REPORT_FD, PROC_STEP_SETUP, errno, cwd, prog[0]);
	if (*cwd && chdir(cwd) < 0)
		proc_report_fail(PROC_REPORT_FD, PROC_STEP_CWD, errno, cwd, prog[0]);
	char go;
	ssize_t got;
	do
		got = read(PROC_HOLD_FD, &go, 1);
	while (got < 0 && errno == EINTR);
	if (got == 1) {
		execvp(prog[0], prog);
		proc_report_fail(PROC_REPORT_FD, PROC_STEP_EXEC, errno, cwd, prog[0]);
	}
	if (got < 0 || n == 0)
		return HOLD_UNEXECUTED;
	/* Orphaned: ORPHAN_ARGV then PROGRAM's argv, in place (argv ends in NULL). */
	memmove(argv, orphan, (size_t)(argc - 3) * sizeof(*argv));
	argv[argc - 3] = NULL;
	execv(argv[0], argv);
	fprintf(stderr, "aah-hold: cannot run '%s': %s\n", argv[0], strerror(errno));
	return HOLD_UNEXECUTED;
}
