// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * demo_flush: ours on the library's threaded reader (--reader threads,
 * the default): struct perfclock_reader, one pinned thread per CPU
 * draining that CPU's ring below its H_c, and a merger thread here
 * delivering in time order (docs/reader.md). It has rings of its own, a
 * perfclock_evring of the same events on every CPU, so it sees the same
 * load as the round loop's rules, in the same run.
 *
 * Why the other rules do not run on the reader's hand-offs: each of them
 * is defined on one reader's round, a limit taken by the thread that then
 * reads every ring (Ahern's clock read at the round start, perf's largest
 * timestamp of the previous round, ...). The threaded reader has no such
 * round: each thread drains its own CPU when its ring wakes it, and the
 * merger reads no ring. A bare clock read taken by the merger after the
 * threads drained is late by construction; taken by each pinned thread
 * on its own CPU before its drain it IS H_c (docs/percpu-horizon.md,
 * section 1: a read on CPU c follows every record stamped on c), exact
 * wherever ours is. Either way the comparison would say nothing about the
 * rule. So the rules run on the reader they were proposed for, perf's
 * (one thread, rounds over every ring, never moving to a CPU: rounds.c),
 * and ours on the library's; the report prints each reader's events and
 * losses side by side.
 *
 * Threads: the merger owns the reader (perfclock_reader_deliver(), _stop()
 * and the stats) and ours' rule_state; the main thread only starts it,
 * raises finish, and reads those after joining it.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "demo.h"

struct demo_threads {
	struct perfclock_evring *er;
	struct perfclock_reader *r;
	pthread_t merger;
	int running;
	int finish;			/* __atomic: the main thread's "stop now" */
	int final;			/* merger: perfclock_reader_stop() is delivering */
	uint64_t emit_now;		/* merger: the clock when the limit last moved */
	int ev_of_attr[MAX_EV];		/* attr_idx -> events[] */
	int nr_attrs;
	struct demo_threads_result res;
};

static uint64_t read_clock(struct demo *d)
{
	uint64_t ns;
	int err = perfclock_read(d->clk, &ns);

	if (err)
		die("perfclock_read: %s", strerror(-err));
	return ns;
}

/* perfclock_reader_config::on_limit: the clock as the limit moves, for holds. */
static void on_limit(void *arg, uint64_t limit)
{
	struct demo *d = arg;

	(void)limit;
	d->threads->emit_now = read_clock(d);
}

/*
 * What the reader delivers to ours, counted as demo_deliver() counts the
 * round loop's rules. Records without a time and the kernel's
 * (un)throttle records are counted apart: the round loop pushes neither.
 * "Held to the end" needs when a record was read, which the reader does
 * not say: here it is stamped over 1 s before the end, which counts every
 * event read over 1 s before it and more (a stricter count for ours).
 */
