// SPDX-License-Identifier: GPL-2.0
/*
 * The ioctl ABI of /dev/perfclock: what GET_TIME and GET_INFO return,
 * and the errors for everything else. Built twice: native, and -m32 as
 * perfclock_ioctl_test_32 so that compat_ioctl gives the same answers.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "perfclock_util.h"

#define KNOWN_TIME_FLAGS	(PERFCLOCK_TIME_STABLE | PERFCLOCK_TIME_RESET_PENDING)
#define KNOWN_INFO_FLAGS	(PERFCLOCK_INFO_SCHED_CLOCK_STABLE | \
				 PERFCLOCK_INFO_PAGE_TSC_VALID | \
				 PERFCLOCK_INFO_HORIZON | \
				 PERFCLOCK_INFO_HORIZON_GENERATION | \
				 PERFCLOCK_INFO_SCHED_CLOCK_PARAVIRT | \
				 PERFCLOCK_INFO_UPDATES_ARMED | \
				 PERFCLOCK_INFO_COUNTERS | \
				 PERFCLOCK_INFO_SCHED_CLOCK_RESET_PROBE | \
				 PERFCLOCK_INFO_PERF_HORIZON_REFUSED | \
				 PERFCLOCK_INFO_TIME_RESET_FLAG)

FIXTURE(dev) {
	int fd;
	struct perfclock_info info;
};

FIXTURE_SETUP(dev)
{
	self->fd = pc_open(O_RDONLY);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", PC_DEVICE, strerror(errno));
	ASSERT_EQ(0, pc_info(self->fd, &self->info));
}

FIXTURE_TEARDOWN(dev)
{
	close(self->fd);
}

/* GET_INFO is versioned, self-consistent, and zeroes what it reserves. */
TEST_F(dev, info_fields)
{
	const struct perfclock_info *info = &self->info;
	size_t i;

	EXPECT_EQ(PERFCLOCK_ABI_VERSION, info->abi_version);
	EXPECT_EQ(PERFCLOCK_PAGE_VERSION, info->page_version);
	EXPECT_EQ((uint32_t)sysconf(_SC_PAGESIZE), info->page_size);
	EXPECT_EQ(0, info->flags & ~KNOWN_INFO_FLAGS);
	EXPECT_TRUE(info->flags & PERFCLOCK_INFO_HORIZON);
	EXPECT_TRUE(info->flags & PERFCLOCK_INFO_HORIZON_GENERATION);
	/* At least the load-time validation (perfclock_access_test.c says more). */
	EXPECT_TRUE(info->flags & PERFCLOCK_INFO_COUNTERS);
	EXPECT_LE(1, info->revalidations);
	for (i = 0; i < sizeof(info->reserved) / sizeof(info->reserved[0]); i++)
		EXPECT_EQ(0, info->reserved[i]);
	/* The module's default update_period_us=1000. */
	EXPECT_EQ(1000000, info->update_period_ns);

	if (info->flags & PERFCLOCK_INFO_SCHED_CLOCK_STABLE) {
		EXPECT_EQ(0, info->skew_estimate_ns);
		EXPECT_EQ(0, info->measured_skew_ns);
	} else {
		/*
		 * At least the two ticks of kernel/sched/clock.c's clamp
		 * (HZ <= 1000) plus the timer lateness seen so far.
		 */
		EXPECT_LE(2000000ULL + info->timer_lateness_ns, info->skew_estimate_ns);
		EXPECT_LE(info->measured_skew_ns, info->skew_estimate_ns);
	}
	/* The page's fast path is only offered where the clock is stable. */
	if (info->flags & PERFCLOCK_INFO_PAGE_TSC_VALID)
		EXPECT_TRUE(info->flags & PERFCLOCK_INFO_SCHED_CLOCK_STABLE);

	TH_LOG("regime: sched_clock %s, page fast path %s, skew bound %llu ns, measured %llu ns, timer lateness %llu ns",
	       info->flags & PERFCLOCK_INFO_SCHED_CLOCK_STABLE ? "stable" : "unstable",
	       info->flags & PERFCLOCK_INFO_PAGE_TSC_VALID ? "on" : "off",
	       (unsigned long long)info->skew_estimate_ns,
	       (unsigned long long)info->measured_skew_ns,
	       (unsigned long long)info->timer_lateness_ns);
}

/* GET_TIME reports the CPU it read on, and only known flags. */
TEST_F(dev, time_reports_cpu)
{
	int cpus[CPU_SETSIZE], n, i;

	n = pc_cpus(cpus, CPU_SETSIZE);
	ASSERT_LT(0, n);
	for (i = 0; i < n; i++) {
		struct perfclock_info before, after;
		struct perfclock_time t;

		memset(&t, 0xa5, sizeof(t));
		ASSERT_EQ(0, pc_pin(cpus[i]));
		ASSERT_EQ(0, pc_info(self->fd, &before));
		ASSERT_EQ(0, pc_time(self->fd, &t));
		ASSERT_EQ(0, pc_info(self->fd, &after));
		EXPECT_EQ((uint32_t)cpus[i], t.cpu);
		EXPECT_EQ(0, t.flags & ~KNOWN_TIME_FLAGS);
		EXPECT_NE(0, t.ns);
		/*
		 * The time's stable flag and the info's agree. The state
		 * can change (a revalidation from the workqueue), so the
		 * time is compared with GET_INFO read on both sides of it
		 * when those two agree.
		 */
		if ((before.flags ^ after.flags) & PERFCLOCK_INFO_SCHED_CLOCK_STABLE) {
			TH_LOG("cpu %d: the stable flag changed around GET_TIME", cpus[i]);
			continue;
		}
		EXPECT_EQ(!!(after.flags & PERFCLOCK_INFO_SCHED_CLOCK_STABLE),
			  !!(t.flags & PERFCLOCK_TIME_STABLE));
	}
}

