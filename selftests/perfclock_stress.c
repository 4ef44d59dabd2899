// SPDX-License-Identifier: GPL-2.0
/*
 * perfclock_stress: the clock under many threads, built on liburcu.
 *
 * The clock contract itself is stated and checked once, in
 * perfclock_clock_test.c; this program shares its helpers
 * (perfclock_util.h) and adds the load: many readers per CPU through the
 * library, observations published through RCU, the flush horizon handed
 * out meanwhile, other processes on the device, and --inject-skew to
 * prove the checks can fail.
 *
 * Clock torture, the many-CPU version of the kernel's
 * tools/testing/selftests/timers/inconsistency-check.c: one reader thread
 * per CPU and per path (exact best read, ioctl, lower bound) reads the
 * clock in a tight loop and publishes its latest (value, cpu) through an
 * RCU-protected record. Before each batch of reads a reader observes
 * another thread's record, the newest flush horizon handed out by
 * perfclock_horizon() (a thread of its own takes them back to back), and
 * the skew estimate advertised at that moment; checker threads observe
 * every record. What is asserted:
 *  - no exact read made after a horizon was handed out is below it, when
 *    the library says the horizon is exact (the module's per-CPU
 *    coupling guarantees it in both clock regimes);
 *  - no exact read is below a value observed before it, when the clock
 *    is global (stable sched_clock, or a clock_gettime clock);
 *  - each exact path is monotonic per thread, and a lower bound is never
 *    above an exact read made after it.
 * With an unstable sched_clock the cross-CPU step is only reported,
 * against the estimate advertised before each batch: that figure is an
 * estimate, not a bound (see perfclock_ioctl.h).
 *
 * At the same time, other processes stress the device: open/close,
 * mmap/munmap, fork with the page mapped, each result checked.
 *
 * Bounded in time (--seconds); stops by itself; prints one TAP line per
 * property and exits non-zero on any violation.
 *
 * usage: perfclock_stress [--seconds S] [--clock perfclock|monotonic]
 *                         [--device PATH] [--no-device-stress]
 *                         [--inject-skew NS]
 *
 * --inject-skew makes one CPU's exact reads NS more than the skew estimate
 * late, to show that the checks catch a clock that steps back across CPUs
 * and below a handed-out horizon (the run must fail).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <urcu/urcu-memb.h>

#include "../user/libperfclock.h"
#include "perfclock_util.h"

#define BATCH		16	/* reads per observation */
#define MAX_THREADS	1024

enum path { PATH_EXACT, PATH_IOCTL, PATH_LOWER, NPATHS };

static const char *const path_name[NPATHS] = {
	[PATH_EXACT] = "exact (perfclock_read)",
	[PATH_IOCTL] = "ioctl",
	[PATH_LOWER] = "lower bound",
};

struct record {
	uint64_t value;
	int cpu;
	struct rcu_head rcu;
};

struct reader {
	pthread_t thread;
	int cpu;		/* -1: a checker, not pinned */
	enum path path;
	struct record *latest;	/* RCU-protected */
	uint64_t reads;
	uint64_t violations;	/* beyond the estimate advertised before */
	uint64_t below_horizon;	/* exact reads below a handed-out horizon */
	uint64_t worst_below;
	uint64_t worst_step;	/* largest backward step seen, ns */
	uint64_t monotonic_violations;
	int error;
};

static struct perfclock *clk;
static uint64_t bound;	/* the skew estimate at the start (--inject-skew) */
/* Published by horizon_fn: the newest horizon handed out, the estimate now. */
static _Atomic uint64_t horizon_pub, estimate_pub;
static _Atomic int horizon_error;
/* --inject-skew: one CPU's exact reads run this far beyond the estimate behind (self-test). */
static uint64_t inject_skew;
static int inject_cpu = -1;
static _Atomic int stop;
static struct reader readers[MAX_THREADS];
static int nreaders;

static void free_record(struct rcu_head *head)
{
	free(caa_container_of(head, struct record, rcu));
}

static int read_path(enum path path, uint64_t *ns)
{
	switch (path) {
	case PATH_EXACT:
		return perfclock_read(clk, ns);
	case PATH_IOCTL:
		return perfclock_read_ioctl(clk, ns);
	default:
		return perfclock_read_lower_bound(clk, ns);
	}
}

static void publish(struct reader *r, uint64_t value)
{
	struct record *rec = malloc(sizeof(*rec)), *old;

	if (!rec) {
		r->error = -ENOMEM;
		return;
	}
	rec->value = value;
	rec->cpu = r->cpu;
	old = rcu_xchg_pointer(&r->latest, rec);
	if (old)
		urcu_memb_call_rcu(&old->rcu, free_record);
}

