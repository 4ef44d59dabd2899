/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What perf's util/ordered-events.c needs from util/debug.h, for the
 * queue bench: its debug printing, compiled out (perf prints these only
 * with --debug ordered-events=N).
 */
#ifndef PERFCLOCK_OE_SHIM_DEBUG_H
#define PERFCLOCK_OE_SHIM_DEBUG_H
#define pr_fmt(fmt) fmt
#define debug_ordered_events 0
#define eprintf(level, var, fmt, ...) ((void)0)
#define pr_oe_time(t, fmt, ...) ((void)(t))
#define pr_oe_time2(t, fmt, ...) ((void)(t))
#endif
