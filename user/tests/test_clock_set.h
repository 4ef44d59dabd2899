/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What test_clock_set's two files share: the mode, a set of the wall
 * clock (test_clock_set.c), and the checks over per-CPU rings while the
 * clock is set (test_clock_set_rings.c), which main() runs last.
 */
#ifndef PERFCLOCK_TEST_CLOCK_SET_H
#define PERFCLOCK_TEST_CLOCK_SET_H

#include <stdint.h>
#include <time.h>

#include "libperfclock.h"

#define SEC		1000000000LL

/* 1: "module" (exact horizons); 0: "estimate", before the module loads. */
extern int module_mode;

uint64_t ts_ns(const struct timespec *ts);
/* CLOCK_REALTIME moved by delta_ns: 0 or -errno. */
int step_realtime(long long delta_ns);

/* test_clock_set_rings.c */
void test_round_loop(struct perfclock *c, const char *name);
void test_reader(struct perfclock *c, const char *name);

#endif
