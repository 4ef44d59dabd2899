// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ntp_slope.c: the NTP slope margin, flags and names (docs/horizon.md,
 * "The NTP slope"; docs/percpu-horizon.md 4.3).
 *
 *  - the flags: the NTP-disciplined clocks (MONOTONIC, BOOTTIME,
 *    REALTIME, TAI) are never HORIZON_EXACT; where their horizon is the
 *    module's or membarrier's they are HORIZON_NTP_SLOPE; MONOTONIC_RAW
 *    has neither NTP flag;
 *  - the margin: H_c of CLOCK_MONOTONIC lies between two reads
 *    bracketing the call, each less PERFCLOCK_NTP_SLOPE_MARGIN_NS (the
 *    code before it returned the read itself: above the first read, so
 *    this fails there whenever the two reads are closer than the margin,
 *    which the test counts); CLOCK_MONOTONIC_RAW's with no margin;
 *  - the slews: the classification of ticks and of adjtimex() readings
 *    (a PLL offset, an adjtime() slew, PPS), the library's reading of
 *    this kernel against adjtimex() read here, and an injected tick
 *    through the test hook reaching the flags and names.
 * Slewing for real is left to the guests (selftests/perfclock_percpu_test.c:
 * the slope.* tests with ADJ_TICK, ntp.pll_and_adjtime_are_slews):
 * never on a shared host.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/timex.h>
#include <time.h>
#include <unistd.h>

#include "libperfclock.h"
#include "horizon_internal.h"
#include "tap.h"
#include "unit.h"

#define M PERFCLOCK_NTP_SLOPE_MARGIN_NS

static uint64_t now_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * This kernel's slew, read here, independently of the library: a tick
 * off nominal, a PLL offset left, an adjtime() slew left, PPS discipline.
 */
static int kernel_slewing(long *tick)
{
	struct timex tx = { .modes = 0 }, ss = { .modes = ADJ_OFFSET_SS_READ };
	long hz = sysconf(_SC_CLK_TCK);

	*tick = adjtimex(&tx) < 0 ? 0 : tx.tick;
	if (*tick <= 0)
		return 0;
	if (adjtimex(&ss) < 0)
		ss.offset = 0;
	return (hz > 0 && *tick != (1000000L + hz / 2) / hz) || tx.offset ||
	       ss.offset || (tx.status & (STA_PPSFREQ | STA_PPSTIME));
}

/* The other slews adjtimex() reports, on a nominal tick. */
static void timex_cases(void)
{
	static const struct {
		long offset, left;
		int status, slew;
		const char *what;
	} t[] = {
		{ 0, 0, 0, 0, "nothing" },
		{ 0, 0, STA_PLL, 0, "the PLL on, no offset left" },
		{ 500, 0, STA_PLL, 1, "a PLL offset being applied" },
		{ -500, 0, STA_PLL | STA_NANO, 1, "a negative PLL offset" },
		{ 0, 2000, 0, 1, "an adjtime() slew left" },
		{ 0, -2000, 0, 1, "a negative adjtime() slew left" },
		{ 0, 0, STA_PPSFREQ, 1, "PPS frequency discipline" },
		{ 0, 0, STA_PPSTIME, 1, "PPS time discipline" },
		{ 0, 0, STA_UNSYNC | STA_FREQHOLD, 0, "status bits that steer nothing" },
	};
	struct timex tx;
	size_t i;
	int bad = 0, got;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		memset(&tx, 0, sizeof(tx));
		tx.tick = 10000;
		tx.offset = t[i].offset;
		tx.status = t[i].status;
		got = perfclock__ntp_timex_slewing(&tx, t[i].left, 100);
		if (got != t[i].slew) {
			tap_diag("ntp: %s: slewing %d, want %d", t[i].what, got,
				 t[i].slew);
			bad++;
		}
	}
	tap_ok(!bad, "ntp: a PLL offset, an adjtime() slew and PPS discipline are slews, the rest is not (%zu cases)",
	       i);
}

