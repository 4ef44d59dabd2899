// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The module's horizons: the newest one proven on its page (no system
 * call), else PERFCLOCK_IOC_GET_HORIZON (blocks for a grace period). The
 * guarantee is THE FLUSH HORIZON in ../module/perfclock_ioctl.h, its
 * proof docs/horizon.md, "The proof".
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "horizon_internal.h"
#include "timens.h"

#define PERFCLOCK_CLOCKSOURCE \
	"/sys/devices/system/clocksource/clocksource0/current_clocksource"

/*
 * The generation as the module gave it, if it fills one
 * (PERFCLOCK_INFO_HORIZON_GENERATION); an older module's horizons never
 * restart, and its page and ioctl hold zero or garbage there: 1.
 */
static void set_gen(const struct perfclock *clk, uint32_t g, uint32_t *gen)
{
	if (clk->info.flags & PERFCLOCK_INFO_HORIZON_GENERATION)
		*gen = g;
}

/* PERFCLOCK_IOC_GET_HORIZON; -ENOTTY/-EINVAL mean an older module. */
static int horizon_ioctl(struct perfclock *clk, uint32_t flags, uint64_t *ns,
			 uint32_t *gen)
{
	struct perfclock_horizon hz;

	memset(&hz, 0, sizeof(hz));
	hz.clockid = clk->hz_clockid;
	hz.flags = flags;
	if (ioctl(clk->fd, PERFCLOCK_IOC_GET_HORIZON, &hz))
		return -errno;
	*ns = hz.ns;
	set_gen(clk, hz.generation, gen);
	return 0;
}

static int module_horizon(struct perfclock *clk, uint64_t *ns, uint32_t *gen)
{
	uint32_t g;
	int err;

	/* The page's proven horizon and its generation: no system call. */
	if (clk->page &&
	    perfclock_page_horizon_gen(clk->page, clk->hz_clockid, ns, &g) == 0) {
		set_gen(clk, g, gen);
		return 0;
	}
	/* None on the page (yet): a fresh one, after a grace period. */
	err = horizon_ioctl(clk, 0, ns, gen);
	/*
	 * The module said it had horizons, then refused them: an older
	 * module (-EINVAL), or one that saw the TSC marked unstable with no
	 * reset probe and hands out no perf_clock() horizon until reloaded
	 * (-EOPNOTSUPP, PERFCLOCK_INFO_PERF_HORIZON_REFUSED). Either way the
	 * clock withdraws to the estimate for good, flagged so, rather than
	 * failing every round.
	 */
	if (err == -EINVAL || err == -EOPNOTSUPP)
		err = -ENOTTY;
	return err;
}

static int module_sync(struct perfclock *clk, uint32_t flags, uint64_t *ns,
		       uint32_t *gen)
{
	/*
	 * The horizon is read in the kernel, without a time namespace's
	 * offset; the library's reads after a setns() need the new one.
	 */
	if (clk->backend == PERFCLOCK_BACKEND_CLOCKID)
		perfclock__timens_recheck_clock(clk->clockid);
	return horizon_ioctl(clk, (flags & PERFCLOCK_HORIZON_SYNC_EXPEDITED) ?
			     PERFCLOCK_HORIZON_EXPEDITED : 0, ns, gen);
}

static int module_is_exact(const struct perfclock *clk)
{
	(void)clk;
	return 1;
}

/*
 * The timekeeping clocksource is a paravirtual one (use_clockid clocks):
 * PERFCLOCK_CLOCK_HORIZON_HOST_PROMISE, here and in
 * horizon_membarrier.c.
 */
int perfclock__clocksource_paravirt(void)
{
	static const char *const pv[] = {
		"kvm-clock", "xen", "hyperv_clocksource_tsc_page",
		"hyperv_clocksource_msr",
	};
	char buf[64];
	size_t i, n;
	FILE *f = fopen(PERFCLOCK_CLOCKSOURCE, "re");

	if (!f)
		return 0;
	n = fgets(buf, sizeof(buf), f) ? strcspn(buf, "\n") : 0;
	fclose(f);
	buf[n] = 0;
	for (i = 0; i < sizeof(pv) / sizeof(pv[0]); i++)
		if (!strcmp(buf, pv[i]))
			return 1;
	return 0;
}

static void module_info(struct perfclock *clk,
			struct perfclock_clock_info *info)
{
	uint64_t h;

	if (clk->hz_clockid == PERFCLOCK_HORIZON_PERF_CLOCK ?
	    !!(clk->info.flags & PERFCLOCK_INFO_SCHED_CLOCK_PARAVIRT) :
	    perfclock__clocksource_paravirt())
		info->flags |= PERFCLOCK_CLOCK_HORIZON_HOST_PROMISE;

	if (clk->page &&
	    perfclock_page_horizon(clk->page, clk->hz_clockid, &h) == 0)
		info->flags |= PERFCLOCK_CLOCK_HORIZON_PAGE;
}

const struct horizon_backend perfclock__horizon_module = {
	.name = "module",
	.horizon = module_horizon,
	.sync = module_sync,
	.is_exact = module_is_exact,
	.info = module_info,
};
