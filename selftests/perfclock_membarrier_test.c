// SPDX-License-Identifier: GPL-2.0
/*
 * The library's membarrier horizon (docs/membarrier-horizon.md) on real
 * per-CPU perf rings under load, WITHOUT the module: run before
 * perfclock.ko is loaded (run_overcommit.sh does).
 *
 * Rounds as in perfclock_horizon_test.c (perfclock_late.h): take the
 * horizons, drain every ring, count the records that turn up below a
 * horizon handed out in an earlier round. Two rules on the same records:
 *  - the library's horizon with its defaults: perfclock_horizon() of a
 *    clock opened with no module, which must pick membarrier; 0 late;
 *  - the same backend with the barrier skipped (the test-only switch
 *    PERFCLOCK_MB_TEST_SKIP_BARRIER): a bare clock read at the round
 *    start. With PERFCLOCK_EXPECT_BARE_LATE=1 (the overcommitted guest,
 *    where a vCPU stalls between stamping and committing a record) it
 *    must be late, so the load is shown able to break a horizon without
 *    the barrier: the run lasts PERFCLOCK_MB_SECONDS (4), and on until
 *    the bare read was late, at most PERFCLOCK_MB_MAX_SECONDS (30).
 * Variants: CLOCK_MONOTONIC (use_clockid; both regimes) and perf_clock()
 * through perf's page of the first ring, and through perfclock_open(NULL),
 * which without the module maps a perf page of its own (stable regime;
 * in the unstable one perf offers no time_zero, and the opens must say
 * EOPNOTSUPP and ENOENT: only the module reads an unstable sched_clock).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "kselftest_harness.h"
#include "perfclock_util.h"
#include "perfclock_late.h"
#include "libperfclock.h"
#include "horizon_membarrier.h"

/* Samples carry this much user stack: longer in flight (perfclock_late.h). */
#define MB_STACK_BYTES	4096
#define MB_RING_PAGES	256	/* room for them while the reader waits */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

FIXTURE(mb) {
	int cpus[CPU_SETSIZE];
	int ncpus;
	struct late_ring rings[CPU_SETSIZE];
	int nrings;
};

FIXTURE_VARIANT(mb) {
	int clockid;		/* -1: perf_clock() through perf's page; -2: perfclock_open(NULL) */
	const char *name;
};

FIXTURE_VARIANT_ADD(mb, monotonic) {
	.clockid = CLOCK_MONOTONIC,
	.name = "CLOCK_MONOTONIC",
};

FIXTURE_VARIANT_ADD(mb, perf_clock) {
	.clockid = -1,
	.name = "perf_clock (perf's page)",
};

/* perfclock_open(NULL) without the module: perf's page of its own event. */
FIXTURE_VARIANT_ADD(mb, perfclock_open) {
	.clockid = -2,
	.name = "perf_clock (perfclock_open(NULL), no module)",
};

FIXTURE_SETUP(mb)
{
	struct stat st;
	int i;

	ASSERT_NE(0, stat(PC_DEVICE, &st))
		TH_LOG("%s exists: this test runs without the module", PC_DEVICE);
	self->ncpus = pc_cpus(self->cpus, CPU_SETSIZE);
	ASSERT_LT(0, self->ncpus);
	for (i = 0; i < self->ncpus; i++) {
		ASSERT_EQ(0, late_ring_open_wide(&self->rings[i], self->cpus[i],
						 variant->clockid,
						 MB_STACK_BYTES, MB_RING_PAGES))
			TH_LOG("perf_event_open on cpu %d: %s", self->cpus[i],
			       strerror(errno));
		self->nrings++;
	}
}

FIXTURE_TEARDOWN(mb)
{
	int i;

	for (i = 0; i < self->nrings; i++)
		pc_ring_close(&self->rings[i].pr);
}

static struct perfclock *open_clock(int clockid, const void *perf_page)
{
	if (clockid >= 0)
		return perfclock_open_clockid(clockid);
	if (clockid == -2)
		return perfclock_open(NULL);
	return perfclock_open_perf_page(perf_page);
}

