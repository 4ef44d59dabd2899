// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The library fuzzer's shared-ring modes (fuzz_ring.c picks them by
 * input[1] bits 5-7): perfclock_evring_open() on every online CPU with
 * 1-3 events routed into one ring per CPU (fake_perf.c stands in for
 * perf), then this file writes records into the rings as the kernel would
 * (samples of each event, kernel records with and without sample_id_all,
 * PERF_RECORD_LOST when a ring was full, LOST_SAMPLES, user types, ids no
 * event has, corrupt headers, records that wrap) and reads them back
 *
 *   DRAIN: with perfclock_evring_drain() into a copying queue, flushed
 *          below times the input picks; and a NOCOPY queue, which the
 *          drain must refuse (-EINVAL) touching nothing, and which takes
 *          pushes of the fuzzer's own copies;
 *   READER: with the threaded reader (reader threads drain while this
 *          thread writes; the merger runs on perfclock_reader_deliver()).
 *
 * Every record carries its serial number in header.misc, which the
 * library never interprets, and is kept here as written. Checked:
 *  - each delivered event is a record written, delivered once, with its
 *    bytes, size, time, ring and event (attr_idx) as written;
 *  - order: events not flagged LATE come in time order; a LATE one is
 *    below the last in-order time, by its lateness_ns;
 *  - the horizon: after flush_until(L) every queued record below L is
 *    delivered, and none at or above L was in it; the reader delivers
 *    below the limit it announced (on_limit), and its limits only rise;
 *  - the hand-off: a record published before the clock reached its stamp
 *    is never LATE (no thread horizon above the stamp can be read before
 *    the drain that takes it, THE HAND-OFF in evring_reader.c);
 *  - conservation: every record is delivered, or counted (LOST and
 *    LOST_SAMPLES sums, records without a time), or dropped by the reset
 *    that follows a corrupt record, exactly as written; the drain's,
 *    the reader's and the queue's counters agree.
 */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "fake_perf.h"
#include "fuzz_evring.h"

#define MAX_RECS	2048
#define MAX_RINGS	64
#define T0		(1ULL << 40)

enum kind { K_TIMED, K_UNTIMED, K_LOST, K_LOST_SAMPLES, K_CORRUPT };
enum state { S_RING, S_QUEUED, S_DONE, S_DROPPED };

struct rec {
	uint32_t ring, size, attr;
	uint8_t kind, state, strict, nocopy;
	uint32_t delivered;
	uint64_t time, lost;
	unsigned char bytes[8 * 24];
};

struct wring {
	struct perf_event_mmap_page *pg;
	unsigned char *data;
	uint64_t size, head;
	uint64_t pending_lost;	/* dropped for want of room, not said yet */
	int dead;		/* READER: a corrupt record, nothing after */
	uint64_t ids[3];
};

static struct {
	const uint8_t *in;
	size_t len, pos;
	int reader;
	uint32_t nr_attrs, nr_rings;
	struct perf_event_attr attrs[3];
	int mixed, sid_all;
	struct wring w[MAX_RINGS];
	struct rec recs[MAX_RECS];
	uint32_t nrec;
	/* the order of what was delivered */
	int have_last;
	uint64_t last;
	uint64_t delivered, late, forced;
	/* DRAIN: flushing below limit; READER: the announced limit */
	int in_flush, have_limit, stopping;
	uint64_t limit;
	/* the NOCOPY queue's own order and count */
	int nc_have_last;
	uint64_t nc_last, nc_pushed, nc_delivered;
	/* expected counters */
	uint64_t lost_records, lost, lost_samples, no_time, resets;
	struct perfclock *clk;
} F;

/* Say which check failed (a crash file alone does not), then crash. */
#define CHECK(c)	do {						\
	if (!(c)) {							\
		fprintf(stderr, "fuzz_evring.c:%d: %s\n", __LINE__, #c);	\
		__builtin_trap();					\
	}								\
} while (0)

static unsigned int next8(void)
{
	return F.pos < F.len ? F.in[F.pos++] : 0;
}

static unsigned int next16(void)
{
	unsigned int v = next8();

	return v | next8() << 8;
}

static void put64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static uint64_t clock_now(void)
{
	uint64_t ns = 0;

	CHECK(!perfclock_read(F.clk, &ns));
	return ns;
}

