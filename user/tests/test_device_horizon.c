// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Part of test_device (see test_device.c): the flush horizon against the
 * fake device: from the page without a system call when it holds one,
 * else PERFCLOCK_IOC_GET_HORIZON; an older module (no
 * PERFCLOCK_INFO_HORIZON, or ENOTTY) gives the estimate, flagged; the
 * skew and stall estimates of a device without a page; the clockid
 * backend takes its exact horizons from the device; the horizon's
 * generation (a restart voids the last horizon and is reported).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "perfclock_page.h"
#include "tap.h"
#include "fake_device.h"

/* ---- the flush horizon ---- */

void test_horizon_device(void)
{
	struct perfclock_clock_info info;
	const char *name;
	struct perfclock *c;
	unsigned long bt, bh, bi;
	uint64_t h = 0, lo, hi, est;
	int ok;

	/* A module with horizons; its page holds one. */
	fake_reset();
	fake_info.flags |= PERFCLOCK_INFO_HORIZON;
	page.flags |= PERFCLOCK_PAGE_HORIZON_VALID;
	page.horizon_ns = 4000000;
	c = perfclock_open("/dev/null");
	if (!tap_ok(c != NULL, "horizon: a module with horizons opens"))
		return;
	bt = n_get_time;
	bh = n_get_horizon;
	bi = n_get_info;
	ok = perfclock_horizon(c, &h) == 0 && h == 4000000;
	tap_ok(ok && n_get_horizon == bh && n_get_time == bt && n_get_info == bi,
	       "horizon: the page holds one: perfclock_horizon() returns the page's horizon_ns, no system call");
	ok = perfclock_get_info(c, &info) == 0;
	tap_ok(ok && (info.flags & PERFCLOCK_CLOCK_HORIZON_EXACT) &&
	       (info.flags & PERFCLOCK_CLOCK_HORIZON_PAGE) &&
	       info.inflight_estimate_ns == 0 && info.horizon_age_ns > 0,
	       "horizon: get_info: exact, from the page, age reported (%llu ns)",
	       (unsigned long long)info.horizon_age_ns);
	page.horizon_ns = 4500000;
	tap_ok(perfclock_horizon(c, &h) == 0 && h == 4500000,
	       "horizon: follows the page when the module moves it");

	page.flags &= ~PERFCLOCK_PAGE_HORIZON_VALID;
	hz_answer = 6000000;
	bh = n_get_horizon;
	memset(&hz_asked, 0xff, sizeof(hz_asked));
	tap_ok(perfclock_horizon(c, &h) == 0 && h == 6000000 &&
	       n_get_horizon == bh + 1 &&
	       hz_asked.clockid == PERFCLOCK_HORIZON_PERF_CLOCK &&
	       hz_asked.flags == 0 && !hz_asked.reserved[0] &&
	       !hz_asked.generation && !hz_asked.__reserved0,
	       "horizon: a page without one: PERFCLOCK_IOC_GET_HORIZON for perf_clock(), flags 0, reserved zero");
	/* Its name without blocking: get_info takes a horizon, the name not. */
	bh = n_get_horizon;
	name = perfclock_clock_horizon_name(c);
	ok = n_get_horizon == bh;
	tap_ok(ok && perfclock_get_info(c, &info) == 0 &&
	       n_get_horizon == bh + 1 &&
	       !strcmp(name, perfclock_horizon_name(&info)),
	       "horizon name: perfclock_clock_horizon_name() asks no GET_HORIZON (get_info does, and names it the same: \"%s\")",
	       name);
	page.flags |= PERFCLOCK_PAGE_HORIZON_VALID;
	tap_ok(perfclock_horizon(c, &h) == 0 && h == 6000000,
	       "horizon: never goes down (the page's older 4.5 ms after the ioctl's 6 ms)");
	page.seq = 9;	/* a writer that never finishes */
	hz_answer = 7000000;
	bh = n_get_horizon;
	tap_ok(perfclock_horizon(c, &h) == 0 && h == 7000000 &&
	       n_get_horizon == bh + 1,
	       "horizon: a page stuck mid-update: bounded retries, then the ioctl");
	page.seq = 10;
	page.flags &= ~PERFCLOCK_PAGE_HORIZON_VALID;
	hz_errno = EINTR;
	tap_ok(perfclock_horizon(c, &h) == -EINTR,
	       "horizon: other ioctl errors are returned (-EINTR)");
	hz_errno = 0;

	hz_answer = 8000000;
	tap_ok(perfclock_horizon_sync(c, 0, &h) == 0 && h == 8000000 &&
	       hz_asked.flags == 0 &&
	       hz_asked.clockid == PERFCLOCK_HORIZON_PERF_CLOCK,
	       "horizon_sync: the blocking ioctl, a normal grace period");
	hz_answer = 9000000;
	tap_ok(perfclock_horizon_sync(c, PERFCLOCK_HORIZON_SYNC_EXPEDITED, &h) == 0 &&
	       h == 9000000 && hz_asked.flags == PERFCLOCK_HORIZON_EXPEDITED,
	       "horizon_sync: EXPEDITED asks for PERFCLOCK_HORIZON_EXPEDITED");
	hz_errno = EPERM;
	tap_ok(perfclock_horizon_sync(c, PERFCLOCK_HORIZON_SYNC_EXPEDITED, &h) == -EPERM,
	       "horizon_sync: an unprivileged expedited request is -EPERM");
	hz_errno = 0;
	tap_ok(perfclock_horizon_sync(c, 2, &h) == -EINVAL,
	       "horizon_sync: unknown flags are -EINVAL");
	perfclock_close(c);

	/* An older module: no PERFCLOCK_INFO_HORIZON. */
	fake_reset();
	est = 1000 + PERFCLOCK_HORIZON_ESTIMATE_INFLIGHT_NS;
	c = perfclock_open("/dev/null");
	bh = n_get_horizon;
	lo = perfclock_rdtsc_ordered();
	ok = c && perfclock_horizon(c, &h) == 0;
	hi = perfclock_rdtsc_ordered();
	tap_ok(ok && h + est >= lo && h + est <= hi && n_get_horizon == bh,
	       "horizon: a module without horizons: the estimate, clock - skew estimate - in-flight allowance, no GET_HORIZON");
	ok = c && perfclock_get_info(c, &info) == 0;
	tap_ok(ok && !(info.flags & PERFCLOCK_CLOCK_HORIZON_EXACT) &&
	       info.inflight_estimate_ns == PERFCLOCK_HORIZON_ESTIMATE_INFLIGHT_NS &&
	       info.horizon_age_ns >= est,
	       "horizon: get_info flags it as an estimate (allowance %llu ns, age %llu ns)",
	       (unsigned long long)info.inflight_estimate_ns,
	       (unsigned long long)info.horizon_age_ns);
	tap_ok(c && perfclock_horizon_sync(c, 0, &h) == -EOPNOTSUPP &&
	       n_get_horizon == bh,
	       "horizon_sync: a module without horizons is -EOPNOTSUPP, no ioctl");
	perfclock_close(c);
	/* A fresh clock: horizons never go down, estimates included. */
	c = perfclock_open("/dev/null");
	page.timer_lateness_ns = 50000000;
	lo = perfclock_rdtsc_ordered();
	ok = c && perfclock_horizon(c, &h) == 0;
	hi = perfclock_rdtsc_ordered();
	tap_ok(ok && h + 1000 + 50000000 >= lo && h + 1000 + 50000000 <= hi,
	       "horizon: the estimate's allowance grows to the CPU stall the module measured (50 ms)");
	perfclock_close(c);

	/* A module that says it has horizons, then refuses them: ENOTTY. */
	fake_reset();
	fake_info.flags |= PERFCLOCK_INFO_HORIZON;
	hz_errno = ENOTTY;
	c = perfclock_open("/dev/null");
	bh = n_get_horizon;
	lo = perfclock_rdtsc_ordered();
	ok = c && perfclock_horizon(c, &h) == 0;
	hi = perfclock_rdtsc_ordered();
	ok = ok && h + est >= lo && h + est <= hi;
	ok = ok && perfclock_horizon(c, &h) == 0 && n_get_horizon == bh + 1;
	tap_ok(ok, "horizon: GET_HORIZON refused (ENOTTY): the estimate, and no more tries");
	ok = c && perfclock_get_info(c, &info) == 0;
	tap_ok(ok && !(info.flags & PERFCLOCK_CLOCK_HORIZON_EXACT),
	       "horizon: ... and get_info no longer says exact");
	perfclock_close(c);
	fake_reset();
}