TEST_F(mb, no_record_below_the_membarrier_horizon)
{
	enum { OURS, BARE, NV };
	struct late_verdict v[NV] = {
		{ .name = "membarrier horizon (library defaults)" },
		{ .name = "the same with the barrier skipped (bare read)" },
	};
	const char *regime = getenv("PERFCLOCK_REGIME");
	int seconds = late_env_int("PERFCLOCK_MB_SECONDS", 4);
	int max_seconds = late_env_int("PERFCLOCK_MB_MAX_SECONDS", 30);
	int expect_bare_late = late_env_int("PERFCLOCK_EXPECT_BARE_LATE", 0);
	uint64_t records = 0, lost = 0, rounds = 0, start;
	pthread_t threads[3 * CPU_SETSIZE];
	struct perfclock_clock_info info;
	struct perfclock *clk, *bare;
	int i, k, nthreads;

	clk = open_clock(variant->clockid, self->rings[0].pr.base);
	/* perfclock_open(NULL) with neither the module nor time_zero: ENOENT. */
	if (!clk && variant->clockid == -2 && errno == ENOENT)
		errno = EOPNOTSUPP;
	if (!clk && variant->clockid < 0 && errno == EOPNOTSUPP) {
		/* No time_zero: an unstable sched_clock, as it must be there. */
		ASSERT_TRUE(!regime || strcmp(regime, "stable"))
			TH_LOG("stable regime, but perf offers no time_zero");
		SKIP(return, "perf offers no time_zero (an unstable or paravirt sched_clock): only the module reads perf_clock here");
	}
	ASSERT_NE(NULL, clk) TH_LOG("open %s: %s", variant->name, strerror(errno));
	ASSERT_EQ(0, late_get_info(clk, &info));
	TH_LOG("%s: horizon %s", variant->name, perfclock_horizon_name(&info));
	/* CLOCK_MONOTONIC: exact except the NTP slope (docs/horizon.md). */
	if (variant->clockid == CLOCK_MONOTONIC) {
		ASSERT_FALSE(info.flags & PERFCLOCK_CLOCK_HORIZON_EXACT);
		ASSERT_TRUE(info.flags & PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE);
	} else {
		ASSERT_TRUE(info.flags & PERFCLOCK_CLOCK_HORIZON_EXACT);
	}
	ASSERT_TRUE(info.flags & PERFCLOCK_CLOCK_HORIZON_MEMBARRIER);

	perfclock_mb__test_set_mode(PERFCLOCK_MB_TEST_SKIP_BARRIER);
	bare = open_clock(variant->clockid, self->rings[0].pr.base);
	perfclock_mb__test_set_mode(PERFCLOCK_MB_TEST_NORMAL);
	ASSERT_NE(NULL, bare);

	nthreads = late_load_start(threads, self->ncpus);
	ASSERT_LT(0, nthreads);

	/* PERFCLOCK_MB_SECONDS, and on until the bare read was late. */
	start = mono_ns();
	while (!late_run_done(start, mono_ns(), seconds, max_seconds,
			      expect_bare_late, v[BARE].late)) {
		ASSERT_EQ(0, late_horizon(clk, &v[OURS].next));
		ASSERT_EQ(0, late_horizon(bare, &v[BARE].next));
		for (i = 0; i < self->nrings; i++)
			ASSERT_EQ(0, late_ring_drain(&self->rings[i], v, NV,
						     &records));
		late_bind(v, NV);
		rounds++;
	}

	late_load_stop_all();
	for (i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
	for (i = 0; i < self->nrings; i++)
		lost += self->rings[i].lost;

	ASSERT_EQ(0, late_get_info(clk, &info));
	for (k = 0; k < NV; k++)
		TH_LOG("%s: %llu late of %llu records (worst %llu ns)",
		       v[k].name, (unsigned long long)v[k].late,
		       (unsigned long long)records,
		       (unsigned long long)v[k].worst);
	TH_LOG("%llu rounds in %.1f s, horizon age at the end %llu us, %llu LOST records",
	       (unsigned long long)rounds, (mono_ns() - start) / 1e9,
	       (unsigned long long)info.horizon_age_ns / 1000,
	       (unsigned long long)lost);
	perfclock_close(bare);
	perfclock_close(clk);
	ASSERT_LT(1000, records) TH_LOG("too few records to judge anything");
	EXPECT_EQ(0, v[OURS].late);
	if (expect_bare_late)
		EXPECT_LT(0, v[BARE].late)
			TH_LOG("the load did not stall a record in flight: nothing shown");
}

TEST_HARNESS_MAIN
