// SPDX-License-Identifier: GPL-2.0
/*
 * perfclock: read perf_clock() from user space.
 *
 * perf stamps its records with local_clock() (unless an event asks for
 * another clock with use_clockid), and user space has no way to read that
 * clock. Live tools that merge per-CPU perf rings need it: reading it at
 * the start of each round of reads gives a flush horizon that no event
 * still in a ring can be below.
 *
 * /dev/perfclock offers an exact ioctl and one read-only page, updated
 * like the vDSO data page, from which user space computes the current
 * local_clock() from the TSC when the module has proved that the TSC
 * conversion matches local_clock() on every CPU. The UAPI and the page
 * read protocol are documented in perfclock_ioctl.h.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/build_bug.h>
#include <linux/capability.h>
#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/hrtimer.h>
#include <linux/irq_work.h>
#include <linux/jiffies.h>
#include <linux/kprobes.h>
#include <linux/math64.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/sched/clock.h>
#include <linux/smp.h>
#include <linux/spinlock.h>
#include <linux/tick.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#ifdef CONFIG_X86_TSC
#include <linux/clocksource.h>
#include <asm/hypervisor.h>
#include <asm/sync_core.h>
#include <asm/text-patching.h>
#include <asm/tsc.h>
#endif

#include "compat.h"
#include "perfclock_ioctl.h"

static_assert(sizeof(struct perfclock_page) == 4096);
static_assert(sizeof(struct perfclock_page) <= PAGE_SIZE);
static_assert(offsetof(struct perfclock_page, seq) == 0);
static_assert(offsetof(struct perfclock_page, tsc_mult) == 16);
static_assert(offsetof(struct perfclock_page, coarse_ns) == 32);
static_assert(offsetof(struct perfclock_page, update_count) == 64);
static_assert(offsetof(struct perfclock_page, timer_lateness_ns) == 72);
static_assert(offsetof(struct perfclock_page, horizon_ns) == 80);
static_assert(offsetof(struct perfclock_page, horizon_clockid_ns) == 112);
static_assert(offsetof(struct perfclock_page, horizon_clockids) == 104);
static_assert(offsetof(struct perfclock_page, horizon_generation) == 108);
static_assert(sizeof(struct perfclock_horizon) == 40);
static_assert(offsetof(struct perfclock_horizon, wait_ns) == 16);
static_assert(offsetof(struct perfclock_horizon, generation) == 24);
static_assert(offsetof(struct perfclock_horizon, __reserved0) == 28);
static_assert(offsetof(struct perfclock_horizon, reserved) == 32);
static_assert(sizeof(struct perfclock_time) == 16);
static_assert(sizeof(struct perfclock_info) == 72);

/*
 * Root only by default, like /dev/cpu/N/msr and /dev/cpu_dma_latency: an
 * open device lets its holder keep machine-wide work going (the page's
 * hard timer and work item every update period, a revalidation IPI to
 * every CPU, with an unstable sched_clock a write to every CPU's clock
 * data), and it reveals local_clock() and the CPU a task runs on, a
 * timing side channel. The administrator opens it up: mode=0444 on the
 * command line, or the packaged udev rule (packaging/udev/60-perfclock.rules:
 * root:perfclock 0640).
 */
static ushort mode = 0600;
module_param(mode, ushort, 0444);
MODULE_PARM_DESC(mode, "Permissions of /dev/perfclock, nonzero (default 0600)");

static uint update_period_us = 1000;
module_param(update_period_us, uint, 0444);
MODULE_PARM_DESC(update_period_us,
		 "Refresh period of the page's coarse value and TSC check, in us (100..1000000, default 1000)");

/*
 * 0 restores the policy before: a grace period started every period.
 * The default, and why: docs/horizon-cost.md.
 */
static uint horizon_gp_idle_ms = 50;
module_param(horizon_gp_idle_ms, uint, 0644);
MODULE_PARM_DESC(horizon_gp_idle_ms,
		 "Start an RCU grace period for the page's horizon only when none has proven one for this long, in ms; 0: every update period (default 50)");

/* See perfclock_perf_clock_horizon(). */
static uint horizon_skip_us = 2000;
module_param(horizon_skip_us, uint, 0644);
MODULE_PARM_DESC(horizon_skip_us,
		 "Unstable sched_clock: re-read a remote CPU's clock for the page's horizon only once the value last read there is this far behind, in us; 0: every CPU every period (default 2000)");

static bool horizon_expedited;
module_param(horizon_expedited, bool, 0644);
MODULE_PARM_DESC(horizon_expedited,
		 "Keep the page's horizon fresh with expedited grace periods while a mapping made with CAP_PERFMON exists: younger, but IPIs every busy CPU each update period (default off)");

/*
 * What a user without CAP_PERFMON (or CAP_SYS_ADMIN) can make RCU do:
 * the grace periods the module starts for such a caller's mapping or
 * GET_HORIZON alone are at most one per this many ms, whatever
 * horizon_gp_idle_ms says (a longer setting still applies). The costlier
 * settings (horizon_gp_idle_ms below it, 0 included; horizon_expedited)
 * are an administrator's choice for privileged tools: they apply while
 * a mapping made with the capability exists (perfclock_gp_idle_ns()).
 */
#define PERFCLOCK_GP_IDLE_MS_UNPRIV	50

/*
 * How far behind local_clock() the page's TSC conversion may read: the
 * offset is derived from brackets of local_clock() between two TSC reads
 * on every CPU and taken from the lowest low side, so the page never
 * reads ahead of the clock on any CPU, and the highest high side is at
 * most this much above it.
 */
#define PERFCLOCK_TSC_TOLERANCE_NS	250
/* Brackets taken on each CPU to derive the offset; by the timer's check. */
#define PERFCLOCK_DERIVE_SAMPLES	256
#define PERFCLOCK_CHECK_SAMPLES		4
/*
 * A mapping that arms the timer revalidates on every CPU (brackets with
 * irqs off and an IPI to each) only if the last full validation is older
 * than this (perfclock_arm_check()); a map/unmap loop costs then one per
 * second, not one per mapping, ...
 */
#define PERFCLOCK_REVALIDATE_INTERVAL	HZ
/*
 * ... for a caller with CAP_PERFMON (or CAP_SYS_ADMIN: perfmon_capable()).
 * Anyone else who arms the timer gets the cheap check on its own CPU,
 * and the full one only if the last is older than this: an every-CPU
 * IPI that no user without the capability can cause more than once a
 * minute, yet a page whose fast path was lost comes back within one
 * where no privileged user ever maps it.
 */
#define PERFCLOCK_REVALIDATE_INTERVAL_UNPRIV	(60 * HZ)
/*
 * timer_lateness_ns is the worst lateness over the current and the
 * previous window of this length, not since load: one VM pause or SMI
 * inflates the skew estimate for 10 to 20 s, not for the module's life.
 */
#define PERFCLOCK_LATENESS_WINDOW_NS	(10 * NSEC_PER_SEC)
/* IPI round trips per ordered pair of CPUs for the load-time skew check. */
#define PERFCLOCK_SKEW_ROUNDS		64

/* The clockids perf accepts for use_clockid (perf_event_set_clock()). */
#define PERFCLOCK_HORIZON_CLOCKID_MASK					\
	(BIT(CLOCK_REALTIME) | BIT(CLOCK_MONOTONIC) |			\
	 BIT(CLOCK_MONOTONIC_RAW) | BIT(CLOCK_BOOTTIME) | BIT(CLOCK_TAI))
/* Internal: the sample holds a perf_clock() horizon. Not on the page. */
#define PERFCLOCK_HORIZON_PERF_BIT	BIT(PERFCLOCK_HORIZON_CLOCKIDS)
#define PERFCLOCK_HORIZON_ALL \
	(PERFCLOCK_HORIZON_PERF_BIT | PERFCLOCK_HORIZON_CLOCKID_MASK)

/*
 * A horizon sample: every clock's horizon, read before @cookie was
 * snapshot. Proven once poll_state_synchronize_rcu(@cookie) is true.
 */
struct perfclock_horizon_sample {
	unsigned long cookie;
	u32 generation;	/* perfclock.generation when it was read */
	u64 perf_ns;
	u32 clockids;	/* bit id: clockid_ns[id] was read */
	u64 clockid_ns[PERFCLOCK_HORIZON_CLOCKIDS];
};

/*
 * Samples waiting for their grace period, oldest first. Snapshots only
 * grow, and one that is already pending is replaced by the newer
 * sample (it proves the newer one as well), so a few slots suffice:
 * the grace period in progress and the one queued behind it.
 */
#define PERFCLOCK_HORIZON_PENDING	4

struct perfclock_tsc_model {
	u32 mult;
	u32 shift;
	u64 offset;
	unsigned int khz;	/* tsc_khz the model was derived with */
};

static struct {
	struct perfclock_page *page;

	/*
	 * Serializes every writer of the page and of the fields below:
	 * the hrtimer (hard irq), the hotplug callback and process
	 * context. Raw, so that it stays a spinning lock on PREEMPT_RT
	 * where the hrtimer still runs in hard irq context.
	 */
	raw_spinlock_t lock;
	struct perfclock_tsc_model model;
	bool tsc_valid;
	bool stable;
	u64 measured_skew_ns;
	/* CPUs come online: bumped by perfclock_cpu_online(), see perfclock_revalidate(). */
	unsigned int online_seq;
	/* max(lateness_cur, lateness_prev): see perfclock_skew_estimate() */
	u64 timer_lateness_ns;
	u64 lateness_cur;	/* worst in the window that began at ... */
	u64 lateness_prev;	/* ... lateness_window, and in the one before */
	ktime_t lateness_window;

	/* Serializes open/release accounting, arming and full revalidations. */
	struct mutex mutex;
	unsigned int users;
	unsigned long validated_at;	/* jiffies of the last full validation */
	u64 revalidations;		/* full validations since load */

	/*
	 * Who keeps the update timer armed: the mappings of the page
	 * (perfclock_keep_armed()). timer_on (under lock) is true from
	 * perfclock_arm() until the timer returns HRTIMER_NORESTART or the
	 * last file is closed.
	 */
	atomic_t maps;
	/* Those of them mmap()ed with CAP_PERFMON (vm_private_data set). */
	atomic_t priv_maps;
	bool timer_on;
	/*
	 * The grace periods the module starts without CAP_PERFMON behind
	 * them, for the page or for an unprivileged GET_HORIZON: at most one
	 * per horizon_gp_idle_ms, all paths together (perfclock_gp_start()).
	 */
	atomic64_t gp_started_ns;	/* ktime_get_ns() of the last one */
	atomic64_t gp_requested;	/* grace periods asked for: GET_INFO */
	/* Woken when the work proves a sample: perfclock_horizon_wait(). */
	wait_queue_head_t gp_wq;