/* ---- delivery ---- */

static struct rec *lookup(const struct perfclock_event *ev)
{
	struct perf_event_header h;
	struct rec *r;

	CHECK(ev->data && ev->size >= sizeof(h));
	memcpy(&h, ev->data, sizeof(h));
	CHECK(h.misc < F.nrec);
	r = &F.recs[h.misc];
	CHECK(ev->size == r->size && !memcmp(ev->data, r->bytes, r->size));
	CHECK(ev->source == r->ring);
	return r;
}

static int deliver(void *arg, const struct perfclock_event *ev)
{
	struct rec *r = lookup(ev);

	(void)arg;
	CHECK(!r->delivered++);
	CHECK(r->state == S_QUEUED || (F.reader && r->state == S_RING));
	r->state = S_DONE;
	F.delivered++;
	if (ev->flags & PERFCLOCK_EVENT_UNTIMED) {
		CHECK(F.reader && r->kind == K_UNTIMED);
		return 0;
	}
	CHECK(r->kind == K_TIMED && ev->time == r->time);
	if (!F.reader)
		CHECK(ev->attr_idx == r->attr);
	if (ev->flags & PERFCLOCK_EVENT_LATE) {
		CHECK(F.have_last && ev->time < F.last &&
		      ev->lateness_ns == F.last - ev->time);
		/*
		 * Published before the clock reached its stamp: never late,
		 * unless the memory cap forced later ones out first.
		 */
		CHECK(!r->strict || F.forced);
		F.late++;
		return 0;
	}
	CHECK(!F.have_last || ev->time >= F.last);
	if (ev->flags & PERFCLOCK_EVENT_FORCED)
		F.forced++;
	F.have_last = 1;
	F.last = ev->time;
	/* below the horizon it was flushed at; forced ones go early */
	if (!(ev->flags & PERFCLOCK_EVENT_FORCED) && !F.stopping &&
	    (F.in_flush || F.reader))
		CHECK(F.have_limit && ev->time < F.limit);
	return 0;
}

static void on_limit(void *arg, uint64_t limit)
{
	(void)arg;
	CHECK(!F.have_limit || limit > F.limit);
	F.have_limit = 1;
	F.limit = limit;
}

/* The NOCOPY queue hands back the caller's own pointer. */
static int deliver_nocopy(void *arg, const struct perfclock_event *ev)
{
	struct rec *r = lookup(ev);

	(void)arg;
	CHECK(ev->data == r->bytes && r->nocopy);
	CHECK(!(ev->flags & PERFCLOCK_EVENT_LATE) ||
	      (F.nc_have_last && ev->time < F.nc_last));
	if (!(ev->flags & PERFCLOCK_EVENT_LATE)) {
		CHECK(!F.nc_have_last || ev->time >= F.nc_last);
		F.nc_have_last = 1;
		F.nc_last = ev->time;
	}
	r->nocopy = 0;
	F.nc_delivered++;
	return 0;
}

/* ---- the "kernel": records into the rings ---- */

static uint64_t room(struct wring *w)
{
	uint64_t tail = __atomic_load_n(&w->pg->data_tail, __ATOMIC_ACQUIRE);

	return w->size - (w->head - tail);
}

/* Copy in, wrapping at the end of the data area, and publish. */
static void publish(struct wring *w, const unsigned char *b, uint32_t size)
{
	uint64_t off = w->head & (w->size - 1), first = w->size - off;

	if (first > size)
		first = size;
	memcpy(w->data + off, b, first);
	memcpy(w->data, b + first, size - first);
	w->head += size;
	/* pairs with the reader's acquire load of data_head */
	__atomic_store_n(&w->pg->data_head, w->head, __ATOMIC_RELEASE);
}

static struct rec *rec_new(uint32_t ring, uint32_t kind)
{
	struct rec *r;

	if (F.nrec >= MAX_RECS)
		return NULL;
	r = &F.recs[F.nrec];
	memset(r, 0, sizeof(*r));
	r->ring = ring;
	r->kind = (uint8_t)kind;
	r->state = S_RING;
	return r;
}

