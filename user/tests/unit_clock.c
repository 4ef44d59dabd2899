// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of libperfclock.c (part of test_unit): the clock backends'
 * host-testable paths, the page reader on a fake page, and the estimated
 * horizon of a clockid clock without the module.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "perfclock_page.h"
#include "horizon_membarrier.h"
#include "tap.h"
#include "internal.h"
#include "unit.h"

/* ------------------------------------------------------------------ */
/* Clock                                                               */
/* ------------------------------------------------------------------ */

void test_open_errors(void)
{
	struct perfclock *c;
	struct stat st;

	errno = 0;
	c = perfclock_open("/nonexistent/perfclock");
	tap_ok(!c && errno == ENOENT,
	       "clock: open of a missing path fails with ENOENT (errno %d)",
	       errno);

	if (stat(PERFCLOCK_DEFAULT_PATH, &st) == 0) {
		tap_skip("clock: open(NULL) without the module # SKIP %s exists",
			 PERFCLOCK_DEFAULT_PATH);
	} else {
		struct perfclock_clock_info info;

		errno = 0;
		c = perfclock_open(NULL);
		/* perf_clock through perf's page, where the kernel offers it. */
		if (c)
			tap_ok(perfclock_get_info(c, &info) == 0 &&
			       info.backend == PERFCLOCK_BACKEND_PERF_PAGE &&
			       (info.flags & PERFCLOCK_CLOCK_HORIZON_EXACT),
			       "clock: open(NULL) without the module: perf's own page (time_zero), exact horizon (%s)",
			       perfclock_horizon_name(&info));
		else
			tap_ok(errno == ENOENT,
			       "clock: open(NULL) without the module and without perf's time_zero fails with ENOENT (errno %d)",
			       errno);
		perfclock_close(c);
	}

	{
		static const struct { const char *path, *what; } not_dev[] = {
			{ "/dev/null", "/dev/null" },
			{ "/dev/zero", "/dev/zero" },
			{ "/proc/self/status", "a regular file" },
			{ "/", "a directory" },
		};
		size_t k;

		for (k = 0; k < sizeof(not_dev) / sizeof(not_dev[0]); k++) {
			errno = 0;
			c = perfclock_open(not_dev[k].path);
			tap_ok(!c && errno == ENOTTY,
			       "clock: %s is not a perfclock device: ENOTTY (errno %d)",
			       not_dev[k].what, errno);
		}
	}

	{
		char fifo[] = "/tmp/perfclock-test-fifo-XXXXXX";
		int fd = mkstemp(fifo);

		if (fd >= 0) {
			close(fd);
			unlink(fifo);
		}
		if (fd >= 0 && mkfifo(fifo, 0600) == 0) {
			errno = 0;
			c = perfclock_open(fifo);
			tap_ok(!c && errno == ENOTTY,
			       "clock: a FIFO is refused (ENOTTY) without blocking the open");
			unlink(fifo);
		} else {
			tap_skip("clock: FIFO # SKIP cannot create a FIFO in /tmp");
		}
	}

	errno = 0;
	c = perfclock_open_clockid(CLOCK_PROCESS_CPUTIME_ID);
	tap_ok(!c && errno == EINVAL,
	       "clock: clockid backend refuses a clock perf cannot stamp with");
	tap_ok(perfclock_read(NULL, NULL) == -EINVAL &&
	       perfclock_read_ioctl(NULL, NULL) == -EINVAL &&
	       perfclock_read_lower_bound(NULL, NULL) == -EINVAL,
	       "clock: NULL arguments give -EINVAL");
	perfclock_close(NULL);
}

static uint64_t mono_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

struct mono_arg {
	struct perfclock *c;
	int backwards;
	int errors;
};

static void *mono_thread(void *p)
{
	struct mono_arg *a = p;
	uint64_t prev = 0, v;
	int i;

	for (i = 0; i < 200000; i++) {
		if (perfclock_read(a->c, &v)) {
			a->errors++;
			continue;
		}
		if (v < prev)
			a->backwards++;
		prev = v;
	}
	return NULL;
}

