// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The NTP slope term: what the library does about it
 * (PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE in perfclock/clock.h, "The NTP
 * slope" in docs/horizon.md; the derivation and the measurements:
 * docs/percpu-horizon.md, section 4.3).
 *
 * For a clock NTP disciplines (CLOCK_MONOTONIC, CLOCK_BOOTTIME,
 * CLOCK_REALTIME, CLOCK_TAI), kernel/time/timekeeping.c:
 * timekeeping_advance() reads the clocksource at c_r, computes a new mult
 * (timekeeping_adjust()) and only later writes the copies readers and
 * perf's stamps use (update_vsyscall(), tk_core, update_fast_timekeeper()).
 * timekeeping_apply_adjustment() keeps old and new parameters equal at
 * c_r; past it, a read of the old copy exceeds a LATER stamp of the new
 * one by B = ((c - c_r) * |dmult|) >> shift when mult went down. Nothing a
 * horizon proves (a grace period, presence on the CPU) orders that: the
 * record is stamped after the read. CLOCK_MONOTONIC_RAW (tkr_raw.mult is
 * never adjusted) and perf_clock() (not timekeeping) do not have it.
 *
 * So every horizon of such a clock comes down by
 * PERFCLOCK_NTP_SLOPE_MARGIN_NS (an estimate: B has no bound, the window
 * c - c_r being as long as the timekeeping CPU is stalled), and the
 * horizons the library would call exact are reported "exact except the
 * NTP slope" instead (PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE, EXACT clear).
 * While adjtimex() reports a slew, |dmult| is no longer the timekeeper's
 * own dither of a unit or so (ADJ_TICK: up to 10% of mult, measured B up
 * to 2.8 ms in a VM), and nothing bounds B from what user space can
 * read: PERFCLOCK_CLOCK_HORIZON_NTP_SLEW labels the horizons an estimate.
 * A slew is any of (kernel/time/ntp.c, 6.1 and 6.12):
 *  - a tick other than the nominal one (ADJ_TICK);
 *  - a kernel PLL offset still being applied: second_overflow() adds a
 *    part of time_offset to the tick length every second until it is
 *    used up (timex offset nonzero; it can be set only with STA_PLL);
 *  - an adjtime() slew under way (time_adjust, applied at 500 ppm by
 *    second_overflow(); read with ADJ_OFFSET_SS_READ, which needs no
 *    privilege and changes nothing);
 *  - PPS discipline asked for (STA_PPSFREQ or STA_PPSTIME): with
 *    CONFIG_NTP_PPS the PPS signal steers the frequency and phase.
 * A frequency set once (ADJ_FREQUENCY, chrony's way) changes mult once,
 * at the next tick; that step is the slope term the margin stands for,
 * not a slew.
 *
 * The slew is checked only when a caller asks what the horizon is
 * (perfclock_get_info(), the *_name() calls), at most once every
 * SLEW_RECHECK_NS per process (adjtimex is system-wide): one adjtimex
 * system call, modes 0 (no privilege needed, changes nothing). The
 * horizon paths themselves never make it: they subtract a constant.
 */
#include <sys/timex.h>
#include <time.h>
#include <unistd.h>

#include "horizon_internal.h"

/* How old a slew reading may be before it is taken again. */
#define SLEW_RECHECK_NS		(100000000ULL)	/* 100 ms */

/*
 * The process's last reading: slew_when (CLOCK_MONOTONIC_COARSE ns, 0:
 * never) and slew_on (1: slewing). Relaxed atomics: each is a
 * self-contained hint, two threads refreshing at once both read the
 * kernel and store what they saw. test_tick: the test hook's injected
 * tick (0: ask the kernel).
 */
static uint64_t slew_when;
static int slew_on;
static long test_tick;

int perfclock__ntp_disciplined(const struct perfclock *clk)
{
	if (clk->backend != PERFCLOCK_BACKEND_CLOCKID)
		return 0;
	return clk->clockid == CLOCK_MONOTONIC ||
	       clk->clockid == CLOCK_BOOTTIME ||
	       clk->clockid == CLOCK_REALTIME ||
	       clk->clockid == CLOCK_TAI;
}

uint64_t perfclock__ntp_slope_lower(const struct perfclock *clk, uint64_t h)
{
	if (!perfclock__ntp_disciplined(clk))
		return h;
	return perfclock__sub_sat(h, PERFCLOCK_NTP_SLOPE_MARGIN_NS);
}

/*
 * The kernel reports tick_usec (kernel/time/ntp.c: __do_adjtimex(),
 * "txc->tick = tick_usec"), USER_TICK_USEC until someone sets ADJ_TICK
 * (include/linux/jiffies.h: USER_TICK_USEC = (1000000 + USER_HZ / 2) /
 * USER_HZ); sysconf(_SC_CLK_TCK) is USER_HZ (the AT_CLKTCK auxv entry).
 * 0 when either is unknown (<= 0): no claim either way.
 */
int perfclock__ntp_tick_slewing(long tick, long user_hz)
{
	if (tick <= 0 || user_hz <= 0)
		return 0;
	return tick != (1000000L + user_hz / 2) / user_hz;
}

int perfclock__ntp_timex_slewing(const struct timex *tx, long adjtime_left,
				 long user_hz)
{
	return perfclock__ntp_tick_slewing(tx->tick, user_hz) ||
	       tx->offset != 0 || adjtime_left != 0 ||
	       (tx->status & (STA_PPSFREQ | STA_PPSTIME));
}

/* Is the kernel slewing now (or the injected tick)? 0 if it cannot say. */
static int kernel_slewing(void)
{
	struct timex tx = { .modes = 0 }, ss = { .modes = ADJ_OFFSET_SS_READ };
	long t = __atomic_load_n(&test_tick, __ATOMIC_RELAXED);

	if (t)
		return perfclock__ntp_tick_slewing(t, sysconf(_SC_CLK_TCK));
	/* A seccomp filter may refuse them: then no claim (0). */
	if (adjtimex(&tx) < 0)
		return 0;
	if (adjtimex(&ss) < 0)
		ss.offset = 0;
	return perfclock__ntp_timex_slewing(&tx, ss.offset, sysconf(_SC_CLK_TCK));
}

int perfclock__ntp_slewing(void)
{
	struct timespec ts;
	uint64_t now, when;
	int on;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	when = __atomic_load_n(&slew_when, __ATOMIC_RELAXED);
	if (when && now - when < SLEW_RECHECK_NS &&
	    !__atomic_load_n(&test_tick, __ATOMIC_RELAXED))
		return __atomic_load_n(&slew_on, __ATOMIC_RELAXED);
	on = kernel_slewing();
	__atomic_store_n(&slew_on, on, __ATOMIC_RELAXED);
	__atomic_store_n(&slew_when, now ? now : 1, __ATOMIC_RELAXED);
	return on;
}

void perfclock__ntp_slope_test_set_tick(long tick)
{
	__atomic_store_n(&test_tick, tick, __ATOMIC_RELAXED);
	/* Forget the reading taken with or without it. */
	__atomic_store_n(&slew_when, 0, __ATOMIC_RELAXED);
}

void perfclock__ntp_slope_info(const struct perfclock *clk,
			       struct perfclock_clock_info *info)
{
	if (!perfclock__ntp_disciplined(clk))
		return;
	if (info->flags & PERFCLOCK_CLOCK_HORIZON_EXACT) {
		info->flags &= ~PERFCLOCK_CLOCK_HORIZON_EXACT;
		info->flags |= PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE;
	}
	if (perfclock__ntp_slewing())
		info->flags |= PERFCLOCK_CLOCK_HORIZON_NTP_SLEW;
}

/* perfclock_horizon_name()'s part for NTP_SLOPE horizons. */
const char *perfclock__ntp_slope_name(const struct perfclock_clock_info *info)
{
	int slew = !!(info->flags & PERFCLOCK_CLOCK_HORIZON_NTP_SLEW);

	if (!(info->flags & PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE))
		return NULL;
	if (info->flags & PERFCLOCK_CLOCK_HORIZON_MEMBARRIER)
		return slew ? "estimate: NTP slew (membarrier)" :
			      "exact except NTP slope (membarrier)";
	if (info->flags & PERFCLOCK_CLOCK_HORIZON_PAGE)
		return slew ? "estimate: NTP slew (module page)" :
			      "exact except NTP slope (module page)";
	return slew ? "estimate: NTP slew (module ioctl)" :
		      "exact except NTP slope (module ioctl)";
}

/*
 * perfclock_horizon_cpu_name()'s part: the per-CPU horizon of an NTP
 * clock (CLOCK_MONOTONIC, CLOCK_BOOTTIME; REALTIME and TAI have none) is
 * read by clock_gettime and getcpu.
 */
const char *
perfclock__ntp_slope_cpu_name(const struct perfclock_clock_info *info)
{
	if (!(info->flags & PERFCLOCK_CLOCK_HORIZON_PERCPU) ||
	    info->backend != PERFCLOCK_BACKEND_CLOCKID ||
	    (info->clockid != CLOCK_MONOTONIC && info->clockid != CLOCK_BOOTTIME))
		return NULL;
	return (info->flags & PERFCLOCK_CLOCK_HORIZON_NTP_SLEW) ?
	       "estimate per-CPU: NTP slew (clock_gettime + getcpu)" :
	       "exact except NTP slope, per-CPU (clock_gettime + getcpu)";
}
