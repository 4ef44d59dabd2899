// SPDX-License-Identifier: GPL-2.0
/*
 * The per-CPU horizon H_c (docs/percpu-horizon.md):
 *  - GET_TIME's cpu is the CPU the value was read on: pinned, it agrees
 *    with sched_getcpu() around it, and a record made between two reads
 *    on c lands in c's per-CPU ring, between the two values;
 *  - a clock value read while running on c is an exact horizon for the
 *    ring of c: draining c's ring after it, no record below it turns up
 *    in that ring later, for perf_clock() (GET_TIME, in either regime)
 *    and for use_clockid MONOTONIC_RAW and MONOTONIC (clock_gettime()
 *    then sched_getcpu() == c).
 * The same value taken at once as the horizon of the NEXT CPU's ring
 * (drained from c) is judged beside it and its late count printed: the
 * control that the load puts records in flight at all (it depends on the
 * load, so it is not asserted here; the library's guest test asserts the
 * wrong-CPU failure on a longer run).
 * With PERCPU_SLEW=1 (guests only: it slews the system clock), the NTP
 * slope term (docs/percpu-horizon.md, 4.3): MONOTONIC_RAW must never put
 * a record below a read made before it, even while another CPU toggles
 * adjtimex(ADJ_TICK) by +-10%; MONOTONIC's count is printed, with that
 * of plain clock_gettime() pairs going backwards, and each backward step
 * is held to the bound section 4.3 derives before any measurement,
 * B <= W * rho + 1 ns, with rho what the slewer can change mult by and
 * W no longer than the run (the slew begins in it). That bound is loose
 * (a fifth of the run): nothing tighter is sound, W being as long as a
 * vCPU is descheduled mid-update (4.3: "Nothing bounds it"; the 10 us
 * margin is an estimate, exceeded 280 times in a guest).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/timex.h>
#include <time.h>

#include "kselftest_harness.h"
#include "perfclock_late.h"

#define CPU_ROUNDS	2000
#define COMM_ROUNDS	50
#define MIN_ROUNDS	4
#define MAX_CPUS	64
/* What the margin estimate of docs/percpu-horizon.md, 4.3, would take off. */
#define NTP_SLOPE_MARGIN_NS	10000

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Pinned to each CPU, GET_TIME reports that CPU, as sched_getcpu() does. */
TEST(get_time_cpu_is_where_read)
{
	int cpus[MAX_CPUS], ncpus, fd, i, k;
	struct perfclock_time t;

	fd = pc_open(O_RDONLY);
	if (fd < 0 && errno == ENOENT)
		SKIP(return, "no %s (module not loaded)", PC_DEVICE);
	ASSERT_LE(0, fd) TH_LOG("open %s: %s", PC_DEVICE, strerror(errno));
	ncpus = pc_cpus(cpus, MAX_CPUS);
	ASSERT_LT(0, ncpus);
	for (i = 0; i < ncpus; i++) {
		ASSERT_EQ(0, pc_pin(cpus[i]));
		for (k = 0; k < CPU_ROUNDS; k++) {
			ASSERT_EQ(cpus[i], sched_getcpu());
			ASSERT_EQ(0, pc_time(fd, &t));
			ASSERT_EQ((uint32_t)cpus[i], t.cpu);
			ASSERT_EQ(cpus[i], sched_getcpu());
		}
	}
	close(fd);
}