void test_clockid_backend(void)
{
	struct perfclock_clock_info info;
	struct perf_event_attr attr;
	struct mono_arg a[2];
	pthread_t th[2];
	uint64_t lo, v, hi, lb;
	struct perfclock *c;
	int i, bad;

	c = perfclock_open_clockid(CLOCK_MONOTONIC);
	if (!tap_ok(c != NULL, "clock: clockid backend opens CLOCK_MONOTONIC"))
		return;

	lo = mono_ns(CLOCK_MONOTONIC);
	tap_ok(perfclock_read(c, &v) == 0, "clock: clockid read succeeds");
	hi = mono_ns(CLOCK_MONOTONIC);
	tap_ok(lo <= v && v <= hi,
	       "clock: clockid read is bracketed by clock_gettime (%llu <= %llu <= %llu)",
	       (unsigned long long)lo, (unsigned long long)v,
	       (unsigned long long)hi);

	bad = 0;
	for (i = 0; i < 10000; i++) {
		if (perfclock_read_lower_bound(c, &lb) ||
		    perfclock_read(c, &v) || lb > v)
			bad++;
	}
	tap_ok(bad == 0,
	       "clock: lower bound never exceeds a later exact read (%d violations)",
	       bad);
	tap_ok(perfclock_read_ioctl(c, &v) == -EOPNOTSUPP,
	       "clock: ioctl read on the clockid backend is -EOPNOTSUPP");

	memset(&info, 0xff, sizeof(info));
	tap_ok(perfclock_get_info(c, &info) == 0 &&
	       info.backend == PERFCLOCK_BACKEND_CLOCKID &&
	       info.clockid == CLOCK_MONOTONIC && info.skew_estimate_ns == 0 &&
	       (info.flags & PERFCLOCK_CLOCK_GLOBAL) &&
	       !(info.flags & PERFCLOCK_CLOCK_SETTABLE),
	       "clock: info of CLOCK_MONOTONIC: clockid backend, global, zero skew");

	memset(&attr, 0, sizeof(attr));
	attr.sample_type = PERF_SAMPLE_TIME;
	tap_ok(perfclock_check_attr(c, &attr) == -EINVAL,
	       "clock: attr without use_clockid is detected as the wrong clock");
	attr.use_clockid = 1;
	attr.clockid = CLOCK_MONOTONIC_RAW;
	tap_ok(perfclock_check_attr(c, &attr) == -EINVAL,
	       "clock: attr with another clockid is detected as the wrong clock");
	memset(&attr, 0, sizeof(attr));
	attr.sample_type = PERF_SAMPLE_TIME;
	perfclock_fill_attr(c, &attr);
	tap_ok(attr.use_clockid == 1 && attr.clockid == CLOCK_MONOTONIC &&
	       perfclock_check_attr(c, &attr) == 0,
	       "clock: fill_attr makes an attr that check_attr accepts");

	for (i = 0; i < 2; i++) {
		a[i].c = c;
		a[i].backwards = a[i].errors = 0;
		pthread_create(&th[i], NULL, mono_thread, &a[i]);
	}
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	tap_ok(!a[0].backwards && !a[1].backwards && !a[0].errors &&
	       !a[1].errors,
	       "clock: concurrent reads from 2 threads are monotonic per thread");
	perfclock_close(c);

	c = perfclock_open_clockid(CLOCK_REALTIME);
	tap_ok(c && perfclock_get_info(c, &info) == 0 &&
	       (info.flags & PERFCLOCK_CLOCK_SETTABLE),
	       "clock: CLOCK_REALTIME is flagged as settable");
	perfclock_close(c);
	c = perfclock_open_clockid(CLOCK_MONOTONIC_RAW);
	tap_ok(c && perfclock_read_lower_bound(c, &lb) == 0 &&
	       perfclock_read(c, &v) == 0 && lb <= v,
	       "clock: CLOCK_MONOTONIC_RAW (no coarse variant) lower bound <= read");
	perfclock_close(c);
}

