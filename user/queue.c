// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libperfclock: ordered-event queue over k sources: push, and flush up to
 * a time.
 *
 * Structure (O(log k) per event, no allocation in steady state):
 *
 *  - each source keeps a FIFO of entries in push order; as long as a
 *    source's pushes are non-decreasing in time (a per-CPU ring is, but
 *    for records nested in an NMI/irq between stamp and commit) the FIFO
 *    is sorted;
 *  - a binary min-heap over the non-empty sources, keyed by the head of
 *    each FIFO, gives the global minimum in O(1) and is repaired in
 *    O(log k) per emitted event;
 *  - an event pushed below the tail of its source's FIFO (out of order
 *    within the source) goes to a separate "straggler" min-heap instead;
 *    emission takes the smaller of the two heap tops, so order holds;
 *  - copies of the events' bytes live in a slab of size classes (16-byte
 *    steps up to 512 bytes, powers of two above) whose slots are recycled
 *    through free lists; FIFOs and heaps grow by doubling. Once the queue
 *    has seen its working set, pushing and emitting allocate nothing
 *    (tests/test_device.c counts).
 *
 * Memory: everything allocated after perfclock_queue_new() (the FIFO
 * arrays, the straggler heap, the slab's chunks) is counted in
 * 'retained' and held to the cap. A push that would grow it past the cap
 * first gives back what is unused (trim: free empty classes' chunks,
 * move the copies of half-empty classes into fewer chunks, shrink the
 * arrays to their contents) and, if that is not enough, emits the oldest
 * events, flagged FORCED, a quarter of what is queued at a time. And
 * every TRIM_PERIOD flushes, a queue holding more than twice what it
 * needed over that period (plus a slack) gives the rest back, so memory
 * follows usage down as well as up.
 *
 * The straggler heap costs O(log s) for s stragglers queued; they are
 * rare (nested records), so the common case stays O(log k).
 *
 * Ties are broken by push order (a global sequence number).
 *
 * This file: the ordering (heaps, FIFOs, emission, the forced flush of
 * make_room()) and the public API; queue_mem.c, below it: the slab and
 * the memory cap (over_cap(), trim). This file calls queue_mem.c, never
 * the other way.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libperfclock.h"
#include "internal.h"
#include "queue_internal.h"

PERFCLOCK_API void
perfclock_queue_config_init(struct perfclock_queue_config *cfg)
{
	if (!cfg)
		return;
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->mem_cap_bytes = PERFCLOCK_QUEUE_DEFAULT_MEM_CAP;
}

/* ---- ordering ---- */

static inline int ent_less(const struct qent *a, const struct qent *b)
{
	return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static inline int key_less(uint64_t t, uint64_t seq, const struct hent *h)
{
	return t < h->time || (t == h->time && seq < h->seq);
}

static void src_heap_up(struct perfclock_queue *q, uint32_t pos,
			const struct hent *h)
{
	while (pos) {
		uint32_t parent = (pos - 1) / 2;

		if (!key_less(h->time, h->seq, &q->src_heap[parent]))
			break;
		q->src_heap[pos] = q->src_heap[parent];
		pos = parent;
	}
	q->src_heap[pos] = *h;
}

/* Place h at pos (the hole) and sift it down. */
static void src_heap_down(struct perfclock_queue *q, uint32_t pos,
			  const struct hent *h)
{
	struct hent *hp = q->src_heap;
	uint32_t n = q->src_heap_len;

	for (;;) {
		uint32_t l = 2 * pos + 1, best;

		if (l >= n)
			break;
		best = l;
		if (l + 1 < n && key_less(hp[l + 1].time, hp[l + 1].seq, &hp[l]))
			best = l + 1;
		if (!key_less(hp[best].time, hp[best].seq, h))
			break;
		hp[pos] = hp[best];
		pos = best;
	}
	hp[pos] = *h;
}

static int strag_push(struct perfclock_queue *q, const struct qent *e)
{
	uint32_t pos;

	if (q->strag_len == q->strag_cap &&
	    perfclock_queue__strag_resize(q, q->strag_cap ?
					  2 * q->strag_cap : FIFO_MIN))
		return -ENOMEM;
	pos = q->strag_len++;
	if (q->strag_len > q->strag_hwm)
		q->strag_hwm = q->strag_len;
	while (pos) {
		uint32_t parent = (pos - 1) / 2;

		if (!ent_less(e, &q->strag[parent]))
			break;
		q->strag[pos] = q->strag[parent];
		pos = parent;
	}
	q->strag[pos] = *e;
	return 0;
}

static void strag_pop(struct perfclock_queue *q, struct qent *out)
{
	struct qent last;
	uint32_t pos = 0, n;

	*out = q->strag[0];
	n = --q->strag_len;
	if (!n)
		return;
	last = q->strag[n];
	for (;;) {
		uint32_t l = 2 * pos + 1, best;

		if (l >= n)
			break;
		best = l;
		if (l + 1 < n && ent_less(&q->strag[l + 1], &q->strag[l]))
			best = l + 1;
		if (!ent_less(&q->strag[best], &last))
			break;
		q->strag[pos] = q->strag[best];
		pos = best;
	}
	q->strag[pos] = last;
}

static int fifo_push(struct perfclock_queue *q, uint32_t i,
		     const struct qent *e)
{
	struct qsrc *s = &q->src[i];

	if (s->count == s->cap &&
	    perfclock_queue__fifo_resize(q, s, s->cap ? 2 * s->cap : FIFO_MIN))
		return -ENOMEM;
	s->fifo[(s->head + s->count) & (s->cap - 1)] = *e;
	s->count++;
	if (s->count > s->hwm)
		s->hwm = s->count;
	if (s->count == 1) {
		struct hent h = { e->time, e->seq, i, 0 };

		src_heap_up(q, q->src_heap_len++, &h);
	}
	return 0;
}

/* Pop the global minimum into *out; 0 if the queue is empty. */
static inline int pop_min(struct perfclock_queue *q, struct qent *out)
{
	struct hent *top;
	struct qsrc *s;

	if (q->strag_len && (!q->src_heap_len ||
			     !key_less(q->src_heap[0].time, q->src_heap[0].seq,
				       &(struct hent){ q->strag[0].time,
						      q->strag[0].seq, 0, 0 }))) {
		strag_pop(q, out);
		return 1;
	}
	if (!q->src_heap_len)
		return 0;
	top = &q->src_heap[0];
	s = &q->src[top->src];
	*out = s->fifo[s->head];
	s->head = (s->head + 1) & (s->cap - 1);
	if (--s->count) {
		const struct qent *nx = &s->fifo[s->head];
		struct hent h = { nx->time, nx->seq, top->src, 0 };

		src_heap_down(q, 0, &h);
	} else if (--q->src_heap_len) {
		struct hent h = q->src_heap[q->src_heap_len];

		src_heap_down(q, 0, &h);
	}
	return 1;
}

static inline int peek_min(struct perfclock_queue *q, uint64_t *time)
{
	uint64_t t = UINT64_MAX;
	int found = 0;

	if (q->src_heap_len) {
		t = q->src_heap[0].time;
		found = 1;
	}
	if (q->strag_len && (!found || q->strag[0].time < t)) {
		t = q->strag[0].time;
		found = 1;
	}
	*time = t;
	return found;
}

static uint64_t ent_mem(const struct perfclock_queue *q, uint32_t size)
{
	uint64_t m = sizeof(struct qent);

	if (!(q->cfg.flags & PERFCLOCK_QUEUE_NOCOPY))
		m += class_size(slab_class(size ? size : 1));
	return m;
}

static void release(struct perfclock_queue *q, const struct qent *e)
{
	if (!(q->cfg.flags & PERFCLOCK_QUEUE_NOCOPY) && e->data)
		perfclock_queue__slab_free(&q->slab,
					   slab_class(e->size ? e->size : 1),
					   (void *)e->data);
	q->st.mem_bytes -= ent_mem(q, e->size);
	q->st.queued--;
}

static int deliver(struct perfclock_queue *q, const struct qent *e,
		   uint32_t flags, uint64_t lateness)
{
	struct perfclock_event ev = {
		.time = e->time,
		.lateness_ns = lateness,
		.data = e->data,
		.size = e->size,
		.source = e->source,
		.flags = flags,
		.attr_idx = e->attr,
	};
	int ret = q->cfg.deliver(q->cfg.arg, &ev);

	if (ret > 0)
		ret = -ECANCELED;
	return ret;
}

/* Emit the minimum in order. 1 if emitted, 0 if empty, <0 callback. */
static int emit_one(struct perfclock_queue *q, uint32_t flags)
{
	struct qent e;
	int ret;

	if (!pop_min(q, &e))
		return 0;
	if (!q->emitted_any || e.time > q->st.last_emitted)
		q->st.last_emitted = e.time;
	q->emitted_any = 1;
	q->st.emitted++;
	if (flags & PERFCLOCK_EVENT_FORCED)
		q->st.forced++;
	ret = deliver(q, &e, flags, 0);
	release(q, &e);
	return ret ? ret : 1;
}

/* ---- public ---- */

PERFCLOCK_API struct perfclock_queue *
perfclock_queue_new(const struct perfclock_queue_config *cfg)
{
	struct perfclock_queue *q;

	if (!cfg || cfg->size < sizeof(*cfg) || !cfg->deliver ||
	    !cfg->nr_sources || cfg->nr_sources > (1u << 24) ||
	    (cfg->flags & ~PERFCLOCK_QUEUE_NOCOPY)) {
		errno = EINVAL;
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->cfg = *cfg;
	if (!q->cfg.mem_cap_bytes)
		q->cfg.mem_cap_bytes = PERFCLOCK_QUEUE_DEFAULT_MEM_CAP;
	/* Chunks of a 16th of the cap, 1 KiB to 64 KiB. */
	q->slab.chunk_base = SLAB_CHUNK;
	if (q->cfg.mem_cap_bytes / 16 < SLAB_CHUNK)
		q->slab.chunk_base = q->cfg.mem_cap_bytes / 16 > SLAB_CHUNK_MIN ?
			(uint32_t)(q->cfg.mem_cap_bytes / 16) & ~15u :
			SLAB_CHUNK_MIN;
	q->src = calloc(cfg->nr_sources, sizeof(*q->src));
	q->src_heap = calloc(cfg->nr_sources, sizeof(*q->src_heap));
	if (!q->src || !q->src_heap) {
		perfclock_queue_free(q);
		errno = ENOMEM;
		return NULL;
	}
	return q;
}

PERFCLOCK_API void perfclock_queue_free(struct perfclock_queue *q)
{
	uint32_t i;

	if (!q)
		return;
	if (q->src)
		for (i = 0; i < q->cfg.nr_sources; i++)
			free(q->src[i].fifo);
	free(q->src);
	free(q->src_heap);
	free(q->strag);
	perfclock_queue__slab_destroy(&q->slab);
	free(q);
}

/* The push is taken: its statistics and its source's state. */
static void account_push(struct perfclock_queue *q, struct qsrc *s,
			 uint64_t time)
{
	q->st.pushed++;
	if (q->limit_valid && time < q->st.last_limit)
		q->st.below_horizon++;
	if (s->pushed_any && time < s->last_pushed)
		q->st.out_of_order_in_source++;
	s->last_pushed = time;
	s->pushed_any = 1;
}

/*
 * The cap: until what the queue has allocated plus what this push needs
 * fits, give back what is unused (queue_mem.c), then emit the oldest
 * (FORCED), a quarter of the queue at a time. An empty queue takes the
 * event whatever it needs. <0: a callback failed (the forced flush
 * stops).
 */
static int make_room(struct perfclock_queue *q, const struct qsrc *s,
		     uint64_t time, uint32_t size)
{
	uint64_t target;
	int ret;

	for (;;) {
		perfclock_queue__trim_tight(q);
		if (!q->st.queued ||
		    !perfclock_queue__over_cap(q, s, time, size))
			return 0;
		target = q->st.mem_bytes - q->st.mem_bytes / 4;
		while (q->st.queued && q->st.mem_bytes > target) {
			ret = emit_one(q, PERFCLOCK_EVENT_FORCED);
			if (ret < 0)
				return ret;
		}
	}
}

/* Too late to keep order: deliver now, flagged, never dropped. */
static int deliver_late(struct perfclock_queue *q, struct qsrc *s,
			const struct qent *e)
{
	uint64_t lateness = q->st.last_emitted - e->time;

	account_push(q, s, e->time);
	q->st.late++;
	if (lateness > q->st.worst_lateness_ns)
		q->st.worst_lateness_ns = lateness;
	return deliver(q, e, PERFCLOCK_EVENT_LATE, lateness);
}

_Static_assert(SLAB_MAX_SIZE < (1u << QENT_SIZE_BITS),
	       "struct qent's size field holds every size push accepts");

PERFCLOCK_API int perfclock_queue_push(struct perfclock_queue *q,
				       uint32_t source, uint64_t time,
				       const void *data, uint32_t size)
{
	return perfclock_queue__push_attr(q, source, 0, time, data, size);
}

int perfclock_queue__push_attr(struct perfclock_queue *q, uint32_t source,
			       uint32_t attr_idx, uint64_t time,
			       const void *data, uint32_t size)
{
	struct qsrc *s;
	struct qent e;
	uint64_t need;
	int ret, cb_err = 0;

	if (!q || source >= q->cfg.nr_sources || (size && !data) ||
	    size > SLAB_MAX_SIZE || attr_idx > QENT_ATTR_MAX)
		return -EINVAL;
	s = &q->src[source];

	e.time = time;
	e.seq = q->seq;
	e.size = size;
	e.attr = attr_idx;
	e.source = source;
	e.data = data;

	if (q->emitted_any && time < q->st.last_emitted) {
		q->seq++;
		return deliver_late(q, s, &e);
	}

	/*
	 * Memory cap: what the queue allocates, this push included, stays
	 * within it (make_room()). A callback that fails stops the forced
	 * flush, not the push: the event is queued (over the cap by this
	 * one) and the callback's error returned.
	 */
	need = ent_mem(q, size);
	if (perfclock_queue__over_cap(q, s, time, size) && q->st.queued)
		cb_err = make_room(q, s, time, size);
	/* The forced flush may have made this event late. */
	if (q->emitted_any && time < q->st.last_emitted) {
		q->seq++;
		ret = deliver_late(q, s, &e);
		return cb_err ? cb_err : ret;
	}

	/* Nothing changes before here if memory runs out. */
	if (!(q->cfg.flags & PERFCLOCK_QUEUE_NOCOPY) && size) {
		void *copy = perfclock_queue__slab_alloc(q, slab_class(size));

		if (!copy)
			return -ENOMEM;
		memcpy(copy, data, size);
		e.data = copy;
	} else if (!(q->cfg.flags & PERFCLOCK_QUEUE_NOCOPY)) {
		e.data = NULL;
	}

	if (s->count && time < s->fifo[(s->head + s->count - 1) &
					(s->cap - 1)].time)
		ret = strag_push(q, &e);
	else
		ret = fifo_push(q, source, &e);
	if (ret) {
		if (!(q->cfg.flags & PERFCLOCK_QUEUE_NOCOPY) && e.data)
			perfclock_queue__slab_free(&q->slab, slab_class(size),
						   (void *)e.data);
		return ret;
	}
	q->seq++;
	account_push(q, s, time);
	q->st.queued++;
	q->st.mem_bytes += need;
	if (q->st.mem_bytes > q->st.mem_peak_bytes)
		q->st.mem_peak_bytes = q->st.mem_bytes;
	if (q->st.mem_bytes > q->live_hwm)
		q->live_hwm = q->st.mem_bytes;
	return cb_err;
}

PERFCLOCK_API int64_t perfclock_queue_flush_until(struct perfclock_queue *q,
						  uint64_t limit)
{
	uint64_t t;
	int64_t n = 0;
	int ret;

	if (!q)
		return -EINVAL;
	q->st.flushes++;
	if (!q->limit_valid || limit > q->st.last_limit)
		q->st.last_limit = limit;
	q->limit_valid = 1;
	/* Strictly below: a record stamped at the limit may be in flight. */
	while (peek_min(q, &t) && t < limit) {
		ret = emit_one(q, 0);
		if (ret < 0)
			return ret;
		n++;
	}
	perfclock_queue__maybe_trim(q);
	return n;
}

PERFCLOCK_API int64_t perfclock_queue_flush_all(struct perfclock_queue *q)
{
	int64_t n = 0;
	int ret;

	if (!q)
		return -EINVAL;
	while ((ret = emit_one(q, 0)) == 1)
		n++;
	perfclock_queue__maybe_trim(q);
	return ret < 0 ? ret : n;
}

PERFCLOCK_API int64_t perfclock_queue_restart(struct perfclock_queue *q)
{
	int64_t n;
	uint32_t i;

	if (!q)
		return -EINVAL;
	n = perfclock_queue_flush_all(q);
	if (n < 0)
		return n;	/* a callback failed: the rest stays queued */
	q->st.restarts++;
	q->limit_valid = 0;
	q->st.last_limit = 0;
	q->emitted_any = 0;
	q->st.last_emitted = 0;
	for (i = 0; i < q->cfg.nr_sources; i++)
		q->src[i].pushed_any = 0;
	return n;
}

PERFCLOCK_API void
perfclock_queue_get_stats(const struct perfclock_queue *q,
			  struct perfclock_queue_stats *st)
{
	if (!q || !st)
		return;
	*st = q->st;
	st->mem_retained_bytes = q->retained;
}
