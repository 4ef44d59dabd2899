// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * horizon_percpu.c on this host's kernel: perfclock_horizon_cpu() for
 * the clocks that have it (the use_clockid clocks read by the system
 * call and getcpu; perf's time_zero page where the CPU has rdtscp), and
 * -EOPNOTSUPP for those that do not. The CPU it reports is the one a
 * pinned thread runs on, on every CPU in turn; the value lies between
 * two reads of the clock around the call. The module's paths run
 * against the fake device (test_device_percpu.c); that H_c bounds the
 * records of a real ring, on a real load: test_reader.c.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "libperfclock.h"
#include "perfclock_page.h"
#include "fake_cpu.h"
#include "tap.h"
#include "unit.h"

/* Clock id's value now; id -1: the TSC (the hand-made perf page's clock). */
static uint64_t now_ns(clockid_t id)
{
	struct timespec ts;

	if (id == (clockid_t)-1)
		return perfclock_rdtsc_ordered();
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static void unpin(const cpu_set_t *all)
{
	sched_setaffinity(0, sizeof(*all), all);
}

/*
 * On every CPU this thread may run on: pinned there, the call reports
 * that CPU, and a value between reads of id before and after it.
 */
static void cpus_pinned(struct perfclock *c, clockid_t id, const char *what)
{
	/* NTP-disciplined clocks: H_c is the read less the margin. */
	uint64_t m = (id == CLOCK_MONOTONIC || id == CLOCK_BOOTTIME) ?
		     PERFCLOCK_NTP_SLOPE_MARGIN_NS : 0;
	cpu_set_t all;
	uint64_t a, b, h;
	uint32_t cpu;
	int i, n = 0, bad = 0, err;

	sched_getaffinity(0, sizeof(all), &all);
	for (i = 0; i < CPU_SETSIZE; i++) {
		if (!CPU_ISSET(i, &all) || pin(i))
			continue;
		n++;
		a = now_ns(id);
		err = perfclock_horizon_cpu(c, &h, &cpu);
		b = now_ns(id);
		h += m;
		if (err || cpu != (uint32_t)i || h < a || h > b) {
			tap_diag("%s: pinned to CPU %d: err %d, cpu %u, %llu not in [%llu, %llu]",
				 what, i, err, cpu, (unsigned long long)h,
				 (unsigned long long)a, (unsigned long long)b);
			bad++;
		}
	}
	unpin(&all);
	tap_ok(n > 0 && !bad,
	       "percpu: %s: a thread pinned to each of %d CPUs gets that CPU and a value between two reads around the call, less %llu ns",
	       what, n, (unsigned long long)m);
}

static void clockid_kinds(void)
{
	/* ntp: exact except the NTP slope (docs/horizon.md, NTP slope). */
	static const struct { int id; const char *name; int ntp; } ok[] = {
		{ CLOCK_MONOTONIC, "CLOCK_MONOTONIC", 1 },
		{ CLOCK_MONOTONIC_RAW, "CLOCK_MONOTONIC_RAW", 0 },
		{ CLOCK_BOOTTIME, "CLOCK_BOOTTIME", 1 },
	};
	const char *want;
	static const struct { int id; const char *name; } no[] = {
		{ CLOCK_REALTIME, "CLOCK_REALTIME" },
		{ CLOCK_TAI, "CLOCK_TAI" },
	};
	struct perfclock_clock_info info;
	struct perfclock *c;
	uint64_t h = 7;
	uint32_t cpu = 7, gen = 0;
	size_t i;
	int err;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		c = perfclock_open_clockid(ok[i].id);
		if (!tap_ok(c != NULL, "percpu: %s opens", ok[i].name))
			continue;
		memset(&info, 0, sizeof(info));
		err = perfclock_get_info(c, &info);
		want = !ok[i].ntp ? "exact per-CPU (clock_gettime + getcpu)" :
		       (info.flags & PERFCLOCK_CLOCK_HORIZON_NTP_SLEW) ?
		       "estimate per-CPU: NTP slew (clock_gettime + getcpu)" :
		       "exact except NTP slope, per-CPU (clock_gettime + getcpu)";
		tap_ok(err == 0 &&
		       (info.flags & PERFCLOCK_CLOCK_HORIZON_PERCPU) &&
		       !(info.flags & PERFCLOCK_CLOCK_HORIZON_PERCPU_TSC_AUX) &&
		       !strcmp(perfclock_horizon_cpu_name(&info), want),
		       "percpu: %s: info says per-CPU, named \"%s\"", ok[i].name,
		       perfclock_horizon_cpu_name(&info));
		cpus_pinned(c, ok[i].id, ok[i].name);
		tap_ok(perfclock_horizon_cpu_gen(c, &h, &cpu, &gen) == 0 &&
		       gen == 1,
		       "percpu: %s: generation 1 (a clock that never restarts)",
		       ok[i].name);
		perfclock_close(c);
	}
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		c = perfclock_open_clockid(no[i].id);
		if (!tap_ok(c != NULL, "percpu: %s opens", no[i].name))
			continue;
		h = 7;
		cpu = 7;
		tap_ok(perfclock_horizon_cpu(c, &h, &cpu) == -EOPNOTSUPP &&
		       h == 7 && cpu == 7 &&
		       perfclock_horizon_cpu_gen(c, &h, &cpu, &gen) == -EOPNOTSUPP,
		       "percpu: %s (a clock that is set) has none: EOPNOTSUPP, nothing written",
		       no[i].name);
		memset(&info, 0, sizeof(info));
		err = perfclock_get_info(c, &info);
		tap_ok(err == 0 &&
		       !(info.flags & PERFCLOCK_CLOCK_HORIZON_PERCPU) &&
		       !strcmp(perfclock_horizon_cpu_name(&info), "none"),
		       "percpu: %s: info says none", no[i].name);
		perfclock_close(c);
	}
	c = perfclock_open_clockid(CLOCK_MONOTONIC);
	tap_ok(perfclock_horizon_cpu(NULL, &h, &cpu) == -EINVAL &&
	       perfclock_horizon_cpu(c, NULL, &cpu) == -EINVAL &&
	       perfclock_horizon_cpu(c, &h, NULL) == -EINVAL &&
	       perfclock_horizon_cpu_gen(c, &h, &cpu, NULL) == -EINVAL &&
	       !strcmp(perfclock_horizon_cpu_name(NULL), "none"),
	       "percpu: NULL arguments are EINVAL");
	perfclock_close(c);
}

