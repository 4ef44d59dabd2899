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
 *  - the reader starts a round at true time R: it takes the horizon and
 *    reads its clock (R + reader_off), then visits ring 0, 1, ... k-1,
 *    each visit costing visit_ns plus per_event_ns per record read; it
 *    reads the records visible at the visit. The next round starts gap_ns
 *    after the last visit.
 *  - the horizon at R comes from an ORACLE that works like the module's
 *    grace period: a horizon sampled at true time T is min over CPUs of
 *    their clocks at T (T + the smallest clock offset), and it is handed
 *    out only once every record stamped below it is committed (covered
 *    by its ring's data_head, as a grace period ensures). The oracle
 *    hands out the newest such value at R: min(R + min offset, the
 *    smallest stamp of the records not yet committed at R). It knows
 *    nothing of the delays' distribution: they can be any length.
 * The reader's actions are recorded as a trace of operations (begin with
 * the round-start clock value and the horizon, push, end) which can be
 * replayed under any flush policy: every policy sees identical input.
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
	uint64_t hz;		/* BEGIN: the oracle's horizon */
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
	uint64_t min_off;	/* smallest CPU clock offset (synth_events) */
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
	tr->op[tr->n].hz = 0;
	tr->op[tr->n].id = id;
	tr->op[tr->n].pad = 0;
	tr->n++;
}

/* A round begins: the clock read and the horizon. */
static __attribute__((unused)) void
synth_trace_begin(struct synth_trace *tr, uint64_t clock, uint64_t hz)
{
	synth_trace_add(tr, SYNTH_BEGIN, 0, clock, 0);
	tr->op[tr->n - 1].hz = hz;
}

static __attribute__((unused)) void synth_trace_free(struct synth_trace *tr)
{
	free(tr->op);
	memset(tr, 0, sizeof(*tr));
}

static int synth_cmp_u64pair(const void *a, const void *b)
{
	const uint64_t *x = (const uint64_t *)a, *y = (const uint64_t *)b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/*
 * The oracle (see the top): for events sorted by commit time, the
 * smallest stamp among those committed after R, by binary search on the
 * (readable, suffix-min stamp) pairs. ev must be in ring order.
 */
struct synth_oracle {
	uint64_t *vs;		/* pairs: visible, min stamp from here on */
	size_t n;
	uint64_t min_off;
};

static void synth_oracle_init(struct synth_oracle *o,
			      const struct synth_ev *ev, size_t n,
			      uint64_t min_off)
{
	size_t i;

	o->n = n;
	o->min_off = min_off;
	o->vs = (uint64_t *)calloc(2 * (n ? n : 1), sizeof(uint64_t));
	if (!o->vs)
		abort();
	/*
	 * Committed = covered by data_head: ev is in ring order, and a
	 * record is readable once every record before it in its ring is.
	 */
	for (i = 0; i < n; i++) {
		uint64_t v = ev[i].visible;

		if (i && ev[i - 1].src == ev[i].src && o->vs[2 * (i - 1)] > v)
			v = o->vs[2 * (i - 1)];
		o->vs[2 * i] = v;
		o->vs[2 * i + 1] = ev[i].stamp;
	}
	qsort(o->vs, n, 2 * sizeof(uint64_t), synth_cmp_u64pair);
	for (i = n; i-- > 1;)
		if (o->vs[2 * i + 1] < o->vs[2 * (i - 1) + 1])
			o->vs[2 * (i - 1) + 1] = o->vs[2 * i + 1];
}

static uint64_t synth_oracle_horizon(const struct synth_oracle *o, uint64_t R)
{
	size_t lo = 0, hi = o->n;
	uint64_t h = R + o->min_off;

	while (lo < hi) {	/* first event committed after R */
		size_t mid = (lo + hi) / 2;

		if (o->vs[2 * mid] <= R)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < o->n && o->vs[2 * lo + 1] < h)
		h = o->vs[2 * lo + 1];
	return h;
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
	struct synth_oracle orc;

	if (!cur || !end)
		abort();

	memset(tr, 0, sizeof(*tr));
	tr->nsrc = nsrc;
	tr->nevents = n;
	qsort(ev, n, sizeof(*ev), synth_cmp_ring);
	synth_oracle_init(&orc, ev, n, rd->min_off);
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
		synth_trace_begin(tr, now + rd->reader_off,
				  synth_oracle_horizon(&orc, now));
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
	free(orc.vs);
	free(cur);
	free(end);
}

struct synth_params {
	uint32_t nsrc;
	size_t n;
	uint64_t mean_gap_ns;	/* between events, all CPUs together */
	uint64_t max_delay_ns;	/* commit delay, uniform in [0, max] */
	uint32_t stall_permille;	/* chance of a stalled writer: */
	uint64_t stall_max_ns;	/* its extra delay, uniform in [0, max] */
	uint32_t nest_permille;	/* chance of a nested (late-reserving) record */
	uint64_t nest_delay_ns;	/* its stamp-to-reservation delay */
	uint64_t skew_ns;	/* clock offsets in [0, skew] */
	uint32_t idle_src;	/* this many sources never produce */
	uint32_t burst;		/* events in a row on one CPU (>= 1) */
};

/*
 * Random events following p; ids 0..n-1. *min_off (may be NULL): the
 * smallest CPU clock offset, for synth_reader::min_off.
 */
static __attribute__((unused)) struct synth_ev *
synth_events(const struct synth_params *p, uint64_t seed, uint64_t *min_off)
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
	for (s = 0; s < p->nsrc; s++) {
		off[s] = synth_below(&st, p->skew_ns + 1);
		if (min_off && (!s || off[s] < *min_off))
			*min_off = off[s];
	}
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
		if (p->stall_permille &&
		    synth_below(&st, 1000) < p->stall_permille)
			delay += synth_below(&st, p->stall_max_ns + 1);
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
 * A flush policy for synth_replay(): told of each round's begin and each
 * push, it gives the limit of each round's end (1 and *limit, exclusive,
 * for perfclock_queue_flush_until(); 0 for no flush).
 */
