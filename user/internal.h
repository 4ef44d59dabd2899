/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Library-private declarations; not installed. */
#ifndef PERFCLOCK_INTERNAL_H
#define PERFCLOCK_INTERNAL_H

/* Everything is built -fvisibility=hidden; this marks the exported API. */
#define PERFCLOCK_API __attribute__((visibility("default")))

#endif /* PERFCLOCK_INTERNAL_H */
