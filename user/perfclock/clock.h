/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libperfclock: struct perfclock, the clock perf stamps its records with.
 * Opening it (three backends), reading it, what it is
 * (perfclock_get_info()), and whether it is the clock of a given event.
 * Its flush horizon is in perfclock/horizon.h.
 *
 * The backends, chosen by the constructor:
 *  - the module: perfclock_open("/dev/perfclock"), the clock of events
 *    opened WITHOUT attr.use_clockid (local_clock());
 *  - perf's own page: perfclock_open_perf_page(), the same clock through
 *    perf's time_zero conversion of a ring the tool has mapped, where
 *    the kernel offers it (cap_user_time_zero); no module needed;
 *  - clock_gettime: perfclock_open_clockid(CLOCK_MONOTONIC, ...), the
 *    clock of events opened WITH attr.use_clockid = 1 and that clockid.
 * Which backend and which horizon for which clock, and why:
 * docs/library.md; the tables: user/README.md, "Clock".
 *
 * Reads of a clock are thread-safe. Conventions as the whole library's
 * (libperfclock.h): NULL and errno from constructors, -errno elsewhere.
 */
#ifndef LIBPERFCLOCK_CLOCK_H
#define LIBPERFCLOCK_CLOCK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PERFCLOCK_DEFAULT_PATH	"/dev/perfclock"

struct perfclock;
struct perf_event_attr;		/* <linux/perf_event.h> */

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
 * CLOCK_MONOTONIC_RAW and CLOCK_BOOTTIME (docs/membarrier-horizon.md), the
 * estimate for the others or where the kernel has no barrier. Exact for
 * CLOCK_MONOTONIC_RAW only: the others are exact except the NTP slope
 * (PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE below), the module's horizons for
 * them too. CLOCK_REALTIME and CLOCK_TAI also hold a timerfd that follows
 * their sets (PERFCLOCK_CLOCK_SETTABLE below).
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
 * exact; otherwise it is membarrier's, exact too
 * (docs/membarrier-horizon.md), or the estimate where the kernel has no
 * barrier. perfclock_read_ioctl() is -EOPNOTSUPP; perfclock_read() and
 * perfclock_read_lower_bound() return -EOPNOTSUPP if the kernel withdraws
 * cap_user_time_zero (an unstable TSC).
 * Errors: EINVAL (pc NULL), EOPNOTSUPP (no cap_user_time_zero: use the
 * module), EAGAIN (the page stayed busy), ENOMEM.
 */
struct perf_event_mmap_page;	/* <linux/perf_event.h> */
struct perfclock *perfclock_open_perf_page(const struct perf_event_mmap_page *pc);

/* Close the clock (and stop its membarrier helper thread). NULL: nothing. */
void perfclock_close(struct perfclock *clk);

/*
 * The best EXACT read: a value the clock had during the call, on the
 * calling CPU. A perf record produced on this CPU between two reads has a
 * timestamp between the two values. NOT a flush horizon: a record
 * stamped just before it can still be in flight (perfclock_horizon()).
 *  - module: the page's TSC conversion when the page says it is valid (no
 *    system call, no allocation, at most PERFCLOCK_PAGE_MAX_RETRIES tries
 *    of the seq loop), otherwise PERFCLOCK_IOC_GET_TIME;
 *  - clockid: clock_gettime(clockid) (vDSO when the kernel offers it),
 *    less the time namespace's offset (perf stamps without it). A
 *    single-threaded process that setns() into another time namespace
 *    with the clock open gets reads less the OLD offset until the library
 *    rechecks: at perfclock_get_info(), at a horizon that reads the clock
 *    (perfclock_horizon_cpu(), the estimate, membarrier's sync) or at an
 *    open; call perfclock_get_info() after the setns(). Every horizon is
 *    taken with the new offset (user/timens.c, SETNS).
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
 * The clock can be set (REALTIME, TAI): it may step backwards. Every set
 * the library sees restarts the horizons (PERFCLOCK_HORIZON_RESTARTED,
 * -ESTALE), whatever the backend; records stamped between a set and the
 * next horizon call can come late. What is promised, set by set:
 * docs/horizon.md, "Sets of CLOCK_REALTIME and CLOCK_TAI in the library".
 * No per-CPU horizon for these clocks.
 */
