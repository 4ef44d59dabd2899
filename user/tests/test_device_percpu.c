// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The per-CPU horizon of the module backend against the fake device
 * (fake_device.c answers GET_TIME as the module does: the TSC and the CPU
 * the read ran on). perfclock_horizon_cpu() reports, for a thread pinned
 * to each CPU in turn, that CPU and a value between two TSC reads; a
 * generation that moves during the read is -EAGAIN, one that moved since
 * the first horizon is -ESTALE for perfclock_horizon_cpu() and a new
 * generation for perfclock_horizon_cpu_gen(). (This host's CPU has no
 * rdtscp, so the module's page path with rdtscp is not taken here; on a
 * CPU with it the fake page's TSC conversion is used instead and the
 * same checks hold.)
 */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "libperfclock.h"
#include "perfclock_page.h"
#include "fake_device.h"
#include "tap.h"

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

void test_horizon_percpu_device(void)
{
	struct perfclock_clock_info info;
	struct perfclock *c;
	cpu_set_t all;
	uint64_t a, b, h = 0;
	uint32_t cpu = 0, gen = 0;
	int i, n = 0, bad = 0, err;

	fake_reset();
	fake_info.flags |= PERFCLOCK_INFO_HORIZON |
			   PERFCLOCK_INFO_HORIZON_GENERATION;
	page.flags |= PERFCLOCK_PAGE_HORIZON_VALID;
	page.horizon_ns = 1000;
	page.horizon_generation = 1;
	c = perfclock_open("/dev/null");
	if (!tap_ok(c != NULL, "percpu device: opens"))
		return;
	memset(&info, 0, sizeof(info));
	err = perfclock_get_info(c, &info);
	tap_ok(err == 0 && (info.flags & PERFCLOCK_CLOCK_HORIZON_PERCPU),
	       "percpu device: the module always has one: \"%s\"",
	       perfclock_horizon_cpu_name(&info));

	sched_getaffinity(0, sizeof(all), &all);
	for (i = 0; i < CPU_SETSIZE; i++) {
		if (!CPU_ISSET(i, &all) || pin(i))
			continue;
		n++;
		a = perfclock_rdtsc_ordered();
		err = perfclock_horizon_cpu(c, &h, &cpu);
		b = perfclock_rdtsc_ordered();
		if (err || cpu != (uint32_t)i || h < a || h > b) {
			tap_diag("pinned to %d: err %d cpu %u h %llu [%llu, %llu]",
				 i, err, cpu, (unsigned long long)h,
				 (unsigned long long)a, (unsigned long long)b);
			bad++;
		}
	}
	sched_setaffinity(0, sizeof(all), &all);
	tap_ok(n > 0 && !bad,
	       "percpu device: pinned to each of %d CPUs: that CPU, the read between two TSC reads",
	       n);

	time_bumps_gen = 1;
	h = 7;
	err = perfclock_horizon_cpu(c, &h, &cpu);
	time_bumps_gen = 0;
	tap_ok(err == -EAGAIN && h == 7,
	       "percpu device: a generation that moves during the read: EAGAIN, nothing written (%d)",
	       err);
	/* It moved to 2 above: the first horizon was of generation 1. */
	tap_ok(perfclock_horizon_cpu(c, &h, &cpu) == -ESTALE && h == 7,
	       "percpu device: a newer generation than the first: perfclock_horizon_cpu() is ESTALE");
	err = perfclock_horizon_cpu_gen(c, &h, &cpu, &gen);
	tap_ok(err == 0 && gen == 2,
	       "percpu device: perfclock_horizon_cpu_gen() gives it: generation %u", gen);
	perfclock_close(c);

	/* An older module: no generation on the page, never a restart. */
	fake_reset();
	c = perfclock_open("/dev/null");
	page.horizon_generation = 9;
	tap_ok(c && perfclock_horizon_cpu_gen(c, &h, &cpu, &gen) == 0 &&
	       gen == 1 && perfclock_horizon_cpu(c, &h, &cpu) == 0,
	       "percpu device: a module without generations: generation 1");
	perfclock_close(c);
}
