// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Time namespaces: a use_clockid record is stamped without the process's
 * time namespace offset, a clock_gettime() read carries it. This file
 * finds the offset and takes it off the library's reads (timens.h).
 *
 * WHAT THE KERNEL OFFSETS (read in mainline; the same since 5.6):
 *  - perf's stamp: kernel/events/core.c: perf_event_set_clock() picks
 *    ktime_get_mono_fast_ns(), ktime_get_raw_fast_ns(),
 *    ktime_get_boottime_ns(), ktime_get_real_ns(), ktime_get_clocktai_ns():
 *    the host's clocks, whatever namespace the event's owner is in.
 *  - the vDSO: kernel/time/namespace.c: timens_setup_vdso_clock_data()
 *    gives the namespace's vvar page offset[CLOCK_MONOTONIC],
 *    offset[CLOCK_MONOTONIC_RAW] and offset[CLOCK_MONOTONIC_COARSE] =
 *    the monotonic offset, offset[CLOCK_BOOTTIME] = the boottime offset;
 *    lib/vdso/gettimeofday.c: do_hres_timens() and do_coarse_timens()
 *    add offset[clock] to the host's value (timespec addition).
 *  - the system call (the vDSO falls back to it when the clocksource has
 *    no vDSO mode): kernel/time/posix-timers.c:
 *    posix_get_monotonic_timespec(), posix_get_monotonic_raw() and
 *    posix_get_monotonic_coarse() call timens_add_monotonic(),
 *    posix_get_boottime_timespec() timens_add_boottime(). So RAW does
 *    get the monotonic offset, on both paths. REALTIME and TAI are not
 *    offset (there is no such offset to set).
 *  - the offsets: /proc/PID/timens_offsets (fs/proc/base.c ->
 *    namespace.c: proc_timens_show_offsets()) prints "monotonic S N" and
 *    "boottime S N", nanoseconds normalized to [0, 1e9), of the task's
 *    time_ns_for_children, not of its time_ns. The two differ only
 *    between unshare(CLONE_NEWTIME) and the next fork() or execve()
 *    (timens_on_fork(), kernel/nsproxy.c: exec_task_namespaces()): we
 *    compare the inodes of /proc/self/ns/time and time_for_children, and
 *    if they differ the file is not ours: the offset is 0 if our own is
 *    the initial namespace (PROC_TIME_INIT_INO, include/linux/proc_ns.h),
 *    unknown otherwise (refused). Offsets can be written only before a
 *    task enters the namespace (proc_timens_set_offset(): -EACCES once
 *    frozen_offsets), so ours never change while we are in it.
 *  - changing namespace: setns() is refused to a multi-threaded process
 *    (timens_install(): -EUSERS), a fork() child enters its parent's
 *    time_ns_for_children. So the offsets are per process and per fork;
 *    a child re-reads them (pthread_atfork()), and
 *    perfclock__timens_recheck() catches a single-threaded caller's
 *    setns() (SETNS below).
 *
 * SETNS. After setns(CLONE_NEWTIME) the process's clock_gettime() reads
 * carry the new namespace's offset at once (kernel/nsproxy.c:
 * commit_nsset() -> timens_commit() -> vdso_join_timens() switches the
 * vDSO's page; the system call reads current's nsproxy). The library
 * sees it at the recheck, one readlink() of /proc/self/ns/time against
 * the inode the offsets were read with:
 *  - before every horizon made from a clock read on the caller's thread:
 *    H_c (horizon_percpu.c: clockid_getcpu()), the estimate
 *    (horizon_estimate.c), membarrier's sync and the start of its helper
 *    (horizon_membarrier.c; while the helper runs the process has two
 *    threads and cannot setns()), the module's sync (horizon_module.c);
 *    a horizon made with the old offset would be wrong by the difference
 *    of the two offsets (+100 s: records flushed 100 s before they are
 *    complete);
 *  - at perfclock_open_clockid() and perfclock_get_info().
 * Between the recheck and the read the caller is the only thread, so no
 * setns() can come in between. The module's and membarrier's horizons
 * handed out without a read on the caller's thread are the kernel's or
 * ones proven before the setns(), in the host's clock either way: not
 * affected.
 *   perfclock_read() and perfclock_read_lower_bound() do not recheck: it
 * would be a system call on a read that is otherwise a vDSO call (41 ns
 * against 3 to 4 us for the readlink(), measured on a 2-CPU VM), and nothing
 * cheaper tells the namespace (the vDSO's page is not ABI). So after a
 * setns() they take the old offset off until one of the points above: a
 * caller that setns() with a clock open calls perfclock_get_info() (or
 * takes a horizon of a kind above) before trusting a read. A fork()
 * child re-reads on its first read. Threads started after the recheck
 * see what it stored (pthread_create() orders them after it); a thread
 * that rechecks finds the new inode and the new offsets with it (the
 * inode is stored with a release after them, load(), and loaded with an
 * acquire).
 *   The recheck compares our own link only: unshare(CLONE_NEWTIME)
 * changes the children's and not our offsets (frozen once a task is in
 * the namespace), so offsets already read stay right; the refusal above
 * is for a process that has not read them before its unshare().
 *
 * Exactness: the subtraction undoes the kernel's addition to the
 * nanosecond (both are whole nanoseconds, normalized), so a read here is
 * the host clock's value, the one perf compares against.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "timens.h"

