// SPDX-License-Identifier: GPL-2.0
/*
 * bench_reader: what the threaded reader (perfclock_reader_*, user/
 * perfclock/reader.h) sustains and what it costs, per number of reader
 * threads, on the per-CPU horizon H_c and on the grace-period horizon
 * (PERFCLOCK_READER_GRACE_PERIOD), on the same load. A benchmark: it
 * prints a table and asserts nothing (scripts/percpu-bench.sh runs it).
 *
 *   bench_reader [--clock monotonic|perfclock] [--seconds S]
 *                [--threads 1,2,...] [--loads 4,16,...] [--pages N]
 *
 * Events: software context switches on every CPU (sample_period 1), one
 * ring per CPU (perfclock_evring). The load is demo_flush's token ring
 * (user/demo/load.c) in a child process, LOAD threads over every CPU, so
 * that this process's context switches (getrusage(RUSAGE_SELF): the
 * merger and the reader threads) are the reader's own. Per run: events
 * delivered per second, records the kernel lost, the reader's context
 * switches per second (voluntary: its sleeps and wakeups; involuntary),
 * the whole system's (/proc/stat ctxt), and the age of the horizons the
 * merger took (perfclock_reader_stats). "Sustained" is the largest
 * events/s of a run with 0 records lost.
 *
 *   bench_reader --loops [--clock ...] [--seconds S] [--loads LIST]
 *
 * instead compares the two loops a tool can be built on, README's "Write
 * a tool", on the same load one after the other: the threaded reader
 * (examples/tracer_threads.c: one thread per CPU on H_c, the caller
 * merging) and the round loop (examples/tracer.c: one thread, each round
 * perfclock_horizon(), perfclock_evring_drain(), flush below the
 * horizon, poll). Per run: events delivered per second; the hold, a
 * clock read at each delivery minus the event's stamp (p50, p99; the
 * cost of waiting for the horizon, the round and the merge); events
 * delivered LATE (below what was already delivered: the order broken)
 * beside it; this process's CPU time per second of tracing (user +
 * system, the load is a child's); records the kernel lost (ring full).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "libperfclock.h"
#include "perfclock_reader.h"
#include "../../user/demo/load.h"
#include "../../user/demo/hist.h"

#define MAX_LIST	16

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The system's context switches since boot (/proc/stat ctxt). */
static uint64_t sys_ctxt(void)
{
	char line[256];
	uint64_t v = 0;
	FILE *f = fopen("/proc/stat", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "ctxt %lu", &v) == 1)
			break;
	fclose(f);
	return v;
}

static int parse_list(const char *s, int *out)
{
	int n = 0;
	char *end;

	while (*s && n < MAX_LIST) {
		long v = strtol(s, &end, 10);

		if (end == s || v < 1) {
			fprintf(stderr, "bench_reader: bad list '%s'\n", s);
			exit(2);
		}
		out[n++] = (int)v;
		s = *end == ',' ? end + 1 : end;
	}
	return n;
}

static int count_cb(void *arg, const struct perfclock_event *ev)
{
	(void)ev;
	++*(uint64_t *)arg;
	return 0;
}

/* What a loop run's deliver callback records. */
struct loop_seen {
	struct perfclock *clk;
	struct hist hold;
	uint64_t delivered, late;
	int err;
};

static int hold_cb(void *arg, const struct perfclock_event *ev)
{
	struct loop_seen *ls = arg;
	uint64_t now;

	ls->delivered++;
	if (ev->flags & PERFCLOCK_EVENT_LATE)
		ls->late++;
	if (ev->flags & PERFCLOCK_EVENT_UNTIMED)
		return 0;
	if (perfclock_read(ls->clk, &now)) {
		ls->err = 1;
		return 0;
	}
	hist_add(&ls->hold, now > ev->time ? now - ev->time : 0);
	return 0;
}

