// SPDX-License-Identifier: GPL-2.0
/*
 * The module's life: unload is refused while the device is open or
 * mapped and is clean after; bad parameters fail insmod cleanly; loading
 * again works. Needs the module file (PERFCLOCK_KO, default
 * /payload/perfclock.ko) and CAP_SYS_MODULE; it leaves the module loaded
 * with the parameters the payload gave it (PC_TEST_MODULE_PARAMS), as it
 * found it; with none, its node must be root's alone.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "perfclock_util.h"

static const char *module_file(void)
{
	const char *ko = getenv("PERFCLOCK_KO");

	return ko ? ko : "/payload/perfclock.ko";
}

static int module_unload(void)
{
	return syscall(SYS_delete_module, "perfclock", O_NONBLOCK) ? -errno : 0;
}

static int module_load(const char *params)
{
	int fd = open(module_file(), O_RDONLY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, params, 0) ? -errno : 0;
	close(fd);
	return ret;
}

static int module_loaded(void)
{
	return access("/sys/module/perfclock", F_OK) == 0;
}

FIXTURE(mod) {
	int have_ko;
};

/* SKIP() in a 6.1 harness setup does not stop the test body: each test asks. */
#define SKIP_WITHOUT_KO() do {						\
	if (!self->have_ko)						\
		SKIP(return, "no module file %s (set PERFCLOCK_KO)",	\
		     module_file());					\
} while (0)

FIXTURE_SETUP(mod)
{
	self->have_ko = !access(module_file(), R_OK);
	if (self->have_ko && !module_loaded())
		ASSERT_EQ(0, module_load(PC_TEST_MODULE_PARAMS));
}

/* Whatever a test did, leave the module loaded as the payload loaded it. */
FIXTURE_TEARDOWN(mod)
{
	if (!module_loaded())
		module_load(PC_TEST_MODULE_PARAMS);
}

TEST_F(mod, unload_refused_while_open)
{
	int fd = pc_open(O_RDONLY);

	SKIP_WITHOUT_KO();
	ASSERT_LE(0, fd);
	EXPECT_EQ(-EWOULDBLOCK, module_unload());
	EXPECT_TRUE(module_loaded());
	/* The device still works after the refused attempt. */
	EXPECT_NE(0, pc_now(fd));
	close(fd);
}

TEST_F(mod, unload_refused_while_mapped)
{
	const struct perfclock_page *pg;
	uint64_t count;
	int fd = pc_open(O_RDONLY);

	SKIP_WITHOUT_KO();
	ASSERT_LE(0, fd);
	pg = pc_map(fd);
	ASSERT_NE(NULL, pg);
	close(fd);

	EXPECT_EQ(-EWOULDBLOCK, module_unload());
	EXPECT_TRUE(module_loaded());
	count = pg->update_count;
	usleep(20000);
	EXPECT_LT(count, pg->update_count);
	pc_unmap(pg);
}

TEST_F(mod, unload_then_reload)
{
	struct perfclock_time t;
	int fd;

	SKIP_WITHOUT_KO();
	ASSERT_EQ(0, module_unload());
	EXPECT_FALSE(module_loaded());
	EXPECT_EQ(-1, access(PC_DEVICE, F_OK));
	EXPECT_EQ(ENOENT, errno);

	ASSERT_EQ(0, module_load(PC_TEST_MODULE_PARAMS));
	fd = pc_open(O_RDONLY);
	ASSERT_LE(0, fd) TH_LOG("open after reload: %s", strerror(errno));
	EXPECT_EQ(0, pc_time(fd, &t));
	close(fd);
}

/* Out-of-range parameters fail insmod with -EINVAL and leave nothing behind. */
TEST_F(mod, bad_parameters_rejected)
{
	const char *bad[] = {
		"mode=01777",
		"mode=0",
		"update_period_us=99",
		"update_period_us=1000001",
	};
	size_t i;

	SKIP_WITHOUT_KO();
	ASSERT_EQ(0, module_unload());
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-EINVAL, module_load(bad[i])) TH_LOG("%s", bad[i]);
		EXPECT_FALSE(module_loaded());
		EXPECT_EQ(-1, access(PC_DEVICE, F_OK));
	}
	ASSERT_EQ(0, module_load(PC_TEST_MODULE_PARAMS));
}

/* mode= sets the node's permissions; update_period_us= reaches the page. */
TEST_F(mod, parameters_apply)
{
	struct perfclock_info info;
	struct stat st;
	int fd;

	SKIP_WITHOUT_KO();
	ASSERT_EQ(0, module_unload());
	ASSERT_EQ(0, module_load("mode=0400 update_period_us=5000"));
	ASSERT_EQ(0, stat(PC_DEVICE, &st));
	EXPECT_EQ(0400, st.st_mode & 07777);
	fd = pc_open(O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pc_info(fd, &info));
	EXPECT_EQ(5000000, info.update_period_ns);
	close(fd);
	ASSERT_EQ(0, module_unload());
	ASSERT_EQ(0, module_load(PC_TEST_MODULE_PARAMS));
}

