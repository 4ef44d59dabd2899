// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The estimated horizon, where no backend proves one: an exact read of
 * the clock minus the module's skew estimate (0 for a global clock)
 * minus an in-flight allowance (perfclock/horizon.h: perfclock_horizon()).
 * The read and the module's estimates are the clock read's
 * (clock_read.c, below every backend): this file only subtracts.
 */
#include <errno.h>

#include "horizon_internal.h"
#include "clock_read.h"
#include "timens.h"

uint64_t perfclock__inflight_estimate(struct perfclock *clk)
{
	/* The module's timer lateness (clock_read.c), 0 without it. */
	uint64_t stall = perfclock__stall_estimate(clk);

	return stall > PERFCLOCK_HORIZON_ESTIMATE_INFLIGHT_NS ? stall :
		PERFCLOCK_HORIZON_ESTIMATE_INFLIGHT_NS;
}

static int estimate_horizon(struct perfclock *clk, uint64_t *ns,
			    uint32_t *gen)
{
	uint64_t now;
	int err;

	/* A REALTIME or TAI clock's sets: horizon_sets.c, the step above. */
	(void)gen;
	/*
	 * The read is clock_gettime() less the cached offset: after a
	 * setns() (kernel/time/namespace.c: timens_install()) that is the
	 * old namespace's, and the horizon would be off by the difference
	 * (timens.h: perfclock__timens_recheck()).
	 */
	if (clk->backend == PERFCLOCK_BACKEND_CLOCKID)
		perfclock__timens_recheck_clock(clk->clockid);
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
