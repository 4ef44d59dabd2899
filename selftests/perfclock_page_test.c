// SPDX-License-Identifier: GPL-2.0
/*
 * The clock page of /dev/perfclock: the mapping rules (one read-only page
 * at offset 0, for its whole life), what the page says, and that what it
 * says agrees with the ioctl.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "perfclock_util.h"

/* The page may lag the clock by the module's tolerance; the issue asks 1 us. */
#define PAGE_IOCTL_TOLERANCE_NS	1000

FIXTURE(page) {
	int fd;
	size_t size;
	struct perfclock_info info;
	const struct perfclock_page *pg;
};

FIXTURE_SETUP(page)
{
	self->size = sysconf(_SC_PAGESIZE);
	self->fd = pc_open(O_RDONLY);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", PC_DEVICE, strerror(errno));
	ASSERT_EQ(0, pc_info(self->fd, &self->info));
	self->pg = pc_map(self->fd);
	ASSERT_NE(NULL, self->pg) TH_LOG("mmap: %s", strerror(errno));
}

FIXTURE_TEARDOWN(page)
{
	if (self->pg)
		pc_unmap(self->pg);
	close(self->fd);
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000 };

	nanosleep(&ts, NULL);
}

/* The page mirrors GET_INFO and is zero where it reserves space. */
TEST_F(page, header_matches_info)
{
	struct perfclock_page_sample s;
	size_t i;
	struct perfclock_info after;
	uint64_t skew;

	ASSERT_EQ(0, perfclock_page_sample(self->pg, &s));
	skew = self->pg->skew_bound_ns;
	ASSERT_EQ(0, pc_info(self->fd, &after));
	EXPECT_EQ(PERFCLOCK_PAGE_VERSION, self->pg->version);
	/* The bound only grows (with timer lateness): the page's lies between. */
	EXPECT_LE(self->info.skew_bound_ns, skew);
	EXPECT_LE(skew, after.skew_bound_ns);
	EXPECT_EQ(self->info.update_period_ns, self->pg->update_period_ns);
	EXPECT_EQ(!!(self->info.flags & PERFCLOCK_INFO_PAGE_TSC_VALID),
		  !!(s.flags & PERFCLOCK_PAGE_TSC_VALID));
	EXPECT_EQ(!!(self->info.flags & PERFCLOCK_INFO_SCHED_CLOCK_STABLE),
		  !!(s.flags & PERFCLOCK_PAGE_SCHED_CLOCK_STABLE));
	EXPECT_EQ(0, self->pg->__reserved0);
	for (i = 0; i < sizeof(self->pg->__reserved) / 8; i++)
		ASSERT_EQ(0, self->pg->__reserved[i]) TH_LOG("reserved[%zu]", i);
	if (!(s.flags & PERFCLOCK_PAGE_TSC_VALID))
		TH_LOG("page offers no current time in this regime: readers use the ioctl");
}