/* As horizon_percpu.c decides: CPUID and the kernel's cpuinfo flag. */
static int cpu_has_rdtscp(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned int a, b, cc, d;
	char line[4096];
	int found = 0;
	FILE *f;

	if (!__get_cpuid(0x80000001U, &a, &b, &cc, &d) || !(d & (1U << 27)))
		return 0;
	f = fopen("/proc/cpuinfo", "re");
	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "flags", 5)) {
			found = strstr(line, " rdtscp ") ||
				strstr(line, " rdtscp\n");
			break;
		}
	}
	if (f)
		fclose(f);
	return found;
#else
	return 0;
#endif
}

/*
 * perf's time_zero page: a hand-made one (cap_user_time_zero, the TSC
 * as nanoseconds), since this host's own perf pages may offer none. With
 * rdtscp the per-CPU horizon is read from it on the pinned CPU; without,
 * there is none. Taken each way on any CPU (tests/fake_cpu.c): the probe
 * forced off, a fake rdtscp, and this CPU's own answer.
 */
static void perf_page(enum fake_cpu_mode mode)
{
	static struct perf_event_mmap_page pc __attribute__((aligned(4096)));
	struct perfclock_clock_info info;
	struct perfclock *c;
	const char *how = fake_cpu_name(mode);
	uint64_t h = 7;
	uint32_t cpu = 7;
	int rdtscp;

	if (!PERFCLOCK_PAGE_HAVE_TSC) {
		tap_skip("percpu: perf page (%s) # SKIP no TSC on this architecture",
			 how);
		return;
	}
	fake_cpu_mode = mode;
	rdtscp = mode == FAKE_CPU_RDTSCP ||
		 (mode == FAKE_CPU_REAL && cpu_has_rdtscp());
	memset(&pc, 0, sizeof(pc));
	pc.cap_user_time_zero = 1;
	pc.time_mult = 1;
	pc.time_shift = 0;
	pc.time_zero = 0;
	c = perfclock_open_perf_page(&pc);
	if (!tap_ok(c != NULL, "percpu: a time_zero page opens (%s)", how))
		goto out;
	memset(&info, 0, sizeof(info));
	perfclock_get_info(c, &info);
	if (rdtscp) {
		tap_ok((info.flags & PERFCLOCK_CLOCK_HORIZON_PERCPU) &&
		       (info.flags & PERFCLOCK_CLOCK_HORIZON_PERCPU_TSC_AUX),
		       "percpu: perf page with rdtscp (%s): \"%s\"",
		       how, perfclock_horizon_cpu_name(&info));
		/* The page converts the TSC 1:1: compare with the TSC. */
		cpus_pinned(c, (clockid_t)-1, mode == FAKE_CPU_RDTSCP ?
			    "perf page (fake rdtscp)" : "perf page (rdtscp)");
		pc.cap_user_time_zero = 0;
		tap_ok(perfclock_horizon_cpu(c, &h, &cpu) == -EOPNOTSUPP,
		       "percpu: perf page (%s): time_zero withdrawn: EOPNOTSUPP",
		       how);
	} else {
		tap_ok(!(info.flags & PERFCLOCK_CLOCK_HORIZON_PERCPU) &&
		       perfclock_horizon_cpu(c, &h, &cpu) == -EOPNOTSUPP &&
		       h == 7 && cpu == 7,
		       "percpu: perf page without rdtscp (%s): none, EOPNOTSUPP (\"%s\")",
		       how, perfclock_horizon_cpu_name(&info));
	}
	perfclock_close(c);
out:
	fake_cpu_mode = FAKE_CPU_REAL;
}

void test_percpu(void)
{
	clockid_kinds();
	perf_page(FAKE_CPU_NO_RDTSCP);
	perf_page(FAKE_CPU_RDTSCP);
	perf_page(FAKE_CPU_REAL);
}
