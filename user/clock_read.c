// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libperfclock: reading the clock. perfclock_read() (the page fast path,
 * then the general path), perfclock_read_ioctl(),
 * perfclock_read_lower_bound(), and the reads the rest of the library
 * shares (clock_read.h): clock_gettime() and perf's time_zero page, the
 * module's GET_INFO and its estimates of its own clock (skew, timer
 * lateness).
 *
 * LAYERS. This file is the lowest of the clock's: it calls only the time
 * namespace's (timens.c) and the page's inline readers
 * (perfclock_page.h). The horizon backends (horizon_*.c) read the clock
 * and the module's estimates through it; horizon.c calls the backends;
 * libperfclock.c opens and closes clocks and calls horizon.c. Nothing
 * here calls up: the skew estimate the lower bound takes off used to be
 * the estimate backend's, and GET_INFO libperfclock.c's, a circle of
 * five files.
 *
 * Every read here is lock-free and allocation-free: a struct perfclock
 * does not change after open but for atomics (libperfclock.c).
 */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "internal.h"
#include "clock_internal.h"
#include "clock_read.h"
#include "timens.h"

/*
 * perf's own conversion from a perf mmap page (perf_event_mmap_page's
 * comment; tools/perf/util/tsc.c), under its seq count `lock`, with the
 * same ordered TSC read as the module's page: 0, -EOPNOTSUPP when the
 * kernel does not offer cap_user_time_zero (now), -EAGAIN when the page
 * stays busy.
 */
int perfclock__perf_page_read(const struct perf_event_mmap_page *pc,
			      uint64_t *ns)
{
	const volatile struct perf_event_mmap_page *vpc = pc;
	uint64_t zero, tsc;
	uint32_t seq, mult;
	uint16_t shift;
	int tries, cap;

	if (!PERFCLOCK_PAGE_HAVE_TSC)
		return -EOPNOTSUPP;
	for (tries = 0; tries < PERFCLOCK_PAGE_MAX_RETRIES; tries++) {
		if (tries)
			perfclock_cpu_relax();
		seq = __atomic_load_n(&pc->lock, __ATOMIC_ACQUIRE);
		cap = vpc->cap_user_time_zero;
		zero = vpc->time_zero;
		mult = vpc->time_mult;
		shift = vpc->time_shift;
		tsc = perfclock_rdtsc_ordered();
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if ((seq & 1) || __atomic_load_n(&pc->lock, __ATOMIC_RELAXED) != seq)
			continue;
		if (!cap || shift >= 64)
			return -EOPNOTSUPP;
		*ns = perfclock_tsc_to_ns(tsc, mult, shift, zero);
		return 0;
	}
	return -EAGAIN;
}

/*
 * perfclock__perf_page_read()'s first try, for perfclock_read()'s fast path: 1 and
 * *ns when the page gave a consistent snapshot with cap_user_time_zero and
 * a usable shift, else 0 (an update under way, or no time_zero: then
 * perfclock__perf_page_read() decides, retrying or saying -EOPNOTSUPP). Both
 * conditions are tested at once, before the TSC is read, and the seq
 * re-check is one comparison too (perfclock_page_seq_retry()).
 */
static inline int perf_page_try(const struct perf_event_mmap_page *pc,
				uint64_t *ns)
{
	const struct perf_event_mmap_page cap = { .cap_user_time_zero = 1 };
	uint64_t caps, zero, tsc;
	uint32_t seq, mult, shift;

	seq = __atomic_load_n(&pc->lock, __ATOMIC_ACQUIRE);
	caps = __atomic_load_n(&pc->capabilities, __ATOMIC_RELAXED);
	mult = __atomic_load_n(&pc->time_mult, __ATOMIC_RELAXED);
	shift = __atomic_load_n(&pc->time_shift, __ATOMIC_RELAXED);
	zero = __atomic_load_n(&pc->time_zero, __ATOMIC_RELAXED);
	if ((~caps & cap.capabilities) | (shift >> 6))
		return 0;
	tsc = perfclock_rdtsc_ordered();
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&pc->lock, __ATOMIC_RELAXED) != (seq & ~1U))
		return 0;
	*ns = perfclock_tsc_to_ns(tsc, mult, shift, zero);
	return 1;
}

