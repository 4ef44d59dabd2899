/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the guest benches that measure a horizon's cost share
 * (module/perfclock_horizon_bench.c, library/bench_membarrier.c): the
 * clock they time with, percentiles, a spinner per CPU for the "busy"
 * rows, and the per-CPU interrupt counts of /proc/interrupts. Header
 * only: each bench is one static program for the guest.
 */
#ifndef PERFCLOCK_BENCH_UTIL_H
#define PERFCLOCK_BENCH_UTIL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_CPUS	64

/* The online CPUs the bench looks at, at most MAX_CPUS (main sets it). */
static int ncpus;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The p-th percentile of v[0..n) (sorts v). */
static uint64_t pct(uint64_t *v, size_t n, int p)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[(n - 1) * p / 100];
}

/* ---- load: one spinner per CPU ---- */

static atomic_int spin_stop;
static pthread_t spinners[MAX_CPUS];

static void *spinner(void *arg)
{
	volatile uint64_t x = 0;

	(void)arg;
	while (!atomic_load_explicit(&spin_stop, memory_order_relaxed))
		x++;
	return NULL;
}

static void load_start(void)
{
	atomic_store(&spin_stop, 0);
	for (int i = 0; i < ncpus; i++)
		pthread_create(&spinners[i], NULL, spinner, NULL);
}

static void load_stop(void)
{
	atomic_store(&spin_stop, 1);
	for (int i = 0; i < ncpus; i++)
		pthread_join(spinners[i], NULL);
}

/* ---- interrupts per CPU ---- */

/* Function-call IPIs, reschedule IPIs and local timer interrupts. */
struct irq_rows {
	uint64_t cal[MAX_CPUS], res[MAX_CPUS], loc[MAX_CPUS];
};

/* The CAL, RES and LOC rows of /proc/interrupts; zeros if unreadable. */
static void read_irq_rows(struct irq_rows *s)
{
	char line[4096], name[32];
	FILE *f = fopen("/proc/interrupts", "r");

	memset(s, 0, sizeof(*s));
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		uint64_t *row = NULL;
		char *p, *end;
		int cpu;

		if (sscanf(line, " %31[^:]:", name) != 1)
			continue;
		if (!strcmp(name, "CAL"))
			row = s->cal;
		else if (!strcmp(name, "RES"))
			row = s->res;
		else if (!strcmp(name, "LOC"))
			row = s->loc;
		if (!row)
			continue;
		p = strchr(line, ':') + 1;
		for (cpu = 0; cpu < ncpus; cpu++) {
			row[cpu] = strtoull(p, &end, 10);
			if (end == p)
				break;
			p = end;
		}
	}
	fclose(f);
}

#endif /* PERFCLOCK_BENCH_UTIL_H */
