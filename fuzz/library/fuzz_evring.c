// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The library fuzzer's shared-ring modes (fuzz_ring.c picks them by
 * input[1] bits 5-7): perfclock_evring_open() on every online CPU with
 * 1-3 events routed into one ring per CPU (fake_perf.c stands in for
 * perf), then fuzz_evring_kernel.c writes records into the rings as the
 * kernel would (samples of each event, kernel records with and without
 * sample_id_all, PERF_RECORD_LOST when a ring was full, LOST_SAMPLES, user
 * types, ids no event has, corrupt headers, records that wrap) and this
 * file reads them back
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
#include "fuzz_evring_internal.h"

/* The run's state (fuzz_evring_internal.h). */
struct fuzz_evring_state F;

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

/* ---- DRAIN ---- */

static void drain_once(struct perfclock_evring *er, struct perfclock_queue *q,
		       struct perfclock_drain_stats *st)
{
	struct perfclock_drain_stats before = *st;
	uint64_t want = fz_expect_read();
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
			fz_write_record(ri, T0 + next16(), 0);
			break;
		case 3:
			fz_burst(ri, T0 + next16());
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
			fz_write_corrupt(ri);
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
			fz_write_record(ri, now - next8() * 1000ULL, 0);
			break;
		case 1:
			fz_burst(ri, now - next8() * 1000ULL);
			break;
		case 2: case 3:		/* stamped ahead: must not be late */
			fz_write_record(ri, now + 100000 + next8() * 10000ULL, 1);
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
			fz_write_corrupt(ri);
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
	fz_expect_read();
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
	er = fz_open_rings();
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
