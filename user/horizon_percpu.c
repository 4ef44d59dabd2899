// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The per-CPU horizon H_c: perfclock_horizon_cpu(). A clock read that is
 * tied to the CPU it was taken on (or, for a global clock, followed by
 * proof of the CPU the thread then ran on) is an exact horizon for that
 * CPU's per-CPU ring: PER-CPU HORIZON in perfclock/horizon.h says why,
 * and docs/percpu-horizon.md has the proof with its kernel citations
 * (section 7: how each backend here reads it).
 *
 * Not a backend of perfclock_horizon() (horizon_internal.h): those hand
 * out one horizon for every ring, this one a horizon for one ring. It
 * sits beside whichever backend the clock has, and picks its own read
 * at open (perfclock__horizon_percpu_choose()):
 *
 *	PC_MODULE_IOCTL		PERFCLOCK_IOC_GET_TIME: ns and cpu from one
 *				preempt-disabled section of the module
 *	PC_MODULE_TSC_AUX	the module's page, stable sched_clock, with
 *				rdtscp: TSC and TSC_AUX in one instruction
 *	PC_CLOCKID_GETCPU	clock_gettime() system call, then getcpu
 *	PC_PERF_TSC_AUX		perf's time_zero page with rdtscp
 *
 * Restarts and resumes (docs/percpu-horizon.md, 7.1): each read checks
 * its generation against the last one checked (the module's, from its
 * page; for perf's page the library's own, moved when the page's
 * conversion changes), and the rdtscp reads check whether the machine
 * was suspended since. Either event re-asks what H_c rests on (the
 * module: does it still hand out perf_clock() horizons; rdtscp: does
 * TSC_AUX still hold the CPU number) before the read is taken again,
 * and refuses H_c for good (-EOPNOTSUPP) when that no longer holds.
 *
 * Nothing here is shared between threads but the pc_* fields of struct
 * perfclock (atomics), so any number of reader threads call it at once
 * without a lock.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "perfclock/log.h"
#include "internal.h"
#include "clock_internal.h"
#include "clock_read.h"
#include "cpu_rdtscp.h"
#include "horizon_internal.h"
#include "timens.h"

enum {
	PC_NONE = 0,
	PC_MODULE_IOCTL,
	PC_MODULE_TSC_AUX,
	PC_CLOCKID_GETCPU,
	PC_PERF_TSC_AUX,
};

/*
 * Does TSC_AUX hold the CPU number, as Linux writes it? Asked once at
 * open: a hypervisor could offer rdtscp and leave TSC_AUX to something
 * else. A sample whose rdtscp, getcpu, rdtscp agree proves it; a
 * migration in between only makes one try inconclusive.
 */
static int tsc_aux_is_cpu(void)
{
	uint32_t a, b;
	int tries, cpu;

	if (!perfclock__cpu_has_rdtscp())
		return 0;
	for (tries = 0; tries < 16; tries++) {
		perfclock__rdtscp(&a);
		cpu = sched_getcpu();
		perfclock__rdtscp(&b);
		if (cpu < 0)
			return 0;
		if (a == b && (a & PERFCLOCK_TSC_AUX_CPU_MASK) == (uint32_t)cpu)
			return 1;
	}
	return 0;
}

static int module_gen(const struct perfclock *clk, uint32_t *gen);

/* Say once per process why a module clock has no H_c. */
static void say_no_module_hc(const char *why)
{
	static int said;

	if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		perfclock__log(PERFCLOCK_LOG_ERR,
			       "perfclock: no per-CPU horizon from the module: %s",
			       why);
}