/* The page reader from perfclock_page.h on a fake page. */
void test_page_reader(void)
{
	static struct perfclock_page pg;
	struct perfclock_page_sample s;
	uint64_t ns, tsc0, tsc1;

	memset(&pg, 0, sizeof(pg));
	pg.seq = 1;	/* writer in progress forever */
	tap_ok(perfclock_page_sample(&pg, &s) == -EAGAIN,
	       "page: a page stuck mid-update gives -EAGAIN after bounded retries");
	tap_ok(perfclock_page_horizon(&pg, PERFCLOCK_HORIZON_PERF_CLOCK, &ns) == -EAGAIN,
	       "page: the horizon of a page stuck mid-update gives -EAGAIN");
	pg.seq = 2;
	pg.horizon_ns = 777;
	pg.horizon_clockid_ns[CLOCK_MONOTONIC] = 888;
	pg.horizon_clockids = 1U << CLOCK_MONOTONIC;
	tap_ok(perfclock_page_horizon(&pg, PERFCLOCK_HORIZON_PERF_CLOCK, &ns) == -EOPNOTSUPP &&
	       perfclock_page_horizon(&pg, CLOCK_MONOTONIC, &ns) == -EOPNOTSUPP,
	       "page: without HORIZON_VALID the page offers no horizon (caller takes the ioctl)");
	pg.flags = PERFCLOCK_PAGE_HORIZON_VALID;
	ns = 0;
	tap_ok(perfclock_page_horizon(&pg, PERFCLOCK_HORIZON_PERF_CLOCK, &ns) == 0 && ns == 777,
	       "page: HORIZON_VALID: perf_clock()'s horizon is horizon_ns");
	ns = 0;
	tap_ok(perfclock_page_horizon(&pg, CLOCK_MONOTONIC, &ns) == 0 && ns == 888 &&
	       perfclock_page_horizon(&pg, CLOCK_BOOTTIME, &ns) == -EOPNOTSUPP &&
	       perfclock_page_horizon(&pg, 40, &ns) == -EOPNOTSUPP,
	       "page: a clockid's horizon only when its bit of horizon_clockids is set");
	pg.flags = 0;
	pg.coarse_ns = 12345;
	tap_ok(perfclock_page_read_now(&pg, &ns) == -EOPNOTSUPP &&
	       perfclock_page_sample(&pg, &s) == 0 && s.coarse_ns == 12345,
	       "page: without TSC_VALID read_now refuses, coarse value still served");
#if defined(__x86_64__) || defined(__i386__)
	pg.flags = PERFCLOCK_PAGE_TSC_VALID;
	pg.tsc_mult = 1u << 10;	/* 1 ns per tick */
	pg.tsc_shift = 10;
	pg.tsc_offset = 0;
	tsc0 = perfclock_rdtsc_ordered();
	ns = 0;
	tap_ok(perfclock_page_read_now(&pg, &ns) == 0, "page: TSC_VALID page serves now");
	tsc1 = perfclock_rdtsc_ordered();
	tap_ok(tsc0 <= ns && ns <= tsc1,
	       "page: conversion with mult=1<<shift is the TSC itself, bracketed");
	pg.seq = 3;
	tap_ok(perfclock_page_read_now(&pg, &ns) == -EAGAIN,
	       "page: read_now on a page stuck mid-update gives -EAGAIN (bounded)");
	pg.seq = 4;
	pg.flags = 0;
	tap_ok(perfclock_page_read_now(&pg, &ns) == -EOPNOTSUPP,
	       "page: read_now without TSC_VALID is -EOPNOTSUPP (caller takes the ioctl)");
#else
	(void)tsc0;
	(void)tsc1;
	tap_skip("page: TSC conversion # SKIP not x86");
#endif
}


/* ------------------------------------------------------------------ */
/* The estimated horizon of a clockid clock without the module         */
/* ------------------------------------------------------------------ */