/* Writable mappings are refused, whatever the open mode and sharing. */
TEST_F(page, write_mappings_refused)
{
	int rw = pc_open(O_RDWR);
	void *p;

	/* A read-only file can't be mapped shared-writable (the VFS says so). */
	p = mmap(NULL, self->size, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EACCES, errno);

	ASSERT_LE(0, rw) TH_LOG("root opens read-write: %s", strerror(errno));
	/* With a read-write file, it is the module that refuses. */
	p = mmap(NULL, self->size, PROT_READ | PROT_WRITE, MAP_SHARED, rw, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	p = mmap(NULL, self->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, rw, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	p = mmap(NULL, self->size, PROT_WRITE, MAP_SHARED, rw, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	close(rw);
}

TEST_F(page, exec_mapping_refused)
{
	void *p = mmap(NULL, self->size, PROT_READ | PROT_EXEC, MAP_SHARED,
		       self->fd, 0);

	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
}

/* Exactly one page, at offset 0. */
TEST_F(page, bad_length_and_offset_einval)
{
	void *p;

	p = mmap(NULL, 2 * self->size, PROT_READ, MAP_SHARED, self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, self->size, PROT_READ, MAP_SHARED, self->fd, self->size);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, self->size, PROT_READ, MAP_SHARED, self->fd, 16 * self->size);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	/* A private read-only mapping of the one page is allowed. */
	p = mmap(NULL, self->size, PROT_READ, MAP_PRIVATE, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(PERFCLOCK_PAGE_VERSION, ((struct perfclock_page *)p)->version);
	munmap(p, self->size);
}

/* VM_MAYWRITE/VM_MAYEXEC are gone: mprotect can't add them back. */
TEST_F(page, mprotect_refused)
{
	EXPECT_EQ(-1, mprotect((void *)self->pg, self->size, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-1, mprotect((void *)self->pg, self->size, PROT_READ | PROT_EXEC));
	EXPECT_EQ(EACCES, errno);
	/* Still readable afterwards. */
	EXPECT_EQ(PERFCLOCK_PAGE_VERSION, self->pg->version);
}

/* VM_DONTEXPAND: the mapping can't be grown into a second page. */
TEST_F(page, mremap_grow_refused)
{
	void *p = mremap((void *)self->pg, self->size, 2 * self->size,
			 MREMAP_MAYMOVE);

	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(PERFCLOCK_PAGE_VERSION, self->pg->version);
}

/* MADV_DONTNEED drops the PTE; the next read faults the page back in. */
TEST_F(page, dontneed_then_read)
{
	ASSERT_EQ(0, madvise((void *)self->pg, self->size, MADV_DONTNEED));
	EXPECT_EQ(PERFCLOCK_PAGE_VERSION, self->pg->version);
	EXPECT_NE(0, self->pg->update_count);
}

/* coarse_ns is a lower bound of the clock, and it moves. */
TEST_F(page, coarse_is_fresh_lower_bound)
{
	struct perfclock_page_sample s1, s2;
	uint64_t before, after, skew = self->info.skew_bound_ns;
	uint64_t count;

	ASSERT_EQ(0, perfclock_page_sample(self->pg, &s1));
	after = pc_now(self->fd);
	EXPECT_LE(s1.coarse_ns, after + skew);

	before = pc_now(self->fd);
	count = self->pg->update_count;
	/* Ten periods: the timer fires at least once even under TCG. */
	sleep_ns(10 * self->info.update_period_ns);
	ASSERT_EQ(0, perfclock_page_sample(self->pg, &s2));
	after = pc_now(self->fd);
	/* The bound may have grown meanwhile (timer lateness): use today's. */
	skew = self->pg->skew_bound_ns;
	/* Refreshed since 'before' was read... */
	EXPECT_LE(before, s2.coarse_ns + skew);
	EXPECT_LT(count, self->pg->update_count);
	/* ...and still not ahead of now. */
	EXPECT_LE(s2.coarse_ns, after + skew);
}

/* Where the page gives the time, it agrees with the ioctl on every CPU. */
TEST_F(page, page_matches_ioctl)
{
	int cpus[CPU_SETSIZE], n, i, k;
	uint64_t worst_lag = 0;

	if (!pc_page_fast(self->pg))
		SKIP(return, "page offers no current time in this regime");
	n = pc_cpus(cpus, CPU_SETSIZE);
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, pc_pin(cpus[i]));
		for (k = 0; k < 1000; k++) {
			uint64_t p1, p2, io;

			ASSERT_EQ(0, pc_read_page(self->fd, self->pg, &p1));
			io = pc_now(self->fd);
			ASSERT_EQ(0, pc_read_page(self->fd, self->pg, &p2));
			/* Never ahead of the exact clock... */
			ASSERT_LE(p1, io) TH_LOG("cpu %d: page %llu > ioctl %llu", cpus[i],
						 (unsigned long long)p1, (unsigned long long)io);
			/* ...and at most the tolerance behind it. */
			ASSERT_LE(io, p2 + PAGE_IOCTL_TOLERANCE_NS)
				TH_LOG("cpu %d: ioctl %llu, page after %llu", cpus[i],
				       (unsigned long long)io, (unsigned long long)p2);
			if (io > p2 && io - p2 > worst_lag)
				worst_lag = io - p2;
		}
	}
	TH_LOG("worst page lag behind an earlier ioctl: %llu ns",
	       (unsigned long long)worst_lag);
}

/* The mapping keeps the device alive after close(): the page still updates. */
TEST_F(page, close_then_read)
{
	uint64_t count;

	close(self->fd);
	self->fd = -1;
	count = self->pg->update_count;
	sleep_ns(10 * self->info.update_period_ns);
	EXPECT_LT(count, self->pg->update_count);
	EXPECT_EQ(PERFCLOCK_PAGE_VERSION, self->pg->version);
}

/* A child inherits a working mapping and file across fork(). */
TEST_F(page, fork_inherits)
{
	pid_t pid = fork();
	int status;

	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct perfclock_page_sample s;
		uint64_t count = self->pg->update_count, now;

		sleep_ns(10 * self->info.update_period_ns);
		if (self->pg->update_count <= count)
			_exit(1);
		if (perfclock_page_sample(self->pg, &s))
			_exit(2);
		now = pc_now(self->fd);
		if (!now || s.coarse_ns > now + self->info.skew_bound_ns)
			_exit(3);
		if ((s.flags & PERFCLOCK_PAGE_TSC_VALID) && s.now_ns > now)
			_exit(4);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
