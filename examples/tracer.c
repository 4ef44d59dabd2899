// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tracer: the smallest complete ordered tracer on libperfclock.
 * sched:sched_switch and sched:sched_wakeup on every CPU, one ring per
 * CPU, merged into one stream in time order, one line an event:
 *
 *	<time ns> cpu <n> <tracepoint>
 *
 * Usage: tracer [seconds]   (default 1; root, or CAP_PERFMON with tracefs
 * readable at /sys/kernel/tracing). Works with the module and without it.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <linux/perf_event.h>
#include <perfclock/libperfclock.h>

static const char *const tp[] = { "sched/sched_switch", "sched/sched_wakeup" };
static volatile sig_atomic_t stop;

static void on_signal(int sig) { (void)sig; stop = 1; }

/* A tracepoint's id from tracefs, 0 if it has none. */
static unsigned long long tracepoint_id(const char *name)
{
	unsigned long long id = 0;
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/tracing/events/%s/id", name);
	f = fopen(path, "r");
	if (f && fscanf(f, "%llu", &id) != 1)
		id = 0;
	if (f)
		fclose(f);
	return id;
}

/* The queue's callback: events come here in time order. */
static int print_event(void *arg, const struct perfclock_event *ev)
{
	printf("%" PRIu64 " cpu %d %s%s\n", ev->time,
	       perfclock_evring_cpu(arg, (int)ev->source), tp[ev->attr_idx],
	       ev->flags & PERFCLOCK_EVENT_LATE ? " LATE" : "");
	return 0;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1;
	struct perf_event_attr attrs[2];
	struct perfclock_evring_config cfg;
	struct perfclock_queue_config qc;
	struct perfclock_drain_stats st = { 0 };
	struct perfclock_queue_stats qs;
	struct perfclock_evring *er;
	struct perfclock_queue *q;
	struct perfclock *clk;
	uint64_t h, end, reported = 0;
	int i;

	/* perf_clock(): the module, else perf's own page; else a clockid. */
	clk = perfclock_open(NULL);
	if (!clk)
		clk = perfclock_open_clockid(CLOCK_MONOTONIC_RAW);
	if (!clk)
		return perror("perfclock_open"), 1;
	memset(attrs, 0, sizeof(attrs));
	for (i = 0; i < 2; i++) {
		attrs[i].type = PERF_TYPE_TRACEPOINT;
		attrs[i].config = tracepoint_id(tp[i]);
		if (!attrs[i].config)
			return fprintf(stderr, "no tracepoint %s (tracefs)\n", tp[i]), 1;
		attrs[i].sample_period = 1;
		attrs[i].sample_type = PERF_SAMPLE_TIME;
		attrs[i].disabled = 1;
	}
	perfclock_evring_config_init(&cfg);
	cfg.attrs = attrs;
	cfg.nr_attrs = 2;
	er = perfclock_evring_open(clk, &cfg);	/* fills the clock fields */
	if (!er)
		return perror("perfclock_evring_open"), 1;
	perfclock_queue_config_init(&qc);
	qc.nr_sources = (uint32_t)perfclock_evring_nr_rings(er);
	qc.deliver = print_event;
	qc.arg = er;
	q = perfclock_queue_new(&qc);
	if (!q)
		return perror("perfclock_queue_new"), 1;
	fprintf(stderr, "# horizon: %s\n", perfclock_clock_horizon_name(clk));
	signal(SIGINT, on_signal);
	perfclock_read(clk, &end);
	end += (uint64_t)(secs * 1e9);
	perfclock_evring_enable(er);
	for (;;) {	/* the round: the horizon first, every ring, flush */
		if (perfclock_horizon(clk, &h) ||
		    perfclock_evring_drain(er, q, &st) < 0 ||
		    perfclock_queue_flush_until(q, h) < 0)
			return fprintf(stderr, "round failed\n"), 1;
		if (st.lost > reported)
			fprintf(stderr, "# lost %" PRIu64 " events (ring full)\n",
				st.lost - reported);
		reported = st.lost;
		if (h >= end || stop)
			break;
		i = perfclock_evring_poll(er, 100);	/* wait for data */
		if (i < 0 && i != -EINTR)
			return fprintf(stderr, "poll: %s\n", strerror(-i)), 1;
	}
	perfclock_evring_disable(er);
	perfclock_evring_drain(er, q, &st);	/* what is left, then all */
	perfclock_queue_flush_all(q);
	perfclock_queue_get_stats(q, &qs);
	fprintf(stderr, "# %" PRIu64 " events, %" PRIu64 " late, %" PRIu64
		" lost, %" PRIu64 " without a time\n", qs.emitted + qs.late,
		qs.late, st.lost, st.no_time);
	perfclock_queue_free(q);
	perfclock_evring_close(er);
	perfclock_close(clk);
	return 0;
}
