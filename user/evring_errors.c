// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Errors that say what failed: the log callback a tool may give
 * (perfclock_set_log(), libperf_init()'s print callback in spirit: the
 * library never prints on its own), and what perfclock_evring_open()
 * tells it when an event does not open: which attr, on which CPU, why.
 *
 * A bad tracepoint id: the kernel answers EINVAL
 * (kernel/trace/trace_event_perf.c: perf_trace_init() starts from
 * -EINVAL and keeps it when no trace event has the id), the errno of a
 * malformed attr too. The header promises ENOENT for "no such event", so
 * an EINVAL for a tracepoint is checked against tracefs: an id that no
 * events/<system>/<name>/id lists becomes ENOENT. Where tracefs cannot
 * be read the kernel's EINVAL stands (nothing to tell the two apart by).
 */
#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "internal.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static perfclock_log_fn log_fn;
static void *log_arg;

PERFCLOCK_API void perfclock_set_log(perfclock_log_fn fn, void *arg)
{
	pthread_mutex_lock(&log_lock);
	log_fn = fn;
	log_arg = arg;
	pthread_mutex_unlock(&log_lock);
}

/* The callback runs outside the lock: it may call perfclock_set_log(). */
void perfclock__log(int level, const char *fmt, ...)
{
	perfclock_log_fn fn;
	char msg[512];
	va_list ap;
	void *arg;

	pthread_mutex_lock(&log_lock);
	fn = log_fn;
	arg = log_arg;
	pthread_mutex_unlock(&log_lock);
	if (!fn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fn(level, msg, arg);
}

/*
 * Is id a tracepoint id tracefs lists? 1 yes, 0 no, -1 tracefs not
 * readable (neither mount point has events/).
 */
static int tracepoint_listed(uint64_t id)
{
	static const char *const pat[] = {
		"/sys/kernel/tracing/events/*/*/id",
		"/sys/kernel/debug/tracing/events/*/*/id",
	};
	unsigned int i;
	size_t k;

	for (i = 0; i < sizeof(pat) / sizeof(pat[0]); i++) {
		glob_t g;
		int found = 0;

		if (glob(pat[i], 0, NULL, &g))
			continue;
		for (k = 0; k < g.gl_pathc && !found; k++) {
			FILE *f = fopen(g.gl_pathv[k], "re");
			uint64_t v;

			if (!f)
				continue;
			found = fscanf(f, "%" SCNu64, &v) == 1 && v == id;
			fclose(f);
		}
		globfree(&g);
		return found;
	}
	return -1;
}

/*
 * EACCES and EPERM from perf_event_open(): who may open what
 * (kernel/events/core.c: perf_event_open() and perf_allow_cpu(); the
 * knob, Documentation/admin-guide/perf-security.rst), with the knob's
 * value here, so that the log says what to change. "" when not one.
 */
static void access_hint(int err, char *buf, size_t len)
{
	FILE *f;
	int level;

	buf[0] = 0;
	if (err != EACCES && err != EPERM)
		return;
	f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	if (!f || fscanf(f, "%d", &level) != 1) {
		if (f)
			fclose(f);
		snprintf(buf, len, " (perf_event_paranoid unreadable; events on every CPU need CAP_PERFMON or CAP_SYS_ADMIN, or perf_event_paranoid <= 0)");
		return;
	}
	fclose(f);
	snprintf(buf, len, " (perf_event_paranoid is %d: events on every CPU (pid -1) need CAP_PERFMON or CAP_SYS_ADMIN, or perf_event_paranoid <= 0; a task's own events, <= 2)",
		 level);
}

int perfclock__evring_open_error(const struct perf_event_attr *attr,
				 uint32_t attr_idx, int cpu, int err)
{
	char hint[192];

	if (err == EINVAL && attr->type == PERF_TYPE_TRACEPOINT &&
	    tracepoint_listed(attr->config) == 0)
		err = ENOENT;
	access_hint(err, hint, sizeof(hint));
	perfclock__log(PERFCLOCK_LOG_ERR,
		       "perfclock_evring_open: attrs[%" PRIu32 "] (type %" PRIu32
		       ", config %#" PRIx64 ") on CPU %d: %s%s%s", attr_idx,
		       attr->type, (uint64_t)attr->config, cpu, strerror(err),
		       err == ENOENT && attr->type == PERF_TYPE_TRACEPOINT ?
		       " (no tracepoint has this id in tracefs)" : "", hint);
	return err;
}
