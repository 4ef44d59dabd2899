// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The module backend on the host, where the module cannot load: the test
 * is linked with -Wl,--wrap=ioctl,--wrap=mmap,--wrap=munmap so that the
 * library's own code runs unchanged against a fake /dev/perfclock (a real
 * character device, /dev/null, whose ioctl and mmap are answered here per
 * the UAPI). The fake clock is the TSC itself (page: mult = 1 << shift,
 * offset 0; ioctl: rdtsc), so page and ioctl reads are comparable.
 *
 * Checks: the page fast path makes no ioctl; a page without TSC_VALID or
 * stuck mid-update falls back to the ioctl; the lower bound is coarse (or
 * now) minus the skew estimate, following the page's when it grows;
 * ABI/page version handling; error mapping; check_attr; reads from
 * threads racing a page writer are never torn. The flush horizon: from
 * the page without a system call when it holds one, else
 * PERFCLOCK_IOC_GET_HORIZON; an older module (no PERFCLOCK_INFO_HORIZON,
 * or ENOTTY) gives the estimate, flagged; the clockid backend takes its
 * exact horizons from the device (open() is wrapped too: /dev/perfclock
 * is the fake or absent, whatever this machine has).
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

static struct perfclock_page page __attribute__((aligned(4096)));
static struct perfclock_info fake_info;
static int fake_fd = -1;
static int fail_info_errno, fail_mmap;
/* An ABI-1 module: GET_INFO only under the old magic 0xB2. */
static int fake_abi1;
static unsigned long n_get_time, n_get_info, n_mmap, n_munmap;
/* GET_HORIZON: the errno to fail with, or the answer and what was asked. */
static int hz_errno;
static uint64_t hz_answer;
static struct perfclock_horizon hz_asked;
static unsigned long n_get_horizon;
/* open("/dev/perfclock"): the fake (/dev/null) if set, else ENOENT. */
static int devnode_present;

int __real_ioctl(int fd, unsigned long req, ...);
int __wrap_ioctl(int fd, unsigned long req, ...);
void *__real_mmap(void *a, size_t l, int p, int f, int fd, off_t o);
void *__wrap_mmap(void *a, size_t l, int p, int f, int fd, off_t o);
int __real_munmap(void *a, size_t l);
int __wrap_munmap(void *a, size_t l);
int __real_open(const char *path, int flags, ...);
int __wrap_open(const char *path, int flags, ...);
/* Allocation counting, for the steady-state test (library calls only). */
void *__real_malloc(size_t n);
void *__wrap_malloc(size_t n);
void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);
void *__real_calloc(size_t a, size_t b);
void *__wrap_calloc(size_t a, size_t b);
static unsigned long n_alloc;
static int fail_alloc;	/* malloc and realloc fail: ENOMEM paths */

void *__wrap_malloc(size_t n)
{
	n_alloc++;
	if (fail_alloc) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_malloc(n);
}

void *__wrap_realloc(void *p, size_t n)
{
	n_alloc++;
	if (fail_alloc) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_realloc(p, n);
}

void *__wrap_calloc(size_t a, size_t b)
{
	n_alloc++;
	return __real_calloc(a, b);
}

static int is_fake(int fd)
{
	char path[64], target[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return 0;
	target[n] = 0;
	return fake_fd >= 0 && !strcmp(target, "/dev/null");
}

int __wrap_ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (!is_fake(fd))
		return __real_ioctl(fd, req, arg);
	if (fake_abi1) {
		struct perfclock_info old = fake_info;

		if (req != _IOR(0xB2, 0x02, struct perfclock_info)) {
			errno = ENOTTY;
			return -1;
		}
		old.abi_version = 1;
		memcpy(arg, &old, sizeof(old));
		return 0;
	}
	if (req == PERFCLOCK_IOC_GET_INFO) {
		n_get_info++;
		if (fail_info_errno) {
			errno = fail_info_errno;
			return -1;
		}
		memcpy(arg, &fake_info, sizeof(fake_info));
		return 0;
	}
	if (req == PERFCLOCK_IOC_GET_HORIZON) {
		struct perfclock_horizon *h = arg;

		n_get_horizon++;
		hz_asked = *h;
		if (hz_errno) {
			errno = hz_errno;
			return -1;
		}
		h->ns = hz_answer;
		h->wait_ns = 1000;
		return 0;
	}
	if (req == PERFCLOCK_IOC_GET_TIME) {
		struct perfclock_time t = { perfclock_rdtsc_ordered(), 0, 0 };

		n_get_time++;
		memcpy(arg, &t, sizeof(t));
		return 0;
	}
	errno = ENOTTY;
	return -1;
}

void *__wrap_mmap(void *a, size_t l, int p, int f, int fd, off_t o)
{
	if (!is_fake(fd))
		return __real_mmap(a, l, p, f, fd, o);
	n_mmap++;
	if (fail_mmap || o != 0 || l != 4096 || (p & PROT_WRITE)) {
		errno = EINVAL;
		return MAP_FAILED;
	}
	return &page;
}

int __wrap_open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;

	if (flags & O_CREAT) {
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	if (!strcmp(path, PERFCLOCK_DEVICE_PATH)) {
		if (!devnode_present) {
			errno = ENOENT;
			return -1;
		}
		path = "/dev/null";
	}
	return __real_open(path, flags, mode);
}

