// SPDX-License-Identifier: GPL-2.0
/*
 * The clock contract, stated once, here (the library's guest test and the
 * stress tester check what they add on top of it), through each exact
 * path (ioctl, and the page when it offers the current time):
 *  - bracket: a perf record produced between two reads on one CPU has a
 *    timestamp between them, on every CPU: the value is perf's clock;
 *  - monotonic on each CPU;
 *  - causal across CPUs within the advertised skew bound (exactly, when
 *    sched_clock is stable);
 *  - all of it with threads on every CPU reading both paths at once.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <time.h>

#include "kselftest_harness.h"
#include "perfclock_util.h"

#define BRACKET_ROUNDS		200
#define MONOTONIC_READS		20000
#define CAUSAL_ROUNDS		2000
#define THREADS_PER_CPU		2
#define THREADS_SECONDS		1

FIXTURE(clock) {
	int fd;
	struct perfclock_info info;
	const struct perfclock_page *pg;
	int cpus[CPU_SETSIZE];
	int ncpus;
	const char *skip;	/* why this variant can't run here */
};

FIXTURE_VARIANT(clock) {
	const char *path;
	pc_reader_fn read;
	int needs_page_fast;
};

FIXTURE_VARIANT_ADD(clock, ioctl) {
	.path = "ioctl",
	.read = pc_read_ioctl,
};

FIXTURE_VARIANT_ADD(clock, page) {
	.path = "page",
	.read = pc_read_page,
	.needs_page_fast = 1,
};

FIXTURE_SETUP(clock)
{
	self->fd = pc_open(O_RDONLY);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", PC_DEVICE, strerror(errno));
	ASSERT_EQ(0, pc_info(self->fd, &self->info));
	self->pg = pc_map(self->fd);
	ASSERT_NE(NULL, self->pg);
	self->ncpus = pc_cpus(self->cpus, CPU_SETSIZE);
	ASSERT_LT(0, self->ncpus);
	/*
	 * SKIP() in a 6.1 harness setup does not stop the test body: record
	 * the reason and let each test skip itself.
	 */
	if (variant->needs_page_fast && !pc_page_fast(self->pg))
		self->skip = "the page offers no current time in this regime";
}

#define SKIP_IF_UNAVAILABLE() do {					\
	if (self->skip)							\
		SKIP(return, "%s (sched_clock %s)", self->skip,		\
		     self->info.flags & PERFCLOCK_INFO_SCHED_CLOCK_STABLE ?	\
		     "stable" : "unstable");				\
} while (0)

FIXTURE_TEARDOWN(clock)
{
	pc_unmap(self->pg);
	close(self->fd);
}

/*
 * A PERF_RECORD_COMM from prctl(PR_SET_NAME) on this thread, stamped by
 * perf_clock() on this CPU, lies between a read before and a read after.
 */
TEST_F(clock, bracket)
{
	uint64_t before[BRACKET_ROUNDS], after[BRACKET_ROUNDS], ts[BRACKET_ROUNDS];
	struct pc_comm_ring ring;
	int i, k, n, err;

	SKIP_IF_UNAVAILABLE();

	for (i = 0; i < self->ncpus; i++) {
		ASSERT_EQ(0, pc_pin(self->cpus[i]));
		err = pc_comm_ring_open(&ring, -1);
		ASSERT_EQ(0, err) TH_LOG("perf_event_open: %s", strerror(-err));

		for (k = 0; k < BRACKET_ROUNDS; k++) {
			char name[16];

			snprintf(name, sizeof(name), "bracket%d", k);
			ASSERT_EQ(0, variant->read(self->fd, self->pg, &before[k]));
			ASSERT_EQ(0, prctl(PR_SET_NAME, name));
			ASSERT_EQ(0, variant->read(self->fd, self->pg, &after[k]));
		}
		n = pc_comm_ring_drain(&ring, ts, BRACKET_ROUNDS);
		pc_comm_ring_close(&ring);
		ASSERT_EQ(BRACKET_ROUNDS, n);

		for (k = 0; k < BRACKET_ROUNDS; k++) {
			ASSERT_LE(before[k], ts[k])
				TH_LOG("cpu %d round %d: %s read %llu, then record %llu",
				       self->cpus[i], k, variant->path,
				       (unsigned long long)before[k],
				       (unsigned long long)ts[k]);
			ASSERT_LE(ts[k], after[k])
				TH_LOG("cpu %d round %d: record %llu, then %s read %llu",
				       self->cpus[i], k, (unsigned long long)ts[k],
				       variant->path, (unsigned long long)after[k]);
		}
	}
}

