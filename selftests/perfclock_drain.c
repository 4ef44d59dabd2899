// SPDX-License-Identifier: GPL-2.0
/*
 * perfclock_drain: per-CPU perf rings drained in parallel, merged through
 * liburcu's wait-free queues, against the library's single-threaded
 * round-robin reader, on the same load in the same run.
 *
 * Parallel: one reader thread per CPU, pinned, drains its own ring. Before
 * each drain it takes the flush horizon (perfclock_horizon(), its
 * watermark); it enqueues every record on its cds_wfcq, then publishes
 * the watermark. Every record stamped below the horizon was in its ring
 * when the horizon was handed out, so what this ring holds below it is
 * enqueued before the watermark is published. The merger reads every
 * watermark, then takes everything queued, and emits below the minimum
 * watermark (perfclock_queue_flush_until()), through libperfclock's
 * ordered queue. No margin.
 *
 * Round-robin: one thread takes the horizon, drains every ring in turn and
 * emits below it: the round pattern of libperfclock.h.
 *
 * The horizon is exact with the module (and for --clock monotonic when
 * /dev/perfclock hands out horizons); otherwise it is the library's
 * estimate, and the tool says so.
 *
 * Both must deliver every record drained, in time order, with no late
 * event; the tool reports events/s, rounds, hold latency (emission time
 * minus the record's time) and exits non-zero on a late or lost event.
 *
 * Events: software context switches, period 1, on every online CPU; the
 * load is demo_flush's token ring (threads waking each other across CPUs).
 *
 * usage: perfclock_drain [--seconds S] [--clock perfclock|monotonic]
 *                        [--load N] [--pages N]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <urcu/wfcqueue.h>

#include "../user/demo/load.h"
#include "../user/libperfclock.h"

#define MAX_CPUS	256
#define LAT_SAMPLES	(1 << 20)

struct node {
	struct cds_wfcq_node qnode;
	uint64_t time;
	uint32_t cpu;
};

struct ring {
	int fd;
	void *base;
	size_t len;
	struct perfclock_ring *r;
	int cpu;
	/* parallel mode */
	pthread_t thread;
	struct cds_wfcq_head head;
	struct cds_wfcq_tail tail;
	_Atomic uint64_t watermark;
	uint64_t drained;
	int error;
};

struct stats {
	const char *name;
	uint64_t drained, delivered, late, worst_late, rounds, lost;
	uint64_t *lat;		/* sampled hold latencies */
	uint64_t nlat, seen;
	double seconds;
	uint64_t emit_now;	/* clock at the current emission */
	uint64_t last_time;
	uint64_t unordered;
};

static struct perfclock *clk;
static struct ring rings[MAX_CPUS];
static int nrings;
static _Atomic int stop;
static size_t data_pages = 64;

static int deliver(void *arg, const struct perfclock_event *ev)
{
	struct stats *st = arg;

	st->delivered++;
	if (ev->flags & PERFCLOCK_EVENT_LATE) {
		st->late++;
		if (ev->lateness_ns > st->worst_late)
			st->worst_late = ev->lateness_ns;
	} else if (ev->time < st->last_time) {
		st->unordered++;
	} else {
		st->last_time = ev->time;
	}
	/* Every 8th event's hold latency, reservoir-free: enough for p99. */
	if (!(st->seen++ & 7) && st->nlat < LAT_SAMPLES && st->emit_now > ev->time)
		st->lat[st->nlat++] = st->emit_now - ev->time;
	return 0;
}