/*
 * No page mapped (here: a failed mmap): the skew and stall estimates are
 * refreshed from PERFCLOCK_IOC_GET_INFO, at most every 10 ms (issue 13,
 * item 2: they stayed at their value at open, 0 for a device opened
 * while stable).
 */
static uint64_t mono_now(void);

void test_bounds_no_page(void)
{
	struct perfclock *c;
	struct timespec ts = { 0, 15000000 };
	unsigned long bi;
	uint64_t h = 0, lo, hi, lb;
	int i, ok;

	fake_reset();
	fake_info.skew_estimate_ns = 0;		/* stable at open */
	fake_info.flags |= PERFCLOCK_INFO_SCHED_CLOCK_STABLE;
	fail_mmap = 1;
	c = perfclock_open("/dev/null");
	if (!tap_ok(c != NULL, "no page: a device whose page cannot be mapped opens"))
		return;
	/* later: unstable, 5 ms skew estimate, 50 ms stalls seen */
	fake_info.flags &= ~PERFCLOCK_INFO_SCHED_CLOCK_STABLE;
	fake_info.skew_estimate_ns = 5000000;
	fake_info.timer_lateness_ns = 50000000;
	nanosleep(&ts, NULL);
	lo = perfclock_rdtsc_ordered();
	ok = perfclock_horizon(c, &h) == 0;
	hi = perfclock_rdtsc_ordered();
	tap_ok(ok && h + 5000000 + 50000000 >= lo &&
	       h + 5000000 + 50000000 <= hi,
	       "no page: the estimated horizon follows the module's skew (5 ms) and stall (50 ms) estimates after open");
	lo = perfclock_rdtsc_ordered();
	ok = perfclock_read_lower_bound(c, &lb) == 0;
	hi = perfclock_rdtsc_ordered();
	tap_ok(ok && lb + 5000000 >= lo && lb + 5000000 <= hi,
	       "no page: so does the lower bound (ioctl read - 5 ms)");
	bi = n_get_info;
	lo = mono_now();
	for (i = 0; i < 1000; i++) {
		perfclock_horizon(c, &h);
		perfclock_read_lower_bound(c, &lb);
	}
	hi = mono_now();
	tap_ok(n_get_info - bi <= 1 + (hi - lo) / 10000000,
	       "no page: 2000 calls in %.1f ms ask GET_INFO %lu times (at most every 10 ms)",
	       (hi - lo) / 1e6, n_get_info - bi);
	perfclock_close(c);
	fake_reset();
}

