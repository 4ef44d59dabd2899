// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The traps a new tool author met, each closed and checked on this
 * host's real perf events (no module):
 *  - an attr without PERF_SAMPLE_TIME: perfclock_check_attr() and
 *    perfclock_evring_open() refuse it (EINVAL), and the log callback
 *    names the attr;
 *  - a tracepoint id no trace event has: ENOENT (the kernel says
 *    EINVAL), the attr and CPU named in the log;
 *  - perfclock_evring_drain(): every record with a time queued, each
 *    delivered with the index of its attr; PERF_RECORD_LOST counted and
 *    never delivered; records without a time counted and never queued;
 *  - perfclock_evring_poll() wakes on data;
 *  - perfclock_clock_horizon_name() says what perfclock_get_info() does;
 *  - HOST_PROMISE with the membarrier horizon on a paravirtual
 *    clocksource (kvm-clock: this project's host).
 * The perf parts skip, saying why, where perf_event_open system-wide is
 * not permitted or tracefs is not mounted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "tap.h"

static char last_log[512];
static int nr_log;

static int nr_log_all;	/* at any level */

static void log_cb(int level, const char *msg, void *arg)
{
	(void)arg;
	nr_log_all++;
	if (level == PERFCLOCK_LOG_ERR) {
		snprintf(last_log, sizeof(last_log), "%s", msg);
		nr_log++;
	}
}

struct seen {
	uint64_t delivered, by_attr[2], bad_attr, lost_delivered, zero_time;
	uint64_t last, unsorted;
};

static int deliver(void *arg, const struct perfclock_event *ev)
{
	const struct perf_event_header *h = ev->data;
	struct seen *s = arg;

	s->delivered++;
	if (h->type == PERF_RECORD_LOST || h->type == PERF_RECORD_LOST_SAMPLES)
		s->lost_delivered++;
	if (!ev->time)
		s->zero_time++;
	if (!(ev->flags & PERFCLOCK_EVENT_LATE)) {
		if (ev->time < s->last)
			s->unsorted++;
		s->last = ev->time;
	}
	/* attrs[0] is the dummy (FORK, EXIT, COMM); attrs[1] samples. */
	if (ev->attr_idx > 1 ||
	    (h->type == PERF_RECORD_SAMPLE) != (ev->attr_idx == 1))
		s->bad_attr++;
	else
		s->by_attr[ev->attr_idx]++;
	return 0;
}

static void forks(int n)
{
	int k;

	for (k = 0; k < n; k++) {
		pid_t p = fork();

		if (p == 0)
			_exit(0);
		if (p > 0)
			waitpid(p, NULL, 0);
	}
}

static void set_attrs(struct perf_event_attr *a, int sample_id_all)
{
	memset(a, 0, 2 * sizeof(*a));
	a[0].type = PERF_TYPE_SOFTWARE;
	a[0].config = PERF_COUNT_SW_DUMMY;
	a[0].sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	a[0].sample_id_all = (uint64_t)sample_id_all;
	a[0].task = 1;
	a[0].comm = 1;
	a[0].disabled = 1;
	a[0].watermark = 1;
	a[0].wakeup_watermark = 1;
	a[1] = a[0];
	a[1].task = a[1].comm = 0;
	a[1].config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	a[1].sample_period = 1;
}

static struct perfclock_queue *new_queue(struct perfclock_evring *er,
					 struct seen *s)
{
	struct perfclock_queue_config qc;

	memset(s, 0, sizeof(*s));
	perfclock_queue_config_init(&qc);
	qc.nr_sources = (uint32_t)perfclock_evring_nr_rings(er);
	qc.deliver = deliver;
	qc.arg = s;
	return perfclock_queue_new(&qc);
}

/* Every attr checked before anything opens; the log names the one. */
static void no_time(struct perfclock *clk)
{
	struct perfclock_evring_config cfg;
	struct perf_event_attr a[2];

	set_attrs(a, 1);
	perfclock_fill_attr(clk, &a[0]);
	tap_ok(perfclock_check_attr(clk, &a[0]) == 0,
	       "sample time: check_attr accepts an attr with PERF_SAMPLE_TIME");
	a[0].sample_type &= ~(uint64_t)PERF_SAMPLE_TIME;
	tap_ok(perfclock_check_attr(clk, &a[0]) == -EINVAL,
	       "sample time: check_attr refuses an attr without PERF_SAMPLE_TIME (-EINVAL): none of its records has a time");
	set_attrs(a, 1);
	a[1].sample_type = PERF_SAMPLE_TID;
	perfclock_evring_config_init(&cfg);
	cfg.attrs = a;
	cfg.nr_attrs = 2;
	nr_log = 0;
	errno = 0;
	tap_ok(!perfclock_evring_open(clk, &cfg) && errno == EINVAL &&
	       nr_log == 1 && strstr(last_log, "attrs[1]") &&
	       strstr(last_log, "PERF_SAMPLE_TIME"),
	       "sample time: evring_open refuses attrs[1] without PERF_SAMPLE_TIME (EINVAL), the log says which: \"%s\"",
	       last_log);
}

/* A tracepoint id tracefs does not list: ENOENT, attr and CPU logged. */
static void bad_tracepoint(struct perfclock *clk)
{
	struct perfclock_evring_config cfg;
	struct perfclock_evring *er;
	struct perf_event_attr a;

	if (access("/sys/kernel/tracing/events/sched/sched_switch/id", R_OK) &&
	    access("/sys/kernel/debug/tracing/events/sched/sched_switch/id", R_OK)) {
		tap_skip("tracepoint: unknown id is ENOENT # SKIP tracefs not mounted or not readable");
		return;
	}
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_TRACEPOINT;
	a.config = 0x7ffffff0;		/* no trace event has it */
	a.sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_RAW;
	a.sample_period = 1;
	a.disabled = 1;
	perfclock_evring_config_init(&cfg);
	cfg.attrs = &a;
	cfg.nr_attrs = 1;
	nr_log = nr_log_all = 0;
	errno = 0;
	er = perfclock_evring_open(clk, &cfg);
	if (!er && (errno == EACCES || errno == EPERM)) {
		tap_skip("tracepoint: unknown id is ENOENT # SKIP perf_event_open not permitted: %s",
			 strerror(errno));
		return;
	}
	tap_ok(!er && errno == ENOENT && nr_log == 1 && nr_log_all == 1 &&
	       strstr(last_log, "attrs[0]") && strstr(last_log, "CPU"),
	       "tracepoint: an id no trace event has is ENOENT (the kernel says EINVAL), one log line (%d at any level) names attr and CPU: \"%s\"",
	       nr_log_all, last_log);
	perfclock_evring_close(er);
}

/* Every CPU's context switches, a sample each with its time, disabled. */
static void switch_attr(struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	a->sample_type = PERF_SAMPLE_TIME;
	a->sample_period = 1;
	a->disabled = 1;
}

/*
 * Not allowed to open events on every CPU: EACCES (or EPERM), and the
 * log says why, with perf_event_paranoid's value and what it must be.
 * As nobody, in a child (root here); a SKIP where nobody may.
 */
static void not_permitted(struct perfclock *clk)
{
	int pfd[2], status = -1;
	char msg[512] = "";
	ssize_t got = 0;
	pid_t p;

	if (geteuid()) {
		tap_skip("evring: not permitted # SKIP not root: no user to become");
		return;
	}
	if (pipe(pfd)) {
		tap_ok(0, "evring: not permitted: pipe");
		return;
	}
	p = fork();
	if (p == 0) {
		struct perfclock_evring_config cfg;
		struct perfclock_evring *er;
		struct perf_event_attr a;
		int e;

		close(pfd[0]);
		if (setgid(65534) || setuid(65534))
			_exit(10);
		switch_attr(&a);
		perfclock_evring_config_init(&cfg);
		cfg.attrs = &a;
		cfg.nr_attrs = 1;
		nr_log = nr_log_all = 0;
		er = perfclock_evring_open(clk, &cfg);
		e = errno;
		if (er)
			_exit(11);	/* allowed: nothing to check */
		if (write(pfd[1], last_log, strlen(last_log)) < 0)
			_exit(12);
		_exit((e == EACCES || e == EPERM) && nr_log_all == 1 ? 0 : 13);
	}
	close(pfd[1]);
	if (p > 0)
		got = read(pfd[0], msg, sizeof(msg) - 1);
	close(pfd[0]);
	msg[got > 0 ? got : 0] = 0;
	if (p > 0)
		waitpid(p, &status, 0);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 11) {
		tap_skip("evring: not permitted # SKIP perf_event_paranoid lets nobody open events on every CPU");
		return;
	}
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	       strstr(msg, "perf_event_paranoid is ") && strstr(msg, "CAP_PERFMON"),
	       "evring: not permitted: EACCES, and one log line says perf_event_paranoid's value and CAP_PERFMON (status %d): \"%s\"",
	       WIFEXITED(status) ? WEXITSTATUS(status) : -1, msg);
}

