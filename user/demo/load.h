/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * demo_flush: the built-in load. N threads in a ring, thread i pinned to
 * the i-th online CPU (mod the CPU count), each blocking on its pipe and
 * passing a token to the next thread's pipe. N/2 tokens (at least one)
 * circulate, so every hop is a cross-CPU wakeup followed by two context
 * switches: sched_wakeup and sched_switch at a high rate on every CPU.
 */
#ifndef DEMO_LOAD_H
#define DEMO_LOAD_H

#include <stdint.h>

struct load;

/* Start n threads over the given CPUs. NULL with errno on failure. */
struct load *load_start(int n, const int *cpus, int nr_cpus);
/* Stop and join; returns the number of token hops made. */
uint64_t load_stop(struct load *l);

#endif /* DEMO_LOAD_H */
