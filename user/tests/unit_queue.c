// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of queue.c and queue_mem.c (part of test_unit): the queue's
 * mechanics (order, stragglers, flush_until, memory cap, callbacks).
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
#include "synth.h"
#include "unit.h"

/* ------------------------------------------------------------------ */
/* Queue mechanics                                                     */
/* ------------------------------------------------------------------ */

struct collect {
	uint64_t t[256];
	uint32_t flags[256];
	uint32_t id[256];
	int n;
	int stop_at;
};

static int collect_cb(void *arg, const struct perfclock_event *ev)
{
	struct collect *c = arg;

	if (c->stop_at && c->n == c->stop_at)
		return -EINTR;
	if (c->n < 256) {
		c->t[c->n] = ev->time;
		c->flags[c->n] = ev->flags;
		c->id[c->n] = 0;
		if (ev->size == 4)
			memcpy(&c->id[c->n], ev->data, 4);
	}
	c->n++;
	return 0;
}

static struct perfclock_queue *mkq(uint32_t nsrc, struct collect *c)
{
	struct perfclock_queue_config cfg;

	perfclock_queue_config_init(&cfg);
	cfg.nr_sources = nsrc;
	cfg.deliver = collect_cb;
	cfg.arg = c;
	memset(c, 0, sizeof(*c));
	return perfclock_queue_new(&cfg);
}

static void push_id(struct perfclock_queue *q, uint32_t src, uint64_t t,
		    uint32_t id)
{
	perfclock_queue_push(q, src, t, &id, 4);
}

void test_queue_basic(void)
{
	struct perfclock_queue_stats st;
	struct perfclock_queue_config cfg;
	struct perfclock_queue *q;
	struct collect c;
	uint32_t id;
	int i, ok;
	/* source 0 in order; source 1 with records nested out of order */
	const struct { uint32_t s; uint64_t t; } in[] = {
		{ 0, 10 }, { 1, 30 }, { 1, 20 }, { 0, 40 }, { 1, 25 },
		{ 1, 50 }, { 1, 45 }, { 0, 45 }, { 0, 5 + 40 }, { 1, 60 },
	};
	const uint64_t want[] = { 10, 20, 25, 30, 40, 45, 45, 45, 50, 60 };

	perfclock_queue_config_init(&cfg);
	cfg.nr_sources = 0;
	cfg.deliver = collect_cb;
	errno = 0;
	tap_ok(!perfclock_queue_new(&cfg) && errno == EINVAL,
	       "queue: zero sources is EINVAL");
	cfg.nr_sources = 1;
	cfg.flags = 1U << 7;
	errno = 0;
	tap_ok(!perfclock_queue_new(&cfg) && errno == EINVAL,
	       "queue: an unknown flag is EINVAL");
	cfg.flags = 0;
	cfg.deliver = NULL;
	errno = 0;
	tap_ok(!perfclock_queue_new(&cfg) && errno == EINVAL,
	       "queue: no delivery callback is EINVAL");

	q = mkq(2, &c);
	if (!tap_ok(q != NULL, "queue: created"))
		return;
	tap_ok(perfclock_queue_push(q, 2, 1, &id, 4) == -EINVAL,
	       "queue: push to a source out of range is -EINVAL");
	tap_ok(perfclock_queue_flush_until(NULL, 1) == -EINVAL &&
	       perfclock_queue_flush_all(NULL) == -EINVAL,
	       "queue: flushing NULL is -EINVAL");
	for (i = 0; i < 10; i++)
		push_id(q, in[i].s, in[i].t, (uint32_t)i);
	perfclock_queue_get_stats(q, &st);
	tap_ok(st.out_of_order_in_source == 2 && st.queued == 10,
	       "queue: out-of-order pushes within a source are detected (%llu)",
	       (unsigned long long)st.out_of_order_in_source);
	perfclock_queue_flush_all(q);
	ok = c.n == 10;
	for (i = 0; ok && i < 10; i++)
		ok = c.t[i] == want[i];
	tap_ok(ok, "queue: records out of order within a source come out sorted");
	/* ties keep push order: the three 45s are ids 6, 7, 8 */
	tap_ok(c.id[5] == 6 && c.id[6] == 7 && c.id[7] == 8,
	       "queue: equal timestamps keep push order");
	perfclock_queue_get_stats(q, &st);
	tap_ok(st.queued == 0 && st.mem_bytes == 0 && st.emitted == 10,
	       "queue: empty after flush_all, memory accounting back to zero");
	perfclock_queue_free(q);
}

