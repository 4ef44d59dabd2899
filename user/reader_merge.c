// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libperfclock: the threaded reader's merger (perfclock/reader.h), on the
 * caller's thread: take each reader thread's horizon with its batches
 * (THE HAND-OFF, evring_reader.c), push into the queue, flush below the
 * minimum; stop, free, stats.
 *
 * Above the threads: this file calls evring_reader.c (join, drain,
 * release), never the other way.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libperfclock.h"
#include "perfclock_reader.h"
#include "internal.h"
#include "queue_internal.h"
#include "reader_internal.h"

#define FREE_BATCHES	4	/* kept per thread for reuse */

/* 1/8-octave buckets: exact below 8 ns, then 12.5% wide. */
static unsigned int age_bucket(uint64_t v)
{
	unsigned int msb;

	if (v < 8)
		return (unsigned int)v;
	msb = 63u - (unsigned int)__builtin_clzll(v);
	return 8u + (msb - 3u) * 8u + (unsigned int)((v >> (msb - 3u)) & 7u);
}

/* The largest value of bucket i. */
static uint64_t age_bound(unsigned int i)
{
	unsigned int msb, sub;

	if (i < 8)
		return i;
	msb = (i - 8u) / 8u + 3u;
	sub = (i - 8u) % 8u;
	return ((uint64_t)(8u + sub + 1u) << (msb - 3u)) - 1u;
}

static uint64_t age_quantile(const struct perfclock_reader *r, uint64_t per_mille)
{
	uint64_t want, seen = 0;
	unsigned int i;

	if (!r->age_count)
		return 0;
	want = (r->age_count * per_mille + 999) / 1000;
	for (i = 0; i < READER_AGE_BUCKETS; i++) {
		seen += r->age_hist[i];
		if (seen >= want)
			return age_bound(i) < r->age_max ? age_bound(i) : r->age_max;
	}
	return r->age_max;
}

static void age_add(struct perfclock_reader *r, uint64_t age)
{
	r->age_hist[age_bucket(age)]++;
	r->age_count++;
	if (age > r->age_max)
		r->age_max = age;
}

/*
 * Push one batch: timed records to the queue, untimed ones delivered
 * now. 0, or a callback's -errno (the rest of the batch is still pushed:
 * nothing is lost; the first error is returned).
 */
static int push_batch(struct perfclock_reader *r, const struct reader_batch *b,
		      int64_t *delivered)
{
	size_t off = 0;
	int err = 0, ret;

	while (off < b->len) {
		const struct reader_entry *e =
			(const struct reader_entry *)(b->buf + off);
		struct reader_ring *rr = &r->ring[e->ring];

		if (e->flags & PERFCLOCK_EVENT_UNTIMED) {
			struct perfclock_event ev = {
				.data = e + 1, .size = e->size,
				.source = e->ring,
				.flags = PERFCLOCK_EVENT_UNTIMED,
				.attr_idx = e->attr,
			};

			rr->shared.untimed++;
			(*delivered)++;
			ret = r->cfg.deliver(r->cfg.arg, &ev);
			if (ret > 0)
				ret = -ECANCELED;
		} else {
			/*
			 * A push delivers too: a LATE record at once, and the
			 * oldest (FORCED) when the memory cap is reached. Both
			 * are delivered events, counted as the flushes' are.
			 */
			uint64_t before = r->q->st.emitted + r->q->st.late;

			rr->shared.records++;
			ret = perfclock_queue__push_attr(r->q, e->ring, e->attr,
							 e->time, e + 1, e->size);
			*delivered += (int64_t)(r->q->st.emitted +
						r->q->st.late - before);
		}
		if (ret && !err)
			err = ret;
		off += sizeof(*e) + ((e->size + 7u) & ~7u);
	}
	return err;
}

/* Take thread th's horizon and batches, together (THE HAND-OFF). */
static void take(struct perfclock_reader *r, struct reader_thread *th,
		 struct reader_take *t, uint64_t now, int have_now)
{
	struct reader_batch *b;
	uint64_t bytes = 0;

	pthread_mutex_lock(&th->lock);
	t->list = th->full;
	th->full = NULL;
	th->full_tail = &th->full;
	/* Taken: no longer held for the merger (THE HELD CAP). */
	for (b = t->list; b; b = b->next)
		bytes += b->cap;
	__atomic_sub_fetch(&r->held, bytes, __ATOMIC_RELAXED);
	t->has_h = th->has_h;
	t->h = th->h;
	t->gen[0] = th->gen[0];
	t->gen[1] = th->gen[1];
	if (th->err && !r->err)
		r->err = th->err;
	if (th->has_h && th->hseq != th->taken_seq) {
		th->taken_seq = th->hseq;
		/* A thread with no ring bounds nothing (UINT64_MAX). */
		if (have_now && th->h != UINT64_MAX)
			age_add(r, now > th->h ? now - th->h : 0);
	}
	pthread_mutex_unlock(&th->lock);
}