static int threads_deliver(void *arg, const struct perfclock_event *ev)
{
	unsigned char buf[sizeof(struct qhdr) + 65536] __attribute__((aligned(8)));
	struct demo *d = arg;
	struct demo_threads *t = d->threads;
	struct rule_state *r = &d->rules[RULE_OURS];
	struct perf_event_header ph;
	struct qhdr *h = (struct qhdr *)buf;
	struct perfclock_event copy;
	struct sample s;

	if (ev->flags & PERFCLOCK_EVENT_UNTIMED) {
		t->res.untimed++;
		return 0;
	}
	if (ev->size < sizeof(ph))
		return 0;
	memcpy(&ph, ev->data, sizeof(ph));
	if (ph.type == PERF_RECORD_THROTTLE || ph.type == PERF_RECORD_UNTHROTTLE) {
		t->res.throttle++;
		return 0;
	}
	t->res.events++;
	/* Occurrences of a counted event (not timer samples, not side-band). */
	if (ph.type == PERF_RECORD_SAMPLE && ev->attr_idx < (uint32_t)t->nr_attrs &&
	    !d->events[t->ev_of_attr[ev->attr_idx]].sampling)
		t->res.samples++;
	if (ev->flags & PERFCLOCK_EVENT_LATE) {
		__atomic_store_n(&r->late, r->late + 1, __ATOMIC_RELAXED);
	} else {
		/* Checked here, not trusted from the library. */
		if (r->have_last && ev->time < r->last_time)
			r->order_errors++;
		r->last_time = ev->time;
		r->have_last = 1;
		r->in_order++;
	}
	if (t->final) {
		r->at_end++;
		if (ev->time + HELD_TO_END_NS < d->end_time)
			r->held_to_end++;
	}
	hist_add(&r->hold, t->emit_now > ev->time ? t->emit_now - ev->time : 0);
	if (!r->print || ev->attr_idx >= (uint32_t)t->nr_attrs ||
	    ev->size > sizeof(buf) - sizeof(*h))
		return 0;
	/* --print: the round loop's layout (struct qhdr, then the record). */
	memset(h, 0, sizeof(*h));
	h->tp = (uint32_t)t->ev_of_attr[ev->attr_idx];
	h->cpu = (uint32_t)perfclock_evring_cpu(t->er, (int)ev->source);
	if (ph.type == PERF_RECORD_SAMPLE &&
	    !demo_parse_sample(d, ev->data, ev->size, &s)) {
		h->cpu = s.cpu;
		if (!d->events[h->tp].software && !d->events[h->tp].sampling && s.raw)
			tp_learn_comms(d->comms, &d->events[h->tp].fmt, s.raw, s.raw_size);
	}
	memcpy(buf + sizeof(*h), ev->data, ev->size);
	copy = *ev;
	copy.data = buf;
	copy.size = (uint32_t)sizeof(*h) + ev->size;
	demo_print_event(d, &copy);
	return 0;
}

void demo_threads_open(struct demo *d, const struct perf_event_attr *attrs,
		       const int *evs, int n)
{
	struct perfclock_evring_config cfg;
	struct demo_threads *t = calloc(1, sizeof(*t));
	int i;

	if (!t)
		die("out of memory");
	d->threads = t;
	for (i = 0; i < n; i++)
		t->ev_of_attr[i] = evs[i];
	t->nr_attrs = n;
	perfclock_evring_config_init(&cfg);
	cfg.attrs = attrs;
	cfg.nr_attrs = (uint32_t)n;
	cfg.data_pages = (uint32_t)d->opt.pages;
	t->er = perfclock_evring_open(d->clk, &cfg);
	if (!t->er)
		die("perfclock_evring_open (ours' threaded reader, %d events, %lu pages a ring): %s",
		    n, d->opt.pages, strerror(errno));
}

void demo_threads_set_enabled(struct demo *d, int on)
{
	int err;

	if (!d->threads)
		return;
	err = on ? perfclock_evring_enable(d->threads->er) :
		   perfclock_evring_disable(d->threads->er);
	if (err && on)
		die("perfclock_evring_enable: %s", strerror(-err));
}

static void *merger(void *arg)
{
	struct demo *d = arg;
	struct demo_threads *t = d->threads;
	int64_t ret;

	while (!__atomic_load_n(&t->finish, __ATOMIC_ACQUIRE)) {
		ret = perfclock_reader_deliver(t->r, 100);
		if (ret < 0 && ret != -EINTR)
			die("perfclock_reader_deliver: %s", strerror((int)-ret));
	}
	/* d->end_time was set before finish was raised. */
	t->emit_now = read_clock(d);
	t->final = 1;
	ret = perfclock_reader_stop(t->r);
	if (ret < 0)
		die("perfclock_reader_stop: %s", strerror((int)-ret));
	return NULL;
}

void demo_threads_start(struct demo *d)
{
	struct demo_threads *t = d->threads;
	struct perfclock_reader_config cfg;
	sigset_t all, old;
	int err;

	if (!t)
		return;
	perfclock_reader_config_init(&cfg);
	cfg.deliver = threads_deliver;
	cfg.arg = d;
	cfg.on_limit = on_limit;
	if (d->opt.no_visit)
		cfg.flags |= PERFCLOCK_READER_GRACE_PERIOD;
	t->emit_now = read_clock(d);
	t->r = perfclock_reader_start(d->clk, t->er, &cfg);
	if (!t->r)
		die("perfclock_reader_start: %s", strerror(errno));
	/* SIGINT and SIGTERM are the main thread's (its round loop's stop flag). */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(&t->merger, NULL, merger, d);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		die("pthread_create (ours' merger): %s", strerror(err));
	t->running = 1;
}

