// SPDX-License-Identifier: GPL-2.0
/*
 * The flush horizon (PERFCLOCK_IOC_GET_HORIZON and the page's horizon_*
 * fields; the guarantee is in perfclock_ioctl.h, its proof in
 * docs/horizon.md):
 *  - bad requests get a clear error, an expedited grace period needs
 *    CAP_PERFMON;
 *  - every CPU's clock is at or above a horizon once it is handed out
 *    (the per-CPU coupling, which is what makes it exact without a skew
 *    estimate when sched_clock is unstable);
 *  - the page's horizon moves while the device is open, only grows, and
 *    is never above a clock read after it, for perf_clock() and for every
 *    use_clockid clock;
 *  - all of it with the page kept fresh by normal grace periods (the
 *    default) and by expedited ones (horizon_expedited=1);
 *  - the guarantee itself, on real per-CPU perf rings under load: after
 *    a horizon is handed out and every ring drained, no record below it
 *    turns up later. The same rounds also judge the bare clock read at
 *    the round start (no grace period: Ahern's rule); with
 *    PERFCLOCK_EXPECT_BARE_LATE=1 (the overcommitted guest, where vCPUs
 *    stall between stamping and committing a record) it must have
 *    delivered late records, so that this test shows what the grace
 *    period removes: the run then goes on past PERFCLOCK_HORIZON_SECONDS
 *    until it has, at most PERFCLOCK_HORIZON_MAX_SECONDS (30).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "perfclock_util.h"
#include "perfclock_late.h"

#define BELOW_CLOCK_ROUNDS	20
#define PAGE_WAIT_SECONDS	10

static int pc_horizon(int fd, int clockid, uint32_t flags,
		      struct perfclock_horizon *h)
{
	memset(h, 0, sizeof(*h));
	h->clockid = clockid;
	h->flags = flags;
	return pc_ioctl(fd, PERFCLOCK_IOC_GET_HORIZON, h);
}

static uint64_t ts_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static uint64_t mono_ns(void)
{
	return ts_ns(CLOCK_MONOTONIC);
}

FIXTURE(horizon) {
	int fd;
	const struct perfclock_page *pg;
	int cpus[CPU_SETSIZE];
	int ncpus;
};

/* How the module keeps the page's horizon fresh (module parameter). */
FIXTURE_VARIANT(horizon) {
	const char *expedited;
};

FIXTURE_VARIANT_ADD(horizon, normal_gp) {
	.expedited = "0",
};

FIXTURE_VARIANT_ADD(horizon, expedited_gp) {
	.expedited = "1",
};

#define HORIZON_EXPEDITED_PARAM "/sys/module/perfclock/parameters/horizon_expedited"

FIXTURE_SETUP(horizon)
{
	struct perfclock_info info;

	ASSERT_EQ(0, pc_write_file(HORIZON_EXPEDITED_PARAM, variant->expedited))
		TH_LOG("%s: %s", HORIZON_EXPEDITED_PARAM, strerror(errno));

	self->fd = pc_open(O_RDONLY);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", PC_DEVICE, strerror(errno));
	ASSERT_EQ(0, pc_info(self->fd, &info));
	ASSERT_TRUE(info.flags & PERFCLOCK_INFO_HORIZON);
	self->pg = pc_map(self->fd);
	ASSERT_NE(NULL, self->pg);
	self->ncpus = pc_cpus(self->cpus, CPU_SETSIZE);
	ASSERT_LT(0, self->ncpus);
}

FIXTURE_TEARDOWN(horizon)
{
	pc_unmap(self->pg);
	close(self->fd);
	pc_write_file(HORIZON_EXPEDITED_PARAM, "0");
}

