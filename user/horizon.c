// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The flush horizon: perfclock_horizon(), perfclock_horizon_gen() and
 * perfclock_horizon_sync() ask the clock's backend (horizon_internal.h)
 * once and publish what it gives: never lower than a horizon already
 * returned in the same generation, reset when the generation moves on.
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
 * round. clk->hz points to a const backend defined before main(); its
 * one change (withdraw()) is a release that publishes hz_gen_base, read
 * after the acquire in backend_of(). np_skew/np_stall/np_when
 * (clock_read.c) are relaxed: estimates that no exact claim rests
 * on, each one self-contained.
 */
#include <errno.h>

#include "horizon_internal.h"
#include "internal.h"

/* Acquire: pairs with withdraw()'s release, for hz_gen_base. */
static const struct horizon_backend *backend_of(const struct perfclock *clk)
{
	return __atomic_load_n(&clk->hz, __ATOMIC_ACQUIRE);
}

int perfclock__horizon_choose(struct perfclock *clk)
{
	int err = perfclock__sets_follow(clk);	/* REALTIME, TAI */

	if (err)
		return err;
	pthread_mutex_init(&clk->hz_lock, NULL);
	/*
	 * The best exact backend the clock can have: the module's, when it
	 * was attached and offers horizons; else membarrier's, for a global
	 * clock this library reads (not on nohz_full, not for REALTIME or
	 * TAI); else the estimate.
	 */
	if (clk->hz_exact)
		clk->hz = &perfclock__horizon_module;
	else if (perfclock__horizon_membarrier_attach(clk) == 0)
		clk->hz = &perfclock__horizon_membarrier;
	else
		clk->hz = &perfclock__horizon_estimate;
	clk->hz_opened = clk->hz;
	perfclock__horizon_percpu_choose(clk);
	perfclock__fork_guard_add(clk);
	return 0;
}

void perfclock__horizon_release(struct perfclock *clk)
{
	if (clk->hz_opened)
		perfclock__fork_guard_del(clk);
	if (clk->hz_opened && clk->hz_opened->close)
		clk->hz_opened->close(clk);
	if (clk->hz_opened) {
		perfclock__sets_release(clk);
		pthread_mutex_destroy(&clk->hz_lock);
	}
}

/*
 * The module said it had horizons, then refused them: estimate from now.
 * The backend is released at close, not here: another thread may still
 * be inside it.
 */
