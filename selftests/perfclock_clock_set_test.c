// SPDX-License-Identifier: GPL-2.0
/*
 * REALTIME set back and forward again between two of the module's checks
 * (module/perfclock.c: perfclock_epoch_check()). The net offset from
 * MONOTONIC ends where it was (a little ahead), so a module that compares
 * only the offset sees nothing; but a record stamped while the clock was
 * back lies below the horizon held from before, and the tool must be told
 * (a new generation). The module counts the timekeeper's sets
 * (clock_was_set_seq) and starts one.
 *
 * realtime_back_and_forward: each round takes a REALTIME horizon, sets
 * the clock 2 s back and at once 2 s (and 1 ms) forward again, two
 * clock_settime() calls with nothing between them, so that the net
 * offset grew a little; the next horizon must carry a newer generation.
 * ROUNDS rounds: the module's 1 ms timer could run between the two sets
 * (and then even an offset-only check sees the step back), but not in
 * every round; on the module before the count at least one round fails.
 *
 * records_below_held_horizon: why it matters. The same with a COMM
 * record (use_clockid REALTIME) stamped between the two sets: it lies
 * below the horizon held from before.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/prctl.h>

#include "kselftest_harness.h"
#include "perfclock_util.h"

#define ROUNDS	5

static int get_horizon(int fd, int clockid, struct perfclock_horizon *h)
{
	memset(h, 0, sizeof(*h));
	h->clockid = clockid;
	return pc_ioctl(fd, PERFCLOCK_IOC_GET_HORIZON, h);
}

static void shift(struct timespec *ts, long long ns)
{
	long long t = ts->tv_sec * 1000000000LL + ts->tv_nsec + ns;

	ts->tv_sec = t / 1000000000LL;
	ts->tv_nsec = t % 1000000000LL;
}

TEST(realtime_back_and_forward)
{
	struct perfclock_horizon h0, h1;
	struct timespec back, fwd;
	int fd, i, moved = 0;

	if (geteuid())
		SKIP(return, "needs root to set CLOCK_REALTIME");
	fd = pc_open(O_RDONLY);
	ASSERT_LE(0, fd);
	for (i = 0; i < ROUNDS; i++) {
		ASSERT_EQ(0, get_horizon(fd, CLOCK_REALTIME, &h0));
		ASSERT_EQ(0, clock_gettime(CLOCK_REALTIME, &back));
		fwd = back;
		shift(&back, -2000000000LL);
		shift(&fwd, 1000000LL);
		ASSERT_EQ(0, clock_settime(CLOCK_REALTIME, &back));
		ASSERT_EQ(0, clock_settime(CLOCK_REALTIME, &fwd));
		ASSERT_EQ(0, get_horizon(fd, CLOCK_REALTIME, &h1));
		if (h1.generation != h0.generation)
			moved++;
		TH_LOG("round %d: generation %u -> %u", i, h0.generation,
		       h1.generation);
	}
	EXPECT_EQ(ROUNDS, moved) TH_LOG("a set back and forward again went unseen");
	close(fd);
}

TEST(records_below_held_horizon)
{
	struct perfclock_horizon h0, h1;
	struct pc_comm_ring ring;
	struct timespec back;
	uint64_t t[8];
	int fd, got;

	if (geteuid())
		SKIP(return, "needs root to set CLOCK_REALTIME");
	memset(&ring, 0, sizeof(ring));
	fd = pc_open(O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pc_comm_ring_open(&ring, CLOCK_REALTIME));
	ASSERT_EQ(0, get_horizon(fd, CLOCK_REALTIME, &h0));
	pc_comm_ring_drain(&ring, t, 8);
	ASSERT_EQ(0, clock_gettime(CLOCK_REALTIME, &back));
	shift(&back, -2000000000LL);
	ASSERT_EQ(0, clock_settime(CLOCK_REALTIME, &back));
	prctl(PR_SET_NAME, "pcset");
	ASSERT_EQ(0, clock_gettime(CLOCK_REALTIME, &back));
	shift(&back, 2000000000LL);
	ASSERT_EQ(0, clock_settime(CLOCK_REALTIME, &back));
	got = pc_comm_ring_drain(&ring, t, 8);
	ASSERT_LT(0, got);
	EXPECT_LT(t[got - 1], h0.ns) TH_LOG("the set back did not put a record below the held horizon");
	ASSERT_EQ(0, get_horizon(fd, CLOCK_REALTIME, &h1));
	EXPECT_NE(h0.generation, h1.generation);
	pc_comm_ring_close(&ring);
	close(fd);
}

/*
 * One forward set alone still starts no generation. Forward by a second,
 * not a millisecond: the set is "now + shift" read before the call, and
 * a vCPU stalled longer than the shift between the read and the set (tens
 * of ms on an overcommitted TCG host) makes it a set back, which rightly
 * starts one (seen once: generation 7 -> 8).
 */
TEST(realtime_forward_only)
{
	struct perfclock_horizon h0, h1;
	struct timespec ts;
	int fd;

	if (geteuid())
		SKIP(return, "needs root to set CLOCK_REALTIME");
	fd = pc_open(O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, get_horizon(fd, CLOCK_REALTIME, &h0));
	ASSERT_EQ(0, clock_gettime(CLOCK_REALTIME, &ts));
	shift(&ts, 1000000000LL);
	ASSERT_EQ(0, clock_settime(CLOCK_REALTIME, &ts));
	ASSERT_EQ(0, get_horizon(fd, CLOCK_REALTIME, &h1));
	EXPECT_EQ(h0.generation, h1.generation);
	EXPECT_LE(h0.ns, h1.ns);
	close(fd);
}

TEST_HARNESS_MAIN
