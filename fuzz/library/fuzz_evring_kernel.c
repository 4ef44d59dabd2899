// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The library fuzzer's "kernel" (fuzz_evring.c says what is checked):
 * perfclock_evring_open() on the fake perf (fake_perf.c), then records
 * written into its rings as the kernel writes them: samples of each
 * event, kernel records with and without sample_id_all, PERF_RECORD_LOST
 * when a ring was full, LOST_SAMPLES, user types, ids no event has,
 * corrupt headers, records that wrap; and what a read of them all must
 * find (fz_expect_read()).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "fake_perf.h"
#include "fuzz_evring_internal.h"

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
int fz_write_record(uint32_t ri, uint64_t t, int strict_ok)
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
void fz_burst(uint32_t ri, uint64_t t)
{
	unsigned int n = 8 + next8() % 64;
	size_t pos = F.pos;

	while (n--) {
		F.pos = pos;
		if (fz_write_record(ri, t, 0))
			break;
	}
}

/* A header no reader may follow (size below a header). */
void fz_write_corrupt(uint32_t ri)
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
uint64_t fz_expect_read(void)
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

struct perfclock_evring *fz_open_rings(void)
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