/* The load, in a child: LOAD threads passing tokens over every CPU for secs. */
static pid_t start_load(int load, double secs)
{
	pid_t pid = fork();

	if (pid)
		return pid;
	{
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		int cpus[1024], i, n = ncpu > 1024 ? 1024 : (int)ncpu;
		struct timespec ts = { (time_t)secs,
				       (long)((secs - (time_t)secs) * 1e9) };
		struct load *l;

		for (i = 0; i < n; i++)
			cpus[i] = i;
		l = load_start(load, cpus, n, 0, LOAD_SB_NONE);
		if (!l)
			_exit(1);
		load_go(l);
		nanosleep(&ts, NULL);
		load_stop(l);
		_exit(0);
	}
}

struct result {
	double ev_s, csw_vol_s, csw_invol_s, sys_csw_s, wakeups_s;
	uint64_t lost, age_p50, age_p99;
	uint32_t nr_threads, rings_percpu;
};

/* The events every run traces: a context switch on every CPU, a ring each. */
static struct perfclock_evring *open_evring(struct perfclock *clk, unsigned int pages)
{
	static struct perf_event_attr attr;
	struct perfclock_evring_config ec;
	struct perfclock_evring *er;

	memset(&attr, 0, sizeof(attr));
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	attr.sample_period = 1;
	attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
	attr.sample_id_all = 1;
	attr.disabled = 1;
	perfclock_evring_config_init(&ec);
	ec.attrs = &attr;
	ec.nr_attrs = 1;
	ec.data_pages = pages;
	er = perfclock_evring_open(clk, &ec);
	if (!er)
		fprintf(stderr, "bench_reader: perfclock_evring_open: %s\n", strerror(errno));
	return er;
}

static int run_one(struct perfclock *clk, int threads, int gp, int load,
		   double secs, unsigned int pages, struct result *res)
{
	struct perfclock_reader_config rc;
	struct perfclock_reader_stats st;
	struct perfclock_evring *er = open_evring(clk, pages);
	struct perfclock_reader *r;
	struct rusage ru0, ru1;
	uint64_t delivered = 0, t0, t1, c0, c1;
	int64_t got;
	pid_t child;
	int status;

	if (!er)
		return -1;
	perfclock_reader_config_init(&rc);
	rc.max_threads = (uint32_t)threads;
	rc.flags = gp ? PERFCLOCK_READER_GRACE_PERIOD : 0;
	rc.deliver = count_cb;
	rc.arg = &delivered;
	r = perfclock_reader_start(clk, er, &rc);
	if (!r) {
		fprintf(stderr, "bench_reader: perfclock_reader_start: %s\n", strerror(errno));
		perfclock_evring_close(er);
		return -1;
	}
	perfclock_evring_enable(er);
	getrusage(RUSAGE_SELF, &ru0);
	c0 = sys_ctxt();
	t0 = mono_ns();
	child = start_load(load, secs);
	while (waitpid(child, &status, WNOHANG) == 0) {
		got = perfclock_reader_deliver(r, 100);
		if (got < 0) {
			fprintf(stderr, "bench_reader: deliver: %s\n", strerror((int)-got));
			break;
		}
	}
	t1 = mono_ns();
	c1 = sys_ctxt();
	getrusage(RUSAGE_SELF, &ru1);
	perfclock_evring_disable(er);
	perfclock_reader_stop(r);
	perfclock_reader_get_stats(r, &st);
	res->ev_s = delivered / ((t1 - t0) / 1e9);
	res->csw_vol_s = (ru1.ru_nvcsw - ru0.ru_nvcsw) / ((t1 - t0) / 1e9);
	res->csw_invol_s = (ru1.ru_nivcsw - ru0.ru_nivcsw) / ((t1 - t0) / 1e9);
	res->sys_csw_s = (c1 - c0) / ((t1 - t0) / 1e9);
	res->wakeups_s = st.wakeups / ((t1 - t0) / 1e9);
	res->lost = st.lost;
	res->age_p50 = st.age_p50_ns;
	res->age_p99 = st.age_p99_ns;
	res->nr_threads = st.nr_threads;
	res->rings_percpu = st.rings_percpu;
	perfclock_reader_free(r);
	perfclock_evring_close(er);
	return 0;
}

