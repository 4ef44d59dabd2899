/* SPDX-License-Identifier: GPL-2.0 */
/*
 * /dev/perfclock_floor's commands (perfclock_floor.c), for perfclock_bench.
 * Bench only: not an interface anything else may use.
 */
#ifndef PERFCLOCK_FLOOR_H
#define PERFCLOCK_FLOOR_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define PERFCLOCK_FLOOR_MAGIC	0xC4
/* local_clock() and the CPU, as GET_TIME reads them; nothing copied out. */
#define PERFCLOCK_FLOOR_CLOCK	_IO(PERFCLOCK_FLOOR_MAGIC, 0x40)
/* GET_TIME's body: the same plus its 16-byte copy-out. */
#define PERFCLOCK_FLOOR_TIME	_IOR(PERFCLOCK_FLOOR_MAGIC, 0x41, struct perfclock_floor_time)
/* An unknown command of this device: _IO(PERFCLOCK_FLOOR_MAGIC, 0x4f). */

struct perfclock_floor_time {	/* struct perfclock_time's layout */
	__u64 ns;
	__u32 cpu;
	__u32 flags;
};

#endif /* PERFCLOCK_FLOOR_H */
