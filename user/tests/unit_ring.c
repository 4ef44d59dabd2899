// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of ring.c (part of test_unit): the ring reader on hand-made
 * rings (wrap, LOST, every kind of corruption).
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "perfclock_page.h"
#include "tap.h"
#include "unit.h"

/* ------------------------------------------------------------------ */
/* Ring reader                                                         */
/* ------------------------------------------------------------------ */

#define FAKE_PAGE	4096
#define FAKE_DATA	4096

struct fake_ring {
	union {
		struct perf_event_mmap_page pg;
		unsigned char page[FAKE_PAGE];
	} u;
	unsigned char data[FAKE_DATA];
	uint64_t wpos;	/* writer position */
};

static void fake_init(struct fake_ring *f, uint64_t start)
{
	memset(f, 0, sizeof(*f));
	f->u.pg.data_offset = FAKE_PAGE;
	f->u.pg.data_size = FAKE_DATA;
	f->u.pg.data_head = f->u.pg.data_tail = start;
	f->wpos = start;
}

/* Write a record of 'size' bytes: header, then filler bytes. */
static void fake_write(struct fake_ring *f, uint32_t type, uint32_t size,
		       const void *body, size_t body_len)
{
	unsigned char buf[512];
	struct perf_event_header h = { .type = type, .misc = 0,
				       .size = (uint16_t)size };
	uint32_t i;

	memset(buf, 0xab, sizeof(buf));
	memcpy(buf, &h, sizeof(h));
	if (body)
		memcpy(buf + sizeof(h), body, body_len);
	for (i = 0; i < size && i < sizeof(buf); i++)
		f->data[(f->wpos + i) % FAKE_DATA] = buf[i];
	f->wpos += size;
}

static void fake_publish(struct fake_ring *f)
{
	f->u.pg.data_head = f->wpos;
}

/* A SAMPLE with sample_type TID|TIME: header, pid/tid, time. */
static void fake_sample(struct fake_ring *f, uint64_t time)
{
	uint64_t body[2] = { 0x0000002a0000002aULL, time };

	fake_write(f, PERF_RECORD_SAMPLE, 24, body, sizeof(body));
}

static int drain(struct perfclock_ring *r, uint64_t *times, int max,
		 int *wrapped, int *err)
{
	struct perfclock_record rec;
	int n = 0, ret;

	*err = 0;
	*wrapped = 0;
	if (perfclock_ring_read_begin(r) < 0) {
		*err = 1;
		return 0;
	}
	while ((ret = perfclock_ring_read_event(r, &rec)) == 1) {
		if (n < max)
			times[n] = (rec.flags & PERFCLOCK_RECORD_HAS_TIME) ?
				rec.time : ~0ULL;
		if (rec.flags & PERFCLOCK_RECORD_WRAPPED)
			(*wrapped)++;
		n++;
		if (n > 10000)
			break;	/* a loop: the test fails below */
	}
	if (ret < 0)
		*err = ret;
	perfclock_ring_read_end(r);
	return n;
}