/* Record header: serial in misc. */
static uint32_t hdr(struct rec *r, uint32_t type)
{
	struct perf_event_header h = {
		.type = type, .misc = (uint16_t)F.nrec, .size = 0,
	};

	memcpy(r->bytes, &h, sizeof(h));
	return sizeof(h);
}

/* struct sample_id at a kernel record's end, attr k's layout. */
static uint32_t trailer(struct rec *r, uint32_t off, uint32_t k,
			uint64_t id, uint64_t t)
{
	uint64_t st = F.attrs[k].sample_type;

	if (!F.sid_all)
		return off;
	if (st & PERF_SAMPLE_TID)
		put64(r->bytes + off, 0x1234), off += 8;
	put64(r->bytes + off, t), off += 8;
	if (st & PERF_SAMPLE_ID)
		put64(r->bytes + off, id), off += 8;
	if (st & PERF_SAMPLE_STREAM_ID)
		put64(r->bytes + off, 7), off += 8;
	if (st & PERF_SAMPLE_CPU)
		put64(r->bytes + off, r->ring), off += 8;
	if (st & PERF_SAMPLE_IDENTIFIER)
		put64(r->bytes + off, id), off += 8;
	return off;
}

/* Payload words from the input, after the header. */
static uint32_t payload(struct rec *r, uint32_t off, uint32_t words)
{
	uint32_t i;

	for (i = 0; i < words * 8; i++)
		r->bytes[off++] = (unsigned char)next8();
	return off;
}

/* Write what the input says into ring ri: 0, or -1 when out of input. */
static int write_record(uint32_t ri, uint64_t t, int strict_ok)
{
	struct wring *w = &F.w[ri];
	unsigned int sel = next8(), k = next8() % F.nr_attrs;
	uint32_t words = next8() % 8, off;
	uint64_t st = F.attrs[k].sample_type, id = w->ids[k];
	struct perf_event_header h;
	struct rec *r;
	int ring_has_ids = F.nr_attrs > 1 || (st & PERF_SAMPLE_ID);

	if (w->dead || F.pos >= F.len)
		return -1;
	/* The kernel says what it dropped first, when there is room. */
	if (w->pending_lost && (r = rec_new(ri, K_LOST))) {
		off = hdr(r, PERF_RECORD_LOST);
		put64(r->bytes + off, id), off += 8;
		put64(r->bytes + off, w->pending_lost), off += 8;
		off = trailer(r, off, k, id, t);
		if (room(w) < off)
			return 0;	/* still full: it says so later */
		r->size = off;
		r->lost = w->pending_lost;
		w->pending_lost = 0;
		goto out;
	}
	r = rec_new(ri, K_TIMED);
	if (!r)
		return -1;
	r->time = t;
	r->attr = k;
	switch (sel % 8) {
	case 0: case 1: case 2:		/* a sample of event k */
	case 3:				/* or of an id no event has */
		if (sel % 8 == 3 && ring_has_ids) {
			id += 1;
			/* mixed layouts: found by id, none: no time */
			if (F.mixed)
				r->kind = K_UNTIMED;
			r->attr = 0;
		}
		off = hdr(r, PERF_RECORD_SAMPLE);
		if (st & PERF_SAMPLE_IDENTIFIER)
			put64(r->bytes + off, id), off += 8;
		if (st & PERF_SAMPLE_IP)
			put64(r->bytes + off, 0xffffffff81000000ULL), off += 8;
		if (st & PERF_SAMPLE_TID)
			put64(r->bytes + off, 0x1234), off += 8;
		put64(r->bytes + off, t), off += 8;
		if (st & PERF_SAMPLE_ID)
			put64(r->bytes + off, id), off += 8;
		if (st & PERF_SAMPLE_STREAM_ID)
			put64(r->bytes + off, 7), off += 8;
		if (st & PERF_SAMPLE_CPU)
			put64(r->bytes + off, ri), off += 8;
		if (st & PERF_SAMPLE_PERIOD)
			put64(r->bytes + off, 1), off += 8;
		off = payload(r, off, words);
		break;
	case 4: case 5:			/* a kernel record */
		off = hdr(r, (uint32_t[]){ PERF_RECORD_MMAP, PERF_RECORD_COMM,
					   PERF_RECORD_EXIT, PERF_RECORD_FORK,
					   PERF_RECORD_SWITCH }[sel / 8 % 5]);
		off = payload(r, off, words + 1);
		off = trailer(r, off, k, id, t);
		if (!F.sid_all)
			r->kind = K_UNTIMED;
		break;
	case 6:				/* PERF_RECORD_LOST_SAMPLES */
		r->kind = K_LOST_SAMPLES;
		off = hdr(r, PERF_RECORD_LOST_SAMPLES);
		r->lost = next8();
		put64(r->bytes + off, r->lost), off += 8;
		off = trailer(r, off, k, id, t);
		break;
	default:			/* a user type: no time */
		r->kind = K_UNTIMED;
		/* PERF_RECORD_USER_TYPE_START, not in every uapi header */
		off = hdr(r, 64 + sel / 8 % 4);
		off = payload(r, off, words + 1);
		off = trailer(r, off, k, id, t);
		break;
	}
	if (r->kind != K_TIMED)
		r->time = 0;
	if (room(w) < off) {
		/* full: the kernel drops it, and says so later */
		w->pending_lost++;
		return 0;
	}
	r->size = off;
out:
	memcpy(&h, r->bytes, sizeof(h));
	h.size = (uint16_t)r->size;
	memcpy(r->bytes, &h, sizeof(h));
	F.nrec++;
	publish(w, r->bytes, r->size);
	/*
	 * Published before the clock reached the stamp: every horizon above
	 * it is read after this, so is the drain that follows it.
	 */
	if (strict_ok && r->kind == K_TIMED && clock_now() < t)
		r->strict = 1;
	return 0;
}

