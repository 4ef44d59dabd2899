// SPDX-License-Identifier: GPL-2.0
/*
 * Bench only (make bench's guest; never installed): what an ioctl that
 * returns local_clock() cannot avoid. perfclock_bench compares
 * PERFCLOCK_IOC_GET_TIME with an unknown command on /dev/perfclock (the
 * same syscall, fd lookup, LSM hook, do_vfs_ioctl() and dispatch); the
 * difference is the clock read and the copy-out. This device answers
 * three commands on the same VFS path, so that the two parts are
 * measured apart in the same boot:
 *
 *   PERFCLOCK_FLOOR_CLOCK  local_clock() and the CPU under
 *                          preempt_disable(), as GET_TIME reads them,
 *                          and nothing else: the floor of any ioctl that
 *                          returns local_clock();
 *   PERFCLOCK_FLOOR_TIME   module/perfclock.c:perfclock_ioctl_get_time()'s
 *                          body (keep the two alike);
 *   anything else          -ENOTTY, this device's unknown ioctl.
 *
 * local_clock() is kernel/sched/clock.c:sched_clock_cpu(), exported, which
 * calls sched_clock() (a static call to arch/x86/kernel/tsc.c:
 * native_sched_clock()); a module cannot take a shorter way to the same
 * value (__sched_clock_offset and sched_clock_stable() are not exported).
 */
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/sched/clock.h>
#include <linux/uaccess.h>

#include "perfclock_floor.h"

/* Stands for perfclock.stable, which GET_TIME reads for its flags. */
static bool perfclock_floor_stable;

static long perfclock_floor_time(struct perfclock_floor_time __user *ut)
{
	u32 cpu, flags = 0;
	u64 ns;

	preempt_disable();
	cpu = smp_processor_id();
	ns = local_clock();
	preempt_enable();
	if (READ_ONCE(perfclock_floor_stable))
		flags |= 1;

	if (!user_write_access_begin(ut, sizeof(*ut)))
		return -EFAULT;
	unsafe_put_user(ns, &ut->ns, efault);
	unsafe_put_user(cpu, &ut->cpu, efault);
	unsafe_put_user(flags, &ut->flags, efault);
	user_write_access_end();
	return 0;

efault:
	user_write_access_end();
	return -EFAULT;
}

static long perfclock_floor_ioctl(struct file *file, unsigned int cmd,
				  unsigned long arg)
{
	u32 cpu;
	u64 ns;

	switch (cmd) {
	case PERFCLOCK_FLOOR_CLOCK:
		preempt_disable();
		cpu = smp_processor_id();
		ns = local_clock();
		preempt_enable();
		OPTIMIZER_HIDE_VAR(cpu);
		OPTIMIZER_HIDE_VAR(ns);
		return 0;
	case PERFCLOCK_FLOOR_TIME:
		return perfclock_floor_time((void __user *)arg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations perfclock_floor_fops = {
	.owner		= THIS_MODULE,
	.unlocked_ioctl	= perfclock_floor_ioctl,
};

static struct miscdevice perfclock_floor_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "perfclock_floor",
	.fops	= &perfclock_floor_fops,
	.mode	= 0444,
};

module_misc_device(perfclock_floor_misc);

MODULE_DESCRIPTION("perfclock bench: the floor of an ioctl returning local_clock()");
MODULE_LICENSE("GPL");
