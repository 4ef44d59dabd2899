// SPDX-License-Identifier: GPL-2.0
/*
 * Horizon generations (THE FLUSH HORIZON, "Generations", in
 * perfclock_ioctl.h): when a clock the horizon is read in moves back, the
 * module starts a new generation, and no horizon of the new generation is
 * above a record stamped after it was handed out. Each test also checks
 * the old behaviour, a horizon kept across the step, and requires that it
 * fails: the step is real and the generation is what saves the reader.
 *
 *  - realtime_set_backward: CLOCK_REALTIME set 2 s back (clock_settime)
 *    while a REALTIME horizon is held. Both regimes.
 *  - reset_probe_disarm_seen: kprobes disarmed through debugfs are seen
 *    (PERFCLOCK_INFO_SCHED_CLOCK_RESET_PROBE clears, a generation
 *    starts); a reload arms the probe again.
 *  - sched_clock_turns_unstable: the stable regime only, and last (the
 *    TSC stays unstable for the rest of the boot); skipped when
 *    PERFCLOCK_MARK_KO is set and empty (selftests/run.sh: the test
 *    guests mark the TSC unstable in a boot of their own, run_reset.sh).
 *    The GTOD is first run 10% slow for a few seconds (adjtimex
 *    ADJ_TICK), so that it falls behind sched_clock; then
 *    perfclock_mark_tsc_unstable.ko marks the TSC unstable, and
 *    kernel/sched/clock.c:__sched_clock_work() resets every CPU's clock
 *    from the GTOD: perf_clock() steps back by the lag.
 *    The mark is made by a SCHED_FIFO thread, and the test module keeps
 *    that CPU HOLD_MS after it, so that the reset work queued there
 *    waits: meanwhile
 *    another thread calls GET_HORIZON on another CPU, and the CPU time
 *    it burns in those calls must stay a small part of the hold (the
 *    module used to spin there with irqs off for two ticks per try),
 *    and a third calls GET_TIME there in a loop: the calls made while
 *    the reset ran must carry PERFCLOCK_TIME_RESET_PENDING.
 *    Also run where sched_clock is native under a detected hypervisor
 *    (QEMU with the VMware backdoor and a "VMware" DMI serial: see
 *    scripts/check.sh), where the module cannot prove sched_clock stable
 *    and takes the kernel's log for it. PERFCLOCK_RESET_FALLBACK=1: the
 *    hold thread first disarms kprobes, and the module must then refuse
 *    perf_clock() horizons (EOPNOTSUPP) rather than wait for a reset it
 *    can no longer see. The same is expected on a kernel without
 *    kprobes (the debug guest's), where the module has no probe.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/timex.h>

#include "kselftest_harness.h"
#include "perfclock_util.h"
#include "libperfclock.h"

#define SLOW_SECONDS	5	/* at 10% slow: the GTOD falls 500 ms behind */
#define WAIT_SECONDS	20
/* The reset work waits this long; under RT throttling's 950 ms per s. */
#define HOLD_MS		400
#define KPROBES_ENABLED	"/sys/kernel/debug/kprobes/enabled"

static uint64_t ts_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int get_horizon(int fd, int clockid, struct perfclock_horizon *h)
{
	memset(h, 0, sizeof(*h));
	h->clockid = clockid;
	return pc_ioctl(fd, PERFCLOCK_IOC_GET_HORIZON, h);
}

/* The page's generation and perf_clock() horizon, consistent. */
static int page_horizon(const struct perfclock_page *pg, uint32_t *gen,
			uint64_t *ns, int *valid)
{
	uint32_t seq;
	int tries;

	for (tries = 0; tries < 100000; tries++) {
		seq = perfclock_page_seq_begin(pg);
		*gen = perfclock_page_load(pg->horizon_generation);
		*ns = perfclock_page_load(pg->horizon_ns);
		*valid = !!(perfclock_page_load(pg->flags) &
			    PERFCLOCK_PAGE_HORIZON_VALID);
		if (!perfclock_page_seq_retry(pg, seq))
			return 0;
		sched_yield();
	}
	return -EAGAIN;
}