int perfclock__clockid_read(clockid_t id, uint64_t *ns)
{
	struct timespec ts;

	if (clock_gettime(id, &ts))
		return -errno;
	*ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	/* In the stamps' clock: a time namespace's offset off (timens.h). */
	return perfclock__timens_to_host(id, ns);
}

int perfclock__get_info(int fd, struct perfclock_info *info)
{
	memset(info, 0, sizeof(*info));
	if (ioctl(fd, PERFCLOCK_IOC_GET_INFO, info))
		return -errno;
	return 0;
}

/* ---- the module's estimates of its clock ---- */

/* Without the page, ask the module for its estimates this often at most. */
#define INFO_REFRESH_NS	10000000ULL	/* 10 ms */

/*
 * The larger of a value read at open and the page's current one (the
 * module only lets them grow). An aligned 64-bit load; no seq loop needed
 * for a value that is only ever compared.
 */
static uint64_t page_max(const struct perfclock *clk, uint64_t at_open,
			 const __u64 *field)
{
	uint64_t p;

	if (clk->page) {
		p = __atomic_load_n(field, __ATOMIC_RELAXED);
		if (p > at_open)
			return p;
	}
	return at_open;
}

/*
 * No page to follow the module's estimates on (an unknown page version, a
 * failed mmap): ask it, rate-limited, so that they do not stay frozen at
 * their value at open (issue 13, item 2). One caller refreshes; the
 * others use the values they find. np_skew, np_stall and np_when are
 * relaxed atomics: estimates that no exact claim rests on, each one
 * self-contained.
 */
