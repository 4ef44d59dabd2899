// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The horizons of a clock that can be set (CLOCK_REALTIME, CLOCK_TAI)
 * while the clock is set (docs/horizon.md, "Sets of CLOCK_REALTIME and
 * CLOCK_TAI in the library"; horizon_sets.c). Guest only, as root: it
 * sets the guest's clock and its TAI offset, and restores both; on
 * anything else every check SKIPs.
 *
 *   test_clock_set estimate   before the module is loaded: the estimate
 *   test_clock_set module     with the module: its page and GET_HORIZON
 *
 * For each of REALTIME and TAI:
 *  - restart: set back 2 s, the next horizon restarts and lies below the
 *    old one; perfclock_horizon() says -ESTALE; set forward again, a
 *    restart too; no set since, none (the estimate's contract, before
 *    horizon_sets.c too);
 *  - told at once: after each clock_settime() back by 1 s returns, the
 *    next horizon call restarts, and a COMM record made after that call
 *    is not below the horizon it returned. Before horizon_sets.c the
 *    module backend handed out its page's horizon from before the set
 *    until the module's next check (1 ms later, at best);
 *  - back and forward: set back and forward again with nothing between:
 *    the next call restarts;
 * a fork() child and its parent each see a set, whoever reads it first;
 * and for TAI alone:
 *  - the TAI offset lowered by one (adjtimex ADJ_TAI): CLOCK_TAI steps
 *    back 1 s with REALTIME untouched, which the timerfd does not see;
 *    the next call restarts, and a record made after it is not below its
 *    horizon. Before horizon_sets.c the estimate kept its old maximum;
 * and a tool's round loop and the threaded reader over per-CPU rings
 * while the clock is set (test_clock_set_rings.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/timex.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "tap.h"
#include "test_clock_set.h"

#define ROUNDS		5
#define RING_PAGES	16

static const int ids[] = { CLOCK_REALTIME, CLOCK_TAI };
static const char *const names[] = { "REALTIME", "TAI" };
int module_mode;

uint64_t ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ULL + (uint64_t)ts->tv_nsec;
}

int step_realtime(long long delta_ns)
{
	struct timespec ts;
	long long ns;

	if (clock_gettime(CLOCK_REALTIME, &ts))
		return -errno;
	ns = (long long)ts_ns(&ts) + delta_ns;
	ts.tv_sec = ns / SEC;
	ts.tv_nsec = ns % SEC;
	return clock_settime(CLOCK_REALTIME, &ts) ? -errno : 0;
}

/* The kernel's TAI offset (seconds), or -errno. */
static long tai_get(void)
{
	struct timex tx;

	memset(&tx, 0, sizeof(tx));
	return adjtimex(&tx) < 0 ? -errno : tx.tai;
}

static int tai_set(long tai)
{
	struct timex tx;

	memset(&tx, 0, sizeof(tx));
	tx.modes = ADJ_TAI;
	tx.constant = tai;
	return adjtimex(&tx) < 0 ? -errno : 0;
}

/* A horizon, any restart before it taken (the caller starts afresh). */
static int settle(struct perfclock *c, uint64_t *h, uint32_t *g)
{
	int ret = perfclock_horizon_gen(c, h, g);

	return ret < 0 ? ret : 0;
}

/* COMM records: one per name set with prctl(), stamped with clk's clock. */
struct comm_ring {
	int fd;
	void *base;
	size_t len;
	struct perf_event_attr a;
};

static int comm_open(struct perfclock *c, struct comm_ring *cr)
{
	long pagesz = sysconf(_SC_PAGESIZE);

	memset(cr, 0, sizeof(*cr));
	cr->len = (size_t)(1 + RING_PAGES) * (size_t)pagesz;
	cr->a.size = sizeof(cr->a);
	cr->a.type = PERF_TYPE_SOFTWARE;
	cr->a.config = PERF_COUNT_SW_DUMMY;
	cr->a.comm = 1;
	cr->a.sample_id_all = 1;
	cr->a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	perfclock_fill_attr(c, &cr->a);
	cr->fd = (int)syscall(SYS_perf_event_open, &cr->a, 0, -1, -1,
			      PERF_FLAG_FD_CLOEXEC);
	if (cr->fd < 0)
		return -errno;
	cr->base = mmap(NULL, cr->len, PROT_READ | PROT_WRITE, MAP_SHARED,
			cr->fd, 0);
	if (cr->base == MAP_FAILED) {
		close(cr->fd);
		return -ENOMEM;
	}
	return 0;
}

static void comm_close(struct comm_ring *cr)
{
	munmap(cr->base, cr->len);
	close(cr->fd);
}

/*
 * The times of the COMM records named prefix-0 .. prefix-(n-1) into t[]
 * (0 if not found): the number found.
 */
static int comm_times(struct comm_ring *cr, const char *prefix, uint64_t *t,
		      int n)
{
	struct perfclock_record rec;
	struct perfclock_ring *r = perfclock_ring_new(cr->base, cr->len, &cr->a);
	char name[16];
	int i, found = 0;

	memset(t, 0, sizeof(*t) * (size_t)n);
	if (!r || perfclock_ring_read_begin(r) < 0) {
		perfclock_ring_free(r);
		return 0;
	}
	while (perfclock_ring_read_event(r, &rec) == 1) {
		const char *comm = (const char *)rec.data + 16;

		if (rec.type != PERF_RECORD_COMM || rec.size < 40 ||
		    !(rec.flags & PERFCLOCK_RECORD_HAS_TIME))
			continue;
		for (i = 0; i < n; i++) {
			snprintf(name, sizeof(name), "%s-%d", prefix, i);
			if (!strncmp(comm, name, 15) && !t[i]) {
				t[i] = rec.time;
				found++;
			}
		}
	}
	perfclock_ring_read_end(r);
	perfclock_ring_free(r);
	return found;
}

static void name_self(const char *prefix, int i)
{
	char name[16];

	snprintf(name, sizeof(name), "%s-%d", prefix, i);
	prctl(PR_SET_NAME, name, 0, 0, 0);
}

/* The estimate's contract since the timerfd (moved from test_module.c). */
static void test_restart(struct perfclock *c[2])
{
	struct perfclock *old;
	uint64_t h0[2], h1[2], h;
	uint32_t g0[2], g1[2], g;
	int i, ret[2], err;

	for (i = 0; i < 2; i++)
		ret[i] = settle(c[i], &h0[i], &g0[i]);
	old = perfclock_open_clockid(CLOCK_REALTIME);
	if (!old || perfclock_horizon(old, &h))
		tap_ok(0, "restart: a second REALTIME clock");
	err = step_realtime(-2 * SEC);
	for (i = 0; i < 2; i++) {
		ret[i] = perfclock_horizon_gen(c[i], &h1[i], &g1[i]);
		tap_ok(!err && ret[i] == PERFCLOCK_HORIZON_RESTARTED &&
		       g1[i] != g0[i] && h1[i] + SEC < h0[i],
		       "restart: %s set back 2 s: restarted (ret %d, gen %u -> %u), the new horizon %.3f s below the old one (the old rule kept the maximum)",
		       names[i], ret[i], g0[i], g1[i],
		       ((double)h0[i] - (double)h1[i]) / 1e9);
	}
	tap_ok(old && perfclock_horizon(old, &h) == -ESTALE,
	       "restart: a caller of perfclock_horizon() is told: -ESTALE");
	err = step_realtime(2 * SEC);
	ret[0] = perfclock_horizon_gen(c[0], &h, &g);
	tap_ok(!err && ret[0] == PERFCLOCK_HORIZON_RESTARTED && g != g1[0],
	       "restart: set forward again (restored): a restart too (ret %d, gen %u)",
	       ret[0], g);
	g1[0] = g;
	ret[0] = perfclock_horizon_gen(c[0], &h, &g);
	tap_ok(ret[0] == 0 && g == g1[0],
	       "restart: no set since: no restart (ret %d, gen %u)", ret[0], g);
	settle(c[1], &h, &g);
	perfclock_close(old);
}

/*
 * Set back 1 s, ROUNDS times: the first call after each set restarts,
 * and a record made after it is not below its horizon.
 */
static void test_told_at_once(struct perfclock *c, const char *name)
{
	struct comm_ring cr;
	uint64_t h0, h1[ROUNDS], t[ROUNDS];
	uint32_t g0, g1;
	int i, ret, err = 0, told = 0, below = 0, found;

	if (comm_open(c, &cr)) {
		tap_ok(0, "told at once: %s: a COMM ring", name);
		return;
	}
	for (i = 0; i < ROUNDS; i++) {
		err |= settle(c, &h0, &g0);
		err |= step_realtime(-SEC);
		ret = perfclock_horizon_gen(c, &h1[i], &g1);
		told += ret == PERFCLOCK_HORIZON_RESTARTED && g1 != g0;
		name_self("pcs-told", i);
		err |= step_realtime(SEC);
	}
	prctl(PR_SET_NAME, "test_clock_set", 0, 0, 0);
	found = comm_times(&cr, "pcs-told", t, ROUNDS);
	for (i = 0; i < ROUNDS; i++)
		below += t[i] && t[i] < h1[i];
	tap_ok(!err && told == ROUNDS,
	       "told at once: %s: the first horizon after each set back restarts (%d of %d)",
	       name, told, ROUNDS);
	tap_ok(!err && found == ROUNDS && !below,
	       "told at once: %s: a record made after that horizon is not below it (%d found, %d below)",
	       name, found, below);
	comm_close(&cr);
}

/* Back 1 s and forward 1 s + 1 ms, nothing between: a restart. */
static void test_back_and_forward(struct perfclock *c, const char *name)
{
	uint64_t h;
	uint32_t g0, g1;
	int i, ret, err = 0, told = 0;

	for (i = 0; i < ROUNDS; i++) {
		err |= settle(c, &h, &g0);
		err |= step_realtime(-SEC);
		err |= step_realtime(SEC + 1000000LL);
		ret = perfclock_horizon_gen(c, &h, &g1);
		told += ret == PERFCLOCK_HORIZON_RESTARTED && g1 != g0;
	}
	tap_ok(!err && told == ROUNDS,
	       "back and forward: %s: set back and forward again, the next horizon restarts (%d of %d)",
	       name, told, ROUNDS);
}

/*
 * After fork(), parent and child each see a set, whoever reads first:
 * the timerfd they inherit is one open file description, and a cancel
 * read by one is gone for the other (fork_guard.c gives the child its
 * own). The child's first horizon does not restart (nothing was set);
 * then the parent sets the clock back and takes its horizon first; the
 * child's next must restart.
 */
static void test_fork(struct perfclock *c, const char *name)
{
	int go[2], back[2], st = 0, child_ok = 0;
	uint64_t h;
	uint32_t g;
	char b = 0;
	pid_t pid;

	if (pipe(go) || pipe(back)) {
		tap_ok(0, "fork: %s: pipes", name);
		return;
	}
	settle(c, &h, &g);
	pid = fork();
	if (pid == 0) {
		int first = perfclock_horizon_gen(c, &h, &g), ret;

		ret = write(back[1], "r", 1) == 1 && read(go[0], &b, 1) == 1 ?
		      perfclock_horizon_gen(c, &h, &g) : -EIO;
		_exit(first == 0 && ret == PERFCLOCK_HORIZON_RESTARTED ? 0 :
		      ret == 0 ? 1 : 2);
	}
	if (pid > 0 && read(back[0], &b, 1) == 1) {
		st = step_realtime(-SEC);
		st |= perfclock_horizon_gen(c, &h, &g) !=
		      PERFCLOCK_HORIZON_RESTARTED;
		st |= write(go[1], "g", 1) != 1;
		st |= step_realtime(SEC);
		settle(c, &h, &g);
	}
	if (pid > 0 && waitpid(pid, &child_ok, 0) == pid)
		child_ok = WIFEXITED(child_ok) ? WEXITSTATUS(child_ok) : 3;
	else
		child_ok = 4;
	tap_ok(pid > 0 && !st && child_ok == 0,
	       "fork: %s: the parent took the set first, the child saw it too (child status %d: 1 = no restart, 2 = other)",
	       name, child_ok);
	close(go[0]);
	close(go[1]);
	close(back[0]);
	close(back[1]);
}

/* CLOCK_TAI alone steps back: adjtimex(ADJ_TAI) lowers its offset. */
static void test_tai_offset(struct perfclock *tai)
{
	struct comm_ring cr;
	long orig = tai_get();
	uint64_t h0, h1, t = 0;
	uint32_t g0, g1;
	int ret, err, found;

	if (orig < 0) {
		tap_skip("TAI offset: # SKIP adjtimex: %s", strerror((int)-orig));
		return;
	}
	if (comm_open(tai, &cr)) {
		tap_ok(0, "TAI offset: a COMM ring");
		return;
	}
	/* From 37 (today's) to 36; a guest booted with 0 goes up first. */
	err = tai_set(37);
	err |= settle(tai, &h0, &g0);
	err |= tai_set(36);
	ret = perfclock_horizon_gen(tai, &h1, &g1);
	name_self("pcs-tai", 0);
	prctl(PR_SET_NAME, "test_clock_set", 0, 0, 0);
	err |= tai_set(orig);
	tap_ok(!err && ret == PERFCLOCK_HORIZON_RESTARTED && g1 != g0,
	       "TAI offset: lowered by 1 s (REALTIME untouched): the next horizon restarts (ret %d, gen %u -> %u, %.3f s below the old one)",
	       ret, g0, g1, ((double)h0 - (double)h1) / 1e9);
	found = comm_times(&cr, "pcs-tai", &t, 1);
	tap_ok(found == 1 && t >= h1,
	       "TAI offset: a record made after that horizon is not below it (%.3f s above)",
	       ((double)t - (double)h1) / 1e9);
	tap_ok(tai_get() == orig, "TAI offset: restored to %ld", orig);
	comm_close(&cr);
}

int main(int argc, char **argv)
{
	struct perfclock_clock_info ci;
	struct perfclock *c[2];
	const char *regime = getenv("PERFCLOCK_REGIME");
	int i, exact;

	module_mode = argc > 1 && !strcmp(argv[1], "module");
	if (argc < 2 || (!module_mode && strcmp(argv[1], "estimate"))) {
		fprintf(stderr, "usage: %s estimate|module\n", argv[0]);
		return 2;
	}
	/*
	 * Never set a host's clock: only in the test guest, whose /init
	 * sets PERFCLOCK_REGIME and which runs its payload from /payload.
	 */
	if (!regime || (strcmp(regime, "stable") && strcmp(regime, "unstable")) ||
	    access("/payload/run.sh", F_OK)) {
		tap_skip("clock set: all # SKIP not in the test guest");
		return tap_exit();
	}
	if (geteuid()) {
		tap_skip("clock set: all # SKIP not root");
		return tap_exit();
	}
	for (i = 0; i < 2; i++) {
		c[i] = perfclock_open_clockid(ids[i]);
		if (!c[i] || perfclock_get_info(c[i], &ci)) {
			tap_ok(0, "%s: open (%s)", names[i], strerror(errno));
			return tap_exit();
		}
		exact = !!(ci.flags & (PERFCLOCK_CLOCK_HORIZON_EXACT |
				       PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE));
		tap_ok(exact == module_mode && (ci.flags & PERFCLOCK_CLOCK_SETTABLE),
		       "%s: settable, horizon %s (%s mode)", names[i],
		       perfclock_horizon_name(&ci), argv[1]);
	}
	test_restart(c);
	for (i = 0; i < 2; i++) {
		test_told_at_once(c[i], names[i]);
		test_back_and_forward(c[i], names[i]);
	}
	test_tai_offset(c[1]);
	test_fork(c[0], names[0]);
	test_round_loop(c[0], names[0]);
	if (module_mode)
		test_reader(c[0], names[0]);
	for (i = 0; i < 2; i++)
		perfclock_close(c[i]);
	return tap_exit();
}
