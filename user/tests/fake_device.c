// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The fake /dev/perfclock of test_device (see test_device.c): the test is
 * linked with -Wl,--wrap=ioctl,--wrap=mmap,--wrap=munmap,--wrap=open so
 * that the library's own code runs unchanged against a real character
 * device, /dev/null, whose ioctl and mmap are answered here per the UAPI,
 * and with --wrap=malloc,realloc,calloc to count (and fail) allocations.
 * The fake clock is the TSC itself (page: mult = 1 << shift, offset 0;
 * ioctl: rdtsc), so page and ioctl reads are comparable.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "perfclock_page.h"
#include "fake_device.h"

struct perfclock_page page __attribute__((aligned(4096)));
struct perfclock_info fake_info;
int fake_fd = -1;
int fail_info_errno, fail_mmap;
/* An ABI-1 module: GET_INFO only under the old magic 0xB2. */
int fake_abi1;
unsigned long n_get_time, n_get_info, n_mmap, n_munmap;
/* GET_HORIZON: the errno to fail with, or the answer and what was asked. */
int hz_errno;
uint64_t hz_answer;
uint32_t hz_answer_gen;
struct perfclock_horizon hz_asked;
unsigned long n_get_horizon;
/* open("/dev/perfclock"): the fake (/dev/null) if set, else ENOENT. */
int devnode_present;
/* GET_TIME: bump the page's horizon generation while it reads. */
int time_bumps_gen;

int __real_ioctl(int fd, unsigned long req, ...);
int __wrap_ioctl(int fd, unsigned long req, ...);
void *__real_mmap(void *a, size_t l, int p, int f, int fd, off_t o);
void *__wrap_mmap(void *a, size_t l, int p, int f, int fd, off_t o);
int __real_munmap(void *a, size_t l);
int __wrap_munmap(void *a, size_t l);
int __real_open(const char *path, int flags, ...);
int __wrap_open(const char *path, int flags, ...);
/* Allocation counting, for the steady-state test (library calls only). */
void *__real_malloc(size_t n);
void *__wrap_malloc(size_t n);
void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);
void *__real_calloc(size_t a, size_t b);
void *__wrap_calloc(size_t a, size_t b);
unsigned long n_alloc;
int fail_alloc;	/* malloc and realloc fail: ENOMEM paths */

void *__wrap_malloc(size_t n)
{
	n_alloc++;
	if (fail_alloc) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_malloc(n);
}

void *__wrap_realloc(void *p, size_t n)
{
	n_alloc++;
	if (fail_alloc) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_realloc(p, n);
}

void *__wrap_calloc(size_t a, size_t b)
{
	n_alloc++;
	return __real_calloc(a, b);
}

static int is_fake(int fd)
{
	char path[64], target[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return 0;
	target[n] = 0;
	return fake_fd >= 0 && !strcmp(target, "/dev/null");
}

static int fake_ioctl(unsigned long req, void *arg);

/* One caller at a time in the fake: test_horizon_tsan calls from threads. */
static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;

int __wrap_ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;
	int ret;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (!is_fake(fd))
		return __real_ioctl(fd, req, arg);
	pthread_mutex_lock(&fake_lock);
	ret = fake_ioctl(req, arg);
	pthread_mutex_unlock(&fake_lock);
	return ret;
}

static int fake_ioctl(unsigned long req, void *arg)
{
	if (fake_abi1) {
		struct perfclock_info old = fake_info;

		if (req != _IOR(0xB2, 0x02, struct perfclock_info)) {
			errno = ENOTTY;
			return -1;
		}
		old.abi_version = 1;
		memcpy(arg, &old, sizeof(old));
		return 0;
	}
	if (req == PERFCLOCK_IOC_GET_INFO) {
		n_get_info++;
		if (fail_info_errno) {
			errno = fail_info_errno;
			return -1;
		}
		memcpy(arg, &fake_info, sizeof(fake_info));
		return 0;
	}
	if (req == PERFCLOCK_IOC_GET_HORIZON) {
		struct perfclock_horizon *h = arg;

		n_get_horizon++;
		hz_asked = *h;
		if (hz_errno) {
			errno = hz_errno;
			return -1;
		}
		h->ns = hz_answer;
		h->wait_ns = 1000;
		h->generation = hz_answer_gen;
		return 0;
	}
	if (req == PERFCLOCK_IOC_GET_TIME) {
		struct perfclock_time t = { perfclock_rdtsc_ordered(), 0, 0 };
		int cpu = sched_getcpu();

		/* As the module: the CPU the read was taken on. */
		t.cpu = cpu < 0 ? 0 : (uint32_t)cpu;
		if (time_bumps_gen) {
			page.seq++;
			page.horizon_generation++;
			page.seq++;
		}
		n_get_time++;
		memcpy(arg, &t, sizeof(t));
		return 0;
	}
	errno = ENOTTY;
	return -1;
}

void *__wrap_mmap(void *a, size_t l, int p, int f, int fd, off_t o)
{
	if (!is_fake(fd))
		return __real_mmap(a, l, p, f, fd, o);
	n_mmap++;
	if (fail_mmap || o != 0 || l != 4096 || (p & PROT_WRITE)) {
		errno = EINVAL;
		return MAP_FAILED;
	}
	return &page;
}

int __wrap_open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;

	if (flags & O_CREAT) {
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	if (!strcmp(path, PERFCLOCK_DEVICE_PATH)) {
		if (!devnode_present) {
			errno = ENOENT;
			return -1;
		}
		path = "/dev/null";
	}
	return __real_open(path, flags, mode);
}

int __wrap_munmap(void *a, size_t l)
{
	if (a == (void *)&page) {
		n_munmap++;
		return 0;
	}
	return __real_munmap(a, l);
}

void fake_reset(void)
{
	memset(&fake_info, 0, sizeof(fake_info));
	fake_info.abi_version = PERFCLOCK_ABI_VERSION;
	fake_info.page_version = PERFCLOCK_PAGE_VERSION;
	fake_info.page_size = 4096;
	fake_info.skew_estimate_ns = 1000;
	fake_info.update_period_ns = 1000000;
	fake_info.flags = PERFCLOCK_INFO_PAGE_TSC_VALID;
	memset(&page, 0, sizeof(page));
	page.seq = 2;
	page.version = PERFCLOCK_PAGE_VERSION;
	page.flags = PERFCLOCK_PAGE_TSC_VALID;
	page.tsc_shift = 10;
	page.tsc_mult = 1u << 10;
	page.tsc_offset = 0;
	page.coarse_ns = 5000000;
	page.skew_estimate_ns = 1000;
	fail_info_errno = fail_mmap = 0;
	hz_errno = 0;
	hz_answer = 0;
	hz_answer_gen = 0;
	devnode_present = 0;
	time_bumps_gen = 0;
	fake_fd = 1;
}


int count_fds(void)
{
	int n = 0, fd;

	for (fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) != -1;
	return n;
}
