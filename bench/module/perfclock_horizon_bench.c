// SPDX-License-Identifier: GPL-2.0
/*
 * perfclock_horizon_bench: what the flush horizon costs, in one boot.
 *
 *  - the blocking PERFCLOCK_IOC_GET_HORIZON, normal and expedited grace
 *    period: call time p50/p99, idle and with every CPU busy;
 *  - the page's horizon: its age (a clock read minus the newest
 *    horizon on the page) p50/p99, sampled every millisecond, idle and
 *    busy;
 *  - what it costs the rest of the machine: interrupts per second per
 *    CPU from /proc/interrupts (function-call and reschedule IPIs, local
 *    timer), RCU softirqs and grace-period kthread wakeups, with the
 *    device closed, open, mapped (the page's horizon kept fresh), and
 *    with a GET_HORIZON caller, privileged (root) or not (a thread
 *    switched to nobody), each round of 100 ms or back to back: who
 *    arms what (WHO ARMS WHAT in perfclock_ioctl.h); "--access" as the
 *    third argument prints only that table (scripts/guest/bench-access.sh
 *    runs it for two modules in one boot);
 *  - the grace-period policy (module parameter horizon_gp_idle_ms): the
 *    device closed, open with the old policy (0: a grace period started
 *    every update period) and open with the module's default, idle and
 *    busy: the interrupts above, RCU softirqs (/proc/softirqs) and
 *    wakeups of the RCU grace-period kthread (its context switches in
 *    /proc/PID/status: several per grace period; the kernel here has no
 *    CONFIG_RCU_TRACE for the rcu_grace_period tracepoint), then the
 *    page horizon's age under each;
 *  - the unstable regime's remote clock reads (module parameter
 *    horizon_skip_us): a pipe ping-pong between two threads pinned to
 *    two other CPUs (each round trip is two wakeups and context
 *    switches, each reading and writing its CPU's clock line), round
 *    trips per second with the device closed, open reading every CPU
 *    every period (0), and open with the default.
 *
 * Not a test: it asserts nothing and prints tables. Under TCG only the
 * ratios within one boot mean anything.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../../module/perfclock_ioctl.h"
#include "../../user/perfclock_page.h"
#include "../bench_util.h"
#include "../../selftests/perfclock_rcu_gp.h"

#define MAX_SAMPLES	200000

static uint64_t now_ns(int fd)
{
	struct perfclock_time t;

	memset(&t, 0, sizeof(t));
	if (ioctl(fd, PERFCLOCK_IOC_GET_TIME, &t))
		return 0;
	return t.ns;
}

static int horizon(int fd, uint32_t flags, uint64_t *ns)
{
	struct perfclock_horizon h;

	memset(&h, 0, sizeof(h));
	h.clockid = PERFCLOCK_HORIZON_PERF_CLOCK;
	h.flags = flags;
	if (ioctl(fd, PERFCLOCK_IOC_GET_HORIZON, &h))
		return -errno;
	*ns = h.ns;
	return 0;
}

/* The page's horizon, consistent with its seq. */
static int page_horizon(const struct perfclock_page *pg, uint64_t *ns)
{
	uint32_t seq, flags;
	int tries;

	/* perfclock_page.h's read_begin/read_retry: the one seq protocol. */
	for (tries = 0; tries < 100000; tries++) {
		seq = perfclock_page_seq_begin(pg);
		flags = perfclock_page_load(pg->flags);
		*ns = perfclock_page_load(pg->horizon_ns);
		if (!perfclock_page_seq_retry(pg, seq))
			return flags & PERFCLOCK_PAGE_HORIZON_VALID ? 0 : -ENODATA;
	}
	return -EAGAIN;
}

/* ---- interrupts per CPU from /proc/interrupts ---- */

struct irqs {
	struct irq_rows r;	/* CAL, RES, LOC per CPU */
	uint64_t rcu_softirq, gp_kthread;
};

/* The RCU softirq count, all CPUs (/proc/softirqs). */
static uint64_t read_rcu_softirqs(void)
{
	char line[4096];
	uint64_t sum = 0;
	FILE *f = fopen("/proc/softirqs", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *end;

		while (*p == ' ')
			p++;
		if (strncmp(p, "RCU:", 4))
			continue;
		p += 4;
		for (;;) {
			uint64_t v = strtoull(p, &end, 10);

			if (end == p)
				break;
			sum += v;
			p = end;
		}
	}
	fclose(f);
	return sum;
}

static void read_irqs(struct irqs *s)
{
	read_irq_rows(&s->r);
	s->rcu_softirq = read_rcu_softirqs();
	s->gp_kthread = gp_kthread_switches();
}

