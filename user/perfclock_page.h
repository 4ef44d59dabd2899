/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The clock page's reader, as static inline functions: the one
 * implementation of the read protocol documented in perfclock_ioctl.h,
 * shared by libperfclock (which wraps it in exported functions) and by
 * programs that want the read inlined (the selftests, benchmarks):
 * perfclock_page_read() (the seq loop: a consistent snapshot, with the
 * flush horizon of one clock), perfclock_page_horizon() on top of it, and
 * perfclock_page_read_now(), whose first try is inlined.
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

/*
 * Whether this reader can compute the time from the page at all: the
 * page's conversion is of the x86 TSC. Elsewhere the page still gives
 * its coarse lower bound and horizons (with the same acquire-ordered seq
 * protocol), and PERFCLOCK_PAGE_TSC_VALID is treated as clear.
 */
#if defined(__x86_64__) || defined(__i386__)
#define PERFCLOCK_PAGE_HAVE_TSC	1
#else
#define PERFCLOCK_PAGE_HAVE_TSC	0
#endif

/*
 * lfence orders the TSC read after every earlier load, as the kernel's
 * rdtsc_ordered() does, so the counter is read inside the seq window and
 * after whatever the caller did before (a syscall whose record must be
 * bracketed, say). It is most of what this reader costs beyond perf's
 * own tools/perf/util/tsc.c (an unordered rdtsc): see the README.
 */