	/*
	 * Horizon generations (THE FLUSH HORIZON, "Generations"), under
	 * lock: see perfclock_epoch_check().
	 */
	u32 generation;
	bool tsc_unstable_seen;		/* check_tsc_unstable() was seen true */
	bool sched_clock_unstable;	/* unstable at load, or reset since */
	bool clock_switch_pending;	/* a reset is under way: no horizon */
	bool perf_refused;		/* no perf_clock() horizon until reload */
	bool reset_probe;		/* the reset probe is armed */
	bool reset_probe_registered;
	u32 reset_seq_seen;		/* reset_seq at the last check */
	u64 switch_seen_ns;		/* ktime_get_ns() when it turned odd */
	unsigned long info_check_at;	/* jiffies of GET_INFO's last check */
	/* Bumped at __sched_clock_work()'s entry and return: odd between. */
	atomic_t reset_seq;
	struct irq_work reset_irq_work;	/* the entry's check, off int3 */
	ktime_t offs_real;		/* REALTIME - MONOTONIC, last seen */
	ktime_t offs_tai;		/* TAI - MONOTONIC, last seen */
	unsigned int set_seq;		/* clock_was_set_seq, last seen */

	/* The newest proven horizon, on the page (under lock). */
	struct perfclock_horizon_sample horizon;
	u64 horizon_count;
	u64 horizon_proven_ns;

	/* Owned by horizon_work (a work item never runs concurrently with itself). */
	struct perfclock_horizon_sample pending[PERFCLOCK_HORIZON_PENDING];
	unsigned int npending;
	u64 gp_progress_ns;	/* ktime_get_ns(): a sample proven, or a GP started */
	/* perfclock_seen_clock and seen_gen: the horizon work and GET_HORIZON. */
	struct mutex seen_lock;
	u32 seen_gen;		/* generation of perfclock_seen_clock */

	struct hrtimer timer;
	ktime_t period;
	struct work_struct revalidate_work;
	struct work_struct horizon_work;
	enum cpuhp_state hp_state;
} perfclock;

/*
 * The skew estimate when sched_clock is unstable (kernel/sched/clock.c).
 * Each CPU's clock is then scd->clock = clamp(tick_gtod + delta,
 * max(tick_gtod, old clock), max(old clock, tick_gtod + TICK_NSEC)),
 * where tick_gtod is ktime_get_ns() at that CPU's last sched_clock_tick()
 * (a global offset aside). So a CPU never reads more than TICK_NSEC ahead
 * of the gtod time of its last tick, hence of real time, and never less
 * than the gtod time of its last tick. On a CPU whose tick runs, that
 * tick is at most one period plus the tick's lateness old (an idle CPU
 * ticks the clock again when an interrupt wakes it: tick_nohz_stop_idle()
 * -> sched_clock_idle_wakeup_event()). A read on CPU B after a read on
 * CPU A is therefore at most 2 * TICK_NSEC + lateness below it.
 *
 * The lateness is near zero on bare metal but not in an overcommitted
 * virtual machine, where a vCPU's timer interrupts can arrive tens of
 * milliseconds late: the module measures it on its own hrtimer, which is
 * delivered like the tick, and keeps the worst value of the last 10 to
 * 20 s. A nohz_full CPU running user space ticks only once a second: add
 * that when nohz_full is in use.
 *
 * An estimate, not a bound: the lateness of another CPU's tick is not
 * this timer's, and a delay longer than any seen is not in it. Nothing
 * exact depends on it: the flush horizon needs no skew figure.
 */
static u64 perfclock_unstable_skew_estimate(void)
{
	u64 est = 2 * (u64)TICK_NSEC + perfclock.timer_lateness_ns;

	if (tick_nohz_full_enabled())
		est += NSEC_PER_SEC;
	return est;
}

static u64 perfclock_skew_estimate(void)
{
	u64 est;

	if (perfclock.stable)
		return 0;
	est = perfclock_unstable_skew_estimate();
	return max(est, perfclock.measured_skew_ns);
}

/* The timer is @late ns late at @now: keep the worst of a sliding window. */
static void perfclock_note_lateness(ktime_t now, s64 late)
{
	s64 age = ktime_to_ns(ktime_sub(now, perfclock.lateness_window));

	lockdep_assert_held(&perfclock.lock);

	if (age >= 2 * PERFCLOCK_LATENESS_WINDOW_NS) {
		/* The timer was off (device closed) for a window or more. */
		perfclock.lateness_prev = 0;
		perfclock.lateness_cur = 0;
		perfclock.lateness_window = now;
	} else if (age >= PERFCLOCK_LATENESS_WINDOW_NS) {
		perfclock.lateness_prev = perfclock.lateness_cur;
		perfclock.lateness_cur = 0;
		perfclock.lateness_window = now;
	}
	if (late > 0 && (u64)late > perfclock.lateness_cur)
		perfclock.lateness_cur = late;
	perfclock.timer_lateness_ns = max(perfclock.lateness_cur,
					  perfclock.lateness_prev);
}

/* Page writer; the seq protocol is documented in perfclock_ioctl.h. */
static void perfclock_publish(void)
{
	struct perfclock_page *pg = perfclock.page;
	u32 seq = pg->seq;
	u32 flags = 0;
	int id;

	lockdep_assert_held(&perfclock.lock);

	if (perfclock.tsc_valid)
		flags |= PERFCLOCK_PAGE_TSC_VALID;
	if (perfclock.stable)
		flags |= PERFCLOCK_PAGE_SCHED_CLOCK_STABLE;

	WRITE_ONCE(pg->seq, seq + 1);
	/* Odd seq visible before the fields: pairs with the reader's read_retry smp_rmb(). */
	smp_wmb();

	WRITE_ONCE(pg->version, PERFCLOCK_PAGE_VERSION);
	WRITE_ONCE(pg->flags, flags);
	WRITE_ONCE(pg->tsc_mult, perfclock.model.mult);
	WRITE_ONCE(pg->tsc_shift, perfclock.model.shift);
	WRITE_ONCE(pg->tsc_offset, perfclock.model.offset);
	WRITE_ONCE(pg->coarse_cpu, raw_smp_processor_id());
	WRITE_ONCE(pg->coarse_ns, local_clock());
	WRITE_ONCE(pg->skew_estimate_ns, perfclock_skew_estimate());
	WRITE_ONCE(pg->update_period_ns, ktime_to_ns(perfclock.period));
	WRITE_ONCE(pg->update_count, pg->update_count + 1);
	WRITE_ONCE(pg->timer_lateness_ns, perfclock.timer_lateness_ns);
	/*
	 * The horizon and its generation in the same seq section: a reader
	 * never pairs a value with the wrong generation. After a new
	 * generation the held horizon is empty (zero) until one is proven.
	 */
	if (perfclock.horizon.clockids & PERFCLOCK_HORIZON_PERF_BIT)
		flags |= PERFCLOCK_PAGE_HORIZON_VALID;
	WRITE_ONCE(pg->flags, flags);
	WRITE_ONCE(pg->horizon_generation, perfclock.generation);
	WRITE_ONCE(pg->horizon_ns, perfclock.horizon.perf_ns);
	WRITE_ONCE(pg->horizon_count, perfclock.horizon_count);
	WRITE_ONCE(pg->horizon_proven_ns, perfclock.horizon_proven_ns);
	WRITE_ONCE(pg->horizon_clockids,
		   perfclock.horizon.clockids & PERFCLOCK_HORIZON_CLOCKID_MASK);
	for (id = 0; id < PERFCLOCK_HORIZON_CLOCKIDS; id++)
		WRITE_ONCE(pg->horizon_clockid_ns[id],
			   perfclock.horizon.clockid_ns[id]);

	/* Fields visible before the even seq: pairs with the reader's acquire of seq. */
	smp_wmb();
	WRITE_ONCE(pg->seq, seq + 2);
}

/*
 * The flush horizon. What it guarantees is "THE FLUSH HORIZON" in
 * perfclock_ioctl.h; the proof with the kernel functions it rests on,
 * docs/horizon.md, "The proof".
 */

/*
 * Horizon generations (THE FLUSH HORIZON, "Generations", in
 * perfclock_ioctl.h). A new generation starts whenever a horizon already
 * handed out may be above a record stamped later:
 *
 *  - sched_clock turns unstable at run time. kernel/sched/clock.c:
 *    clear_sched_clock_stable() (on x86 called by arch/x86/kernel/tsc.c:
 *    mark_tsc_unstable() and the watchdog's tsc_cs_mark_unstable()
 *    whenever sched_clock is native_sched_clock(), under a hypervisor
 *    too) queues __sched_clock_work(). That work sets every CPU's clock
 *    to the GTOD's time (moving it back by however far the GTOD fell
 *    behind sched_clock since boot), prints twice, and then turns the
 *    stable branch off: from there local_clock() restarts from the reset
 *    clocks. The module is told of both ends of that work (the reset
 *    probe, below): a generation starts at each, and between them no
 *    perf_clock() horizon is read or proven. Without the probe, the
 *    first run-time mark of the TSC seen ends perf_clock() horizons for
 *    the module's life (perfclock_switch_check()).
 *  - REALTIME or TAI is set backwards: the offset from MONOTONIC to it
 *    shrinks (kernel/time/timekeeping.c: tk_set_wall_to_mono() and
 *    tk_set_tai_offset() keep offs_real and offs_tai;
 *    ktime_mono_to_any() reads them under the timekeeper's seqcount).
 *    A forward set leaves every held horizon true. The net offset
 *    alone misses a set back and one forward again between two checks
 *    (records stamped in between lie below the held horizon), so the
 *    timekeeper's count of sets is watched too: clock_was_set_seq,
 *    bumped by timekeeping_update() for every TK_CLOCK_WAS_SET (settime,
 *    ADJ_SETOFFSET, a TAI offset change, a leap second, resume) and read
 *    with ktime_get_snapshot(). One set since the last check is judged
 *    by the offsets; two or more start a generation whatever the net
 *    offset did.
 *
 * Every held horizon is dropped, and every sample read in an older
 * generation, so the next horizons restart from a newly proven sample and
 * can be smaller than the last one handed out.
 */
static void perfclock_new_generation(void)
{
	lockdep_assert_held(&perfclock.lock);

	perfclock.generation++;
	memset(&perfclock.horizon, 0, sizeof(perfclock.horizon));
	perfclock.horizon_count++;
	perfclock.horizon_proven_ns = 0;
}

/*
 * What perfclock_epoch_check() judges clock sets by: the timekeeper's
 * count of sets, then the offsets. Read by the caller before it takes
 * perfclock.lock: the count comes with a clocksource read
 * (kernel/time/timekeeping.c:ktime_get_snapshot()), microseconds on
 * HPET or acpi_pm, which under the lock would hold off irqs on this CPU
 * and the update timer's hard irq on any CPU, and any user who may open
 * the device can ask for it in a loop (GET_HORIZON, GET_INFO). The
 * offsets are read right after the count, as before, so that the window
 * in which two sets (back, then forward again) can slip between them is
 * what it was: two reads of the timekeeper, nothing between.
 */
struct perfclock_clock_sets {
	unsigned int seq;		/* clock_was_set_seq */
	ktime_t real, tai;		/* REALTIME, TAI - MONOTONIC */
};

