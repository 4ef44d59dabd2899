/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libperfclock: the flush horizon of the clock perf stamps its records
 * with, a reader of per-CPU perf mmap rings, and an ordered queue to merge
 * them into one time-ordered stream.
 *
 * Conventions. As libperf's: objects are opaque; constructors return
 * NULL with errno set; every other function returns 0 (or a count) on
 * success and -errno on failure; the library never prints. Unlike
 * libperf's object__verb, public names are perfclock_<object>_<verb>
 * with single underscores (perfclock_queue_push(); perfclock_open() and
 * perfclock_read() are fixed ABI). The double underscore marks what is
 * NOT public: a helper shared between the library's files is named
 * <struct>__<verb> (perfclock_queue__emit_one()), hidden, and declared in
 * a private header; one used in a single file is static and unprefixed.
 * Reads of a clock are thread-safe, everything else (rings, queues)
 * belongs to one thread at a time.
 *
 * THE ROUND PATTERN. A tool that reads per-CPU rings in rounds:
 *
 *	perfclock_horizon(clk, &h);		   1. the horizon H, first
 *	for each ring:				   2. then drain every ring:
 *		perfclock_ring_read_begin(ring);	 loads data_head (acquire)
 *		while (perfclock_ring_read_event(ring, &rec) == 1)	 AFTER H
 *			if (rec.flags & PERFCLOCK_RECORD_HAS_TIME)
 *				perfclock_queue_push(q, cpu, rec.time, ...);
 *			(else: RECORDS WITHOUT A TIME below, never pushed)
 *		perfclock_ring_read_end(ring);
 *	perfclock_queue_flush_until(q, h);	   3. emit everything below H
 *
 * With rings from perfclock_evring_open(), step 2 is one call,
 * perfclock_evring_drain(), which also counts PERF_RECORD_LOST apart;
 * examples/tracer.c in the source tree is a complete tool built on it.
 *
 * Every record stamped below H was visible in its ring when
 * perfclock_horizon() returned, so step 2 has drained it: no record below
 * H turns up in a later round, and the queue's output is in time order.
 * With the module that is exact (a grace period, no margin: see THE FLUSH
 * HORIZON in perfclock_ioctl.h); without it, for a clock that is one
 * clock for all CPUs and that the library reads itself, it is exact too
 * (grace periods asked for with membarrier(): MEMBARRIER HORIZON below);
 * elsewhere H is an estimate. perfclock_get_info() says which, and
 * perfclock_horizon_name() names it for a tool to print at start.
 *
 * The three parts:
 *
 *  1. struct perfclock: a clock and its flush horizon. Three backends:
 *     - the module: perfclock_open("/dev/perfclock"), the clock of events
 *       opened WITHOUT attr.use_clockid (local_clock());
 *     - perf's own page: perfclock_open_perf_page(), the same clock read
 *       through perf's time_zero conversion of a perf ring the tool has
 *       mapped, when the kernel offers it (cap_user_time_zero): exact and
 *       syscall-free with no module; exact horizons from the module, else
 *       from membarrier;
 *     - clock_gettime: perfclock_open_clockid(CLOCK_MONOTONIC), the clock
 *       of events opened WITH attr.use_clockid = 1 and that clockid. It
 *       needs no module for reading; it takes its exact horizons from
 *       /dev/perfclock when there is one, else from membarrier
 *       (Linux >= 4.1 for use_clockid).
 *     perfclock_check_attr() says whether a clock is the one that stamps a
 *     given event, so a mismatch is an error instead of silent garbage.
 *
 *  2. struct perfclock_ring: a reader for one perf mmap ring buffer.
 *
 *  3. struct perfclock_queue: mechanism only. Push events from many
 *     sources (one per ring); emit in time order everything below a time
 *     the caller gives (perfclock_queue_flush_until()).
 *
 * WHICH HORIZON a clock gets, chosen at open (horizon.c:
 * perfclock__horizon_choose()), best first:
 *  1. the module's (page, else blocking ioctl), when /dev/perfclock hands
 *     out horizons: every clock, both sched_clock regimes;
 *  2. membarrier's, without the module: perfclock_open_clockid() of
 *     CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_BOOTTIME, and
 *     perfclock_open_perf_page() (perf offers time_zero only with a stable
 *     sched_clock); needs MEMBARRIER_CMD_GLOBAL (not on nohz_full) and two
 *     online CPUs;
 *  3. the estimate: everything else (nohz_full; CLOCK_REALTIME and
 *     CLOCK_TAI, which step when set; perf_clock() on an unstable
 *     sched_clock without the module, which only the module can read on
 *     every CPU).
 * Beside it, for per-CPU rings: the per-CPU horizon H_c of
 * perfclock_horizon_cpu() (PER-CPU HORIZON below), exact with no grace
 * period, and the threaded reader built on it (perfclock_reader.h).
 * perfclock_open(NULL) without the module reads the same clock through
 * perf's page of a dummy event of its own, where the kernel offers
 * time_zero (backend PERFCLOCK_BACKEND_PERF_PAGE, membarrier's horizon);
 * with an unstable sched_clock it fails with ENOENT: the module is needed
 * for perf_clock(), or events with use_clockid = CLOCK_MONOTONIC. A tool
 * prints which it got with perfclock_horizon_name(), as perf trace's
 * "Flushed at:" line does (perfclock_clock_horizon_name(): the same
 * name, without blocking).
 *
 * THE KERNEL IT NEEDS without the module (the Linux release that added
 * what the library uses):
 *  - the ring reader and perfclock_evring_open(): PERF_EVENT_IOC_ID,
 *    PERF_SAMPLE_IDENTIFIER, cap_user_time_zero (3.12),
 *    PERF_FLAG_FD_CLOEXEC (3.14);
 *  - perfclock_open_clockid(): attr.use_clockid (4.1); for CLOCK_REALTIME
 *    and CLOCK_TAI, TFD_TIMER_CANCEL_ON_SET (3.0; SETTABLE CLOCKS);
 *  - the membarrier horizon: membarrier(2) (4.3), its command 1 named
 *    MEMBARRIER_CMD_SHARED until 4.16 renamed it MEMBARRIER_CMD_GLOBAL
 *    (the same value, which the library passes). MEMBARRIER HORIZON's
 *    proof reads synchronize_rcu() there, the call from 5.0 on (the RCU
 *    flavour consolidation); 4.3 .. 4.20 call synchronize_sched(), not
 *    read here.
 * So: 4.1 for the library; 5.0 for an exact horizon without the module
 * as proven below (4.1 and 4.2, with no membarrier, get the estimate).
 *
 * MEMBARRIER HORIZON (user/horizon_membarrier.c). H is a read of the
 * clock, handed out only after two membarrier(MEMBARRIER_CMD_GLOBAL)
 * calls made after the read. Why every record stamped below H is then in
 * its ring (kernel file:function, read in 6.1 and mainline):
 *  1. The barrier is a grace period: kernel/sched/membarrier.c:
 *     sys_membarrier(), case MEMBARRIER_CMD_GLOBAL, calls
 *     synchronize_rcu() when more than one CPU is online (trees before
 *     the RCU flavour consolidation of 5.0 call synchronize_sched()
 *     there; 5.10 to 6.0 were not read one by one). It returns -EINVAL
 *     when tick_nohz_full_enabled(), and MEMBARRIER_CMD_QUERY then leaves
 *     GLOBAL out of its mask: the library asks the query at open and
 *     takes the estimate without it. With one CPU online the call returns
 *     at once: the library requires two online CPUs at open (CPUs
 *     unplugged down to one afterwards are not covered).
 *  2. perf stamps a record and publishes the data_head that covers it
 *     inside one RCU read-side critical section, and synchronize_rcu()
 *     returns only after every section that began before it ended, its
 *     stores visible: THE FLUSH HORIZON in module/perfclock_ioctl.h,
 *     items 1-3 (the same records are covered, and the same are not:
 *     PERF_RECORD_READ, deferred callchains).
 *  3. A record stamped below H was stamped before H was read, when the
 *     clock the library reads and the accessor perf stamps with agree
 *     (below): its critical section began before the first barrier,
 *     which waited for it.
 * The clock the library reads and perf's accessor
 * (kernel/events/core.c: perf_event_set_clock()):
 *  - CLOCK_MONOTONIC: perf stamps with kernel/time/timekeeping.c:
 *    ktime_get_mono_fast_ns(), a read of one of the two copies of
 *    tk_fast_mono (update_fast_timekeeper(), a latch); the library calls
 *    clock_gettime(): the vDSO's copy (lib/vdso/gettimeofday.c, written
 *    by kernel/time/vsyscall.c: update_vsyscall()) or the system call
 *    (kernel/time/posix-timers.c -> ktime_get_ts64(), tk_core under its
 *    seqcount). Same data, same arithmetic, but not at the same moment:
 *    timekeeping.c: timekeeping_update() writes the vDSO's copy BEFORE
 *    the fast copies, and a fast reader meanwhile uses the old mult.
 *    When NTP has just made the clock faster it stamps below what the
 *    vDSO already returns (the backward step the kerneldoc of
 *    ktime_get_mono_fast_ns() describes, seen from the other side). By
 *    how much: the mult change (up to 500 ppm of frequency, MAXFREQ in
 *    kernel/time/ntp.c, and 10% more with ADJ_TICK, timekeeping.c:
 *    timekeeping_validate_timex()) times how long the update stays
 *    between the two copies, which in a
 *    VM is as long as the host deschedules that vCPU: no fixed margin
 *    covers it. The SECOND barrier does, with no margin:
 *    timekeeping_update() runs with irqs disabled under timekeeper_lock
 *    (6.1) or tk_core.lock (mainline), taken irqsave by
 *    timekeeping_advance() and the clock-setting paths: an RCU reader;
 *    the update whose vDSO copy the library read had begun before the
 *    read, so the first barrier returned only after its fast copies were
 *    written; a record stamped from the old copy was stamped before
 *    that, so its critical section began before the second barrier,
 *    which waited for it. (A system-call read does not escape the
 *    other direction either: tk_core's seqcount is taken after the
 *    update's clocksource read, so an old-copy read there can exceed a
 *    later stamp when NTP lowered mult: docs/percpu-horizon.md, 4.3.)
 *  - CLOCK_MONOTONIC_RAW: ktime_get_raw_fast_ns(), tk_fast_raw, the same
 *    latch; tkr_raw.mult is not NTP-adjusted, and a clocksource change
 *    is covered by the second barrier as above.
 *  - CLOCK_BOOTTIME: ktime_get_boottime_ns() -> ktime_get_with_offset(),
 *    tk_core under its seqcount (the data the system call reads, and the
 *    vDSO's copy written inside the same write section): the same
 *    NTP slope term as MONOTONIC's (docs/percpu-horizon.md, 4.3).
 *    For both: exact except that term, PERFCLOCK_NTP_SLOPE_MARGIN_NS
 *    taken off (NTP SLOPE below).
 *  - CLOCK_REALTIME, CLOCK_TAI: ktime_get_real_ns(),
 *    ktime_get_clocktai_ns(), the same seqcount, but they step when the
 *    clock is set (settimeofday(), ADJ_SETOFFSET, a leap second), and a
 *    record stamped after a step back is below a read taken before it:
 *    NOT exact this way; they keep the estimate without the module, and
 *    restart at every set with either (SETTABLE CLOCKS below).
 *  - perf_clock() through perf's page: arch/x86/events/core.c:
 *    arch_perf_update_userpage() offers time_zero (cap_user_time_zero)
 *    only if using_native_sched_clock() && sched_clock_stable(), with
 *    time_zero = cyc2ns_offset + __sched_clock_offset and time_mult,
 *    time_shift = cyc2ns_mul, cyc2ns_shift. perf stamps with
 *    local_clock(): with a stable sched_clock, sched_clock() +
 *    __sched_clock_offset (kernel/sched/clock.c: sched_clock_cpu() in
 *    6.1, local_clock() in mainline), sched_clock() being
 *    arch/x86/kernel/tsc.c: native_sched_clock() = cycles_2_ns(rdtsc())
 *    = cyc2ns_offset + mul_u64_u32_shr(tsc, mul, shift). perf's formula,
 *    which the library uses (quot * mult + ((rem * mult) >> shift)), is
 *    that product exactly: the same clock, on every CPU. Caveats: (a)
 *    the page is a copy, made when perf updates it
 *    (perf_event_update_userpage()); a cyc2ns change (resume from
 *    suspend) or a TSC found unstable reaches it only then (the library
 *    checks cap_user_time_zero at every read, and the helper thread
 *    stops with -EOPNOTSUPP when it goes). (b) The TSC read: the library
 *    reads it ordered (lfence; rdtsc), native_sched_clock() with a
 *    plain rdtsc, which the CPU may execute a little ahead of the
 *    instructions before it, so a stamp can be earlier than its place in
 *    the program by the CPU's out-of-order window (nanoseconds). It
 *    would matter only if that window reached from before the library's
 *    read to after a writer entered a critical section that the barrier
 *    did not wait for; the module's own perf_clock() read has the same
 *    exposure. Reasoned, not proven.
 *  - perf_clock() on an unstable sched_clock: perf offers no time_zero,
 *    local_clock() is per CPU (sched_clock_cpu()); only the module reads
 *    it on every CPU. No module: the estimate.
 * The helper thread: perfclock_horizon() never blocks but for its first
 * call in a process (and the first after a fork(), whose child gets a
 * new thread): that call proves one horizon on the caller's thread (two
 * grace periods). Then the thread reads the clock, makes the barrier and
 * publishes the read taken one barrier earlier, starting a barrier at
 * most every millisecond: the horizon is two to three grace periods old.
 * Its cost to the machine is a normal grace period per barrier (no IPI to
 * an idle CPU; a kernel booted with rcupdate.rcu_expedited=1 makes
 * synchronize_rcu() expedited, an IPI to every busy CPU). An error of the
 * thread (its clock read, its barrier) is returned by perfclock_horizon()
 * from then on: never a silent estimate. perfclock_close() stops it.
 */
