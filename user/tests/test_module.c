// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The library against the real module (run in a guest with perfclock.ko
 * loaded; on a host without /dev/perfclock every check SKIPs, saying so).
 * Built static by 'make guest' for the QEMU harness.
 *
 * The module's clock contract (bracket, monotonic per CPU, causal across
 * CPUs within the advertised figure, through the ioctl and the page) is
 * the kselftest's, selftests/perfclock_clock_test.c. Checked here is what
 * the library adds on top of it:
 *  - perfclock_read() picks an exact path (the page, or the ioctl when the
 *    page cannot serve): each read lies between the ioctl reads around it
 *    on one CPU, so it is the module's clock, monotonic with it;
 *  - the lower bound (the page's coarse value, or a read, minus the skew
 *    estimate) never exceeds a later exact read;
 *  - the clock info: the skew estimate is zero exactly when global;
 *  - check_attr: the device matches attrs without use_clockid only;
 *  - the library's other backends, which are not the module's: perf's own
 *    page (time_zero) brackets COMM records like the module's paths; the
 *    clockid backend ("clockid", on the host: make check) brackets them,
 *    is monotonic, causal across CPUs within its skew estimate, and its
 *    lower bound is below later reads;
 *  - the flush horizon: exact (the module's flag), monotone, never above
 *    a clock read taken after it, nor above a record produced after it;
 *    its age reported; perfclock_horizon_sync() fresh and no lower; the
 *    clockid backend gets exact CLOCK_MONOTONIC horizons from the device.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "horizon_membarrier.h"
#include "tap.h"

#define BRACKETS	200
#define RING_PAGES	16

static struct perfclock *clk;
static const char *who = "module";
static struct perfclock_clock_info info;

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

struct bracket {
	uint64_t lo, hi;
	char name[16];
};

/* COMM records of this thread, in ring order: match them by name. */
static int check_brackets(void *base, size_t len, struct perf_event_attr *a,
			  struct bracket *b, int n, int *found)
{
	struct perfclock_ring *r = perfclock_ring_new(base, len, a);
	struct perfclock_record rec;
	int bad = 0, i;

	*found = 0;
	if (!r || perfclock_ring_read_begin(r) < 0)
		return -1;
	while (perfclock_ring_read_event(r, &rec) == 1) {
		const char *comm;

		if (rec.type != PERF_RECORD_COMM || rec.size < 8 + 8 + 16 ||
		    !(rec.flags & PERFCLOCK_RECORD_HAS_TIME))
			continue;
		comm = (const char *)rec.data + 16;
		for (i = 0; i < n; i++) {
			if (strncmp(comm, b[i].name, 15))
				continue;
			(*found)++;
			if (rec.time < b[i].lo || rec.time > b[i].hi) {
				if (!bad)
					tap_diag("record %llu outside [%llu, %llu]",
						 (unsigned long long)rec.time,
						 (unsigned long long)b[i].lo,
						 (unsigned long long)b[i].hi);
				bad++;
			}
		}
	}
	perfclock_ring_read_end(r);
	perfclock_ring_free(r);
	return bad;
}

/*
 * A backend of the library's own (perf's page, clockid): a COMM record
 * produced (prctl) between two perfclock_read() on one CPU has a
 * timestamp between them.
 */
static void test_bracket(void)
{
	static struct bracket b[BRACKETS];
	struct perf_event_attr a;
	long pagesz = sysconf(_SC_PAGESIZE);
	size_t len = (size_t)(1 + RING_PAGES) * (size_t)pagesz;
	const char *path = "perfclock_read";
	int fd, i, bad, found, err = 0;
	void *base;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.comm = 1;
	a.sample_id_all = 1;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	a.disabled = 1;
	perfclock_fill_attr(clk, &a);
	fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1,
			  PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		tap_skip("%s: bracket (%s) # SKIP perf_event_open: %s",
			 who, path, strerror(errno));
		return;
	}
	base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		tap_ok(0, "%s: bracket (%s): mmap: %s", who, path,
		       strerror(errno));
		close(fd);
		return;
	}
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	for (i = 0; i < BRACKETS; i++) {
		snprintf(b[i].name, sizeof(b[i].name), "pclk-p-%d", i);
		err |= perfclock_read(clk, &b[i].lo);
		prctl(PR_SET_NAME, b[i].name, 0, 0, 0);
		err |= perfclock_read(clk, &b[i].hi);
	}
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	bad = check_brackets(base, len, &a, b, BRACKETS, &found);
	tap_ok(!err && bad == 0 && found == BRACKETS,
	       "%s: %d COMM records lie between the %s reads around their prctl() on the same CPU (%d found, %d outside)",
	       who, BRACKETS, path, found, bad);
	munmap(base, len);
	close(fd);
}

