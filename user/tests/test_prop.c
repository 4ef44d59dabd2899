// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Property tests over many random worlds (interleavings, bursts, in-flight
 * windows, nested records, writers stalled for up to 100 ms, clock skews,
 * idle rings, memory caps):
 *  - every rule of demo_flush: every event delivered exactly once, the
 *    in-order output sorted, every late event flagged and accounted;
 *  - ours, flushing below the horizon of an oracle that works like the
 *    module's grace period (synth.h: it hands out a horizon only once
 *    every record stamped below it is committed, knowing nothing of the
 *    delays): zero late events, whatever the delays. No model constant
 *    sets its margin;
 *  - a constant margin below the clock read, smaller than the longest
 *    stall, has late events (so the zero above is not by construction);
 *    with no margin at all (ahern) lateness stays below the skew plus the
 *    longest stamp-to-commit delay;
 *  - the queue's order equals a reference stable sort;
 *  - the ring reader hands back random records intact through wraps.
 * Seeds are fixed: a failure names its seed and reproduces.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "tap.h"
#include "synth.h"
#include "synth_rules.h"

#define WORLDS	300

/* The constant margin that must fail: 1 ms, the old default allowance. */
#define CONST_MARGIN_NS	1000000ULL

struct world {
	struct synth_params p;
	struct synth_reader rd;
	struct synth_ev *ev;
	struct synth_trace tr;
	uint64_t max_inflight;	/* longest stamp-to-commit (stamp order) */
	uint64_t margin_needed;	/* what no margin can be late by */
};

static void make_world(struct world *w, uint64_t seed)
{
	uint64_t st = seed * 7919 + 17;
	size_t i;

	memset(w, 0, sizeof(*w));
	w->p.nsrc = 1 + (uint32_t)synth_below(&st, 64);
	w->p.n = 50 + synth_below(&st, 3000);
	w->p.mean_gap_ns = 50 + synth_below(&st, 20000);
	w->p.max_delay_ns = synth_below(&st, 5000);
	w->p.nest_permille = (uint32_t)synth_below(&st, 60);
	w->p.nest_delay_ns = 1000 + synth_below(&st, 30000);
	/* Half the worlds have writers stalled for up to 100 ms. */
	if (synth_below(&st, 2)) {
		w->p.stall_permille = 1 + (uint32_t)synth_below(&st, 30);
		w->p.stall_max_ns = synth_below(&st, 100000000);
	}
	w->p.skew_ns = synth_below(&st, 4) ? synth_below(&st, 100000) : 0;
	w->p.idle_src = (uint32_t)synth_below(&st, w->p.nsrc);
	w->p.burst = 1 + (uint32_t)synth_below(&st, 32);
	w->rd.first_start = 1000000000ULL + synth_below(&st, 100000);
	w->rd.gap_ns = synth_below(&st, 200000);
	w->rd.visit_ns = synth_below(&st, 5000);
	w->rd.per_event_ns = synth_below(&st, 300);
	w->rd.reader_off = synth_below(&st, w->p.skew_ns + 1);
	w->rd.extra_rounds = 2;
	w->ev = synth_events(&w->p, seed, &w->rd.min_off);
	for (i = 0; i < w->p.n; i++) {
		const struct synth_ev *e = &w->ev[i];
		uint64_t d = e->visible > e->stamp ? e->visible - e->stamp : 0;

		if (d > w->max_inflight)
			w->max_inflight = d;
	}
	/* true time t >= stamp - skew: commit - t <= max_inflight + skew */
	w->margin_needed = 2 * w->p.skew_ns + w->max_inflight;
	synth_read(w->ev, w->p.n, w->p.nsrc, &w->rd, &w->tr);
}

static void free_world(struct world *w)
{
	free(w->ev);
	synth_trace_free(&w->tr);
}

struct outcome {
	struct perfclock_queue_stats st;
	size_t missing, unsorted, bad_late, rec_late, rec_forced;
	size_t in_rounds;
	uint64_t rec_worst;
	int err;
};

