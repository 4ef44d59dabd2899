// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libperfclock: open the rings a live tool reads. One set of events on
 * every online CPU, one ring per CPU: the first event of the set owns the
 * CPU's mmap (1 + 2^n pages), the others write into it
 * (PERF_EVENT_IOC_SET_OUTPUT) and are registered with the ring reader by
 * their ids. The clock's use_clockid/clockid are filled into every attr.
 * Modelled on libperf (tools/lib/perf: evlist, mmap): an opaque object,
 * NULL + errno from the constructor, -errno elsewhere, nothing printed.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "internal.h"

#define EVRING_DEFAULT_PAGES	64u
#define EVRING_MAX_ATTRS	64u

struct evring_cpu {
	int cpu;
	int *fd;		/* nr_attrs; fd[0] owns the mapping */
	void *base;
	size_t len;
	struct perfclock_ring *ring;
};

struct perfclock_evring {
	uint32_t nr_attrs;
	uint32_t nr;		/* rings (CPUs) */
	struct evring_cpu *c;
	/* As opened (perfclock_evring__opened_as(): the threaded reader). */
	int32_t pid;
	struct perf_event_attr *attrs;
	/*
	 * Every attr opened disabled, and perfclock_evring_enable() not
	 * called yet: a drain then says so, once (warned).
	 */
	int all_disabled, warned;
};

PERFCLOCK_API void
perfclock_evring_config_init(struct perfclock_evring_config *cfg)
{
	if (!cfg)
		return;
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->data_pages = EVRING_DEFAULT_PAGES;
	cfg->pid = -1;
}

/*
 * The online CPUs, from /sys/devices/system/cpu/online ("0-3,5"); if it
 * cannot be read, every configured CPU (those that are offline then fail
 * with ENODEV and are left out), *from_sysfs 0. Returns the count, or
 * -errno. Also the threaded reader's, for its per-task horizon.
 */
int perfclock__online_cpus(int **out, int *from_sysfs)
{
	int n = 0, cap = 64, a, b, c;
	int *cpus = malloc((size_t)cap * sizeof(*cpus));
	FILE *f;

	if (!cpus)
		return -ENOMEM;
	*from_sysfs = 0;
	f = fopen("/sys/devices/system/cpu/online", "re");
	if (f) {
		*from_sysfs = 1;
		while (fscanf(f, "%d", &a) == 1) {
			b = a;
			c = fgetc(f);
			if (c == '-') {
				if (fscanf(f, "%d", &b) != 1)
					break;
				c = fgetc(f);
			}
			for (; a <= b && a >= 0; a++) {
				if (n == cap) {
					int *m = realloc(cpus, (size_t)cap * 2 *
							 sizeof(*cpus));

					if (!m) {
						fclose(f);
						free(cpus);
						return -ENOMEM;
					}
					cpus = m;
					cap *= 2;
				}
				cpus[n++] = a;
			}
			if (c != ',')
				break;
		}
		fclose(f);
	}
	if (!n) {
		long nc = sysconf(_SC_NPROCESSORS_CONF);

		*from_sysfs = 0;
		for (a = 0; a < nc && a < cap; a++)
			cpus[n++] = a;
	}
	if (!n) {
		free(cpus);
		return -ENODEV;
	}
	*out = cpus;
	return n;
}

static int is_pow2(uint32_t x)
{
	return x && !(x & (x - 1));
}

static void cpu_close(struct evring_cpu *c, uint32_t nr_attrs)
{
	uint32_t k;

	perfclock_ring_free(c->ring);
	c->ring = NULL;
	if (c->base)
		munmap(c->base, c->len);
	c->base = NULL;
	if (c->fd)
		for (k = 0; k < nr_attrs; k++)
			if (c->fd[k] >= 0)
				close(c->fd[k]);
	free(c->fd);
	c->fd = NULL;
}

PERFCLOCK_API void perfclock_evring_close(struct perfclock_evring *er)
{
	uint32_t i;

	if (!er)
		return;
	for (i = 0; i < er->nr; i++)
		cpu_close(&er->c[i], er->nr_attrs);
	free(er->c);
	free(er->attrs);
	free(er);
}

/* A failure of cpu_open() after perf_event_open(), said once: -err. */
static int cpu_open_error(int cpu, const char *what, int err)
{
	perfclock__log(PERFCLOCK_LOG_ERR, "perfclock_evring_open: CPU %d: %s: %s",
		       cpu, what, strerror(err));
	return -err;
}