#ifndef LIBPERFCLOCK_H
#define LIBPERFCLOCK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PERFCLOCK_DEFAULT_PATH	"/dev/perfclock"

struct perfclock;
struct perfclock_ring;
struct perfclock_queue;
struct perf_event_attr;		/* <linux/perf_event.h> */

/* ------------------------------------------------------------------ */
/* Clock                                                               */
/* ------------------------------------------------------------------ */

/*
 * Open the module backend. path NULL means /dev/perfclock. Maps the clock
 * page when the device offers one of the known version (reads then fall
 * back to the ioctl only when the page cannot serve). With path NULL and
 * no /dev/perfclock (ENOENT), the same clock, local_clock(), through
 * perf's user page of a dummy event the library opens on the calling
 * thread and maps, when the kernel offers time_zero (a stable
 * sched_clock): as perfclock_open_perf_page() of that page, with
 * membarrier's exact horizon; closed by perfclock_close(). An explicit
 * path is never replaced.
 * Errors (errno): those of open(2) (ENOENT: no device, module not loaded;
 * EACCES), ENOTTY: the file is not a perfclock device, EPROTO: a perfclock
 * module of another ABI version (perfclock_info::abi_version differs, or
 * an ABI-1 module, which answers only under the old ioctl magic 0xB2:
 * load a perfclock.ko that matches this library), ENOMEM.
 */
struct perfclock *perfclock_open(const char *path);

/*
 * Open the clock_gettime backend for events opened with use_clockid = 1
 * and attr.clockid = clockid. Accepted: CLOCK_MONOTONIC,
 * CLOCK_MONOTONIC_RAW, CLOCK_BOOTTIME, CLOCK_REALTIME, CLOCK_TAI (the ones
 * perf accepts). It also opens /dev/perfclock, silently, and keeps it if
 * the module hands out horizons: perfclock_horizon() is then exact for
 * this clockid too. No module, or one without horizons, is not an error:
 * the horizon is then membarrier's for CLOCK_MONOTONIC,
 * CLOCK_MONOTONIC_RAW and CLOCK_BOOTTIME (MEMBARRIER HORIZON above), the
 * estimate for the others or where the kernel has no barrier. Exact for
 * CLOCK_MONOTONIC_RAW only: the others are exact except the NTP slope
 * (NTP SLOPE below), the module's horizons for them too. CLOCK_REALTIME
 * and CLOCK_TAI also hold a timerfd that follows their sets (SETTABLE
 * CLOCKS below).
 * Errors: EINVAL for any other clock, ENOMEM; for CLOCK_REALTIME and
 * CLOCK_TAI those of timerfd_create() too (EMFILE, ENFILE: no fd for
 * the timerfd; without it a set would go unseen, so no clock).
 */
struct perfclock *perfclock_open_clockid(int clockid);