static int open_rings(const int *cpus, int ncpus)
{
	size_t page = sysconf(_SC_PAGESIZE);
	struct perf_event_attr attr;
	int i;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	attr.sample_period = 1;
	attr.sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
	attr.wakeup_events = 1;
	perfclock_fill_attr(clk, &attr);

	for (i = 0; i < ncpus; i++) {
		struct ring *r = &rings[i];

		r->cpu = cpus[i];
		r->fd = syscall(SYS_perf_event_open, &attr, -1, cpus[i], -1,
				PERF_FLAG_FD_CLOEXEC);
		if (r->fd < 0) {
			fprintf(stderr, "perfclock_drain: perf_event_open(cpu %d): %s\n",
				cpus[i], strerror(errno));
			return -1;
		}
		r->len = (1 + data_pages) * page;
		r->base = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_SHARED,
			       r->fd, 0);
		if (r->base == MAP_FAILED) {
			fprintf(stderr, "perfclock_drain: mmap ring of cpu %d: %s\n",
				cpus[i], strerror(errno));
			return -1;
		}
		r->r = perfclock_ring_new(r->base, r->len, &attr);
		if (!r->r)
			return -1;
		nrings++;
	}
	return 0;
}

/* Drain one ring; push each sample's time to fn. Returns records, or -1. */
static long drain(struct ring *r, void (*fn)(void *, struct ring *, uint64_t),
		  void *arg)
{
	struct perfclock_record rec;
	long n = 0;
	int ret;

	if (perfclock_ring_read_begin(r->r) < 0)
		return -1;
	while ((ret = perfclock_ring_read_event(r->r, &rec)) == 1) {
		if (rec.type == PERF_RECORD_SAMPLE &&
		    (rec.flags & PERFCLOCK_RECORD_HAS_TIME)) {
			fn(arg, r, rec.time);
			n++;
		}
	}
	perfclock_ring_read_end(r->r);
	return ret < 0 ? -1 : n;
}

static void discard(void *arg, struct ring *r, uint64_t t)
{
	(void)arg, (void)r, (void)t;
}

static void reset_rings(void)
{
	int i;

	for (i = 0; i < nrings; i++)
		drain(&rings[i], discard, NULL);
}

static void enqueue(void *arg, struct ring *r, uint64_t t)
{
	struct node *n = malloc(sizeof(*n));

	(void)arg;
	if (!n) {
		r->error = -ENOMEM;
		return;
	}
	cds_wfcq_node_init(&n->qnode);
	n->time = t;
	n->cpu = r - rings;
	cds_wfcq_enqueue(&r->head, &r->tail, &n->qnode);
	r->drained++;
}

static void *reader_fn(void *arg)
{
	struct ring *r = arg;
	cpu_set_t set;
	uint64_t w;

	CPU_ZERO(&set);
	CPU_SET(r->cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (perfclock_horizon(clk, &w) || drain(r, enqueue, NULL) < 0) {
			r->error = -EIO;
			break;
		}
		/* After the records it covers: pairs with the merger's acquire. */
		atomic_store_explicit(&r->watermark, w, memory_order_release);
		usleep(100);
	}
	return NULL;
}

static struct perfclock_queue *new_queue(struct stats *st)
{
	struct perfclock_queue_config cfg;

	perfclock_queue_config_init(&cfg);
	cfg.nr_sources = nrings;
	cfg.flags = PERFCLOCK_QUEUE_NOCOPY;
	cfg.deliver = deliver;
	cfg.arg = st;
	return perfclock_queue_new(&cfg);
}

