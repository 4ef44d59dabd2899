// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libperfclock: the clock. Module backend (/dev/perfclock: page fast
 * path, ioctl fallback), clock_gettime backend (events opened
 * use_clockid) and perf page backend (perf's own time_zero conversion, no
 * module): opening and closing them, their info. The reads are
 * clock_read.c's; the flush horizon is horizon.c's (horizon_internal.h).
 *
 * A struct perfclock barely changes after perfclock_open*() returns (the
 * page is the kernel's, read with the seq protocol; the horizon's fields
 * that can change are atomics), so calls from any number of threads need
 * no lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "internal.h"
#include "clock_internal.h"
#include "horizon_internal.h"
#include "clock_read.h"
#include "timens.h"

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

/*
 * ABI version 1 (perfclock 0.1) used the ioctl magic 0xB2, now powerpc's.
 * Its GET_INFO was _IOR(0xB2, 2, struct perfclock_info), the same 72-byte
 * layout with abi_version first. Asked only of a character device that
 * refused the current GET_INFO with ENOTTY; powerpc's papr-sysparm uses
 * 0xB2 02 as an _IOW of another size, a different request number.
 */
#define PERFCLOCK_IOC_GET_INFO_ABI1	_IOR(0xB2, 0x02, struct perfclock_info)

static int is_abi1_module(int fd)
{
	struct perfclock_info old;

	memset(&old, 0, sizeof(old));
	return ioctl(fd, PERFCLOCK_IOC_GET_INFO_ABI1, &old) == 0 &&
	       old.abi_version == 1 && old.page_version == 1;
}

/*
 * Open path as the perfclock device and map its page into clk: 0, or
 * -errno with nothing left open. Fills fd, info, page, page_len, hz_exact.
 */
static int attach_device(struct perfclock *clk, const char *path)
{
	struct stat st;
	long pagesz;
	void *page;
	int fd, err;

	/* O_NONBLOCK: a FIFO given by mistake must not block the open. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	/* Anything but a character device cannot be ours. */
	if (fstat(fd, &st) || !S_ISCHR(st.st_mode)) {
		err = -ENOTTY;
		goto err_close;
	}
	err = perfclock__get_info(fd, &clk->info);
	if (err) {
		/* An older perfclock module: say so, not "not a perfclock". */
		if (err == -ENOTTY && is_abi1_module(fd))
			err = -EPROTO;
		/* ENOTTY from other drivers; EINVAL from some old ones. */
		else if (err == -EINVAL || err == -ENOTTY || err == -EOPNOTSUPP)
			err = -ENOTTY;
		goto err_close;
	}
	if (clk->info.abi_version != PERFCLOCK_ABI_VERSION) {
		err = -EPROTO;
		goto err_close;
	}
	clk->fd = fd;
	clk->hz_exact = !!(clk->info.flags & PERFCLOCK_INFO_HORIZON);

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
			/* Reads of the device's own clock only (see open). */
			if (PERFCLOCK_PAGE_HAVE_TSC &&
			    clk->backend == PERFCLOCK_BACKEND_DEVICE)
				clk->read_page = page;
		}
	}
	return 0;

err_close:
	close(fd);
	memset(&clk->info, 0, sizeof(clk->info));
	return err;
}

static void detach_device(struct perfclock *clk)
{
	if (clk->page)
		munmap((void *)clk->page, clk->page_len);
	if (clk->fd >= 0)
		close(clk->fd);
	clk->page = NULL;
	clk->read_page = NULL;
	clk->page_len = 0;
	clk->fd = -1;
	clk->hz_exact = 0;
	memset(&clk->info, 0, sizeof(clk->info));
}

/*
 * The last step of every open: the horizon's backend. NULL with errno
 * and clk freed if it fails (a REALTIME or TAI clock with no timerfd to
 * follow its sets: horizon_sets.c).
 */
static struct perfclock *choose_horizon(struct perfclock *clk)
{
	int err = perfclock__horizon_choose(clk);