void test_horizon_estimate(void)
{
	struct perfclock_clock_info info;
	struct perfclock *c;
	uint64_t before, after, h, prev = 0, v;
	struct stat st;
	int i, back = 0, err = 0;

	if (stat(PERFCLOCK_DEFAULT_PATH, &st) == 0) {
		tap_skip("horizon: clockid estimate without the module # SKIP %s exists here (test_device covers it with a fake one)",
			 PERFCLOCK_DEFAULT_PATH);
		return;
	}
	/* The estimate's path: as on a kernel without membarrier. */
	perfclock_mb__test_set_mode(PERFCLOCK_MB_TEST_UNAVAILABLE);
	c = perfclock_open_clockid(CLOCK_MONOTONIC);
	if (!getenv("PERFCLOCK_TEST_NO_MEMBARRIER"))
		perfclock_mb__test_set_mode(PERFCLOCK_MB_TEST_NORMAL);
	if (!tap_ok(c != NULL, "horizon: clockid clock opens without the module"))
		return;
	before = mono_ns(CLOCK_MONOTONIC);
	err = perfclock_horizon(c, &h);
	after = mono_ns(CLOCK_MONOTONIC);
	/* CLOCK_MONOTONIC: the NTP slope margin comes off too (ntp_slope.c). */
	tap_ok(!err && h + PERFCLOCK_HORIZON_ESTIMATE_INFLIGHT_NS +
	       PERFCLOCK_NTP_SLOPE_MARGIN_NS >= before &&
	       h + PERFCLOCK_HORIZON_ESTIMATE_INFLIGHT_NS +
	       PERFCLOCK_NTP_SLOPE_MARGIN_NS <= after,
	       "horizon: without the module, clock_gettime minus the in-flight estimate (%llu ns) and the NTP slope margin (%llu ns; read window %llu ns)",
	       (unsigned long long)PERFCLOCK_HORIZON_ESTIMATE_INFLIGHT_NS,
	       (unsigned long long)PERFCLOCK_NTP_SLOPE_MARGIN_NS,
	       (unsigned long long)(after - before));
	err = perfclock_get_info(c, &info);
	tap_ok(!err && !(info.flags & PERFCLOCK_CLOCK_HORIZON_EXACT) &&
	       info.inflight_estimate_ns == PERFCLOCK_HORIZON_ESTIMATE_INFLIGHT_NS &&
	       info.horizon_age_ns >= PERFCLOCK_HORIZON_ESTIMATE_INFLIGHT_NS,
	       "horizon: get_info says the horizon is an estimate (flag clear, allowance %llu ns, age %llu ns)",
	       (unsigned long long)info.inflight_estimate_ns,
	       (unsigned long long)info.horizon_age_ns);
	tap_ok(perfclock_horizon_sync(c, 0, &v) == -EOPNOTSUPP &&
	       perfclock_horizon_sync(c, PERFCLOCK_HORIZON_SYNC_EXPEDITED, &v) == -EOPNOTSUPP,
	       "horizon: horizon_sync with the estimate is -EOPNOTSUPP");
	tap_ok(perfclock_horizon_sync(c, 0x80, &v) == -EINVAL &&
	       perfclock_horizon(NULL, &v) == -EINVAL &&
	       perfclock_horizon(c, NULL) == -EINVAL,
	       "horizon: bad arguments and unknown flags are -EINVAL");
	for (i = 0; i < 20000; i++) {
		err |= perfclock_horizon(c, &h);
		back += h < prev;
		prev = h;
	}
	tap_ok(!err && !back, "horizon: 20000 estimates never go down (%d steps back)",
	       back);
	perfclock_close(c);
}


/* The estimate of a settable clock holds one timerfd, closed at close. */
static int open_fds(void)
{
	char path[64];
	int fd, n = 0;

	for (fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n += access(path, F_OK) == 0;
	}
	return n;
}

void test_settable_estimate(void)
{
	struct perfclock *c;
	uint64_t h;
	uint32_t gen;
	int fds = open_fds(), during, ret, i;
	struct stat st;

	if (stat(PERFCLOCK_DEFAULT_PATH, &st) == 0) {
		tap_skip("settable: REALTIME estimate # SKIP %s exists here",
			 PERFCLOCK_DEFAULT_PATH);
		return;
	}
	c = perfclock_open_clockid(CLOCK_REALTIME);
	during = open_fds();
	ret = c ? perfclock_horizon_gen(c, &h, &gen) : -1;
	for (i = 0; c && ret == 0 && i < 1000; i++)
		ret = perfclock_horizon_gen(c, &h, &gen);
	tap_ok(c && during == fds + 1 && ret == 0 && gen == 1,
	       "settable: a REALTIME estimate holds one fd (its CANCEL_ON_SET timerfd: %d more); "
	       "1000 horizons, no set, no restart (gen %u)", during - fds, gen);
	/* perfclock__sets_take() checks sets for a fresh horizon too. */
	ret = c ? perfclock_horizon_sync(c, 0, &h) : -1;
	tap_ok(ret == -EOPNOTSUPP,
	       "settable: horizon_sync of a REALTIME estimate is -EOPNOTSUPP (%d)",
	       ret);
	perfclock_close(c);
	/* The TAI offset is read at each call (horizon_sets.c): no false set. */
	c = perfclock_open_clockid(CLOCK_TAI);
	ret = c ? perfclock_horizon_gen(c, &h, &gen) : -1;
	for (i = 0; c && ret == 0 && i < 1000; i++)
		ret = perfclock_horizon_gen(c, &h, &gen);
	tap_ok(c && ret == 0 && gen == 1,
	       "settable: 1000 TAI horizons, no set, no restart (ret %d, gen %u)",
	       ret, gen);
	perfclock_close(c);
	c = perfclock_open_clockid(CLOCK_MONOTONIC);
	tap_ok(c && open_fds() == fds,
	       "settable: closed with the clock; a MONOTONIC clock holds none");
	perfclock_close(c);
}