static void print_irqs(const char *what, const struct irqs *a,
		       const struct irqs *b, double secs, double calls)
{
	double cal = 0, res = 0, loc_max = 0, loc_sum = 0;

	for (int i = 0; i < ncpus; i++) {
		double loc = (b->r.loc[i] - a->r.loc[i]) / secs;

		cal += (b->r.cal[i] - a->r.cal[i]) / secs;
		res += (b->r.res[i] - a->r.res[i]) / secs;
		loc_sum += loc;
		if (loc > loc_max)
			loc_max = loc;
	}
	printf("%-40s %8.0f %8.0f %10.0f %10.0f %9.0f %8.0f %8.1f\n", what, cal, res,
	       loc_sum, loc_max, (b->rcu_softirq - a->rcu_softirq) / secs,
	       (b->gp_kthread - a->gp_kthread) / secs, calls / secs);
}

static void print_irq_header(void)
{
	printf("%-40s %8s %8s %10s %10s %9s %8s %8s\n", "state", "CAL", "RES", "LOC",
	       "LOC max", "RCU sirq", "GP kthr", "calls");
}

#define GP_IDLE_PARAM	"/sys/module/perfclock/parameters/horizon_gp_idle_ms"

static int read_param(const char *path)
{
	FILE *f = fopen(path, "r");
	int v = -1;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static void write_param(const char *path, int v)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fprintf(f, "%d\n", v);
		fclose(f);
	}
}

/*
 * A thread calling GET_HORIZON, back to back or every period_us, as
 * this process (root) or, unpriv, as nobody: the raw system calls
 * change this thread's credentials alone (glibc's setuid() would change
 * every thread's), and a uid change away from 0 clears its capabilities.
 */
struct caller {
	int fd;
	uint32_t flags;
	int unpriv;
	unsigned int period_us;
	atomic_int stop;
	atomic_ullong calls;
};

static void *call_loop(void *arg)
{
	struct caller *c = arg;
	uint64_t ns;

	if (c->unpriv && (syscall(SYS_setresgid, 65534, 65534, 65534) ||
			  syscall(SYS_setresuid, 65534, 65534, 65534))) {
		perror("dropping to nobody");
		return NULL;
	}
	while (!atomic_load(&c->stop) && !horizon(c->fd, c->flags, &ns)) {
		atomic_fetch_add(&c->calls, 1);
		if (c->period_us)
			usleep(c->period_us);
	}
	return NULL;
}

enum dev_state { DEV_CLOSED, DEV_OPEN, DEV_MAPPED };

/* @c: a GET_HORIZON caller on @fd (or on the device opened here), or NULL. */
static void measure_irqs(const char *what, int seconds, int fd,
			 enum dev_state state, struct caller *c)
{
	uint64_t c0 = 0, c1 = 0;
	struct irqs a, b;
	void *pg = MAP_FAILED;
	pthread_t t;
	int dfd = -1;

	if (state != DEV_CLOSED)
		dfd = open(PERFCLOCK_DEVICE_PATH, O_RDONLY | O_CLOEXEC);
	if (state == DEV_MAPPED && dfd >= 0)
		pg = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, dfd, 0);
	if (c) {
		c->fd = fd >= 0 ? fd : dfd;
		atomic_store(&c->stop, 0);
		atomic_store(&c->calls, 0);
		pthread_create(&t, NULL, call_loop, c);
	}
	usleep(200000);
	read_irqs(&a);
	if (c)
		c0 = atomic_load(&c->calls);
	sleep(seconds);
	read_irqs(&b);
	if (c) {
		c1 = atomic_load(&c->calls);
		atomic_store(&c->stop, 1);
		pthread_join(t, NULL);
	}
	if (pg != MAP_FAILED)
		munmap(pg, sysconf(_SC_PAGESIZE));
	if (dfd >= 0)
		close(dfd);
	print_irqs(what, &a, &b, seconds, c1 - c0);
}

/*
 * Who arms what: the machine's interrupts with the device closed, held
 * open, mapped, and asked for horizons by a caller with and without
 * CAP_PERFMON, every 100 ms (a tool's round) or back to back. Each
 * caller row starts a second after the row before let go.
 */
