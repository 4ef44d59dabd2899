// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests, one file per library file, run in this order as one TAP
 * stream:
 *   unit_clock.c  libperfclock.c: the clock backends' host-testable paths,
 *                 the page reader on a fake page, the estimated horizon of
 *                 a clockid clock without the module;
 *   unit_percpu.c horizon_percpu.c: the per-CPU horizon on this host;
 *   unit_membarrier.c horizon_membarrier.c, horizon.c's choice: the
 *                 membarrier horizon on this host's kernel;
 *   unit_ring.c   ring.c: the ring reader on hand-made rings (wrap, LOST,
 *                 every kind of corruption);
 *   unit_queue.c  queue.c, queue_mem.c: the queue's mechanics (order,
 *                 stragglers, flush_until, memory cap, callbacks);
 *   unit_rules.c  the scenarios from the 2013 thread with the verdict of
 *                 each of demo_flush's rules (user/demo/rules.c).
 * (evring.c has its own program, test_evring.c.)
 */
#include <stdlib.h>

#include "horizon_membarrier.h"
#include "tap.h"
#include "unit.h"

int main(void)
{
	/*
	 * Under valgrind (tests/check.sh sets this): no membarrier helper
	 * threads. Valgrind runs one thread at a time and holds its lock
	 * through membarrier(), which it does not treat as blocking, so a
	 * helper thread in back-to-back grace periods starves the others
	 * for minutes. The ASan run covers horizon_membarrier.c.
	 */
	if (getenv("PERFCLOCK_TEST_NO_MEMBARRIER"))
		perfclock_mb__test_set_mode(PERFCLOCK_MB_TEST_UNAVAILABLE);
	test_open_errors();
	test_clockid_backend();
	test_page_reader();
	test_ring_basic();
	test_ring_corrupt();
	test_ring_shared();
	test_queue_basic();
	test_queue_flush_until();
	test_queue_memcap();
	test_queue_memcap_retained();
	test_horizon_estimate();
	test_attr_hw_time();
	test_settable_estimate();
	test_settable_no_fd();
	test_membarrier();
	test_percpu();
	test_ntp_slope();
	scenario_schuchart();
	scenario_ahern();
	scenario_inflight();
	scenario_idle();
	scenario_skew();
	rules_ring_horizons();
	return tap_exit();
}
