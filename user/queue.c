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
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libperfclock.h"
#include "internal.h"

struct qent {
	uint64_t time;
	uint64_t seq;
	const void *data;
	uint32_t size;
	uint32_t source;
};

/*
 * A heap slot carries its source's head key inline, so sifting compares
 * without chasing the source's FIFO. A source's key changes only when its
 * head is emitted, which happens at the root.
 */
struct hent {
	uint64_t time;
	uint64_t seq;
	uint32_t src;
	uint32_t pad;
};

struct qsrc {
	struct qent *fifo;	/* circular, cap a power of two */
	uint32_t cap, head, count;
	uint32_t hwm;		/* largest count since the last trim */
	uint64_t last_pushed;	/* time of the last push */
	int pushed_any;
};

#define FIFO_MIN	16u	/* entries of a source's first array */
/* Look at giving memory back every this many flushes. */
#define TRIM_PERIOD	64u

/*
 * Size classes: every multiple of 16 bytes up to 512 (records are mostly
 * small: a tight fit keeps the working set small), then powers of two up
 * to 64 KiB, the largest perf record.
 */
#define SLAB_FINE_MAX	512u
#define SLAB_FINE	(SLAB_FINE_MAX / 16)	/* 32 classes of 16 B steps */
#define SLAB_CLASSES	(SLAB_FINE + 7)		/* 1 KiB .. 64 KiB */
#define SLAB_MAX_SIZE	(64u << 10)
#define SLAB_CHUNK	(64u << 10)
#define SLAB_CHUNK_MIN	(1u << 10)
/* 16 bytes of chunk header keep the slots 16-byte aligned. */
#define SLAB_HDR	16u

struct slab_chunk {
	struct slab_chunk *next;
};

/*
 * Per class: a list of chunks, a free list of slots, and how many slots
 * are in use, so that a class's chunks can be freed when it empties and
 * its copies moved into fewer chunks when it is mostly free.
 */
struct slab {
	void *free[SLAB_CLASSES];
	struct slab_chunk *chunks[SLAB_CLASSES];
	uint32_t nchunks[SLAB_CLASSES];
	uint32_t used[SLAB_CLASSES];
	uint32_t chunk_base;	/* data bytes of a chunk: from the cap */
	uint64_t bytes;		/* allocated, headers included */
};

struct perfclock_queue {
	struct perfclock_queue_config cfg;
	struct qsrc *src;
	struct hent *src_heap;	/* min-heap over non-empty sources */
	uint32_t src_heap_len;
	struct qent *strag;	/* straggler heap */
	uint32_t strag_len, strag_cap;
	struct slab slab;
	uint64_t seq;
	int emitted_any;
	int limit_valid;
	uint32_t strag_hwm;
	uint32_t flushes_since_trim;
	uint64_t live_hwm;	/* largest mem_bytes since the last trim */
	/* Allocated since perfclock_queue_new(): held to the cap. */
	uint64_t retained;

	struct perfclock_queue_stats st;
};

PERFCLOCK_API void
perfclock_queue_config_init(struct perfclock_queue_config *cfg)
{
	if (!cfg)
		return;
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->mem_cap_bytes = PERFCLOCK_QUEUE_DEFAULT_MEM_CAP;
}

/* ---- slab ---- */

static inline unsigned int slab_class(uint32_t size)
{
	if (size <= SLAB_FINE_MAX)
		return size ? (size - 1) / 16 : 0;
	/* smallest c with (1 KiB << (c - SLAB_FINE)) >= size */
	return SLAB_FINE + (unsigned int)(32 - __builtin_clz(size - 1)) - 10;
}

static inline size_t class_size(unsigned int c)
{
	return c < SLAB_FINE ? (size_t)(c + 1) * 16 :
		(size_t)1024 << (c - SLAB_FINE);
}

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

static void *slab_alloc(struct perfclock_queue *q, unsigned int c)
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

static void slab_free(struct slab *s, unsigned int c, void *p)
{
	*(void **)p = s->free[c];
	s->free[c] = p;
	s->used[c]--;
}

static void slab_destroy(struct slab *s)
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

static void retain(struct perfclock_queue *q, uint64_t add, uint64_t sub)
{
	q->retained = q->retained + add - sub;
	if (q->retained > q->st.mem_retained_peak_bytes)
		q->st.mem_retained_peak_bytes = q->retained;
}