void test_ring_basic(void)
{
	static struct fake_ring f;
	struct perfclock_ring_stats st;
	struct perf_event_attr attr;
	struct perfclock_ring *r;
	uint64_t t[64];
	int n, wrapped, err, i, sorted;

	memset(&attr, 0, sizeof(attr));
	attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	attr.sample_id_all = 1;

	/* Start near the end so records wrap. */
	fake_init(&f, 4 * FAKE_DATA - 40);
	r = perfclock_ring_new(&f, sizeof(f.u) + FAKE_DATA, &attr);
	if (!tap_ok(r != NULL, "ring: wraps a one-page header + power-of-two data area"))
		return;
	for (i = 0; i < 10; i++)
		fake_sample(&f, 1000 + i);
	fake_publish(&f);
	n = drain(r, t, 64, &wrapped, &err);
	sorted = 1;
	for (i = 0; i < n && i < 10; i++)
		sorted &= t[i] == (uint64_t)(1000 + i);
	tap_ok(n == 10 && !err && sorted,
	       "ring: reads 10 samples with their times across the end of the buffer (n=%d err=%d)",
	       n, err);
	tap_ok(wrapped == 1,
	       "ring: the one record straddling the end is copied out whole (%d)",
	       wrapped);
	tap_ok(f.u.pg.data_tail == f.wpos,
	       "ring: read_end stores data_tail = consumed position");

	/* LOST: { id, lost, sample_id { pid,tid, time } }. */
	{
		uint64_t body[4] = { 7, 33, 0x0000002a0000002aULL, 2000 };
		uint64_t ls[3] = { 5, 0x0000002a0000002aULL, 2001 };

		fake_write(&f, PERF_RECORD_LOST, 40, body, sizeof(body));
		fake_write(&f, PERF_RECORD_LOST_SAMPLES, 32, ls, sizeof(ls));
		fake_publish(&f);
	}
	n = drain(r, t, 64, &wrapped, &err);
	perfclock_ring_get_stats(r, &st);
	tap_ok(n == 2 && st.lost_records == 1 && st.lost == 33 &&
	       st.lost_samples == 5,
	       "ring: PERF_RECORD_LOST(33) and LOST_SAMPLES(5) are counted and surfaced");
	tap_ok(n == 2 && t[0] == 2000 && t[1] == 2001,
	       "ring: non-sample records take their time from sample_id (sample_id_all)");

	/* Empty pass. */
	n = drain(r, t, 64, &wrapped, &err);
	tap_ok(n == 0 && !err, "ring: an empty ring reads nothing, no error");
	perfclock_ring_free(r);

	errno = 0;
	r = perfclock_ring_new(&f, sizeof(f.u) + FAKE_DATA - 8, NULL);
	tap_ok(!r && errno == EINVAL,
	       "ring: a header page describing more data than mapped is refused (EINVAL)");
	perfclock_ring_free(r);
	f.u.pg.data_size = 3000;
	errno = 0;
	r = perfclock_ring_new(&f, sizeof(f.u) + FAKE_DATA, NULL);
	tap_ok(!r && errno == EINVAL,
	       "ring: a data area that is not a power of two is refused (EINVAL)");
}

/*
 * A ring shared by events of different sample_types (SET_OUTPUT): each
 * record's event is found by PERF_SAMPLE_IDENTIFIER, as perf does, and a
 * set the reader cannot parse is refused (issue 13, item 4). With one
 * attr for the ring, B's sample time was read at A's offset.
 */
