/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the perfclock selftests and the stress tester: the
 * device, the page, CPU pinning, a perf ring that records PERF_RECORD_COMM
 * timestamps, the readers of each path, and the measure of a cross-CPU
 * step, by which the clock contract (stated in perfclock_clock_test.c) is
 * judged.
 */
#ifndef PERFCLOCK_SELFTEST_UTIL_H
#define PERFCLOCK_SELFTEST_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "../module/perfclock_ioctl.h"
#include "../user/perfclock_page.h"

#define PC_DEVICE	PERFCLOCK_DEVICE_PATH

/*
 * The parameters the guest payloads load the module with (selftests/run.sh
 * and the other loaders under selftests/ and scripts/guest/): the module's
 * own default mode is 0600, root only, and the tests' unprivileged users
 * (nobody, uid 65534) must be able to open the device. A test that
 * reloads the module loads it with these again.
 */
#define PC_TEST_MODULE_PARAMS	"mode=0444"

static inline int pc_open(int flags)
{
	return open(PC_DEVICE, flags | O_CLOEXEC);
}

/* ioctl(2) result as 0 or -errno. */
static inline int pc_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

static inline int pc_time(int fd, struct perfclock_time *t)
{
	return pc_ioctl(fd, PERFCLOCK_IOC_GET_TIME, t);
}

static inline uint64_t pc_now(int fd)
{
	struct perfclock_time t;

	if (pc_time(fd, &t))
		return 0;
	return t.ns;
}

static inline int pc_info(int fd, struct perfclock_info *info)
{
	return pc_ioctl(fd, PERFCLOCK_IOC_GET_INFO, info);
}

static inline const struct perfclock_page *pc_map(int fd)
{
	void *p = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED,
		       fd, 0);

	return p == MAP_FAILED ? NULL : (const struct perfclock_page *)p;
}

static inline void pc_unmap(const struct perfclock_page *pg)
{
	munmap((void *)pg, sysconf(_SC_PAGESIZE));
}

/* The page offers the current time (checked through the page itself). */
static inline int pc_page_fast(const struct perfclock_page *pg)
{
	uint64_t ns;

	return perfclock_page_read_now(pg, &ns) == 0;
}

static inline int pc_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

/* Write a string to a sysfs file: 0 or -errno. */
static inline int pc_write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -errno;
}

/* The CPUs this process may run on: every online CPU in the guest. */
static inline int pc_cpus(int *cpus, int max)
{
	cpu_set_t set;
	int cpu, n = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -errno;
	for (cpu = 0; cpu < CPU_SETSIZE && n < max; cpu++)
		if (CPU_ISSET(cpu, &set))
			cpus[n++] = cpu;
	return n;
}

/* A perf event with its ring: one header page and @pages data pages. */
struct pc_comm_ring {
	int fd;
	void *base;
	size_t data_size;
};

#define PC_RING_PAGES	16

static inline int pc_ring_open(struct pc_comm_ring *r,
			       struct perf_event_attr *attr, pid_t pid, int cpu,
			       size_t pages)
{
	size_t page = sysconf(_SC_PAGESIZE);

	attr->size = sizeof(*attr);
	r->fd = syscall(SYS_perf_event_open, attr, pid, cpu, -1,
			PERF_FLAG_FD_CLOEXEC);
	if (r->fd < 0)
		return -errno;
	r->data_size = pages * page;
	r->base = mmap(NULL, page + r->data_size, PROT_READ | PROT_WRITE,
		       MAP_SHARED, r->fd, 0);
	if (r->base == MAP_FAILED) {
		int err = -errno;

		close(r->fd);
		return err;
	}
	return 0;
}

static inline void pc_ring_close(struct pc_comm_ring *r)
{
	munmap(r->base, sysconf(_SC_PAGESIZE) + r->data_size);
	close(r->fd);
}

/*
 * A PERF_COUNT_SW_DUMMY event on this thread that records
 * PERF_RECORD_COMM (prctl(PR_SET_NAME) makes one) with the sample time,
 * stamped by perf_clock() unless @clockid >= 0 asks for use_clockid.
 */
static inline int pc_comm_ring_open(struct pc_comm_ring *r, int clockid)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.comm = 1;
	attr.sample_id_all = 1;
	attr.sample_type = PERF_SAMPLE_TIME;
	if (clockid >= 0) {
		attr.use_clockid = 1;
		attr.clockid = clockid;
	}
	return pc_ring_open(r, &attr, 0, -1, PC_RING_PAGES);
}

static inline void pc_comm_ring_close(struct pc_comm_ring *r)
{
	pc_ring_close(r);
}

/*
 * Copy out the timestamps of the COMM records in the ring, in ring order,
 * and consume them. Returns how many, or -EIO on a malformed ring.
 */
static inline int pc_comm_ring_drain(struct pc_comm_ring *r, uint64_t *ts,
				     int max)
{
	struct perf_event_mmap_page *meta = r->base;
	const unsigned char *data = (const unsigned char *)r->base +
				    sysconf(_SC_PAGESIZE);
	uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = meta->data_tail;
	unsigned char rec[512];
	int n = 0;

	while (tail < head) {
		struct perf_event_header hdr;
		size_t i;

		for (i = 0; i < sizeof(hdr); i++)
			((unsigned char *)&hdr)[i] =
				data[(tail + i) % r->data_size];
		if (hdr.size < sizeof(hdr) + 8 || hdr.size > sizeof(rec) ||
		    tail + hdr.size > head)
			return -EIO;
		for (i = 0; i < hdr.size; i++)
			rec[i] = data[(tail + i) % r->data_size];
		if (hdr.type == PERF_RECORD_COMM && n < max)
			memcpy(&ts[n++], rec + hdr.size - 8, 8);
		tail += hdr.size;
	}
	__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
	return n;
}

/* A read of the clock by one path, as 0 or -errno. */
typedef int (*pc_reader_fn)(int fd, const struct perfclock_page *pg,
			    uint64_t *ns);

static inline int pc_read_ioctl(int fd, const struct perfclock_page *pg,
				uint64_t *ns)
{
	struct perfclock_time t;
	int err = pc_time(fd, &t);

	(void)pg;
	if (!err)
		*ns = t.ns;
	return err;
}

/*
 * @call's value: its first other than -EAGAIN, or -EAGAIN after @tries
 * calls, yielding the CPU between two.
 */
#define pc_ask_again(tries, call) ({					\
	int __err = -EAGAIN, __k;					\
									\
	for (__k = 0; __k < (tries) && __err == -EAGAIN; __k++) {	\
		if (__k)						\
			sched_yield();					\
		__err = (call);						\
	}								\
	__err;								\
})

/*
 * The page path alone. Under TCG the writer's vCPU can be descheduled
 * mid-update, and a reader then gives up with -EAGAIN (the library falls
 * back to the ioctl); a test of the page path retries the page instead.
 */
static inline int pc_read_page(int fd, const struct perfclock_page *pg,
			       uint64_t *ns)
{
	(void)fd;
	return pc_ask_again(1000, perfclock_page_read_now(pg, ns));
}

/* How far @mine, read after @seen was observed, is below it (0: not). */
static inline uint64_t pc_step_back(uint64_t seen, uint64_t mine)
{
	return seen > mine ? seen - mine : 0;
}

#endif /* PERFCLOCK_SELFTEST_UTIL_H */