/* Give th's batches back for reuse, a few; free the rest. */
static void give_back(struct reader_thread *th, struct reader_batch *list)
{
	struct reader_batch *b, *next;
	int n = 0;

	pthread_mutex_lock(&th->lock);
	for (b = th->free; b; b = b->next)
		n++;
	for (b = list; b; b = next) {
		next = b->next;
		if (n < FREE_BATCHES) {
			b->len = 0;
			b->next = th->free;
			th->free = b;
			n++;
		} else {
			free(b->buf);
			free(b);
		}
	}
	pthread_mutex_unlock(&th->lock);
}

static void wait_handoff(struct perfclock_reader *r, int timeout_ms)
{
	struct timespec ts;
	int ret = 0;

	pthread_mutex_lock(&r->lock);
	if (timeout_ms > 0) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += timeout_ms / 1000;
		ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
	}
	while (!r->pending && timeout_ms != 0 && ret != ETIMEDOUT) {
		if (timeout_ms < 0)
			ret = pthread_cond_wait(&r->cond, &r->lock);
		else
			ret = pthread_cond_timedwait(&r->cond, &r->lock, &ts);
	}
	r->pending = 0;
	pthread_mutex_unlock(&r->lock);
}

/*
 * One merge: every thread's horizon and batches, then the pushes, then
 * the flush below the minimum. A newer generation of either source
 * first flushes what is queued (perfclock_queue_restart()); a thread
 * still on an older one holds the limit until it catches up.
 */
static int64_t merge(struct perfclock_reader *r)
{
	struct reader_take *t;
	uint64_t now = 0, limit = UINT64_MAX;
	uint32_t gmax[2] = { 0, 0 };
	int64_t delivered = 0, n;
	int i, k, err = 0, have_now, restart = 0;

	t = r->takes;
	have_now = perfclock_read(r->clk, &now) == 0;
	for (i = 0; i < r->nr_threads; i++) {
		take(r, &r->th[i], &t[i], now, have_now);
		for (k = 0; k < 2 && t[i].has_h; k++)
			if (t[i].gen[k] > gmax[k])
				gmax[k] = t[i].gen[k];
	}
	/* Each source's generations apart: a newer one voids its old H. */
	for (k = 0; k < 2; k++) {
		if (gmax[k] > r->gen[k]) {
			restart |= r->gen[k] != 0;
			r->gen[k] = gmax[k];
		}
	}
	if (restart) {
		/*
		 * The old generation's limit goes with it: the new horizons
		 * may be below it (a REALTIME clock set back), and kept it
		 * would flush every later record at once, unordered, until
		 * the clock caught up.
		 */
		r->limit = 0;
		n = perfclock_queue_restart(r->q);
		if (n < 0)
			err = (int)n;
		else
			delivered += n;
	}
	for (i = 0; i < r->nr_threads; i++) {
		struct reader_batch *b;

		for (b = t[i].list; b; b = b->next) {
			int ret = push_batch(r, b, &delivered);

			if (ret && !err)
				err = ret;
			r->handoffs++;
		}
		give_back(&r->th[i], t[i].list);
		if (!t[i].has_h ||
		    (t[i].gen[0] && t[i].gen[0] != r->gen[0]) ||
		    (t[i].gen[1] && t[i].gen[1] != r->gen[1]))
			limit = 0;
		else if (t[i].h < limit)
			limit = t[i].h;
	}
	if (!err && limit != UINT64_MAX && limit > r->limit) {
		r->limit = limit;
		r->limits++;
		if (r->cfg.on_limit)
			r->cfg.on_limit(r->cfg.arg, limit);
	}
	if (!err && r->limit) {
		n = perfclock_queue_flush_until(r->q, r->limit);
		if (n < 0)
			err = (int)n;
		else
			delivered += n;
	}
	r->delivered += (uint64_t)delivered;
	if (err)
		return err;
	return r->err ? r->err : delivered;
}

PERFCLOCK_API int64_t perfclock_reader_deliver(struct perfclock_reader *r,
					       int timeout_ms)
{
	if (!r)
		return -EINVAL;
	if (getpid() != r->pid)
		return -ECHILD;
	if (r->stopped)
		return 0;
	wait_handoff(r, timeout_ms);
	return merge(r);
}

