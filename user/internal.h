/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Library-private declarations; not installed. */
#ifndef PERFCLOCK_INTERNAL_H
#define PERFCLOCK_INTERNAL_H

#include <stdint.h>

/* Everything is built -fvisibility=hidden; this marks the exported API. */
#define PERFCLOCK_API __attribute__((visibility("default")))

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

/*
 * evring_reader.c, test only: each reader thread reads its H_c on the
 * NEXT ring's CPU and takes it for its own ring's (the broken reader the
 * real-load test must catch). Process-wide; never set by the library.
 */
void perfclock_reader__test_wrong_cpu(int on);

#endif /* PERFCLOCK_INTERNAL_H */