static uint64_t now_ns(void)
{
	uint64_t t = 0;

	perfclock_read(clk, &t);
	return t;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Splice everything queued by the readers and push it, oldest ring first. */
static int merge_queued(struct perfclock_queue *q)
{
	int i;

	for (i = 0; i < nrings; i++) {
		struct cds_wfcq_head h;
		struct cds_wfcq_tail t;
		struct cds_wfcq_node *qn, *next;

		cds_wfcq_init(&h, &t);
		if (cds_wfcq_splice_blocking(&h, &t, &rings[i].head, &rings[i].tail) ==
		    CDS_WFCQ_RET_SRC_EMPTY)
			continue;
		__cds_wfcq_for_each_blocking_safe(&h, &t, qn, next) {
			struct node *n = caa_container_of(qn, struct node, qnode);
			int err = perfclock_queue_push(q, n->cpu, n->time, NULL, 0);

			free(n);
			if (err)
				return err;
		}
	}
	return 0;
}

static int run_parallel(struct stats *st, double seconds)
{
	struct perfclock_queue *q = new_queue(st);
	double t0, end;
	int i, err = 0;

	if (!q)
		return -ENOMEM;
	reset_rings();
	for (i = 0; i < nrings; i++) {
		cds_wfcq_init(&rings[i].head, &rings[i].tail);
		atomic_store(&rings[i].watermark, 0);
		rings[i].drained = 0;
	}
	atomic_store(&stop, 0);
	for (i = 0; i < nrings; i++)
		pthread_create(&rings[i].thread, NULL, reader_fn, &rings[i]);

	t0 = mono_s();
	end = t0 + seconds;
	while (mono_s() < end && !err) {
		uint64_t low = UINT64_MAX;

		/* Watermarks first, then what they cover. */
		for (i = 0; i < nrings; i++) {
			uint64_t w = atomic_load_explicit(&rings[i].watermark,
							  memory_order_acquire);
			if (w < low)
				low = w;
		}
		err = merge_queued(q);
		if (!err && low && low != UINT64_MAX) {
			st->emit_now = now_ns();
			if (perfclock_queue_flush_until(q, low) < 0)
				err = -EIO;
			st->rounds++;
		}
		usleep(200);
	}
	atomic_store(&stop, 1);
	for (i = 0; i < nrings; i++) {
		pthread_join(rings[i].thread, NULL);
		st->drained += rings[i].drained;
		if (rings[i].error)
			err = rings[i].error;
	}
	st->seconds = mono_s() - t0;
	if (!err)
		err = merge_queued(q);
	st->emit_now = now_ns();
	perfclock_queue_flush_all(q);
	perfclock_queue_free(q);
	return err;
}

struct rr_arg {
	struct perfclock_queue *q;
	struct stats *st;
	int err;
};

static void push_rr(void *arg, struct ring *r, uint64_t t)
{
	struct rr_arg *a = arg;

	a->st->drained++;
	if (perfclock_queue_push(a->q, r - rings, t, NULL, 0))
		a->err = -EIO;
}

static int run_round_robin(struct stats *st, double seconds)
{
	struct rr_arg a = { .st = st };
	double t0, end;
	int i;

	a.q = new_queue(st);
	if (!a.q)
		return -ENOMEM;
	reset_rings();
	t0 = mono_s();
	end = t0 + seconds;
	while (mono_s() < end && !a.err) {
		uint64_t hz;

		/* The horizon first, then every ring, then emit below it. */
		if (perfclock_horizon(clk, &hz))
			return -EIO;
		for (i = 0; i < nrings; i++)
			if (drain(&rings[i], push_rr, &a) < 0)
				a.err = -EIO;
		st->emit_now = now_ns();
		if (perfclock_queue_flush_until(a.q, hz) < 0)
			a.err = -EIO;
		st->rounds++;
		usleep(200);
	}
	st->seconds = mono_s() - t0;
	st->emit_now = now_ns();
	perfclock_queue_flush_all(a.q);
	perfclock_queue_free(a.q);
	return a.err;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int report(struct stats *st, int err)
{
	uint64_t p50 = 0, p99 = 0, max = 0;
	int ok;

	if (st->nlat) {
		qsort(st->lat, st->nlat, sizeof(st->lat[0]), cmp_u64);
		p50 = st->lat[st->nlat / 2];
		p99 = st->lat[st->nlat * 99 / 100];
		max = st->lat[st->nlat - 1];
	}
	ok = !err && st->drained && st->delivered == st->drained &&
	     !st->late && !st->unordered;
	printf("%s - drain: %s: %llu records, %.0f events/s, %llu rounds, late %llu (worst %llu ns), out of order %llu, delivered %llu of %llu, hold latency p50 %.3f ms p99 %.3f ms max %.3f ms%s\n",
	       ok ? "ok" : "not ok", st->name,
	       (unsigned long long)st->drained, st->drained / st->seconds,
	       (unsigned long long)st->rounds, (unsigned long long)st->late,
	       (unsigned long long)st->worst_late,
	       (unsigned long long)st->unordered,
	       (unsigned long long)st->delivered,
	       (unsigned long long)st->drained, p50 / 1e6, p99 / 1e6, max / 1e6,
	       err ? " (error)" : "");
	return !ok;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "clock", required_argument, NULL, 'c' },
		{ "load", required_argument, NULL, 'l' },
		{ "pages", required_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 },
	};
	struct stats par = { .name = "parallel readers + wfcq merger" };
	struct stats rr = { .name = "round-robin (horizon, drain, flush_until)" };
	const char *clock_name = "perfclock";
	int cpus[MAX_CPUS], ncpus = 0, cpu, opt, failed = 0, nload = 0, err;
	double seconds = 4;
	struct perfclock_clock_info info;
	struct perfclock_ring_stats rs;
	struct load *load;
	cpu_set_t set;
	uint64_t lost = 0;
	int i;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 's': seconds = atof(optarg); break;
		case 'c': clock_name = optarg; break;
		case 'l': nload = atoi(optarg); break;
		case 'p': data_pages = strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: %s [--seconds S] [--clock perfclock|monotonic] [--load N] [--pages N]\n",
				argv[0]);
			return 2;
		}
	}
	clk = !strcmp(clock_name, "monotonic") ? perfclock_open_clockid(CLOCK_MONOTONIC) :
						 perfclock_open(NULL);
	if (!clk) {
		fprintf(stderr, "perfclock_drain: cannot open the %s clock: %s\n",
			clock_name, strerror(errno));
		return 2;
	}
	perfclock_get_info(clk, &info);
	sched_getaffinity(0, sizeof(set), &set);
	for (cpu = 0; cpu < CPU_SETSIZE && ncpus < MAX_CPUS; cpu++)
		if (CPU_ISSET(cpu, &set))
			cpus[ncpus++] = cpu;
	if (!nload)
		nload = 4 * ncpus;
	if (open_rings(cpus, ncpus))
		return 2;
	par.lat = calloc(LAT_SAMPLES, sizeof(uint64_t));
	rr.lat = calloc(LAT_SAMPLES, sizeof(uint64_t));
	load = load_start(nload, cpus, ncpus, 0, LOAD_SB_NONE);
	if (!par.lat || !rr.lat || !load) {
		fprintf(stderr, "perfclock_drain: cannot start: %s\n", strerror(errno));
		return 2;
	}
	load_go(load);
	printf("# clock %s, %d CPUs, %d load threads, skew estimate %llu ns, horizon %s (age %llu ns%s), %.1f s per mode\n",
	       clock_name, ncpus, nload, (unsigned long long)info.skew_estimate_ns,
	       (info.flags & PERFCLOCK_CLOCK_HORIZON_EXACT) ? "exact" :
	       (info.flags & PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE) ?
	       "exact except NTP slope" : "ESTIMATED",
	       (unsigned long long)info.horizon_age_ns,
	       (info.flags & (PERFCLOCK_CLOCK_HORIZON_EXACT |
			      PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE)) ? "" :
	       ": no module with horizons", seconds);

	err = run_parallel(&par, seconds);
	failed |= report(&par, err);
	err = run_round_robin(&rr, seconds);
	failed |= report(&rr, err);
	load_stop(load);

	for (i = 0; i < nrings; i++) {
		perfclock_ring_get_stats(rings[i].r, &rs);
		lost += rs.lost;
	}
	printf("# kernel lost %llu records over both runs (rings of %zu pages); parallel/round-robin events/s ratio %.2f\n",
	       (unsigned long long)lost, data_pages,
	       (par.drained / par.seconds) / (rr.drained / rr.seconds));
	return failed;
}
