/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * demo_flush: the built-in load. N threads in a ring, thread i pinned to
 * the i-th online CPU (mod the CPU count), each blocking on its pipe and
 * passing a token to the next thread's pipe. N/2 tokens (at least one)
 * circulate, so every hop is a cross-CPU wakeup followed by two context
 * switches: sched_wakeup and sched_switch at a high rate on every CPU.
 *
 * With migrate_every > 0 a thread moves itself to the next CPU of the
 * list (sched_setaffinity) every migrate_every hops instead of staying
 * pinned: the per-thread scenario, where one task's ring is written from
 * every CPU in turn. With side_band LOAD_SB_MMAP each hop also maps and
 * unmaps an anonymous page, as an allocator does for large blocks (a
 * PERF_RECORD_MMAP per hop for a tool that asks for them, attr.mmap_data;
 * the munmap's TLB shootdown makes it slow in a TCG guest); with
 * LOAD_SB_COMM the thread renames itself (prctl(PR_SET_NAME): a
 * PERF_RECORD_COMM per hop, attr.comm).
 *
 * The ticker (quiet scenario): one thread pinned to each given CPU that
 * every period writes a byte to its own pipe and reads it back, and does
 * nothing else: a ring that only these threads write to is silent for a
 * whole period at a time.
 */
#ifndef DEMO_LOAD_H
#define DEMO_LOAD_H

#include <stdint.h>

struct load;

struct ticker;

/* Start n threads over the given CPUs. NULL with errno on failure. */
enum { LOAD_SB_NONE, LOAD_SB_MMAP, LOAD_SB_COMM };

struct load *load_start(int n, const int *cpus, int nr_cpus, long migrate_every,
			int side_band);
/* The threads' tids (n of them), once every thread has started. */
void load_tids(struct load *l, int *tids);
/* Release the threads: until then they wait, their tokens unmoved. */
void load_go(struct load *l);
/* Stop and join; returns the number of token hops made. */
uint64_t load_stop(struct load *l);

/* One ticker thread per CPU in cpus[], a tick every period_ms. NULL with errno. */
struct ticker *ticker_start(const int *cpus, int nr_cpus, long period_ms);
/* Stop and join; returns the ticks made. */
uint64_t ticker_stop(struct ticker *t);

#endif /* DEMO_LOAD_H */
