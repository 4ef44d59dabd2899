/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Library-private declarations; not installed. */
#ifndef PERFCLOCK_INTERNAL_H
#define PERFCLOCK_INTERNAL_H

#include <stdint.h>

/* Everything is built -fvisibility=hidden; this marks the exported API. */
#define PERFCLOCK_API __attribute__((visibility("default")))

struct perfclock;

/* The clock's advertised cross-CPU bound, as read at open or since. */
uint64_t perfclock__skew_bound(const struct perfclock *clk);
/* The longest CPU stall the clock's module has measured (0: unknown). */
uint64_t perfclock__stall_bound(const struct perfclock *clk);

#endif /* PERFCLOCK_INTERNAL_H */