/* The same record many times: rings fill, the kernel drops and says so. */
static void burst(uint32_t ri, uint64_t t)
{
	unsigned int n = 8 + next8() % 64;
	size_t pos = F.pos;

	while (n--) {
		F.pos = pos;
		if (write_record(ri, t, 0))
			break;
	}
}

/* A header no reader may follow (size below a header). */
static void write_corrupt(uint32_t ri)
{
	struct wring *w = &F.w[ri];
	struct perf_event_header h = {
		.type = PERF_RECORD_SAMPLE, .misc = (uint16_t)F.nrec,
		.size = (uint16_t)(next8() % 8),
	};
	struct rec *r;

	if (w->dead || room(w) < 8 || !(r = rec_new(ri, K_CORRUPT)))
		return;
	r->size = 8;
	memcpy(r->bytes, &h, sizeof(h));
	F.nrec++;
	publish(w, r->bytes, 8);
	if (F.reader)
		w->dead = 1;	/* what the reset drops is then exact */
}

/*
 * What a read of every ring up to its head does, as the library is
 * documented to: records after a corrupt one are dropped with it (the
 * ring reset), LOST and LOST_SAMPLES and records without a time are
 * counted, the rest queued. Returns the records queued.
 */
static uint64_t expect_read(void)
{
	uint64_t queued = 0;
	uint32_t ri, i;

	for (ri = 0; ri < F.nr_rings; ri++) {
		int broken = 0;

		for (i = 0; i < F.nrec; i++) {
			struct rec *r = &F.recs[i];

			if (r->ring != ri || r->state != S_RING)
				continue;
			if (broken || r->kind == K_CORRUPT) {
				if (!broken)
					F.resets++;
				broken = 1;
				r->state = S_DROPPED;
				continue;
			}
			r->state = r->kind == K_TIMED ? S_QUEUED : S_DONE;
			if (r->kind == K_TIMED)
				queued++;
			else if (r->kind == K_UNTIMED)
				F.no_time++;
			else if (r->kind == K_LOST)
				F.lost_records++, F.lost += r->lost;
			else
				F.lost_samples += r->lost;
		}
	}
	return queued;
}

/* ---- setup ---- */

static const uint64_t extra[] = {
	PERF_SAMPLE_IP, PERF_SAMPLE_TID, PERF_SAMPLE_ID, PERF_SAMPLE_STREAM_ID,
	PERF_SAMPLE_CPU, PERF_SAMPLE_PERIOD,
};

static struct perfclock_evring *open_rings(void)
{
	struct perfclock_evring_config cfg;
	struct perf_event_attr a[3];
	struct perfclock_evring *er;
	uint32_t k, i, bits;