/*
 * Open the perf page backend: perf_clock() (local_clock(), events opened
 * without use_clockid) read from pc, the first page of a perf mmap ring
 * the caller has mapped (the base given to perfclock_ring_new()), with
 * perf's own conversion: time_zero, time_mult, time_shift. The kernel
 * offers it (cap_user_time_zero) only when sched_clock is the native TSC
 * one and stable, and then it is local_clock() exactly, on every CPU; no
 * module is needed to read. pc must stay mapped until perfclock_close().
 * Like perfclock_open_clockid(), it opens /dev/perfclock silently and
 * keeps it if the module hands out horizons: perfclock_horizon() is then
 * exact; otherwise it is membarrier's, exact too (MEMBARRIER HORIZON
 * above), or the estimate where the kernel has no barrier. perfclock_read_ioctl() is
 * -EOPNOTSUPP; perfclock_read() and perfclock_read_lower_bound() return
 * -EOPNOTSUPP if the kernel withdraws cap_user_time_zero (an unstable TSC).
 * Errors: EINVAL (pc NULL), EOPNOTSUPP (no cap_user_time_zero: use the
 * module), EAGAIN (the page stayed busy), ENOMEM.
 */
struct perf_event_mmap_page;	/* <linux/perf_event.h> */
struct perfclock *perfclock_open_perf_page(const struct perf_event_mmap_page *pc);

void perfclock_close(struct perfclock *clk);

/*
 * THE FLUSH HORIZON: 0 and *ns = H such that every perf record stamped (in
 * this clock) below H is already visible in its ring (its data_head
 * published) when the call returns. Load data_head after this returns
 * (perfclock_ring_read_begin() does) and drain every ring, and no record
 * below H is left behind. Thread-safe (an H proven by another thread
 * comes ordered after its proof: horizon.c, MEMORY ORDER); the values it
 * returns never go down.
 *
 * -ESTALE: the horizons RESTARTED, and this caller cannot follow a
 * restart. A module with PERFCLOCK_INFO_HORIZON_GENERATION restarts them
 * when one already handed out may be above a later stamp (sched_clock
 * became unstable and its clocks were reset; CLOCK_REALTIME or CLOCK_TAI
 * set backward), and the library restarts a CLOCK_REALTIME or CLOCK_TAI
 * clock's at every set it sees, whatever the backend (SETTABLE CLOCKS
 * below): every H returned before is void, and the new ones may be
 * smaller. perfclock_horizon() then fails, on every call, until the
 * program takes its horizons from perfclock_horizon_gen(), which reports
 * the restart and goes on. (A program written before generations existed
 * stops with an error instead of merging on a void horizon.)
 *
 * Exact (PERFCLOCK_CLOCK_HORIZON_EXACT in perfclock_get_info()) from
 * membarrier (PERFCLOCK_CLOCK_HORIZON_MEMBARRIER: no system call, the
 * helper thread's newest; the first call in a process blocks for two
 * grace periods, once; see MEMBARRIER HORIZON above), or when the
 * module hands out horizons:
 *  - from the page, no system call: the newest horizon the module has
 *    proven, about one RCU grace period old (perfclock_page_horizon());
 *  - else PERFCLOCK_IOC_GET_HORIZON, which BLOCKS for a normal grace
 *    period (microseconds to a few milliseconds on an idle machine, tens
 *    of ms or more in an overcommitted VM): one of its own with
 *    CAP_PERFMON or CAP_SYS_ADMIN, else the system's next one or one the
 *    module starts at most every horizon_gp_idle_ms (default 50 ms) for
 *    all unprivileged callers together, so up to that much longer
 *    ("WHO ARMS WHAT" in module/perfclock_ioctl.h).
 * Otherwise (no module and no membarrier horizon for this clock, see
 * WHICH HORIZON above) an ESTIMATE, never exact: an exact read of the clock minus the module's
 * skew estimate minus an in-flight allowance, the larger of
 * PERFCLOCK_HORIZON_ESTIMATE_INFLIGHT_NS and the CPU stall the module has
 * measured (perfclock_clock_info::inflight_estimate_ns). A record whose
 * writer stalls longer between stamping and committing it (a vCPU
 * descheduled by its host) can then still turn up below H: the queue
 * delivers it flagged PERFCLOCK_EVENT_LATE. The module's skew and stall
 * estimates are followed on its page; without the page (an unknown page
 * version, a failed mmap) the library asks PERFCLOCK_IOC_GET_INFO for
 * them, at most every 10 ms.
 */
int perfclock_horizon(struct perfclock *clk, uint64_t *ns);

/*
 * perfclock_horizon() that follows restarts: 0, *ns and *gen (the
 * horizons' generation, from 1), or PERFCLOCK_HORIZON_RESTARTED (1) when
 * the generation changed since this clock last told a caller (each
 * restart is reported once per clock; threads that take horizons each
 * compare *gen with the one they had). On a restart *ns is the first
 * horizon of the new generation and may be below every earlier one; the
 * earlier ones are void: a record stamped below them can still come.
 * What a tool does then: flush everything it holds, in order
 * (perfclock_queue_restart() does, and forgets the old limit), then goes
 * on with the new horizons. Events already emitted before the restart
 * may be out of order against what comes after: that cannot be undone.
 * Errors as perfclock_horizon(), never -ESTALE.
 */
int perfclock_horizon_gen(struct perfclock *clk, uint64_t *ns, uint32_t *gen);
#define PERFCLOCK_HORIZON_RESTARTED	1

/*
 * The in-flight allowance of an estimated horizon: how long a record may
 * take from its timestamp to its commit. A guess, not a bound: stalls of
 * a descheduled vCPU of 12.7 ms were measured in this project's guests.
 */
#define PERFCLOCK_HORIZON_ESTIMATE_INFLIGHT_NS	(20000000ULL)	/* 20 ms */

/* perfclock_horizon_sync() flags */
/*
 * Wait for an expedited grace period (PERFCLOCK_HORIZON_EXPEDITED): fast,
 * but an IPI to every busy CPU; needs CAP_PERFMON or CAP_SYS_ADMIN
 * (-EPERM otherwise).
 */
#define PERFCLOCK_HORIZON_SYNC_EXPEDITED	(1U << 0)

/*
 * A fresh exact horizon now: the module reads the clock, waits for a grace
 * period and returns it (PERFCLOCK_IOC_GET_HORIZON); BLOCKS for that grace
 * period (for a caller without CAP_PERFMON, up to horizon_gp_idle_ms
 * longer: see perfclock_horizon()). For a tool that wants the newest horizon at once (the end of a
 * stream, say) rather than the page's, about a grace period old. With
 * the membarrier horizon: a read of the clock and two barriers on the
 * caller's thread (BLOCKS for two grace periods); EXPEDITED is
 * -EOPNOTSUPP there (user space cannot ask for an expedited grace
 * period).
 * Errors: -EOPNOTSUPP with an estimated horizon (no module and no
 * membarrier for this clock, an older module), -EPERM (expedited,
 * unprivileged), -EINVAL (unknown flags), -EINTR, -ESTALE as
 * perfclock_horizon() (a restart not yet taken by perfclock_horizon_gen()).
 */
int perfclock_horizon_sync(struct perfclock *clk, uint32_t flags,
			   uint64_t *ns);

/*
 * The best EXACT read: a value the clock had during the call, on the
 * calling CPU. A perf record produced on this CPU between two reads has a
 * timestamp between the two values. NOT a flush horizon: a record
 * stamped just before it can still be in flight (perfclock_horizon()).
 *  - module: the page's TSC conversion when the page says it is valid (no
 *    system call, no allocation, at most PERFCLOCK_PAGE_MAX_RETRIES tries
 *    of the seq loop), otherwise PERFCLOCK_IOC_GET_TIME;
 *  - clockid: clock_gettime(clockid) (vDSO when the kernel offers it).
 */
int perfclock_read(struct perfclock *clk, uint64_t *ns);

/* Exact read through the ioctl (module); -EOPNOTSUPP for clockid clocks. */
int perfclock_read_ioctl(struct perfclock *clk, uint64_t *ns);

/*
 * A coarse value of the clock, without a system call when possible: the
 * reading CPU's clock is at or above it; other CPUs' clocks are at or
 * above it minus what the module's skew estimate misses (an estimate, see
 * perfclock_clock_info::skew_estimate_ns). Never "now"; not a flush
 * horizon (perfclock_horizon()).
 *  - module: the page's value (current TSC conversion if valid, else the
 *    coarse value) minus the skew estimate; no syscall. Falls back to the
 *    ioctl minus the skew estimate when there is no page or it stays busy.
 *  - clockid: CLOCK_MONOTONIC_COARSE / CLOCK_REALTIME_COARSE for
 *    CLOCK_MONOTONIC / CLOCK_REALTIME (vDSO, always at or below the fine
 *    clock); for the clocks without a coarse variant the exact read.
 */
