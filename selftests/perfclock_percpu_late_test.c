// SPDX-License-Identifier: GPL-2.0
/*
 * The library's per-CPU horizon H_c (PER-CPU HORIZON in
 * user/perfclock/horizon.h) against the same value read on the WRONG CPU,
 * on real per-CPU perf rings under load, in the overcommitted guests (8 vCPUs
 * on 2 cores: a vCPU is often descheduled between stamping a record and
 * publishing it). run_overcommit.sh runs it twice: before insmod with
 * CLOCK_MONOTONIC_RAW through use_clockid (clock_gettime + getcpu), then
 * with the module (perf_clock(), GET_TIME or the page with rdtscp);
 * PERFCLOCK_PERCPU_CLOCK (raw or module) says which variant a run is for.
 *
 * Rounds as perfclock_late.h, with a verdict per ring: a record drained
 * from ring c below a horizon bound for ring c in an earlier drain was not
 * in ring c when that horizon was handed out: late. One reader visits the
 * CPUs; on CPU c it does, in order:
 *  1. real: pinned to c, perfclock_horizon_cpu() (its cpu must say c),
 *     then drains ring c: the library's pattern, must never be late;
 *  2. off by one: the same value, claimed for ring c+1, and ring c+1
 *     drained at once from CPU c (a tool that got the CPU number wrong):
 *     no thread ran on c+1 between the read and the drain, so a record
 *     c+1 stamped below it can still be in flight;
 *  3. unpinned: at that same drain of ring c+1, the latest H_c of a
 *     thread with no affinity that never checks which CPU it read on.
 * Every drain judges its records against all three, so the verdicts see
 * identical input. With PERFCLOCK_EXPECT_BARE_LATE=1 the off-by-one read
 * must have been late: the run lasts PERFCLOCK_PERCPU_SECONDS (3) and on
 * until it was, at most PERFCLOCK_PERCPU_MAX_SECONDS (20). The unpinned
 * read's count is shown beside it (its value is older, read who knows
 * where: late far less often, and not waited for).
 *
 * The reader runs SCHED_FIFO where it may (root in the guest): pinned
 * among the load's spinners at their priority it waited up to a second
 * for each CPU there (3 rounds in 24 s); first in line it visits all 8
 * in tens of ms. What the horizon promises does not depend on it: it
 * only lets the test make enough rounds to show the wrong CPU late.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kselftest_harness.h"
#include "perfclock_util.h"
#include "perfclock_late.h"
#include "libperfclock.h"

/* Samples carry user stack: longer in flight (perfclock_late.h). */
#define PL_STACK_BYTES	4096
#define PL_RING_PAGES	256
#define PL_MAX_CPUS	64
#define PL_EAGAIN_TRIES	100

enum { REAL, OFF_BY_ONE, UNPINNED, NV };

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

FIXTURE(pl) {
	int cpus[PL_MAX_CPUS];
	int ncpus, nrings;
	struct late_ring rings[PL_MAX_CPUS];
};

FIXTURE_VARIANT(pl) {
	const char *run;	/* PERFCLOCK_PERCPU_CLOCK that selects it */
	int clockid;		/* the rings' use_clockid; -1: perf_clock() */
	const char *name;
};

FIXTURE_VARIANT_ADD(pl, monotonic_raw) {
	.run = "raw",
	.clockid = CLOCK_MONOTONIC_RAW,
	.name = "CLOCK_MONOTONIC_RAW (no module)",
};

FIXTURE_VARIANT_ADD(pl, module) {
	.run = "module",
	.clockid = -1,
	.name = "perf_clock (the module)",
};

FIXTURE_SETUP(pl)
{
	int i;

	self->ncpus = pc_cpus(self->cpus, PL_MAX_CPUS);
	ASSERT_LT(0, self->ncpus);
	for (i = 0; i < self->ncpus; i++) {
		ASSERT_EQ(0, late_ring_open_wide(&self->rings[i], self->cpus[i],
						 variant->clockid,
						 PL_STACK_BYTES, PL_RING_PAGES))
			TH_LOG("perf_event_open on cpu %d: %s", self->cpus[i],
			       strerror(errno));
		self->nrings++;
	}
}