/* Stamp one PERF_RECORD_COMM on this thread and return its time. */
static int stamp(struct pc_comm_ring *r, uint64_t *ts)
{
	static int n;
	char name[16];
	uint64_t t[8];
	int got;

	snprintf(name, sizeof(name), "pcgen%d", n++ % 1000);
	if (prctl(PR_SET_NAME, name))
		return -errno;
	got = pc_comm_ring_drain(r, t, 8);
	if (got <= 0)
		return got ? got : -ENODATA;
	*ts = t[got - 1];
	return 0;
}

static int module_reload(const char *params)
{
	const char *ko = getenv("PERFCLOCK_KO");
	int fd, ret;

	if (syscall(SYS_delete_module, "perfclock", O_NONBLOCK))
		return -errno;
	fd = open(ko ? ko : "/payload/perfclock.ko", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, params, 0) ? -errno : 0;
	close(fd);
	return ret;
}

/* Whether a kernel log record (from boot on: /dev/kmsg) contains @s. */
static int kmsg_has(const char *s)
{
	char rec[2048];
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ssize_t n;
	int found = 0;

	if (fd < 0)
		return 0;
	while ((n = read(fd, rec, sizeof(rec) - 1)) > 0 || (n < 0 && errno == EPIPE)) {
		if (n <= 0)
			continue;	/* EPIPE: overwritten records, go on */
		rec[n] = 0;
		if (strstr(rec, s))
			found = 1;
	}
	close(fd);
	return found;
}

TEST(realtime_set_backward)
{
	struct perfclock_horizon h0, h1, h2;
	struct pc_comm_ring ring;
	struct timespec ts;
	uint64_t t;
	int fd;

	if (geteuid())
		SKIP(return, "needs root to set CLOCK_REALTIME");
	fd = pc_open(O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pc_comm_ring_open(&ring, CLOCK_REALTIME));
	ASSERT_EQ(0, get_horizon(fd, CLOCK_REALTIME, &h0));
	ASSERT_LE(1, h0.generation);

	/* Forward: every held horizon stays true, no new generation. */
	ASSERT_EQ(0, clock_gettime(CLOCK_REALTIME, &ts));
	ts.tv_sec += 1;
	ASSERT_EQ(0, clock_settime(CLOCK_REALTIME, &ts));
	ASSERT_EQ(0, get_horizon(fd, CLOCK_REALTIME, &h1));
	EXPECT_EQ(h0.generation, h1.generation);
	EXPECT_LE(h0.ns, h1.ns);

	/* Back by 2 s (1 s below where it was). */
	ASSERT_EQ(0, clock_gettime(CLOCK_REALTIME, &ts));
	ts.tv_sec -= 2;
	ASSERT_EQ(0, clock_settime(CLOCK_REALTIME, &ts));
	ASSERT_EQ(0, stamp(&ring, &t));
	/* The old behaviour: the held horizon is above a later record. */
	EXPECT_LT(t, h1.ns) TH_LOG("the set did not move the clock below the held horizon");

	ASSERT_EQ(0, get_horizon(fd, CLOCK_REALTIME, &h2));
	EXPECT_LT(h1.generation, h2.generation);
	EXPECT_GT(h1.ns, h2.ns) TH_LOG("the new generation restarts lower");
	ASSERT_EQ(0, stamp(&ring, &t));
	EXPECT_LE(h2.ns, t) TH_LOG("new-generation horizon above a later record");
	TH_LOG("generation %u -> %u, horizon %llu -> %llu", h1.generation,
	       h2.generation, (unsigned long long)h1.ns,
	       (unsigned long long)h2.ns);

	/* Put the clock back where it would be. */
	ASSERT_EQ(0, clock_gettime(CLOCK_REALTIME, &ts));
	ts.tv_sec += 1;
	ASSERT_EQ(0, clock_settime(CLOCK_REALTIME, &ts));
	pc_comm_ring_close(&ring);
	close(fd);
}

/*
 * A global kprobes disarm (debugfs) is seen: the module can no longer
 * be told of a sched_clock reset, says so, and starts a generation (a
 * reset may have passed unseen). Re-arming does not bring the probe
 * back (it could have missed one meanwhile); a reload does.
 */
