// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The membarrier helper's pacing (horizon_membarrier.c, PACING), on this
 * host's kernel for real: each barrier is a grace period the machine
 * runs for us (an expedited one, IPIs to busy CPUs, on a kernel booted
 * with rcupdate.rcu_expedited=1). Counted with the engine's own stats,
 * against the rule, not a speed:
 *  - asked for a horizon every millisecond for ASK_S, the helper starts
 *    at most one barrier per 10 ms (and the horizon moves);
 *  - nobody asking for more than a second, it makes no barrier at all;
 *  - the first horizon asked after that is proven on the caller's
 *    thread: a read taken during the call, not the stale one.
 * Before the pacing the helper made one barrier per millisecond, back to
 * back, whether asked or not (about 800/s here): these checks fail.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "horizon_membarrier.h"
#include "tap.h"

#define ASK_S		2
#define MIN_INTERVAL_NS	10000000ULL	/* PERFCLOCK_MB_MIN_INTERVAL_NS */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int read_mono(void *arg, uint64_t *ns)
{
	(void)arg;
	*ns = now_ns();
	return 0;
}

static void stats(struct perfclock_mb *mb, struct perfclock_mb_stats *st)
{
	memset(st, 0, sizeof(*st));
	perfclock_mb__get_stats(mb, st);
}

int main(void)
{
	struct perfclock_mb_stats s0, s1, s2, s3;
	uint64_t h0 = 0, h = 0, t0, t1, before, after;
	struct perfclock_mb *mb;
	int err, ok = 1;
	double allowed;

	err = perfclock_mb__available();
	if (err) {
		tap_skip("membarrier pacing # SKIP no MEMBARRIER_CMD_GLOBAL here (%s)",
			 strerror(-err));
		return tap_exit();
	}
	mb = perfclock_mb__new(read_mono, NULL);
	if (!mb || perfclock_mb__horizon(mb, &h0)) {
		tap_ok(0, "membarrier pacing: engine and first horizon");
		return tap_exit();
	}
	stats(mb, &s0);
	t0 = now_ns();
	while (now_ns() - t0 < ASK_S * 1000000000ULL && ok) {
		ok = perfclock_mb__horizon(mb, &h) == 0;
		usleep(1000);
	}
	t1 = now_ns();
	stats(mb, &s1);
	/* One barrier may be under way at each end of the window. */
	allowed = (double)(t1 - t0) / (double)MIN_INTERVAL_NS + 2;
	tap_ok(ok && h > h0 && (double)(s1.barriers - s0.barriers) <= allowed,
	       "membarrier pacing: asked every ms for %.2f s, the helper made %llu barriers (at most %.0f: one per 10 ms) and the horizon moved %.3f ms",
	       (double)(t1 - t0) / 1e9,
	       (unsigned long long)(s1.barriers - s0.barriers), allowed,
	       (double)(h - h0) / 1e6);

	/* Idle: the thread parks a second after the last ask. */
	usleep(1500000);
	stats(mb, &s2);
	usleep(1000000);
	stats(mb, &s3);
	tap_ok(s3.barriers == s2.barriers && s3.parks >= 1 && !s3.err,
	       "membarrier pacing: nobody asking, no barrier (%llu in the second second of silence; the thread slept %llu times)",
	       (unsigned long long)(s3.barriers - s2.barriers),
	       (unsigned long long)s3.parks);

	before = now_ns();
	ok = perfclock_mb__horizon(mb, &h) == 0;
	after = now_ns();
	tap_ok(ok && before <= h && h <= after,
	       "membarrier pacing: the first horizon after the silence is proven in the call (a read during it, %.3f ms in the call), not the old one",
	       (double)(after - before) / 1e6);
	perfclock_mb__free(mb);
	return tap_exit();
}