static struct outcome run(const struct world *w,
			  const struct synth_policy *pol, uint32_t flags,
			  uint64_t cap)
{
	struct perfclock_queue_config cfg;
	struct perfclock_queue *q;
	struct synth_rec rec;
	struct outcome o;

	memset(&o, 0, sizeof(o));
	synth_rec_init(&rec, w->p.n);
	perfclock_queue_config_init(&cfg);
	cfg.nr_sources = w->p.nsrc;
	cfg.deliver = synth_rec_deliver;
	cfg.arg = &rec;
	cfg.flags = flags;
	if (cap)
		cfg.mem_cap_bytes = cap;
	q = perfclock_queue_new(&cfg);
	if (!q) {
		o.err = -errno;
		synth_rec_free(&rec);
		return o;
	}
	o.err = synth_replay(&w->tr, q, &rec, pol);
	perfclock_queue_get_stats(q, &o.st);
	o.missing = synth_rec_missing(&rec);
	o.unsorted = rec.unsorted;
	o.bad_late = rec.bad_late;
	o.rec_late = rec.late;
	o.rec_forced = rec.forced;
	o.rec_worst = rec.worst_late;
	o.in_rounds = rec.emitted_before_final;
	perfclock_queue_free(q);
	synth_rec_free(&rec);
	return o;
}

static struct outcome run_rule(const struct world *w, int rule)
{
	struct synth_rule sr;
	struct synth_policy pol = synth_policy_rule(&sr, rule, w->p.nsrc);
	struct outcome o = run(w, &pol, 0, 0);

	rules_free(&sr.r);
	return o;
}

/* The invariants every policy must keep. */
static int accounted(const struct world *w, const struct outcome *o)
{
	return !o->err && o->missing == 0 && o->unsorted == 0 &&
	       o->bad_late == 0 && o->rec_late == o->st.late &&
	       o->rec_worst == o->st.worst_lateness_ns &&
	       o->rec_forced == o->st.forced && o->st.pushed == w->p.n &&
	       o->st.emitted + o->st.late == w->p.n && o->st.queued == 0 &&
	       o->st.mem_bytes == 0;
}

