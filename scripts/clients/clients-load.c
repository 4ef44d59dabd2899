// SPDX-License-Identifier: GPL-2.0
/*
 * clients-load: the demo's cross-CPU load (user/demo/load.c) as a program
 * of its own, for tools that collect tracepoints while it runs
 * (scripts/check-clients.sh: LinuxTracepoints' perf-collect).
 *
 *   clients-load SHAPE SECONDS [THREADS_PER_CPU]
 *
 * Shapes, as the demo's scenarios of the same names (scripts/demo.sh):
 *   busy       THREADS_PER_CPU (default 4) threads per online CPU in a
 *              ring, passing tokens across every CPU: sched_switch and
 *              sched_wakeup at a high rate on every CPU;
 *   irq-mixed  busy, each thread renaming itself at every hop
 *              (prctl(PR_SET_NAME): task:task_rename), for a session that
 *              also traces irq-context tracepoints;
 *   quiet      the ring on CPU 0 only (CPUs 0-1 with more than 4 CPUs),
 *              and on every other CPU one ticker thread that writes and
 *              reads one byte every 2 s: the other CPUs' rings stay
 *              silent for seconds at a time.
 * Prints "clients-load: SHAPE hops=N ticks=N seconds=S" at the end.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../user/demo/load.h"

static int usage(void)
{
	fprintf(stderr, "usage: clients-load busy|irq-mixed|quiet SECONDS [THREADS_PER_CPU]\n");
	return 64;
}

int main(int argc, char **argv)
{
	int cpus[CPU_SETSIZE], nr = 0, nr_load, per_cpu = 4, side_band = LOAD_SB_NONE, i;
	struct ticker *tk = NULL;
	struct load *l;
	cpu_set_t set;
	uint64_t hops, ticks = 0;
	long seconds;

	if (argc < 3 || argc > 4)
		return usage();
	seconds = strtol(argv[2], NULL, 10);
	if (argc == 4)
		per_cpu = atoi(argv[3]);
	if (seconds < 1 || per_cpu < 1)
		return usage();
	if (sched_getaffinity(0, sizeof(set), &set)) {
		perror("clients-load: sched_getaffinity");
		return 1;
	}
	for (i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &set))
			cpus[nr++] = i;
	nr_load = nr;
	if (!strcmp(argv[1], "irq-mixed")) {
		side_band = LOAD_SB_COMM;
	} else if (!strcmp(argv[1], "quiet")) {
		if (nr < 2) {
			fprintf(stderr, "clients-load: quiet needs two CPUs\n");
			return 1;
		}
		nr_load = nr > 4 ? 2 : 1;
		tk = ticker_start(cpus + nr_load, nr - nr_load, 2000);
		if (!tk) {
			perror("clients-load: ticker");
			return 1;
		}
	} else if (strcmp(argv[1], "busy")) {
		return usage();
	}
	l = load_start(per_cpu * nr_load, cpus, nr_load, 0, side_band);
	if (!l) {
		perror("clients-load: load");
		return 1;
	}
	load_go(l);
	sleep((unsigned int)seconds);
	hops = load_stop(l);
	if (tk)
		ticks = ticker_stop(tk);
	printf("clients-load: %s hops=%llu ticks=%llu seconds=%ld\n", argv[1],
	       (unsigned long long)hops, (unsigned long long)ticks, seconds);
	return 0;
}