int perfclock_read_lower_bound(struct perfclock *clk, uint64_t *ns);

enum perfclock_backend {
	PERFCLOCK_BACKEND_DEVICE = 1,	/* /dev/perfclock, local_clock() */
	PERFCLOCK_BACKEND_CLOCKID = 2,	/* clock_gettime(clockid) */
	PERFCLOCK_BACKEND_PERF_PAGE = 3,	/* perf's time_zero, local_clock() */
};

/* struct perfclock_clock_info::flags */
/* One clock for every CPU: skew_estimate_ns is 0. */
#define PERFCLOCK_CLOCK_GLOBAL		(1U << 0)
/* perfclock_read() makes no system call right now (page or vDSO). */
#define PERFCLOCK_CLOCK_PAGE_MAPPED	(1U << 1)
#define PERFCLOCK_CLOCK_PAGE_TSC_VALID	(1U << 2)
/*
 * The clock can be set (REALTIME, TAI): it may step backwards. SETTABLE
 * CLOCKS says what its horizons promise then.
 *
 * SETTABLE CLOCKS (horizon_sets.c has the kernel references). perf
 * stamps CLOCK_REALTIME and CLOCK_TAI records with ktime_get_real_ns()
 * and ktime_get_clocktai_ns(): MONOTONIC plus an offset that a set moves
 * at once (settimeofday(), clock_settime(), adjtimex() ADJ_SETOFFSET,
 * ADJ_TAI for CLOCK_TAI, a leap second, resume). After a set back,
 * records are stamped below horizons handed out before it; no horizon
 * can be exact across it. What the library promises, with the module's
 * horizons and with the estimate alike:
 *  - A set whose call returned before a horizon call began is reported
 *    by that call: PERFCLOCK_HORIZON_RESTARTED from perfclock_horizon_gen()
 *    (-ESTALE from perfclock_horizon() and perfclock_horizon_sync()), and
 *    the horizon it returns was read after the set (the module's page is
 *    passed over for a fresh GET_HORIZON, which blocks for a grace period
 *    once per set). Every set restarts, forward ones too, and a set back
 *    and forward again between two calls (one restart for both).
 *  - A set during a horizon call is reported by that call or the next.
 *    A call whose reads were each followed by a new set, four in a row,
 *    returns -EAGAIN (ask again).
 *  - Records stamped between a set and the caller's first horizon call
 *    after it may lie below the limit the caller held: they are across
 *    the step, and a tool delivers them as it can (the queue flags them
 *    PERFCLOCK_EVENT_LATE; after perfclock_queue_restart() they are in
 *    order again). A tool that sets the clock itself between rounds, and
 *    takes its next horizon before draining, meets none.
 *  - Not seen at once: a leap second (the kernel tells user space from a
 *    work item, clock_was_set_delayed(), a little after the step; the
 *    module's generation sees it at its next check), and a TAI offset
 *    change and back again between two horizon calls (the library reads
 *    the offset at each call; the module counts every set).
 *  - After fork(), parent and child each see every later set (the child
 *    gets a timerfd of its own); a set during the fork() call itself is
 *    seen by the child if it moved the clock by more than the error of
 *    two clock reads (FORK in horizon_sets.c). A child that cannot have
 *    its own timerfd (no fd left) gets -EMFILE from every horizon call
 *    of the clock.
 * The per-CPU horizon is not offered for these clocks. A clock that can
 * be set needs a timerfd (TFD_TIMER_CANCEL_ON_SET) to see sets: without
 * one perfclock_open_clockid() fails.
 */
#define PERFCLOCK_CLOCK_SETTABLE	(1U << 3)
/*
 * perfclock_horizon() is exact: the module or membarrier proves it, for
 * a clock with no NTP slope term (perf_clock(), CLOCK_MONOTONIC_RAW).
 * Without this flag it is exact except the NTP slope
 * (PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE, NTP SLOPE below) or an estimate
 * (inflight_estimate_ns says with what margin).
 */
#define PERFCLOCK_CLOCK_HORIZON_EXACT	(1U << 4)
/* perfclock_horizon() reads the page right now (no system call). */
#define PERFCLOCK_CLOCK_HORIZON_PAGE	(1U << 5)
/*
 * The exact horizon's cross-CPU step rests on the hypervisor's promise:
 * the clock it is read in comes from a paravirtual clock (perf_clock():
 * a paravirtual sched_clock, the module's
 * PERFCLOCK_INFO_SCHED_CLOCK_PARAVIRT; a use_clockid clock: the
 * clocksource is kvm-clock, xen or Hyper-V's). With
 * PVCLOCK_TSC_STABLE_BIT, arch/x86/kernel/pvclock.c:
 * pvclock_clocksource_read() returns each vCPU's own reading and skips
 * the global last_value maximum that otherwise forces it monotonic, so
 * that one vCPU never reads the clock below another's earlier reading is
 * the host's claim (stable TSCs, or its kvmclock master clock), not
 * something the guest kernel checks. The horizon is still exact if the
 * host keeps it; nothing in the guest can detect a host that does not.
 */
#define PERFCLOCK_CLOCK_HORIZON_HOST_PROMISE	(1U << 6)

/*
 * The exact horizon comes from membarrier(MEMBARRIER_CMD_GLOBAL), not
 * from the module (MEMBARRIER HORIZON above): set with HORIZON_EXACT or
 * HORIZON_NTP_SLOPE.
 */
#define PERFCLOCK_CLOCK_HORIZON_MEMBARRIER	(1U << 7)

/*
 * perfclock_horizon_cpu() gives exact per-CPU horizons for this clock
 * (PER-CPU HORIZON below; CLOCK_MONOTONIC and CLOCK_BOOTTIME: exact
 * except the NTP slope, NTP SLOPE below); without it, -EOPNOTSUPP
 * there. (PERFCLOCK_0.2.2)
 */
#define PERFCLOCK_CLOCK_HORIZON_PERCPU	(1U << 8)
/*
 * ... and reads them without a system call: rdtscp, whose TSC_AUX says
 * the CPU, with the module's page or perf's time_zero page. (0.2.2)
 */
#define PERFCLOCK_CLOCK_HORIZON_PERCPU_TSC_AUX	(1U << 9)

/*
 * NTP SLOPE (0.3; ntp_slope.c; the derivation and the measurements:
 * docs/percpu-horizon.md, section 4.3). A clock NTP disciplines
 * (use_clockid CLOCK_MONOTONIC, CLOCK_BOOTTIME, CLOCK_REALTIME,
 * CLOCK_TAI) has a term no horizon proof removes: when NTP lowers the
 * clock's mult, a read of it taken with the old mult after the
 * timekeeping update's clocksource read (kernel/time/timekeeping.c:
 * timekeeping_advance(), before the copies are written) exceeds a record
 * stamped AFTER the read, with the new mult, by
 * B = ((c - c_r) * |dmult|) >> shift. The record comes after the read:
 * no grace period, barrier or presence on its CPU orders that. It holds
 * for every horizon of such a clock: membarrier's, the module's
 * (ktime_get_mono_fast_ns() and the tk_core clocks), and H_c. Two plain
 * clock_gettime(CLOCK_MONOTONIC) calls in a row go backwards by the same
 * B. CLOCK_MONOTONIC_RAW (never NTP-adjusted) and perf_clock() do not
 * have it: use CLOCK_MONOTONIC_RAW for use_clockid tools (perf record
 * -k monotonic_raw) where exact is wanted.
 *
 * So every horizon of those clocks (perfclock_horizon*(),
 * perfclock_horizon_cpu*(), the threaded reader's) has
 * PERFCLOCK_NTP_SLOPE_MARGIN_NS taken off, and where the library would
 * call it exact it says HORIZON_NTP_SLOPE ("exact except the NTP slope")
 * and clears HORIZON_EXACT; the estimate (no module, no membarrier)
 * stays an estimate, margin taken off too.
 */
#define PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE	(1U << 10)
/*
 * An ADJ_TICK slew is on: adjtimex() (modes 0) reports a tick other than
 * the nominal 1000000 / USER_HZ (chrony slews so; |dmult|/mult up to
 * 10%, B measured up to 2.8 ms in an overcommitted VM). The horizons of
 * an NTP-disciplined clock are then an ESTIMATE outright, whatever
 * HORIZON_NTP_SLOPE says; only set for those clocks. Checked when info
 * or a name is asked for (perfclock_get_info(), the *_name() calls), at
 * most once every 100 ms per process: one adjtimex() system call, never
 * on the horizon paths. A slew that starts later shows at the next
 * check. (0.2.2)
 */
