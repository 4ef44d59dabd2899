// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The per-CPU horizon of the module backend against the fake device.
 * The library reads it one of two ways (horizon_percpu.c): GET_TIME
 * (fake_device.c answers as the module does: the TSC and the CPU the
 * read ran on), or, where the CPU has rdtscp, the page's conversion and
 * TSC_AUX. Both are checked on every CPU (tests/fake_cpu.c: the probe
 * forced off, and a fake rdtscp), and the CPU's own choice once more:
 *
 * - pinned to each CPU in turn, perfclock_horizon_cpu() reports that CPU
 *   and a value between two TSC reads;
 * - the module moves the horizon generation during the read. Through
 *   the ioctl the library reads the generation around the call and
 *   cannot tell which side the read fell on: -EAGAIN, nothing written.
 *   On the page the move is caught by the page's seq count and the read
 *   taken again, of the new generation. Either way the new generation
 *   is never handed out as the first one: perfclock_horizon_cpu() is
 *   -ESTALE, perfclock_horizon_cpu_gen() gives generation 2. A page read
 *   that missed the move would hand out generation 1 with a TSC read
 *   after it, and the -ESTALE check fails.
 * - restarts it cannot see (restarts()): without the page (GET_TIME and
 *   GET_INFO carry no generation) or with a module that fills none,
 *   there is no H_c; a new generation with the module now refusing
 *   perf_clock() horizons, or after which TSC_AUX no longer holds the
 *   CPU number, and a resume after which it does not, end H_c
 *   (-EOPNOTSUPP, for good); a resume after which it does changes
 *   nothing.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "libperfclock.h"
#include "perfclock_page.h"
#include "fake_device.h"
#include "fake_cpu.h"
#include "tap.h"

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/* The module's writer, as fake_rdtscp_hook: once, under the seq count. */
static int bumps_left;

static void bump_gen_in_read(void)
{
	if (!bumps_left)
		return;
	bumps_left--;
	page.seq++;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	page.horizon_generation++;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	page.seq++;
}

static struct perfclock *open_with_generations(void)
{
	fake_reset();
	fake_info.flags |= PERFCLOCK_INFO_HORIZON |
			   PERFCLOCK_INFO_HORIZON_GENERATION;
	page.flags |= PERFCLOCK_PAGE_HORIZON_VALID;
	page.horizon_ns = 1000;
	page.horizon_generation = 1;
	return perfclock_open("/dev/null");
}

/* Pinned to each allowed CPU: that CPU, a read between two TSC reads. */
static void each_cpu(struct perfclock *c, const char *path)
{
	cpu_set_t all;
	uint64_t a, b, h = 0;
	uint32_t cpu = 0;
	int i, n = 0, bad = 0, err;

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
	       "percpu device (%s): pinned to each of %d CPUs: that CPU, the read between two TSC reads",
	       path, n);
}

/* The ioctl path: the probe forced off, or the page's TSC not valid. */
static void ioctl_path(const char *why)
{
	struct perfclock_clock_info info;
	struct perfclock *c;
	unsigned long calls;
	uint64_t h = 7;
	uint32_t cpu = 0, gen = 0;
	int err;

	c = open_with_generations();
	if (!tap_ok(c != NULL, "percpu device, ioctl (%s): opens", why))
		return;
	memset(&info, 0, sizeof(info));
	err = perfclock_get_info(c, &info);
	tap_ok(err == 0 && (info.flags & PERFCLOCK_CLOCK_HORIZON_PERCPU),
	       "percpu device, ioctl (%s): the module always has one: \"%s\"",
	       why, perfclock_horizon_cpu_name(&info));
	if (fake_cpu_mode == FAKE_CPU_RDTSCP)
		page.flags &= ~PERFCLOCK_PAGE_TSC_VALID;
	calls = n_get_time;
	each_cpu(c, why);
	tap_ok(n_get_time > calls,
	       "percpu device, ioctl (%s): the reads were GET_TIME (%lu)",
	       why, n_get_time - calls);

	time_bumps_gen = 1;
	err = perfclock_horizon_cpu(c, &h, &cpu);
	time_bumps_gen = 0;
	tap_ok(err == -EAGAIN && h == 7,
	       "percpu device, ioctl (%s): a generation that moves during the call: EAGAIN, nothing written (%d)",
	       why, err);
	/* It moved to 2 above: the first horizon was of generation 1. */
	err = perfclock_horizon_cpu(c, &h, &cpu);
	tap_ok(err == -ESTALE && h == 7,
	       "percpu device, ioctl (%s): a newer generation than the first: perfclock_horizon_cpu() is ESTALE (%d)",
	       why, err);
	err = perfclock_horizon_cpu_gen(c, &h, &cpu, &gen);
	tap_ok(err == 0 && gen == 2,
	       "percpu device, ioctl (%s): perfclock_horizon_cpu_gen() gives it: generation %u (%d)",
	       why, gen, err);
	perfclock_close(c);
}

