// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * demo_flush: delivery, what each rule's queue hands back in its flush.
 * Every event is counted in order or late, its hold (timestamp to
 * delivery) recorded, and our rule's printed like perf script with
 * --print. The order is checked here, not taken from the library.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "demo.h"

/*
 * The layout open_events() asked for, in perf's order: IDENTIFIER, TID,
 * TIME, CPU (32 bytes), then RAW for tracepoints.
 */
int demo_parse_sample(const struct demo *d, const void *data, uint32_t size,
		      struct sample *s)
{
	const unsigned char *p = data, *end = p + size;

	p += sizeof(struct perf_event_header);
	if (end - p < 32)
		return -1;
	memcpy(&s->id, p, 8);
	memcpy(&s->pid, p + 8, 4);
	memcpy(&s->tid, p + 12, 4);
	memcpy(&s->time, p + 16, 8);
	memcpy(&s->cpu, p + 24, 4);
	p += 32;
	s->raw = NULL;
	s->raw_size = 0;
	if (d->sample_type & PERF_SAMPLE_RAW) {
		if (end - p < 4)
			return -1;
		memcpy(&s->raw_size, p, 4);
		p += 4;
		if ((size_t)(end - p) < s->raw_size)
			return -1;
		s->raw = p;
	}
	return 0;
}

/* --print: one line per event, as perf script prints it; "# late by" before a late one. */
void demo_print_event(struct demo *d, const struct perfclock_event *ev)
{
	const struct qhdr *h = ev->data;
	const struct tp_event *te;
	struct sample s;
	char fields[1024] = "";

	if (ev->size < sizeof(*h) + sizeof(struct perf_event_header))
		return;
	te = &d->events[h->tp < (uint32_t)d->nr_events ? h->tp : 0];
	if (te->side_band) {
		struct perf_event_header ph;

		memcpy(&ph, (const unsigned char *)ev->data + sizeof(*h), sizeof(ph));
		if (ev->flags & PERFCLOCK_EVENT_LATE)
			printf("# late by %" PRIu64 " ns:\n", ev->lateness_ns);
		printf("%16s %7s [%03u] %" PRIu64 ".%09" PRIu64 ": %s: type %u\n", "-", "-",
		       h->cpu, ev->time / 1000000000u, ev->time % 1000000000u, te->name,
		       ph.type);
		return;
	}
	if (demo_parse_sample(d, (const unsigned char *)ev->data + sizeof(*h),
			      ev->size - (uint32_t)sizeof(*h), &s))
		return;
	if (ev->flags & PERFCLOCK_EVENT_LATE)
		printf("# late by %" PRIu64 " ns:\n", ev->lateness_ns);
	if (!te->software && !te->sampling && s.raw)
		tp_format_fields(&te->fmt, s.raw, s.raw_size, fields, sizeof(fields));
	printf("%16s %7u [%03u] %" PRIu64 ".%09" PRIu64 ": %s: %s\n",
	       tp_comm(d->comms, s.pid, s.tid), s.tid, s.cpu, s.time / 1000000000u,
	       s.time % 1000000000u, te->name, fields);
}

int demo_deliver(void *arg, const struct perfclock_event *ev)
{
	struct rule_state *r = arg;
	struct demo *d = r->d;
	const struct qhdr *h = ev->data;

	if (ev->flags & PERFCLOCK_EVENT_LATE) {
		r->late++;
	} else {
		/* Checked here, not trusted from the library. */
		if (r->have_last && ev->time < r->last_time)
			r->order_errors++;
		r->last_time = ev->time;
		r->have_last = 1;
		r->in_order++;
	}
	if (d->final_drain) {
		r->at_end++;
		/* Given to the rule long before the end: held. */
		if (ev->size >= sizeof(*h) && h->pushed_at &&
		    h->pushed_at + HELD_TO_END_NS < d->end_time)
			r->held_to_end++;
	}
	/* Hold: from the event's timestamp to its delivery (late ones too). */
	hist_add(&r->hold, d->emit_now > ev->time ? d->emit_now - ev->time : 0);
	if (r->print)
		demo_print_event(d, ev);
	return 0;
}