static uint64_t mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void test_horizon_clockid(void)
{
	struct perfclock_clock_info info;
	struct perfclock *c;
	unsigned long bm, bu, bh;
	uint64_t h = 0, lo, hi, v;
	int ok, fds;

	/* No /dev/perfclock: the estimate. */
	fake_reset();
	fds = count_fds();
	bm = n_mmap;
	c = perfclock_open_clockid(CLOCK_MONOTONIC);
	lo = mono_now();
	ok = c && perfclock_horizon(c, &h) == 0;
	hi = mono_now();
	/* CLOCK_MONOTONIC: every horizon less the NTP slope margin too. */
	tap_ok(ok && n_mmap == bm &&
	       h + PERFCLOCK_HORIZON_ESTIMATE_INFLIGHT_NS + PERFCLOCK_NTP_SLOPE_MARGIN_NS >= lo &&
	       h + PERFCLOCK_HORIZON_ESTIMATE_INFLIGHT_NS + PERFCLOCK_NTP_SLOPE_MARGIN_NS <= hi,
	       "clockid horizon: no device: clock_gettime - the in-flight estimate - the NTP slope margin");
	ok = c && perfclock_get_info(c, &info) == 0;
	tap_ok(ok && !(info.flags & PERFCLOCK_CLOCK_HORIZON_EXACT) &&
	       info.inflight_estimate_ns == PERFCLOCK_HORIZON_ESTIMATE_INFLIGHT_NS,
	       "clockid horizon: no device: get_info says estimate");
	tap_ok(c && perfclock_horizon_sync(c, 0, &h) == -EOPNOTSUPP,
	       "clockid horizon: no device: horizon_sync is -EOPNOTSUPP");
	perfclock_close(c);

	/* A device without horizons is not kept. */
	fake_reset();
	devnode_present = 1;
	bm = n_mmap;
	bu = n_munmap;
	c = perfclock_open_clockid(CLOCK_MONOTONIC);
	ok = c && perfclock_get_info(c, &info) == 0;
	tap_ok(ok && n_mmap == bm + 1 && n_munmap == bu + 1 &&
	       count_fds() == fds &&
	       !(info.flags & PERFCLOCK_CLOCK_HORIZON_EXACT) &&
	       !(info.flags & PERFCLOCK_CLOCK_PAGE_MAPPED),
	       "clockid horizon: a module without horizons is closed again, estimate");
	perfclock_close(c);

	/*
	 * A device with horizons, in this clock: exact except the NTP slope
	 * (CLOCK_MONOTONIC), each of the module's horizons less the margin.
	 */
	fake_reset();
	devnode_present = 1;
	fake_info.flags |= PERFCLOCK_INFO_HORIZON;
	page.flags |= PERFCLOCK_PAGE_HORIZON_VALID;
	page.horizon_ns = 1;	/* perf_clock()'s: not ours */
	page.horizon_clockids = 1U << CLOCK_MONOTONIC;
	page.horizon_clockid_ns[CLOCK_MONOTONIC] = 123456789;
	c = perfclock_open_clockid(CLOCK_MONOTONIC);
	bh = n_get_horizon;
	ok = c && perfclock_horizon(c, &h) == 0 && h == 123456789 - PERFCLOCK_NTP_SLOPE_MARGIN_NS;
	tap_ok(ok && n_get_horizon == bh,
	       "clockid horizon: the page's horizon_clockid_ns[CLOCK_MONOTONIC] less the NTP slope margin, no system call");
	ok = c && perfclock_get_info(c, &info) == 0;
	tap_ok(ok && !(info.flags & PERFCLOCK_CLOCK_HORIZON_EXACT) &&
	       (info.flags & PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE) &&
	       (info.flags & PERFCLOCK_CLOCK_HORIZON_PAGE) &&
	       info.backend == PERFCLOCK_BACKEND_CLOCKID &&
	       info.clockid == CLOCK_MONOTONIC && info.inflight_estimate_ns == 0,
	       "clockid horizon: get_info says exact except the NTP slope, clockid backend (\"%s\")",
	       ok ? perfclock_horizon_name(&info) : "-");
	lo = mono_now();
	ok = c && perfclock_read(c, &v) == 0;
	hi = mono_now();
	tap_ok(ok && lo <= v && v <= hi && perfclock_read_ioctl(c, &v) == -EOPNOTSUPP,
	       "clockid horizon: reads stay clock_gettime's");
	page.horizon_clockids = 0;
	hz_answer = 223456789;
	ok = c && perfclock_horizon(c, &h) == 0 && h == 223456789 - PERFCLOCK_NTP_SLOPE_MARGIN_NS;
	tap_ok(ok && n_get_horizon == bh + 1 &&
	       hz_asked.clockid == CLOCK_MONOTONIC && hz_asked.flags == 0,
	       "clockid horizon: no bit for this clock on the page: GET_HORIZON with clockid CLOCK_MONOTONIC");
	hz_answer = 323456789;
	ok = c && perfclock_horizon_sync(c, PERFCLOCK_HORIZON_SYNC_EXPEDITED, &h) == 0;
	tap_ok(ok && h == 323456789 - PERFCLOCK_NTP_SLOPE_MARGIN_NS && hz_asked.clockid == CLOCK_MONOTONIC &&
	       hz_asked.flags == PERFCLOCK_HORIZON_EXPEDITED,
	       "clockid horizon_sync: expedited, in this clock");
	bu = n_munmap;
	perfclock_close(c);
	tap_ok(n_munmap == bu + 1 && count_fds() == fds,
	       "clockid horizon: close unmaps the page and closes the device");

	fake_reset();
	devnode_present = 1;
	fake_info.flags |= PERFCLOCK_INFO_HORIZON;
	page.flags |= PERFCLOCK_PAGE_HORIZON_VALID;
	page.horizon_clockids = 1U << CLOCK_MONOTONIC;
	hz_answer = 42 + PERFCLOCK_NTP_SLOPE_MARGIN_NS;
	c = perfclock_open_clockid(CLOCK_BOOTTIME);
	ok = c && perfclock_horizon(c, &h) == 0 && h == 42;
	tap_ok(ok && hz_asked.clockid == CLOCK_BOOTTIME,
	       "clockid horizon: another clock's bit is not ours: GET_HORIZON with CLOCK_BOOTTIME");
	perfclock_close(c);
	fake_reset();
}