/* A backend of the library's own (not the module's): monotonic on one CPU. */
static void test_monotonic(void)
{
	uint64_t prev = 0, v;
	int i, back = 0, err = 0;

	for (i = 0; i < 200000; i++) {
		err |= perfclock_read(clk, &v);
		back += v < prev;
		prev = v;
	}
	tap_ok(!err && !back,
	       "%s: 200000 perfclock_read() on one CPU are monotonic (%d steps back)",
	       who, back);
}

/*
 * The module backend: whichever path perfclock_read() takes (the page, or
 * the ioctl when the page has no current time or stays mid-update), its
 * value lies between the exact ioctl reads around it on this CPU. With
 * the kselftest's bracket of the ioctl by perf records, that makes it
 * perf's clock; and the reads, interleaved, are monotonic.
 */
static void test_read_is_exact(void)
{
	uint64_t lo, v, hi, prev = 0;
	int i, err = 0, outside = 0, back = 0;

	for (i = 0; i < 20000; i++) {
		err |= perfclock_read_ioctl(clk, &lo);
		err |= perfclock_read(clk, &v);
		err |= perfclock_read_ioctl(clk, &hi);
		outside += v < lo || v > hi;
		back += v < prev;
		prev = v;
	}
	tap_ok(!err && !outside && !back,
	       "%s: 20000 perfclock_read() (page %s) lie between the ioctl reads around them on one CPU, monotonic (%d outside, %d back)",
	       who, (info.flags & PERFCLOCK_CLOCK_PAGE_TSC_VALID) ? "valid" : "not valid: the ioctl",
	       outside, back);
}

/* The lower bound, the library's arithmetic: never above a later exact read. */
static void test_lower_bound(void)
{
	uint64_t v, lb;
	int i, err = 0, lbad = 0;

	for (i = 0; i < 20000; i++) {
		err |= perfclock_read_lower_bound(clk, &lb);
		err |= perfclock_read(clk, &v);
		lbad += lb > v;
	}
	tap_ok(!err && !lbad,
	       "%s: the lower bound never exceeds a later exact read (%d violations)",
	       who, lbad);
}

/*
 * A backend of the library's own (the module's is the kselftest's):
 * B reads after seeing A's read; B + skew >= A.
 */
static volatile uint64_t mailbox;
static volatile int turn, done;
static int cross_bad, cross_n;
static uint64_t cross_worst;

static void *side_b(void *arg)
{
	int cpu = *(int *)arg;
	uint64_t v, a;

	pin(cpu);
	while (!done) {
		if (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) != 1)
			continue;
		a = mailbox;
		perfclock_read(clk, &v);
		if (v + info.skew_estimate_ns < a)
			cross_bad++;
		if (a > v && a - v > cross_worst)
			cross_worst = a - v;
		cross_n++;
		__atomic_store_n(&turn, 0, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void test_cross_cpu(void)
{
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN), cpu_b = 1, i;
	struct timespec t0, t1;
	pthread_t th;
	uint64_t v;

	if (ncpu < 2) {
		tap_skip("%s: cross-CPU causality # SKIP one CPU online", who);
		return;
	}
	pin(0);
	pthread_create(&th, NULL, side_b, &cpu_b);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < 100000; i++) {
		/* bounded: spinning pairs crawl on an overloaded host */
		if (!(i & 1023)) {
			clock_gettime(CLOCK_MONOTONIC, &t1);
			if (t1.tv_sec - t0.tv_sec > 3)
				break;
		}
		while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) != 0)
			;
		perfclock_read(clk, &v);
		mailbox = v;
		__atomic_store_n(&turn, 1, __ATOMIC_RELEASE);
	}
	while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) != 0)
		;
	done = 1;
	pthread_join(th, NULL);
	tap_ok(cross_bad == 0 && cross_n > 1000,
	       "%s: %d handoffs CPU 0 -> 1: later reads never below earlier ones by more than the skew estimate %llu ns (worst step back %llu ns)",
	       who, cross_n, (unsigned long long)info.skew_estimate_ns,
	       (unsigned long long)cross_worst);
}