/*
 * The traps of perfclock_evring_open() that used to pass in silence: an
 * attr asking for another clock than the clock's (its records would not
 * be in the horizons' clock) is EINVAL, said in the log; events opened
 * disabled and never enabled make the first drain say so, once.
 */
static void silent_traps(struct perfclock *clk)
{
	struct perfclock_evring_config cfg;
	struct perfclock_queue_config qc;
	struct perfclock_evring *er;
	struct perfclock_queue *q;
	struct perf_event_attr a;
	int first, second;

	switch_attr(&a);
	a.use_clockid = 1;
	a.clockid = CLOCK_REALTIME;	/* the clock here is MONOTONIC */
	perfclock_evring_config_init(&cfg);
	cfg.attrs = &a;
	cfg.nr_attrs = 1;
	nr_log = nr_log_all = 0;
	errno = 0;
	er = perfclock_evring_open(clk, &cfg);
	tap_ok(!er && errno == EINVAL && nr_log == 1 && strstr(last_log, "use_clockid"),
	       "evring: an attr asking for another clock than the clock's is EINVAL, said once: \"%s\"",
	       last_log);
	perfclock_evring_close(er);

	a.use_clockid = 0;
	a.clockid = 0;
	er = perfclock_evring_open(clk, &cfg);
	if (!er && (errno == EACCES || errno == EPERM)) {
		tap_skip("evring: never enabled # SKIP perf_event_open not permitted: %s",
			 strerror(errno));
		return;
	}
	perfclock_queue_config_init(&qc);
	qc.nr_sources = er ? (uint32_t)perfclock_evring_nr_rings(er) : 1;
	qc.deliver = deliver;
	q = perfclock_queue_new(&qc);
	nr_log = nr_log_all = 0;
	perfclock_evring_drain(er, q, NULL);
	first = nr_log_all;
	perfclock_evring_drain(er, q, NULL);
	second = nr_log_all - first;
	tap_ok(er && q && first == 1 && second == 0 &&
	       strstr(last_log, "perfclock_evring_enable()"),
	       "evring: events opened disabled and never enabled: the first drain says so, once (%d, then %d): \"%s\"",
	       first, second, last_log);
	nr_log = nr_log_all = 0;
	perfclock_evring_enable(er);
	perfclock_evring_drain(er, q, NULL);
	tap_ok(nr_log_all == 0, "evring: enabled, a drain says nothing (%d)",
	       nr_log_all);
	perfclock_queue_free(q);
	perfclock_evring_close(er);
}