/* ---- the generation: horizons that restart ---- */

static int deliver_count(void *arg, const struct perfclock_event *ev)
{
	uint64_t *last = arg;

	/* last[0]: events, last[1]: the last time, last[2]: out of order */
	if (last[0] && ev->time < last[1])
		last[2]++;
	last[0]++;
	last[1] = ev->time;
	return 0;
}

/* A module that restarts its horizons; and an older one that cannot. */
void test_horizon_generation(void)
{
	struct perfclock_queue_config cfg;
	struct perfclock_queue_stats st;
	struct perfclock_clock_info info;
	struct perfclock_queue *q;
	struct perfclock *c;
	uint64_t h = 0, seen[3] = { 0, 0, 0 };
	uint32_t gen = 0;
	int ok, ret;

	fake_reset();
	fake_info.flags |= PERFCLOCK_INFO_HORIZON |
			   PERFCLOCK_INFO_HORIZON_GENERATION;
	page.flags |= PERFCLOCK_PAGE_HORIZON_VALID;
	page.horizon_ns = 10000000;
	page.horizon_generation = 1;
	c = perfclock_open("/dev/null");
	if (!tap_ok(c != NULL, "generation: a module with generations opens"))
		return;
	ok = perfclock_horizon_gen(c, &h, &gen) == 0 && h == 10000000 &&
	     gen == 1;
	tap_ok(ok, "generation: the first horizon is generation 1, not a restart");
	tap_ok(perfclock_horizon(c, &h) == 0 && h == 10000000,
	       "generation: perfclock_horizon() in the same generation: 0");

	/* sched_clock went unstable: generation 2 starts lower. */
	page.horizon_ns = 4000000;
	page.horizon_generation = 2;
	h = 777;
	tap_ok(perfclock_horizon(c, &h) == -ESTALE && h == 777,
	       "generation: a restart: perfclock_horizon() fails with ESTALE, *ns untouched");
	tap_ok(perfclock_horizon(c, &h) == -ESTALE,
	       "generation: ... and keeps failing until the restart is taken");
	tap_ok(perfclock_horizon_sync(c, 0, &h) == -ESTALE,
	       "generation: perfclock_horizon_sync() fails with ESTALE too");
	ok = perfclock_get_info(c, &info) == 0;
	tap_ok(ok && info.horizon_generation == 2,
	       "generation: get_info reports generation %u and takes nothing",
	       info.horizon_generation);
	ret = perfclock_horizon_gen(c, &h, &gen);
	tap_ok(ret == PERFCLOCK_HORIZON_RESTARTED && h == 4000000 && gen == 2,
	       "generation: perfclock_horizon_gen() reports the restart (ret %d), "
	       "the new horizon is LOWER (%llu < 10000000: reset, not max), gen %u",
	       ret, (unsigned long long)h, gen);
	tap_ok(perfclock_horizon_gen(c, &h, &gen) == 0 && h == 4000000 &&
	       perfclock_horizon(c, &h) == 0 && h == 4000000,
	       "generation: reported once; then perfclock_horizon() works again");
	page.horizon_ns = 3000000;
	tap_ok(perfclock_horizon(c, &h) == 0 && h == 4000000,
	       "generation: within generation 2 horizons never go down");

	/* A sample of the old generation (another thread's, late): dropped. */
	page.flags &= ~PERFCLOCK_PAGE_HORIZON_VALID;
	hz_answer = 20000000;
	hz_answer_gen = 1;
	tap_ok(perfclock_horizon(c, &h) == 0 && h == 4000000,
	       "generation: an older generation's horizon (ioctl, gen 1, 20 ms) "
	       "does not undo the reset: %llu", (unsigned long long)h);
	hz_answer = 5000000;
	hz_answer_gen = 2;
	tap_ok(perfclock_horizon(c, &h) == 0 && h == 5000000,
	       "generation: the ioctl's generation is followed too");
	hz_answer_gen = 3;
	hz_answer = 1000000;
	ret = perfclock_horizon_gen(c, &h, &gen);
	tap_ok(ret == PERFCLOCK_HORIZON_RESTARTED && h == 1000000 && gen == 3,
	       "generation: a restart seen through the ioctl is reported");

	/* The queue restarts its limit. */
	perfclock_queue_config_init(&cfg);
	cfg.nr_sources = 1;
	cfg.deliver = deliver_count;
	cfg.arg = seen;
	q = perfclock_queue_new(&cfg);
	if (tap_ok(q != NULL, "generation: a queue")) {
		perfclock_queue_push(q, 0, 8000000, NULL, 0);
		perfclock_queue_push(q, 0, 9000000, NULL, 0);
		perfclock_queue_push(q, 0, 12000000, NULL, 0);
		perfclock_queue_flush_until(q, 10000000);
		/* generation 2: stamps below the old limit and what emitted */
		ret = (int)perfclock_queue_restart(q);
		perfclock_queue_push(q, 0, 4500000, NULL, 0);
		perfclock_queue_push(q, 0, 4200000, NULL, 0);
		perfclock_queue_flush_until(q, 5000000);
		perfclock_queue_get_stats(q, &st);
		tap_ok(ret == 1 && st.restarts == 1 && st.late == 0 &&
		       st.below_horizon == 0 && st.emitted == 5 &&
		       st.last_limit == 5000000 && seen[0] == 5 &&
		       seen[2] == 1,
		       "generation: perfclock_queue_restart() emits what it holds (1), "
		       "forgets the old limit: the new generation's events are in "
		       "order among themselves, not late (late %llu, below %llu, "
		       "limit %llu, restarts %llu)",
		       (unsigned long long)st.late,
		       (unsigned long long)st.below_horizon,
		       (unsigned long long)st.last_limit,
		       (unsigned long long)st.restarts);
		perfclock_queue_free(q);
	}
	memset(seen, 0, sizeof(seen));
	q = perfclock_queue_new(&cfg);
	if (q) {
		/* Without the restart: the same events are late. */
		perfclock_queue_push(q, 0, 8000000, NULL, 0);
		perfclock_queue_push(q, 0, 12000000, NULL, 0);
		perfclock_queue_flush_until(q, 10000000);
		perfclock_queue_flush_all(q);
		perfclock_queue_push(q, 0, 4500000, NULL, 0);
		perfclock_queue_flush_until(q, 5000000);
		perfclock_queue_get_stats(q, &st);
		tap_ok(st.late == 1 && st.below_horizon == 1,
		       "generation: without perfclock_queue_restart() the same event is late (%llu) and below the void limit",
		       (unsigned long long)st.late);
		perfclock_queue_free(q);
	}
	tap_ok(perfclock_queue_restart(NULL) == -EINVAL,
	       "generation: perfclock_queue_restart(NULL): -EINVAL");
	perfclock_close(c);

	/* An older module: no PERFCLOCK_INFO_HORIZON_GENERATION. */
	fake_reset();
	fake_info.flags |= PERFCLOCK_INFO_HORIZON;
	page.flags |= PERFCLOCK_PAGE_HORIZON_VALID;
	page.horizon_ns = 10000000;
	page.horizon_generation = 7;	/* reserved space, whatever it holds */
	c = perfclock_open("/dev/null");
	if (!tap_ok(c != NULL, "generation: an older module opens"))
		return;
	ok = perfclock_horizon(c, &h) == 0 && h == 10000000;
	page.horizon_ns = 4000000;
	page.horizon_generation = 8;
	ok = ok && perfclock_horizon(c, &h) == 0 && h == 10000000;
	ok = ok && perfclock_horizon_gen(c, &h, &gen) == 0 && gen == 1 &&
	     h == 10000000;
	tap_ok(ok, "generation: without the flag the page's field is ignored: "
	       "no restart, horizons never go down (%llu), generation 1",
	       (unsigned long long)h);
	tap_ok(perfclock_horizon_gen(NULL, &h, &gen) == -EINVAL &&
	       perfclock_horizon_gen(c, &h, NULL) == -EINVAL,
	       "generation: perfclock_horizon_gen() bad arguments: -EINVAL");
	perfclock_close(c);
}