static double since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) +
	       (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/*
 * The horizon of c (whose info is ci): exact when expect_exact, monotone,
 * never above a later read of the clock on this CPU.
 */
static void test_horizon_of(struct perfclock *c, const char *name,
			    int expect_exact)
{
	struct perfclock_clock_info ci;
	struct timespec t0;
	uint64_t h, prev = 0, v, worst_age = 0;
	int i, err = 0, back = 0, above = 0, ntp;

	err = perfclock_get_info(c, &ci);
	/* An NTP-disciplined clock: exact except the NTP slope. */
	ntp = ci.backend == PERFCLOCK_BACKEND_CLOCKID &&
	      ci.clockid != CLOCK_MONOTONIC_RAW;
	if (expect_exact && ntp)
		tap_ok(!err && !(ci.flags & PERFCLOCK_CLOCK_HORIZON_EXACT) &&
		       (ci.flags & PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE),
		       "%s: horizon: exact except the NTP slope (%s)", name,
		       perfclock_horizon_name(&ci));
	else if (expect_exact)
		tap_ok(!err && (ci.flags & PERFCLOCK_CLOCK_HORIZON_EXACT),
		       "%s: horizon: exact (%s)", name,
		       perfclock_horizon_name(&ci));
	else
		tap_ok(!err && !(ci.flags & PERFCLOCK_CLOCK_HORIZON_EXACT) &&
		       ci.inflight_estimate_ns >= PERFCLOCK_HORIZON_ESTIMATE_INFLIGHT_NS,
		       "%s: horizon: no module, no membarrier here: flagged as an estimate (allowance %llu ns)",
		       name, (unsigned long long)ci.inflight_estimate_ns);
	tap_diag("%s: horizon age %llu ns (%s)", name,
		 (unsigned long long)ci.horizon_age_ns,
		 perfclock_horizon_name(&ci));
	tap_ok(!err && ci.horizon_age_ns > 0 &&
	       ci.horizon_age_ns < 60000000000ULL,
	       "%s: horizon: its age is reported (%llu ns)", name,
	       (unsigned long long)ci.horizon_age_ns);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < 100000 && since(&t0) < 2.0; i++) {
		err |= perfclock_horizon(c, &h);
		err |= perfclock_read(c, &v);
		back += h < prev;
		above += h > v;
		if (v - h > worst_age && v > h)
			worst_age = v - h;
		prev = h;
	}
	tap_ok(!err && !back && !above && i > 10,
	       "%s: horizon: %d calls monotone (%d back), never above a clock read taken after it (%d above; oldest %llu ns)",
	       name, i, back, above, (unsigned long long)worst_age);
	if (!expect_exact)
		return;
	err = perfclock_horizon(c, &prev);
	err |= perfclock_horizon_sync(c, 0, &h);
	err |= perfclock_read(c, &v);
	tap_ok(!err && prev <= h && h <= v,
	       "%s: horizon_sync: a fresh horizon, no lower than the page's, below a later read (%llu <= %llu <= %llu)",
	       name, (unsigned long long)prev, (unsigned long long)h,
	       (unsigned long long)v);
	err = perfclock_horizon_sync(c, PERFCLOCK_HORIZON_SYNC_EXPEDITED, &h);
	/* membarrier's: user space has no expedited grace period. */
	if (ci.flags & PERFCLOCK_CLOCK_HORIZON_MEMBARRIER)
		tap_ok(err == -EOPNOTSUPP,
		       "%s: horizon_sync: expedited is -EOPNOTSUPP with membarrier's horizon (%d)",
		       name, err);
	else if (geteuid() == 0)
		tap_ok(!err, "%s: horizon_sync: expedited as root (%d)", name,
		       err);
	else	/* the module's refusal (as nobody: perfclock_access_test) */
		tap_ok(err == -EPERM,
		       "%s: horizon_sync: expedited unprivileged is -EPERM (%d)",
		       name, err);
}

