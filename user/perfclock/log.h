/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libperfclock: the log callback, the library's one way to say more than
 * an errno. The library never prints; errors worth a sentence (which attr
 * and CPU perfclock_evring_open() failed on, why an attr was refused) go
 * to a callback the tool gives. user/README.md, "Errors and the log".
 */
#ifndef LIBPERFCLOCK_LOG_H
#define LIBPERFCLOCK_LOG_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Errors that say what failed. A tool that wants to know which attr and
 * CPU perfclock_evring_open() failed on, or why an attr was refused,
 * gives a callback, as libperf_init() does: fn(level, message, arg),
 * message one line without a newline. fn NULL (the default) turns it
 * off. Process-wide; set it before opening anything (a thread calling the
 * library meanwhile may still use the old callback once).
 * (PERFCLOCK_0.2.2)
 */
#define PERFCLOCK_LOG_ERR	1
#define PERFCLOCK_LOG_DEBUG	2
typedef void (*perfclock_log_fn)(int level, const char *msg, void *arg);
void perfclock_set_log(perfclock_log_fn fn, void *arg);

#ifdef __cplusplus
}
#endif

#endif /* LIBPERFCLOCK_LOG_H */
