// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The module backend on the host, where the module cannot load: the
 * library's own code runs unchanged against a fake /dev/perfclock
 * (fake_device.c: /dev/null, whose ioctl and mmap are answered per the
 * UAPI through --wrap; the fake clock is the TSC itself).
 *
 * Checks, here: the page fast path makes no ioctl; a page without
 * TSC_VALID or stuck mid-update falls back to the ioctl; the lower bound
 * is coarse (or now) minus the skew estimate, following the page's when
 * it grows; ABI/page version handling; error mapping; check_attr; reads
 * from threads racing a page writer are never torn; the steady state
 * allocates nothing; the perf page backend. In test_device_horizon.c:
 * the flush horizon (from the page without a system call when it holds
 * one, else PERFCLOCK_IOC_GET_HORIZON; an older module gives the
 * estimate, flagged; the clockid backend takes its exact horizons from
 * the device: open() is wrapped too, /dev/perfclock is the fake or
 * absent, whatever this machine has).
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
#include "horizon_membarrier.h"
#include "tap.h"
#include "fake_device.h"

static int ignore(void *arg, const struct perfclock_event *ev)
{
	(void)arg;
	(void)ev;
	return 0;
}

/*
 * Steady state: after a warm-up, rounds of the same shape (64 sources,
 * bursts, nested records, records of mixed sizes) allocate nothing.
 */
static void test_steady_state(struct perfclock *c)
{
	struct perfclock_queue_config cfg;
	struct perfclock_queue *q;
	unsigned char rec[256];
	unsigned long before = 0;
	uint64_t t = 1000000000ULL, seed = 1;
	int round, k, i;

	memset(rec, 0x5a, sizeof(rec));
	perfclock_queue_config_init(&cfg);
	cfg.nr_sources = 64;
	cfg.deliver = ignore;
	q = perfclock_queue_new(&cfg);
	for (round = 0; round < 400; round++) {
		if (round == 200)
			before = n_alloc;
		for (k = 0; k < 64; k++) {
			for (i = 0; i < 8; i++) {
				uint64_t ts = t - 50000 + (uint64_t)k * 100 +
					      (uint64_t)i * 10;

				seed = seed * 6364136223846793005ULL + 1;
				if ((seed >> 60) == 0)
					ts -= 30000;	/* nested */
				perfclock_queue_push(q, (uint32_t)k, ts, rec,
						     24 + (uint32_t)(seed >> 59) * 7);
			}
		}
		perfclock_queue_flush_until(q, t - 100000);
		t += 20000;
	}
	tap_ok(n_alloc == before,
	       "queue: 200 steady-state rounds (64 sources, 102400 events, mixed sizes, nested) allocate nothing (%lu allocations)",
	       n_alloc - before);
	perfclock_queue_free(q);

	before = n_alloc;
	for (i = 0; i < 1000; i++) {
		uint64_t v;

		perfclock_read(c, &v);
		perfclock_read_lower_bound(c, &v);
		perfclock_horizon(c, &v);
	}
	tap_ok(n_alloc == before,
	       "device: clock reads and horizons allocate nothing");

	/*
	 * Out of memory: a push that cannot be queued changes nothing
	 * (issue 13: the source's state used to be updated for it).
	 */
	{
		struct perfclock_queue_stats st;
		uint64_t j;
		int ret;

		perfclock_queue_config_init(&cfg);
		cfg.nr_sources = 1;
		cfg.deliver = ignore;
		q = perfclock_queue_new(&cfg);
		for (j = 0; j < 64; j++)	/* fills the first FIFO array */
			perfclock_queue_push(q, 0, 1000 + j, rec, 8);
		fail_alloc = 1;
		/* below the last push: it would count as out of order */
		ret = perfclock_queue_push(q, 0, 500, rec, 300);
		fail_alloc = 0;
		perfclock_queue_get_stats(q, &st);
		tap_ok(ret == -ENOMEM && st.pushed == 64 && st.queued == 64 &&
		       st.out_of_order_in_source == 0,
		       "queue: a push that runs out of memory is -ENOMEM and changes nothing (pushed %llu, out of order %llu)",
		       (unsigned long long)st.pushed,
		       (unsigned long long)st.out_of_order_in_source);
		perfclock_queue_free(q);
	}
}

/* ---- torn-read race ---- */

