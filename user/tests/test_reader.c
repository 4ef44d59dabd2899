// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The threaded reader (perfclock/reader.h) on this host's real perf
 * events, with CLOCK_MONOTONIC (use_clockid) and no module: one pinned
 * reader thread per CPU on H_c, the merger on this thread. This file has
 * main(), the load and the checks under it; test_reader_lifecycle.c the
 * reader's life around it (test_reader.h: what the two share).
 *  - The real load (context-switch samples, cpu-clock samples, the
 *    PERF_RECORD_SWITCH side band; cross-CPU pipe ping-pong and a CPU
 *    hog on every CPU): every ring on the per-CPU horizon, 0 records
 *    pushed below an earlier global limit and 0 late, the stream in
 *    order, H_c's age and the wake-ups reported.
 *  - The same load with the test-only broken reader (each thread reads
 *    its H_c on the NEXT ring's CPU): how often that is caught is an
 *    OBSERVATION printed, not asserted: on 2 CPUs the window (a record
 *    between its stamp and its data_head at the instant of the wrong
 *    read) is small. The guest test with 8 vCPUs asserts it.
 *  - Lost records: 1-page rings filled with no reader running; the
 *    PERF_RECORD_LOST the kernel writes next is counted, never delivered.
 *  - A reader thread moved off its CPU from outside; one thread for all
 *    CPUs.
 * In test_reader_lifecycle.c:
 *  - Which horizon each ring gets: pid 0 (one task), the GRACE_PERIOD
 *    flag, CLOCK_REALTIME (an estimate).
 *  - A fork() child (-ECHILD, the parent's reader goes on); stop while
 *    the threads run (joined, nothing left open); bad configs.
 * Skips, saying why, when perf_event_open is not permitted.
 *
 * In a guest: "test_reader device" takes the module's clock
 * (perfclock_open(NULL), events without use_clockid: H_c from
 * PERFCLOCK_IOC_GET_TIME), and PERFCLOCK_TEST_ASSERT_WRONG_CPU=1 turns
 * the wrong-CPU observation into a check that must fail the broken
 * reader (for a load and a machine where it is known to be caught).
 */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "perfclock_reader.h"
#include "internal.h"
#include "proc_task.h"
#include "tap.h"
#include "test_reader.h"

#define LOAD_MS		1000	/* PERFCLOCK_TEST_LOAD_MS overrides */
#define MAX_KIDS	64

static uint64_t load_ms = LOAD_MS;

int deliver(void *arg, const struct perfclock_event *ev)
{
	struct sink *s = arg;
	const struct perf_event_header *h = ev->data;

	s->delivered++;
	if (h->type == PERF_RECORD_LOST || h->type == PERF_RECORD_LOST_SAMPLES)
		s->lost_seen++;
	if (ev->flags & PERFCLOCK_EVENT_UNTIMED) {
		s->untimed++;
		return 0;
	}
	if (ev->flags & PERFCLOCK_EVENT_LATE) {
		s->late++;
		return 0;
	}
	if (s->timed++ && ev->time < s->last)
		s->unsorted++;
	s->last = ev->time;
	return 0;
}

static void on_limit(void *arg, uint64_t limit)
{
	struct sink *s = arg;

	s->limits++;
	if (limit <= s->last_limit)
		s->limit_down++;
	s->last_limit = limit;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* The load: a hog on every CPU, a pipe ping-pong between CPU pairs. */
static pid_t kids[MAX_KIDS];
static int nkids;

static void spawn(void (*fn)(int, int), int a, int b)
{
	pid_t p;

	if (nkids == MAX_KIDS)
		return;
	p = fork();
	if (p == 0) {
		fn(a, b);
		_exit(0);
	}
	if (p > 0)
		kids[nkids++] = p;
}

static void hog(int cpu, int unused)
{
	volatile uint64_t x = 0;

	(void)unused;
	pin(cpu);
	for (;;)
		x++;
}

/* Fds a (read) and b (write) of two pipes, bounced for ever. */
static int pp[2][2];

static void bounce(int side, int cpu)
{
	char c = 0;

	pin(cpu);
	if (side == 0 && write(pp[0][1], &c, 1) != 1)
		_exit(1);
	for (;;) {
		if (read(pp[side][0], &c, 1) != 1)
			_exit(1);
		if (write(pp[!side][1], &c, 1) != 1)
			_exit(1);
	}
}

void load_start(int ncpu)
{
	int i;

	nkids = 0;
	if (pipe(pp[0]) || pipe(pp[1]))
		return;
	for (i = 0; i < ncpu && i < MAX_KIDS / 2; i++)
		spawn(hog, i, 0);
	spawn(bounce, 0, 0);
	spawn(bounce, 1, ncpu > 1 ? 1 : 0);
	for (i = 0; i < 2; i++) {
		close(pp[i][0]);
		close(pp[i][1]);
	}
}

void load_stop(void)
{
	int i;

	for (i = 0; i < nkids; i++)
		kill(kids[i], SIGKILL);
	for (i = 0; i < nkids; i++)
		waitpid(kids[i], NULL, 0);
	nkids = 0;
}

static void attrs_init(struct perf_event_attr *a)
{
	memset(a, 0, 3 * sizeof(*a));
	a[0].type = PERF_TYPE_SOFTWARE;
	a[0].config = PERF_COUNT_SW_DUMMY;
	a[0].sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			   PERF_SAMPLE_CPU;
	a[0].sample_id_all = 1;
	a[0].context_switch = 1;
	a[0].task = 1;
	a[0].comm = 1;
	a[0].disabled = 1;
	a[1] = a[0];
	a[1].config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	a[1].context_switch = a[1].task = a[1].comm = 0;
	a[1].sample_period = 1;
	a[2] = a[1];
	a[2].config = PERF_COUNT_SW_CPU_CLOCK;
	a[2].sample_period = 100000;		/* 10 kHz a CPU */
}

struct perfclock_evring *ev_open(struct perfclock *clk, int pid,
				 uint32_t pages)
{
	struct perfclock_evring_config cfg;
	struct perf_event_attr a[3];

	attrs_init(a);
	perfclock_evring_config_init(&cfg);
	cfg.attrs = a;
	cfg.nr_attrs = 3;
	cfg.data_pages = pages;
	cfg.pid = pid;
	return perfclock_evring_open(clk, &cfg);
}

struct perfclock_reader *rd_start(struct perfclock *clk,
				  struct perfclock_evring *er,
				  struct sink *s, uint32_t flags)
{
	struct perfclock_reader_config rc;

	memset(s, 0, sizeof(*s));
	perfclock_reader_config_init(&rc);
	rc.deliver = deliver;
	rc.on_limit = on_limit;
	rc.arg = s;
	rc.flags = flags;
	return perfclock_reader_start(clk, er, &rc);
}

/*
 * Run the load for LOAD_MS with a reader on a fresh evring; stats out.
 * Returns 0, or -1 if it could not run.
 */
static int run_load(struct perfclock *clk, int ncpu, struct sink *s,
		    struct perfclock_reader_stats *st, int64_t *err)
{
	struct perfclock_evring *er = ev_open(clk, -1, 256);
	struct perfclock_reader *r;
	uint64_t end;
	int64_t n;

	*err = 0;
	if (!er)
		return -1;
	r = rd_start(clk, er, s, 0);
	if (!r) {
		perfclock_evring_close(er);
		return -1;
	}
	perfclock_evring_enable(er);
	load_start(ncpu);
	end = mono_ms() + load_ms;
	while (mono_ms() < end) {
		n = perfclock_reader_deliver(r, 10);
		if (n < 0 && !*err)
			*err = n;
	}
	load_stop();
	perfclock_evring_disable(er);
	n = perfclock_reader_stop(r);
	if (n < 0 && !*err)
		*err = n;
	perfclock_reader_get_stats(r, st);
	perfclock_reader_free(r);
	perfclock_evring_close(er);
	return 0;
}

/*
 * A merger that stops taking (a tool piped into a paused pager): the
 * threads stop at the held cap, a bound promised before the stall (the
 * cap, plus one batch of each thread: a drain of its rings, each record
 * with a 24-byte entry for its perf header of 8, in a buffer that
 * doubles from 64 KiB), the kernel drops and counts, and once the
 * merger takes again nothing is late or out of order. Before the cap,
 * 217-221 MiB were held after 4 s of a load like this one.
 */
#define STALL_CAP	(128u << 10)
#define STALL_PAGES	8u

static void stalled_merger(struct perfclock *clk, int ncpu)
{
	struct perfclock_reader_config rc;
	struct perfclock_reader_stats st;
	struct perfclock_evring *er = ev_open(clk, -1, STALL_PAGES);
	struct perfclock_reader *r;
	uint64_t ring_bytes = STALL_PAGES * (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t bound, per, batch, held, end;
	struct sink s;
	int64_t n, err = 0;
	uint32_t rings_per;

	if (!tap_ok(er != NULL, "reader: stalled merger: rings open"))
		return;
	memset(&s, 0, sizeof(s));
	perfclock_reader_config_init(&rc);
	rc.deliver = deliver;
	rc.on_limit = on_limit;
	rc.arg = &s;
	rc.held_cap_bytes = STALL_CAP;	/* the queue's cap stays 64 MiB */
	r = perfclock_reader_start(clk, er, &rc);
	if (!tap_ok(r != NULL, "reader: stalled merger: starts")) {
		perfclock_evring_close(er);
		return;
	}
	perfclock_reader_get_stats(r, &st);
	rings_per = (st.nr_rings + st.nr_threads - 1) / st.nr_threads;
	per = 3 * ring_bytes * rings_per;	/* entries of one drain */
	for (batch = 65536; batch < per; batch *= 2)
		;
	bound = STALL_CAP + (uint64_t)st.nr_threads * batch;
	perfclock_evring_enable(er);
	load_start(ncpu);
	/*
	 * Nobody takes: until the threads meet the cap (10 s at most, a
	 * liveness bound for a slow guest), then a second more for the
	 * rings to fill behind them.
	 */
	end = mono_ms() + 10000;
	do {
		usleep(50 * 1000);
		perfclock_reader_get_stats(r, &st);
	} while (!st.held_waits && mono_ms() < end);
	usleep(1000 * 1000);
	perfclock_reader_get_stats(r, &st);
	held = st.held_bytes;
	tap_ok(held <= bound && st.held_waits > 0,
	       "reader: stalled merger: holds %llu bytes, within the cap plus one batch a thread (%llu), the threads waited %llu rounds at the cap",
	       (unsigned long long)held, (unsigned long long)bound,
	       (unsigned long long)st.held_waits);
	/* The merger takes again, as a tool does once its pager goes on. */
	end = mono_ms() + 500;
	while (mono_ms() < end) {
		n = perfclock_reader_deliver(r, 10);
		if (n < 0 && !err)
			err = n;
	}
	load_stop();
	perfclock_evring_disable(er);
	n = perfclock_reader_stop(r);
	if (n < 0 && !err)
		err = n;
	perfclock_reader_get_stats(r, &st);
	tap_ok(!err && st.lost_records + st.lost > 0 && s.late == 0 &&
	       s.unsorted == 0 && st.queue.below_horizon == 0,
	       "reader: stalled merger: the kernel dropped and counted (%llu records, %llu lost), then none late (%llu), in order (%llu not), of %llu delivered, none below a limit (%llu), no error (%lld)",
	       (unsigned long long)st.lost_records, (unsigned long long)st.lost,
	       (unsigned long long)s.late, (unsigned long long)s.unsorted,
	       (unsigned long long)s.delivered,
	       (unsigned long long)st.queue.below_horizon, (long long)err);
	perfclock_reader_free(r);
	perfclock_evring_close(er);
}

static void real_load(struct perfclock *clk, int ncpu)
{
	struct perfclock_reader_stats st;
	struct sink s;
	int64_t err;

	if (!tap_ok(run_load(clk, ncpu, &s, &st, &err) == 0,
		    "reader: starts on the real rings"))
		return;
	tap_ok(err == 0, "reader: deliver and stop return no error (%lld)",
	       (long long)err);
	tap_ok(st.rings_percpu == st.nr_rings && st.nr_threads == st.nr_rings,
	       "reader: pid -1: all %u rings on the per-CPU horizon, one thread each",
	       st.nr_rings);
	/* Liveness only: this machine may be shared and overcommitted. */
	tap_ok(st.records > 1000 && st.limits > 0,
	       "reader: the load gave records (%llu) and the limit moved (%llu times)",
	       (unsigned long long)st.records, (unsigned long long)st.limits);
	tap_ok(st.queue.below_horizon == 0 && st.queue.late == 0 &&
	       s.late == 0 && s.unsorted == 0,
	       "reader: 0 records below an earlier global limit (%llu), 0 late (%llu), in order, of %llu",
	       (unsigned long long)st.queue.below_horizon,
	       (unsigned long long)st.queue.late,
	       (unsigned long long)st.records);
	tap_ok(s.delivered == st.delivered && s.timed + s.late == st.records &&
	       s.untimed == st.untimed && s.lost_seen == 0 && s.limit_down == 0,
	       "reader: every record delivered once (%llu of %llu + %llu untimed), untimed apart (%llu of %llu), no LOST record delivered (%llu), the limit only rises (%llu falls)",
	       (unsigned long long)s.delivered, (unsigned long long)st.records,
	       (unsigned long long)st.untimed,
	       (unsigned long long)s.untimed, (unsigned long long)st.untimed,
	       (unsigned long long)s.lost_seen, (unsigned long long)s.limit_down);
	tap_diag("reader: %llu rounds, %llu poll wake-ups, %llu timeouts, %llu hand-offs, %llu lost (%llu LOST records)",
		 (unsigned long long)st.rounds, (unsigned long long)st.wakeups,
		 (unsigned long long)st.timeouts,
		 (unsigned long long)st.handoffs, (unsigned long long)st.lost,
		 (unsigned long long)st.lost_records);
	tap_diag("reader: H_c age at take: p50 %llu us, p90 %llu us, p99 %llu us, max %llu us (%llu takes; shared, loaded machines: compare as ratios within one run)",
		 (unsigned long long)st.age_p50_ns / 1000,
		 (unsigned long long)st.age_p90_ns / 1000,
		 (unsigned long long)st.age_p99_ns / 1000,
		 (unsigned long long)st.age_max_ns / 1000,
		 (unsigned long long)st.age_count);
}

static void broken_reader(struct perfclock *clk, int ncpu)
{
	struct perfclock_reader_stats st;
	struct sink s;
	int64_t err;
	int ret;

	if (ncpu < 2) {
		tap_skip("reader: wrong-CPU observation # SKIP one CPU");
		return;
	}
	perfclock_reader__test_wrong_cpu(1);
	ret = run_load(clk, ncpu, &s, &st, &err);
	perfclock_reader__test_wrong_cpu(0);
	if (ret)
		return;
	if (getenv("PERFCLOCK_TEST_ASSERT_WRONG_CPU")) {
		tap_ok(st.queue.below_horizon + st.queue.late > 0,
		       "reader: H_c read on the wrong CPU is caught: %llu records below an earlier limit, %llu late, of %llu",
		       (unsigned long long)st.queue.below_horizon,
		       (unsigned long long)st.queue.late,
		       (unsigned long long)st.records);
		return;
	}
	/* An observation: printed, not asserted (see the top). */
	tap_diag("reader: OBSERVATION: H_c read on the wrong CPU: %llu records below an earlier limit, %llu late, of %llu (worst %llu ns)%s",
		 (unsigned long long)st.queue.below_horizon,
		 (unsigned long long)st.queue.late,
		 (unsigned long long)st.records,
		 (unsigned long long)st.queue.worst_lateness_ns,
		 st.queue.below_horizon ? ": caught" :
		 ": not caught on this run");
}

static void lost_records(struct perfclock *clk)
{
	struct perfclock_evring *er = ev_open(clk, -1, 1);
	struct perfclock_reader_stats st;
	struct perfclock_reader *r;
	struct sink s;
	int k;

	if (!tap_ok(er != NULL, "reader: 1-page rings open"))
		return;
	/* Fill the rings with nobody reading: the kernel drops the rest. */
	perfclock_evring_enable(er);
	for (k = 0; k < 60; k++) {
		pid_t p = fork();

		if (p == 0)
			_exit(0);
		if (p > 0)
			waitpid(p, NULL, 0);
	}
	r = rd_start(clk, er, &s, 0);
	/* A little more, so that the kernel writes its LOST record. */
	for (k = 0; k < 20; k++) {
		pid_t p = fork();

		if (p == 0)
			_exit(0);
		if (p > 0)
			waitpid(p, NULL, 0);
		perfclock_reader_deliver(r, 0);
	}
	perfclock_evring_disable(er);
	perfclock_reader_stop(r);
	perfclock_reader_get_stats(r, &st);
	tap_ok(st.lost_records > 0 && st.lost >= st.lost_records &&
	       s.lost_seen == 0,
	       "reader: lost records counted (%llu LOST records, %llu records lost), none delivered as an event",
	       (unsigned long long)st.lost_records,
	       (unsigned long long)st.lost);
	perfclock_reader_free(r);
	perfclock_evring_close(er);
}

/*
 * A reader thread moved off its CPU from outside (what CPU hotplug or a
 * cpuset change does to it): its H_c reads name another CPU, and after
 * three the ring falls back to the grace-period horizon, for good; the
 * order holds throughout. Then one thread for all CPUs (max_threads 1),
 * visiting them: every ring still on H_c, the order holds.
 */
static void moved_and_grouped(struct perfclock *clk, int ncpu)
{
	struct perfclock_reader_ring_stats rs;
	struct perfclock_reader_config rc;
	struct perfclock_reader_stats st;
	struct perfclock_evring *er;
	struct perfclock_reader *r;
	struct sink s;
	cpu_set_t set;
	uint64_t end;
	pid_t tid;
	int cpu1, moved = 0;

	if (ncpu < 2) {
		tap_skip("reader: moved thread # SKIP one CPU");
		return;
	}
	er = ev_open(clk, -1, 64);
	r = er ? rd_start(clk, er, &s, 0) : NULL;
	if (!tap_ok(r != NULL, "reader: starts for the moved-thread check"))
		goto out;
	perfclock_evring_enable(er);
	load_start(ncpu);
	perfclock_reader_deliver(r, 20);
	cpu1 = perfclock_evring_cpu(er, 1);
	tid = thread_named("pclk-rd0");
	CPU_ZERO(&set);
	CPU_SET(cpu1, &set);
	if (tid > 0 && perfclock_evring_cpu(er, 0) == 0 &&
	    !sched_setaffinity(tid, sizeof(set), &set))
		moved = 1;
	/* Three reads off its CPU; 10 s is a liveness bound, not a target. */
	end = mono_ms() + 10000;
	do {
		perfclock_reader_deliver(r, 10);
		perfclock_reader_get_ring_stats(r, 0, &rs);
	} while (moved && !rs.fallbacks && mono_ms() < end);
	load_stop();
	perfclock_reader_stop(r);
	perfclock_reader_get_stats(r, &st);
	tap_ok(moved && rs.horizon == PERFCLOCK_READER_HORIZON_GRACE_PERIOD &&
	       rs.fallbacks == 1 && st.queue.below_horizon == 0 &&
	       st.queue.late == 0 && s.unsorted == 0,
	       "reader: ring 0's thread moved to CPU %d from outside (%s): the ring falls back to the grace period (horizon %u, fallbacks %u), 0 below a limit (%llu), 0 late",
	       cpu1, moved ? "moved" : "could not move it", rs.horizon, rs.fallbacks,
	       (unsigned long long)st.queue.below_horizon);
	perfclock_reader_free(r);

	memset(&s, 0, sizeof(s));
	perfclock_reader_config_init(&rc);
	rc.deliver = deliver;
	rc.arg = &s;
	rc.max_threads = 1;
	r = perfclock_reader_start(clk, er, &rc);
	if (!tap_ok(r != NULL, "reader: starts with one thread for %d CPUs", ncpu))
		goto out;
	load_start(ncpu);
	end = mono_ms() + load_ms / 2;
	while (mono_ms() < end)
		perfclock_reader_deliver(r, 10);
	load_stop();
	perfclock_reader_stop(r);
	perfclock_reader_get_stats(r, &st);
	tap_ok(st.nr_threads == 1 && st.rings_percpu == st.nr_rings &&
	       st.records > 0 && st.queue.below_horizon == 0 &&
	       st.queue.late == 0 && s.unsorted == 0,
	       "reader: one thread visiting %u CPUs: all on H_c, %llu records, 0 below a limit, 0 late",
	       st.nr_rings, (unsigned long long)st.records);
	perfclock_reader_free(r);
out:
	perfclock_evring_close(er);
}

int main(int argc, char **argv)
{
	int device = argc > 1 && !strcmp(argv[1], "device");
	struct perfclock_clock_info info;
	struct perfclock_evring *er;
	struct perfclock *clk;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	const char *env = getenv("PERFCLOCK_TEST_LOAD_MS");

	if (env && atoi(env) > 0)
		load_ms = (uint64_t)atoi(env);

	clk = device ? perfclock_open(NULL) : perfclock_open_clockid(CLOCK_MONOTONIC);
	if (device && !clk) {
		tap_skip("reader: device # SKIP perfclock_open(NULL): %s (module not loaded?)",
			 strerror(errno));
		return tap_exit();
	}
	if (!tap_ok(clk != NULL, "reader: the clock opens (%s)",
		    device ? "the module's" : "CLOCK_MONOTONIC"))
		return tap_exit();
	er = ev_open(clk, -1, 8);
	if (!er && (errno == EACCES || errno == EPERM)) {
		tap_skip("reader: real events # SKIP perf_event_open system-wide not permitted: %s (needs CAP_PERFMON or perf_event_paranoid <= 0)",
			 strerror(errno));
		perfclock_close(clk);
		return tap_exit();
	}
	if (!tap_ok(er != NULL, "reader: the test's events open (%s)",
		    er ? "ok" : strerror(errno)))
		return tap_exit();
	perfclock_evring_close(er);
	memset(&info, 0, sizeof(info));
	perfclock_get_info(clk, &info);
	tap_diag("reader: H_c is read \"%s\"; perfclock_horizon() is \"%s\"",
		 perfclock_horizon_cpu_name(&info), perfclock_horizon_name(&info));
	real_load(clk, (int)ncpu);
	stalled_merger(clk, (int)ncpu);
	broken_reader(clk, (int)ncpu);
	lost_records(clk);
	moved_and_grouped(clk, (int)ncpu);
	per_task(clk, (int)ncpu);
	kinds(clk);
	lifecycle(clk, (int)ncpu);
	perfclock_close(clk);
	return tap_exit();
}
