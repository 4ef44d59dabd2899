/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The CPU's rdtscp as the library sees it (tests/fake_cpu.c), for test
 * programs linked with $(CPU_WRAP) (user/Makefile): each per-CPU path
 * can be taken on any CPU, whatever this one offers.
 */
#ifndef PERFCLOCK_FAKE_CPU_H
#define PERFCLOCK_FAKE_CPU_H

#include <stdint.h>

enum fake_cpu_mode {
	FAKE_CPU_REAL,		/* this CPU's rdtscp, if it has one */
	FAKE_CPU_NO_RDTSCP,	/* the probe says no */
	FAKE_CPU_RDTSCP,	/* the probe says yes; rdtscp is the fake's */
};

/*
 * Read at every probe (every open). Starts as PERFCLOCK_TEST_CPU says
 * ("real", "no-rdtscp", "rdtscp"), else FAKE_CPU_REAL.
 */
extern enum fake_cpu_mode fake_cpu_mode;
/* FAKE_CPU_RDTSCP: called in the read, before the TSC is taken. */
extern void (*fake_rdtscp_hook)(void);
/* Reads by the library's rdtscp, real or fake. */
extern unsigned long n_rdtscp;
/*
 * FAKE_CPU_RDTSCP: added to the CPU number the fake writes to TSC_AUX
 * (not 0: TSC_AUX no longer holds the CPU, as after a firmware rewrite).
 */
extern uint32_t fake_tsc_aux_add;
/*
 * Added to every CLOCK_BOOTTIME read (clock_gettime() is wrapped too):
 * raised, it is a suspend and resume as CLOCK_BOOTTIME - CLOCK_MONOTONIC
 * shows one.
 */
extern int64_t fake_sleep_ns;

/* The mode's name, for test lines. */
const char *fake_cpu_name(enum fake_cpu_mode m);

#endif