static void classify(void)
{
	static const struct { long tick, hz; int slew; } t[] = {
		{ 10000, 100, 0 },	/* x86's USER_HZ, nominal */
		{ 9000, 100, 1 },	/* ADJ_TICK -10% */
		{ 11000, 100, 1 },	/* ADJ_TICK +10% */
		{ 10001, 100, 1 },	/* a slew of one microsecond a tick */
		{ 1000, 1000, 0 },	/* USER_HZ 1000 (alpha), nominal */
		{ 4000, 250, 0 },
		{ 3333, 300, 0 },	/* (1000000 + 150) / 300, the kernel's rounding */
		{ 3334, 300, 1 },
		{ 0, 100, 0 },		/* adjtimex failed: no claim */
		{ 10000, -1, 0 },	/* no USER_HZ: no claim */
	};
	size_t i;
	int bad = 0;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (perfclock__ntp_tick_slewing(t[i].tick, t[i].hz) != t[i].slew) {
			tap_diag("ntp: tick %ld at USER_HZ %ld: slewing %d, want %d",
				 t[i].tick, t[i].hz,
				 perfclock__ntp_tick_slewing(t[i].tick, t[i].hz),
				 t[i].slew);
			bad++;
		}
	tap_ok(!bad, "ntp: a tick other than USER_TICK_USEC is an ADJ_TICK slew, unknowns are no claim (%zu cases)",
	       i);
	timex_cases();
}

/* Which clocks get which flags, on whatever backend this machine gives. */
static void flags(void)
{
	static const struct { int id; const char *name; int ntp; } ids[] = {
		{ CLOCK_MONOTONIC, "CLOCK_MONOTONIC", 1 },
		{ CLOCK_BOOTTIME, "CLOCK_BOOTTIME", 1 },
		{ CLOCK_REALTIME, "CLOCK_REALTIME", 1 },
		{ CLOCK_TAI, "CLOCK_TAI", 1 },
		{ CLOCK_MONOTONIC_RAW, "CLOCK_MONOTONIC_RAW", 0 },
	};
	struct perfclock_clock_info info;
	struct perfclock *c;
	uint32_t ntpf = PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE |
			PERFCLOCK_CLOCK_HORIZON_NTP_SLEW;
	long tick;
	int slew = kernel_slewing(&tick), ok, proven;
	size_t i;

	tap_diag("ntp: adjtimex() tick %ld, USER_HZ %ld: %s", tick,
		 sysconf(_SC_CLK_TCK), slew ? "slewing" : "nominal");
	perfclock__ntp_slope_test_set_tick(0);
	tap_ok(perfclock__ntp_slewing() == slew,
	       "ntp: the library reads this kernel's slew as adjtimex() says (%s)",
	       slew ? "slewing" : "nominal");
	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		c = perfclock_open_clockid(ids[i].id);
		memset(&info, 0, sizeof(info));
		ok = c && perfclock_get_info(c, &info) == 0;
		/* The module's or membarrier's: no in-flight allowance. */
		proven = info.inflight_estimate_ns == 0;
		if (ids[i].ntp)
			tap_ok(ok && !(info.flags & PERFCLOCK_CLOCK_HORIZON_EXACT) &&
			       !!(info.flags & PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE) == proven &&
			       !!(info.flags & PERFCLOCK_CLOCK_HORIZON_NTP_SLEW) == slew &&
			       !strcmp(perfclock_horizon_name(&info),
				       perfclock_clock_horizon_name(c)),
			       "ntp: %s: never HORIZON_EXACT, NTP_SLOPE %s, NTP_SLEW as the kernel (\"%s\")",
			       ids[i].name, proven ? "set (a proven horizon)" : "clear (the estimate)",
			       ok ? perfclock_horizon_name(&info) : "-");
		else
			tap_ok(ok && !(info.flags & ntpf) &&
			       !!(info.flags & PERFCLOCK_CLOCK_HORIZON_EXACT) == proven,
			       "ntp: %s: no NTP flag, exact when proven (\"%s\")",
			       ids[i].name, ok ? perfclock_horizon_name(&info) : "-");
		perfclock_close(c);
	}
}

