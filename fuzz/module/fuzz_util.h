/* SPDX-License-Identifier: GPL-2.0 */
/* fuzz_util.c: what perfclock_fuzz and perfclock_fail_init share. */
#ifndef PERFCLOCK_FUZZ_UTIL_H
#define PERFCLOCK_FUZZ_UTIL_H

#include "../../module/perfclock_ioctl.h"

#define DEV		PERFCLOCK_DEVICE_PATH

/* CLOCK_MONOTONIC in seconds. */
double now_s(void);
/* An errno's name ("success" for 0), for the reports. */
const char *ename(int e);
/* Whether perfclock is loaded (/sys/module/perfclock exists). */
int module_loaded(void);
/* The number a file holds (a module parameter), or -1. */
long read_long(const char *path);

#endif