/* The page path: rdtscp (the fake's), the page's TSC conversion valid. */
static void page_path(void)
{
	struct perfclock_clock_info info;
	struct perfclock *c;
	unsigned long calls, reads;
	uint64_t h = 7;
	uint32_t cpu = 0, gen = 0;
	int err;

	c = open_with_generations();
	if (!tap_ok(c != NULL, "percpu device, page (fake rdtscp): opens"))
		return;
	memset(&info, 0, sizeof(info));
	err = perfclock_get_info(c, &info);
	tap_ok(err == 0 && (info.flags & PERFCLOCK_CLOCK_HORIZON_PERCPU_TSC_AUX),
	       "percpu device, page (fake rdtscp): taken: \"%s\"",
	       perfclock_horizon_cpu_name(&info));
	calls = n_get_time;
	reads = n_rdtscp;
	each_cpu(c, "page, fake rdtscp");
	tap_ok(n_get_time == calls && n_rdtscp > reads,
	       "percpu device, page (fake rdtscp): no GET_TIME, %lu rdtscp reads",
	       n_rdtscp - reads);

	bumps_left = 1;
	fake_rdtscp_hook = bump_gen_in_read;
	err = perfclock_horizon_cpu(c, &h, &cpu);
	fake_rdtscp_hook = NULL;
	tap_ok(!bumps_left && err == -ESTALE && h == 7,
	       "percpu device, page (fake rdtscp): a generation that moves under the seq count during the read is seen: ESTALE, nothing written (%d)",
	       err);
	err = perfclock_horizon_cpu_gen(c, &h, &cpu, &gen);
	tap_ok(err == 0 && gen == 2,
	       "percpu device, page (fake rdtscp): perfclock_horizon_cpu_gen() gives the new one: generation %u (%d)",
	       gen, err);
	perfclock_close(c);

	/* The page says its conversion is not valid: the ioctl answers. */
	fake_cpu_mode = FAKE_CPU_RDTSCP;
	ioctl_path("page's TSC not valid");
}

/* One H_c read; its error. */
static int hc(struct perfclock *c, uint32_t *gen)
{
	uint64_t h = 0;
	uint32_t cpu = 0;

	return perfclock_horizon_cpu_gen(c, &h, &cpu, gen);
}

/* Has the clock an H_c, as info and a read say? */
static int has_hc(struct perfclock *c)
{
	struct perfclock_clock_info info;
	uint32_t gen = 0;

	memset(&info, 0, sizeof(info));
	if (!c || perfclock_get_info(c, &info))
		return -1;
	if (!(info.flags & PERFCLOCK_CLOCK_HORIZON_PERCPU))
		return hc(c, &gen) == -EOPNOTSUPP ? 0 : -1;
	return hc(c, &gen) == 0 ? 1 : -1;
}

/* The module moves its generation (as its epoch check does). */
static void new_generation(void)
{
	page.seq++;
	page.horizon_generation++;
	page.seq++;
}

/*
 * What H_c cannot follow ends it, and what it can, it follows. Each way
 * the module is read (the probe forced off: GET_TIME; a fake rdtscp:
 * the page) where that applies.
 */
