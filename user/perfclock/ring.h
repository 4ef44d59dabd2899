/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libperfclock: struct perfclock_ring, a reader for one perf mmap ring
 * buffer the caller has mapped: each record with its time, the ring's
 * losses counted, corruption reported rather than followed. A ring
 * belongs to one thread at a time. Opening one ring per CPU for a set of
 * events: perfclock/evring.h. How it reads: user/README.md, "Ring reader".
 */
#ifndef LIBPERFCLOCK_RING_H
#define LIBPERFCLOCK_RING_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct perfclock_ring;
struct perf_event_attr;		/* <linux/perf_event.h> */

/*
 * One record as the reader hands it out. data points either into the ring
 * (valid until perfclock_ring_read_end()) or, for a record that wraps past
 * the end of the buffer, into the ring's scratch buffer (valid until the
 * next perfclock_ring_read_event()). size is the validated record size;
 * use it rather than re-reading the header from shared memory.
 */
struct perfclock_record {
	const void *data;		/* struct perf_event_header + body */
	uint32_t size;
	uint32_t type;			/* perf_event_header::type */
	uint64_t time;			/* valid if flags & HAS_TIME */
	uint32_t flags;			/* PERFCLOCK_RECORD_* */
	uint32_t misc;			/* perf_event_header::misc */
};

#define PERFCLOCK_RECORD_HAS_TIME	(1U << 0)
#define PERFCLOCK_RECORD_WRAPPED	(1U << 1)	/* copied to scratch */
/* Shared ring: the record carries an id no registered event has. */
#define PERFCLOCK_RECORD_UNKNOWN_EVENT	(1U << 2)

/*
 * RECORDS WITHOUT A TIME (no PERFCLOCK_RECORD_HAS_TIME): samples of an
 * event without PERF_SAMPLE_TIME, other records of one without
 * sample_id_all, records of an unknown event. Never push them to the
 * queue with a made-up time: handle each as it is read, outside the
 * order, and count them (perfclock_evring_drain() does). Why, and how to
 * have none: user/README.md, "The horizon and the round pattern".
 */

struct perfclock_ring_stats {
	uint64_t records;		/* records handed out */
	uint64_t bytes;			/* bytes consumed */
	uint64_t lost_records;		/* PERF_RECORD_LOST records seen */
	uint64_t lost;			/* sum of their 'lost' fields */
	uint64_t lost_samples;		/* sum of PERF_RECORD_LOST_SAMPLES */
	uint64_t wrapped;		/* records copied out whole */
	uint64_t errors;		/* corruption reports */
	uint64_t skipped_bytes;		/* dropped by perfclock_ring_reset() */
};

/*
 * Wrap an mmap of a perf event (1 + 2^n pages, the first being
 * struct perf_event_mmap_page). attr (may be NULL) is the attr the event
 * was opened with: its sample_type/sample_id_all tell where the time is.
 * Does not take ownership of the mapping. Errors: EINVAL (length not one
 * header page plus a power-of-two data area), ENOMEM.
 *
 * A ring several events write into (PERF_EVENT_IOC_SET_OUTPUT, as perf
 * record and perf top do): pass attr NULL and register every event with
 * perfclock_ring_add_event(). A single attr is enough only when every
 * event sharing the ring has its sample_type and sample_id_all.
 */
struct perfclock_ring *perfclock_ring_new(void *base, size_t len,
					  const struct perf_event_attr *attr);
void perfclock_ring_free(struct perfclock_ring *ring);

/*
 * Register an event writing into this ring: its attr and its ids
 * (PERF_EVENT_IOC_ID; one per fd, several for an event opened on several
 * CPUs into one ring). Events are numbered 0, 1, ... in registration
 * order (the attr of perfclock_ring_new(), if any, is 0).
 *
 * When the events' layouts differ (sample_type or sample_id_all), each
 * record's event is found by the id it carries, as perf does
 * (util/evlist.c, evlist__id2evsel()): every event must then carry its id
 * at the same place, in samples and in the sample_id of other records.
 * PERF_SAMPLE_IDENTIFIER in every event's sample_type does that whatever
 * else they sample; PERF_SAMPLE_ID works when what precedes it agrees.
 * Events must also agree on sample_id_all. A set that breaks this is
 * refused: -EINVAL, and the ring is unchanged (so is an event added to a
 * ring whose first attr came without ids, if its layout differs). Records
 * carrying an id no event registered come with
 * PERFCLOCK_RECORD_UNKNOWN_EVENT and no time. (Seen on Linux 6.18: the
 * kernel shares one perf_sample_data among the software events of a CPU,
 * so while other processes run system-wide samplers of the same software
 * event, some of this ring's samples carry one of their ids.)
 * Errors: -EINVAL (also no ids), -EEXIST (an id already registered),
 * -ENOMEM.
 */
int perfclock_ring_add_event(struct perfclock_ring *ring,
			     const struct perf_event_attr *attr,
			     const uint64_t *ids, size_t nr_ids);

/*
 * The event (its registration index) of a record handed out by this
 * ring; 0 for a ring of one event. -ENOENT: the record carries no id
 * (a non-sample record without sample_id_all, say); -ESRCH: an id no
 * event registered; -EINVAL.
 */
int perfclock_ring_record_event(const struct perfclock_ring *ring,
				const struct perfclock_record *rec);

/*
 * Start reading: load data_head (acquire; pairs with the kernel's write
 * barrier before it publishes data_head). Returns the number of bytes
 * available, or -EBADMSG if head and tail are inconsistent (head behind
 * tail, more than the buffer size ahead, or not 8-byte aligned).
 */
int64_t perfclock_ring_read_begin(struct perfclock_ring *ring);

/*
 * Next record of the pass started by read_begin: 1 and *rec filled, 0
 * when the pass has no more, -EBADMSG when the record header is corrupt
 * (size 0, smaller than a header, not a multiple of 8, larger than the
 * buffer or than what head says is there). After an error the ring keeps
 * returning -EBADMSG until perfclock_ring_reset().
 */
int perfclock_ring_read_event(struct perfclock_ring *ring,
			      struct perfclock_record *rec);

/* Give the consumed bytes back to the kernel (data_tail, release store). */
void perfclock_ring_read_end(struct perfclock_ring *ring);

/* Drop everything up to the current head and clear the error state. */
void perfclock_ring_reset(struct perfclock_ring *ring);

void perfclock_ring_get_stats(const struct perfclock_ring *ring,
			      struct perfclock_ring_stats *stats);

/*
 * Time of a record of an event opened with attr (PERF_SAMPLE_TIME needed;
 * non-sample records need sample_id_all). 0 and *ns set, or -ENOENT.
 */
int perfclock_record_time(const void *data, size_t size,
			  const struct perf_event_attr *attr, uint64_t *ns);

#ifdef __cplusplus
}
#endif

#endif /* LIBPERFCLOCK_RING_H */
