// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libperfclock: the ordered-event queue's memory (see queue.c for the
 * whole structure): the slab that holds the copies of the events' bytes,
 * and the cap on what the queue retains: over_cap() says whether a push
 * would pass it, trim() gives back what is unused (tight before a forced
 * flush, after flushes once usage has dropped).
 *
 * Below the queue: queue.c calls this file, never the other way. What
 * the queue does when trimming is not enough (emit the oldest, FORCED)
 * is ordering, queue.c's make_room(): it used to be here, calling back
 * up into queue.c's emission.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "queue_internal.h"

/* ---- slab ---- */

/* Data bytes of a chunk of class c: at least two slots above 1 KiB. */
static size_t chunk_data(const struct slab *s, unsigned int c)
{
	size_t sz = class_size(c);
	size_t min = c < SLAB_FINE ? sz : 2 * sz;

	return s->chunk_base > min ? s->chunk_base : min;
}

static size_t chunk_bytes(const struct slab *s, unsigned int c)
{
	return SLAB_HDR + chunk_data(s, c);
}

static size_t chunk_slots(const struct slab *s, unsigned int c)
{
	return chunk_data(s, c) / class_size(c);
}

/* A new chunk of class c on list *head, its slots on free list *fl. */
static int chunk_new(const struct slab *s, unsigned int c,
		     struct slab_chunk **head, void **fl)
{
	size_t sz = class_size(c), n = chunk_slots(s, c), i;
	struct slab_chunk *ch = malloc(chunk_bytes(s, c));
	unsigned char *p;

	if (!ch)
		return -ENOMEM;
	ch->next = *head;
	*head = ch;
	p = (unsigned char *)ch + SLAB_HDR;
	for (i = n; i-- > 0;) {
		void **slot = (void **)(p + i * sz);

		*slot = *fl;
		*fl = slot;
	}
	return 0;
}

static void chunks_free(struct slab_chunk *ch)
{
	struct slab_chunk *next;

	for (; ch; ch = next) {
		next = ch->next;
		free(ch);
	}
}

void *perfclock_queue__slab_alloc(struct perfclock_queue *q,
				  unsigned int c)
{
	struct slab *s = &q->slab;
	void **slot;

	if (!s->free[c]) {
		if (chunk_new(s, c, &s->chunks[c], &s->free[c]))
			return NULL;
		s->nchunks[c]++;
		s->bytes += chunk_bytes(s, c);
		q->retained += chunk_bytes(s, c);
	}
	slot = s->free[c];
	s->free[c] = *slot;
	s->used[c]++;
	return slot;
}

void perfclock_queue__slab_free(struct slab *s, unsigned int c, void *p)
{
	*(void **)p = s->free[c];
	s->free[c] = p;
	s->used[c]--;
}

void perfclock_queue__slab_destroy(struct slab *s)
{
	unsigned int c;

	for (c = 0; c < SLAB_CLASSES; c++) {
		chunks_free(s->chunks[c]);
		s->chunks[c] = NULL;
		s->free[c] = NULL;
		s->nchunks[c] = 0;
		s->used[c] = 0;
	}
	s->bytes = 0;
}

void perfclock_queue__retain(struct perfclock_queue *q, uint64_t add,
			     uint64_t sub)
{
	q->retained = q->retained + add - sub;
	if (q->retained > q->st.mem_retained_peak_bytes)
		q->st.mem_retained_peak_bytes = q->retained;
}

/* ---- giving memory back ---- */

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t c = FIFO_MIN;

	while (c < n && c < (1u << 31))
		c *= 2;
	return c;
}

/*
 * Resize a source's FIFO to cap (>= its count; 0 frees an empty one):
 * growth on push (queue.c) and giving memory back on trim. On -ENOMEM
 * the FIFO is left as it was.
 */