static int strag_push(struct perfclock_queue *q, const struct qent *e)
{
	uint32_t pos;

	if (q->strag_len == q->strag_cap) {
		uint32_t cap = q->strag_cap ? 2 * q->strag_cap : FIFO_MIN;
		struct qent *n = realloc(q->strag, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		retain(q, (uint64_t)cap * sizeof(*n),
		       (uint64_t)q->strag_cap * sizeof(*n));
		q->strag = n;
		q->strag_cap = cap;
	}
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

	if (s->count == s->cap) {
		uint32_t cap = s->cap ? 2 * s->cap : FIFO_MIN, k;
		struct qent *n = malloc(cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (k = 0; k < s->count; k++)
			n[k] = s->fifo[(s->head + k) & (s->cap - 1)];
		free(s->fifo);
		retain(q, (uint64_t)cap * sizeof(*n),
		       (uint64_t)s->cap * sizeof(*n));
		s->fifo = n;
		s->cap = cap;
		s->head = 0;
	}
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
		slab_free(&q->slab, slab_class(e->size ? e->size : 1),
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

/* ---- giving memory back ---- */

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t c = FIFO_MIN;

	while (c < n && c < (1u << 31))
		c *= 2;
	return c;
}

/* Resize a source's FIFO to cap (>= its count; 0 frees an empty one). */
static void fifo_resize(struct perfclock_queue *q, struct qsrc *s,
			uint32_t cap)
{
	struct qent *n = NULL;
	uint32_t k;

	if (cap) {
		n = malloc(cap * sizeof(*n));
		if (!n)
			return;		/* keep the larger one */
		for (k = 0; k < s->count; k++)
			n[k] = s->fifo[(s->head + k) & (s->cap - 1)];
	}
	free(s->fifo);
	retain(q, (uint64_t)cap * sizeof(*n), (uint64_t)s->cap * sizeof(*n));
	s->fifo = n;
	s->cap = cap;
	s->head = 0;
}

static void strag_resize(struct perfclock_queue *q, uint32_t cap)
{
	struct qent *n = NULL;

	if (cap) {
		n = realloc(q->strag, cap * sizeof(*n));
		if (!n)
			return;
	} else {
		free(q->strag);
	}
	retain(q, (uint64_t)cap * sizeof(*n),
	       (uint64_t)q->strag_cap * sizeof(*n));
	q->strag = n;
	q->strag_cap = cap;
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
			retain(q, 0, (uint64_t)s->nchunks[c] * chunk_bytes(s, c));
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
		retain(q, (uint64_t)need[c] * cb, (uint64_t)s->nchunks[c] * cb);
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
			fifo_resize(q, s, want);
		s->hwm = s->count;
	}
	if (tight)
		want = q->strag_len ? pow2_at_least(q->strag_len) : 0;
	else
		want = pow2_at_least(2 * (q->strag_hwm > q->strag_len ?
					  q->strag_hwm : q->strag_len));
	if (want < q->strag_cap)
		strag_resize(q, want);
	q->strag_hwm = q->strag_len;
	slab_compact(q, tight);
	q->live_hwm = q->st.mem_bytes;
	q->flushes_since_trim = 0;
}

/* After a flush: give memory back when usage has dropped for a while. */
static void maybe_trim(struct perfclock_queue *q)
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

/*
 * The cap: until what the queue has allocated plus what this push needs
 * fits, give back what is unused, then emit the oldest (FORCED), a
 * quarter of the queue at a time. An empty queue takes the event
 * whatever it needs. <0: a callback failed (the forced flush stops).
 */
static int make_room(struct perfclock_queue *q, const struct qsrc *s,
		     uint64_t time, uint32_t size)
{
	uint64_t cap = q->cfg.mem_cap_bytes, target;
	int ret;

	for (;;) {
		trim(q, 1);
		if (!q->st.queued ||
		    q->retained + push_growth(q, s, time, size) <= cap)
			return 0;
		target = q->st.mem_bytes - q->st.mem_bytes / 4;
		while (q->st.queued && q->st.mem_bytes > target) {
			ret = emit_one(q, PERFCLOCK_EVENT_FORCED);
			if (ret < 0)
				return ret;
		}
	}
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
	slab_destroy(&q->slab);
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

PERFCLOCK_API int perfclock_queue_push(struct perfclock_queue *q,
				       uint32_t source, uint64_t time,
				       const void *data, uint32_t size)
{
	struct qsrc *s;
	struct qent e;
	uint64_t need;
	int ret, cb_err = 0;

	if (!q || source >= q->cfg.nr_sources || (size && !data) ||
	    size > SLAB_MAX_SIZE)
		return -EINVAL;
	s = &q->src[source];

	e.time = time;
	e.seq = q->seq;
	e.size = size;
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
	if (q->retained + push_growth(q, s, time, size) > q->cfg.mem_cap_bytes &&
	    q->st.queued)
		cb_err = make_room(q, s, time, size);
	/* The forced flush may have made this event late. */
	if (q->emitted_any && time < q->st.last_emitted) {
		q->seq++;
		ret = deliver_late(q, s, &e);
		return cb_err ? cb_err : ret;
	}

	/* Nothing changes before here if memory runs out. */
	if (!(q->cfg.flags & PERFCLOCK_QUEUE_NOCOPY) && size) {
		void *copy = slab_alloc(q, slab_class(size));

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
			slab_free(&q->slab, slab_class(size), (void *)e.data);
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
	maybe_trim(q);
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
	maybe_trim(q);
	return ret < 0 ? ret : n;
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