#define PERFCLOCK_CLOCK_HORIZON_NTP_SLEW	(1U << 11)
/*
 * The margin taken off every horizon of an NTP-disciplined clock: an
 * ESTIMATE, not a bound. B <= W * rho + 1 ns, W the update's window
 * (clocksource read to copy write, irqs off on the timekeeping CPU),
 * rho = |dmult| / mult: 10 us covers rho <= 20% (a full ADJ_TICK swing)
 * with W <= 50 us, a 100 ppm frequency step with W <= 100 ms, and the
 * steady state (rho ~ 2e-7) for any W below 50 s. Nothing bounds W on a
 * vCPU: a slew landing in a long stall was measured 280 times over it
 * (docs/percpu-horizon.md 4.3).
 */
#define PERFCLOCK_NTP_SLOPE_MARGIN_NS	(10000ULL)	/* 10 us */

struct perfclock_clock_info {
	uint32_t backend;		/* enum perfclock_backend */
	uint32_t flags;			/* PERFCLOCK_CLOCK_* */
	int32_t clockid;		/* clockid backend; -1 for the device */
	uint32_t abi_version;		/* device: PERFCLOCK_ABI_VERSION */
	/*
	 * How far one CPU's clock may read behind another's: the module's
	 * perfclock_info::skew_estimate_ns. An ESTIMATE in the unstable
	 * regime (from the timer delays of the last 10-20 s, see the UAPI
	 * header), 0 when the clock is global. Exact horizons do not use it.
	 */
	uint64_t skew_estimate_ns;
	uint64_t update_period_ns;	/* device page refresh period */
	uint64_t measured_skew_ns;	/* device: observed at load */
	/*
	 * device: the worst lateness of the module's timer seen since load
	 * (perfclock_info::timer_lateness_ns): how long this machine's CPUs
	 * get stalled, e.g. vCPUs descheduled by an overcommitted host.
	 */
	uint64_t timer_lateness_ns;
	/*
	 * How far behind "now" perfclock_horizon() was during this call: an
	 * exact read taken after it minus the horizon. For the page, about
	 * one grace period; for an estimate, the margins below.
	 */
	uint64_t horizon_age_ns;
	/*
	 * Estimated horizons only (0 when exact): the in-flight allowance
	 * taken off, max(PERFCLOCK_HORIZON_ESTIMATE_INFLIGHT_NS,
	 * timer_lateness_ns); the skew estimate comes off too.
	 */
	uint64_t inflight_estimate_ns;
	/* The horizons' generation (perfclock_horizon_gen()); 1 if none. */
	uint32_t horizon_generation;
	uint32_t reserved0;
	uint64_t reserved[1];
};

/*
 * Fill *info (device: refreshed by PERFCLOCK_IOC_GET_INFO). Takes a
 * horizon for horizon_age_ns: may block for a grace period when the
 * module's page holds none (see perfclock_horizon()).
 */
int perfclock_get_info(struct perfclock *clk,
		       struct perfclock_clock_info *info);

/*
 * What perfclock_horizon() is, from info's flags, for a tool to print at
 * start: "exact (module page)", "exact (module ioctl)", "exact
 * (membarrier)" or "estimate"; with HORIZON_NTP_SLOPE "exact except NTP
 * slope (membarrier)" (module page, module ioctl), and with
 * HORIZON_NTP_SLEW too "estimate: ADJ_TICK slew (membarrier)" (...).
 * A static string. (PERFCLOCK_0.2.1; NTP names 0.2.2)
 */
const char *perfclock_horizon_name(const struct perfclock_clock_info *info);

/*
 * PER-CPU HORIZON (PERFCLOCK_0.2.2; horizon_percpu.c; the proof:
 * docs/percpu-horizon.md and the horizon section of perfclock_ioctl.h).
 *
 * For an event opened per CPU (pid -1, cpu c) every record is stamped on
 * CPU c and published (data_head) on CPU c, with preemption disabled, or
 * in irq/NMI context, from the stamp to the data_head store
 * (kernel/events/ring_buffer.c: perf_output_begin() .. perf_output_end(),
 * perf_output_get_handle() disabling preemption; the stamp taken just
 * before it, in perf_prepare_sample() or the side-band output paths).
 * So at any instant at which a thread runs on CPU c in user space, or in
 * its own system call, no such section is open on c: every record c
 * stamped before that instant is already in ring c. A clock read taken
 * at that instant, on c, is an exact horizon for ring c alone: H_c. No
 * grace period: H_c is as old as the last time a reader ran on c.
 *
 * How a read is tied to its CPU, per clock (the backend, chosen at open):
 *  - the module (perfclock_open()): PERFCLOCK_IOC_GET_TIME, which reads
 *    local_clock() and the CPU in one preempt-disabled section
 *    (module/perfclock.c: perfclock_ioctl_get_time()). Per-CPU
 *    monotonicity of local_clock() is all it needs, so it holds in the
 *    unstable sched_clock regime too, and on paravirtual sched_clocks
 *    (kvm-clock) where perf's page has no time_zero. With the page's TSC
 *    conversion valid (a stable sched_clock) and a CPU with rdtscp, the
 *    page read uses rdtscp instead: its TSC and TSC_AUX (the CPU number
 *    Linux writes there, arch/x86/kernel/cpu/common.c: setup_getcpu())
 *    are one instruction's, no system call.
 *  - a use_clockid clock that is one clock for all CPUs and never steps
 *    (CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_BOOTTIME): the clock
 *    read by the clock_gettime SYSTEM CALL, then the CPU by getcpu. The
 *    thread ran on that CPU after the read, so every record stamped there
 *    before the read (a global clock: below the value read) was
 *    published by then. The system call reads tk_core under its
 *    seqcount, whose write section opens just before the vDSO copy and
 *    the fast copies perf stamps with are rewritten
 *    (kernel/time/timekeeping.c: timekeeping_advance() ->
 *    timekeeping_update(): update_vsyscall(), then
 *    update_fast_timekeeper()). For CLOCK_MONOTONIC_RAW that is exact:
 *    NTP never changes its rate. For CLOCK_MONOTONIC and CLOCK_BOOTTIME
 *    a read between the update's clocksource read and that write
 *    section still uses the old rate, and can be ahead of a later stamp
 *    when NTP lowered mult (docs/percpu-horizon.md, 4.3): exact except
 *    the NTP slope, the margin taken off (NTP SLOPE below). The vDSO
 *    has the same window, a little longer (until vdso_write_begin()).
 *  - perf's time_zero page (perfclock_open_perf_page(), or
 *    perfclock_open(NULL) without the module): rdtscp as above, with
 *    perf's own conversion; a CPU without rdtscp has none here.
 * Not offered (-EOPNOTSUPP, PERFCLOCK_CLOCK_HORIZON_PERCPU clear):
 * CLOCK_REALTIME and CLOCK_TAI (they step when set: perfclock_horizon()
 * keeps them), perf's page on a CPU without rdtscp.
 *
 * What it does NOT cover, where a tool keeps perfclock_horizon() (the
 * threaded reader below does this by itself, per ring):
 *  - a ring written from more than one CPU: per-thread events (pid >= 0
 *    with cpu -1), inherited events, PERF_EVENT_IOC_SET_OUTPUT across
 *    CPUs;
 *  - CPU hotplug: a CPU gone cannot run a reader (the reader falls back
 *    for its ring); a CPU added has no ring;
 *  - samples the PMU stamps itself (PEBS: perfclock_check_attr());
 *  - what THE FLUSH HORIZON leaves out (PERF_RECORD_READ, deferred
 *    callchains).
 *
 * A single-threaded tool keeps perfclock_horizon() and its round
 * pattern: nothing changes for it. To use H_c instead it can visit the
 * CPUs: for each CPU c, sched_setaffinity() to {c}, perfclock_horizon_cpu()
 * (check *cpu == c, else keep c's last H_c), drain ring c, and flush at
 * the minimum of the H_c whose drain completed; one migration per CPU
 * per round. The threaded reader (perfclock_reader.h: one pinned thread
 * per CPU, the caller's thread merging) does that without migrating,
 * and falls back per ring where H_c does not apply.
 *
 * DEFAULTS. Nothing here changes perfclock_horizon(): a tool gets H_c by
 * asking for it, or by using the threaded reader, whose default is H_c
 * for every ring it covers and perfclock_horizon() for the others.
 */