/* Any context but NMI, with or without perfclock.lock. */
static void perfclock_clock_sets_read(struct perfclock_clock_sets *cs)
{
	struct system_time_snapshot snap;

	/*
	 * The count first: a set after it and before the offsets shows in
	 * the offsets now and in the count at the next check.
	 */
	ktime_get_snapshot(&snap);
	cs->seq = snap.clock_was_set_seq;
	cs->real = ktime_mono_to_any(0, TK_OFFS_REAL);
	cs->tai = ktime_mono_to_any(0, TK_OFFS_TAI);
}

static bool reset_probe = true;
module_param(reset_probe, bool, 0444);
MODULE_PARM_DESC(reset_probe,
		 "Be told of a run-time sched_clock reset by a kprobe on __sched_clock_work() (default Y); N, or no kprobes: a run-time TSC mark ends perf_clock() horizons until the module is reloaded");

/*
 * The reset probe: told, not probed. The kernel exports nothing that
 * says sched_clock stopped being stable (sched_clock_stable() and its
 * static key are not exported), and watching the clocks for the reset
 * costs a spin with irqs off for ticks (what this replaced) or sees it
 * late (a watch of local_clock() - sched_clock() saw it 0.5 to 1.2 s
 * after the fact in TCG guests). So a kprobe and a kretprobe sit on
 * kernel/sched/clock.c:__sched_clock_work(): static, but a real function
 * (DECLARE_WORK() takes its address; "t __sched_clock_work" in the
 * /proc/kallsyms of Debian's 6.1 and 6.12 guests), run at most once per
 * boot. It is the only code after boot that lowers a CPU's clock or
 * turns the stable branch off (sched_clock_init_late() turns it on once,
 * before any module), whoever called clear_sched_clock_stable(): no guess
 * about the hypervisor or the sched_clock in use enters.
 *
 * Entry (perfclock_reset_entry(), after the work's first instruction,
 * before it touches any clock): reset_seq turns odd. That runs in int3
 * context, which x86 enters as an NMI (arch/x86/kernel/traps.c:exc_int3()
 * -> irqentry_nmi_enter()), so it takes no lock: it queues a hard
 * irq_work, which arch_irq_work_raise() sends as a self-IPI, taken once
 * the int3's IRET restores IF (the work runs with irqs on): in practice
 * long before the work's printk()s and static_branch_disable(), though
 * nothing here proves it. That irq_work runs perfclock_epoch_check(),
 * which starts a generation (dropping the held horizon from the page)
 * and marks the switch pending. Only how early the held horizon leaves
 * the page rests on that timing, not the proof below: were it late,
 * the page would hold the old generation's horizon from the switch to
 * the return, as after any step the module has not seen yet.
 *
 * Return (perfclock_reset_return(), process context, after
 * static_branch_disable() has returned: its text_poke_bp() batch ends
 * with text_poke_sync(), an IPI to every CPU, so every CPU runs the
 * unstable branch by then): reset_seq turns even, and the check starts
 * the next generation and ends the pending state.
 *
 * Readers: a perf_clock() sample is begun (perfclock_horizon_begin())
 * and proven (perfclock_horizon_proven()) under perfclock.lock after a
 * check; neither happens while reset_seq is odd, and a change of
 * reset_seq between them starts a generation, so the sample is dropped.
 * A clock read that the switch affected ran after the text_poke_sync()
 * IPI on its CPU, hence after the entry's increment, which the proof's
 * check then sees. So every perf_clock() horizon proven in a
 * generation was read wholly before the switch took effect or wholly
 * after the return, and is proven in that same generation.
 *
 * Not optimized, not patched again: kernel/kprobes.c:optimize_kprobe()
 * leaves a probe with a post_handler (the entry's) an int3, so the text
 * is written at registration and at unregistration only (QEMU's TCG can
 * run a stale translation of patched text: docs/lessons.md). Being an
 * int3 is also how a global disarm (debugfs kprobes/enabled = 0, which
 * sets kernel/kprobes.c's unexported kprobes_all_disarmed) is seen: the
 * byte at the probed address is the original opcode again
 * (arch_disarm_kprobe()). Every check looks (perfclock_reset_probe_armed());
 * a probe found disarmed is dropped for the module's life, with a new
 * generation, since a reset may have passed unseen.
 */
#if defined(CONFIG_X86_TSC) && defined(CONFIG_KRETPROBES)
static void perfclock_reset_entry(struct kprobe *p, struct pt_regs *regs,
				  unsigned long flags)
{
	/* Before the irq_work's check reads it: the IPI orders them. */
	atomic_inc(&perfclock.reset_seq);
	irq_work_queue(&perfclock.reset_irq_work);
}

static struct kprobe perfclock_reset_kp = {
	.symbol_name	= "__sched_clock_work",
	.post_handler	= perfclock_reset_entry,
};

/* The probe's int3 is in place (see above): it cannot have been missed. */
static bool perfclock_reset_probe_armed(void)
{
	return READ_ONCE(*perfclock_reset_kp.addr) == INT3_INSN_OPCODE;
}

static int perfclock_reset_return(struct kretprobe_instance *ri,
				  struct pt_regs *regs);

static struct kretprobe perfclock_reset_krp = {
	.kp.symbol_name	= "__sched_clock_work",
	.handler	= perfclock_reset_return,
};

/*
 * A kretprobe that found no free instance at the entry counts it in
 * nmissed (kernel/kprobes.c:pre_handler_kretprobe()) and will not run
 * its handler for that call: the return's increment will never come.
 */
static bool perfclock_reset_return_missed(void)
{
	return READ_ONCE(perfclock_reset_krp.nmissed) != 0;
}
#else
static bool perfclock_reset_probe_armed(void)
{
	return false;
}

static bool perfclock_reset_return_missed(void)
{
	return false;
}
#endif

/*
 * How long a sched_clock reset may stay under way before the module
 * stops waiting for its return: __sched_clock_work() copies one CPU's
 * clock data to every CPU, prints two lines and switches one static
 * branch (cpus_read_lock(), a text_poke_bp() batch): milliseconds, or
 * seconds behind a CPU hotplug operation. A return not seen by then is
 * taken as lost, and perf_clock() horizons are refused until reload, as
 * with no probe: GET_HORIZON's wait for the reset ends there.
 */
#define PERFCLOCK_RESET_RETURN_MAX_NS	(10 * NSEC_PER_SEC)

#ifdef CONFIG_X86_TSC
/*
 * The switch part of perfclock_epoch_check(). Returns true when a
 * generation must start.
 */
static bool perfclock_switch_check(void)
{
	bool bump = false;
	u32 seq;

	lockdep_assert_held(&perfclock.lock);

	if (perfclock.reset_probe && !perfclock_reset_probe_armed()) {
		perfclock.reset_probe = false;
		bump = true;
		pr_notice("kprobes disarmed: sched_clock resets are no longer seen; a run-time TSC mark now ends perf_clock() horizons\n");
	}
	/* Pairs with the increments in perfclock_reset_entry()/_return(). */
	seq = atomic_read(&perfclock.reset_seq);
	if (seq != perfclock.reset_seq_seen) {
		perfclock.reset_seq_seen = seq;
		perfclock.clock_switch_pending = seq & 1;
		if (seq & 1)
			perfclock.switch_seen_ns = ktime_get_ns();
		else
			perfclock.sched_clock_unstable = true;
		bump = true;
	}
	/*
	 * A reset whose return will not be seen: nothing can end the
	 * pending state, so end perf_clock() horizons instead (every wait
	 * for the reset stops at the refusal).
	 */
	if (perfclock.clock_switch_pending && !perfclock.perf_refused &&
	    (perfclock_reset_return_missed() ||
	     ktime_get_ns() - perfclock.switch_seen_ns >
	     PERFCLOCK_RESET_RETURN_MAX_NS)) {
		perfclock.perf_refused = true;
		bump = true;
		pr_warn("sched_clock reset under way for %llu ms with its return not seen (%s): perf_clock() horizons refused until reload\n",
			div_u64(ktime_get_ns() - perfclock.switch_seen_ns,
				NSEC_PER_MSEC),
			perfclock_reset_return_missed() ? "kretprobe missed" :
							  "timed out");
	}
	if (!perfclock.tsc_unstable_seen && check_tsc_unstable())
		perfclock.tsc_unstable_seen = true;
	/*
	 * No probe: the TSC marked at run time (arch/x86/kernel/tsc.c sets
	 * tsc_unstable before it calls clear_sched_clock_stable()) may be
	 * followed by a reset nobody sees, under any hypervisor: no
	 * perf_clock() horizon from now on. Never a wait: the module has no
	 * way left to see the reset that ends it.
	 */
	if (!perfclock.reset_probe && perfclock.tsc_unstable_seen &&
	    !perfclock.sched_clock_unstable && !perfclock.perf_refused) {
		perfclock.perf_refused = true;
		bump = true;
		pr_notice("TSC marked unstable with no reset probe: perf_clock() horizons refused until reload\n");
	}
	return bump;
}
#else
/* sched_clock switches are followed on x86 only. */
static bool perfclock_switch_check(void)
{
	return false;
}
#endif

/*
 * Start a new generation if the clocks changed since the last check.
 * Any context but NMI; @cs read by perfclock_clock_sets_read() before the
 * caller took the lock.
 *
 * Callers race to the lock, so @cs may be older than what the last
 * check recorded. A smaller count than the recorded one means the
 * recorded reads came after a set that @cs's did not see, so later than
 * @cs's: they cover everything @cs could tell, and @cs is dropped (its
 * sets part; the switch check still runs). With an equal count either
 * may be the newer; applying the older one after the newer can only
 * start a generation nothing needed (its offsets look like a set), never
 * miss one. A caller that needs the sets up to a point in time (a
 * horizon proven after its grace period) read @cs after that point, so
 * whatever the lock holds covers it.
 *
 * Returns true while no perf_clock() horizon may be read.
 */
static bool perfclock_epoch_check(const struct perfclock_clock_sets *cs)
{
	bool bump = false;

	lockdep_assert_held(&perfclock.lock);

	if ((int)(cs->seq - perfclock.set_seq) >= 0) {
		bump = cs->seq - perfclock.set_seq > 1;
		perfclock.set_seq = cs->seq;
		if (ktime_before(cs->real, perfclock.offs_real) ||
		    ktime_before(cs->tai, perfclock.offs_tai))
			bump = true;
		perfclock.offs_real = cs->real;
		perfclock.offs_tai = cs->tai;
	}
	if (perfclock_switch_check())
		bump = true;
	if (bump) {
		perfclock_new_generation();
		perfclock_publish();
	}
	return perfclock.clock_switch_pending || perfclock.perf_refused;
}

/* The reset probe's checks, outside the probe's own context. */
static void perfclock_reset_check(void)
{
	struct perfclock_clock_sets cs;
	unsigned long flags;

	perfclock_clock_sets_read(&cs);
	raw_spin_lock_irqsave(&perfclock.lock, flags);
	perfclock_epoch_check(&cs);
	raw_spin_unlock_irqrestore(&perfclock.lock, flags);
}

static void perfclock_reset_irq_work_fn(struct irq_work *work)
{
	perfclock_reset_check();
}

