// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * horizon_membarrier.c and the choice of horizon (horizon.c), on this
 * host's kernel for real: no module here, membarrier(MEMBARRIER_CMD_GLOBAL)
 * is. Which clock gets which horizon; the horizon is below every later
 * read, grows, and moves by itself (the helper thread); the first call
 * proves one; horizon_sync; an error of the thread comes out as an
 * error; fork() gets the child a thread of its own; close stops it; and
 * the test-only switches the guest tests rely on work. Where the kernel
 * has no barrier (nohz_full, a seccomp filter) each check says SKIP and
 * why.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "horizon_membarrier.h"
#include "perfclock_page.h"
#include "proc_task.h"
#include "tap.h"
#include "unit.h"

#define MOVE_WAIT_NS	10000000000ULL	/* 10 s: a liveness bound, not a target */

static uint64_t now_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int info_of(struct perfclock *c, struct perfclock_clock_info *info)
{
	return c ? perfclock_get_info(c, info) : -EINVAL;
}

/* Wait until the horizon passes `than` without the caller proving one. */
static int horizon_moves(struct perfclock *c, uint64_t than, uint64_t *h)
{
	uint64_t end = now_ns(CLOCK_MONOTONIC) + MOVE_WAIT_NS;

	do {
		if (perfclock_horizon(c, h))
			return 0;
		if (*h > than)
			return 1;
		usleep(1000);
	} while (now_ns(CLOCK_MONOTONIC) < end);
	return 0;
}

/* The choice: which clock gets the membarrier horizon, which the estimate. */
static void test_choice(void)
{
	/*
	 * exact: 2 exact, 1 exact except the NTP slope (ntp_slope.c: EXACT
	 * clear, NTP_SLOPE set; NTP_SLEW too while an ADJ_TICK slew is on,
	 * named an estimate then), 0 the estimate.
	 */
	static const struct { int id; const char *name; int exact; } ids[] = {
		{ CLOCK_MONOTONIC, "CLOCK_MONOTONIC", 1 },
		{ CLOCK_MONOTONIC_RAW, "CLOCK_MONOTONIC_RAW", 2 },
		{ CLOCK_BOOTTIME, "CLOCK_BOOTTIME", 1 },
		{ CLOCK_REALTIME, "CLOCK_REALTIME (steps when set)", 0 },
		{ CLOCK_TAI, "CLOCK_TAI (steps when set)", 0 },
	};
	struct perfclock_clock_info info;
	struct perfclock *c;
	const char *want;
	size_t i;
	int ok;

	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		c = perfclock_open_clockid(ids[i].id);
		ok = info_of(c, &info) == 0;
		want = (info.flags & PERFCLOCK_CLOCK_HORIZON_NTP_SLEW) ?
		       "estimate: NTP slew (membarrier)" :
		       "exact except NTP slope (membarrier)";
		if (ids[i].exact == 2)
			tap_ok(ok && (info.flags & PERFCLOCK_CLOCK_HORIZON_EXACT) &&
			       !(info.flags & (PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE |
					       PERFCLOCK_CLOCK_HORIZON_NTP_SLEW)) &&
			       (info.flags & PERFCLOCK_CLOCK_HORIZON_MEMBARRIER) &&
			       info.inflight_estimate_ns == 0 &&
			       !strcmp(perfclock_horizon_name(&info),
				       "exact (membarrier)"),
			       "membarrier: %s without the module: exact, from membarrier (\"%s\", age %llu ns)",
			       ids[i].name, ok ? perfclock_horizon_name(&info) : "-",
			       ok ? (unsigned long long)info.horizon_age_ns : 0ULL);
		else if (ids[i].exact == 1)
			tap_ok(ok && !(info.flags & PERFCLOCK_CLOCK_HORIZON_EXACT) &&
			       (info.flags & PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE) &&
			       (info.flags & PERFCLOCK_CLOCK_HORIZON_MEMBARRIER) &&
			       info.inflight_estimate_ns == 0 &&
			       !strcmp(perfclock_horizon_name(&info), want),
			       "membarrier: %s without the module: from membarrier, exact except the NTP slope (\"%s\", age %llu ns)",
			       ids[i].name, ok ? perfclock_horizon_name(&info) : "-",
			       ok ? (unsigned long long)info.horizon_age_ns : 0ULL);
		else
			tap_ok(ok && !(info.flags & PERFCLOCK_CLOCK_HORIZON_EXACT) &&
			       !(info.flags & PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE) &&
			       !(info.flags & PERFCLOCK_CLOCK_HORIZON_MEMBARRIER) &&
			       !strcmp(perfclock_horizon_name(&info), "estimate"),
			       "membarrier: %s without the module: the estimate, not exact",
			       ids[i].name);
		perfclock_close(c);
	}

	/* No barrier (as on nohz_full): the estimate, flagged. */
	perfclock_mb__test_set_mode(PERFCLOCK_MB_TEST_UNAVAILABLE);
	c = perfclock_open_clockid(CLOCK_MONOTONIC);
	perfclock_mb__test_set_mode(PERFCLOCK_MB_TEST_NORMAL);
	ok = info_of(c, &info) == 0;
	tap_ok(ok && !(info.flags & PERFCLOCK_CLOCK_HORIZON_EXACT) &&
	       !(info.flags & PERFCLOCK_CLOCK_HORIZON_MEMBARRIER) &&
	       info.inflight_estimate_ns == PERFCLOCK_HORIZON_ESTIMATE_INFLIGHT_NS,
	       "membarrier: CLOCK_MONOTONIC on a kernel without the barrier: the estimate");
	perfclock_close(c);

	tap_ok(!strcmp(perfclock_horizon_name(NULL), "unknown"),
	       "membarrier: perfclock_horizon_name(NULL) is \"unknown\"");
	memset(&info, 0, sizeof(info));
	info.flags = PERFCLOCK_CLOCK_HORIZON_EXACT | PERFCLOCK_CLOCK_HORIZON_PAGE;
	ok = !strcmp(perfclock_horizon_name(&info), "exact (module page)");
	info.flags = PERFCLOCK_CLOCK_HORIZON_EXACT;
	ok = ok && !strcmp(perfclock_horizon_name(&info), "exact (module ioctl)");
	tap_ok(ok, "membarrier: perfclock_horizon_name() names the module's page and ioctl");
}