/* A paravirtual sched_clock: the horizon is the host's promise, flagged. */
void test_horizon_paravirt(void)
{
	struct perfclock_clock_info info;
	struct perfclock *c;
	int ok;

	fake_reset();
	fake_info.flags |= PERFCLOCK_INFO_HORIZON;
	page.flags |= PERFCLOCK_PAGE_HORIZON_VALID;
	page.horizon_ns = 4000000;
	c = perfclock_open("/dev/null");
	ok = c && perfclock_get_info(c, &info) == 0 &&
	     (info.flags & PERFCLOCK_CLOCK_HORIZON_EXACT) &&
	     !(info.flags & PERFCLOCK_CLOCK_HORIZON_HOST_PROMISE);
	tap_ok(ok, "paravirt: a native sched_clock: exact, no host promise");
	perfclock_close(c);
	fake_info.flags |= PERFCLOCK_INFO_SCHED_CLOCK_PARAVIRT;
	c = perfclock_open("/dev/null");
	ok = c && perfclock_get_info(c, &info) == 0 &&
	     (info.flags & PERFCLOCK_CLOCK_HORIZON_EXACT) &&
	     (info.flags & PERFCLOCK_CLOCK_HORIZON_HOST_PROMISE);
	tap_ok(ok, "paravirt: PERFCLOCK_INFO_SCHED_CLOCK_PARAVIRT: exact, PERFCLOCK_CLOCK_HORIZON_HOST_PROMISE set");
	perfclock_close(c);
	/* A use_clockid clock: the flag follows the clocksource. */
	{
		char cs[64] = "";
		FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
		int pv;

		if (f) {
			if (!fgets(cs, sizeof(cs), f))
				cs[0] = 0;
			fclose(f);
		}
		cs[strcspn(cs, "\n")] = 0;
		pv = !strcmp(cs, "kvm-clock") || !strcmp(cs, "xen") ||
		     !strncmp(cs, "hyperv_clocksource_", 19);
		devnode_present = 1;
		c = perfclock_open_clockid(CLOCK_MONOTONIC);
		ok = c && perfclock_get_info(c, &info) == 0 &&
		     (info.flags & PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE) &&
		     !!(info.flags & PERFCLOCK_CLOCK_HORIZON_HOST_PROMISE) == pv;
		tap_ok(ok, "paravirt: CLOCK_MONOTONIC from the module, clocksource '%s': host promise %s",
		       cs, pv ? "set" : "clear");
		perfclock_close(c);
		devnode_present = 0;
	}
	/* An estimate promises nothing exact: no flag. */
	fake_info.flags &= ~PERFCLOCK_INFO_HORIZON;
	c = perfclock_open("/dev/null");
	ok = c && perfclock_get_info(c, &info) == 0 &&
	     !(info.flags & (PERFCLOCK_CLOCK_HORIZON_EXACT |
			     PERFCLOCK_CLOCK_HORIZON_HOST_PROMISE));
	tap_ok(ok, "paravirt: a module without horizons: an estimate, no host promise flag");
	perfclock_close(c);
}
