/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The flush horizon's backends and steps. perfclock_horizon() (horizon.c)
 * makes each horizon in one pass through fixed steps (THE PIPELINE in
 * horizon.c): the sets, which ask the clock's backend, then the NTP
 * slope, then the generations; each step calls only those below it.
 *
 *	horizon.c		perfclock_horizon(), _gen(), _sync(): the
 *				pipeline, the shared last horizon and its
 *				generation (MEMORY ORDER), open and close
 *	horizon_sets.c		step 1, not a backend: the sets of a REALTIME
 *				or TAI clock, THE RULE every horizon of such
 *				a clock is kept by; asks step 2
 *	horizon_backend.c	step 2, not a backend: the choice of backend
 *				at open, asking it, the withdraw to the
 *				estimate
 *	horizon_module.c	the module's: its page, else GET_HORIZON,
 *				with the module's generation
 *	horizon_membarrier.c	no module, a global clock the library
 *				reads: a read, then membarrier(GLOBAL)
 *				twice, kept fresh by a helper thread
 *	horizon_estimate.c	no exact backend: read minus skew and
 *				in-flight allowance
 *	ntp_slope.c		step 3, not a backend: the NTP slope margin
 *				taken off every horizon of an NTP-disciplined
 *				clock, its flags and names (whatever the
 *				backend)
 *	horizon_percpu.c	not a backend of perfclock_horizon(): the
 *				per-CPU horizon H_c of perfclock_horizon_cpu(),
 *				beside whichever backend the clock has
 *
 * Below them all, the clock read (clock_read.c, clock_read.h) and the
 * time namespace (timens.c): the backends read the clock and the
 * module's estimates there, never through libperfclock.c, which opens
 * clocks and calls horizon.c. A backend whose horizon() or sync() reads
 * a clockid clock on the caller's thread calls
 * perfclock__timens_recheck_clock() first (timens.c, SETNS).
 *
 * HOW A NEW BACKEND PLUGS IN: write horizon_<name>.c with a
 * `const struct horizon_backend perfclock__horizon_<name>` implementing
 * the four calls below (and close if it holds resources: a thread, an
 * fd), declare it here, and pick it in
 * horizon_backend.c:perfclock__horizon_backend_choose(), which runs at
 * the end of every perfclock_open*(), after the device was attached or
 * not. Per-clock state of the backend goes in struct perfclock
 * (clock_internal.h) or behind clk->hz_state. The backend returns raw
 * horizons; horizon.c makes them monotonic, so a backend never needs to
 * remember its last value. A backend calls the clock read below it, never
 * horizon*.c above it.
 */
#ifndef PERFCLOCK_HORIZON_INTERNAL_H
#define PERFCLOCK_HORIZON_INTERNAL_H

#include <stdint.h>

#include "clock_internal.h"

struct horizon_backend {
	const char *name;
	/*
	 * A horizon now, not blocking if it can help it: 0, *ns and *gen,
	 * or -errno for the caller. *gen is the horizon's generation, read
	 * with it (in the same snapshot): a backend whose horizons never
	 * restart leaves it as it finds it (1). A newer generation voids
	 * the horizons handed out before (horizon.c resets, the caller is
	 * told); a backend bumps it when one it handed out may be above a
	 * later stamp. -ENOTTY: this backend cannot serve the clock after
	 * all (an older module refused the ioctl); horizon.c then switches
	 * the clock to the estimate for good.
	 */
	int (*horizon)(struct perfclock *clk, uint64_t *ns, uint32_t *gen);
	/*
	 * A fresh exact horizon (PERFCLOCK_HORIZON_SYNC_* flags, already
	 * checked): blocks as long as the proof takes. -EOPNOTSUPP if the
	 * backend is not exact; *gen and -ENOTTY as for horizon.
	 */
	int (*sync)(struct perfclock *clk, uint32_t flags, uint64_t *ns,
		    uint32_t *gen);
	/*
	 * Whether horizon() is exact (PERFCLOCK_CLOCK_HORIZON_EXACT): what
	 * the backend proves; for an NTP-disciplined clock ntp_slope.c
	 * reports it as PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE instead.
	 */
	int (*is_exact)(const struct perfclock *clk);
	/*
	 * Fill the rest of the horizon's part of perfclock_clock_info (the
	 * caller has set PERFCLOCK_CLOCK_HORIZON_EXACT from is_exact): other
	 * PERFCLOCK_CLOCK_HORIZON_* flags, inflight_estimate_ns.
	 */
	void (*info)(struct perfclock *clk, struct perfclock_clock_info *info);
	/* Optional (NULL): release what the backend holds, at close. */
	void (*close)(struct perfclock *clk);
};

