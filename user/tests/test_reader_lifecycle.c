// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Part of test_reader (see test_reader.c, which has main() and the load
 * these share through test_reader.h): the threaded reader's life around
 * the load, on this host's real perf events.
 *  - Which horizon each ring gets: pid 0 (one task), the GRACE_PERIOD
 *    flag, CLOCK_REALTIME (an estimate).
 *  - Bad configs (no deliver callback, an unknown flag, reserved not
 *    zero, NULL) are EINVAL and leave nothing open or running.
 *  - A fork() child (-ECHILD, the parent's reader goes on); stop while
 *    the threads run (joined, nothing left open); free of a running
 *    reader stops it first.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "libperfclock.h"
#include "perfclock_reader.h"
#include "proc_task.h"
#include "tap.h"
#include "test_reader.h"

static int count_fds(void)
{
	int n = 0, fd;

	for (fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) != -1;
	return n;
}

/*
 * nr_threads() once it has come down to want, or after 5 s: a joined
 * thread's tid is cleared (what pthread_join() waits for) before the
 * kernel releases the task, so /proc/self/task can list it a little
 * longer (seen in a TCG guest).
 */
static int threads_settle(int want)
{
	int n, i;

	for (i = 0; i < 500; i++) {
		n = nr_threads();
		if (n <= want)
			return n;
		usleep(10000);
	}
	return nr_threads();
}

void kinds(struct perfclock *clk)
{
	struct perfclock_clock_info info;
	struct perfclock_reader_ring_stats rs;
	uint32_t want;
	struct perfclock_reader *r;
	struct perfclock_evring *er;
	struct perfclock *rt;
	struct sink s;

	er = ev_open(clk, 0, 8);
	r = er ? rd_start(clk, er, &s, 0) : NULL;
	tap_ok(r && perfclock_reader_get_ring_stats(r, 0, &rs) == 0 &&
	       rs.horizon == PERFCLOCK_READER_HORIZON_GRACE_PERIOD,
	       "reader: rings of one task (pid 0) are on the grace-period horizon");
	perfclock_reader_free(r);
	perfclock_evring_close(er);
	er = ev_open(clk, -1, 8);
	r = er ? rd_start(clk, er, &s, PERFCLOCK_READER_GRACE_PERIOD) : NULL;
	tap_ok(r && perfclock_reader_get_ring_stats(r, 0, &rs) == 0 &&
	       rs.horizon == PERFCLOCK_READER_HORIZON_GRACE_PERIOD &&
	       perfclock_reader_get_ring_stats(r, 4096, &rs) == -EINVAL,
	       "reader: PERFCLOCK_READER_GRACE_PERIOD puts pid -1 rings on the grace period too");
	perfclock_reader_free(r);
	perfclock_evring_close(er);

	/*
	 * CLOCK_REALTIME: no per-CPU horizon; its perfclock_horizon() is
	 * the module's where one is loaded (exact except the NTP slope:
	 * the same proof, less a margin), else an estimate.
	 */
	rt = perfclock_open_clockid(CLOCK_REALTIME);
	memset(&info, 0, sizeof(info));
	if (rt)
		perfclock_get_info(rt, &info);
	want = (info.flags & (PERFCLOCK_CLOCK_HORIZON_EXACT |
			      PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE)) ?
	       PERFCLOCK_READER_HORIZON_GRACE_PERIOD :
	       PERFCLOCK_READER_HORIZON_ESTIMATE;
	er = rt ? ev_open(rt, -1, 8) : NULL;
	r = er ? rd_start(rt, er, &s, 0) : NULL;
	tap_ok(r && perfclock_reader_get_ring_stats(r, 0, &rs) == 0 &&
	       rs.horizon == want &&
	       !strcmp(perfclock_reader_horizon_name(
			PERFCLOCK_READER_HORIZON_ESTIMATE), "estimate") &&
	       !strcmp(perfclock_reader_horizon_name(
			PERFCLOCK_READER_HORIZON_PERCPU), "per-CPU") &&
	       !strcmp(perfclock_reader_horizon_name(
			PERFCLOCK_READER_HORIZON_GRACE_PERIOD), "grace period") &&
	       !strcmp(perfclock_reader_horizon_name(0), "unknown"),
	       "reader: CLOCK_REALTIME (no per-CPU horizon): %s, as perfclock_horizon() is %s",
	       perfclock_reader_horizon_name(want), perfclock_horizon_name(&info));
	perfclock_reader_free(r);
	perfclock_evring_close(er);
	perfclock_close(rt);
}

void lifecycle(struct perfclock *clk, int ncpu)
{
	struct perfclock_reader_config rc;
	struct perfclock_reader_stats st;
	struct perfclock_reader *r;
	struct perfclock_evring *er;
	uint64_t before;
	int fds, threads, status = -1, i, left;
	int64_t ret, ret2;
	struct sink s;
	pid_t p;

	er = ev_open(clk, -1, 64);
	if (!tap_ok(er != NULL, "reader: rings for the lifecycle checks"))
		return;
	fds = count_fds();
	threads = nr_threads();
	perfclock_reader_config_init(&rc);
	errno = 0;
	tap_ok(!perfclock_reader_start(clk, er, &rc) && errno == EINVAL,
	       "reader: no deliver callback is EINVAL");
	rc.deliver = deliver;
	rc.arg = &s;
	rc.flags = 1U << 7;
	errno = 0;
	tap_ok(!perfclock_reader_start(clk, er, &rc) && errno == EINVAL,
	       "reader: an unknown flag is EINVAL");
	rc.flags = 0;
	rc.reserved[2] = 1;
	errno = 0;
	tap_ok(!perfclock_reader_start(clk, er, &rc) && errno == EINVAL &&
	       count_fds() == fds && threads_settle(threads) == threads,
	       "reader: reserved not zero is EINVAL; nothing left open or running");
	rc.reserved[2] = 0;
	{
		/* Rings stamped with another clock than the reader's. */
		struct perfclock_clock_info ci;
		struct perfclock *other;

		memset(&ci, 0, sizeof(ci));
		perfclock_get_info(clk, &ci);
		other = perfclock_open_clockid(ci.clockid == CLOCK_MONOTONIC_RAW ?
					       CLOCK_MONOTONIC : CLOCK_MONOTONIC_RAW);
		errno = 0;
		tap_ok(other && !perfclock_reader_start(other, er, &rc) &&
		       errno == EINVAL &&
		       threads_settle(threads) == threads,
		       "reader: a clock other than the rings' is EINVAL; nothing left running");
		perfclock_close(other);
	}
	tap_ok(perfclock_reader_deliver(NULL, 0) == -EINVAL &&
	       perfclock_reader_stop(NULL) == -EINVAL &&
	       perfclock_reader_get_stats(NULL, &st) == -EINVAL,
	       "reader: NULL is EINVAL");

	/* fork() while the threads run. */
	r = rd_start(clk, er, &s, 0);
	perfclock_evring_enable(er);
	load_start(ncpu);
	for (i = 0; i < 20; i++)
		perfclock_reader_deliver(r, 5);
	p = fork();
	if (p == 0) {
		int ok = perfclock_reader_deliver(r, 0) == -ECHILD &&
			 perfclock_reader_stop(r) == -ECHILD;

		perfclock_reader_free(r);
		_exit(ok ? 0 : 1);
	}
	if (p > 0)
		waitpid(p, &status, 0);
	perfclock_reader_get_stats(r, &st);
	before = st.records;
	for (i = 0; i < 20; i++)
		perfclock_reader_deliver(r, 5);
	perfclock_reader_get_stats(r, &st);
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	       st.records > before,
	       "reader: in a fork() child deliver and stop are ECHILD and free returns; the parent's reader goes on (%llu -> %llu records)",
	       (unsigned long long)before, (unsigned long long)st.records);

	/* Stop while the threads run under load. */
	ret = perfclock_reader_stop(r);
	ret2 = perfclock_reader_stop(r);
	left = threads_settle(threads);
	tap_ok(ret >= 0 && ret2 == 0 && left == threads,
	       "reader: stop under load joins every thread (%d left, %d before); a second stop does nothing (%lld, %lld)",
	       left, threads, (long long)ret, (long long)ret2);
	load_stop();
	perfclock_reader_get_stats(r, &st);
	tap_ok(st.queue.queued == 0 && st.queue.below_horizon == 0,
	       "reader: stop delivered everything (0 queued), nothing below a limit");
	perfclock_reader_free(r);
	tap_ok(count_fds() == fds, "reader: free closes what start opened");
	/* free without stop: stops first. */
	r = rd_start(clk, er, &s, 0);
	perfclock_reader_deliver(r, 5);
	perfclock_reader_free(r);
	left = threads_settle(threads);
	tap_ok(left == threads && count_fds() == fds,
	       "reader: free of a running reader stops and joins it (%d threads left, %d before)",
	       left, threads);
	perfclock_evring_close(er);
}
