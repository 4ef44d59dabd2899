/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The clock page's reader, as static inline functions: the one
 * implementation of the read protocol documented in perfclock_ioctl.h,
 * shared by libperfclock (which wraps it in exported functions) and by
 * programs that want the read inlined (the selftests, benchmarks).
 *
 * Nothing here makes a system call or allocates.
 */
#ifndef PERFCLOCK_PAGE_H
#define PERFCLOCK_PAGE_H

#include <errno.h>
#include <stdint.h>

#include "../module/perfclock_ioctl.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Retries before a reader gives up on a page the module keeps updating.
 * An update takes well under a microsecond, but under virtualization the
 * writer's vCPU can be descheduled mid-update for milliseconds: give up
 * then, and let the caller take the ioctl rather than spin.
 */
#define PERFCLOCK_PAGE_MAX_RETRIES	256

#define perfclock_barrier()	__asm__ __volatile__("" ::: "memory")

/* Spin politely while the writer holds seq odd (a few ns natively). */
static inline void perfclock_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ __volatile__("pause" ::: "memory");
#else
	perfclock_barrier();
#endif
}

static inline uint32_t perfclock_load_u32(const volatile uint32_t *p)
{
	return *p;
}

/*
 * lfence orders the TSC read after every earlier load, as the kernel's
 * rdtsc_ordered() does, so the counter is read inside the seq window and
 * after whatever the caller did before (a syscall whose record must be
 * bracketed, say).
 */
static inline uint64_t perfclock_rdtsc_ordered(void)
{
#if defined(__x86_64__) || defined(__i386__)
	uint32_t lo, hi;

	__asm__ __volatile__("lfence; rdtsc" : "=a"(lo), "=d"(hi) :: "memory");
	return ((uint64_t)hi << 32) | lo;
#else
	return 0;
#endif
}

/* perf's time_zero conversion, without a 128-bit product. */
static inline uint64_t perfclock_tsc_to_ns(uint64_t tsc, uint64_t mult,
					   uint32_t shift, uint64_t offset)
{
	uint64_t quot = tsc >> shift;
	uint64_t rem = tsc & (((uint64_t)1 << shift) - 1);

	return offset + quot * mult + ((rem * mult) >> shift);
}

struct perfclock_page_sample {
	uint64_t coarse_ns;	/* lower bound, always valid */
	uint64_t now_ns;	/* current local_clock(), if tsc_valid */
	uint64_t skew_bound_ns;	/* the bound when the page was read */
	uint64_t timer_lateness_ns;
	uint32_t flags;		/* PERFCLOCK_PAGE_* */
	uint32_t coarse_cpu;
};

/*
 * One consistent snapshot of the page. Returns 0, or -EAGAIN when the
 * writer kept the page busy for PERFCLOCK_PAGE_MAX_RETRIES tries (the
 * caller falls back to the ioctl). now_ns is meaningful only when
 * flags has PERFCLOCK_PAGE_TSC_VALID.
 */
static inline int perfclock_page_sample(const struct perfclock_page *pg,
					struct perfclock_page_sample *s)
{
	const volatile struct perfclock_page *vp = pg;
	uint64_t mult, offset, tsc;
	uint32_t seq, shift;
	int tries;

	for (tries = 0; tries < PERFCLOCK_PAGE_MAX_RETRIES; tries++) {
		seq = perfclock_load_u32(&vp->seq);
		if (seq & 1) {
			perfclock_cpu_relax();
			continue;
		}
		/* Pairs with the writer's smp_wmb() after it makes seq even. */
		perfclock_barrier();

		s->flags = vp->flags;
		s->coarse_ns = vp->coarse_ns;
		s->coarse_cpu = vp->coarse_cpu;
		s->skew_bound_ns = vp->skew_bound_ns;
		s->timer_lateness_ns = vp->timer_lateness_ns;
		mult = vp->tsc_mult;
		shift = vp->tsc_shift;
		offset = vp->tsc_offset;
		tsc = perfclock_rdtsc_ordered();

		/* Pairs with the writer's smp_wmb() after it makes seq odd. */
		perfclock_barrier();
		if (perfclock_load_u32(&vp->seq) != seq)
			continue;

		s->now_ns = 0;
		if ((s->flags & PERFCLOCK_PAGE_TSC_VALID) && shift < 64)
			s->now_ns = perfclock_tsc_to_ns(tsc, mult, shift,
							offset);
		else
			s->flags &= ~PERFCLOCK_PAGE_TSC_VALID;
		return 0;
	}
	return -EAGAIN;
}

/*
 * One try at the current time from the page: 1 if it gave one, 0 if the
 * page was being updated (retry), -EOPNOTSUPP if it offers no current
 * time (use the ioctl).
 */
static inline int perfclock_page_try_now(const struct perfclock_page *pg,
					 uint64_t *ns)
{
	uint64_t mult, offset, tsc;
	uint32_t seq, shift, flags;

	seq = __atomic_load_n(&pg->seq, __ATOMIC_ACQUIRE);
	flags = __atomic_load_n(&pg->flags, __ATOMIC_RELAXED);
	mult = __atomic_load_n(&pg->tsc_mult, __ATOMIC_RELAXED);
	shift = __atomic_load_n(&pg->tsc_shift, __ATOMIC_RELAXED);
	offset = __atomic_load_n(&pg->tsc_offset, __ATOMIC_RELAXED);
	tsc = perfclock_rdtsc_ordered();
	/* Orders the loads above before the seq re-check. */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	/* An odd seq means an update was under way when we started. */
	if (__atomic_load_n(&pg->seq, __ATOMIC_RELAXED) != seq || (seq & 1))
		return 0;
	/* The module keeps shift below 32: a larger one is not a conversion. */
	if (!(flags & PERFCLOCK_PAGE_TSC_VALID) || shift >= 64)
		return -EOPNOTSUPP;
	*ns = perfclock_tsc_to_ns(tsc, mult, shift, offset);
	return 1;
}

/* The retries, kept out of line so that the first try stays small. */
static __attribute__((noinline, cold, unused)) int
perfclock_page_read_now_retry(const struct perfclock_page *pg, uint64_t *ns)
{
	int tries, ret;

	for (tries = 1; tries < PERFCLOCK_PAGE_MAX_RETRIES; tries++) {
		perfclock_cpu_relax();
		ret = perfclock_page_try_now(pg, ns);
		if (ret)
			return ret < 0 ? ret : 0;
	}
	return -EAGAIN;
}

/*
 * The current local_clock() from the page: 0, -EOPNOTSUPP when the page
 * cannot give the current time (use the ioctl), -EAGAIN as above. The
 * hot path of the library: perf's own user-page reader does no less.
 */
static inline int perfclock_page_read_now(const struct perfclock_page *pg,
					  uint64_t *ns)
{
	int ret = perfclock_page_try_now(pg, ns);

	if (__builtin_expect(ret > 0, 1))
		return 0;
	if (ret < 0)
		return ret;
	return perfclock_page_read_now_retry(pg, ns);
}

#ifdef __cplusplus
}
#endif

#endif /* PERFCLOCK_PAGE_H */
