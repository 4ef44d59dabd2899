// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The threaded reader on the ring of a per-task event (cpu -1,
 * PERFCLOCK_EVRING_PER_TASK): THE PER-TASK HORIZON of evring_reader.c,
 * the least of every online CPU's latest H_c, taken before the drain
 * (docs/percpu-horizon.md, section 8). The task is a thread of this
 * process making records as fast as it can, each written in a short
 * non-preemptible kernel section on the CPU it runs on: raw_syscalls
 * sys_enter / sys_exit samples (perf_trace_##call -> perf_tp_event(),
 * under the tracepoint's preempt-off), page-fault samples
 * (__perf_sw_event()), PERF_RECORD_SWITCH (perf_iterate_sb() from
 * __schedule()).
 *
 *  - The reader's rule, the task moving across every CPU every 2 ms: the
 *    ring is on PERTASK, with a reader thread on every online CPU (one
 *    ring, as many threads as CPUs); 0 records below an earlier limit,
 *    0 late, in order.
 *  - A wrong rule (test hook, perfclock_reader__test_pertask_rule(1)):
 *    the ring's horizon is the H_c of ONE CPU, the one its own thread
 *    reads, as if the task's ring were that CPU's. The task is kept on
 *    another CPU: a record it stamped there below that H_c and had not
 *    published when the ring was drained (the drain does not wait for
 *    the other CPU's section) is flushed past, and found later below
 *    the limit. Must be caught (below an earlier limit or late > 0);
 *    runs until it is, at most 10 s. With syscall tracepoints the task
 *    spends much of its time inside such sections, so the window the
 *    wrong-CPU test rarely hits on 2 CPUs is wide open here.
 *  - The other wrong rule, the greatest H_c (rule 2): caught the same
 *    way. Whenever the ring thread's own read is the newest (the task's
 *    CPU's reader thread shares its CPU with the busy task and reads
 *    less often), the greatest is that one CPU's H_c, which says nothing
 *    of a section open on the task's CPU.
 *  - The control: the reader's rule under the very load and period of
 *    the wrong rules (task on the last CPU, 100 us rounds), 2 s
 *    (PERFCLOCK_TEST_PERTASK_MS): 0 below an earlier limit, 0 late.
 * Skips without a second CPU, or when a per-task event cannot be opened.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "perfclock_reader.h"
#include "internal.h"
#include "tap.h"
#include "tracefs_id.h"
#include "test_reader.h"

#define TASK_MIGRATE_MS	2
#define REGION		(2u << 20)	/* page-faulted again and again */
/*
 * Every FAULT_PERIOD-th fault sample copies STACK_DUMP bytes of the
 * user stack (PERF_SAMPLE_STACK_USER) between its stamp and its
 * data_head (perf_prepare_sample() stamps, perf_output_sample() copies
 * after perf_output_begin()): a section of microseconds, still one
 * non-preemptible section on one CPU, that a drain from another CPU can
 * land in. About 20 MB/s.
 */
#define STACK_DUMP	65528u
#define FAULT_PERIOD	64u

struct task {
	pthread_t thr;
	pid_t tid;
	int stop;			/* atomic */
	int ready;			/* atomic */
	int ncpu, only;			/* only >= 0: stay there */
	uint64_t loops;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void pin_to(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/*
 * The traced task's work: system calls and page faults, moving CPUs.
 * Called below a STACK_DUMP-deep frame, so that the user stack each
 * fault sample copies is all mapped.
 */
static void task_work(struct task *t)
{
	unsigned char *p = mmap(NULL, REGION, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t next = 0;
	int cpu = 0, i;
	size_t off;

	while (!__atomic_load_n(&t->stop, __ATOMIC_RELAXED)) {
		if (t->only < 0 && now_ms() >= next) {
			pin_to(cpu);
			cpu = (cpu + 1) % t->ncpu;
			next = now_ms() + TASK_MIGRATE_MS;
		}
		for (i = 0; i < 200; i++)
			syscall(SYS_getppid);
		if (p != MAP_FAILED) {
			for (off = 0; off < REGION; off += 4096)
				p[off] = 1;
			madvise(p, REGION, MADV_DONTNEED);
		}
		t->loops++;
	}
	if (p != MAP_FAILED)
		munmap(p, REGION);
}

static void *task_main(void *arg)
{
	struct task *t = arg;
	volatile unsigned char frame[2 * STACK_DUMP];

	memset((unsigned char *)frame, 0, sizeof(frame));
	t->tid = (pid_t)syscall(SYS_gettid);
	if (t->only >= 0)
		pin_to(t->only);
	__atomic_store_n(&t->ready, 1, __ATOMIC_RELEASE);
	task_work(t);
	return (void *)(uintptr_t)frame[0];
}

/* The task's ring: its syscall tracepoints (if tracefs has them), faults, switches. */
static struct perfclock_evring *task_ring(struct perfclock *clk, pid_t tid,
					  int *tracepoints)
{
	struct perfclock_evring_config cfg;
	struct perf_event_attr a[4];
	int enter = tracefs_event_id("raw_syscalls/sys_enter");
	int exit_ = tracefs_event_id("raw_syscalls/sys_exit");
	uint32_t n = 0;

	memset(a, 0, sizeof(a));
	a[0].type = PERF_TYPE_SOFTWARE;
	a[0].config = PERF_COUNT_SW_DUMMY;
	a[0].sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
	a[0].sample_id_all = 1;
	a[0].context_switch = 1;
	a[0].disabled = 1;
	a[1] = a[0];
	a[1].context_switch = 0;
	a[1].config = PERF_COUNT_SW_PAGE_FAULTS;
	a[1].sample_period = FAULT_PERIOD;
	a[1].sample_type |= PERF_SAMPLE_STACK_USER;
	a[1].sample_stack_user = STACK_DUMP;
	n = 2;
	*tracepoints = enter >= 0 && exit_ >= 0;
	if (*tracepoints) {
		a[2] = a[0];
		a[2].context_switch = 0;
		a[2].sample_period = 1;
		a[2].type = PERF_TYPE_TRACEPOINT;
		a[2].config = (uint64_t)enter;
		a[3] = a[2];
		a[3].config = (uint64_t)exit_;
		n = 4;
	}
	perfclock_evring_config_init(&cfg);
	cfg.attrs = a;
	cfg.nr_attrs = n;
	cfg.data_pages = 512;
	cfg.pid = tid;
	cfg.flags = PERFCLOCK_EVRING_PER_TASK;
	return perfclock_evring_open(clk, &cfg);
}

struct run {
	struct perfclock_reader_stats st;
	struct perfclock_reader_ring_stats rs;
	struct sink s;
	int64_t err;
	uint64_t loops, ms;
	int tracepoints;
};

/*
 * Under ThreadSanitizer (check.sh's test_reader_tsan) every access is
 * slowed many times over, the kernel's sections are not, and a wrong
 * rule went 10 s uncaught there: printed, not asserted (as the wrong-CPU
 * observation). The plain build asserts it.
 */
#if defined(__SANITIZE_THREAD__)
#define WRONG_RULE_ASSERTED	0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WRONG_RULE_ASSERTED	0
#endif
#endif
#ifndef WRONG_RULE_ASSERTED
#define WRONG_RULE_ASSERTED	1
#endif
/* How long a wrong rule runs at most: caught in 0.2-2 s on this host. */
#define WRONG_RULE_MS	(WRONG_RULE_ASSERTED ? 10000 : 2000)

/* A wrong rule's verdict: asserted, or printed under TSan. */
static void wrong_rule(const char *what, int last, const struct run *o)
{
	int caught = o->st.queue.below_horizon + o->st.queue.late > 0;

	if (WRONG_RULE_ASSERTED)
		tap_ok(caught, "reader: per-task ring under a WRONG rule (%s, the task on CPU %d) is caught: %llu records below an earlier limit, %llu late, of %llu, after %llu ms",
		       what, last, (unsigned long long)o->st.queue.below_horizon,
		       (unsigned long long)o->st.queue.late,
		       (unsigned long long)o->st.records,
		       (unsigned long long)o->ms);
	else
		tap_diag("reader: OBSERVATION (TSan): per-task ring under a wrong rule (%s, the task on CPU %d): %llu records below an earlier limit, %llu late, of %llu, in %llu ms%s",
			 what, last, (unsigned long long)o->st.queue.below_horizon,
			 (unsigned long long)o->st.queue.late,
			 (unsigned long long)o->st.records,
			 (unsigned long long)o->ms,
			 caught ? ": caught" : ": not caught on this run");
}

static uint64_t control_ms(void)
{
	const char *env = getenv("PERFCLOCK_TEST_PERTASK_MS");

	return env && atoi(env) > 0 ? (uint64_t)atoi(env) : 2000;
}


/*
 * Trace a task (on every CPU in turn, or only on CPU only) with the
 * reader under rule, for ms, or until caught when until_caught. 0, or -1
 * (could not run: errno).
 */
static int run(struct perfclock *clk, int ncpu, int only, int rule,
	       uint32_t period_us, uint64_t ms, int until_caught,
	       struct run *out)
{
	struct perfclock_reader_config rc;
	struct perfclock_evring *er;
	struct perfclock_reader *r;
	struct task t;
	uint64_t start, end;
	int64_t n;
	int ret = -1;

	memset(out, 0, sizeof(*out));
	memset(&t, 0, sizeof(t));
	t.ncpu = ncpu;
	t.only = only;
	if (pthread_create(&t.thr, NULL, task_main, &t))
		return -1;
	while (!__atomic_load_n(&t.ready, __ATOMIC_ACQUIRE))
		sched_yield();
	er = task_ring(clk, t.tid, &out->tracepoints);
	if (!er)
		goto out;
	perfclock_reader__test_pertask_rule(rule);
	perfclock_reader_config_init(&rc);
	rc.deliver = deliver;
	rc.arg = &out->s;
	rc.period_us = period_us;
	r = perfclock_reader_start(clk, er, &rc);
	if (!r) {
		perfclock_evring_close(er);
		goto out;
	}
	perfclock_evring_enable(er);
	start = now_ms();
	end = start + ms;
	for (;;) {
		n = perfclock_reader_deliver(r, 10);
		if (n < 0 && !out->err)
			out->err = n;
		if (until_caught) {
			perfclock_reader_get_stats(r, &out->st);
			if (out->st.queue.below_horizon + out->st.queue.late)
				break;
		}
		if (now_ms() >= end)
			break;
	}
	out->ms = now_ms() - start;
	perfclock_evring_disable(er);
	n = perfclock_reader_stop(r);
	if (n < 0 && !out->err)
		out->err = n;
	perfclock_reader_get_stats(r, &out->st);
	perfclock_reader_get_ring_stats(r, 0, &out->rs);
	perfclock_reader_free(r);
	perfclock_evring_close(er);
	ret = 0;
out:
	perfclock_reader__test_pertask_rule(0);
	__atomic_store_n(&t.stop, 1, __ATOMIC_RELAXED);
	pthread_join(t.thr, NULL);
	out->loops = t.loops;
	return ret;
}

/* PERFCLOCK_EVRING_PER_TASK without a pid, or with inherit: EINVAL. */
static void bad_configs(struct perfclock *clk)
{
	struct perfclock_evring_config cfg;
	struct perf_event_attr a;
	struct perfclock_evring *er1, *er2;
	int e1, e2;

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.sample_type = PERF_SAMPLE_TIME;
	a.disabled = 1;
	perfclock_evring_config_init(&cfg);
	cfg.attrs = &a;
	cfg.nr_attrs = 1;
	cfg.flags = PERFCLOCK_EVRING_PER_TASK;
	er1 = perfclock_evring_open(clk, &cfg);	/* pid -1 */
	e1 = errno;
	cfg.pid = 0;
	a.inherit = 1;
	er2 = perfclock_evring_open(clk, &cfg);
	e2 = errno;
	tap_ok(!er1 && e1 == EINVAL && !er2 && e2 == EINVAL,
	       "evring: PERFCLOCK_EVRING_PER_TASK without a pid is EINVAL (%s), with inherit too (%s)",
	       er1 ? "opened" : strerror(e1), er2 ? "opened" : strerror(e2));
	perfclock_evring_close(er1);
	perfclock_evring_close(er2);
}

void per_task(struct perfclock *clk, int ncpu)
{
	struct run o;
	int last = ncpu - 1;

	bad_configs(clk);

	if (ncpu < 2) {
		tap_skip("reader: per-task ring # SKIP one CPU");
		return;
	}
	if (run(clk, ncpu, -1, 0, 0, 1000, 0, &o)) {
		tap_skip("reader: per-task ring # SKIP a per-task event or its reader: %s",
			 strerror(errno));
		return;
	}
	tap_ok(o.rs.horizon == PERFCLOCK_READER_HORIZON_PERTASK &&
	       o.rs.cpu == -1 && o.st.nr_rings == 1 &&
	       o.st.nr_threads == (uint32_t)ncpu && o.rs.fallbacks == 0,
	       "reader: per-task ring (cpu -1): horizon %s, %u threads for %u ring (one H_c thread on each of %d CPUs), no fallback (%u)",
	       perfclock_reader_horizon_name(o.rs.horizon), o.st.nr_threads,
	       o.st.nr_rings, ncpu, o.rs.fallbacks);
	tap_ok(o.err == 0 && o.st.records > 1000 && o.st.limits > 0 &&
	       o.st.queue.below_horizon == 0 && o.st.queue.late == 0 &&
	       o.s.late == 0 && o.s.unsorted == 0,
	       "reader: per-task ring, the task moving across %d CPUs every %d ms, least H_c of every CPU: %llu records (%s), 0 below an earlier limit (%llu), 0 late (%llu), in order (%llu not), limit moved %llu times, no error (%lld)",
	       ncpu, TASK_MIGRATE_MS, (unsigned long long)o.st.records,
	       o.tracepoints ? "syscall tracepoints, faults, switches" :
	       "faults, switches: no tracefs",
	       (unsigned long long)o.st.queue.below_horizon,
	       (unsigned long long)o.st.queue.late,
	       (unsigned long long)o.s.unsorted,
	       (unsigned long long)o.st.limits, (long long)o.err);
	tap_diag("reader: per-task ring: %llu task loops, %llu lost (%llu LOST records), H_c age p50 %llu us, p99 %llu us",
		 (unsigned long long)o.loops, (unsigned long long)o.st.lost,
		 (unsigned long long)o.st.lost_records,
		 (unsigned long long)o.st.age_p50_ns / 1000,
		 (unsigned long long)o.st.age_p99_ns / 1000);

	/* The control: the reader's rule, the wrong rules' load and rounds. */
	if (run(clk, ncpu, last, 0, 100, control_ms(), 0, &o) == 0)
		tap_ok(o.err == 0 && o.st.records > 1000 &&
		       o.st.queue.below_horizon == 0 && o.st.queue.late == 0 &&
		       o.s.unsorted == 0,
		       "reader: per-task ring, the task on CPU %d, 100 us rounds, least H_c of every CPU: %llu records in %llu ms, 0 below an earlier limit (%llu), 0 late (%llu)",
		       last, (unsigned long long)o.st.records,
		       (unsigned long long)o.ms,
		       (unsigned long long)o.st.queue.below_horizon,
		       (unsigned long long)o.st.queue.late);
	else
		tap_ok(0, "reader: per-task ring, the control, runs: %s",
		       strerror(errno));

	/* Wrong rule 1: one CPU's H_c (the ring thread's CPU, the first). */
	if (run(clk, ncpu, last, 1, 100, WRONG_RULE_MS, 1, &o) == 0)
		wrong_rule("the H_c of one CPU", last, &o);
	else
		tap_ok(0, "reader: per-task ring under a wrong rule runs: %s",
		       strerror(errno));

	/* Wrong rule 2: the greatest H_c. */
	if (run(clk, ncpu, last, 2, 100, WRONG_RULE_MS, 1, &o) == 0)
		wrong_rule("the greatest H_c", last, &o);
	else
		tap_ok(0, "reader: per-task ring under the greatest H_c runs: %s",
		       strerror(errno));
}
