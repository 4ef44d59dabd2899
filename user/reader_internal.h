/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The threaded reader's private state, shared by its two files:
 * evring_reader.c (the reader threads, start, release) and, above it,
 * reader_merge.c (the merger: deliver, stop, free, stats).
 * Library-private; not installed.
 */
#ifndef PERFCLOCK_READER_INTERNAL_H
#define PERFCLOCK_READER_INTERNAL_H

#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "libperfclock.h"
#include "perfclock_reader.h"

/* One record in a batch; its bytes follow, padded to 8. */
struct reader_entry {
	uint64_t time;
	uint32_t ring;
	uint32_t size;
	uint32_t flags;		/* PERFCLOCK_EVENT_UNTIMED or 0 */
	uint32_t attr;		/* perfclock_event::attr_idx */
};

struct reader_batch {
	struct reader_batch *next;
	size_t len, cap;
	unsigned char *buf;
};

struct reader_ring {
	int idx, cpu, fd;
	int thread;			/* index of the thread that drains it */
	struct perfclock_ring *ring;
	/* Owned by the ring's thread (the merger's once joined). */
	int kind;			/* enum perfclock_reader_horizon */
	int mismatch;			/* H_c reads off its CPU, in a row */
	uint64_t errors;
	/*
	 * Under the thread's lock: what the thread publishes (horizon,
	 * fallbacks, lost, errors). records and untimed are the merger's.
	 */
	struct perfclock_reader_ring_stats shared;
};

/*
 * THE PER-TASK HORIZON (evring_reader.c): one slot per CPU online at
 * start, its latest H_c, read on it by the thread that visits it.
 */
struct reader_slot {
	int cpu;
	int mismatch;			/* the visiting thread's */
	/* Under r->slot_lock. */
	int valid;
	uint32_t gen;			/* perfclock_horizon_cpu_gen()'s */
	uint64_t h;
};

struct reader_thread {
	struct perfclock_reader *r;
	pthread_t tid;
	int nr;				/* rings it serves (may be 0) */
	struct reader_ring **rings;
	int nr_slots;			/* CPUs it reads H_c on, for the slots */
	struct reader_slot **slots;
	struct pollfd *pfd;		/* nr rings, then the stop eventfd */
	struct reader_batch *cur;	/* being filled; the thread's */
	/* Under lock: the hand-off (evring_reader.c, THE HAND-OFF). */
	pthread_mutex_t lock;
	struct reader_batch *full, **full_tail, *free;
	/*
	 * The thread's horizon and the generations it was read in, per
	 * source (READER_GEN_PERCPU: perfclock_horizon_cpu_gen(),
	 * READER_GEN_GP: perfclock_horizon_gen()); 0: source not used. The
	 * two count in different spaces (a clockid clock's H_c never
	 * restarts, the module's horizon for it may): never compared.
	 */
	int has_h;
	uint64_t h;
	uint32_t gen[2];
	uint64_t hseq;			/* bumped with every new h */
	int err;			/* sticky */
	/* The merger's: the last hseq it took. */
	uint64_t taken_seq;
};

/* What the merger took from one thread (reader_merge.c). */
struct reader_take {
	struct reader_batch *list;
	int has_h;
	uint64_t h;
	uint32_t gen[2];
};

enum { READER_GEN_PERCPU, READER_GEN_GP };

#define READER_AGE_BUCKETS	496

struct perfclock_reader {
	struct perfclock *clk;
	struct perfclock_evring *er;
	struct perfclock_reader_config cfg;
	pid_t pid;			/* of the process that started it */
	uint32_t period_us;
	int nr_rings, nr_threads, started;
	int other_kind;			/* GRACE_PERIOD or ESTIMATE */
	struct reader_ring *ring;
	/*
	 * THE PER-TASK HORIZON: a slot per online CPU (0 slots: no ring is
	 * a task's), under slot_lock; broken (atomic) once a CPU's H_c is
	 * lost or the online CPUs changed: every per-task ring then falls
	 * back. online_fd and online: /sys/devices/system/cpu/online, as
	 * it read at start.
	 */
	int nr_slots;
	struct reader_slot *slot;
	pthread_mutex_t slot_lock;
	int slots_broken;
	int online_fd;
	char online[256];
	struct reader_thread *th;
	struct reader_take *takes;	/* nr_threads, the merger's */
	struct perfclock_queue *q;
	int stop_fd;			/* eventfd, written at stop */
	int stop;			/* atomic */
	int stopped;			/* the merger's: stop() done */
	/* Wake-up of the merger: pending hand-offs, under lock. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_condattr_t condattr;
	uint64_t pending;
	/* atomics, the threads' */
	uint64_t rounds, wakeups, timeouts, eagain;
	/*
	 * THE HELD CAP: bytes of batches handed over and not yet taken
	 * (atomic; added at the hand-off, taken off by the merger), the cap
	 * on them (the queue's memory cap), and the rounds a thread skipped
	 * at it (atomic).
	 */
	uint64_t held, held_cap, held_waits;
	/* the merger's */
	uint64_t handoffs, delivered, limits, limit;
	uint32_t gen[2];		/* newest merged, per source; 0: none */
	int err;			/* sticky: a thread's */
	uint64_t age_count, age_max;
	uint64_t age_hist[READER_AGE_BUCKETS];
};

/*
 * evring_reader.c: a thread's life (started by reader_start.c); for the
 * merger, drain a ring into a batch; whether the online CPUs changed
 * since the per-task slots were made.
 */
void *perfclock_reader__thread_main(void *arg);
int perfclock_reader__drain(struct reader_ring *rr, struct reader_batch *b,
			    uint64_t *errors);
/* Copy ring rr's loss and error counts into its shared stats. */
void perfclock_reader__ring_stats(struct reader_ring *rr);
int perfclock_reader__online_changed(struct perfclock_reader *r);

/*
 * reader_start.c, for the merger: stop and join the threads; free
 * everything start() made (threads joined).
 */
void perfclock_reader__join(struct perfclock_reader *r);
void perfclock_reader__release(struct perfclock_reader *r);

#endif /* PERFCLOCK_READER_INTERNAL_H */
