// SPDX-License-Identifier: GPL-2.0
/*
 * Horizon generations (THE FLUSH HORIZON, "Generations", in
 * perfclock_ioctl.h): when a clock the horizon is read in moves back, the
 * module starts a new generation, and no horizon of the new generation is
 * above a record stamped after it was handed out. Each test also checks
 * the old behaviour, a horizon kept across the step, and requires that it
 * fails: the step is real and the generation is what saves the reader.
 *
 *  - realtime_set_backward: CLOCK_REALTIME set 2 s back (clock_settime)
 *    while a REALTIME horizon is held. Both regimes.
 *  - sched_clock_turns_unstable: the stable regime only, and last (the
 *    TSC stays unstable for the rest of the boot). The GTOD is first run
 *    10% slow for a few seconds (adjtimex ADJ_TICK), so that it falls
 *    behind sched_clock; then perfclock_mark_tsc_unstable.ko marks the
 *    TSC unstable, and kernel/sched/clock.c:__sched_clock_work() resets
 *    every CPU's clock from the GTOD: perf_clock() steps back by the lag.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/timex.h>

#include "kselftest_harness.h"
#include "perfclock_util.h"

#define SLOW_SECONDS	5	/* at 10% slow: the GTOD falls 500 ms behind */
#define WAIT_SECONDS	20

static uint64_t ts_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int get_horizon(int fd, int clockid, struct perfclock_horizon *h)
{
	memset(h, 0, sizeof(*h));
	h->clockid = clockid;
	return pc_ioctl(fd, PERFCLOCK_IOC_GET_HORIZON, h);
}

/* The page's generation and perf_clock() horizon, consistent. */
static int page_horizon(const struct perfclock_page *pg, uint32_t *gen,
			uint64_t *ns, int *valid)
{
	uint32_t seq;
	int tries;

	for (tries = 0; tries < 100000; tries++) {
		seq = perfclock_page_seq_begin(pg);
		*gen = perfclock_page_load(pg->horizon_generation);
		*ns = perfclock_page_load(pg->horizon_ns);
		*valid = !!(perfclock_page_load(pg->flags) &
			    PERFCLOCK_PAGE_HORIZON_VALID);
		if (!perfclock_page_seq_retry(pg, seq))
			return 0;
		sched_yield();
	}
	return -EAGAIN;
}

/* Stamp one PERF_RECORD_COMM on this thread and return its time. */
static int stamp(struct pc_comm_ring *r, uint64_t *ts)
{
	static int n;
	char name[16];
	uint64_t t[8];
	int got;

	snprintf(name, sizeof(name), "pcgen%d", n++ % 1000);
	if (prctl(PR_SET_NAME, name))
		return -errno;
	got = pc_comm_ring_drain(r, t, 8);
	if (got <= 0)
		return got ? got : -ENODATA;
	*ts = t[got - 1];
	return 0;
}

TEST(realtime_set_backward)
{
	struct perfclock_horizon h0, h1, h2;
	struct pc_comm_ring ring;
	struct timespec ts;
	uint64_t t;
	int fd;

	if (geteuid())
		SKIP(return, "needs root to set CLOCK_REALTIME");
	fd = pc_open(O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pc_comm_ring_open(&ring, CLOCK_REALTIME));
	ASSERT_EQ(0, get_horizon(fd, CLOCK_REALTIME, &h0));
	ASSERT_LE(1, h0.generation);

	/* Forward: every held horizon stays true, no new generation. */
	ASSERT_EQ(0, clock_gettime(CLOCK_REALTIME, &ts));
	ts.tv_sec += 1;
	ASSERT_EQ(0, clock_settime(CLOCK_REALTIME, &ts));
	ASSERT_EQ(0, get_horizon(fd, CLOCK_REALTIME, &h1));
	EXPECT_EQ(h0.generation, h1.generation);
	EXPECT_LE(h0.ns, h1.ns);

	/* Back by 2 s (1 s below where it was). */
	ASSERT_EQ(0, clock_gettime(CLOCK_REALTIME, &ts));
	ts.tv_sec -= 2;
	ASSERT_EQ(0, clock_settime(CLOCK_REALTIME, &ts));
	ASSERT_EQ(0, stamp(&ring, &t));
	/* The old behaviour: the held horizon is above a later record. */
	EXPECT_LT(t, h1.ns) TH_LOG("the set did not move the clock below the held horizon");

	ASSERT_EQ(0, get_horizon(fd, CLOCK_REALTIME, &h2));
	EXPECT_LT(h1.generation, h2.generation);
	EXPECT_GT(h1.ns, h2.ns) TH_LOG("the new generation restarts lower");
	ASSERT_EQ(0, stamp(&ring, &t));
	EXPECT_LE(h2.ns, t) TH_LOG("new-generation horizon above a later record");
	TH_LOG("generation %u -> %u, horizon %llu -> %llu", h1.generation,
	       h2.generation, (unsigned long long)h1.ns,
	       (unsigned long long)h2.ns);

	/* Put the clock back where it would be. */
	ASSERT_EQ(0, clock_gettime(CLOCK_REALTIME, &ts));
	ts.tv_sec += 1;
	ASSERT_EQ(0, clock_settime(CLOCK_REALTIME, &ts));
	pc_comm_ring_close(&ring);
	close(fd);
}