TEST_F(horizon, bad_requests_rejected)
{
	static const int bad_clockids[] = {
		-2, CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID,
		CLOCK_REALTIME_COARSE, CLOCK_MONOTONIC_COARSE,
		CLOCK_REALTIME_ALARM, 12, 15, 16, 1 << 20,
	};
	struct perfclock_horizon h;
	size_t i;

	for (i = 0; i < sizeof(bad_clockids) / sizeof(bad_clockids[0]); i++)
		EXPECT_EQ(-EINVAL, pc_horizon(self->fd, bad_clockids[i], 0, &h))
			TH_LOG("clockid %d", bad_clockids[i]);
	EXPECT_EQ(-EINVAL, pc_horizon(self->fd, PERFCLOCK_HORIZON_PERF_CLOCK,
				      0x2, &h));
	memset(&h, 0, sizeof(h));
	h.clockid = PERFCLOCK_HORIZON_PERF_CLOCK;
	h.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, pc_ioctl(self->fd, PERFCLOCK_IOC_GET_HORIZON, &h));
	EXPECT_EQ(-EFAULT, pc_ioctl(self->fd, PERFCLOCK_IOC_GET_HORIZON, NULL));
	/* The input is left as it was: nothing is written on an error. */
	EXPECT_EQ(1, h.reserved[0]);
	EXPECT_EQ(0, h.ns);
	h.reserved[0] = 0;
	h.__reserved0 = 1;
	EXPECT_EQ(-EINVAL, pc_ioctl(self->fd, PERFCLOCK_IOC_GET_HORIZON, &h));
	/* generation is out-only: whatever comes in is ignored. */
	h.__reserved0 = 0;
	h.generation = 0xdeadbeef;
	EXPECT_EQ(0, pc_ioctl(self->fd, PERFCLOCK_IOC_GET_HORIZON, &h));
	EXPECT_LE(1, h.generation);
	EXPECT_NE(0xdeadbeef, h.generation);
}

TEST_F(horizon, expedited_needs_perfmon)
{
	struct perfclock_horizon h;
	int status;
	pid_t pid;

	if (geteuid())
		SKIP(return, "needs root to compare with an unprivileged user");
	ASSERT_EQ(0, pc_horizon(self->fd, PERFCLOCK_HORIZON_PERF_CLOCK,
				PERFCLOCK_HORIZON_EXPEDITED, &h));
	EXPECT_LT(0, h.ns);

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd, e, n;

		if (setgid(65534) || setuid(65534))
			_exit(10);
		fd = pc_open(O_RDONLY);
		if (fd < 0)
			_exit(11);
		e = pc_horizon(fd, PERFCLOCK_HORIZON_PERF_CLOCK,
			       PERFCLOCK_HORIZON_EXPEDITED, &h);
		n = pc_horizon(fd, PERFCLOCK_HORIZON_PERF_CLOCK, 0, &h);
		_exit(e == -EPERM && n == 0 && h.ns ? 0 : 12);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("10: setuid, 11: open, 12: expedited not EPERM or normal failed");
}

/*
 * Once handed out, the horizon is at or below every CPU's clock: a read
 * on any CPU afterwards is not below it. Without the coupling of
 * sched_clock_cpu() (a horizon read on one CPU only), a CPU whose clock
 * lags fails this when sched_clock is unstable.
 */
TEST_F(horizon, below_every_cpu_clock)
{
	struct perfclock_horizon h;
	uint64_t now, worst = 0;
	int round, i, below = 0;

	for (round = 0; round < BELOW_CLOCK_ROUNDS; round++) {
		ASSERT_EQ(0, pc_horizon(self->fd, PERFCLOCK_HORIZON_PERF_CLOCK,
					0, &h));
		for (i = 0; i < self->ncpus; i++) {
			ASSERT_EQ(0, pc_pin(self->cpus[i]));
			now = pc_now(self->fd);
			if (now < h.ns) {
				below++;
				if (h.ns - now > worst)
					worst = h.ns - now;
			}
		}
	}
	EXPECT_EQ(0, below) TH_LOG("%d reads below the horizon, worst %llu ns",
				   below, (unsigned long long)worst);
}

struct page_horizon {
	uint32_t flags;
	uint32_t clockids;
	uint64_t count;
	uint64_t ns;
	uint64_t clockid_ns[PERFCLOCK_HORIZON_CLOCKIDS];
};

/* The page's horizon fields, consistent (the seq protocol). */
static int read_page_horizon(const struct perfclock_page *pg,
			     struct page_horizon *h)
{
	uint32_t seq;
	int tries, id;

