// SPDX-License-Identifier: GPL-2.0
/*
 * Who may make the module cost the machine what (WHO ARMS WHAT in
 * module/perfclock_ioctl.h; module/perfclock.c: perfclock_keep_armed(),
 * perfclock_arm_check(), perfclock_horizon_wait()):
 *  - a file that is only open arms no timer;
 *  - a mapping of the page arms it, a fork()ed copy of the mapping too,
 *    and it stops once the last mapping is gone;
 *  - a GET_HORIZON without CAP_PERFMON arms nothing either;
 *  - such callers ride on shared, rate-limited grace periods instead of
 *    one each, and get EPERM for an expedited one;
 *  - a mapping by them does not revalidate on every CPU (an IPI each)
 *    when a privileged one made within the minute would not either;
 *  - nor does it run the costlier grace-period settings
 *    (horizon_expedited, horizon_gp_idle_ms under 50 ms);
 *  - their GET_HORIZON and GET_INFO read the clocksource with irqs on
 *    (not under the module's raw spinlock), and GET_INFO's at most once
 *    a jiffy (seen by a kprobe on ktime_get_snapshot()).
 * Observed through the page's update_count and GET_INFO's
 * PERFCLOCK_INFO_UPDATES_ARMED and counters; the first test needs none
 * of those and fails on a module that arms at open. Unprivileged means
 * uid and gid nobody, which drops every capability (no SECBIT_KEEP_CAPS).
 * The bounds are counts, not times: "stops" is "stops within 5 s".
 */
#define _GNU_SOURCE
#include <grp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "perfclock_util.h"

#define GP_IDLE_PARAM	"/sys/module/perfclock/parameters/horizon_gp_idle_ms"
#define EXPEDITED_PARAM	"/sys/module/perfclock/parameters/horizon_expedited"
#define NOBODY		65534
#define STOP_WAIT_MS	5000

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

/* 1 armed, 0 not, -1 the module does not say (an older one). */
static int armed(int fd)
{
	struct perfclock_info info;

	if (pc_info(fd, &info) || !(info.flags & PERFCLOCK_INFO_COUNTERS))
		return -1;
	return !!(info.flags & PERFCLOCK_INFO_UPDATES_ARMED);
}

/* Wait up to STOP_WAIT_MS for the timer to stop: its elapsed ms, or -1. */
static long wait_stopped(int fd)
{
	uint64_t t0 = now_ms();

	while (armed(fd) == 1) {
		if (now_ms() - t0 > STOP_WAIT_MS)
			return -1;
		usleep(10000);
	}
	return now_ms() - t0;
}

static int counters(int fd, uint64_t *reval, uint64_t *gps)
{
	struct perfclock_info info;

	if (pc_info(fd, &info) || !(info.flags & PERFCLOCK_INFO_COUNTERS))
		return -1;
	*reval = info.revalidations;
	*gps = info.gp_requested;
	return 0;
}

static uint64_t update_count(int fd)
{
	const struct perfclock_page *pg = pc_map(fd);
	uint64_t n;

	if (!pg)
		return 0;
	n = __atomic_load_n(&pg->update_count, __ATOMIC_RELAXED);
	pc_unmap(pg);
	return n;
}

/* A module parameter's value as sysfs prints it (newline kept). */
static int read_param(const char *path, char *buf, int size)
{
	FILE *f = fopen(path, "r");
	int ok;

	if (!f)
		return -1;
	ok = fgets(buf, size, f) != NULL;
	fclose(f);
	return ok ? 0 : -1;
}

static int drop_to_nobody(void)
{
	return setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY);
}

static int get_horizon(int fd, uint32_t flags)
{
	struct perfclock_horizon h;

	memset(&h, 0, sizeof(h));
	h.clockid = PERFCLOCK_HORIZON_PERF_CLOCK;
	h.flags = flags;
	return pc_ioctl(fd, PERFCLOCK_IOC_GET_HORIZON, &h);
}

/*
 * Held open 300 ms, not mapped: the page's update count moves by the
 * re-arm's publish and a period in flight at most, where a timer armed
 * at open (the module before) moves it every update period.
 */