/*
 * A settable clock that cannot have its timerfd would miss every set: no
 * clock (EMFILE), nothing left open; a clock that needs no fd still opens.
 */
void test_settable_no_fd(void)
{
	struct perfclock *rt, *mono;
	struct rlimit old, low;
	int fd, e, fds = open_fds();

	fd = dup(0);
	if (fd < 0 || getrlimit(RLIMIT_NOFILE, &old)) {
		tap_skip("settable: no fd left # SKIP dup/getrlimit: %s",
			 strerror(errno));
		return;
	}
	close(fd);
	/* fd is the lowest free descriptor: with the limit there, none is. */
	low = old;
	low.rlim_cur = (rlim_t)fd;
	if (setrlimit(RLIMIT_NOFILE, &low)) {
		tap_skip("settable: no fd left # SKIP setrlimit: %s",
			 strerror(errno));
		return;
	}
	errno = 0;
	rt = perfclock_open_clockid(CLOCK_REALTIME);
	e = errno;
	mono = perfclock_open_clockid(CLOCK_MONOTONIC);
	setrlimit(RLIMIT_NOFILE, &old);
	tap_ok(!rt && e == EMFILE && mono,
	       "settable: no fd for the timerfd: REALTIME is not opened (errno %s), MONOTONIC is",
	       strerror(e));
	perfclock_close(rt);
	perfclock_close(mono);
	tap_ok(open_fds() == fds,
	       "settable: nothing was left open by the refused open (%d fds, %d before)",
	       open_fds(), fds);
}

/* ------------------------------------------------------------------ */
/* Hardware-stamped samples (attr_hwtime.c) against sysfs trees        */
/* ------------------------------------------------------------------ */

static void put(const char *root, const char *rel, const char *text)
{
	char path[512], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	/* Every directory on the way (the existing ones refuse, harmlessly). */
	for (slash = path + 1; (slash = strchr(slash, '/')); slash++) {
		*slash = 0;
		mkdir(path, 0755);
		*slash = '/';
	}
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void rm_tree(const char *root)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd))
		tap_diag("could not remove %s", root);
}

