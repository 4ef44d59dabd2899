/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Synthetic per-CPU perf rings and a round-based reader, shared by the
 * unit tests, the property tests and the benchmark.
 *
 * The model (times in ns of a "true" global time):
 *  - an event happens at true time t on CPU s; it is stamped with CPU s's
 *    clock, t + clock_off[s] (clock_off in [0, skew]: two CPUs differ by at
 *    most skew, the advertised bound);
 *  - it reserves its place in ring s right after the stamp (ring order is
 *    reservation order), except a record whose writer was interrupted
 *    between stamp and reservation (nested NMI/irq): it reserves
 *    nest_delay later, behind records stamped after it (out of order
 *    within a source);
 *  - it is committed (data_head) delay after its reservation (the
 *    in-flight window); as in perf, data_head only covers a prefix: a
 *    record is readable once it and every record before it are committed;
 *  - the reader starts a round at true time R: it reads its clock
 *    (R + reader_off), then visits ring 0, 1, ... k-1, each visit costing
 *    visit_ns plus per_event_ns per record read; it reads the records
 *    visible at the visit. The next round starts gap_ns after the last
 *    visit.
 * The reader's actions are recorded as a trace of operations (begin with
 * the round-start clock value, push, end) which can be replayed into any
 * queue: every rule sees identical input.
 */
#ifndef PERFCLOCK_SYNTH_H
#define PERFCLOCK_SYNTH_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libperfclock.h"

struct synth_ev {
	uint64_t stamp;
	uint64_t reserve;	/* ring order */
	uint64_t visible;	/* committed */
	uint32_t src;
	uint32_t id;
};

enum { SYNTH_BEGIN, SYNTH_PUSH, SYNTH_END };

struct synth_op {
	uint32_t kind;
	uint32_t src;
	uint64_t t;		/* BEGIN: round start clock; PUSH: stamp */
	uint32_t id;		/* PUSH: event id */
	uint32_t pad;
};

struct synth_trace {
	struct synth_op *op;
	size_t n, cap;
	size_t nevents;
	uint32_t nsrc;
};

struct synth_reader {
	uint64_t first_start;
	uint64_t gap_ns;
	uint64_t visit_ns;
	uint64_t per_event_ns;
	uint64_t reader_off;	/* reader CPU's clock offset */
	uint32_t extra_rounds;	/* rounds after the last event is read */
};

/* xorshift64*: reproducible and fast. */
static inline uint64_t synth_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static inline uint64_t synth_below(uint64_t *s, uint64_t n)
{
	return n ? synth_rand(s) % n : 0;
}

static void synth_trace_add(struct synth_trace *tr, uint32_t kind,
			    uint32_t src, uint64_t t, uint32_t id)
{
	if (tr->n == tr->cap) {
		tr->cap = tr->cap ? 2 * tr->cap : 1024;
		tr->op = (struct synth_op *)realloc(tr->op,
						    tr->cap * sizeof(*tr->op));
		if (!tr->op)
			abort();
	}
	tr->op[tr->n].kind = kind;
	tr->op[tr->n].src = src;
	tr->op[tr->n].t = t;
	tr->op[tr->n].id = id;
	tr->op[tr->n].pad = 0;
	tr->n++;
}

static __attribute__((unused)) void synth_trace_free(struct synth_trace *tr)
{
	free(tr->op);
	memset(tr, 0, sizeof(*tr));
}

