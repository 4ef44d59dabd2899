/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * perfclock: user-space access to perf_clock(), the clock perf stamps its
 * records with (local_clock(), for events opened without use_clockid).
 *
 * /dev/perfclock offers two ways to read it:
 *
 *  - PERFCLOCK_IOC_GET_TIME: an exact read. The value is local_clock() read
 *    on the CPU reported in perfclock_time::cpu, with preemption disabled,
 *    during the ioctl. A perf record produced on the same CPU between two
 *    such reads carries a timestamp between the two values.
 *
 *  - One read-only page, mmap()ed at offset 0 with exactly one page of
 *    length, laid out as struct perfclock_page below. It always carries a
 *    coarse lower bound of the clock, and, when PERFCLOCK_PAGE_TSC_VALID is
 *    set, the parameters to compute the current local_clock() from the TSC
 *    without a system call (the same conversion perf publishes in
 *    perf_event_mmap_page::time_zero/time_mult/time_shift).
 *
 * Cross-CPU causality: local_clock() is only globally monotonic when the
 * kernel's sched_clock is stable. Otherwise a read on one CPU made after a
 * read on another CPU can come out smaller, by about skew_estimate_ns (see
 * struct perfclock_info and the README for how the estimate is derived).
 * That figure is an ESTIMATE: a CPU whose tick is held off lags by the
 * whole delay, which nothing bounds. Nothing in this ABI called a bound
 * can be exceeded; what can is called an estimate. The exact cross-CPU
 * answer is the flush horizon below.
 *
 * THE FLUSH HORIZON
 *
 * A tool that merges per-CPU perf rings needs, at the start of each round
 * of reading them, a time H such that every record stamped below H is
 * already in its ring. The module hands out such an H, exact, with no
 * margin: PERFCLOCK_IOC_GET_HORIZON (blocking, fresh) and the page's
 * horizon_* fields (no system call, about one grace period old).
 *
 * The guarantee. When H is handed out, every perf record written through
 * perf_output_begin()/perf_output_end() whose timestamp (in the clock
 * asked for) is below H has been committed: the kernel has published a
 * data_head that covers it. A reader that loads data_head of every ring
 * after receiving H (acquire), and drains each ring, meets no record
 * below H afterwards.
 *
 * Why: perf stamps and publishes a record inside one RCU read-side
 * critical section, and the module hands H out only after a grace
 * period that began after H was read. The proof with its kernel
 * citations, what it does not cover (PERF_RECORD_READ, AUX data,
 * samples the PMU stamps, the NTP slope of the
 * NTP-disciplined clocks, the window before a clock step is seen) and
 * what it rests on (a stable sched_clock is one clock; with a
 * paravirtual one, the host's promise): docs/horizon.md, "The proof".
 * The per-CPU horizon H_c, which needs no grace period:
 * docs/percpu-horizon.md.
 *
 * Generations. Each horizon carries a generation
 * (perfclock_horizon::generation, perfclock_page::horizon_generation,
 * PERFCLOCK_INFO_HORIZON_GENERATION): 1 at load, bumped whenever a
 * horizon already handed out may be above a record stamped later:
 * sched_clock turns unstable at run time and its clocks are reset (the
 * module's kprobe on __sched_clock_work()), or REALTIME or TAI is set
 * backwards. After a bump every held horizon is dropped: horizon values
 * restart from a newly proven sample and may be SMALLER than before, and
 * PERFCLOCK_PAGE_HORIZON_VALID may be clear until one is proven. The
 * page writes the generation in the same seq section as the horizon.
 * What a tool must do when the generation it reads differs from the last
 * one it used: flush (deliver) everything it holds, in the order it has,
 * and restart its limit from the new horizon (which may be below the
 * old). How each step is detected: docs/horizon.md, "Generations".
 *
 * WHO ARMS WHAT
 *
 * The device is 0444 unless a udev rule narrows it, so what an fd holder
 * can make the machine do is part of the contract:
 *  - open(), GET_TIME, GET_INFO: nothing periodic. GET_TIME reads the
 *    clock on the calling CPU; no timer, no IPI, no grace period.
 *    GET_INFO's check of the clocks (a clocksource read with irqs off)
 *    runs at most once a jiffy for all callers without CAP_PERFMON or
 *    CAP_SYS_ADMIN together; they get the state as of that check.
 *  - mmap() of the page arms the update timer (update_period_ns, a hard
 *    hrtimer), its work item each period, and the grace periods that
 *    work starts (at most one per module parameter horizon_gp_idle_ms
 *    when the system runs none), until the last mapping is gone (munmap,
 *    exit). Only while a mapping made with CAP_PERFMON or CAP_SYS_ADMIN
 *    exists do the costlier settings apply (horizon_expedited, and
 *    horizon_gp_idle_ms under 50, 0 included); for mappings by anyone
 *    else the module starts at most one grace period per
 *    max(horizon_gp_idle_ms, 50 ms), never an expedited one. A mapping
 *    made while the timer was off is checked first,
 *    before mmap() returns: the TSC conversion on the calling CPU, or on
 *    every online CPU (an IPI each) if the last such check is older than
 *    1 s for a caller with CAP_PERFMON or CAP_SYS_ADMIN, 60 s for anyone
 *    else.
 *  - GET_HORIZON with CAP_PERFMON or CAP_SYS_ADMIN waits for a grace
 *    period of its own (synchronize_rcu(); expedited with
 *    PERFCLOCK_HORIZON_EXPEDITED, which IPIs every busy CPU). Arms
 *    nothing.
 *  - GET_HORIZON without: waits (interruptibly) for the grace periods
 *    the system runs anyway, and when none has ended for
 *    max(horizon_gp_idle_ms, 50 ms), for one the module starts under the
 *    rate limit it keeps for the page: at most one per that time, for
 *    the page and every such caller together. Arms no timer (it polls
 *    its own snapshot every jiffy while it waits). Its horizon is as
 *    exact (read at the call, proven by a grace period after it); the
 *    wait is up to that time and a jiffy longer. EXPEDITED: EPERM.
 * PERFCLOCK_INFO_UPDATES_ARMED says whether the timer runs, and
 * perfclock_info::revalidations and ::gp_requested count the costly
 * steps (PERFCLOCK_INFO_COUNTERS).
 */
#ifndef _UAPI_LINUX_PERFCLOCK_IOCTL_H
#define _UAPI_LINUX_PERFCLOCK_IOCTL_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define PERFCLOCK_DEVICE_PATH	"/dev/perfclock"

/*
 * Bumped on any incompatible change to the ioctls or their structs.
 * 2: the magic moved from 0xB2 to 0xC4 (see below), and skew_bound_ns
 * became skew_estimate_ns. A version-1 module answers only under magic
 * 0xB2; libperfclock recognises one there and fails with EPROTO.
 */
#define PERFCLOCK_ABI_VERSION	2
/* Bumped on any incompatible change to struct perfclock_page. */
#define PERFCLOCK_PAGE_VERSION	1

/*
 * Magic 0xC4, commands 0x00-0x0F: free in mainline's
 * Documentation/userspace-api/ioctl/ioctl-number.rst, between 0xC0
 * (linux/usb/iowarrior.h) and 0xCA (uapi/misc/cxl.h). ABI version 1 used
 * 0xB2, powerpc's since 6.8 (papr-vpd and after), whose commands collide
 * with version 1's exactly: docs/module-abi.md.
 */
#define PERFCLOCK_IOC_MAGIC	0xC4

/* struct perfclock_time::flags */
/* sched_clock was known stable at the read: the value is causal across CPUs. */
#define PERFCLOCK_TIME_STABLE	0x00000001U
/*
 * A run-time sched_clock reset was under way at the read (between the
 * entry and the return of __sched_clock_work(), as the reset probe saw
 * them): the value may be of the clock before the reset or after it,
 * which can be lower, so it is no bound for a horizon. Set only by a
 * module that says PERFCLOCK_INFO_TIME_RESET_FLAG.
 */
#define PERFCLOCK_TIME_RESET_PENDING	0x00000002U

struct perfclock_time {
	__u64 ns;	/* local_clock() in nanoseconds */
	__u32 cpu;	/* CPU on which it was read */
	__u32 flags;	/* PERFCLOCK_TIME_* */
};

/* struct perfclock_info::flags */
/* sched_clock is stable: local_clock() is one clock for every CPU. */
#define PERFCLOCK_INFO_SCHED_CLOCK_STABLE	0x00000001U
/* The page currently offers the current time without a system call. */
#define PERFCLOCK_INFO_PAGE_TSC_VALID		0x00000002U
/* The module hands out flush horizons: PERFCLOCK_IOC_GET_HORIZON, page. */
#define PERFCLOCK_INFO_HORIZON			0x00000004U
/*
 * The module fills perfclock_horizon::generation and
 * perfclock_page::horizon_generation (THE FLUSH HORIZON, "Generations").
 */
#define PERFCLOCK_INFO_HORIZON_GENERATION	0x00000008U
/*
 * A hypervisor was detected, so sched_clock may be a paravirtual clock
 * (kvm-clock, Xen, Hyper-V, VMware: not native_sched_clock()). A
 * perf_clock() horizon then rests on the hypervisor's promise that its
 * clock is one clock across vCPUs (docs/horizon.md, "Rests on").
 */
#define PERFCLOCK_INFO_SCHED_CLOCK_PARAVIRT	0x00000010U
/*
 * The module's update timer runs now (WHO ARMS WHAT, below): the page is
 * being kept up to date and its horizon sampled.
 */
#define PERFCLOCK_INFO_UPDATES_ARMED		0x00000020U
/*
 * perfclock_info::revalidations and ::gp_requested are filled (they were
 * reserved, and zero, before).
 */
#define PERFCLOCK_INFO_COUNTERS			0x00000040U
/*
 * The module is told when the kernel resets sched_clock at run time (a
 * kprobe on kernel/sched/clock.c:__sched_clock_work(), armed now): a
 * switch to the unstable regime starts a generation and perf_clock()
 * horizons resume after it (THE FLUSH HORIZON, "Generations"). Clear:
 * no kprobes, module parameter reset_probe=0, or kprobes disarmed
 * through debugfs since load (then clear for good until reload).
 */
#define PERFCLOCK_INFO_SCHED_CLOCK_RESET_PROBE	0x00000080U
/*
 * The TSC was marked unstable at run time while the module had no
 * reset probe, or a reset's end was not seen (its kretprobe missed it,
 * or it was under way for 10 s): sched_clock may have been reset
 * unseen, so the module hands out no perf_clock() horizon until it is
 * reloaded
 * (PERFCLOCK_IOC_GET_HORIZON fails with EOPNOTSUPP; the page's
 * PERFCLOCK_PAGE_HORIZON_VALID stays clear). use_clockid horizons go on.
 */
#define PERFCLOCK_INFO_PERF_HORIZON_REFUSED	0x00000100U
/*
 * GET_TIME sets PERFCLOCK_TIME_RESET_PENDING where it applies: while the
 * reset probe is armed (PERFCLOCK_INFO_SCHED_CLOCK_RESET_PROBE).
 */
#define PERFCLOCK_INFO_TIME_RESET_FLAG		0x00000200U

struct perfclock_info {
	__u32 abi_version;	/* PERFCLOCK_ABI_VERSION */
	__u32 page_version;	/* PERFCLOCK_PAGE_VERSION */
	__u32 flags;		/* PERFCLOCK_INFO_* */
	__u32 page_size;	/* length to pass to mmap() */
	/*
	 * How much smaller a read of local_clock() on one CPU made after
	 * (in the sense of happens-before) a read on another CPU is
	 * expected to be, at most: an ESTIMATE, not a bound. Exactly 0 when
	 * sched_clock is stable (one clock). Otherwise 2 ticks plus the
	 * recent timer lateness (below), never less than measured_skew_ns;
	 * a CPU whose tick is held off longer than anything seen lags by
	 * more. It moves both ways (the lateness window slides, a
	 * revalidation can find the clock stable): re-read it each round.
	 * The exact cross-CPU answer is the flush horizon.
	 */
	__u64 skew_estimate_ns;
	/* The page's coarse value is refreshed at least this often. */
	__u64 update_period_ns;
	/*
	 * Largest backward step the module itself observed between CPUs at
	 * load: IPI ping-pong between the first online CPU and every other
	 * online CPU, both ways (not every pair, not CPUs that come online
	 * later). Never larger than skew_estimate_ns.
	 */
	__u64 measured_skew_ns;
	/*
	 * Worst lateness of the module's own periodic hrtimer over the last
	 * 10 to 20 seconds the timer ran: how late timer interrupts, the
	 * scheduler tick among them, are being delivered here. Feeds only
	 * the unstable-regime skew estimate (a CPU whose tick is late lags
	 * by as much); nothing exact depends on it. Measured only while the
	 * timer is armed (WHO ARMS WHAT): a file that is only open sees the
	 * figure of the last time anyone mapped the page, or none (0).
	 */
	__u64 timer_lateness_ns;
	/*
	 * With PERFCLOCK_INFO_COUNTERS, since load: full revalidations of
	 * the page's TSC conversion (each brackets the clock on every
	 * online CPU through an IPI), and grace periods the module asked
	 * RCU for (started by its horizon work, or waited for by a
	 * GET_HORIZON of its own). What a caller costs the machine, for
	 * tests and benchmarks; not a clock property.
	 */
	__u64 revalidations;
	__u64 gp_requested;
	__u64 reserved[1];	/* zero */
};

/* Number of clockids the horizon arrays are indexed by (<linux/time.h>). */
#define PERFCLOCK_HORIZON_CLOCKIDS	16
/* perfclock_horizon::clockid for perf_clock(): events without use_clockid. */
#define PERFCLOCK_HORIZON_PERF_CLOCK	(-1)
/*
 * perfclock_horizon::flags (in): wait for an expedited grace period
 * (microseconds on an idle machine, but an IPI to every CPU that is not
 * idle, as synchronize_rcu_expedited() does). Needs CAP_PERFMON or
 * CAP_SYS_ADMIN (EPERM otherwise). Without the flag a caller with either
 * waits for a normal grace period of its own, anyone else for one the
 * system or the module's work runs (WHO ARMS WHAT). A normal one IPIs no CPU that is idle, in user
 * space on nohz_full, or passing through the scheduler tick; it does
 * IPI a CPU that holds it up: kernel/rcu/tree.c's force-quiescent-state
 * scan (rcu_implicit_dynticks_qs() in 6.1, rcu_watching_snap_recheck()
 * in mainline) calls resched_cpu() on a nohz_full CPU that has held it
 * for 3 * jiffies_to_sched_qs, and resched_cpu() and
 * irq_work_queue_on() on any CPU past half the stall timeout.
 */
#define PERFCLOCK_HORIZON_EXPEDITED	0x00000001U

struct perfclock_horizon {
	__s32 clockid;		/* in: PERFCLOCK_HORIZON_PERF_CLOCK or CLOCK_* */
	__u32 flags;		/* in: PERFCLOCK_HORIZON_*, others zero */
	__u64 ns;		/* out: the horizon, see THE FLUSH HORIZON */
	__u64 wait_ns;		/* out: time spent in the grace period */
	/* out: the horizon generation ns belongs to; ignored on input */
	__u32 generation;
	__u32 __reserved0;	/* in: zero; out: zero */
	__u64 reserved[1];	/* in: zero; out: zero */
};

#define PERFCLOCK_IOC_GET_TIME	_IOR(PERFCLOCK_IOC_MAGIC, 0x01, struct perfclock_time)
#define PERFCLOCK_IOC_GET_INFO	_IOR(PERFCLOCK_IOC_MAGIC, 0x02, struct perfclock_info)
/*
 * Read the horizon now, wait for a grace period, return it: exact, and
 * fresh. The clocks accepted: PERFCLOCK_HORIZON_PERF_CLOCK,
 * CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_REALTIME, CLOCK_BOOTTIME,
 * CLOCK_TAI (the ones perf accepts for use_clockid); EINVAL otherwise,
 * or if a reserved field or unknown flag is set. Which grace period it
 * waits for depends on the caller (WHO ARMS WHAT, below): its own, with
 * CAP_PERFMON or CAP_SYS_ADMIN; else the system's or the module's
 * rate-limited ones (a longer wait, as exact); EPERM for
 * PERFCLOCK_HORIZON_EXPEDITED without either capability; EINTR-free:
 * a signal while it waits restarts the call (ERESTARTSYS). For
 * perf_clock() it first waits out a sched_clock reset under way (no
 * horizon spans one), at most 10 s: then EOPNOTSUPP, as for
 * PERFCLOCK_INFO_PERF_HORIZON_REFUSED.
 */
#define PERFCLOCK_IOC_GET_HORIZON _IOWR(PERFCLOCK_IOC_MAGIC, 0x03, struct perfclock_horizon)

/* struct perfclock_page::flags */
/*
 * tsc_mult, tsc_shift and tsc_offset convert the TSC of any online CPU to
 * its current local_clock(). When clear, readers must use
 * PERFCLOCK_IOC_GET_TIME for the current time.
 */
#define PERFCLOCK_PAGE_TSC_VALID		0x00000001U
/* Mirrors PERFCLOCK_INFO_SCHED_CLOCK_STABLE. */
#define PERFCLOCK_PAGE_SCHED_CLOCK_STABLE	0x00000002U
/* horizon_ns and the horizon_clockids entries hold a proven horizon. */
#define PERFCLOCK_PAGE_HORIZON_VALID		0x00000004U

/*
 * The clock page. Host-endian (the writer's byte order: the page is
 * only ever read on the machine that writes it), fixed offsets; new fields
 * only ever take the place of reserved space, and the size is one page
 * whatever PAGE_SIZE is
 * (the struct itself is 4096 bytes; map perfclock_info::page_size bytes).
 *
 * Read protocol (the module is the only writer; it makes seq odd while
 * it updates the page, like the vDSO data page):
 *
 *	do {
 *		// read_begin: an acquire load, pairs with the writer's
 *		// second smp_wmb()
 *		seq = smp_load_acquire(&pg->seq);
 *
 *		flags  = READ_ONCE(pg->flags);
 *		mult   = READ_ONCE(pg->tsc_mult);
 *		shift  = READ_ONCE(pg->tsc_shift);
 *		offset = READ_ONCE(pg->tsc_offset);
 *		coarse = READ_ONCE(pg->coarse_ns);
 *		tsc    = rdtsc_ordered();	// lfence; rdtsc
 *
 *		// read_retry: smp_rmb() (pairs with the writer's first
 *		// smp_wmb()), then seq again; odd means an update was
 *		// under way
 *		smp_rmb();
 *	} while ((seq & 1) || READ_ONCE(pg->seq) != seq);  // bounded
 *
 *	if (!(flags & PERFCLOCK_PAGE_TSC_VALID))
 *		use PERFCLOCK_IOC_GET_TIME, or coarse_ns as a lower bound;
 *
 *	// perf's own time_zero conversion (see perf_event_mmap_page):
 *	quot = tsc >> shift;
 *	rem  = tsc & (((__u64)1 << shift) - 1);
 *	ns   = offset + quot * mult + ((rem * mult) >> shift);
 *
 * On x86 both barriers are compiler barriers; the TSC read must be ordered
 * (lfence; rdtsc, or rdtscp) so that it is not taken outside the loop.
 * Retry a bounded number of times, then fall back to the ioctl.
 *
 * horizon_ns is the newest perf_clock() flush horizon the module has
 * proven (THE FLUSH HORIZON, above), and horizon_clockid_ns[id] the one
 * for clockid id when bit id of horizon_clockids is set. While the update
 * timer is armed (the page is mapped: WHO ARMS WHAT), the module samples
 * a new horizon every update period and publishes it once a normal RCU grace period after it
 * has ended (polled): its age is about one grace period when the
 * system runs grace periods anyway, and at most module parameter
 * horizon_gp_idle_ms plus one when it does not (the module then starts
 * one). Within a generation the values only grow. Read them inside the
 * seq loop with the flags and horizon_generation; a reader that then
 * loads every ring's data_head meets no record below.
 *
 * coarse_ns is the last local_clock() the module sampled, on coarse_cpu,
 * refreshed at least every update_period_ns while the page is mapped
 * (WHO ARMS WHAT). It is a LOWER BOUND of coarse_cpu's clock, never "now":
 * every later local_clock() read on coarse_cpu, and every later record
 * stamped there, is at least coarse_ns. On another CPU, in the unstable
 * regime, a later read can be smaller: coarse_ns - skew_estimate_ns is
 * the estimate (an estimate, see perfclock_info); the exact cross-CPU
 * lower bound of later stamps is the flush horizon.
 *
 * What the TSC conversion promises. The module derives tsc_offset from
 * brackets of local_clock() between two TSC reads taken on EVERY online
 * CPU: tsc_offset is the smallest lower end of them all and the largest
 * upper end is at most 250 ns above it. So when the page is published,
 * on every CPU, the page's time is never ahead of local_clock() and at
 * most 250 ns behind it. Both hold for as long as the kernel keeps
 * sched_clock's TSC scale and offset; the module re-checks each update
 * period (tsc_khz unchanged, the TSC not marked unstable, a bracket on
 * the timer's CPU not contradicting the model), on CPU hotplug, and
 * before mmap() returns whenever the timer was off, and turns
 * PERFCLOCK_PAGE_TSC_VALID off at the first failure. The flag in
 * perfclock_info is the module's last word, not rechecked for a file that
 * is only open: the page's, once mapped, is the one to go by. A change
 * between two checks (a tsc_khz refinement changes the scale by up to
 * 1%) is seen within one update period: until then the page can be off
 * by the change, e.g. 1% of update_period_ns, 10 us with the default
 * 1 ms. TSC_VALID is offered only when sched_clock is the native TSC
 * one (not a paravirtual clock such as kvm-clock: see the README).
 */
struct perfclock_page {
	__u32 seq;		/* odd while being updated */
	__u32 version;		/* PERFCLOCK_PAGE_VERSION */
	__u32 flags;		/* PERFCLOCK_PAGE_* */
	__u32 tsc_shift;
	__u64 tsc_mult;		/* fits in 32 bits today */
	__u64 tsc_offset;
	__u64 coarse_ns;	/* lower bound, see above */
	__u32 coarse_cpu;
	__u32 __reserved0;
	__u64 skew_estimate_ns;	/* as in perfclock_info */
	__u64 update_period_ns;	/* as in perfclock_info */
	__u64 update_count;	/* bumped by every update */
	__u64 timer_lateness_ns;	/* as in perfclock_info */
	__u64 horizon_ns;	/* perf_clock() horizon, see above */
	__u64 horizon_count;	/* bumped when the horizon moves */
	/* local_clock() when the horizon's grace period was seen to end. */
	__u64 horizon_proven_ns;
	__u32 horizon_clockids;	/* bit id: horizon_clockid_ns[id] valid */
	__u32 horizon_generation;	/* see THE FLUSH HORIZON, "Generations" */
	__u64 horizon_clockid_ns[PERFCLOCK_HORIZON_CLOCKIDS];
	__u64 __reserved[482];	/* zero; pads the struct to 4096 bytes */
};

#endif /* _UAPI_LINUX_PERFCLOCK_IOCTL_H */