/* A COMM record made between two reads on c is in ring c, between them. */
TEST(get_time_cpu_names_the_ring)
{
	struct pc_comm_ring rings[MAX_CPUS];
	uint64_t t1[COMM_ROUNDS], t2[COMM_ROUNDS], ts[4 * COMM_ROUNDS];
	int cpus[MAX_CPUS], ncpus, fd, i, k, j, n, err;
	struct perf_event_attr attr;
	struct perfclock_time t;

	fd = pc_open(O_RDONLY);
	if (fd < 0 && errno == ENOENT)
		SKIP(return, "no %s (module not loaded)", PC_DEVICE);
	ASSERT_LE(0, fd) TH_LOG("open %s: %s", PC_DEVICE, strerror(errno));
	ncpus = pc_cpus(cpus, MAX_CPUS);
	ASSERT_LT(0, ncpus);
	for (i = 0; i < ncpus; i++) {
		memset(&attr, 0, sizeof(attr));
		attr.type = PERF_TYPE_SOFTWARE;
		attr.config = PERF_COUNT_SW_DUMMY;
		attr.comm = 1;
		attr.sample_id_all = 1;
		attr.sample_type = PERF_SAMPLE_TIME;
		err = pc_ring_open(&rings[i], &attr, -1, cpus[i], PC_RING_PAGES);
		ASSERT_EQ(0, err) TH_LOG("perf_event_open cpu %d: %s", cpus[i],
					 strerror(-err));
	}
	for (i = 0; i < ncpus; i++) {
		ASSERT_EQ(0, pc_pin(cpus[i]));
		for (j = 0; j < ncpus; j++)	/* start from empty rings */
			ASSERT_LE(0, pc_comm_ring_drain(&rings[j], ts, 0));
		for (k = 0; k < COMM_ROUNDS; k++) {
			char name[16];

			snprintf(name, sizeof(name), "percpu%d", k);
			ASSERT_EQ(0, pc_time(fd, &t));
			ASSERT_EQ((uint32_t)cpus[i], t.cpu);
			t1[k] = t.ns;
			ASSERT_EQ(0, prctl(PR_SET_NAME, name));
			ASSERT_EQ(0, pc_time(fd, &t));
			ASSERT_EQ((uint32_t)cpus[i], t.cpu);
			t2[k] = t.ns;
		}
		n = pc_comm_ring_drain(&rings[i], ts, 4 * COMM_ROUNDS);
		ASSERT_LE(COMM_ROUNDS, n) TH_LOG("cpu %d: %d COMM records", cpus[i], n);
		/* Each round's record, in order; other tasks' may interleave. */
		for (k = 0, j = 0; k < COMM_ROUNDS; k++) {
			while (j < n && !(t1[k] <= ts[j] && ts[j] <= t2[k]))
				j++;
			ASSERT_LT(j, n) TH_LOG("cpu %d round %d: no COMM in ring %d within [%llu, %llu]",
					       cpus[i], k, cpus[i],
					       (unsigned long long)t1[k],
					       (unsigned long long)t2[k]);
			j++;
		}
	}
	for (i = 0; i < ncpus; i++)
		pc_ring_close(&rings[i]);
	close(fd);
}

static atomic_int slew_stop;

/* Toggle the tick length by +-10% (USER_HZ 100: 9000 and 11000 us). */
static void *slew_thread(void *arg)
{
	struct timex tx;
	int k = 0;

	(void)arg;
	while (!atomic_load_explicit(&slew_stop, memory_order_relaxed)) {
		memset(&tx, 0, sizeof(tx));
		tx.modes = ADJ_TICK;
		tx.tick = k++ & 1 ? 9000 : 11000;
		if (adjtimex(&tx) < 0)
			return (void *)(intptr_t)errno;
	}
	memset(&tx, 0, sizeof(tx));
	tx.modes = ADJ_TICK;
	tx.tick = 10000;
	return (void *)(intptr_t)(adjtimex(&tx) < 0 ? errno : 0);
}

