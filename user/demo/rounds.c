// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * demo_flush: the run, in rounds. Each round takes the grace-period
 * horizon and a bare clock read first, then drains every ring once,
 * pushing every sample to every rule's queue (so all rules see the same
 * input), then flushes each queue below its rule's limit. With
 * --reader round, before it drains a CPU's ring the reader moves to that
 * CPU and reads H_c there (ours: docs/percpu-horizon.md, section 7,
 * "visit the CPUs"); the other rules see the same records in the same
 * rounds, only their limits differ. By default ours is not in the loop
 * but on the library's threaded reader (threads.c), and the loop never
 * moves: it reads as perf's live tools do. Between rounds it polls the
 * rings for at most --interval; the run ends with --duration, the
 * COMMAND's exit or a signal, and a last round that reads every ring dry.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include "demo.h"
#include "load.h"

/* The run's own timekeeping (duration, status cadence), not the clock under test. */
static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Which of r's events (index into d->events) a sample with this id is; -1: none. */
static int find_tp(const struct cpu_ring *r, uint64_t id)
{
	int i;

	for (i = 0; i < r->nfd; i++)
		if (r->id[i] == id)
			return r->ev[i];
	return -1;
}

/*
 * A record read from ring src (a sample, or with --side-band a side-band
 * record): counted, then pushed to every rule's queue with the same time,
 * so that every rule judges the same events.
 */
static void push_all(struct demo *d, uint32_t src,
		     const struct perfclock_record *rec)
{
	unsigned char buf[sizeof(struct qhdr) + 65536] __attribute__((aligned(8)));
	struct qhdr *h = (struct qhdr *)buf;
	struct sample s;
	int i, e, err;
	uint32_t full;

	if (rec->type != PERF_RECORD_SAMPLE) {
		e = d->side_band_ev;
		memset(&s, 0, sizeof(s));
		s.cpu = d->rings[src].cpu >= 0 ? (uint32_t)d->rings[src].cpu : 0;
	} else if (demo_parse_sample(d, rec->data, rec->size, &s)) {
		d->nontime_total++;
		return;
	} else {
		e = find_tp(&d->rings[src], s.id);
	}
	if (e < 0) {
		d->nontime_total++;
		return;
	}
	d->events[e].samples++;
	if (d->rings[src].samples && rec->time < d->rings[src].last_time) {
		struct cpu_ring *r = &d->rings[src];

		r->out_of_order++;
		if (r->last_time - rec->time > r->worst_backstep_ns)
			r->worst_backstep_ns = r->last_time - rec->time;
	} else {
		d->rings[src].last_time = rec->time;
	}
	d->rings[src].samples++;
	d->samples_total++;
	if (d->have_prev_start && rec->time < d->prev_start) {
		d->inflight_seen++;
		if (d->prev_start - rec->time > d->inflight_worst_ns)
			d->inflight_worst_ns = d->prev_start - rec->time;
	}
	/* On the threaded reader, ours' merger learns them (threads.c). */
	if (!d->events[e].software && !d->events[e].sampling && !d->events[e].side_band &&
	    s.raw && d->opt.print && !d->opt.threads)
		tp_learn_comms(d->comms, &d->events[e].fmt, s.raw, s.raw_size);
	h->tp = (uint32_t)e;
	h->cpu = s.cpu;
	h->pushed_at = d->final_drain ? 0 : d->prev_start_now;
	full = (uint32_t)sizeof(*h);
	/* The queue copies at most 64 KiB per event: keep the header then. */
	if (d->opt.print && rec->size <= sizeof(buf) - sizeof(*h) - 16) {
		memcpy(buf + sizeof(*h), rec->data, rec->size);
		full += rec->size;
	}
	rules_push(&d->limits, src, rec->time);
	for (i = 0; i < NR_RULES; i++) {
		if (i == RULE_OURS && d->opt.threads)
			continue;	/* ours has its own reader */
		/* Only our rule prints: the others need the header alone. */
		err = perfclock_queue_push(d->rules[i].q, src, rec->time, buf,
					   d->rules[i].print ? full : (uint32_t)sizeof(*h));
		if (err)
			die("perfclock_queue_push(%s): %s",
			    rule_name(i), strerror(-err));
	}
}

