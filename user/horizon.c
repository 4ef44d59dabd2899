// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The flush horizon: perfclock_horizon(), perfclock_horizon_gen() and
 * perfclock_horizon_sync() ask the clock's backend (horizon_internal.h)
 * once and publish what it gives: never lower than a horizon already
 * returned in the same generation, reset when the generation moves on.
 *
 * THE PIPELINE. Every horizon handed out (those three, and the one
 * perfclock_get_info() takes) is made by pass(), one way down and back:
 * each step is a file that calls only the steps below it and returns a
 * value; none calls back up (scripts/call-layers.sh fails on a circle).
 *
 *   pass()                          here
 *    1. perfclock__sets_take()      horizon_sets.c: the sets
 *        2. perfclock__horizon_ask()    horizon_backend.c: the backend
 *            backend->horizon(), sync()   horizon_module.c,
 *                                         horizon_membarrier.c,
 *                                         horizon_estimate.c
 *                clock_read.c, timens.c   the read, the time namespace
 *    3. perfclock__ntp_slope_lower()  ntp_slope.c: the NTP slope
 *    4. publish()                   here: the generations
 *
 *  1. Sets. For a clock that can be set (REALTIME, TAI), THE RULE of
 *     horizon_sets.c: the backend's horizon is kept only if no set shows
 *     right after it, else it is taken again, fresh; every set seen is
 *     one more generation. The rule brackets the read, so this step is
 *     the one that asks step 2. Any other clock passes straight through.
 *  2. Backend. The clock's backend (chosen at open) gives a raw horizon
 *     and its generation; a module that refuses horizons after all
 *     withdraws the clock to the estimate, whose generations continue
 *     the module's. The membarrier and estimate backends read the clock
 *     through clock_read.c, the lowest layer, which takes a time
 *     namespace's offset off every clock_gettime() read (timens.c: the
 *     time namespace is a step of the read, not of the horizon); the
 *     module's horizons are taken in the kernel and never had it. A
 *     backend that reads the clock for a horizon on the caller's thread
 *     (the estimate, membarrier's sync and helper start) rechecks the
 *     namespace first (a setns(): timens.c, SETNS), as H_c does.
 *  3. NTP slope. An NTP-disciplined clock's horizon comes down by
 *     PERFCLOCK_NTP_SLOPE_MARGIN_NS (ntp_slope.c).
 *  4. Generations. The shared last horizon and its generation (MEMORY
 *     ORDER below): never lower within a generation, reset by a newer
 *     one, and whether the caller was told of the newest.
 *
 * The generation grows along the way: the backend's (plus the
 * estimate's base after a withdraw, step 2), plus the sets seen (step 1),
 * merged with the last one published (step 4).
 *
 * MEMORY ORDER: what the multi-threaded claim rests on. "Thread B loads
 * data_head after perfclock_horizon() returned H, and meets every record
 * stamped below H", also when the H B gets was proven by thread A (the
 * shared last horizon), is write-to-read causality across four agents:
 * the perf writer (kernel, CPU X) publishes data_head, the module proves
 * and publishes H, thread A reads it and publishes it here, thread B
 * takes it. Each link, in C11 terms:
 *
 *  1. X -> module: kernel/events/ring_buffer.c:perf_output_put_handle()
 *     stores data_head inside the writer's RCU read-side critical
 *     section; the grace period ends with a full barrier on the module's
 *     CPU (kernel/rcu/tree.c:poll_state_synchronize_rcu(), smp_mb()
 *     after the check; synchronize_rcu() likewise), which is cumulative:
 *     every store the module's CPU has seen is visible everywhere before
 *     its later stores (docs/horizon.md, "The proof", step 3).
 *  2. module -> A: the module writes horizon_ns and horizon_generation
 *     inside its page's seq count; its smp_wmb() before the even seq
 *     store is a release, paired with A's acquire load of seq in
 *     perfclock_page_seq_begin(), and its smp_wmb() after the odd one
 *     with A's acquire fence in perfclock_page_seq_retry() (a snapshot
 *     that read a newer horizon is retried). Through the ioctl, A's
 *     later accesses follow the kernel's barrier in program order.
 *  3. A -> B: hz_lock. A stores hz_last under it after reading the
 *     page; B reads it under it; unlock is a release, lock an acquire
 *     (C11 7.26.4, POSIX 4.12 "Memory Synchronization"), so B happens
 *     after A's read of the page, hence after the module's store.
 *  4. B -> the ring: perfclock_ring_read_begin() loads data_head with
 *     an acquire, paired with the release of perf_output_put_handle()
 *     (smp_wmb() before the data_head store) for the record's bytes.
 *
 * Before this lock, hz_last was a relaxed CAS-max: B could read A's H
 * with no happens-before edge to A's page read (a relaxed load carries
 * none, and B's later acquire of data_head does not order that earlier
 * load), so nothing made X's data_head store visible to B. x86 (TSO)
 * cannot show it (loads are not reordered with loads, stores reach all
 * CPUs in one order); arm64 and POWER can (WRC without a release in A).
 * user/tests/test_horizon_tsan.c is the check: under -fsanitize=thread
 * it reports the race on the relaxed version and none on this one.
 *
 * A lock, not a CAS: the generation and the horizon must change
 * together, and a generation reset must not be undone by a CAS-max from
 * a thread still holding a horizon of the old generation. The critical
 * section is a few loads and stores; perfclock_horizon() runs once per
 * round. clk->hz, the backend, changes once at most, with a release
 * (horizon_backend.c). np_skew/np_stall/np_when (clock_read.c) are
 * relaxed: estimates that no exact claim rests on, each one
 * self-contained.
 */