int perfclock_queue__fifo_resize(struct perfclock_queue *q, struct qsrc *s,
				 uint32_t cap)
{
	struct qent *n = NULL;
	uint32_t k;

	if (cap) {
		n = malloc(cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		for (k = 0; k < s->count; k++)
			n[k] = s->fifo[(s->head + k) & (s->cap - 1)];
	}
	free(s->fifo);
	perfclock_queue__retain(q, (uint64_t)cap * sizeof(*n),
				(uint64_t)s->cap * sizeof(*n));
	s->fifo = n;
	s->cap = cap;
	s->head = 0;
	return 0;
}

/* The same for the straggler heap (cap >= its length). */
int perfclock_queue__strag_resize(struct perfclock_queue *q, uint32_t cap)
{
	struct qent *n = NULL;

	if (cap) {
		n = realloc(q->strag, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
	} else {
		free(q->strag);
	}
	perfclock_queue__retain(q, (uint64_t)cap * sizeof(*n),
				(uint64_t)q->strag_cap * sizeof(*n));
	q->strag = n;
	q->strag_cap = cap;
	return 0;
}

static void move_copy(struct perfclock_queue *q, struct qent *e,
		      const unsigned char *moving, void **nfree)
{
	unsigned int c;
	void **slot;

	if (!e->data)
		return;
	c = slab_class(e->size ? e->size : 1);
	if (!moving[c])
		return;
	slot = nfree[c];
	nfree[c] = *slot;
	memcpy(slot, e->data, e->size);
	e->data = slot;
	(void)q;
}

/*
 * The slab: free the chunks of classes with nothing in use; move the
 * copies of a class that holds more chunks than it needs (more than one
 * spare unless tight) into just enough new ones. Nothing moves if the
 * new chunks cannot be allocated.
 */
static void slab_compact(struct perfclock_queue *q, int tight)
{
	struct slab *s = &q->slab;
	struct slab_chunk *nch[SLAB_CLASSES] = { NULL };
	void *nfree[SLAB_CLASSES] = { NULL };
	unsigned char moving[SLAB_CLASSES] = { 0 };
	uint32_t need[SLAB_CLASSES] = { 0 }, i, k;
	unsigned int c;
	int any = 0;

	for (c = 0; c < SLAB_CLASSES; c++) {
		uint32_t per, n;

		if (!s->nchunks[c])
			continue;
		if (!s->used[c]) {
			chunks_free(s->chunks[c]);
			perfclock_queue__retain(q, 0, (uint64_t)s->nchunks[c] *
						chunk_bytes(s, c));
			s->bytes -= (uint64_t)s->nchunks[c] * chunk_bytes(s, c);
			s->chunks[c] = NULL;
			s->free[c] = NULL;
			s->nchunks[c] = 0;
			continue;
		}
		per = (uint32_t)chunk_slots(s, c);
		n = (s->used[c] + per - 1) / per;
		if (s->nchunks[c] <= n + (tight ? 0 : 1))
			continue;
		for (k = 0; k < n; k++)
			if (chunk_new(s, c, &nch[c], &nfree[c]))
				break;
		if (k < n) {
			chunks_free(nch[c]);
			nch[c] = NULL;
			nfree[c] = NULL;
			continue;
		}
		need[c] = n;
		moving[c] = 1;
		any = 1;
	}
	if (!any)
		return;
	if (!(q->cfg.flags & PERFCLOCK_QUEUE_NOCOPY)) {
		for (i = 0; i < q->cfg.nr_sources; i++) {
			struct qsrc *src = &q->src[i];

			for (k = 0; k < src->count; k++)
				move_copy(q, &src->fifo[(src->head + k) &
							(src->cap - 1)],
					  moving, nfree);
		}
		for (k = 0; k < q->strag_len; k++)
			move_copy(q, &q->strag[k], moving, nfree);
	}
	for (c = 0; c < SLAB_CLASSES; c++) {
		uint64_t cb = chunk_bytes(s, c);

		if (!moving[c])
			continue;
		chunks_free(s->chunks[c]);
		perfclock_queue__retain(q, (uint64_t)need[c] * cb,
					(uint64_t)s->nchunks[c] * cb);
		s->bytes = s->bytes + (uint64_t)need[c] * cb -
			   (uint64_t)s->nchunks[c] * cb;
		s->chunks[c] = nch[c];
		s->free[c] = nfree[c];
		s->nchunks[c] = need[c];
	}
}

/*
 * Give back what the queue does not need. tight: down to its contents
 * (empty arrays freed); else down to twice what each array held since
 * the last trim.
 */
static void trim(struct perfclock_queue *q, int tight)
{
	uint32_t i, want;

	for (i = 0; i < q->cfg.nr_sources; i++) {
		struct qsrc *s = &q->src[i];

		if (tight)
			want = s->count ? pow2_at_least(s->count) : 0;
		else
			want = pow2_at_least(s->hwm > s->count ?
					     2 * s->hwm : 2 * s->count);
		if (want < s->cap)
			/* On -ENOMEM the larger one stays. */
			perfclock_queue__fifo_resize(q, s, want);
		s->hwm = s->count;
	}
	if (tight)
		want = q->strag_len ? pow2_at_least(q->strag_len) : 0;
	else
		want = pow2_at_least(2 * (q->strag_hwm > q->strag_len ?
					  q->strag_hwm : q->strag_len));
	if (want < q->strag_cap)
		perfclock_queue__strag_resize(q, want);
	q->strag_hwm = q->strag_len;
	slab_compact(q, tight);
	q->live_hwm = q->st.mem_bytes;
	q->flushes_since_trim = 0;
}

/* After a flush: give memory back when usage has dropped for a while. */
void perfclock_queue__maybe_trim(struct perfclock_queue *q)
{
	uint64_t slack = q->cfg.mem_cap_bytes / 16;

	if (++q->flushes_since_trim < TRIM_PERIOD)
		return;
	if (slack < SLAB_CHUNK)
		slack = SLAB_CHUNK;
	if (q->retained > 2 * q->live_hwm + slack) {
		trim(q, 0);
	} else {
		uint32_t i;

		for (i = 0; i < q->cfg.nr_sources; i++)
			q->src[i].hwm = q->src[i].count;
		q->strag_hwm = q->strag_len;
		q->live_hwm = q->st.mem_bytes;
		q->flushes_since_trim = 0;
	}
}

/* What pushing this event would allocate. */
static uint64_t push_growth(const struct perfclock_queue *q,
			    const struct qsrc *s, uint64_t time, uint32_t size)
{
	uint64_t g = 0;

	if (!(q->cfg.flags & PERFCLOCK_QUEUE_NOCOPY) && size &&
	    !q->slab.free[slab_class(size)])
		g += chunk_bytes(&q->slab, slab_class(size));
	if (s->count && time < s->fifo[(s->head + s->count - 1) &
				       (s->cap - 1)].time) {
		if (q->strag_len == q->strag_cap)
			g += (uint64_t)(q->strag_cap ? q->strag_cap : FIFO_MIN) *
			     sizeof(struct qent);
	} else if (s->count == s->cap) {
		g += (uint64_t)(s->cap ? s->cap : FIFO_MIN) *
		     sizeof(struct qent);
	}
	return g;
}

/* Would pushing this event take what the queue allocates past its cap? */
int perfclock_queue__over_cap(const struct perfclock_queue *q,
			      const struct qsrc *s, uint64_t time,
			      uint32_t size)
{
	return q->retained + push_growth(q, s, time, size) >
	       q->cfg.mem_cap_bytes;
}

/* Before the forced flush: give back everything the contents do not use. */
void perfclock_queue__trim_tight(struct perfclock_queue *q)
{
	trim(q, 1);
}
