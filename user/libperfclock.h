/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libperfclock: read the clock perf stamps its records with, read per-CPU
 * perf mmap rings, and merge them into one time-ordered stream using the
 * round-start time as the flush horizon.
 *
 * Conventions (as libperf): objects are opaque; constructors return NULL
 * with errno set; every other function returns 0 (or a count) on success
 * and -errno on failure; the library never prints; reads of a clock are
 * thread-safe, everything else (rings, queues) belongs to one thread at a
 * time.
 *
 * The three parts:
 *
 *  1. struct perfclock: a clock. Two backends:
 *     - the module: perfclock_open("/dev/perfclock") reads local_clock(),
 *       the clock of events opened WITHOUT attr.use_clockid;
 *     - clock_gettime: perfclock_open_clockid(CLOCK_MONOTONIC) reads the
 *       clock of events opened WITH attr.use_clockid = 1 and that clockid.
 *       It needs no module (Linux >= 4.1 for use_clockid).
 *     perfclock_check_attr() says whether a clock is the one that stamps a
 *     given event, so a mismatch is an error instead of silent garbage.
 *
 *  2. struct perfclock_ring: a reader for one perf mmap ring buffer.
 *
 *  3. struct perfclock_queue: an ordered-event queue over many sources
 *     (one per ring) with a round API and a choice of flush rule.
 */
#ifndef LIBPERFCLOCK_H
#define LIBPERFCLOCK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PERFCLOCK_DEFAULT_PATH	"/dev/perfclock"

struct perfclock;
struct perfclock_ring;
struct perfclock_queue;
struct perf_event_attr;		/* <linux/perf_event.h> */

/* ------------------------------------------------------------------ */
/* Clock                                                               */
/* ------------------------------------------------------------------ */

/*
 * Open the module backend. path NULL means /dev/perfclock. Maps the clock
 * page when the device offers one of the known version (reads then fall
 * back to the ioctl only when the page cannot serve).
 * Errors (errno): those of open(2) (ENOENT: no device, module not loaded;
 * EACCES), ENOTTY: the file is not a perfclock device, EPROTO: the device
 * speaks another ABI version, ENOMEM.
 */
struct perfclock *perfclock_open(const char *path);

/*
 * Open the clock_gettime backend for events opened with use_clockid = 1
 * and attr.clockid = clockid. Accepted: CLOCK_MONOTONIC,
 * CLOCK_MONOTONIC_RAW, CLOCK_BOOTTIME, CLOCK_REALTIME, CLOCK_TAI (the ones
 * perf accepts). Errors: EINVAL for any other clock, ENOMEM.
 */
struct perfclock *perfclock_open_clockid(int clockid);

void perfclock_close(struct perfclock *clk);

/*
 * The best EXACT read: a value the clock had during the call, on the
 * calling CPU. A perf record produced on this CPU between two reads has a
 * timestamp between the two values.
 *  - module: the page's TSC conversion when the page says it is valid (no
 *    system call, no allocation, at most PERFCLOCK_PAGE_MAX_RETRIES tries
 *    of the seq loop), otherwise PERFCLOCK_IOC_GET_TIME;
 *  - clockid: clock_gettime(clockid) (vDSO when the kernel offers it).
 */
int perfclock_read(struct perfclock *clk, uint64_t *ns);

/* Exact read through the ioctl (module); -EOPNOTSUPP for clockid clocks. */
int perfclock_read_ioctl(struct perfclock *clk, uint64_t *ns);

/*
 * A LOWER BOUND of the clock, without a system call when possible: every
 * record stamped (on any CPU) after this call returns has a timestamp of
 * at least *ns. Good enough for a flush horizon, never "now".
 *  - module: the page's value (current TSC conversion if valid, else the
 *    coarse value) minus skew_bound_ns; no syscall. Falls back to the
 *    ioctl minus skew_bound_ns when there is no page or it stays busy.
 *  - clockid: CLOCK_MONOTONIC_COARSE / CLOCK_REALTIME_COARSE for
 *    CLOCK_MONOTONIC / CLOCK_REALTIME (vDSO, always at or below the fine
 *    clock); for the clocks without a coarse variant the exact read.
 */
int perfclock_read_lower_bound(struct perfclock *clk, uint64_t *ns);

enum perfclock_backend {
	PERFCLOCK_BACKEND_DEVICE = 1,	/* /dev/perfclock, local_clock() */
	PERFCLOCK_BACKEND_CLOCKID = 2,	/* clock_gettime(clockid) */
};

/* struct perfclock_clock_info::flags */
/* One clock for every CPU: skew_bound_ns is 0. */
#define PERFCLOCK_CLOCK_GLOBAL		(1U << 0)
/* perfclock_read() makes no system call right now (page or vDSO). */
#define PERFCLOCK_CLOCK_PAGE_MAPPED	(1U << 1)
#define PERFCLOCK_CLOCK_PAGE_TSC_VALID	(1U << 2)
/* The clock can be set (REALTIME, TAI): it may step backwards. */
#define PERFCLOCK_CLOCK_SETTABLE	(1U << 3)