	if (!err)
		return clk;
	detach_device(clk);
	if (clk->own_perf_fd >= 0) {
		munmap((void *)clk->perf_page, clk->own_perf_len);
		close(clk->own_perf_fd);
	}
	free(clk);
	errno = -err;
	return NULL;
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
	if (perfclock__timens_open(clockid))	/* sets errno (timens.h) */
		return NULL;
	/* A coarse clock the kernel refuses: use the exact one instead. */
	if (coarse != clockid && clock_gettime(coarse, &ts))
		coarse = clockid;

	clk = calloc(1, sizeof(*clk));
	if (!clk)
		return NULL;
	clk->backend = PERFCLOCK_BACKEND_CLOCKID;
	clk->fd = -1;
	clk->own_perf_fd = -1;
	clk->clockid = clockid;
	clk->coarse_clockid = coarse;
	clk->hz_clockid = clockid;
	/*
	 * Exact horizons in this clock come from the module if it is there
	 * and hands them out; reads never use it. Keep the device only
	 * then: an open device keeps the module's timer running. Whatever
	 * fails here is not an error: the horizon is then an estimate.
	 */
	if (clockid < PERFCLOCK_HORIZON_CLOCKIDS &&
	    attach_device(clk, PERFCLOCK_DEVICE_PATH) == 0 && !clk->hz_exact)
		detach_device(clk);
	return choose_horizon(clk);
}

PERFCLOCK_API struct perfclock *
perfclock_open_perf_page(const struct perf_event_mmap_page *pc)
{
	struct perfclock *clk;
	uint64_t ns;
	int err;

	if (!pc) {
		errno = EINVAL;
		return NULL;
	}
	err = perfclock__perf_page_read(pc, &ns);
	if (err) {
		errno = -err;
		return NULL;
	}
	clk = calloc(1, sizeof(*clk));
	if (!clk)
		return NULL;
	clk->backend = PERFCLOCK_BACKEND_PERF_PAGE;
	clk->fd = -1;
	clk->own_perf_fd = -1;
	clk->clockid = -1;
	clk->coarse_clockid = -1;
	clk->perf_page = pc;
	if (PERFCLOCK_PAGE_HAVE_TSC)
		clk->read_perf_page = pc;
	clk->hz_clockid = PERFCLOCK_HORIZON_PERF_CLOCK;
	/* Exact horizons from the module if it is there (as for clockids). */
	if (attach_device(clk, PERFCLOCK_DEVICE_PATH) == 0 && !clk->hz_exact)
		detach_device(clk);
	return choose_horizon(clk);
}

/*
 * No module: perf_clock() from perf's page of a dummy event of our own on
 * this thread (pid 0, any CPU: no privilege needed at perf_event_paranoid
 * 2), when the kernel offers time_zero. 0, or -errno with nothing left
 * open.
 */
static int attach_own_perf_page(struct perfclock *clk)
{
	struct perf_event_attr attr;
	long pagesz = sysconf(_SC_PAGESIZE);
	uint64_t ns;
	void *base;
	int fd, err;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.exclude_kernel = 1;
	fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1,
			  PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	base = pagesz > 0 ? mmap(NULL, (size_t)pagesz, PROT_READ, MAP_SHARED,
				 fd, 0) : MAP_FAILED;
	if (base == MAP_FAILED) {
		err = -errno;
		close(fd);
		return err;
	}
	err = perfclock__perf_page_read(base, &ns);
	if (err) {
		munmap(base, (size_t)pagesz);
		close(fd);
		return err;
	}
	clk->backend = PERFCLOCK_BACKEND_PERF_PAGE;
	clk->perf_page = base;
	if (PERFCLOCK_PAGE_HAVE_TSC)
		clk->read_perf_page = base;
	clk->own_perf_fd = fd;
	clk->own_perf_len = (size_t)pagesz;
	return 0;
}

