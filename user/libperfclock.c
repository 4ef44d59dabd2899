// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libperfclock: the clock. Module backend (/dev/perfclock: page fast path,
 * ioctl fallback) and clock_gettime backend (events opened use_clockid).
 *
 * A struct perfclock never changes after perfclock_open*() returns (the
 * page is the kernel's, read with the seq protocol), so reads from any
 * number of threads need no lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "perfclock_page.h"
#include "internal.h"

struct perfclock {
	enum perfclock_backend backend;
	int fd;				/* device; -1 for clockid */
	clockid_t clockid;		/* clockid backend */
	clockid_t coarse_clockid;	/* lower bound; == clockid if none */
	const struct perfclock_page *page;	/* NULL if not mapped */
	size_t page_len;
	struct perfclock_info info;	/* device, as read at open */
};

static int clockid_supported(int clockid, clockid_t *coarse, uint32_t *flags)
{
	switch (clockid) {
	case CLOCK_MONOTONIC:
		*coarse = CLOCK_MONOTONIC_COARSE;
		*flags = 0;
		return 1;
	case CLOCK_REALTIME:
		*coarse = CLOCK_REALTIME_COARSE;
		*flags = PERFCLOCK_CLOCK_SETTABLE;
		return 1;
	case CLOCK_TAI:
		*coarse = CLOCK_TAI;
		*flags = PERFCLOCK_CLOCK_SETTABLE;
		return 1;
	case CLOCK_MONOTONIC_RAW:
	case CLOCK_BOOTTIME:
		*coarse = clockid;
		*flags = 0;
		return 1;
	}
	return 0;
}

PERFCLOCK_API struct perfclock *perfclock_open_clockid(int clockid)
{
	struct perfclock *clk;
	struct timespec ts;
	clockid_t coarse;
	uint32_t flags;

	if (!clockid_supported(clockid, &coarse, &flags) ||
	    clock_gettime(clockid, &ts)) {
		errno = EINVAL;
		return NULL;
	}
	/* A coarse clock the kernel refuses: use the exact one instead. */
	if (coarse != clockid && clock_gettime(coarse, &ts))
		coarse = clockid;

	clk = calloc(1, sizeof(*clk));
	if (!clk)
		return NULL;
	clk->backend = PERFCLOCK_BACKEND_CLOCKID;
	clk->fd = -1;
	clk->clockid = clockid;
	clk->coarse_clockid = coarse;
	return clk;
}

static int get_info(int fd, struct perfclock_info *info)
{
	memset(info, 0, sizeof(*info));
	if (ioctl(fd, PERFCLOCK_IOC_GET_INFO, info))
		return -errno;
	return 0;
}

PERFCLOCK_API struct perfclock *perfclock_open(const char *path)
{
	struct perfclock *clk;
	struct stat st;
	long pagesz;
	void *page;
	int fd, err;

	if (!path)
		path = PERFCLOCK_DEVICE_PATH;
	/* O_NONBLOCK: a FIFO given by mistake must not block the open. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return NULL;

	clk = calloc(1, sizeof(*clk));
	if (!clk) {
		err = -ENOMEM;
		goto err_close;
	}
	clk->backend = PERFCLOCK_BACKEND_DEVICE;
	clk->fd = fd;
	clk->clockid = -1;
	clk->coarse_clockid = -1;

	/* Anything but a character device cannot be ours. */
	if (fstat(fd, &st) || !S_ISCHR(st.st_mode)) {
		err = -ENOTTY;
		goto err_free;
	}
	err = get_info(fd, &clk->info);
	if (err) {
		/* ENOTTY from other drivers; EINVAL from some old ones. */
		if (err == -EINVAL || err == -ENOTTY || err == -EOPNOTSUPP)
			err = -ENOTTY;
		goto err_free;
	}
	if (clk->info.abi_version != PERFCLOCK_ABI_VERSION) {
		err = -EPROTO;
		goto err_free;
	}

	/*
	 * The page is an optimisation: a version we do not know, an odd
	 * size or a failed mmap leave us on the ioctl, which is exact.
	 */
	pagesz = sysconf(_SC_PAGESIZE);
	if (clk->info.page_version == PERFCLOCK_PAGE_VERSION &&
	    clk->info.page_size >= sizeof(struct perfclock_page) &&
	    pagesz > 0 && clk->info.page_size % (unsigned long)pagesz == 0) {
		page = mmap(NULL, clk->info.page_size, PROT_READ, MAP_SHARED,
			    fd, 0);
		if (page != MAP_FAILED) {
			clk->page = page;
			clk->page_len = clk->info.page_size;
		}
	}
	return clk;

err_free:
	free(clk);
err_close:
	close(fd);
	errno = -err;
	return NULL;
}

PERFCLOCK_API void perfclock_close(struct perfclock *clk)
{
	if (!clk)
		return;
	if (clk->page)
		munmap((void *)clk->page, clk->page_len);
	if (clk->fd >= 0)
		close(clk->fd);
	free(clk);
}

static int clockid_read(clockid_t id, uint64_t *ns)
{
	struct timespec ts;

	if (clock_gettime(id, &ts))
		return -errno;
	*ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	return 0;
}

PERFCLOCK_API int perfclock_read_ioctl(struct perfclock *clk, uint64_t *ns)
{
	struct perfclock_time t;

	if (!clk || !ns)
		return -EINVAL;
	if (clk->backend != PERFCLOCK_BACKEND_DEVICE)
		return -EOPNOTSUPP;
	memset(&t, 0, sizeof(t));
	if (ioctl(clk->fd, PERFCLOCK_IOC_GET_TIME, &t))
		return -errno;
	*ns = t.ns;
	return 0;
}

PERFCLOCK_API int perfclock_read(struct perfclock *clk, uint64_t *ns)
{
	if (!clk || !ns)
		return -EINVAL;
	if (clk->backend == PERFCLOCK_BACKEND_CLOCKID)
		return clockid_read(clk->clockid, ns);
#if defined(__x86_64__) || defined(__i386__)
	/* Fast path: no syscall, no allocation, bounded retries. */
	if (clk->page && perfclock_page_read_now(clk->page, ns) == 0)
		return 0;
#endif
	return perfclock_read_ioctl(clk, ns);
}

static uint64_t sub_sat(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/*
 * The skew bound can grow after open (sched_clock marked unstable at run
 * time): take the larger of the value read at open and the page's
 * current one. An aligned 64-bit load; no seq loop needed for a value
 * that is only ever compared.
 */
static uint64_t skew_bound(const struct perfclock *clk)
{
	uint64_t b = clk->info.skew_bound_ns, p;

	if (clk->page) {
		p = __atomic_load_n(&clk->page->skew_bound_ns,
				    __ATOMIC_RELAXED);
		if (p > b)
			b = p;
	}
	return b;
}

PERFCLOCK_API int perfclock_read_lower_bound(struct perfclock *clk,
					     uint64_t *ns)
{
	struct perfclock_page_sample s;
	uint64_t v;
	int err;

	if (!clk || !ns)
		return -EINVAL;
	if (clk->backend == PERFCLOCK_BACKEND_CLOCKID)
		return clockid_read(clk->coarse_clockid, ns);

	if (clk->page && perfclock_page_sample(clk->page, &s) == 0) {
		v = s.coarse_ns;
#if defined(__x86_64__) || defined(__i386__)
		if ((s.flags & PERFCLOCK_PAGE_TSC_VALID) && s.now_ns > v)
			v = s.now_ns;
#endif
		*ns = sub_sat(v, skew_bound(clk));
		return 0;
	}
	err = perfclock_read_ioctl(clk, &v);
	if (err)
		return err;
	*ns = sub_sat(v, skew_bound(clk));
	return 0;
}

PERFCLOCK_API int perfclock_get_info(struct perfclock *clk,
				     struct perfclock_clock_info *info)
{
	struct perfclock_page_sample s;
	struct perfclock_info ki;
	int err;

	if (!clk || !info)
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	info->backend = clk->backend;
	if (clk->backend == PERFCLOCK_BACKEND_CLOCKID) {
		clockid_t coarse;
		uint32_t flags = 0;

		clockid_supported(clk->clockid, &coarse, &flags);
		/* Timekeeping clocks are one clock for all CPUs. */
		info->flags = flags | PERFCLOCK_CLOCK_GLOBAL;
		info->clockid = clk->clockid;
		return 0;
	}

	err = get_info(clk->fd, &ki);
	if (err)
		return err;
	info->clockid = -1;
	info->abi_version = ki.abi_version;
	info->skew_bound_ns = ki.skew_bound_ns;
	info->update_period_ns = ki.update_period_ns;
	info->measured_skew_ns = ki.measured_skew_ns;
	info->timer_lateness_ns = ki.timer_lateness_ns;
	if (ki.flags & PERFCLOCK_INFO_SCHED_CLOCK_STABLE)
		info->flags |= PERFCLOCK_CLOCK_GLOBAL;
	if (clk->page) {
		info->flags |= PERFCLOCK_CLOCK_PAGE_MAPPED;
		if (perfclock_page_sample(clk->page, &s) == 0 &&
		    (s.flags & PERFCLOCK_PAGE_TSC_VALID))
			info->flags |= PERFCLOCK_CLOCK_PAGE_TSC_VALID;
	}
	return 0;
}

/* Used by the queue at each round start (no syscall). */
uint64_t perfclock__skew_bound(const struct perfclock *clk)
{
	return clk->backend == PERFCLOCK_BACKEND_DEVICE ? skew_bound(clk) : 0;
}

/* Like skew_bound(): the larger of the value at open and the page's. */
uint64_t perfclock__stall_bound(const struct perfclock *clk)
{
	uint64_t b, p;

	if (clk->backend != PERFCLOCK_BACKEND_DEVICE)
		return 0;
	b = clk->info.timer_lateness_ns;
	if (clk->page) {
		p = __atomic_load_n(&clk->page->timer_lateness_ns,
				    __ATOMIC_RELAXED);
		if (p > b)
			b = p;
	}
	return b;
}

PERFCLOCK_API int perfclock_check_attr(const struct perfclock *clk,
				       const struct perf_event_attr *attr)
{
	if (!clk || !attr)
		return -EINVAL;
	if (clk->backend == PERFCLOCK_BACKEND_DEVICE)
		return attr->use_clockid ? -EINVAL : 0;
	if (!attr->use_clockid || attr->clockid != clk->clockid)
		return -EINVAL;
	return 0;
}

PERFCLOCK_API void perfclock_fill_attr(const struct perfclock *clk,
				       struct perf_event_attr *attr)
{
	if (!clk || !attr)
		return;
	if (clk->backend == PERFCLOCK_BACKEND_DEVICE) {
		attr->use_clockid = 0;
		attr->clockid = 0;
	} else {
		attr->use_clockid = 1;
		attr->clockid = clk->clockid;
	}
}