static void prop_rules(void)
{
	int fails[RULE__MAX] = { 0 }, first[RULE__MAX];
	uint64_t late_total[RULE__MAX] = { 0 };
	int ours_late = 0, ours_first = -1;
	int bound_bad = 0, bound_first = -1, cap_bad = 0, cap_first = -1;
	int const_bad = 0, const_first = -1, stalled_worlds = 0;
	uint64_t forced_total = 0, const_late = 0, ours_ev = 0;
	uint64_t ours_in_rounds = 0, worst_stall = 0;
	int rule, s;

	for (rule = 0; rule < RULE__MAX; rule++)
		first[rule] = -1;
	for (s = 0; s < WORLDS; s++) {
		struct synth_margin m;
		struct synth_policy pol;
		struct world w;
		struct outcome o;

		make_world(&w, (uint64_t)s + 1);
		if (w.max_inflight > worst_stall)
			worst_stall = w.max_inflight;
		stalled_worlds += w.max_inflight > CONST_MARGIN_NS;
		for (rule = 0; rule < RULE__MAX; rule++) {
			o = run_rule(&w, rule);
			late_total[rule] += o.st.late;
			if (!accounted(&w, &o) && !fails[rule]++)
				first[rule] = s + 1;
			if (rule == RULE_OURS) {
				ours_ev += w.p.n;
				ours_in_rounds += o.in_rounds;
				if (o.st.late && !ours_late++)
					ours_first = s + 1;
			}
			/* No margin: late, but by less than skew + in-flight. */
			if (rule == RULE_AHERN && o.st.late &&
			    o.st.worst_lateness_ns >= w.margin_needed &&
			    !bound_bad++)
				bound_first = s + 1;
		}
		/* A constant margin: accounted, and late where stalls beat it. */
		pol = synth_policy_margin(&m, CONST_MARGIN_NS);
		o = run(&w, &pol, 0, 0);
		const_late += o.st.late;
		if (!accounted(&w, &o) && !const_bad++)
			const_first = s + 1;
		/* Tiny memory cap, copy and no-copy, flushing at the horizon. */
		{
			uint64_t cap = 64 * (2 + (uint64_t)(s % 50));

			memset(&m, 0, sizeof(m));
			pol = synth_policy_horizon(&m);
			o = run(&w, &pol, (s & 1) ? PERFCLOCK_QUEUE_NOCOPY : 0,
				cap);
			forced_total += o.st.forced;
			if ((!accounted(&w, &o) || o.st.mem_peak_bytes > cap) &&
			    !cap_bad++)
				cap_first = s + 1;
		}
		free_world(&w);
	}
	for (rule = 0; rule < RULE__MAX; rule++)
		tap_ok(!fails[rule],
		       "prop: %s over %d random worlds: all delivered once, sorted, late events accounted (%llu late; first bad seed %d)",
		       rule_name(rule), WORLDS,
		       (unsigned long long)late_total[rule], first[rule]);
	tap_ok(!ours_late && ours_in_rounds > ours_ev / 2,
	       "prop: ours (the oracle's horizon, no margin constant) has zero late events in %d worlds, %llu events, stamp-to-commit delays up to %.1f ms, %llu emitted in rounds (first bad seed %d)",
	       WORLDS, (unsigned long long)ours_ev, worst_stall / 1e6,
	       (unsigned long long)ours_in_rounds, ours_first);
	tap_ok(!const_bad && stalled_worlds > 0 && const_late > 0,
	       "prop: a constant %.1f ms margin below the clock read, smaller than the longest delay in %d worlds, has late events (%llu), all accounted (first bad seed %d)",
	       CONST_MARGIN_NS / 1e6, stalled_worlds,
	       (unsigned long long)const_late, const_first);
	tap_ok(!bound_bad && late_total[RULE_AHERN] > 0,
	       "prop: ahern (no margin) is late, by less than 2 x skew + the longest stamp-to-commit delay (%llu late in all; first bad seed %d)",
	       (unsigned long long)late_total[RULE_AHERN], bound_first);
	tap_ok(!cap_bad && forced_total > 0,
	       "prop: tiny memory caps (copy and no-copy) hold, force-flush (%llu) and lose nothing (first bad seed %d)",
	       (unsigned long long)forced_total, cap_first);
}

/* ---- order equals a reference stable sort ---- */

struct ref {
	uint64_t t;
	uint32_t id;
};

static int ref_cmp(const void *a, const void *b)
{
	const struct ref *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;	/* id = push order */
}

struct seqrec {
	struct ref *out;
	size_t n;
};

static int seq_cb(void *arg, const struct perfclock_event *ev)
{
	struct seqrec *r = arg;

	memcpy(&r->out[r->n].id, ev->data, 4);
	r->out[r->n].t = ev->time;
	r->n++;
	return 0;
}

