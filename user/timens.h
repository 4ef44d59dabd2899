/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Time namespaces (user/timens.c): the library's reads of a clockid clock
 * brought back to the clock perf stamps with. Library-private; not
 * installed.
 *
 * Inside a time namespace clock_gettime() of CLOCK_MONOTONIC,
 * CLOCK_MONOTONIC_RAW, CLOCK_MONOTONIC_COARSE and CLOCK_BOOTTIME adds the
 * namespace's offset; perf stamps use_clockid records with the kernel's
 * own accessors, which never do. perfclock__timens_to_host() subtracts
 * the offset, so that every read the library hands out (perfclock_read(),
 * the lower bound, every membarrier and estimated horizon) is in the
 * stamps' clock. The module's horizons and reads (GET_HORIZON,
 * GET_TIME, its page) are taken in the kernel and never had the offset.
 */
#ifndef PERFCLOCK_TIMENS_H
#define PERFCLOCK_TIMENS_H

#include <stdint.h>
#include <time.h>

/*
 * At perfclock_open_clockid(): can this process's offset for clockid be
 * known? 0; or -1 with errno EOPNOTSUPP when the clock is one a time
 * namespace offsets and the offset cannot be read: /proc is not mounted
 * (or hides /proc/self/ns/time), or the process is in a time namespace
 * that is not the one /proc/self/timens_offsets describes (it called
 * unshare(CLONE_NEWTIME) and has neither forked nor exec'd since: that
 * file shows the children's namespace). Re-reads the namespace (an open
 * after setns() sees the new one).
 */
int perfclock__timens_open(clockid_t clockid);

/*
 * *ns, a clock_gettime(clockid) read of this process, less the
 * namespace's offset for clockid: 0, or -EOPNOTSUPP as above (a fork()
 * child re-reads its namespace on its first read).
 */
int perfclock__timens_to_host(clockid_t clockid, uint64_t *ns);

/*
 * Has the process changed time namespace (setns(), which the kernel
 * allows only to a single-threaded process: kernel/time/namespace.c:
 * timens_install(), -EUSERS otherwise)? If so the offsets are read again,
 * before this returns: every read after it on this thread, or on a thread
 * started after it, takes off the new ones. One readlink() of /proc/self/ns/time, none before the offsets
 * were first read in this process (or fork child).
 *
 * Called before every path that reads the clock to make a horizon on the
 * caller's thread, where a horizon taken with the old offset would be
 * wrong by the difference of the two namespaces' offsets: the estimate
 * (horizon_estimate.c), H_c (horizon_percpu.c), membarrier's sync and
 * helper start (horizon_membarrier.c), the module's sync
 * (horizon_module.c), perfclock_get_info() (horizon.c). Sound because
 * the only thread there is then the caller: a setns() cannot come
 * between the recheck and the read. perfclock_read() does not call it
 * (a system call on every read): timens.c's header says when a plain
 * read sees a setns().
 */
void perfclock__timens_recheck(void);

/* perfclock__timens_recheck() if clockid is one a namespace offsets. */
void perfclock__timens_recheck_clock(clockid_t clockid);

#endif /* PERFCLOCK_TIMENS_H */