#if defined(CONFIG_X86_TSC) && defined(CONFIG_KRETPROBES)
static int perfclock_reset_return(struct kretprobe_instance *ri,
				  struct pt_regs *regs)
{
	atomic_inc(&perfclock.reset_seq);
	perfclock_reset_check();
	return 0;
}

/*
 * At load, before the device exists. The kprobe first: a kretprobe
 * alone could be optimized into a jump before the kprobe's post_handler
 * forbids it, which would patch the text once more.
 */
static void perfclock_reset_probe_register(void)
{
	int ret;

	if (!reset_probe) {
		pr_notice("reset_probe=0: a run-time TSC mark will end perf_clock() horizons\n");
		return;
	}
	ret = register_kprobe(&perfclock_reset_kp);
	if (!ret) {
		ret = register_kretprobe(&perfclock_reset_krp);
		if (ret)
			unregister_kprobe(&perfclock_reset_kp);
	}
	/* An ftrace-based probe has no int3 to check (and is not expected). */
	if (!ret && ((perfclock_reset_kp.flags & KPROBE_FLAG_FTRACE) ||
		     !perfclock_reset_probe_armed())) {
		unregister_kretprobe(&perfclock_reset_krp);
		unregister_kprobe(&perfclock_reset_kp);
		ret = -EOPNOTSUPP;
	}
	perfclock.reset_probe = !ret;
	perfclock.reset_probe_registered = !ret;
	if (ret)
		pr_notice("no probe on __sched_clock_work() (%d): a run-time TSC mark will end perf_clock() horizons\n",
			  ret);
}

static void perfclock_reset_probe_unregister(void)
{
	if (!perfclock.reset_probe_registered)
		return;
	unregister_kretprobe(&perfclock_reset_krp);
	unregister_kprobe(&perfclock_reset_kp);
	/* unregister_kprobe() waited for handlers; an irq_work may remain. */
	irq_work_sync(&perfclock.reset_irq_work);
}
#else
static void perfclock_reset_probe_register(void)
{
	if (IS_ENABLED(CONFIG_X86_TSC))
		pr_notice("no kretprobes: a run-time TSC mark will end perf_clock() horizons\n");
}

static void perfclock_reset_probe_unregister(void)
{
}
#endif

/*
 * Begin a horizon read of the clocks in @mask: the generation it belongs
 * to in @gen, and in @mask the clocks it may read. perf_clock() is taken
 * out while a reset is under way and once refused. Returns 0, or when
 * that leaves nothing, -EAGAIN (a reset is under way: its return ends
 * it) or -EOPNOTSUPP (refused until reload).
 */
static int perfclock_horizon_begin(u32 *mask, u32 *gen)
{
	struct perfclock_clock_sets cs;
	unsigned long flags;
	int ret = 0;

	perfclock_clock_sets_read(&cs);
	raw_spin_lock_irqsave(&perfclock.lock, flags);
	if (perfclock_epoch_check(&cs) && (*mask & PERFCLOCK_HORIZON_PERF_BIT)) {
		*mask &= ~PERFCLOCK_HORIZON_PERF_BIT;
		if (!*mask)
			ret = perfclock.perf_refused ? -EOPNOTSUPP : -EAGAIN;
	}
	*gen = perfclock.generation;
	raw_spin_unlock_irqrestore(&perfclock.lock, flags);
	return ret;
}

/*
 * Each possible CPU's clock as a horizon read last read it, in
 * generation perfclock.seen_gen, under perfclock.seen_lock.
 */
static DEFINE_PER_CPU(u64, perfclock_seen_clock);

/*
 * A value that every possible CPU's local_clock() has reached when this
 * returns (point 4 of the proof). sched_clock_cpu() on a remote CPU
 * couples the two clocks forward; kernel/sched/clock.c asks its callers
 * for irqs off, which also keeps each coupling on one CPU.
 *
 * In the unstable regime each remote read is sched_clock_remote(), which
 * writes (cmpxchg) the clock of whichever CPU lags: the scheduler's
 * hottest per-CPU line. So a horizon read does not read a remote CPU
 * again while the value last read there (by the horizon work or by any
 * GET_HORIZON caller: one cache, under seen_lock) is at most
 * horizon_skip_us below this CPU's clock now; it takes that value
 * instead. GET_HORIZON used to sweep every CPU for each caller, each
 * thread of each tool: N callers, N remote writes per CPU per grace
 * period. Still exact: a value v returned by sched_clock_cpu(c) is at or
 * below c's clock from then on, because kernel/sched/clock.c:
 * sched_clock_remote() leaves both CPUs' clocks at or above the value it
 * returns and sched_clock_local() never lowers a clock (min_clock is at
 * least the old clock). Only __sched_clock_work() lowers clocks, and
 * that starts a new generation, which re-reads every CPU (and the
 * unstable-to-stable switch happens once, at boot, in
 * sched_clock_init_late(), before any module). So c's clock is at least
 * the minimum taken here. The horizon lags by up to horizon_skip_us more;
 * each remote CPU is written about once per horizon_skip_us instead of
 * once per update period.
 *
 * With a stable sched_clock every read here is native_sched_clock()'s
 * plain rdtsc() (arch/x86/kernel/tsc.c), which the CPU may execute after
 * later instructions have begun (Intel SDM, RDTSC: "subsequent
 * instructions may begin execution before the read operation is
 * performed"), so past the grace-period snapshot that follows. The
 * barrier after the loop keeps every TSC read before the snapshot: on
 * x86 rmb() is LFENCE, which does not let a later instruction start
 * before every earlier one has completed (what rdtsc_ordered() relies on
 * too, from the other side) where LFENCE is dispatch-serializing: every
 * Intel CPU, and the AMD ones on which the kernel made it so
 * (X86_FEATURE_LFENCE_RDTSC, arch/x86/kernel/cpu/amd.c). On an AMD CPU
 * without it (a guest whose hypervisor hides the MSR, older families)
 * LFENCE orders nothing here, and rdtsc_ordered() would not do either:
 * it is RDTSCP there (arch/x86/include/asm/msr.h), which waits for the
 * instructions before it but lets later ones start first. So on those a
 * serializing instruction, sync_core() (SERIALIZE, or IRET to self; no
 * VM exit). One fence per horizon read: at most one per update period
 * plus one per GET_HORIZON, next to a grace period.
 */
static u64 perfclock_perf_clock_horizon(u32 gen)
{
	u64 skip_ns = (u64)READ_ONCE(horizon_skip_us) * NSEC_PER_USEC;
	/* Stable, a remote read is a local one: nothing to save. */
	bool skip = skip_ns && perfclock.seen_gen == gen &&
		    !READ_ONCE(perfclock.stable);
	unsigned long flags;
	u64 h, v, target;
	int cpu, me;

	lockdep_assert_held(&perfclock.seen_lock);

	local_irq_save(flags);
	me = smp_processor_id();
	h = sched_clock_cpu(me);
	local_irq_restore(flags);
	target = h - min(h, skip_ns);

	for_each_possible_cpu(cpu) {
		if (cpu == me)
			continue;
		if (skip && per_cpu(perfclock_seen_clock, cpu) >= target) {
			v = per_cpu(perfclock_seen_clock, cpu);
		} else {
			local_irq_save(flags);
			v = sched_clock_cpu(cpu);
			local_irq_restore(flags);
			per_cpu(perfclock_seen_clock, cpu) = v;
		}
		h = min(h, v);
	}
	perfclock.seen_gen = gen;
#ifdef CONFIG_X86_TSC
	if (!boot_cpu_has(X86_FEATURE_LFENCE_RDTSC)) {
		sync_core();
		return h;
	}
#endif
	/* Every clock read completes before the snapshot: see above. */
	rmb();
	return h;
}

/* The accessor perf stamps use_clockid records with (perf_event_set_clock()). */
static u64 perfclock_clockid_now(int id)
{
	switch (id) {
	case CLOCK_MONOTONIC:
		return ktime_get_mono_fast_ns();
	case CLOCK_MONOTONIC_RAW:
		return ktime_get_raw_fast_ns();
	case CLOCK_REALTIME:
		return ktime_get_real_ns();
	case CLOCK_BOOTTIME:
		return ktime_get_boottime_ns();
	case CLOCK_TAI:
		return ktime_get_clocktai_ns();
	}
	WARN_ON_ONCE(1);
	return 0;
}

/*
 * Read the horizon of every clock in @mask, in generation @gen. The
 * caller snapshots the grace-period state only after this returns.
 * Process context (seen_lock).
 */
static void perfclock_horizon_read(struct perfclock_horizon_sample *s, u32 mask,
				   u32 gen)
{
	unsigned long ids = mask & PERFCLOCK_HORIZON_CLOCKID_MASK;
	int id;

	memset(s, 0, sizeof(*s));
	s->generation = gen;
	if (mask & PERFCLOCK_HORIZON_PERF_BIT) {
		mutex_lock(&perfclock.seen_lock);
		s->perf_ns = perfclock_perf_clock_horizon(gen);
		mutex_unlock(&perfclock.seen_lock);
	}
	for_each_set_bit(id, &ids, PERFCLOCK_HORIZON_CLOCKIDS)
		s->clockid_ns[id] = perfclock_clockid_now(id);
	s->clockids = mask;
}

/*
 * @s is proven: put it on the page, unless a new generation began since
 * it was read, or it holds perf_clock() while a sched_clock reset is
 * under way (then it proves nothing: false is returned and the caller
 * reads again; the reset's return starts a generation, which drops it).
 * Within a generation each clock's horizon only moves forward: the
 * larger of two proven horizons is proven.
 */
static bool perfclock_horizon_proven(const struct perfclock_horizon_sample *s)
{
	struct perfclock_horizon_sample *h = &perfclock.horizon;
	unsigned long flags, ids = s->clockids & PERFCLOCK_HORIZON_CLOCKID_MASK;
	struct perfclock_clock_sets cs;
	bool moved = false;
	int id;

	perfclock_clock_sets_read(&cs);
	raw_spin_lock_irqsave(&perfclock.lock, flags);
	if ((perfclock_epoch_check(&cs) && (s->clockids & PERFCLOCK_HORIZON_PERF_BIT)) ||
	    s->generation != perfclock.generation) {
		raw_spin_unlock_irqrestore(&perfclock.lock, flags);
		return false;
	}
	if ((s->clockids & PERFCLOCK_HORIZON_PERF_BIT) &&
	    (!(h->clockids & PERFCLOCK_HORIZON_PERF_BIT) ||
	     s->perf_ns > h->perf_ns)) {
		h->perf_ns = s->perf_ns;
		h->clockids |= PERFCLOCK_HORIZON_PERF_BIT;
		moved = true;
	}
	for_each_set_bit(id, &ids, PERFCLOCK_HORIZON_CLOCKIDS) {
		if (!(h->clockids & BIT(id)) || s->clockid_ns[id] > h->clockid_ns[id]) {
			h->clockid_ns[id] = s->clockid_ns[id];
			h->clockids |= BIT(id);
			moved = true;
		}
	}
	/* The page says "valid" only once perf_clock() has a horizon. */
	if (moved) {
		perfclock.horizon_count++;
		perfclock.horizon_proven_ns = local_clock();
		perfclock_publish();
	}
	raw_spin_unlock_irqrestore(&perfclock.lock, flags);
	return true;
}