/*
 * The horizon itself, on CLOCK_MONOTONIC_RAW: the clock it is exact for
 * (CLOCK_MONOTONIC's is the same less PERFCLOCK_NTP_SLOPE_MARGIN_NS:
 * unit_ntp_slope.c).
 */
static void test_horizon(void)
{
	uint64_t h, h2, prev = 0, after, before, hs;
	int i, ok = 1, below = 0, threads0, threads1, threads2;
	struct perfclock *c;

	threads0 = nr_threads();
	c = perfclock_open_clockid(CLOCK_MONOTONIC_RAW);
	if (!tap_ok(c != NULL, "membarrier: CLOCK_MONOTONIC_RAW opens"))
		return;
	threads1 = nr_threads();
	before = now_ns(CLOCK_MONOTONIC_RAW);
	ok = perfclock_horizon(c, &h) == 0;
	after = now_ns(CLOCK_MONOTONIC_RAW);
	threads2 = nr_threads();
	/* The first call proved one here: a read taken during the call. */
	tap_ok(ok && before <= h && h <= after && threads1 == threads0 &&
	       threads2 == threads0 + 1,
	       "membarrier: no thread at open; the first horizon proves one on the caller's thread (%llu ns in the call) and starts the helper thread (%d -> %d -> %d threads)",
	       (unsigned long long)(after - before), threads0, threads1,
	       threads2);

	for (i = 0; i < 2000 && ok; i++) {
		ok = perfclock_horizon(c, &h) == 0;
		after = now_ns(CLOCK_MONOTONIC_RAW);
		if (h > after || h < prev)
			below++;
		prev = h;
	}
	tap_ok(ok && below == 0,
	       "membarrier: 2000 horizons, each at or below a later read, never decreasing (%d not)",
	       below);
	ok = horizon_moves(c, h, &h2);
	tap_ok(ok, "membarrier: the helper thread moves the horizon (%llu ns later)",
	       ok ? (unsigned long long)(h2 - h) : 0ULL);

	before = now_ns(CLOCK_MONOTONIC_RAW);
	ok = perfclock_horizon_sync(c, 0, &hs) == 0;
	after = now_ns(CLOCK_MONOTONIC_RAW);
	tap_ok(ok && before <= hs && hs <= after && hs >= h2,
	       "membarrier: horizon_sync is a read taken during the call, after the barriers (%llu ns in the call)",
	       (unsigned long long)(after - before));
	tap_ok(perfclock_horizon(c, &h) == 0 && h >= hs,
	       "membarrier: after horizon_sync, perfclock_horizon() is not below it");
	tap_ok(perfclock_horizon_sync(c, PERFCLOCK_HORIZON_SYNC_EXPEDITED, &h) == -EOPNOTSUPP &&
	       perfclock_horizon_sync(c, 0x80, &h) == -EINVAL,
	       "membarrier: horizon_sync EXPEDITED is -EOPNOTSUPP (no expedited grace period from user space), unknown flags -EINVAL");
	perfclock_close(c);
	tap_ok(nr_threads() == threads0,
	       "membarrier: close stops and joins the helper thread (%d threads)",
	       nr_threads());
}