/*
 * H_c, read on the CPU the caller runs on: 0, *ns (H_c) and *cpu (c).
 * Every record of ring c (an event opened with pid -1, cpu c) stamped
 * below *ns is visible in ring c when this returns: load data_head after
 * it (perfclock_ring_read_begin()). Only for ring c. Never blocks, no
 * grace period; the module's ioctl or one clock_gettime and one getcpu
 * system call, or none with rdtscp.
 * Errors: -EOPNOTSUPP: this clock has no per-CPU horizon (keep
 * perfclock_horizon()); -EAGAIN: the read could not be tied to one CPU
 * (the module's generation moved during it, the page stayed busy): try
 * again; -ESTALE: the horizons restarted (the module's generation moved
 * since this clock's first per-CPU horizon: sched_clock turned unstable)
 * and this caller cannot follow: perfclock_horizon_cpu_gen(); -EINVAL.
 * Thread-safe. Successive values for one CPU do not go down within a
 * generation (each is a fresh read of a per-CPU monotonic clock).
 */
int perfclock_horizon_cpu(struct perfclock *clk, uint64_t *ns, uint32_t *cpu);

/*
 * perfclock_horizon_cpu() with the generation (as perfclock_horizon_gen(),
 * from 1) read with it: never -ESTALE. H_c of different generations do
 * not compare: on a newer one, flush everything held
 * (perfclock_queue_restart()) and take the new generation's H_c only.
 * The generation is the module's (its page's horizon_generation, when it
 * fills one); the use_clockid clocks and perf's page never restart (1).
 */
int perfclock_horizon_cpu_gen(struct perfclock *clk, uint64_t *ns,
			      uint32_t *cpu, uint32_t *gen);

/*
 * How perfclock_horizon_cpu() reads, from info's flags: "exact per-CPU
 * (module ioctl)", "exact per-CPU (module page, rdtscp)", "exact per-CPU
 * (clock_gettime + getcpu)" (CLOCK_MONOTONIC_RAW), "exact except NTP
 * slope, per-CPU (clock_gettime + getcpu)" (CLOCK_MONOTONIC,
 * CLOCK_BOOTTIME: NTP SLOPE above), "estimate per-CPU: ADJ_TICK slew
 * (clock_gettime + getcpu)" (the same during a slew), "exact per-CPU
 * (perf page, rdtscp)", or "none" (PERFCLOCK_CLOCK_HORIZON_PERCPU clear). perfclock_horizon_name()
 * goes on naming perfclock_horizon()'s. A static string.
 */
const char *perfclock_horizon_cpu_name(const struct perfclock_clock_info *info);

/*
 * The same name for clk, from what perfclock_open*() decided, without
 * taking a horizon: never blocks (perfclock_get_info() may, for a grace
 * period). "exact (module page)" here means the module hands its
 * horizons out on its page; a page that has none yet is read through the
 * ioctl. NULL clk: "unknown". (PERFCLOCK_0.2.2)
 */
const char *perfclock_clock_horizon_name(struct perfclock *clk);

/*
 * Is clk the clock that stamps records of an event opened with attr, and
 * can its horizon cover them? 0 if so; -EINVAL if not the clock (device
 * clock with use_clockid set, clockid clock without use_clockid or with
 * another clockid), or if attr has no PERF_SAMPLE_TIME in sample_type:
 * then none of its records carries a time (samples, and sample_id_all's
 * trailer, take it from sample_type), nothing can order them, and a
 * round loop would push time 0 (refused rather than added: the caller
 * parses its samples by its own sample_type, and a field added behind
 * its back would move every field after TIME); -EOPNOTSUPP if the PMU hardware takes the sample
 * time itself: precise_ip > 0 without use_clockid on a PMU that can do
 * PEBS (x86 Intel: arch/x86/events/intel/ds.c:setup_pebs_time() stamps
 * the sample with the PEBS record's TSC, taken before the record is
 * committed, with large PEBS long before; see "Not covered" in
 * perfclock_ioctl.h). Such records can come below any horizon. Open the
 * event without precise_ip, or with use_clockid
 * (perfclock_open_clockid()), where 6.1's setup_pebs_time() leaves the
 * time to perf_prepare_sample(). The PMU is found in
 * /sys/bus/event_source/devices (its caps/max_precise).
 */
int perfclock_check_attr(const struct perfclock *clk,
			 const struct perf_event_attr *attr);

/* Set attr->use_clockid/clockid to match clk (clears them for the device). */
void perfclock_fill_attr(const struct perfclock *clk,
			 struct perf_event_attr *attr);

/* ------------------------------------------------------------------ */
/* Ring reader                                                         */
/* ------------------------------------------------------------------ */

/*
 * One record as the reader hands it out. data points either into the ring
 * (valid until perfclock_ring_read_end()) or, for a record that wraps past
 * the end of the buffer, into the ring's scratch buffer (valid until the
 * next perfclock_ring_read_event()). size is the validated record size;
 * use it rather than re-reading the header from shared memory.
 */
struct perfclock_record {
	const void *data;		/* struct perf_event_header + body */
	uint32_t size;
	uint32_t type;			/* perf_event_header::type */
	uint64_t time;			/* valid if flags & HAS_TIME */
	uint32_t flags;			/* PERFCLOCK_RECORD_* */
	uint32_t misc;			/* perf_event_header::misc */
};

#define PERFCLOCK_RECORD_HAS_TIME	(1U << 0)
#define PERFCLOCK_RECORD_WRAPPED	(1U << 1)	/* copied to scratch */
/* Shared ring: the record carries an id no registered event has. */
#define PERFCLOCK_RECORD_UNKNOWN_EVENT	(1U << 2)

/*
 * RECORDS WITHOUT A TIME (no PERFCLOCK_RECORD_HAS_TIME): a sample of an
 * event without PERF_SAMPLE_TIME, another record of an event without
 * sample_id_all, a record whose event is unknown
 * (PERFCLOCK_RECORD_UNKNOWN_EVENT). They have no place in the time order:
 * do not push them to the queue with a made-up time (0 would be delivered
 * late, "now" could come out ahead of records still in flight). Do what
 * perf does (tools/perf/util/session.c: an event without a timestamp is
 * not queued, it is delivered at once): handle each as it is read,
 * outside the ordered stream, and count them. Better, have none:
 * PERF_SAMPLE_TIME and sample_id_all on every event give every kernel
 * record a time (perfclock_evring_open() and perfclock_check_attr()
 * refuse an attr without PERF_SAMPLE_TIME; sample_id_all is the
 * caller's choice). perfclock_evring_drain() counts them.
 */

struct perfclock_ring_stats {
	uint64_t records;		/* records handed out */
	uint64_t bytes;			/* bytes consumed */
	uint64_t lost_records;		/* PERF_RECORD_LOST records seen */
	uint64_t lost;			/* sum of their 'lost' fields */
	uint64_t lost_samples;		/* sum of PERF_RECORD_LOST_SAMPLES */
	uint64_t wrapped;		/* records copied out whole */
	uint64_t errors;		/* corruption reports */
	uint64_t skipped_bytes;		/* dropped by perfclock_ring_reset() */
};

/*
 * Wrap an mmap of a perf event (1 + 2^n pages, the first being
 * struct perf_event_mmap_page). attr (may be NULL) is the attr the event
 * was opened with: its sample_type/sample_id_all tell where the time is.
 * Does not take ownership of the mapping. Errors: EINVAL (length not one
 * header page plus a power-of-two data area), ENOMEM.
 *
 * A ring several events write into (PERF_EVENT_IOC_SET_OUTPUT, as perf
 * record and perf top do): pass attr NULL and register every event with
 * perfclock_ring_add_event(). A single attr is enough only when every
 * event sharing the ring has its sample_type and sample_id_all.
 */
struct perfclock_ring *perfclock_ring_new(void *base, size_t len,
					  const struct perf_event_attr *attr);
void perfclock_ring_free(struct perfclock_ring *ring);