void perfclock__horizon_percpu_choose(struct perfclock *clk)
{
	int tsc_aux = tsc_aux_is_cpu();
	uint32_t g = 0;

	clk->pc_mode = PC_NONE;
	__atomic_store_n(&clk->pc_gen_first, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&clk->pc_gen_seen, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&clk->pc_conv_seq, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&clk->pc_boot_off, INT64_MIN, __ATOMIC_RELAXED);
	__atomic_store_n(&clk->pc_refused, 0, __ATOMIC_RELAXED);
	switch (clk->backend) {
	case PERFCLOCK_BACKEND_DEVICE:
		/*
		 * The generation that says sched_clock was reset is on the
		 * page only: GET_TIME and GET_INFO carry none, and
		 * GET_HORIZON's waits for a grace period. Without it a reset
		 * between two reads is invisible, and an H_c from before it
		 * can be above records stamped after it: no H_c then.
		 */
		if (!clk->page) {
			say_no_module_hc("its page is not mapped, and only the page says the horizon generation (a sched_clock reset would go unseen)");
			break;
		}
		if (!(clk->info.flags & PERFCLOCK_INFO_HORIZON_GENERATION)) {
			say_no_module_hc("the module fills no horizon generation (a sched_clock reset would go unseen)");
			break;
		}
		if (clk->info.flags & PERFCLOCK_INFO_PERF_HORIZON_REFUSED) {
			say_no_module_hc("the module refuses perf_clock() horizons (a sched_clock reset may have gone unseen)");
			break;
		}
		/* Checked at open: the first read need not ask again. */
		if (!module_gen(clk, &g))
			__atomic_store_n(&clk->pc_gen_seen, g, __ATOMIC_RELAXED);
		/*
		 * GET_TIME is in every ABI this library opens. The page's
		 * conversion is used when it is valid at read time, else
		 * the ioctl (each read decides).
		 */
		clk->pc_mode = PERFCLOCK_PAGE_HAVE_TSC && tsc_aux ?
			       PC_MODULE_TSC_AUX : PC_MODULE_IOCTL;
		break;
	case PERFCLOCK_BACKEND_CLOCKID:
		/* Global, never stepping: REALTIME and TAI are set. */
		if (clk->clockid == CLOCK_MONOTONIC ||
		    clk->clockid == CLOCK_MONOTONIC_RAW ||
		    clk->clockid == CLOCK_BOOTTIME)
			clk->pc_mode = PC_CLOCKID_GETCPU;
		break;
	case PERFCLOCK_BACKEND_PERF_PAGE:
		if (PERFCLOCK_PAGE_HAVE_TSC && tsc_aux)
			clk->pc_mode = PC_PERF_TSC_AUX;
		break;
	}
}

/*
 * The module's horizon generation on its page. Only chosen with a page
 * and a module that fills the generation (perfclock__horizon_percpu_choose()).
 */
static int module_gen(const struct perfclock *clk, uint32_t *gen)
{
	const struct perfclock_page *pg = clk->page;
	uint32_t seq, g;
	int tries;

	if (!pg || !(clk->info.flags & PERFCLOCK_INFO_HORIZON_GENERATION))
		return -EOPNOTSUPP;
	for (tries = 0; tries < PERFCLOCK_PAGE_MAX_RETRIES; tries++) {
		if (tries)
			perfclock_cpu_relax();
		seq = perfclock_page_seq_begin(pg);
		g = perfclock_page_load(pg->horizon_generation);
		if (!perfclock_page_seq_retry(pg, seq)) {
			*gen = g;
			return 0;
		}
	}
	return -EAGAIN;
}

/*
 * GET_TIME: the module reads local_clock() and smp_processor_id() with
 * preemption disabled, on the CPU the read belongs to. The generation
 * is read around it: a change during the ioctl means the read may be of
 * either generation (-EAGAIN, the caller asks again), and so does a read
 * the module flags as made during a sched_clock reset (the generation
 * moves at its entry and at its return, and a read between them may be
 * of the clock before or after it).
 */
static int module_ioctl(struct perfclock *clk, uint64_t *ns, uint32_t *cpu,
			uint32_t *gen)
{
	struct perfclock_time t;
	uint32_t g0, g1;
	int err;

	err = module_gen(clk, &g0);
	if (err)
		return err;
	memset(&t, 0, sizeof(t));
	if (ioctl(clk->fd, PERFCLOCK_IOC_GET_TIME, &t))
		return -errno;
	/* Read during a sched_clock reset: of either clock, no bound. */
	if (t.flags & PERFCLOCK_TIME_RESET_PENDING)
		return -EAGAIN;
	err = module_gen(clk, &g1);
	if (err)
		return err;
	if (g0 != g1)
		return -EAGAIN;
	*ns = t.ns;
	*cpu = t.cpu;
	*gen = g1;
	return 0;
}