	/* perfclock_page.h's read_begin/read_retry: the one seq protocol. */
	for (tries = 0; tries < 100000; tries++) {
		seq = perfclock_page_seq_begin(pg);
		h->flags = perfclock_page_load(pg->flags);
		h->clockids = perfclock_page_load(pg->horizon_clockids);
		h->count = perfclock_page_load(pg->horizon_count);
		h->ns = perfclock_page_load(pg->horizon_ns);
		for (id = 0; id < PERFCLOCK_HORIZON_CLOCKIDS; id++)
			h->clockid_ns[id] = perfclock_page_load(pg->horizon_clockid_ns[id]);
		if (!perfclock_page_seq_retry(pg, seq))
			return 0;
		if (seq & 1)
			sched_yield();
	}
	return -EAGAIN;
}

static const int horizon_clockids[] = {
	CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_BOOTTIME,
	CLOCK_TAI,
};

TEST_F(horizon, page_horizon_moves_and_holds)
{
	struct page_horizon first, h;
	uint64_t deadline = mono_ns() + PAGE_WAIT_SECONDS * 1000000000ULL;
	uint64_t now, clk;
	size_t i;

	do {
		ASSERT_EQ(0, read_page_horizon(self->pg, &first));
	} while (!(first.flags & PERFCLOCK_PAGE_HORIZON_VALID) &&
		 mono_ns() < deadline && !usleep(1000));
	ASSERT_TRUE(first.flags & PERFCLOCK_PAGE_HORIZON_VALID)
		TH_LOG("no horizon on the page after %d s", PAGE_WAIT_SECONDS);

	/*
	 * horizon_count moves when any clock's horizon does; perf_clock()'s
	 * can stay put for a sample or two (a remote CPU's clock is re-read
	 * only every horizon_skip_us, module/perfclock.c), so wait for it.
	 */
	do {
		ASSERT_EQ(0, read_page_horizon(self->pg, &h));
	} while ((h.count == first.count || h.ns == first.ns) &&
		 mono_ns() < deadline && !usleep(1000));
	ASSERT_LT(first.count, h.count) TH_LOG("the horizon did not move");
	EXPECT_LT(first.ns, h.ns);

	now = pc_now(self->fd);
	EXPECT_LE(h.ns, now);
	for (i = 0; i < sizeof(horizon_clockids) / sizeof(horizon_clockids[0]); i++) {
		int id = horizon_clockids[i];

		ASSERT_TRUE(h.clockids & (1U << id)) TH_LOG("clockid %d", id);
		clk = ts_ns(id);
		EXPECT_LE(h.clockid_ns[id], clk) TH_LOG("clockid %d", id);
		EXPECT_LE(first.clockid_ns[id], h.clockid_ns[id])
			TH_LOG("clockid %d", id);
	}
	TH_LOG("page horizon %llu ns behind the clock, %llu horizons",
	       (unsigned long long)(now - h.ns), (unsigned long long)h.count);
}

/* The blocking ioctl for every use_clockid clock: never above a later read. */
TEST_F(horizon, clockid_horizons)
{
	struct perfclock_horizon h;
	size_t i;

	for (i = 0; i < sizeof(horizon_clockids) / sizeof(horizon_clockids[0]); i++) {
		int id = horizon_clockids[i];

		ASSERT_EQ(0, pc_horizon(self->fd, id, 0, &h)) TH_LOG("clockid %d", id);
		EXPECT_LE(h.ns, ts_ns(id)) TH_LOG("clockid %d", id);
		EXPECT_LT(0, h.ns);
	}
}

/* ---- the guarantee on real rings ------------------------------------ */

/*
 * The blocking ioctl waits a grace period (tens of ms in an overcommitted
 * guest): a thread of its own takes it back to back and publishes each
 * horizon once it is handed out, so that rounds stay short.
 */
struct ioctl_horizons {
	int fd;
	_Atomic uint64_t latest;
	_Atomic uint64_t count;
	_Atomic int err;
};

