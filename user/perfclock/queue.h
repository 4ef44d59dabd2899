/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libperfclock: struct perfclock_queue, the ordered queue. Mechanism
 * only: push events from many sources (one per ring), emit in time order
 * everything below a time the caller gives. A queue belongs to one thread
 * at a time. How it orders, what it costs, its memory cap: user/README.md,
 * "Ordered queue".
 */
#ifndef LIBPERFCLOCK_QUEUE_H
#define LIBPERFCLOCK_QUEUE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct perfclock_queue;

/*
 * The queue is mechanism: push events from many sources, and emit, in
 * (timestamp, push order) order, everything below a time the caller
 * gives. What time is safe is the caller's policy; the round pattern
 * (libperfclock.h), with perfclock_horizon(), is the one the library is
 * built for. (demo_flush's user/demo/rules.c computes the older rules
 * from the 2013 thread on top of the same two calls, for comparison.)
 *
 * An event is LATE when it is pushed with a timestamp below the last one
 * already emitted: it can no longer be delivered in order. Late events are
 * never dropped: they are delivered at once with PERFCLOCK_EVENT_LATE,
 * counted, and the worst lateness is kept. Separately, below_horizon
 * counts pushes below the last flush limit (perf's "Timestamp below last
 * timeslice flush" condition) even when order could still be kept.
 */

/* struct perfclock_event::flags */
#define PERFCLOCK_EVENT_LATE	(1U << 0)	/* below what was emitted */
#define PERFCLOCK_EVENT_FORCED	(1U << 1)	/* emitted by the memory cap */

struct perfclock_event {
	uint64_t time;
	uint64_t lateness_ns;	/* LATE: last emitted time - time */
	const void *data;	/* the queue's copy (or the caller's pointer) */
	uint32_t size;
	uint32_t source;
	uint32_t flags;		/* PERFCLOCK_EVENT_* */
	/*
	 * The index in perfclock_evring_config::attrs of the event whose
	 * record this is, when perfclock_evring_drain() pushed it or the
	 * threaded reader (perfclock_reader_*) delivers it; 0 for
	 * perfclock_queue_push() (the field was reserved, and 0, in 0.2).
	 */
	uint32_t attr_idx;
};

/*
 * Delivery callback. The event and its data are valid during the call
 * only. Return 0 to go on; a negative errno stops the flush: the event
 * passed to that call counts as delivered, the ones after it stay queued,
 * and the value is returned by the function that was flushing (a positive
 * value is returned as -ECANCELED).
 */
typedef int (*perfclock_deliver_fn)(void *arg,
				    const struct perfclock_event *ev);

/* struct perfclock_queue_config::flags */
/* Do not copy pushed data; the caller keeps it alive until delivered. */
#define PERFCLOCK_QUEUE_NOCOPY		(1U << 0)

#define PERFCLOCK_QUEUE_DEFAULT_MEM_CAP		(64ULL << 20)	/* 64 MiB */

struct perfclock_queue_config {
	uint32_t size;			/* sizeof(struct perfclock_queue_config) */
	uint32_t nr_sources;		/* sources are 0 .. nr_sources - 1 */
	uint32_t flags;			/* PERFCLOCK_QUEUE_* */
	uint32_t reserved0;
	/*
	 * Bytes the queue may hold allocated between calls: everything it
	 * allocates after perfclock_queue_new() (per-source arrays, the
	 * straggler heap, the slab chunks of the copies; not the fixed
	 * per-source slots of perfclock_queue_new()), reported as
	 * mem_retained_bytes. When a push would need more, the queue first
	 * gives back what it does not use, then emits the oldest events at
	 * once with PERFCLOCK_EVENT_FORCED (counted in forced), a quarter
	 * of the queue at a time, until the push fits; it never refuses an
	 * event for it. Over the cap only: an empty queue takes one event
	 * whatever that needs (a cap below one slab chunk and one array,
	 * about 1.5 KiB, holds one event at a time), and a push whose
	 * forced flush a failing callback stopped (the event is queued all
	 * the same and the callback's error returned). Within a call,
	 * growing an array or moving copies briefly holds the old and the
	 * new. Memory also follows usage down: every 64 flushes, a queue
	 * holding more than twice what it needed over that time plus a
	 * 16th of the cap gives the rest back; a steady state allocates
	 * nothing.
	 */
	uint64_t mem_cap_bytes;		/* default: DEFAULT_MEM_CAP */
	perfclock_deliver_fn deliver;
	void *arg;
	uint64_t reserved[4];
};

/* Set the defaults (copy, 64 MiB cap). */
void perfclock_queue_config_init(struct perfclock_queue_config *cfg);

/* Errors: EINVAL (no deliver, zero sources, bad size), ENOMEM. */
struct perfclock_queue *
perfclock_queue_new(const struct perfclock_queue_config *cfg);
void perfclock_queue_free(struct perfclock_queue *q);

/*
 * Queue one event of a source. Copies size bytes of data (unless
 * NOCOPY). A late event is delivered before this returns (flagged).
 * Returns 0, -EINVAL (bad source), -ENOMEM (nothing changed: the event is
 * not queued, not counted), or the callback's value (a late delivery or
 * a forced flush failed; the event is delivered or queued all the same).
 */
int perfclock_queue_push(struct perfclock_queue *q, uint32_t source,
			 uint64_t time, const void *data, uint32_t size);

/*
 * Emit, in (time, push order) order, every queued event with
 * time < limit: STRICTLY below, because a record stamped exactly at the
 * horizon may still be in flight. Pass perfclock_horizon()'s value taken
 * before the rings were drained. A limit below an earlier one is not an
 * error (it emits what is queued below it). Returns the number of events emitted, or a
 * callback's value (the events not delivered stay queued).
 */
int64_t perfclock_queue_flush_until(struct perfclock_queue *q,
				    uint64_t limit);

/* Emit everything that is queued (end of stream). */
int64_t perfclock_queue_flush_all(struct perfclock_queue *q);

/*
 * The horizons restarted (PERFCLOCK_HORIZON_RESTARTED): emit everything
 * queued, in order, as perfclock_queue_flush_all(), then forget the
 * limits and times the old generation set (last_limit, last_emitted, each
 * source's last push), so that the new generation's events, stamped
 * below them, are ordered among themselves and not delivered LATE or
 * counted below_horizon against a void horizon. Counts restarts.
 * Returns what flush_all returns.
 */
int64_t perfclock_queue_restart(struct perfclock_queue *q);

struct perfclock_queue_stats {
	uint64_t pushed;
	uint64_t emitted;		/* in order, including forced */
	uint64_t late;			/* delivered with PERFCLOCK_EVENT_LATE */
	uint64_t worst_lateness_ns;
	uint64_t below_horizon;		/* pushed below the last flush limit */
	uint64_t forced;		/* emitted early by the memory cap */
	uint64_t out_of_order_in_source;/* pushed below the source's last */
	uint64_t queued;		/* currently queued */
	uint64_t mem_bytes;		/* queued entries and copies */
	uint64_t mem_peak_bytes;
	uint64_t flushes;		/* flush_until calls */
	uint64_t last_limit;		/* highest flush limit (exclusive) */
	uint64_t last_emitted;		/* time of the last in-order event */
	/* Allocated now, and at most between calls (see mem_cap_bytes). */
	uint64_t mem_retained_bytes;
	uint64_t mem_retained_peak_bytes;
	uint64_t restarts;		/* perfclock_queue_restart() calls */
};

void perfclock_queue_get_stats(const struct perfclock_queue *q,
			       struct perfclock_queue_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* LIBPERFCLOCK_QUEUE_H */