/* flush_until: strictly below, in order, late and below-horizon counts. */
void test_queue_flush_until(void)
{
	struct perfclock_queue_stats st;
	struct perfclock_queue *q;
	struct collect c;
	int64_t n;
	int i, ok;

	q = mkq(3, &c);
	for (i = 98; i <= 101; i++)
		push_id(q, (uint32_t)i % 3, (uint64_t)i, (uint32_t)i);
	n = perfclock_queue_flush_until(q, 100);
	tap_ok(n == 2 && c.n == 2 && c.t[0] == 98 && c.t[1] == 99,
	       "flush_until: emits strictly below the limit; an event AT the limit stays (%lld emitted)",
	       (long long)n);
	n = perfclock_queue_flush_until(q, 100);
	tap_ok(n == 0 && c.n == 2,
	       "flush_until: the same limit again emits nothing");

	/* Ties across sources and a straggler: (time, push order). */
	push_id(q, 2, 105, 1);
	push_id(q, 0, 103, 2);
	push_id(q, 1, 103, 3);
	push_id(q, 0, 102, 4);	/* below source 0's 103: a straggler */
	push_id(q, 2, 103, 5);
	n = perfclock_queue_flush_until(q, 104);
	ok = n == 6 && c.n == 8 && c.t[2] == 100 && c.t[3] == 101 &&
	     c.t[4] == 102 && c.id[4] == 4;
	tap_ok(ok, "flush_until: emits in time order across sources and stragglers (%lld emitted)",
	       (long long)n);
	tap_ok(c.t[5] == 103 && c.id[5] == 2 && c.t[6] == 103 &&
	       c.id[6] == 3 && c.t[7] == 103 && c.id[7] == 5,
	       "flush_until: equal times keep push order across sources (ids 2, 3, 5)");

	/* 103 is the last emitted, 104 the limit. */
	push_id(q, 1, 103, 6);	/* below the limit, not below the last emitted */
	perfclock_queue_get_stats(q, &st);
	tap_ok(st.late == 0 && st.below_horizon == 1 && st.queued == 2,
	       "flush_until: a push below the last limit but not below the last emitted is below_horizon, not late, and stays queued");
	push_id(q, 1, 60, 7);
	perfclock_queue_get_stats(q, &st);
	tap_ok(st.late == 1 && st.worst_lateness_ns == 43 &&
	       st.below_horizon == 2 && c.n == 9 &&
	       (c.flags[8] & PERFCLOCK_EVENT_LATE) && c.t[8] == 60 &&
	       c.id[8] == 7,
	       "flush_until: a push below the last emitted is delivered at once, flagged LATE, counted with its lateness (43 ns)");
	tap_ok(perfclock_queue_flush_until(q, 10) == 0,
	       "flush_until: a limit below an earlier one is no error and emits nothing here");
	perfclock_queue_get_stats(q, &st);
	tap_ok(st.last_limit == 104 && st.flushes == 4 && st.last_emitted == 103,
	       "flush_until: stats keep the highest limit (%llu), the flushes (%llu), the last emitted time",
	       (unsigned long long)st.last_limit, (unsigned long long)st.flushes);
	n = perfclock_queue_flush_all(q);
	perfclock_queue_get_stats(q, &st);
	tap_ok(n == 2 && c.t[9] == 103 && c.id[9] == 6 && c.t[10] == 105 &&
	       st.queued == 0 && st.emitted + st.late == st.pushed,
	       "flush_all: emits the rest in order; everything pushed delivered once");
	perfclock_queue_free(q);

	/* The top of the range: UINT64_MAX is never below a limit. */
	q = mkq(1, &c);
	push_id(q, 0, UINT64_MAX - 1, 1);
	push_id(q, 0, UINT64_MAX, 2);
	tap_ok(perfclock_queue_flush_until(q, UINT64_MAX) == 1 &&
	       perfclock_queue_flush_all(q) == 1 && c.n == 2,
	       "flush_until(UINT64_MAX) leaves an event at UINT64_MAX to flush_all");
	perfclock_queue_free(q);

	/* Callback stop. */
	q = mkq(1, &c);
	c.stop_at = 2;
	for (i = 0; i < 5; i++)
		push_id(q, 0, (uint64_t)i, (uint32_t)i);
	tap_ok(perfclock_queue_flush_until(q, 1000) == -EINTR,
	       "queue: a callback's error stops the flush and is returned");
	perfclock_queue_get_stats(q, &st);
	c.stop_at = 0;
	tap_ok(st.queued == 2 && perfclock_queue_flush_all(q) == 2,
	       "queue: events not delivered stay queued (%llu)",
	       (unsigned long long)st.queued);
	perfclock_queue_free(q);
}