struct perfclock_clock_info {
	uint32_t backend;		/* enum perfclock_backend */
	uint32_t flags;			/* PERFCLOCK_CLOCK_* */
	int32_t clockid;		/* clockid backend; -1 for the device */
	uint32_t abi_version;		/* device: PERFCLOCK_ABI_VERSION */
	/* Cross-CPU bound: see perfclock_info::skew_bound_ns. */
	uint64_t skew_bound_ns;
	uint64_t update_period_ns;	/* device page refresh period */
	uint64_t measured_skew_ns;	/* device: observed at load */
	/*
	 * device: the worst lateness of the module's timer seen since load
	 * (perfclock_info::timer_lateness_ns): how long this machine's CPUs
	 * get stalled, e.g. vCPUs descheduled by an overcommitted host.
	 */
	uint64_t timer_lateness_ns;
	uint64_t reserved[3];
};

/* Fill *info (device: refreshed by PERFCLOCK_IOC_GET_INFO). */
int perfclock_get_info(struct perfclock *clk,
		       struct perfclock_clock_info *info);

/*
 * Is clk the clock that stamps records of an event opened with attr?
 * 0 if so; -EINVAL if not (device clock with use_clockid set, clockid
 * clock without use_clockid or with another clockid).
 */
int perfclock_check_attr(const struct perfclock *clk,
			 const struct perf_event_attr *attr);

/* Set attr->use_clockid/clockid to match clk (clears them for the device). */
void perfclock_fill_attr(const struct perfclock *clk,
			 struct perf_event_attr *attr);

/* ------------------------------------------------------------------ */
/* Ring reader                                                         */
/* ------------------------------------------------------------------ */

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
 */
struct perfclock_ring *perfclock_ring_new(void *base, size_t len,
					  const struct perf_event_attr *attr);
void perfclock_ring_free(struct perfclock_ring *ring);

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

/* ------------------------------------------------------------------ */
/* Ordered queue                                                       */
/* ------------------------------------------------------------------ */

/*
 * Flush rules. At the end of each round the queue emits, in (timestamp,
 * arrival) order, every queued event at or below the rule's limit:
 *
 * PERFCLOCK_RULE_OURS (default): events with ts < round_start - margin,
 *   margin = skew_bound_ns + inflight_ns (see the config). round_start is
 *   the clock read at perfclock_queue_round_begin(). An event stamped
 *   below round_start was in its ring when the round began (on a clock
 *   that is global), so this round drains it; skew_bound_ns covers CPUs
 *   whose clocks lag the reader's, inflight_ns covers records stamped
 *   before round_start but committed to the ring after the reader passed
 *   it. Stamping and committing a record are a few instructions apart on
 *   one CPU, unless that CPU stalls in between: a VM's vCPU descheduled
 *   by its host can stall for milliseconds. So with the device clock the
 *   in-flight allowance used is at least the stall the module measures
 *   (timer_lateness_ns, re-read each round).
 *   With PERFCLOCK_QUEUE_PREV_ROUND the limit is further capped at
 *   the previous round's start - skew_bound_ns: a record then only has to
 *   be committed within one round period.
 * PERFCLOCK_RULE_AHERN: ts < round_start (no margin).
 * PERFCLOCK_RULE_PERF_OLD: ts <= max timestamp queued before the previous
 *   round ended (perf's ordered_events OE_FLUSH__ROUND).
 * PERFCLOCK_RULE_SCHUCHART: ts <= min over all sources of each source's
 *   largest timestamp (a source that never produced stalls it).
 * PERFCLOCK_RULE_KVM_LIVE: ts <= min over sources of the first timestamp
 *   pushed this round (perf kvm stat live); no flush if nothing came.
 *
 * The clock rules never wait for idle sources. Schuchart's stalls as long
 * as one source has never produced; perf-old and kvm-live ignore idle
 * sources but advance only as fast as the events do.
 *
 * An event is LATE when it is pushed with a timestamp below the last one
 * already emitted: it can no longer be delivered in order. Late events are
 * never dropped: they are delivered at once with PERFCLOCK_EVENT_LATE,
 * counted, and the worst lateness is kept. Separately, below_horizon
 * counts pushes below the last flush limit (perf's "Timestamp below last
 * timeslice flush" condition) even when order could still be kept.
 */
enum perfclock_rule {
	PERFCLOCK_RULE_OURS = 0,
	PERFCLOCK_RULE_AHERN = 1,
	PERFCLOCK_RULE_PERF_OLD = 2,
	PERFCLOCK_RULE_SCHUCHART = 3,
	PERFCLOCK_RULE_KVM_LIVE = 4,
	PERFCLOCK_RULE__MAX
};