/* Pin the reader to cpu (one CPU); 0, or -errno (the ring then falls back). */
static int pin_to(struct demo *d, int cpu)
{
	cpu_set_t set;

	if (d->pinned_cpu == cpu)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return -errno;
	d->pinned_cpu = cpu;
	d->pc_pins++;
	return 0;
}

/*
 * H_c read ON cpu: move there, read, and check that the library says
 * that CPU (a read from any other CPU says nothing about it:
 * scripts/check.sh's overcommit payload shows it late), retried. 0 and
 * *hc, or -1 (the caller falls back to the grace-period horizon). A new
 * generation (the unstable switch) voids what ours holds: restart its
 * queue, and flush nothing more this round (earlier H_c were of the old
 * one).
 */
static int read_hc(struct demo *d, int cpu_want, uint64_t *hc)
{
	uint32_t cpu, gen;
	int err, tries;

	err = pin_to(d, cpu_want);
	if (err) {
		d->pc_pin_failed++;
		return -1;
	}
	for (tries = 0; tries < PC_WRONG_CPU_TRIES; tries++) {
		err = perfclock_horizon_cpu_gen(d->clk, hc, &cpu, &gen);
		if (err == -EAGAIN)
			continue;
		if (err)
			die("perfclock_horizon_cpu_gen: %s", strerror(-err));
		if (cpu == (uint32_t)cpu_want)
			break;
		d->pc_wrong_cpu++;
		err = -EAGAIN;
	}
	if (err)
		return -1;
	if (d->have_pc_gen && gen != d->pc_gen) {
		int64_t ret = perfclock_queue_restart(d->rules[RULE_OURS].q);

		if (ret < 0)
			die("perfclock_queue_restart: %s", strerror((int)-ret));
		d->pc_restarts++;
		rules_ring_horizon_void(&d->limits);
		fprintf(stderr, "demo_flush: the per-CPU horizons restarted (generation %u): ours flushed what it held and goes on\n",
			gen);
	}
	d->pc_gen = gen;
	d->have_pc_gen = 1;
	return 0;
}

/*
 * Ours' horizon for the task rings (--per-thread) this round, taken once,
 * before the first of them is drained: the least H_c of every CPU, each
 * read on its CPU. A task writes its ring from whichever CPU it runs on,
 * each record stamped and published on that CPU in one non-preemptible
 * section (docs/percpu-horizon.md, section 8), so a record below the
 * least was published before its CPU's read, which precedes the drains.
 * One CPU's H_c alone, or the greatest, would not do. 0 and *h, or -1
 * (a CPU gave none, or the generation moved during the visit: the
 * grace-period horizon this round).
 */
static int task_horizon(struct demo *d, uint64_t *h)
{
	uint64_t hc, restarts = d->pc_restarts;
	int c;

	*h = UINT64_MAX;
	for (c = 0; c < d->ncpus; c++) {
		if (read_hc(d, d->cpus[c], &hc))
			return -1;
		*h = hc < *h ? hc : *h;
	}
	return d->pc_restarts == restarts ? 0 : -1;
}

/*
 * Ours' horizon for ring r this round, taken just before it is drained.
 * A CPU's ring: its H_c, read on that CPU (read_hc()). A task's ring:
 * the least H_c of every CPU, taken before the round's first task ring
 * (task_horizon()). Without: the grace-period horizon hz, the fallback.
 */