static int synth_cmp_ring(const void *a, const void *b)
{
	const struct synth_ev *x = (const struct synth_ev *)a;
	const struct synth_ev *y = (const struct synth_ev *)b;

	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	if (x->reserve != y->reserve)
		return x->reserve < y->reserve ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * Run the reader over events (any order; ids must be 0..n-1) and record
 * what it does. Sorts ev in place into ring order.
 */
static __attribute__((unused)) void
synth_read(struct synth_ev *ev, size_t n, uint32_t nsrc,
	   const struct synth_reader *rd, struct synth_trace *tr)
{
	size_t *cur = (size_t *)calloc(nsrc + 1, sizeof(size_t));
	size_t *end = (size_t *)calloc(nsrc + 1, sizeof(size_t));
	size_t left = n, i;
	uint64_t now = rd->first_start;
	uint32_t extra = rd->extra_rounds, s;

	if (!cur || !end)
		abort();
	memset(tr, 0, sizeof(*tr));
	tr->nsrc = nsrc;
	tr->nevents = n;
	qsort(ev, n, sizeof(*ev), synth_cmp_ring);
	for (i = 0; i < n; i++)
		end[ev[i].src] = i + 1;
	for (s = 0, i = 0; s < nsrc; s++) {
		cur[s] = i;
		if (end[s] < i)
			end[s] = i;
		i = end[s];
	}
	while (left || extra) {
		if (!left)
			extra--;
		synth_trace_add(tr, SYNTH_BEGIN, 0, now + rd->reader_off, 0);
		for (s = 0; s < nsrc; s++) {
			now += rd->visit_ns;
			/* The committed prefix of the ring at the visit. */
			while (cur[s] < end[s] && ev[cur[s]].visible <= now) {
				const struct synth_ev *e = &ev[cur[s]++];

				synth_trace_add(tr, SYNTH_PUSH, s, e->stamp,
						e->id);
				now += rd->per_event_ns;
				left--;
			}
		}
		synth_trace_add(tr, SYNTH_END, 0, 0, 0);
		now += rd->gap_ns;
	}
	free(cur);
	free(end);
}

struct synth_params {
	uint32_t nsrc;
	size_t n;
	uint64_t mean_gap_ns;	/* between events, all CPUs together */
	uint64_t max_delay_ns;	/* commit delay, uniform in [0, max] */
	uint32_t nest_permille;	/* chance of a nested (late-reserving) record */
	uint64_t nest_delay_ns;	/* its stamp-to-reservation delay */
	uint64_t skew_ns;	/* clock offsets in [0, skew] */
	uint32_t idle_src;	/* this many sources never produce */
	uint32_t burst;		/* events in a row on one CPU (>= 1) */
};

/* Random events following p; ids 0..n-1. */
static __attribute__((unused)) struct synth_ev *
synth_events(const struct synth_params *p, uint64_t seed)
{
	struct synth_ev *ev = (struct synth_ev *)calloc(p->n ? p->n : 1,
							sizeof(*ev));
	uint64_t *off = (uint64_t *)calloc(p->nsrc, sizeof(uint64_t));
	uint64_t st = seed * 0x9E3779B97F4A7C15ULL + 1, t = 1000000000ULL;
	uint32_t active = p->nsrc > p->idle_src ? p->nsrc - p->idle_src : 1;
	uint32_t src = 0, left_in_burst = 0, s;
	size_t i;

	if (!ev || !off)
		abort();
	for (s = 0; s < p->nsrc; s++)
		off[s] = synth_below(&st, p->skew_ns + 1);
	for (i = 0; i < p->n; i++) {
		uint64_t delay, nest = 0;

		if (!left_in_burst) {
			src = (uint32_t)synth_below(&st, active);
			left_in_burst = p->burst ? 1 + (uint32_t)
				synth_below(&st, p->burst) : 1;
		}
		left_in_burst--;
		t += 1 + synth_below(&st, 2 * p->mean_gap_ns);
		delay = synth_below(&st, p->max_delay_ns + 1);
		if (p->nest_permille &&
		    synth_below(&st, 1000) < p->nest_permille)
			nest = p->nest_delay_ns;
		ev[i].stamp = t + off[src];
		ev[i].reserve = t + nest;
		ev[i].visible = t + nest + delay;
		ev[i].src = src;
		ev[i].id = (uint32_t)i;
	}
	free(off);
	return ev;
}

/* ---- delivery recorder ---- */

struct synth_rec {
	size_t nevents;
	uint32_t *seen;		/* deliveries per id */
	size_t delivered, inorder, late, forced, unsorted, bad_id;
	size_t emitted_before_final;
	uint64_t last_inorder, worst_late;
	int any;
	int in_final;
	size_t bad_late;	/* LATE event not below the last in-order */
};

static __attribute__((unused)) void synth_rec_init(struct synth_rec *r,
						   size_t nevents)
{
	memset(r, 0, sizeof(*r));
	r->nevents = nevents;
	r->seen = (uint32_t *)calloc(nevents ? nevents : 1, sizeof(uint32_t));
	if (!r->seen)
		abort();
}

static __attribute__((unused)) void synth_rec_free(struct synth_rec *r)
{
	free(r->seen);
	r->seen = NULL;
}

static __attribute__((unused)) int
synth_rec_deliver(void *arg, const struct perfclock_event *ev)
{
	struct synth_rec *r = (struct synth_rec *)arg;
	uint32_t id;

	if (ev->size != sizeof(id) || !ev->data) {
		r->bad_id++;
		return 0;
	}
	memcpy(&id, ev->data, sizeof(id));
	if (id >= r->nevents) {
		r->bad_id++;
		return 0;
	}
	r->seen[id]++;
	r->delivered++;
	if (ev->flags & PERFCLOCK_EVENT_LATE) {
		r->late++;
		if (!r->any || ev->time >= r->last_inorder ||
		    ev->lateness_ns != r->last_inorder - ev->time)
			r->bad_late++;
		if (ev->lateness_ns > r->worst_late)
			r->worst_late = ev->lateness_ns;
		return 0;
	}
	if (ev->flags & PERFCLOCK_EVENT_FORCED)
		r->forced++;
	if (r->any && ev->time < r->last_inorder)
		r->unsorted++;
	r->last_inorder = ev->time;
	r->any = 1;
	r->inorder++;
	if (!r->in_final)
		r->emitted_before_final++;
	return 0;
}

/* Every id exactly once. Returns the number of ids seen != 1 times. */
static __attribute__((unused)) size_t synth_rec_missing(const struct synth_rec *r)
{
	size_t i, bad = 0;

	for (i = 0; i < r->nevents; i++)
		bad += r->seen[i] != 1;
	return bad;
}

/*
 * Replay a trace into q (which must deliver to rec through
 * synth_rec_deliver, or anything else). Pushes the id as a 4-byte
 * payload. Ends with perfclock_queue_flush_all(). Returns 0 or -errno.
 */
static __attribute__((unused)) int
synth_replay(const struct synth_trace *tr, struct perfclock_queue *q,
	     struct synth_rec *rec)
{
	size_t i;
	int64_t ret;

	for (i = 0; i < tr->n; i++) {
		const struct synth_op *o = &tr->op[i];

		switch (o->kind) {
		case SYNTH_BEGIN:
			ret = perfclock_queue_round_begin_at(q, o->t);
			break;
		case SYNTH_PUSH:
			ret = perfclock_queue_push(q, o->src, o->t, &o->id,
						   sizeof(o->id));
			break;
		default:
			ret = perfclock_queue_round_end(q);
			break;
		}
		if (ret < 0)
			return (int)ret;
	}
	if (rec)
		rec->in_final = 1;
	ret = perfclock_queue_flush_all(q);
	return ret < 0 ? (int)ret : 0;
}

#endif