int __wrap_munmap(void *a, size_t l)
{
	if (a == (void *)&page) {
		n_munmap++;
		return 0;
	}
	return __real_munmap(a, l);
}

static void fake_reset(void)
{
	memset(&fake_info, 0, sizeof(fake_info));
	fake_info.abi_version = PERFCLOCK_ABI_VERSION;
	fake_info.page_version = PERFCLOCK_PAGE_VERSION;
	fake_info.page_size = 4096;
	fake_info.skew_estimate_ns = 1000;
	fake_info.update_period_ns = 1000000;
	fake_info.flags = PERFCLOCK_INFO_PAGE_TSC_VALID;
	memset(&page, 0, sizeof(page));
	page.seq = 2;
	page.version = PERFCLOCK_PAGE_VERSION;
	page.flags = PERFCLOCK_PAGE_TSC_VALID;
	page.tsc_shift = 10;
	page.tsc_mult = 1u << 10;
	page.tsc_offset = 0;
	page.coarse_ns = 5000000;
	page.skew_estimate_ns = 1000;
	fail_info_errno = fail_mmap = 0;
	hz_errno = 0;
	hz_answer = 0;
	devnode_present = 0;
	fake_fd = 1;
}

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

static int count_fds(void)
{
	int n = 0, fd;

	for (fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) != -1;
	return n;
}

/* ---- the flush horizon ---- */

static void test_horizon_device(void)
{
	struct perfclock_clock_info info;
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
	       !hz_asked.reserved[1],
	       "horizon: a page without one: PERFCLOCK_IOC_GET_HORIZON for perf_clock(), flags 0, reserved zero");
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

static void test_bounds_no_page(void)
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

static void test_horizon_clockid(void)
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
	tap_ok(ok && n_mmap == bm &&
	       h + PERFCLOCK_HORIZON_ESTIMATE_INFLIGHT_NS >= lo &&
	       h + PERFCLOCK_HORIZON_ESTIMATE_INFLIGHT_NS <= hi,
	       "clockid horizon: no device: clock_gettime - the in-flight estimate");
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

	/* A device with horizons: exact, in this clock. */
	fake_reset();
	devnode_present = 1;
	fake_info.flags |= PERFCLOCK_INFO_HORIZON;
	page.flags |= PERFCLOCK_PAGE_HORIZON_VALID;
	page.horizon_ns = 1;	/* perf_clock()'s: not ours */
	page.horizon_clockids = 1U << CLOCK_MONOTONIC;
	page.horizon_clockid_ns[CLOCK_MONOTONIC] = 123456789;
	c = perfclock_open_clockid(CLOCK_MONOTONIC);
	bh = n_get_horizon;
	ok = c && perfclock_horizon(c, &h) == 0 && h == 123456789;
	tap_ok(ok && n_get_horizon == bh,
	       "clockid horizon: the page's horizon_clockid_ns[CLOCK_MONOTONIC], no system call");
	ok = c && perfclock_get_info(c, &info) == 0;
	tap_ok(ok && (info.flags & PERFCLOCK_CLOCK_HORIZON_EXACT) &&
	       (info.flags & PERFCLOCK_CLOCK_HORIZON_PAGE) &&
	       info.backend == PERFCLOCK_BACKEND_CLOCKID &&
	       info.clockid == CLOCK_MONOTONIC && info.inflight_estimate_ns == 0,
	       "clockid horizon: get_info says exact, clockid backend");
	lo = mono_now();
	ok = c && perfclock_read(c, &v) == 0;
	hi = mono_now();
	tap_ok(ok && lo <= v && v <= hi && perfclock_read_ioctl(c, &v) == -EOPNOTSUPP,
	       "clockid horizon: reads stay clock_gettime's");
	page.horizon_clockids = 0;
	hz_answer = 223456789;
	ok = c && perfclock_horizon(c, &h) == 0 && h == 223456789;
	tap_ok(ok && n_get_horizon == bh + 1 &&
	       hz_asked.clockid == CLOCK_MONOTONIC && hz_asked.flags == 0,
	       "clockid horizon: no bit for this clock on the page: GET_HORIZON with clockid CLOCK_MONOTONIC");
	hz_answer = 323456789;
	ok = c && perfclock_horizon_sync(c, PERFCLOCK_HORIZON_SYNC_EXPEDITED, &h) == 0;
	tap_ok(ok && h == 323456789 && hz_asked.clockid == CLOCK_MONOTONIC &&
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
	hz_answer = 42;
	c = perfclock_open_clockid(CLOCK_BOOTTIME);
	ok = c && perfclock_horizon(c, &h) == 0 && h == 42;
	tap_ok(ok && hz_asked.clockid == CLOCK_BOOTTIME,
	       "clockid horizon: another clock's bit is not ours: GET_HORIZON with CLOCK_BOOTTIME");
	perfclock_close(c);
	fake_reset();
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
	tap_ok(c && perfclock_check_attr(c, &attr) == 0,
	       "perf page: check_attr accepts events without use_clockid");
	attr.use_clockid = 1;
	attr.clockid = CLOCK_MONOTONIC;
	tap_ok(c && perfclock_check_attr(c, &attr) == -EINVAL,
	       "perf page: check_attr refuses use_clockid events");

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