/* A record produced after a horizon was handed out is not below it. */
static void test_horizon_record(void)
{
	struct perf_event_attr a;
	long pagesz = sysconf(_SC_PAGESIZE);
	size_t len = (size_t)(1 + RING_PAGES) * (size_t)pagesz;
	static struct bracket b[50];
	struct perfclock_ring *r;
	struct perfclock_record rec;
	int fd, i, below = 0, found = 0, err = 0;
	void *base;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.comm = 1;
	a.sample_id_all = 1;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	a.disabled = 1;
	perfclock_fill_attr(clk, &a);
	fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1,
			  PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		tap_skip("%s: horizon below later records # SKIP perf_event_open: %s",
			 who, strerror(errno));
		return;
	}
	base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		tap_ok(0, "%s: horizon record: mmap: %s", who, strerror(errno));
		close(fd);
		return;
	}
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	for (i = 0; i < 50; i++) {
		snprintf(b[i].name, sizeof(b[i].name), "pclk-h-%d", i);
		err |= perfclock_horizon(clk, &b[i].lo);
		prctl(PR_SET_NAME, b[i].name, 0, 0, 0);
	}
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	r = perfclock_ring_new(base, len, &a);
	if (r && perfclock_ring_read_begin(r) >= 0) {
		while (perfclock_ring_read_event(r, &rec) == 1) {
			const char *comm = (const char *)rec.data + 16;

			if (rec.type != PERF_RECORD_COMM || rec.size < 40 ||
			    !(rec.flags & PERFCLOCK_RECORD_HAS_TIME))
				continue;
			for (i = 0; i < 50; i++)
				if (!strncmp(comm, b[i].name, 15)) {
					found++;
					below += rec.time < b[i].lo;
				}
		}
		perfclock_ring_read_end(r);
	}
	perfclock_ring_free(r);
	tap_ok(!err && found == 50 && !below,
	       "%s: horizon: 50 COMM records produced after a horizon are not below it (%d found, %d below)",
	       who, found, below);
	munmap(base, len);
	close(fd);
}