/*
 * The module's page with rdtscp, while the page says its conversion is
 * valid (a stable sched_clock); otherwise the ioctl. The generation is
 * read in the same seq section as the conversion.
 */
static int module_tsc_aux(struct perfclock *clk, uint64_t *ns, uint32_t *cpu,
			  uint32_t *gen, int *used_aux)
{
	const struct perfclock_page *pg = clk->page;
	uint64_t mult, offset, tsc;
	uint32_t seq, shift, flags, aux, g;
	int tries;

	for (tries = 0; tries < PERFCLOCK_PAGE_MAX_RETRIES; tries++) {
		if (tries)
			perfclock_cpu_relax();
		seq = perfclock_page_seq_begin(pg);
		flags = perfclock_page_load(pg->flags);
		mult = perfclock_page_load(pg->tsc_mult);
		shift = perfclock_page_load(pg->tsc_shift);
		offset = perfclock_page_load(pg->tsc_offset);
		g = perfclock_page_load(pg->horizon_generation);
		if (!(flags & PERFCLOCK_PAGE_TSC_VALID) || shift >= 64)
			return module_ioctl(clk, ns, cpu, gen);
		tsc = perfclock__rdtscp(&aux);
		if (perfclock_page_seq_retry(pg, seq))
			continue;
		*ns = perfclock_tsc_to_ns(tsc, mult, shift, offset);
		*cpu = aux & PERFCLOCK_TSC_AUX_CPU_MASK;
		*gen = g;
		*used_aux = 1;
		return 0;
	}
	return -EAGAIN;
}

/*
 * A global clock: the clock_gettime SYSTEM CALL (its NTP slope window is
 * the shorter of the two: docs/percpu-horizon.md, section 7), then the
 * CPU. The thread ran on *cpu after the read; where it read does not
 * matter, the clock being one for all CPUs. sched_getcpu() is the vDSO's getcpu (RDPID or the per-CPU
 * segment limit) or the system call: the CPU at that instant.
 */
static int clockid_getcpu(struct perfclock *clk, uint64_t *ns, uint32_t *cpu)
{
	struct timespec ts;
	int c;

	/*
	 * The read below gets the offset of the namespace we are in now
	 * (kernel/time/posix-timers.c: posix_get_monotonic_timespec() ->
	 * timens_add_monotonic()); a setns() since the offsets were read
	 * would leave the old one to take off, and H_c wrong by the
	 * difference (timens.h: perfclock__timens_recheck()).
	 */
	perfclock__timens_recheck_clock(clk->clockid);
	if (syscall(SYS_clock_gettime, clk->clockid, &ts))
		return -errno;
	c = sched_getcpu();
	if (c < 0)
		return errno == ENOSYS ? -EOPNOTSUPP : -errno;
	*ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	*cpu = (uint32_t)c;
	/* The system call adds a time namespace's offset too: take it off. */
	return perfclock__timens_to_host(clk->clockid, ns);
}

/*
 * The library's generation for perf's page: moved whenever the page's
 * conversion (time_zero, time_mult, time_shift) differs from the one the
 * current generation was read with. x86 rewrites it (cyc2ns) when the
 * TSC is recalibrated and at resume from S3
 * (arch/x86/kernel/tsc.c: tsc_restore_sched_clock_state()), and a page
 * refreshed late after a resume converts the new TSC with the old
 * offset: nothing promises that a value read with the old conversion is
 * below every stamp after the change. So a change is a restart.
 *
 * pc_conv_seq is a seq count (odd while one thread rewrites the fields);
 * lock is the page's own seq count at the read, so that a read older
 * than the recorded conversion (a thread that read the page before
 * another saw it change) does not flip the generation back: -EAGAIN.
 * Returns 0 with *gen, and *changed when this call moved it.
 */