#define PERFCLOCK_CLOCK_SETTABLE	(1U << 3)
/*
 * perfclock_horizon() is exact: the module or membarrier proves it, for
 * a clock with no NTP slope term (perf_clock(), CLOCK_MONOTONIC_RAW).
 * Without this flag it is exact except the NTP slope
 * (PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE) or an estimate
 * (inflight_estimate_ns says with what margin).
 */
#define PERFCLOCK_CLOCK_HORIZON_EXACT	(1U << 4)
/* perfclock_horizon() reads the page right now (no system call). */
#define PERFCLOCK_CLOCK_HORIZON_PAGE	(1U << 5)
/*
 * The exact horizon's cross-CPU step rests on the hypervisor's promise:
 * the clock comes from a paravirtual clock (perf_clock(): the module's
 * PERFCLOCK_INFO_SCHED_CLOCK_PARAVIRT; a use_clockid clock: kvm-clock,
 * xen or Hyper-V), which a guest cannot check (user/README.md,
 * "Paravirtual clocks").
 */
#define PERFCLOCK_CLOCK_HORIZON_HOST_PROMISE	(1U << 6)

/*
 * The exact horizon comes from membarrier(MEMBARRIER_CMD_GLOBAL), not
 * from the module (docs/membarrier-horizon.md): set with HORIZON_EXACT
 * or HORIZON_NTP_SLOPE.
 */
#define PERFCLOCK_CLOCK_HORIZON_MEMBARRIER	(1U << 7)

/*
 * perfclock_horizon_cpu() gives exact per-CPU horizons for this clock
 * (CLOCK_MONOTONIC and CLOCK_BOOTTIME: exact except the NTP slope);
 * without it, -EOPNOTSUPP there. (PERFCLOCK_0.2.2)
 */
#define PERFCLOCK_CLOCK_HORIZON_PERCPU	(1U << 8)
/*
 * ... and reads them without a system call: rdtscp, whose TSC_AUX says
 * the CPU, with the module's page or perf's time_zero page. (0.2.2)
 */
#define PERFCLOCK_CLOCK_HORIZON_PERCPU_TSC_AUX	(1U << 9)

/*
 * A clock NTP disciplines (use_clockid CLOCK_MONOTONIC, CLOCK_BOOTTIME,
 * CLOCK_REALTIME, CLOCK_TAI): every horizon of it would be exact but for
 * the NTP slope term, and has PERFCLOCK_NTP_SLOPE_MARGIN_NS taken off
 * (0.3; HORIZON_EXACT is then clear). Why, and what is exact for which
 * clock: docs/horizon.md, "The NTP slope"; docs/percpu-horizon.md, 4.3.
 */
#define PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE	(1U << 10)
/*
 * The kernel slews the clock (adjtimex() reports a tick other than the
 * nominal, a PLL offset still being applied, an adjtime() slew under
 * way, or PPS discipline; 0.2.2 saw the tick only): the horizons of an
 * NTP-disciplined clock are then an ESTIMATE outright, whatever HORIZON_NTP_SLOPE says; set for those
 * clocks only. Checked when info or a name is asked for
 * (perfclock_get_info(), the *_name() calls), at most every 100 ms per
 * process, never on the horizon paths. (0.2.2)
 */
#define PERFCLOCK_CLOCK_HORIZON_NTP_SLEW	(1U << 11)

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
 * docs/horizon.md). Such records can come below any horizon. Open the
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

#ifdef __cplusplus
}
#endif

#endif /* LIBPERFCLOCK_CLOCK_H */
