/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test_unit's parts, one file per library file (see test_unit.c). */
#ifndef PERFCLOCK_TEST_UNIT_H
#define PERFCLOCK_TEST_UNIT_H

/* unit_clock.c */
void test_open_errors(void);
void test_clockid_backend(void);
void test_page_reader(void);
void test_horizon_estimate(void);
void test_attr_hw_time(void);
void test_settable_estimate(void);
void test_settable_no_fd(void);

/* unit_percpu.c */
void test_percpu(void);

/* unit_ntp_slope.c */
void test_ntp_slope(void);

/* unit_membarrier.c */
void test_membarrier(void);

/* unit_ring.c */
void test_ring_basic(void);
void test_ring_corrupt(void);
void test_ring_shared(void);

/* unit_queue.c */
void test_queue_basic(void);
void test_queue_flush_until(void);
void test_queue_memcap(void);
void test_queue_memcap_retained(void);

/* unit_rules.c */
void scenario_schuchart(void);
void scenario_ahern(void);
void scenario_inflight(void);
void scenario_idle(void);
void scenario_skew(void);
void rules_ring_horizons(void);

#endif
