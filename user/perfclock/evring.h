/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libperfclock: struct perfclock_evring, one set of events opened on every
 * online CPU with one ring per CPU (perfclock/ring.h), what a live tool
 * needs before its first round, and step 2 of the round pattern
 * (libperfclock.h) in one call: perfclock_evring_drain() into a queue
 * (perfclock/queue.h). examples/tracer.c is a complete tool built on it.
 */
#ifndef LIBPERFCLOCK_EVRING_H
#define LIBPERFCLOCK_EVRING_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct perfclock;
struct perfclock_ring;
struct perfclock_queue;
struct perf_event_attr;		/* <linux/perf_event.h> */

/*
 * How it is used:
 *
 *	struct perfclock_evring_config cfg;
 *	perfclock_evring_config_init(&cfg);	   64 data pages, pid -1
 *	cfg.attrs = attrs; cfg.nr_attrs = 2;
 *	er = perfclock_evring_open(clk, &cfg);	   NULL + errno
 *	perfclock_evring_enable(er);
 *	n = perfclock_evring_nr_rings(er);
 *	... perfclock_evring_ring(er, i) in the round pattern, or
 *	perfclock_evring_drain(er, q, &st), and
 *	perfclock_evring_pollfds(er, fds, n) + poll() between rounds.
 *	perfclock_evring_close(er);
 *
 * Each attr is copied, its size set and its clock fields filled for clk
 * (perfclock_fill_attr()); with more than one attr PERF_SAMPLE_IDENTIFIER
 * is added to each, as perf record does, so that records of the shared
 * ring are told apart (perfclock_ring_add_event(), done here with each
 * fd's id). The first attr's fd owns the CPU's mmap of 1 + data_pages
 * pages; the others are routed into it (PERF_EVENT_IOC_SET_OUTPUT). Opened
 * as given (set attr.disabled and enable them with
 * perfclock_evring_enable()). System-wide per CPU (pid -1) needs
 * CAP_PERFMON or perf_event_paranoid <= 0. Every attr must have
 * PERF_SAMPLE_TIME (EINVAL otherwise, as perfclock_check_attr()).
 */
struct perfclock_evring;
struct pollfd;			/* <poll.h> */

struct perfclock_evring_config {
	uint32_t size;			/* sizeof(struct perfclock_evring_config) */
	uint32_t nr_attrs;		/* 1 .. 64 */
	const struct perf_event_attr *attrs;
	uint32_t data_pages;		/* a power of two; default 64 */
	int32_t pid;			/* perf_event_open's pid: -1 every task */
	uint32_t flags;			/* PERFCLOCK_EVRING_* */
	uint32_t reserved0;
	uint64_t reserved[4];
};

/*
 * struct perfclock_evring_config::flags. PER_TASK: one ring for task pid
 * (pid >= 0), opened with cpu -1 (perf_event_open()'s per-task event:
 * it follows the task across CPUs), instead of one ring per online CPU
 * opened with cpu c. perfclock_evring_cpu() says -1 for it. perf refuses
 * to mmap such an event with inherit (kernel/events/core.c: perf_mmap()):
 * so does the open, EINVAL. Without a pid, EINVAL. (PERFCLOCK_0.3)
 */
#define PERFCLOCK_EVRING_PER_TASK	(1U << 0)

void perfclock_evring_config_init(struct perfclock_evring_config *cfg);

/*
 * Open the set on every online CPU (/sys/devices/system/cpu/online; if it
 * cannot be read, every configured CPU but those perf says are offline).
 * Errors (errno): EINVAL (bad config: no attrs, an attr without
 * PERF_SAMPLE_TIME, data_pages not a power of two, unknown flags), those
 * of perf_event_open() (EACCES, EPERM: not permitted; ENOENT,
 * EOPNOTSUPP: no such event, also a tracepoint id that tracefs does not
 * list, which the kernel answers EINVAL), of mmap(), of
 * perfclock_ring_add_event() (EINVAL: records it could not tell apart),
 * ENODEV (no CPU), ENOMEM; EINVAL too for an attr whose use_clockid
 * asks for another clock than clk's (left 0, the clock fields are
 * filled). Nothing stays open on failure. Which attr and CPU failed goes
 * to the log callback (perfclock_set_log()). With more than one attr,
 * PERF_SAMPLE_IDENTIFIER is added to each one's sample_type (the records
 * of one ring are told apart by it): a tool that parses a sample's body
 * itself finds that id first, before the fields its attr asked for (the
 * delivered event's attr_idx says which attr). Attrs opened with
 * disabled set need perfclock_evring_enable(); a drain says once if none
 * was ever enabled.
 */
