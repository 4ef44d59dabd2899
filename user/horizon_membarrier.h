/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The membarrier horizon backend (user/horizon_membarrier.c): an exact
 * flush horizon without the module, for a clock the tool reads itself.
 * Library-private; not installed. Why it is exact:
 * docs/membarrier-horizon.md.
 */
#ifndef PERFCLOCK_HORIZON_MEMBARRIER_H
#define PERFCLOCK_HORIZON_MEMBARRIER_H

#include <stdint.h>

/*
 * Reads the clock the records are stamped in: 0 and *ns, or -errno; or
 * PERFCLOCK_MB_RESTARTED and *ns: a good read, but the clock's values
 * before it may have been ahead (a stale perf page was refreshed):
 * every horizon proven so far is dropped and the restart counted.
 */
#define PERFCLOCK_MB_RESTARTED	1
typedef int (*perfclock_mb_read_fn)(void *arg, uint64_t *ns);

struct perfclock_mb;

/*
 * Can this kernel give the barrier? 0 if MEMBARRIER_CMD_QUERY lists
 * MEMBARRIER_CMD_GLOBAL and more than one CPU is online; -ENOSYS (no
 * CONFIG_MEMBARRIER, or a seccomp filter), -EINVAL (nohz_full: the
 * query leaves GLOBAL out), -EOPNOTSUPP (one online CPU: the kernel
 * skips the grace period), or the query's -errno.
 */
int perfclock_mb__available(void);

/* NULL + errno (ENOMEM). The helper thread starts on the first horizon. */
struct perfclock_mb *perfclock_mb__new(perfclock_mb_read_fn read, void *arg);
/* Stops and joins the helper thread (at most one barrier's wait). */
void perfclock_mb__free(struct perfclock_mb *mb);

/*
 * The newest horizon proven by the helper thread; no system call. The
 * first call in a process (and the first after fork()) starts the
 * thread and proves one horizon on the caller's thread (blocks for two
 * grace periods), and so does the first call after a second in which
 * nobody asked (the thread slept: PACING in horizon_membarrier.c). An
 * error the thread met (its clock read or its barrier) is returned from
 * then on: -errno.
 */
int perfclock_mb__horizon(struct perfclock_mb *mb, uint64_t *ns);

/* Restarts counted so far (PERFCLOCK_MB_RESTARTED). */
uint32_t perfclock_mb__restarts(const struct perfclock_mb *mb);

/* A fresh horizon on the caller's thread: read, barrier, barrier. */
int perfclock_mb__sync(struct perfclock_mb *mb, uint64_t *ns);

struct perfclock_mb_stats {
	uint64_t barriers;	/* membarrier calls made, thread and sync */
	uint64_t proven;	/* horizons the thread published */
	uint64_t last_wait_ns;	/* the last barrier's wait */
	uint64_t max_wait_ns;	/* the longest barrier's wait */
	uint64_t parks;		/* times the thread slept for want of askers */
	int running;		/* the helper thread runs in this process */
	int err;		/* the thread's error, 0 if none */
};
void perfclock_mb__get_stats(const struct perfclock_mb *mb,
			     struct perfclock_mb_stats *st);

/*
 * Test-only switches (process-wide, read when a clock is opened or a
 * barrier made; never set by the library itself):
 *  - UNAVAILABLE: perfclock_mb__available() says -EOPNOTSUPP, so that the
 *    estimate's path can be tested on a kernel that has the barrier;
 *  - SKIP_BARRIER: the barrier is not made, the horizon is the bare clock
 *    read: the checks that count late records must then fail, which shows
 *    that their load can break a horizon without the barrier.
 */
enum perfclock_mb_test_mode {
	PERFCLOCK_MB_TEST_NORMAL = 0,
	PERFCLOCK_MB_TEST_UNAVAILABLE = 1,
	PERFCLOCK_MB_TEST_SKIP_BARRIER = 2,
};
void perfclock_mb__test_set_mode(enum perfclock_mb_test_mode mode);

#endif /* PERFCLOCK_HORIZON_MEMBARRIER_H */
