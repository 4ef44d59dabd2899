/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Library-private declarations; not installed. */
#ifndef PERFCLOCK_INTERNAL_H
#define PERFCLOCK_INTERNAL_H

#include <stdint.h>

/* Everything is built -fvisibility=hidden; this marks the exported API. */
#define PERFCLOCK_API __attribute__((visibility("default")))

#include <stdint.h>

struct perf_event_attr;

/*
 * attr_hwtime.c: 1 if the PMU hardware takes the sample time of an event
 * opened with attr (x86 PEBS), per the PMUs under devices
 * (/sys/bus/event_source/devices, or a test's tree); else 0.
 */
int perfclock__attr_hw_time(const struct perf_event_attr *attr,
			    const char *devices);
#define PERFCLOCK_PMU_DEVICES	"/sys/bus/event_source/devices"

/*
 * evring.c: the attrs (as filled, nr_attrs of them) and the pid the
 * rings were opened with; for the threaded reader, which decides from
 * them which rings its per-CPU horizon covers.
 */
struct perfclock_evring;
const struct perf_event_attr *
perfclock_evring__opened_as(const struct perfclock_evring *er,
			    uint32_t *nr_attrs, int *pid);
/* Say once that er's events were all opened disabled and never enabled. */
void perfclock_evring__check_enabled(struct perfclock_evring *er);

/*
 * evring_reader.c, test only: each reader thread reads its H_c on the
 * NEXT ring's CPU and takes it for its own ring's (the broken reader the
 * real-load test must catch). Process-wide; never set by the library.
 */
void perfclock_reader__test_wrong_cpu(int on);
/*
 * Test only: the rule for a per-task ring's horizon. 0: the least of
 * every online CPU's latest H_c (the reader's); 1 (wrong): the latest
 * H_c of the CPU the ring's own thread last read; 2 (wrong): the
 * greatest of them.
 */
void perfclock_reader__test_pertask_rule(int rule);
/* evring.c: the online CPUs (*out, malloc'ed): the count or -errno. */
int perfclock__online_cpus(int **out, int *from_sysfs);

/*
 * evring_errors.c: a line to the tool's log callback, if it gave one
 * (perfclock_set_log()); and perf_event_open()'s errno err for
 * attrs[attr_idx] on cpu, said to the log and made the documented one
 * (a tracepoint id tracefs does not list: ENOENT). Returns the errno.
 */
__attribute__((format(printf, 2, 3)))
void perfclock__log(int level, const char *fmt, ...);
int perfclock__evring_open_error(const struct perf_event_attr *attr,
				 uint32_t attr_idx, int cpu, int err);

/*
 * ring.c: step back over rec, the last record perfclock_ring_read_event()
 * handed out, so that the next pass reads it
 * again: perfclock_evring_drain() when the queue had no memory for it.
 */
struct perfclock_ring;
struct perfclock_record;
void perfclock_ring__unread(struct perfclock_ring *r,
			    const struct perfclock_record *rec);

#endif /* PERFCLOCK_INTERNAL_H */