/* Commands the device does not know: -ENOTTY, never anything else. */
TEST_F(dev, unknown_commands_enotty)
{
	unsigned char buf[256];
	const unsigned long cmds[] = {
		_IO(PERFCLOCK_IOC_MAGIC, 0x00),
		_IO(PERFCLOCK_IOC_MAGIC, 0x0f),
		_IOR(PERFCLOCK_IOC_MAGIC, 0x03, struct perfclock_time),
		/* The right number with the wrong size or direction. */
		_IOR(PERFCLOCK_IOC_MAGIC, 0x01, uint64_t),
		_IOW(PERFCLOCK_IOC_MAGIC, 0x01, struct perfclock_time),
		_IOWR(PERFCLOCK_IOC_MAGIC, 0x02, struct perfclock_info),
		_IOR('T', 0x01, struct perfclock_time),
		/*
		 * ABI 1's GET_TIME and GET_INFO, under the magic 0xB2 that
		 * is powerpc's since 6.8 (papr-vpd 00, papr-sysparm 01-02).
		 */
		_IOR(0xB2, 0x01, struct perfclock_time),
		_IOR(0xB2, 0x02, struct perfclock_info),
		0,
	};
	size_t i;

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		memset(buf, 0, sizeof(buf));
		EXPECT_EQ(-ENOTTY, pc_ioctl(self->fd, cmds[i], buf))
			TH_LOG("cmd %#lx", cmds[i]);
	}
}

/* Bad user pointers: -EFAULT, and the process lives on. */
TEST_F(dev, bad_pointers_efault)
{
	size_t page = sysconf(_SC_PAGESIZE);
	char *edge;
	void *ro, *gone;
	void *kernel = (void *)(uintptr_t)(sizeof(void *) == 8 ?
			0xffffffff81000000ULL : 0xc1000000UL);

	ro = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	gone = mmap(NULL, page, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, gone);
	ASSERT_EQ(0, munmap(gone, page));

	EXPECT_EQ(-EFAULT, pc_ioctl(self->fd, PERFCLOCK_IOC_GET_TIME, NULL));
	EXPECT_EQ(-EFAULT, pc_ioctl(self->fd, PERFCLOCK_IOC_GET_TIME, ro));
	EXPECT_EQ(-EFAULT, pc_ioctl(self->fd, PERFCLOCK_IOC_GET_TIME, gone));
	EXPECT_EQ(-EFAULT, pc_ioctl(self->fd, PERFCLOCK_IOC_GET_TIME, kernel));
	EXPECT_EQ(-EFAULT, pc_ioctl(self->fd, PERFCLOCK_IOC_GET_INFO, NULL));
	EXPECT_EQ(-EFAULT, pc_ioctl(self->fd, PERFCLOCK_IOC_GET_INFO, ro));
	EXPECT_EQ(-EFAULT, pc_ioctl(self->fd, PERFCLOCK_IOC_GET_INFO, kernel));
	/* A struct that straddles into an unmapped page faults too. */
	edge = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, edge);
	ASSERT_EQ(0, munmap(edge + page, page));
	EXPECT_EQ(-EFAULT, pc_ioctl(self->fd, PERFCLOCK_IOC_GET_TIME,
				    edge + page - 8));
	munmap(edge, page);
	munmap(ro, page);
}

/* A misaligned but valid buffer is fine: the ABI has no alignment rule. */
TEST_F(dev, misaligned_buffer_ok)
{
	unsigned char buf[sizeof(struct perfclock_time) + 1];
	struct perfclock_time t;

	ASSERT_EQ(0, pc_ioctl(self->fd, PERFCLOCK_IOC_GET_TIME, buf + 1));
	memcpy(&t, buf + 1, sizeof(t));
	EXPECT_NE(0, t.ns);
}

/* read() and write() are not part of the interface: -EINVAL. */
TEST_F(dev, read_write_einval)
{
	char buf[16];
	int rw;

	EXPECT_EQ(-1, read(self->fd, buf, sizeof(buf)));
	EXPECT_EQ(EINVAL, errno);

	/* Root may open it read-write; writing still fails cleanly. */
	rw = pc_open(O_RDWR);
	if (rw < 0)
		SKIP(return, "cannot open %s read-write: %s", PC_DEVICE,
		     strerror(errno));
	EXPECT_EQ(-1, write(rw, buf, sizeof(buf)));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, read(rw, buf, sizeof(buf)));
	EXPECT_EQ(EINVAL, errno);
	close(rw);
}

/*
 * The device node has the mode the module's "mode" parameter asks for
 * (devtmpfs; no udev rule in the test guests changes it), not a mode
 * written into the test: the default is the packages' and the
 * administrator's to choose (packaging/udev/60-perfclock.rules).
 */
TEST(device_node_mode)
{
	struct stat st;
	unsigned int mode;
	FILE *f;

	ASSERT_EQ(0, stat(PC_DEVICE, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	f = fopen("/sys/module/perfclock/parameters/mode", "r");
	if (!f)
		SKIP(return, "no mode parameter to compare with: %s", strerror(errno));
	ASSERT_EQ(1, fscanf(f, "%u", &mode));
	fclose(f);
	TH_LOG("mode parameter %#o, node %#o", mode, st.st_mode & 07777);
	EXPECT_EQ(mode, st.st_mode & 07777);
}

TEST_HARNESS_MAIN
