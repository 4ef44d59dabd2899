/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every kernel API difference perfclock depends on, in one place. Each
 * shim names the kernel version that changed the API. Supported range:
 * see BUILD_EXCLUSIVE_KERNEL_MIN in dkms.conf and the README.
 *
 * APIs used as they are, with no shim needed across the range:
 *  - local_clock(): a static inline calling the exported sched_clock_cpu()
 *    up to 6.1, an exported function from 6.2 ("sched/clock: Make
 *    local_clock() noinstr"); callable from a module either way.
 *  - misc_register()/misc_deregister() and struct miscdevice::mode.
 *  - compat_ptr_ioctl() (5.5).
 *  - file_operations::mmap: still supported next to the newer
 *    ::mmap_prepare (6.17), which a later shim may adopt.
 */
#ifndef PERFCLOCK_COMPAT_H
#define PERFCLOCK_COMPAT_H

#include <linux/hrtimer.h>
#include <linux/mm.h>
#include <linux/version.h>

/*
 * The one version test. checkpatch rightly discourages LINUX_VERSION_CODE
 * in the tree; out of tree, where one source builds against many kernels
 * and a removed API has no feature macro to test, it is the only way to
 * tell them apart. scripts/lint.sh lets checkpatch skip this line alone.
 */
#define PERFCLOCK_KERNEL_BEFORE(a, b, c) \
	(LINUX_VERSION_CODE < KERNEL_VERSION(a, b, c))

/*
 * 6.3 made vma->vm_flags read-only outside mm/ and added vm_flags_set()
 * and vm_flags_clear() ("mm: introduce vma->vm_flags wrapper functions").
 */
#if PERFCLOCK_KERNEL_BEFORE(6, 3, 0)
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
 * hrtimer_init() was removed in 6.15.
 */
#if PERFCLOCK_KERNEL_BEFORE(6, 13, 0)
static inline void hrtimer_setup(struct hrtimer *timer,
				 enum hrtimer_restart (*function)(struct hrtimer *),
				 clockid_t clock_id, enum hrtimer_mode mode)
{
	hrtimer_init(timer, clock_id, mode);
	timer->function = function;
}
#endif

#endif /* PERFCLOCK_COMPAT_H */