struct synth_policy {
	void (*begin)(void *arg, uint64_t clock, uint64_t hz);
	void (*push)(void *arg, uint32_t src, uint64_t t);
	int (*end)(void *arg, uint64_t *limit);
	void *arg;
};

/* The library's own pattern: flush below the round's horizon. */
struct synth_margin {
	uint64_t limit;
	uint64_t margin;	/* clock policy: clock - margin */
	int use_clock;		/* 0: the oracle's horizon */
};

static __attribute__((unused)) void synth_margin_begin(void *arg,
							uint64_t clock,
							uint64_t hz)
{
	struct synth_margin *m = (struct synth_margin *)arg;

	if (m->use_clock)
		m->limit = clock > m->margin ? clock - m->margin : 0;
	else
		m->limit = hz;
}

static __attribute__((unused)) int synth_margin_end(void *arg, uint64_t *limit)
{
	*limit = ((struct synth_margin *)arg)->limit;
	return 1;
}

/* The oracle's horizon (m zeroed), or a constant margin below the clock. */
static __attribute__((unused)) struct synth_policy
synth_policy_horizon(struct synth_margin *m)
{
	struct synth_policy p = { synth_margin_begin, NULL, synth_margin_end, m };

	return p;
}

static __attribute__((unused)) struct synth_policy
synth_policy_margin(struct synth_margin *m, uint64_t margin)
{
	struct synth_policy p = { synth_margin_begin, NULL, synth_margin_end, m };

	memset(m, 0, sizeof(*m));
	m->use_clock = 1;
	m->margin = margin;
	return p;
}

/*
 * Replay a trace into q under policy pol (which must deliver to rec
 * through synth_rec_deliver, or anything else). Pushes the id as a 4-byte
 * payload. Ends with perfclock_queue_flush_all(). Returns 0 or -errno.
 */
static __attribute__((unused)) int
synth_replay(const struct synth_trace *tr, struct perfclock_queue *q,
	     struct synth_rec *rec, const struct synth_policy *pol)
{
	uint64_t limit;
	size_t i;
	int64_t ret = 0;

	for (i = 0; i < tr->n; i++) {
		const struct synth_op *o = &tr->op[i];

		switch (o->kind) {
		case SYNTH_BEGIN:
			if (pol->begin)
				pol->begin(pol->arg, o->t, o->hz);
			ret = 0;
			break;
		case SYNTH_PUSH:
			if (pol->push)
				pol->push(pol->arg, o->src, o->t);
			ret = perfclock_queue_push(q, o->src, o->t, &o->id,
						   sizeof(o->id));
			break;
		default:
			ret = 0;
			if (pol->end && pol->end(pol->arg, &limit))
				ret = perfclock_queue_flush_until(q, limit);
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