static void withdraw(struct perfclock *clk)
{
	/*
	 * The estimate counts its generations from 1: continue the
	 * module's, so that its horizons are not taken for older ones.
	 */
	pthread_mutex_lock(&clk->hz_lock);
	if (backend_of(clk) != &perfclock__horizon_estimate) {
		clk->hz_gen_base = clk->hz_any ? clk->hz_gen - 1 : 0;
		__atomic_store_n(&clk->hz, &perfclock__horizon_estimate,
				 __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&clk->hz_lock);
}

/* Is generation a newer than b (wrap-safe; bumps are rare)? */
static int gen_newer(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

/*
 * Publish (h, gen) and return what the clock hands out: the highest
 * horizon of the newest generation. A newer generation voids the last
 * horizon (reset, not max); a sample of an older one (taken before
 * another thread saw the restart) is dropped for the newer one's. Sets
 * *out_gen; returns whether the generation differs from the one the
 * caller was last told of (and, if ack, tells it now).
 */
static int publish(struct perfclock *clk, uint64_t h, uint32_t gen, int ack,
		   uint64_t *out, uint32_t *out_gen)
{
	int changed;

	h = perfclock__ntp_slope_lower(clk, h);	/* ntp_slope.c */
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
 * The backend's horizon (sync: a fresh one, with flags), or the
 * estimate's if the backend withdrew (a fresh one of it: -EOPNOTSUPP).
 */
static int ask(struct perfclock *clk, int sync, uint32_t flags, uint64_t *h,
	       uint32_t *gen)
{
	const struct horizon_backend *b = backend_of(clk);
	int err;

	*gen = 1;
	err = sync ? b->sync(clk, flags, h, gen) : b->horizon(clk, h, gen);
	if (err == -ENOTTY) {
		withdraw(clk);
		b = &perfclock__horizon_estimate;
		*gen = 1;
		err = sync ? -EOPNOTSUPP : b->horizon(clk, h, gen);
	}
	/* hz_gen_base changes once, before the switch it comes with. */
	if (b == &perfclock__horizon_estimate)
		*gen += __atomic_load_n(&clk->hz_gen_base, __ATOMIC_RELAXED);
	return err;
}

/* Reads discarded in a row for a set right after them before -EAGAIN. */
#define SET_TRIES	4

/*
 * ask(), and for a clock that can be set (REALTIME, TAI) THE RULE in
 * horizon_sets.c: a horizon read is kept only if no set beyond `cover`
 * shows right after it, where cover is a count of sets every one of which
 * was seen before the read began (set_taken at first: a horizon was
 * proven after those). Otherwise the read may be from before a set the
 * caller already knows of (the module's page keeps its horizon until the
 * module's next check): it is discarded, and a fresh one (the backend's
 * sync(), which reads after the call begins; the estimate's plain read)
 * is taken. Every set seen is a new generation: gen + cover.
 */
static int take(struct perfclock *clk, int sync, uint32_t flags, uint64_t *h,
		uint32_t *gen)
{
	uint32_t cover, seen;
	int tries, err, fresh = sync;

	if (clk->set_tfd < 0)
		return ask(clk, sync, flags, h, gen);
	if (clk->set_err)		/* a fork() child without its timerfd */
		return clk->set_err;
	cover = perfclock__sets_taken(clk);
	for (tries = 0; tries < SET_TRIES; tries++) {
		err = ask(clk, sync || (fresh && backend_of(clk)->is_exact(clk)),
			  sync ? flags : 0, h, gen);
		if (err)
			return err;
		seen = perfclock__sets_seen(clk);
		if (seen == cover) {
			perfclock__sets_took(clk, cover);
			*gen += cover;
			return 0;
		}
		cover = seen;
		fresh = 1;
	}
	return -EAGAIN;
}

PERFCLOCK_API int perfclock_horizon(struct perfclock *clk, uint64_t *ns)
{
	uint64_t h;
	uint32_t gen;
	int err;

	if (!clk || !ns)
		return -EINVAL;
	err = take(clk, 0, 0, &h, &gen);
	if (err)
		return err;
	/* A restart this caller cannot follow: say so, every time. */
	if (publish(clk, h, gen, 0, &h, &gen))
		return -ESTALE;
	*ns = h;
	return 0;
}

PERFCLOCK_API int perfclock_horizon_gen(struct perfclock *clk, uint64_t *ns,
					uint32_t *gen)
{
	uint64_t h;
	uint32_t g;
	int err;

	if (!clk || !ns || !gen)
		return -EINVAL;
	err = take(clk, 0, 0, &h, &g);
	if (err)
		return err;
	err = publish(clk, h, g, 1, &h, &g);
	*ns = h;
	*gen = g;
	return err ? PERFCLOCK_HORIZON_RESTARTED : 0;
}

PERFCLOCK_API int perfclock_horizon_sync(struct perfclock *clk,
					 uint32_t flags, uint64_t *ns)
{
	uint64_t h;
	uint32_t gen;
	int err;

	if (!clk || !ns || (flags & ~PERFCLOCK_HORIZON_SYNC_EXPEDITED))
		return -EINVAL;
	err = take(clk, 1, flags, &h, &gen);
	if (err)
		return err;
	if (publish(clk, h, gen, 0, &h, &gen))
		return -ESTALE;
	*ns = h;
	return 0;
}

/* perfclock_get_info()'s horizon part (libperfclock.c). */
int perfclock__horizon_info(struct perfclock *clk,
			    struct perfclock_clock_info *info)
{
	const struct horizon_backend *b;
	uint64_t h, now;
	uint32_t gen;
	int err;

	/* The horizon's kind, and its age now; the caller is not told. */
	err = take(clk, 0, 0, &h, &gen);
	if (err)
		return err;
	publish(clk, h, gen, 0, &h, &gen);
	info->horizon_generation = gen;
	b = backend_of(clk);
	if (b->is_exact(clk))
		info->flags |= PERFCLOCK_CLOCK_HORIZON_EXACT;
	b->info(clk, info);
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
 * The name from the backend open chose, without take(): is_exact() and
 * info() read state and files (the module's page, the clocksource), never
 * a grace period, so a tool can print it before its first horizon.
 */
PERFCLOCK_API const char *perfclock_clock_horizon_name(struct perfclock *clk)
{
	struct perfclock_clock_info info = { 0 };
	const struct horizon_backend *b;

	if (!clk)
		return "unknown";
	b = backend_of(clk);
	if (b->is_exact(clk))
		info.flags |= PERFCLOCK_CLOCK_HORIZON_EXACT;
	b->info(clk, &info);
	perfclock__ntp_slope_info(clk, &info);
	return perfclock_horizon_name(&info);
}
