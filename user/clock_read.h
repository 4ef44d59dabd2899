/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading the clock (clock_read.c): what perfclock_read() and friends
 * do, and what the horizon backends call to read the clock without
 * going back through libperfclock.c (which opens and closes clocks and
 * calls the backends: the reads used to live there, a circle).
 * Library-private; not installed.
 */
#ifndef PERFCLOCK_CLOCK_READ_H
#define PERFCLOCK_CLOCK_READ_H

#include <stdint.h>
#include <time.h>

struct perfclock;
struct perf_event_mmap_page;

/* clock_gettime(id) in ns: 0 or -errno. */
int perfclock__clockid_read(clockid_t id, uint64_t *ns);

/*
 * perf_clock() from a perf mmap page with perf's time_zero conversion:
 * 0, -EOPNOTSUPP (no cap_user_time_zero now, or no TSC on this
 * architecture), -EAGAIN (the page stayed busy).
 */
int perfclock__perf_page_read(const struct perf_event_mmap_page *pc,
			      uint64_t *ns);

#endif /* PERFCLOCK_CLOCK_READ_H */
