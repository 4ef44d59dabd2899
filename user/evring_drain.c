// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The round loop's middle, for rings from perfclock_evring_open(): drain
 * every ring into the queue (perfclock_evring_drain()) and wait for data
 * (perfclock_evring_poll()). What every tool used to repeat, with the
 * two traps it fell into closed: a record without a time is never pushed
 * (it would be delivered as time 0, late), and PERF_RECORD_LOST is
 * counted as a loss, never handed on as if it were an event.
 *
 * Built on the public API only (perfclock_evring_ring(), the ring
 * reader), but for perfclock_queue__push_attr(), which carries the
 * record's attr index to the delivered event.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "internal.h"
#include "queue_internal.h"

/* PERF_RECORD_LOST: header, id, lost (include/uapi/linux/perf_event.h). */
static uint64_t lost_count(const struct perfclock_record *rec)
{
	uint64_t v = 0;

	if (rec->size >= sizeof(struct perf_event_header) + 16)
		memcpy(&v, (const char *)rec->data +
		       sizeof(struct perf_event_header) + 8, sizeof(v));
	return v;
}

/* PERF_RECORD_LOST_SAMPLES: header, lost. */
static uint64_t lost_samples_count(const struct perfclock_record *rec)
{
	uint64_t v = 0;

	if (rec->size >= sizeof(struct perf_event_header) + 8)
		memcpy(&v, (const char *)rec->data +
		       sizeof(struct perf_event_header), sizeof(v));
	return v;
}

/*
 * One ring: 0 and *pushed, or -errno (a push that failed; the record it
 * failed on is not consumed when the queue had no memory).
 */
static int drain_ring(struct perfclock_ring *ring, uint32_t idx,
		      struct perfclock_queue *q,
		      struct perfclock_drain_stats *st, int64_t *pushed)
{
	struct perfclock_record rec;
	int64_t avail;
	int ret, ev;

	avail = perfclock_ring_read_begin(ring);
	if (avail == -EBADMSG) {
		perfclock_ring_reset(ring);
		st->resets++;
		return 0;
	}
	if (avail <= 0)
		return (int)avail;
	while ((ret = perfclock_ring_read_event(ring, &rec)) == 1) {
		if (rec.type == PERF_RECORD_LOST) {
			st->lost_records++;
			st->lost += lost_count(&rec);
			continue;
		}
		if (rec.type == PERF_RECORD_LOST_SAMPLES) {
			st->lost_samples += lost_samples_count(&rec);
			continue;
		}
		if (!(rec.flags & PERFCLOCK_RECORD_HAS_TIME)) {
			st->no_time++;
			continue;
		}
		/* A timed record's event is known: it carried its id. */
		ev = perfclock_ring_record_event(ring, &rec);
		ret = perfclock_queue__push_attr(q, idx, ev < 0 ? 0 : (uint32_t)ev,
						 rec.time, rec.data, rec.size);
		if (ret == -ENOMEM) {
			/* Not queued: leave it in the ring for the next call. */
			perfclock_ring__unread(ring, &rec);
			perfclock_ring_read_end(ring);
			return ret;
		}
		(*pushed)++;
		st->pushed++;
		if (ret)
			break;
	}
	if (ret == -EBADMSG) {
		perfclock_ring_reset(ring);
		st->resets++;
		ret = 0;
	}
	perfclock_ring_read_end(ring);
	return ret;
}

PERFCLOCK_API int64_t perfclock_evring_drain(struct perfclock_evring *er,
					     struct perfclock_queue *q,
					     struct perfclock_drain_stats *st)
{
	struct perfclock_drain_stats local;
	int64_t pushed = 0;
	int n, i, err;

	if (!er || !q)
		return -EINVAL;
	/*
	 * A NOCOPY queue keeps pointers into the ring, whose space the
	 * drain hands back to the kernel at read_end: the next records
	 * would overwrite what it holds. Refused, before anything is read.
	 */
	if (q->cfg.flags & PERFCLOCK_QUEUE_NOCOPY)
		return -EINVAL;
	perfclock_evring__check_enabled(er);
	if (!st) {
		memset(&local, 0, sizeof(local));
		st = &local;
	}
	n = perfclock_evring_nr_rings(er);
	for (i = 0; i < n; i++) {
		err = drain_ring(perfclock_evring_ring(er, i), (uint32_t)i, q,
				 st, &pushed);
		if (err)
			return err;
	}
	return pushed;
}

PERFCLOCK_API int perfclock_evring_poll(const struct perfclock_evring *er,
					int timeout_ms)
{
	struct pollfd stack[64], *fds = stack;
	int n, ret;

	n = perfclock_evring_nr_rings(er);
	if (n < 0)
		return n;
	if (n > (int)(sizeof(stack) / sizeof(stack[0]))) {
		fds = malloc((size_t)n * sizeof(*fds));
		if (!fds)
			return -ENOMEM;
	}
	perfclock_evring_pollfds(er, fds, n);
	ret = poll(fds, (nfds_t)n, timeout_ms);
	if (ret < 0)
		ret = -errno;
	if (fds != stack)
		free(fds);
	return ret;
}