TEST(reset_probe_disarm_seen)
{
	struct perfclock_horizon h0, h1;
	struct perfclock_info info;
	int fd;

	if (geteuid())
		SKIP(return, "needs root (debugfs, finit_module)");
	if (access(KPROBES_ENABLED, W_OK))
		SKIP(return, "%s: %s", KPROBES_ENABLED, strerror(errno));
	fd = pc_open(O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pc_info(fd, &info));
	ASSERT_TRUE(info.flags & PERFCLOCK_INFO_SCHED_CLOCK_RESET_PROBE)
		TH_LOG("the module has no armed reset probe (dmesg says why)");
	ASSERT_EQ(0, get_horizon(fd, PERFCLOCK_HORIZON_PERF_CLOCK, &h0));

	ASSERT_EQ(0, pc_write_file(KPROBES_ENABLED, "0"));
	EXPECT_EQ(0, pc_info(fd, &info));
	EXPECT_FALSE(info.flags & PERFCLOCK_INFO_SCHED_CLOCK_RESET_PROBE);
	EXPECT_FALSE(info.flags & PERFCLOCK_INFO_PERF_HORIZON_REFUSED)
		TH_LOG("refused with no TSC mark");
	/* No mark: perf_clock() horizons go on, in a new generation. */
	EXPECT_EQ(0, get_horizon(fd, PERFCLOCK_HORIZON_PERF_CLOCK, &h1));
	EXPECT_LT(h0.generation, h1.generation);
	ASSERT_EQ(0, pc_write_file(KPROBES_ENABLED, "1"));
	EXPECT_EQ(0, pc_info(fd, &info));
	EXPECT_FALSE(info.flags & PERFCLOCK_INFO_SCHED_CLOCK_RESET_PROBE)
		TH_LOG("a probe found disarmed once is not trusted again");
	close(fd);

	ASSERT_EQ(0, module_reload(PC_TEST_MODULE_PARAMS));
	fd = pc_open(O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pc_info(fd, &info));
	EXPECT_TRUE(info.flags & PERFCLOCK_INFO_SCHED_CLOCK_RESET_PROBE);
	close(fd);
}

static int set_tick(long tick)
{
	struct timex tx = { .modes = ADJ_TICK, .tick = tick };

	return adjtimex(&tx) < 0 ? -errno : 0;
}

/* GET_HORIZON on another CPU while the reset work is held off. */
struct hold_caller {
	int fd, cpu, fallback;		/* fallback: expect refusal */
	int disarm;			/* disarm kprobes first */
	int ready;			/* set by it: pinned, log open */
	int marked, stop;		/* set by the holder */
	uint32_t gen0;			/* the generation before the mark */
	const char *failed;		/* what failed, with errno in err */
	int err, refused;		/* refused: EOPNOTSUPP seen */
	uint32_t flags;			/* GET_INFO's, after the disarm */
	uint64_t calls, cpu_ns;		/* CPU time in GET_HORIZON */
	uint64_t last_ns;		/* the newest horizon of gen0 */
	/* Calls begun after the mark, ended before the reset, in gen0. */
	uint64_t held_calls;
	int kmsg, mark_seen, reset_seen;
};

/* The kernel log's news: the mark, and __sched_clock_work()'s printk. */
static void watch_kmsg(struct hold_caller *c)
{
	char rec[1024];
	ssize_t n;

	while ((n = read(c->kmsg, rec, sizeof(rec) - 1)) > 0 ||
	       (n < 0 && errno == EPIPE)) {
		if (n <= 0)
			continue;
		rec[n] = 0;
		if (strstr(rec, "Marking TSC unstable due to perfclock selftest"))
			c->mark_seen = 1;
		if (strstr(rec, "sched_clock: Marking unstable"))
			__atomic_store_n(&c->reset_seen, 1, __ATOMIC_RELEASE);
	}
}