/*
 * Queued by the timer every period while it is armed (perfclock_arm()):
 * sample a new horizon, snapshot the grace-period state after it, and publish the
 * newest sample whose grace period has ended (polled: nothing waits
 * here).
 *
 * Which grace periods prove the samples: the ones the system runs
 * anyway. get_state_synchronize_rcu() only snapshots; a grace period is
 * started (start_poll_synchronize_rcu()) only when none has proven a
 * sample for horizon_gp_idle_ms, or, with horizon_gp_idle_ms=0, every
 * period (the policy before 0.x: grace periods back to back while the
 * device is open). A grace period is not free for the rest of the
 * machine: the grace-period kthread wakes (an idle CPU, often) to run
 * it, and its force-quiescent-state scan
 * (kernel/rcu/tree.c:rcu_implicit_dynticks_qs() in 6.1,
 * rcu_watching_snap_recheck() in mainline) does resched_cpu() on a
 * nohz_full CPU that holds it up for three jiffies_to_sched_qs, and
 * resched_cpu() plus irq_work_queue_on() on any CPU once it is halfway to
 * a stall warning: IPIs. An expedited one (horizon_expedited) IPIs every
 * CPU that is not idle. start_poll_synchronize_rcu() wants irqs on,
 * hence a work item rather than the timer itself.
 */
/*
 * Start a grace period unless the module started one (for any path but
 * a privileged GET_HORIZON) less than @idle_ns before @now: the one rate
 * limit on what the page and unprivileged callers, however many, make
 * RCU do. Of concurrent callers one wins. True, with the snapshot in
 * @cookie, if this call started it.
 */
static bool perfclock_gp_start(u64 now, u64 idle_ns, unsigned long *cookie)
{
	s64 last = atomic64_read(&perfclock.gp_started_ns);

	/* Signed: a racing caller's @now may be a little below @last. */
	if (idle_ns && (s64)(now - (u64)last) < (s64)idle_ns)
		return false;
	if (atomic64_cmpxchg(&perfclock.gp_started_ns, last, now) != last)
		return false;
	atomic64_inc(&perfclock.gp_requested);
	*cookie = start_poll_synchronize_rcu();
	return true;
}

/*
 * The rate limit on the grace periods the module starts: the module
 * parameter for a privileged caller (a mapping made with CAP_PERFMON
 * exists), never under PERFCLOCK_GP_IDLE_MS_UNPRIV for anyone else.
 */
static u64 perfclock_gp_idle_ns(bool privileged)
{
	u64 ms = READ_ONCE(horizon_gp_idle_ms);

	if (!privileged)
		ms = max_t(u64, ms, PERFCLOCK_GP_IDLE_MS_UNPRIV);
	return ms * NSEC_PER_MSEC;
}

/* Returns true if a sample was proven: a grace period has ended. */
static bool perfclock_horizon_update(void)
{
	struct perfclock_horizon_sample s, proven;
	bool privileged = atomic_read(&perfclock.priv_maps) > 0;
	u64 now = ktime_get_ns(), idle_ns;
	u32 gen, mask = PERFCLOCK_HORIZON_ALL;
	unsigned int i, n;
	bool found = false;

	/*
	 * Before the read: a new generation during it makes it stale. No
	 * perf_clock() while sched_clock is being reset under us.
	 */
	if (perfclock_horizon_begin(&mask, &gen))
		return false;

	/* Samples of an older generation prove nothing. */
	for (i = n = 0; i < perfclock.npending; i++)
		if (perfclock.pending[i].generation == gen)
			perfclock.pending[n++] = perfclock.pending[i];
	perfclock.npending = n;

	perfclock_horizon_read(&s, mask, gen);
	idle_ns = perfclock_gp_idle_ns(privileged);
	if (privileged && READ_ONCE(horizon_expedited)) {
		s.cookie = start_poll_synchronize_rcu_expedited();
		atomic64_inc(&perfclock.gp_requested);
	} else if ((!idle_ns || now - perfclock.gp_progress_ns >= idle_ns) &&
		   perfclock_gp_start(now, idle_ns, &s.cookie)) {
		perfclock.gp_progress_ns = now;
	} else {
		s.cookie = get_state_synchronize_rcu();
	}
	/*
	 * Same snapshot: the same grace period proves the newer sample.
	 * No slot left: a newer snapshot proves it too, only later.
	 */
	n = perfclock.npending;
	if (n && (perfclock.pending[n - 1].cookie == s.cookie ||
		  n == PERFCLOCK_HORIZON_PENDING))
		perfclock.pending[n - 1] = s;
	else
		perfclock.pending[perfclock.npending++] = s;

	/* Snapshots are ordered: stop at the first grace period still running. */
	while (perfclock.npending &&
	       poll_state_synchronize_rcu(perfclock.pending[0].cookie)) {
		proven = perfclock.pending[0];
		found = true;
		perfclock.npending--;
		memmove(&perfclock.pending[0], &perfclock.pending[1],
			perfclock.npending * sizeof(perfclock.pending[0]));
	}
	if (found) {
		perfclock.gp_progress_ns = now;
		perfclock_horizon_proven(&proven);
	}
	return found;
}

static void perfclock_horizon_work_fn(struct work_struct *work)
{
	/*
	 * A grace period ended: an unprivileged GET_HORIZON waiting on one
	 * may be done (perfclock_horizon_wait() polls by itself too). Not
	 * every run: a wakeup per period and waiter costs an IPI each when
	 * the waiter sleeps on another CPU.
	 */
	if (perfclock_horizon_update())
		wake_up_all(&perfclock.gp_wq);
}

#ifdef CONFIG_X86_TSC
/* A bracket of local_clock() between two TSC reads, on this CPU. */
struct perfclock_bracket {
	u64 lo;		/* the model's offset is at least this */
	u64 hi;		/* and at most this */
};

static void perfclock_tsc_bracket(const struct perfclock_tsc_model *m,
				  struct perfclock_bracket *b)
{
	u64 t1, t2, now;

	t1 = rdtsc_ordered();
	now = local_clock();
	t2 = rdtsc_ordered();

	b->lo = now - mul_u64_u32_shr(t2, m->mult, m->shift);
	b->hi = now - mul_u64_u32_shr(t1, m->mult, m->shift);
}

/* Intersection of @samples brackets; empty when lo > hi. */
static void perfclock_tsc_brackets(const struct perfclock_tsc_model *m,
				   struct perfclock_bracket *b, int samples)
{
	struct perfclock_bracket s;
	unsigned long flags;
	int i;

	b->lo = 0;
	b->hi = U64_MAX;
	local_irq_save(flags);
	for (i = 0; i < samples; i++) {
		perfclock_tsc_bracket(m, &s);
		b->lo = max(b->lo, s.lo);
		b->hi = min(b->hi, s.hi);
	}
	local_irq_restore(flags);
}

/*
 * Does this bracket contradict the model? Only a necessary condition: the
 * true offset is somewhere in [lo, hi], so the page is certainly ahead
 * when the offset is above hi, and certainly more than the tolerance
 * behind when it is that much below lo. A wide bracket proves nothing
 * either way; the promise rests on the derivation (perfclock_tsc_validate())
 * and on the kernel keeping its conversion, which this only watches.
 */
static bool perfclock_tsc_bracket_ok(const struct perfclock_tsc_model *m,
				     const struct perfclock_bracket *b)
{
	return m->offset <= b->hi &&
	       m->offset + PERFCLOCK_TSC_TOLERANCE_NS >= b->lo;
}

/*
 * Is sched_clock() the native TSC one? perf offers cap_user_time_zero only
 * when using_native_sched_clock() (arch/x86/events/core.c), which is not
 * exported, nor is the pv_sched_clock static call it tests. Only guest
 * code for a hypervisor calls paravirt_set_sched_clock(): kvm-clock
 * (arch/x86/kernel/kvmclock.c), Xen, Hyper-V and VMware. So the best a
 * module can do is refuse on every detected hypervisor: x86_hyper_type is
 * what init_hypervisor_platform() found, X86_HYPER_NATIVE on bare metal
 * and wherever no known hypervisor signature is seen (QEMU's TCG). That
 * also refuses a KVM guest booted with no-kvmclock, whose sched_clock is
 * native: a lost fast path, never a wrong one.
 */
static bool perfclock_native_sched_clock(void)
{
#ifdef CONFIG_HYPERVISOR_GUEST
	return x86_hyper_type == X86_HYPER_NATIVE;
#else
	return true;
#endif
}

static const char *perfclock_sched_clock_note(void)
{
	return perfclock_native_sched_clock() ? "" :
		" (hypervisor detected: sched_clock may be paravirtual)";
}

/* The scale, as the kernel computes it for sched_clock (set_cyc2ns_scale()). */
static bool perfclock_tsc_scale(struct perfclock_tsc_model *m)
{
	if (!boot_cpu_has(X86_FEATURE_TSC) || check_tsc_unstable() || !tsc_khz ||
	    !perfclock_native_sched_clock())
		return false;

	m->khz = tsc_khz;
	clocks_calc_mult_shift(&m->mult, &m->shift, m->khz, NSEC_PER_MSEC, 0);
	if (m->shift == 32) {
		m->shift = 31;
		m->mult >>= 1;
	}
	return true;
}

/* The brackets of every online CPU, folded: lowest lo, highest hi. */
struct perfclock_tsc_derive {
	const struct perfclock_tsc_model *model;
	struct perfclock_bracket all;
	bool empty;	/* some CPU's own brackets did not intersect */
};

/* One CPU at a time (smp_call_function_single() waits): no lock needed. */
static void perfclock_tsc_derive_cpu(void *arg)
{
	struct perfclock_tsc_derive *d = arg;
	struct perfclock_bracket b;

	perfclock_tsc_brackets(d->model, &b, PERFCLOCK_DERIVE_SAMPLES);
	if (b.lo > b.hi)
		d->empty = true;
	d->all.lo = min(d->all.lo, b.lo);
	d->all.hi = max(d->all.hi, b.hi);
}

/*
 * Derive the model and prove it on every online CPU. The scale is the
 * kernel's own; the offset is the lowest lower end of every CPU's
 * brackets, so the page reads local_clock() or less on every CPU, and the
 * highest upper end must be within the tolerance of it, so the page lags
 * by at most that on every CPU. Returns false when local_clock() is not
 * such a TSC conversion: unstable sched_clock, a paravirt sched_clock, a
 * TSC the kernel gave up on, or CPUs whose TSCs disagree.
 */
