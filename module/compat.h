/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every kernel API difference perfclock depends on, in one place. Each
 * shim names the kernel version that changed the API. Supported range:
 * see BUILD_EXCLUSIVE_KERNEL_MIN in dkms.conf and the README.
 *
 * APIs used as they are, with no shim needed across the range (the
 * whole list, with sources, is docs/kernel-compat.md):
 *  - local_clock(): a static inline calling the exported sched_clock_cpu()
 *    up to 6.1, an exported function from 6.2 ("sched/clock: Make
 *    local_clock() noinstr"); callable from a module either way. Both
 *    built and run here: on 6.1 the module imports sched_clock_cpu
 *    alone, on 6.12 local_clock too.
 *  - get_zeroed_page(): a macro over get_zeroed_page_noprof() since 6.10
 *    (memory allocation profiling); the same call in the source.
 *  - misc_register()/misc_deregister() and struct miscdevice::mode.
 *  - compat_ptr_ioctl() (5.5); user_write_access_begin() (5.8);
 *    perfmon_capable() (5.8);
 *    get_state_synchronize_rcu(); ktime_mono_to_any() (3.17);
 *    sched_clock() and, on x86, check_tsc_unstable();
 *    start_poll_synchronize_rcu() and
 *    poll_state_synchronize_rcu() (5.12, the newest API here, hence the
 *    5.12 floor in dkms.conf).
 *  - sched_clock_cpu(), exported to GPL modules in every supported kernel.
 *  - tick_nohz_full_enabled(): reads tick_nohz_full_running, exported
 *    to modules since 5.5 (Debian's kernels set CONFIG_NO_HZ_FULL).
 *  - file_operations::mmap: still supported next to the newer
 *    ::mmap_prepare (6.16), which a later shim may adopt.
 */
#ifndef PERFCLOCK_COMPAT_H
#define PERFCLOCK_COMPAT_H

#include <linux/hrtimer.h>
#include <linux/mm.h>
#include <linux/version.h>
#include <linux/workqueue.h>

/*
 * The one version test. checkpatch rightly discourages LINUX_VERSION_CODE
 * in the tree; out of tree, where one source builds against many kernels
 * and a removed API has no feature macro to test, it is the only way to
 * tell them apart. scripts/lint.sh lets checkpatch skip this line alone.
 */
#define PERFCLOCK_KERNEL_BEFORE(a, b, c) \
	(LINUX_VERSION_CODE < KERNEL_VERSION(a, b, c))

/*
 * A distribution kernel may backport an API and keep its old version
 * number. Red Hat's does, and says so: its linux/version.h defines
 * RHEL_RELEASE_CODE. No other kernel defines it.
 */
#if defined(RHEL_RELEASE_CODE) && defined(RHEL_RELEASE_VERSION)
#define PERFCLOCK_RHEL_AT_LEAST(a, b) \
	(RHEL_RELEASE_CODE >= RHEL_RELEASE_VERSION(a, b))
#else
/* False for any release; 6.12's checkpatch wants both arguments used. */
#define PERFCLOCK_RHEL_AT_LEAST(a, b) ((a) < 0 && (b) < 0)
#endif

/*
 * 6.3 made vma->vm_flags read-only outside mm/ and added vm_flags_set()
 * and vm_flags_clear() ("mm: introduce vma->vm_flags wrapper functions"),
 * which since 6.4 also take the VMA's per-VMA lock (vma_start_write():
 * mmap_lock must be held for write, as it is in ->mmap; run on 6.12).
 * RHEL 9.5 backported both to its 5.14 kernel, where defining them again
 * fails ("redefinition of 'vm_flags_set'"). They are static inlines with
 * no macro to test for, so a version test it is.
 */
#if PERFCLOCK_KERNEL_BEFORE(6, 3, 0) && !PERFCLOCK_RHEL_AT_LEAST(9, 5)
static inline void vm_flags_set(struct vm_area_struct *vma, unsigned long flags)
{
	vma->vm_flags |= flags;
}

static inline void vm_flags_clear(struct vm_area_struct *vma,
				  unsigned long flags)
{
	vma->vm_flags &= ~flags;
}
#endif

/*
 * 6.13 added hrtimer_setup(), which sets the callback at init time;
 * hrtimer_init() was removed in 6.15. The shim has a name of its own and
 * a macro maps hrtimer_setup to it, so that a kernel with a backported
 * hrtimer_setup() and an older version number (as RHEL does with timer
 * APIs) gets no second definition: hrtimer_init() is still there.
 */
#if PERFCLOCK_KERNEL_BEFORE(6, 13, 0)
static inline void
perfclock_hrtimer_setup(struct hrtimer *timer,
			enum hrtimer_restart (*function)(struct hrtimer *),
			clockid_t clock_id, enum hrtimer_mode mode)
{
	hrtimer_init(timer, clock_id, mode);
	timer->function = function;
}

#define hrtimer_setup perfclock_hrtimer_setup
#endif

/*
 * start_poll_synchronize_rcu_expedited() ("rcu: Add polled expedited
 * grace-period primitives") is in 6.1 and, by that commit's date, came
 * in 5.19; only 6.1 is built here. Before it, horizon_expedited falls
 * back to a normal grace period: the horizon stays exact, only older.
 */
#if PERFCLOCK_KERNEL_BEFORE(5, 19, 0)
#define start_poll_synchronize_rcu_expedited start_poll_synchronize_rcu
#endif

/*
 * 6.17 added system_dfl_wq and system_percpu_wq, the new names of
 * system_unbound_wq and system_wq ("workqueue: Add system_percpu_wq and
 * system_dfl_wq"); the old names are to be removed
 * in a later release. Code written against the new name builds on older
 * kernels through this alias (a repeated extern declaration, if a kernel
 * backports the variable, is harmless).
 */
#if PERFCLOCK_KERNEL_BEFORE(6, 17, 0)
#define system_dfl_wq system_unbound_wq
#define system_percpu_wq system_wq
#endif

#endif /* PERFCLOCK_COMPAT_H */
