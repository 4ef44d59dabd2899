// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Property tests over many random worlds (interleavings, bursts, in-flight
 * windows, nested records, clock skews, idle rings, memory caps):
 *  - every rule: every event delivered exactly once, the in-order output
 *    sorted, every late event flagged and accounted (count, worst);
 *  - ours with an honest margin (advertised skew + largest in-flight):
 *    zero late events; with no margin, lateness below skew + in-flight;
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

#define WORLDS	300

struct world {
	struct synth_params p;
	struct synth_reader rd;
	struct synth_ev *ev;
	struct synth_trace tr;
	uint64_t margin_needed;	/* skew + longest stamp-to-readable */
};

static void make_world(struct world *w, uint64_t seed)
{
	uint64_t st = seed * 7919 + 17;
	uint64_t maxd;

	memset(w, 0, sizeof(*w));
	w->p.nsrc = 1 + (uint32_t)synth_below(&st, 64);
	w->p.n = 50 + synth_below(&st, 3000);
	w->p.mean_gap_ns = 50 + synth_below(&st, 20000);
	w->p.max_delay_ns = synth_below(&st, 5000);
	w->p.nest_permille = (uint32_t)synth_below(&st, 60);
	w->p.nest_delay_ns = 1000 + synth_below(&st, 30000);
	w->p.skew_ns = synth_below(&st, 4) ? synth_below(&st, 100000) : 0;
	w->p.idle_src = (uint32_t)synth_below(&st, w->p.nsrc);
	w->p.burst = 1 + (uint32_t)synth_below(&st, 32);
	w->rd.first_start = 1000000000ULL + synth_below(&st, 100000);
	w->rd.gap_ns = synth_below(&st, 200000);
	w->rd.visit_ns = synth_below(&st, 5000);
	w->rd.per_event_ns = synth_below(&st, 300);
	w->rd.reader_off = synth_below(&st, w->p.skew_ns + 1);
	w->rd.extra_rounds = 2;
	/* a record can be stamped this long before it is readable */
	maxd = w->p.max_delay_ns;
	if (w->p.nest_permille)
		maxd += w->p.nest_delay_ns;
	w->margin_needed = w->p.skew_ns + maxd;
	w->ev = synth_events(&w->p, seed);
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
	uint64_t rec_worst;
	int err;
};

static struct outcome run(const struct world *w, uint32_t rule,
			  uint64_t skew, uint64_t inflight, uint32_t flags,
			  uint64_t cap)
{
	struct perfclock_queue_config cfg;
	struct perfclock_queue *q;
	struct synth_rec rec;
	struct outcome o;

	memset(&o, 0, sizeof(o));
	synth_rec_init(&rec, w->p.n);
	perfclock_queue_config_init(&cfg);
	cfg.rule = rule;
	cfg.nr_sources = w->p.nsrc;
	cfg.deliver = synth_rec_deliver;
	cfg.arg = &rec;
	cfg.skew_bound_ns = skew;
	cfg.inflight_ns = inflight;
	cfg.flags = flags;
	if (cap)
		cfg.mem_cap_bytes = cap;
	q = perfclock_queue_new(&cfg);
	if (!q) {
		o.err = -errno;
		synth_rec_free(&rec);
		return o;
	}
	o.err = synth_replay(&w->tr, q, &rec);
	perfclock_queue_get_stats(q, &o.st);
	o.missing = synth_rec_missing(&rec);
	o.unsorted = rec.unsorted;
	o.bad_late = rec.bad_late;
	o.rec_late = rec.late;
	o.rec_forced = rec.forced;
	o.rec_worst = rec.worst_late;
	perfclock_queue_free(q);
	synth_rec_free(&rec);
	return o;
}

/* The invariants every rule must keep. */
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
	int fails[PERFCLOCK_RULE__MAX] = { 0 }, first[PERFCLOCK_RULE__MAX];
	uint64_t late_total[PERFCLOCK_RULE__MAX] = { 0 };
	int ours_late = 0, ours_first = -1, prev_late = 0, prev_first = -1;
	int bound_bad = 0, bound_first = -1, cap_bad = 0, cap_first = -1;
	uint64_t forced_total = 0, ahern_late = 0, ours_ev = 0;
	int rule, s;

	for (rule = 0; rule < PERFCLOCK_RULE__MAX; rule++)
		first[rule] = -1;
	for (s = 0; s < WORLDS; s++) {
		struct world w;
		struct outcome o;

		make_world(&w, (uint64_t)s + 1);
		for (rule = 0; rule < PERFCLOCK_RULE__MAX; rule++) {
			o = run(&w, (uint32_t)rule, w.p.skew_ns,
				w.margin_needed - w.p.skew_ns, 0, 0);
			late_total[rule] += o.st.late;
			if (!accounted(&w, &o) && !fails[rule]++)
				first[rule] = s + 1;
			if (rule == PERFCLOCK_RULE_OURS) {
				ours_ev += w.p.n;
				if (o.st.late && !ours_late++)
					ours_first = s + 1;
			}
		}
		/* PREV_ROUND variant, honest margin. */
		o = run(&w, PERFCLOCK_RULE_OURS, w.p.skew_ns,
			w.margin_needed - w.p.skew_ns,
			PERFCLOCK_QUEUE_PREV_ROUND, 0);
		if ((!accounted(&w, &o) || o.st.late) && !prev_late++)
			prev_first = s + 1;
		/* No margin: late, but less than skew + in-flight. */
		o = run(&w, PERFCLOCK_RULE_OURS, 0, 0, 0, 0);
		ahern_late += o.st.late;
		if ((!accounted(&w, &o) ||
		     (o.st.late && o.st.worst_lateness_ns >= w.margin_needed)) &&
		    !bound_bad++)
			bound_first = s + 1;
		/* Tiny memory cap, copy and no-copy. */
		{
			uint64_t cap = 64 * (2 + (uint64_t)(s % 50));

			o = run(&w, PERFCLOCK_RULE_OURS, w.p.skew_ns, 0,
				(s & 1) ? PERFCLOCK_QUEUE_NOCOPY : 0, cap);
			forced_total += o.st.forced;
			if ((!accounted(&w, &o) || o.st.mem_peak_bytes > cap) &&
			    !cap_bad++)
				cap_first = s + 1;
		}
		free_world(&w);
	}
	for (rule = 0; rule < PERFCLOCK_RULE__MAX; rule++)
		tap_ok(!fails[rule],
		       "prop: %s over %d random worlds: all delivered once, sorted, late events accounted (%llu late; first bad seed %d)",
		       perfclock_rule_name(rule), WORLDS,
		       (unsigned long long)late_total[rule], first[rule]);
	tap_ok(!ours_late,
	       "prop: ours with margin = skew bound + in-flight has zero late events in %d worlds, %llu events (first bad seed %d)",
	       WORLDS, (unsigned long long)ours_ev, ours_first);
	tap_ok(!prev_late,
	       "prop: ours with PREV_ROUND has zero late events (first bad seed %d)",
	       prev_first);
	tap_ok(!bound_bad && ahern_late > 0,
	       "prop: with no margin lateness stays below skew + in-flight (%llu late in all; first bad seed %d)",
	       (unsigned long long)ahern_late, bound_first);
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