extern const struct horizon_backend perfclock__horizon_module;
extern const struct horizon_backend perfclock__horizon_estimate;
extern const struct horizon_backend perfclock__horizon_membarrier;

/*
 * horizon_membarrier.c: can clk have the membarrier horizon (an eligible
 * clock, the kernel's barrier)? 0 and its state in clk->hz_state, or
 * -errno (-EOPNOTSUPP: not this clock; see perfclock_mb__available()).
 */
int perfclock__horizon_membarrier_attach(struct perfclock *clk);

/*
 * horizon_module.c: 1 if the timekeeping clocksource is paravirtual
 * (kvm-clock, xen, Hyper-V's): a use_clockid clock's cross-CPU order is
 * then the host's promise (PERFCLOCK_CLOCK_HORIZON_HOST_PROMISE).
 */
int perfclock__clocksource_paravirt(void);

/*
 * horizon.c: the horizon's part of open (0, or -errno with nothing held:
 * a REALTIME or TAI clock got no timerfd) and of close; the horizon's
 * fields of perfclock_get_info() (takes a horizon: may block).
 */
int perfclock__horizon_choose(struct perfclock *clk);
void perfclock__horizon_release(struct perfclock *clk);
int perfclock__horizon_info(struct perfclock *clk,
			    struct perfclock_clock_info *info);

/*
 * horizon_backend.c, step 2: pick clk->hz at open (and hz_opened), close
 * it at close. _ask(): the backend's raw horizon and its generation (0,
 * or -errno): sync, a fresh exact one with flags (-EOPNOTSUPP if the
 * backend is not exact); else fresh, the backend's sync() if it is
 * exact, its horizon() if not (a read after the call began); else its
 * horizon(). -ENOTTY from the module withdraws the clock to the
 * estimate. _info(): PERFCLOCK_CLOCK_HORIZON_EXACT if the backend proves
 * its horizons, and its own flags (never blocks).
 */
void perfclock__horizon_backend_choose(struct perfclock *clk);
void perfclock__horizon_backend_close(struct perfclock *clk);
int perfclock__horizon_ask(struct perfclock *clk, int sync, int fresh,
			   uint32_t flags, uint64_t *ns, uint32_t *gen);
void perfclock__horizon_backend_info(struct perfclock *clk,
				     struct perfclock_clock_info *info);

/*
 * horizon_estimate.c: the estimate's in-flight allowance, the larger of
 * PERFCLOCK_HORIZON_ESTIMATE_INFLIGHT_NS and the module's timer lateness
 * (perfclock__stall_estimate(), clock_read.h).
 */
uint64_t perfclock__inflight_estimate(struct perfclock *clk);
/*
 * horizon_sets.c, step 1: a clock that can be set (REALTIME, TAI)
 * follows its sets (a timerfd with TFD_TIMER_CANCEL_ON_SET, and the TAI
 * offset): _follow() at open (0, or -errno: no timerfd; set_tfd is -1
 * for any other clock), _release() at close. _take(): the backend's
 * horizon (perfclock__horizon_ask(), sync and flags as there), kept only
 * if proven after every set seen, its generation counting the sets (THE
 * RULE in horizon_sets.c): 0, or -errno (-EAGAIN: sets kept coming); any
 * other clock's straight from the backend.
 */
