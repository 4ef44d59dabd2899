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
	uint64_t sample_type;
	int sample_id_all;
	int has_attr;
	struct perfclock_ring_stats st;
	unsigned char *scratch;	/* RECORD_MAX bytes, for wrapping records */
};

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
		r->has_attr = 1;
		r->sample_type = attr->sample_type;
		r->sample_id_all = attr->sample_id_all;
	}
	return r;
}

PERFCLOCK_API void perfclock_ring_free(struct perfclock_ring *r)
{
	if (!r)
		return;
	free(r->scratch);
	free(r);
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
	if (r->has_attr &&
	    !record_time(p, size, h.type, r->sample_type, r->sample_id_all,
			 &rec->time))
		rec->flags |= PERFCLOCK_RECORD_HAS_TIME;
	account_lost(r, p, h.type, size);

	r->pos += size;
	r->st.records++;
	r->st.bytes += size;
	return 1;
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
