// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Sets of a clock that can be set (CLOCK_REALTIME, CLOCK_TAI), whatever
 * backend hands out its horizons (the module's page or ioctl, the
 * estimate): the sets step of the horizon's pipeline (THE PIPELINE in
 * horizon.c), perfclock__sets_take(), through which every horizon of
 * every clock passes once. It takes the backend's horizon
 * (horizon_backend.c, the step below) and keeps it only if it was proven
 * after every set seen (THE RULE); a clock that cannot be set passes
 * straight through. It calls nothing above it: horizon.c calls it, it
 * returns the horizon and its generation.
 *
 * WHY. perf stamps a use_clockid REALTIME or TAI record with
 * ktime_get_real_ns() / ktime_get_clocktai_ns() (kernel/events/core.c:
 * perf_event_set_clock()): MONOTONIC plus the timekeeper's offs_real or
 * offs_tai, which a set moves at once (kernel/time/timekeeping.c:
 * do_settimeofday64(), timekeeping_inject_offset() for
 * adjtimex(ADJ_SETOFFSET), do_adjtimex() for a TAI offset change,
 * accumulate_nsecs_to_secs() for a leap second; each through
 * timekeeping_update(TK_CLOCK_WAS_SET), which also bumps
 * clock_was_set_seq). After a set back, records are stamped below a
 * horizon handed out before it; a horizon read before the set (the
 * module's page keeps one until its next check, module/perfclock.c:
 * perfclock_epoch_check()) but handed out after it is above them too.
 *
 * HOW USER SPACE SEES A SET. A CLOCK_REALTIME timerfd armed with
 * TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET. fs/timerfd.c:
 * timerfd_clock_was_set(), called by kernel/time/hrtimer.c:
 * clock_was_set() (which every path above calls: synchronously, before
 * settimeofday(), clock_settime() and adjtimex() return; for a leap
 * second through clock_was_set_delayed(), a work item a little later),
 * marks the timer cancelled when ktime_mono_to_real(0) differs from its
 * value at arming (ctx->moffs); read() then fails with ECANCELED
 * (timerfd_canceled()) until it is armed again. Same code in 6.1 and
 * 6.12. Its blind spots:
 *  - offs_real only. A change of the TAI offset alone (adjtimex ADJ_TAI)
 *    moves CLOCK_TAI and leaves offs_real, so the timer is not
 *    cancelled: for CLOCK_TAI the offset TAI - REALTIME is watched too
 *    (tai_offset() below; it is whole seconds).
 *  - It counts no sets: a set back and one forward again between two
 *    checks cancel it once, which is enough here (one restart covers
 *    both: the caller drops every horizon of before).
 *  - A set is seen only once clock_was_set() has run: a horizon read
 *    between the timekeeper's update and that (the set's own system call
 *    has not returned yet) can still be handed out as before it; the
 *    next call reports it. The contract (docs/horizon.md, "Sets of
 *    CLOCK_REALTIME and CLOCK_TAI in the library") counts a set from the
 *    return of the call that made it.
 *
 * THE RULE (perfclock__sets_take()). set_gen counts the sets seen (under
 * set_lock, which fork_guard.c takes around fork()); set_taken is the
 * count a horizon was last proven after: a read made once every set up
 * to set_taken had been seen. A horizon read is kept only if no set
 * beyond the set_taken loaded before it shows right after it; otherwise
 * it is discarded and a fresh one (the backend's sync(), a read after
 * the set: the module's GET_HORIZON runs perfclock_epoch_check() first)
 * is taken, and checked the same way. The generation handed out is the
 * backend's plus set_gen, so every set is a restart
 * (PERFCLOCK_HORIZON_RESTARTED, -ESTALE), forward ones too: a restart
 * costs the caller a flush, and a forward set is not told apart from a
 * back-and-forward pair.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "horizon_internal.h"

/* A TAI - REALTIME reading wider than this is not used (a set in it). */
#define TAI_BRACKET_NS	100000000LL	/* 100 ms */

static int arm_cancel_on_set(int fd)
{
	/* Far ahead (2200-01-01): it never expires, it only cancels. */
	struct itimerspec its = { .it_value = { .tv_sec = 7258118400LL } };

	return timerfd_settime(fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET,
			       &its, NULL);
}

static long long ts_ns(const struct timespec *ts)
{
	return (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

/*
 * The TAI offset in whole seconds: TAI read between two REALTIME reads,
 * against their midpoint. Without a set between them it is the offset
 * within half the bracket; a set inside makes the bracket negative or
 * wide (refused: -1) or moves the midpoint by less than the bracket, so
 * an accepted reading rounds to the offset at one of the reads.
 */
static int tai_offset(long long *sec)
{
	struct timespec r0, t, r1;
	long long a, b, d;

	if (clock_gettime(CLOCK_REALTIME, &r0) ||
	    clock_gettime(CLOCK_TAI, &t) ||
	    clock_gettime(CLOCK_REALTIME, &r1))
		return -1;
	a = ts_ns(&r0);
	b = ts_ns(&r1);
	if (b < a || b - a > TAI_BRACKET_NS)
		return -1;
	d = ts_ns(&t) - (a + (b - a) / 2);
	*sec = (d >= 0 ? d + 500000000LL : d - 500000000LL) / 1000000000LL;
	return 0;
}

int perfclock__sets_follow(struct perfclock *clk)
{
	int fd, err;

	clk->set_tfd = -1;
	if (clk->backend != PERFCLOCK_BACKEND_CLOCKID ||
	    (clk->clockid != CLOCK_REALTIME && clk->clockid != CLOCK_TAI))
		return 0;
	/*
	 * Without it no set would be seen, and a horizon could be silently
	 * above every later record: no clock then (EMFILE, ENFILE, ENOMEM;
	 * the flag exists since Linux 3.0).
	 */
	fd = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (arm_cancel_on_set(fd)) {
		err = -errno;
		close(fd);
		return err;
	}
	clk->set_gen = 0;
	clk->set_taken = 0;
	clk->set_err = 0;
	clk->set_tai_known = clk->clockid == CLOCK_TAI &&
			     tai_offset(&clk->set_tai_s) == 0;
	pthread_mutex_init(&clk->set_lock, NULL);
	clk->set_tfd = fd;
	return 0;
}

/*
 * REALTIME - MONOTONIC (offs_real, which only a set moves; NTP's slewing
 * moves both clocks alike): REALTIME read between two MONOTONIC reads,
 * against their midpoint, within *err (half the bracket). 0, or -1.
 */
static int wall_offset(long long *off, long long *err)
{
	struct timespec m0, r, m1;
	long long a, b;

	if (clock_gettime(CLOCK_MONOTONIC, &m0) ||
	    clock_gettime(CLOCK_REALTIME, &r) ||
	    clock_gettime(CLOCK_MONOTONIC, &m1))
		return -1;
	a = ts_ns(&m0);
	b = ts_ns(&m1);
	*off = ts_ns(&r) - (a + (b - a) / 2);
	*err = (b - a) / 2 + 1;
	return 0;
}

/*
 * FORK. The timerfd is one open file description, shared by parent and
 * child after fork(): a cancel that one process reads is gone for the
 * other, which would miss the set. So (fork_guard.c's handlers):
 *  - _prefork(), in the parent under set_lock just before fork(): take
 *    any cancel pending (both processes then count it) and read the wall
 *    offset;
 *  - _forked(), in the child (one thread): a timerfd of its own on the
 *    same descriptor number, armed, then the wall offset again. A set in
 *    between (the fork itself) shows as a different offset: counted. A
 *    set smaller than the two reads' error (tens of ns through the vDSO,
 *    microseconds through the system call) is not seen there. A child
 *    that cannot have its own timerfd gets set_err: its horizons of this
 *    clock fail rather than miss sets.
 */
void perfclock__sets_prefork(struct perfclock *clk)
{
	uint64_t expirations;

	if (read(clk->set_tfd, &expirations, sizeof(expirations)) < 0 &&
	    errno == ECANCELED) {
		clk->set_gen++;
		arm_cancel_on_set(clk->set_tfd);
	}
	clk->set_fork_ok = !wall_offset(&clk->set_fork_off,
					&clk->set_fork_err);
}

void perfclock__sets_forked(struct perfclock *clk)
{
	int fd = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC);
	long long off, err, d;

	if (fd < 0 || arm_cancel_on_set(fd) ||
	    dup3(fd, clk->set_tfd, O_CLOEXEC) < 0) {
		clk->set_err = errno ? -errno : -EMFILE;
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	if (!clk->set_fork_ok || wall_offset(&off, &err)) {
		clk->set_gen++;		/* unknown: count it */
		return;
	}
	d = off > clk->set_fork_off ? off - clk->set_fork_off :
	    clk->set_fork_off - off;
	if (d > err + clk->set_fork_err)
		clk->set_gen++;
}

void perfclock__sets_release(struct perfclock *clk)
{
	if (clk->set_tfd < 0)
		return;
	close(clk->set_tfd);
	pthread_mutex_destroy(&clk->set_lock);
	clk->set_tfd = -1;
}

/* The count a horizon was last proven after. */
static uint32_t sets_taken(struct perfclock *clk)
{
	uint32_t t;

	pthread_mutex_lock(&clk->set_lock);
	t = clk->set_taken;
	pthread_mutex_unlock(&clk->set_lock);
	return t;
}

/* A horizon was read after every set up to s had been seen. */
static void sets_took(struct perfclock *clk, uint32_t s)
{
	pthread_mutex_lock(&clk->set_lock);
	if ((int32_t)(s - clk->set_taken) > 0)
		clk->set_taken = s;
	pthread_mutex_unlock(&clk->set_lock);
}

/* The sets seen so far, after taking any the kernel has reported. */
static uint32_t sets_seen(struct perfclock *clk)
{
	uint64_t expirations;
	long long tai = 0;
	uint32_t gen;

	pthread_mutex_lock(&clk->set_lock);
	if (read(clk->set_tfd, &expirations, sizeof(expirations)) < 0 &&
	    errno == ECANCELED) {
		clk->set_gen++;
		arm_cancel_on_set(clk->set_tfd);
	}
	/* Under the lock: readings of two threads must not cross. */
	if (clk->clockid == CLOCK_TAI && tai_offset(&tai) == 0) {
		if (clk->set_tai_known && tai != clk->set_tai_s)
			clk->set_gen++;
		clk->set_tai_s = tai;
		clk->set_tai_known = 1;
	}
	gen = clk->set_gen;
	pthread_mutex_unlock(&clk->set_lock);
	return gen;
}

/* Reads discarded in a row for a set right after them before -EAGAIN. */
#define SET_TRIES	4

/*
 * The backend's horizon (perfclock__horizon_ask()), and for a clock that
 * can be set THE RULE: a horizon read is kept only if no set beyond
 * `cover` shows right after it, where cover is a count of sets every one
 * of which was seen before the read began (set_taken at first: a horizon
 * was proven after those). Otherwise the read may be from before a set
 * the caller already knows of (the module's page keeps its horizon until
 * the module's next check): it is discarded, and a fresh one (the
 * backend's sync(), which reads after the call begins; the estimate's
 * plain read) is taken. Every set seen is a new generation: gen + cover.
 */
int perfclock__sets_take(struct perfclock *clk, int sync, uint32_t flags,
			 uint64_t *h, uint32_t *gen)
{
	uint32_t cover, seen;
	int tries, err, fresh = 0;

	if (clk->set_tfd < 0)
		return perfclock__horizon_ask(clk, sync, 0, flags, h, gen);
	if (clk->set_err)		/* a fork() child without its timerfd */
		return clk->set_err;
	cover = sets_taken(clk);
	for (tries = 0; tries < SET_TRIES; tries++) {
		err = perfclock__horizon_ask(clk, sync, fresh, flags, h, gen);
		if (err)
			return err;
		seen = sets_seen(clk);
		if (seen == cover) {
			sets_took(clk, cover);
			*gen += cover;
			return 0;
		}
		cover = seen;
		fresh = 1;
	}
	return -EAGAIN;
}