/* A tracepoint's id from tracefs, or -1 (then the rings go without it). */
static int tracepoint_id(const char *name)
{
	char path[128], buf[32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/sys/kernel/tracing/events/%s/id", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return atoi(buf);
}

/* Is name one of the comma-separated names in list? */
static int name_in_list(const char *name, const char *list)
{
	size_t len = strlen(name);

	while (*list) {
		if (!strncmp(list, name, len) && (list[len] == ',' || !list[len]))
			return 1;
		list = strchrnul(list, ',');
		if (*list)
			list++;
	}
	return 0;
}

/*
 * The NTP slope term seen directly, on one CPU: read the clock, make a
 * COMM record (stamped with the same clockid), and count records stamped
 * below the read before them, while another CPU slews the clock. A read
 * of the old copy inside an update that lowers mult, followed by a stamp
 * from the new copy, is such a record (docs/percpu-horizon.md, 4.3).
 */
#define BRACKET_BATCH	1000

static uint64_t raw_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int slope_bracket(int clockid, int reader_cpu, int slewer_cpu,
			 int seconds, uint64_t *n, uint64_t *backward,
			 uint64_t *worst, uint64_t *run_ns)
{
	uint64_t h[BRACKET_BATCH], ts[BRACKET_BATCH], start;
	struct pc_comm_ring ring = { .fd = -1 };
	pthread_t slewer;
	cpu_set_t set;
	void *slew_err;
	int k, got, err;

	*n = *backward = *worst = *run_ns = 0;
	err = pc_pin(reader_cpu);
	if (err)
		return err;
	err = pc_comm_ring_open(&ring, clockid);
	if (err)
		return err;
	atomic_store(&slew_stop, 0);
	*run_ns = raw_ns();	/* before the first slew */
	err = -pthread_create(&slewer, NULL, slew_thread, NULL);
	if (err)
		goto out;
	CPU_ZERO(&set);
	CPU_SET(slewer_cpu, &set);
	pthread_setaffinity_np(slewer, sizeof(set), &set);
	start = mono_ns();
	while (!err && mono_ns() - start < (uint64_t)seconds * 1000000000ULL) {
		for (k = 0; k < BRACKET_BATCH; k++) {
			struct timespec t;

			clock_gettime(clockid, &t);
			h[k] = (uint64_t)t.tv_sec * 1000000000ULL + t.tv_nsec;
			if (prctl(PR_SET_NAME, k & 1 ? "slope1" : "slope0")) {
				err = -errno;
				break;
			}
		}
		if (err)
			break;
		got = pc_comm_ring_drain(&ring, ts, BRACKET_BATCH);
		if (got != k) {		/* lost or foreign records */
			err = got < 0 ? got : -EIO;
			break;
		}
		for (k = 0; k < got; k++) {
			if (ts[k] < h[k]) {
				(*backward)++;
				if (h[k] - ts[k] > *worst)
					*worst = h[k] - ts[k];
			}
		}
		*n += got;
	}
	atomic_store(&slew_stop, 1);
	pthread_join(slewer, &slew_err);
	*run_ns = raw_ns() - *run_ns;
	if (!err && slew_err)
		err = -(int)(intptr_t)slew_err;
out:
	pc_comm_ring_close(&ring);
	return err;
}

/*
 * The same term between two plain clock_gettime() calls on one CPU: the
 * second below the first. Not perf at all: CLOCK_MONOTONIC's own
 * behaviour when an update lowers mult (docs/percpu-horizon.md, 4.3).
 */
static int slope_reads(int clockid, int reader_cpu, int slewer_cpu,
		       int seconds, uint64_t *n, uint64_t *backward,
		       uint64_t *worst, uint64_t *run_ns)
{
	uint64_t prev = 0, now, start;
	struct timespec t;
	pthread_t slewer;
	cpu_set_t set;
	void *slew_err;
	int k, err;

	*n = *backward = *worst = *run_ns = 0;
	err = pc_pin(reader_cpu);
	if (err)
		return err;
	atomic_store(&slew_stop, 0);
	*run_ns = raw_ns();	/* before the first slew */
	err = -pthread_create(&slewer, NULL, slew_thread, NULL);
	if (err)
		return err;
	CPU_ZERO(&set);
	CPU_SET(slewer_cpu, &set);
	pthread_setaffinity_np(slewer, sizeof(set), &set);
	start = mono_ns();
	while (mono_ns() - start < (uint64_t)seconds * 1000000000ULL) {
		for (k = 0; k < 10000; k++) {
			clock_gettime(clockid, &t);
			now = (uint64_t)t.tv_sec * 1000000000ULL + t.tv_nsec;
			if (now < prev) {
				(*backward)++;
				if (prev - now > *worst)
					*worst = prev - now;
			}
			prev = now;
		}
		*n += k;
	}
	atomic_store(&slew_stop, 1);
	pthread_join(slewer, &slew_err);
	*run_ns = raw_ns() - *run_ns;
	return slew_err ? -(int)(intptr_t)slew_err : 0;
}

/*
 * The bound on one backward step, fixed before the run from section
 * 4.3's derivation B <= W * rho + 1 ns (a read of the old copy at most W
 * after the update's clocksource read c_r, a stamp from the new one):
 *  - rho, how far one update lowers mult relative to the old mult: the
 *    slewer's tick goes 11000 -> 9000 us, 2/11 (timekeeping_adjust()
 *    recomputes mult from ntp_tick_length() at the first update after
 *    the change), plus the error dither (1/mult) and NTP's frequency
 *    (500 ppm at most): under 0.19;
 *  - W, from c_r to the copy's write: c_r follows the tick change that
 *    made the step (timekeeper_lock is held from before c_r to after
 *    the write, and do_adjtimex() changes the NTP state under it), and
 *    the slewer's first change follows *run_ns's start (the tick is
 *    nominal before, checked below), so W is inside the run; measured
 *    by MONOTONIC_RAW, W in MONOTONIC's nanoseconds is at most 1.1
 *    times it (MONOTONIC runs at most 10% + 500 ppm fast here).
 * 0.19 * 1.1 < 1/4: a step over a quarter of the run breaks the
 * derivation itself (a clock step, a stamp from another clock).
 */
static uint64_t slope_bound_ns(uint64_t run_ns)
{
	return run_ns / 4 + 1;
}

/* adjtimex()'s tick now is the nominal one (1000000 / USER_HZ us). */
static int tick_nominal(void)
{
	long hz = sysconf(_SC_CLK_TCK);
	struct timex tx;

	memset(&tx, 0, sizeof(tx));
	return hz > 0 && adjtimex(&tx) >= 0 && tx.tick == 1000000 / hz;
}

static void slope_test(struct __test_metadata *_metadata, int clockid,
		       const char *name, int reads_only)
{
	const char *slew = getenv("PERCPU_SLEW");
	int cpus[MAX_CPUS], ncpus, err;
	uint64_t n, backward, worst, run_ns;

	if (!(slew && !strcmp(slew, "1")))
		SKIP(return, "slews the system clock: only with PERCPU_SLEW=1 (guests)");
	ncpus = pc_cpus(cpus, MAX_CPUS);
	if (ncpus < 2)
		SKIP(return, "needs two CPUs (the update on one, the read on another)");
	/* The bound's W starts with the run only from a nominal tick. */
	ASSERT_TRUE(tick_nominal())
		TH_LOG("adjtimex tick not nominal before the run: an earlier slew is still on");
	err = (reads_only ? slope_reads : slope_bracket)(clockid, cpus[0],
			cpus[ncpus - 1], late_env_int("PERCPU_SLOPE_SECONDS", 3),
			&n, &backward, &worst, &run_ns);
	ASSERT_EQ(0, err) TH_LOG("%s", strerror(-err));
	TH_LOG("%s while slewing: %llu %s, %llu below the read before them (worst %llu ns; bound %llu ns over a %llu ns run)",
	       name, (unsigned long long)n, reads_only ? "reads" : "records",
	       (unsigned long long)backward, (unsigned long long)worst,
	       (unsigned long long)slope_bound_ns(run_ns),
	       (unsigned long long)run_ns);
	ASSERT_LT(0, n);
	/* The slewer leaves the tick nominal: the next run's premise. */
	ASSERT_TRUE(tick_nominal());
	if (clockid == CLOCK_MONOTONIC_RAW)
		ASSERT_EQ(0, backward);
	ASSERT_LE(worst, slope_bound_ns(run_ns));
}

/* A fixture only for TEST_F_TIMEOUT: PERCPU_SLOPE_SECONDS may exceed 30 s. */
FIXTURE(slope) {
	int unused;
};

FIXTURE_SETUP(slope)
{
	self->unused = 0;
}

FIXTURE_TEARDOWN(slope)
{
}

TEST_F_TIMEOUT(slope, monotonic_raw_never_backward, 300)
{
	slope_test(_metadata, CLOCK_MONOTONIC_RAW, "monotonic_raw", 0);
}

/*
 * The count is printed (no rate is promised); each step is held to
 * slope_bound_ns(), the only bound that holds whatever the host does.
 */
TEST_F_TIMEOUT(slope, monotonic_counted, 300)
{
	slope_test(_metadata, CLOCK_MONOTONIC, "monotonic", 0);
}

/* Two clock_gettime() calls, no perf involved: as monotonic_counted. */
TEST_F_TIMEOUT(slope, monotonic_reads_counted, 300)
{
	slope_test(_metadata, CLOCK_MONOTONIC, "monotonic clock_gettime() pairs", 1);
}

FIXTURE(percpu) {
	int fd;
	int cpus[MAX_CPUS];
	int ncpus;
	struct late_ring rings[MAX_CPUS];
	int pf_fd[MAX_CPUS];
	int tp_fd[MAX_CPUS];
	const char *skip;
};

FIXTURE_VARIANT(percpu) {
	const char *name;	/* for PERCPU_VARIANTS=name,name (6.1's harness has no -v) */
	int clockid;		/* -1: perf_clock() through GET_TIME */
	/*
	 * Slew the clock with adjtimex(ADJ_TICK) between -10% and +10%
	 * meanwhile (each call is a timekeeping update with a new mult,
	 * timekeeping.c: do_adjtimex() -> timekeeping_advance(TK_ADV_FREQ)).
	 * Only where PERCPU_SLEW=1 says the clock may be disturbed: guests.
	 */
	int slew;
};

FIXTURE_VARIANT_ADD(percpu, perf_clock) {
	.name = "perf_clock",
	.clockid = -1,
};

FIXTURE_VARIANT_ADD(percpu, monotonic_raw) {
	.name = "monotonic_raw",
	.clockid = CLOCK_MONOTONIC_RAW,
};

FIXTURE_VARIANT_ADD(percpu, monotonic) {
	.name = "monotonic",
	.clockid = CLOCK_MONOTONIC,
};

/* Exact even while NTP-like slews change mult: RAW's mult never changes. */
FIXTURE_VARIANT_ADD(percpu, monotonic_raw_slewing) {
	.name = "monotonic_raw_slewing",
	.clockid = CLOCK_MONOTONIC_RAW,
	.slew = 1,
};

/*
 * Not exact while mult drops: the NTP slope term. Counted and printed,
 * not asserted (it takes a long update on another vCPU to show).
 */
FIXTURE_VARIANT_ADD(percpu, monotonic_slewing) {
	.name = "monotonic_slewing",
	.clockid = CLOCK_MONOTONIC,
	.slew = 1,
};

/*
 * Per CPU: cpu-clock samples (hard hrtimer), context switches, task and
 * comm records (perf_iterate_sb()), and page-fault samples
 * (__perf_sw_event() from the fault path) sent into the same ring with
 * SET_OUTPUT (same CPU, same clock: still one writer CPU).
 */
FIXTURE_SETUP(percpu)
{
	struct perf_event_attr attr;
	int i, err;

	const char *slew = getenv("PERCPU_SLEW");
	const char *only = getenv("PERCPU_VARIANTS");
	int tp = tracepoint_id("sched/sched_switch");

	/* The clockid variants need no module: they run on any host too. */
	self->fd = pc_open(O_RDONLY);
	if (variant->clockid < 0 && self->fd < 0 && errno == ENOENT)
		self->skip = "no " PC_DEVICE " (module not loaded)";
	else if (variant->clockid < 0)
		ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", PC_DEVICE,
					      strerror(errno));
	if (variant->slew && !(slew && !strcmp(slew, "1")))
		self->skip = "slews the system clock: only with PERCPU_SLEW=1 (guests)";
	if (only && *only && !name_in_list(variant->name, only))
		self->skip = "not in PERCPU_VARIANTS";
	self->ncpus = pc_cpus(self->cpus, MAX_CPUS);
	ASSERT_LT(0, self->ncpus);
	for (i = 0; i < self->ncpus; i++) {
		err = late_ring_open(&self->rings[i], self->cpus[i],
				     variant->clockid);
		ASSERT_EQ(0, err) TH_LOG("perf_event_open cpu %d: %s",
					 self->cpus[i], strerror(-err));
		memset(&attr, 0, sizeof(attr));
		attr.size = sizeof(attr);
		attr.type = PERF_TYPE_SOFTWARE;
		attr.config = PERF_COUNT_SW_PAGE_FAULTS;
		attr.sample_period = 1;
		attr.sample_type = PERF_SAMPLE_TIME;
		attr.sample_id_all = 1;
		if (variant->clockid >= 0) {
			attr.use_clockid = 1;
			attr.clockid = variant->clockid;
		}
		self->pf_fd[i] = syscall(SYS_perf_event_open, &attr, -1,
					 self->cpus[i], -1, PERF_FLAG_FD_CLOEXEC);
		ASSERT_LE(0, self->pf_fd[i]) TH_LOG("page-fault event: %s",
						    strerror(errno));
		ASSERT_EQ(0, ioctl(self->pf_fd[i], PERF_EVENT_IOC_SET_OUTPUT,
				   self->rings[i].pr.fd))
			TH_LOG("SET_OUTPUT: %s", strerror(errno));
		/*
		 * sched:sched_switch samples (perf_trace_##call ->
		 * perf_tp_event()): a tracepoint the guest's /init already
		 * holds open, so enabling it patches no kernel text.
		 */
		self->tp_fd[i] = -1;
		if (tp < 0)
			continue;
		attr.type = PERF_TYPE_TRACEPOINT;
		attr.config = tp;
		self->tp_fd[i] = syscall(SYS_perf_event_open, &attr, -1,
					 self->cpus[i], -1, PERF_FLAG_FD_CLOEXEC);
		ASSERT_LE(0, self->tp_fd[i]) TH_LOG("sched_switch event: %s",
						    strerror(errno));
		ASSERT_EQ(0, ioctl(self->tp_fd[i], PERF_EVENT_IOC_SET_OUTPUT,
				   self->rings[i].pr.fd))
			TH_LOG("SET_OUTPUT: %s", strerror(errno));
	}
	if (tp < 0)
		TH_LOG("no tracefs sched_switch id: rings without tracepoint samples");
}

