/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libperfclock: the flush horizon of a clock (struct perfclock,
 * perfclock/clock.h): a time H such that every perf record stamped below
 * H is already in its ring. Read every ring after taking H, flush below
 * it (the round pattern: libperfclock.h), and the merge is in order.
 *
 * Where H comes from, chosen at open: the module's (a grace period, exact),
 * else membarrier's (two grace periods, exact, no module), else an
 * estimate; perfclock_get_info() says which. Why each is what it says:
 * docs/horizon.md (the module's), docs/membarrier-horizon.md (without
 * it), docs/library.md (which clock gets which). Beside it, per CPU: H_c
 * (perfclock_horizon_cpu() below; docs/percpu-horizon.md).
 */
#ifndef LIBPERFCLOCK_HORIZON_H
#define LIBPERFCLOCK_HORIZON_H

#include <stdint.h>

#include "clock.h"

#ifdef __cplusplus
extern "C" {
#endif

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
 * clock's at every set it sees, whatever the backend
 * (PERFCLOCK_CLOCK_SETTABLE): every H returned before is void, and the
 * new ones may be smaller. perfclock_horizon() then fails, on every call,
 * until the program takes its horizons from perfclock_horizon_gen(),
 * which reports the restart and goes on. (A program written before
 * generations existed stops with an error instead of merging on a void
 * horizon.)
 *
 * Exact (PERFCLOCK_CLOCK_HORIZON_EXACT in perfclock_get_info()) from
 * membarrier (PERFCLOCK_CLOCK_HORIZON_MEMBARRIER: no system call, the
 * newest of a helper thread the first call starts; that first call in a
 * process or a fork() child, and the first after a second in which no
 * horizon was asked for, blocks for two grace periods;
 * docs/membarrier-horizon.md), or when the module hands out horizons:
 *  - from the page, no system call: the newest horizon the module has
 *    proven, about one RCU grace period old (perfclock_page_horizon());
 *  - else PERFCLOCK_IOC_GET_HORIZON, which BLOCKS for a normal grace
 *    period (microseconds to a few milliseconds on an idle machine, tens
 *    of ms or more in an overcommitted VM): one of its own with
 *    CAP_PERFMON or CAP_SYS_ADMIN, else the system's next one or one the
 *    module starts at most every horizon_gp_idle_ms (default 50 ms, never
 *    under 50 ms for them) for all unprivileged callers together, so up
 *    to that much longer
 *    ("WHO ARMS WHAT" in module/perfclock_ioctl.h).
 * Otherwise (no module and no membarrier horizon for this clock:
 * docs/library.md) an ESTIMATE, never exact: an exact read of the clock
 * minus the module's skew estimate minus an in-flight allowance, the
 * larger of PERFCLOCK_HORIZON_ESTIMATE_INFLIGHT_NS and the CPU stall the
 * module has measured (perfclock_clock_info::inflight_estimate_ns). A
 * record whose writer stalls longer between stamping and committing it
 * (a vCPU descheduled by its host) can then still turn up below H: the
 * queue delivers it flagged PERFCLOCK_EVENT_LATE. The module's skew and
 * stall estimates are followed on its page; without the page (an unknown
 * page version, a failed mmap) the library asks PERFCLOCK_IOC_GET_INFO
 * for them, at most every 10 ms.
 *
 * Errors: -EINVAL (NULL); -ESTALE as above; for a clock that can be set,
 * -EAGAIN when each of four reads in a row was followed by a new set
 * (ask again), and in a fork() child that could get no timerfd of its
 * own, timerfd_create()'s error (-EMFILE) from every call; with the
 * membarrier horizon, an error of the helper thread (its clock read, its
 * barrier), returned from then on: never a silent estimate.
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
 * The margin taken off every horizon of an NTP-disciplined clock
 * (PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE): an ESTIMATE, not a bound. What it
 * covers, and the long vCPU stall it does not: docs/percpu-horizon.md 4.3.
 */
#define PERFCLOCK_NTP_SLOPE_MARGIN_NS	(10000ULL)	/* 10 us */

/*
 * What perfclock_horizon() is, from info's flags, for a tool to print at
 * start: "exact (module page)", "exact (module ioctl)", "exact
 * (membarrier)" or "estimate"; with HORIZON_NTP_SLOPE "exact except NTP
 * slope (membarrier)" (module page, module ioctl), and with
 * HORIZON_NTP_SLEW too "estimate: NTP slew (membarrier)" (...).
 * A static string. (PERFCLOCK_0.2.1; NTP names 0.2.2)
 */
const char *perfclock_horizon_name(const struct perfclock_clock_info *info);

/*
 * PER-CPU HORIZON (PERFCLOCK_0.2.2; horizon_percpu.c). Every record of a
 * ring fed only by events opened per CPU (pid -1, cpu c) is stamped and
 * published on c without a task switch between, so a clock read taken
 * while the caller runs on c is an exact horizon for ring c alone: H_c,
 * no grace period. How each backend ties its read to c, what H_c does not
 * cover, and the proof: docs/percpu-horizon.md (section 7: the library).
 * Nothing here changes perfclock_horizon(); the threaded reader
 * (perfclock/reader.h) uses H_c for every ring it covers.
 */

/*
 * H_c, read on the CPU the caller runs on: 0, *ns (H_c) and *cpu (c).
 * Every record of ring c (an event opened with pid -1, cpu c) stamped
 * below *ns is visible in ring c when this returns: load data_head after
 * it (perfclock_ring_read_begin()). Only for ring c: not for a ring
 * written from more than one CPU (per-thread or inherited events,
 * PERF_EVENT_IOC_SET_OUTPUT across CPUs), nor for samples the PMU stamps
 * itself (perfclock_check_attr()). Never blocks, no grace period; the
 * module's ioctl or one clock_gettime and one getcpu system call, or
 * none with rdtscp.
 * Errors: -EOPNOTSUPP: this clock has no per-CPU horizon (keep
 * perfclock_horizon(); CLOCK_REALTIME, CLOCK_TAI, perf's page on a CPU
 * without rdtscp, the module without its page or without generations),
 * or no longer has one (for good: the module came to refuse perf_clock()
 * horizons, or TSC_AUX stopped holding the CPU number after a new
 * generation or a resume; said once to the log); -EAGAIN: the read could not be tied to one CPU
 * (the module's generation moved during it, the page stayed busy, a
 * sched_clock reset was under way): try again; -ESTALE: the horizons restarted (the module's generation moved
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
 * The generation is the module's (its page's horizon_generation); for
 * perf's page the library's own, moved whenever the page's conversion
 * (time_zero, time_mult, time_shift) changes (a TSC recalibration, a
 * resume); the use_clockid clocks never restart (1).
 */
int perfclock_horizon_cpu_gen(struct perfclock *clk, uint64_t *ns,
			      uint32_t *cpu, uint32_t *gen);

/*
 * How perfclock_horizon_cpu() reads, from info's flags: "exact per-CPU
 * (module ioctl)", "exact per-CPU (module page, rdtscp)", "exact per-CPU
 * (clock_gettime + getcpu)" (CLOCK_MONOTONIC_RAW), "exact except NTP
 * slope, per-CPU (clock_gettime + getcpu)" (CLOCK_MONOTONIC,
 * CLOCK_BOOTTIME: PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE), "estimate per-CPU:
 * NTP slew (clock_gettime + getcpu)" (the same during a slew),
 * "exact per-CPU (perf page, rdtscp)", or "none"
 * (PERFCLOCK_CLOCK_HORIZON_PERCPU clear). perfclock_horizon_name() goes
 * on naming perfclock_horizon()'s. A static string.
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

#ifdef __cplusplus
}
#endif

#endif /* LIBPERFCLOCK_HORIZON_H */