static int drain_rounds(struct perfclock *clk, struct perfclock_evring *er,
			struct perfclock_queue *q,
			struct perfclock_drain_stats *st)
{
	uint64_t h;
	int k;
	int64_t n, pushed = 0;

	for (k = 0; k < 3; k++) {
		if (perfclock_horizon(clk, &h))
			return -1;
		n = perfclock_evring_drain(er, q, st);
		if (n < 0)
			return -1;
		pushed += n;
		perfclock_queue_flush_until(q, h);
	}
	perfclock_queue_flush_all(q);
	return pushed <= (int64_t)st->pushed ? 0 : -1;
}

static int drain(struct perfclock *clk)
{
	struct perfclock_evring_config cfg;
	struct perfclock_drain_stats st;
	struct perf_event_attr a[2];
	struct perfclock_evring *er;
	struct perfclock_queue *q;
	struct seen s;
	int woke, err;

	set_attrs(a, 1);
	perfclock_evring_config_init(&cfg);
	cfg.attrs = a;
	cfg.nr_attrs = 2;
	cfg.data_pages = 512;		/* no loss here */
	er = perfclock_evring_open(clk, &cfg);
	if (!er && (errno == EACCES || errno == EPERM)) {
		tap_skip("drain # SKIP perf_event_open system-wide not permitted: %s (needs CAP_PERFMON or perf_event_paranoid <= 0)",
			 strerror(errno));
		return -1;
	}
	if (!tap_ok(er != NULL, "drain: two events on every CPU open (%s)",
		    er ? "ok" : strerror(errno)))
		return -1;
	q = new_queue(er, &s);
	perfclock_evring_enable(er);
	forks(100);
	woke = perfclock_evring_poll(er, 1000);
	perfclock_evring_disable(er);
	tap_ok(woke > 0, "poll: perfclock_evring_poll() wakes when records arrive (%d rings ready)",
	       woke);
	memset(&st, 0, sizeof(st));
	err = drain_rounds(clk, er, q, &st);
	tap_ok(!err && st.pushed == s.delivered && s.by_attr[0] >= 100 &&
	       s.by_attr[1] > 0 && !s.bad_attr && !s.zero_time && !s.unsorted,
	       "drain: %llu records queued and delivered in order, each with its attr (attrs[0] dummy: %llu, attrs[1] samples: %llu, misattributed %llu)",
	       (unsigned long long)st.pushed, (unsigned long long)s.by_attr[0],
	       (unsigned long long)s.by_attr[1], (unsigned long long)s.bad_attr);
	perfclock_queue_free(q);
	perfclock_evring_close(er);

	/* One data page and no reading while 300 children come and go. */
	cfg.data_pages = 1;
	er = perfclock_evring_open(clk, &cfg);
	if (!tap_ok(er != NULL, "drain: a one-page ring opens"))
		return -1;
	q = new_queue(er, &s);
	memset(&st, 0, sizeof(st));
	perfclock_evring_enable(er);
	forks(300);
	/*
	 * The kernel writes PERF_RECORD_LOST with the first record that
	 * fits after the loss (kernel/events/ring_buffer.c:
	 * perf_output_begin()): make room, then more records.
	 */
	err = perfclock_evring_drain(er, q, &st) < 0;
	forks(5);
	perfclock_evring_disable(er);
	err |= drain_rounds(clk, er, q, &st);
	tap_ok(!err && st.lost_records > 0 && st.lost >= st.lost_records &&
	       !s.lost_delivered && st.pushed == s.delivered,
	       "lost: a full ring's PERF_RECORD_LOST counted (%llu records, %llu lost), none delivered as an event (%llu)",
	       (unsigned long long)st.lost_records, (unsigned long long)st.lost,
	       (unsigned long long)s.lost_delivered);
	perfclock_queue_free(q);
	perfclock_evring_close(er);

	/* FORK/EXIT/COMM have no time without sample_id_all. */
	set_attrs(a, 0);
	cfg.data_pages = 512;
	er = perfclock_evring_open(clk, &cfg);
	if (!tap_ok(er != NULL, "drain: events without sample_id_all open"))
		return -1;
	q = new_queue(er, &s);
	perfclock_evring_enable(er);
	forks(50);
	perfclock_evring_disable(er);
	memset(&st, 0, sizeof(st));
	err = drain_rounds(clk, er, q, &st);
	tap_ok(!err && st.no_time >= 100 && !s.by_attr[0] && !s.zero_time &&
	       st.pushed == s.delivered,
	       "no time: %llu records without a time counted, none queued (dummy records delivered: %llu)",
	       (unsigned long long)st.no_time, (unsigned long long)s.by_attr[0]);
	perfclock_queue_free(q);
	perfclock_evring_close(er);
	tap_ok(perfclock_evring_drain(NULL, NULL, NULL) == -EINVAL &&
	       perfclock_evring_poll(NULL, 0) == -EINVAL,
	       "drain, poll: NULL is -EINVAL");
	return 0;
}