	F.nr_attrs = 1 + next8() % 3;
	F.sid_all = next8() & 1;
	memset(a, 0, sizeof(a));
	for (k = 0; k < F.nr_attrs; k++) {
		a[k].type = PERF_TYPE_SOFTWARE;
		a[k].config = PERF_COUNT_SW_DUMMY;
		a[k].sample_type = PERF_SAMPLE_TIME;
		a[k].sample_id_all = F.sid_all;
		a[k].disabled = 1;
		bits = next8();
		for (i = 0; i < sizeof(extra) / sizeof(extra[0]); i++)
			if (bits & (1u << i))
				a[k].sample_type |= extra[i];
	}
	perfclock_evring_config_init(&cfg);
	cfg.attrs = a;
	cfg.nr_attrs = F.nr_attrs;
	cfg.data_pages = 1u << (next8() % 2);
	fake_perf_enable(1);
	er = perfclock_evring_open(F.clk, &cfg);
	fake_perf_enable(0);
	/* the fake cannot fail but for memory or fds */
	CHECK(er || errno == ENOMEM || errno == EMFILE);
	if (!er)
		return NULL;
	F.nr_rings = (uint32_t)perfclock_evring_nr_rings(er);
	CHECK(F.nr_rings > 0);
	if (F.nr_rings > MAX_RINGS) {
		perfclock_evring_close(er);
		return NULL;
	}
	/* As opened: PERF_SAMPLE_IDENTIFIER added to each of several. */
	for (k = 0; k < F.nr_attrs; k++) {
		F.attrs[k] = a[k];
		if (F.nr_attrs > 1)
			F.attrs[k].sample_type |= PERF_SAMPLE_IDENTIFIER;
		if (F.attrs[k].sample_type != F.attrs[0].sample_type)
			F.mixed = 1;
	}
	for (i = 0; i < F.nr_rings; i++) {
		struct wring *w = &F.w[i];
		int fd0 = perfclock_evring_fd(er, (int)i, 0);
		size_t len = 0;

		w->pg = fake_perf_base(fd0, &len);
		CHECK(w->pg && len == (size_t)(1 + cfg.data_pages) * 4096);
		w->data = (unsigned char *)w->pg + 4096;
		w->size = len - 4096;
		/* the kernel's header page of a 4.1+ kernel */
		w->pg->data_offset = 4096;
		w->pg->data_size = w->size;
		for (k = 0; k < F.nr_attrs; k++) {
			int fd = perfclock_evring_fd(er, (int)i, (int)k);

			/* the others write into fd0's ring */
			CHECK(!k || fake_perf_output(fd) == fd0);
			w->ids[k] = fake_perf_id(fd);
		}
	}
	return er;
}

/* ---- DRAIN ---- */

static void drain_once(struct perfclock_evring *er, struct perfclock_queue *q,
		       struct perfclock_drain_stats *st)
{
	struct perfclock_drain_stats before = *st;
	uint64_t want = expect_read();
	int64_t n = perfclock_evring_drain(er, q, st);

	CHECK(n >= 0 && (uint64_t)n == want);
	CHECK(st->pushed - before.pushed == want);
	CHECK(st->lost_records == F.lost_records && st->lost == F.lost &&
	      st->lost_samples == F.lost_samples && st->no_time == F.no_time &&
	      st->resets == F.resets);
}

/*
 * A NOCOPY queue would keep pointers into ring space the drain hands
 * back: refused, before anything is read. Nothing moves, nothing counts.
 */
static void drain_nocopy(struct perfclock_evring *er,
			 struct perfclock_queue *qn, struct perfclock_queue *q)
{
	struct perfclock_queue_stats a, b, qa, qb;
	struct perfclock_drain_stats st, st0;
	uint64_t tails[MAX_RINGS], heads[MAX_RINGS];
	uint32_t i;