void test_queue_memcap(void)
{
	struct perfclock_queue_config cfg;
	struct perfclock_queue_stats st;
	struct perfclock_queue *q;
	struct synth_rec rec;
	uint32_t i, id;
	int ok = 1;

	synth_rec_init(&rec, 1000);
	perfclock_queue_config_init(&cfg);
	cfg.nr_sources = 4;
	cfg.deliver = synth_rec_deliver;
	cfg.arg = &rec;
	cfg.mem_cap_bytes = 4096;
	q = perfclock_queue_new(&cfg);
	/* Nothing is ever flushed: only the cap can emit. Source 3 lags by 500. */
	for (i = 0; i < 1000; i++) {
		id = i;
		if (perfclock_queue_push(q, i % 4,
					 1000 + i - (i % 4 == 3 ? 500 : 0),
					 &id, 4))
			ok = 0;
		perfclock_queue_get_stats(q, &st);
		if (st.mem_bytes > cfg.mem_cap_bytes)
			ok = 0;
	}
	perfclock_queue_get_stats(q, &st);
	tap_ok(ok && st.forced > 0 && st.mem_peak_bytes <= 4096,
	       "queue: memory cap holds (peak %llu <= 4096) by force-flushing the oldest (%llu forced)",
	       (unsigned long long)st.mem_peak_bytes,
	       (unsigned long long)st.forced);
	rec.in_final = 1;
	perfclock_queue_flush_all(q);
	perfclock_queue_get_stats(q, &st);
	tap_ok(synth_rec_missing(&rec) == 0 && rec.unsorted == 0 &&
	       rec.late == st.late && rec.forced == st.forced && !rec.bad_late,
	       "queue: under the cap nothing is lost, in-order output sorted, late events (%llu) all flagged",
	       (unsigned long long)st.late);
	perfclock_queue_free(q);
	synth_rec_free(&rec);

	/*
	 * The callback fails during a forced flush: the push still queues
	 * its event (issue 13: it used to be lost) and returns the error.
	 */
	{
		struct collect c;
		int pushes = 0, errs = 0, k;

		memset(&c, 0, sizeof(c));
		perfclock_queue_config_init(&cfg);
		cfg.nr_sources = 1;
		cfg.deliver = collect_cb;
		cfg.arg = &c;
		cfg.mem_cap_bytes = 256;
		q = perfclock_queue_new(&cfg);
		c.stop_at = 3;
		for (k = 0; k < 20; k++) {
			id = (uint32_t)k;
			if (perfclock_queue_push(q, 0, 100 + (uint64_t)k, &id, 4) == -EINTR)
				errs++;
			pushes++;
			if (errs)
				break;
		}
		perfclock_queue_get_stats(q, &st);
		c.stop_at = 0;
		ok = errs == 1 && st.pushed == (uint64_t)pushes &&
		     st.emitted + st.queued == st.pushed;
		ok = ok && perfclock_queue_flush_all(q) == (int64_t)st.queued;
		/* the event handed to the failing call counts as delivered */
		tap_ok(ok && c.n == pushes - 1 &&
		       c.id[c.n - 1] == (uint32_t)pushes - 1,
		       "queue: a callback failing in a forced flush: the push returns its error, and its event is still queued and delivered (%d pushed, %d taken by the callback + 1 refused)",
		       pushes, c.n);
		perfclock_queue_free(q);
	}
}

/*
 * Issue 13: "64 sources with a 1 MiB cap retained 33 MiB". The cap now
 * holds what the queue allocates, and memory follows usage down. Each
 * source in turn gets a backlog of 20000 16-byte events (960 KB queued,
 * under the cap), flushed before the next source's: the per-source
 * arrays used to keep every backlog's size. Measured twice: the queue's
 * own mem_retained_bytes, and malloc's bytes in use (mallinfo2(), when
 * the allocator reports it; not under ASan or valgrind).
 */
struct count_cb {
	uint64_t n, forced, unsorted, last;
};

static int count_deliver(void *arg, const struct perfclock_event *ev)
{
	struct count_cb *c = arg;

	if (c->n && ev->time < c->last && !(ev->flags & PERFCLOCK_EVENT_LATE))
		c->unsorted++;
	c->last = ev->time;
	c->n++;
	c->forced += !!(ev->flags & PERFCLOCK_EVENT_FORCED);
	return 0;
}

static long malloc_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	/* heap in use plus mmap()ed blocks (large arrays) */
	return (long)(mi.uordblks + mi.hblkhd);
}