/*
 * H_c of id, 200 times between two reads a and b: within [a - m, b - m].
 * *close counts the tries with b - a < M, where a margin not taken off
 * would put H_c above b - M.
 */
static int between(struct perfclock *c, clockid_t id, uint64_t m, int *close)
{
	uint64_t a, b, h;
	uint32_t cpu;
	int i, bad = 0;

	*close = 0;
	for (i = 0; i < 200; i++) {
		a = now_ns(id);
		if (perfclock_horizon_cpu(c, &h, &cpu))
			return 0;
		b = now_ns(id);
		if (h + m < a || h + m > b)
			bad++;
		if (b - a < M)
			(*close)++;
	}
	return !bad;
}

static void margin(void)
{
	struct perfclock_clock_info info;
	struct perfclock *c;
	uint64_t a, b, h;
	int ok, close = 0;

	c = perfclock_open_clockid(CLOCK_MONOTONIC);
	ok = c && between(c, CLOCK_MONOTONIC, M, &close);
	/*
	 * Only a window shorter than the margin can tell a margin taken off
	 * from none. H_c of a namespaced clock makes a system call (the
	 * time namespace recheck, timens.h), so under valgrind no window is
	 * that short: then the bound still holds, but shows nothing.
	 */
	if (ok && !close)
		tap_skip("ntp: CLOCK_MONOTONIC: H_c is between two reads around it less %llu ns # SKIP no window of 200 under the margin (valgrind?): the margin is not shown",
			 (unsigned long long)M);
	else
		tap_ok(ok,
		       "ntp: CLOCK_MONOTONIC: H_c is between two reads around it less %llu ns, 200 times (%d windows under the margin)",
		       (unsigned long long)M, close);
	/* membarrier's horizon_sync: a read during the call, less the margin. */
	if (c && perfclock_get_info(c, &info) == 0 &&
	    (info.flags & PERFCLOCK_CLOCK_HORIZON_MEMBARRIER)) {
		a = now_ns(CLOCK_MONOTONIC);
		ok = perfclock_horizon_sync(c, 0, &h) == 0;
		b = now_ns(CLOCK_MONOTONIC);
		tap_ok(ok && h + M >= a && h + M <= b,
		       "ntp: CLOCK_MONOTONIC: membarrier's horizon_sync is a read during the call less the margin");
	} else {
		tap_skip("ntp: CLOCK_MONOTONIC: membarrier's horizon_sync # SKIP not membarrier's horizon here");
	}
	perfclock_close(c);

	c = perfclock_open_clockid(CLOCK_MONOTONIC_RAW);
	ok = c && between(c, CLOCK_MONOTONIC_RAW, 0, &close);
	tap_ok(ok, "ntp: CLOCK_MONOTONIC_RAW: H_c is between two reads around it, no margin");
	perfclock_close(c);
}

