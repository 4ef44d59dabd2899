// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Events whose sample time the PMU hardware takes, which no flush horizon
 * covers: perfclock_check_attr() refuses them (perfclock/clock.h).
 *
 * What the kernel does (checked in 6.1; see "Not covered" in
 * docs/horizon.md for the other drivers looked at):
 * kernel/events/core.c:perf_prepare_sample() stamps
 * PERF_SAMPLE_TIME only if the driver has not (it clears what
 * data->sample_flags already holds before __perf_event_header__init_id()).
 * arch/x86/events/intel/ds.c:setup_pebs_time() sets data->time from the
 * PEBS record's TSC (native_sched_clock_from_tsc()), unless the event has
 * use_clockid or sched_clock is not the native stable TSC one; with large
 * PEBS (intel_pmu_large_pebs_flags() allows it when PERF_SAMPLE_TIME is
 * among x86_pmu.large_pebs_flags, never with use_clockid) the records
 * wait in the DS buffer until intel_pmu_drain_pebs_buffer() (a context
 * switch, a read, the threshold PMI, a disable). Either way the time is
 * taken before the RCU read-side section that commits the record, so a
 * horizon proven in between is above it.
 *
 * Which events: precise_ip > 0 (PEBS is what precise_ip asks for on
 * Intel), without use_clockid, on a PMU that can do PEBS. That last is
 * read from sysfs: caps/max_precise of the event's PMU is
 * arch/x86/events/core.c:x86_pmu_max_precise(), which is above 0 only
 * with x86_pmu.pebs_active. PERF_TYPE_HARDWARE, _HW_CACHE and _RAW are
 * the core PMU ("cpu", or "cpu_core"/"cpu_atom" on hybrid parts); any
 * other type is looked up by its PMU's "type" file. No such file (not
 * x86, no PMU, no sysfs): not hardware-stamped as far as this can know.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/perf_event.h>

#include "internal.h"

/* The integer in dir/name/file, or -1. */
static long read_long(const char *dir, const char *pmu, const char *file)
{
	char path[512], buf[32];
	FILE *f;
	long v = -1;

	if (snprintf(path, sizeof(path), "%s/%s/%s", dir, pmu, file) >=
	    (int)sizeof(path))
		return -1;
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f)) {
		char *end;

		v = strtol(buf, &end, 10);
		if (end == buf || v < 0)
			v = -1;
	}
	fclose(f);
	return v;
}

static int pmu_can_pebs(const char *dir, const char *pmu)
{
	return read_long(dir, pmu, "caps/max_precise") > 0;
}

/* The PMU whose "type" is type, if it can do PEBS. */
static int type_can_pebs(const char *dir, uint32_t type)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int ret = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (read_long(dir, de->d_name, "type") == (long)type) {
			ret = pmu_can_pebs(dir, de->d_name);
			break;
		}
	}
	closedir(d);
	return ret;
}

int perfclock__attr_hw_time(const struct perf_event_attr *attr,
			    const char *devices)
{
	if (!attr->precise_ip || attr->use_clockid)
		return 0;
	switch (attr->type) {
	case PERF_TYPE_SOFTWARE:
	case PERF_TYPE_TRACEPOINT:
	case PERF_TYPE_BREAKPOINT:
		return 0;
	case PERF_TYPE_HARDWARE:
	case PERF_TYPE_HW_CACHE:
	case PERF_TYPE_RAW:
		return pmu_can_pebs(devices, "cpu") ||
		       pmu_can_pebs(devices, "cpu_core") ||
		       pmu_can_pebs(devices, "cpu_atom");
	default:
		return type_can_pebs(devices, attr->type);
	}
}