struct perfclock_evring *
perfclock_evring_open(const struct perfclock *clk,
		      const struct perfclock_evring_config *cfg);
void perfclock_evring_close(struct perfclock_evring *er);

/* PERF_EVENT_IOC_ENABLE / _DISABLE on every fd: 0 or -errno. */
int perfclock_evring_enable(struct perfclock_evring *er);
int perfclock_evring_disable(struct perfclock_evring *er);

/*
 * Rings are 0 .. nr_rings - 1, one per CPU, in CPU order (one ring, CPU
 * -1, with PERFCLOCK_EVRING_PER_TASK).
 */
int perfclock_evring_nr_rings(const struct perfclock_evring *er);
struct perfclock_ring *perfclock_evring_ring(const struct perfclock_evring *er,
					     int idx);
int perfclock_evring_cpu(const struct perfclock_evring *er, int idx);
/* The fd of attrs[attr_idx] on ring idx (read() counters, ioctl()). */
int perfclock_evring_fd(const struct perfclock_evring *er, int idx,
			int attr_idx);
/* One POLLIN entry per ring into fds (nr_fds >= nr_rings): the count. */
int perfclock_evring_pollfds(const struct perfclock_evring *er,
			     struct pollfd *fds, int nr_fds);

/*
 * Wait up to timeout_ms (-1: for ever) for a ring to reach its wakeup
 * point (attr.wakeup_events / wakeup_watermark): poll() on every ring's
 * fd, as libperf's perf_evlist__poll(). Returns how many rings are
 * readable, 0 on timeout, -EINTR on a signal (check your stop flag),
 * -errno. (PERFCLOCK_0.2.2)
 */
int perfclock_evring_poll(const struct perfclock_evring *er, int timeout_ms);

/*
 * What perfclock_evring_drain() did, ADDED to the caller's counters
 * (zero them once; they then run for the whole trace).
 */
struct perfclock_drain_stats {
	uint64_t pushed;	/* records queued */
	/* PERF_RECORD_LOST records seen (never queued), and their sum:
	 * records the kernel dropped because a ring was full. */
	uint64_t lost_records;
	uint64_t lost;
	uint64_t lost_samples;	/* sum of PERF_RECORD_LOST_SAMPLES */
	/* Records with no time (RECORDS WITHOUT A TIME): never queued. */
	uint64_t no_time;
	uint64_t resets;	/* rings reset after a corrupt record */
	uint64_t reserved[4];
};

/*
 * Step 2 of THE ROUND PATTERN for every ring of er: read_begin, every
 * record, read_end. A record with a time goes to q with the ring's index
 * as its source (q needs nr_sources >= perfclock_evring_nr_rings()) and
 * the index of its attr in the delivered event's attr_idx.
 * PERF_RECORD_LOST and PERF_RECORD_LOST_SAMPLES are counted in *st
 * (lost, lost_samples), never queued; so are records without a time
 * (no_time). A ring that reports a corrupt record (-EBADMSG) is reset
 * (what it held is dropped, counted in resets) and the drain goes on.
 * Call it after perfclock_horizon(), then perfclock_queue_flush_until().
 * Returns the number of records queued, or -errno: -EINVAL (also for a
 * PERFCLOCK_QUEUE_NOCOPY queue: it would keep pointers into ring space
 * the drain hands back to the kernel; nothing is read), or what
 * perfclock_queue_push() returned (-ENOMEM: that record is not queued
 * and stays unread in its ring for the next call; a delivery callback's
 * error: the record was taken). st may be NULL. (PERFCLOCK_0.2.2)
 */
int64_t perfclock_evring_drain(struct perfclock_evring *er,
			       struct perfclock_queue *q,
			       struct perfclock_drain_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* LIBPERFCLOCK_EVRING_H */