static void ring_horizon(struct demo *d, struct cpu_ring *r, uint64_t hz)
{
	uint64_t hc;

	if (!d->percpu)
		goto fallback;
	if (r->cpu < 0) {
		if (!d->task_h_taken) {
			d->task_h_ok = task_horizon(d, &d->task_h) == 0;
			d->task_h_taken = 1;
		}
		if (!d->task_h_ok)
			goto fallback;
		hc = d->task_h;
	} else if (read_hc(d, r->cpu, &hc)) {
		goto fallback;
	}
	r->hz_own++;
	rules_ring_horizon(&d->limits, hc);
	return;
fallback:
	r->hz_gp++;
	rules_ring_horizon(&d->limits, hz);
}

/*
 * The k-th ring a round reads. With --sample a CPU has two rings
 * (rings[c] and rings[ncpus + c]): while the reader visits the CPUs, both
 * of a CPU's are read one after the other, one migration per CPU per
 * round instead of two. The order is only when each ring is read; every
 * rule still sees the same records.
 */
static int visit_order(const struct demo *d, int k)
{
	int n = d->ncpus;

	if (!d->percpu || !d->opt.sample || d->opt.sample_shared ||
	    d->nr_rings != 2 * n)
		return k;
	return k % 2 ? n + k / 2 : k / 2;
}

static uint64_t clock_now(struct demo *d)
{
	uint64_t ns;
	int err = perfclock_read(d->clk, &ns);

	if (err)
		die("perfclock_read: %s", strerror(-err));
	return ns;
}

/*
 * --max-per-round left records unread in r: how many carry a time, and the
 * oldest of them in *oldest. A second reader over the same mapping starts
 * at data_tail (where the round's reader stopped) and never moves it. A
 * ring that cannot be read counts as one record at time 0 (flush nothing).
 */
static uint64_t unread_oldest(const struct cpu_ring *r, uint64_t *oldest)
{
	struct perfclock_ring *peek = perfclock_ring_new(r->base, r->len, &r->attr);
	struct perfclock_record rec;
	uint64_t n = 0;
	int err = 0;

	if (!peek)
		die("perfclock_ring_new (cpu %d): %s", r->cpu, strerror(errno));
	if (perfclock_ring_read_begin(peek) < 0)
		err = -1;
	while (!err && (err = perfclock_ring_read_event(peek, &rec)) == 1) {
		err = 0;
		if (!(rec.flags & PERFCLOCK_RECORD_HAS_TIME))
			continue;
		if (!n || rec.time < *oldest)
			*oldest = rec.time;
		n++;
	}
	perfclock_ring_free(peek);
	if (err < 0) {
		*oldest = 0;
		return n + 1;
	}
	return n;
}

/*
 * One round, the round pattern of libperfclock.h: the horizon first (and the
 * bare clock read Ahern's rule flushes at), then drain every ring once,
 * each CPU's after reading H_c on that CPU (ring_horizon()), then flush
 * each rule's queue below its limit. Returns records read.
 *
 * With --max-per-round a ring may be left with records unread. The
 * horizon H promises that every record stamped below H was in its ring
 * when H was handed out, so below H only what was drained is complete: a
 * record left unread can be older than H. Our limit is then min(H, the
 * oldest record left unread in any ring), found by scanning what is left
 * without consuming it; the same cap applies to ahern's clock read.
 */
