// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * demo_flush: the --json summary, for scripts (check-demo.sh, demo.sh,
 * demo-report.sh, demo-plot.sh). Its layout is what they read: the top
 * level one key a line, each rule's object on one line of its own; keep
 * keys and lines as they are.
 *
 * Below the report: report.c works out the run's summary (struct
 * run_summary) and calls this file with it; this file calls only the
 * library, hist.h, rules.c and threads.c's results, never report.c.
 */
#include <inttypes.h>
#include <stdio.h>

#include "demo.h"

/* A JSON string: quotes, backslashes and control characters escaped. */
static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

void demo_write_json(struct demo *d, FILE *f, const struct run_summary *s)
{
	const struct kernel_counts *k = &s->k;
	const struct perfclock_clock_info *ci = &s->ci;
	const struct ring_order *o = &s->order;
	const struct demo_threads_result *tr = demo_threads_result(d);
	int i, e;

	fprintf(f, "{\n  \"tool\": \"demo_flush\",\n  \"label\": ");
	json_str(f, d->opt.label ? d->opt.label : "");
	fprintf(f, ",\n  \"clock\": {\"name\": \"%s\", \"skew_estimate_ns\": %" PRIu64
		", \"measured_skew_ns\": %" PRIu64 ", \"global\": %s},\n",
		s->clock, ci->skew_estimate_ns, ci->measured_skew_ns,
		(ci->flags & PERFCLOCK_CLOCK_GLOBAL) ? "true" : "false");
	/* ntp_slope: exact except the NTP slope (perfclock/clock.h). */
	fprintf(f, "  \"horizon\": {\"exact\": %s, \"ntp_slope\": %s, \"source\": \"%s\", "
		"\"age_ns\": %" PRIu64 ", \"inflight_estimate_ns\": %" PRIu64
		", \"round_age_p50_ns\": %" PRIu64 ", \"round_age_p99_ns\": %" PRIu64 "},\n",
		(ci->flags & PERFCLOCK_CLOCK_HORIZON_EXACT) ? "true" : "false",
		(ci->flags & PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE) ? "true" : "false",
		!(ci->flags & (PERFCLOCK_CLOCK_HORIZON_EXACT |
			       PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE)) ? "estimate" :
		(ci->flags & PERFCLOCK_CLOCK_HORIZON_PAGE) ? "page" : "ioctl",
		ci->horizon_age_ns, ci->inflight_estimate_ns, hist_pct(&d->hz_age, 50),
		hist_pct(&d->hz_age, 99));
	fprintf(f, "  \"percpu_horizon\": {\"name\": \"%s\", \"rings_own\": %d, "
		"\"rings_gp\": %d, \"rings_mixed\": %d, \"age_p50_ns\": %" PRIu64
		", \"age_p99_ns\": %" PRIu64 ", \"gp_age_p50_ns\": %" PRIu64
		", \"gp_age_p99_ns\": %" PRIu64 ", \"pin_failed\": %" PRIu64
		", \"wrong_cpu\": %" PRIu64 ", \"restarts\": %" PRIu64
		", \"visits\": %s, \"pins\": %" PRIu64 ", \"reader_nvcsw\": %ld"
		", \"reader_nivcsw\": %ld},\n",
		perfclock_horizon_cpu_name(ci), s->rings_own, s->rings_gp, s->rings_mixed,
		/* On the threads: their horizons' age when the merger took them. */
		tr ? tr->age_p50_ns : hist_pct(&d->pc_age, 50),
		tr ? tr->age_p99_ns : hist_pct(&d->pc_age, 99),
		hist_pct(&d->gp_age, 50), hist_pct(&d->gp_age, 99),
		d->pc_pin_failed, d->pc_wrong_cpu, d->pc_restarts,
		d->percpu ? "true" : "false", d->pc_pins, d->reader_nvcsw, d->reader_nivcsw);
	/* Ours' reader: the round loop's own rings (round) or its threads'. */
	if (tr)
		fprintf(f, "  \"ours_reader\": {\"kind\": \"threads\", \"events\": %" PRIu64
			", \"untimed\": %" PRIu64 ", \"throttle\": %" PRIu64
			", \"lost_records\": %" PRIu64 ", \"lost\": %" PRIu64
			", \"threads\": %u, \"rings\": %u, \"handoffs\": %" PRIu64
			", \"rounds\": %" PRIu64 ", \"errors\": %" PRIu64
			", \"age_p50_ns\": %" PRIu64 ", \"age_p99_ns\": %" PRIu64
			", \"samples\": %" PRIu64 ", \"kernel_count\": %" PRIu64
			", \"kernel_lost\": %" PRIu64 ", \"lost_counter\": %s},\n",
			tr->events, tr->untimed, tr->throttle, tr->lost_records, tr->lost,
			tr->threads, tr->rings, tr->handoffs, tr->rounds, tr->errors,
			tr->age_p50_ns, tr->age_p99_ns, tr->samples, tr->kernel_count,
			tr->kernel_lost, tr->have_lost ? "true" : "false");
	else
		fprintf(f, "  \"ours_reader\": {\"kind\": \"round\"},\n");
	fprintf(f, "  \"cpus\": %d,\n  \"source\": \"%s\",\n  \"events\": [",
		s->cpus_traced, d->events[0].software ? "software" : "tracepoint");
	for (e = 0; e < d->nr_events; e++) {
		fprintf(f, "%s{\"name\": ", e ? ", " : "");
		json_str(f, d->events[e].name);
		fprintf(f, ", \"samples\": %" PRIu64 ", \"kernel_count\": %" PRIu64
			", \"kernel_lost\": %" PRIu64 "}", d->events[e].samples,
			d->events[e].count, d->events[e].lost);
	}
	fprintf(f, "],\n  \"reader\": {\"order\": \"%s\", \"yield\": %s, "
		"\"interval_us\": %ld, \"pages\": %lu},\n",
		d->opt.reverse ? "reverse" : "forward", d->opt.yield ? "true" : "false",
		d->opt.interval_us, d->opt.pages);
	fprintf(f, "  \"load\": {\"threads\": %d, \"cpus\": %d, \"hops\": %" PRIu64 "},\n",
		d->opt.load, d->opt.load_cpus ? d->opt.load_cpus : s->cpus_traced, d->hops);
	fprintf(f, "  \"scenario\": {\"max_per_round\": %ld, \"capped_rounds\": %" PRIu64
		", \"unread_seen\": %" PRIu64 ", \"sample\": \"%s\", \"sample_hz\": %ld"
		", \"throttle\": %" PRIu64 "},\n", d->opt.max_per_round, d->capped_rounds,
		d->unread_left, d->opt.sample ? d->opt.sample : "", d->opt.sample ? d->opt.sample_hz : 0,
		d->throttle_total);
	fprintf(f, "  \"rings\": {\"kind\": \"%s\", \"count\": %d, \"sample_shared\": %s, "
		"\"out_of_order\": %" PRIu64 ", \"rings_out_of_order\": %d, \"worst_backstep_ns\": %"
		PRIu64 ", \"migrate_every\": %ld, \"tick_ms\": %ld, \"ticks\": %" PRIu64 "},\n",
		d->opt.per_thread ? "task" : "cpu", d->nr_rings,
		d->opt.sample_shared ? "true" : "false", o->records, o->rings, o->worst_ns,
		d->opt.migrate_every, d->opt.tick_ms, d->ticks);
	fprintf(f, "  \"ring_order\": [");
	for (e = 0; e < d->nr_rings; e++)
		fprintf(f, "%s{\"cpu\": %d, \"tid\": %d, \"samples\": %" PRIu64
			", \"out_of_order\": %" PRIu64 ", \"worst_backstep_ns\": %" PRIu64 "}",
			e ? ", " : "", d->rings[e].cpu, d->rings[e].tid, d->rings[e].samples,
			d->rings[e].out_of_order, d->rings[e].worst_backstep_ns);
	fprintf(f, "],\n");
	fprintf(f, "  \"duration_s\": %.3f,\n  \"rounds\": %" PRIu64 ",\n"
		"  \"records\": %" PRIu64 ",\n  \"samples\": %" PRIu64 ",\n"
		"  \"untimed\": %" PRIu64 ",\n  \"ring_errors\": %" PRIu64 ",\n"
		"  \"stale\": {\"records\": %" PRIu64 ", \"worst_ns\": %" PRIu64 "},\n",
		d->secs, d->rounds_total, d->records_total, d->samples_total, d->nontime_total,
		d->ring_errors, d->inflight_seen, d->inflight_worst_ns);
	fprintf(f, "  \"kernel\": {\"count\": %" PRIu64 ", \"lost\": %" PRIu64
		", \"lost_counter\": %s, \"lost_in_records\": %" PRIu64
		", \"lost_samples_records\": %" PRIu64 ", \"unaccounted\": %" PRId64
		", \"consistent\": %s},\n",
		k->count, k->lost, k->have_lost ? "true" : "false",
		k->lost_in_records, k->lost_samples_records, k->unaccounted,
		k->consistent ? "true" : "false");
	fprintf(f, "  \"rules\": [\n");
	for (i = 0; i < NR_RULES; i++) {
		struct rule_state *r = &d->rules[i];
		struct perfclock_queue_stats st;

		demo_rule_queue_stats(d, i, &st);
		fprintf(f, "    {\"name\": \"%s\", \"pushed\": %" PRIu64
			", \"delivered\": %" PRIu64 ", \"in_order\": %" PRIu64
			", \"late\": %" PRIu64 ", \"worst_lateness_ns\": %" PRIu64
			", \"below_horizon\": %" PRIu64 ", \"forced\": %" PRIu64
			", \"queued_at_end\": %" PRIu64 ", \"out_of_order_in_source\": %" PRIu64
			", \"order_errors\": %" PRIu64
			", \"at_end\": %" PRIu64 ", \"held_to_end\": %" PRIu64
			", \"ordered\": %s, \"hold_ns\": {\"p50\": %" PRIu64
			", \"p99\": %" PRIu64 ", \"max\": %" PRIu64 "}, "
			"\"peak_queue\": %" PRIu64 "}%s\n",
			rule_name(i), st.pushed, r->in_order + r->late,
			r->in_order, r->late, st.worst_lateness_ns, st.below_horizon,
			st.forced, st.queued, st.out_of_order_in_source, r->order_errors,
			r->at_end, r->held_to_end,
			/* Late events are out of order too. */
			r->order_errors || r->late ? "false" : "true", hist_pct(&r->hold, 50),
			hist_pct(&r->hold, 99), r->hold.max, r->peak_queued,
			i + 1 < NR_RULES ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
}