TEST(open_only_arms_nothing)
{
	struct perfclock_info info;
	uint64_t u0, u1, periods;
	int fd = pc_open(O_RDONLY);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pc_info(fd, &info));
	wait_stopped(fd);
	u0 = update_count(fd);
	ASSERT_NE(0, u0);
	usleep(300000);
	EXPECT_EQ(0, armed(fd)) TH_LOG("open, not mapped, and the timer runs (or the module does not say)");
	u1 = update_count(fd);
	periods = 300000000ULL / info.update_period_ns;
	TH_LOG("page updates while only open for 300 ms: %llu (%llu periods)",
	       (unsigned long long)(u1 - u0), (unsigned long long)periods);
	EXPECT_GT(periods / 10 + 3, u1 - u0);
	close(fd);
}

/* A mapping arms; its fork()ed copy keeps it armed; the last one's going stops it. */
TEST(mapping_arms_until_last_unmap)
{
	const struct perfclock_page *pg;
	uint64_t c0;
	int fd = pc_open(O_RDONLY), p2c[2], c2p[2], status;
	long ms;
	pid_t pid;
	char b;

	ASSERT_LE(0, fd);
	ASSERT_LE(0, wait_stopped(fd)) TH_LOG("the module does not say, or never stops");
	pg = pc_map(fd);
	ASSERT_NE(NULL, pg);
	EXPECT_EQ(1, armed(fd));
	c0 = pg->update_count;
	usleep(50000);
	EXPECT_LT(c0, pg->update_count) TH_LOG("mapped, and the page is not updated");

	ASSERT_EQ(0, pipe(p2c));
	ASSERT_EQ(0, pipe(c2p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* Hold the inherited mapping until told, then exit with it. */
		if (write(c2p[1], "r", 1) != 1 || read(p2c[0], &b, 1) != 1)
			_exit(1);
		_exit(0);
	}
	ASSERT_EQ(1, read(c2p[0], &b, 1));
	pc_unmap(pg);
	usleep(100000);
	EXPECT_EQ(1, armed(fd)) TH_LOG("the child's copy of the mapping did not keep the timer");
	ASSERT_EQ(1, write(p2c[1], "x", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ms = wait_stopped(fd);
	EXPECT_LE(0, ms) TH_LOG("no mapping left, and the timer still runs after %d ms", STOP_WAIT_MS);
	TH_LOG("stopped %ld ms after the last mapping went", ms);
	close(fd);
}

struct looper {
	int fd;
	atomic_int stop;
	int calls, err;
};

static void *horizon_loop(void *arg)
{
	struct looper *l = arg;

	while (!atomic_load(&l->stop)) {
		l->err = get_horizon(l->fd, 0);
		if (l->err)
			break;
		l->calls++;
	}
	return NULL;
}

/*
 * An unprivileged GET_HORIZON arms no timer, while it waits or after:
 * it waits for grace periods by itself. Sampled every 5 ms while a
 * thread calls it back to back for 500 ms.
 */
TEST(unprivileged_horizon_arms_nothing)
{
	struct looper l = { .stop = 0 };
	int i, seen = 0, samples = 0;
	pthread_t t;

	if (geteuid())
		SKIP(return, "needs root to drop to nobody");
	ASSERT_EQ(0, drop_to_nobody());
	l.fd = pc_open(O_RDONLY);
	ASSERT_LE(0, l.fd);
	ASSERT_LE(0, wait_stopped(l.fd)) TH_LOG("the module does not say, or never stops");
	ASSERT_EQ(0, pthread_create(&t, NULL, horizon_loop, &l));
	for (i = 0; i < 100; i++, samples++) {
		if (armed(l.fd))
			seen++;
		usleep(5000);
	}
	atomic_store(&l.stop, 1);
	ASSERT_EQ(0, pthread_join(t, NULL));
	ASSERT_EQ(0, l.err);
	TH_LOG("%d GET_HORIZONs as nobody; the timer seen armed (or not said) in %d of %d samples",
	       l.calls, seen, samples);
	ASSERT_LT(0, l.calls);
	EXPECT_EQ(0, seen);
	EXPECT_EQ(-EPERM, get_horizon(l.fd, PERFCLOCK_HORIZON_EXPEDITED));
	close(l.fd);
}

#define THREADS	8
#define CALLS	2

static void *horizon_thread(void *arg)
{
	int fd = *(int *)arg, i;

	for (i = 0; i < CALLS; i++)
		if (get_horizon(fd, 0))
			return (void *)1;
	return NULL;
}

/*
 * THREADS x CALLS unprivileged GET_HORIZONs at once, with
 * horizon_gp_idle_ms=1000: the grace periods the module asks for are
 * started under its one rate limit, at most one per second (and one at
 * once if the last is older), however many callers; a caller with
 * CAP_PERFMON asks for one per call.
 */
TEST(unprivileged_horizon_shares_grace_periods)
{
	uint64_t r0, r1, g0, g1, t0, ms;
	pthread_t th[THREADS];
	int fd, i, pfd[2], status;
	char def[24] = "";
	ssize_t n;
	pid_t pid;

	if (geteuid())
		SKIP(return, "needs root to set " GP_IDLE_PARAM);
	fd = pc_open(O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, counters(fd, &r0, &g0)) TH_LOG("the module has no counters");
	ASSERT_EQ(0, read_param(GP_IDLE_PARAM, def, sizeof(def)));
	ASSERT_EQ(0, pc_write_file(GP_IDLE_PARAM, "1000"));

	ASSERT_EQ(0, pipe(pfd));
	t0 = now_ms();
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		void *ret;

		if (drop_to_nobody())
			_exit(10);
		for (i = 0; i < THREADS; i++)
			if (pthread_create(&th[i], NULL, horizon_thread, &fd))
				_exit(11);
		for (i = 0; i < THREADS; i++)
			if (pthread_join(th[i], &ret) || ret)
				_exit(12);
		_exit(get_horizon(fd, PERFCLOCK_HORIZON_EXPEDITED) == -EPERM ? 0 : 13);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ms = now_ms() - t0;
	ASSERT_EQ(0, counters(fd, &r1, &g1));
	n = pc_write_file(GP_IDLE_PARAM, def);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("unprivileged child: status %#x (13: expedited not refused)", status);
	TH_LOG("%d unprivileged GET_HORIZONs in %llu ms: %llu grace periods asked for",
	       THREADS * CALLS, (unsigned long long)ms,
	       (unsigned long long)(g1 - g0));
	EXPECT_GE(2 + ms / 1000, g1 - g0);

	/* The privileged path asks for its own: the counter can tell. */
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, get_horizon(fd, 0));
	ASSERT_EQ(0, counters(fd, &r0, &g0));
	EXPECT_LE(g1 + 4, g0);
	ASSERT_EQ(0, n);
	close(fd);
}

/*
 * A mapping made while the timer is off checks the page first: on every
 * CPU (an IPI each) at most once a second for a privileged caller, once
 * a minute for anyone else. Within the minute of a privileged one, an
 * unprivileged mapping more than a second later causes none, and a
 * privileged one does.
 */
TEST(unprivileged_map_skips_full_revalidation)
{
	const struct perfclock_page *pg;
	uint64_t r0, r1, r2, g;
	int fd, status;
	pid_t pid;

	if (geteuid())
		SKIP(return, "needs root to drop to nobody");
	fd = pc_open(O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_LE(0, wait_stopped(fd)) TH_LOG("the module does not say, or never stops");
	pg = pc_map(fd);
	ASSERT_NE(NULL, pg);
	pc_unmap(pg);
	ASSERT_LE(0, wait_stopped(fd));
	ASSERT_EQ(0, counters(fd, &r0, &g));
	usleep(1200000);

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int cfd;

		if (drop_to_nobody())
			_exit(10);
		cfd = pc_open(O_RDONLY);
		pg = cfd < 0 ? NULL : pc_map(cfd);
		_exit(pg ? 0 : 11);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ASSERT_LE(0, wait_stopped(fd));
	ASSERT_EQ(0, counters(fd, &r1, &g));
	EXPECT_EQ(r0, r1) TH_LOG("an unprivileged first mapping revalidated on every CPU");

	pg = pc_map(fd);
	ASSERT_NE(NULL, pg);
	ASSERT_EQ(0, counters(fd, &r2, &g));
	EXPECT_EQ(r1 + 1, r2) TH_LOG("a privileged first mapping 1.2 s on did not revalidate");
	pc_unmap(pg);
	close(fd);
}

/*
 * Grace periods the module asked for while a mapping of the page was
 * held MAP_MS: made by root (priv) or by nobody, in a child. Returns
 * the count, -1 if the child failed.
 */
#define MAP_MS	600
static long gps_while_mapped(int fd, int priv, uint64_t *ms)
{
	uint64_t r, g0, g1, t0;
	int status;
	pid_t pid;

	if (counters(fd, &r, &g0))
		return -1;
	t0 = now_ms();
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		const struct perfclock_page *pg;
		int cfd;

		if (!priv && drop_to_nobody())
			_exit(10);
		cfd = pc_open(O_RDONLY);
		pg = cfd < 0 ? NULL : pc_map(cfd);
		if (!pg)
			_exit(11);
		usleep(MAP_MS * 1000);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid ||
	    !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	*ms = now_ms() - t0;
	if (counters(fd, &r, &g1))
		return -1;
	return (long)(g1 - g0);
}

/*
 * The costlier grace-period settings are for privileged tools: with
 * horizon_expedited=1, and again with horizon_gp_idle_ms=0, a mapping by
 * root makes the module ask for a grace period every update period,
 * while one by nobody stays within one per 50 ms (the module's
 * PERFCLOCK_GP_IDLE_MS_UNPRIV). Before, anyone who mapped the page got
 * the root setting: the root run shows what that was.
 */
TEST(unprivileged_mapping_gets_no_costlier_grace_periods)
{
	static const char *const params[][3] = {
		{ EXPEDITED_PARAM, "1", "horizon_expedited=1" },
		{ GP_IDLE_PARAM, "0", "horizon_gp_idle_ms=0" },
	};
	char def[2][24];
	long priv[2], unpriv[2];
	uint64_t priv_ms[2], unpriv_ms[2];
	int fd, i, n = 0;

	if (geteuid())
		SKIP(return, "needs root to set the parameters and drop to nobody");
	fd = pc_open(O_RDONLY);
	ASSERT_LE(0, fd);
	for (i = 0; i < 2; i++) {
		int err = read_param(params[i][0], def[i], sizeof(def[i]));

		ASSERT_EQ(0, err) TH_LOG("%s: no such parameter", params[i][0]);
	}
	for (i = 0; i < 2; i++) {
		n |= pc_write_file(params[i][0], params[i][1]);
		priv[i] = gps_while_mapped(fd, 1, &priv_ms[i]);
		unpriv[i] = gps_while_mapped(fd, 0, &unpriv_ms[i]);
		n |= pc_write_file(params[i][0], def[i]);
	}
	close(fd);
	ASSERT_EQ(0, n) TH_LOG("setting or restoring a parameter failed");
	for (i = 0; i < 2; i++) {
		long bound = (long)(unpriv_ms[i] / 50) + 3;

		TH_LOG("%s: grace periods asked for while mapped: root %ld in %llu ms, nobody %ld in %llu ms (at most %ld)",
		       params[i][2], priv[i], (unsigned long long)priv_ms[i],
		       unpriv[i], (unsigned long long)unpriv_ms[i], bound);
		ASSERT_LE(0, priv[i]);
		ASSERT_LE(0, unpriv[i]);
		/* Root's mapping runs the setting: else nothing is measured. */
		EXPECT_LT(bound, priv[i]);
		EXPECT_GE(bound, unpriv[i]);
	}
}

/*
 * The module's clocksource reads, as a kprobe on ktime_get_snapshot() in
 * one process sees them: how many in task context, and how many of those
 * with irqs off (RFLAGS.IF clear in the probed registers). The tracefs
 * kprobe event perfclock_access/snap, filtered on the process's pid.
 */
#define TRACEFS		"/sys/kernel/tracing"
#define SNAP_EVENT	TRACEFS "/events/perfclock_access/snap"
#define X86_EFLAGS_IF	0x200

static int snap_probe_add(char *why, size_t len)
{
	int err;

	pc_write_file(TRACEFS "/kprobe_events", "-:perfclock_access/snap");
	err = pc_write_file(TRACEFS "/kprobe_events",
			    "p:perfclock_access/snap ktime_get_snapshot flags=%flags:x64");
	if (err)
		snprintf(why, len, "a kprobe on ktime_get_snapshot with %%flags: %s",
			 strerror(-err));
	return err;
}

static int snap_probe_arm(pid_t pid)
{
	char filter[48];

	snprintf(filter, sizeof(filter), "common_pid == %d", (int)pid);
	return pc_write_file(SNAP_EVENT "/filter", filter) ||
	       pc_write_file(TRACEFS "/trace", "") ||
	       pc_write_file(SNAP_EVENT "/enable", "1");
}

/* Stop the probe and count its hits: 0, or -1 if the trace is unreadable. */
static int snap_probe_collect(long *task, long *irqs_off)
{
	char line[512];
	FILE *f;

	pc_write_file(SNAP_EVENT "/enable", "0");
	*task = *irqs_off = 0;
	f = fopen(TRACEFS "/trace", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char ctx[16] = "";
		unsigned long long flags;
		const char *p, *q;

		p = strstr(line, "] ");
		q = strstr(line, " snap: ");
		if (!p || !q || sscanf(p + 2, "%15s", ctx) != 1)
			continue;
		q = strstr(q, "flags=");
		if (!q || sscanf(q + 6, "%llx", &flags) != 1)
			continue;
		/* A hard or soft irq that came in over the process: not its call. */
		if (strpbrk(ctx, "hHsSzZ"))
			continue;
		(*task)++;
		if (!(flags & X86_EFLAGS_IF))
			(*irqs_off)++;
	}
	fclose(f);
	return 0;
}

static void snap_probe_remove(void)
{
	pc_write_file(SNAP_EVENT "/enable", "0");
	pc_write_file(TRACEFS "/kprobe_events", "-:perfclock_access/snap");
}

/*
 * Run @what as nobody in a child, for @ms, the probe armed on it. Its
 * calls in *calls, its ms in *took; the exit status (0: ran).
 */
enum { CALL_HORIZON, CALL_INFO };

static int probed_as_nobody(int what, int ms, long *calls, long *took, long *task,
			    long *irqs_off)
{
	int go[2], res[2], status;
	long out[2] = { -1, -1 };
	pid_t pid;
	char c;

	if (pipe(go) || pipe(res))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		uint64_t t0, n = 0;
		int fd;

		close(go[1]);
		close(res[0]);
		if (drop_to_nobody() || read(go[0], &c, 1) != 1)
			_exit(10);
		fd = pc_open(O_RDONLY);
		if (fd < 0)
			_exit(11);
		t0 = now_ms();
		while (now_ms() - t0 < (uint64_t)ms) {
			struct perfclock_info info;

			if (what == CALL_HORIZON ? get_horizon(fd, 0) : pc_info(fd, &info))
				_exit(12);
			n++;
		}
		out[0] = n;
		out[1] = now_ms() - t0;
		_exit(write(res[1], out, sizeof(out)) == sizeof(out) ? 0 : 13);
	}
	close(go[0]);
	close(res[1]);
	if (snap_probe_arm(pid) || write(go[1], "g", 1) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return -1;
	}
	close(go[1]);
	if (read(res[0], out, sizeof(out)) != sizeof(out))
		out[0] = -1;
	close(res[0]);
	waitpid(pid, &status, 0);
	if (snap_probe_collect(task, irqs_off) || out[0] < 0)
		return -1;
	*calls = out[0];
	*took = out[1];
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * An unprivileged caller must not be able to make the module read the
 * clocksource with irqs off: on HPET or acpi_pm a read is microseconds,
 * and under the module's raw spinlock it held off this CPU's irqs and
 * the update timer's hard irq, inflating timer_lateness_ns and the skew
 * estimate every estimate-mode tool subtracts. Its GET_HORIZONs read the
 * clocksource before taking the lock (perfclock_clock_sets_read()), and
 * so does GET_INFO, at most once a jiffy for such callers: a loop of
 * GET_INFO for T ms gets at most T + 2 reads (HZ is at most 1000: T + 1
 * jiffies begun, and the first call's). Before, each call read it, under the lock. The probe must
 * see the module's reads at all (at least one), or nothing is measured.
 */
TEST(unprivileged_calls_read_the_clocksource_irqs_on)
{
	long calls[2], took[2], task[2], off[2];
	char why[128];
	int i, st[2];

	if (geteuid())
		SKIP(return, "needs root for kprobe events and to drop to nobody");
	if (access(TRACEFS "/kprobe_events", W_OK))
		SKIP(return, "no %s/kprobe_events: %s", TRACEFS, strerror(errno));
	if (snap_probe_add(why, sizeof(why)))
		SKIP(return, "%s", why);
	st[0] = probed_as_nobody(CALL_HORIZON, 300, &calls[0], &took[0], &task[0], &off[0]);
	st[1] = probed_as_nobody(CALL_INFO, 500, &calls[1], &took[1], &task[1], &off[1]);
	snap_probe_remove();
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, st[i]) TH_LOG("%s run: status %d (10 setuid, 11 open, 12 ioctl)",
					   i ? "GET_INFO" : "GET_HORIZON", st[i]);
		TH_LOG("%s as nobody: %ld calls in %ld ms, %ld clocksource reads, %ld with irqs off",
		       i ? "GET_INFO" : "GET_HORIZON", calls[i], took[i], task[i], off[i]);
		EXPECT_LT(0, task[i]);
		EXPECT_EQ(0, off[i]);
	}
	/* Enough calls that one read each would break the bound. */
	EXPECT_LT(2 * (took[1] + 1), calls[1]);
	EXPECT_GE(took[1] + 2, task[1]);
}

TEST_HARNESS_MAIN