PERFCLOCK_API int64_t perfclock_reader_stop(struct perfclock_reader *r)
{
	struct reader_batch b = { 0 };
	int64_t delivered = 0, merged = 0, n;
	int i, err = 0;

	if (!r)
		return -EINVAL;
	if (getpid() != r->pid)
		return -ECHILD;
	if (r->stopped)
		return 0;
	perfclock_reader__join(r);
	r->stopped = 1;
	/* What the threads handed over last, then the rings' rest. */
	n = merge(r);			/* counts its own in r->delivered */
	if (n < 0 && n != r->err)
		err = (int)n;
	else if (n > 0)
		merged = n;
	for (i = 0; i < r->nr_rings; i++) {
		b.len = 0;
		if (perfclock_reader__drain(&r->ring[i], &b,
					    &r->ring[i].errors) && !err)
			err = -ENOMEM;
		n = push_batch(r, &b, &delivered);
		if (n && !err)
			err = (int)n;
		/*
		 * What this last drain counted (LOST records, a reset): the
		 * threads, joined, no longer publish it at their hand-off.
		 */
		perfclock_reader__ring_stats(&r->ring[i]);
	}
	free(b.buf);
	n = perfclock_queue_flush_all(r->q);
	if (n < 0 && !err)
		err = (int)n;
	else if (n > 0)
		delivered += n;
	r->delivered += (uint64_t)delivered;
	if (err)
		return err;
	return r->err ? r->err : merged + delivered;
}

PERFCLOCK_API void perfclock_reader_free(struct perfclock_reader *r)
{
	if (!r)
		return;
	/*
	 * A fork() child: the threads are the parent's, and what they held
	 * at the fork (a lock, a batch half appended) may be inconsistent in
	 * this copy. Close the child's copy of the eventfd, free the
	 * merger's own queue, and leave the rest to exit() or exec().
	 */
	if (getpid() != r->pid) {
		if (r->stop_fd >= 0)
			close(r->stop_fd);
		perfclock_queue_free(r->q);
		return;
	}
	if (!r->stopped)
		perfclock_reader_stop(r);
	perfclock_reader__release(r);
}

PERFCLOCK_API int
perfclock_reader_get_ring_stats(const struct perfclock_reader *r, int idx,
				struct perfclock_reader_ring_stats *st)
{
	struct reader_thread *th;
	int t;

	if (!r || !st || idx < 0 || idx >= r->nr_rings)
		return -EINVAL;
	/* The ring's thread, for its lock. */
	t = r->ring[idx].thread;
	th = &r->th[t >= 0 && t < r->nr_threads ? t : 0];
	pthread_mutex_lock(&th->lock);
	*st = r->ring[idx].shared;
	pthread_mutex_unlock(&th->lock);
	return 0;
}

PERFCLOCK_API int perfclock_reader_get_stats(const struct perfclock_reader *r,
					     struct perfclock_reader_stats *st)
{
	struct perfclock_reader_ring_stats rs;
	int i;

	if (!r || !st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	st->nr_threads = (uint32_t)r->nr_threads;
	st->nr_rings = (uint32_t)r->nr_rings;
	for (i = 0; i < r->nr_rings; i++) {
		perfclock_reader_get_ring_stats(r, i, &rs);
		if (rs.horizon == PERFCLOCK_READER_HORIZON_PERCPU ||
		    rs.horizon == PERFCLOCK_READER_HORIZON_PERTASK)
			st->rings_percpu++;
		else
			st->rings_other++;
		st->records += rs.records;
		st->untimed += rs.untimed;
		st->lost_records += rs.lost_records;
		st->lost += rs.lost;
		st->lost_samples += rs.lost_samples;
	}
	st->rounds = __atomic_load_n(&r->rounds, __ATOMIC_RELAXED);
	st->wakeups = __atomic_load_n(&r->wakeups, __ATOMIC_RELAXED);
	st->timeouts = __atomic_load_n(&r->timeouts, __ATOMIC_RELAXED);
	st->eagain = __atomic_load_n(&r->eagain, __ATOMIC_RELAXED);
	st->held_bytes = __atomic_load_n(&r->held, __ATOMIC_RELAXED);
	st->held_waits = __atomic_load_n(&r->held_waits, __ATOMIC_RELAXED);
	st->handoffs = r->handoffs;
	st->delivered = r->delivered;
	st->limits = r->limits;
	st->limit = r->limit;
	st->age_count = r->age_count;
	st->age_p50_ns = age_quantile(r, 500);
	st->age_p90_ns = age_quantile(r, 900);
	st->age_p99_ns = age_quantile(r, 990);
	st->age_max_ns = r->age_max;
	perfclock_queue_get_stats(r->q, &st->queue);
	return 0;
}

PERFCLOCK_API const char *perfclock_reader_horizon_name(uint32_t horizon)
{
	switch (horizon) {
	case PERFCLOCK_READER_HORIZON_PERCPU:
		return "per-CPU";
	case PERFCLOCK_READER_HORIZON_PERTASK:
		return "per-task";
	case PERFCLOCK_READER_HORIZON_GRACE_PERIOD:
		return "grace period";
	case PERFCLOCK_READER_HORIZON_ESTIMATE:
		return "estimate";
	}
	return "unknown";
}
