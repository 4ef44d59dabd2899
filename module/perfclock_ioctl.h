/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * perfclock: user-space access to perf_clock(), the clock perf stamps its
 * records with (local_clock(), for events opened without use_clockid).
 *
 * /dev/perfclock offers two ways to read it:
 *
 *  - PERFCLOCK_IOC_GET_TIME: an exact read. The value is local_clock() read
 *    on the CPU reported in perfclock_time::cpu, with preemption disabled,
 *    during the ioctl. A perf record produced on the same CPU between two
 *    such reads carries a timestamp between the two values.
 *
 *  - One read-only page, mmap()ed at offset 0 with exactly one page of
 *    length, laid out as struct perfclock_page below. It always carries a
 *    coarse lower bound of the clock, and, when PERFCLOCK_PAGE_TSC_VALID is
 *    set, the parameters to compute the current local_clock() from the TSC
 *    without a system call (the same conversion perf publishes in
 *    perf_event_mmap_page::time_zero/time_mult/time_shift).
 *
 * Cross-CPU causality: local_clock() is only globally monotonic when the
 * kernel's sched_clock is stable. Otherwise a read on one CPU made after a
 * read on another CPU can come out smaller, by at most skew_bound_ns (see
 * struct perfclock_info and the README for how the bound is derived).
 */
#ifndef _UAPI_LINUX_PERFCLOCK_IOCTL_H
#define _UAPI_LINUX_PERFCLOCK_IOCTL_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define PERFCLOCK_DEVICE_PATH	"/dev/perfclock"

/* Bumped on any incompatible change to the ioctls or their structs. */
#define PERFCLOCK_ABI_VERSION	1
/* Bumped on any incompatible change to struct perfclock_page. */
#define PERFCLOCK_PAGE_VERSION	1

/*
 * Magic 0xB2: free in Documentation/userspace-api/ioctl/ioctl-number.rst
 * (between 0xB1 "PPPoX" and 0xB3 "linux/mmc/ioctl.h"); perfclock uses
 * command numbers 0x00-0x0F.
 */
#define PERFCLOCK_IOC_MAGIC	0xB2

/* struct perfclock_time::flags */
/* sched_clock was known stable at the read: the value is causal across CPUs. */
#define PERFCLOCK_TIME_STABLE	0x00000001U

struct perfclock_time {
	__u64 ns;	/* local_clock() in nanoseconds */
	__u32 cpu;	/* CPU on which it was read */
	__u32 flags;	/* PERFCLOCK_TIME_* */
};

/* struct perfclock_info::flags */
/* sched_clock is stable: local_clock() is one clock for every CPU. */
#define PERFCLOCK_INFO_SCHED_CLOCK_STABLE	0x00000001U
/* The page currently offers the current time without a system call. */
#define PERFCLOCK_INFO_PAGE_TSC_VALID		0x00000002U

struct perfclock_info {
	__u32 abi_version;	/* PERFCLOCK_ABI_VERSION */
	__u32 page_version;	/* PERFCLOCK_PAGE_VERSION */
	__u32 flags;		/* PERFCLOCK_INFO_* */
	__u32 page_size;	/* length to pass to mmap() */
	/*
	 * A read of local_clock() on one CPU made after (in the sense of
	 * happens-before) a read on another CPU is smaller by at most this
	 * many nanoseconds. 0 when sched_clock is stable. Otherwise it can
	 * grow over time (see timer_lateness_ns): re-read it each round.
	 */
	__u64 skew_bound_ns;
	/* The page's coarse value is refreshed at least this often. */
	__u64 update_period_ns;
	/*
	 * Largest backward step the module itself observed between CPUs
	 * (IPI ping-pong at load). Never larger than skew_bound_ns.
	 */
	__u64 measured_skew_ns;
	/*
	 * Worst lateness of the module's own periodic hrtimer seen since
	 * load: how late timer interrupts, the scheduler tick among them,
	 * have been delivered here. The unstable-regime skew bound grows
	 * with it (a CPU whose tick is late lags by as much).
	 */
	__u64 timer_lateness_ns;
	__u64 reserved[3];	/* zero */
};

