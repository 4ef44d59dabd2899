/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading the clock (clock_read.c): what perfclock_read() and friends
 * do, and what the horizon backends call to read the clock and the
 * module's estimates without going back up (to libperfclock.c, which
 * opens and closes clocks, or to the backends: the reads and the
 * estimates used to live there, a circle). The lowest layer of the
 * clock: clock read <- horizon backends <- horizon <- clock object.
 * Library-private; not installed.
 */
#ifndef PERFCLOCK_CLOCK_READ_H
#define PERFCLOCK_CLOCK_READ_H

#include <stdint.h>
#include <time.h>

struct perfclock;
struct perfclock_info;
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

/* PERFCLOCK_IOC_GET_INFO into *info: 0 or -errno. */
int perfclock__get_info(int fd, struct perfclock_info *info);

/*
 * The module's estimates of its clock, 0 for the clocks it does not read
 * (clockid, perf page): the larger of the value at open and the module's
 * latest (its page's; without a page GET_INFO's, asked at most every
 * 10 ms). The skew between CPUs, which perfclock_read_lower_bound() and
 * the estimated horizon take off; the lateness of the module's timer,
 * the least in-flight allowance of the estimated horizon
 * (horizon_estimate.c).
 */
uint64_t perfclock__skew_estimate(struct perfclock *clk);
uint64_t perfclock__stall_estimate(struct perfclock *clk);

#endif /* PERFCLOCK_CLOCK_READ_H */