static bool perfclock_tsc_validate(struct perfclock_tsc_model *m)
{
	struct perfclock_tsc_derive d = {
		.model = m, .all = { .lo = U64_MAX, .hi = 0 },
	};
	int cpu;

	if (!perfclock_tsc_scale(m))
		return false;

	/*
	 * No cpus_read_lock(): this runs under mmap_lock from
	 * perfclock_miscdev_mmap(), and cpu_hotplug_lock nests outside
	 * mmap_lock (the CPU-online path takes kernel/events/core.c's
	 * pmus_lock and cpuctx_mutex, under which perf_ioctl() copies to
	 * user space), so taking it here could deadlock. Hotplug is still
	 * covered: kernel/smp.c:generic_exec_single() refuses a CPU that is
	 * not online (-ENXIO: it reads no clock while off, and
	 * perfclock_cpu_online() checks it when it is back), and a CPU that
	 * comes online during this loop and is missed bumps online_seq,
	 * which makes perfclock_revalidate() refuse this result.
	 */
	for_each_online_cpu(cpu)
		smp_call_function_single(cpu, perfclock_tsc_derive_cpu, &d, 1);

	if (d.empty || d.all.lo > d.all.hi ||
	    d.all.hi - d.all.lo > PERFCLOCK_TSC_TOLERANCE_NS)
		return false;
	m->offset = d.all.lo;
	return true;
}

/*
 * Cheap check on the current CPU, from the timer and the hotplug
 * callback: the TSC is still trusted by the kernel, its rate unchanged,
 * and a few brackets do not contradict the model.
 */
static bool perfclock_tsc_still_valid(void)
{
	const struct perfclock_tsc_model *m = &perfclock.model;
	struct perfclock_bracket b;

	lockdep_assert_held(&perfclock.lock);

	if (check_tsc_unstable() || READ_ONCE(tsc_khz) != m->khz)
		return false;
	perfclock_tsc_brackets(m, &b, PERFCLOCK_CHECK_SAMPLES);
	return perfclock_tsc_bracket_ok(m, &b);
}
#else /* !CONFIG_X86_TSC */
/* No page fast path off x86 yet: readers use the ioctl. */
static bool perfclock_tsc_validate(struct perfclock_tsc_model *m)
{
	return false;
}

static bool perfclock_tsc_still_valid(void)
{
	return false;
}

static const char *perfclock_sched_clock_note(void)
{
	return "";
}
#endif /* CONFIG_X86_TSC */

/*
 * Is local_clock() one clock for all CPUs? Without
 * CONFIG_HAVE_UNSTABLE_SCHED_CLOCK it is sched_clock() itself. Otherwise
 * the kernel's own answer, sched_clock_stable(), is not exported, so it is
 * claimed only when proven: the TSC conversion matches local_clock() on
 * every CPU with one offset (what perf's cap_user_time_zero also requires)
 * and the load-time IPI check saw no CPU step back behind another.
 */
static bool perfclock_is_stable(void)
{
	lockdep_assert_held(&perfclock.lock);

	if (!IS_ENABLED(CONFIG_HAVE_UNSTABLE_SCHED_CLOCK))
		return true;
	return perfclock.tsc_valid && !perfclock.measured_skew_ns;
}

/* Called with perfclock.lock held when the fast path stops holding. */
static void perfclock_invalidate(void)
{
	lockdep_assert_held(&perfclock.lock);

	perfclock.tsc_valid = false;
	perfclock.stable = perfclock_is_stable();
	perfclock_publish();
	/* Try again from process context, where every CPU can be checked. */
	queue_work(system_dfl_wq, &perfclock.revalidate_work);
}

/* Full revalidation, in process context. */
static void perfclock_revalidate(void)
{
	struct perfclock_tsc_model model = {};
	unsigned long flags;
	unsigned int online_seq;
	bool valid;

	lockdep_assert_held(&perfclock.mutex);

	/*
	 * A CPU set in cpu_online_mask after the walk in
	 * perfclock_tsc_validate() read it has not checked this model, and
	 * its perfclock_cpu_online() may have checked the old one (or
	 * nothing, the TSC being invalid then). It bumps online_seq under
	 * the lock after it is in the mask (kernel/cpu.c: CPUHP_AP_ONLINE_DYN
	 * runs after start_secondary() set it online), so a changed
	 * online_seq at publication means "try again", and an unchanged one
	 * means every CPU online now was in the walk or checked by its
	 * callback against this model. The lock orders this read before
	 * the walk's reads of the mask.
	 */
	raw_spin_lock_irqsave(&perfclock.lock, flags);
	online_seq = perfclock.online_seq;
	raw_spin_unlock_irqrestore(&perfclock.lock, flags);

	valid = perfclock_tsc_validate(&model);
	perfclock.validated_at = jiffies;
	WRITE_ONCE(perfclock.revalidations, perfclock.revalidations + 1);

	raw_spin_lock_irqsave(&perfclock.lock, flags);
	perfclock.model = model;
	perfclock.tsc_valid = valid;
	perfclock.stable = perfclock_is_stable();
	if (valid && perfclock.online_seq != online_seq)
		perfclock_invalidate();	/* publishes, and queues a retry */
	else
		perfclock_publish();
	raw_spin_unlock_irqrestore(&perfclock.lock, flags);
}

static void perfclock_revalidate_work(struct work_struct *work)
{
	mutex_lock(&perfclock.mutex);
	perfclock_revalidate();
	mutex_unlock(&perfclock.mutex);
}

/*
 * Does anyone still want the page kept up to date? Only a mapping of the
 * page: its reader cannot tell the module when it reads. A file that is
 * only open wants nothing: GET_TIME reads the clock itself, and
 * GET_HORIZON waits for a grace period by itself
 * (perfclock_horizon_wait()). An earlier version let an unprivileged
 * GET_HORIZON arm the timer to drive its grace periods: a caller every
 * 100 ms then cost 1252 timer interrupts and 155 function-call IPIs a
 * second where a privileged one cost 103 and 11 (docs/horizon-cost.md).
 */
static bool perfclock_keep_armed(void)
{
	lockdep_assert_held(&perfclock.lock);

	return atomic_read(&perfclock.maps);
}

static enum hrtimer_restart perfclock_timer_fn(struct hrtimer *timer)
{
	ktime_t now = ktime_get();
	s64 late = ktime_to_ns(ktime_sub(now, hrtimer_get_expires(timer)));
	struct perfclock_clock_sets cs;
	bool stop;

	perfclock_clock_sets_read(&cs);
	raw_spin_lock(&perfclock.lock);
	perfclock_note_lateness(now, late);
	/* A clock switch or set is seen here within one period. */
	perfclock_epoch_check(&cs);
	if (perfclock.tsc_valid && !perfclock_tsc_still_valid())
		perfclock_invalidate();
	else
		perfclock_publish();
	/*
	 * Under lock, so that perfclock_arm() either sees timer_on still
	 * true (and this run reads its reason to stay) or restarts the
	 * timer itself: hrtimer_start() on a timer whose callback is
	 * running enqueues it, and __run_hrtimer() leaves an enqueued
	 * timer be whatever the callback returns.
	 */
	stop = !perfclock_keep_armed();
	if (stop)
		perfclock.timer_on = false;
	raw_spin_unlock(&perfclock.lock);

	/*
	 * On this CPU (a bound workqueue): the timer woke it anyway. Other
	 * CPUs are not untouched: the horizon's grace periods (see
	 * perfclock_horizon_work_fn()) wake the RCU kthread and can IPI
	 * CPUs that hold one up.
	 */
	queue_work(system_percpu_wq, &perfclock.horizon_work);

	if (stop)
		return HRTIMER_NORESTART;
	hrtimer_forward_now(timer, perfclock.period);
	return HRTIMER_RESTART;
}

/* Runs on the CPU coming online: check the model there before trusting it. */
static int perfclock_cpu_online(unsigned int cpu)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&perfclock.lock, flags);
	perfclock.online_seq++;
	if (perfclock.tsc_valid && !perfclock_tsc_still_valid())
		perfclock_invalidate();
	raw_spin_unlock_irqrestore(&perfclock.lock, flags);
	return 0;
}

struct perfclock_skew_probe {
	unsigned int peer;
	u64 worst;
};

static void perfclock_read_clock(void *arg)
{
	*(u64 *)arg = local_clock();
}

/*
 * From one CPU, ping @peer: read the clock here, have the peer read it
 * in an IPI, read it here again. The peer's read happens after the first
 * and before the second, so either going backwards is a cross-CPU step.
 */
static int perfclock_skew_probe_cpu(void *arg)
{
	struct perfclock_skew_probe *probe = arg;
	u64 before, remote, after;
	int i;

	for (i = 0; i < PERFCLOCK_SKEW_ROUNDS; i++) {
		preempt_disable();
		before = local_clock();
		if (smp_call_function_single(probe->peer, perfclock_read_clock,
					     &remote, 1)) {
			preempt_enable();
			return 0;	/* peer went offline: nothing to learn */
		}
		after = local_clock();
		preempt_enable();

		if (before > remote)
			probe->worst = max(probe->worst, before - remote);
		if (remote > after)
			probe->worst = max(probe->worst, remote - after);
	}
	return 0;
}

/*
 * The largest backward step seen between the first online CPU and every
 * other, both ways, by IPI ping-pong: 2 * (n - 1) probes, not every pair,
 * so that loading stays quick on machines with many CPUs. Once, at load:
 * a CPU that comes online later is not probed (the hotplug callback
 * checks it against the TSC model, which is what the stable regime rests
 * on; in the unstable regime this figure is only the skew estimate's
 * floor).
 */
static u64 perfclock_measure_skew(void)
{
	struct perfclock_skew_probe probe;
	unsigned int cpu, first;
	u64 worst = 0;

	cpus_read_lock();
	first = cpumask_first(cpu_online_mask);
	for_each_online_cpu(cpu) {
		if (cpu == first)
			continue;
		probe.peer = cpu;
		probe.worst = 0;
		smp_call_on_cpu(first, perfclock_skew_probe_cpu, &probe, false);
		worst = max(worst, probe.worst);

		probe.peer = first;
		probe.worst = 0;
		smp_call_on_cpu(cpu, perfclock_skew_probe_cpu, &probe, false);
		worst = max(worst, probe.worst);
	}
	cpus_read_unlock();
	return worst;
}

/*
 * CAP_PERFMON, or CAP_SYS_ADMIN on its own (what perfmon_capable() in
 * include/linux/capability.h accepts in 6.1 and 6.12, and perf's
 * kernel/events/core.c gates its costly paths on), without an audit
 * record: a caller without it is not refused here, only served the
 * cheaper path. Where it refuses (an expedited GET_HORIZON),
 * perfmon_capable() itself is asked, audit and all.
 */
static bool perfclock_perfmon_noaudit(void)
{
	return ns_capable_noaudit(&init_user_ns, CAP_PERFMON) ||
	       ns_capable_noaudit(&init_user_ns, CAP_SYS_ADMIN);
}

/*
 * The timer is about to start: nothing kept the page up to date while
 * it was off, so bring it up to date first. The full revalidation
 * brackets the clock on every online CPU, nohz_full and isolated ones
 * included, through an IPI each; with mode=0444 any user can arm in a
 * loop (map and unmap), so it runs at most once per
 * PERFCLOCK_REVALIDATE_INTERVAL for a caller with CAP_PERFMON and once
 * per PERFCLOCK_REVALIDATE_INTERVAL_UNPRIV for anyone else. Within that,
 * the checks of the timer's period (on this CPU, now) stand in for it,
 * as they do while the timer runs.
 */
