// SPDX-License-Identifier: GPL-2.0
/*
 * What perfclock_fuzz and perfclock_fail_init share: errno names, the
 * module's presence, a number read from a file, the monotonic time.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "fuzz_util.h"

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

const char *ename(int e)
{
	static __thread char buf[32];

	switch (e) {
	case 0: return "success";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EBADF: return "EBADF";
	case ENOMEM: return "ENOMEM";
	case EACCES: return "EACCES";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case ENOTDIR: return "ENOTDIR";
	case EINVAL: return "EINVAL";
	case ENOTTY: return "ENOTTY";
	case ESPIPE: return "ESPIPE";
	case EAGAIN: return "EAGAIN/EWOULDBLOCK";
	case EOVERFLOW: return "EOVERFLOW";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ENODEV: return "ENODEV";
	case ENOSYS: return "ENOSYS";
	}
	snprintf(buf, sizeof(buf), "errno %d", e);
	return buf;
}

int module_loaded(void)
{
	return access("/sys/module/perfclock", F_OK) == 0;
}

long read_long(const char *path)
{
	char buf[32] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? strtol(buf, NULL, 10) : -1;
}