/*
 * Register an event writing into this ring: its attr and its ids
 * (PERF_EVENT_IOC_ID; one per fd, several for an event opened on several
 * CPUs into one ring). Events are numbered 0, 1, ... in registration
 * order (the attr of perfclock_ring_new(), if any, is 0).
 *
 * When the events' layouts differ (sample_type or sample_id_all), each
 * record's event is found by the id it carries, as perf does
 * (util/evlist.c, evlist__id2evsel()): every event must then carry its id
 * at the same place, in samples and in the sample_id of other records.
 * PERF_SAMPLE_IDENTIFIER in every event's sample_type does that whatever
 * else they sample; PERF_SAMPLE_ID works when what precedes it agrees.
 * Events must also agree on sample_id_all. A set that breaks this is
 * refused: -EINVAL, and the ring is unchanged (so is an event added to a
 * ring whose first attr came without ids, if its layout differs). Records
 * carrying an id no event registered come with
 * PERFCLOCK_RECORD_UNKNOWN_EVENT and no time. (Seen on Linux 6.18: the
 * kernel shares one perf_sample_data among the software events of a CPU,
 * so while other processes run system-wide samplers of the same software
 * event, some of this ring's samples carry one of their ids.)
 * Errors: -EINVAL (also no ids), -EEXIST (an id already registered),
 * -ENOMEM.
 */
int perfclock_ring_add_event(struct perfclock_ring *ring,
			     const struct perf_event_attr *attr,
			     const uint64_t *ids, size_t nr_ids);

/*
 * The event (its registration index) of a record handed out by this
 * ring; 0 for a ring of one event. -ENOENT: the record carries no id
 * (a non-sample record without sample_id_all, say); -ESRCH: an id no
 * event registered; -EINVAL.
 */
int perfclock_ring_record_event(const struct perfclock_ring *ring,
				const struct perfclock_record *rec);

/*
 * Start reading: load data_head (acquire; pairs with the kernel's write
 * barrier before it publishes data_head). Returns the number of bytes
 * available, or -EBADMSG if head and tail are inconsistent (head behind
 * tail, more than the buffer size ahead, or not 8-byte aligned).
 */
int64_t perfclock_ring_read_begin(struct perfclock_ring *ring);

/*
 * Next record of the pass started by read_begin: 1 and *rec filled, 0
 * when the pass has no more, -EBADMSG when the record header is corrupt
 * (size 0, smaller than a header, not a multiple of 8, larger than the
 * buffer or than what head says is there). After an error the ring keeps
 * returning -EBADMSG until perfclock_ring_reset().
 */
int perfclock_ring_read_event(struct perfclock_ring *ring,
			      struct perfclock_record *rec);

/* Give the consumed bytes back to the kernel (data_tail, release store). */
void perfclock_ring_read_end(struct perfclock_ring *ring);

/* Drop everything up to the current head and clear the error state. */
void perfclock_ring_reset(struct perfclock_ring *ring);

void perfclock_ring_get_stats(const struct perfclock_ring *ring,
			      struct perfclock_ring_stats *stats);

/*
 * Time of a record of an event opened with attr (PERF_SAMPLE_TIME needed;
 * non-sample records need sample_id_all). 0 and *ns set, or -ENOENT.
 */
int perfclock_record_time(const void *data, size_t size,
			  const struct perf_event_attr *attr, uint64_t *ns);

/* ------------------------------------------------------------------ */
/* Opening the rings                                                   */
/* ------------------------------------------------------------------ */

/*
 * struct perfclock_evring: one set of events opened on every online CPU,
 * one ring per CPU, what a live tool needs before its first round:
 *
 *	struct perfclock_evring_config cfg;
 *	perfclock_evring_config_init(&cfg);	   64 data pages, pid -1
 *	cfg.attrs = attrs; cfg.nr_attrs = 2;
 *	er = perfclock_evring_open(clk, &cfg);	   NULL + errno
 *	perfclock_evring_enable(er);
 *	n = perfclock_evring_nr_rings(er);
 *	... perfclock_evring_ring(er, i) in the round pattern above, and
 *	perfclock_evring_pollfds(er, fds, n) + poll() between rounds.
 *	perfclock_evring_close(er);
 *
 * Each attr is copied, its size set and its clock fields filled for clk
 * (perfclock_fill_attr()); with more than one attr PERF_SAMPLE_IDENTIFIER
 * is added to each, as perf record does, so that records of the shared
 * ring are told apart (perfclock_ring_add_event(), done here with each
 * fd's id). The first attr's fd owns the CPU's mmap of 1 + data_pages
 * pages; the others are routed into it (PERF_EVENT_IOC_SET_OUTPUT). Opened
 * as given (set attr.disabled and enable them with
 * perfclock_evring_enable()). System-wide per CPU (pid -1) needs
 * CAP_PERFMON or perf_event_paranoid <= 0. Every attr must have
 * PERF_SAMPLE_TIME (EINVAL otherwise, as perfclock_check_attr()).
 */
struct perfclock_evring;
struct pollfd;			/* <poll.h> */

struct perfclock_evring_config {
	uint32_t size;			/* sizeof(struct perfclock_evring_config) */
	uint32_t nr_attrs;		/* 1 .. 64 */
	const struct perf_event_attr *attrs;
	uint32_t data_pages;		/* a power of two; default 64 */
	int32_t pid;			/* perf_event_open's pid: -1 every task */
	uint32_t flags;			/* none yet: 0 */
	uint32_t reserved0;
	uint64_t reserved[4];
};

void perfclock_evring_config_init(struct perfclock_evring_config *cfg);

/*
 * Open the set on every online CPU (/sys/devices/system/cpu/online; if it
 * cannot be read, every configured CPU but those perf says are offline).
 * Errors (errno): EINVAL (bad config: no attrs, an attr without
 * PERF_SAMPLE_TIME, data_pages not a power of two, unknown flags), those
 * of perf_event_open() (EACCES, EPERM: not permitted; ENOENT,
 * EOPNOTSUPP: no such event, also a tracepoint id that tracefs does not
 * list, which the kernel answers EINVAL), of mmap(), of
 * perfclock_ring_add_event() (EINVAL: records it could not tell apart),
 * ENODEV (no CPU), ENOMEM. Nothing stays open on failure. Which attr
 * and CPU failed goes to the log callback (perfclock_set_log()).
 */
struct perfclock_evring *
perfclock_evring_open(const struct perfclock *clk,
		      const struct perfclock_evring_config *cfg);
void perfclock_evring_close(struct perfclock_evring *er);

/* PERF_EVENT_IOC_ENABLE / _DISABLE on every fd: 0 or -errno. */
int perfclock_evring_enable(struct perfclock_evring *er);
int perfclock_evring_disable(struct perfclock_evring *er);

/* Rings are 0 .. nr_rings - 1, one per CPU, in CPU order. */
int perfclock_evring_nr_rings(const struct perfclock_evring *er);
struct perfclock_ring *perfclock_evring_ring(const struct perfclock_evring *er,
					     int idx);
int perfclock_evring_cpu(const struct perfclock_evring *er, int idx);
/* The fd of attrs[attr_idx] on ring idx (read() counters, ioctl()). */
int perfclock_evring_fd(const struct perfclock_evring *er, int idx,
			int attr_idx);
/* One POLLIN entry per ring into fds (nr_fds >= nr_rings): the count. */
int perfclock_evring_pollfds(const struct perfclock_evring *er,
			     struct pollfd *fds, int nr_fds);

/*
 * Wait up to timeout_ms (-1: for ever) for a ring to reach its wakeup
 * point (attr.wakeup_events / wakeup_watermark): poll() on every ring's
 * fd, as libperf's perf_evlist__poll(). Returns how many rings are
 * readable, 0 on timeout, -EINTR on a signal (check your stop flag),
 * -errno. (PERFCLOCK_0.2.2)
 */
int perfclock_evring_poll(const struct perfclock_evring *er, int timeout_ms);

/*
 * What perfclock_evring_drain() did, ADDED to the caller's counters
 * (zero them once; they then run for the whole trace).
 */
struct perfclock_drain_stats {
	uint64_t pushed;	/* records queued */
	/* PERF_RECORD_LOST records seen (never queued), and their sum:
	 * records the kernel dropped because a ring was full. */
	uint64_t lost_records;
	uint64_t lost;
	uint64_t lost_samples;	/* sum of PERF_RECORD_LOST_SAMPLES */
	/* Records with no time (RECORDS WITHOUT A TIME): never queued. */
	uint64_t no_time;
	uint64_t resets;	/* rings reset after a corrupt record */
	uint64_t reserved[4];
};