/* Open the set on one CPU: 0, -ENODEV (offline), or -errno. */
static int cpu_open(struct evring_cpu *c, int cpu,
		    const struct perf_event_attr *attrs, uint32_t nr_attrs,
		    int pid, size_t len)
{
	uint32_t k;
	int err;

	c->cpu = cpu;
	c->fd = malloc(nr_attrs * sizeof(*c->fd));
	if (!c->fd)
		return -ENOMEM;
	for (k = 0; k < nr_attrs; k++)
		c->fd[k] = -1;
	/* The ring exists once fd[0] is mapped: only then SET_OUTPUT. */
	for (k = 0; k < nr_attrs; k++) {
		long fd = syscall(SYS_perf_event_open, &attrs[k], pid, cpu, -1,
				  PERF_FLAG_FD_CLOEXEC);

		if (fd < 0)
			return -perfclock__evring_open_error(&attrs[k], k, cpu,
							     errno);
		c->fd[k] = (int)fd;
		if (!k) {
			c->len = len;
			c->base = mmap(NULL, len, PROT_READ | PROT_WRITE,
				       MAP_SHARED, c->fd[0], 0);
			if (c->base == MAP_FAILED) {
				c->base = NULL;
				return cpu_open_error(cpu, "mmap of the ring", errno);
			}
		} else if (ioctl(c->fd[k], PERF_EVENT_IOC_SET_OUTPUT,
				 c->fd[0])) {
			return cpu_open_error(cpu, "PERF_EVENT_IOC_SET_OUTPUT", errno);
		}
	}
	c->ring = perfclock_ring_new(c->base, len, NULL);
	if (!c->ring)
		return cpu_open_error(cpu, "the ring reader", errno);
	for (k = 0; k < nr_attrs; k++) {
		uint64_t id;

		if (ioctl(c->fd[k], PERF_EVENT_IOC_ID, &id))
			return cpu_open_error(cpu, "PERF_EVENT_IOC_ID", errno);
		err = perfclock_ring_add_event(c->ring, &attrs[k], &id, 1);
		if (err)
			return cpu_open_error(cpu, "the ring's event table", -err);
	}
	return 0;
}

PERFCLOCK_API struct perfclock_evring *
perfclock_evring_open(const struct perfclock *clk,
		      const struct perfclock_evring_config *cfg)
{
	struct perf_event_attr *attrs = NULL;
	struct perfclock_evring *er = NULL;
	long pagesz = sysconf(_SC_PAGESIZE);
	int *cpus = NULL, ncpu, from_sysfs, i, err = 0;
	uint32_t k, pages;

	if (!clk || !cfg || cfg->size < sizeof(*cfg) || !cfg->attrs ||
	    !cfg->nr_attrs || cfg->nr_attrs > EVRING_MAX_ATTRS ||
	    (cfg->flags & ~PERFCLOCK_EVRING_PER_TASK) || pagesz <= 0 ||
	    ((cfg->flags & PERFCLOCK_EVRING_PER_TASK) && cfg->pid < 0)) {
		errno = EINVAL;
		return NULL;
	}
	pages = cfg->data_pages ? cfg->data_pages : EVRING_DEFAULT_PAGES;
	if (!is_pow2(pages) || pages > (1u << 20)) {
		errno = EINVAL;
		return NULL;
	}
	attrs = calloc(cfg->nr_attrs, sizeof(*attrs));
	er = calloc(1, sizeof(*er));
	if (!attrs || !er) {
		err = -ENOMEM;
		goto out;
	}
	er->nr_attrs = cfg->nr_attrs;
	er->pid = cfg->pid;
	er->all_disabled = 1;
	for (k = 0; k < cfg->nr_attrs; k++)
		er->all_disabled &= !!cfg->attrs[k].disabled;
	for (k = 0; k < cfg->nr_attrs; k++) {
		/* Records without a time cannot be ordered (the header). */
		if (!(cfg->attrs[k].sample_type & PERF_SAMPLE_TIME)) {
			perfclock__log(PERFCLOCK_LOG_ERR,
				       "perfclock_evring_open: attrs[%u] has no PERF_SAMPLE_TIME",
				       k);
			err = -EINVAL;
			goto out;
		}
		attrs[k] = cfg->attrs[k];
		attrs[k].size = sizeof(attrs[k]);
		perfclock_fill_attr(clk, &attrs[k]);
		/*
		 * A clock the caller asked for that is not clk's: its records
		 * would not be stamped with the clock of the horizons. Left
		 * unset (use_clockid 0), the clock fields are filled.
		 */
		if (cfg->attrs[k].use_clockid &&
		    (!attrs[k].use_clockid ||
		     attrs[k].clockid != cfg->attrs[k].clockid)) {
			perfclock__log(PERFCLOCK_LOG_ERR,
				       "perfclock_evring_open: attrs[%u] asks for clockid %d (use_clockid), not the clock's (%s): leave use_clockid 0 and the clock fields are filled",
				       k, (int)cfg->attrs[k].clockid,
				       attrs[k].use_clockid ? "another clockid" :
				       "perf_clock(), no use_clockid");
			err = -EINVAL;
			goto out;
		}
		/*
		 * perf_mmap() refuses a per-task (cpu -1) event with inherit
		 * ("all children writing to the same rb"): say it here.
		 */
		if ((cfg->flags & PERFCLOCK_EVRING_PER_TASK) &&
		    cfg->attrs[k].inherit) {
			perfclock__log(PERFCLOCK_LOG_ERR,
				       "perfclock_evring_open: attrs[%u] has inherit: perf cannot map a per-task ring of an inherited event (PERFCLOCK_EVRING_PER_TASK)",
				       k);
			err = -EINVAL;
			goto out;
		}
		/* Several events in one ring: perf's way to tell them apart. */
		if (cfg->nr_attrs > 1)
			attrs[k].sample_type |= PERF_SAMPLE_IDENTIFIER;
	}
	if (cfg->flags & PERFCLOCK_EVRING_PER_TASK) {
		/* One ring, cpu -1: the task's, wherever it runs. */
		cpus = malloc(sizeof(*cpus));
		ncpu = cpus ? 1 : -ENOMEM;
		if (cpus)
			cpus[0] = -1;
		from_sysfs = 1;
	} else {
		ncpu = perfclock__online_cpus(&cpus, &from_sysfs);
	}
	if (ncpu < 0) {
		err = ncpu;
		goto out;
	}
	er->c = calloc((size_t)ncpu, sizeof(*er->c));
	if (!er->c) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < ncpu; i++) {
		struct evring_cpu *c = &er->c[er->nr];

		err = cpu_open(c, cpus[i], attrs, cfg->nr_attrs,
			       cfg->pid,
			       (size_t)(1 + pages) * (size_t)pagesz);
		if (err == -ENODEV && !from_sysfs) {
			cpu_close(c, cfg->nr_attrs);	/* offline */
			err = 0;
			continue;
		}
		er->nr++;
		if (err)	/* cpu_open() said what failed, once */
			goto out;
	}
	if (!er->nr)
		err = -ENODEV;