/* An injected slew (the test hook) reaches the flags and the names. */
static void slew(void)
{
	struct perfclock_clock_info info, raw;
	struct perfclock *c, *r;
	long hz = sysconf(_SC_CLK_TCK), tick;
	const char *name, *cpu_name;
	int ok;

	if (hz <= 0 || kernel_slewing(&tick)) {
		tap_skip("ntp: injected slew # SKIP %s",
			 hz <= 0 ? "no USER_HZ" : "this kernel slews already");
		return;
	}
	c = perfclock_open_clockid(CLOCK_MONOTONIC);
	r = perfclock_open_clockid(CLOCK_MONOTONIC_RAW);
	perfclock__ntp_slope_test_set_tick((1000000L + hz / 2) / hz * 11 / 10);
	memset(&info, 0, sizeof(info));
	memset(&raw, 0, sizeof(raw));
	ok = c && r && perfclock_get_info(c, &info) == 0 &&
	     perfclock_get_info(r, &raw) == 0;
	name = ok ? perfclock_horizon_name(&info) : "-";
	cpu_name = ok ? perfclock_horizon_cpu_name(&info) : "-";
	tap_ok(ok && (info.flags & PERFCLOCK_CLOCK_HORIZON_NTP_SLEW) &&
	       !strncmp(name, "estimate", 8) &&
	       !strncmp(perfclock_clock_horizon_name(c), "estimate", 8) &&
	       !strcmp(cpu_name,
		       "estimate per-CPU: NTP slew (clock_gettime + getcpu)") &&
	       !(raw.flags & PERFCLOCK_CLOCK_HORIZON_NTP_SLEW) &&
	       !strcmp(perfclock_horizon_cpu_name(&raw),
		       "exact per-CPU (clock_gettime + getcpu)"),
	       "ntp: a tick 10%% over nominal: CLOCK_MONOTONIC's horizons are named estimates (\"%s\", \"%s\"), CLOCK_MONOTONIC_RAW's are not",
	       name, cpu_name);
	perfclock__ntp_slope_test_set_tick(0);
	memset(&info, 0, sizeof(info));
	ok = perfclock_get_info(c, &info) == 0;
	tap_ok(ok && !(info.flags & PERFCLOCK_CLOCK_HORIZON_NTP_SLEW) &&
	       strncmp(perfclock_horizon_name(&info), "estimate:", 9),
	       "ntp: the nominal tick again: the slew flag goes (\"%s\")",
	       perfclock_horizon_name(&info));
	perfclock_close(c);
	perfclock_close(r);
}

/* The names of hand-made infos. */
static void names(void)
{
	static const struct { uint32_t flags; const char *want; } t[] = {
		{ PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE |
		  PERFCLOCK_CLOCK_HORIZON_MEMBARRIER,
		  "exact except NTP slope (membarrier)" },
		{ PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE |
		  PERFCLOCK_CLOCK_HORIZON_PAGE,
		  "exact except NTP slope (module page)" },
		{ PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE,
		  "exact except NTP slope (module ioctl)" },
		{ PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE |
		  PERFCLOCK_CLOCK_HORIZON_NTP_SLEW |
		  PERFCLOCK_CLOCK_HORIZON_MEMBARRIER,
		  "estimate: NTP slew (membarrier)" },
		{ PERFCLOCK_CLOCK_HORIZON_NTP_SLEW, "estimate" },
		{ PERFCLOCK_CLOCK_HORIZON_EXACT |
		  PERFCLOCK_CLOCK_HORIZON_MEMBARRIER, "exact (membarrier)" },
	};
	struct perfclock_clock_info info;
	size_t i;
	int bad = 0;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		memset(&info, 0, sizeof(info));
		info.flags = t[i].flags;
		if (strcmp(perfclock_horizon_name(&info), t[i].want)) {
			tap_diag("ntp: flags %#x named \"%s\", want \"%s\"",
				 t[i].flags, perfclock_horizon_name(&info),
				 t[i].want);
			bad++;
		}
	}
	memset(&info, 0, sizeof(info));
	info.backend = PERFCLOCK_BACKEND_CLOCKID;
	info.clockid = CLOCK_BOOTTIME;
	info.flags = PERFCLOCK_CLOCK_HORIZON_PERCPU;
	if (strcmp(perfclock_horizon_cpu_name(&info),
		   "exact except NTP slope, per-CPU (clock_gettime + getcpu)"))
		bad++;
	info.clockid = CLOCK_MONOTONIC_RAW;
	if (strcmp(perfclock_horizon_cpu_name(&info),
		   "exact per-CPU (clock_gettime + getcpu)"))
		bad++;
	tap_ok(!bad, "ntp: perfclock_horizon_name() and perfclock_horizon_cpu_name() name the NTP flags");
}

void test_ntp_slope(void)
{
	classify();
	names();
	flags();
	margin();
	slew();
}