/* The largest value published by the readers in [from, to). */
static uint64_t observe(int from, int to)
{
	uint64_t seen = 0;
	int i;

	urcu_memb_read_lock();
	for (i = from; i < to; i++) {
		struct record *rec = rcu_dereference(readers[i].latest);

		if (rec && rec->value > seen)
			seen = rec->value;
	}
	urcu_memb_read_unlock();
	return seen;
}

/*
 * @mine was read after @seen was observed, after horizon @hz was handed
 * out and after @est was the advertised skew estimate.
 */
static void check_step(struct reader *r, uint64_t seen, uint64_t hz,
		       uint64_t est, uint64_t mine)
{
	uint64_t step = pc_step_back(seen, mine);

	if (mine < hz) {
		r->below_horizon++;
		if (hz - mine > r->worst_below)
			r->worst_below = hz - mine;
	}
	if (!step)
		return;
	if (step > r->worst_step)
		r->worst_step = step;
	if (step > est)
		r->violations++;
}

/* Hand out horizons back to back; refresh the advertised estimate. */
static void *horizon_fn(void *arg)
{
	struct perfclock_clock_info info;
	uint64_t h, n = 0;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (perfclock_horizon(clk, &h)) {
			atomic_store(&horizon_error, 1);
			break;
		}
		atomic_store(&horizon_pub, h);
		if (!(n++ % 64) && !perfclock_get_info(clk, &info))
			atomic_store(&estimate_pub, info.skew_estimate_ns);
		usleep(100);
	}
	return NULL;
}

static void *reader_fn(void *arg)
{
	struct reader *r = arg;
	int self = r - readers, other = self;
	uint64_t seen, hz, est, mine = 0, prev = 0;
	int k;

	if (pc_pin(r->cpu)) {
		r->error = -EINVAL;
		return NULL;
	}
	urcu_memb_register_thread();
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		/* What was promised before this batch: horizon, estimate. */
		hz = atomic_load(&horizon_pub);
		est = atomic_load(&estimate_pub);
		/* Another thread's value, observed before this batch. */
		other = (other + 1) % nreaders;
		seen = observe(other, other + 1);
		for (k = 0; k < BATCH; k++) {
			if (read_path(r->path, &mine)) {
				r->error = -EIO;
				goto out;
			}
			if (r->cpu == inject_cpu && r->path != PATH_LOWER)
				mine -= bound + inject_skew;
			if (r->path != PATH_LOWER) {
				check_step(r, seen, hz, est, mine);
				if (mine < prev)
					r->monotonic_violations++;
				prev = mine;
			}
		}
		r->reads += BATCH;
		publish(r, mine);
	}
out:
	urcu_memb_unregister_thread();
	return NULL;
}

/* Observes every reader, then reads the exact clock: nothing may be ahead. */
static void *checker_fn(void *arg)
{
	struct reader *r = arg;
	uint64_t seen, hz, est, mine;

	urcu_memb_register_thread();
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		hz = atomic_load(&horizon_pub);
		est = atomic_load(&estimate_pub);
		seen = observe(0, nreaders);
		if (perfclock_read(clk, &mine)) {
			r->error = -EIO;
			break;
		}
		check_step(r, seen, hz, est, mine);
		r->reads++;
	}
	urcu_memb_unregister_thread();
	return NULL;
}

/*
 * Another process hammering the device for the same time: each loop
 * opens, maps, reads the page, forks a child that reads it too, unmaps
 * and closes. Returns through its exit status.
 */
static int device_stress(const char *path, double seconds, int seed)
{
	struct timespec t0, t;
	long iter = 0;

	srand(seed);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		const volatile struct perfclock_page *page;
		pid_t pid;
		int status;

		if (fd < 0)
			return 10;
		page = pc_map(fd);
		if (!page)
			return 11;
		if (rand() & 1)
			close(fd);	/* the mapping keeps the device */
		if (page->version != PERFCLOCK_PAGE_VERSION)
			return 12;
		if (!(iter % 16)) {
			pid = fork();
			if (pid < 0)
				return 13;
			if (!pid)
				_exit(page->version == PERFCLOCK_PAGE_VERSION ? 0 : 1);
			if (waitpid(pid, &status, 0) != pid || status)
				return 14;
		}
		pc_unmap((const struct perfclock_page *)page);
		close(fd);
		iter++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	return 0;
}

