/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What test_reader's two files share: the sink every reader delivers to,
 * the rings of the test's events, a reader started on them, and the load
 * (defined in test_reader.c); the lifecycle checks (defined in
 * test_reader_lifecycle.c), which main() runs after the load's.
 */
#ifndef PERFCLOCK_TEST_READER_H
#define PERFCLOCK_TEST_READER_H

#include <stdint.h>

#include "libperfclock.h"
#include "perfclock_reader.h"

/* What a reader delivered, as deliver() and rd_start()'s on_limit count it. */
struct sink {
	uint64_t delivered, timed, untimed, late, unsorted, lost_seen, last;
	uint64_t limits, limit_down, last_limit;
};

/* deliver: the reader's callback, counting into the sink (arg). */
int deliver(void *arg, const struct perfclock_event *ev);
/* The test's three events on every CPU (pid -1) or this task (pid 0). */
struct perfclock_evring *ev_open(struct perfclock *clk, int pid,
				 uint32_t pages);
/* A reader on er delivering into s (zeroed first). */
struct perfclock_reader *rd_start(struct perfclock *clk,
				  struct perfclock_evring *er,
				  struct sink *s, uint32_t flags);
/* A hog on every CPU and a pipe ping-pong between two, until load_stop(). */
void load_start(int ncpu);
void load_stop(void);

/* test_reader_pertask.c: the ring of a per-task event (cpu -1) */
void per_task(struct perfclock *clk, int ncpu);

/* test_reader_lifecycle.c */
void kinds(struct perfclock *clk);
void lifecycle(struct perfclock *clk, int ncpu);

#endif
