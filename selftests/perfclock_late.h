/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Counting late records on real per-CPU perf rings under load, shared by
 * the horizon tests (perfclock_horizon_test.c: the module's horizons;
 * perfclock_membarrier_test.c: the library's without the module).
 *
 * A round takes each rule's horizon first, then drains every ring. A
 * record that turns up below a horizon handed out in an EARLIER round was
 * not in its ring when that horizon was handed out: late for that rule.
 * So a round's horizons become binding (late_bind()) only after the
 * round's drain.
 */
#ifndef PERFCLOCK_LATE_H
#define PERFCLOCK_LATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "perfclock_util.h"
#include "libperfclock.h"

#define LATE_RING_PAGES		64
#define LATE_SAMPLE_PERIOD_NS	100000	/* cpu-clock: 10 kHz per CPU */

struct late_ring {
	struct pc_comm_ring pr;
	uint64_t records, lost;
};

/*
 * One ring per CPU: cpu-clock samples (hrtimer, hard irq) plus context
 * switch, task and comm records (side-band), stamped by perf_clock(), or
 * with use_clockid by clockid when it is >= 0. With stack_bytes, samples
 * also carry a callchain and that much of the user stack: both are taken
 * after the stamp and before the commit (kernel/events/core.c:
 * perf_prepare_sample(), perf_output_sample_ustack()), so each record
 * stays longer in flight and a rule without a grace period is late more
 * often on the same load.
 */
static inline int late_ring_open_wide(struct late_ring *r, int cpu,
				      int clockid, uint32_t stack_bytes,
				      size_t pages)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.sample_period = LATE_SAMPLE_PERIOD_NS;
	attr.sample_type = PERF_SAMPLE_TIME;
	attr.sample_id_all = 1;
	attr.context_switch = 1;
	attr.task = 1;
	attr.comm = 1;
	if (clockid >= 0) {
		attr.use_clockid = 1;
		attr.clockid = clockid;
	}
	if (stack_bytes) {
		attr.sample_type |= PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_STACK_USER;
		attr.sample_stack_user = stack_bytes;
	}
	r->records = r->lost = 0;
	return pc_ring_open(&r->pr, &attr, -1, cpu, pages);
}

static inline int late_ring_open(struct late_ring *r, int cpu, int clockid)
{
	return late_ring_open_wide(r, cpu, clockid, 0, LATE_RING_PAGES);
}

struct late_verdict {
	const char *name;
	uint64_t next;		/* this round's horizon, binding after the drain */
	uint64_t handed;	/* the largest horizon handed out so far */
	uint64_t late, worst;
};

static inline void late_judge(struct late_verdict *v, uint64_t ts)
{
	if (ts < v->handed) {
		v->late++;
		if (v->handed - ts > v->worst)
			v->worst = v->handed - ts;
	}
}

/* After a round's drain: its horizons were handed out before it. */
static inline void late_bind(struct late_verdict *v, int nv)
{
	int k;

	for (k = 0; k < nv; k++)
		if (v[k].next > v[k].handed)
			v[k].handed = v[k].next;
}

/*
 * Drain a ring to the head loaded now (acquire: after the horizons were
 * handed out), judging each record against every verdict.
 */
static inline int late_ring_drain(struct late_ring *r, struct late_verdict *v,
				  int nv, uint64_t *records)
{
	struct perf_event_mmap_page *meta = r->pr.base;
	const unsigned char *data = (const unsigned char *)r->pr.base +
				    sysconf(_SC_PAGESIZE);
	size_t size = r->pr.data_size;
	uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = meta->data_tail;
	struct perf_event_header hdr;
	uint64_t ts;
	size_t i;
	int k;

	while (tail < head) {
		for (i = 0; i < sizeof(hdr); i++)
			((unsigned char *)&hdr)[i] = data[(tail + i) % size];
		if (hdr.size < sizeof(hdr) + 8 || hdr.size % 8 ||
		    tail + hdr.size > head)
			return -EIO;
		/* A sample's time comes first; the others' at the end. */
		for (i = 0; i < 8; i++) {
			size_t off = hdr.type == PERF_RECORD_SAMPLE ?
				     sizeof(hdr) + i : hdr.size - 8 + i;

			((unsigned char *)&ts)[i] = data[(tail + off) % size];
		}
		if (hdr.type == PERF_RECORD_LOST)
			r->lost++;
		for (k = 0; k < nv; k++)
			late_judge(&v[k], ts);
		r->records++;
		(*records)++;
		tail += hdr.size;
	}
	__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
	return 0;
}