/* A non-root user gets a read-only device when mode allows it, and no more. */
TEST_F(mod, unprivileged_access)
{
	pid_t pid;
	int status;

	SKIP_WITHOUT_KO();
	ASSERT_EQ(0, module_unload());
	ASSERT_EQ(0, module_load("mode=0440"));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* nobody, no group: 0440 root:root denies it. */
		if (setgid(65534) || setuid(65534))
			_exit(10);
		if (pc_open(O_RDONLY) >= 0 || errno != EACCES)
			_exit(1);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));

	ASSERT_EQ(0, module_unload());
	ASSERT_EQ(0, module_load(PC_TEST_MODULE_PARAMS));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd;

		if (setgid(65534) || setuid(65534))
			_exit(10);
		/* 0444: reading is allowed, writing is not. */
		if (pc_open(O_RDWR) >= 0 || errno != EACCES)
			_exit(2);
		fd = pc_open(O_RDONLY);
		if (fd < 0 || !pc_now(fd))
			_exit(3);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/*
 * Loaded with no parameters, the node is root's alone (the module's default
 * mode 0600): a user without the administrator's say cannot open it, so
 * cannot keep the page's timer and revalidation IPIs going.
 */
TEST_F(mod, default_mode_is_root_only)
{
	struct stat st;
	pid_t pid;
	int status;

	SKIP_WITHOUT_KO();
	ASSERT_EQ(0, module_unload());
	ASSERT_EQ(0, module_load(""));
	ASSERT_EQ(0, stat(PC_DEVICE, &st));
	EXPECT_EQ(0600, st.st_mode & 07777);
	EXPECT_EQ(0, st.st_uid);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(10);
		if (pc_open(O_RDONLY) >= 0 || errno != EACCES)
			_exit(1);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, module_unload());
	ASSERT_EQ(0, module_load(PC_TEST_MODULE_PARAMS));
}

/* Function-call IPIs so far, summed over CPUs (/proc/interrupts "CAL:"). */
static uint64_t cal_ipis(void)
{
	char line[4096], *p, *end;
	uint64_t sum = 0;
	FILE *f = fopen("/proc/interrupts", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		p = line + strspn(line, " ");
		if (strncmp(p, "CAL:", 4))
			continue;
		for (p += 4;; p = end) {
			unsigned long long v = strtoull(p, &end, 10);

			if (end == p)
				break;
			sum += v;
		}
	}
	fclose(f);
	return sum;
}

/*
 * As nobody, open and close path in a loop for secs seconds; the number
 * of opens, or a negative exit code of the child.
 */
static int64_t open_loop(const char *path, double secs)
{
	int pfd[2], status;
	uint64_t opens = 0;
	pid_t pid;

	if (pipe(pfd))
		return -1;
	pid = fork();
	if (pid < 0)
		return -2;
	if (pid == 0) {
		struct timespec t0, t;
		uint64_t n = 0;

		if (setgid(65534) || setuid(65534))
			_exit(10);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			int fd = open(path, O_RDONLY | O_CLOEXEC);

			if (fd < 0)
				_exit(11);
			close(fd);
			n++;
			clock_gettime(CLOCK_MONOTONIC, &t);
		} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) * 1e-9 < secs);
		if (write(pfd[1], &n, sizeof(n)) != sizeof(n))
			_exit(12);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || WEXITSTATUS(status) ||
	    read(pfd[0], &opens, sizeof(opens)) != sizeof(opens))
		opens = 0;
	close(pfd[0]);
	close(pfd[1]);
	return (int64_t)opens;
}

/*
 * With mode 0444 any user can open and close the device in a loop. Each
 * first open used to revalidate the clock on every CPU (an IPI to each,
 * brackets with irqs off); it may do so at most once a second. Measured
 * as IPIs per open beyond what an open and close of /dev/null costs, in
 * the same loop, as the same user: well under one, where every
 * revalidation costs one per other CPU.
 *
 * Why a control, not a rate with no opens: an open and close of any file
 * frees the struct file after a grace period (fs/file_table.c:
 * file_free(), call_rcu() in 6.1), and the grace periods that thousands
 * of opens a second ask for wake RCU's kthreads on other CPUs, some by
 * function-call IPI (kernel/sched/core.c: ttwu_queue_wakelist()). In a
 * starved debug guest with an unstable sched_clock that was 170 IPIs/s,
 * 0.147 per open, counted against the module by a baseline that opened
 * nothing. Those IPIs come per second of the loop, not per open: in ten
 * runs in the debug guest the /dev/null loop (2 100-2 700 opens/s) cost
 * 150-180 IPIs/s, and the device's loop the same 140-170 whether it
 * opened 2 500 times a second or, once, 392. So the control's rate is
 * taken off the loop's (the larger of it and the rate while the device
 * is held open and a child as busy spins on a cheap system call: RCU's
 * force-quiescent-state IPIs on a busy machine, kernel/rcu/tree.c:
 * rcu_implicit_dynticks_qs()), and what is left is divided by the
 * device's opens. A revalidation per open, one IPI to each other CPU,
 * is thousands a second beyond it.
 */