static void restarts(void)
{
	static const enum fake_cpu_mode modes[] = {
		FAKE_CPU_NO_RDTSCP, FAKE_CPU_RDTSCP,
	};
	struct perfclock *c;
	uint32_t gen = 0;
	size_t i;
	int err;

	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		const char *how = fake_cpu_name(modes[i]);

		fake_cpu_mode = modes[i];

		/* Without the page: GET_TIME alone says no generation. */
		fake_reset();
		fake_info.flags |= PERFCLOCK_INFO_HORIZON |
				   PERFCLOCK_INFO_HORIZON_GENERATION;
		fail_mmap = 1;
		c = perfclock_open("/dev/null");
		tap_ok(has_hc(c) == 0,
		       "percpu device (%s): page not mapped: no H_c (a sched_clock reset would be invisible)",
		       how);
		perfclock_close(c);

		/* A module that fills no generation. */
		fake_reset();
		c = perfclock_open("/dev/null");
		page.horizon_generation = 9;
		tap_ok(has_hc(c) == 0,
		       "percpu device (%s): a module without generations: no H_c",
		       how);
		perfclock_close(c);

		/* Already refusing perf_clock() horizons at open. */
		fake_reset();
		fake_info.flags |= PERFCLOCK_INFO_HORIZON_GENERATION |
				   PERFCLOCK_INFO_PERF_HORIZON_REFUSED;
		page.horizon_generation = 1;
		c = perfclock_open("/dev/null");
		tap_ok(has_hc(c) == 0,
		       "percpu device (%s): a module refusing perf_clock() horizons at open: no H_c",
		       how);
		perfclock_close(c);

		/* It refuses them from a new generation on. */
		c = open_with_generations();
		err = has_hc(c);
		fake_info.flags |= PERFCLOCK_INFO_PERF_HORIZON_REFUSED;
		new_generation();
		tap_ok(err == 1 && hc(c, &gen) == -EOPNOTSUPP &&
		       hc(c, &gen) == -EOPNOTSUPP,
		       "percpu device (%s): a new generation in which the module refuses perf_clock() horizons: EOPNOTSUPP, for good",
		       how);
		perfclock_close(c);
	}

	/* rdtscp: TSC_AUX checked again at a new generation and a resume. */
	fake_cpu_mode = FAKE_CPU_RDTSCP;
	c = open_with_generations();
	err = has_hc(c);
	new_generation();
	tap_ok(err == 1 && hc(c, &gen) == 0 && gen == 2,
	       "percpu device (fake rdtscp): a new generation, TSC_AUX still the CPU: generation 2");
	fake_tsc_aux_add = 1;
	new_generation();
	err = hc(c, &gen);
	fake_tsc_aux_add = 0;
	tap_ok(err == -EOPNOTSUPP && hc(c, &gen) == -EOPNOTSUPP,
	       "percpu device (fake rdtscp): a new generation after which TSC_AUX is not the CPU: EOPNOTSUPP, for good (%d)",
	       err);
	perfclock_close(c);

	c = open_with_generations();
	err = has_hc(c);
	fake_sleep_ns += 5000000000LL;
	tap_ok(err == 1 && hc(c, &gen) == 0 && gen == 1,
	       "percpu device (fake rdtscp): a resume, TSC_AUX still the CPU: H_c goes on, generation 1");
	fake_sleep_ns += 5000000000LL;
	fake_tsc_aux_add = 1;
	err = hc(c, &gen);
	fake_tsc_aux_add = 0;
	tap_ok(err == -EOPNOTSUPP,
	       "percpu device (fake rdtscp): a resume after which TSC_AUX is not the CPU: EOPNOTSUPP (%d)",
	       err);
	perfclock_close(c);
	fake_sleep_ns = 0;
}

void test_horizon_percpu_device(void)
{
	struct perfclock_clock_info info;
	struct perfclock *c;
	enum fake_cpu_mode was = fake_cpu_mode;
	int tsc_aux;

	fake_cpu_mode = FAKE_CPU_NO_RDTSCP;
	ioctl_path("probe forced off");
	fake_cpu_mode = FAKE_CPU_RDTSCP;
	page_path();

	/* And whichever this CPU offers, as a tool here would get it. */
	fake_cpu_mode = FAKE_CPU_REAL;
	c = open_with_generations();
	memset(&info, 0, sizeof(info));
	if (tap_ok(c && !perfclock_get_info(c, &info),
		   "percpu device, this CPU: opens")) {
		tsc_aux = !!(info.flags & PERFCLOCK_CLOCK_HORIZON_PERCPU_TSC_AUX);
		tap_diag("this CPU: \"%s\"", perfclock_horizon_cpu_name(&info));
		each_cpu(c, tsc_aux ? "this CPU's rdtscp" : "this CPU, ioctl");
	}
	perfclock_close(c);

	restarts();
	fake_cpu_mode = was;
}
