// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libperfclock: the threaded reader (perfclock/reader.h). Reader threads,
 * each pinned to its CPU, read H_c and drain that CPU's ring; the
 * caller's thread merges (reader_merge.c). This file: what the threads
 * do, round after round; reader_start.c makes them (start()), joins and
 * frees them. It is below both: reader_start.c starts its threads and
 * reader_merge.c drains through it at stop; it calls neither.
 *
 * THE HAND-OFF. Each thread owns a batch it copies records into; at the
 * end of a round it takes th->lock, appends the batch to th->full and
 * stores the round's horizon in th->h, and unlocks. The merger takes
 * th->lock, takes th->h and the whole th->full list together, and
 * unlocks. Unlock is a release and lock an acquire (POSIX 4.12), so the
 * merger sees the batch bytes; and every record of the thread's rings
 * stamped below th->h is in a batch appended at or before th->h was
 * stored (the round read the horizon before draining), hence in the list
 * the merger took with it. The global limit is the minimum over threads
 * of what each gave: a record below it is in the merger's hands.
 *
 * THE HELD CAP. What the threads handed over and the merger has not
 * taken (a tool that stopped calling perfclock_reader_deliver(): piped
 * into a paused pager) is counted in r->held. At the cap (r->held_cap,
 * the config's held_cap_bytes) a thread skips its rounds whole: no
 * horizon, no drain, no hand-off, until the merger takes. Its rings fill and the kernel drops
 * and counts (PERF_RECORD_LOST, in the stats), as it does for any
 * reader that falls behind; the thread's last horizon stands, so no
 * record left in a ring lies below a limit the merger may use. What the
 * reader holds is at most the cap plus one round of each thread (a
 * drain of its rings, at most their size). The cap is held_cap_bytes,
 * by default half the queue's memory cap: a merger that takes it all at
 * once pushes it into the queue, which then needs that much room or
 * emits early (PERFCLOCK_EVENT_FORCED) and what follows is late.
 *
 * THE PER-TASK HORIZON. The ring of a per-task event (cpu -1,
 * PERFCLOCK_EVRING_PER_TASK) is written on whatever CPU its task runs
 * on, each record stamped and published on one CPU in one
 * non-preemptible section (docs/percpu-horizon.md, section 8). Every CPU
 * online at start has a slot; the threads visit them all (each its run
 * of CPUs, even a thread with no ring), read H_c on each and store it in
 * its slot under r->slot_lock (unlock: a release after the read). The
 * ring's thread then takes slot_lock (an acquire), takes the least valid
 * H_c of one generation over EVERY slot, and only then drains the ring.
 * A record stamped on CPU x below that minimum is below x's H_c, so it
 * was published on x before x's read, which the unlock orders before
 * the drain's load of data_head. A slot never read, or of another
 * generation, holds the ring's horizon that round; a CPU whose H_c is
 * lost for good (not pinned, read elsewhere, no H_c), or a change of the
 * online CPUs, breaks them all: every per-task ring falls back for good.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "perfclock_reader.h"
#include "internal.h"
#include "horizon_internal.h"
#include "reader_internal.h"

/* A thread gives up H_c for a ring after this many reads off its CPU. */
#define MISMATCH_FALLBACK	3
#define EAGAIN_TRIES		3

static int test_wrong_cpu, test_pertask_rule;

void perfclock_reader__test_wrong_cpu(int on)
{
	__atomic_store_n(&test_wrong_cpu, on, __ATOMIC_RELAXED);
}

void perfclock_reader__test_pertask_rule(int rule)
{
	__atomic_store_n(&test_pertask_rule, rule, __ATOMIC_RELAXED);
}

static int pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return -EINVAL;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

static void fall_back(struct reader_thread *th, struct reader_ring *rr)
{
	pthread_mutex_lock(&th->lock);
	rr->shared.horizon = th->r->other_kind;
	rr->shared.fallbacks = 1;
	pthread_mutex_unlock(&th->lock);
	rr->kind = th->r->other_kind;
}

/*
 * The neighbour CPU of a ring, for the test-only wrong-CPU reader: the
 * next ring's CPU (the rings are the online CPUs in order).
 */
static int neighbour_cpu(const struct perfclock_reader *r, int idx)
{
	return r->ring[(idx + 1) % r->nr_rings].cpu;
}

/*
 * H_c read on CPU want (moving there first if visit): 0 and *h, *gen;
 * 1: none this round (the read could not be tied to want); 2: none for
 * good (not pinned, read elsewhere MISMATCH_FALLBACK times in a row, the
 * clock has no H_c now); -errno: an error. *mismatch counts the reads
 * off want in a row.
 */
static int hc_read(struct reader_thread *th, int want, int visit,
		   int *mismatch, uint64_t *h, uint32_t *gen)
{
	struct perfclock_reader *r = th->r;
	uint32_t cpu = 0;
	int tries, err = 0;

	if (visit && pin(want))
		return 2;
	for (tries = 0; tries < EAGAIN_TRIES; tries++) {
		err = perfclock_horizon_cpu_gen(r->clk, h, &cpu, gen);
		if (err != -EAGAIN)
			break;
		__atomic_add_fetch(&r->eagain, 1, __ATOMIC_RELAXED);
	}
	if (err == -EAGAIN)
		return 1;
	/* perf's page withdrew time_zero (an unstable TSC): none now. */
	if (err == -EOPNOTSUPP)
		return 2;
	if (err)
		return err;
	if (cpu != (uint32_t)want) {
		/* Not on its CPU: hotplug or a cpuset moved the thread. */
		if (++*mismatch >= MISMATCH_FALLBACK)
			return 2;
		return 1;
	}
	*mismatch = 0;
	return 0;
}

/*
 * H_c for ring rr: 0 and *h, *gen; 1: no horizon this round (hold the
 * last one: the read could not be tied to the ring's CPU); 2: the ring
 * fell back to perfclock_horizon() for good; -errno: an error.
 */
static int percpu_read(struct reader_thread *th, struct reader_ring *rr,
		       uint64_t *h, uint32_t *gen)
{
	int wrong = __atomic_load_n(&test_wrong_cpu, __ATOMIC_RELAXED);
	int want = wrong ? neighbour_cpu(th->r, rr->idx) : rr->cpu;
	int ret;

	/* A thread of one CPU was pinned at start; others visit. */
	ret = hc_read(th, want, th->nr > 1 || wrong, &rr->mismatch, h, gen);
	if (ret == 2)
		fall_back(th, rr);
	return ret;
}

/* THE PER-TASK HORIZON: a CPU lost; every per-task ring falls back. */
static void slots_break(struct perfclock_reader *r)
{
	__atomic_store_n(&r->slots_broken, 1, __ATOMIC_RELAXED);
}

/*
 * THE PER-TASK HORIZON, the threads' part: H_c on each CPU of the
 * thread's run, each stored in its slot (raised only within its
 * generation, as a thread's horizon). 0, 1 (a CPU gave none this round:
 * its slot keeps its last), -errno.
 */
static int slots_read(struct reader_thread *th)
{
	struct perfclock_reader *r = th->r;
	int i, ret, err = 0, none = 0;
	uint64_t h;
	uint32_t g;

	if (__atomic_load_n(&r->slots_broken, __ATOMIC_RELAXED))
		return 0;
	for (i = 0; i < th->nr_slots; i++) {
		struct reader_slot *sl = th->slots[i];

		/* A thread of one CPU was pinned at start; others visit. */
		ret = hc_read(th, sl->cpu, th->nr_slots > 1, &sl->mismatch,
			      &h, &g);
		if (ret == 2) {
			slots_break(r);
			return 0;
		}
		if (ret < 0 && !err)
			err = ret;
		if (ret) {
			none = 1;
			continue;
		}
		pthread_mutex_lock(&r->slot_lock);
		if (!sl->valid || g != sl->gen || h > sl->h) {
			sl->h = h;
			sl->gen = g;
			sl->valid = 1;
		}
		pthread_mutex_unlock(&r->slot_lock);
	}
	return err ? err : none;
}

/*
 * Have the online CPUs changed since start? A CPU that came online has
 * no slot: the task can run and write there, below every slot's H_c.
 */
int perfclock_reader__online_changed(struct perfclock_reader *r)
{
	char buf[sizeof(r->online)];
	ssize_t n = pread(r->online_fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return 1;
	buf[n] = 0;
	return strcmp(buf, r->online) != 0;
}

/*
 * THE PER-TASK HORIZON for ring rr, taken before its drain: the least
 * H_c of every slot. 0 and *h, *gen; 1: none this round (a slot not read
 * yet, or slots of two generations); 2: rr fell back for good.
 */
static int pertask_read(struct reader_thread *th, struct reader_ring *rr,
			uint64_t *h, uint32_t *gen)
{
	struct perfclock_reader *r = th->r;
	int rule = __atomic_load_n(&test_pertask_rule, __ATOMIC_RELAXED);
	uint64_t m = UINT64_MAX, mx = 0, own = 0;
	int i, ret = 0;

	if (__atomic_load_n(&r->slots_broken, __ATOMIC_RELAXED)) {
		fall_back(th, rr);
		return 2;
	}
	pthread_mutex_lock(&r->slot_lock);
	for (i = 0; i < r->nr_slots; i++) {
		const struct reader_slot *sl = &r->slot[i];

		if (!sl->valid || (i && sl->gen != r->slot[0].gen)) {
			ret = 1;
			break;
		}
		m = sl->h < m ? sl->h : m;
		mx = sl->h > mx ? sl->h : mx;
	}
	*gen = r->slot[0].gen;
	/* The wrong rules, for the test only: one CPU's H_c, or the max. */
	if (th->nr_slots)
		own = th->slots[0]->h;
	pthread_mutex_unlock(&r->slot_lock);
	if (ret)
		return ret;
	*h = rule == 1 && th->nr_slots ? own : rule == 2 ? mx : m;
	return 0;
}

/* Copy one record into the thread's batch: 0 or -ENOMEM. */
static int batch_add(struct reader_batch *b, const struct reader_ring *rr,
		     const struct perfclock_record *rec)
{
	int ev = perfclock_ring_record_event(rr->ring, rec);
	size_t need = sizeof(struct reader_entry) + ((rec->size + 7u) & ~7u);
	struct reader_entry *e;

	if (b->len + need > b->cap) {
		size_t cap = b->cap ? b->cap : 65536;
		unsigned char *p;

		while (cap < b->len + need)
			cap *= 2;
		p = realloc(b->buf, cap);
		if (!p)
			return -ENOMEM;
		b->buf = p;
		b->cap = cap;
	}
	e = (struct reader_entry *)(b->buf + b->len);
	e->time = rec->time;
	e->ring = (uint32_t)rr->idx;
	e->size = rec->size;
	e->flags = (rec->flags & PERFCLOCK_RECORD_HAS_TIME) ? 0 :
		   PERFCLOCK_EVENT_UNTIMED;
	e->attr = ev < 0 ? 0 : (uint32_t)ev;	/* as perfclock_evring_drain() */
	memcpy(e + 1, rec->data, rec->size);
	b->len += need;
	return 0;
}

/*
 * Drain ring rr completely into b: 0 or -ENOMEM. PERF_RECORD_LOST and
 * _LOST_SAMPLES are counted by the ring (perfclock_ring_get_stats()),
 * not copied. A corrupt ring is reset and counted.
 */
int perfclock_reader__drain(struct reader_ring *rr, struct reader_batch *b,
			    uint64_t *errors)
{
	struct perfclock_record rec;
	int64_t n;
	int ret, err = 0;

	n = perfclock_ring_read_begin(rr->ring);
	if (n < 0) {
		perfclock_ring_reset(rr->ring);
		(*errors)++;
		return 0;
	}
	while ((ret = perfclock_ring_read_event(rr->ring, &rec)) == 1) {
		if (rec.type == PERF_RECORD_LOST ||
		    rec.type == PERF_RECORD_LOST_SAMPLES)
			continue;
		err = batch_add(b, rr, &rec);
		if (err)
			break;
	}
	perfclock_ring_read_end(rr->ring);
	if (ret < 0) {
		perfclock_ring_reset(rr->ring);
		(*errors)++;
	}
	return err;
}

/*
 * Publish what ring rr's drains counted (the ring's losses, its resets)
 * to its shared stats: under its thread's lock, or with the threads
 * joined.
 */
void perfclock_reader__ring_stats(struct reader_ring *rr)
{
	struct perfclock_ring_stats rs;

	perfclock_ring_get_stats(rr->ring, &rs);
	rr->shared.lost_records = rs.lost_records;
	rr->shared.lost = rs.lost;
	rr->shared.lost_samples = rs.lost_samples;
	rr->shared.errors = rr->errors;
}

/* Hand the batch and the round's horizon over (THE HAND-OFF above). */
static void handoff(struct reader_thread *th, int have_h, uint64_t h,
		    const uint32_t gen[2], int err)
{
	struct perfclock_reader *r = th->r;
	struct reader_batch *b = th->cur;
	int i;

	pthread_mutex_lock(&th->lock);
	if (b->len) {
		b->next = NULL;
		*th->full_tail = b;
		th->full_tail = &b->next;
		__atomic_add_fetch(&r->held, b->cap, __ATOMIC_RELAXED);
		th->cur = th->free;
		if (th->cur) {
			th->free = th->cur->next;
			th->cur->next = NULL;
		}
	}
	/* A horizon stays valid in its generations: only raise it there. */
	if (have_h && (!th->has_h || gen[0] != th->gen[0] ||
		       gen[1] != th->gen[1] || h > th->h)) {
		th->h = h;
		th->gen[0] = gen[0];
		th->gen[1] = gen[1];
		th->has_h = 1;
		th->hseq++;
	}
	if (err && !th->err)
		th->err = err;
	for (i = 0; i < th->nr; i++)
		perfclock_reader__ring_stats(th->rings[i]);
	pthread_mutex_unlock(&th->lock);
	/* None free: a new one now, or at the next round (round_once()). */
	if (!th->cur)
		th->cur = calloc(1, sizeof(*th->cur));
	if (th->cur)
		th->cur->len = 0;
	pthread_mutex_lock(&r->lock);
	r->pending++;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

/*
 * One round: the horizons first (perfclock_horizon() once, if a ring
 * needs it, then each ring's H_c just before its drain), then the
 * drains, then the hand-off. A thread horizon is the minimum over its
 * rings; a ring without one this round holds the thread's last.
 */
static void round_once(struct reader_thread *th)
{
	struct perfclock_reader *r = th->r;
	uint64_t hmin = UINT64_MAX, h, hgp = 0;
	uint32_t gen[2] = { 0, 0 }, g, ggp = 0;
	int i, ret, have = 1, gp = 0, err = 0, mixed = 0;

	/* THE HELD CAP: the merger is behind; the kernel drops and counts. */
	if (__atomic_load_n(&r->held, __ATOMIC_RELAXED) >= r->held_cap) {
		__atomic_add_fetch(&r->held_waits, 1, __ATOMIC_RELAXED);
		return;
	}
	if (!th->cur) {
		th->cur = calloc(1, sizeof(*th->cur));
		if (!th->cur)
			return;
	}
	/* The slots first: this thread's CPUs' H_c before any drain. */
	if (th->nr_slots) {
		ret = slots_read(th);
		if (ret < 0)
			err = ret;
	}
	for (i = 0; i < th->nr; i++) {
		struct reader_ring *rr = th->rings[i];

		ret = 2;
		if (rr->kind == PERFCLOCK_READER_HORIZON_PERCPU ||
		    rr->kind == PERFCLOCK_READER_HORIZON_PERTASK) {
			ret = rr->kind == PERFCLOCK_READER_HORIZON_PERCPU ?
			      percpu_read(th, rr, &h, &g) :
			      pertask_read(th, rr, &h, &g);
			if (ret < 0) {
				err = ret;
				have = 0;
			} else if (ret == 1) {
				have = 0;
			}
		}
		if (ret == 2 && !gp) {
			/* Before this ring's drain and every later one's. */
			ret = perfclock_horizon_gen(r->clk, &hgp, &ggp);
			if (ret < 0) {
				err = ret;
				have = 0;
			}
			gp = 1;
			ret = 2;
		}
		if (ret == 2) {
			h = hgp;
			g = ggp;
		}
		if (have && (ret == 0 || ret == 2)) {
			int k = ret == 0 ? READER_GEN_PERCPU : READER_GEN_GP;

			hmin = h < hmin ? h : hmin;
			if (gen[k] && gen[k] != g)
				mixed = 1;
			gen[k] = g;
		}
		if (!err)
			err = perfclock_reader__drain(rr, th->cur, &rr->errors);
		/*
		 * A CPU that came online since start may have written below
		 * the slots' minimum (it has none): not this round, and
		 * never again.
		 */
		if (ret == 0 && rr->kind == PERFCLOCK_READER_HORIZON_PERTASK &&
		    perfclock_reader__online_changed(r)) {
			slots_break(r);
			fall_back(th, rr);
			have = 0;
		}
	}
	/*
	 * Horizons of two generations do not compare, and a failed drain
	 * left records below them behind: hold this round.
	 */
	if (mixed || err)
		have = 0;
	handoff(th, have, hmin, gen, err);
	__atomic_add_fetch(&r->rounds, 1, __ATOMIC_RELAXED);
}

void *perfclock_reader__thread_main(void *arg)
{
	struct reader_thread *th = arg;
	struct perfclock_reader *r = th->r;
	struct timespec ts = {
		.tv_sec = r->period_us / 1000000u,
		.tv_nsec = (long)(r->period_us % 1000000u) * 1000L,
	};
	char name[16];
	int i, n;

	/* For ps and for the tests: the thread of CPU c is pclk-rd<c>. */
	snprintf(name, sizeof(name), "pclk-rd%d",
		 th->nr_slots ? th->slots[0]->cpu : th->rings[0]->cpu);
	pthread_setname_np(pthread_self(), name);
	if (th->nr_slots == 1 && pin(th->slots[0]->cpu))
		slots_break(r);
	if (!th->nr_slots && th->nr == 1 &&
	    th->rings[0]->kind == PERFCLOCK_READER_HORIZON_PERCPU &&
	    pin(th->rings[0]->cpu))
		fall_back(th, th->rings[0]);
	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		round_once(th);
		n = ppoll(th->pfd, (nfds_t)th->nr + 1, &ts, NULL);
		if (n > 0)
			__atomic_add_fetch(&r->wakeups, 1, __ATOMIC_RELAXED);
		else if (n == 0)
			__atomic_add_fetch(&r->timeouts, 1, __ATOMIC_RELAXED);
		for (i = 0; i <= th->nr; i++)
			th->pfd[i].revents = 0;
	}
	return NULL;
}
