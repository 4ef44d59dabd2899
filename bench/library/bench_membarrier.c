// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * bench_membarrier: what the library's membarrier horizon costs
 * (docs/membarrier-horizon.md), without the module, in the format of
 * bench/module/perfclock_horizon_bench.c so that the two tables of one
 * guest boot sit side by side (scripts/guest/bench.sh runs this one first,
 * before the module is loaded):
 *
 *  - what it costs the rest of the machine: interrupts per second from
 *    /proc/interrupts (CAL: function-call IPIs, RES: reschedule IPIs, LOC:
 *    local timer) with no clock open, and with a CLOCK_MONOTONIC clock
 *    whose helper thread keeps the horizon fresh (one barrier per period);
 *  - idle and with a spinner on every CPU: the horizon's age (a clock read
 *    minus perfclock_horizon()), sampled every millisecond; the cost of a
 *    perfclock_horizon() call; perfclock_horizon_sync() (read and two
 *    barriers on the caller's thread); the helper thread's barrier wait.
 *
 * Not a test: it asserts nothing and prints tables. Under TCG only the
 * ratios within one boot mean anything.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libperfclock.h"
#include "horizon_membarrier.h"
#include "clock_internal.h"
#include "../bench_util.h"

#define MAX_SAMPLES	200000

static void measure_irqs(const char *what, int seconds)
{
	double cal = 0, res = 0, loc_max = 0, loc_sum = 0;
	struct irq_rows a, b;

	usleep(200000);
	read_irq_rows(&a);
	sleep(seconds);
	read_irq_rows(&b);
	for (int i = 0; i < ncpus; i++) {
		double loc = (b.loc[i] - a.loc[i]) / (double)seconds;

		cal += (b.cal[i] - a.cal[i]) / (double)seconds;
		res += (b.res[i] - a.res[i]) / (double)seconds;
		loc_sum += loc;
		if (loc > loc_max)
			loc_max = loc;
	}
	printf("%-34s %10.0f %10.0f %12.0f %12.0f\n", what, cal, res,
	       loc_sum, loc_max);
}

/* ---- the horizon ---- */

static void row(const char *load, const char *path, const char *what,
		size_t n, double p50_us, double p99_us)
{
	printf("%-8s %-10s %-24s %8zu %12.1f %12.1f\n", load, path, what, n,
	       p50_us, p99_us);
}

static void bench_age(struct perfclock *clk, const char *load, int seconds)
{
	static uint64_t v[MAX_SAMPLES];
	uint64_t end = mono_ns() + seconds * 1000000000ULL, h, now;
	size_t n = 0;

	while (mono_ns() < end && n < MAX_SAMPLES) {
		if (perfclock_horizon(clk, &h) || perfclock_read(clk, &now))
			break;
		v[n++] = now > h ? now - h : 0;
		usleep(1000);
	}
	row(load, "membarrier", "horizon age", n, pct(v, n, 50) / 1e3,
	    pct(v, n, 99) / 1e3);
}

/* perfclock_horizon() call by call (each timed: the timer is in it). */
static void bench_call(struct perfclock *clk, const char *load, int seconds)
{
	static uint64_t v[MAX_SAMPLES];
	uint64_t end = mono_ns() + seconds * 1000000000ULL, t0, h;
	size_t n = 0;

	while (mono_ns() < end && n < MAX_SAMPLES) {
		t0 = mono_ns();
		if (perfclock_horizon(clk, &h))
			break;
		v[n++] = mono_ns() - t0;
	}
	/* Tens of nanoseconds: three decimals of a microsecond. */
	printf("%-8s %-10s %-24s %8zu %12.3f %12.3f\n", load, "membarrier",
	       "perfclock_horizon() call", n, pct(v, n, 50) / 1e3,
	       pct(v, n, 99) / 1e3);
}

static void bench_sync(struct perfclock *clk, const char *load, int seconds)
{
	static uint64_t v[MAX_SAMPLES];
	uint64_t end = mono_ns() + seconds * 1000000000ULL, t0, h;
	size_t n = 0;

	while (mono_ns() < end && n < MAX_SAMPLES) {
		t0 = mono_ns();
		if (perfclock_horizon_sync(clk, 0, &h))
			break;
		v[n++] = mono_ns() - t0;
	}
	row(load, "membarrier", "horizon_sync (2 barriers)", n,
	    pct(v, n, 50) / 1e3, pct(v, n, 99) / 1e3);
}

/* The helper thread's barriers over a window: count and mean wait. */
static void bench_thread(struct perfclock *clk, const char *load, int seconds)
{
	struct perfclock_mb_stats a, b;
	uint64_t h;

	perfclock_horizon(clk, &h);
	perfclock_mb__get_stats(clk->hz_state, &a);
	sleep(seconds);
	perfclock_mb__get_stats(clk->hz_state, &b);
	printf("%-8s %-10s %-24s %8llu %12.1f %12.1f   (barriers/s; max wait us)\n",
	       load, "thread", "barriers, wait",
	       (unsigned long long)(b.barriers - a.barriers),
	       (double)(b.barriers - a.barriers) / seconds,
	       b.max_wait_ns / 1e3);
}

int main(int argc, char **argv)
{
	const char *regime = argc > 1 ? argv[1] : "?";
	int seconds = argc > 2 ? atoi(argv[2]) : 5;
	struct perfclock_clock_info info;
	struct perfclock *clk;
	uint64_t h;

	ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpus > MAX_CPUS)
		ncpus = MAX_CPUS;

	printf("# regime %s, %d CPUs, no module: the membarrier horizon; interrupts per second, all CPUs (LOC: sum and busiest CPU)\n",
	       regime, ncpus);
	printf("%-34s %10s %10s %12s %12s\n", "state", "CAL", "RES", "LOC", "LOC max");
	measure_irqs("no clock open", seconds);

	clk = perfclock_open_clockid(CLOCK_MONOTONIC);
	if (!clk || perfclock_get_info(clk, &info)) {
		perror("perfclock_open_clockid(CLOCK_MONOTONIC)");
		return 1;
	}
	if (!(info.flags & PERFCLOCK_CLOCK_HORIZON_MEMBARRIER)) {
		fprintf(stderr, "bench_membarrier: the horizon is %s, not membarrier's (module loaded? nohz_full?)\n",
			perfclock_horizon_name(&info));
		return 1;
	}
	perfclock_horizon(clk, &h);	/* starts the helper thread */
	measure_irqs("membarrier thread running", seconds);

	printf("# regime %s: the membarrier horizon (microseconds)\n", regime);
	printf("%-8s %-10s %-24s %8s %12s %12s\n", "load", "path", "what", "n",
	       "p50 us", "p99 us");
	for (int busy = 0; busy < 2; busy++) {
		const char *load = busy ? "busy" : "idle";

		if (busy)
			load_start();
		bench_thread(clk, load, seconds);
		bench_age(clk, load, seconds);
		bench_call(clk, load, seconds);
		bench_sync(clk, load, seconds);
		if (busy)
			load_stop();
	}
	perfclock_close(clk);
	return 0;
}