static int perf_gen(struct perfclock *clk, uint64_t zero, uint64_t ms,
		    uint32_t lock, uint32_t *gen, int *changed)
{
	uint32_t s, g, l;
	uint64_t z, m;
	int tries;

	*changed = 0;
	for (tries = 0; tries < PERFCLOCK_PAGE_MAX_RETRIES; tries++) {
		if (tries)
			perfclock_cpu_relax();
		s = __atomic_load_n(&clk->pc_conv_seq, __ATOMIC_ACQUIRE);
		if (s & 1)
			continue;
		z = __atomic_load_n(&clk->pc_conv_zero, __ATOMIC_RELAXED);
		m = __atomic_load_n(&clk->pc_conv_ms, __ATOMIC_RELAXED);
		l = __atomic_load_n(&clk->pc_conv_lock, __ATOMIC_RELAXED);
		g = __atomic_load_n(&clk->pc_gen_seen, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&clk->pc_conv_seq, __ATOMIC_RELAXED) != s)
			continue;
		if (s && z == zero && m == ms) {
			*gen = g;
			return 0;
		}
		/* Read before the conversion on record: not a change. */
		if (s && (int32_t)(lock - l) < 0)
			return -EAGAIN;
		if (!__atomic_compare_exchange_n(&clk->pc_conv_seq, &s, s + 1,
						 0, __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED))
			continue;
		g = s ? g + 1 : 1;
		__atomic_store_n(&clk->pc_conv_zero, zero, __ATOMIC_RELAXED);
		__atomic_store_n(&clk->pc_conv_ms, ms, __ATOMIC_RELAXED);
		__atomic_store_n(&clk->pc_conv_lock, lock, __ATOMIC_RELAXED);
		__atomic_store_n(&clk->pc_gen_seen, g, __ATOMIC_RELAXED);
		__atomic_store_n(&clk->pc_conv_seq, s + 2, __ATOMIC_RELEASE);
		*gen = g;
		*changed = s != 0;
		return 0;
	}
	return -EAGAIN;
}

/* perf's page under its seq count `lock`, with rdtscp. */
static int perf_tsc_aux(struct perfclock *clk, uint64_t *ns, uint32_t *cpu,
			uint32_t *gen, int *changed)
{

	const volatile struct perf_event_mmap_page *vpc = clk->perf_page;
	const struct perf_event_mmap_page *pc = clk->perf_page;
	uint64_t zero, tsc;
	uint32_t seq, mult, aux;
	uint16_t shift;
	int tries, cap;

	for (tries = 0; tries < PERFCLOCK_PAGE_MAX_RETRIES; tries++) {
		if (tries)
			perfclock_cpu_relax();
		seq = __atomic_load_n(&pc->lock, __ATOMIC_ACQUIRE);
		cap = vpc->cap_user_time_zero;
		zero = vpc->time_zero;
		mult = vpc->time_mult;
		shift = vpc->time_shift;
		tsc = perfclock__rdtscp(&aux);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if ((seq & 1) ||
		    __atomic_load_n(&pc->lock, __ATOMIC_RELAXED) != seq)
			continue;
		/* time_zero withdrawn: sched_clock turned unstable. */
		if (!cap || shift >= 64)
			return -EOPNOTSUPP;
		*ns = perfclock_tsc_to_ns(tsc, mult, shift, zero);
		*cpu = aux & PERFCLOCK_TSC_AUX_CPU_MASK;
		return perf_gen(clk, zero, (uint64_t)mult << 16 | shift, seq,
				gen, changed);
	}
	return -EAGAIN;
}