static int clocksource_paravirt(void)
{
	static const char *const pv[] = {
		"kvm-clock", "xen", "hyperv_clocksource_tsc_page",
		"hyperv_clocksource_msr",
	};
	char buf[64] = "";
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
	size_t i;

	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = 0;
	for (i = 0; i < sizeof(pv) / sizeof(pv[0]); i++)
		if (!strcmp(buf, pv[i]))
			return 1;
	return 0;
}

static void horizon_name(void)
{
	struct perfclock_clock_info info;
	struct perfclock *clk = perfclock_open_clockid(CLOCK_MONOTONIC);
	const char *before;
	int pv = clocksource_paravirt();

	if (!tap_ok(clk != NULL, "horizon name: CLOCK_MONOTONIC opens"))
		return;
	before = perfclock_clock_horizon_name(clk);	/* before any horizon */
	tap_ok(perfclock_get_info(clk, &info) == 0 &&
	       !strcmp(before, perfclock_horizon_name(&info)),
	       "horizon name: perfclock_clock_horizon_name() before the first horizon is get_info's: \"%s\"",
	       before);
	tap_ok(!strcmp(perfclock_clock_horizon_name(NULL), "unknown"),
	       "horizon name: NULL clock: \"unknown\"");
	if (!(info.flags & PERFCLOCK_CLOCK_HORIZON_MEMBARRIER))
		tap_skip("host promise # SKIP no membarrier horizon here (%s)",
			 before);
	else
		tap_ok(!!(info.flags & PERFCLOCK_CLOCK_HORIZON_HOST_PROMISE) == pv,
		       "host promise: the membarrier horizon of CLOCK_MONOTONIC %s HOST_PROMISE on this %s clocksource (flags %#x)",
		       pv ? "sets" : "does not set",
		       pv ? "paravirtual" : "native", info.flags);
	perfclock_close(clk);
}

int main(void)
{
	struct perfclock *clk = perfclock_open_clockid(CLOCK_MONOTONIC);

	perfclock_set_log(log_cb, NULL);
	if (!tap_ok(clk != NULL, "clock opens"))
		return tap_exit();
	no_time(clk);
	bad_tracepoint(clk);
	not_permitted(clk);
	silent_traps(clk);
	drain(clk);
	perfclock_close(clk);
	horizon_name();
	perfclock_set_log(NULL, NULL);
	return tap_exit();
}
