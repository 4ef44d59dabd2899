// SPDX-License-Identifier: GPL-2.0
/*
 * Test only: mark the TSC unstable on load, as the kernel does when its
 * clocksource watchdog or a TSC sync check fails, so that
 * perfclock_sched_clock_switch_test can watch sched_clock turn unstable
 * at run time under QEMU's TCG, which ignores the TSC MSR writes that
 * perfclock_tsc_unstable_test relies on.
 *
 * arch/x86/kernel/tsc.c:mark_tsc_unstable() does not look at
 * tsc_clocksource_reliable (set by the stable regime's boot argument,
 * regime_append() in scripts/vm-lib.sh, which only turns the clocksource
 * watchdog off, tsc_disable_clocksource_watchdog()): it sets
 * tsc_unstable, calls kernel/sched/clock.c:clear_sched_clock_stable()
 * when sched_clock is native_sched_clock(), and marks both TSC
 * clocksources unstable. clear_sched_clock_stable() queues
 * __sched_clock_work(), which resets every CPU's clock from the GTOD
 * and turns the stable branch off. Once per boot: the module stays
 * loadable again, but the second mark is a no-op.
 *
 * hold_ms: keep this CPU that long after the mark, preemptible but
 * without sleeping. clear_sched_clock_stable()'s schedule_work() queued
 * the reset on this CPU's pool, and its kworker (SCHED_OTHER) cannot run
 * here before the loader lets it when the loader is SCHED_FIFO: the
 * switch is then pending for hold_ms (perfclock_generation_test). RCU
 * grace periods go on (a preemptible task outside a read-side section
 * reports a quiescent state at the tick under PREEMPT_RCU).
 */
#include <linux/jiffies.h>
#include <linux/module.h>
#include <asm/tsc.h>

static uint hold_ms;
module_param(hold_ms, uint, 0444);
MODULE_PARM_DESC(hold_ms, "Keep the CPU this long after the mark, up to 900 (default 0)");

static int __init perfclock_mark_tsc_unstable_init(void)
{
	unsigned long end = jiffies + msecs_to_jiffies(min(hold_ms, 900U));

	mark_tsc_unstable("perfclock selftest");
	while (time_before(jiffies, end))
		cpu_relax();
	return 0;
}

static void __exit perfclock_mark_tsc_unstable_exit(void)
{
}

module_init(perfclock_mark_tsc_unstable_init);
module_exit(perfclock_mark_tsc_unstable_exit);

MODULE_DESCRIPTION("perfclock selftest: mark the TSC unstable on load");
MODULE_LICENSE("GPL");
