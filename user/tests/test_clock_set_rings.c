// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_clock_set over per-CPU context-switch rings stamped with the
 * clock, while the clock is set back, forward, and back and forward:
 *  - a tool's round loop: in the module mode (exact horizons) no record
 *    below the limit held from an earlier round of the same generation
 *    (late 0), one restart per round that followed a set. In the
 *    estimate mode no record half a second below the limit of its own
 *    generation (an estimate may be late by its allowance, never by the
 *    set);
 *  - in the module mode, the threaded reader (perfclock_reader_start()):
 *    no event delivered late, none out of order but where a restart
 *    flushed. Before reader_merge.c dropped its limit at a restart, it
 *    flushed every event at once, unordered, for a second after a set
 *    back.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "perfclock_reader.h"
#include "tap.h"
#include "test_clock_set.h"

#define LOOP_ROUNDS	300

static volatile int load_stop;

/* Context switches on every CPU meanwhile: records in every round. */
static void *load_main(void *arg)
{
	(void)arg;
	while (!load_stop)
		usleep(50);
	return NULL;
}

/*
 * A tool's round loop over per-CPU context-switch rings: horizon, drain
 * every ring, limit = that horizon; a restart drops the limit (the tool
 * flushes what it holds). The clock is set between rounds. A record below
 * the limit of its generation is late; in module mode none may be, in
 * estimate mode none by half a second or more.
 *
 * In estimate mode nothing waits for records in flight: one stamped
 * just before a forward set and in its ring only after the restart's
 * drain (a vCPU stalled between stamp and commit: the estimate's
 * in-flight allowance) is of the generation the set ended, a step below
 * every limit of the new one. It is judged against the last limit of its
 * own generation, and counted. A forward step of a second puts the two
 * generations apart: a record below (the clock read just after the set)
 * less half a second was stamped before it. The module's horizons leave
 * no such record (the restart's horizon comes after a grace period), so
 * module mode judges every record against the limit in force.
 */

/* Every CPU's context switches, one record each, disabled until enabled. */
static struct perfclock_evring *open_switch_rings(struct perfclock *c)
{
	struct perfclock_evring_config cfg;
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	a.sample_period = 1;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	a.disabled = 1;
	perfclock_evring_config_init(&cfg);
	cfg.nr_attrs = 1;
	cfg.attrs = &a;	/* copied by the open */
	cfg.pid = -1;
	return perfclock_evring_open(c, &cfg);
}
void test_round_loop(struct perfclock *c, const char *name)
{
	struct perfclock_evring *er;
	struct perfclock_record rec;
	uint64_t h, limit = 0, records = 0, late = 0, far = 0, worst = 0;
	/* Estimate mode: the generation the last forward set ended. */
	uint64_t ended_below = 0, ended_limit = 0, ended_late = 0, now;
	uint64_t lim;
	uint32_t g;
	int i, k, n, ret, err = 0, sets = 0, restarts = 0, want = 0, told = 0;
	int after_set = 0, nload = 0;
	pthread_t load[4];

	er = open_switch_rings(c);
	if (!er) {
		tap_skip("round loop: %s # SKIP perfclock_evring_open: %s",
			 name, strerror(errno));
		return;
	}
	perfclock_evring_enable(er);
	n = perfclock_evring_nr_rings(er);
	load_stop = 0;
	while (nload < 4 && nload < n &&
	       !pthread_create(&load[nload], NULL, load_main, NULL))
		nload++;
	for (i = 0; i < LOOP_ROUNDS && !err; i++) {
		/* Back, forward, back and forward: a set each 40 rounds. */
		if (i % 40 == 20) {
			int fwd = 0;

			switch (sets++ % 3) {
			case 0:
				err = step_realtime(-SEC);
				/* Below the old ones now: judged as usual. */
				ended_below = 0;
				break;
			case 1:
				err = step_realtime(SEC);
				ended_limit = limit;
				fwd = 1;
				break;
			default:
				err = step_realtime(-SEC);
				usleep(2000);	/* records stamped while back */
				err |= step_realtime(SEC);
				/* That generation had no horizon: no limit. */
				ended_limit = 0;
				fwd = 1;
				break;
			}
			if (fwd && !err && !perfclock_read(c, &now))
				ended_below = now - SEC / 2;
			after_set = 1;
		}
		ret = perfclock_horizon_gen(c, &h, &g);
		if (ret < 0) {
			err = ret;
			break;
		}
		if (ret == PERFCLOCK_HORIZON_RESTARTED) {
			restarts++;
			limit = 0;
		}
		want += after_set;
		told += after_set && ret == PERFCLOCK_HORIZON_RESTARTED;
		after_set = 0;
		for (k = 0; k < n; k++) {
			struct perfclock_ring *r = perfclock_evring_ring(er, k);

			if (perfclock_ring_read_begin(r) < 0)
				continue;
			while (perfclock_ring_read_event(r, &rec) == 1) {
				if (!(rec.flags & PERFCLOCK_RECORD_HAS_TIME))
					continue;
				records++;
				lim = limit;
				if (!module_mode && rec.time < ended_below &&
				    rec.time < limit) {
					ended_late++;
					lim = ended_limit;
				}
				if (rec.time >= lim)
					continue;
				late++;
				far += lim - rec.time >= (uint64_t)SEC / 2;
				if (lim - rec.time > worst)
					worst = lim - rec.time;
			}
			perfclock_ring_read_end(r);
		}
		limit = h;
		usleep(1000);
	}
	load_stop = 1;
	while (nload)
		pthread_join(load[--nload], NULL);
	perfclock_evring_close(er);
	tap_diag("round loop: %s: %llu records, %d sets, %d restarts, %llu late (worst %llu ns), %llu of a generation a set had ended after its restart",
		 name, (unsigned long long)records, sets, restarts,
		 (unsigned long long)late, (unsigned long long)worst,
		 (unsigned long long)ended_late);
	tap_ok(!err && told == want && records > 1000,
	       "round loop: %s: every round after a set restarted (%d of %d; %llu records)",
	       name, told, want, (unsigned long long)records);
	if (module_mode)
		tap_ok(!err && !late,
		       "round loop: %s: exact horizons: no record below the limit of its generation (%llu late, worst %llu ns)",
		       name, (unsigned long long)late,
		       (unsigned long long)worst);
	else
		tap_ok(!err && !far,
		       "round loop: %s: estimate: no record half a second or more below the limit of its generation (%llu such; %llu late, worst %llu ns)",
		       name, (unsigned long long)far, (unsigned long long)late,
		       (unsigned long long)worst);
}

