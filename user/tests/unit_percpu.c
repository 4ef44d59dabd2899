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
#include "horizon_internal.h"
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

/* perf's page is rewritten: its seq count around a new conversion. */
static void perf_page_convert(struct perf_event_mmap_page *pc, uint64_t zero)
{
	__atomic_store_n(&pc->lock, pc->lock + 1, __ATOMIC_RELEASE);
	pc->time_zero = zero;
	__atomic_store_n(&pc->lock, pc->lock + 1, __ATOMIC_RELEASE);
}

/*
 * The page's conversion changes (x86: a TSC recalibration, or resume
 * from S3): a restart, generation 2, and perfclock_horizon_cpu() says
 * -ESTALE. With the fake rdtscp, what follows a change or a resume is
 * checked: TSC_AUX no longer the CPU ends H_c (-EOPNOTSUPP, for good).
 * Leaves the page as it found it, H_c refused where it was ended.
 */
static void perf_page_restarts(struct perfclock *c,
			       struct perf_event_mmap_page *pc,
			       const char *how, int fake)
{
	uint64_t h = 0;
	uint32_t cpu = 0, gen = 0;
	int err, err2;

	err = perfclock_horizon_cpu_gen(c, &h, &cpu, &gen);
	perf_page_convert(pc, 0);	/* unchanged: not a restart */
	err2 = perfclock_horizon_cpu_gen(c, &h, &cpu, &gen);
	tap_ok(!err && !err2 && gen == 1,
	       "percpu: perf page (%s): the same conversion: generation 1",
	       how);
	perf_page_convert(pc, 1000);
	err = perfclock_horizon_cpu(c, &h, &cpu);
	err2 = perfclock_horizon_cpu_gen(c, &h, &cpu, &gen);
	tap_ok(err == -ESTALE && !err2 && gen == 2,
	       "percpu: perf page (%s): a new conversion is a restart: ESTALE, generation %u (%d, %d)",
	       how, gen, err, err2);
	perf_page_convert(pc, 0);
	if (!fake)
		return;
	fake_sleep_ns += 5000000000LL;
	err = perfclock_horizon_cpu_gen(c, &h, &cpu, &gen);
	tap_ok(!err && gen == 3,
	       "percpu: perf page (%s): a resume, TSC_AUX still the CPU: goes on (%d, generation %u)",
	       how, err, gen);
	fake_sleep_ns += 5000000000LL;
	fake_tsc_aux_add = 1;
	err = perfclock_horizon_cpu_gen(c, &h, &cpu, &gen);
	fake_tsc_aux_add = 0;
	err2 = perfclock_horizon_cpu_gen(c, &h, &cpu, &gen);
	tap_ok(err == -EOPNOTSUPP && err2 == -EOPNOTSUPP,
	       "percpu: perf page (%s): a resume after which TSC_AUX is not the CPU: EOPNOTSUPP, for good (%d)",
	       how, err);
	fake_sleep_ns = 0;
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
		if (mode == FAKE_CPU_RDTSCP) {
			/* A new conversion, TSC_AUX not the CPU after it. */
			struct perfclock *c2 = perfclock_open_perf_page(&pc);

			perfclock_horizon_cpu(c2, &h, &cpu);
			fake_tsc_aux_add = 1;
			perf_page_convert(&pc, 1000);
			tap_ok(perfclock_horizon_cpu(c2, &h, &cpu) == -EOPNOTSUPP,
			       "percpu: perf page (%s): a new conversion after which TSC_AUX is not the CPU: EOPNOTSUPP",
			       how);
			fake_tsc_aux_add = 0;
			perf_page_convert(&pc, 0);
			perfclock_close(c2);
		}
		pc.cap_user_time_zero = 0;
		tap_ok(perfclock_horizon_cpu(c, &h, &cpu) == -EOPNOTSUPP,
		       "percpu: perf page (%s): time_zero withdrawn: EOPNOTSUPP",
		       how);
		pc.cap_user_time_zero = 1;
		perf_page_restarts(c, &pc, how, mode == FAKE_CPU_RDTSCP);
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

/*
 * The BPF output gate (percpu_bpf_gate.c), on fixed uname strings: the
 * kernels where bpf_perf_event_output() ran preemptible from uprobe and
 * trampoline programs, the fixed ones, Debian's releases whose sublevel
 * is only in uname -v, and what cannot be told (not exact). And the
 * attrs it applies to: only PERF_COUNT_SW_BPF_OUTPUT events.
 */
static void bpf_output_gate(void)
{
	static const struct {
		const char *release, *version;
		int want;
	} k[] = {
		/* Affected: the helper without its own preempt_disable(). */
		{ "6.1.44", "#1 SMP PREEMPT", PERFCLOCK_KBPF_PREEMPTIBLE },
		{ "6.0.19", "", PERFCLOCK_KBPF_PREEMPTIBLE },
		{ "5.15.131-1-lts", NULL, PERFCLOCK_KBPF_PREEMPTIBLE },
		{ "6.2.16", NULL, PERFCLOCK_KBPF_PREEMPTIBLE },
		{ "6.3.13-arch1-1", NULL, PERFCLOCK_KBPF_PREEMPTIBLE },
		{ "6.4.9-200.fc38.x86_64", NULL, PERFCLOCK_KBPF_PREEMPTIBLE },
		{ "6.4", NULL, PERFCLOCK_KBPF_PREEMPTIBLE },
		{ "5.15.0-91-generic", "#101-Ubuntu SMP", PERFCLOCK_KBPF_PREEMPTIBLE },
		{ "6.2.0-39-generic", "#40-Ubuntu SMP", PERFCLOCK_KBPF_PREEMPTIBLE },
		/* Fixed: 6.1.45, 6.4.10, 6.5 on. */
		{ "6.1.45", NULL, PERFCLOCK_KBPF_PREEMPT_OFF },
		{ "6.1.192", "#1 SMP", PERFCLOCK_KBPF_PREEMPT_OFF },
		{ "6.4.10", NULL, PERFCLOCK_KBPF_PREEMPT_OFF },
		{ "6.5.0", NULL, PERFCLOCK_KBPF_PREEMPT_OFF },
		{ "6.5.0-rc1", NULL, PERFCLOCK_KBPF_PREEMPT_OFF },
		{ "6.12.118+deb12-rt-amd64",
		  "#1 SMP PREEMPT_RT Debian 6.12.118-1~deb12u1 (2026-01-01)",
		  PERFCLOCK_KBPF_PREEMPT_OFF },
		{ "6.8.0-45-generic", "#45-Ubuntu SMP", PERFCLOCK_KBPF_PREEMPT_OFF },
		/* Debian: the sublevel is uname -v's, not the release's .0. */
		{ "6.1.0-28-amd64",
		  "#1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1 (2024-11-22)",
		  PERFCLOCK_KBPF_PREEMPT_OFF },
		{ "6.1.0-11-amd64",
		  "#1 SMP PREEMPT_DYNAMIC Debian 6.1.38-4 (2023-08-08)",
		  PERFCLOCK_KBPF_PREEMPTIBLE },
		{ "6.1.0-57-cloud-amd64",
		  "#1 SMP PREEMPT_DYNAMIC Debian 6.1.192-1 (2026-03-01)",
		  PERFCLOCK_KBPF_PREEMPT_OFF },
		/* Unknown: not a fixed kernel. */
		{ "6.1.0-28-amd64", "#1 SMP PREEMPT_DYNAMIC", PERFCLOCK_KBPF_UNKNOWN },
		{ "6.1.0-28-amd64", NULL, PERFCLOCK_KBPF_UNKNOWN },
		{ "6.4.0-1-oem", "#1 SMP", PERFCLOCK_KBPF_UNKNOWN },
		/* A Debian string of another series says nothing of this one. */
		{ "6.1.0-28-amd64", "Debian 6.12.118-1", PERFCLOCK_KBPF_UNKNOWN },
		{ "6.1-rc3", NULL, PERFCLOCK_KBPF_UNKNOWN },
		{ "linux", NULL, PERFCLOCK_KBPF_UNKNOWN },
		{ "", NULL, PERFCLOCK_KBPF_UNKNOWN },
		{ NULL, NULL, PERFCLOCK_KBPF_UNKNOWN },
	};
	struct perf_event_attr a;
	size_t i;
	int got, bad = 0;

	for (i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		got = perfclock__kernel_bpf_output(k[i].release, k[i].version);
		if (got != k[i].want) {
			tap_diag("bpf gate: \"%s\" \"%s\": %d, want %d",
				 k[i].release ? k[i].release : "(null)",
				 k[i].version ? k[i].version : "(null)",
				 got, k[i].want);
			bad++;
		}
	}
	tap_ok(!bad,
	       "percpu: BPF output gate: %zu uname strings (affected, fixed, Debian's uname -v, unknown as not exact)",
	       sizeof(k) / sizeof(k[0]));

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_BPF_OUTPUT;
	got = perfclock__attr_bpf_output(&a);
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	got = got && !perfclock__attr_bpf_output(&a);
	a.type = PERF_TYPE_HARDWARE;
	a.config = PERF_COUNT_SW_BPF_OUTPUT;	/* same number, other type */
	tap_ok(got && !perfclock__attr_bpf_output(&a),
	       "percpu: BPF output gate: only software BPF_OUTPUT events are gated");
	tap_diag("this kernel, BPF output: %s",
		 perfclock__kbpf_name(perfclock__kernel_bpf_output_now()));
}

void test_percpu(void)
{
	bpf_output_gate();
	clockid_kinds();
	perf_page(FAKE_CPU_NO_RDTSCP);
	perf_page(FAKE_CPU_RDTSCP);
	perf_page(FAKE_CPU_REAL);
}
