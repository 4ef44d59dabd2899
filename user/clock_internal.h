/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * struct perfclock, shared by the clock (libperfclock.c) and the horizon
 * (horizon*.c). Library-private; not installed.
 */
#ifndef PERFCLOCK_CLOCK_INTERNAL_H
#define PERFCLOCK_CLOCK_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "libperfclock.h"
#include "perfclock_page.h"

struct perf_event_mmap_page;
struct horizon_backend;

struct perfclock {
	/*
	 * perfclock_read()'s fast path, first so that it is one load at
	 * offset 0: the device's page when it is mapped and this reader can
	 * convert the TSC (PERFCLOCK_PAGE_HAVE_TSC), else NULL and every
	 * read takes the general path.
	 */
	const struct perfclock_page *read_page;
	/*
	 * The same for the perf page backend: perf's mmap page (perf_page)
	 * when this reader can convert the TSC, else NULL. At most one of
	 * read_page and read_perf_page is set.
	 */
	const struct perf_event_mmap_page *read_perf_page;
	enum perfclock_backend backend;
	int fd;				/* the device; -1 if none */
	clockid_t clockid;		/* clockid backend */
	clockid_t coarse_clockid;	/* lower bound; == clockid if none */
	const struct perfclock_page *page;	/* NULL if not mapped */
	/* perf page backend: the caller's perf mmap page (time_zero). */
	const struct perf_event_mmap_page *perf_page;
	/*
	 * perfclock_open(NULL) without the module: the perf page is that
	 * of a dummy event of the library's own (own_perf_fd, mapped
	 * own_perf_len bytes); -1 and 0 otherwise.
	 */
	int own_perf_fd;
	size_t own_perf_len;
	size_t page_len;
	struct perfclock_info info;	/* device, as read at open */
	/*
	 * Horizons (horizon.c): hz is the backend that hands them out,
	 * chosen at open (hz_opened) and switched to the estimate if the
	 * module refuses them after all (an atomic pointer; both in
	 * horizon_backend.c); hz_clockid is what the module is asked for
	 * (PERFCLOCK_HORIZON_PERF_CLOCK or the clockid); hz_exact says the
	 * module offers them (PERFCLOCK_INFO_HORIZON at open). Under
	 * hz_lock: hz_last, the highest horizon returned in generation
	 * hz_gen (so that they never go down within one), and hz_acked,
	 * the generation the caller was last told of.
	 */
	const struct horizon_backend *hz, *hz_opened;
	void *hz_state;			/* the backend's own, if any */
	int hz_clockid;
	int hz_exact;
	pthread_mutex_t hz_lock;
	int hz_any;			/* hz_last, hz_gen hold one */
	uint32_t hz_gen, hz_acked;
	uint32_t hz_gen_base;		/* the estimate's, after a withdraw */
	uint64_t hz_last;
	/*
	 * Device without a mapped page: the module's skew and stall
	 * estimates as PERFCLOCK_IOC_GET_INFO last gave them, and when
	 * (CLOCK_MONOTONIC_COARSE); refreshed at most every 10 ms by
	 * clock_read.c. Atomics.
	 */
	uint64_t np_skew, np_stall, np_when;
	/*
	 * Horizons of a clock that can be set (REALTIME, TAI), whatever
	 * the backend (horizon_sets.c): a CLOCK_REALTIME timerfd armed with
	 * TFD_TIMER_CANCEL_ON_SET (-1: not such a clock); under set_lock,
	 * the sets seen (set_gen), the count a horizon was last proven
	 * after (set_taken), and for CLOCK_TAI the TAI offset last read.
	 */
	int set_tfd;
	int set_err;		/* a fork() child without its own: -errno */
	uint32_t set_gen, set_taken;
	int set_tai_known;
	long long set_tai_s;
	/* The wall offset read just before fork() (horizon_sets.c, FORK). */
	int set_fork_ok;
	long long set_fork_off, set_fork_err;
	pthread_mutex_t set_lock;
	/*
	 * The per-CPU horizon (horizon_percpu.c): how it is read, chosen at
	 * open by perfclock__horizon_percpu_choose() (enum in that file;
	 * 0: none), and the generation of the first one handed out by
	 * perfclock_horizon_cpu() (atomic; 0: none yet).
	 */
	int pc_mode;
	uint32_t pc_gen_first;
	/*
	 * Restart and resume checks of the per-CPU horizon (all atomic,
	 * horizon_percpu.c says how they are used): the generation last
	 * checked (the module's; for perf's page the library's own, moved
	 * when the page's conversion changes), the page conversion it
	 * belongs to (pc_conv_seq odd while it is rewritten), an upper
	 * bound of CLOCK_BOOTTIME - CLOCK_MONOTONIC (grows only across a
	 * suspend), and -errno once H_c is refused for good (0: not).
	 */
	uint32_t pc_gen_seen;
	uint32_t pc_conv_seq, pc_conv_lock;
	uint64_t pc_conv_zero, pc_conv_ms;
	int64_t pc_boot_off;
	int pc_refused;
	/* Every open clock, for fork() (fork_guard.c). */
	struct perfclock *fork_next, *fork_prev;
};

/*
 * fork_guard.c: hz_lock and set_lock (if set_tfd >= 0) are taken around
 * every fork(), so that no child gets a copy locked by a thread it does
 * not have. Add once both are initialized; delete before destroying them.
 */
void perfclock__fork_guard_add(struct perfclock *clk);
void perfclock__fork_guard_del(struct perfclock *clk);

static inline uint64_t perfclock__sub_sat(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

#endif /* PERFCLOCK_CLOCK_INTERNAL_H */