/* include/linux/proc_ns.h: the initial time namespace's inode number. */
#define PROC_TIME_INIT_INO	0xEFFFFFFAU

#define NS_TIME		"/proc/self/ns/time"
#define NS_TIME_KIDS	"/proc/self/ns/time_for_children"
#define NS_DIR		"/proc/self/ns"
#define OFFSETS		"/proc/self/timens_offsets"

enum { TNS_UNKNOWN, TNS_KNOWN, TNS_FAILED };

/*
 * One per process. key: the fork generation the offsets were read in,
 * shifted left by 2, with a TNS_* state in the low bits; stored with a
 * release after the values, loaded with an acquire. Several threads may
 * read the offsets at once: they find the same values (no setns() while
 * there are threads), so the stores race harmlessly. No lock: nothing a
 * fork() could copy while held.
 */
static struct {
	uint64_t key;
	int64_t mono, boot;
	int err;
	/*
	 * The inode of /proc/self/ns/time when read, 0 if none: stored with
	 * a release after the values, loaded with an acquire (recheck()): a
	 * thread that finds the new namespace here finds its offsets too.
	 */
	uint64_t ino;
} tns;

static unsigned int fork_gen;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_child(void)
{
	__atomic_add_fetch(&fork_gen, 1, __ATOMIC_RELAXED);
}

static void atfork_register(void)
{
	pthread_atfork(NULL, NULL, atfork_child);
}

static uint64_t key_of(int state)
{
	return (uint64_t)__atomic_load_n(&fork_gen, __ATOMIC_RELAXED) << 2 |
	       (uint64_t)state;
}

static int offsetted(clockid_t id)
{
	return id == CLOCK_MONOTONIC || id == CLOCK_MONOTONIC_RAW ||
	       id == CLOCK_MONOTONIC_COARSE || id == CLOCK_BOOTTIME;
}

