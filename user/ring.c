// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libperfclock: reader for one perf mmap ring buffer.
 *
 * Protocol (include/uapi/linux/perf_event.h, perf_event_mmap_page): the
 * kernel writes records, then publishes data_head; user space loads
 * data_head, reads the records before it, then stores data_tail to hand
 * the space back. Here: an acquire load of data_head (the kernel's
 * smp_wmb() before it stores data_head pairs with it, so the record bytes
 * are visible), and a release store of data_tail (orders all our reads of
 * the records before the kernel may overwrite them; pairs with the
 * kernel's smp_mb() after it reads data_tail in perf_output_begin()).
 *
 * Shared rings (PERF_EVENT_IOC_SET_OUTPUT): several events write into one
 * ring, perhaps with different sample_types. As perf does (util/evlist.c,
 * evlist__valid_sample_type(), evsel__calc_id_pos(), evlist__id2evsel()),
 * each event is registered with its attr and ids; when their layouts
 * differ, every event must put its id at the same place (id_pos from the
 * start of a sample, is_pos from the end of other records:
 * PERF_SAMPLE_IDENTIFIER does that for any sample_type), and each record's
 * event is found by the id it carries. A set the reader cannot parse is
 * refused when it is registered.
 *
 * The ring's memory is treated as untrusted: every record header is copied
 * out once, validated against the buffer and the published head, and only
 * the validated size is used afterwards. Nothing is ever read outside
 * [data, data + data_size), and every loop advances by at least 8 bytes or
 * stops, so a corrupt ring gives -EBADMSG, never a hang or an overread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "internal.h"

/* perf_event_header::size is a __u16: no record is larger. */
#define RECORD_MAX	65536u
#define HDR_SIZE	((uint32_t)sizeof(struct perf_event_header))

struct perfclock_ring {
	struct perf_event_mmap_page *pg;
	const unsigned char *data;
	uint64_t size;		/* data area, power of two */
	uint64_t mask;
	uint64_t head;		/* snapshot of data_head for this pass */
	uint64_t pos;		/* next record to read */
	uint64_t done;		/* what data_tail says */
	int broken;
	/* The events writing here, in registration order. */
	struct ring_event *ev;
	uint32_t nev;
	int mixed;		/* layouts differ: find each record's by id */
	int id_pos, is_pos;	/* where every event's id is, when mixed */
	/* id -> event index: open addressing, cap a power of two */
	uint64_t *id_key;
	uint32_t *id_val;
	uint32_t id_cap, nids;
	struct perfclock_ring_stats st;
	unsigned char *scratch;	/* RECORD_MAX bytes, for wrapping records */
};

struct ring_event {
	uint64_t sample_type;
	int sample_id_all;
	int id_pos;	/* u64s from the start of a sample's body; -1: none */
	int is_pos;	/* u64s from the end of another record; -1: none */
	uint32_t nids;
};

/*
 * Where an event's id is (perf's __evsel__calc_id_pos() and
 * __evsel__calc_is_pos()). Sample body: { IDENTIFIER, IP, TID, TIME,
 * ADDR, ID, ... }; sample_id trailer: { TID, TIME, ID, STREAM_ID, CPU,
 * IDENTIFIER }.
 */
static int calc_id_pos(uint64_t st)
{
	int idx = 0;

	if (st & PERF_SAMPLE_IDENTIFIER)
		return 0;
	if (!(st & PERF_SAMPLE_ID))
		return -1;
	idx += !!(st & PERF_SAMPLE_IP);
	idx += !!(st & PERF_SAMPLE_TID);
	idx += !!(st & PERF_SAMPLE_TIME);
	idx += !!(st & PERF_SAMPLE_ADDR);
	return idx;
}

static int calc_is_pos(uint64_t st)
{
	if (st & PERF_SAMPLE_IDENTIFIER)
		return 1;
	if (!(st & PERF_SAMPLE_ID))
		return -1;
	return 1 + !!(st & PERF_SAMPLE_CPU) + !!(st & PERF_SAMPLE_STREAM_ID);
}

static void event_init(struct ring_event *e, const struct perf_event_attr *a)
{
	e->sample_type = a->sample_type;
	e->sample_id_all = a->sample_id_all;
	e->id_pos = calc_id_pos(a->sample_type);
	e->is_pos = calc_is_pos(a->sample_type);
	e->nids = 0;
}

static int is_pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

PERFCLOCK_API struct perfclock_ring *
perfclock_ring_new(void *base, size_t len, const struct perf_event_attr *attr)
{
	struct perf_event_mmap_page *pg = base;
	struct perfclock_ring *r;
	uint64_t off, size;
	long pagesz = sysconf(_SC_PAGESIZE);

	if (!base || pagesz <= 0 || len <= (size_t)pagesz) {
		errno = EINVAL;
		return NULL;
	}
	/* Kernels before 4.1 leave data_offset/data_size zero. */
	off = pg->data_offset;
	size = pg->data_size;
	if (!off && !size) {
		off = (uint64_t)pagesz;
		size = len - (size_t)pagesz;
	}
	if (off < sizeof(*pg) || off % 8 || !is_pow2(size) ||
	    size < HDR_SIZE || off > len || size > len - off) {
		errno = EINVAL;
		return NULL;
	}

	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->scratch = malloc(RECORD_MAX);
	if (!r->scratch) {
		free(r);
		errno = ENOMEM;
		return NULL;
	}
	r->pg = pg;
	r->data = (const unsigned char *)base + off;
	r->size = size;
	r->mask = size - 1;
	r->done = __atomic_load_n(&pg->data_tail, __ATOMIC_RELAXED);
	r->pos = r->head = r->done;
	if (attr) {
		r->ev = malloc(sizeof(*r->ev));
		if (!r->ev) {
			perfclock_ring_free(r);
			errno = ENOMEM;
			return NULL;
		}
		event_init(&r->ev[0], attr);
		r->nev = 1;
	}
	return r;
}

PERFCLOCK_API void perfclock_ring_free(struct perfclock_ring *r)
{
	if (!r)
		return;
	free(r->id_key);
	free(r->id_val);
	free(r->ev);
	free(r->scratch);
	free(r);
}

static uint32_t id_slot(uint64_t id, uint32_t cap)
{
	return (uint32_t)((id * 0x9E3779B97F4A7C15ULL) >> 32) & (cap - 1);
}

/* The index of the event with this id, or -1. */
static int id_lookup(const struct perfclock_ring *r, uint64_t id)
{
	uint32_t i;

	if (!r->id_cap)
		return -1;
	for (i = id_slot(id, r->id_cap);; i = (i + 1) & (r->id_cap - 1)) {
		if (r->id_val[i] == UINT32_MAX)
			return -1;
		if (r->id_key[i] == id)
			return (int)r->id_val[i];
	}
}

static void id_insert(uint64_t *key, uint32_t *val, uint32_t cap,
		      uint64_t id, uint32_t idx)
{
	uint32_t i = id_slot(id, cap);

	while (val[i] != UINT32_MAX)
		i = (i + 1) & (cap - 1);
	key[i] = id;
	val[i] = idx;
}

/* Room for n more ids (load factor <= 1/2). */
static int id_reserve(struct perfclock_ring *r, uint32_t n)
{
	uint32_t cap = r->id_cap ? r->id_cap : 16, i;
	uint64_t *key;
	uint32_t *val;

	while ((uint64_t)(r->nids + n) * 2 > cap)
		cap *= 2;
	if (cap == r->id_cap)
		return 0;
	key = malloc(cap * sizeof(*key));
	val = malloc(cap * sizeof(*val));
	if (!key || !val) {
		free(key);
		free(val);
		return -ENOMEM;
	}
	memset(val, 0xff, cap * sizeof(*val));
	for (i = 0; i < r->id_cap; i++)
		if (r->id_val[i] != UINT32_MAX)
			id_insert(key, val, cap, r->id_key[i], r->id_val[i]);
	free(r->id_key);
	free(r->id_val);
	r->id_key = key;
	r->id_val = val;
	r->id_cap = cap;
	return 0;
}

static int same_layout(const struct ring_event *a, const struct ring_event *b)
{
	return a->sample_type == b->sample_type &&
	       a->sample_id_all == b->sample_id_all;
}

PERFCLOCK_API int perfclock_ring_add_event(struct perfclock_ring *r,
					   const struct perf_event_attr *attr,
					   const uint64_t *ids, size_t nr_ids)
{
	struct ring_event e, *ev;
	uint32_t i, k;
	int mixed = 0, err;

	if (!r || !attr || !ids || !nr_ids || nr_ids > (1u << 20) ||
	    r->nev >= (1u << 20))
		return -EINVAL;
	event_init(&e, attr);
	e.nids = (uint32_t)nr_ids;
	for (i = 0; i < r->nev; i++)
		if (!same_layout(&r->ev[i], &e))
			mixed = 1;
	/*
	 * Different layouts: the id must be where every event puts it, in
	 * samples and (sample_id_all) in other records, and every event
	 * must be known by its ids (perf: evlist__valid_sample_type() and
	 * evlist__valid_sample_id_all()).
	 */
	if (mixed) {
		if (e.id_pos < 0 || (e.sample_id_all && e.is_pos < 0))
			return -EINVAL;
		for (i = 0; i < r->nev; i++) {
			const struct ring_event *o = &r->ev[i];

			if (!o->nids || o->id_pos != e.id_pos ||
			    o->sample_id_all != e.sample_id_all ||
			    (e.sample_id_all && o->is_pos != e.is_pos))
				return -EINVAL;
		}
	}
	for (k = 0; k < nr_ids; k++) {
		if (id_lookup(r, ids[k]) >= 0)
			return -EEXIST;
		for (i = 0; i < k; i++)
			if (ids[i] == ids[k])
				return -EEXIST;
	}
	err = id_reserve(r, (uint32_t)nr_ids);
	if (err)
		return err;
	ev = realloc(r->ev, (r->nev + 1) * sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	r->ev = ev;
	r->ev[r->nev] = e;
	for (k = 0; k < nr_ids; k++)
		id_insert(r->id_key, r->id_val, r->id_cap, ids[k], r->nev);
	r->nids += (uint32_t)nr_ids;
	r->nev++;
	if (mixed) {
		r->mixed = 1;
		r->id_pos = e.id_pos;
		r->is_pos = e.is_pos;
	}
	return 0;
}

static int ring_error(struct perfclock_ring *r)
{
	if (!r->broken)
		r->st.errors++;
	r->broken = 1;
	return -EBADMSG;
}

PERFCLOCK_API int64_t perfclock_ring_read_begin(struct perfclock_ring *r)
{
	uint64_t head;

	if (!r)
		return -EINVAL;
	if (r->broken)
		return -EBADMSG;
	/* Pairs with the kernel's smp_wmb() before it publishes data_head. */
	head = __atomic_load_n(&r->pg->data_head, __ATOMIC_ACQUIRE);
	/* Unsigned: head behind pos shows up as a huge distance. */
	if (head - r->pos > r->size || head % 8 || r->pos % 8)
		return ring_error(r);
	r->head = head;
	return (int64_t)(head - r->pos);
}

static uint64_t load_u64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void account_lost(struct perfclock_ring *r, const unsigned char *rec,
			 uint32_t type, uint32_t size)
{
	if (type == PERF_RECORD_LOST && size >= HDR_SIZE + 16) {
		/* struct { header; u64 id; u64 lost; sample_id; } */
		r->st.lost_records++;
		r->st.lost += load_u64(rec + HDR_SIZE + 8);
	} else if (type == PERF_RECORD_LOST_SAMPLES && size >= HDR_SIZE + 8) {
		/* struct { header; u64 lost; sample_id; } */
		r->st.lost_samples += load_u64(rec + HDR_SIZE);
	}
}

static int record_time(const unsigned char *rec, uint32_t size, uint32_t type,
		       uint64_t sample_type, int sample_id_all, uint64_t *ns)
{
	uint32_t off = HDR_SIZE, trailer = 0;

	if (!(sample_type & PERF_SAMPLE_TIME))
		return -ENOENT;
	if (type == PERF_RECORD_SAMPLE) {
		/* Layout: { id; ip; pid, tid; time; ... } (perf_event.h). */
		if (sample_type & PERF_SAMPLE_IDENTIFIER)
			off += 8;
		if (sample_type & PERF_SAMPLE_IP)
			off += 8;
		if (sample_type & PERF_SAMPLE_TID)
			off += 8;
	} else {
		/* Kernel records carry struct sample_id at their end. */
		if (!sample_id_all || type == 0 ||
		    type >= 64 /* PERF_RECORD_USER_TYPE_START */)
			return -ENOENT;
		trailer = 8 * (!!(sample_type & PERF_SAMPLE_TID) +
			       1 /* TIME */ +
			       !!(sample_type & PERF_SAMPLE_ID) +
			       !!(sample_type & PERF_SAMPLE_STREAM_ID) +
			       !!(sample_type & PERF_SAMPLE_CPU) +
			       !!(sample_type & PERF_SAMPLE_IDENTIFIER));
		if (size < HDR_SIZE + trailer)
			return -ENOENT;
		off = size - trailer;
		if (sample_type & PERF_SAMPLE_TID)
			off += 8;
	}
	if (off > size || size - off < 8)
		return -ENOENT;
	*ns = load_u64(rec + off);
	return 0;
}

PERFCLOCK_API int perfclock_record_time(const void *data, size_t size,
					const struct perf_event_attr *attr,
					uint64_t *ns)
{
	struct perf_event_header h;

	if (!data || !attr || !ns || size < HDR_SIZE || size > RECORD_MAX)
		return -EINVAL;
	memcpy(&h, data, sizeof(h));
	if (h.size < HDR_SIZE || h.size > size)
		return -EINVAL;
	return record_time(data, h.size, h.type, attr->sample_type,
			   attr->sample_id_all, ns);
}

/* The id a record carries, at the positions of the ring's events. */
static int record_id(const struct perfclock_ring *r, const unsigned char *rec,
		     uint32_t size, uint32_t type, int id_pos, int is_pos,
		     int sample_id_all, uint64_t *id)
{
	uint64_t off;

	if (type == PERF_RECORD_SAMPLE) {
		if (id_pos < 0)
			return -ENOENT;
		off = HDR_SIZE + 8 * (uint64_t)id_pos;
	} else {
		if (!sample_id_all || is_pos < 0 || type == 0 ||
		    type >= 64 /* PERF_RECORD_USER_TYPE_START */ ||
		    size < HDR_SIZE + 8 * (uint64_t)is_pos)
			return -ENOENT;
		off = size - 8 * (uint64_t)is_pos;
	}
	if (off + 8 > size)
		return -ENOENT;
	(void)r;
	*id = load_u64(rec + off);
	return 0;
}

/*
 * The event a record belongs to: its index, -ENOENT when the record
 * carries no id where its events put it, -ESRCH for an id not
 * registered.
 */
static int record_event(const struct perfclock_ring *r,
			const unsigned char *rec, uint32_t size, uint32_t type)
{
	const struct ring_event *e0;
	uint64_t id;
	int idx;

	if (!r->nev)
		return -ENOENT;
	e0 = &r->ev[0];
	if (r->nev == 1)
		return 0;
	if (record_id(r, rec, size, type, r->mixed ? r->id_pos : e0->id_pos,
		      r->mixed ? r->is_pos : e0->is_pos, e0->sample_id_all,
		      &id))
		return -ENOENT;
	idx = id_lookup(r, id);
	return idx >= 0 ? idx : -ESRCH;
}

PERFCLOCK_API int perfclock_ring_record_event(const struct perfclock_ring *r,
					      const struct perfclock_record *rec)
{
	if (!r || !rec || !rec->data || rec->size < HDR_SIZE)
		return -EINVAL;
	return record_event(r, rec->data, rec->size, rec->type);
}

PERFCLOCK_API int perfclock_ring_read_event(struct perfclock_ring *r,
					    struct perfclock_record *rec)
{
	struct perf_event_header h;
	const unsigned char *p;
	uint64_t avail, off;
	uint32_t size;

	if (!r || !rec)
		return -EINVAL;
	if (r->broken)
		return -EBADMSG;
	if (r->pos == r->head)
		return 0;
	avail = r->head - r->pos;	/* <= size, checked in read_begin */
	if (avail < HDR_SIZE)
		return ring_error(r);

	/* pos is 8-aligned and size a power of two >= 8: no header wraps. */
	off = r->pos & r->mask;
	memcpy(&h, r->data + off, sizeof(h));
	size = h.size;
	if (size < HDR_SIZE || size % 8 || size > r->size || size > avail)
		return ring_error(r);

	memset(rec, 0, sizeof(*rec));
	if (off + size <= r->size) {
		p = r->data + off;
	} else {
		uint64_t first = r->size - off;

		memcpy(r->scratch, r->data + off, first);
		memcpy(r->scratch + first, r->data, size - first);
		p = r->scratch;
		rec->flags |= PERFCLOCK_RECORD_WRAPPED;
		r->st.wrapped++;
	}
	rec->data = p;
	rec->size = size;
	rec->type = h.type;
	rec->misc = h.misc;
	if (r->nev) {
		/* One layout: the first event's; else the record's event's. */
		const struct ring_event *e = &r->ev[0];

		if (r->mixed) {
			int idx = record_event(r, p, size, h.type);

			e = idx >= 0 ? &r->ev[idx] : NULL;
			if (idx == -ESRCH)
				rec->flags |= PERFCLOCK_RECORD_UNKNOWN_EVENT;
		}
		if (e && !record_time(p, size, h.type, e->sample_type,
				      e->sample_id_all, &rec->time))
			rec->flags |= PERFCLOCK_RECORD_HAS_TIME;
	}
	account_lost(r, p, h.type, size);

	r->pos += size;
	r->st.records++;
	r->st.bytes += size;
	return 1;
}

/* Step back over rec, the record just read: it is read again next. */
void perfclock_ring__unread(struct perfclock_ring *r,
			    const struct perfclock_record *rec)
{
	r->pos -= rec->size;
	r->st.records--;
	r->st.bytes -= rec->size;
}

PERFCLOCK_API void perfclock_ring_read_end(struct perfclock_ring *r)
{
	if (!r || r->pos == r->done)
		return;
	/*
	 * Release: our reads of the records above happen before the kernel
	 * can see the space as free (pairs with its smp_mb() after reading
	 * data_tail).
	 */
	__atomic_store_n(&r->pg->data_tail, r->pos, __ATOMIC_RELEASE);
	r->done = r->pos;
}

PERFCLOCK_API void perfclock_ring_reset(struct perfclock_ring *r)
{
	uint64_t head, skip;

	if (!r)
		return;
	head = __atomic_load_n(&r->pg->data_head, __ATOMIC_ACQUIRE);
	head &= ~(uint64_t)7;
	skip = head - r->pos;
	r->st.skipped_bytes += skip > r->size ? r->size : skip;
	r->pos = r->head = head;
	r->broken = 0;
	__atomic_store_n(&r->pg->data_tail, head, __ATOMIC_RELEASE);
	r->done = head;
}

PERFCLOCK_API void perfclock_ring_get_stats(const struct perfclock_ring *r,
					    struct perfclock_ring_stats *st)
{
	if (!r || !st)
		return;
	*st = r->st;
}