static int tap(int ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int tap(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s - stress: ", ok ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	return !ok;
}

/*
 * The cross-CPU verdicts of one path. Asserted: nothing below a horizon
 * handed out before (when exact), no backward step at all (when the clock
 * is global). Reported: the steps beyond the estimate advertised before
 * them, which with an unstable sched_clock is no bound.
 */
static int report_steps(const char *what, int global, int exact_horizon,
			uint64_t worst, uint64_t beyond_estimate,
			uint64_t below, uint64_t worst_below)
{
	int failed = 0;

	if (exact_horizon)
		failed |= tap(!below,
			      "%s: no read below a horizon handed out before it (%llu below, worst %llu ns)",
			      what, (unsigned long long)below,
			      (unsigned long long)worst_below);
	else
		printf("# %s: %llu reads below an estimated horizon (worst %llu ns; not asserted: an estimate)\n",
		       what, (unsigned long long)below,
		       (unsigned long long)worst_below);
	if (global)
		failed |= tap(!worst,
			      "%s: global clock, no read below a value observed before it (worst step %llu ns)",
			      what, (unsigned long long)worst);
	else
		printf("# %s: worst cross-CPU backward step %llu ns; %llu steps beyond the skew estimate advertised before them (not asserted: an estimate)\n",
		       what, (unsigned long long)worst,
		       (unsigned long long)beyond_estimate);
	return failed;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "clock", required_argument, NULL, 'c' },
		{ "device", required_argument, NULL, 'd' },
		{ "no-device-stress", no_argument, NULL, 'n' },
		{ "inject-skew", required_argument, NULL, 'i' },
		{ NULL, 0, NULL, 0 },
	};
	const char *clock_name = "perfclock", *device = NULL;
	struct perfclock_clock_info info;
	double seconds = 5;
	int device_stressors = 2, failed = 0, ncpus, cpu, i, p, opt;
	int first_checker, nthreads, global, exact_horizon;
	pthread_t horizon_thread;
	pid_t stressors[8];
	static int cpus[CPU_SETSIZE];

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 's': seconds = atof(optarg); break;
		case 'c': clock_name = optarg; break;
		case 'd': device = optarg; break;
		case 'n': device_stressors = 0; break;
		case 'i': inject_skew = strtoull(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: %s [--seconds S] [--clock perfclock|monotonic] [--device PATH] [--no-device-stress]\n",
				argv[0]);
			return 2;
		}
	}
	if (!strcmp(clock_name, "monotonic")) {
		clk = perfclock_open_clockid(CLOCK_MONOTONIC);
		device_stressors = 0;
	} else if (!strcmp(clock_name, "perfclock")) {
		clk = perfclock_open(device);
	} else {
		fprintf(stderr, "perfclock_stress: unknown clock '%s'\n", clock_name);
		return 2;
	}
	if (!clk) {
		fprintf(stderr, "perfclock_stress: cannot open the %s clock: %s%s\n",
			clock_name, strerror(errno),
			errno == ENOENT ? " (load perfclock.ko, or use --clock monotonic)" : "");
		return 2;
	}
	if (perfclock_get_info(clk, &info)) {
		fprintf(stderr, "perfclock_stress: perfclock_get_info failed\n");
		return 2;
	}
	bound = info.skew_estimate_ns;
	atomic_store(&estimate_pub, bound);
	global = !!(info.flags & PERFCLOCK_CLOCK_GLOBAL);
	/*
	 * Exact except the NTP slope (CLOCK_MONOTONIC): asserted too, the
	 * margin covering the steady state (docs/percpu-horizon.md 4.3),
	 * but not during an ADJ_TICK slew, when it is an estimate.
	 */
	exact_horizon = !!(info.flags & PERFCLOCK_CLOCK_HORIZON_EXACT) ||
			((info.flags & PERFCLOCK_CLOCK_HORIZON_NTP_SLOPE) &&
			 !(info.flags & PERFCLOCK_CLOCK_HORIZON_NTP_SLEW));

	ncpus = pc_cpus(cpus, CPU_SETSIZE);
	if (ncpus < 1) {
		fprintf(stderr, "perfclock_stress: no CPU to run on\n");
		return 2;
	}
	if (inject_skew)
		inject_cpu = cpus[ncpus - 1];	/* the last CPU */
	if (inject_skew)
		printf("# self-test: cpu %d's exact reads are made the estimate + %llu ns late\n",
		       inject_cpu, (unsigned long long)inject_skew);
	printf("# clock %s, %d CPUs, %s, skew estimate %llu ns, horizon %s, page fast path %s, %.1f s\n",
	       clock_name, ncpus, global ? "global" : "per-CPU (unstable)",
	       (unsigned long long)bound, exact_horizon ? "exact" : "an estimate",
	       info.flags & PERFCLOCK_CLOCK_PAGE_TSC_VALID ? "on" : "off", seconds);

	for (i = 0; i < device_stressors; i++) {
		stressors[i] = fork();
		if (!stressors[i])
			_exit(device_stress(device ? device : "/dev/perfclock", seconds, i + 1));
	}

	for (i = 0; i < ncpus; i++) {
		cpu = cpus[i];
		for (p = 0; p < NPATHS && nreaders < MAX_THREADS - ncpus; p++) {
			/* The clockid backend has no ioctl. */
			if (p == PATH_IOCTL && info.backend != PERFCLOCK_BACKEND_DEVICE)
				continue;
			readers[nreaders].cpu = cpu;
			readers[nreaders].path = p;
			nreaders++;
		}
	}
	/* Checkers: one per two CPUs, unpinned, after the readers they watch. */
	first_checker = nreaders;
	nthreads = nreaders + (ncpus + 1) / 2;

	for (i = first_checker; i < nthreads; i++)
		readers[i].cpu = -1;
	pthread_create(&horizon_thread, NULL, horizon_fn, NULL);
	/* The first horizon, before anything is judged against it. */
	while (!atomic_load(&horizon_pub) && !atomic_load(&horizon_error))
		usleep(1000);
	for (i = 0; i < nthreads; i++)
		pthread_create(&readers[i].thread, NULL,
			       i < first_checker ? reader_fn : checker_fn, &readers[i]);
	usleep(seconds * 1e6);
	atomic_store(&stop, 1);
	for (i = 0; i < nthreads; i++)
		pthread_join(readers[i].thread, NULL);
	pthread_join(horizon_thread, NULL);
	failed |= tap(!atomic_load(&horizon_error),
		      "horizons handed out back to back during the run (%s)",
		      exact_horizon ? "exact" : "estimates");

	/* Global only if it stayed global for the whole run. */
	if (perfclock_get_info(clk, &info) || !(info.flags & PERFCLOCK_CLOCK_GLOBAL))
		global = 0;
	for (p = 0; p < NPATHS; p++) {
		uint64_t reads = 0, viol = 0, worst = 0, mono = 0, below = 0, wbelow = 0;
		int threads = 0, errors = 0;

		for (i = 0; i < first_checker; i++) {
			if (readers[i].path != (enum path)p)
				continue;
			threads++;
			reads += readers[i].reads;
			viol += readers[i].violations;
			mono += readers[i].monotonic_violations;
			below += readers[i].below_horizon;
			errors += !!readers[i].error;
			if (readers[i].worst_step > worst)
				worst = readers[i].worst_step;
			if (readers[i].worst_below > wbelow)
				wbelow = readers[i].worst_below;
		}
		if (!threads)
			continue;
		if (p == PATH_LOWER) {
			/* Not "now": only the checkers can judge these. */
			failed |= tap(!errors && reads,
				      "%s: %d threads, %.0f reads/s published for the checkers, %d errors",
				      path_name[p], threads, reads / seconds, errors);
			continue;
		}
		failed |= tap(!mono && !errors && reads,
			      "%s: %d threads, %.0f reads/s, monotonic per thread (%llu non-monotonic, %d errors)",
			      path_name[p], threads, reads / seconds,
			      (unsigned long long)mono, errors);
		failed |= report_steps(path_name[p], global, exact_horizon, worst,
				       viol, below, wbelow);
	}
	{
		uint64_t reads = 0, viol = 0, worst = 0, below = 0, wbelow = 0;
		int errors = 0;

		for (i = first_checker; i < nthreads; i++) {
			reads += readers[i].reads;
			viol += readers[i].violations;
			below += readers[i].below_horizon;
			errors += !!readers[i].error;
			if (readers[i].worst_step > worst)
				worst = readers[i].worst_step;
			if (readers[i].worst_below > wbelow)
				wbelow = readers[i].worst_below;
		}
		failed |= tap(!errors && reads, "checkers: %d threads, %llu checks, %d errors",
			      nthreads - first_checker, (unsigned long long)reads, errors);
		failed |= report_steps("checkers (every published value)", global,
				       exact_horizon, worst, viol, below, wbelow);
	}
	for (i = 0; i < device_stressors; i++) {
		int status = -1;

		waitpid(stressors[i], &status, 0);
		failed |= tap(WIFEXITED(status) && !WEXITSTATUS(status),
			      "device stress process %d (open/mmap/fork/munmap/close): exit status %d",
			      i, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}

	urcu_memb_barrier();
	for (i = 0; i < nthreads; i++)
		free(readers[i].latest);
	perfclock_close(clk);
	return failed;
}