static void prop_reference(void)
{
	int s, bad = 0, first = -1;
	size_t total = 0;

	for (s = 0; s < 200; s++) {
		uint64_t st = (uint64_t)s * 31 + 5;
		uint32_t nsrc = 1 + (uint32_t)synth_below(&st, 300);
		size_t n = 1 + synth_below(&st, 5000), i;
		struct ref *in = malloc(n * sizeof(*in));
		struct seqrec r = { malloc(n * sizeof(struct ref)), 0 };
		struct perfclock_queue_config cfg;
		struct perfclock_queue *q;
		uint64_t *last = calloc(nsrc, sizeof(uint64_t));

		perfclock_queue_config_init(&cfg);
		cfg.nr_sources = nsrc;
		cfg.deliver = seq_cb;
		cfg.arg = &r;
		q = perfclock_queue_new(&cfg);
		for (i = 0; i < n; i++) {
			uint32_t src = (uint32_t)synth_below(&st, nsrc);
			uint32_t id = (uint32_t)i;

			/* mostly increasing per source, sometimes not; ties */
			if (synth_below(&st, 10))
				last[src] += synth_below(&st, 4);
			else
				last[src] -= last[src] ?
					synth_below(&st, last[src] + 1) : 0;
			in[i].t = last[src];
			in[i].id = id;
			perfclock_queue_push(q, src, in[i].t, &id, 4);
		}
		perfclock_queue_flush_all(q);
		qsort(in, n, sizeof(*in), ref_cmp);
		/* field by field: struct ref has padding */
		for (i = 0; i < n && r.n == n; i++)
			if (in[i].t != r.out[i].t || in[i].id != r.out[i].id)
				break;
		if (r.n != n || i != n) {
			if (!bad++) {
				first = s;
				tap_diag("seed %d: %zu of %zu delivered, first difference at %zu",
					 s, r.n, n, i);
			}
		}
		total += n;
		perfclock_queue_free(q);
		free(in);
		free(r.out);
		free(last);
	}
	tap_ok(!bad,
	       "prop: queue output equals a stable sort by (time, push order) in 200 runs, %zu events, up to 300 sources, out-of-order and ties (first bad %d)",
	       total, first);
}

/* ---- ring reader: random records through a small ring ---- */

static void prop_ring(void)
{
	static union {
		struct perf_event_mmap_page pg;
		unsigned char b[4096 + 1024];
	} m;
	unsigned char *data = m.b + 4096;
	uint64_t st = 99, wpos = 0, rec_w = 0, rec_r = 0;
	int bad = 0, wrapped_seen = 0, pass;
	struct perfclock_ring *r;

	memset(&m, 0, sizeof(m));
	m.pg.data_offset = 4096;
	m.pg.data_size = 1024;
	r = perfclock_ring_new(&m, sizeof(m), NULL);
	if (!r) {
		tap_ok(0, "prop: ring created");
		return;
	}
	for (pass = 0; pass < 20000 && !bad; pass++) {
		struct perfclock_record rec;
		uint64_t tail = m.pg.data_tail;
		int k, ret;

		/* writer: as many records as fit */
		for (k = 0; k < 8; k++) {
			uint32_t size = 8 * (1 + (uint32_t)synth_below(&st, 40));
			uint32_t i;
			struct perf_event_header h = { 100, 0, (uint16_t)size };
			unsigned char rb[512];

			if (wpos + size - tail > 1024)
				break;
			memcpy(rb, &h, sizeof(h));
			for (i = 8; i < size; i++)
				rb[i] = (unsigned char)(rec_w + i);
			for (i = 0; i < size; i++)
				data[(wpos + i) & 1023] = rb[i];
			wpos += size;
			rec_w++;
		}
		__atomic_store_n(&m.pg.data_head, wpos, __ATOMIC_RELEASE);
		if (perfclock_ring_read_begin(r) < 0) {
			bad++;
			break;
		}
		/* reader: a random number of records per pass */
		k = (int)synth_below(&st, 6);
		while (k-- && (ret = perfclock_ring_read_event(r, &rec)) == 1) {
			const unsigned char *p = rec.data;
			uint32_t i;

			if (rec.flags & PERFCLOCK_RECORD_WRAPPED)
				wrapped_seen++;
			for (i = 8; i < rec.size; i++)
				if (p[i] != (unsigned char)(rec_r + i))
					bad++;
			rec_r++;
		}
		perfclock_ring_read_end(r);
	}
	tap_ok(!bad && rec_r > 10000 && wrapped_seen > 100,
	       "prop: %llu random records through a 1 KiB ring read back intact (%d wrapped), data_tail respected",
	       (unsigned long long)rec_r, wrapped_seen);
	perfclock_ring_free(r);
}

int main(void)
{
	prop_rules();
	prop_reference();
	prop_ring();
	return tap_exit();
}
