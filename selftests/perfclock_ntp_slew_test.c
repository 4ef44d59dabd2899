// SPDX-License-Identifier: GPL-2.0
/*
 * The library labels the horizons of an NTP-disciplined clock an estimate
 * (PERFCLOCK_CLOCK_HORIZON_NTP_SLEW) while the kernel slews it, not only
 * during an ADJ_TICK slew (user/ntp_slope.c says why): here a kernel PLL
 * offset being applied, then an adjtime() slew, each set for real with
 * adjtimex() and taken back, the flag read through perfclock_get_info()
 * of a CLOCK_MONOTONIC clock. The library before saw the tick only: both
 * "while" checks fail there. The guest runs no NTP daemon; the kernel's
 * NTP status and frequency are put back. ADJ_TICK itself is exercised by
 * perfclock_percpu_test's slope.* tests.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <sys/timex.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "libperfclock.h"

/* Past the library's 100 ms between two readings of the kernel's slew. */
#define RECHECK_US	150000

static int slewing(struct perfclock *c)
{
	struct perfclock_clock_info ci;

	usleep(RECHECK_US);
	if (perfclock_get_info(c, &ci))
		return -1;
	return !!(ci.flags & PERFCLOCK_CLOCK_HORIZON_NTP_SLEW);
}

TEST(pll_offset_and_adjtime_are_slews)
{
	struct timex saved = { .modes = 0 }, tx;
	struct timeval delta = { 0, 20000 }, zero = { 0, 0 };
	int before, pll, pll_gone, adj, adj_gone, err = 0;
	struct perfclock *c;

	if (geteuid())
		SKIP(return, "needs root (adjtimex)");
	c = perfclock_open_clockid(CLOCK_MONOTONIC);
	ASSERT_NE(NULL, c) TH_LOG("perfclock_open_clockid: %s", strerror(errno));
	ASSERT_LE(0, adjtimex(&saved));
	before = slewing(c);
	if (before)
		SKIP(return, "the clock is slewed already (an NTP daemon?): nothing to compare with");

	/* A 5 ms PLL offset: applied a part a second, for many seconds. */
	memset(&tx, 0, sizeof(tx));
	tx.modes = ADJ_STATUS;
	tx.status = (saved.status | STA_PLL) & ~STA_NANO;
	err |= adjtimex(&tx) < 0;
	tx.modes = ADJ_OFFSET;
	tx.offset = 5000;	/* us */
	err |= adjtimex(&tx) < 0;
	pll = slewing(c);
	/* Its offset taken back while the PLL is on, then the status. */
	tx.modes = ADJ_OFFSET;
	tx.offset = 0;
	err |= adjtimex(&tx) < 0;
	tx.modes = ADJ_STATUS;
	tx.status = saved.status;
	err |= adjtimex(&tx) < 0;
	/* The PLL's update may have moved the frequency too: put it back. */
	tx.modes = ADJ_FREQUENCY;
	tx.freq = saved.freq;
	err |= adjtimex(&tx) < 0;
	pll_gone = slewing(c);

	/* adjtime(): 20 ms at 500 ppm, 40 s; cancelled by a zero delta. */
	err |= adjtime(&delta, NULL) != 0;
	adj = slewing(c);
	err |= adjtime(&zero, NULL) != 0;
	adj_gone = slewing(c);
	perfclock_close(c);

	ASSERT_EQ(0, err) TH_LOG("adjtimex/adjtime: %s", strerror(errno));
	TH_LOG("NTP_SLEW: before %d, PLL offset %d, taken back %d, adjtime() %d, cancelled %d",
	       before, pll, pll_gone, adj, adj_gone);
	EXPECT_EQ(1, pll) TH_LOG("a PLL offset being applied is not labelled a slew");
	EXPECT_EQ(0, pll_gone);
	EXPECT_EQ(1, adj) TH_LOG("an adjtime() slew is not labelled a slew");
	EXPECT_EQ(0, adj_gone);
}

TEST_HARNESS_MAIN
