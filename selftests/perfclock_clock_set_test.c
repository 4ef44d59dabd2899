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
 * Each round: take a REALTIME horizon, set the clock 2 s back, stamp a
 * COMM record (use_clockid REALTIME), set it 2 s forward again, all
 * within a few tens of microseconds; the record must lie below the held
 * horizon (the step is real) and the next horizon must carry a newer
 * generation. ROUNDS rounds: the module's 1 ms timer could run between
 * the two sets (and then even an offset-only check sees the step back),
 * but not in every round; on the code before the count at least one
 * round fails.
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

TEST(realtime_back_and_forward_within_a_period)
{
	struct perfclock_horizon h0, h1;
	struct pc_comm_ring ring;
	struct timespec back;
	uint64_t t[8];
	int fd, i, got, moved = 0, below = 0;
	char name[16];

	if (geteuid())
		SKIP(return, "needs root to set CLOCK_REALTIME");
	memset(&ring, 0, sizeof(ring));
	fd = pc_open(O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pc_comm_ring_open(&ring, CLOCK_REALTIME));
	for (i = 0; i < ROUNDS; i++) {
		ASSERT_EQ(0, get_horizon(fd, CLOCK_REALTIME, &h0));
		pc_comm_ring_drain(&ring, t, 8);
		snprintf(name, sizeof(name), "pcset%d", i);
		ASSERT_EQ(0, clock_gettime(CLOCK_REALTIME, &back));
		shift(&back, -2000000000LL);
		ASSERT_EQ(0, clock_settime(CLOCK_REALTIME, &back));
		prctl(PR_SET_NAME, name);
		/* Forward to where it was, plus what these calls took. */
		ASSERT_EQ(0, clock_gettime(CLOCK_REALTIME, &back));
		shift(&back, 2000000000LL);
		ASSERT_EQ(0, clock_settime(CLOCK_REALTIME, &back));
		got = pc_comm_ring_drain(&ring, t, 8);
		ASSERT_LT(0, got);
		if (t[got - 1] < h0.ns)
			below++;
		ASSERT_EQ(0, get_horizon(fd, CLOCK_REALTIME, &h1));
		if (h1.generation != h0.generation)
			moved++;
		TH_LOG("round %d: record %llu, held horizon %llu, generation %u -> %u",
		       i, (unsigned long long)t[got - 1],
		       (unsigned long long)h0.ns, h0.generation, h1.generation);
	}
	EXPECT_EQ(ROUNDS, below) TH_LOG("the set back did not put a record below the held horizon");
	EXPECT_EQ(ROUNDS, moved) TH_LOG("a set back and forward again went unseen");
	pc_comm_ring_close(&ring);
	close(fd);
}

/* One forward set alone still starts no generation. */
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
	shift(&ts, 1000000);
	ASSERT_EQ(0, clock_settime(CLOCK_REALTIME, &ts));
	ASSERT_EQ(0, get_horizon(fd, CLOCK_REALTIME, &h1));
	EXPECT_EQ(h0.generation, h1.generation);
	EXPECT_LE(h0.ns, h1.ns);
	close(fd);
}

TEST_HARNESS_MAIN