static void *hold_caller_fn(void *arg)
{
	struct hold_caller *c = arg;
	struct perfclock_horizon h;
	struct perfclock_info info;
	uint64_t c0;
	int ret, after_mark, before_reset;

	c->failed = "pin";
	if (pc_pin(c->cpu))
		goto fail;
	c->failed = "/dev/kmsg";
	c->kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (c->kmsg < 0 || lseek(c->kmsg, 0, SEEK_END) < 0)
		goto fail;
	c->failed = NULL;
	__atomic_store_n(&c->ready, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&c->marked, __ATOMIC_ACQUIRE))
		sched_yield();
	if (c->disarm) {
		c->failed = "disarm kprobes";
		if (pc_write_file(KPROBES_ENABLED, "0"))
			goto fail;
		c->failed = "GET_INFO";
		if (pc_info(c->fd, &info))
			goto fail;
		c->flags = info.flags;
	}
	c->failed = NULL;
	while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
		watch_kmsg(c);
		after_mark = c->mark_seen;
		before_reset = !c->reset_seen;
		c0 = ts_ns(CLOCK_THREAD_CPUTIME_ID);
		ret = get_horizon(c->fd, PERFCLOCK_HORIZON_PERF_CLOCK, &h);
		/* Calls begun before the reset: after it the CPU clock stalls. */
		if (before_reset) {
			c->cpu_ns += ts_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
			c->calls++;
		}

		if (ret == -EOPNOTSUPP) {
			c->refused = 1;
			usleep(1000);
			continue;
		}
		if (ret) {
			c->failed = "GET_HORIZON";
			goto fail;
		}
		watch_kmsg(c);
		if (h.generation != c->gen0 || c->reset_seen)
			continue;
		if (h.ns > c->last_ns)
			__atomic_store_n(&c->last_ns, h.ns, __ATOMIC_RELAXED);
		if (after_mark)
			c->held_calls++;
	}
	close(c->kmsg);
	if (c->disarm && pc_write_file(KPROBES_ENABLED, "1")) {
		c->failed = "re-arm kprobes";
		goto fail;
	}
	return NULL;
fail:
	c->err = errno;
	__atomic_store_n(&c->ready, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * GET_TIME in a loop on another CPU than the mark's, from before the mark
 * until a horizon of the new generation was seen: the calls made while
 * the reset ran must say so (PERFCLOCK_TIME_RESET_PENDING). A value read
 * then may be of the clock before the reset, above what the reset leaves
 * that CPU at, and a per-CPU horizon made of it would hold records
 * stamped after it.
 */
struct time_hammer {
	int fd, cpu, stop, err;
	uint64_t calls, flagged;
};

static void *time_hammer_fn(void *arg)
{
	struct time_hammer *t = arg;
	struct perfclock_time pt;

	if (pc_pin(t->cpu)) {
		t->err = errno;
		return NULL;
	}
	while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE)) {
		if (pc_time(t->fd, &pt)) {
			t->err = errno;
			return NULL;
		}
		t->calls++;
		if (pt.flags & PERFCLOCK_TIME_RESET_PENDING)
			t->flagged++;
	}
	return NULL;
}

/*
 * Stop the caller once the reset is in the log (up to 2 s), and judge
 * what it saw while the reset was held off.
 */
static void hold_caller_join(struct __test_metadata *_metadata,
			     struct hold_caller *hc, pthread_t thread,
			     uint64_t hold_ns)
{
	int i;

	for (i = 0; i < 200 && !__atomic_load_n(&hc->reset_seen, __ATOMIC_ACQUIRE); i++)
		usleep(10000);
	__atomic_store_n(&hc->stop, 1, __ATOMIC_RELEASE);
	ASSERT_EQ(0, pthread_join(thread, NULL));
	TH_LOG("mark and hold %llu ms: %llu GET_HORIZON calls on CPU %d begun before the reset used %llu us of CPU, %llu of them begun after the mark and returned before the reset",
	       (unsigned long long)(hold_ns / 1000000),
	       (unsigned long long)hc->calls, hc->cpu,
	       (unsigned long long)(hc->cpu_ns / 1000),
	       (unsigned long long)hc->held_calls);
	ASSERT_EQ(NULL, hc->failed) TH_LOG("hold thread: %s: %s", hc->failed, strerror(hc->err));
	/*
	 * No spin: a try used to keep irqs off for 2 ticks, and try again
	 * 1 ms later, for as long as the reset was pending.
	 */
	EXPECT_LT(hc->cpu_ns, HOLD_MS * 1000000ULL / 4);
	EXPECT_TRUE(hc->mark_seen && hc->reset_seen);
	/* A reset queued but not run holds up no horizon. */
	if (!hc->fallback)
		EXPECT_LT(0, hc->held_calls);
}

