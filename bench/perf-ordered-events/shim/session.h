/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What perf's util/ordered-events.c needs from util/session.h, for the
 * queue bench: the perf event union (libperf's header) and
 * session_done(), which a bench never sets.
 */
#ifndef PERFCLOCK_OE_SHIM_SESSION_H
#define PERFCLOCK_OE_SHIM_SESSION_H
#include <limits.h>
#include <perf/event.h>

static inline int session_done(void)
{
	return 0;
}
#endif