/*
 * The signals blocked by this process's thread named name, from
 * /proc/self/task/TID/status (SigBlk), in *blk: 1, or 0 if there is none.
 */
static int thread_sigblk(const char *name, unsigned long long *blk)
{
	pid_t tid = thread_named(name);
	char path[64], line[256];
	int found = 0;
	FILE *f;

	if (tid < 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "SigBlk:", 7)) {
			*blk = strtoull(line + 7, NULL, 16);
			found = 1;
		}
	}
	if (f)
		fclose(f);
	return found;
}

/*
 * The helper thread blocks every signal, whatever the caller's mask: a
 * tool that takes its signals with sigwait() or signalfd() blocks them
 * in its own threads only, and a thread that does not would take them.
 * Signals 1-31 but SIGKILL and SIGSTOP (which cannot be blocked).
 */
static void test_helper_signals(void)
{
	const unsigned long long std = 0x7fffffffULL &
				       ~(1ULL << (SIGKILL - 1)) &
				       ~(1ULL << (SIGSTOP - 1));
	struct perfclock *c = perfclock_open_clockid(CLOCK_MONOTONIC_RAW);
	sigset_t none, saved;
	unsigned long long blk = 0;
	uint64_t h;
	int found;

	/* The helper starts at the first horizon, with nothing blocked here. */
	sigemptyset(&none);
	pthread_sigmask(SIG_SETMASK, &none, &saved);
	found = c && perfclock_horizon(c, &h) == 0 &&
		thread_sigblk("perfclock-mb", &blk);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	tap_ok(found && (blk & std) == std,
	       "membarrier: the helper thread (perfclock-mb) blocks every signal, the caller blocking none (SigBlk %llx)",
	       blk);
	perfclock_close(c);
}

/* fork(): the child has no helper thread; its first horizon starts one. */
static void test_fork(void)
{
	struct perfclock *c = perfclock_open_clockid(CLOCK_MONOTONIC);
	uint64_t h;
	int status = -1;
	pid_t pid;

	if (!c || perfclock_horizon(c, &h)) {
		tap_ok(0, "membarrier: fork: open and first horizon");
		perfclock_close(c);
		return;
	}
	pid = fork();
	if (pid == 0) {
		uint64_t h2;
		int t0 = nr_threads(), t1;

		/* The parent's horizon still holds; the thread must restart. */
		if (perfclock_horizon(c, &h2) || h2 < h)
			_exit(10);
		t1 = nr_threads();
		if (t0 != 1 || t1 != 2)
			_exit(11);
		if (!horizon_moves(c, h2, &h2))
			_exit(12);
		perfclock_close(c);
		_exit(nr_threads() == 1 ? 0 : 13);
	}
	if (pid > 0)
		waitpid(pid, &status, 0);
	tap_ok(pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "membarrier: fork: the child's first horizon starts its own helper thread, which moves it, and close stops it (exit %d; 10 horizon, 11 threads, 12 no move, 13 close)",
	       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	perfclock_close(c);
}

/*
 * perf's page: a fake one (the mechanics, and the thread's error), and
 * this host's own if it offers time_zero.
 */
static void test_perf_page(void)
{
#if PERFCLOCK_PAGE_HAVE_TSC
	static struct perf_event_mmap_page pc;
	struct perf_event_attr attr;
	struct perfclock_clock_info info;
	struct perfclock *c;
	uint64_t h, lo, hi;
	int ok, err, fd;
	void *base;

	memset(&pc, 0, sizeof(pc));
	pc.cap_user_time_zero = 1;
	pc.time_mult = 1;
	pc.time_shift = 0;
	pc.time_zero = 1000;
	pc.lock = 2;
	c = perfclock_open_perf_page(&pc);
	ok = info_of(c, &info) == 0;
	tap_ok(ok && (info.flags & PERFCLOCK_CLOCK_HORIZON_EXACT) &&
	       (info.flags & PERFCLOCK_CLOCK_HORIZON_MEMBARRIER),
	       "membarrier: perf page with time_zero, no module: exact, from membarrier");
	lo = perfclock_rdtsc_ordered() + 1000;
	ok = c && perfclock_horizon_sync(c, 0, &h) == 0;
	hi = perfclock_rdtsc_ordered() + 1000;
	tap_ok(ok && lo <= h && h <= hi,
	       "membarrier: perf page: horizon_sync is perf's conversion, read during the call");
	/* The kernel withdraws time_zero: the thread's read fails. */
	pc.cap_user_time_zero = 0;
	err = 0;
	lo = now_ns(CLOCK_MONOTONIC);
	while (c && now_ns(CLOCK_MONOTONIC) - lo < MOVE_WAIT_NS) {
		err = perfclock_horizon(c, &h);
		if (err)
			break;
		usleep(1000);
	}
	tap_ok(err == -EOPNOTSUPP,
	       "membarrier: perf page: time_zero withdrawn: perfclock_horizon() returns the thread's error, -EOPNOTSUPP, not an estimate (%d)",
	       err);
	pc.cap_user_time_zero = 1;
	tap_ok(c && perfclock_horizon(c, &h) == -EOPNOTSUPP,
	       "membarrier: perf page: the thread's error stays");
	perfclock_close(c);

	/* This host's own perf page: a dummy event on this task. */
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1,
			  PERF_FLAG_FD_CLOEXEC);
	base = fd < 0 ? MAP_FAILED :
		mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ,
		     MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		tap_skip("membarrier: this host's perf page # SKIP perf_event_open/mmap: %s",
			 strerror(errno));
	} else if (!((struct perf_event_mmap_page *)base)->cap_user_time_zero) {
		tap_skip("membarrier: this host's perf page # SKIP no cap_user_time_zero here (a paravirt or unstable sched_clock: the module is needed for perf_clock)");
	} else {
		c = perfclock_open_perf_page(base);
		ok = info_of(c, &info) == 0 &&
		     (info.flags & PERFCLOCK_CLOCK_HORIZON_MEMBARRIER);
		lo = 0;
		ok = ok && perfclock_horizon(c, &h) == 0 &&
		     perfclock_read(c, &lo) == 0 && h <= lo;
		tap_ok(ok, "membarrier: this host's perf page: exact from membarrier, below a later read");
		perfclock_close(c);
	}
	if (base != MAP_FAILED)
		munmap(base, (size_t)sysconf(_SC_PAGESIZE));
	if (fd >= 0)
		close(fd);