static int set_tick(long tick)
{
	struct timex tx = { .modes = ADJ_TICK, .tick = tick };

	return adjtimex(&tx) < 0 ? -errno : 0;
}

TEST(sched_clock_turns_unstable)
{
	const char *ko = getenv("PERFCLOCK_MARK_KO");
	struct perfclock_horizon pre, h;
	struct perfclock_info info;
	const struct perfclock_page *pg;
	struct pc_comm_ring ring;
	struct timex tx = { .modes = 0 };
	uint64_t t, deadline, pns, max_new = 0, below_pre = 0, bad = 0;
	uint64_t stamps = 0, worst_back = 0;
	uint32_t pgen;
	int fd, kfd, cpus[CPU_SETSIZE], ncpu, i, valid;

	if (geteuid())
		SKIP(return, "needs root (adjtimex, finit_module)");
	if (!ko)
		ko = "./perfclock_mark_tsc_unstable.ko";
	kfd = open(ko, O_RDONLY | O_CLOEXEC);
	if (kfd < 0)
		SKIP(return, "%s: %s", ko, strerror(errno));
	fd = pc_open(O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pc_info(fd, &info));
	ASSERT_TRUE(info.flags & PERFCLOCK_INFO_HORIZON_GENERATION);
	if (!(info.flags & PERFCLOCK_INFO_SCHED_CLOCK_STABLE))
		SKIP(return, "sched_clock is not stable here: nothing to turn unstable");
	pg = pc_map(fd);
	ASSERT_NE(NULL, pg);
	ncpu = pc_cpus(cpus, CPU_SETSIZE);
	ASSERT_LT(0, ncpu);
	ASSERT_EQ(0, pc_comm_ring_open(&ring, -1));

	/* Let the GTOD fall behind sched_clock (which is the raw TSC). */
	ASSERT_LE(0, adjtimex(&tx));
	ASSERT_EQ(0, set_tick(tx.tick * 9 / 10));
	sleep(SLOW_SECONDS);
	ASSERT_EQ(0, set_tick(tx.tick));

	ASSERT_EQ(0, get_horizon(fd, PERFCLOCK_HORIZON_PERF_CLOCK, &pre));
	ASSERT_EQ(0, syscall(SYS_finit_module, kfd, "", 0))
		TH_LOG("finit_module %s: %s", ko, strerror(errno));
	close(kfd);

	/*
	 * From here on: every record stamped is compared with the newest
	 * horizon of the new generation handed out before it (ioctl or
	 * page), and with the horizon held from before (the old behaviour).
	 */
	deadline = ts_ns(CLOCK_MONOTONIC) + WAIT_SECONDS * 1000000000ULL;
	for (i = 0; ts_ns(CLOCK_MONOTONIC) < deadline; i++) {
		ASSERT_EQ(0, pc_pin(cpus[i % ncpu]));
		ASSERT_EQ(0, page_horizon(pg, &pgen, &pns, &valid));
		if (pgen != pre.generation && valid && pns > max_new)
			max_new = pns;
		if (i % 8 == 0) {
			ASSERT_EQ(0, get_horizon(fd, PERFCLOCK_HORIZON_PERF_CLOCK, &h));
			if (h.generation != pre.generation && h.ns > max_new)
				max_new = h.ns;
		}
		ASSERT_EQ(0, stamp(&ring, &t));
		stamps++;
		if (t < pre.ns) {
			below_pre++;
			if (pre.ns - t > worst_back)
				worst_back = pre.ns - t;
		}
		if (max_new && t < max_new)
			bad++;
		/* Enough: the new generation is in use and the step seen. */
		if (max_new && below_pre && stamps > 2000)
			break;
	}
	ASSERT_EQ(0, pc_info(fd, &info));
	TH_LOG("%llu records after the mark, %llu below the held horizon (up to %llu ns), %llu below a new-generation horizon; generation %u -> %u",
	       (unsigned long long)stamps, (unsigned long long)below_pre,
	       (unsigned long long)worst_back, (unsigned long long)bad,
	       pre.generation, h.generation);
	EXPECT_EQ(0, info.flags & PERFCLOCK_INFO_SCHED_CLOCK_STABLE);
	ASSERT_NE(0, max_new) TH_LOG("no horizon of a new generation within %d s", WAIT_SECONDS);
	EXPECT_LT(pre.generation, h.generation);
	/* The old behaviour fails: the step was real. */
	EXPECT_LT(0, below_pre) TH_LOG("perf_clock() did not step below the held horizon");
	/* The new generation's horizons hold. */
	EXPECT_EQ(0, bad);
	pc_comm_ring_close(&ring);
	pc_unmap(pg);
	close(fd);
}

TEST_HARNESS_MAIN