PERFCLOCK_API struct perfclock *perfclock_open(const char *path)
{
	struct perfclock *clk;
	int err, dflt = !path;

	if (!path)
		path = PERFCLOCK_DEVICE_PATH;
	clk = calloc(1, sizeof(*clk));
	if (!clk)
		return NULL;
	clk->backend = PERFCLOCK_BACKEND_DEVICE;
	clk->fd = -1;
	clk->own_perf_fd = -1;
	clk->clockid = -1;
	clk->coarse_clockid = -1;
	clk->hz_clockid = PERFCLOCK_HORIZON_PERF_CLOCK;
	err = attach_device(clk, path);
	/*
	 * The default device missing: the same clock through perf's page,
	 * where the kernel offers it (a stable sched_clock), with
	 * membarrier's horizon. Otherwise ENOENT, as ever.
	 */
	if (err == -ENOENT && dflt && attach_own_perf_page(clk) == 0)
		err = 0;
	if (err) {
		free(clk);
		errno = -err;
		return NULL;
	}
	return choose_horizon(clk);
}

PERFCLOCK_API void perfclock_close(struct perfclock *clk)
{
	if (!clk)
		return;
	perfclock__horizon_release(clk);
	detach_device(clk);
	if (clk->own_perf_fd >= 0) {
		munmap((void *)clk->perf_page, clk->own_perf_len);
		close(clk->own_perf_fd);
	}
	free(clk);
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
		/*
		 * The horizon's age below is a read less the horizon: a
		 * setns() since the offsets were read is seen here
		 * (timens.c: SETNS), as at every horizon that reads.
		 */
		perfclock__timens_recheck_clock(clk->clockid);
		/* Timekeeping clocks are one clock for all CPUs. */
		info->flags = flags | PERFCLOCK_CLOCK_GLOBAL;
		info->clockid = clk->clockid;
	} else if (clk->backend == PERFCLOCK_BACKEND_PERF_PAGE) {
		uint64_t ns;

		/* perf offers time_zero only with a stable sched_clock. */
		info->clockid = -1;
		info->flags = PERFCLOCK_CLOCK_GLOBAL | PERFCLOCK_CLOCK_PAGE_MAPPED;
		if (perfclock__perf_page_read(clk->perf_page, &ns) == 0)
			info->flags |= PERFCLOCK_CLOCK_PAGE_TSC_VALID;
	} else {
		err = perfclock__get_info(clk->fd, &ki);
		if (err)
			return err;
		info->clockid = -1;
		info->abi_version = ki.abi_version;
		info->skew_estimate_ns = ki.skew_estimate_ns;
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
	}

	return perfclock__horizon_info(clk, info);
}

PERFCLOCK_API int perfclock_check_attr(const struct perfclock *clk,
				       const struct perf_event_attr *attr)
{
	if (!clk || !attr)
		return -EINVAL;
	/* No time in any of its records: nothing to order (the header). */
	if (!(attr->sample_type & PERF_SAMPLE_TIME))
		return -EINVAL;
	if (clk->backend != PERFCLOCK_BACKEND_CLOCKID) {
		if (attr->use_clockid)
			return -EINVAL;
	} else if (!attr->use_clockid || attr->clockid != clk->clockid) {
		return -EINVAL;
	}
	/* Stamped by the PMU (PEBS): no horizon covers it (attr_hwtime.c). */
	if (perfclock__attr_hw_time(attr, PERFCLOCK_PMU_DEVICES))
		return -EOPNOTSUPP;
	return 0;
}

PERFCLOCK_API void perfclock_fill_attr(const struct perfclock *clk,
				       struct perf_event_attr *attr)
{
	if (!clk || !attr)
		return;
	if (clk->backend != PERFCLOCK_BACKEND_CLOCKID) {
		attr->use_clockid = 0;
		attr->clockid = 0;
	} else {
		attr->use_clockid = 1;
		attr->clockid = clk->clockid;
	}
}