void test_queue_memcap_retained(void)
{
	const uint64_t cap = 1 << 20;
	struct perfclock_queue_config cfg;
	struct perfclock_queue_stats st;
	struct perfclock_queue *q;
	struct count_cb c;
	unsigned char rec[16];
	uint64_t t = 1000, pushed = 0, rest_burst, rest_trickle;
	long base = malloc_in_use(), m_burst = 0, m_peak = 0, m;
	uint32_t src, k;
	int r;

	memset(&c, 0, sizeof(c));
	memset(rec, 0x5a, sizeof(rec));
	perfclock_queue_config_init(&cfg);
	cfg.nr_sources = 64;
	cfg.deliver = count_deliver;
	cfg.arg = &c;
	cfg.mem_cap_bytes = cap;
	q = perfclock_queue_new(&cfg);
	base = malloc_in_use();
	for (src = 0; src < 64; src++) {
		for (k = 0; k < 20000; k++, pushed++)
			perfclock_queue_push(q, src, t++, rec, sizeof(rec));
		m = malloc_in_use() - base;
		if (m > m_peak)
			m_peak = m;
		perfclock_queue_flush_until(q, t);
	}
	perfclock_queue_get_stats(q, &st);
	rest_burst = st.mem_retained_bytes;
	m_burst = malloc_in_use() - base;
	tap_ok(st.mem_retained_peak_bytes <= cap &&
	       (base <= 0 || m_peak <= (long)cap + 64 * 1024),
	       "queue: 64 sources, 1 MiB cap, a 960 KB backlog on each in turn: allocated at most %llu bytes (malloc says %ld, retained at rest %llu)",
	       (unsigned long long)st.mem_retained_peak_bytes, m_peak,
	       (unsigned long long)rest_burst);

	/* Usage drops: one event per source per round. */
	for (r = 0; r < 200; r++) {
		for (src = 0; src < 64; src++, pushed++)
			perfclock_queue_push(q, src, t++, rec, sizeof(rec));
		perfclock_queue_flush_until(q, t - 64);
	}
	perfclock_queue_get_stats(q, &st);
	rest_trickle = st.mem_retained_bytes;
	m = malloc_in_use() - base;
	tap_ok(rest_trickle <= 128 * 1024 && (base <= 0 || m <= 192 * 1024),
	       "queue: when usage drops to 64 events a round, memory follows it down: %llu -> %llu bytes retained (malloc %ld -> %ld)",
	       (unsigned long long)rest_burst,
	       (unsigned long long)rest_trickle, m_burst, m);
	perfclock_queue_flush_all(q);
	perfclock_queue_get_stats(q, &st);
	tap_ok(c.n == pushed && st.emitted == pushed && !c.unsorted &&
	       st.late == 0 && c.forced == st.forced,
	       "queue: ... and all %llu events delivered once, in order, %llu of them forced",
	       (unsigned long long)pushed, (unsigned long long)st.forced);
	perfclock_queue_free(q);

	/* The cap under pressure: sizes of every class, nothing flushed. */
	perfclock_queue_config_init(&cfg);
	cfg.nr_sources = 64;
	cfg.deliver = count_deliver;
	cfg.arg = &c;
	cfg.mem_cap_bytes = cap;
	memset(&c, 0, sizeof(c));
	q = perfclock_queue_new(&cfg);
	{
		static unsigned char big[65536];
		uint64_t seed = 3;

		for (k = 0; k < 200000; k++) {
			uint32_t size;

			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			size = (seed >> 60) == 0 ? (uint32_t)(seed >> 33) % 65536 :
				8 + (uint32_t)(seed >> 40) % 600;
			perfclock_queue_push(q, (uint32_t)(seed >> 20) % 64,
					     t + (seed >> 54), big, size);
			t += 2;
		}
	}
	perfclock_queue_get_stats(q, &st);
	tap_ok(st.mem_retained_peak_bytes <= cap && st.forced > 0,
	       "queue: 200000 pushes of 8 B to 64 KiB on 64 sources, never flushed: allocated at most %llu of %llu bytes (%llu forced, %llu late)",
	       (unsigned long long)st.mem_retained_peak_bytes,
	       (unsigned long long)cap, (unsigned long long)st.forced,
	       (unsigned long long)st.late);
	perfclock_queue_flush_all(q);
	perfclock_queue_get_stats(q, &st);
	tap_ok(c.n == 200000 && !c.unsorted && st.queued == 0,
	       "queue: ... every event delivered once, the in-order ones sorted");
	perfclock_queue_free(q);
}

