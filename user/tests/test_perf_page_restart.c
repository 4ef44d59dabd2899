// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The perf page backend's page is a copy perf makes at add/period/mmap/
 * reset (horizon_membarrier.c, mb_read()); a resume from suspend lowers
 * cyc2ns_offset by the time asleep, so the old copy reads ahead of the
 * clock, and horizons proven from it lie above later stamps. The helper
 * compares the conversion at each read: a change is a restart
 * (perfclock_horizon_gen() says PERFCLOCK_HORIZON_RESTARTED, the next
 * horizons start from the new conversion and may be lower).
 *
 * A fake perf page stands in for the kernel's (this host's own offers no
 * time_zero: kvm-clock): time_zero is lowered by one second, under its
 * seq count, as tsc_restore_sched_clock_state() would; the restart must
 * be reported within MOVE_WAIT_NS and the horizon after it must be below
 * the one before. Before mb_read() compared the conversion, no restart
 * came and the horizon stayed a second ahead: this fails.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "perfclock_page.h"
#include "horizon_membarrier.h"
#include "tap.h"

#define MOVE_WAIT_NS	10000000000ULL	/* a liveness bound, not a target */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int main(void)
{
#if PERFCLOCK_PAGE_HAVE_TSC
	static struct perf_event_mmap_page pc;
	uint64_t h0 = 0, h = 0, end;
	struct perfclock *c;
	uint32_t g0 = 0, g = 0;
	int r = -1, err;

	err = perfclock_mb__available();
	if (err) {
		tap_skip("perf page restart # SKIP no membarrier here (%s)",
			 strerror(-err));
		return tap_exit();
	}
	memset(&pc, 0, sizeof(pc));
	pc.cap_user_time_zero = 1;
	pc.time_mult = 1;
	pc.time_shift = 0;
	pc.time_zero = 2000000000ULL;
	pc.lock = 2;
	c = perfclock_open_perf_page(&pc);
	if (!c || perfclock_horizon_gen(c, &h0, &g0) < 0) {
		tap_ok(0, "perf page restart: open and a first horizon");
		perfclock_close(c);
		return tap_exit();
	}
	/* The kernel rewrites the page: seq odd, time_zero 1 s lower, even. */
	__atomic_store_n(&pc.lock, 3, __ATOMIC_RELEASE);
	__atomic_store_n(&pc.time_zero, 1000000000ULL, __ATOMIC_RELEASE);
	__atomic_store_n(&pc.lock, 4, __ATOMIC_RELEASE);
	end = now_ns() + MOVE_WAIT_NS;
	do {
		usleep(1000);
		r = perfclock_horizon_gen(c, &h, &g);
	} while (r == 0 && now_ns() < end);
	tap_ok(r == PERFCLOCK_HORIZON_RESTARTED && g != g0 && h < h0,
	       "perf page restart: time_zero lowered by 1 s under the helper: a restart is reported (%d, generation %u -> %u) and the horizon restarts below the old one (%llu -> %llu)",
	       r, g0, g, (unsigned long long)h0, (unsigned long long)h);
	perfclock_close(c);
#else
	tap_skip("perf page restart # SKIP no TSC on this architecture");
#endif
	return tap_exit();
}