static void nopage_refresh(struct perfclock *clk)
{
	struct perfclock_info ki;
	struct timespec ts;
	uint64_t now, when;

	if (clk->page || clk->fd < 0 || clock_gettime(CLOCK_MONOTONIC_COARSE, &ts))
		return;
	now = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	when = __atomic_load_n(&clk->np_when, __ATOMIC_RELAXED);
	if (when && now - when < INFO_REFRESH_NS)
		return;
	if (!__atomic_compare_exchange_n(&clk->np_when, &when, now ? now : 1,
					 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return;
	if (perfclock__get_info(clk->fd, &ki))
		return;
	__atomic_store_n(&clk->np_skew, ki.skew_estimate_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&clk->np_stall, ki.timer_lateness_ns,
			 __ATOMIC_RELAXED);
}

/* max(at open, the module's latest: the page's, else GET_INFO's) */
static uint64_t module_max(struct perfclock *clk, uint64_t at_open,
			   const __u64 *page_field, const uint64_t *np_field)
{
	uint64_t v;

	if (clk->page)
		return page_max(clk, at_open, page_field);
	nopage_refresh(clk);
	v = __atomic_load_n(np_field, __ATOMIC_RELAXED);
	return v > at_open ? v : at_open;
}

uint64_t perfclock__skew_estimate(struct perfclock *clk)
{
	if (clk->backend != PERFCLOCK_BACKEND_DEVICE)
		return 0;
	return module_max(clk, clk->info.skew_estimate_ns,
			  clk->page ? &clk->page->skew_estimate_ns : NULL,
			  &clk->np_skew);
}

uint64_t perfclock__stall_estimate(struct perfclock *clk)
{
	if (clk->backend != PERFCLOCK_BACKEND_DEVICE)
		return 0;
	return module_max(clk, clk->info.timer_lateness_ns,
			  clk->page ? &clk->page->timer_lateness_ns : NULL,
			  &clk->np_stall);
}

PERFCLOCK_API int perfclock_read_ioctl(struct perfclock *clk, uint64_t *ns)
{
	struct perfclock_time t;

	if (!clk || !ns)
		return -EINVAL;
	if (clk->backend != PERFCLOCK_BACKEND_DEVICE)
		return -EOPNOTSUPP;
	memset(&t, 0, sizeof(t));
	if (ioctl(clk->fd, PERFCLOCK_IOC_GET_TIME, &t))
		return -errno;
	*ns = t.ns;
	return 0;
}

/* Everything but the first try of the page: the other backends, retries. */
static __attribute__((noinline)) int read_general(struct perfclock *clk,
						  uint64_t *ns)
{
	if (!clk || !ns)
		return -EINVAL;
	if (clk->backend == PERFCLOCK_BACKEND_CLOCKID)
		return perfclock__clockid_read(clk->clockid, ns);
	if (clk->backend == PERFCLOCK_BACKEND_PERF_PAGE)
		return perfclock__perf_page_read(clk->perf_page, ns);
#if defined(__x86_64__) || defined(__i386__)
	/* No syscall, no allocation, bounded retries. */
	if (clk->page && perfclock_page_read_now(clk->page, ns) == 0)
		return 0;
#endif
	return perfclock_read_ioctl(clk, ns);
}

/*
 * The fast path is a leaf: one load of clk (read_page), the page's first
 * seq try inlined, no stack frame, no call; anything else is a tail call
 * to read_general(). Under TCG every load, push and pop is an emulated
 * memory access and every return an indirect-jump lookup, so the frame
 * and the backend tests that the earlier layout paid on every read were
 * a large part of what perfclock_read() cost over perf's bare page read
 * (README, "Costs"). The perf page backend (perfclock_open(NULL) without
 * the module, perfclock_open_perf_page()) has its own first try here
 * too, one more load and test behind the module's: it used to take
 * read_general() (a frame, two backend tests, a call, a loop) on every
 * read, 80 instructions against perf's 17.
 */
PERFCLOCK_API int perfclock_read(struct perfclock *clk, uint64_t *ns)
{
	const struct perf_event_mmap_page *pc;
	const struct perfclock_page *pg;

	if (__builtin_expect(clk != NULL && ns != NULL, 1)) {
		pg = clk->read_page;
		if (__builtin_expect(pg != NULL, 1)) {
			if (__builtin_expect(perfclock_page_try_now(pg, ns) > 0, 1))
				return 0;
		} else {
			pc = clk->read_perf_page;
			if (pc && perf_page_try(pc, ns))
				return 0;
		}
	}
	return read_general(clk, ns);
}

PERFCLOCK_API int perfclock_read_lower_bound(struct perfclock *clk,
					     uint64_t *ns)
{
	struct perfclock_page_sample s;
	uint64_t v;
	int err;

	if (!clk || !ns)
		return -EINVAL;
	if (clk->backend == PERFCLOCK_BACKEND_CLOCKID)
		return perfclock__clockid_read(clk->coarse_clockid, ns);
	/* cap_user_time_zero: sched_clock is stable, one clock, no skew. */
	if (clk->backend == PERFCLOCK_BACKEND_PERF_PAGE)
		return perfclock__perf_page_read(clk->perf_page, ns);

	if (clk->page && perfclock_page_sample(clk->page, &s) == 0) {
		v = s.coarse_ns;
#if defined(__x86_64__) || defined(__i386__)
		if ((s.flags & PERFCLOCK_PAGE_TSC_VALID) && s.now_ns > v)
			v = s.now_ns;
#endif
		*ns = perfclock__sub_sat(v, perfclock__skew_estimate(clk));
		return 0;
	}
	err = perfclock_read_ioctl(clk, &v);
	if (err)
		return err;
	*ns = perfclock__sub_sat(v, perfclock__skew_estimate(clk));
	return 0;
}