static void bench_access(const char *regime, int seconds)
{
	static struct caller c[4] = {
		{ .unpriv = 1, .period_us = 100000 },
		{ .unpriv = 0, .period_us = 100000 },
		{ .unpriv = 1 },
		{ .unpriv = 0 },
	};
	static const char *const name[4] = {
		"open, GET_HORIZON/100 ms, nobody",
		"open, GET_HORIZON/100 ms, root",
		"open, GET_HORIZON loop, nobody",
		"open, GET_HORIZON loop, root",
	};

	printf("# regime %s, %d CPUs: who arms what, per second, all CPUs (LOC: sum and busiest CPU; calls: GET_HORIZONs)\n",
	       regime, ncpus);
	print_irq_header();
	measure_irqs("device closed", seconds, -1, DEV_CLOSED, NULL);
	measure_irqs("device open, not mapped", seconds, -1, DEV_OPEN, NULL);
	measure_irqs("device mapped (page horizon fresh)", seconds, -1, DEV_MAPPED, NULL);
	for (int i = 0; i < 4; i++) {
		sleep(1);
		measure_irqs(name[i], seconds, -1, DEV_OPEN, &c[i]);
	}
	sleep(1);
}

static void bench_calls(int fd, const char *load, uint32_t flags,
			const char *name, int seconds)
{
	static uint64_t v[MAX_SAMPLES];
	uint64_t end = mono_ns() + seconds * 1000000000ULL, t0, ns;
	size_t n = 0;

	while (mono_ns() < end && n < MAX_SAMPLES) {
		t0 = mono_ns();
		if (horizon(fd, flags, &ns))
			break;
		v[n++] = mono_ns() - t0;
	}
	printf("%-8s %-10s %-24s %8zu %12.1f %12.1f\n", load, "ioctl", name, n,
	       pct(v, n, 50) / 1e3, pct(v, n, 99) / 1e3);
}

static void bench_age(int fd, const struct perfclock_page *pg,
		      const char *load, int seconds, const char *what)
{
	static uint64_t v[MAX_SAMPLES];
	uint64_t end = mono_ns() + seconds * 1000000000ULL, h, now;
	size_t n = 0;

	while (mono_ns() < end && n < MAX_SAMPLES) {
		if (!page_horizon(pg, &h)) {
			now = now_ns(fd);
			if (now > h)
				v[n++] = now - h;
		}
		usleep(1000);
	}
	printf("%-8s %-10s %-24s %8zu %12.1f %12.1f\n", load, "page", what,
	       n, pct(v, n, 50) / 1e3, pct(v, n, 99) / 1e3);
}

/*
 * The grace-period policy: the same figures with the device closed, open
 * with horizon_gp_idle_ms=0 (the old policy) and open with the default,
 * idle and busy; then the page horizon's age under each.
 */
static void bench_policy(const char *regime, int seconds)
{
	int def = read_param(GP_IDLE_PARAM), busy, i;
	static const char *const name[] = { "closed", "open, old policy", "open, new policy" };
	char what[64];

	if (def < 0) {
		printf("# no %s: the module predates the policy\n", GP_IDLE_PARAM);
		return;
	}
	printf("# regime %s: grace-period policy (default horizon_gp_idle_ms=%d), per second, all CPUs\n",
	       regime, def);
	print_irq_header();
	for (busy = 0; busy < 2; busy++) {
		if (busy)
			load_start();
		for (i = 0; i < 3; i++) {
			snprintf(what, sizeof(what), "%s, %s", busy ? "busy" : "idle", name[i]);
			write_param(GP_IDLE_PARAM, i == 1 ? 0 : def);
			measure_irqs(what, seconds, -1,
				     i > 0 ? DEV_MAPPED : DEV_CLOSED, NULL);
		}
		if (busy)
			load_stop();
	}
	printf("# regime %s: page horizon age under each policy (microseconds)\n", regime);
	printf("%-8s %-10s %-24s %8s %12s %12s\n", "load", "path", "what", "n",
	       "p50 us", "p99 us");
	for (busy = 0; busy < 2; busy++) {
		int fd = open(PERFCLOCK_DEVICE_PATH, O_RDONLY | O_CLOEXEC);
		const struct perfclock_page *pg;

		if (fd < 0)
			break;
		pg = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, fd, 0);
		if (pg == MAP_FAILED) {
			close(fd);
			break;
		}
		if (busy)
			load_start();
		for (i = 1; i < 3; i++) {
			write_param(GP_IDLE_PARAM, i == 1 ? 0 : def);
			usleep(200000);
			bench_age(fd, pg, busy ? "busy" : "idle", seconds,
				  i == 1 ? "age, old policy" : "age, new policy");
		}
		if (busy)
			load_stop();
		munmap((void *)pg, sysconf(_SC_PAGESIZE));
		close(fd);
	}
	write_param(GP_IDLE_PARAM, def);
}

/* ---- the cost of the horizon's remote clock reads on other CPUs ---- */

#define SKIP_PARAM	"/sys/module/perfclock/parameters/horizon_skip_us"