int main(int argc, char **argv)
{
	/* "clockid": the same checks on the host's CLOCK_MONOTONIC backend */
	int host = argc > 1 && !strcmp(argv[1], "clockid");
	struct perf_event_attr a;

	if (host) {
		who = "clockid";
		clk = perfclock_open_clockid(CLOCK_MONOTONIC);
		if (!clk || perfclock_get_info(clk, &info)) {
			tap_ok(0, "clockid: open");
			return tap_exit();
		}
		pin(0);
		test_bracket();
		test_monotonic();
		test_lower_bound();
		test_cross_cpu();
		{
			struct stat st;
			int dev = stat(PERFCLOCK_DEFAULT_PATH, &st) == 0;
			/* Without the module: membarrier's, where the kernel has it. */
			int mb = perfclock_mb__available() == 0;

			if (dev)
				tap_diag("clockid: %s exists: its horizons are expected exact",
					 PERFCLOCK_DEFAULT_PATH);
			else if (mb)
				tap_diag("clockid: no module, membarrier: its horizons are expected exact");
			test_horizon_of(clk, who, dev || mb);
		}
		test_horizon_record();
		perfclock_close(clk);
		return tap_exit();
	}
	clk = perfclock_open(NULL);
	if (!clk) {
		tap_skip("module: all checks # SKIP perfclock_open(NULL): %s (module not loaded?)",
			 strerror(errno));
		return tap_exit();
	}
	tap_ok(perfclock_get_info(clk, &info) == 0 &&
	       info.backend == PERFCLOCK_BACKEND_DEVICE,
	       "module: opened /dev/perfclock");
	tap_diag("regime: %s, skew estimate %llu ns, measured %llu ns, page %s, TSC %s",
		 (info.flags & PERFCLOCK_CLOCK_GLOBAL) ? "stable" : "unstable",
		 (unsigned long long)info.skew_estimate_ns,
		 (unsigned long long)info.measured_skew_ns,
		 (info.flags & PERFCLOCK_CLOCK_PAGE_MAPPED) ? "mapped" : "none",
		 (info.flags & PERFCLOCK_CLOCK_PAGE_TSC_VALID) ? "valid" : "invalid");
	tap_ok(((info.flags & PERFCLOCK_CLOCK_GLOBAL) != 0) ==
	       (info.skew_estimate_ns == 0),
	       "module: skew estimate is zero exactly when sched_clock is stable");

	memset(&a, 0, sizeof(a));
	a.sample_type = PERF_SAMPLE_TIME;
	tap_ok(perfclock_check_attr(clk, &a) == 0,
	       "module: check_attr accepts an event without use_clockid");
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	tap_ok(perfclock_check_attr(clk, &a) == -EINVAL,
	       "module: check_attr refuses a use_clockid event");

	pin(0);
	test_read_is_exact();
	test_lower_bound();
	test_horizon_of(clk, who, 1);
	test_horizon_record();
	{
		/* use_clockid events: the device's horizons in that clock. */
		struct perfclock *mono = perfclock_open_clockid(CLOCK_MONOTONIC);

		if (tap_ok(mono != NULL, "module: the clockid backend opens CLOCK_MONOTONIC"))
			test_horizon_of(mono, "module-clockid", 1);
		perfclock_close(mono);
	}
	{
		/*
		 * perf's own page (time_zero): the same clock with no module
		 * needed to read it, where the kernel offers it (stable only),
		 * bracketing COMM records like the module's reads.
		 */
		struct perf_event_attr pa;
		struct perfclock *dev = clk, *pp;
		long pagesz = sysconf(_SC_PAGESIZE);
		void *pc = MAP_FAILED;
		int pfd;

		memset(&pa, 0, sizeof(pa));
		pa.size = sizeof(pa);
		pa.type = PERF_TYPE_SOFTWARE;
		pa.config = PERF_COUNT_SW_DUMMY;
		pfd = (int)syscall(SYS_perf_event_open, &pa, 0, -1, -1,
				   PERF_FLAG_FD_CLOEXEC);
		if (pfd >= 0)
			pc = mmap(NULL, (size_t)pagesz, PROT_READ, MAP_SHARED, pfd, 0);
		if (pc == MAP_FAILED) {
			tap_skip("perf-page: all checks # SKIP no perf mmap page: %s",
				 strerror(errno));
		} else {
			struct perfclock_clock_info now;
			const char *regime = getenv("PERFCLOCK_REGIME");
			int global, offered;

			/*
			 * perf offers time_zero exactly when sched_clock is
			 * stable (arch/x86/events/core.c:
			 * arch_perf_update_userpage()). The module says
			 * global only when it has proven it (perfclock.c:
			 * perfclock_is_stable()), so a stable clock it has
			 * not proven (its TSC model being revalidated, a
			 * skew measured on a slow kernel) is no error; a
			 * claim perf does not back is. The regime the guest
			 * booted in (scripts/vm.sh checks it) is the truth.
			 */
			memset(&now, 0, sizeof(now));
			perfclock_get_info(dev, &now);
			global = !!(now.flags & PERFCLOCK_CLOCK_GLOBAL);
			errno = 0;
			pp = perfclock_open_perf_page(pc);
			offered = pp != NULL;
			if (global)
				tap_ok(offered,
				       "perf-page: the module says global: perf's page offers time_zero too (errno %d)",
				       errno);
			if (!global && regime && !strcmp(regime, "stable"))
				tap_diag("perf-page: a stable guest whose clock the module has not proven global (TSC model %s, measured skew %llu ns)",
					 (now.flags & PERFCLOCK_CLOCK_PAGE_TSC_VALID) ?
					 "valid" : "not valid",
					 (unsigned long long)now.measured_skew_ns);
			if (regime && !strcmp(regime, "unstable"))
				tap_ok(!offered && errno == EOPNOTSUPP,
				       "perf-page: unstable sched_clock: perf offers no time_zero, EOPNOTSUPP (errno %d)",
				       errno);
			else if (!regime && !global)
				tap_skip("perf-page: opens # SKIP PERFCLOCK_REGIME not set and the module has not proven the clock global");
			else if (tap_ok(offered,
					"perf-page: stable sched_clock: opens on perf's time_zero (errno %d)",
					errno)) {
				clk = pp;
				who = "perf-page";
				test_bracket();
				clk = dev;
				who = "module";
			}
			perfclock_close(pp);
			munmap(pc, (size_t)pagesz);
		}
		if (pfd >= 0)
			close(pfd);
	}
	perfclock_close(clk);
	return tap_exit();
}