void test_ring_shared(void)
{
	static struct fake_ring f;
	struct perf_event_attr a, b, c;
	struct perfclock_record rec;
	struct perfclock_ring *r;
	const uint64_t ida[2] = { 101, 102 }, idb[1] = { 201 };
	uint64_t t[8] = { 0 };
	int ev[8] = { 0 }, unknown[8] = { 0 }, n = 0, ret, ok;

	memset(&a, 0, sizeof(a));
	a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID |
			PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
	a.sample_id_all = 1;
	b = a;
	b.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP |
			PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD;

	fake_init(&f, 0);
	r = perfclock_ring_new(&f, sizeof(f.u) + FAKE_DATA, NULL);
	ok = r && perfclock_ring_add_event(r, &a, ida, 2) == 0 &&
	     perfclock_ring_add_event(r, &b, idb, 1) == 0;
	if (!tap_ok(ok, "ring shared: two events of different sample_types, both with PERF_SAMPLE_IDENTIFIER, register"))
		return;
	c = a;
	c.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	tap_ok(perfclock_ring_add_event(r, &c, (const uint64_t[]){ 301 }, 1) == -EINVAL,
	       "ring shared: a third layout without an id is refused (-EINVAL)");
	c = a;
	c.sample_id_all = 0;
	c.sample_type |= PERF_SAMPLE_PERIOD;
	tap_ok(perfclock_ring_add_event(r, &c, (const uint64_t[]){ 302 }, 1) == -EINVAL,
	       "ring shared: an event without sample_id_all among ones with it is refused (-EINVAL)");
	tap_ok(perfclock_ring_add_event(r, &a, (const uint64_t[]){ 201 }, 1) == -EEXIST &&
	       perfclock_ring_add_event(r, &a, NULL, 0) == -EINVAL,
	       "ring shared: an id registered twice is -EEXIST, no ids -EINVAL");

	/* A sample { id, pid/tid, time, cpu } */
	fake_write(&f, PERF_RECORD_SAMPLE, 40,
		   (const uint64_t[]){ 101, 0x2a0000002aULL, 5000, 1 }, 32);
	/* B sample { id, ip, pid/tid, time, period } */
	fake_write(&f, PERF_RECORD_SAMPLE, 48,
		   (const uint64_t[]){ 201, 0xffffffff81000000ULL,
				       0x2a0000002aULL, 6000, 1 }, 40);
	/* A's LOST { id, lost, sample_id { tid, time, cpu, identifier } } */
	fake_write(&f, PERF_RECORD_LOST, 56,
		   (const uint64_t[]){ 102, 3, 0x2a0000002aULL, 7000, 1, 102 },
		   48);
	/* B's LOST { id, lost, sample_id { tid, time, identifier } } */
	fake_write(&f, PERF_RECORD_LOST, 48,
		   (const uint64_t[]){ 201, 4, 0x2a0000002aULL, 8000, 201 }, 40);
	/* an id nobody registered */
	fake_write(&f, PERF_RECORD_SAMPLE, 40,
		   (const uint64_t[]){ 999, 0x2a0000002aULL, 9000, 1 }, 32);
	fake_publish(&f);
	perfclock_ring_read_begin(r);
	while ((ret = perfclock_ring_read_event(r, &rec)) == 1 && n < 8) {
		t[n] = (rec.flags & PERFCLOCK_RECORD_HAS_TIME) ? rec.time : 0;
		unknown[n] = !!(rec.flags & PERFCLOCK_RECORD_UNKNOWN_EVENT);
		ev[n] = perfclock_ring_record_event(r, &rec);
		n++;
	}
	perfclock_ring_read_end(r);
	tap_ok(n == 5 && t[0] == 5000 && t[1] == 6000 && t[2] == 7000 &&
	       t[3] == 8000,
	       "ring shared: each record's time read with its own event's layout, samples and sample_id (%llu %llu %llu %llu)",
	       (unsigned long long)t[0], (unsigned long long)t[1],
	       (unsigned long long)t[2], (unsigned long long)t[3]);
	tap_ok(ev[0] == 0 && ev[1] == 1 && ev[2] == 0 && ev[3] == 1 &&
	       ev[4] == -ESRCH && !unknown[0] && !unknown[3],
	       "ring shared: perfclock_ring_record_event() names each record's event (%d %d %d %d)",
	       ev[0], ev[1], ev[2], ev[3]);
	tap_ok(t[4] == 0 && unknown[4],
	       "ring shared: a record with an unregistered id: no time, PERFCLOCK_RECORD_UNKNOWN_EVENT");
	perfclock_ring_free(r);

	/* PERF_SAMPLE_ID without IDENTIFIER: only where the positions agree. */
	memset(&a, 0, sizeof(a));
	a.sample_type = PERF_SAMPLE_ID | PERF_SAMPLE_TIME;
	a.sample_id_all = 1;
	b = a;
	b.sample_type |= PERF_SAMPLE_CPU;	/* is_pos 2, not 1 */
	r = perfclock_ring_new(&f, sizeof(f.u) + FAKE_DATA, NULL);
	ok = r && perfclock_ring_add_event(r, &a, ida, 1) == 0 &&
	     perfclock_ring_add_event(r, &b, idb, 1) == -EINVAL;
	b.sample_id_all = 0;
	a.sample_id_all = 0;
	perfclock_ring_free(r);
	r = perfclock_ring_new(&f, sizeof(f.u) + FAKE_DATA, NULL);
	ok = ok && r && perfclock_ring_add_event(r, &a, ida, 1) == 0 &&
	     perfclock_ring_add_event(r, &b, idb, 1) == 0;
	tap_ok(ok, "ring shared: PERF_SAMPLE_ID alone: refused where the sample_id trailers put it apart, accepted without sample_id_all");
	perfclock_ring_free(r);

	/* The first attr came without ids: a different layout is refused. */
	memset(&a, 0, sizeof(a));
	a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TIME;
	b = a;
	b.sample_type |= PERF_SAMPLE_IP;
	r = perfclock_ring_new(&f, sizeof(f.u) + FAKE_DATA, &a);
	tap_ok(r && perfclock_ring_add_event(r, &a, idb, 1) == 0 &&
	       perfclock_ring_add_event(r, &b, ida, 1) == -EINVAL,
	       "ring shared: same layout as perfclock_ring_new()'s attr is fine, another one needs every event's ids (-EINVAL)");
	perfclock_ring_free(r);
}