/*
 * What the reader delivers. A record stamped after a set back and drained
 * in a round whose horizon was read before the set is pushed before any
 * thread has seen the restart: below what was emitted, so LATE (flagged),
 * the contract's "records stamped across the step are not ordered". Such
 * records are stamped between the set and the round after it: within a
 * window after the set's new time (win[]). A LATE event outside every
 * window is a reader that kept ordering wrong after the restart.
 */
#define WIN_SLACK_NS	(50 * 1000000ULL)	/* stamped before our read */
#define WIN_AFTER_NS	(300 * 1000000ULL)	/* rounds until the restart */

struct sink {
	uint64_t last, events, inversions, late, worst, outside;
	uint64_t win_lo[3], win_hi[3];
	int nwin;
};

static int deliver(void *arg, const struct perfclock_event *ev)
{
	struct sink *s = arg;
	int i, in = 0;

	s->events++;
	s->inversions += ev->time < s->last;
	s->last = ev->time;
	if (!(ev->flags & PERFCLOCK_EVENT_LATE))
		return 0;
	s->late++;
	if (ev->lateness_ns > s->worst)
		s->worst = ev->lateness_ns;
	for (i = 0; i < s->nwin; i++)
		in |= ev->time >= s->win_lo[i] && ev->time <= s->win_hi[i];
	s->outside += !in;
	return 0;
}

static uint64_t now_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts_ns(&ts);
}

/*
 * Set back by 1 s (and, if forward, forward again at once): the window
 * of times stamped while back, in the clock's new time.
 */
static int set_back(struct sink *s, int forward)
{
	uint64_t m0, lo, len;
	int err;

	m0 = now_ns(CLOCK_MONOTONIC);
	err = step_realtime(-SEC);
	lo = now_ns(CLOCK_REALTIME);
	if (forward)
		err |= step_realtime(SEC);
	len = now_ns(CLOCK_MONOTONIC) - m0;
	s->win_lo[s->nwin] = lo - WIN_SLACK_NS;
	s->win_hi[s->nwin] = lo + len + WIN_AFTER_NS;
	s->nwin++;
	return err;
}

/* The threaded reader while the clock is set back, forward, both. */
void test_reader(struct perfclock *c, const char *name)
{
	struct perfclock_reader_config rc;
	struct perfclock_reader_stats st;
	struct perfclock_evring *er;
	struct perfclock_reader *r;
	struct sink s;
	int64_t got;
	int i, err = 0, nload = 0;
	pthread_t load[4];

	er = open_switch_rings(c);
	if (!er) {
		tap_skip("reader: %s # SKIP perfclock_evring_open: %s", name,
			 strerror(errno));
		return;
	}
	memset(&s, 0, sizeof(s));
	perfclock_reader_config_init(&rc);
	rc.deliver = deliver;
	rc.arg = &s;
	r = perfclock_reader_start(c, er, &rc);
	if (!tap_ok(r != NULL, "reader: %s: starts%s%s", name,
		    r ? "" : ": ", r ? "" : strerror(errno))) {
		perfclock_evring_close(er);
		return;
	}
	perfclock_evring_enable(er);
	load_stop = 0;
	while (nload < 4 && !pthread_create(&load[nload], NULL, load_main, NULL))
		nload++;
	/* 200 merges of up to 10 ms; a set at 30 (back), 100 (forward), 170. */
	for (i = 0; i < 200 && !err; i++) {
		if (i == 30)
			err = set_back(&s, 0);
		else if (i == 100)
			err = step_realtime(SEC);
		else if (i == 170)
			err = set_back(&s, 1);
		got = perfclock_reader_deliver(r, 10);
		if (got < 0)
			err = (int)got;
	}
	got = perfclock_reader_stop(r);
	if (got < 0 && !err)
		err = (int)got;
	load_stop = 1;
	while (nload)
		pthread_join(load[--nload], NULL);
	perfclock_reader_get_stats(r, &st);
	tap_diag("reader: %s: %llu events, %llu restarts, %llu out of order, %llu late (worst %llu ns), age p50 %llu ns",
		 name, (unsigned long long)s.events,
		 (unsigned long long)st.queue.restarts,
		 (unsigned long long)s.inversions, (unsigned long long)s.late,
		 (unsigned long long)s.worst,
		 (unsigned long long)st.age_p50_ns);
	tap_ok(!err && s.events > 1000 && st.queue.restarts >= 1 &&
	       !s.outside && s.inversions <= st.queue.restarts + s.late,
	       "reader: %s: set back, forward, both: no event late but those stamped while the set was not yet seen, none out of order but those and at a restart (%llu late outside, %llu late in all, %llu out of order, %llu restarts; %s)",
	       name, (unsigned long long)s.outside,
	       (unsigned long long)s.late, (unsigned long long)s.inversions,
	       (unsigned long long)st.queue.restarts, strerror(-err));
	perfclock_reader_free(r);
	perfclock_evring_close(er);
}

