// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * fork() while another thread holds a clock's lock (fork_guard.c): one
 * thread takes horizons in a loop (hz_lock at every call; set_lock too
 * for CLOCK_REALTIME, whose estimate follows clock sets), the main
 * thread forks FORKS children, and each child takes a horizon and reads
 * the clock. A child that has not exited within CHILD_WAIT_S is counted
 * as deadlocked (it inherited a lock held by a thread it does not have)
 * and killed. Before fork_guard.c children deadlocked here; the check
 * asserts none does.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "libperfclock.h"
#include "tap.h"

#define FORKS		150
#define CHILD_WAIT_S	5	/* a liveness bound, not a timing target */

static int stop;

static void *spin(void *arg)
{
	struct perfclock *clk = arg;
	uint64_t h;

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		perfclock_horizon(clk, &h);
	return NULL;
}

/* The child's exit status, or -1 if it had to be killed. */
static int wait_child(pid_t p)
{
	int status, i;

	for (i = 0; i < CHILD_WAIT_S * 1000; i++) {
		if (waitpid(p, &status, WNOHANG) == p)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
		usleep(1000);
	}
	kill(p, SIGKILL);
	waitpid(p, &status, 0);
	return -1;
}

static void fork_check(int clockid, const char *name)
{
	struct perfclock *clk = perfclock_open_clockid(clockid);
	struct perfclock_clock_info info;
	int i, hung = 0, failed = 0, r;
	pthread_t t;
	uint64_t h, ns;
	pid_t p;

	if (!clk || perfclock_get_info(clk, &info)) {
		tap_ok(0, "fork: %s opens", name);
		return;
	}
	__atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
	if (pthread_create(&t, NULL, spin, clk)) {
		tap_ok(0, "fork: %s: thread", name);
		perfclock_close(clk);
		return;
	}
	for (i = 0; i < FORKS && hung < 3; i++) {
		fflush(stdout);
		p = fork();
		if (p == 0)
			_exit(perfclock_horizon(clk, &h) || perfclock_read(clk, &ns));
		if (p < 0) {
			failed++;
			continue;
		}
		r = wait_child(p);
		if (r < 0)
			hung++;
		else if (r)
			failed++;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	tap_ok(hung == 0 && failed == 0,
	       "fork: %s (%s horizon): %d children forked while another thread takes horizons in a loop each take a horizon and read the clock (%d deadlocked, %d failed)",
	       name, perfclock_horizon_name(&info), i, hung, failed);
	perfclock_close(clk);
}

int main(void)
{
	fork_check(CLOCK_REALTIME, "CLOCK_REALTIME");
	fork_check(CLOCK_MONOTONIC, "CLOCK_MONOTONIC");
	return tap_exit();
}