/* Each corruption must give -EBADMSG, no loop, no overread (ASan). */
void test_ring_corrupt(void)
{
	static struct fake_ring f;
	struct perfclock_ring_stats st;
	struct perfclock_ring *r;
	uint64_t t[16];
	int n, wrapped, err, k;
	const struct {
		const char *what;
		uint32_t size;
		uint64_t head_adj;	/* data_head beyond what is written */
	} cases[] = {
		{ "size 0", 0, 0 },
		{ "size smaller than a header (4)", 4, 0 },
		{ "size not a multiple of 8 (20)", 20, 0 },
		{ "size larger than what head says is there", 64, 0 },
		{ "size larger than the ring", 0, 0 },
	};

	for (k = 0; k < (int)(sizeof(cases) / sizeof(cases[0])); k++) {
		fake_init(&f, 0);
		r = perfclock_ring_new(&f, sizeof(f.u) + FAKE_DATA, NULL);
		if (!r)
			continue;
		fake_sample(&f, 1);
		if (k == 4) {
			/* header says 8 KiB > ring (4 KiB); head says so too */
			struct perf_event_header h = { PERF_RECORD_SAMPLE, 0,
						       8192 };

			memcpy(f.data + f.wpos, &h, sizeof(h));
			f.wpos += FAKE_DATA - 24;
		} else if (k == 3) {
			struct perf_event_header h = { PERF_RECORD_SAMPLE, 0,
						       64 };

			memcpy(f.data + f.wpos, &h, sizeof(h));
			f.wpos += 16;	/* only 16 bytes published */
		} else {
			struct perf_event_header h = { PERF_RECORD_SAMPLE, 0,
						       (uint16_t)cases[k].size };

			memcpy(f.data + f.wpos, &h, sizeof(h));
			f.wpos += 24;
		}
		fake_publish(&f);
		n = drain(r, t, 16, &wrapped, &err);
		perfclock_ring_get_stats(r, &st);
		tap_ok(n == 1 && err == -EBADMSG && st.errors == 1,
		       "ring: corrupt header (%s) is an error for the ring after the good record (n=%d err=%d)",
		       cases[k].what, n, err);
		/* Sticky until reset, then usable again. */
		n = drain(r, t, 16, &wrapped, &err);
		tap_ok(n == 0 && err, "ring: error is sticky (%s)", cases[k].what);
		perfclock_ring_reset(r);
		fake_sample(&f, 2);
		fake_publish(&f);
		n = drain(r, t, 16, &wrapped, &err);
		tap_ok(n == 1 && !err && t[0] == ~0ULL,
		       "ring: reset skips to head and reading resumes (%s)",
		       cases[k].what);
		perfclock_ring_free(r);
	}

	/* head - tail inconsistent: more than the ring, or behind. */
	fake_init(&f, 0);
	r = perfclock_ring_new(&f, sizeof(f.u) + FAKE_DATA, NULL);
	f.u.pg.data_head = FAKE_DATA + 8;
	tap_ok(r && perfclock_ring_read_begin(r) == -EBADMSG,
	       "ring: head more than a ring ahead of tail is an error");
	perfclock_ring_free(r);
	fake_init(&f, 4096);
	r = perfclock_ring_new(&f, sizeof(f.u) + FAKE_DATA, NULL);
	f.u.pg.data_head = 4000;
	tap_ok(r && perfclock_ring_read_begin(r) == -EBADMSG,
	       "ring: head behind tail is an error");
	perfclock_ring_free(r);
	fake_init(&f, 0);
	r = perfclock_ring_new(&f, sizeof(f.u) + FAKE_DATA, NULL);
	f.u.pg.data_head = 12;
	tap_ok(r && perfclock_ring_read_begin(r) == -EBADMSG,
	       "ring: a head that is not 8-byte aligned is an error");
	perfclock_ring_free(r);
}

