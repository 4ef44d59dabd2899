// SPDX-License-Identifier: GPL-2.0
/*
 * perfclock_bench: the cost of each way to read the clock, in one process
 * on one CPU, so that only ratios are compared (on shared machines and
 * under TCG, absolute figures mean little):
 *
 *   page      perfclock's page, TSC path (when the page offers it)
 *   ioctl     PERFCLOCK_IOC_GET_TIME
 *   ioctl-nop an unknown ioctl command: the VFS dispatch alone
 *   getppid   the cheapest syscall
 *   vdso      clock_gettime(CLOCK_MONOTONIC)
 *   perfpage  perf's own user page conversion (time_zero/mult/shift),
 *             when cap_user_time_zero
 *
 * Paths are interleaved over several rounds and the median round is
 * reported. Not a test: it asserts nothing, it prints a table.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "../module/perfclock_ioctl.h"
#include "../user/perfclock_page.h"

#define ROUNDS	7

static int dev_fd = -1;
static const struct perfclock_page *page;
static struct perf_event_mmap_page *perf_page;
static volatile uint64_t sink;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void read_page(void)
{
	uint64_t ns;

	if (perfclock_page_read_now(page, &ns))
		ns = 0;
	sink += ns;
}

static void read_ioctl(void)
{
	struct perfclock_time t;

	ioctl(dev_fd, PERFCLOCK_IOC_GET_TIME, &t);
	sink += t.ns;
}

/* An unknown command: the VFS's ioctl dispatch alone, the floor for any ioctl. */
static void read_ioctl_floor(void)
{
	sink += ioctl(dev_fd, _IO(PERFCLOCK_IOC_MAGIC, 0x0f), NULL);
}

static void read_getppid(void)
{
	sink += syscall(SYS_getppid);
}

static void read_vdso(void)
{
	sink += mono_ns();
}

/* perf's reader, as in tools/perf/util/tsc.c and perf_event.h's comment. */
static void read_perf_page(void)
{
	struct perf_event_mmap_page *pc = perf_page;
	uint64_t ns, tsc, quot, rem;
	uint32_t seq;

	do {
		seq = __atomic_load_n(&pc->lock, __ATOMIC_ACQUIRE);
		/* A correct reader rechecks: the kernel clears it if the TSC fails. */
		if (!pc->cap_user_time_zero)
			return;
		tsc = perfclock_rdtsc_ordered();
		quot = tsc >> pc->time_shift;
		rem = tsc & (((uint64_t)1 << pc->time_shift) - 1);
		ns = pc->time_zero + quot * pc->time_mult +
		     ((rem * pc->time_mult) >> pc->time_shift);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
	} while (__atomic_load_n(&pc->lock, __ATOMIC_RELAXED) != seq);
	sink += ns;
}

struct path {
	const char *name;
	void (*read)(void);
	long iters;
	int available;
	double ns[ROUNDS];
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(struct path *p)
{
	qsort(p->ns, ROUNDS, sizeof(p->ns[0]), cmp_double);
	return p->ns[ROUNDS / 2];
}

static int open_perf_page(void)
{
	struct perf_event_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	perf_page = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, fd, 0);
	if (perf_page == MAP_FAILED) {
		perf_page = NULL;
		return -errno;
	}
	return perf_page->cap_user_time_zero ? 0 : -EOPNOTSUPP;
}

int main(int argc, char **argv)
{
	struct path paths[] = {
		{ .name = "page", .read = read_page, .iters = 400000 },
		{ .name = "perfpage", .read = read_perf_page, .iters = 400000 },
		{ .name = "vdso", .read = read_vdso, .iters = 200000 },
		{ .name = "getppid", .read = read_getppid, .iters = 100000 },
		{ .name = "ioctl", .read = read_ioctl, .iters = 100000 },
		{ .name = "ioctl-nop", .read = read_ioctl_floor, .iters = 100000 },
	};
	const int npaths = sizeof(paths) / sizeof(paths[0]);
	const char *regime = argc > 1 ? argv[1] : "?";
	struct perfclock_info info;
	double page_ns, perf_ns, ioctl_ns, ppid_ns;
	cpu_set_t set;
	int i, r;


	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);

	dev_fd = open(PERFCLOCK_DEVICE_PATH, O_RDONLY | O_CLOEXEC);
	if (dev_fd < 0 || ioctl(dev_fd, PERFCLOCK_IOC_GET_INFO, &info)) {
		fprintf(stderr, "perfclock_bench: %s: %s\n", PERFCLOCK_DEVICE_PATH,
			strerror(errno));
		return 1;
	}
	page = mmap(NULL, info.page_size, PROT_READ, MAP_SHARED, dev_fd, 0);
	if (page == MAP_FAILED) {
		perror("perfclock_bench: mmap");
		return 1;
	}
	paths[0].available = !!(info.flags & PERFCLOCK_INFO_PAGE_TSC_VALID);
	paths[1].available = open_perf_page() == 0;
	for (i = 2; i < npaths; i++)
		paths[i].available = 1;

	/* Alternate the order, so that no path always runs first or last. */
	for (r = 0; r < ROUNDS; r++) {
		for (int j = 0; j < npaths; j++) {
			struct path *p = &paths[r & 1 ? npaths - 1 - j : j];
			uint64_t t0;
			long k;

			if (!p->available)
				continue;
			t0 = mono_ns();
			for (k = 0; k < p->iters; k++)
				p->read();
			p->ns[r] = (double)(mono_ns() - t0) / p->iters;
		}
	}

	printf("# regime %s: sched_clock %s, page fast path %s, perf cap_user_time_zero %s\n",
	       regime, info.flags & PERFCLOCK_INFO_SCHED_CLOCK_STABLE ? "stable" : "unstable",
	       paths[0].available ? "on" : "off", paths[1].available ? "yes" : "no");
	printf("%-10s %-10s %12s\n", "regime", "path", "ns/call");
	for (i = 0; i < npaths; i++) {
		if (paths[i].available)
			printf("%-10s %-10s %12.1f\n", regime, paths[i].name, median(&paths[i]));
		else
			printf("%-10s %-10s %12s\n", regime, paths[i].name, "n/a");
	}
	page_ns = paths[0].available ? paths[0].ns[ROUNDS / 2] : 0;
	perf_ns = paths[1].available ? paths[1].ns[ROUNDS / 2] : 0;
	ppid_ns = paths[3].ns[ROUNDS / 2];
	ioctl_ns = paths[4].ns[ROUNDS / 2];
	if (page_ns && perf_ns)
		printf("%-10s ratio page/perfpage = %.2f (target <= 1.10)\n", regime,
		       page_ns / perf_ns);
	printf("%-10s ratio ioctl/getppid = %.2f (target <= 1.50)\n", regime,
	       ioctl_ns / ppid_ns);
	printf("%-10s ratio ioctl-nop/getppid = %.2f (the VFS's share)\n", regime,
	       paths[5].ns[ROUNDS / 2] / ppid_ns);
	return 0;
}