void test_attr_hw_time(void)
{
	char tmpl[] = "/tmp/perfclock-sysfs-XXXXXX";
	char intel[600], amd[600], hybrid[600], odd[600];
	struct perf_event_attr a;
	struct perfclock *c;
	const char *root = mkdtemp(tmpl);
	int want;

	if (!root) {
		tap_ok(0, "hw time: a temporary sysfs tree");
		return;
	}
	snprintf(intel, sizeof(intel), "%s/intel", root);
	snprintf(amd, sizeof(amd), "%s/amd", root);
	snprintf(hybrid, sizeof(hybrid), "%s/hybrid", root);
	snprintf(odd, sizeof(odd), "%s/odd", root);
	/* Intel with PEBS; AMD (x86_pmu_max_precise() 0, IBS its own PMU). */
	put(intel, "cpu/type", "4\n");
	put(intel, "cpu/caps/max_precise", "3\n");
	put(intel, "software/type", "1\n");
	put(amd, "cpu/type", "4\n");
	put(amd, "cpu/caps/max_precise", "0\n");
	put(amd, "ibs_op/type", "9\n");
	/* A hybrid part: no "cpu", two core PMUs of dynamic types. */
	put(hybrid, "cpu_core/type", "8\n");
	put(hybrid, "cpu_core/caps/max_precise", "3\n");
	put(hybrid, "cpu_atom/type", "10\n");
	put(hybrid, "cpu_atom/caps/max_precise", "3\n");
	put(hybrid, "uncore_imc/type", "11\n");
	put(odd, "cpu/type", "4\n");
	put(odd, "cpu/caps/max_precise", "three\n");

	memset(&a, 0, sizeof(a));
	a.sample_type = PERF_SAMPLE_TIME;	/* check_attr wants a time */
	a.type = PERF_TYPE_HARDWARE;
	a.config = PERF_COUNT_HW_CPU_CYCLES;
	tap_ok(perfclock__attr_hw_time(&a, intel) == 0,
	       "hw time: cycles without precise_ip: perf stamps them");
	a.precise_ip = 2;
	tap_ok(perfclock__attr_hw_time(&a, intel) == 1,
	       "hw time: cycles:pp on a PEBS PMU (max_precise 3): the PEBS record's TSC");
	a.type = PERF_TYPE_RAW;
	a.precise_ip = 1;
	tap_ok(perfclock__attr_hw_time(&a, intel) == 1,
	       "hw time: a raw event with precise_ip 1 on a PEBS PMU");
	a.type = PERF_TYPE_HW_CACHE;
	tap_ok(perfclock__attr_hw_time(&a, intel) == 1,
	       "hw time: a cache event with precise_ip on a PEBS PMU");
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	tap_ok(perfclock__attr_hw_time(&a, intel) == 0,
	       "hw time: with use_clockid setup_pebs_time() backs off (6.1): perf stamps it");
	a.use_clockid = 0;
	a.type = PERF_TYPE_SOFTWARE;
	tap_ok(perfclock__attr_hw_time(&a, intel) == 0,
	       "hw time: a software event with precise_ip: perf stamps it");
	a.type = PERF_TYPE_RAW;
	tap_ok(perfclock__attr_hw_time(&a, amd) == 0,
	       "hw time: a PMU without PEBS (max_precise 0)");
	a.type = 9;
	tap_ok(perfclock__attr_hw_time(&a, amd) == 0,
	       "hw time: a dynamic PMU without caps/max_precise (IBS)");
	a.type = PERF_TYPE_HARDWARE;
	tap_ok(perfclock__attr_hw_time(&a, hybrid) == 1,
	       "hw time: hybrid: a hardware event, cpu_core/cpu_atom with PEBS");
	a.type = 10;
	tap_ok(perfclock__attr_hw_time(&a, hybrid) == 1,
	       "hw time: hybrid: the cpu_atom PMU by its dynamic type");
	a.type = 11;
	tap_ok(perfclock__attr_hw_time(&a, hybrid) == 0,
	       "hw time: an uncore PMU without max_precise");
	a.type = 12;
	tap_ok(perfclock__attr_hw_time(&a, hybrid) == 0,
	       "hw time: a type no PMU has");
	a.type = PERF_TYPE_RAW;
	tap_ok(perfclock__attr_hw_time(&a, odd) == 0 &&
	       perfclock__attr_hw_time(&a, "/nonexistent/devices") == 0,
	       "hw time: unreadable max_precise, no sysfs: not known to be hardware-stamped");

	/* The public check, on this machine's own PMUs. */
	c = perfclock_open_clockid(CLOCK_MONOTONIC);
	a.type = PERF_TYPE_HARDWARE;
	a.precise_ip = 2;
	a.use_clockid = 0;
	want = perfclock__attr_hw_time(&a, PERFCLOCK_PMU_DEVICES) ? -EOPNOTSUPP : 0;
	a.use_clockid = 1;
	tap_ok(c && perfclock_check_attr(c, &a) == 0,
	       "hw time: check_attr: cycles:pp with use_clockid on a clockid clock: accepted");
	perfclock_close(c);
	{
		static struct perf_event_mmap_page pg __attribute__((aligned(4096)));

		pg.cap_user_time_zero = 1;
		pg.time_mult = 1;
		pg.time_shift = 0;
		c = perfclock_open_perf_page(&pg);
		a.use_clockid = 0;
		tap_ok(!PERFCLOCK_PAGE_HAVE_TSC ||
		       (c && perfclock_check_attr(c, &a) == want),
		       "hw time: check_attr: cycles:pp on perf_clock(), this machine's PMUs: %d (%s)",
		       want, want ? "PEBS: refused" : "no PEBS PMU here: accepted");
		perfclock_close(c);
	}
	rm_tree(root);
}