static uint64_t do_round(struct demo *d)
{
	struct perfclock_record rec;
	uint64_t start, hz, n = 0, cap = 0, oldest = 0, unread;
	uint32_t gen;
	int64_t avail;
	long taken;
	int i, k, err, left, capped = 0;

	err = perfclock_horizon_gen(d->clk, &hz, &gen);
	if (err < 0)
		die("perfclock_horizon_gen: %s", strerror(-err));
	if (err == PERFCLOCK_HORIZON_RESTARTED) {
		/*
		 * Every horizon before this one is void (the clock stepped:
		 * perfclock/horizon.h, perfclock_horizon_gen()): hand out
		 * what ours holds and start its limit again from this
		 * horizon.
		 */
		int64_t ret = perfclock_queue_restart(d->rules[RULE_OURS_GP].q);

		if (ret < 0)
			die("perfclock_queue_restart: %s", strerror((int)-ret));
		/* Ours takes hz for the rings H_c does not cover. */
		if ((!d->percpu || d->opt.per_thread) && !d->opt.threads)
			ret = perfclock_queue_restart(d->rules[RULE_OURS].q);
		if (ret < 0)
			die("perfclock_queue_restart: %s", strerror((int)-ret));
		fprintf(stderr, "demo_flush: the horizon restarted (generation %u): ours-gp flushed what it held and goes on\n",
			gen);
	}
	start = clock_now(d);
	d->emit_now = start;
	d->prev_start_now = start;
	hist_add(&d->hz_age, start > hz ? start - hz : 0);
	rules_round_begin(&d->limits, start, hz);
	d->task_h_taken = 0;		/* ring_horizon(): once a round */
	for (k = 0; k < d->nr_rings; k++) {
		int c = visit_order(d, d->opt.reverse ? d->nr_rings - 1 - k : k);
		struct cpu_ring *r = &d->rings[c];

		if (d->opt.yield && k)
			sched_yield();
		if (!d->opt.threads)
			ring_horizon(d, r, hz);
		avail = perfclock_ring_read_begin(r->ring);
		if (avail < 0) {
			d->ring_errors++;
			fprintf(stderr, "demo_flush: cpu %d: corrupt ring (%s); "
				"skipping to its head\n", r->cpu, strerror((int)-avail));
			perfclock_ring_reset(r->ring);
			continue;
		}
		taken = 0;
		left = 0;
		for (;;) {
			if (d->opt.max_per_round && !d->final_drain &&
			    taken == d->opt.max_per_round) {
				left = 1;
				break;
			}
			err = perfclock_ring_read_event(r->ring, &rec);
			if (err != 1)
				break;
			taken++;
			n++;
			d->records_total++;
			if (rec.type == PERF_RECORD_THROTTLE)
				d->throttle_total++;
			/*
			 * No time: handled here and now, outside the queues,
			 * and counted ("untimed"), as perfclock/ring.h says
			 * (RECORDS WITHOUT A TIME); never pushed with one.
			 */
			if (!(rec.flags & PERFCLOCK_RECORD_HAS_TIME))
				d->nontime_total++;
			else if (rec.type == PERF_RECORD_SAMPLE ||
				 (d->side_band_ev >= 0 && rec.type != PERF_RECORD_LOST &&
				  rec.type != PERF_RECORD_LOST_SAMPLES &&
				  rec.type != PERF_RECORD_THROTTLE &&
				  rec.type != PERF_RECORD_UNTHROTTLE))
				push_all(d, (uint32_t)c, &rec);
		}
		if (!left && err < 0) {
			d->ring_errors++;
			fprintf(stderr, "demo_flush: cpu %d: corrupt record (%s); "
				"skipping to its head\n", r->cpu, strerror(-err));
			perfclock_ring_reset(r->ring);
			continue;
		}
		perfclock_ring_read_end(r->ring);
		if (left && (unread = unread_oldest(r, &oldest))) {
			d->unread_left += unread;
			if (!capped || oldest < cap)
				cap = oldest;
			capped = 1;
		}
	}
	if (capped) {
		d->capped_rounds++;
		rules_cap(&d->limits, cap);
	}
	d->emit_now = clock_now(d);
	if (!d->final_drain) {
		hist_add(&d->gp_age, d->emit_now > hz ? d->emit_now - hz : 0);
		if (d->limits.have_ring_hz)
			hist_add(&d->pc_age, d->emit_now > d->limits.ring_hz ?
				 d->emit_now - d->limits.ring_hz : 0);
	}
	for (i = 0; i < NR_RULES; i++) {
		struct perfclock_queue_stats st;
		uint64_t limit;
		int64_t ret;

		if (i == RULE_OURS && d->opt.threads)
			continue;
		perfclock_queue_get_stats(d->rules[i].q, &st);
		if (st.queued > d->rules[i].peak_queued)
			d->rules[i].peak_queued = st.queued;
		if (!rules_limit(&d->limits, i, &limit))
			continue;
		ret = perfclock_queue_flush_until(d->rules[i].q, limit);
		if (ret < 0)
			die("perfclock_queue_flush_until(%s): %s", rule_name(i),
			    strerror((int)-ret));
	}
	rules_round_end(&d->limits);
	d->prev_start = start;
	d->have_prev_start = 1;
	d->rounds_total++;
	return n;
}