/* Short stable name ("ours", "ahern", "perf-old", "schuchart", "kvm-live"). */
const char *perfclock_rule_name(int rule);

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
	uint32_t reserved;
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
/* OURS: also cap the limit at the previous round's start (see above). */
#define PERFCLOCK_QUEUE_PREV_ROUND	(1U << 1)
/*
 * round_begin reads perfclock_read_lower_bound() (no syscall with the
 * device page) instead of the exact read. That value already has the skew
 * bound taken off, so OURS then uses a margin of inflight_ns only; the
 * horizon lags "now" by up to the page's update period more.
 */
#define PERFCLOCK_QUEUE_LOWER_BOUND	(1U << 2)

#define PERFCLOCK_QUEUE_DEFAULT_INFLIGHT_NS	(1000000ULL)	/* 1 ms */
#define PERFCLOCK_QUEUE_DEFAULT_MEM_CAP		(64ULL << 20)	/* 64 MiB */
/* skew_bound_ns: take the clock's advertised bound. */
#define PERFCLOCK_QUEUE_SKEW_FROM_CLOCK		UINT64_MAX

struct perfclock_queue_config {
	uint32_t size;			/* sizeof(struct perfclock_queue_config) */
	uint32_t rule;			/* enum perfclock_rule */
	uint32_t nr_sources;		/* sources are 0 .. nr_sources - 1 */
	uint32_t flags;			/* PERFCLOCK_QUEUE_* */
	struct perfclock *clock;	/* may be NULL: use round_begin_at() */
	/*
	 * default SKEW_FROM_CLOCK: the clock's advertised bound, re-read at
	 * every round_begin (it can grow when sched_clock turns unstable);
	 * 0 if there is no clock.
	 */
	uint64_t skew_bound_ns;
	uint64_t inflight_ns;		/* default: DEFAULT_INFLIGHT_NS */
	/*
	 * Bytes of queued events (entries plus copies) allowed. When a push
	 * would exceed it, the oldest events are emitted at once with
	 * PERFCLOCK_EVENT_FORCED (counted in forced) until it fits; the
	 * queue never refuses an event nor allocates past the cap (except
	 * for a single event larger than the cap).
	 */
	uint64_t mem_cap_bytes;		/* default: DEFAULT_MEM_CAP */
	perfclock_deliver_fn deliver;
	void *arg;
	uint64_t reserved[4];
};

/* Set the defaults (OURS, copy, 1 ms in-flight, 64 MiB cap). */
void perfclock_queue_config_init(struct perfclock_queue_config *cfg);

/* Errors: EINVAL (bad rule, no deliver, zero sources), ENOMEM. */
struct perfclock_queue *
perfclock_queue_new(const struct perfclock_queue_config *cfg);
void perfclock_queue_free(struct perfclock_queue *q);

/* Begin a round: read the clock (round start). -EINVAL if no clock. */
int perfclock_queue_round_begin(struct perfclock_queue *q);
/*
 * Begin a round with an explicit start time: synthetic streams, tests, or
 * one clock read shared by several queues. With a clock configured, the
 * bounds are refreshed from it as by perfclock_queue_round_begin().
 */
int perfclock_queue_round_begin_at(struct perfclock_queue *q, uint64_t start);

/*
 * Queue one event of a source. Copies size bytes of data (unless
 * NOCOPY). A late event is delivered before this returns (flagged).
 * Returns 0, -EINVAL (bad source), -ENOMEM, or the callback's value.
 */
int perfclock_queue_push(struct perfclock_queue *q, uint32_t source,
			 uint64_t time, const void *data, uint32_t size);

/*
 * End the round: compute the rule's limit and emit everything at or
 * below it. Returns the number of events emitted, or a callback's value.
 */
int64_t perfclock_queue_round_end(struct perfclock_queue *q);

/* Emit everything that is queued (end of stream). */
int64_t perfclock_queue_flush_all(struct perfclock_queue *q);

struct perfclock_queue_stats {
	uint64_t pushed;
	uint64_t emitted;		/* in order, including forced */
	uint64_t late;			/* delivered with PERFCLOCK_EVENT_LATE */
	uint64_t worst_lateness_ns;
	uint64_t below_horizon;		/* perf's warning condition */
	uint64_t forced;		/* emitted early by the memory cap */
	uint64_t out_of_order_in_source;/* pushed below the source's last */
	uint64_t queued;		/* currently queued */
	uint64_t mem_bytes;		/* currently accounted */
	uint64_t mem_peak_bytes;
	uint64_t rounds;
	uint64_t last_limit;		/* last flush limit (inclusive) */
	uint64_t last_emitted;		/* time of the last in-order event */
	uint64_t round_start;		/* start of the current/last round */
	uint64_t reserved[2];
};

void perfclock_queue_get_stats(const struct perfclock_queue *q,
			       struct perfclock_queue_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* LIBPERFCLOCK_H */
