// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What the membarrier helper costs the machine (docs/horizon-cost.md,
 * "The library's helper"): per second, over all CPUs, local timer
 * interrupts (LOC), reschedule (RES) and function-call (CAL) IPIs
 * (/proc/interrupts), context switches (/proc/stat ctxt), switches of the
 * RCU grace-period kthread (rcu_preempt or rcu_sched; several per grace
 * period) and the helper's barriers; and the horizon's age (a read minus
 * the horizon, at each call). States, each for SECONDS (argv[1], default
 * 5): no clock; CLOCK_MONOTONIC open, a horizon asked every millisecond
 * (a live tool's rounds); open, then no horizon asked (a tool idle).
 * Not a test and not asserted: link it against two libraries and compare
 * rows of one run (a shared, loaded machine).
 *
 *	cc -O2 -D_GNU_SOURCE -Iuser -o bench_mb_cost \
 *		user/tests/bench_mb_cost.c LIB/libperfclock.a -lpthread
 */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libperfclock.h"
#include "clock_internal.h"
#include "horizon_membarrier.h"

struct counters {
	unsigned long long loc, res, cal, ctxt, gp;
	double t;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The sum of a /proc/interrupts row over CPUs. */
static unsigned long long irq_row(const char *line)
{
	unsigned long long sum = 0;
	const char *p = strchr(line, ':') + 1;
	char *end;

	for (;;) {
		unsigned long long v = strtoull(p, &end, 10);

		if (end == p)
			return sum;
		sum += v;
		p = end;
	}
}

static int gp_pid(void)
{
	char path[300], comm[32];
	struct dirent *d;
	DIR *dir = opendir("/proc");
	int pid = -1;
	FILE *f;

	while (dir && pid < 0 && (d = readdir(dir))) {
		if (!isdigit((unsigned char)d->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) &&
		    (!strcmp(comm, "rcu_preempt\n") || !strcmp(comm, "rcu_sched\n")))
			pid = atoi(d->d_name);
		fclose(f);
	}
	if (dir)
		closedir(dir);
	return pid;
}

static void sample(struct counters *c, int gp)
{
	char line[4096], path[64];
	FILE *f;

	memset(c, 0, sizeof(*c));
	f = fopen("/proc/interrupts", "r");
	while (f && fgets(line, sizeof(line), f)) {
		const char *p = line + strspn(line, " ");

		if (!strncmp(p, "LOC:", 4))
			c->loc = irq_row(p);
		else if (!strncmp(p, "RES:", 4))
			c->res = irq_row(p);
		else if (!strncmp(p, "CAL:", 4))
			c->cal = irq_row(p);
	}
	if (f)
		fclose(f);
	f = fopen("/proc/stat", "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "ctxt ", 5))
			c->ctxt = strtoull(line + 5, NULL, 10);
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/status", gp);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "voluntary_ctxt_switches:", 24))
			c->gp += strtoull(line + 24, NULL, 10);
		else if (!strncmp(line, "nonvoluntary_ctxt_switches:", 27))
			c->gp += strtoull(line + 27, NULL, 10);
	if (f)
		fclose(f);
	c->t = now_s();
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void row(const char *what, const struct counters *a,
		const struct counters *b, double barriers, double *age, int n)
{
	double dt = b->t - a->t;

	if (n)
		qsort(age, (size_t)n, sizeof(*age), cmp);
	printf("%-34s %7.0f %7.0f %7.0f %8.0f %7.0f %9.0f %9.2f %9.2f\n", what,
	       (double)(b->loc - a->loc) / dt, (double)(b->res - a->res) / dt,
	       (double)(b->cal - a->cal) / dt, (double)(b->ctxt - a->ctxt) / dt,
	       (double)(b->gp - a->gp) / dt, barriers / dt,
	       n ? age[n / 2] / 1e6 : 0, n ? age[n * 99 / 100] / 1e6 : 0);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5, end;
	struct perfclock_mb_stats s0, s1;
	struct counters a, b;
	struct perfclock *clk;
	int gp = gp_pid(), n = 0, cap;
	uint64_t h, r;
	double *age;

	cap = (int)(secs * 1000) + 16;
	age = calloc((size_t)cap, sizeof(*age));
	if (!age)
		return 1;
	printf("%-34s %7s %7s %7s %8s %7s %9s %9s %9s\n", "per second, all CPUs",
	       "LOC", "RES", "CAL", "ctxt", "GP kthr", "barriers", "age p50ms",
	       "age p99ms");
	sample(&a, gp);
	usleep((useconds_t)(secs * 1e6));
	sample(&b, gp);
	row("no clock open", &a, &b, 0, age, 0);

	clk = perfclock_open_clockid(CLOCK_MONOTONIC);
	if (!clk || perfclock_horizon(clk, &h))
		return 1;
	usleep(100000);
	memset(&s0, 0, sizeof(s0));
	memset(&s1, 0, sizeof(s1));
	perfclock_mb__get_stats(clk->hz_state, &s0);
	sample(&a, gp);
	end = a.t + secs;
	while (now_s() < end) {
		if (perfclock_horizon(clk, &h) || perfclock_read(clk, &r))
			return 1;
		if (n < cap)
			age[n++] = (double)(r - h);
		usleep(1000);
	}
	sample(&b, gp);
	perfclock_mb__get_stats(clk->hz_state, &s1);
	row("open, a horizon every ms", &a, &b,
	    (double)(s1.barriers - s0.barriers), age, n);

	/* Idle: the first second still counts as asked-for; skip it. */
	usleep(1500000);
	perfclock_mb__get_stats(clk->hz_state, &s0);
	sample(&a, gp);
	usleep((useconds_t)(secs * 1e6));
	sample(&b, gp);
	perfclock_mb__get_stats(clk->hz_state, &s1);
	row("open, no horizon asked", &a, &b,
	    (double)(s1.barriers - s0.barriers), age, 0);
	perfclock_close(clk);
	free(age);
	return 0;
}