/* Never backwards on one CPU. */
TEST_F(clock, monotonic_per_cpu)
{
	int i, k;

	SKIP_IF_UNAVAILABLE();

	for (i = 0; i < self->ncpus; i++) {
		uint64_t prev = 0, now;

		ASSERT_EQ(0, pc_pin(self->cpus[i]));
		for (k = 0; k < MONOTONIC_READS; k++) {
			ASSERT_EQ(0, variant->read(self->fd, self->pg, &now));
			ASSERT_LE(prev, now)
				TH_LOG("cpu %d read %d: %llu after %llu", self->cpus[i], k,
				       (unsigned long long)now, (unsigned long long)prev);
			prev = now;
		}
	}
}

/*
 * Ping-pong between two pinned threads: each reads the clock only after
 * seeing the other's last read, so its value must not be smaller by more
 * than the skew bound.
 */
struct causal_pair {
	int fd;
	const struct perfclock_page *pg;
	pc_reader_fn read;
	int cpu[2];
	_Atomic uint64_t turn;		/* round * 2 + whose turn */
	_Atomic uint64_t value;		/* the last read published */
	uint64_t worst_step;		/* largest value - own read seen */
	int error;
};

struct causal_side {
	struct causal_pair *pair;
	int side;
	uint64_t worst_step;
	int error;
};

static void *causal_side_fn(void *arg)
{
	struct causal_side *me = arg;
	struct causal_pair *p = me->pair;
	uint64_t round, mine, seen;

	if (pc_pin(p->cpu[me->side])) {
		me->error = -EINVAL;
		return NULL;
	}
	for (round = 0; round < 2 * CAUSAL_ROUNDS; round++) {
		if ((round & 1) != (uint64_t)me->side)
			continue;
		while (atomic_load_explicit(&p->turn, memory_order_acquire) != round)
			;
		seen = atomic_load_explicit(&p->value, memory_order_relaxed);
		if (p->read(p->fd, p->pg, &mine)) {
			me->error = -EIO;
			atomic_store_explicit(&p->turn, 2 * CAUSAL_ROUNDS, memory_order_release);
			return NULL;
		}
		if (pc_step_back(seen, mine) > me->worst_step)
			me->worst_step = pc_step_back(seen, mine);
		atomic_store_explicit(&p->value, mine, memory_order_relaxed);
		atomic_store_explicit(&p->turn, round + 1, memory_order_release);
	}
	return NULL;
}

TEST_F(clock, causal_across_cpus)
{
	uint64_t bound = self->info.skew_estimate_ns, worst = 0;
	int a, b;

	SKIP_IF_UNAVAILABLE();

	if (self->ncpus < 2)
		SKIP(return, "needs two CPUs");

	for (a = 0; a < self->ncpus; a++) {
		for (b = a + 1; b < self->ncpus; b++) {
			struct causal_pair pair = {
				.fd = self->fd, .pg = self->pg, .read = variant->read,
				.cpu = { self->cpus[a], self->cpus[b] },
			};
			struct causal_side side[2] = {
				{ .pair = &pair, .side = 0 },
				{ .pair = &pair, .side = 1 },
			};
			pthread_t t[2];
			int s;

			for (s = 0; s < 2; s++)
				ASSERT_EQ(0, pthread_create(&t[s], NULL, causal_side_fn, &side[s]));
			for (s = 0; s < 2; s++) {
				ASSERT_EQ(0, pthread_join(t[s], NULL));
				ASSERT_EQ(0, side[s].error);
				if (side[s].worst_step > worst)
					worst = side[s].worst_step;
				if (side[s].worst_step > bound)
					TH_LOG("%s: cpu %d read %llu ns below cpu %d's earlier read (bound at start %llu)",
					       variant->path, pair.cpu[s],
					       (unsigned long long)side[s].worst_step,
					       pair.cpu[!s], (unsigned long long)bound);
			}
		}
	}
	/*
	 * The bound the module advertises now: it grows with the timer
	 * lateness it sees, and a step is judged against what it knew.
	 */
	ASSERT_EQ(0, pc_info(self->fd, &self->info));
	bound = self->info.skew_estimate_ns;
	EXPECT_LE(worst, bound);
	TH_LOG("%s: worst backward step across CPUs %llu ns, bound %llu ns",
	       variant->path, (unsigned long long)worst, (unsigned long long)bound);
}

