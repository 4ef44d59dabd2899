/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The tests' one lookup of a tracepoint's perf id (attr.config for
 * PERF_TYPE_TRACEPOINT): NAME as "system/event", read from tracefs at
 * /sys/kernel/tracing, else under debugfs. -1 if neither has it.
 */
#ifndef TESTS_TRACEFS_ID_H
#define TESTS_TRACEFS_ID_H

#include <stdio.h>

static inline int tracefs_event_id(const char *name)
{
	static const char *const roots[] = { "/sys/kernel/tracing",
					     "/sys/kernel/debug/tracing" };
	char path[256];
	unsigned int i;
	int id = -1;
	FILE *f;

	for (i = 0; i < 2 && id < 0; i++) {
		snprintf(path, sizeof(path), "%s/events/%s/id", roots[i], name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fscanf(f, "%d", &id) != 1)
			id = -1;
		fclose(f);
	}
	return id;
}

#endif /* TESTS_TRACEFS_ID_H */