TEST(sched_clock_turns_unstable)
{
	const char *ko = getenv("PERFCLOCK_MARK_KO");
	struct perfclock_horizon pre, h;
	struct perfclock_info info;
	const struct perfclock_page *pg;
	struct pc_comm_ring ring;
	struct timex tx = { .modes = 0 };
	struct sched_param sp = { .sched_priority = 1 };
	struct hold_caller hc = { .fallback = !!getenv("PERFCLOCK_RESET_FALLBACK") };
	struct time_hammer th = { 0 };
	pthread_t thread, hammer;
	uint64_t t, deadline, pns, max_new = 0, below_pre = 0, bad = 0;
	uint64_t stamps = 0, worst_back = 0, t_mark, hold_ns;
	uint32_t pgen;
	char params[32];
	int fd, kfd, cpus[CPU_SETSIZE], ncpu, i, valid;

	if (geteuid())
		SKIP(return, "needs root (adjtimex, finit_module)");
	if (ko && !*ko)
		SKIP(return, "PERFCLOCK_MARK_KO is empty: the TSC is marked unstable in a guest of its own (selftests/run_reset.sh)");
	if (!ko)
		ko = "./perfclock_mark_tsc_unstable.ko";
	kfd = open(ko, O_RDONLY | O_CLOEXEC);
	if (kfd < 0)
		SKIP(return, "%s: %s", ko, strerror(errno));
	fd = pc_open(O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pc_info(fd, &info));
	ASSERT_TRUE(info.flags & PERFCLOCK_INFO_HORIZON_GENERATION);
	/*
	 * Under a detected hypervisor the module cannot prove sched_clock
	 * stable (it refuses the TSC model there), though it may be: the
	 * kernel's log of sched_clock_init_late() says.
	 */
	if (!(info.flags & PERFCLOCK_INFO_SCHED_CLOCK_STABLE) &&
	    (!(info.flags & PERFCLOCK_INFO_SCHED_CLOCK_PARAVIRT) ||
	     !kmsg_has("sched_clock: Marking stable") ||
	     kmsg_has("sched_clock: Marking unstable")))
		SKIP(return, "sched_clock is not stable here: nothing to turn unstable");
	if (info.flags & PERFCLOCK_INFO_SCHED_CLOCK_PARAVIRT)
		TH_LOG("hypervisor detected, sched_clock native and stable (kernel log)");
	/*
	 * No probe (a kernel without kprobes: reset_probe_disarm_seen
	 * checks a kernel with them has one): the refusal is what to test.
	 */
	if (!(info.flags & PERFCLOCK_INFO_SCHED_CLOCK_RESET_PROBE)) {
		hc.fallback = 1;
		TH_LOG("no reset probe: perf_clock() horizons must be refused after the mark");
	} else if (hc.fallback) {
		if (access(KPROBES_ENABLED, W_OK))
			SKIP(return, "%s: %s", KPROBES_ENABLED, strerror(errno));
		hc.disarm = 1;
	}
	pg = pc_map(fd);
	ASSERT_NE(NULL, pg);
	ncpu = pc_cpus(cpus, CPU_SETSIZE);
	ASSERT_LT(1, ncpu) TH_LOG("the hold needs two CPUs");
	ASSERT_EQ(0, pc_comm_ring_open(&ring, -1));

	/* Let the GTOD fall behind sched_clock (which is the raw TSC). */
	ASSERT_LE(0, adjtimex(&tx));
	ASSERT_EQ(0, set_tick(tx.tick * 9 / 10));
	sleep(SLOW_SECONDS);
	ASSERT_EQ(0, set_tick(tx.tick));

	ASSERT_EQ(0, get_horizon(fd, PERFCLOCK_HORIZON_PERF_CLOCK, &pre));
	hc.fd = fd;
	hc.cpu = cpus[1];
	hc.gen0 = pre.generation;
	ASSERT_EQ(0, pthread_create(&thread, NULL, hold_caller_fn, &hc));
	th.fd = fd;
	th.cpu = cpus[1];
	ASSERT_EQ(0, pthread_create(&hammer, NULL, time_hammer_fn, &th));
	/* On its CPU before this one is taken. */
	while (!__atomic_load_n(&hc.ready, __ATOMIC_ACQUIRE))
		sched_yield();
	ASSERT_EQ(NULL, hc.failed) TH_LOG("hold thread: %s: %s", hc.failed, strerror(hc.err));

	/*
	 * Mark on cpus[0] as SCHED_FIFO, and keep that CPU HOLD_MS after
	 * the mark (the test module's hold_ms): schedule_work() put
	 * __sched_clock_work() on this CPU's pool, whose kworker waits.
	 */
	ASSERT_EQ(0, pc_pin(cpus[0]));
	ASSERT_EQ(0, sched_setscheduler(0, SCHED_FIFO, &sp));
	snprintf(params, sizeof(params), "hold_ms=%d", HOLD_MS);
	__atomic_store_n(&hc.marked, 1, __ATOMIC_RELEASE);
	t_mark = ts_ns(CLOCK_MONOTONIC);
	ASSERT_EQ(0, syscall(SYS_finit_module, kfd, params, 0))
		TH_LOG("finit_module %s: %s", ko, strerror(errno));
	hold_ns = ts_ns(CLOCK_MONOTONIC) - t_mark;
	close(kfd);
	sp.sched_priority = 0;
	ASSERT_EQ(0, sched_setscheduler(0, SCHED_OTHER, &sp));
	if (hc.fallback) {
		__atomic_store_n(&th.stop, 1, __ATOMIC_RELEASE);
		ASSERT_EQ(0, pthread_join(hammer, NULL));
		hold_caller_join(_metadata, &hc, thread, hold_ns);
		/* No probe: refused from the mark on, never a wait. */
		EXPECT_FALSE(hc.flags & PERFCLOCK_INFO_SCHED_CLOCK_RESET_PROBE);
		EXPECT_FALSE(hc.flags & PERFCLOCK_INFO_PERF_HORIZON_REFUSED)
			TH_LOG("refused before the mark");
		EXPECT_TRUE(hc.refused);
		ASSERT_EQ(0, pc_info(fd, &info));
		EXPECT_FALSE(info.flags & PERFCLOCK_INFO_SCHED_CLOCK_RESET_PROBE);
		EXPECT_TRUE(info.flags & PERFCLOCK_INFO_PERF_HORIZON_REFUSED);
		EXPECT_EQ(-EOPNOTSUPP, get_horizon(fd, PERFCLOCK_HORIZON_PERF_CLOCK, &h));
		ASSERT_EQ(0, page_horizon(pg, &pgen, &pns, &valid));
		EXPECT_FALSE(valid);
		/* use_clockid horizons go on. */
		EXPECT_EQ(0, get_horizon(fd, CLOCK_MONOTONIC, &h));
		/*
		 * The library withdraws such a clock to its estimate, flagged
		 * as one, instead of failing every round with EOPNOTSUPP.
		 */
		{
			struct perfclock_clock_info ci;
			struct perfclock *clk = perfclock_open(NULL);
			uint64_t hz = 0;

			ASSERT_NE(NULL, clk) TH_LOG("perfclock_open: %s", strerror(errno));
			EXPECT_EQ(0, perfclock_horizon(clk, &hz));
			ASSERT_EQ(0, perfclock_get_info(clk, &ci));
			EXPECT_FALSE(ci.flags & PERFCLOCK_CLOCK_HORIZON_EXACT)
				TH_LOG("a refused module's clock still says exact");
			EXPECT_EQ(0, perfclock_horizon(clk, &hz));
			perfclock_close(clk);
		}
		pc_comm_ring_close(&ring);
		pc_unmap(pg);
		close(fd);
		/* Until reload: then the switch is behind it. */
		ASSERT_EQ(0, module_reload(PC_TEST_MODULE_PARAMS));
		fd = pc_open(O_RDONLY);
		ASSERT_LE(0, fd);
		EXPECT_EQ(0, get_horizon(fd, PERFCLOCK_HORIZON_PERF_CLOCK, &h));
		close(fd);
		return;
	}
	/*
	 * The old behaviour's horizon: the newest from before the reset
	 * (the caller goes on meanwhile: the loop starts right away, since
	 * only records stamped within the step's size after the reset can
	 * fall below it).
	 */
	pns = __atomic_load_n(&hc.last_ns, __ATOMIC_RELAXED);
	if (pns > pre.ns)
		pre.ns = pns;

	/*
	 * From here on: every record stamped is compared with the newest
	 * horizon of the new generation handed out before it (ioctl or
	 * page), and with the horizon held from before (the old behaviour).
	 */
	deadline = ts_ns(CLOCK_MONOTONIC) + WAIT_SECONDS * 1000000000ULL;
	for (i = 0; ts_ns(CLOCK_MONOTONIC) < deadline; i++) {
		ASSERT_EQ(0, pc_pin(cpus[i % ncpu]));
		ASSERT_EQ(0, page_horizon(pg, &pgen, &pns, &valid));
		if (pgen != pre.generation && valid && pns > max_new)
			max_new = pns;
		if (i % 8 == 0) {
			ASSERT_EQ(0, get_horizon(fd, PERFCLOCK_HORIZON_PERF_CLOCK, &h));
			if (h.generation != pre.generation && h.ns > max_new)
				max_new = h.ns;
		}
		ASSERT_EQ(0, stamp(&ring, &t));
		stamps++;
		if (t < pre.ns) {
			below_pre++;
			if (pre.ns - t > worst_back)
				worst_back = pre.ns - t;
		}
		if (max_new && t < max_new)
			bad++;
		/* Enough: the new generation is in use and the step seen. */
		if (max_new && below_pre && stamps > 2000)
			break;
	}
	__atomic_store_n(&th.stop, 1, __ATOMIC_RELEASE);
	ASSERT_EQ(0, pthread_join(hammer, NULL));
	hold_caller_join(_metadata, &hc, thread, hold_ns);
	TH_LOG("GET_TIME on CPU %d: %llu calls, %llu of them during the reset",
	       th.cpu, (unsigned long long)th.calls,
	       (unsigned long long)th.flagged);
	ASSERT_EQ(0, th.err) TH_LOG("GET_TIME: %s", strerror(th.err));
	/*
	 * The reset's text_poke_sync() IPIs run on that CPU inside the
	 * window, so the loop runs there inside it too (under TCG's one
	 * thread, the vCPU runs on after the IPI): at least one call.
	 */
	EXPECT_LT(0, th.flagged) TH_LOG("no GET_TIME said the reset was under way");
	ASSERT_EQ(0, pc_info(fd, &info));
	TH_LOG("%llu records after the mark, %llu below the held horizon (up to %llu ns), %llu below a new-generation horizon; generation %u -> %u",
	       (unsigned long long)stamps, (unsigned long long)below_pre,
	       (unsigned long long)worst_back, (unsigned long long)bad,
	       pre.generation, h.generation);
	EXPECT_EQ(0, info.flags & PERFCLOCK_INFO_SCHED_CLOCK_STABLE);
	EXPECT_FALSE(info.flags & PERFCLOCK_INFO_PERF_HORIZON_REFUSED);
	ASSERT_NE(0, max_new) TH_LOG("no horizon of a new generation within %d s", WAIT_SECONDS);
	EXPECT_LT(pre.generation, h.generation);
	/* The old behaviour fails: the step was real. */
	EXPECT_LT(0, below_pre) TH_LOG("perf_clock() did not step below the held horizon");
	/* The new generation's horizons hold. */
	EXPECT_EQ(0, bad);
	pc_comm_ring_close(&ring);
	pc_unmap(pg);
	close(fd);
}

TEST_HARNESS_MAIN