static void perfclock_arm_check(void)
{
	unsigned long flags, at = perfclock.validated_at;

	lockdep_assert_held(&perfclock.mutex);

	if (time_after_eq(jiffies, at + PERFCLOCK_REVALIDATE_INTERVAL_UNPRIV) ||
	    (time_after_eq(jiffies, at + PERFCLOCK_REVALIDATE_INTERVAL) &&
	     perfclock_perfmon_noaudit())) {
		perfclock_revalidate();
		return;
	}
	raw_spin_lock_irqsave(&perfclock.lock, flags);
	if (perfclock.tsc_valid && !perfclock_tsc_still_valid())
		perfclock_invalidate();
	else
		perfclock_publish();
	raw_spin_unlock_irqrestore(&perfclock.lock, flags);
}

/*
 * Start the update timer unless it runs (perfclock_keep_armed() says
 * who wants it), checking the page first. Process context.
 */
static void perfclock_arm(void)
{
	unsigned long flags;
	bool on;

	mutex_lock(&perfclock.mutex);
	raw_spin_lock_irqsave(&perfclock.lock, flags);
	on = perfclock.timer_on;
	raw_spin_unlock_irqrestore(&perfclock.lock, flags);
	if (!on)
		perfclock_arm_check();

	raw_spin_lock_irqsave(&perfclock.lock, flags);
	if (!perfclock.timer_on) {
		perfclock.timer_on = true;
		hrtimer_start(&perfclock.timer, perfclock.period,
			      HRTIMER_MODE_REL_HARD);
	}
	raw_spin_unlock_irqrestore(&perfclock.lock, flags);
	mutex_unlock(&perfclock.mutex);
}

/* Opening arms nothing: see perfclock_keep_armed(). */
static int perfclock_miscdev_open(struct inode *inode, struct file *file)
{
	mutex_lock(&perfclock.mutex);
	perfclock.users++;
	mutex_unlock(&perfclock.mutex);
	return 0;
}

/*
 * Called on the last close of a file, after its last mapping is gone:
 * the timer stops at its next period anyway; this makes it sure before
 * the module may be unloaded.
 */
static int perfclock_miscdev_release(struct inode *inode, struct file *file)
{
	unsigned long flags;

	mutex_lock(&perfclock.mutex);
	if (!--perfclock.users) {
		hrtimer_cancel(&perfclock.timer);
		raw_spin_lock_irqsave(&perfclock.lock, flags);
		perfclock.timer_on = false;
		raw_spin_unlock_irqrestore(&perfclock.lock, flags);
		/* The page keeps the last proven horizon: it stays true. */
		cancel_work_sync(&perfclock.horizon_work);
		perfclock.npending = 0;
		/*
		 * gp_progress_ns and gp_started_ns stay: the rate limit on
		 * the grace periods the module starts holds across opens.
		 */
	}
	mutex_unlock(&perfclock.mutex);
	return 0;
}

static long perfclock_ioctl_get_time(struct perfclock_time __user *ut)
{
	u32 cpu, flags = 0, seq0, seq1;
	u64 ns;

	/*
	 * A reset under way around the read (reset_seq odd before it, or
	 * moved by after it) may have been read on either side: said. A
	 * read the reset affected ran after the reset's text_poke_sync()
	 * IPI on this CPU, so after the entry's increment (the proof before
	 * perfclock_reset_entry()): the load after the read sees it.
	 */
	seq0 = atomic_read(&perfclock.reset_seq);
	preempt_disable();
	cpu = smp_processor_id();
	ns = local_clock();
	preempt_enable();
	seq1 = atomic_read(&perfclock.reset_seq);
	if ((seq0 & 1) || seq1 != seq0)
		flags |= PERFCLOCK_TIME_RESET_PENDING;
	/* Lockless: a flag that flips concurrently is as good as a read before it. */
	if (READ_ONCE(perfclock.stable))
		flags |= PERFCLOCK_TIME_STABLE;

	/*
	 * Not copy_to_user(), on purpose: this ioctl's cost is what readers
	 * without the page pay per round. x86 does not define
	 * INLINE_COPY_TO_USER, so copy_to_user() is a call to lib/usercopy.c:
	 * _copy_to_user() and from there to copy_user_generic()'s string
	 * copy (6.1: copy_user_enhanced_fast_string(), rep movsb; mainline:
	 * rep movsb inline, or rep_movs_alternative()), with its own
	 * user-access window, for 16 bytes. Three stores in one window are
	 * the cheapest copy-out. Every field is written (a new one must be
	 * too, or zeroed).
	 */
	if (!user_write_access_begin(ut, sizeof(*ut)))
		return -EFAULT;
	unsafe_put_user(ns, &ut->ns, efault);
	unsafe_put_user(cpu, &ut->cpu, efault);
	unsafe_put_user(flags, &ut->flags, efault);
	user_write_access_end();
	return 0;

efault:
	user_write_access_end();
	return -EFAULT;
}

/*
 * Wait until a grace period has elapsed since now (docs/horizon.md, "The
 * proof", point 3). A caller with CAP_PERFMON (perfclock_perfmon_noaudit()) gets
 * one of its own, started now: fresh. Anyone else waits for the grace
 * periods the system runs anyway, and when none has ended for
 * perfclock_gp_idle_ns(false), for one started under the module's one
 * rate limit (perfclock_gp_start()), whoever asks and how often. The
 * horizon read before this is as true either way; only the wait, hence
 * its age at return, differs: up to that time plus a poll interval.
 * The waiter arms no timer: it polls its snapshot every jiffy (a timer
 * of its own, on its own CPU, while it waits), and the page's work wakes
 * it early when it proves a sample. Without a grace period of its own it
 * needs no smp_mb() either: get_state_synchronize_rcu() starts with one,
 * and poll_state_synchronize_rcu() gives the ordering of
 * synchronize_rcu() (its comment in kernel/rcu/tree.c).
 */
static int perfclock_horizon_wait(bool expedited)
{
	u64 t0 = ktime_get_ns(), now, idle_ns;
	unsigned long cookie, started;
	long ret;

	if (expedited) {
		atomic64_inc(&perfclock.gp_requested);
		synchronize_rcu_expedited();
		return 0;
	}
	if (perfclock_perfmon_noaudit()) {
		atomic64_inc(&perfclock.gp_requested);
		synchronize_rcu();
		return 0;
	}
	cookie = get_state_synchronize_rcu();
	for (;;) {
		ret = wait_event_interruptible_timeout(perfclock.gp_wq,
						       poll_state_synchronize_rcu(cookie),
						       1);
		if (ret)
			return ret < 0 ? ret : 0;
		now = ktime_get_ns();
		idle_ns = perfclock_gp_idle_ns(false);
		/* One started after the snapshot proves it too. */
		if (now - t0 >= idle_ns)
			perfclock_gp_start(now, idle_ns, &started);
	}
}

static long perfclock_ioctl_get_horizon(struct perfclock_horizon __user *uh)
{
	struct perfclock_horizon_sample s;
	struct perfclock_horizon h;
	u32 mask;
	u64 t0;
	int ret;

	if (copy_from_user(&h, uh, sizeof(h)))
		return -EFAULT;
	/* generation is out-only: ignored on input. */
	if ((h.flags & ~PERFCLOCK_HORIZON_EXPEDITED) || h.__reserved0 ||
	    h.reserved[0])
		return -EINVAL;
	if (h.clockid == PERFCLOCK_HORIZON_PERF_CLOCK)
		mask = PERFCLOCK_HORIZON_PERF_BIT;
	else if (h.clockid >= 0 && h.clockid < PERFCLOCK_HORIZON_CLOCKIDS &&
		 (BIT(h.clockid) & PERFCLOCK_HORIZON_CLOCKID_MASK))
		mask = BIT(h.clockid);
	else
		return -EINVAL;
	/* An expedited grace period IPIs every busy CPU: not for everyone. */
	if ((h.flags & PERFCLOCK_HORIZON_EXPEDITED) && !perfmon_capable())
		return -EPERM;

	t0 = ktime_get_ns();
	do {
		u32 gen, m;
		int err;

		/*
		 * No perf_clock() horizon while sched_clock is being reset
		 * (__sched_clock_work() runs for milliseconds: sleep, irqs
		 * on), none at all once refused.
		 */
		for (;;) {
			m = mask;	/* one clock: left as it is, or an error */
			err = perfclock_horizon_begin(&m, &gen);
			if (err != -EAGAIN)
				break;
			/* Nothing done yet: a handled signal restarts the call. */
			if (msleep_interruptible(jiffies_to_msecs(1)))
				return -ERESTARTSYS;
		}
		if (err)
			return err;

		perfclock_horizon_read(&s, mask, gen);
		/*
		 * No smp_mb() here: synchronize_rcu*() orders the caller's
		 * earlier accesses before the grace period itself (the
		 * memory-ordering guarantee in its comment, kernel/rcu/
		 * tree.c:synchronize_rcu()), and a barrier does not order
		 * the clock reads, which are not memory accesses:
		 * perfclock_perf_clock_horizon() fences its TSC reads.
		 */
		ret = perfclock_horizon_wait(h.flags &
					     PERFCLOCK_HORIZON_EXPEDITED);
		/* Interrupted before anything was handed out: restartable. */
		if (ret)
			return ret;
		/* A new generation meanwhile: read again (it is rare). */
	} while (!perfclock_horizon_proven(&s));
	h.wait_ns = ktime_get_ns() - t0;
	h.generation = s.generation;
	h.ns = mask == PERFCLOCK_HORIZON_PERF_BIT ? s.perf_ns :
						     s.clockid_ns[h.clockid];

	return copy_to_user(uh, &h, sizeof(h)) ? -EFAULT : 0;
}

/*
 * Out of line: its 72-byte struct on the stack would otherwise give
 * perfclock_miscdev_ioctl() a frame and a stack canary that every
 * command, GET_TIME included, pays for.
 */
