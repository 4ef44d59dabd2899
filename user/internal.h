/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Library-private declarations; not installed. */
#ifndef PERFCLOCK_INTERNAL_H
#define PERFCLOCK_INTERNAL_H

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

#endif /* PERFCLOCK_INTERNAL_H */
