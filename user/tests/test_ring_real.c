// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The ring reader and the queue on real perf rings of this host, with the
 * clockid backend (no module needed): per CPU, system-wide,
 *   - sched:sched_process_fork tracepoint samples (period 1, counted),
 *   - a dummy event with task/comm records (FORK/EXIT/COMM),
 *   - context-switch samples (volume),
 * all stamped with use_clockid = CLOCK_MONOTONIC and sharing one ring per
 * CPU (PERF_EVENT_IOC_SET_OUTPUT); the context-switch samples have another
 * sample_type (IP, PERIOD too), so the reader finds each record's event by
 * PERF_SAMPLE_IDENTIFIER (perfclock_ring_add_event()). A child forks a known number of
 * grandchildren while two processes ping-pong on pipes; the reader reads
 * the rings in rounds through the library (perfclock_horizon() first, then
 * every ring, then perfclock_queue_flush_until()). Checks: the merged
 * stream is in time order with zero late events (ours: the horizon, exact
 * with the module, else the library's estimate), every FORK/EXIT of our
 * grandchildren arrives, the fork tracepoint's samples plus lost equal its
 * own counters, a COMM record is bracketed by two clock reads, and
 * demo_flush's rules, replayed on the same captured rounds, keep every
 * event.
 * Skips, saying why, when perf_event_open is not permitted.
 *
 * With the argument "device" (in a guest with the module loaded) the same
 * runs with /dev/perfclock as the clock and events without use_clockid.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "tap.h"
#include "tracefs_id.h"
#include "synth.h"
#include "synth_rules.h"

#define MAX_CPUS	256
#define RING_PAGES	64
#define NFORKS		1500
#define PINGPONGS	20000
/*
 * The forks (PERFCLOCK_TEST_FORKS, in hundreds: make check's guests run
 * fewer, where a fork under TCG costs about 20 ms), and the ping-pongs in
 * proportion. loadgen also forks a ping-pong partner every 100 forks.
 */
static int nforks = NFORKS;
#define EXPECT_FORKS	((uint64_t)(nforks + (nforks + 99) / 100))

static long perf_open(struct perf_event_attr *a, int cpu, int group)
{
	return syscall(SYS_perf_event_open, a, -1, cpu, group,
		       PERF_FLAG_FD_CLOEXEC);
}

struct cpu_ring {
	int cpu;
	int fd_fork, fd_dummy, fd_cs;
	uint64_t id_fork, id_dummy, id_cs;
	void *base;
	size_t len;
	struct perfclock_ring *ring;
};

struct state {
	pid_t loadgen;
	uint64_t id_fork_any[MAX_CPUS];
	int ncpu;
	uint64_t delivered, unsorted, last, forks_seen, exits_seen;
	uint64_t fork_samples, no_time, comm_time, foreign;
	int any, comm_found;
	struct synth_trace tr;	/* captured rounds, for the other rules */
};

static struct state S;
static struct cpu_ring R[MAX_CPUS];

/* FORK/EXIT: { pid, ppid, tid, ptid, time } + sample_id */
static void inspect(const struct perfclock_event *ev)
{
	const struct perf_event_header *h = ev->data;
	const unsigned char *p = ev->data;
	uint32_t pid, ppid;
	uint64_t id;
	int i;

	if ((h->type == PERF_RECORD_FORK || h->type == PERF_RECORD_EXIT) &&
	    ev->size >= 8 + 24) {
		memcpy(&pid, p + 8, 4);
		memcpy(&ppid, p + 12, 4);
		if ((pid_t)ppid == S.loadgen && pid != ppid) {
			if (h->type == PERF_RECORD_FORK)
				S.forks_seen++;
			else
				S.exits_seen++;
		}
	} else if (h->type == PERF_RECORD_SAMPLE && ev->size >= 16) {
		memcpy(&id, p + 8, 8);	/* PERF_SAMPLE_IDENTIFIER first */
		for (i = 0; i < S.ncpu; i++)
			if (id == S.id_fork_any[i])
				S.fork_samples++;
	} else if (h->type == PERF_RECORD_COMM && ev->size >= 8 + 8 + 16) {
		uint32_t cpid;

		memcpy(&cpid, p + 8, 4);
		if ((pid_t)cpid == getpid() &&
		    !strncmp((const char *)p + 16, "pclk-bracket", 12)) {
			S.comm_found = 1;
			S.comm_time = ev->time;
		}
	}
}

static int deliver(void *arg, const struct perfclock_event *ev)
{
	(void)arg;
	S.delivered++;
	if (!(ev->flags & PERFCLOCK_EVENT_LATE)) {
		if (S.any && ev->time < S.last)
			S.unsorted++;
		S.last = ev->time;
		S.any = 1;
	}
	inspect(ev);
	return 0;
}

static void pingpong(int n)
{
	int a[2], b[2], i;
	char c = 0;
	pid_t p;

	if (pipe(a) || pipe(b))
		_exit(1);
	p = fork();
	if (p == 0) {
		for (i = 0; i < n; i++) {
			if (read(a[0], &c, 1) != 1 || write(b[1], &c, 1) != 1)
				_exit(1);
		}
		_exit(0);
	}
	for (i = 0; i < n; i++) {
		if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1)
			break;
	}
	waitpid(p, NULL, 0);
}