static inline uint64_t perfclock_rdtsc_ordered(void)
{
#if PERFCLOCK_PAGE_HAVE_TSC
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

/*
 * The seq protocol, as the kernel's read_seqcount_begin()/_retry(): every
 * field of the page is read between perfclock_page_seq_begin() and
 * perfclock_page_seq_retry() with relaxed atomic loads; the reader retries
 * while seq was odd (an update under way) or has changed.
 */
static inline uint32_t perfclock_page_seq_begin(const struct perfclock_page *pg)
{
	/* Pairs with the writer's smp_wmb() after it makes seq even. */
	return __atomic_load_n(&pg->seq, __ATOMIC_ACQUIRE);
}

static inline int perfclock_page_seq_retry(const struct perfclock_page *pg,
					   uint32_t seq)
{
	/*
	 * Orders the field loads before the seq re-check; pairs with the
	 * writer's smp_wmb() after it makes seq odd.
	 */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	/*
	 * "Was odd, or has changed" in one comparison: seq only grows, so
	 * after an odd seq it never again reads as seq & ~1 (short of 2^32
	 * updates during one read, the ABA any seq count has).
	 */
	return __atomic_load_n(&pg->seq, __ATOMIC_RELAXED) != (seq & ~1U);
}

#define perfclock_page_load(field)	__atomic_load_n(&(field), __ATOMIC_RELAXED)

struct perfclock_page_sample {
	uint64_t coarse_ns;	/* lower bound, always valid */
	uint64_t now_ns;	/* current local_clock(), if tsc_valid */
	uint64_t skew_estimate_ns;	/* the module's skew estimate, see the UAPI */
	uint64_t timer_lateness_ns;
	uint32_t flags;		/* PERFCLOCK_PAGE_* */
	uint32_t coarse_cpu;
	/*
	 * The flush horizon of the clock asked for (perfclock_page_read()'s
	 * clockid), if horizon_valid: every perf record stamped below it is
	 * in its ring (THE FLUSH HORIZON in perfclock_ioctl.h).
	 */
	uint64_t horizon_ns;
	uint64_t horizon_count;
	uint64_t horizon_proven_ns;
	uint32_t horizon_valid;
	/*
	 * The page's horizon_generation, from the same snapshot as
	 * horizon_ns; meaningful when the module sets
	 * PERFCLOCK_INFO_HORIZON_GENERATION (0 from older modules).
	 */
	uint32_t horizon_generation;
};

/* perfclock_page_read() what: also compute now_ns from the TSC. */
#define PERFCLOCK_PAGE_READ_NOW		(1U << 0)

/*
 * The one seq loop: a consistent snapshot of the page. clockid selects
 * which horizon goes to s->horizon_ns: PERFCLOCK_HORIZON_PERF_CLOCK (the
 * page's horizon_ns) or a CLOCK_* id (horizon_clockid_ns[clockid], valid
 * when its bit of horizon_clockids is set). Returns 0, or -EAGAIN when the
 * writer kept the page busy for PERFCLOCK_PAGE_MAX_RETRIES tries (the
 * caller falls back to the ioctl). now_ns is meaningful only when asked
 * for and flags has PERFCLOCK_PAGE_TSC_VALID.
 */
static inline int perfclock_page_read(const struct perfclock_page *pg,
				      int clockid, uint32_t what,
				      struct perfclock_page_sample *s)
{
	uint64_t mult = 0, offset = 0, tsc = 0, hz;
	uint32_t seq, shift = 0, ids, gen;
	int tries;

	for (tries = 0; tries < PERFCLOCK_PAGE_MAX_RETRIES; tries++) {
		if (tries)
			perfclock_cpu_relax();
		seq = perfclock_page_seq_begin(pg);
		s->flags = perfclock_page_load(pg->flags);
		s->coarse_ns = perfclock_page_load(pg->coarse_ns);
		s->coarse_cpu = perfclock_page_load(pg->coarse_cpu);
		s->skew_estimate_ns = perfclock_page_load(pg->skew_estimate_ns);
		s->timer_lateness_ns = perfclock_page_load(pg->timer_lateness_ns);
		s->horizon_count = perfclock_page_load(pg->horizon_count);
		s->horizon_proven_ns = perfclock_page_load(pg->horizon_proven_ns);
		ids = perfclock_page_load(pg->horizon_clockids);
		gen = perfclock_page_load(pg->horizon_generation);
		if (clockid < 0) {
			hz = perfclock_page_load(pg->horizon_ns);
		} else if (clockid < PERFCLOCK_HORIZON_CLOCKIDS &&
			   (ids & (1U << clockid))) {
			hz = perfclock_page_load(pg->horizon_clockid_ns[clockid]);
		} else {
			hz = 0;
			ids = 0;
		}
		if (what & PERFCLOCK_PAGE_READ_NOW) {
			mult = perfclock_page_load(pg->tsc_mult);
			shift = perfclock_page_load(pg->tsc_shift);
			offset = perfclock_page_load(pg->tsc_offset);
			tsc = perfclock_rdtsc_ordered();
		}
		if (perfclock_page_seq_retry(pg, seq))
			continue;

		s->horizon_ns = hz;
		s->horizon_valid = (s->flags & PERFCLOCK_PAGE_HORIZON_VALID) &&
				   (clockid < 0 || ids);
		s->horizon_generation = gen;
		s->now_ns = 0;
		if (PERFCLOCK_PAGE_HAVE_TSC && (what & PERFCLOCK_PAGE_READ_NOW) &&
		    (s->flags & PERFCLOCK_PAGE_TSC_VALID) && shift < 64)
			s->now_ns = perfclock_tsc_to_ns(tsc, mult, shift,
							offset);
		else
			s->flags &= ~PERFCLOCK_PAGE_TSC_VALID;
		return 0;
	}
	return -EAGAIN;
}

/* A snapshot with the current time (perf_clock()'s horizon). */
static inline int perfclock_page_sample(const struct perfclock_page *pg,
					struct perfclock_page_sample *s)
{
	return perfclock_page_read(pg, PERFCLOCK_HORIZON_PERF_CLOCK,
				   PERFCLOCK_PAGE_READ_NOW, s);
}

/*
 * The newest horizon the module has proven for clockid
 * (PERFCLOCK_HORIZON_PERF_CLOCK or CLOCK_*), no system call: 0, *ns and
 * *gen, the page's horizon_generation read in the same snapshot;
 * -EOPNOTSUPP when the page holds none for that clock (an older module,
 * none proven yet, a clock it does not serve: use the ioctl); -EAGAIN as
 * perfclock_page_read().
 */
static inline int perfclock_page_horizon_gen(const struct perfclock_page *pg,
					     int clockid, uint64_t *ns,
					     uint32_t *gen)
{
	struct perfclock_page_sample s;
	int err = perfclock_page_read(pg, clockid, 0, &s);

	if (err)
		return err;
	if (!s.horizon_valid)
		return -EOPNOTSUPP;
	*ns = s.horizon_ns;
	*gen = s.horizon_generation;
	return 0;
}

/*
 * As perfclock_page_horizon_gen() without the generation: for a reader
 * that does not follow restarts (a module without
 * PERFCLOCK_INFO_HORIZON_GENERATION, or a test of one generation).
 */
static inline int perfclock_page_horizon(const struct perfclock_page *pg,
					 int clockid, uint64_t *ns)
{
	uint32_t gen;

	return perfclock_page_horizon_gen(pg, clockid, ns, &gen);
}

/*
 * One try at the current time from the page: 1 if it gave one, 0 if the
 * page was being updated (retry), -EOPNOTSUPP if it offers no current
 * time (use the ioctl). The first try of perfclock_page_read_now(), kept
 * small because it is inlined into every caller.
 */
static inline int perfclock_page_try_now(const struct perfclock_page *pg,
					 uint64_t *ns)
{
	uint64_t mult, offset, tsc;
	uint32_t seq, shift, flags;

	seq = perfclock_page_seq_begin(pg);
	flags = perfclock_page_load(pg->flags);
	mult = perfclock_page_load(pg->tsc_mult);
	shift = perfclock_page_load(pg->tsc_shift);
	offset = perfclock_page_load(pg->tsc_offset);
	/*
	 * Checked before the TSC is read, so that flags is dead across it
	 * (one register less: no stack frame in perfclock_read()). A torn
	 * snapshot can only make this say "no" once during an update (the
	 * caller takes the ioctl, exact); a "yes" is confirmed by the seq
	 * re-check below. The module keeps shift below 32: a larger one is
	 * not a conversion. Both conditions in one test (TSC_VALID clear, or
	 * shift >= 64): under TCG every conditional branch ends a translation
	 * block, and this is every read's path.
	 */
	if (!PERFCLOCK_PAGE_HAVE_TSC ||
	    ((~flags & PERFCLOCK_PAGE_TSC_VALID) | (shift >> 6)))
		return -EOPNOTSUPP;
	tsc = perfclock_rdtsc_ordered();
	if (perfclock_page_seq_retry(pg, seq))
		return 0;
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
