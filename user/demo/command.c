// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * demo_flush: "-- COMMAND [ARG...]", run beside the trace. It is started
 * after the events are enabled, the run lasts until it exits (unless
 * --duration ends it first), and its exit status becomes demo_flush's,
 * as a shell would report it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "demo.h"

/*
 * Run the command; if it cannot be run, say so and exit now as a shell
 * would (127: not found, 126: found but not runnable). The child reports
 * a failed exec through a close-on-exec pipe.
 */
pid_t demo_start_command(char **argv)
{
	int p[2], err = 0;
	ssize_t n;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		die("pipe: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		close(p[0]);
		execvp(argv[0], argv);
		err = errno;
		if (write(p[1], &err, sizeof(err)) < 0) {
			/* the parent then sees EOF and the exit status */
		}
		_exit(127);
	}
	close(p[1]);
	do
		n = read(p[0], &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	close(p[0]);
	if (n == (ssize_t)sizeof(err)) {
		waitpid(pid, NULL, 0);
		fflush(stdout);
		fprintf(stderr, "demo_flush: cannot run '%s': %s\n", argv[0],
			strerror(err));
		exit(err == ENOENT ? 127 : 126);
	}
	return pid;
}

int demo_exit_status(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return 1;
}
