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
 * Nothing here is shared between threads but pc_gen_first (an atomic),
 * so any number of reader threads call it at once without a lock.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
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

void perfclock__horizon_percpu_choose(struct perfclock *clk)
{
	int tsc_aux = tsc_aux_is_cpu();

	clk->pc_mode = PC_NONE;
	__atomic_store_n(&clk->pc_gen_first, 0, __ATOMIC_RELAXED);
	switch (clk->backend) {
	case PERFCLOCK_BACKEND_DEVICE:
		/*
		 * GET_TIME is in every ABI this library opens. The page's
		 * conversion is used when it is valid at read time, else
		 * the ioctl (each read decides).
		 */
		clk->pc_mode = clk->page && PERFCLOCK_PAGE_HAVE_TSC && tsc_aux ?
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

/* The module's horizon generation on its page, when it fills one. */
static int module_gen(const struct perfclock *clk, uint32_t *gen)
{
	const struct perfclock_page *pg = clk->page;
	uint32_t seq, g;
	int tries;

	if (!pg || !(clk->info.flags & PERFCLOCK_INFO_HORIZON_GENERATION)) {
		*gen = 1;
		return 0;
	}
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
			  uint32_t *gen)
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
		*gen = (clk->info.flags & PERFCLOCK_INFO_HORIZON_GENERATION) ?
		       g : 1;
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

/* perf's time_zero page under its seq count `lock`, with rdtscp. */
static int perf_tsc_aux(struct perfclock *clk, uint64_t *ns, uint32_t *cpu)
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
		return 0;
	}
	return -EAGAIN;
}

PERFCLOCK_API int perfclock_horizon_cpu_gen(struct perfclock *clk,
					    uint64_t *ns, uint32_t *cpu,
					    uint32_t *gen)
{
	uint32_t first = 0, g = 1;
	int err;

	if (!clk || !ns || !cpu || !gen)
		return -EINVAL;
	switch (clk->pc_mode) {
	case PC_MODULE_IOCTL:
		err = module_ioctl(clk, ns, cpu, &g);
		break;
	case PC_MODULE_TSC_AUX:
		err = module_tsc_aux(clk, ns, cpu, &g);
		break;
	case PC_CLOCKID_GETCPU:
		err = clockid_getcpu(clk, ns, cpu);
		break;
	case PC_PERF_TSC_AUX:
		err = perf_tsc_aux(clk, ns, cpu);
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (err)
		return err;
	*ns = perfclock__ntp_slope_lower(clk, *ns);	/* ntp_slope.c */
	/* An older module fills no generation: its horizons never restart. */
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