int perfclock__sets_follow(struct perfclock *clk);
void perfclock__sets_release(struct perfclock *clk);
int perfclock__sets_take(struct perfclock *clk, int sync, uint32_t flags,
			 uint64_t *h, uint32_t *gen);
/*
 * fork_guard.c's handlers (FORK in horizon_sets.c): _prefork() in the
 * parent under set_lock, _forked() in the child: a timerfd of its own.
 */
void perfclock__sets_prefork(struct perfclock *clk);
void perfclock__sets_forked(struct perfclock *clk);

/*
 * horizon_percpu.c: pick how the clock's per-CPU horizon is read, at
 * open (after the device was attached or not; from
 * perfclock__horizon_choose()); its part of perfclock_get_info().
 */
void perfclock__horizon_percpu_choose(struct perfclock *clk);
void perfclock__horizon_percpu_info(const struct perfclock *clk,
				    struct perfclock_clock_info *info);

/*
 * ntp_slope.c (docs/horizon.md, "The NTP slope"; docs/percpu-horizon.md 4.3):
 * is clk a clock NTP disciplines (use_clockid MONOTONIC, BOOTTIME,
 * REALTIME, TAI)? h less PERFCLOCK_NTP_SLOPE_MARGIN_NS for such a clock,
 * h for any other: step 3 of horizon.c's pipeline, before it publishes a
 * horizon; horizon_percpu.c where it returns H_c. _info() turns EXACT into
 * NTP_SLOPE and sets NTP_SLEW while the kernel slews; the _name()
 * calls name those (NULL: not theirs to name).
 */
int perfclock__ntp_disciplined(const struct perfclock *clk);
uint64_t perfclock__ntp_slope_lower(const struct perfclock *clk, uint64_t h);
void perfclock__ntp_slope_info(const struct perfclock *clk,
			       struct perfclock_clock_info *info);
const char *perfclock__ntp_slope_name(const struct perfclock_clock_info *info);
const char *
perfclock__ntp_slope_cpu_name(const struct perfclock_clock_info *info);
/*
 * An ADJ_TICK slew: adjtimex()'s tick against the nominal USER_TICK_USEC
 * of user_hz (sysconf(_SC_CLK_TCK)), 0 if either is unknown. Any slew
 * (ntp_slope.c says which): tx from adjtimex() (modes 0), adjtime_left
 * its ADJ_OFFSET_SS_READ offset. And the process's cached reading (two
 * adjtimex() calls, at most every 100 ms). The test hook injects a tick
 * (0: the kernel's again).
 */
struct timex;
int perfclock__ntp_tick_slewing(long tick, long user_hz);
int perfclock__ntp_timex_slewing(const struct timex *tx, long adjtime_left,
				 long user_hz);
int perfclock__ntp_slewing(void);
void perfclock__ntp_slope_test_set_tick(long tick);

/*
 * percpu_bpf_gate.c: is H_c exact for a ring that receives BPF output
 * records (a PERF_COUNT_SW_BPF_OUTPUT event, bpf_perf_event_output())
 * on the kernel of release and version (uname -r, uname -v)? Before the
 * helper disabled preemption itself (6.1.45, 6.4.10) uprobe and
 * trampoline programs ran it with migration disabled only. Unknown
 * (a Debian-style 6.1.0-N release without "Debian 6.1.S" in version,
 * an unparsable release) is not exact. _now(): this kernel's (uname()).
 * _attr_bpf_output(): 1 for an attr that opens such an event.
 */
enum {
	PERFCLOCK_KBPF_PREEMPT_OFF = 0,	/* exact */
	PERFCLOCK_KBPF_PREEMPTIBLE,	/* in the affected ranges */
	PERFCLOCK_KBPF_UNKNOWN,		/* cannot tell: as affected */
};
struct perf_event_attr;
int perfclock__kernel_bpf_output(const char *release, const char *version);
int perfclock__kernel_bpf_output_now(void);
int perfclock__attr_bpf_output(const struct perf_event_attr *attr);
const char *perfclock__kbpf_name(int k);

#endif /* PERFCLOCK_HORIZON_INTERNAL_H */
