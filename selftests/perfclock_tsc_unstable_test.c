// SPDX-License-Identifier: GPL-2.0
/*
 * When the kernel marks the TSC unstable after the module is loaded, the
 * page stops offering the current time within one update period, and the
 * module reports the unstable regime.
 *
 * The kernel marks the TSC unstable by itself when a CPU comes online
 * with a TSC out of step with the others (check_tsc_sync_source() in
 * arch/x86/kernel/tsc_sync.c), so the test makes that happen: it moves
 * one CPU's TSC forward through the msr driver, then takes that CPU
 * offline and online. Needs the stable regime, /dev/cpu/N/msr (msr.ko),
 * CPU hotplug, and a CPU without TSC_ADJUST (which the kernel would use
 * to repair the TSC instead: QEMU's TCG has none). It leaves the TSC
 * unstable for the rest of the boot: run it last.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "kselftest_harness.h"
#include "perfclock_util.h"

#define MSR_IA32_TSC	0x10
#define TSC_JUMP_NS	10000000ULL	/* 10 ms: far beyond any sync tolerance */

/*
 * CPUID.(EAX=7,ECX=0):EBX bit 1: IA32_TSC_ADJUST. With it, the kernel
 * repairs a TSC moved by a write to IA32_TSC (tsc_store_and_check_tsc_adjust()
 * and tsc_sanitize_first_cpu() in arch/x86/kernel/tsc_sync.c) instead of
 * marking the TSC unstable, and this test could not provoke anything.
 */
static int cpu_has_tsc_adjust(void)
{
	unsigned int a, b, c, d;

	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return 0;
	return !!(b & (1U << 1));
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

TEST(page_stops_when_tsc_marked_unstable)
{
	struct perfclock_info info;
	const struct perfclock_page *pg;
	int cpus[CPU_SETSIZE], n, fd, msr, cpu;
	char path[64];
	uint64_t tsc, target, cycles, online_done, off_at = 0;

	fd = pc_open(O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pc_info(fd, &info));
	pg = pc_map(fd);
	ASSERT_NE(NULL, pg);
	if (!pc_page_fast(pg))
		SKIP(return, "the page offers no current time in this regime: nothing to turn off");
	n = pc_cpus(cpus, CPU_SETSIZE);
	if (n < 2)
		SKIP(return, "needs two CPUs");
	if (cpu_has_tsc_adjust())
		SKIP(return, "the CPU has IA32_TSC_ADJUST: the kernel would restore a moved TSC, not mark it unstable");
	cpu = cpus[n - 1];
	snprintf(path, sizeof(path), "/dev/cpu/%d/msr", cpu);
	msr = open(path, O_RDWR | O_CLOEXEC);
	if (msr < 0)
		SKIP(return, "%s: %s (load msr.ko)", path, strerror(errno));

	/* Cycles for TSC_JUMP_NS, from the page's own conversion. */
	cycles = (TSC_JUMP_NS << pg->tsc_shift) / pg->tsc_mult;
	ASSERT_EQ(0, pc_pin(cpu));
	ASSERT_EQ(8, pread(msr, &tsc, 8, MSR_IA32_TSC));
	target = tsc + cycles;
	ASSERT_EQ(8, pwrite(msr, &target, 8, MSR_IA32_TSC));
	ASSERT_EQ(8, pread(msr, &tsc, 8, MSR_IA32_TSC));
	close(msr);
	ASSERT_EQ(0, pc_pin(cpus[0]));
	/* Some CPUs ignore the write: QEMU's TCG derives the TSC from the host. */
	if (tsc < target)
		SKIP(return, "cpu %d ignores writes to IA32_TSC (QEMU TCG does): the kernel cannot be made to mark the TSC unstable here",
		     cpu);

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	ASSERT_EQ(0, pc_write_file(path, "0")) TH_LOG("offline cpu %d", cpu);
	ASSERT_EQ(0, pc_write_file(path, "1")) TH_LOG("online cpu %d", cpu);
	online_done = mono_ns();

	/* Within one update period (twice, for a late timer under TCG). */
	while (mono_ns() - online_done < 2 * info.update_period_ns + 100000000ULL) {
		if (!pc_page_fast(pg)) {
			off_at = mono_ns();
			break;
		}
		sched_yield();
	}
	ASSERT_NE(0, off_at) TH_LOG("page still offers the TSC path after the kernel gave up on the TSC");
	TH_LOG("page fast path off %llu ns after cpu %d came back online",
	       (unsigned long long)(off_at - online_done), cpu);
	EXPECT_GE(2 * info.update_period_ns, off_at - online_done);

	ASSERT_EQ(0, pc_info(fd, &info));
	EXPECT_EQ(0, info.flags & PERFCLOCK_INFO_PAGE_TSC_VALID);
	EXPECT_EQ(0, info.flags & PERFCLOCK_INFO_SCHED_CLOCK_STABLE);
	/* An estimate, which moves with its lateness window: nonzero on both. */
	EXPECT_LT(0, info.skew_estimate_ns);
	EXPECT_LT(0, pg->skew_estimate_ns);
	/* The ioctl keeps working, and no longer claims stability. */
	{
		struct perfclock_time t;

		ASSERT_EQ(0, pc_time(fd, &t));
		EXPECT_EQ(0, t.flags & PERFCLOCK_TIME_STABLE);
	}
	pc_unmap(pg);
	close(fd);
}

TEST_HARNESS_MAIN