FIXTURE_TEARDOWN(pl)
{
	int i;

	for (i = 0; i < self->nrings; i++)
		pc_ring_close(&self->rings[i].pr);
}

/* The unpinned reader: H_c from wherever it runs, its CPU never checked. */
struct unpinned {
	struct perfclock *clk;
	_Atomic uint64_t latest;
	atomic_int stop;
	uint64_t reads;
};

static void *unpinned_thread(void *arg)
{
	struct unpinned *u = arg;
	uint64_t ns;
	uint32_t cpu;

	while (!atomic_load_explicit(&u->stop, memory_order_relaxed)) {
		if (!perfclock_horizon_cpu(u->clk, &ns, &cpu)) {
			atomic_store(&u->latest, ns);
			u->reads++;
		}
		sched_yield();
	}
	return NULL;
}

/* H_c on the CPU the caller runs on, retrying a read the library could not tie to one. */
static int horizon_here(struct perfclock *clk, uint64_t *ns, uint32_t *cpu,
			uint32_t *gen)
{
	int err = -EAGAIN, k;

	for (k = 0; k < PL_EAGAIN_TRIES && err == -EAGAIN; k++)
		err = perfclock_horizon_cpu_gen(clk, ns, cpu, gen);
	return err;
}

TEST_F(pl, h_c_read_on_the_wrong_cpu_is_late_pinned_is_not)
{
	struct late_verdict v[PL_MAX_CPUS][NV];
	const char *which = getenv("PERFCLOCK_PERCPU_CLOCK");
	int seconds = late_env_int("PERFCLOCK_PERCPU_SECONDS", 3);
	int max_seconds = late_env_int("PERFCLOCK_PERCPU_MAX_SECONDS", 20);
	int expect_late = late_env_int("PERFCLOCK_EXPECT_BARE_LATE", 0);
	uint64_t records = 0, lost = 0, rounds = 0, start, late[NV] = { 0 };
	uint64_t worst[NV] = { 0 }, wrong_cpu = 0, restarts = 0;
	pthread_t threads[3 * PL_MAX_CPUS], ut;
	struct perfclock_clock_info info;
	struct unpinned u;
	uint32_t gen, last_gen = 0;
	int i, k, nthreads, fifo, n = self->nrings;

	if (which && strcmp(which, variant->run))
		SKIP(return, "this run is for PERFCLOCK_PERCPU_CLOCK=%s", which);
	if (n < 2)
		SKIP(return, "one CPU: no wrong CPU to read on");
	memset(v, 0, sizeof(v));
	for (i = 0; i < n; i++) {
		v[i][REAL].name = "real (pinned to c, read on c)";
		v[i][OFF_BY_ONE].name = "off by one (read on c-1, drained from c-1)";
		v[i][UNPINNED].name = "unpinned (read anywhere)";
	}
	memset(&u, 0, sizeof(u));
	u.clk = variant->clockid >= 0 ? perfclock_open_clockid(variant->clockid) :
		perfclock_open(PC_DEVICE);
	if (!u.clk && variant->clockid < 0 && errno == ENOENT)
		SKIP(return, "no %s (module not loaded)", PC_DEVICE);
	ASSERT_NE(NULL, u.clk) TH_LOG("open %s: %s", variant->name, strerror(errno));
	ASSERT_EQ(0, late_get_info(u.clk, &info));
	TH_LOG("%s: per-CPU horizon %s", variant->name,
	       perfclock_horizon_cpu_name(&info));
	ASSERT_TRUE(info.flags & PERFCLOCK_CLOCK_HORIZON_PERCPU);

	nthreads = late_load_start(threads, n);
	ASSERT_LT(0, nthreads);
	ASSERT_EQ(0, pthread_create(&ut, NULL, unpinned_thread, &u));
	{
		struct sched_param sp = { .sched_priority = 1 };

		fifo = !sched_setscheduler(0, SCHED_FIFO, &sp);
	}

	start = mono_ns();
	while (!late_run_done(start, mono_ns(), seconds, max_seconds,
			      expect_late, late[OFF_BY_ONE])) {
		for (i = 0; i < n; i++) {
			int nx = (i + 1) % n;
			uint64_t h;
			uint32_t cpu;

			ASSERT_EQ(0, pc_pin(self->cpus[i]));
			ASSERT_EQ(0, horizon_here(u.clk, &h, &cpu, &gen));
			if (cpu != (uint32_t)self->cpus[i])
				wrong_cpu++;
			if (last_gen && gen != last_gen) {
				/* A restart voids every horizon handed out. */
				for (k = 0; k < n; k++)
					for (int j = 0; j < NV; j++)
						v[k][j].handed = v[k][j].next = 0;
				restarts++;
			}
			last_gen = gen;
			/* 1. real: this CPU's ring, drained after the read on it. */
			v[i][REAL].next = h;
			ASSERT_EQ(0, late_ring_drain(&self->rings[i], v[i], NV,
						     &records));
			late_bind(v[i], NV);
			/* 2. and 3.: the next CPU's ring, drained from here. */
			v[nx][OFF_BY_ONE].next = h;
			v[nx][UNPINNED].next = atomic_load(&u.latest);
			ASSERT_EQ(0, late_ring_drain(&self->rings[nx], v[nx],
						     NV, &records));
			late_bind(v[nx], NV);
		}
		rounds++;
		for (k = 0; k < NV; k++) {
			late[k] = 0;
			for (i = 0; i < n; i++)
				late[k] += v[i][k].late;
		}
	}

	atomic_store(&u.stop, 1);
	pthread_join(ut, NULL);
	late_load_stop_all();
	for (i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
	for (i = 0; i < n; i++) {
		lost += self->rings[i].lost;
		for (k = 0; k < NV; k++)
			if (v[i][k].worst > worst[k])
				worst[k] = v[i][k].worst;
	}
	for (k = 0; k < NV; k++)
		TH_LOG("%s: %llu late of %llu records (worst %llu ns)",
		       v[0][k].name, (unsigned long long)late[k],
		       (unsigned long long)records,
		       (unsigned long long)worst[k]);
	TH_LOG("%llu rounds on %d CPUs in %.1f s (reader %s), %llu unpinned reads, %llu reads not on the pinned CPU, %llu restarts, %llu LOST records",
	       (unsigned long long)rounds, n, (mono_ns() - start) / 1e9,
	       fifo ? "SCHED_FIFO" : "SCHED_OTHER", (unsigned long long)u.reads, (unsigned long long)wrong_cpu,
	       (unsigned long long)restarts, (unsigned long long)lost);
	/* Machine-readable, for run_overcommit.sh's summary and make bench. */
	printf("# PERCPU-LATE %s real=%llu off_by_one=%llu unpinned=%llu records=%llu rounds=%llu\n",
	       variant->run, (unsigned long long)late[REAL],
	       (unsigned long long)late[OFF_BY_ONE],
	       (unsigned long long)late[UNPINNED],
	       (unsigned long long)records, (unsigned long long)rounds);
	fflush(stdout);	/* the harness's child ends with _exit() */
	perfclock_close(u.clk);
	ASSERT_LT(1000, records) TH_LOG("too few records to judge anything");
	EXPECT_EQ(0, wrong_cpu) TH_LOG("a read pinned to c said another CPU");
	EXPECT_EQ(0, late[REAL]);
	if (expect_late)
		EXPECT_LT(0, late[OFF_BY_ONE])
			TH_LOG("the load did not stall a record in flight: nothing shown");
}

TEST_HARNESS_MAIN
