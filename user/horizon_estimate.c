// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The estimated horizon, where no backend proves one: an exact read of
 * the clock minus the module's skew estimate (0 for a global clock)
 * minus an in-flight allowance (perfclock/horizon.h: perfclock_horizon()).
 * Also the skew estimate itself, which perfclock_read_lower_bound()
 * takes off too.
 */
#include <errno.h>
#include <time.h>

#include "horizon_internal.h"

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
 * others use the values they find.
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

uint64_t perfclock__inflight_estimate(struct perfclock *clk)
{
	uint64_t stall = 0;

	if (clk->backend == PERFCLOCK_BACKEND_DEVICE)
		stall = module_max(clk, clk->info.timer_lateness_ns,
				   clk->page ? &clk->page->timer_lateness_ns :
				   NULL, &clk->np_stall);
	return stall > PERFCLOCK_HORIZON_ESTIMATE_INFLIGHT_NS ? stall :
		PERFCLOCK_HORIZON_ESTIMATE_INFLIGHT_NS;
}

static int estimate_horizon(struct perfclock *clk, uint64_t *ns,
			    uint32_t *gen)
{
	uint64_t now;
	int err;

	/* A REALTIME or TAI clock's sets: horizon.c, horizon_sets.c. */
	(void)gen;
	err = perfclock_read(clk, &now);
	if (err)
		return err;
	*ns = perfclock__sub_sat(now, perfclock__skew_estimate(clk) +
				 perfclock__inflight_estimate(clk));
	return 0;
}

static int estimate_sync(struct perfclock *clk, uint32_t flags, uint64_t *ns,
			 uint32_t *gen)
{
	(void)clk;
	(void)flags;
	(void)ns;
	(void)gen;
	return -EOPNOTSUPP;	/* nothing to wait for: never exact */
}

static int estimate_is_exact(const struct perfclock *clk)
{
	(void)clk;
	return 0;
}

static void estimate_info(struct perfclock *clk,
			  struct perfclock_clock_info *info)
{
	info->inflight_estimate_ns = perfclock__inflight_estimate(clk);
}

const struct horizon_backend perfclock__horizon_estimate = {
	.name = "estimate",
	.horizon = estimate_horizon,
	.sync = estimate_sync,
	.is_exact = estimate_is_exact,
	.info = estimate_info,
};
