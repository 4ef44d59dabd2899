// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The fake perf of fake_perf.h, by link-time wrapping (-Wl,--wrap=syscall,
 * --wrap=mmap,--wrap=ioctl, as the library's tests fake the device):
 * everything that is not a fake fd passes through to the real call.
 */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "fake_perf.h"

#define MAX_FD	1024

struct fake {
	int used, output;
	uint64_t id;
	void *base;
	size_t len;
};

static struct fake fakes[MAX_FD];
static int enabled;
static uint64_t next_id = 0x100;

long __real_syscall(long nr, ...);
long __wrap_syscall(long nr, ...);
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd,
		  off_t off);
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd,
		  off_t off);
int __real_ioctl(int fd, unsigned long req, ...);
int __wrap_ioctl(int fd, unsigned long req, ...);

void fake_perf_enable(int on)
{
	enabled = on;
}

static struct fake *get(int fd)
{
	return fd >= 0 && fd < MAX_FD && fakes[fd].used ? &fakes[fd] : NULL;
}

void *fake_perf_base(int fd, size_t *len)
{
	struct fake *f = get(fd);

	if (!f)
		return NULL;
	*len = f->len;
	return f->base;
}

uint64_t fake_perf_id(int fd)
{
	struct fake *f = get(fd);

	return f ? f->id : 0;
}

int fake_perf_output(int fd)
{
	struct fake *f = get(fd);

	return f ? f->output : -1;
}

void fake_perf_reset(void)
{
	memset(fakes, 0, sizeof(fakes));
}

/*
 * Six words whatever the call takes, as the x86-64 and arm64 ABIs pass
 * them: the ones past the caller's arguments are garbage the kernel
 * ignores, read from the caller's frame (hence no ASan here).
 */
__attribute__((no_sanitize("address")))
long __wrap_syscall(long nr, ...)
{
	long a[6];
	va_list ap;
	int i, fd;

	va_start(ap, nr);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr != SYS_perf_event_open || !enabled)
		return __real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fd < 0)
		return -1;
	if (fd >= MAX_FD) {
		close(fd);
		errno = EMFILE;
		return -1;
	}
	memset(&fakes[fd], 0, sizeof(fakes[fd]));
	fakes[fd].used = 1;
	fakes[fd].output = -1;
	/* Ids far apart: a fuzzer's unknown id is id + 1. */
	fakes[fd].id = next_id;
	next_id += 0x10;
	return fd;
}

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd,
		  off_t off)
{
	struct fake *f = get(fd);
	void *p;

	if (!f)
		return __real_mmap(addr, len, prot, flags, fd, off);
	/* Exactly len: a read past the ring faults. */
	p = __real_mmap(NULL, len, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED) {
		f->base = p;
		f->len = len;
	}
	return p;
}

int __wrap_ioctl(int fd, unsigned long req, ...)
{
	struct fake *f = get(fd);
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (!f)
		return __real_ioctl(fd, req, arg);
	switch (req) {
	case PERF_EVENT_IOC_ID:
		memcpy(arg, &f->id, sizeof(f->id));
		return 0;
	case PERF_EVENT_IOC_SET_OUTPUT:
		f->output = (int)(long)arg;
		return get(f->output) ? 0 : (errno = EINVAL, -1);
	case PERF_EVENT_IOC_ENABLE:
	case PERF_EVENT_IOC_DISABLE:
		return 0;
	}
	errno = ENOTTY;
	return -1;
}
