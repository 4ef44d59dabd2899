/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libperfclock: struct perfclock_reader, the threaded reader
 * (PERFCLOCK_0.2.2). One reader thread per CPU, pinned there, takes its
 * CPU's per-CPU horizon H_c (perfclock_horizon_cpu()) and drains that
 * CPU's ring of a perfclock_evring; the caller's thread merges, flushing
 * below the least of the threads' horizons: an exact order without a
 * grace period. How it works and why: docs/reader.md.
 *
 *	struct perfclock_reader_config cfg;
 *	perfclock_reader_config_init(&cfg);
 *	cfg.deliver = my_deliver; cfg.arg = me;	   the queue's callback
 *	r = perfclock_reader_start(clk, er, &cfg);   NULL + errno
 *	while (running)
 *		perfclock_reader_deliver(r, 100);    events, in time order
 *	perfclock_reader_stop(r);		   the rest, in order
 *	perfclock_reader_get_stats(r, &st);
 *	perfclock_reader_free(r);
 *	perfclock_evring_close(er);		   after the reader
 *
 * Delivered events: perfclock_event::source is the ring's index in er
 * (perfclock_evring_cpu() its CPU), attr_idx its attr's index, as
 * perfclock_evring_drain() gives them (0 before PERFCLOCK_0.3). Records with a time come in time
 * order; those without (no PERF_SAMPLE_TIME, no sample_id_all, an unknown
 * id) are delivered at once with PERFCLOCK_EVENT_UNTIMED, outside the
 * order, and counted; PERF_RECORD_LOST and PERF_RECORD_LOST_SAMPLES are
 * counted (lost_records, lost, lost_samples), never delivered. A ring the
 * reader finds corrupt is reset (its unread bytes dropped) and counted in
 * errors. A restart of the horizons (perfclock_horizon_gen()) flushes the
 * queue; records stamped across a clock set can come
 * PERFCLOCK_EVENT_LATE. A CPU that comes online after start has no ring.
 *
 * Threads: perfclock_reader_deliver(), _stop(), _free() and the stats
 * belong to one thread (the merger). After fork() the child has none of
 * the reader threads: there every call but perfclock_reader_free() is
 * -ECHILD, and free releases the child's memory without touching the
 * rings (the parent's reader goes on). The rings, the evring and the
 * clock must stay open until perfclock_reader_free().
 */
#ifndef PERFCLOCK_READER_H
#define PERFCLOCK_READER_H

#include <stdint.h>

#include "queue.h"

#ifdef __cplusplus
extern "C" {
#endif

struct perfclock;
struct perfclock_evring;
struct perfclock_reader;

/* struct perfclock_event::flags, reader only: a record without a time. */
#define PERFCLOCK_EVENT_UNTIMED		(1U << 2)

/* struct perfclock_reader_config::flags */
/* Every ring on perfclock_horizon(), never H_c (for comparison). */
#define PERFCLOCK_READER_GRACE_PERIOD	(1U << 0)

#define PERFCLOCK_READER_DEFAULT_PERIOD_US	1000u	/* 1 ms */
#define PERFCLOCK_READER_DEFAULT_MAX_THREADS	64u

/*
 * Which horizon a ring has (perfclock_reader_ring_stats::horizon): H_c
 * wherever it applies (the default): its CPU's for a CPU's ring (PERCPU),
 * the least of every online CPU's latest H_c for the ring of a per-task
 * event (PERTASK, PERFCLOCK_EVRING_PER_TASK; PERFCLOCK_0.3); else
 * perfclock_horizon(), read by the ring's thread, GRACE_PERIOD when that
 * is exact and ESTIMATE when not. A ring that loses H_c (a CPU gone)
 * switches for good. When each applies: docs/reader.md, "Which horizon
 * each ring gets".
 */
enum perfclock_reader_horizon {
	PERFCLOCK_READER_HORIZON_PERCPU = 1,
	PERFCLOCK_READER_HORIZON_GRACE_PERIOD = 2,
	PERFCLOCK_READER_HORIZON_ESTIMATE = 3,
	PERFCLOCK_READER_HORIZON_PERTASK = 4,
};

/*
 * A ring's horizon for a tool to print: "per-CPU", "per-task",
 * "grace period", "estimate", or "unknown". A static string.
 */
const char *perfclock_reader_horizon_name(uint32_t horizon);

/* Called by perfclock_reader_deliver() each time the limit moves up. */
typedef void (*perfclock_reader_limit_fn)(void *arg, uint64_t limit);

struct perfclock_reader_config {
	uint32_t size;		/* sizeof(struct perfclock_reader_config) */
	uint32_t flags;		/* PERFCLOCK_READER_* */
	/*
	 * Reader threads, at most (0: DEFAULT_MAX_THREADS). With more CPUs
	 * than threads, each thread serves a run of neighbouring CPUs and
	 * visits them in turn (sched_setaffinity() to each before its
	 * H_c): one migration per CPU per round.
	 */
	uint32_t max_threads;
	/* The longest a thread sleeps in poll() (0: DEFAULT_PERIOD_US). */
	uint32_t period_us;
	perfclock_deliver_fn deliver;	/* required: the queue's callback */
	void *arg;			/* for deliver and on_limit */
	/* The queue's memory cap (0: PERFCLOCK_QUEUE_DEFAULT_MEM_CAP). */
	uint64_t queue_mem_cap_bytes;
	/*
	 * Optional: told every new global limit (exclusive), before the
	 * events below it are delivered: a tool's record of how the limit
	 * moved, for hold latency (an event's delivery time minus its
	 * stamp tells the rest).
	 */
	perfclock_reader_limit_fn on_limit;
	/*
	 * The cap on what the threads hold for the merger: batches handed
	 * over that perfclock_reader_deliver() has not taken yet (0: half
	 * the queue's memory cap, so that what they hand over fits it). At
	 * it the threads stop draining until the merger takes: their rings
	 * fill and the kernel drops and counts (lost_records, lost). The
	 * reader then holds at most this plus one drain of each thread's
	 * rings. (A reserved word before, which had to be zero: a program
	 * built then gets the default.)
	 */
	uint64_t held_cap_bytes;
	uint64_t reserved[3];	/* zero */
};

void perfclock_reader_config_init(struct perfclock_reader_config *cfg);

/*
 * Start one reader thread per ring (up to max_threads) on er's rings,
 * which must not be read otherwise meanwhile, merging in clk's order.
 * clk must be the clock er was opened with. Errors (errno): EINVAL (NULL,
 * no deliver, bad size, unknown flags, reserved not zero, or er's events
 * stamped with another clock than clk's: perfclock_check_attr() refuses
 * one of them), ENOMEM, and those of pthread_create() (EAGAIN).
 */
struct perfclock_reader *
perfclock_reader_start(struct perfclock *clk, struct perfclock_evring *er,
		       const struct perfclock_reader_config *cfg);

/*
 * Merge what the threads have handed over: wait up to timeout_ms (0:
 * not at all, -1: until a thread hands something over) for a hand-off,
 * then take every thread's horizon and batches, push, deliver the
 * untimed records, and flush below the new global limit. Returns the
 * events delivered (>= 0), or -errno: a callback's error (the rest stays
 * queued), a reader thread's error (its horizon failed: -errno as
 * perfclock_horizon_cpu() or perfclock_horizon() give it; sticky),
 * -ECHILD in a fork() child, -EINVAL.
 */
int64_t perfclock_reader_deliver(struct perfclock_reader *r, int timeout_ms);

/*
 * Stop and join the threads, drain every ring once more on the caller's
 * thread, and deliver everything, in order (perfclock_queue_flush_all()).
 * Returns the events delivered, or -errno as above; a second call does
 * nothing (0).
 */
int64_t perfclock_reader_stop(struct perfclock_reader *r);

/* Stop (if not stopped, discarding nothing) and free. NULL: nothing. */
void perfclock_reader_free(struct perfclock_reader *r);

struct perfclock_reader_ring_stats {
	int32_t cpu;		/* perfclock_evring_cpu() */
	uint32_t horizon;	/* enum perfclock_reader_horizon, now */
	uint32_t fallbacks;	/* left PERCPU (a CPU gone): 0 or 1 */
	uint32_t reserved0;
	uint64_t records;	/* pushed to the queue (with a time) */
	uint64_t untimed;	/* delivered at once, EVENT_UNTIMED */
	uint64_t lost_records;	/* PERF_RECORD_LOST seen (not delivered) */
	uint64_t lost;		/* sum of their lost counts */
	uint64_t lost_samples;	/* sum of PERF_RECORD_LOST_SAMPLES */
	uint64_t errors;	/* corrupt ring, reset */
	uint64_t reserved[4];
};

/* Ring idx (0 .. perfclock_evring_nr_rings() - 1): 0 or -EINVAL. */
int perfclock_reader_get_ring_stats(const struct perfclock_reader *r, int idx,
				    struct perfclock_reader_ring_stats *st);

struct perfclock_reader_stats {
	uint32_t nr_threads;
	uint32_t nr_rings;
	uint32_t rings_percpu;		/* rings on H_c now (PERCPU, PERTASK) */
	uint32_t rings_other;		/* on perfclock_horizon() now */
	uint64_t rounds;		/* reader rounds, all threads */
	uint64_t wakeups;		/* polls that returned with data */
	uint64_t timeouts;		/* polls that slept the whole period */
	uint64_t handoffs;		/* batches handed over */
	uint64_t eagain;		/* H_c reads tied to no CPU, retried */
	uint64_t records, untimed, lost_records, lost, lost_samples;
	uint64_t delivered;		/* events delivered, all kinds */
	uint64_t limits;		/* times the global limit moved */
	/* The last global limit; 0 from a restart to the new one's first. */
	uint64_t limit;
	/*
	 * The age of each thread horizon when the merger took it: a clock
	 * read on the merger's thread minus the horizon (with a per-CPU
	 * clock, the unstable perf_clock(), it includes the CPUs' skew).
	 * Percentiles within 1/8 of an octave (12.5%), from every take.
	 */
	uint64_t age_count;
	uint64_t age_p50_ns, age_p90_ns, age_p99_ns, age_max_ns;
	struct perfclock_queue_stats queue;
	/*
	 * Bytes handed over and not yet taken by the merger, now; and the
	 * rounds the threads skipped at the cap on them (held_cap_bytes).
	 */
	uint64_t held_bytes, held_waits;
	uint64_t reserved[2];
};

/* 0 or -EINVAL. */
int perfclock_reader_get_stats(const struct perfclock_reader *r,
			       struct perfclock_reader_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* PERFCLOCK_READER_H */