/*
 * Step 2 of THE ROUND PATTERN for every ring of er: read_begin, every
 * record, read_end. A record with a time goes to q with the ring's index
 * as its source (q needs nr_sources >= perfclock_evring_nr_rings()) and
 * the index of its attr in the delivered event's attr_idx.
 * PERF_RECORD_LOST and PERF_RECORD_LOST_SAMPLES are counted in *st
 * (lost, lost_samples), never queued; so are records without a time
 * (no_time). A ring that reports a corrupt record (-EBADMSG) is reset
 * (what it held is dropped, counted in resets) and the drain goes on.
 * Call it after perfclock_horizon(), then perfclock_queue_flush_until().
 * Returns the number of records queued, or -errno: -EINVAL, or what
 * perfclock_queue_push() returned (-ENOMEM: that record is not queued
 * and stays unread in its ring for the next call; a delivery callback's
 * error: the record was taken). st may be NULL. (PERFCLOCK_0.2.2)
 */
int64_t perfclock_evring_drain(struct perfclock_evring *er,
			       struct perfclock_queue *q,
			       struct perfclock_drain_stats *st);

/*
 * Errors that say what failed. The library never prints; a tool that
 * wants to know which attr and CPU perfclock_evring_open() failed on, or
 * why an attr was refused, gives a callback, as libperf_init() does:
 * fn(level, message, arg), message one line without a newline. fn NULL
 * (the default) turns it off. Process-wide; set it before opening
 * anything (a thread calling the library meanwhile may still use the old
 * callback once). (PERFCLOCK_0.2.2)
 */
#define PERFCLOCK_LOG_ERR	1
#define PERFCLOCK_LOG_DEBUG	2
typedef void (*perfclock_log_fn)(int level, const char *msg, void *arg);
void perfclock_set_log(perfclock_log_fn fn, void *arg);

/* ------------------------------------------------------------------ */
/* Ordered queue                                                       */
/* ------------------------------------------------------------------ */

/*
 * The queue is mechanism: push events from many sources, and emit, in
 * (timestamp, push order) order, everything below a time the caller
 * gives. What time is safe is the caller's policy; the round pattern at
 * the top of this file, with perfclock_horizon(), is the one the library
 * is built for. (demo_flush's user/demo/rules.c computes the older rules
 * from the 2013 thread on top of the same two calls, for comparison.)
 *
 * An event is LATE when it is pushed with a timestamp below the last one
 * already emitted: it can no longer be delivered in order. Late events are
 * never dropped: they are delivered at once with PERFCLOCK_EVENT_LATE,
 * counted, and the worst lateness is kept. Separately, below_horizon
 * counts pushes below the last flush limit (perf's "Timestamp below last
 * timeslice flush" condition) even when order could still be kept.
 */

/* struct perfclock_event::flags */
#define PERFCLOCK_EVENT_LATE	(1U << 0)	/* below what was emitted */
#define PERFCLOCK_EVENT_FORCED	(1U << 1)	/* emitted by the memory cap */

struct perfclock_event {
	uint64_t time;
	uint64_t lateness_ns;	/* LATE: last emitted time - time */
	const void *data;	/* the queue's copy (or the caller's pointer) */
	uint32_t size;
	uint32_t source;
	uint32_t flags;		/* PERFCLOCK_EVENT_* */
	/*
	 * The index in perfclock_evring_config::attrs of the event whose
	 * record this is, when perfclock_evring_drain() pushed it; 0 for
	 * perfclock_queue_push() (the field was reserved, and 0, in 0.2).
	 */
	uint32_t attr_idx;
};

/*
 * Delivery callback. The event and its data are valid during the call
 * only. Return 0 to go on; a negative errno stops the flush: the event
 * passed to that call counts as delivered, the ones after it stay queued,
 * and the value is returned by the function that was flushing (a positive
 * value is returned as -ECANCELED).
 */
typedef int (*perfclock_deliver_fn)(void *arg,
				    const struct perfclock_event *ev);

/* struct perfclock_queue_config::flags */
/* Do not copy pushed data; the caller keeps it alive until delivered. */
#define PERFCLOCK_QUEUE_NOCOPY		(1U << 0)

#define PERFCLOCK_QUEUE_DEFAULT_MEM_CAP		(64ULL << 20)	/* 64 MiB */

struct perfclock_queue_config {
	uint32_t size;			/* sizeof(struct perfclock_queue_config) */
	uint32_t nr_sources;		/* sources are 0 .. nr_sources - 1 */
	uint32_t flags;			/* PERFCLOCK_QUEUE_* */
	uint32_t reserved0;
	/*
	 * Bytes the queue may hold allocated between calls: everything it
	 * allocates after perfclock_queue_new() (per-source arrays, the
	 * straggler heap, the slab chunks of the copies; not the fixed
	 * per-source slots of perfclock_queue_new()), reported as
	 * mem_retained_bytes. When a push would need more, the queue first
	 * gives back what it does not use, then emits the oldest events at
	 * once with PERFCLOCK_EVENT_FORCED (counted in forced), a quarter
	 * of the queue at a time, until the push fits; it never refuses an
	 * event for it. Over the cap only: an empty queue takes one event
	 * whatever that needs (a cap below one slab chunk and one array,
	 * about 1.5 KiB, holds one event at a time), and a push whose
	 * forced flush a failing callback stopped (the event is queued all
	 * the same and the callback's error returned). Within a call,
	 * growing an array or moving copies briefly holds the old and the
	 * new. Memory also follows usage down: every 64 flushes, a queue
	 * holding more than twice what it needed over that time plus a
	 * 16th of the cap gives the rest back; a steady state allocates
	 * nothing.
	 */
	uint64_t mem_cap_bytes;		/* default: DEFAULT_MEM_CAP */
	perfclock_deliver_fn deliver;
	void *arg;
	uint64_t reserved[4];
};

/* Set the defaults (copy, 64 MiB cap). */
void perfclock_queue_config_init(struct perfclock_queue_config *cfg);

/* Errors: EINVAL (no deliver, zero sources, bad size), ENOMEM. */
struct perfclock_queue *
perfclock_queue_new(const struct perfclock_queue_config *cfg);
void perfclock_queue_free(struct perfclock_queue *q);

/*
 * Queue one event of a source. Copies size bytes of data (unless
 * NOCOPY). A late event is delivered before this returns (flagged).
 * Returns 0, -EINVAL (bad source), -ENOMEM (nothing changed: the event is
 * not queued, not counted), or the callback's value (a late delivery or
 * a forced flush failed; the event is delivered or queued all the same).
 */
int perfclock_queue_push(struct perfclock_queue *q, uint32_t source,
			 uint64_t time, const void *data, uint32_t size);

/*
 * Emit, in (time, push order) order, every queued event with
 * time < limit: STRICTLY below, because a record stamped exactly at the
 * horizon may still be in flight. Pass perfclock_horizon()'s value taken
 * before the rings were drained. A limit below an earlier one is not an
 * error (it emits what is queued below it). Returns the number of events emitted, or a
 * callback's value (the events not delivered stay queued).
 */
int64_t perfclock_queue_flush_until(struct perfclock_queue *q,
				    uint64_t limit);

/* Emit everything that is queued (end of stream). */
int64_t perfclock_queue_flush_all(struct perfclock_queue *q);

/*
 * The horizons restarted (PERFCLOCK_HORIZON_RESTARTED): emit everything
 * queued, in order, as perfclock_queue_flush_all(), then forget the
 * limits and times the old generation set (last_limit, last_emitted, each
 * source's last push), so that the new generation's events, stamped
 * below them, are ordered among themselves and not delivered LATE or
 * counted below_horizon against a void horizon. Counts restarts.
 * Returns what flush_all returns.
 */
int64_t perfclock_queue_restart(struct perfclock_queue *q);

struct perfclock_queue_stats {
	uint64_t pushed;
	uint64_t emitted;		/* in order, including forced */
	uint64_t late;			/* delivered with PERFCLOCK_EVENT_LATE */
	uint64_t worst_lateness_ns;
	uint64_t below_horizon;		/* pushed below the last flush limit */
	uint64_t forced;		/* emitted early by the memory cap */
	uint64_t out_of_order_in_source;/* pushed below the source's last */
	uint64_t queued;		/* currently queued */
	uint64_t mem_bytes;		/* queued entries and copies */
	uint64_t mem_peak_bytes;
	uint64_t flushes;		/* flush_until calls */
	uint64_t last_limit;		/* highest flush limit (exclusive) */
	uint64_t last_emitted;		/* time of the last in-order event */
	/* Allocated now, and at most between calls (see mem_cap_bytes). */
	uint64_t mem_retained_bytes;
	uint64_t mem_retained_peak_bytes;
	uint64_t restarts;		/* perfclock_queue_restart() calls */
};

void perfclock_queue_get_stats(const struct perfclock_queue *q,
			       struct perfclock_queue_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* LIBPERFCLOCK_H */