static void loadgen(void)
{
	int i;

	for (i = 0; i < nforks; i++) {
		pid_t p = fork();

		if (p == 0)
			_exit(0);
		if (p > 0)
			waitpid(p, NULL, 0);
		if (i % 100 == 0)
			pingpong(PINGPONGS / (NFORKS / 100));	/* per 100 forks */
	}
	_exit(0);
}

static int setup_attr(struct perf_event_attr *a, struct perfclock *clk,
		      uint32_t type, uint64_t config)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = type;
	a->config = config;
	a->sample_period = 1;
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID |
			 PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
	a->sample_id_all = 1;
	a->disabled = 1;
	a->read_format = PERF_FORMAT_LOST;
	perfclock_fill_attr(clk, a);
	return 0;
}

/* One pass over every ring: push each record (with its time) to q. */
static void read_rings(struct perfclock_queue *q, int nr, int *ring_err)
{
	int k;

	for (k = 0; k < nr; k++) {
		struct perfclock_record rec;
		int ret;

		if (perfclock_ring_read_begin(R[k].ring) < 0) {
			(*ring_err)++;
			perfclock_ring_reset(R[k].ring);
			continue;
		}
		while ((ret = perfclock_ring_read_event(R[k].ring, &rec)) == 1) {
			/*
			 * A sample carrying another process's event id: the
			 * kernel (seen on 6.18) shares one perf_sample_data
			 * among the software events of a CPU, so with other
			 * system-wide context-switch samplers running, some
			 * of our samples carry one of their ids. Counted,
			 * handled outside the queue (no time to order by).
			 */
			if (rec.flags & PERFCLOCK_RECORD_UNKNOWN_EVENT) {
				S.foreign++;
				continue;
			}
			if (!(rec.flags & PERFCLOCK_RECORD_HAS_TIME)) {
				S.no_time++;
				continue;
			}
			/* the same rounds, kept for the other rules */
			synth_trace_add(&S.tr, SYNTH_PUSH, (uint32_t)k,
					rec.time, (uint32_t)S.tr.nevents++);
			perfclock_queue_push(q, (uint32_t)k, rec.time,
					     rec.data, rec.size);
		}
		if (ret < 0)
			(*ring_err)++;
		perfclock_ring_read_end(R[k].ring);
	}
}