void demo_threads_finish(struct demo *d)
{
	struct demo_threads *t = d->threads;
	struct perfclock_reader_stats st;
	int i, n;

	if (!t || !t->running)
		return;
	__atomic_store_n(&t->finish, 1, __ATOMIC_RELEASE);
	pthread_join(t->merger, NULL);
	t->running = 0;
	if (perfclock_reader_get_stats(t->r, &st))
		die("perfclock_reader_get_stats: EINVAL");
	t->res.have = 1;
	t->res.queue = st.queue;
	t->res.threads = st.nr_threads;
	t->res.rings = st.nr_rings;
	t->res.handoffs = st.handoffs;
	t->res.rounds = st.rounds;
	t->res.lost_records = st.lost_records;
	t->res.lost = st.lost + st.lost_samples;
	t->res.age_p50_ns = st.age_p50_ns;
	t->res.age_p99_ns = st.age_p99_ns;
	n = perfclock_evring_nr_rings(t->er);
	t->res.have_lost = !!(d->read_format & PERF_FORMAT_LOST);
	for (i = 0; i < n; i++) {
		struct perfclock_reader_ring_stats rs;
		int a;

		/*
		 * The kernel's own count of each traced event, and what it
		 * lost (also the losses no PERF_RECORD_LOST reported yet).
		 */
		for (a = 0; a < t->nr_attrs; a++) {
			uint64_t v[3] = { 0, 0, 0 };
			int fd = perfclock_evring_fd(t->er, i, a);

			if (d->events[t->ev_of_attr[a]].sampling)
				continue;
			if (fd < 0 || read(fd, v, sizeof(v)) <
			    (ssize_t)((t->res.have_lost ? 3 : 2) * sizeof(uint64_t)))
				die("read(ours' %s, ring %d): %s",
				    d->events[t->ev_of_attr[a]].name, i, strerror(errno));
			t->res.kernel_count += v[0];
			if (t->res.have_lost)
				t->res.kernel_lost += v[2];
		}

		if (perfclock_reader_get_ring_stats(t->r, i, &rs))
			continue;
		if (rs.fallbacks)
			t->res.rings_mixed++;
		else if (rs.horizon == PERFCLOCK_READER_HORIZON_PERCPU ||
			 rs.horizon == PERFCLOCK_READER_HORIZON_PERTASK)
			t->res.rings_own++;
		else
			t->res.rings_gp++;
		t->res.errors += rs.errors;
	}
}

const struct demo_threads_result *demo_threads_result(const struct demo *d)
{
	return d->threads && d->threads->res.have ? &d->threads->res : NULL;
}

void demo_threads_close(struct demo *d)
{
	struct demo_threads *t = d->threads;

	if (!t)
		return;
	if (t->running) {
		__atomic_store_n(&t->finish, 1, __ATOMIC_RELEASE);
		pthread_join(t->merger, NULL);
	}
	perfclock_reader_free(t->r);
	perfclock_evring_close(t->er);
	free(t);
	d->threads = NULL;
}

/*
 * A rule's queue statistics: ours' on the threaded reader are its
 * reader's queue's (after demo_threads_finish(); zero before), the
 * others' their own queue's.
 */
void demo_rule_queue_stats(const struct demo *d, int rule,
			   struct perfclock_queue_stats *st)
{
	const struct demo_threads_result *res = demo_threads_result(d);

	if (rule == RULE_OURS && d->opt.threads) {
		if (res)
			*st = res->queue;
		else
			memset(st, 0, sizeof(*st));
		return;
	}
	perfclock_queue_get_stats(d->rules[rule].q, st);
}