/* Every CPU, several threads each, both paths at once, for a second. */
struct reader_thread {
	int fd;
	const struct perfclock_page *pg;
	int cpu;
	int page_fast;
	_Atomic int *stop;
	uint64_t reads;
	char error[160];
};

static void *reader_thread_fn(void *arg)
{
	struct reader_thread *r = arg;
	uint64_t prev_page = 0, prev_io = 0, p = 0, io = 0;

	if (pc_pin(r->cpu)) {
		snprintf(r->error, sizeof(r->error), "pin to cpu %d failed", r->cpu);
		return NULL;
	}
	while (!atomic_load_explicit(r->stop, memory_order_relaxed)) {
		if (r->page_fast) {
			if (pc_read_page(r->fd, r->pg, &p)) {
				snprintf(r->error, sizeof(r->error), "page read failed");
				return NULL;
			}
			if (p < prev_page) {
				snprintf(r->error, sizeof(r->error),
					 "cpu %d: page %llu after %llu", r->cpu,
					 (unsigned long long)p, (unsigned long long)prev_page);
				return NULL;
			}
			prev_page = p;
		}
		/* Each path is monotonic, and the page is never ahead. */
		if (pc_read_ioctl(r->fd, NULL, &io) || io < prev_io || io < p) {
			snprintf(r->error, sizeof(r->error),
				 "cpu %d: ioctl %llu after ioctl %llu, page %llu", r->cpu,
				 (unsigned long long)io, (unsigned long long)prev_io,
				 (unsigned long long)p);
			return NULL;
		}
		prev_io = io;
		r->reads++;
	}
	return NULL;
}

TEST_F_TIMEOUT(clock, threads_every_cpu, 60)
{
	int nthreads = self->ncpus * THREADS_PER_CPU, i;
	struct reader_thread *r = calloc(nthreads, sizeof(*r));
	pthread_t *t = calloc(nthreads, sizeof(*t));
	_Atomic int stop = 0;
	uint64_t total = 0;

	ASSERT_NE(NULL, r);
	ASSERT_NE(NULL, t);
	/* One test covers both paths together; the ioctl variant runs it. */
	if (variant->needs_page_fast)
		SKIP(goto out, "covered by the ioctl variant, which reads both paths");

	for (i = 0; i < nthreads; i++) {
		r[i] = (struct reader_thread){
			.fd = self->fd, .pg = self->pg,
			.cpu = self->cpus[i % self->ncpus],
			.page_fast = pc_page_fast(self->pg), .stop = &stop,
		};
		ASSERT_EQ(0, pthread_create(&t[i], NULL, reader_thread_fn, &r[i]));
	}
	sleep(THREADS_SECONDS);
	atomic_store(&stop, 1);
	for (i = 0; i < nthreads; i++) {
		ASSERT_EQ(0, pthread_join(t[i], NULL));
		EXPECT_STREQ("", r[i].error);
		EXPECT_LT(0, r[i].reads);
		total += r[i].reads;
	}
	TH_LOG("%d threads, %llu reads, page path %s", nthreads,
	       (unsigned long long)total, pc_page_fast(self->pg) ? "on" : "off");
out:
	free(r);
	free(t);
}

TEST_HARNESS_MAIN
