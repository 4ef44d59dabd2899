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
 * Why it holds (kernel file:function, checked in 6.1 and mainline):
 *
 *  1. perf reads the timestamp and commits the record inside one RCU
 *     read-side critical section. Samples: kernel/events/core.c:
 *     __perf_event_output() holds rcu_read_lock() around
 *     perf_prepare_sample() (which reads perf_event_clock() through
 *     __perf_event_header__init_id()) and perf_output_end(). Side-band
 *     records (COMM, MMAP, MMAP2, FORK, EXIT, NAMESPACES, CGROUP, SWITCH,
 *     SWITCH_CPU_WIDE, KSYMBOL, BPF_EVENT, TEXT_POKE) are stamped and
 *     written by the perf_event_*_output() callbacks under
 *     perf_iterate_sb(), which holds rcu_read_lock() and
 *     preempt_disable(). LOST records are stamped and written inside
 *     kernel/events/ring_buffer.c:__perf_output_begin()'s own
 *     rcu_read_lock(). THROTTLE/UNTHROTTLE (perf_log_throttle()), AUX,
 *     LOST_SAMPLES, ITRACE_START and AUX_OUTPUT_HW_ID are written from
 *     NMI, hard irq or irqs-disabled contexts (the overflow path, the
 *     tick's perf_adjust_freq_unthr_context(), event_sched_in() under
 *     ctx->lock, the PMU drivers' perf_aux_output_end()). Since Linux 5.0
 *     every region with preemption or irqs disabled, and every NMI
 *     handler, is an RCU reader for synchronize_rcu()
 *     (Documentation/RCU/whatisRCU.rst).
 *  2. The record becomes visible when kernel/events/ring_buffer.c:
 *     perf_output_put_handle() stores data_head, at the end of the
 *     outermost writer on that ring (a writer nested in an NMI is
 *     published by the writer it interrupted, whose critical section
 *     encloses it). That store is inside the critical section.
 *  3. The module reads the horizon BEFORE it snapshots the grace-period
 *     state (get_state_synchronize_rcu(), which starts with smp_mb()),
 *     and hands H out only after poll_state_synchronize_rcu() on that
 *     snapshot returned true, or synchronize_rcu*() returned. Per
 *     kernel/rcu/tree.c:poll_state_synchronize_rcu(), that gives the
 *     ordering of a synchronize_rcu() called at the snapshot: every
 *     critical section that began before it has ended, and its stores
 *     (data_head) are visible to whatever follows.
 *  4. A record stamped below H was stamped before H was read, so its
 *     critical section began before the snapshot:
 *     - perf_clock() (local_clock(), events without use_clockid): H is
 *       min over every possible CPU c of sched_clock_cpu(c). With a stable
 *       sched_clock this is one global clock read on the calling CPU.
 *       That step is an argument in time, not in the memory model: the
 *       stamps and H are RDTSC reads (arch/x86/kernel/tsc.c:
 *       native_sched_clock() uses rdtsc(), unordered), and "stamped
 *       below H" means "read the one clock earlier". The module orders
 *       its own read (an LFENCE after it, module/perfclock.c:
 *       perfclock_perf_clock_horizon(), so it completes before the
 *       snapshot); a writer's RDTSC can still execute a few instructions
 *       before the preempt_disable()/rcu_read_lock() that opens its
 *       critical section retires (nothing orders them), so the step
 *       rests on that early execution being shorter than the time from
 *       H's read to the snapshot (an LFENCE and a full barrier; the
 *       out-of-order window is a few hundred instructions, and an
 *       interrupt in it discards the early read).
 *       Otherwise kernel/sched/clock.c:sched_clock_remote() returns the
 *       larger of the two CPUs' clocks and raises the smaller one to it
 *       with a cmpxchg, and sched_clock_local() never lets a CPU's clock
 *       go below its current value: after the read, CPU c's clock is at
 *       least H, so a record stamped below H on c was stamped before it.
 *       The scheduler couples clocks the same way whenever it reads a
 *       remote runqueue's clock (kernel/sched/core.c:update_rq_clock()).
 *       No skew estimate enters: a CPU whose tick is held off is pulled
 *       forward, not waited for. A read (the page's or GET_HORIZON's)
 *       may take, for a CPU, the value last read there (module/perfclock.c:
 *       perfclock_perf_clock_horizon(), horizon_skip_us): that CPU's
 *       clock is still at least that value, since neither function
 *       lowers a clock; only __sched_clock_work() does (Generations).
 *       Offline CPUs are coupled too, so one coming online resumes at
 *       or above H.
 *     - use_clockid clocks: H is read with the accessor perf stamps with
 *       (kernel/events/core.c:perf_event_set_clock()): MONOTONIC
 *       ktime_get_mono_fast_ns(), MONOTONIC_RAW ktime_get_raw_fast_ns(),
 *       REALTIME ktime_get_real_ns(), BOOTTIME ktime_get_boottime_ns(),
 *       TAI ktime_get_clocktai_ns(), each one clock for all CPUs,
 *       except across an NTP mult change (Not covered: the NTP slope
 *       term; MONOTONIC_RAW has none). Read in the kernel, as perf's
 *       stamps are: a time namespace's offset (kernel/time/namespace.c)
 *       is in neither.
 *
 * Not covered:
 *  - PERF_RECORD_READ (events with inherit_stat, at child exit):
 *    kernel/events/core.c:perf_event_read_event() stamps the record
 *    before __perf_output_begin() enters its critical section, in
 *    preemptible context.
 *  - PERF_RECORD_CALLCHAIN_DEFERRED (deferred user callchains, kernels
 *    after 6.1): written from task work on the way back to user space;
 *    the versions of that code seen while writing this do not all stamp
 *    and commit inside one critical section, so it is not claimed.
 *  - Overwrite (write_backward) rings: the reader does not drain them
 *    forward; the guarantee about data_head still holds.
 *  - AUX area data: stamped by the hardware, not by perf_clock(). The
 *    AUX records in the main ring are covered.
 *  - Samples whose time the PMU driver sets itself. perf_prepare_sample()
 *    (kernel/events/core.c) stamps PERF_SAMPLE_TIME only if the driver
 *    has not set it in data->sample_flags. In 6.1 only x86 Intel PEBS
 *    does: arch/x86/events/intel/ds.c:setup_pebs_time() takes the PEBS
 *    record's TSC, before the record is committed (with large PEBS long
 *    before: the records wait in the DS buffer for
 *    intel_pmu_drain_pebs_buffer()), unless the event has use_clockid or
 *    sched_clock is not the native stable one. libperfclock's
 *    perfclock_check_attr() refuses precise_ip events without
 *    use_clockid on a PMU that can do PEBS (-EOPNOTSUPP). Looked at and
 *    covered: s390 PAI (perf_pai_ext.c, perf_pai_crypto.c set data.time
 *    without the sample flag, so perf_prepare_sample() stamps it again),
 *    s390 cpum_sf, powerpc core-book3s, AMD IBS and Intel BTS (perf
 *    stamps at output, in the critical section that commits), ARM SPE
 *    and Intel PT (AUX data, above). Checked in 6.1; the mainline tree
 *    could not be read here, and a 2023 proposal (converting the PEBS
 *    TSC for use_clockid CLOCK_MONOTONIC events) would make those
 *    hardware-stamped too.
 *  - The NTP slope term (MONOTONIC, BOOTTIME, REALTIME, TAI; not
 *    MONOTONIC_RAW, whose mult NTP never changes, nor perf_clock()).
 *    kernel/time/timekeeping.c: timekeeping_advance() reads the
 *    clocksource once (c_r), then timekeeping_adjust() picks the new
 *    mult, continuous at c_r only; the copies are rewritten later
 *    (update_vsyscall(), then update_fast_timekeeper(); 6.1 and 6.12
 *    timekeeping_update(), mainline timekeeping_update_from_shadow()).
 *    A read of an old copy at counter c > c_r exceeds a LATER stamp
 *    from the new one by up to ((c - c_r) * |dmult|) >> shift (+1 ns)
 *    when NTP lowered mult: the latch comment over
 *    ktime_get_mono_fast_ns() ("reader 6 ... backwards versus reader
 *    5"). The module's MONOTONIC horizon is such a read; the grace
 *    period after it does not help (the record is stamped after it).
 *    |dmult|/mult is about 1/mult in steady state (2e-7 at 3 GHz) and
 *    up to ~20% across an adjtimex() ADJ_TICK change; c - c_r is the
 *    update's irqs-off section, microseconds natively, unbounded on a
 *    descheduled vCPU. No margin bounds it; libperfclock subtracts an
 *    estimate (docs/percpu-horizon.md, 4.3). Seen while another vCPU
 *    toggled ADJ_TICK +-10% (6.12-rt, 8-vCPU TCG guest;
 *    selftests/perfclock_percpu_test.c, slope.*): COMM records stamped
 *    below a CLOCK_MONOTONIC read made before them on the same CPU, 408
 *    times in 1.1 M, by up to 2.8 ms; two clock_gettime() calls in a row
 *    going backwards 800 times in 49 M; MONOTONIC_RAW never.
 *  - A clock step (Generations, below) between the module's last check
 *    and a tool's use of a horizon: until the module sees it (at the
 *    latest its next update period, or the next GET_HORIZON), a tool
 *    holding the old generation's horizon can meet records stamped after
 *    the step below it. Nothing in the kernel notifies a module of either
 *    step as it happens.
 *  - sched_clock turning unstable is followed on x86 only (below).
 *  - The reset probe (Generations, below) misses a reset in two cases,
 *    both flagged by PERFCLOCK_INFO_SCHED_CLOCK_RESET_PROBE where they
 *    can be seen: kprobes disarmed and armed again through debugfs
 *    (kernel/kprobes.c: disarm_all_kprobes(), arm_all_kprobes(); the
 *    kprobes_all_disarmed flag is not exported) with a reset between,
 *    all between two of the module's checks, which look for the
 *    probe's int3 (every update period while a file has the device
 *    open; while none has, until the next open or ioctl); and a reset
 *    work already running when the module registers its probe (a mark
 *    racing the load by microseconds).
 *  - Without the reset probe (no kprobes, module parameter
 *    reset_probe=0, or found disarmed), the first run-time TSC mark
 *    the module sees ends perf_clock() horizons until it is reloaded
 *    (PERFCLOCK_INFO_PERF_HORIZON_REFUSED, GET_HORIZON EOPNOTSUPP),
 *    under any hypervisor too: a reset it can no longer see may follow.
 *    Left open there: a module loaded after a run-time mark but before
 *    kernel/sched/clock.c:__sched_clock_work() has reset the clocks
 *    (the work is queued at the mark and runs when a worker does)
 *    takes sched_clock as already switched, and a horizon it hands out
 *    in that window can be above records stamped after the reset.
 *  - Liveness: while __sched_clock_work() runs (its two printk()s and
 *    static_branch_disable(), milliseconds), GET_HORIZON for
 *    perf_clock() sleeps in 1-jiffy steps with irqs on, and the page
 *    offers no perf_clock() horizon; both resume at its return. The
 *    module never spins waiting for it.
 *
 * Rests on:
 *  - A perf_clock() horizon assumes the kernel's own claim that a stable
 *    sched_clock is one clock on every CPU (synchronized TSCs).
 *  - With a paravirtual sched_clock (PERFCLOCK_INFO_SCHED_CLOCK_PARAVIRT)
 *    the stable-regime read is one read of the hypervisor's clock on the
 *    calling vCPU, and "one clock" is the host's promise:
 *    arch/x86/kernel/kvmclock.c:kvm_sched_clock_init() keeps
 *    sched_clock_stable only when the host sets PVCLOCK_TSC_STABLE_BIT,
 *    and arch/x86/kernel/pvclock.c:pvclock_clocksource_read() (6.1;
 *    __pvclock_clocksource_read() in mainline) then
 *    skips its cross-CPU last_value clamp, trusting the host that every
 *    vCPU's (TSC, system_time) pair describes one clock. Without the bit
 *    that function keeps the clock monotonic across vCPUs itself (the
 *    cmpxchg on last_value), but sched_clock is then unstable and the
 *    horizon is the unstable-regime read. Xen, Hyper-V and VMware clocks
 *    make the same kind of promise; the module cannot tell them apart
 *    (the sched_clock in use is not exported), so the flag is set
 *    whenever a hypervisor is detected.
 *
 * Per-CPU horizons (H_c), no grace period. For a ring fed only by
 * events opened with cpu = c (pid = -1; no SET_OUTPUT from another CPU's
 * event), every record is stamped and published on c, and from the stamp
 * (perf_event_clock()) to the data_head store (kernel/events/
 * ring_buffer.c: perf_output_put_handle()) c does not switch tasks; in
 * 6.1 and 6.12 (read) and mainline (argued from patches,
 * docs/percpu-horizon.md):
 *  - hardware overflow in NMI; cpu-clock/task-clock in hard irq
 *    (perf_swevent_hrtimer(), HRTIMER_MODE_REL_PINNED_HARD, also on RT);
 *  - software events: __perf_sw_event() preempt_disable_notrace();
 *    __perf_sw_event_sched() inside __schedule(), irqs off;
 *  - tracepoints: __DO_TRACE() preempt_disable_notrace() (6.12's
 *    perf_tp_event() asserts it); the remote-task path delivers only to
 *    events with event->cpu == smp_processor_id(); syscall tracepoints
 *    made faultable in 6.13 got guard(preempt_notrace)() in
 *    perf_syscall_enter()/perf_syscall_exit() (65e7462a16ce) before
 *    the stamp. A tracepoint section with only migrate_disable() (the
 *    PREEMPT_RT SRCU-fast proposal) would break this; its posted
 *    versions add guard(preempt_notrace)() to perf_trace_##call;
 *  - side-band records: perf_iterate_sb() preempt_disable(), only this
 *    CPU's events (event_filter_match()); throttle, LOST, AUX, ITRACE
 *    from NMI/irq or under ctx->lock with irqs off on the event's CPU;
 *  - BPF output: ____bpf_perf_event_output()/bpf_event_output()
 *    preempt_disable(), and __bpf_perf_event_output() refuses an event
 *    with event->oncpu != this CPU.
 * So at an instant t0 at which a thread runs on c in task context, no
 * such section is open on c: every record c stamped before t0 is
 * published, and a data_head load after t0 (on c, or after a migration:
 * kernel/sched/core.c, "Notes on Program-Order guarantees") sees it. A
 * clock value H read at t0 bounds later stamps on c: GET_TIME reads
 * local_clock() and smp_processor_id() in one preempt_disable() section,
 * and kernel/sched/clock.c: sched_clock_local() never returns less than
 * the CPU's last value (cmpxchg on scd->clock; sched_clock_remote() only
 * raises): every later stamp on c is >= ns when cpu == c. With a global
 * clock (stable sched_clock, MONOTONIC_RAW) a read anywhere followed in
 * program order by getcpu() == c is as good. H_c inherits the NTP slope
 * term above for NTP clocks when the timekeeping CPU is not c. "Stamped
 * before t0" is in c's instruction stream: the vDSO's ordered TSC read
 * waits for the writer's; GET_TIME's plain one is separated from it by
 * the writer's section and a return to the reader (reasoned, as in 4.).
 * Breaks it: PEBS with hardware time (setup_pebs_time()); rings written
 * from several CPUs (cpu = -1 events, cross-CPU SET_OUTPUT); CPU
 * hotplug; deferred callchains. Those fall back to the grace-period
 * horizon (docs/percpu-horizon.md, table 5).
 *
 * Generations. Each horizon carries a generation
 * (perfclock_horizon::generation, perfclock_page::horizon_generation,
 * PERFCLOCK_INFO_HORIZON_GENERATION): 1 at load, bumped whenever a
 * horizon already handed out may be above a record stamped later:
 *  - sched_clock turns unstable at run time: on x86,
 *    arch/x86/kernel/tsc.c:mark_tsc_unstable() -> kernel/sched/clock.c:
 *    clear_sched_clock_stable() -> __sched_clock_work(), which resets
 *    every CPU's clock from the GTOD and can move it back by however far
 *    the GTOD fell behind the TSC since boot, plus the time its two
 *    printk()s take (the clocks are reset before them and the stable
 *    branch turned off after: meanwhile local_clock() runs on from the
 *    TSC, then restarts at the reset value). The module is told: a
 *    kprobe and a kretprobe on __sched_clock_work() (module/perfclock.c,
 *    "The reset probe") start a generation at the work's entry and
 *    another at its return, and no perf_clock() horizon is read or
 *    proven between them. That holds whoever cleared sched_clock_stable
 *    and whatever the hypervisor (a guest with a native sched_clock:
 *    KVM with no-kvmclock, ACRN, Jailhouse, VMware without its TSC
 *    frequency), with no guess at which sched_clock is in use.
 *  - REALTIME or TAI is set backwards (the offset from MONOTONIC
 *    shrinks). A forward set bumps nothing.
 * After a bump every held horizon is dropped: horizon values restart from
 * a newly proven sample and may be SMALLER than before, and
 * PERFCLOCK_PAGE_HORIZON_VALID may be clear until one is proven. The
 * page writes the generation in the same seq section as the horizon.
 * What a tool must do when the generation it reads differs from the last
 * one it used: flush (deliver) everything it holds, in the order it has,
 * and restart its limit from the new horizon (which may be below the
 * old): records stamped across the step are not ordered by time at all.
 * A tool that uses only perf_clock() may see a bump caused by a REALTIME
 * set: the flush is then unneeded, and harmless.
 *
 * WHO ARMS WHAT
 *
 * The device is 0444 unless a udev rule narrows it, so what an fd holder
 * can make the machine do is part of the contract:
 *  - open(), GET_TIME, GET_INFO: nothing periodic. GET_TIME reads the
 *    clock on the calling CPU; no timer, no IPI, no grace period.
 *  - mmap() of the page arms the update timer (update_period_ns, a hard
 *    hrtimer), its work item each period, and the grace periods that
 *    work starts (at most one per module parameter horizon_gp_idle_ms
 *    when the system runs none), until the last mapping is gone (munmap,
 *    exit). A mapping made while the timer was off is checked first,
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
 *    horizon_gp_idle_ms, for one the module starts under the rate limit
 *    it keeps for the page: at most one per horizon_gp_idle_ms, for the
 *    page and every such caller together. Arms no timer (it polls its
 *    own snapshot every jiffy while it waits). Its horizon is as exact
 *    (read at the call, proven by a grace period after it); the wait is
 *    up to horizon_gp_idle_ms and a jiffy longer. EXPEDITED: EPERM.
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
 * Documentation/userspace-api/ioctl/ioctl-number.rst (checked against
 * the table as of the 6.18/6.19 cycle, after "0xBA 00-0F
 * uapi/linux/liveupdate.h" was added), between
 *
 *	0xC0  00-0F  linux/usb/iowarrior.h
 *	0xCA  00-0F  uapi/misc/cxl.h                   Dead since 6.15
 *
 * ABI version 1 used 0xB2, which was free in 6.1 but is powerpc's since
 * 6.8: "0xB2 00 arch/powerpc/include/uapi/asm/papr-vpd.h", "0xB2 01-02
 * .../papr-sysparm.h", then 03-05 papr-indices, 06-07 papr-platform-dump,
 * 08 papr-physical-attestation, 09 papr-hvpipe. Those collide with
 * version 1's commands exactly.
 */
#define PERFCLOCK_IOC_MAGIC	0xC4

/* struct perfclock_time::flags */
/* sched_clock was known stable at the read: the value is causal across CPUs. */
#define PERFCLOCK_TIME_STABLE	0x00000001U

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
 * clock is one clock across vCPUs (THE FLUSH HORIZON, "Rests on").
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
 * reset probe: sched_clock may have been reset unseen, so the module
 * hands out no perf_clock() horizon until it is reloaded
 * (PERFCLOCK_IOC_GET_HORIZON fails with EOPNOTSUPP; the page's
 * PERFCLOCK_PAGE_HORIZON_VALID stays clear). use_clockid horizons go on.
 */
#define PERFCLOCK_INFO_PERF_HORIZON_REFUSED	0x00000100U

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
 * a signal while it waits restarts the call (ERESTARTSYS).
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
