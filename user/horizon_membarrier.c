// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The membarrier horizon: an exact flush horizon without the module, for
 * a clock the tool can read itself (clock_gettime() of a use_clockid
 * clock, perf_clock() through perf's own user page). A horizon is a
 * clock read followed by two membarrier(MEMBARRIER_CMD_GLOBAL) calls,
 * each a synchronize_rcu(); why that is exact, and why two:
 * docs/membarrier-horizon.md.
 *
 * A helper thread keeps it fresh so that perfclock_horizon() need not
 * block: it reads the clock, makes the barrier, and publishes the read
 * taken one barrier earlier (which now has two barriers after it).
 *
 * PACING: each barrier is a grace period the machine runs for us (on a
 * kernel booted with rcupdate.rcu_expedited=1, as this project's host
 * is, an expedited one: an IPI to every busy CPU). User space cannot
 * poll the grace periods the system runs anyway (the module does:
 * get_state_synchronize_rcu()), so the helper bounds the ones it forces:
 *  - a barrier starts at most every PERFCLOCK_MB_MIN_INTERVAL_NS, and
 *    never sooner than twice the last barrier's wait after the last
 *    start, so a barrier of ours is in flight at most half the time (it
 *    used to be one per millisecond, back to back: every grace period
 *    of an idle machine was ours);
 *  - no barrier at all once nobody has asked for a horizon for
 *    PERFCLOCK_MB_IDLE_NS: the thread sleeps on a futex, and the next
 *    perfclock_mb__horizon() wakes it and, the newest horizon being
 *    that old, proves one on its own thread as the first call does.
 * What it costs in horizon age: docs/horizon-cost.md, "The library's
 * helper".
 *
 * Shared state is atomics only (no lock a fork() could copy while
 * held). After fork() the child has no helper thread: pthread_atfork()
 * bumps a generation, and the next horizon in the child starts a new
 * one.
 *
 * The engine (perfclock_mb__*, horizon_membarrier.h) knows nothing of
 * struct perfclock; the backend at the end of this file plugs it into
 * the horizon interface (horizon_internal.h).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/futex.h>
#include <linux/membarrier.h>
#include <linux/perf_event.h>

#include "horizon_internal.h"
#include "horizon_membarrier.h"
#include "timens.h"

/* PACING above: at most this often, at most half the time in a barrier. */
#define PERFCLOCK_MB_MIN_INTERVAL_NS	10000000ULL	/* 10 ms */
/* PACING above: no horizon asked for this long, no barrier. */
#define PERFCLOCK_MB_IDLE_NS		1000000000ULL	/* 1 s */

enum { MB_STOPPED, MB_STARTING, MB_RUNNING };

struct perfclock_mb {
	perfclock_mb_read_fn read;
	void *arg;
	int skip_barrier;		/* test only, fixed at creation */
	pthread_t thread;
	/*
	 * atomics. run: the fork generation the thread was started in,
	 * shifted left by 2, with its MB_* state in the low bits: one word,
	 * so that two callers racing to start it cannot both win.
	 */
	uint64_t run;
	int stop;
	int err;			/* the thread's -errno, sticky */
	uint64_t latest;		/* newest proven horizon, 0: none */
	uint64_t barriers, proven, last_wait_ns, max_wait_ns, parks;
	/*
	 * PACING: when a horizon was last asked for (mono_ns()), and the
	 * futex word the idle thread sleeps on (1 while it does).
	 */
	uint64_t last_ask;
	int parked;
	/*
	 * The clock restarted (perfclock_mb_read_fn returned
	 * PERFCLOCK_MB_RESTARTED) this many times; horizons of an earlier
	 * count may be above later stamps. The backend's snapshot of the
	 * perf page's conversion, to tell (thread and sync: under no lock,
	 * written by the reader that saw it).
	 */
	uint32_t restarts;
	uint64_t page_zero;
	uint32_t page_mult, page_shift;
};

static int test_mode;			/* enum perfclock_mb_test_mode */
static unsigned int fork_gen;		/* bumped in every fork() child */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_child(void)
{
	__atomic_add_fetch(&fork_gen, 1, __ATOMIC_RELAXED);
}

static void atfork_register(void)
{
	pthread_atfork(NULL, NULL, atfork_child);
}

void perfclock_mb__test_set_mode(enum perfclock_mb_test_mode mode)
{
	__atomic_store_n(&test_mode, (int)mode, __ATOMIC_RELAXED);
}

static long sys_membarrier(int cmd)
{
	return syscall(SYS_membarrier, cmd, 0, 0);
}

int perfclock_mb__available(void)
{
	long mask;

	if (__atomic_load_n(&test_mode, __ATOMIC_RELAXED) ==
	    PERFCLOCK_MB_TEST_UNAVAILABLE)
		return -EOPNOTSUPP;
	mask = sys_membarrier(MEMBARRIER_CMD_QUERY);
	if (mask < 0)
		return -errno;
	/* kernel/sched/membarrier.c: nohz_full drops GLOBAL from the query. */
	if (!(mask & MEMBARRIER_CMD_GLOBAL))
		return -EINVAL;
	/* With one CPU online the kernel skips synchronize_rcu(). */
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return -EOPNOTSUPP;
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void max_store(uint64_t *p, uint64_t v)
{
	uint64_t old = __atomic_load_n(p, __ATOMIC_RELAXED);

	while (v > old &&
	       !__atomic_compare_exchange_n(p, &old, v, 1, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		;
}

/* One grace period: membarrier(MEMBARRIER_CMD_GLOBAL). 0 or -errno. */
static int barrier(struct perfclock_mb *mb)
{
	uint64_t t0, dt;
	long r = 0;

	if (mb->skip_barrier)
		return 0;
	t0 = mono_ns();
	r = sys_membarrier(MEMBARRIER_CMD_GLOBAL);
	if (r < 0)
		return -errno;
	dt = mono_ns() - t0;
	__atomic_add_fetch(&mb->barriers, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&mb->last_wait_ns, dt, __ATOMIC_RELAXED);
	max_store(&mb->max_wait_ns, dt);
	return 0;
}

static void fail(struct perfclock_mb *mb, int err)
{
	int zero = 0;

	__atomic_compare_exchange_n(&mb->err, &zero, err, 0, __ATOMIC_RELEASE,
				    __ATOMIC_RELAXED);
}

/*
 * The clock restarted: drop the newest horizon, then count the restart
 * (a horizon() that read the old count with the old horizon reports it
 * in the old generation, which the restart voids).
 */
static void restart(struct perfclock_mb *mb)
{
	__atomic_store_n(&mb->latest, 0, __ATOMIC_RELEASE);
	__atomic_add_fetch(&mb->restarts, 1, __ATOMIC_RELEASE);
}

static long futex(int *word, int op, int val)
{
	return syscall(SYS_futex, word, op, val, NULL, NULL, 0);
}

/*
 * Nobody asked for a horizon for PERFCLOCK_MB_IDLE_NS: sleep until
 * someone does (wake_idle()) or the clock is closed. parked and
 * last_ask are a store-then-load pair on each side (sequentially
 * consistent): either the asker sees parked and wakes us, or we see its
 * newer last_ask and do not sleep.
 */
static void park(struct perfclock_mb *mb)
{
	__atomic_store_n(&mb->parked, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&mb->parks, 1, __ATOMIC_RELAXED);
	while (__atomic_load_n(&mb->parked, __ATOMIC_SEQ_CST) &&
	       !__atomic_load_n(&mb->stop, __ATOMIC_SEQ_CST) &&
	       mono_ns() - __atomic_load_n(&mb->last_ask, __ATOMIC_SEQ_CST) >
	       PERFCLOCK_MB_IDLE_NS)
		futex(&mb->parked, FUTEX_WAIT_PRIVATE, 1);
	__atomic_store_n(&mb->parked, 0, __ATOMIC_SEQ_CST);
}

/* A horizon is asked for: 1 if the thread was asleep (and is woken). */
static int wake_idle(struct perfclock_mb *mb)
{
	__atomic_store_n(&mb->last_ask, mono_ns(), __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&mb->parked, __ATOMIC_SEQ_CST))
		return 0;
	__atomic_store_n(&mb->parked, 0, __ATOMIC_SEQ_CST);
	futex(&mb->parked, FUTEX_WAKE_PRIVATE, 1);
	return 1;
}

static void *mb_thread(void *arg)
{
	struct perfclock_mb *mb = arg;
	uint64_t prev = 0, t, start, wait, gap;
	struct timespec ts;
	int have_prev = 0, err;

	while (!__atomic_load_n(&mb->stop, __ATOMIC_RELAXED)) {
		start = mono_ns();
		if (start - __atomic_load_n(&mb->last_ask, __ATOMIC_SEQ_CST) >
		    PERFCLOCK_MB_IDLE_NS) {
			park(mb);
			continue;
		}
		err = mb->read(mb->arg, &t);
		/* A seq-counted page that stayed busy: try again next period. */
		if (err == -EAGAIN)
			goto next;
		/* What was proven before may be ahead: start over. */
		if (err == PERFCLOCK_MB_RESTARTED) {
			restart(mb);
			have_prev = 0;
			err = 0;
		}
		if (!err)
			err = barrier(mb);
		if (err) {
			fail(mb, err);
			break;
		}
		/* prev now has two barriers after its read: proven. */
		if (have_prev) {
			max_store(&mb->latest, prev);
			__atomic_add_fetch(&mb->proven, 1, __ATOMIC_RELAXED);
		}
		prev = t;
		have_prev = 1;
next:
		wait = mono_ns() - start;
		gap = 2 * wait > PERFCLOCK_MB_MIN_INTERVAL_NS ?
		      2 * wait : PERFCLOCK_MB_MIN_INTERVAL_NS;
		if (wait < gap) {
			ts.tv_sec = (time_t)((gap - wait) / 1000000000ULL);
			ts.tv_nsec = (long)((gap - wait) % 1000000000ULL);
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

struct perfclock_mb *perfclock_mb__new(perfclock_mb_read_fn read, void *arg)
{
	struct perfclock_mb *mb = calloc(1, sizeof(*mb));

	if (!mb)
		return NULL;
	mb->read = read;
	mb->arg = arg;
	mb->skip_barrier = __atomic_load_n(&test_mode, __ATOMIC_RELAXED) ==
			   PERFCLOCK_MB_TEST_SKIP_BARRIER;
	pthread_once(&atfork_once, atfork_register);
	mb->run = (uint64_t)__atomic_load_n(&fork_gen, __ATOMIC_RELAXED) << 2 |
		  MB_STOPPED;
	return mb;
}

/*
 * Is the helper thread running in this process? A thread started before
 * a fork() does not exist in the child: the generation tells.
 */
static int thread_state(const struct perfclock_mb *mb)
{
	uint64_t run = __atomic_load_n(&mb->run, __ATOMIC_ACQUIRE);

	if ((run >> 2) != __atomic_load_n(&fork_gen, __ATOMIC_RELAXED))
		return MB_STOPPED;
	return (int)(run & 3);
}

/* Start the helper thread once per process; of racing callers one wins. */
static int thread_start(struct perfclock_mb *mb)
{
	uint64_t gen = __atomic_load_n(&fork_gen, __ATOMIC_RELAXED);
	uint64_t run = __atomic_load_n(&mb->run, __ATOMIC_ACQUIRE);
	sigset_t all, old;
	int err;

	if ((run >> 2) == gen && (run & 3) != MB_STOPPED)
		return 0;
	if (!__atomic_compare_exchange_n(&mb->run, &run,
					 gen << 2 | MB_STARTING, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return 0;
	__atomic_store_n(&mb->stop, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&mb->parked, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&mb->last_ask, mono_ns(), __ATOMIC_SEQ_CST);
	/*
	 * Signals go to the caller's threads, never to the helper: a tool
	 * built on sigwait() or signalfd() blocks them in its own threads
	 * and expects the kernel to hold them for it, which it does only
	 * while every thread blocks them (kernel/signal.c:
	 * complete_signal() wakes a thread that does not). The helper
	 * starts with all blocked, as the reader's threads do.
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&mb->thread, NULL, mb_thread, mb);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	/* Its name in ps -L and /proc/PID/task/TID/comm, before it runs. */
	if (!err)
		pthread_setname_np(mb->thread, "perfclock-mb");
	if (err) {
		__atomic_store_n(&mb->run, gen << 2 | MB_STOPPED,
				 __ATOMIC_RELEASE);
		return -err;
	}
	__atomic_store_n(&mb->run, gen << 2 | MB_RUNNING, __ATOMIC_RELEASE);
	return 0;
}

int perfclock_mb__sync(struct perfclock_mb *mb, uint64_t *ns)
{
	uint64_t t;
	int err;

	/* A setns() before this (single-threaded) changed the offset. */
	perfclock__timens_recheck();
	err = mb->read(mb->arg, &t);
	if (err == PERFCLOCK_MB_RESTARTED) {
		restart(mb);
		err = 0;
	}
	if (err)
		return err;
	err = barrier(mb);
	if (!err)
		err = barrier(mb);
	if (err)
		return err;
	max_store(&mb->latest, t);
	*ns = t;
	return 0;
}

uint32_t perfclock_mb__restarts(const struct perfclock_mb *mb)
{
	return __atomic_load_n(&mb->restarts, __ATOMIC_ACQUIRE);
}

int perfclock_mb__horizon(struct perfclock_mb *mb, uint64_t *ns)
{
	uint64_t h;
	int err, idle;

	err = __atomic_load_n(&mb->err, __ATOMIC_ACQUIRE);
	if (err)
		return err;
	/* Test only: the bare read at the call, no barrier at all. */
	if (mb->skip_barrier)
		return mb->read(mb->arg, ns);
	if (thread_state(mb) == MB_STOPPED) {
		/*
		 * The helper reads the clock as soon as it starts, maybe
		 * before perfclock_mb__sync() below rechecks: a setns()
		 * since the offsets were read must be seen first, or it
		 * proves a horizon off by the two namespaces' offsets'
		 * difference, which latest (a max) keeps. Only here: while
		 * the helper runs the process has two threads, and
		 * kernel/time/namespace.c: timens_install() refuses setns()
		 * to it (-EUSERS).
		 */
		perfclock__timens_recheck();
		err = thread_start(mb);
		if (err)
			return err;
	}
	/* Woken after an idle second: what it has is that old. */
	idle = wake_idle(mb);
	h = __atomic_load_n(&mb->latest, __ATOMIC_ACQUIRE);
	if (h && !idle) {
		*ns = h;
		return 0;
	}
	/* Nothing proven yet, or only long ago: prove one here. */
	return perfclock_mb__sync(mb, ns);
}

void perfclock_mb__get_stats(const struct perfclock_mb *mb,
			     struct perfclock_mb_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->barriers = __atomic_load_n(&mb->barriers, __ATOMIC_RELAXED);
	st->proven = __atomic_load_n(&mb->proven, __ATOMIC_RELAXED);
	st->last_wait_ns = __atomic_load_n(&mb->last_wait_ns, __ATOMIC_RELAXED);
	st->max_wait_ns = __atomic_load_n(&mb->max_wait_ns, __ATOMIC_RELAXED);
	st->parks = __atomic_load_n(&mb->parks, __ATOMIC_RELAXED);
	st->running = thread_state(mb) == MB_RUNNING;
	st->err = __atomic_load_n(&mb->err, __ATOMIC_RELAXED);
}

void perfclock_mb__free(struct perfclock_mb *mb)
{
	if (!mb)
		return;
	/* Only a thread of this process can be joined. */
	if (thread_state(mb) == MB_RUNNING) {
		__atomic_store_n(&mb->stop, 1, __ATOMIC_SEQ_CST);
		__atomic_store_n(&mb->parked, 0, __ATOMIC_SEQ_CST);
		futex(&mb->parked, FUTEX_WAKE_PRIVATE, 1);
		pthread_join(mb->thread, NULL);
	}
	free(mb);
}

/* ---- the backend (horizon_internal.h) ---- */

/*
 * The clocks the membarrier horizon is exact for
 * (docs/membarrier-horizon.md): one clock for every CPU that never steps
 * back, read by this library. Not REALTIME and TAI (they step when set),
 * not the module's clock (the module is the better backend there).
 */
static int clock_eligible(const struct perfclock *clk)
{
	if (clk->backend == PERFCLOCK_BACKEND_PERF_PAGE)
		return 1;	/* time_zero: a stable sched_clock */
	if (clk->backend != PERFCLOCK_BACKEND_CLOCKID)
		return 0;
	return clk->clockid == CLOCK_MONOTONIC ||
	       clk->clockid == CLOCK_MONOTONIC_RAW ||
	       clk->clockid == CLOCK_BOOTTIME;
}

/*
 * perf's page of a perf page backend is a copy, made when perf updates
 * it (kernel/events/core.c: perf_event_update_userpage(), at event add,
 * period, mmap and reset; arch/x86/events/core.c:
 * arch_perf_update_userpage() fills time_zero from cyc2ns and
 * cap_user_time_zero from sched_clock_stable()). Nothing updates it at a
 * run-time sched_clock switch or at resume from suspend, which lowers
 * cyc2ns_offset by the time asleep (arch/x86/kernel/tsc.c:
 * tsc_restore_sched_clock_state()): a stale page reads ahead of the
 * clock. So before each of its reads the helper (and a sync) refreshes
 * the library's own dummy event's page with PERF_EVENT_IOC_RESET
 * (_perf_event_reset() -> perf_event_update_userpage(); the dummy counts
 * nothing), and compares the conversion with the one it last read: a
 * change is a restart (PERFCLOCK_MB_RESTARTED: every horizon proven
 * before may be ahead), a withdrawn cap_user_time_zero an error
 * (-EOPNOTSUPP, for good). A caller's page (perfclock_open_perf_page())
 * is not ours to reset: a change is seen when perf next updates it.
 */
static int page_params(const struct perf_event_mmap_page *pc, uint64_t *zero,
		       uint32_t *mult, uint32_t *shift)
{
	const volatile struct perf_event_mmap_page *vpc = pc;
	uint32_t seq;
	int tries;

	for (tries = 0; tries < PERFCLOCK_PAGE_MAX_RETRIES; tries++) {
		seq = __atomic_load_n(&pc->lock, __ATOMIC_ACQUIRE);
		*zero = vpc->time_zero;
		*mult = vpc->time_mult;
		*shift = vpc->time_shift;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (!(seq & 1) &&
		    __atomic_load_n(&pc->lock, __ATOMIC_RELAXED) == seq)
			return 0;
	}
	return -EAGAIN;
}

static int mb_read(void *arg, uint64_t *ns)
{
	struct perfclock *clk = arg;
	struct perfclock_mb *mb = clk->hz_state;
	uint32_t mult, shift;
	uint64_t zero;
	int err, changed;

	if (clk->backend != PERFCLOCK_BACKEND_PERF_PAGE)
		return perfclock_read(clk, ns);
	if (clk->own_perf_fd >= 0 &&
	    ioctl(clk->own_perf_fd, PERF_EVENT_IOC_RESET, 0))
		return -errno;
	err = page_params(clk->perf_page, &zero, &mult, &shift);
	if (!err)
		err = perfclock_read(clk, ns);
	if (err)
		return err;
	/* Relaxed: two readers racing here at worst both see a change. */
	changed = __atomic_load_n(&mb->page_mult, __ATOMIC_RELAXED) &&
		  (zero != __atomic_load_n(&mb->page_zero, __ATOMIC_RELAXED) ||
		   mult != __atomic_load_n(&mb->page_mult, __ATOMIC_RELAXED) ||
		   shift != __atomic_load_n(&mb->page_shift, __ATOMIC_RELAXED));
	__atomic_store_n(&mb->page_zero, zero, __ATOMIC_RELAXED);
	__atomic_store_n(&mb->page_shift, shift, __ATOMIC_RELAXED);
	__atomic_store_n(&mb->page_mult, mult, __ATOMIC_RELAXED);
	return changed ? PERFCLOCK_MB_RESTARTED : 0;
}

int perfclock__horizon_membarrier_attach(struct perfclock *clk)
{
	int err;

	if (!clock_eligible(clk))
		return -EOPNOTSUPP;
	err = perfclock_mb__available();
	if (err)
		return err;
	clk->hz_state = perfclock_mb__new(mb_read, clk);
	return clk->hz_state ? 0 : -ENOMEM;
}

/*
 * *gen: the clocks served here are one clock that never steps back
 * (REALTIME and TAI are not served), but perf's page can be a stale copy
 * of it (mb_read()): each change of its conversion seen is a restart,
 * counted on top of the generation horizon_backend.c starts from. perf's
 * page losing time_zero (sched_clock turned unstable) is not a restart
 * but an error: the read fails with -EOPNOTSUPP from then on.
 */
static int membarrier_horizon(struct perfclock *clk, uint64_t *ns,
			      uint32_t *gen)
{
	uint32_t r;
	int err;

	do {
		r = perfclock_mb__restarts(clk->hz_state);
		err = perfclock_mb__horizon(clk->hz_state, ns);
	} while (!err && r != perfclock_mb__restarts(clk->hz_state));
	*gen += r;
	return err;
}

static int membarrier_sync(struct perfclock *clk, uint32_t flags,
			   uint64_t *ns, uint32_t *gen)
{
	int err;

	/* User space has no expedited grace period to ask for. */
	if (flags & PERFCLOCK_HORIZON_SYNC_EXPEDITED)
		return -EOPNOTSUPP;
	err = perfclock_mb__sync(clk->hz_state, ns);
	*gen += perfclock_mb__restarts(clk->hz_state);
	return err;
}

static int membarrier_is_exact(const struct perfclock *clk)
{
	(void)clk;
	return 1;
}

static void membarrier_info(struct perfclock *clk,
			    struct perfclock_clock_info *info)
{
	info->flags |= PERFCLOCK_CLOCK_HORIZON_MEMBARRIER;
	/*
	 * "One clock for all CPUs" rests on the host when a use_clockid
	 * clock is read on a paravirtual clocksource (the header's
	 * HOST_PROMISE). perf's page is offered only with the native
	 * sched_clock, which is not paravirtual.
	 */
	if (clk->backend == PERFCLOCK_BACKEND_CLOCKID &&
	    perfclock__clocksource_paravirt())
		info->flags |= PERFCLOCK_CLOCK_HORIZON_HOST_PROMISE;
}

static void membarrier_close(struct perfclock *clk)
{
	perfclock_mb__free(clk->hz_state);
	clk->hz_state = NULL;
}

const struct horizon_backend perfclock__horizon_membarrier = {
	.name = "membarrier",
	.horizon = membarrier_horizon,
	.sync = membarrier_sync,
	.is_exact = membarrier_is_exact,
	.info = membarrier_info,
	.close = membarrier_close,
};