out:
	free(cpus);
	if (er && !err)
		er->attrs = attrs;
	else
		free(attrs);
	if (err) {
		perfclock_evring_close(er);
		errno = -err;
		return NULL;
	}
	return er;
}

static int ioctl_all(struct perfclock_evring *er, unsigned long req)
{
	uint32_t i, k;

	if (!er)
		return -EINVAL;
	for (i = 0; i < er->nr; i++)
		for (k = 0; k < er->nr_attrs; k++)
			if (ioctl(er->c[i].fd[k], req, 0))
				return -errno;
	return 0;
}

PERFCLOCK_API int perfclock_evring_enable(struct perfclock_evring *er)
{
	int err = ioctl_all(er, PERF_EVENT_IOC_ENABLE);

	if (!err)
		er->all_disabled = 0;
	return err;
}

/*
 * A drain of rings whose events were all opened disabled and never
 * enabled finds nothing, ever: said once per evring (a tool that forgot
 * perfclock_evring_enable() saw 0 events and no word).
 */
void perfclock_evring__check_enabled(struct perfclock_evring *er)
{
	if (!er->all_disabled || er->warned)
		return;
	er->warned = 1;
	perfclock__log(PERFCLOCK_LOG_ERR,
		       "perfclock_evring_drain: every event was opened disabled and perfclock_evring_enable() was not called: no record will arrive");
}

PERFCLOCK_API int perfclock_evring_disable(struct perfclock_evring *er)
{
	return ioctl_all(er, PERF_EVENT_IOC_DISABLE);
}

PERFCLOCK_API int perfclock_evring_nr_rings(const struct perfclock_evring *er)
{
	return er ? (int)er->nr : -EINVAL;
}

PERFCLOCK_API struct perfclock_ring *
perfclock_evring_ring(const struct perfclock_evring *er, int idx)
{
	if (!er || idx < 0 || (uint32_t)idx >= er->nr) {
		errno = EINVAL;
		return NULL;
	}
	return er->c[idx].ring;
}

PERFCLOCK_API int perfclock_evring_cpu(const struct perfclock_evring *er,
				       int idx)
{
	if (!er || idx < 0 || (uint32_t)idx >= er->nr)
		return -EINVAL;
	return er->c[idx].cpu;
}

PERFCLOCK_API int perfclock_evring_fd(const struct perfclock_evring *er,
				      int idx, int attr_idx)
{
	if (!er || idx < 0 || (uint32_t)idx >= er->nr || attr_idx < 0 ||
	    (uint32_t)attr_idx >= er->nr_attrs)
		return -EINVAL;
	return er->c[idx].fd[attr_idx];
}

PERFCLOCK_API int perfclock_evring_pollfds(const struct perfclock_evring *er,
					   struct pollfd *fds, int nr_fds)
{
	uint32_t i;

	if (!er || !fds || nr_fds < (int)er->nr)
		return -EINVAL;
	for (i = 0; i < er->nr; i++) {
		fds[i].fd = er->c[i].fd[0];
		fds[i].events = POLLIN;
		fds[i].revents = 0;
	}
	return (int)er->nr;
}

const struct perf_event_attr *
perfclock_evring__opened_as(const struct perfclock_evring *er,
			    uint32_t *nr_attrs, int *pid)
{
	*nr_attrs = er->nr_attrs;
	*pid = er->pid;
	return er->attrs;
}