struct pong {
	int cpu, rd, wr;
	atomic_int *stop;
	uint64_t trips;
};

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *pong_thread(void *arg)
{
	struct pong *p = arg;
	char c = 0;

	pin(p->cpu);
	while (!atomic_load(p->stop)) {
		if (read(p->rd, &c, 1) != 1 || write(p->wr, &c, 1) != 1)
			break;
	}
	return NULL;
}

/* Round trips per second between threads on CPUs @a and @b. */
static double ping_pong(int a, int b, int seconds)
{
	int ab[2], ba[2];
	atomic_int stop = 0;
	struct pong p = { .cpu = b, .stop = &stop };
	uint64_t trips = 0, end;
	pthread_t t;
	char c = 0;

	if (pipe(ab) || pipe(ba))
		return 0;
	p.rd = ab[0];
	p.wr = ba[1];
	pthread_create(&t, NULL, pong_thread, &p);
	pin(a);
	end = mono_ns() + seconds * 1000000000ULL;
	while (mono_ns() < end) {
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
			break;
		trips++;
	}
	atomic_store(&stop, 1);
	if (write(ab[1], &c, 1) != 1)
		perror("write");
	pthread_join(t, NULL);
	close(ab[0]);
	close(ab[1]);
	close(ba[0]);
	close(ba[1]);
	return trips / (double)seconds;
}

static void bench_remote_reads(const char *regime, int seconds)
{
	int def = read_param(SKIP_PARAM), i, fd;
	void *pg;
	cpu_set_t all;
	static const char *const name[] = {
		"device closed", "open, every CPU every period", "open, horizon_skip_us default",
	};

	if (def < 0 || ncpus < 3) {
		printf("# no %s or fewer than 3 CPUs: no ping-pong\n", SKIP_PARAM);
		return;
	}
	sched_getaffinity(0, sizeof(all), &all);
	printf("# regime %s: pipe ping-pong between CPUs 1 and 2, round trips per second (default horizon_skip_us=%d)\n",
	       regime, def);
	for (i = 0; i < 3; i++) {
		fd = -1;
		pg = MAP_FAILED;
		write_param(SKIP_PARAM, i == 1 ? 0 : def);
		/* Mapped: an fd only open arms no horizon reads. */
		if (i)
			fd = open(PERFCLOCK_DEVICE_PATH, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			pg = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ,
				  MAP_SHARED, fd, 0);
		usleep(200000);
		printf("%-34s %12.0f\n", name[i], ping_pong(1, 2, seconds));
		if (pg != MAP_FAILED)
			munmap(pg, sysconf(_SC_PAGESIZE));
		if (fd >= 0)
			close(fd);
	}
	write_param(SKIP_PARAM, def);
	sched_setaffinity(0, sizeof(all), &all);
}

int main(int argc, char **argv)
{
	const char *regime = argc > 1 ? argv[1] : "?";
	int seconds = argc > 2 ? atoi(argv[2]) : 5;
	const struct perfclock_page *pg;
	int fd;

	ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpus > MAX_CPUS)
		ncpus = MAX_CPUS;

	/* Cost to the machine first, before this process holds the device. */
	bench_access(regime, seconds);
	if (argc > 3 && !strcmp(argv[3], "--access"))
		return 0;
	bench_policy(regime, seconds);
	bench_remote_reads(regime, seconds);

	fd = open(PERFCLOCK_DEVICE_PATH, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		perror(PERFCLOCK_DEVICE_PATH);
		return 1;
	}
	{
		static struct caller normal, expedited = {
			.flags = PERFCLOCK_HORIZON_EXPEDITED,
		};

		print_irq_header();
		measure_irqs("loop of normal GET_HORIZON", seconds, fd,
			     DEV_OPEN, &normal);
		measure_irqs("loop of expedited GET_HORIZON", seconds, fd,
			     DEV_OPEN, &expedited);
	}

	pg = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, fd, 0);
	if (pg == MAP_FAILED) {
		perror("mmap");
		return 1;
	}

	printf("# regime %s: the barrier (microseconds)\n", regime);
	printf("%-8s %-10s %-24s %8s %12s %12s\n", "load", "path", "what", "n",
	       "p50 us", "p99 us");
	for (int busy = 0; busy < 2; busy++) {
		const char *load = busy ? "busy" : "idle";

		if (busy)
			load_start();
		bench_calls(fd, load, 0, "normal grace period", seconds);
		bench_calls(fd, load, PERFCLOCK_HORIZON_EXPEDITED,
			    "expedited grace period", seconds);
		bench_age(fd, pg, load, seconds, "horizon age");
		if (busy)
			load_stop();
	}
	return 0;
}
