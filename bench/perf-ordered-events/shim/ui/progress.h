/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What perf's util/ordered-events.c needs from ui/progress.h, for the
 * queue bench: a progress bar it only shows on a final flush, as no-ops.
 */
#ifndef PERFCLOCK_OE_SHIM_PROGRESS_H
#define PERFCLOCK_OE_SHIM_PROGRESS_H
struct ui_progress {
	int unused;
};
#define ui_progress__init(p, total, title) ((void)(p))
#define ui_progress__update(p, adv) ((void)(p))
#define ui_progress__finish() ((void)0)
#endif