static noinline_for_stack long perfclock_ioctl_get_info(void __user *uarg)
{
	struct perfclock_info info;
	struct perfclock_clock_sets cs;
	unsigned long flags;
	bool privileged = perfclock_perfmon_noaudit();
	bool check;

	memset(&info, 0, sizeof(info));
	info.abi_version = PERFCLOCK_ABI_VERSION;
	info.page_version = PERFCLOCK_PAGE_VERSION;
	info.page_size = PAGE_SIZE;
	info.update_period_ns = ktime_to_ns(perfclock.period);
	info.flags = PERFCLOCK_INFO_HORIZON | PERFCLOCK_INFO_HORIZON_GENERATION |
		     PERFCLOCK_INFO_COUNTERS;
	info.revalidations = READ_ONCE(perfclock.revalidations);
	info.gp_requested = atomic64_read(&perfclock.gp_requested);
#ifdef CONFIG_X86_TSC
	if (!perfclock_native_sched_clock())
		info.flags |= PERFCLOCK_INFO_SCHED_CLOCK_PARAVIRT;
#endif

	/*
	 * The reset probe's state as of now (a disarm is seen here). The
	 * check's clocksource read is outside the lock
	 * (perfclock_clock_sets_read()), but still a clocksource read, and
	 * the rest of the check runs under the lock with irqs off: callers
	 * without CAP_PERFMON share one check per jiffy and see the state as
	 * of that check. A few may race past the jiffy test at once; each
	 * of them then checks, at most one per CPU.
	 */
	check = privileged || time_after(jiffies, READ_ONCE(perfclock.info_check_at));
	if (check)
		perfclock_clock_sets_read(&cs);
	raw_spin_lock_irqsave(&perfclock.lock, flags);
	if (check) {
		WRITE_ONCE(perfclock.info_check_at, jiffies);
		perfclock_epoch_check(&cs);
	}
	if (perfclock.reset_probe)
		info.flags |= PERFCLOCK_INFO_SCHED_CLOCK_RESET_PROBE |
			      PERFCLOCK_INFO_TIME_RESET_FLAG;
	if (perfclock.perf_refused)
		info.flags |= PERFCLOCK_INFO_PERF_HORIZON_REFUSED;
	if (perfclock.stable)
		info.flags |= PERFCLOCK_INFO_SCHED_CLOCK_STABLE;
	if (perfclock.tsc_valid)
		info.flags |= PERFCLOCK_INFO_PAGE_TSC_VALID;
	if (perfclock.timer_on)
		info.flags |= PERFCLOCK_INFO_UPDATES_ARMED;
	info.skew_estimate_ns = perfclock_skew_estimate();
	info.measured_skew_ns = perfclock.measured_skew_ns;
	info.timer_lateness_ns = perfclock.timer_lateness_ns;
	raw_spin_unlock_irqrestore(&perfclock.lock, flags);

	return copy_to_user(uarg, &info, sizeof(info)) ? -EFAULT : 0;
}

static long perfclock_miscdev_ioctl(struct file *file, unsigned int cmd,
				    unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	/* The one command readers call per round: tested first. */
	if (cmd == PERFCLOCK_IOC_GET_TIME)
		return perfclock_ioctl_get_time(uarg);
	switch (cmd) {
	case PERFCLOCK_IOC_GET_INFO:
		return perfclock_ioctl_get_info(uarg);
	case PERFCLOCK_IOC_GET_HORIZON:
		return perfclock_ioctl_get_horizon(uarg);
	default:
		return -ENOTTY;
	}
}

/*
 * The page is inserted at mmap() time; this puts it back after
 * madvise(MADV_DONTNEED) zapped it, as ALSA does for its status page
 * (snd_pcm_mmap_status_fault()), instead of a SIGBUS on the next read.
 */
static vm_fault_t perfclock_vm_fault(struct vm_fault *vmf)
{
	if (vmf->pgoff)
		return VM_FAULT_SIGBUS;
	vmf->page = virt_to_page(perfclock.page);
	get_page(vmf->page);
	return 0;
}

/*
 * Every VMA of the page counts in perfclock.maps while it exists: the
 * one mmap() made (counted there), and the copies fork() and mremap()
 * make, which ->open() counts; ->close() runs for each when it goes
 * (munmap(), exit, the old VMA of an mremap()).
 */
static void perfclock_vm_open(struct vm_area_struct *vma)
{
	atomic_inc(&perfclock.maps);
	if (vma->vm_private_data)
		atomic_inc(&perfclock.priv_maps);
}

static void perfclock_vm_close(struct vm_area_struct *vma)
{
	if (vma->vm_private_data)
		atomic_dec(&perfclock.priv_maps);
	atomic_dec(&perfclock.maps);
}

static const struct vm_operations_struct perfclock_vm_ops = {
	.open = perfclock_vm_open,
	.close = perfclock_vm_close,
	.fault = perfclock_vm_fault,
};

/*
 * One page at offset 0, read-only for the life of the mapping. The
 * mapping holds the file, so the module stays pinned until munmap().
 * A mapping arms the update timer: the page is checked (perfclock_arm())
 * before mmap() returns it, and kept up to date until the last mapping
 * goes. Counted only once nothing can fail: a failed ->mmap() gets no
 * ->close().
 */
static int perfclock_miscdev_mmap(struct file *file,
				  struct vm_area_struct *vma)
{
	int ret;

	if (vma->vm_pgoff || vma->vm_end - vma->vm_start != PAGE_SIZE)
		return -EINVAL;
	if (vma->vm_flags & (VM_WRITE | VM_EXEC))
		return -EPERM;

	vm_flags_clear(vma, VM_MAYWRITE | VM_MAYEXEC);
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_ops = &perfclock_vm_ops;
	ret = vm_insert_page(vma, vma->vm_start, virt_to_page(perfclock.page));
	if (ret)
		return ret;
	/*
	 * Whether the mapping may run the costlier grace-period settings
	 * (perfclock_gp_idle_ns()): decided by who made it, and kept by the
	 * copies fork() and mremap() make of it (they copy the VMA).
	 */
	if (perfclock_perfmon_noaudit()) {
		vma->vm_private_data = (void *)1UL;
		atomic_inc(&perfclock.priv_maps);
	}
	atomic_inc(&perfclock.maps);
	perfclock_arm();
	return 0;
}

/* No .read/.write: the VFS answers both with -EINVAL. */
static const struct file_operations perfclock_fops = {
	.owner		= THIS_MODULE,
	.open		= perfclock_miscdev_open,
	.release	= perfclock_miscdev_release,
	.unlocked_ioctl	= perfclock_miscdev_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.mmap		= perfclock_miscdev_mmap,
};

static struct miscdevice perfclock_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "perfclock",
	.fops	= &perfclock_fops,
};

static int __init perfclock_init(void)
{
	struct perfclock_clock_sets cs;
	bool stable, tsc_valid;
	unsigned long flags;
	u64 skew_estimate;
	int ret;

	/* 0 would not mean 0000: devtmpfs makes a node without a mode 0600. */
	if (!mode || (mode & ~0777)) {
		pr_notice("mode=%#o: permission bits, at least one, are expected\n",
			  mode);
		return -EINVAL;
	}
	if (update_period_us < 100 || update_period_us > USEC_PER_SEC) {
		pr_notice("update_period_us=%u: must be within 100..1000000\n",
			  update_period_us);
		return -EINVAL;
	}

	perfclock.page = (struct perfclock_page *)get_zeroed_page(GFP_KERNEL);
	if (!perfclock.page)
		return -ENOMEM;

	raw_spin_lock_init(&perfclock.lock);
	mutex_init(&perfclock.mutex);
	mutex_init(&perfclock.seen_lock);
	init_waitqueue_head(&perfclock.gp_wq);
	INIT_WORK(&perfclock.revalidate_work, perfclock_revalidate_work);
	INIT_WORK(&perfclock.horizon_work, perfclock_horizon_work_fn);
	/* Hard: on PREEMPT_RT too it runs as the int3 returns (the reset probe). */
	perfclock.reset_irq_work = IRQ_WORK_INIT_HARD(perfclock_reset_irq_work_fn);
	perfclock.period = ns_to_ktime((u64)update_period_us * NSEC_PER_USEC);
	perfclock.lateness_window = ktime_get();
	perfclock.generation = 1;
	perfclock_clock_sets_read(&cs);
	perfclock.offs_real = cs.real;
	perfclock.offs_tai = cs.tai;
	perfclock.set_seq = cs.seq;
#ifdef CONFIG_X86_TSC
	/*
	 * Already unstable at load: sched_clock has switched, or never was
	 * stable. A TSC marked unstable during boot (the SMP bring-up's
	 * sync check, the unstable regime) is seen by
	 * kernel/sched/clock.c:sched_clock_init_late() before it would set
	 * sched_clock stable, so there is no reset to come. A mark after
	 * boot queues __sched_clock_work() (clear_sched_clock_stable() ->
	 * __clear_sched_clock_stable()), which runs when a worker does:
	 * with the reset probe, registered below before that work can run
	 * unseen (unless it is running at that very moment), the module
	 * is told of it whenever it runs; without, a module loaded between
	 * the mark and the work takes sched_clock as already switched
	 * (docs/horizon.md, "Not covered").
	 */
	perfclock.sched_clock_unstable = check_tsc_unstable();
#endif
	/*
	 * Not pinned (HRTIMER_MODE_REL_HARD): an unpinned timer armed (by
	 * the first mapping) on an idle or nohz_full CPU may be put on a busy
	 * housekeeping CPU
	 * (kernel/time/hrtimer.c:get_target_base() ->
	 * kernel/sched/core.c:get_nohz_timer_target()), where its work item
	 * runs too; pinning would keep it on whichever CPU opened first.
	 */
	hrtimer_setup(&perfclock.timer, perfclock_timer_fn, CLOCK_MONOTONIC,
		      HRTIMER_MODE_REL_HARD);

	/*
	 * Hotplug first: a CPU that comes online after the validation
	 * below is checked by the callback, one that came before by it.
	 */
	ret = cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN, "misc/perfclock:online",
					perfclock_cpu_online, NULL);
	if (ret < 0)
		goto free_page;
	perfclock.hp_state = ret;

	perfclock.measured_skew_ns = perfclock_measure_skew();
	mutex_lock(&perfclock.mutex);
	perfclock_revalidate();
	mutex_unlock(&perfclock.mutex);

	/* Before the device: every horizon handed out is covered by it. */
	perfclock_reset_probe_register();

	perfclock_misc.mode = mode;
	ret = misc_register(&perfclock_misc);
	if (ret)
		goto unregister_reset_probe;

	raw_spin_lock_irqsave(&perfclock.lock, flags);
	stable = perfclock.stable;
	tsc_valid = perfclock.tsc_valid;
	skew_estimate = perfclock_skew_estimate();
	raw_spin_unlock_irqrestore(&perfclock.lock, flags);
	pr_info("sched_clock %s, page fast path %s%s, skew estimate %llu ns (measured %llu ns)\n",
		stable ? "stable" : "unstable", tsc_valid ? "on" : "off",
		perfclock_sched_clock_note(), skew_estimate,
		perfclock.measured_skew_ns);
	return 0;

unregister_reset_probe:
	perfclock_reset_probe_unregister();
	cpuhp_remove_state_nocalls(perfclock.hp_state);
free_page:
	cancel_work_sync(&perfclock.revalidate_work);
	free_page((unsigned long)perfclock.page);
	return ret;
}

static void __exit perfclock_exit(void)
{
	misc_deregister(&perfclock_misc);
	perfclock_reset_probe_unregister();
	cpuhp_remove_state_nocalls(perfclock.hp_state);
	/* No file is open (the module is pinned while one is): the timer is off. */
	hrtimer_cancel(&perfclock.timer);
	cancel_work_sync(&perfclock.horizon_work);
	cancel_work_sync(&perfclock.revalidate_work);
	free_page((unsigned long)perfclock.page);
}

module_init(perfclock_init);
module_exit(perfclock_exit);

MODULE_DESCRIPTION("perf_clock() for user space: /dev/perfclock ioctl and clock page");
MODULE_LICENSE("GPL");
MODULE_VERSION(PERFCLOCK_VERSION);
