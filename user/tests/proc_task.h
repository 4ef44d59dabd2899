/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The tests' look at this process's threads in /proc/self/task: how
 * many there are, and a thread by its name (the library names its
 * threads: pclk-rd<cpu>, perfclock-mb).
 */
#ifndef PERFCLOCK_TEST_PROC_TASK_H
#define PERFCLOCK_TEST_PROC_TASK_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* This process's threads, or -1 if /proc/self/task cannot be read. */
static inline int nr_threads(void)
{
	struct dirent *d;
	DIR *dir = opendir("/proc/self/task");
	int n = 0;

	if (!dir)
		return -1;
	while ((d = readdir(dir)))
		n += d->d_name[0] != '.';
	closedir(dir);
	return n;
}

/* The tid of this process's thread named name, or -1. */
static inline pid_t thread_named(const char *name)
{
	char path[300], comm[32];
	struct dirent *d;
	DIR *dir = opendir("/proc/self/task");
	pid_t tid = -1;
	FILE *f;

	if (!dir)
		return -1;
	while (tid < 0 && (d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", d->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) &&
		    !strncmp(comm, name, strlen(name)) &&
		    comm[strlen(name)] == '\n')
			tid = (pid_t)atoi(d->d_name);
		fclose(f);
	}
	closedir(dir);
	return tid;
}

#endif