static double cpu_s(const struct rusage *a, const struct rusage *b)
{
	return (b->ru_utime.tv_sec - a->ru_utime.tv_sec) +
	       (b->ru_utime.tv_usec - a->ru_utime.tv_usec) / 1e6 +
	       (b->ru_stime.tv_sec - a->ru_stime.tv_sec) +
	       (b->ru_stime.tv_usec - a->ru_stime.tv_usec) / 1e6;
}

/*
 * One run of a tool loop over load for secs: threaded (the reader) or
 * not (the round loop). Prints its row; 0 or -1.
 */
static int loop_run(struct perfclock *clk, int threaded, int load, double secs,
		    unsigned int pages)
{
	static struct loop_seen ls;	/* its histogram: 15 KiB */
	struct perfclock_evring *er = open_evring(clk, pages);
	struct perfclock_reader *r = NULL;
	struct perfclock_queue *q = NULL;
	struct perfclock_drain_stats dst;
	struct rusage ru0, ru1;
	uint64_t t0, t1, lost = 0, h;
	int64_t got = 0;
	pid_t child;
	int status;

	if (!er)
		return -1;
	memset(&ls, 0, sizeof(ls));
	memset(&dst, 0, sizeof(dst));
	ls.clk = clk;
	if (threaded) {
		struct perfclock_reader_config rc;

		perfclock_reader_config_init(&rc);
		rc.deliver = hold_cb;
		rc.arg = &ls;
		r = perfclock_reader_start(clk, er, &rc);
		if (!r)
			fprintf(stderr, "bench_reader: perfclock_reader_start: %s\n", strerror(errno));
	} else {
		struct perfclock_queue_config qc;

		perfclock_queue_config_init(&qc);
		qc.nr_sources = (uint32_t)perfclock_evring_nr_rings(er);
		qc.deliver = hold_cb;
		qc.arg = &ls;
		q = perfclock_queue_new(&qc);
		if (!q)
			fprintf(stderr, "bench_reader: perfclock_queue_new: %s\n", strerror(errno));
	}
	if (!r && !q) {
		perfclock_evring_close(er);
		return -1;
	}
	perfclock_evring_enable(er);
	getrusage(RUSAGE_SELF, &ru0);
	t0 = mono_ns();
	child = start_load(load, secs);
	while (got >= 0 && waitpid(child, &status, WNOHANG) == 0) {
		if (threaded) {
			got = perfclock_reader_deliver(r, 100);
			continue;
		}
		/* examples/tracer.c's round: the horizon first, every ring, flush. */
		got = perfclock_horizon(clk, &h);
		if (!got)
			got = perfclock_evring_drain(er, q, &dst);
		if (got >= 0)
			got = perfclock_queue_flush_until(q, h);
		if (got >= 0) {
			int err = perfclock_evring_poll(er, 100);

			got = err < 0 && err != -EINTR ? err : 0;
		}
	}
	if (got < 0) {
		fprintf(stderr, "bench_reader: %s loop: %s\n", threaded ? "reader" : "round",
			strerror((int)-got));
		kill(child, SIGKILL);
		waitpid(child, &status, 0);
	}
	t1 = mono_ns();
	getrusage(RUSAGE_SELF, &ru1);
	perfclock_evring_disable(er);
	if (threaded) {
		struct perfclock_reader_stats st;

		perfclock_reader_stop(r);
		perfclock_reader_get_stats(r, &st);
		lost = st.lost;
		perfclock_reader_free(r);
	} else {
		perfclock_evring_drain(er, q, &dst);
		perfclock_queue_flush_all(q);
		lost = dst.lost;
		perfclock_queue_free(q);
	}
	perfclock_evring_close(er);
	printf("%-14s %5d %12.0f %10lu %8lu %8.2fms %8.2fms %9.3f\n",
	       threaded ? "threaded" : "round loop", load,
	       ls.delivered / ((t1 - t0) / 1e9), (unsigned long)lost,
	       (unsigned long)ls.late, hist_pct(&ls.hold, 50) / 1e6,
	       hist_pct(&ls.hold, 99) / 1e6, cpu_s(&ru0, &ru1) / ((t1 - t0) / 1e9));
	fflush(stdout);
	return got < 0 || ls.err ? -1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "clock", required_argument, NULL, 'c' },
		{ "seconds", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "loads", required_argument, NULL, 'l' },
		{ "pages", required_argument, NULL, 'p' },
		{ "loops", no_argument, NULL, 'L' },
		{ NULL, 0, NULL, 0 },
	};
	int threads[MAX_LIST] = { 1, 2 }, loads[MAX_LIST] = { 4, 16, 64 };
	int nt = 2, nl = 3, ti, li, gp, c, monotonic = 1, loops = 0;
	unsigned int pages = 64;
	double secs = 3;
	struct perfclock *clk;
	struct perfclock_clock_info info;

	while ((c = getopt_long(argc, argv, "c:s:t:l:p:", lo, NULL)) != -1) {
		switch (c) {
		case 'c':
			monotonic = !strcmp(optarg, "monotonic");
			break;
		case 's':
			secs = atof(optarg);
			break;
		case 't':
			nt = parse_list(optarg, threads);
			break;
		case 'l':
			nl = parse_list(optarg, loads);
			break;
		case 'p':
			pages = (unsigned int)atoi(optarg);
			break;
		case 'L':
			loops = 1;
			break;
		default:
			fprintf(stderr, "usage: bench_reader [--clock monotonic|perfclock] [--seconds S] [--threads LIST] [--loads LIST] [--pages N] [--loops]\n");
			return 2;
		}
	}
	clk = monotonic ? perfclock_open_clockid(CLOCK_MONOTONIC) : perfclock_open(NULL);
	if (!clk || perfclock_get_info(clk, &info)) {
		fprintf(stderr, "bench_reader: cannot open the clock: %s\n", strerror(errno));
		return 1;
	}
	printf("# bench_reader: %s, %ld CPUs, %.1f s per run, %u pages per ring; per-CPU horizon %s, grace-period horizon %s\n",
	       monotonic ? "CLOCK_MONOTONIC" : "perf_clock", sysconf(_SC_NPROCESSORS_ONLN),
	       secs, pages, perfclock_horizon_cpu_name(&info), perfclock_horizon_name(&info));
	if (loops) {
		printf("# the two tool loops (README, \"Write a tool\") on the same load, one after the other; hold: a clock read at delivery minus the stamp\n");
		printf("%-14s %5s %12s %10s %8s %10s %10s %9s\n", "loop", "load", "events/s",
		       "lost", "late", "hold p50", "hold p99", "CPU s/s");
		for (li = 0; li < nl; li++)
			for (c = 1; c >= 0; c--)
				if (loop_run(clk, c, loads[li], secs, pages))
					return 1;
		perfclock_close(clk);
		return 0;
	}
	printf("%-8s %-8s %5s %12s %10s %12s %12s %12s %12s %10s %10s\n", "horizon",
	       "threads", "load", "events/s", "lost", "rd vcsw/s", "rd ivcsw/s",
	       "sys csw/s", "wakeups/s", "age p50", "age p99");
	for (ti = 0; ti < nt; ti++) {
		double best[2] = { 0, 0 };

		for (gp = 0; gp < 2; gp++) {
			for (li = 0; li < nl; li++) {
				struct result res;

				memset(&res, 0, sizeof(res));
				if (run_one(clk, threads[ti], gp, loads[li], secs, pages, &res))
					return 1;
				printf("%-8s %-8d %5d %12.0f %10lu %12.0f %12.0f %12.0f %12.0f %8.2fms %8.2fms\n",
				       gp ? "gp" : "percpu", res.nr_threads, loads[li], res.ev_s,
				       (unsigned long)res.lost, res.csw_vol_s, res.csw_invol_s,
				       res.sys_csw_s, res.wakeups_s, res.age_p50 / 1e6,
				       res.age_p99 / 1e6);
				fflush(stdout);
				if (!res.lost && res.ev_s > best[gp])
					best[gp] = res.ev_s;
			}
		}
		printf("SUSTAINED threads=%d percpu=%.0f gp=%.0f (events/s of the best run with 0 lost)\n",
		       threads[ti], best[0], best[1]);
	}
	perfclock_close(clk);
	return 0;
}
