// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests, one file per library file, run in this order as one TAP
 * stream:
 *   unit_clock.c  libperfclock.c: the clock backends' host-testable paths,
 *                 the page reader on a fake page, the estimated horizon of
 *                 a clockid clock without the module;
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
#include "tap.h"
#include "unit.h"

int main(void)
{
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
	test_membarrier();
	scenario_schuchart();
	scenario_ahern();
	scenario_inflight();
	scenario_idle();
	scenario_skew();
	return tap_exit();
}