TEST_F(mod, unprivileged_open_loop_ipis)
{
	int cpus[CPU_SETSIZE], ncpus, status;
	uint64_t idle0, idle1, held0, held1, cal0, cal1, nul0, nul1;
	double idle_rate, held_rate, loop_rate, nul_rate, base_rate, per_open;
	const double secs = 2;
	int64_t opens, nul_opens;
	pid_t pid;
	int held;

	SKIP_WITHOUT_KO();
	ncpus = pc_cpus(cpus, CPU_SETSIZE);
	if (ncpus < 2)
		SKIP(return, "one CPU: no IPI to count");
	ASSERT_NE(0, cal_ipis() + 1);
	idle0 = cal_ipis();
	usleep(secs * 1e6);
	idle1 = cal_ipis();
	/*
	 * Open all along (which arms nothing since opens stopped arming
	 * the timer: perfclock_access_test.c), while a child as busy as the
	 * open loops below spins on a cheap system call.
	 */
	held = pc_open(O_RDONLY);
	ASSERT_LE(0, held);
	held0 = cal_ipis();
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct timespec t0, t;

		if (setgid(65534) || setuid(65534))
			_exit(10);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			getppid();
			clock_gettime(CLOCK_MONOTONIC, &t);
		} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) * 1e-9 < secs);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, WEXITSTATUS(status));
	held1 = cal_ipis();
	/* Closed again, so that the loop's opens are first opens. */
	close(held);

	/* The control: the same loop on a device that does nothing. */
	nul0 = cal_ipis();
	nul_opens = open_loop("/dev/null", secs);
	nul1 = cal_ipis();
	ASSERT_LT(50, nul_opens);

	cal0 = cal_ipis();
	opens = open_loop(PC_DEVICE, secs);
	cal1 = cal_ipis();
	ASSERT_LT(50, opens);

	idle_rate = (idle1 - idle0) / secs;
	held_rate = (held1 - held0) / secs;
	loop_rate = (cal1 - cal0) / secs;
	nul_rate = (nul1 - nul0) / secs;
	base_rate = nul_rate > held_rate ? nul_rate : held_rate;
	per_open = (loop_rate - base_rate) * secs / opens;
	TH_LOG("unprivileged open/close loop: %.0f opens/s, %.0f function-call IPIs/s; /dev/null's: %.0f opens/s, %.0f IPIs/s; held open, as busy: %.0f/s; closed, idle: %.0f/s; %.3f IPIs per open beyond the larger baseline; %d CPUs",
	       opens / secs, loop_rate, nul_opens / secs, nul_rate, held_rate,
	       idle_rate, per_open, ncpus);
	EXPECT_GT(0.1, per_open);
}

/*
 * A CPU that goes offline and comes back while the page is mapped: the
 * hotplug callback checks it, and the clock still works there, the page
 * agreeing with the ioctl on it.
 */
TEST_F(mod, cpu_hotplug_while_mapped)
{
	const struct perfclock_page *pg;
	int cpus[CPU_SETSIZE], n, cpu, fd, fast;
	char path[64];
	uint64_t p, io;

	SKIP_WITHOUT_KO();
	n = pc_cpus(cpus, CPU_SETSIZE);
	if (n < 2)
		SKIP(return, "needs two CPUs");
	cpu = cpus[n - 1];
	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	if (access(path, W_OK))
		SKIP(return, "cpu %d cannot be taken offline", cpu);

	fd = pc_open(O_RDONLY);
	ASSERT_LE(0, fd);
	pg = pc_map(fd);
	ASSERT_NE(NULL, pg);
	fast = pc_page_fast(pg);

	ASSERT_EQ(0, pc_write_file(path, "0"));
	ASSERT_EQ(0, pc_write_file(path, "1"));
	ASSERT_EQ(0, pc_pin(cpu));

	/* The stable regime stays stable: the TSC did not change. */
	EXPECT_EQ(fast, pc_page_fast(pg));
	if (fast) {
		ASSERT_EQ(0, pc_read_page(fd, pg, &p));
		ASSERT_EQ(0, pc_read_ioctl(fd, pg, &io));
		EXPECT_LE(p, io);
	}
	ASSERT_EQ(0, pc_read_ioctl(fd, pg, &io));
	EXPECT_NE(0, io);
	pc_unmap(pg);
	close(fd);
}

TEST_HARNESS_MAIN