	memset(&st, 0xa5, sizeof(st));
	st0 = st;
	for (i = 0; i < F.nr_rings; i++) {
		tails[i] = F.w[i].pg->data_tail;
		heads[i] = F.w[i].pg->data_head;
	}
	perfclock_queue_get_stats(qn, &a);
	perfclock_queue_get_stats(q, &qa);
	CHECK(perfclock_evring_drain(er, qn, &st) == -EINVAL);
	CHECK(perfclock_evring_drain(er, qn, NULL) == -EINVAL);
	CHECK(perfclock_evring_drain(er, NULL, &st) == -EINVAL);
	CHECK(perfclock_evring_drain(NULL, q, &st) == -EINVAL);
	CHECK(!memcmp(&st, &st0, sizeof(st)));
	for (i = 0; i < F.nr_rings; i++)
		CHECK(tails[i] == F.w[i].pg->data_tail &&
		      heads[i] == F.w[i].pg->data_head);
	perfclock_queue_get_stats(qn, &b);
	perfclock_queue_get_stats(q, &qb);
	CHECK(!memcmp(&a, &b, sizeof(a)) && !memcmp(&qa, &qb, sizeof(qa)));
}

/* Push the newest timed record's bytes, the fuzzer's own, uncopied. */
static void push_nocopy(struct perfclock_queue *qn)
{
	struct rec *r;
	int ret;

	if (!F.nrec)
		return;
	r = &F.recs[F.nrec - 1];
	if (r->kind != K_TIMED || r->nocopy || r->ring >= F.nr_rings)
		return;
	r->nocopy = 1;
	ret = perfclock_queue_push(qn, r->ring, r->time, r->bytes, r->size);
	CHECK(ret == 0 || ret == -ENOMEM);
	if (ret)
		r->nocopy = 0;
	else
		F.nc_pushed++;
}

static void flush_below(struct perfclock_queue *q, uint64_t limit)
{
	uint64_t d0 = F.delivered, late0 = F.late;
	uint32_t i;
	int64_t n;

	F.in_flush = 1;
	F.have_limit = 1;
	F.limit = limit;
	n = perfclock_queue_flush_until(q, limit);
	F.in_flush = 0;
	CHECK(n >= 0 && (uint64_t)n == F.delivered - d0 - (F.late - late0));
	/* nothing queued below the limit stays behind */
	for (i = 0; i < F.nrec; i++)
		CHECK(F.recs[i].state != S_QUEUED || F.recs[i].time >= limit);
}

static void run_drain(struct perfclock_evring *er)
{
	struct perfclock_queue_config qc;
	struct perfclock_queue *q, *qn;
	struct perfclock_drain_stats st;
	struct perfclock_queue_stats qs;
	uint32_t i;

	perfclock_queue_config_init(&qc);
	qc.nr_sources = F.nr_rings;
	qc.deliver = deliver;
	/* sometimes a cap small enough to force events out early */
	if (next8() & 1)
		qc.mem_cap_bytes = 4096;
	q = perfclock_queue_new(&qc);
	qc.flags = PERFCLOCK_QUEUE_NOCOPY;
	qc.deliver = deliver_nocopy;
	qc.mem_cap_bytes = PERFCLOCK_QUEUE_DEFAULT_MEM_CAP;
	qn = perfclock_queue_new(&qc);
	if (!q || !qn)
		goto out;
	memset(&st, 0, sizeof(st));
	while (F.pos < F.len) {
		unsigned int op = next8();
		uint32_t ri = (op >> 3) % F.nr_rings;

		switch (op & 7) {
		case 0: case 1: case 2:
			write_record(ri, T0 + next16(), 0);
			break;
		case 3:
			burst(ri, T0 + next16());
			break;
		case 4:
			drain_once(er, q, &st);
			break;
		case 5:
			flush_below(q, T0 + next16());
			break;
		case 6:
			drain_nocopy(er, qn, q);
			push_nocopy(qn);
			if (op & 8)
				CHECK(perfclock_queue_flush_until(qn, T0 + next16()) >= 0);
			break;
		case 7:
			write_corrupt(ri);
			break;
		}
	}
	drain_once(er, q, &st);
	CHECK(perfclock_queue_flush_all(q) >= 0);
	CHECK(perfclock_queue_flush_all(qn) >= 0);
	for (i = 0; i < F.nrec; i++) {
		struct rec *r = &F.recs[i];

		CHECK(r->state == S_DONE || r->state == S_DROPPED);
		CHECK(r->delivered == (r->kind == K_TIMED && r->state == S_DONE));
		CHECK(!r->nocopy);
	}
	CHECK(F.nc_delivered == F.nc_pushed);
	perfclock_queue_get_stats(q, &qs);
	CHECK(qs.pushed == st.pushed && qs.queued == 0 &&
	      qs.emitted + qs.late == F.delivered && qs.late == F.late);
out:
	perfclock_queue_free(qn);
	perfclock_queue_free(q);
}