/* The load: spinners and yielders on every CPU, and threads coming and going. */
static atomic_int late_load_stop;

static inline void *late_spin_thread(void *arg)
{
	volatile uint64_t x = 0;
	int yield = (int)(intptr_t)arg;

	while (!atomic_load_explicit(&late_load_stop, memory_order_relaxed)) {
		for (int i = 0; i < 2000; i++)
			x += i;
		if (yield)
			sched_yield();
	}
	return NULL;
}

static inline void *late_churn_thread(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&late_load_stop, memory_order_relaxed)) {
		pid_t pid = fork();

		if (!pid)
			_exit(0);
		if (pid > 0)
			waitpid(pid, NULL, 0);
		usleep(1000);
	}
	return NULL;
}

/*
 * Start the load: a spinner and a yielder per CPU and one forker, into
 * threads[] (room for 2 * ncpus + 1): the count started, or -errno.
 */
static inline int late_load_start(pthread_t *threads, int ncpus)
{
	int i, n = 0, err;

	atomic_store(&late_load_stop, 0);
	for (i = 0; i < ncpus; i++) {
		err = pthread_create(&threads[n], NULL, late_spin_thread,
				     (void *)0);
		if (err)
			return -err;
		n++;
		err = pthread_create(&threads[n], NULL, late_spin_thread,
				     (void *)1);
		if (err)
			return -err;
		n++;
	}
	err = pthread_create(&threads[n], NULL, late_churn_thread, NULL);
	if (err)
		return -err;
	return n + 1;
}

static inline void late_load_stop_all(void)
{
	atomic_store(&late_load_stop, 1);
}

/*
 * How long a run lasts: at least min_s seconds from start_ns; when the bare
 * read must be shown late (expect_late), on until it was (a stall between
 * stamp and commit is a matter of chance on a host shared with other
 * guests), at most max_s seconds. The rules are judged over the whole run.
 */
static inline int late_run_done(uint64_t start_ns, uint64_t now_ns, int min_s,
				int max_s, int expect_late, uint64_t late)
{
	uint64_t ran = now_ns - start_ns;

	if (max_s < min_s)
		max_s = min_s;
	if (ran >= (uint64_t)max_s * 1000000000ULL)
		return 1;
	return ran >= (uint64_t)min_s * 1000000000ULL &&
	       (!expect_late || late);
}

static inline int late_env_int(const char *name, int def)
{
	const char *s = getenv(name);

	return s && *s ? atoi(s) : def;
}

/*
 * perfclock_get_info() and perfclock_horizon() may return -EAGAIN: "ask
 * again" (user/perfclock/horizon.h), when a page stayed busy for all of
 * a read's tries. In an overcommitted TCG guest the writer's vCPU can be
 * descheduled for tens of ms mid-update, longer than those tries; a test
 * then asks again, as a tool would, and fails only on another error or
 * when the page stays busy for LATE_EAGAIN_TRIES asks in a row.
 */
#define LATE_EAGAIN_TRIES	1000

static inline int late_get_info(struct perfclock *clk,
				struct perfclock_clock_info *info)
{
	return pc_ask_again(LATE_EAGAIN_TRIES, perfclock_get_info(clk, info));
}

static inline int late_horizon(struct perfclock *clk, uint64_t *ns)
{
	return pc_ask_again(LATE_EAGAIN_TRIES, perfclock_horizon(clk, ns));
}

#endif /* PERFCLOCK_LATE_H */
