// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tracer_threads: examples/tracer.c on the threaded reader. The same
 * events and output, but one reader thread per CPU, pinned there, drains
 * that CPU's ring below that CPU's per-CPU horizon; this thread merges
 * what they hand over and prints it, one line an event:
 *
 *	<time ns> cpu <n> <tracepoint>
 *
 * Usage: tracer_threads [seconds]   (default 1; root, or CAP_PERFMON with
 * tracefs readable at /sys/kernel/tracing). Works with the module and
 * without it.
 */
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

/* The reader's callback, on this thread: events come here in time order. */
static int print_event(void *arg, const struct perfclock_event *ev)
{
	if (ev->flags & PERFCLOCK_EVENT_UNTIMED)
		return 0;	/* no time, outside the order: counted */
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
	struct perfclock_reader_config rc;
	struct perfclock_reader_ring_stats rs;
	struct perfclock_reader_stats st;
	struct perfclock_evring *er;
	struct perfclock_reader *r;
	struct perfclock *clk;
	uint64_t now, end, reported = 0;
	int64_t n;
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
	perfclock_reader_config_init(&rc);
	rc.deliver = print_event;
	rc.arg = er;
	r = perfclock_reader_start(clk, er, &rc);	/* a thread per CPU */
	if (!r)
		return perror("perfclock_reader_start"), 1;
	perfclock_reader_get_ring_stats(r, 0, &rs);	/* every ring's, here */
	fprintf(stderr, "# horizon: %s\n", perfclock_reader_horizon_name(rs.horizon));
	signal(SIGINT, on_signal);
	perfclock_read(clk, &end);
	end += (uint64_t)(secs * 1e9);
	perfclock_evring_enable(er);
	do {	/* merge what the threads handed over, deliver in order */
		n = perfclock_reader_deliver(r, 100);
		if (n < 0)
			return fprintf(stderr, "deliver: %s\n", strerror((int)-n)), 1;
		perfclock_reader_get_stats(r, &st);
		if (st.lost > reported)
			fprintf(stderr, "# lost %" PRIu64 " events (ring full)\n",
				st.lost - reported);
		reported = st.lost;
	} while (!stop && perfclock_read(clk, &now) == 0 && now < end);
	perfclock_evring_disable(er);
	n = perfclock_reader_stop(r);	/* join, drain the rest, deliver all */
	if (n < 0)
		return fprintf(stderr, "stop: %s\n", strerror((int)-n)), 1;
	perfclock_reader_get_stats(r, &st);
	fprintf(stderr, "# %" PRIu64 " events, %" PRIu64 " late, %" PRIu64
		" lost, %" PRIu64 " without a time (%" PRIu64 " loss records)\n",
		st.queue.emitted + st.queue.late, st.queue.late, st.lost,
		st.untimed, st.lost_records);
	perfclock_reader_free(r);
	perfclock_evring_close(er);
	perfclock_close(clk);
	return 0;
}
