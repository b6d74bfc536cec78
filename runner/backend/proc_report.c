/* proc_report.c: a child's word on why it could not become its program. */
#include "runner/backend/proc_report.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void proc_report_fail(int fd, enum proc_step step, int err, const char *cwd, const char *prog)
{
	struct proc_report rep = { .step = step };
	if (step == PROC_STEP_CWD)
		snprintf(rep.msg, sizeof(rep.msg), "cannot enter directory '%s': %s", cwd,
			 strerror(err));
	else if (step == PROC_STEP_EXEC && err == ENOENT && !strchr(prog, '/'))
		snprintf(rep.msg, sizeof(rep.msg), "cannot run '%s': not found in PATH", prog);
	else
		snprintf(rep.msg, sizeof(rep.msg), "cannot %s '%s': %s",
			 step == PROC_STEP_EXEC ? "run" : "set up the process for", prog,
			 strerror(err));
	signal(SIGPIPE, SIG_IGN);
	if (write(fd, &rep, sizeof(rep)) != (ssize_t)sizeof(rep)) {
		char line[sizeof(rep.msg) + 16];
		int n = snprintf(line, sizeof(line), "%s\n", rep.msg);
		ssize_t w = write(2, line, (size_t)n);
		(void)w;
	}
	_exit(127);
}