/* "monotonic S N\nboottime S N\n" -> nanoseconds. 0 or -EOPNOTSUPP. */
static int parse_offsets(int64_t *mono, int64_t *boot)
{
	char buf[256], name[16];
	const char *p = buf;
	long long sec;
	long nsec;
	int fd, n, used, seen = 0;
	ssize_t len;

	fd = open(OFFSETS, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -EOPNOTSUPP;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -EOPNOTSUPP;
	buf[len] = 0;
	while (sscanf(p, "%15s %lld %ld%n", name, &sec, &nsec, &used) == 3) {
		if (nsec < 0 || nsec >= 1000000000L ||
		    sec > INT64_MAX / 1000000000LL - 1 ||
		    sec < INT64_MIN / 1000000000LL + 1)
			return -EOPNOTSUPP;
		n = !strcmp(name, "monotonic") ? 1 :
		    !strcmp(name, "boottime") ? 2 : 0;
		if (n == 1)
			*mono = sec * 1000000000LL + nsec;
		else if (n == 2)
			*boot = sec * 1000000000LL + nsec;
		seen |= n;
		p += used;
	}
	return seen == 3 ? 0 : -EOPNOTSUPP;
}

/* Find this process's offsets: 0, or -EOPNOTSUPP (timens.h). */
static int read_offsets(int64_t *mono, int64_t *boot, uint64_t *ino)
{
	struct stat own, kids;

	*mono = *boot = 0;
	*ino = 0;
	if (stat(NS_TIME, &own)) {
		/* /proc is there, the kernel has no time namespaces: none. */
		if (errno == ENOENT && access(NS_DIR, X_OK) == 0)
			return 0;
		return -EOPNOTSUPP;
	}
	*ino = own.st_ino;
	if (stat(NS_TIME_KIDS, &kids))
		return -EOPNOTSUPP;
	if (own.st_dev == kids.st_dev && own.st_ino == kids.st_ino)
		return parse_offsets(mono, boot);
	/* The file shows the children's namespace, not ours. */
	return own.st_ino == PROC_TIME_INIT_INO ? 0 : -EOPNOTSUPP;
}

static int load(void)
{
	uint64_t key = key_of(TNS_KNOWN), ino;
	int64_t mono, boot;
	int err;

	err = read_offsets(&mono, &boot, &ino);
	__atomic_store_n(&tns.mono, mono, __ATOMIC_RELAXED);
	__atomic_store_n(&tns.boot, boot, __ATOMIC_RELAXED);
	__atomic_store_n(&tns.err, err, __ATOMIC_RELAXED);
	__atomic_store_n(&tns.ino, ino, __ATOMIC_RELEASE);
	if (err)
		key = key_of(TNS_FAILED);
	__atomic_store_n(&tns.key, key, __ATOMIC_RELEASE);
	return err;
}

/* The offsets of this process, read if this fork generation has not. */
static int current_offsets(int64_t *mono, int64_t *boot)
{
	uint64_t key = __atomic_load_n(&tns.key, __ATOMIC_ACQUIRE);
	int err;

	if (key == key_of(TNS_FAILED))
		return __atomic_load_n(&tns.err, __ATOMIC_RELAXED);
	if (key != key_of(TNS_KNOWN)) {
		pthread_once(&atfork_once, atfork_register);
		err = load();
		if (err)
			return err;
	}
	*mono = __atomic_load_n(&tns.mono, __ATOMIC_RELAXED);
	*boot = __atomic_load_n(&tns.boot, __ATOMIC_RELAXED);
	return 0;
}

int perfclock__timens_to_host(clockid_t clockid, uint64_t *ns)
{
	int64_t mono, boot;
	int err;

	if (!offsetted(clockid))
		return 0;
	err = current_offsets(&mono, &boot);
	if (err)
		return err;
	/* The kernel added it to a host value >= 0: this is that value. */
	*ns = (uint64_t)((int64_t)*ns -
			 (clockid == CLOCK_BOOTTIME ? boot : mono));
	return 0;
}

/*
 * The inode number of our time namespace, from the link's text, 0 if
 * none: fs/proc/namespaces.c: proc_ns_readlink() -> fs/nsfs.c:
 * ns_get_name() prints "time:[inum]", the st_ino a stat() through the
 * link finds (nsfs gives each namespace's inode i_ino = its inum, unique
 * on its one superblock). readlink() is the cheaper of the two: it does
 * not open the namespace's inode (3 to 4 us against 6 us on a 2-CPU VM).
 */
static uint64_t own_ino(void)
{
	char buf[64];
	unsigned long long ino;
	ssize_t n;

	n = readlink(NS_TIME, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	if (sscanf(buf, "time:[%llu]", &ino) != 1)
		return 0;
	return ino;
}

/*
 * Our own link only. setns() changes it (kernel/time/namespace.c:
 * timens_install() sets time_ns and time_ns_for_children, and
 * timens_commit() switches the vDSO to the new namespace's page), so a
 * change of namespace is a change of its inode. unshare(CLONE_NEWTIME)
 * changes only the children's link: our clocks keep their offsets, which
 * proc_timens_set_offset() cannot change once a task is in the
 * namespace (-EACCES, frozen_offsets), so offsets already read stay
 * right; reading them again would find the file showing the children's
 * namespace and refuse every later read for nothing.
 */
void perfclock__timens_recheck(void)
{
	uint64_t key = __atomic_load_n(&tns.key, __ATOMIC_ACQUIRE);

	if ((key & 3) == TNS_UNKNOWN || key >> 2 != key_of(0) >> 2)
		return;		/* not read yet in this process */
	if (own_ino() != __atomic_load_n(&tns.ino, __ATOMIC_ACQUIRE))
		load();
}

void perfclock__timens_recheck_clock(clockid_t clockid)
{
	if (offsetted(clockid))
		perfclock__timens_recheck();
}

int perfclock__timens_open(clockid_t clockid)
{
	int64_t mono, boot;
	int err;

	if (!offsetted(clockid))
		return 0;
	perfclock__timens_recheck();
	err = current_offsets(&mono, &boot);
	if (err) {
		errno = -err;
		return -1;
	}
	return 0;
}