#include <errno.h>

#include "horizon_internal.h"
#include "internal.h"

int perfclock__horizon_choose(struct perfclock *clk)
{
	int err = perfclock__sets_follow(clk);	/* REALTIME, TAI */

	if (err)
		return err;
	pthread_mutex_init(&clk->hz_lock, NULL);
	perfclock__horizon_backend_choose(clk);
	perfclock__horizon_percpu_choose(clk);
	perfclock__fork_guard_add(clk);
	return 0;
}

void perfclock__horizon_release(struct perfclock *clk)
{
	if (!clk->hz_opened)
		return;
	perfclock__fork_guard_del(clk);
	perfclock__horizon_backend_close(clk);
	perfclock__sets_release(clk);
	pthread_mutex_destroy(&clk->hz_lock);
}

/* Is generation a newer than b (wrap-safe; bumps are rare)? */
static int gen_newer(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

/*
 * Step 4, the generations: publish (h, gen) and return what the clock
 * hands out: the highest horizon of the newest generation. A newer
 * generation voids the last horizon (reset, not max); a sample of an
 * older one (taken before another thread saw the restart) is dropped for
 * the newer one's. Sets *out_gen; returns whether the generation differs
 * from the one the caller was last told of (and, if ack, tells it now).
 */
static int publish(struct perfclock *clk, uint64_t h, uint32_t gen, int ack,
		   uint64_t *out, uint32_t *out_gen)
{
	int changed;

	pthread_mutex_lock(&clk->hz_lock);
	if (!clk->hz_any) {
		clk->hz_any = 1;
		clk->hz_gen = clk->hz_acked = gen;
		clk->hz_last = h;
	} else if (gen_newer(gen, clk->hz_gen)) {
		clk->hz_gen = gen;
		clk->hz_last = h;
	} else if (gen == clk->hz_gen && h > clk->hz_last) {
		clk->hz_last = h;
	}
	*out = clk->hz_last;
	*out_gen = clk->hz_gen;
	changed = clk->hz_gen != clk->hz_acked;
	if (ack)
		clk->hz_acked = clk->hz_gen;
	pthread_mutex_unlock(&clk->hz_lock);
	return changed;
}

/*
 * THE PIPELINE above: one horizon (sync: a fresh exact one, with flags),
 * published. *ns and *gen: what the clock hands out. -errno from a step,
 * else whether the generation differs from the one the caller was last
 * told of (ack: tell it now).
 */
static int pass(struct perfclock *clk, int sync, uint32_t flags, int ack,
		uint64_t *ns, uint32_t *gen)
{
	uint64_t h;
	uint32_t g;
	int err;

	err = perfclock__sets_take(clk, sync, flags, &h, &g);	/* 1, 2 */
	if (err)
		return err;
	h = perfclock__ntp_slope_lower(clk, h);			/* 3 */
	return publish(clk, h, g, ack, ns, gen);		/* 4 */
}

PERFCLOCK_API int perfclock_horizon(struct perfclock *clk, uint64_t *ns)
{
	uint64_t h;
	uint32_t gen;
	int ret;

	if (!clk || !ns)
		return -EINVAL;
	ret = pass(clk, 0, 0, 0, &h, &gen);
	if (ret < 0)
		return ret;
	/* A restart this caller cannot follow: say so, every time. */
	if (ret)
		return -ESTALE;
	*ns = h;
	return 0;
}

PERFCLOCK_API int perfclock_horizon_gen(struct perfclock *clk, uint64_t *ns,
					uint32_t *gen)
{
	uint64_t h;
	uint32_t g;
	int ret;

	if (!clk || !ns || !gen)
		return -EINVAL;
	ret = pass(clk, 0, 0, 1, &h, &g);
	if (ret < 0)
		return ret;
	*ns = h;
	*gen = g;
	return ret ? PERFCLOCK_HORIZON_RESTARTED : 0;
}

PERFCLOCK_API int perfclock_horizon_sync(struct perfclock *clk,
					 uint32_t flags, uint64_t *ns)
{
	uint64_t h;
	uint32_t gen;
	int ret;

	if (!clk || !ns || (flags & ~PERFCLOCK_HORIZON_SYNC_EXPEDITED))
		return -EINVAL;
	ret = pass(clk, 1, flags, 0, &h, &gen);
	if (ret < 0)
		return ret;
	if (ret)
		return -ESTALE;
	*ns = h;
	return 0;
}

/* perfclock_get_info()'s horizon part (libperfclock.c). */
int perfclock__horizon_info(struct perfclock *clk,
			    struct perfclock_clock_info *info)
{
	uint64_t h, now;
	uint32_t gen;
	int err;

	/* The horizon's kind, and its age now; the caller is not told. */
	err = pass(clk, 0, 0, 0, &h, &gen);
	if (err < 0)
		return err;
	info->horizon_generation = gen;
	perfclock__horizon_backend_info(clk, info);
	perfclock__horizon_percpu_info(clk, info);
	perfclock__ntp_slope_info(clk, info);
	err = perfclock_read(clk, &now);
	if (err)
		return err;
	info->horizon_age_ns = perfclock__sub_sat(now, h);
	return 0;
}

PERFCLOCK_API const char *
perfclock_horizon_name(const struct perfclock_clock_info *info)
{
	if (!info)
		return "unknown";
	if (perfclock__ntp_slope_name(info))
		return perfclock__ntp_slope_name(info);
	if (!(info->flags & PERFCLOCK_CLOCK_HORIZON_EXACT))
		return "estimate";
	if (info->flags & PERFCLOCK_CLOCK_HORIZON_MEMBARRIER)
		return "exact (membarrier)";
	if (info->flags & PERFCLOCK_CLOCK_HORIZON_PAGE)
		return "exact (module page)";
	return "exact (module ioctl)";
}

/*
 * The name from the backend open chose, without a horizon: the backend's
 * part of the info reads state and files (the module's page, the
 * clocksource), never a grace period, so a tool can print it before its
 * first horizon.
 */
PERFCLOCK_API const char *perfclock_clock_horizon_name(struct perfclock *clk)
{
	struct perfclock_clock_info info = { 0 };

	if (!clk)
		return "unknown";
	perfclock__horizon_backend_info(clk, &info);
	perfclock__ntp_slope_info(clk, &info);
	return perfclock_horizon_name(&info);
}