#define PERFCLOCK_IOC_GET_TIME	_IOR(PERFCLOCK_IOC_MAGIC, 0x01, struct perfclock_time)
#define PERFCLOCK_IOC_GET_INFO	_IOR(PERFCLOCK_IOC_MAGIC, 0x02, struct perfclock_info)

/* struct perfclock_page::flags */
/*
 * tsc_mult, tsc_shift and tsc_offset convert the TSC of any online CPU to
 * its current local_clock(). When clear, readers must use
 * PERFCLOCK_IOC_GET_TIME for the current time.
 */
#define PERFCLOCK_PAGE_TSC_VALID		0x00000001U
/* Mirrors PERFCLOCK_INFO_SCHED_CLOCK_STABLE. */
#define PERFCLOCK_PAGE_SCHED_CLOCK_STABLE	0x00000002U

/*
 * The clock page. Little-endian host layout, fixed offsets; new fields
 * only ever take the place of reserved space, and the size is one page
 * whatever PAGE_SIZE is
 * (the struct itself is 4096 bytes; map perfclock_info::page_size bytes).
 *
 * Read protocol (the module is the only writer; it makes seq odd while
 * it updates the page, like the vDSO data page):
 *
 *	do {
 *		seq = READ_ONCE(pg->seq);
 *		if (seq & 1)
 *			continue;	// update in progress: retry (bounded)
 *		rmb();			// pairs with the writer's second smp_wmb()
 *
 *		flags  = pg->flags;
 *		mult   = pg->tsc_mult;
 *		shift  = pg->tsc_shift;
 *		offset = pg->tsc_offset;
 *		coarse = pg->coarse_ns;
 *		tsc    = rdtsc_ordered();	// lfence; rdtsc
 *
 *		rmb();			// pairs with the writer's first smp_wmb()
 *	} while (READ_ONCE(pg->seq) != seq);
 *
 *	if (!(flags & PERFCLOCK_PAGE_TSC_VALID))
 *		use PERFCLOCK_IOC_GET_TIME, or coarse_ns as a lower bound;
 *
 *	// perf's own time_zero conversion (see perf_event_mmap_page):
 *	quot = tsc >> shift;
 *	rem  = tsc & (((__u64)1 << shift) - 1);
 *	ns   = offset + quot * mult + ((rem * mult) >> shift);
 *
 * On x86 rmb() is a compiler barrier; the TSC read must be ordered
 * (lfence; rdtsc, or rdtscp) so that it is not taken outside the loop.
 * Retry a bounded number of times, then fall back to the ioctl.
 *
 * coarse_ns is the last local_clock() the module sampled, on coarse_cpu,
 * refreshed at least every update_period_ns while any file has the device
 * open or mapped. It is a LOWER BOUND of the clock, never "now": any
 * record stamped after the page was read has a timestamp of at least
 * coarse_ns - skew_bound_ns.
 */
struct perfclock_page {
	__u32 seq;		/* odd while being updated */
	__u32 version;		/* PERFCLOCK_PAGE_VERSION */
	__u32 flags;		/* PERFCLOCK_PAGE_* */
	__u32 tsc_shift;
	__u64 tsc_mult;		/* fits in 32 bits today */
	__u64 tsc_offset;
	__u64 coarse_ns;	/* lower bound, see above */
	__u32 coarse_cpu;
	__u32 __reserved0;
	__u64 skew_bound_ns;	/* as in perfclock_info */
	__u64 update_period_ns;	/* as in perfclock_info */
	__u64 update_count;	/* bumped by every update */
	__u64 timer_lateness_ns;	/* as in perfclock_info */
	__u64 __reserved[502];	/* zero; pads the struct to 4096 bytes */
};

#endif /* _UAPI_LINUX_PERFCLOCK_IOCTL_H */