static volatile int stop;
/* PERFCLOCK_TEST_SLOW (set for valgrind runs): fewer iterations. */
static int iters = 300000;
struct race {
	struct perfclock *c;
	unsigned long bad, reads;
};

static void *writer(void *p)
{
	unsigned int k = 0;

	(void)p;
	while (!stop) {
		/* Two consistent pairs giving the same clock; a torn mix of
		 * them gives tsc/2 or tsc*2. */
		uint32_t shift = (k++ & 1) ? 11 : 10;

		__atomic_store_n(&page.seq, page.seq + 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		__atomic_store_n(&page.tsc_shift, shift, __ATOMIC_RELAXED);
		for (volatile int d = 0; d < 50; d++)
			;
		__atomic_store_n(&page.tsc_mult, 1ULL << shift,
				 __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		__atomic_store_n(&page.seq, page.seq + 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *reader(void *p)
{
	struct race *r = p;
	int i;

	for (i = 0; i < iters; i++) {
		uint64_t lo = perfclock_rdtsc_ordered(), v = 0, hi;
		int err = perfclock_read(r->c, &v);

		hi = perfclock_rdtsc_ordered();
		r->reads++;
		/* -EAGAIN never: the library falls back to the ioctl */
		if (err || v < lo || v > hi)
			r->bad++;
	}
	return NULL;
}

/*
 * The perf page backend: perf's own time_zero conversion of a perf mmap
 * page (here a fake one: time_mult 1, time_shift 0, so ns = tsc + zero).
 */
static struct perf_event_mmap_page fake_pc __attribute__((aligned(4096)));

/*
 * The same race on perf's page, whose first try perfclock_read() inlines
 * too: the kernel's perf_event_update_userpage() makes lock odd, writes,
 * makes it even. A torn (mult, shift) gives tsc/2 or tsc*2.
 */
static void *perf_writer(void *p)
{
	unsigned int k = 0;

	(void)p;
	while (!stop) {
		uint16_t shift = (k++ & 1) ? 11 : 10;

		__atomic_store_n(&fake_pc.lock, fake_pc.lock + 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		__atomic_store_n(&fake_pc.time_shift, shift, __ATOMIC_RELAXED);
		for (volatile int d = 0; d < 50; d++)
			;
		__atomic_store_n(&fake_pc.time_mult, 1U << shift, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		__atomic_store_n(&fake_pc.lock, fake_pc.lock + 1, __ATOMIC_RELAXED);
		for (volatile int d = 0; d < 50; d++)
			;
	}
	return NULL;
}

/* Readers of perf's page: no ioctl behind them, so -EAGAIN may come. */
static void *perf_reader(void *p)
{
	struct race *r = p;
	int i;

	for (i = 0; i < iters; i++) {
		uint64_t lo = perfclock_rdtsc_ordered(), v = 0, hi;
		int err = perfclock_read(r->c, &v);

		hi = perfclock_rdtsc_ordered();
		if (err == -EAGAIN)
			continue;
		r->reads++;
		if (err || v < lo || v > hi)
			r->bad++;
	}
	return NULL;
}

static void test_perf_page(void)
{
	struct perfclock_clock_info info;
	struct perf_event_attr attr;
	struct perfclock *c;
	unsigned long bt, bi;
	uint64_t a, b, v, h, lo;
	int ok, fds, i;

	fake_reset();
	fds = count_fds();
	memset(&fake_pc, 0, sizeof(fake_pc));
	fake_pc.time_mult = 1;
	fake_pc.time_shift = 0;
	fake_pc.time_zero = 1000;
	fake_pc.lock = 4;
	errno = 0;
	c = perfclock_open_perf_page(&fake_pc);
	tap_ok(!c && errno == EOPNOTSUPP,
	       "perf page: without cap_user_time_zero, EOPNOTSUPP (errno %d)", errno);
	errno = 0;
	tap_ok(!perfclock_open_perf_page(NULL) && errno == EINVAL,
	       "perf page: NULL is EINVAL");

	fake_pc.cap_user_time_zero = 1;
	bt = n_get_time;
	bi = n_get_info;
	c = perfclock_open_perf_page(&fake_pc);
	ok = c != NULL;
	for (i = 0; ok && i < 1000; i++) {
		a = perfclock_rdtsc_ordered() + 1000;
		ok = perfclock_read(c, &v) == 0;
		b = perfclock_rdtsc_ordered() + 1000;
		ok = ok && a <= v && v <= b;
	}
	tap_ok(ok && n_get_time == bt && n_get_info == bi && count_fds() == fds,
	       "perf page: no module: perfclock_read is perf's conversion, bracketed, no device opened");
	tap_ok(c && perfclock_read_lower_bound(c, &v) == 0 &&
	       v <= perfclock_rdtsc_ordered() + 1000,
	       "perf page: the lower bound is a read of the clock (one clock: no skew)");
	tap_ok(c && perfclock_read_ioctl(c, &v) == -EOPNOTSUPP,
	       "perf page: perfclock_read_ioctl is -EOPNOTSUPP");
	lo = perfclock_rdtsc_ordered() + 1000;
	ok = c && perfclock_horizon(c, &h) == 0;
	tap_ok(ok && h + PERFCLOCK_HORIZON_ESTIMATE_INFLIGHT_NS >= lo &&
	       h + PERFCLOCK_HORIZON_ESTIMATE_INFLIGHT_NS <= perfclock_rdtsc_ordered() + 1000,
	       "perf page: no module: the horizon is the clock minus the in-flight estimate");
	ok = c && perfclock_get_info(c, &info) == 0;
	tap_ok(ok && info.backend == PERFCLOCK_BACKEND_PERF_PAGE && info.clockid == -1 &&
	       (info.flags & PERFCLOCK_CLOCK_GLOBAL) &&
	       (info.flags & PERFCLOCK_CLOCK_PAGE_TSC_VALID) &&
	       !(info.flags & PERFCLOCK_CLOCK_HORIZON_EXACT) &&
	       info.skew_estimate_ns == 0 &&
	       info.inflight_estimate_ns == PERFCLOCK_HORIZON_ESTIMATE_INFLIGHT_NS,
	       "perf page: get_info: perf page backend, one clock, TSC, horizon an estimate");
	memset(&attr, 0, sizeof(attr));
	attr.sample_type = PERF_SAMPLE_TIME;
	tap_ok(c && perfclock_check_attr(c, &attr) == 0,
	       "perf page: check_attr accepts events without use_clockid");
	attr.use_clockid = 1;
	attr.clockid = CLOCK_MONOTONIC;
	tap_ok(c && perfclock_check_attr(c, &attr) == -EINVAL,
	       "perf page: check_attr refuses use_clockid events");

	/* Race: 2 readers against a writer flipping consistent pairs. */
	fake_pc.time_zero = 0;
	fake_pc.time_shift = 10;
	fake_pc.time_mult = 1U << 10;
	{
		struct race r[2] = { { c, 0, 0 }, { c, 0, 0 } };
		pthread_t w, t[2];

		stop = 0;
		pthread_create(&w, NULL, perf_writer, NULL);
		for (i = 0; i < 2; i++)
			pthread_create(&t[i], NULL, perf_reader, &r[i]);
		for (i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		stop = 1;
		pthread_join(w, NULL);
		tap_ok(c && !r[0].bad && !r[1].bad && r[0].reads + r[1].reads > 0,
		       "perf page: %lu reads from 2 threads racing a page writer: none torn, all bracketed",
		       r[0].reads + r[1].reads);
	}
	fake_pc.time_mult = 1;
	fake_pc.time_shift = 0;
	fake_pc.time_zero = 1000;
	fake_pc.lock = 4;

	fake_pc.lock = 5;	/* an update that never ends */
	tap_ok(c && perfclock_read(c, &v) == -EAGAIN,
	       "perf page: a page stuck mid-update: bounded retries, -EAGAIN");
	fake_pc.lock = 6;
	fake_pc.cap_user_time_zero = 0;	/* the kernel withdrew it */
	tap_ok(c && perfclock_read(c, &v) == -EOPNOTSUPP &&
	       perfclock_read_lower_bound(c, &v) == -EOPNOTSUPP,
	       "perf page: cap_user_time_zero withdrawn: reads are -EOPNOTSUPP");
	fake_pc.cap_user_time_zero = 1;
	perfclock_close(c);

	/* With the module handing out horizons: exact, from its page. */
	fake_reset();
	devnode_present = 1;
	fake_info.flags |= PERFCLOCK_INFO_HORIZON;
	page.flags |= PERFCLOCK_PAGE_HORIZON_VALID;
	page.horizon_ns = 987654321;
	c = perfclock_open_perf_page(&fake_pc);
	bt = n_get_time;
	ok = c && perfclock_horizon(c, &h) == 0 && h == 987654321 &&
	     perfclock_read(c, &v) == 0 && n_get_time == bt;
	ok = ok && perfclock_get_info(c, &info) == 0 &&
	     info.backend == PERFCLOCK_BACKEND_PERF_PAGE &&
	     (info.flags & PERFCLOCK_CLOCK_HORIZON_EXACT);
	tap_ok(ok, "perf page: with the module: the module page's exact horizon, reads from perf's page");
	perfclock_close(c);
	devnode_present = 0;
	tap_ok(count_fds() == fds, "perf page: close leaves no fd open");
}

int main(void)
{
	struct perfclock_clock_info info;
	struct perf_event_attr attr;
	struct perfclock *c;
	uint64_t a, b, v, lb;
	unsigned long before;
	int i, ok, fds;

	/*
	 * The module's backend and the estimate where it has none: as on a
	 * kernel without membarrier (unit_membarrier.c tests that one).
	 */
	perfclock_mb__test_set_mode(PERFCLOCK_MB_TEST_UNAVAILABLE);

#if !defined(__x86_64__) && !defined(__i386__)
	tap_skip("device: fake page # SKIP the page fast path is x86 only");
	return tap_exit();
#endif
	if (getenv("PERFCLOCK_TEST_SLOW"))
		iters /= 30;
	fake_reset();
	c = perfclock_open("/dev/null");
	if (!tap_ok(c != NULL, "device: opens a device that answers GET_INFO (errno %d)",
		    c ? 0 : errno))
		return tap_exit();
	tap_ok(n_mmap == 1 && perfclock_get_info(c, &info) == 0 &&
	       info.backend == PERFCLOCK_BACKEND_DEVICE && info.clockid == -1 &&
	       (info.flags & PERFCLOCK_CLOCK_PAGE_MAPPED) &&
	       (info.flags & PERFCLOCK_CLOCK_PAGE_TSC_VALID) &&
	       !(info.flags & PERFCLOCK_CLOCK_GLOBAL) &&
	       info.skew_estimate_ns == 1000,
	       "device: maps the page read-only at offset 0; info reports page, TSC, skew estimate");

	before = n_get_time;
	ok = 1;
	a = 0;
	for (i = 0; i < iters / 3; i++) {
		if (perfclock_read(c, &v) || v < a)
			ok = 0;
		a = v;
	}
	tap_ok(ok && n_get_time == before,
	       "device: %d page reads, monotonic, zero ioctls (fast path)",
	       iters / 3);

	perfclock_read(c, &a);
	tap_ok(perfclock_read_ioctl(c, &v) == 0 && n_get_time == before + 1,
	       "device: read_ioctl goes through PERFCLOCK_IOC_GET_TIME");
	perfclock_read(c, &b);
	tap_ok(a <= v && v <= b, "device: ioctl read is bracketed by page reads");

	page.flags = 0;
	before = n_get_time;
	tap_ok(perfclock_read(c, &v) == 0 && n_get_time == before + 1,
	       "device: page without TSC_VALID: perfclock_read falls back to the ioctl");
	tap_ok(perfclock_read_lower_bound(c, &lb) == 0 && lb == 5000000 - 1000 &&
	       n_get_time == before + 1,
	       "device: lower bound = coarse_ns - skew estimate, no ioctl");
	page.skew_estimate_ns = 7000;
	tap_ok(perfclock_read_lower_bound(c, &lb) == 0 && lb == 5000000 - 7000,
	       "device: lower bound follows the page's skew estimate when it grows");
	page.skew_estimate_ns = 1000;
	page.flags = PERFCLOCK_PAGE_TSC_VALID;
	perfclock_read_lower_bound(c, &lb);
	perfclock_read(c, &v);
	tap_ok(lb <= v && lb + 1000 >= 5000000,
	       "device: with TSC_VALID the lower bound is now - skew, below a later exact read");

	page.seq = 7;	/* a writer that never finishes */
	before = n_get_time;
	tap_ok(perfclock_read(c, &v) == 0 && n_get_time == before + 1,
	       "device: page stuck mid-update: bounded retries, then the ioctl");
	tap_ok(perfclock_read_lower_bound(c, &lb) == 0 && n_get_time == before + 2,
	       "device: lower bound with a stuck page falls back to the ioctl too");
	page.seq = 8;

	memset(&attr, 0, sizeof(attr));
	attr.sample_type = PERF_SAMPLE_TIME;
	tap_ok(perfclock_check_attr(c, &attr) == 0,
	       "device: check_attr accepts events without use_clockid (local_clock)");
	attr.use_clockid = 1;
	attr.clockid = CLOCK_MONOTONIC;
	tap_ok(perfclock_check_attr(c, &attr) == -EINVAL,
	       "device: check_attr refuses events stamped with CLOCK_MONOTONIC");
	perfclock_fill_attr(c, &attr);
	tap_ok(!attr.use_clockid, "device: fill_attr clears use_clockid");

	test_steady_state(c);

	/* Race: 2 readers against a writer flipping consistent pairs. */
	{
		struct race r[2] = { { c, 0, 0 }, { c, 0, 0 } };
		pthread_t w, t[2];

		stop = 0;
		pthread_create(&w, NULL, writer, NULL);
		for (i = 0; i < 2; i++)
			pthread_create(&t[i], NULL, reader, &r[i]);
		for (i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		stop = 1;
		pthread_join(w, NULL);
		tap_ok(!r[0].bad && !r[1].bad,
		       "device: %lu reads from 2 threads racing a page writer: none torn, all bracketed",
		       r[0].reads + r[1].reads);
	}
	perfclock_close(c);
	tap_ok(n_munmap == 1, "device: close unmaps the page");

	test_horizon_device();
	test_bounds_no_page();
	test_horizon_clockid();
	test_horizon_generation();
	test_horizon_paravirt();
	test_horizon_percpu_device();
	test_perf_page();

	/* Versions and errors. */
	fds = count_fds();
	fake_reset();
	fake_info.abi_version = PERFCLOCK_ABI_VERSION + 1;
	errno = 0;
	c = perfclock_open("/dev/null");
	tap_ok(!c && errno == EPROTO && count_fds() == fds,
	       "device: another ABI version is EPROTO, fd closed (errno %d)", errno);

	fake_reset();
	fake_info.page_version = 2;
	before = n_mmap;
	c = perfclock_open("/dev/null");
	v = 0;
	tap_ok(c && n_mmap == before && perfclock_read(c, &v) == 0 && v,
	       "device: unknown page version: no mmap, exact reads through the ioctl");
	perfclock_close(c);

	fake_reset();
	fail_mmap = 1;
	c = perfclock_open("/dev/null");
	tap_ok(c && perfclock_get_info(c, &info) == 0 &&
	       !(info.flags & PERFCLOCK_CLOCK_PAGE_MAPPED) &&
	       perfclock_read(c, &v) == 0,
	       "device: a failed mmap leaves a working ioctl-only clock");
	perfclock_close(c);

	fake_reset();
	fail_info_errno = EINVAL;
	errno = 0;
	c = perfclock_open("/dev/null");
	tap_ok(!c && errno == ENOTTY && count_fds() == fds,
	       "device: GET_INFO refused (EINVAL) means not a perfclock device: ENOTTY");
	fake_reset();
	fail_info_errno = EFAULT;
	errno = 0;
	c = perfclock_open("/dev/null");
	tap_ok(!c && errno == EFAULT,
	       "device: other GET_INFO errors are passed through (EFAULT)");

	/* ABI 1 answered under magic 0xB2, now powerpc's (ioctl-number.rst). */
	tap_ok(PERFCLOCK_ABI_VERSION == 2 &&
	       _IOC_TYPE(PERFCLOCK_IOC_GET_INFO) == 0xC4 &&
	       _IOC_TYPE(PERFCLOCK_IOC_GET_TIME) == 0xC4 &&
	       _IOC_TYPE(PERFCLOCK_IOC_GET_HORIZON) == 0xC4,
	       "device: ABI 2 uses the magic 0xC4, free in mainline's ioctl-number.rst");
	fake_reset();
	fake_abi1 = 1;
	errno = 0;
	c = perfclock_open("/dev/null");
	tap_ok(!c && errno == EPROTO && count_fds() == fds,
	       "device: an ABI-1 module (GET_INFO only under 0xB2) is EPROTO, fd closed (errno %d)",
	       errno);
	fake_abi1 = 0;
	return tap_exit();
}
