/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The fake /dev/perfclock of test_device (fake_device.c): its state. */
#ifndef PERFCLOCK_FAKE_DEVICE_H
#define PERFCLOCK_FAKE_DEVICE_H

#include <stdint.h>

#include "perfclock_page.h"

/* What the fake device answers: its page, GET_INFO, and failures. */
extern struct perfclock_page page;
extern struct perfclock_info fake_info;
extern int fake_fd;
extern int fail_info_errno, fail_mmap;
/* An ABI-1 module: GET_INFO only under the old magic 0xB2. */
extern int fake_abi1;
extern unsigned long n_get_time, n_get_info, n_mmap, n_munmap;
/* GET_HORIZON: the errno to fail with, or the answer and what was asked. */
extern int hz_errno;
extern uint64_t hz_answer;
extern uint32_t hz_answer_gen;
extern struct perfclock_horizon hz_asked;
extern unsigned long n_get_horizon;
/* open("/dev/perfclock"): the fake (/dev/null) if set, else ENOENT. */
extern int devnode_present;
/* GET_TIME: bump the page's horizon generation while it reads. */
extern int time_bumps_gen;
/* Allocations by the library (counted), and whether they fail (ENOMEM). */
extern unsigned long n_alloc;
extern int fail_alloc;

/* The default device: ABI and page of this version, TSC valid, 1 us skew. */
void fake_reset(void);
/* File descriptors open in this process. */
int count_fds(void);

/* test_device_horizon.c: the flush horizon against the fake device. */
void test_horizon_device(void);
void test_bounds_no_page(void);
void test_horizon_clockid(void);
void test_horizon_generation(void);
void test_horizon_paravirt(void);

/* test_device_percpu.c: the per-CPU horizon through GET_TIME. */
void test_horizon_percpu_device(void);

#endif