/* ---- READER ---- */

static void run_reader(struct perfclock_evring *er)
{
	struct perfclock_reader_config rc;
	struct perfclock_reader_stats rs;
	struct perfclock_reader *rd;
	uint64_t records = 0, untimed = 0, sum = 0;
	uint32_t i;
	int64_t n;

	perfclock_reader_config_init(&rc);
	rc.deliver = deliver;
	rc.on_limit = on_limit;
	rc.max_threads = 1 + next8() % 3;
	rc.period_us = 20 + next8() * 4;
	if (next8() & 1)
		rc.queue_mem_cap_bytes = 8192;	/* forced, held cap */
	rd = perfclock_reader_start(F.clk, er, &rc);
	CHECK(rd || errno == ENOMEM || errno == EAGAIN);
	if (!rd)
		return;
	while (F.pos < F.len) {
		unsigned int op = next8();
		uint32_t ri = (op >> 3) % F.nr_rings;
		uint64_t now = clock_now();

		switch (op & 7) {
		case 0:			/* stamped a while ago */
			write_record(ri, now - next8() * 1000ULL, 0);
			break;
		case 1:
			burst(ri, now - next8() * 1000ULL);
			break;
		case 2: case 3:		/* stamped ahead: must not be late */
			write_record(ri, now + 100000 + next8() * 10000ULL, 1);
			break;
		case 4:
			n = perfclock_reader_deliver(rd, 0);
			CHECK(n >= 0);
			sum += (uint64_t)n;
			break;
		case 5:
			sched_yield();
			break;
		case 6:
			n = perfclock_reader_deliver(rd, 1);
			CHECK(n >= 0);
			sum += (uint64_t)n;
			break;
		case 7:
			write_corrupt(ri);
			break;
		}
	}
	F.stopping = 1;
	n = perfclock_reader_stop(rd);
	CHECK(n >= 0);
	/* what the calls said they delivered is what was */
	CHECK(sum + (uint64_t)n == F.delivered);
	CHECK(perfclock_reader_stop(rd) == 0);
	/* Everything is read now: the same bookkeeping as a drain's. */
	expect_read();
	for (i = 0; i < F.nrec; i++) {
		struct rec *r = &F.recs[i];
		int want = (r->kind == K_TIMED || r->kind == K_UNTIMED) &&
			   r->state != S_DROPPED;

		CHECK(r->delivered == (uint32_t)want);
		records += r->kind == K_TIMED && want;
		untimed += r->kind == K_UNTIMED && want;
	}
	/* a corrupt ring is reset once: nothing was written after it */
	for (i = 0; i < F.nr_rings; i++) {
		struct perfclock_reader_ring_stats s;

		CHECK(!perfclock_reader_get_ring_stats(rd, (int)i, &s));
		CHECK(s.errors == (uint64_t)F.w[i].dead);
		records -= s.records;
		untimed -= s.untimed;
	}
	CHECK(!perfclock_reader_get_stats(rd, &rs));
	CHECK(!records && !untimed);
	CHECK(rs.records == rs.queue.pushed);
	CHECK(rs.lost_records == F.lost_records && rs.lost == F.lost);
	CHECK(rs.lost_samples == F.lost_samples);
	CHECK(rs.delivered == F.delivered);
	CHECK(rs.queue.late == F.late && rs.queue.queued == 0);
	perfclock_reader_free(rd);
}

int fuzz_evring(const uint8_t *in, size_t len, int reader)
{
	static struct perfclock *clk;
	struct perfclock_evring *er;

	if (!clk)
		clk = perfclock_open_clockid(CLOCK_MONOTONIC);
	if (!clk)
		return 0;
	memset(&F, 0, sizeof(F));
	F.in = in;
	F.len = len;
	F.reader = reader;
	F.clk = clk;
	er = open_rings();
	if (!er)
		goto out;
	if (reader)
		run_reader(er);
	else
		run_drain(er);
	perfclock_evring_close(er);
out:
	fake_perf_reset();
	return 0;
}
