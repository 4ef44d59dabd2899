// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The flush horizon: perfclock_horizon() and perfclock_horizon_sync()
 * ask the clock's backend (horizon_internal.h) and publish what it gives,
 * never lower than a horizon already returned.
 */
#include <errno.h>

#include "horizon_internal.h"
#include "internal.h"

static const struct horizon_backend *backend_of(const struct perfclock *clk)
{
	return __atomic_load_n(&clk->hz, __ATOMIC_RELAXED);
}

void perfclock__horizon_choose(struct perfclock *clk)
{
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
}

void perfclock__horizon_release(struct perfclock *clk)
{
	const struct horizon_backend *b = backend_of(clk);

	if (b && b->close)
		b->close(clk);
}

/* The module said it had horizons, then refused them: estimate from now. */
static void withdraw(struct perfclock *clk)
{
	const struct horizon_backend *b = backend_of(clk);

	if (b->close)
		b->close(clk);
	__atomic_store_n(&clk->hz, &perfclock__horizon_estimate, __ATOMIC_RELAXED);
}

/* Never hand out less than before: each value was exact when returned. */
static uint64_t publish(struct perfclock *clk, uint64_t h)
{
	uint64_t last = __atomic_load_n(&clk->hz_last, __ATOMIC_RELAXED);

	while (h > last &&
	       !__atomic_compare_exchange_n(&clk->hz_last, &last, h, 1,
					    __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
	return h > last ? h : last;
}

PERFCLOCK_API int perfclock_horizon(struct perfclock *clk, uint64_t *ns)
{
	uint64_t h;
	int err;

	if (!clk || !ns)
		return -EINVAL;
	err = backend_of(clk)->horizon(clk, &h);
	if (err == -ENOTTY) {
		withdraw(clk);
		err = perfclock__horizon_estimate.horizon(clk, &h);
	}
	if (err)
		return err;
	*ns = publish(clk, h);
	return 0;
}

PERFCLOCK_API int perfclock_horizon_sync(struct perfclock *clk,
					 uint32_t flags, uint64_t *ns)
{
	uint64_t h;
	int err;

	if (!clk || !ns || (flags & ~PERFCLOCK_HORIZON_SYNC_EXPEDITED))
		return -EINVAL;
	err = backend_of(clk)->sync(clk, flags, &h);
	if (err == -ENOTTY) {
		withdraw(clk);
		return -EOPNOTSUPP;
	}
	if (err)
		return err;
	*ns = publish(clk, h);
	return 0;
}

/* perfclock_get_info()'s horizon part (libperfclock.c). */
int perfclock__horizon_info(struct perfclock *clk,
			    struct perfclock_clock_info *info)
{
	const struct horizon_backend *b;
	uint64_t h, now;
	int err;

	/* The horizon's kind, and its age now. */
	err = perfclock_horizon(clk, &h);
	if (err)
		return err;
	b = backend_of(clk);
	if (b->is_exact(clk))
		info->flags |= PERFCLOCK_CLOCK_HORIZON_EXACT;
	b->info(clk, info);
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
	if (!(info->flags & PERFCLOCK_CLOCK_HORIZON_EXACT))
		return "estimate";
	if (info->flags & PERFCLOCK_CLOCK_HORIZON_MEMBARRIER)
		return "exact (membarrier)";
	if (info->flags & PERFCLOCK_CLOCK_HORIZON_PAGE)
		return "exact (module page)";
	return "exact (module ioctl)";
}