#else
	tap_skip("membarrier: perf page # SKIP no TSC on this architecture");
#endif
}

/* The test-only switch the guest tests use to show what the barrier does. */
static void test_skip_switch(void)
{
	struct perfclock_mb_stats st;
	struct perfclock_mb *mb;
	struct perfclock *c;
	uint64_t before, h;
	int ok;

	perfclock_mb__test_set_mode(PERFCLOCK_MB_TEST_SKIP_BARRIER);
	c = perfclock_open_clockid(CLOCK_MONOTONIC_RAW);
	perfclock_mb__test_set_mode(PERFCLOCK_MB_TEST_NORMAL);
	before = now_ns(CLOCK_MONOTONIC_RAW);
	ok = c && perfclock_horizon(c, &h) == 0;
	tap_ok(ok && h >= before,
	       "membarrier: SKIP_BARRIER (test only): the horizon is a bare read at the call");
	perfclock_close(c);

	mb = perfclock_mb__new(NULL, NULL);
	perfclock_mb__get_stats(mb, &st);
	tap_ok(mb && st.barriers == 0 && !st.running && !st.err,
	       "membarrier: a new engine has made no barrier and runs no thread");
	perfclock_mb__free(mb);
}

void test_membarrier(void)
{
	struct stat st;
	int err;

	if (stat(PERFCLOCK_DEFAULT_PATH, &st) == 0) {
		tap_skip("membarrier: all checks # SKIP %s exists: the module's horizon is chosen first",
			 PERFCLOCK_DEFAULT_PATH);
		return;
	}
	if (getenv("PERFCLOCK_TEST_NO_MEMBARRIER")) {
		tap_skip("membarrier: all checks # SKIP PERFCLOCK_TEST_NO_MEMBARRIER (the valgrind run: valgrind holds its lock through membarrier() and starves the other threads; the ASan run covers this)");
		return;
	}
	err = perfclock_mb__available();
	if (err) {
		tap_skip("membarrier: all checks # SKIP this kernel gives no MEMBARRIER_CMD_GLOBAL to this process: %s (nohz_full, one CPU, or a filter)",
			 strerror(-err));
		return;
	}
	test_choice();
	test_horizon();
	test_helper_signals();
	test_fork();
	test_perf_page();
	test_skip_switch();
}
