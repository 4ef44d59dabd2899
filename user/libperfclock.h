/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libperfclock: the flush horizon of the clock perf stamps its records
 * with, a reader of per-CPU perf mmap rings, and an ordered queue to merge
 * them into one time-ordered stream. This header includes the whole API,
 * one header per object:
 *
 *	perfclock/clock.h	struct perfclock: open, read, what it is
 *	perfclock/horizon.h	its flush horizon, and the per-CPU one
 *	perfclock/ring.h	struct perfclock_ring: one perf mmap ring
 *	perfclock/evring.h	struct perfclock_evring: a set of events on
 *				every CPU, a ring each, drained in one call
 *	perfclock/queue.h	struct perfclock_queue: the ordered queue
 *	perfclock/reader.h	struct perfclock_reader: the threaded reader
 *	perfclock/log.h		the log callback
 *
 * Include this one (<perfclock/libperfclock.h>, or "libperfclock.h" with
 * the pkg-config flags); the per-object headers stand alone too. The
 * guide: user/README.md; which guarantee comes from where:
 * docs/library.md.
 *
 * Conventions. As libperf's: objects are opaque; constructors return
 * NULL with errno set; every other function returns 0 (or a count) on
 * success and -errno on failure; the library never prints. Unlike
 * libperf's object__verb, public names are perfclock_<object>_<verb>
 * with single underscores (perfclock_queue_push(); perfclock_open() and
 * perfclock_read() are fixed ABI). The double underscore marks what is
 * NOT public: a helper shared between the library's files is named
 * <struct>__<verb> (perfclock_queue__over_cap()), hidden, and declared in
 * a private header; one used in a single file is static and unprefixed.
 * Reads of a clock are thread-safe, everything else (rings, queues)
 * belongs to one thread at a time.
 *
 * THE ROUND PATTERN. A tool that reads per-CPU rings in rounds:
 *
 *	perfclock_horizon(clk, &h);		   1. the horizon H, first
 *	for each ring:				   2. then drain every ring:
 *		perfclock_ring_read_begin(ring);	 loads data_head (acquire)
 *		while (perfclock_ring_read_event(ring, &rec) == 1)	 AFTER H
 *			if (rec.flags & PERFCLOCK_RECORD_HAS_TIME)
 *				perfclock_queue_push(q, cpu, rec.time, ...);
 *			(else: RECORDS WITHOUT A TIME, never pushed)
 *		perfclock_ring_read_end(ring);
 *	perfclock_queue_flush_until(q, h);	   3. emit everything below H
 *
 * With rings from perfclock_evring_open(), step 2 is one call,
 * perfclock_evring_drain(), which also counts PERF_RECORD_LOST apart;
 * examples/tracer.c in the source tree is a complete tool built on it.
 * Every record stamped below H was in its ring when perfclock_horizon()
 * returned, so no record below H turns up in a later round: the queue's
 * output is in time order, exactly where H is exact (perfclock_get_info()).
 */
#ifndef LIBPERFCLOCK_H
#define LIBPERFCLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "perfclock/clock.h"
#include "perfclock/horizon.h"
#include "perfclock/ring.h"
#include "perfclock/evring.h"
#include "perfclock/queue.h"
#include "perfclock/reader.h"
#include "perfclock/log.h"

#endif /* LIBPERFCLOCK_H */
