/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libperfclock: the ordered-event queue's private declarations, shared by
 * queue.c (ordering: push, emit, flush) and queue_mem.c (memory: the
 * slab, the cap, giving memory back), which is below it: queue.c calls
 * queue_mem.c, never the other way. Not installed.
 */
#ifndef PERFCLOCK_QUEUE_INTERNAL_H
#define PERFCLOCK_QUEUE_INTERNAL_H

#include <stdint.h>
#include <stddef.h>

#include "libperfclock.h"

/*
 * size is at most SLAB_MAX_SIZE (push refuses more): 17 bits, which
 * leaves 15 for the event's attr_idx (perfclock_evring_drain()) without
 * growing the entry past 32 bytes.
 */
#define QENT_SIZE_BITS	17
#define QENT_ATTR_MAX	((1u << (32 - QENT_SIZE_BITS)) - 1)
struct qent {
	uint64_t time;
	uint64_t seq;
	const void *data;
	uint32_t size : QENT_SIZE_BITS;
	uint32_t attr : 32 - QENT_SIZE_BITS;
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

/* queue_mem.c: the slab, and the memory the queue holds to its cap. */
void *perfclock_queue__slab_alloc(struct perfclock_queue *q, unsigned int c);
void perfclock_queue__slab_free(struct slab *s, unsigned int c, void *p);
void perfclock_queue__slab_destroy(struct slab *s);
void perfclock_queue__retain(struct perfclock_queue *q, uint64_t add,
			     uint64_t sub);
void perfclock_queue__maybe_trim(struct perfclock_queue *q);
int perfclock_queue__fifo_resize(struct perfclock_queue *q, struct qsrc *s,
				 uint32_t cap);
int perfclock_queue__strag_resize(struct perfclock_queue *q, uint32_t cap);
/*
 * Would pushing this event (of size bytes, at time, onto source s) take
 * what the queue has allocated past its cap? And the trim that gives
 * back everything its contents do not use (arrays down to their
 * contents, empty slab classes freed, half-empty ones compacted).
 */
int perfclock_queue__over_cap(const struct perfclock_queue *q,
			      const struct qsrc *s, uint64_t time,
			      uint32_t size);
void perfclock_queue__trim_tight(struct perfclock_queue *q);

/*
 * queue.c: perfclock_queue_push() with the event's attr index, which the
 * delivered perfclock_event carries (attr_idx <= QENT_ATTR_MAX).
 */
int perfclock_queue__push_attr(struct perfclock_queue *q, uint32_t source,
			       uint32_t attr_idx, uint64_t time,
			       const void *data, uint32_t size);

#endif /* PERFCLOCK_QUEUE_INTERNAL_H */