static void wait_round(const struct demo *d)
{
	int timeout;

	if (!d->opt.interval_us)
		return;
	timeout = (int)((d->opt.interval_us + 999) / 1000);
	/* EINTR (a signal) just ends the wait. */
	poll(d->pfd, (nfds_t)d->nr_rings, timeout);
}

int demo_run(struct demo *d)
{
	uint64_t t0, t_end = 0, last_status;
	uint64_t st_samples = 0, st_rounds = 0;
	pid_t child = -1;
	struct rusage ru;
	int i, child_status = 0, rc = 0;

	demo_set_enabled(d, 1);
	demo_threads_start(d);
	t0 = wall_ns();
	if (d->load)
		load_go(d->load);
	if (d->opt.command)
		child = demo_start_command(d->opt.command);
	if (d->opt.duration > 0)
		t_end = t0 + (uint64_t)(d->opt.duration * 1e9);
	else if (!d->opt.command)
		t_end = t0 + 5000000000ull;
	last_status = t0;

	while (!*d->stop) {
		uint64_t now;

		do_round(d);
		now = wall_ns();
		if (t_end && now >= t_end)
			break;
		if (child > 0 && waitpid(child, &child_status, WNOHANG) == child) {
			/* It exited by itself: its status is ours. */
			child = -1;
			rc = demo_exit_status(child_status);
			break;
		}
		if (d->opt.status && now - last_status >=
		    (d->tty_status ? 500000000ull : 2000000000ull)) {
			demo_status_line(d, (now - t0) / 1e9, d->samples_total - st_samples,
					 d->rounds_total - st_rounds,
					 (now - last_status) / 1e9);
			st_samples = d->samples_total;
			st_rounds = d->rounds_total;
			last_status = now;
		}
		wait_round(d);
	}
	if (d->opt.status && d->tty_status)
		fputs("\r\033[K", stderr);
	if (!getrusage(RUSAGE_THREAD, &ru)) {
		d->reader_nvcsw = ru.ru_nvcsw;
		d->reader_nivcsw = ru.ru_nivcsw;
	}

	/* Stop the producers, then drain what they left and flush it all. */
	d->hops = load_stop(d->load);
	d->load = NULL;
	d->ticks = ticker_stop(d->ticker);
	d->ticker = NULL;
	demo_set_enabled(d, 0);
	d->secs = (wall_ns() - t0) / 1e9;
	/*
	 * The last round drains everything: nothing may stay unread. What
	 * any rule delivers from here on, it delivers only at the end.
	 */
	d->end_time = clock_now(d);
	d->final_drain = 1;
	do_round(d);
	d->emit_now = clock_now(d);
	for (i = 0; i < NR_RULES; i++) {
		int64_t ret = perfclock_queue_flush_all(d->rules[i].q);

		if (ret < 0)
			die("perfclock_queue_flush_all: %s", strerror((int)-ret));
	}
	/* Ours' reader drains its rings and delivers the rest, in order. */
	demo_threads_finish(d);
	if (child > 0) {
		/* The run ended first (--duration, a signal): we end it. */
		kill(child, SIGTERM);
		waitpid(child, &child_status, 0);
	}
	fflush(stdout);
	return rc;
}