int main(int argc, char **argv)
{
	int use_device = argc > 1 && !strcmp(argv[1], "device");
	struct perfclock_clock_info cinfo;
	struct perf_event_attr af, ad, ac;
	struct perfclock_queue_config cfg;
	struct perfclock_queue_stats qst;
	struct perfclock_queue *q;
	struct perfclock *clk;
	uint64_t t0, t1, counted = 0, lost_fmt = 0, lost_rec = 0, hz, now;
	uint64_t lost_task = 0;
	int nconf, i, nr = 0, fork_tp, ring_err = 0, rounds = 0, status;
	long pagesz = sysconf(_SC_PAGESIZE);
	/* PERFCLOCK_TEST_RING_PAGES (a power of two): small rings lose. */
	long ring_pages = getenv("PERFCLOCK_TEST_RING_PAGES") ?
		atol(getenv("PERFCLOCK_TEST_RING_PAGES")) : RING_PAGES;
	struct stat st;

	if (getenv("PERFCLOCK_TEST_FORKS"))
		nforks = atoi(getenv("PERFCLOCK_TEST_FORKS")) / 100 * 100;
	if (nforks < 100)
		nforks = 100;
	/* 'device': the module's clock (in a guest), events without use_clockid */
	clk = use_device ? perfclock_open(NULL) :
		perfclock_open_clockid(CLOCK_MONOTONIC);
	if (!clk && use_device) {
		tap_skip("real ring (device clock) # SKIP perfclock_open(NULL): %s",
			 strerror(errno));
		return tap_exit();
	}
	if (!clk || perfclock_get_info(clk, &cinfo)) {
		tap_ok(0, "real ring: clock opens");
		return tap_exit();
	}
	tap_diag("clock: %s, skew estimate %llu ns, horizon %s (age %llu ns)",
		 use_device ? "/dev/perfclock (local_clock)" :
		 "CLOCK_MONOTONIC (use_clockid)",
		 (unsigned long long)cinfo.skew_estimate_ns,
		 (cinfo.flags & PERFCLOCK_CLOCK_HORIZON_EXACT) ? "exact" :
		 "ESTIMATED (no module)",
		 (unsigned long long)cinfo.horizon_age_ns);

	fork_tp = tracefs_event_id("sched/sched_process_fork");
	if (fork_tp < 0 && stat("/sys/kernel/tracing", &st) == 0) {
		/* tracefs not mounted yet: mount it (root only). */
		mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL);
		fork_tp = tracefs_event_id("sched/sched_process_fork");
	}

	setup_attr(&ad, clk, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY);
	ad.sample_period = 0;
	ad.task = 1;
	ad.comm = 1;
	setup_attr(&ac, clk, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES);
	/*
	 * Another layout in the same ring (as perf record's events often
	 * have): the time sits 8 bytes further in. Found by the id
	 * (perfclock_ring_add_event()); read with the dummy's attr it
	 * would be the pid/tid word.
	 */
	ac.sample_type |= PERF_SAMPLE_IP | PERF_SAMPLE_PERIOD;
	if (fork_tp >= 0)
		setup_attr(&af, clk, PERF_TYPE_TRACEPOINT, (uint64_t)fork_tp);

	nconf = (int)sysconf(_SC_NPROCESSORS_CONF);
	if (nconf > MAX_CPUS)
		nconf = MAX_CPUS;
	for (i = 0; i < nconf; i++) {
		struct cpu_ring *r = &R[nr];
		long fd;

		fd = perf_open(&ad, i, -1);
		if (fd < 0) {
			if (errno == ENODEV || errno == ENXIO)
				continue;	/* offline CPU */
			if (nr == 0) {
				tap_skip("real ring: perf_event_open system-wide with use_clockid # SKIP not permitted here: %s (errno %d; needs root or perf_event_paranoid <= 0)",
					 strerror(errno), errno);
				perfclock_close(clk);
				return tap_exit();
			}
			tap_ok(0, "real ring: open dummy event on cpu %d: %s",
			       i, strerror(errno));
			return tap_exit();
		}
		r->cpu = i;
		r->fd_dummy = (int)fd;
		r->len = (size_t)(1 + ring_pages) * (size_t)pagesz;
		r->base = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_SHARED,
			       r->fd_dummy, 0);
		if (r->base == MAP_FAILED) {
			tap_ok(0, "real ring: mmap on cpu %d: %s", i,
			       strerror(errno));
			return tap_exit();
		}
		/* Shared by three events: each registered with its id. */
		r->ring = perfclock_ring_new(r->base, r->len, NULL);
		r->fd_cs = (int)perf_open(&ac, i, -1);
		r->fd_fork = fork_tp >= 0 ? (int)perf_open(&af, i, -1) : -1;
		if (r->fd_cs < 0 || (fork_tp >= 0 && r->fd_fork < 0) ||
		    !r->ring) {
			tap_ok(0, "real ring: open/mmap events on cpu %d: %s",
			       i, strerror(errno));
			return tap_exit();
		}
		ioctl(r->fd_cs, PERF_EVENT_IOC_SET_OUTPUT, r->fd_dummy);
		ioctl(r->fd_dummy, PERF_EVENT_IOC_ID, &r->id_dummy);
		ioctl(r->fd_cs, PERF_EVENT_IOC_ID, &r->id_cs);
		if (perfclock_ring_add_event(r->ring, &ad, &r->id_dummy, 1) ||
		    perfclock_ring_add_event(r->ring, &ac, &r->id_cs, 1)) {
			tap_ok(0, "real ring: register the shared ring's events");
			return tap_exit();
		}
		if (r->fd_fork >= 0) {
			ioctl(r->fd_fork, PERF_EVENT_IOC_SET_OUTPUT,
			      r->fd_dummy);
			ioctl(r->fd_fork, PERF_EVENT_IOC_ID, &r->id_fork);
			S.id_fork_any[nr] = r->id_fork;
			if (perfclock_ring_add_event(r->ring, &af,
						     &r->id_fork, 1)) {
				tap_ok(0, "real ring: register the fork event");
				return tap_exit();
			}
		}
		nr++;
	}
	S.ncpu = nr;
	tap_ok(perfclock_check_attr(clk, &ad) == 0 &&
	       perfclock_check_attr(clk, &ac) == 0,
	       "real ring: the events' attrs match the clock (check_attr)");

	/* The library's defaults: nothing but the horizon sets the margin. */
	perfclock_queue_config_init(&cfg);
	cfg.nr_sources = (uint32_t)nr;
	cfg.deliver = deliver;
	q = perfclock_queue_new(&cfg);
	if (!q) {
		tap_ok(0, "real ring: queue");
		return tap_exit();
	}
	/* The captured trace keeps each round's horizon and clock read. */
	memset(&S.tr, 0, sizeof(S.tr));
	S.tr.nsrc = (uint32_t)nr;

	for (i = 0; i < nr; i++) {
		ioctl(R[i].fd_dummy, PERF_EVENT_IOC_ENABLE, 0);
		ioctl(R[i].fd_cs, PERF_EVENT_IOC_ENABLE, 0);
		if (R[i].fd_fork >= 0)
			ioctl(R[i].fd_fork, PERF_EVENT_IOC_ENABLE, 0);
	}

	perfclock_read(clk, &t0);
	prctl(PR_SET_NAME, "pclk-bracket", 0, 0, 0);
	perfclock_read(clk, &t1);

	S.loadgen = fork();
	if (S.loadgen == 0)
		loadgen();

	for (;;) {
		int done = waitpid(S.loadgen, &status, WNOHANG) == S.loadgen;

		if (done)
			for (i = 0; i < nr; i++) {
				ioctl(R[i].fd_dummy, PERF_EVENT_IOC_DISABLE, 0);
				ioctl(R[i].fd_cs, PERF_EVENT_IOC_DISABLE, 0);
				if (R[i].fd_fork >= 0)
					ioctl(R[i].fd_fork,
					      PERF_EVENT_IOC_DISABLE, 0);
			}
		/* The horizon first, then every ring, then flush below it. */
		if (perfclock_horizon(clk, &hz) < 0 || perfclock_read(clk, &now))
			break;
		synth_trace_begin(&S.tr, now, hz);
		read_rings(q, nr, &ring_err);
		synth_trace_add(&S.tr, SYNTH_END, 0, 0, 0);
		perfclock_queue_flush_until(q, hz);
		rounds++;
		if (done)
			break;
		usleep(1000);
	}
	perfclock_queue_flush_all(q);
	perfclock_queue_get_stats(q, &qst);

	for (i = 0; i < nr; i++) {
		struct perfclock_ring_stats rs;
		uint64_t v[2];

		perfclock_ring_get_stats(R[i].ring, &rs);
		lost_rec += rs.lost;
		/*
		 * The ring's PERF_RECORD_LOST counts every event sharing it
		 * (the kernel keeps one lost count per ring): only the dummy
		 * event's own counter (PERF_FORMAT_LOST) excuses a missing
		 * FORK/EXIT.
		 */
		if (read(R[i].fd_dummy, v, sizeof(v)) == (ssize_t)sizeof(v))
			lost_task += v[1];
		else
			lost_task = UINT64_MAX / 2;	/* unknown: fail below */
		if (R[i].fd_fork >= 0 && read(R[i].fd_fork, v, sizeof(v)) ==
		    (ssize_t)sizeof(v)) {
			counted += v[0];
			lost_fmt += v[1];
		}
	}

	tap_diag("%d rings, %d rounds, %llu records, lost %llu (of them the task/comm event's %llu), ring errors %d",
		 nr, rounds, (unsigned long long)qst.pushed,
		 (unsigned long long)lost_rec, (unsigned long long)lost_task,
		 ring_err);
	if (S.foreign)
		tap_diag("%llu context-switch samples carried another process's event id (the kernel shares perf_sample_data among a CPU's software events; other system-wide samplers were running)",
			 (unsigned long long)S.foreign);
	tap_ok(ring_err == 0 && S.no_time == 0,
	       "real ring: no ring errors, every record carries a time (%llu without)",
	       (unsigned long long)S.no_time);
	perfclock_get_info(clk, &cinfo);
	tap_ok(qst.pushed > 1000 && S.delivered == qst.pushed &&
	       S.unsorted == 0 && qst.late == 0,
	       "real ring: ours (%s horizon, library defaults) merges %llu records from %d CPUs in time order, zero late events (late %llu, worst %llu ns)",
	       (cinfo.flags & PERFCLOCK_CLOCK_HORIZON_EXACT) ? "exact" :
	       "estimated", (unsigned long long)qst.pushed, nr,
	       (unsigned long long)qst.late,
	       (unsigned long long)qst.worst_lateness_ns);
	/*
	 * Missing FORK/EXIT records are excused only by the task event's
	 * own losses, not by context-switch samples lost in the same ring.
	 * PERFCLOCK_TEST_DROP_FORKS=n drops n of them in the reader: this
	 * check must then fail (it did not when every loss counted).
	 */
	if (getenv("PERFCLOCK_TEST_DROP_FORKS")) {
		uint64_t drop = strtoull(getenv("PERFCLOCK_TEST_DROP_FORKS"),
					 NULL, 0);

		S.forks_seen -= drop < S.forks_seen ? drop : S.forks_seen;
	}
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	       (S.forks_seen == EXPECT_FORKS || lost_task) &&
	       (S.exits_seen == EXPECT_FORKS || lost_task) &&
	       S.forks_seen + lost_task >= EXPECT_FORKS &&
	       S.exits_seen + lost_task >= EXPECT_FORKS,
	       "real ring: FORK/EXIT records of our %llu children all seen, or lost by the task event itself (%llu forks, %llu exits, %llu lost by it, %llu by all events)",
	       (unsigned long long)EXPECT_FORKS, (unsigned long long)S.forks_seen,
	       (unsigned long long)S.exits_seen,
	       (unsigned long long)lost_task, (unsigned long long)lost_rec);
	if (fork_tp >= 0)
		tap_ok(counted >= (uint64_t)nforks &&
		       S.fork_samples + lost_fmt == counted,
		       "real ring: fork tracepoint samples + lost == the events' own counters (%llu + %llu == %llu)",
		       (unsigned long long)S.fork_samples,
		       (unsigned long long)lost_fmt,
		       (unsigned long long)counted);
	else
		tap_skip("real ring: tracepoint counter comparison # SKIP sched_process_fork tracepoint not available (tracefs)");
	tap_ok(S.comm_found && t0 <= S.comm_time && S.comm_time <= t1,
	       "real ring: the COMM record of a prctl() lies between the two clock reads around it (%llu <= %llu <= %llu)",
	       (unsigned long long)t0, (unsigned long long)S.comm_time,
	       (unsigned long long)t1);

	/* demo_flush's rules on the same captured rounds. */
	{
		int rule;

		for (rule = 0; rule < RULE__MAX; rule++) {
			struct perfclock_queue_config c2;
			struct perfclock_queue_stats s2;
			struct perfclock_queue *q2;
			struct synth_policy pol;
			struct synth_rule sr;
			struct synth_rec rec;

			synth_rec_init(&rec, S.tr.nevents);
			perfclock_queue_config_init(&c2);
			c2.nr_sources = (uint32_t)nr;
			c2.deliver = synth_rec_deliver;
			c2.arg = &rec;
			q2 = perfclock_queue_new(&c2);
			pol = synth_policy_rule(&sr, rule, (uint32_t)nr);
			synth_replay(&S.tr, q2, &rec, &pol);
			perfclock_queue_get_stats(q2, &s2);
			tap_ok(synth_rec_missing(&rec) == 0 &&
			       rec.unsorted == 0 && rec.late == s2.late &&
			       (rule != RULE_OURS || s2.late == 0),
			       "real ring: replayed rounds under %s: all %zu delivered once, sorted, late %llu (worst %llu ns), below-horizon %llu",
			       rule_name(rule), S.tr.nevents,
			       (unsigned long long)s2.late,
			       (unsigned long long)s2.worst_lateness_ns,
			       (unsigned long long)s2.below_horizon);
			rules_free(&sr.r);
			perfclock_queue_free(q2);
			synth_rec_free(&rec);
		}
	}

	perfclock_queue_free(q);
	for (i = 0; i < nr; i++) {
		perfclock_ring_free(R[i].ring);
		munmap(R[i].base, R[i].len);
		close(R[i].fd_cs);
		if (R[i].fd_fork >= 0)
			close(R[i].fd_fork);
		close(R[i].fd_dummy);
	}
	synth_trace_free(&S.tr);
	perfclock_close(clk);
	return tap_exit();
}