FIXTURE_TEARDOWN(percpu)
{
	int i;

	for (i = 0; i < self->ncpus; i++) {
		close(self->pf_fd[i]);
		if (self->tp_fd[i] >= 0)
			close(self->tp_fd[i]);
		pc_ring_close(&self->rings[i].pr);
	}
	if (self->fd >= 0)
		close(self->fd);
}

/* Read the clock while running on cpu: 0, or -EAGAIN if not on it. */
static int read_on(int fd, int clockid, int cpu, uint64_t *h)
{
	struct perfclock_time t;
	struct timespec ts;

	if (clockid < 0) {
		if (pc_time(fd, &t))
			return -errno;
		*h = t.ns;
		return t.cpu == (uint32_t)cpu ? 0 : -EAGAIN;
	}
	clock_gettime(clockid, &ts);
	*h = (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	/* After the read: it proves the thread was on cpu after it. */
	return sched_getcpu() == cpu ? 0 : -EAGAIN;
}

TEST_F_TIMEOUT(percpu, horizon_is_exact_for_its_ring, 120)
{
	/*
	 * Per ring: [0] its own CPU's read, [1] the previous CPU's read,
	 * [2] its own CPU's read less the NTP slope margin estimate.
	 */
	struct late_verdict v[MAX_CPUS][3];
	pthread_t threads[2 * MAX_CPUS + 1], slewer;
	uint64_t mlate = 0;
	struct sched_param sp;
	void *slew_err;
	int fifo;
	int seconds = late_env_int("PERCPU_SECONDS", 2);
	uint64_t start, records = 0, late = 0, worst = 0, wlate = 0;
	uint64_t rounds = 0, moved = 0, h;
	int i, d, n, nthreads, err;

	if (self->skip)
		SKIP(return, "%s", self->skip);
	memset(v, 0, sizeof(v));
	if (variant->slew) {
		cpu_set_t set;

		atomic_store(&slew_stop, 0);
		ASSERT_EQ(0, pthread_create(&slewer, NULL, slew_thread, NULL));
		/* On the last CPU: the updates run there, the readers read
		 * on the others (docs/percpu-horizon.md, 4.3: u != c). */
		CPU_ZERO(&set);
		CPU_SET(self->cpus[self->ncpus - 1], &set);
		pthread_setaffinity_np(slewer, sizeof(set), &set);
	}
	nthreads = late_load_start(threads, self->ncpus);
	ASSERT_LT(0, nthreads) TH_LOG("load: %s", strerror(-nthreads));
	/*
	 * The reader at real-time priority (after the load threads were
	 * created, so they do not inherit it), where allowed: it then runs
	 * on c as soon as it asks, and rounds stay short in an overcommitted
	 * TCG guest. The argument does not care how it gets onto c.
	 */
	sp.sched_priority = 1;
	fifo = !sched_setscheduler(0, SCHED_FIFO, &sp);
	n = self->ncpus;
	start = mono_ns();
	/*
	 * At least MIN_ROUNDS: a ring's own horizon binds only after a
	 * drain, so one round could judge nothing.
	 */
	while (rounds < MIN_ROUNDS ||
	       mono_ns() - start < (uint64_t)seconds * 1000000000ULL) {
		for (i = 0; i < n; i++) {
			ASSERT_EQ(0, pc_pin(self->cpus[i]));
			err = read_on(self->fd, variant->clockid, self->cpus[i], &h);
			if (err == -EAGAIN) {
				moved++;
				continue;
			}
			ASSERT_EQ(0, err);
			d = (i + 1) % n;
			v[i][0].next = h;
			v[i][2].next = h - NTP_SLOPE_MARGIN_NS;
			v[d][1].next = h;
			ASSERT_EQ(0, late_ring_drain(&self->rings[i], v[i], 3,
						     &records));
			late_bind(v[i], 3);
			/*
			 * The control: the same read as the horizon of the
			 * next CPU's ring, drained from here at once. This
			 * extra drain leaves the own rule's meaning intact
			 * (a record below a bound H_d is late whenever it
			 * shows up), so only the control is bound.
			 */
			ASSERT_EQ(0, late_ring_drain(&self->rings[d], v[d], 3,
						     &records));
			late_bind(&v[d][1], 1);
		}
		rounds++;
	}
	if (fifo) {
		sp.sched_priority = 0;
		sched_setscheduler(0, SCHED_OTHER, &sp);
	}
	late_load_stop_all();
	for (i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
	if (variant->slew) {
		atomic_store(&slew_stop, 1);
		pthread_join(slewer, &slew_err);
		ASSERT_EQ(0, (intptr_t)slew_err) TH_LOG("adjtimex: %s",
						       strerror((intptr_t)slew_err));
	}

	for (i = 0; i < n; i++) {
		late += v[i][0].late;
		wlate += v[i][1].late;
		mlate += v[i][2].late;
		if (v[i][0].worst > worst)
			worst = v[i][0].worst;
	}
	TH_LOG("%s: %llu records in %llu rounds, %llu reads off their CPU; late: own CPU %llu (worst %llu ns; %llu with the %d ns margin), wrong CPU %llu%s",
	       variant->clockid < 0 ? "perf_clock" :
	       variant->clockid == CLOCK_MONOTONIC ? "monotonic" : "monotonic_raw",
	       (unsigned long long)records, (unsigned long long)rounds,
	       (unsigned long long)moved, (unsigned long long)late,
	       (unsigned long long)worst, (unsigned long long)mlate,
	       NTP_SLOPE_MARGIN_NS, (unsigned long long)wlate,
	       variant->slew ? " (slewing)" : "");
	ASSERT_LT(0, records);
	/* The one case the argument does not claim: the NTP slope term. */
	if (variant->slew && variant->clockid == CLOCK_MONOTONIC)
		return;
	ASSERT_EQ(0, late);
}

TEST_HARNESS_MAIN