/* Refuse H_c on clk for good, saying why once. Returns the refusal. */
static int pc_refuse(struct perfclock *clk, const char *why)
{
	int none = 0;

	if (__atomic_compare_exchange_n(&clk->pc_refused, &none, -EOPNOTSUPP,
					0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		perfclock__log(PERFCLOCK_LOG_ERR,
			       "perfclock_horizon_cpu: no per-CPU horizon from now on: %s",
			       why);
	return -EOPNOTSUPP;
}

/* CLOCK_BOOTTIME - CLOCK_MONOTONIC, the two read in the order given. */
static int boot_less_mono(clockid_t first, int64_t *d)
{
	struct timespec a, b;
	clockid_t second = first == CLOCK_BOOTTIME ? CLOCK_MONOTONIC :
						      CLOCK_BOOTTIME;
	int64_t ta, tb;

	if (clock_gettime(first, &a) || clock_gettime(second, &b))
		return -1;
	ta = (int64_t)a.tv_sec * 1000000000LL + a.tv_nsec;
	tb = (int64_t)b.tv_sec * 1000000000LL + b.tv_nsec;
	*d = first == CLOCK_BOOTTIME ? ta - tb : tb - ta;
	return 0;
}

/*
 * Was the machine suspended since the last check? CLOCK_BOOTTIME -
 * CLOCK_MONOTONIC is the timekeeper's offs_boot, which grows by the time
 * spent suspended at each resume (kernel/time/timekeeping.c:
 * __timekeeping_inject_sleeptime()) and never otherwise; a time
 * namespace adds a constant. BOOTTIME read first gives at most offs_boot,
 * MONOTONIC first at least offs_boot: a lower bound above the last upper
 * bound proves a resume. Resume is when the kernel writes TSC_AUX again
 * (arch/x86/kernel/cpu/common.c: setup_getcpu(), from cpu_init() as each
 * CPU comes back) and the TSC conversions. Two vDSO reads a call.
 */
static int pc_resumed(struct perfclock *clk)
{
	int64_t u = __atomic_load_n(&clk->pc_boot_off, __ATOMIC_RELAXED);
	int64_t lo, hi;

	if (u != INT64_MIN &&
	    (boot_less_mono(CLOCK_BOOTTIME, &lo) || lo <= u))
		return 0;
	if (boot_less_mono(CLOCK_MONOTONIC, &hi))
		return 0;
	/* Another thread may have moved it on: either is an upper bound. */
	__atomic_compare_exchange_n(&clk->pc_boot_off, &u, hi, 0,
				    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	return u != INT64_MIN;
}

/*
 * After a new generation or a resume: does what H_c rests on still hold?
 * The module must still hand out perf_clock() horizons (it refuses them,
 * with a new generation, when a sched_clock reset may have passed unseen:
 * no reset probe, or a reset whose return it missed), and TSC_AUX must
 * still hold the CPU number where rdtscp is read. 0, or the refusal.
 */
static int pc_recheck(struct perfclock *clk, uint32_t g)
{
	struct perfclock_info info;
	int err;

	if (clk->pc_mode == PC_MODULE_IOCTL ||
	    clk->pc_mode == PC_MODULE_TSC_AUX) {
		err = perfclock__get_info(clk->fd, &info);
		if (err)
			return err;
		if (info.flags & PERFCLOCK_INFO_PERF_HORIZON_REFUSED)
			return pc_refuse(clk, "the module refuses perf_clock() horizons (a sched_clock reset may have gone unseen)");
	}
	if ((clk->pc_mode == PC_MODULE_TSC_AUX ||
	     clk->pc_mode == PC_PERF_TSC_AUX) && !tsc_aux_is_cpu())
		return pc_refuse(clk, "TSC_AUX no longer holds the CPU number (after a resume or a restart)");
	if (clk->pc_mode != PC_PERF_TSC_AUX)
		__atomic_store_n(&clk->pc_gen_seen, g, __ATOMIC_RELAXED);
	return 0;
}

/* One read by the chosen path, and whether it must be checked first. */
static int pc_read(struct perfclock *clk, uint64_t *ns, uint32_t *cpu,
		   uint32_t *g, int *check)
{
	int err, aux = 0;

	*check = 0;
	switch (clk->pc_mode) {
	case PC_MODULE_IOCTL:
		err = module_ioctl(clk, ns, cpu, g);
		break;
	case PC_MODULE_TSC_AUX:
		err = module_tsc_aux(clk, ns, cpu, g, &aux);
		break;
	case PC_CLOCKID_GETCPU:
		return clockid_getcpu(clk, ns, cpu);
	case PC_PERF_TSC_AUX:
		err = perf_tsc_aux(clk, ns, cpu, g, check);
		aux = 1;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (err)
		return err;
	if (clk->pc_mode != PC_PERF_TSC_AUX &&
	    *g != __atomic_load_n(&clk->pc_gen_seen, __ATOMIC_RELAXED))
		*check = 1;
	/* After the read: a resume before it shows here. */
	if (aux && pc_resumed(clk))
		*check = 1;
	return 0;
}

PERFCLOCK_API int perfclock_horizon_cpu_gen(struct perfclock *clk,
					    uint64_t *ns, uint32_t *cpu,
					    uint32_t *gen)
{
	uint32_t first = 0, g = 1;
	int err, check;

	if (!clk || !ns || !cpu || !gen)
		return -EINVAL;
	err = __atomic_load_n(&clk->pc_refused, __ATOMIC_RELAXED);
	if (err)
		return err;
	err = pc_read(clk, ns, cpu, &g, &check);
	if (!err && check) {
		/*
		 * Checked after the read, so the read is taken again: only
		 * one made after the check is known to rest on what it
		 * found. A second event meanwhile: the caller asks again.
		 */
		err = pc_recheck(clk, g);
		if (!err)
			err = pc_read(clk, ns, cpu, &g, &check);
		if (!err && check)
			err = -EAGAIN;
	}
	if (err)
		return err;

	*ns = perfclock__ntp_slope_lower(clk, *ns);	/* ntp_slope.c */
	/* A module's first generation is 1; 0 would read as "none yet". */
	if (!g)
		g = 1;
	/* The first generation any caller saw, for perfclock_horizon_cpu(). */
	__atomic_compare_exchange_n(&clk->pc_gen_first, &first, g, 0,
				    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	*gen = g;
	return 0;
}

PERFCLOCK_API int perfclock_horizon_cpu(struct perfclock *clk, uint64_t *ns,
					uint32_t *cpu)
{
	uint64_t h;
	uint32_t c, g;
	int err;

	if (!clk || !ns || !cpu)
		return -EINVAL;
	err = perfclock_horizon_cpu_gen(clk, &h, &c, &g);
	if (err)
		return err;
	/* A restart this caller cannot follow: say so, every time. */
	if (g != __atomic_load_n(&clk->pc_gen_first, __ATOMIC_RELAXED))
		return -ESTALE;
	*ns = h;
	*cpu = c;
	return 0;
}

void perfclock__horizon_percpu_info(const struct perfclock *clk,
				    struct perfclock_clock_info *info)
{
	if (clk->pc_mode == PC_NONE)
		return;
	info->flags |= PERFCLOCK_CLOCK_HORIZON_PERCPU;
	if (clk->pc_mode == PC_MODULE_TSC_AUX || clk->pc_mode == PC_PERF_TSC_AUX)
		info->flags |= PERFCLOCK_CLOCK_HORIZON_PERCPU_TSC_AUX;
}

PERFCLOCK_API const char *
perfclock_horizon_cpu_name(const struct perfclock_clock_info *info)
{
	if (!info || !(info->flags & PERFCLOCK_CLOCK_HORIZON_PERCPU))
		return "none";
	if (perfclock__ntp_slope_cpu_name(info))
		return perfclock__ntp_slope_cpu_name(info);
	switch (info->backend) {
	case PERFCLOCK_BACKEND_DEVICE:
		return (info->flags & PERFCLOCK_CLOCK_HORIZON_PERCPU_TSC_AUX) ?
		       "exact per-CPU (module page, rdtscp)" :
		       "exact per-CPU (module ioctl)";
	case PERFCLOCK_BACKEND_CLOCKID:
		return "exact per-CPU (clock_gettime + getcpu)";
	case PERFCLOCK_BACKEND_PERF_PAGE:
		return "exact per-CPU (perf page, rdtscp)";
	}
	return "none";
}