static void *ioctl_horizon_thread(void *arg)
{
	struct ioctl_horizons *ih = arg;
	struct perfclock_horizon h;
	int err;

	while (!atomic_load_explicit(&late_load_stop, memory_order_relaxed)) {
		err = pc_horizon(ih->fd, PERFCLOCK_HORIZON_PERF_CLOCK, 0, &h);
		if (err) {
			atomic_store(&ih->err, err);
			break;
		}
		atomic_store(&ih->latest, h.ns);
		atomic_fetch_add(&ih->count, 1);
	}
	return NULL;
}

/*
 * Rounds of: take the horizon(s), then drain every ring. A record that
 * turns up below a horizon handed out in an EARLIER round was not in
 * its ring when that horizon was handed out: a late record for that
 * rule. The page horizon is read every round (no system call), and the
 * newest one the blocking ioctl has returned (see ioctl_horizon_thread);
 * the bare clock read at the round start (GET_TIME, after both) is
 * judged on the same records.
 */
TEST_F(horizon, no_record_below_a_handed_out_horizon)
{
	enum { PAGE, IOCTL, BARE, NV };
	struct late_verdict v[NV] = {
		{ .name = "page horizon" },
		{ .name = "ioctl horizon" },
		{ .name = "bare clock read (no grace period)" },
	};
	int seconds = late_env_int("PERFCLOCK_HORIZON_SECONDS", 5);
	int max_seconds = late_env_int("PERFCLOCK_HORIZON_MAX_SECONDS", 30);
	int expect_bare_late = late_env_int("PERFCLOCK_EXPECT_BARE_LATE", 0);
	struct ioctl_horizons ih = { .fd = self->fd };
	uint64_t start, records = 0, lost = 0, rounds = 0;
	pthread_t threads[3 * CPU_SETSIZE];
	struct late_ring rings[CPU_SETSIZE];
	struct page_horizon ph;
	int i, k, nthreads;

	for (i = 0; i < self->ncpus; i++)
		ASSERT_EQ(0, late_ring_open(&rings[i], self->cpus[i], -1))
			TH_LOG("perf_event_open on cpu %d: %s", self->cpus[i],
			       strerror(errno));

	nthreads = late_load_start(threads, self->ncpus);
	ASSERT_LT(0, nthreads);
	ASSERT_EQ(0, pthread_create(&threads[nthreads++], NULL,
				    ioctl_horizon_thread, &ih));

	/* PERFCLOCK_HORIZON_SECONDS, and on until the bare read was late. */
	start = mono_ns();
	while (!late_run_done(start, mono_ns(), seconds, max_seconds,
			      expect_bare_late, v[BARE].late)) {
		ASSERT_EQ(0, read_page_horizon(self->pg, &ph));
		v[PAGE].next = ph.flags & PERFCLOCK_PAGE_HORIZON_VALID ? ph.ns : 0;
		v[IOCTL].next = atomic_load(&ih.latest);
		v[BARE].next = pc_now(self->fd);

		for (i = 0; i < self->ncpus; i++)
			ASSERT_EQ(0, late_ring_drain(&rings[i], v, NV, &records));
		/* Handed out before this round's drain: binding from now on. */
		late_bind(v, NV);
		rounds++;
	}

	late_load_stop_all();
	for (i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
	for (i = 0; i < self->ncpus; i++) {
		lost += rings[i].lost;
		pc_ring_close(&rings[i].pr);
	}

	for (k = 0; k < NV; k++)
		TH_LOG("%s: %llu late of %llu records (worst %llu ns)",
		       v[k].name, (unsigned long long)v[k].late,
		       (unsigned long long)records,
		       (unsigned long long)v[k].worst);
	TH_LOG("%llu rounds, %llu blocking horizons, %llu LOST records",
	       (unsigned long long)rounds,
	       (unsigned long long)atomic_load(&ih.count),
	       (unsigned long long)lost);
	ASSERT_EQ(0, atomic_load(&ih.err));
	ASSERT_LT(0, atomic_load(&ih.count));
	ASSERT_LT(1000, records) TH_LOG("too few records to judge anything");
	EXPECT_EQ(0, v[PAGE].late);
	EXPECT_EQ(0, v[IOCTL].late);
	if (expect_bare_late)
		EXPECT_LT(0, v[BARE].late)
			TH_LOG("the load did not stall a record in flight: nothing shown");
}

TEST_HARNESS_MAIN
