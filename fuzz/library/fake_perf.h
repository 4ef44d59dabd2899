/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A fake perf_event_open() for the library fuzzer (fake_perf.c): while
 * enabled, perf_event_open() gives an eventfd (poll() works on it), mmap()
 * of it anonymous memory the fuzzer writes records into as the kernel
 * would, PERF_EVENT_IOC_ID a fresh id, SET_OUTPUT/ENABLE/DISABLE 0. So
 * perfclock_evring_open() builds real shared rings, and the drain and the
 * threaded reader run on them, with no perf and no privilege.
 */
#ifndef FAKE_PERF_H
#define FAKE_PERF_H

#include <stddef.h>
#include <stdint.h>

void fake_perf_enable(int on);
/* The mapping of fd (NULL if fd is no fake), and each fake fd's id. */
void *fake_perf_base(int fd, size_t *len);
uint64_t fake_perf_id(int fd);
/* The fd whose ring fd was routed into (SET_OUTPUT); -1 if none. */
int fake_perf_output(int fd);
/* Forget every fake fd (after perfclock_evring_close() closed them). */
void fake_perf_reset(void);

#endif /* FAKE_PERF_H */
