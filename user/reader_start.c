// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libperfclock: the threaded reader's setup and teardown
 * (perfclock/reader.h): perfclock_reader_config_init(),
 * perfclock_reader_start() (which horizon each ring gets, the threads
 * and their rings, the per-task slots), and for the merger joining and
 * freeing them. What the threads do: evring_reader.c, whose THE
 * HAND-OFF, THE HELD CAP and THE PER-TASK HORIZON this file sets up.
 * Above evring_reader.c (it starts its threads), below reader_merge.c
 * (which joins and frees through it at stop and free).
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

PERFCLOCK_API void
perfclock_reader_config_init(struct perfclock_reader_config *cfg)
{
	if (!cfg)
		return;
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->max_threads = PERFCLOCK_READER_DEFAULT_MAX_THREADS;
	cfg->period_us = PERFCLOCK_READER_DEFAULT_PERIOD_US;
}

/*
 * THE PER-TASK HORIZON's slots, for an evring of one task's rings (cpu
 * -1): one per CPU online now, and the online list to compare with. 0
 * slots (no per-task horizon) where that list cannot be read: the CPUs
 * the task may run on would not be known. 0 or -ENOMEM.
 */
static int slots_make(struct perfclock_reader *r)
{
	int *cpus = NULL, n, from_sysfs = 0, i;
	ssize_t len;

	r->online_fd = open("/sys/devices/system/cpu/online",
			    O_RDONLY | O_CLOEXEC);
	if (r->online_fd < 0)
		return 0;
	len = pread(r->online_fd, r->online, sizeof(r->online) - 1, 0);
	if (len <= 0)
		return 0;
	r->online[len] = 0;
	n = perfclock__online_cpus(&cpus, &from_sysfs);
	if (n == -ENOMEM)
		return n;
	if (n <= 0 || !from_sysfs) {
		free(cpus);
		return 0;
	}
	r->slot = calloc((size_t)n, sizeof(*r->slot));
	if (!r->slot) {
		free(cpus);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		r->slot[i].cpu = cpus[i];
	r->nr_slots = n;
	free(cpus);
	/* The list and the string must say the same CPUs. */
	if (perfclock_reader__online_changed(r))
		r->nr_slots = 0;
	return 0;
}

/*
 * A ring that receives BPF output records: H_c only where the kernel
 * writes them with preemption off (percpu_bpf_gate.c); elsewhere the
 * grace-period horizon, which a reader between the stamp and the publish
 * does not fool. Said to the log once per process.
 */
static int bpf_output_percpu_ok(void)
{
	static int said;
	int k = perfclock__kernel_bpf_output_now();

	if (k == PERFCLOCK_KBPF_PREEMPT_OFF)
		return 1;
	if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		perfclock__log(PERFCLOCK_LOG_ERR,
			       "perfclock_reader_start: BPF output events: no per-CPU horizon, grace-period horizon instead: %s",
			       perfclock__kbpf_name(k));
	return 0;
}

/* Which horizon each ring starts with (docs/reader.md). */
static int ring_kinds(struct perfclock_reader *r, struct perfclock_evring *er,
		      uint32_t flags)
{
	const struct perf_event_attr *attrs;
	struct perfclock_clock_info info;
	int pid, i, percpu, pertask, pebs = 0, err;
	uint32_t k, nattr;

	err = perfclock_get_info(r->clk, &info);
	if (err)
		return err;
	/* NTP_SLOPE: the same proof, less the NTP slope (docs/horizon.md). */
	r->other_kind = (info.flags & (PERFCLOCK_CLOCK_HORIZON_EXACT |
				       PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE)) ?
			PERFCLOCK_READER_HORIZON_GRACE_PERIOD :
			PERFCLOCK_READER_HORIZON_ESTIMATE;
	attrs = perfclock_evring__opened_as(er, &nattr, &pid);
	percpu = (info.flags & PERFCLOCK_CLOCK_HORIZON_PERCPU) &&
		 !(flags & PERFCLOCK_READER_GRACE_PERIOD);
	/* One task's ring (cpu -1), and an H_c slot on every CPU. */
	pertask = percpu && r->nr_slots > 0;
	percpu = percpu && pid == -1 && !r->nr_slots;
	for (k = 0; k < nattr; k++) {
		if (attrs[k].inherit)
			percpu = pertask = 0;
		if ((percpu || pertask) && perfclock__attr_bpf_output(&attrs[k]) &&
		    !bpf_output_percpu_ok())
			percpu = pertask = 0;
		if (perfclock_check_attr(r->clk, &attrs[k]) == -EOPNOTSUPP)
			pebs = 1;
	}
	for (i = 0; i < r->nr_rings; i++) {
		struct reader_ring *rr = &r->ring[i];

		rr->kind = percpu ? PERFCLOCK_READER_HORIZON_PERCPU :
			   pertask ? PERFCLOCK_READER_HORIZON_PERTASK :
			   r->other_kind;
		rr->shared.horizon = pebs ? PERFCLOCK_READER_HORIZON_ESTIMATE :
				     (uint32_t)rr->kind;
		rr->shared.cpu = rr->cpu;
	}
	return 0;
}

/*
 * Thread t serves rings [t * n / T, (t + 1) * n / T): neighbours. With
 * slots (a task's rings), thread t reads H_c on CPUs [t * S / T,
 * (t + 1) * S / T) instead, and drains rings t, t + T, ...
 */
static int threads_make(struct perfclock_reader *r)
{
	int t, i, a, b, T = r->nr_threads;

	r->th = calloc((size_t)T, sizeof(*r->th));
	r->takes = calloc((size_t)T, sizeof(*r->takes));
	if (!r->th || !r->takes)
		return -ENOMEM;
	for (t = 0; t < T; t++) {
		struct reader_thread *th = &r->th[t];

		th->r = r;
		th->full_tail = &th->full;
		pthread_mutex_init(&th->lock, NULL);
		if (r->nr_slots) {
			a = (int)((int64_t)t * r->nr_slots / T);
			b = (int)((int64_t)(t + 1) * r->nr_slots / T);
			th->nr_slots = b - a;
			th->slots = calloc((size_t)th->nr_slots + 1,
					   sizeof(*th->slots));
			if (!th->slots)
				return -ENOMEM;
			for (i = 0; i < th->nr_slots; i++)
				th->slots[i] = &r->slot[a + i];
			th->nr = r->nr_rings / T + (t < r->nr_rings % T);
		} else {
			a = (int)((int64_t)t * r->nr_rings / T);
			b = (int)((int64_t)(t + 1) * r->nr_rings / T);
			th->nr = b - a;
		}
		th->rings = calloc((size_t)th->nr + 1, sizeof(*th->rings));
		th->pfd = calloc((size_t)th->nr + 1, sizeof(*th->pfd));
		if (!th->rings || !th->pfd)
			return -ENOMEM;
		for (i = 0; i < th->nr; i++) {
			int k = r->nr_slots ? t + i * T : a + i;

			th->rings[i] = &r->ring[k];
			r->ring[k].thread = t;
			th->pfd[i].fd = r->ring[k].fd;
			th->pfd[i].events = POLLIN;
		}
		/* The stop signal: readable once stop is set, for good. */
		th->pfd[th->nr].fd = r->stop_fd;
		th->pfd[th->nr].events = POLLIN;
	}
	return 0;
}

static int threads_start(struct perfclock_reader *r)
{
	sigset_t all, old;
	int t, err = 0;

	/* Signals go to the caller's threads, never to a reader. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (t = 0; t < r->nr_threads; t++) {
		err = -pthread_create(&r->th[t].tid, NULL, perfclock_reader__thread_main,
				      &r->th[t]);
		if (err)
			break;
		r->started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

/* Tell every thread to stop, and join them. */
void perfclock_reader__join(struct perfclock_reader *r)
{
	uint64_t one = 1;
	int t;

	__atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
	if (write(r->stop_fd, &one, sizeof(one)) < 0) {
		/* Cannot fail for an eventfd below its maximum; the
		 * threads see stop within one period anyway. */
	}
	for (t = 0; t < r->started; t++)
		pthread_join(r->th[t].tid, NULL);
	r->started = 0;
}

static void batches_free(struct reader_batch *b)
{
	struct reader_batch *next;

	for (; b; b = next) {
		next = b->next;
		free(b->buf);
		free(b);
	}
}

/* Free everything start() made (the threads joined). */
void perfclock_reader__release(struct perfclock_reader *r)
{
	int t;

	if (r->th) {
		for (t = 0; t < r->nr_threads; t++) {
			struct reader_thread *th = &r->th[t];

			batches_free(th->full);
			batches_free(th->free);
			batches_free(th->cur);
			if (th->rings)
				pthread_mutex_destroy(&th->lock);
			free(th->rings);
			free(th->pfd);
			free(th->slots);
		}
	}
	if (r->online_fd >= 0)
		close(r->online_fd);
	free(r->slot);
	pthread_mutex_destroy(&r->slot_lock);
	perfclock_queue_free(r->q);
	if (r->stop_fd >= 0)
		close(r->stop_fd);
	pthread_cond_destroy(&r->cond);
	pthread_condattr_destroy(&r->condattr);
	pthread_mutex_destroy(&r->lock);
	free(r->th);
	free(r->takes);
	free(r->ring);
	free(r);
}

/*
 * Are er's events stamped with clk's clock? Each H_c is a read of clk,
 * a bound only for records stamped with that clock: a reader of rings
 * opened for another clock delivered 39 % of its events late, silently.
 * perfclock_check_attr() says -EINVAL for a clock field that is not
 * clk's (a use_clockid event for the module, another clockid).
 */
static int stamped_by(const struct perfclock_evring *er,
		      const struct perfclock *clk)
{
	const struct perf_event_attr *attrs;
	uint32_t i, nr;
	int pid;

	attrs = perfclock_evring__opened_as(er, &nr, &pid);
	for (i = 0; attrs && i < nr; i++)
		if (perfclock_check_attr(clk, &attrs[i]) == -EINVAL)
			return 0;
	return 1;
}

PERFCLOCK_API struct perfclock_reader *
perfclock_reader_start(struct perfclock *clk, struct perfclock_evring *er,
		       const struct perfclock_reader_config *cfg)
{
	struct perfclock_queue_config qc;
	struct perfclock_reader *r;
	int i, n, err;

	if (!clk || !er || !cfg || cfg->size < sizeof(*cfg) || !cfg->deliver ||
	    (cfg->flags & ~PERFCLOCK_READER_GRACE_PERIOD) || cfg->reserved[0] ||
	    cfg->reserved[1] || cfg->reserved[2]) {
		errno = EINVAL;
		return NULL;
	}
	n = perfclock_evring_nr_rings(er);
	if (n <= 0 || !stamped_by(er, clk)) {
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->clk = clk;
	r->er = er;
	r->cfg = *cfg;
	r->pid = getpid();
	r->stop_fd = -1;
	r->online_fd = -1;
	r->period_us = cfg->period_us ? cfg->period_us :
		       PERFCLOCK_READER_DEFAULT_PERIOD_US;
	r->nr_rings = n;
	pthread_mutex_init(&r->slot_lock, NULL);
	pthread_mutex_init(&r->lock, NULL);
	pthread_condattr_init(&r->condattr);
	pthread_condattr_setclock(&r->condattr, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cond, &r->condattr);
	r->ring = calloc((size_t)r->nr_rings, sizeof(*r->ring));
	err = r->ring ? 0 : -ENOMEM;
	for (i = 0; !err && i < r->nr_rings; i++) {
		r->ring[i].idx = i;
		r->ring[i].ring = perfclock_evring_ring(er, i);
		r->ring[i].cpu = perfclock_evring_cpu(er, i);
		r->ring[i].fd = perfclock_evring_fd(er, i, 0);
	}
	/* A task's rings (cpu -1): an H_c slot on every online CPU. */
	if (!err && r->ring[0].cpu < 0)
		err = slots_make(r);
	n = (int)(cfg->max_threads ? cfg->max_threads :
		  PERFCLOCK_READER_DEFAULT_MAX_THREADS);
	i = r->nr_slots ? r->nr_slots : r->nr_rings;
	r->nr_threads = n < i ? n : i;
	if (!err)
		err = ring_kinds(r, er, cfg->flags);
	if (!err) {
		perfclock_queue_config_init(&qc);
		qc.nr_sources = (uint32_t)r->nr_rings;
		qc.deliver = cfg->deliver;
		qc.arg = cfg->arg;
		if (cfg->queue_mem_cap_bytes)
			qc.mem_cap_bytes = cfg->queue_mem_cap_bytes;
		r->held_cap = cfg->held_cap_bytes ? cfg->held_cap_bytes :
			      qc.mem_cap_bytes / 2;	/* THE HELD CAP */
		r->q = perfclock_queue_new(&qc);
		if (!r->q)
			err = -errno;
	}
	if (!err) {
		r->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (r->stop_fd < 0)
			err = -errno;
	}
	if (!err)
		err = threads_make(r);
	if (!err)
		err = threads_start(r);
	if (err) {
		perfclock_reader__join(r);
		perfclock_reader__release(r);
		errno = -err;
		return NULL;
	}
	return r;
}
