// SPDX-License-Identifier: GPL-2.0
/*
 * perfclock_fuzz: an interface fuzzer for /dev/perfclock that checks every
 * call's result against the documented behaviour (module/perfclock_ioctl.h,
 * module/perfclock.c, and the VFS/mm rules in front of them), not only
 * that nothing crashes. Meant for the debug guest (KASAN, lockdep, UBSAN,
 * kmemleak): the kernel finds the memory and locking bugs, this program
 * finds the wrong answers.
 *
 *   perfclock_fuzz [--seed N] [--seconds S] [--ko PATH] [--threads N]
 *                  [--round R] [--verbose]
 *   perfclock_fuzz --fail-init PATH [--full] [--max-nth N]
 *
 * Random mode runs rounds until --seconds have passed. Round r draws its
 * operations from a generator seeded with (seed, r) alone, so a failure is
 * replayed with --seed N --round R (threads and a forked child each get
 * their own generator derived from the round's; only their interleaving
 * is left to the scheduler). A round is one of:
 *  - single: one thread, every fd and mapping tracked, so rmmod attempts
 *    have an exact expected result (EWOULDBLOCK while anything is open or
 *    mapped; with --ko, unload and reload when nothing is, with random
 *    valid and invalid module parameters);
 *  - threads: N threads on private and shared fds and mappings, rmmod
 *    attempts while an anchor fd is held;
 *  - fork: a child inherits fds and mappings (minus MADV_DONTFORK ones)
 *    and runs its own operations while the parent runs others.
 * Round 0 also sweeps every command in the 0xB2 magic (4 directions x
 * 256 numbers x a set of sizes, and every size for numbers 1 and 2).
 *
 * Operations: open (all access modes, O_PATH, bad flags) / dup / close;
 * ioctl with the two commands and with any other command, on pointers that
 * are valid, misaligned, NULL, unmapped, read-only, straddling a guard
 * page, kernel or non-canonical addresses; read/write; mmap with random
 * lengths, offsets, protections and flags (MAP_FIXED into a reserved
 * arena); munmap, mprotect, mremap, madvise with every advice; page reads
 * with the seq protocol and their consistency with the ioctl; rmmod.
 *
 * --fail-init PATH: fault injection on the module's load and init path.
 * For a site number n: write n to /proc/thread-self/fail-nth, which makes
 * the n-th fault-injection site this thread reaches fail (failslab and
 * fail_page_alloc, configured by the caller with ignore-gfp-wait=N and
 * min-order=0), call finit_module(), and check: it failed cleanly (an
 * errno, ENOMEM when the failure hit perfclock_init; no
 * /sys/module/perfclock, no /dev/perfclock; nothing in the kernel log
 * but the injection report), or it succeeded despite the failure and
 * the module works and unloads. Each injection's stack trace (read from
 * the kernel log) says whether it hit perfclock_init, and where. By
 * default n runs down from the last site of a whole load until 25 in a
 * row fall outside do_init_module() (the sites before are
 * load_module()'s own); --full runs n = 1, 2, ... over the whole path.
 *
 * Output is TAP lines ("ok - fuzz: ..." / "not ok - fuzz: ..."); on a
 * violation, the seed, round, context, and the failing call with its
 * arguments. Exit status 0 when every check held.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../module/perfclock_ioctl.h"
#include "../user/perfclock_page.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE	0x100000
#endif
#ifndef MAP_SHARED_VALIDATE
#define MAP_SHARED_VALIDATE	0x03
#endif
#ifndef MAP_SYNC
#define MAP_SYNC		0x80000
#endif
#ifndef PROT_SEM
#define PROT_SEM		0x8
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP	4
#endif

#define DEV		PERFCLOCK_DEVICE_PATH
#define MAXFD		12
#define MAXMAP		12
#define ARENA_SLOTS	16
#define MAX_THREADS	8

/* include/linux/mman.h LEGACY_MAP_MASK (6.1): what MAP_SHARED_VALIDATE accepts. */
#define LEGACY_MAP_MASK	(MAP_SHARED | MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS | \
			 MAP_DENYWRITE | MAP_EXECUTABLE | 0x4000000 /* UNINITIALIZED */ | \
			 MAP_GROWSDOWN | MAP_LOCKED | MAP_NORESERVE | MAP_POPULATE | \
			 MAP_NONBLOCK | MAP_STACK | MAP_HUGETLB | MAP_32BIT | \
			 (21U << 26) /* MAP_HUGE_2MB */ | (30U << 26) /* MAP_HUGE_1GB */)

/* ---- options, global state ------------------------------------------------ */

static struct {
	uint64_t seed;
	double seconds;
	const char *ko;
	int threads;
	long round;		/* -1: all rounds */
	int verbose;
	int trace;
	int full;
	const char *fail_init;
	long max_nth;
} opt = { .seconds = 60, .threads = 3, .round = -1, .max_nth = 5000 };

static long page_size;
static int have_ksm, have_thp;	/* madvise answers depend on them */
static long ncpus;
static double deadline;
static atomic_int stop;
static atomic_int violations;
static atomic_ullong n_calls;
static atomic_ullong n_sigbus_after_dontneed;
static atomic_ullong n_refault_after_dontneed;
static atomic_ullong n_unloads;
static uint64_t g_skew;		/* largest skew bound seen while unstable */
static char first_violation[1024];
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;

/* Operation counters, for the summary. */
enum { OP_OPEN, OP_CLOSE, OP_DUP, OP_IOCTL, OP_IOCTL_BAD, OP_IOCTL_OTHER,
	OP_RW, OP_MMAP, OP_MUNMAP, OP_MPROTECT, OP_MREMAP, OP_MADVISE,
	OP_PAGE, OP_RMMOD, OP_NR };
static const char *const op_names[OP_NR] = { "open", "close", "dup", "ioctl",
	"ioctl-badptr", "ioctl-other", "read/write", "mmap", "munmap",
	"mprotect", "mremap", "madvise", "page-read", "rmmod" };
static atomic_ullong op_count[OP_NR];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- random numbers: splitmix64, one stream per context ------------------- */

struct rng {
	uint64_t s;
};

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rnd(struct rng *r)
{
	r->s += 0x9e3779b97f4a7c15ULL;
	return mix(r->s);
}

static uint64_t below(struct rng *r, uint64_t n)
{
	return n ? rnd(r) % n : 0;
}

static int chance(struct rng *r, int percent)
{
	return (int)below(r, 100) < percent;
}

/* ---- contexts: what one thread of control owns and has seen ------------- */

struct fdent {
	int fd;
	int acc;	/* O_RDONLY, O_WRONLY, O_RDWR, or -1 for O_PATH */
};

struct mapent {
	uintptr_t addr;
	int prot;	/* current protection */
	int shared;
	int zapped;	/* MADV_DONTNEED'd: the PTE is gone */
	int dontfork;
	int slot;	/* arena slot, or -1 */
};

struct ctx {
	char name[32];
	struct rng rng;
	long round;
	uint64_t step;
	int single;		/* the only thread of its process: may use the arena */
	int may_hold_outside;	/* another process may hold the module: never unload */
	int anchor;		/* fd held by someone else during this context */
	const struct perfclock_page *shared;	/* a mapping owned by someone else */
	struct fdent fds[MAXFD];
	int nfds;
	struct mapent maps[MAXMAP];
	int nmaps;
	char *scratch;		/* RW page, guard, RO page, guard */
	uint64_t last_ns, last_flags;
	int have_last;
	uint64_t last_cpu_ns[64];
	uint32_t last_seq;
	uint64_t last_count;
	int have_page;
	char call[256];		/* the call being checked */
};

static uintptr_t arena;
static int arena_used[ARENA_SLOTS];

static void violation(struct ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void violation(struct ctx *c, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&report_lock);
	printf("# VIOLATION seed=%" PRIu64 " round=%ld ctx=%s step=%" PRIu64 ": %s: %s\n",
	       opt.seed, c->round, c->name, c->step, c->call, msg);
	printf("# replay: perfclock_fuzz --seed %" PRIu64 " --round %ld%s%s\n",
	       opt.seed, c->round, opt.ko ? " --ko " : "", opt.ko ? opt.ko : "");
	if (!violations)
		snprintf(first_violation, sizeof(first_violation),
			 "seed %" PRIu64 " round %ld %s step %" PRIu64 ": %s: %s",
			 opt.seed, c->round, c->name, c->step, c->call, msg);
	fflush(stdout);
	pthread_mutex_unlock(&report_lock);
	atomic_fetch_add(&violations, 1);
	atomic_store(&stop, 1);
}

#define CALL(c, ...) snprintf((c)->call, sizeof((c)->call), __VA_ARGS__)

static const char *ename(int e)
{
	static __thread char buf[32];

	switch (e) {
	case 0: return "success";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EBADF: return "EBADF";
	case ENOMEM: return "ENOMEM";
	case EACCES: return "EACCES";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case ENOTDIR: return "ENOTDIR";
	case EINVAL: return "EINVAL";
	case ENOTTY: return "ENOTTY";
	case ESPIPE: return "ESPIPE";
	case EAGAIN: return "EAGAIN/EWOULDBLOCK";
	case EOVERFLOW: return "EOVERFLOW";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ENODEV: return "ENODEV";
	case ENOSYS: return "ENOSYS";
	}
	snprintf(buf, sizeof(buf), "errno %d", e);
	return buf;
}

/* Result of a call returning -1/errno as 0 or errno. */
static int expect(struct ctx *c, int got, int want)
{
	atomic_fetch_add(&n_calls, 1);
	if (got != want) {
		violation(c, "expected %s, got %s", ename(want), ename(got));
		return 0;
	}
	return 1;
}

/* ---- SIGBUS/SIGSEGV-guarded reads ------------------------------------------ */

static __thread sigjmp_buf *fault_jmp;

static void fault_handler(int sig, siginfo_t *si, void *uc)
{
	(void)si; (void)uc;
	if (fault_jmp)
		siglongjmp(*fault_jmp, sig);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* ---- the device -------------------------------------------------------------- */

static int module_loaded(void)
{
	return access("/sys/module/perfclock", F_OK) == 0;
}

static void check_info(struct ctx *c, const struct perfclock_info *in);
static int any_fd(struct ctx *c);
static int do_ioctl(int fd, unsigned long cmd, void *arg);

/*
 * The unstable-regime bound grows with the timer lateness the module
 * measures: before calling a backward step a violation, ask for the
 * bound as it is now.
 */
static uint64_t current_skew(struct ctx *c)
{
	struct perfclock_info in;
	int fd = any_fd(c);

	if (fd >= 0 && !do_ioctl(fd, PERFCLOCK_IOC_GET_INFO, &in)) {
		check_info(c, &in);
		if (in.skew_estimate_ns > g_skew)
			g_skew = in.skew_estimate_ns;
	}
	return g_skew ? g_skew : 1000000000ULL;
}

static void check_time(struct ctx *c, const struct perfclock_time *t)
{
	int both_stable;
	uint64_t allowed;

	if (t->flags & ~PERFCLOCK_TIME_STABLE)
		violation(c, "perfclock_time.flags %#x has undefined bits", t->flags);
	if (t->cpu >= (uint32_t)ncpus)
		violation(c, "perfclock_time.cpu %u >= %ld CPUs", t->cpu, ncpus);
	if (!t->ns)
		violation(c, "perfclock_time.ns is 0");
	if (t->cpu < 64 && c->last_cpu_ns[t->cpu] > t->ns)
		violation(c, "clock went back on cpu %u: %" PRIu64 " after %" PRIu64,
			  t->cpu, (uint64_t)t->ns, c->last_cpu_ns[t->cpu]);
	if (t->cpu < 64)
		c->last_cpu_ns[t->cpu] = t->ns;
	if (c->have_last) {
		both_stable = c->last_flags & t->flags & PERFCLOCK_TIME_STABLE;
		allowed = both_stable ? 0 : (g_skew ? g_skew : 1000000000ULL);
		if (t->ns + allowed < c->last_ns && !both_stable)
			allowed = current_skew(c);
		if (t->ns + allowed < c->last_ns)
			violation(c, "read %" PRIu64 " is %" PRIu64 " ns below the previous read (allowed %" PRIu64 ")",
				  (uint64_t)t->ns, (uint64_t)(c->last_ns - t->ns), allowed);
	}
	c->have_last = 1;
	c->last_ns = t->ns;
	c->last_flags = t->flags;
}

static void check_info(struct ctx *c, const struct perfclock_info *in)
{
	int i;

	if (in->abi_version != PERFCLOCK_ABI_VERSION)
		violation(c, "abi_version %u", in->abi_version);
	if (in->page_version != PERFCLOCK_PAGE_VERSION)
		violation(c, "page_version %u", in->page_version);
	if (in->page_size != (uint32_t)page_size)
		violation(c, "page_size %u, not %ld", in->page_size, page_size);
	if (in->flags & ~(PERFCLOCK_INFO_SCHED_CLOCK_STABLE | PERFCLOCK_INFO_PAGE_TSC_VALID |
			  PERFCLOCK_INFO_HORIZON))
		violation(c, "info.flags %#x has undefined bits", in->flags);
	if ((in->flags & PERFCLOCK_INFO_SCHED_CLOCK_STABLE) && in->skew_estimate_ns)
		violation(c, "stable but skew_estimate_ns %" PRIu64, (uint64_t)in->skew_estimate_ns);
	if (!(in->flags & PERFCLOCK_INFO_SCHED_CLOCK_STABLE) && !in->skew_estimate_ns)
		violation(c, "unstable but skew_estimate_ns 0");
	if (in->measured_skew_ns > in->skew_estimate_ns &&
	    !(in->flags & PERFCLOCK_INFO_SCHED_CLOCK_STABLE))
		violation(c, "measured_skew_ns %" PRIu64 " > skew_estimate_ns %" PRIu64,
			  (uint64_t)in->measured_skew_ns, (uint64_t)in->skew_estimate_ns);
	if (in->update_period_ns < 100000 || in->update_period_ns > 1000000000ULL)
		violation(c, "update_period_ns %" PRIu64 " outside 100us..1s",
			  (uint64_t)in->update_period_ns);
	for (i = 0; i < (int)(sizeof(in->reserved) / sizeof(in->reserved[0])); i++)
		if (in->reserved[i])
			violation(c, "info.reserved[%d] = %#" PRIx64, i, (uint64_t)in->reserved[i]);
	if (!(in->flags & PERFCLOCK_INFO_SCHED_CLOCK_STABLE) && in->skew_estimate_ns > g_skew)
		g_skew = in->skew_estimate_ns;	/* racy max: only ever grows */
}

static int do_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? errno : 0;
}

/* An fd this context can use for a reference read, or -1. */
static int any_fd(struct ctx *c)
{
	int i;

	for (i = 0; i < c->nfds; i++)
		if (c->fds[i].acc >= 0)
			return c->fds[i].fd;
	return c->anchor;
}

static uint64_t ref_read(struct ctx *c, uint32_t *flags)
{
	struct perfclock_time t;
	int fd = any_fd(c);

	if (fd < 0 || do_ioctl(fd, PERFCLOCK_IOC_GET_TIME, &t))
		return 0;
	*flags = t.flags;
	return t.ns;
}


/* Read a mapped page with the seq protocol and check what it says. */
static void check_page(struct ctx *c, const struct perfclock_page *pg)
{
	struct perfclock_page s;
	uint32_t seq, tflags = 0;
	uint64_t tsc = 0, ref, ns;
	int tries, i;

	/*
	 * perfclock_page.h's read_begin/read_retry (the one seq protocol),
	 * around a copy of the whole page.
	 */
	for (tries = 0; tries < 100000; tries++) {
		seq = perfclock_page_seq_begin(pg);
		memcpy(&s, (const void *)pg, sizeof(s));
		tsc = perfclock_rdtsc_ordered();
		if (!perfclock_page_seq_retry(pg, seq))
			break;
		if ((seq & 1) && tries % 64 == 63)
			sched_yield();
	}
	atomic_fetch_add(&n_calls, 1);
	if (tries == 100000) {
		violation(c, "page seq never settled (last %u)", seq);
		return;
	}
	if (s.version != PERFCLOCK_PAGE_VERSION)
		violation(c, "page version %u", s.version);
	if (s.flags & ~(PERFCLOCK_PAGE_TSC_VALID | PERFCLOCK_PAGE_SCHED_CLOCK_STABLE |
			PERFCLOCK_PAGE_HORIZON_VALID))
		violation(c, "page flags %#x has undefined bits", s.flags);
	if ((s.flags & PERFCLOCK_PAGE_SCHED_CLOCK_STABLE) ? s.skew_estimate_ns != 0 : s.skew_estimate_ns == 0)
		violation(c, "page flags %#x with skew_estimate_ns %" PRIu64, s.flags,
			  (uint64_t)s.skew_estimate_ns);
	if ((s.flags & PERFCLOCK_PAGE_TSC_VALID) && (s.tsc_shift > 31 || !s.tsc_mult))
		violation(c, "TSC_VALID with mult %" PRIu64 " shift %u", (uint64_t)s.tsc_mult, s.tsc_shift);
	if (s.coarse_cpu >= (uint32_t)ncpus)
		violation(c, "coarse_cpu %u", s.coarse_cpu);
	if (s.__reserved0)
		violation(c, "__reserved0 %#x", s.__reserved0);
	for (i = 0; i < (int)(sizeof(s.__reserved) / sizeof(s.__reserved[0])); i++)
		if (s.__reserved[i]) {
			violation(c, "__reserved[%d] = %#" PRIx64, i, (uint64_t)s.__reserved[i]);
			break;
		}
	if (s.update_period_ns < 100000 || s.update_period_ns > 1000000000ULL)
		violation(c, "page update_period_ns %" PRIu64, (uint64_t)s.update_period_ns);
	if (!s.update_count)
		violation(c, "update_count 0 on a published page");
	if (c->have_page) {
		if ((int32_t)(s.seq - c->last_seq) < 0)
			violation(c, "page seq went back: %u after %u", s.seq, c->last_seq);
		if (s.update_count < c->last_count)
			violation(c, "update_count went back: %" PRIu64 " after %" PRIu64,
				  (uint64_t)s.update_count, c->last_count);
	}
	c->have_page = 1;
	c->last_seq = s.seq;
	c->last_count = s.update_count;
	if (!(s.flags & PERFCLOCK_PAGE_SCHED_CLOCK_STABLE) && s.skew_estimate_ns > g_skew)
		g_skew = s.skew_estimate_ns;

	/* The page is a lower bound: an exact read made after it is not below. */
	ref = ref_read(c, &tflags);
	if (!ref)
		return;
	if (s.coarse_ns > ref + s.skew_estimate_ns &&
	    (!(tflags & PERFCLOCK_TIME_STABLE) ? s.coarse_ns > ref + current_skew(c) : 1))
		violation(c, "coarse_ns %" PRIu64 " is ahead of a later ioctl read %" PRIu64
			  " by more than skew_estimate_ns %" PRIu64, (uint64_t)s.coarse_ns, ref,
			  (uint64_t)s.skew_estimate_ns);
	if ((s.flags & PERFCLOCK_PAGE_TSC_VALID) && (s.flags & PERFCLOCK_PAGE_SCHED_CLOCK_STABLE) &&
	    (tflags & PERFCLOCK_TIME_STABLE)) {
		ns = perfclock_tsc_to_ns(tsc, s.tsc_mult, s.tsc_shift, s.tsc_offset);
		if (ns > ref)
			violation(c, "page time %" PRIu64 " is ahead of a later ioctl read %" PRIu64
				  " (by %" PRIu64 " ns)", ns, ref, ns - ref);
	}
}

/* ---- pointers -------------------------------------------------------------------- */

/* A pointer the kernel must refuse for a write of @size bytes. */
static void *bad_pointer(struct ctx *c, size_t size, char *what, size_t wlen)
{
	char *rw = c->scratch, *ro = c->scratch + 2 * page_size;
	uintptr_t p;

	switch (below(&c->rng, c->nmaps ? 13 : 12)) {
	case 0: snprintf(what, wlen, "NULL"); return NULL;
	case 1: snprintf(what, wlen, "(void *)1"); return (void *)1;
	case 2: snprintf(what, wlen, "guard page"); return rw + page_size + below(&c->rng, page_size - size);
	case 3:
		p = below(&c->rng, size - 1) + 1;
		snprintf(what, wlen, "RW page end - %zu (straddles the guard)", (size_t)p);
		return rw + page_size - p;
	case 4: snprintf(what, wlen, "read-only page"); return ro + below(&c->rng, page_size - size);
	case 5: snprintf(what, wlen, "(void *)-1"); return (void *)(uintptr_t)-1;
#if UINTPTR_MAX > 0xffffffffUL
	case 6: snprintf(what, wlen, "kernel direct map"); return (void *)0xffff888000000000UL;
	case 7: snprintf(what, wlen, "kernel text"); return (void *)0xffffffff81000000UL;
	case 8: snprintf(what, wlen, "non-canonical"); return (void *)0x8000000000000000UL;
	case 9: snprintf(what, wlen, "just below TASK_SIZE_MAX"); return (void *)(0x7ffffffff000UL - size / 2);
	case 10: snprintf(what, wlen, "vsyscall page"); return (void *)0xffffffffff600000UL;
#else
	case 6: case 7: case 8: case 9: case 10:
		snprintf(what, wlen, "top of the 32-bit space"); return (void *)(uintptr_t)(0xffffffffUL - size / 2);
#endif
#if UINTPTR_MAX > 0xffffffffUL
	case 11: snprintf(what, wlen, "random kernel half"); return (void *)(uintptr_t)(rnd(&c->rng) | 0xffffffff00000000ULL);
#else
	case 11: snprintf(what, wlen, "random top page"); return (void *)(uintptr_t)(0xfffff000UL + below(&c->rng, 0xf00));
#endif
	default: {
		struct mapent *m = &c->maps[below(&c->rng, c->nmaps)];

		snprintf(what, wlen, "the read-only clock page");
		return (void *)(m->addr + below(&c->rng, page_size - size));
	}
	}
}

/* ---- operations --------------------------------------------------------------- */

static void op_open(struct ctx *c)
{
	static const int accs[] = { O_RDONLY, O_WRONLY, O_RDWR };
	int acc, flags, fd, err, kind = below(&c->rng, 20);

	op_count[OP_OPEN]++;
	if (c->nfds == MAXFD)
		return;
	acc = accs[below(&c->rng, 3)];
	flags = acc | O_CLOEXEC;
	if (chance(&c->rng, 30)) flags |= O_NONBLOCK;
	if (chance(&c->rng, 10)) flags |= O_NOCTTY;
	if (chance(&c->rng, 10)) flags |= O_SYNC;
	if (chance(&c->rng, 10)) flags |= O_APPEND;
	if (kind == 0) {
		CALL(c, "open(%s, O_CREAT|O_EXCL|%#x)", DEV, flags);
		fd = open(DEV, flags | O_CREAT | O_EXCL, 0600);
		err = fd < 0 ? errno : 0;
		if (fd >= 0) close(fd);
		expect(c, err, EEXIST);
		return;
	}
	if (kind == 1) {
		CALL(c, "open(%s, O_DIRECTORY|%#x)", DEV, flags);
		fd = open(DEV, flags | O_DIRECTORY);
		err = fd < 0 ? errno : 0;
		if (fd >= 0) close(fd);
		expect(c, err, ENOTDIR);
		return;
	}
	if (kind == 2) {
		flags = O_PATH | O_CLOEXEC;
		acc = -1;
	}
	CALL(c, "open(%s, %#x)", DEV, flags);
	fd = open(DEV, flags);
	if (!expect(c, fd < 0 ? errno : 0, 0))
		return;
	c->fds[c->nfds].fd = fd;
	c->fds[c->nfds].acc = acc;
	c->nfds++;
}

static void op_close(struct ctx *c)
{
	int i;

	op_count[OP_CLOSE]++;
	if (!c->nfds)
		return;
	i = below(&c->rng, c->nfds);
	CALL(c, "close(%d)", c->fds[i].fd);
	expect(c, close(c->fds[i].fd) ? errno : 0, 0);
	c->fds[i] = c->fds[--c->nfds];
}

static void op_dup(struct ctx *c)
{
	int i, fd;

	op_count[OP_DUP]++;
	if (!c->nfds || c->nfds == MAXFD)
		return;
	i = below(&c->rng, c->nfds);
	CALL(c, "fcntl(%d, F_DUPFD_CLOEXEC)", c->fds[i].fd);
	fd = fcntl(c->fds[i].fd, F_DUPFD_CLOEXEC, 0);
	if (!expect(c, fd < 0 ? errno : 0, 0))
		return;
	c->fds[c->nfds].fd = fd;
	c->fds[c->nfds].acc = c->fds[i].acc;
	c->nfds++;
}

static struct fdent *pick_fd(struct ctx *c)
{
	return c->nfds ? &c->fds[below(&c->rng, c->nfds)] : NULL;
}

static void op_ioctl_good(struct ctx *c)
{
	struct fdent *f = pick_fd(c);
	int info = chance(&c->rng, 40), err;
	size_t size = info ? sizeof(struct perfclock_info) : sizeof(struct perfclock_time);
	char *p;

	op_count[OP_IOCTL]++;
	if (!f)
		return;
	/* Misaligned, at the end of the page before the guard, or anywhere. */
	switch (below(&c->rng, 3)) {
	case 0: p = c->scratch + page_size - size; break;
	case 1: p = c->scratch + 1 + below(&c->rng, 7); break;
	default: p = c->scratch + below(&c->rng, page_size - size); break;
	}
	memset(p, 0xa5, size);
	CALL(c, "ioctl(%d, %s, %p)", f->fd, info ? "GET_INFO" : "GET_TIME", (void *)p);
	err = do_ioctl(f->fd, info ? PERFCLOCK_IOC_GET_INFO : PERFCLOCK_IOC_GET_TIME, p);
	if (!expect(c, err, f->acc < 0 ? EBADF : 0) || err)
		return;
	if (info) {
		struct perfclock_info in;

		memcpy(&in, p, sizeof(in));
		check_info(c, &in);
	} else {
		struct perfclock_time t;

		memcpy(&t, p, sizeof(t));
		check_time(c, &t);
	}
}

static void op_ioctl_bad(struct ctx *c)
{
	struct fdent *f = pick_fd(c);
	int info = chance(&c->rng, 50);
	size_t size = info ? sizeof(struct perfclock_info) : sizeof(struct perfclock_time);
	char what[64];
	void *p;

	op_count[OP_IOCTL_BAD]++;
	if (!f)
		return;
	p = bad_pointer(c, size, what, sizeof(what));
	CALL(c, "ioctl(%d, %s, %p [%s])", f->fd, info ? "GET_INFO" : "GET_TIME", p, what);
	expect(c, do_ioctl(f->fd, info ? PERFCLOCK_IOC_GET_INFO : PERFCLOCK_IOC_GET_TIME, p),
	       f->acc < 0 ? EBADF : EFAULT);
}

/* Commands the VFS answers before the driver sees them (fs/ioctl.c). */
static int vfs_cmd(unsigned int cmd)
{
	unsigned int type = _IOC_TYPE(cmd);

	return type == 'T' || type == 'X' || type == 'f' || type == 0x94 ||
	       cmd == 2 /* FIGETBSZ */ || cmd == 1 /* FIBMAP */;
}

static void ioctl_other(struct ctx *c, int fd, int acc, unsigned int cmd)
{
	char what[64];
	void *arg;

	if (cmd == PERFCLOCK_IOC_GET_TIME || cmd == PERFCLOCK_IOC_GET_INFO ||
	    cmd == PERFCLOCK_IOC_GET_HORIZON || vfs_cmd(cmd))
		return;
	if (chance(&c->rng, 50)) {
		arg = c->scratch + below(&c->rng, page_size / 2);
		snprintf(what, sizeof(what), "valid");
	} else {
		arg = bad_pointer(c, 16, what, sizeof(what));
	}
	CALL(c, "ioctl(%d, %#x [dir %u nr %u size %u], %p [%s])", fd, cmd, _IOC_DIR(cmd),
	     _IOC_NR(cmd), _IOC_SIZE(cmd), arg, what);
	expect(c, do_ioctl(fd, cmd, arg), acc < 0 ? EBADF : ENOTTY);
}

static void op_ioctl_other(struct ctx *c)
{
	struct fdent *f = pick_fd(c);
	unsigned int cmd;

	op_count[OP_IOCTL_OTHER]++;
	if (!f)
		return;
	switch (below(&c->rng, 4)) {
	case 0:	/* anything */
		cmd = (unsigned int)rnd(&c->rng);
		break;
	case 1:	/* our magic, any direction, number and size */
		cmd = _IOC(below(&c->rng, 4), PERFCLOCK_IOC_MAGIC, below(&c->rng, 256),
			   below(&c->rng, 1 << 14));
		break;
	default: /* one field away from a real command */
		cmd = chance(&c->rng, 50) ? PERFCLOCK_IOC_GET_TIME : PERFCLOCK_IOC_GET_INFO;
		switch (below(&c->rng, 4)) {
		case 0: cmd ^= 1u << below(&c->rng, 32); break;
		case 1: cmd = (cmd & ~(_IOC_SIZEMASK << _IOC_SIZESHIFT)) |
			      (below(&c->rng, 1 << 14) << _IOC_SIZESHIFT); break;
		case 2: cmd = (cmd & ~(_IOC_DIRMASK << _IOC_DIRSHIFT)) |
			      (below(&c->rng, 4) << _IOC_DIRSHIFT); break;
		default: cmd = (cmd & ~0xffu) | below(&c->rng, 256); break;
		}
	}
	ioctl_other(c, f->fd, f->acc, cmd);
}

static void op_rw(struct ctx *c)
{
	struct fdent *f = pick_fd(c);
	char buf[64];
	int wr = chance(&c->rng, 50), want;
	ssize_t n;

	op_count[OP_RW]++;
	if (!f)
		return;
	/* No .read/.write: EBADF without the access mode, else EINVAL. */
	if (f->acc < 0)
		want = EBADF;
	else if (wr)
		want = f->acc == O_RDONLY ? EBADF : EINVAL;
	else
		want = f->acc == O_WRONLY ? EBADF : EINVAL;
	CALL(c, "%s(%d, buf, %d)", wr ? "write" : "read", f->fd, 8);
	n = wr ? write(f->fd, buf, 8) : read(f->fd, buf, 8);
	expect(c, n < 0 ? errno : 0, want);
}

static void arena_fill(int slot)
{
	void *p = mmap((void *)(arena + slot * page_size), page_size, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED) {
		perror("perfclock_fuzz: arena refill");
		exit(2);
	}
	arena_used[slot] = 0;
}

/* Forget a tracked mapping that the kernel unmapped or replaced. */
static void drop_map(struct ctx *c, int i, int refill)
{
	if (c->maps[i].slot >= 0 && refill)
		arena_fill(c->maps[i].slot);
	c->maps[i] = c->maps[--c->nmaps];
}

static void drop_slot(struct ctx *c, int slot)
{
	int i;

	for (i = 0; i < c->nmaps; i++)
		if (c->maps[i].slot == slot) {
			drop_map(c, i, 0);
			return;
		}
}

static void op_mmap(struct ctx *c)
{
	static const int types[] = { MAP_SHARED, MAP_SHARED, MAP_PRIVATE, MAP_PRIVATE,
				     MAP_SHARED_VALIDATE, 0, 0x4, 0xf };
	static const int extras[] = { MAP_POPULATE, MAP_NORESERVE, MAP_LOCKED, MAP_NONBLOCK,
				      MAP_HUGETLB, MAP_SYNC, MAP_GROWSDOWN, MAP_32BIT,
				      MAP_STACK };
	struct fdent *f = pick_fd(c);
	uint64_t len, off;
	int prot, flags, type, want, slot = -1, i;
	void *hint = NULL, *p;

	op_count[OP_MMAP]++;
	if (!f || c->nmaps == MAXMAP)
		return;
	switch (below(&c->rng, 8)) {
	case 0: len = 0; break;
	case 1: len = 1 + below(&c->rng, page_size - 1); break;	/* rounds up to a page */
	case 2: len = page_size + 1 + below(&c->rng, 3 * page_size); break;
	case 3: len = -(uint64_t)below(&c->rng, page_size); break;	/* overflows */
	case 4: len = 1ULL << (40 + below(&c->rng, 20)); break;
	default: len = page_size; break;
	}
	switch (below(&c->rng, 8)) {
	case 0: off = 1 + below(&c->rng, page_size - 1); break;
	case 1: off = page_size * (1 + below(&c->rng, 4)); break;
	case 2: off = (uint64_t)-page_size; break;
	case 3: off = 1ULL << 62; break;
	default: off = 0; break;
	}
	prot = PROT_READ;
	if (chance(&c->rng, 15)) prot = PROT_NONE;
	if (chance(&c->rng, 20)) prot |= PROT_WRITE;
	if (chance(&c->rng, 15)) prot |= PROT_EXEC;
	type = types[below(&c->rng, sizeof(types) / sizeof(types[0]))];
	flags = type;
	for (i = 0; i < (int)(sizeof(extras) / sizeof(extras[0])); i++)
		if (chance(&c->rng, 5))
			flags |= extras[i];
	if (c->single && chance(&c->rng, 30)) {
		/* Never more than the slot: MAP_FIXED would clobber what follows. */
		if (len > (uint64_t)page_size)
			len = page_size;
		slot = below(&c->rng, ARENA_SLOTS);
		hint = (void *)(arena + slot * page_size);
		flags |= chance(&c->rng, 20) ? MAP_FIXED_NOREPLACE : MAP_FIXED;
	}

	/* The expected result, in the order the kernel checks (6.1). */
	if (off & (page_size - 1))
		want = EINVAL;				/* sys_mmap */
	else if (f->acc < 0)
		want = EBADF;				/* fget() refuses O_PATH */
	else if (flags & MAP_HUGETLB)
		want = EINVAL;				/* not a hugetlbfs file */
	else if (!len)
		want = EINVAL;				/* do_mmap */
	else if (!((len + page_size - 1) & ~(uint64_t)(page_size - 1)))
		want = ENOMEM;
	else if ((off / page_size) + ((len + page_size - 1) / page_size) < off / page_size)
		want = EOVERFLOW;
	else if (len > (1ULL << 47) - page_size ||
		 ((flags & MAP_32BIT) && !(flags & MAP_FIXED) && len > (1ULL << 30)))
		want = ENOMEM;				/* get_unmapped_area */
	else if ((flags & MAP_FIXED_NOREPLACE))
		want = EEXIST;				/* the arena is always mapped */
	else if (off > (uint64_t)INT64_MAX - ((len + page_size - 1) & ~(uint64_t)(page_size - 1)))
		want = EOVERFLOW;			/* file_mmap_ok */
	else if (type == MAP_SHARED_VALIDATE && (flags & ~LEGACY_MAP_MASK))
		want = EOPNOTSUPP;
	else if ((type == MAP_SHARED || type == MAP_SHARED_VALIDATE) && (prot & PROT_WRITE) &&
		 f->acc == O_RDONLY)
		want = EACCES;
	else if (type != MAP_SHARED && type != MAP_SHARED_VALIDATE && type != MAP_PRIVATE)
		want = EINVAL;
	else if (f->acc == O_WRONLY)
		want = EACCES;
	else if (flags & MAP_GROWSDOWN)
		want = EINVAL;
	else if (type == MAP_PRIVATE && (prot & PROT_WRITE) && !(flags & MAP_NORESERVE) &&
		 len >= (1ULL << 40))
		want = ENOMEM;				/* mmap_region: commit accounting */
	else if (off)
		want = EINVAL;				/* perfclock_miscdev_mmap: pgoff */
	else if (len > (uint64_t)page_size)
		want = EINVAL;				/* perfclock_miscdev_mmap: one page */
	else if (prot & (PROT_WRITE | PROT_EXEC))
		want = EPERM;				/* perfclock_miscdev_mmap: read-only */
	else
		want = 0;

	CALL(c, "mmap(%p, %#" PRIx64 ", %#x, %#x, %d, %#" PRIx64 ")", hint, len, prot, flags,
	     f->fd, off);
	p = mmap(hint, len, prot, flags, f->fd, off);
	if (slot >= 0 && !(flags & MAP_FIXED_NOREPLACE)) {
		/* MAP_FIXED unmapped the slot first, whatever the outcome. */
		drop_slot(c, slot);
		if (p == MAP_FAILED)
			arena_fill(slot);
	}
	if (!expect(c, p == MAP_FAILED ? errno : 0, want)) {
		if (p != MAP_FAILED && slot < 0)
			munmap(p, len);
		return;
	}
	if (p == MAP_FAILED)
		return;
	if (slot >= 0 && p != hint) {
		violation(c, "MAP_FIXED mapping at %p", p);
		return;
	}
	c->maps[c->nmaps] = (struct mapent){ .addr = (uintptr_t)p, .prot = prot,
		.shared = type != MAP_PRIVATE, .slot = slot };
	if (slot >= 0)
		arena_used[slot] = 1;
	c->nmaps++;
}

static void op_munmap(struct ctx *c)
{
	int i, kind = below(&c->rng, 6), want = 0;
	uintptr_t addr;
	size_t len;

	op_count[OP_MUNMAP]++;
	if (!c->nmaps)
		return;
	i = below(&c->rng, c->nmaps);
	addr = c->maps[i].addr;
	len = page_size;
	if (kind == 0) { addr += 1 + below(&c->rng, page_size - 1); want = EINVAL; }
	else if (kind == 1) { len = 0; want = EINVAL; }
	else if (kind == 2) len = 1 + below(&c->rng, page_size - 1);	/* whole page */
	CALL(c, "munmap(%#lx, %#zx)", (unsigned long)addr, len);
	if (!expect(c, munmap((void *)addr, len) ? errno : 0, want) || want)
		return;
	drop_map(c, i, 1);
}

static void op_mprotect(struct ctx *c)
{
	static const int prots[] = { PROT_NONE, PROT_READ, PROT_READ, PROT_WRITE,
		PROT_READ | PROT_WRITE, PROT_EXEC, PROT_READ | PROT_EXEC, PROT_SEM | PROT_READ,
		PROT_GROWSDOWN | PROT_READ, 0x100 | PROT_READ };
	struct mapent *m;
	int prot, want;
	uintptr_t addr;

	op_count[OP_MPROTECT]++;
	if (!c->nmaps)
		return;
	m = &c->maps[below(&c->rng, c->nmaps)];
	prot = prots[below(&c->rng, sizeof(prots) / sizeof(prots[0]))];
	addr = m->addr;
	if (chance(&c->rng, 5))
		addr += 8;
	if (addr != m->addr || (prot & ~(PROT_READ | PROT_WRITE | PROT_EXEC | PROT_SEM)))
		want = EINVAL;	/* misaligned, GROWSDOWN on a plain VMA, unknown bits */
	else if (prot & (PROT_WRITE | PROT_EXEC))
		want = EACCES;	/* VM_MAYWRITE and VM_MAYEXEC are gone */
	else
		want = 0;
	CALL(c, "mprotect(%#lx, %#lx, %#x)", (unsigned long)addr, page_size, prot);
	if (expect(c, mprotect((void *)addr, page_size, prot) ? errno : 0, want) && !want)
		m->prot = prot & (PROT_READ | PROT_WRITE | PROT_EXEC);
}

static void op_mremap(struct ctx *c)
{
	int i, kind, want, slot = -1;
	unsigned long old_len = page_size, new_len = page_size, flags = 0;
	void *new_addr = NULL, *p;
	struct mapent *m;

	op_count[OP_MREMAP]++;
	if (!c->nmaps)
		return;
	i = below(&c->rng, c->nmaps);
	m = &c->maps[i];
	kind = below(&c->rng, c->single ? 8 : 7);
	switch (kind) {
	case 0: new_len = 2 * page_size; want = EFAULT; break;	/* VM_DONTEXPAND */
	case 1: new_len = page_size * (2 + below(&c->rng, 8)); flags = MREMAP_MAYMOVE; want = EFAULT; break;
	case 2: new_len = 1 + below(&c->rng, page_size - 1); want = 0; break;	/* same size */
	case 3: new_len = 0; want = EINVAL; break;
	case 4: flags = MREMAP_MAYMOVE | MREMAP_DONTUNMAP; want = EINVAL; break;
	case 5:	/* duplicate a shared mapping: old_len 0 grows it */
		if (!m->shared)
			return;
		old_len = 0; flags = MREMAP_MAYMOVE; want = EFAULT; break;
	case 6: flags = 0x80; want = EINVAL; break;	/* unknown flag */
	default:	/* move it into the arena */
		slot = below(&c->rng, ARENA_SLOTS);
		new_addr = (void *)(arena + slot * page_size);
		if ((uintptr_t)new_addr == m->addr)
			return;
		flags = MREMAP_MAYMOVE | MREMAP_FIXED;
		want = 0;
		break;
	}
	CALL(c, "mremap(%#lx, %#lx, %#lx, %#lx, %p)", (unsigned long)m->addr, old_len, new_len,
	     flags, new_addr);
	p = mremap((void *)m->addr, old_len, new_len, flags, new_addr);
	if (!expect(c, p == MAP_FAILED ? errno : 0, want) || want)
		return;
	if (slot < 0) {
		if ((uintptr_t)p != m->addr)
			violation(c, "same-size mremap moved the mapping to %p", p);
		return;
	}
	if (p != new_addr) {
		violation(c, "MREMAP_FIXED returned %p", p);
		return;
	}
	/* The slot's old occupant (a filler or one of ours) is gone; ours moved. */
	{
		struct mapent moved = *m;

		drop_map(c, i, 1);	/* refills the old slot, if any */
		drop_slot(c, slot);
		moved.addr = (uintptr_t)p;
		moved.slot = slot;
		arena_used[slot] = 1;
		c->maps[c->nmaps++] = moved;
	}
}

static void op_madvise(struct ctx *c)
{
	static const int advs[] = { MADV_NORMAL, MADV_RANDOM, MADV_SEQUENTIAL, MADV_WILLNEED,
		MADV_DONTNEED, MADV_FREE, MADV_REMOVE, MADV_DONTFORK, MADV_DOFORK,
		MADV_MERGEABLE, MADV_UNMERGEABLE, MADV_HUGEPAGE, MADV_NOHUGEPAGE,
		MADV_DONTDUMP, MADV_DODUMP, MADV_WIPEONFORK, MADV_KEEPONFORK, 20 /* COLD */,
		21 /* PAGEOUT */, 22 /* POPULATE_READ */, 23 /* POPULATE_WRITE */,
		24 /* DONTNEED_LOCKED */, 25 /* COLLAPSE */, 77, -1 };
	struct mapent *m;
	int adv, want;

	op_count[OP_MADVISE]++;
	if (!c->nmaps)
		return;
	m = &c->maps[below(&c->rng, c->nmaps)];
	adv = advs[below(&c->rng, sizeof(advs) / sizeof(advs[0]))];
	/* DONTNEED zaps the PTE; the module's ->fault puts the page back. */
	switch (adv) {
	case MADV_NORMAL: case MADV_RANDOM: case MADV_SEQUENTIAL: case MADV_WILLNEED:
	case MADV_DONTNEED: case 24: case MADV_DONTFORK: case MADV_DOFORK:
	case MADV_KEEPONFORK: case MADV_DONTDUMP: case 20: case 21:
		want = 0;
		break;
	case 22:	/* POPULATE_READ: faults the page in (->fault refills a zap) */
		want = (m->prot & PROT_READ) ? 0 : EINVAL;
		break;
	case 23:	/* POPULATE_WRITE on a VMA that can never be writable */
		want = EINVAL;
		break;
	case MADV_MERGEABLE: case MADV_UNMERGEABLE:
		/* With KSM: silently not merged (VM_MIXEDMAP, VM_DONTEXPAND). */
		want = have_ksm ? 0 : EINVAL;
		break;
	case MADV_HUGEPAGE: case MADV_NOHUGEPAGE:
		/* With THP: only a VMA flag. */
		want = have_thp ? 0 : EINVAL;
		break;
	case MADV_REMOVE:	/* needs a shared writable mapping */
		want = EACCES;
		break;
	case MADV_DODUMP:	/* refused on VM_MIXEDMAP/VM_DONTEXPAND (VM_SPECIAL) */
	case MADV_WIPEONFORK:	/* file-backed */
	case MADV_FREE:		/* not anonymous */
	default:		/* COLLAPSE (no THP VMA), unknown advice */
		want = EINVAL;
		break;
	}
	CALL(c, "madvise(%#lx, %#lx, %d)", (unsigned long)m->addr, page_size, adv);
	if (!expect(c, madvise((void *)m->addr, page_size, adv) ? errno : 0, want))
		return;
	if (adv == MADV_DONTNEED || adv == 24)
		m->zapped = 1;
	if (adv == MADV_DONTFORK)
		m->dontfork = 1;
	if (adv == MADV_DOFORK)
		m->dontfork = 0;
}

static void op_page(struct ctx *c)
{
	sigjmp_buf jb;
	struct mapent *m;
	int sig;

	op_count[OP_PAGE]++;
	if (c->shared && (!c->nmaps || chance(&c->rng, 30))) {
		CALL(c, "read the shared page at %p", (const void *)c->shared);
		check_page(c, c->shared);
		return;
	}
	if (!c->nmaps)
		return;
	m = &c->maps[below(&c->rng, c->nmaps)];
	if (!(m->prot & PROT_READ))
		return;
	CALL(c, "read the page at %#lx%s", (unsigned long)m->addr, m->zapped ? " (zapped)" : "");
	fault_jmp = &jb;
	sig = sigsetjmp(jb, 1);
	if (!sig) {
		check_page(c, (const struct perfclock_page *)m->addr);
		fault_jmp = NULL;
		if (m->zapped) {
			m->zapped = 0;	/* refaulted, and the page checked out */
			atomic_fetch_add(&n_refault_after_dontneed, 1);
		}
		return;
	}
	fault_jmp = NULL;
	if (m->zapped && sig == SIGBUS)
		atomic_fetch_add(&n_sigbus_after_dontneed, 1);
	violation(c, "signal %d reading a readable clock page%s", sig,
		  m->zapped ? " after MADV_DONTNEED (->fault must refill it)" : "");
}

/* Does this context itself keep the module pinned (O_PATH fds do not)? */
static int holds_module(struct ctx *c)
{
	int i;

	if (c->nmaps)
		return 1;
	for (i = 0; i < c->nfds; i++)
		if (c->fds[i].acc >= 0)
			return 1;
	return c->anchor >= 0;
}

static int load_module(struct ctx *c, const char *params)
{
	int fd = open(opt.ko, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0) {
		CALL(c, "open(%s)", opt.ko);
		violation(c, "%s", strerror(errno));
		return errno;
	}
	err = syscall(SYS_finit_module, fd, params, 0) ? errno : 0;
	close(fd);
	return err;
}

/* Unload, check the device is gone, reload with random parameters. */
static void unload_reload(struct ctx *c)
{
	static const unsigned int periods[] = { 100, 250, 1000, 1000, 1000, 4000, 1000000 };
	static const unsigned int modes[] = { 0444, 0444, 0400, 0600, 0666, 0440 };
	unsigned int period, mode;
	char params[64];
	struct perfclock_info in;
	struct stat st;
	int fd;

	CALL(c, "delete_module(perfclock, O_NONBLOCK) with nothing open or mapped");
	if (!expect(c, syscall(SYS_delete_module, "perfclock", O_NONBLOCK) ? errno : 0, 0))
		return;
	atomic_fetch_add(&n_unloads, 1);
	CALL(c, "open(%s) after unload", DEV);
	fd = open(DEV, O_RDONLY | O_CLOEXEC);
	expect(c, fd < 0 ? errno : 0, ENOENT);
	if (fd >= 0)
		close(fd);
	if (chance(&c->rng, 30)) {
		snprintf(params, sizeof(params), chance(&c->rng, 50) ?
			 (chance(&c->rng, 50) ? "mode=01777" : "mode=0") :
			 chance(&c->rng, 50) ? "update_period_us=99" : "update_period_us=1000001");
		CALL(c, "finit_module(%s, \"%s\")", opt.ko, params);
		expect(c, load_module(c, params), EINVAL);
		CALL(c, "/sys/module/perfclock after a refused load");
		if (module_loaded())
			violation(c, "module present after a refused load");
	}
	period = periods[below(&c->rng, sizeof(periods) / sizeof(periods[0]))];
	mode = modes[below(&c->rng, sizeof(modes) / sizeof(modes[0]))];
	if (chance(&c->rng, 40))
		snprintf(params, sizeof(params), "update_period_us=%u mode=0%o", period, mode);
	else
		snprintf(params, sizeof(params), "%s", "");
	CALL(c, "finit_module(%s, \"%s\")", opt.ko, params);
	if (!expect(c, load_module(c, params), 0))
		return;
	if (!params[0]) {
		period = 1000;
		mode = 0444;
	}
	CALL(c, "stat(%s) after load with \"%s\"", DEV, params);
	if (stat(DEV, &st))
		violation(c, "%s", strerror(errno));
	else if ((st.st_mode & 0777) != mode || !S_ISCHR(st.st_mode))
		violation(c, "mode %o, want char device %o", st.st_mode, mode);
	fd = open(DEV, O_RDONLY | O_CLOEXEC);
	CALL(c, "GET_INFO after load with \"%s\"", params);
	if (fd < 0 || do_ioctl(fd, PERFCLOCK_IOC_GET_INFO, &in)) {
		violation(c, "%s", strerror(errno));
	} else {
		check_info(c, &in);
		if (in.update_period_ns != (uint64_t)period * 1000)
			violation(c, "update_period_ns %" PRIu64 " after update_period_us=%u",
				  (uint64_t)in.update_period_ns, period);
	}
	if (fd >= 0)
		close(fd);
	c->have_last = 0;	/* a new module: page and clock history start over */
	c->have_page = 0;
}

static void op_rmmod(struct ctx *c)
{
	char what[64];
	int kind = below(&c->rng, 10);

	op_count[OP_RMMOD]++;
	if (kind == 0) {
		CALL(c, "delete_module(\"perfclock_nonexistent\", O_NONBLOCK)");
		expect(c, syscall(SYS_delete_module, "perfclock_nonexistent", O_NONBLOCK) ? errno : 0,
		       ENOENT);
		return;
	}
	if (kind == 1) {
		void *p = bad_pointer(c, 16, what, sizeof(what));

		if (p == c->scratch + 2 * page_size || (uintptr_t)p < 4096)
			return;	/* readable or NULL-ish: not a clean EFAULT case */
		if (strstr(what, "read-only") || strstr(what, "straddles") ||
		    strstr(what, "TASK_SIZE"))
			return;	/* readable bytes: the name may be read */
		CALL(c, "delete_module(%p [%s], O_NONBLOCK)", p, what);
		expect(c, syscall(SYS_delete_module, p, O_NONBLOCK) ? errno : 0, EFAULT);
		return;
	}
	if (holds_module(c)) {
		/*
		 * Never O_TRUNC: with CONFIG_MODULE_FORCE_UNLOAD (Debian's
		 * kernels have it) that unloads a module in use, by design.
		 * Without O_NONBLOCK, 6.1 no longer waits: EWOULDBLOCK too.
		 */
		CALL(c, "delete_module(perfclock, %s) while open or mapped (%d fds, %d maps%s)",
		     kind == 2 ? "0" : "O_NONBLOCK", c->nfds, c->nmaps,
		     c->anchor >= 0 ? ", anchor" : "");
		expect(c, syscall(SYS_delete_module, "perfclock",
				  kind == 2 ? 0 : O_NONBLOCK) ? errno : 0,
		       EWOULDBLOCK);
		return;
	}
	if (c->single && !c->may_hold_outside && opt.ko)
		unload_reload(c);
}

static void one_op(struct ctx *c)
{
	static const struct { void (*fn)(struct ctx *); int weight; } ops[] = {
		{ op_open, 10 }, { op_close, 7 }, { op_dup, 2 }, { op_ioctl_good, 14 },
		{ op_ioctl_bad, 8 }, { op_ioctl_other, 8 }, { op_rw, 3 }, { op_mmap, 12 },
		{ op_munmap, 6 }, { op_mprotect, 5 }, { op_mremap, 4 }, { op_madvise, 5 },
		{ op_page, 12 }, { op_rmmod, 3 },
	};
	int total = 0, i, r;

	for (i = 0; i < (int)(sizeof(ops) / sizeof(ops[0])); i++)
		total += ops[i].weight;
	r = below(&c->rng, total);
	for (i = 0; r >= ops[i].weight; i++)
		r -= ops[i].weight;
	c->step++;
	c->call[0] = 0;
	ops[i].fn(c);
	if (opt.trace && c->call[0])
		printf("# trace %s %" PRIu64 ": %s\n", c->name, c->step, c->call);
}

static void ctx_init(struct ctx *c, const char *name, long round, uint64_t seed)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->round = round;
	c->rng.s = seed;
	c->anchor = -1;
	c->scratch = mmap(NULL, 4 * page_size, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c->scratch == MAP_FAILED) {
		perror("perfclock_fuzz: scratch");
		exit(2);
	}
	mprotect(c->scratch + page_size, page_size, PROT_NONE);
	mprotect(c->scratch + 2 * page_size, page_size, PROT_READ);
	mprotect(c->scratch + 3 * page_size, page_size, PROT_NONE);
}

static void ctx_cleanup(struct ctx *c)
{
	while (c->nmaps) {
		CALL(c, "cleanup munmap(%#lx)", (unsigned long)c->maps[0].addr);
		expect(c, munmap((void *)c->maps[0].addr, page_size) ? errno : 0, 0);
		drop_map(c, 0, 1);
	}
	while (c->nfds) {
		close(c->fds[c->nfds - 1].fd);
		c->nfds--;
	}
	munmap(c->scratch, 4 * page_size);
}

static int time_up(void)
{
	return atomic_load(&stop) || now_s() > deadline;
}

static void run_ops(struct ctx *c, int n)
{
	int i;

	for (i = 0; i < n && !time_up(); i++)
		one_op(c);
}

/* ---- rounds ------------------------------------------------------------------------ */

static uint64_t round_seed(long round, uint64_t salt)
{
	return mix(opt.seed ^ mix((uint64_t)round * 0x2545f4914f6cdd1dULL + salt));
}

static void sweep_magic(struct ctx *c)
{
	unsigned int dir, nr, i, size, cmd;
	static const unsigned int sizes[] = { 0, 1, 4, 8, 15, 16, 17, 24, 32, 64, 71, 72,
					      73, 128, 255, 4096, 16383 };
	int fd = open(DEV, O_RDONLY | O_CLOEXEC);
	uint64_t n = 0;

	CALL(c, "open(%s)", DEV);
	if (!expect(c, fd < 0 ? errno : 0, 0))
		return;
	for (dir = 0; dir < 4; dir++)
		for (nr = 0; nr < 256; nr++)
			for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
				cmd = _IOC(dir, PERFCLOCK_IOC_MAGIC, nr, sizes[i]);
				ioctl_other(c, fd, O_RDONLY, cmd);
				n++;
			}
	/* Every direction and size for the three numbers in use. */
	for (nr = 1; nr <= 3; nr++)
		for (dir = 0; dir < 4; dir++)
			for (size = 0; size < (1u << 14); size++) {
				cmd = _IOC(dir, PERFCLOCK_IOC_MAGIC, nr, size);
				ioctl_other(c, fd, O_RDONLY, cmd);
				n++;
				if (atomic_load(&stop))
					goto out;
			}
out:
	close(fd);
	printf("%s - fuzz: every command of magic %#x answers ENOTTY but GET_TIME and GET_INFO (%" PRIu64 " commands)\n",
	       violations ? "not ok" : "ok", PERFCLOCK_IOC_MAGIC, n);
	fflush(stdout);
}

static void round_single(long round)
{
	struct ctx c;
	char name[32];

	snprintf(name, sizeof(name), "single");
	ctx_init(&c, name, round, round_seed(round, 1));
	c.single = 1;
	run_ops(&c, 20 + below(&c.rng, 200));
	ctx_cleanup(&c);
	/* Nothing is left: unload must now work (and reload), when allowed. */
	if (opt.ko && !time_up() && chance(&c.rng, 20)) {
		ctx_init(&c, "single-end", round, round_seed(round, 2));
		c.single = 1;
		unload_reload(&c);
		ctx_cleanup(&c);
	}
}

struct thread_arg {
	struct ctx c;
	int nops;
	pthread_t tid;
};

static void *thread_main(void *p)
{
	struct thread_arg *a = p;

	run_ops(&a->c, a->nops);
	ctx_cleanup(&a->c);
	return NULL;
}

static void round_threads(long round)
{
	struct thread_arg *ta;
	struct rng r = { round_seed(round, 3) };
	int n = 2 + below(&r, opt.threads > 1 ? opt.threads - 1 : 1), i;
	int anchor = open(DEV, O_RDONLY | O_CLOEXEC);
	const struct perfclock_page *shared_map = NULL;
	char name[32];

	if (anchor < 0) {
		struct ctx c;

		ctx_init(&c, "threads", round, 0);
		CALL(&c, "open(%s) for the anchor", DEV);
		expect(&c, errno, 0);
		ctx_cleanup(&c);
		return;
	}
	shared_map = mmap(NULL, page_size, PROT_READ, MAP_SHARED, anchor, 0);
	ta = calloc(n, sizeof(*ta));
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "thread%d", i);
		ctx_init(&ta[i].c, name, round, round_seed(round, 100 + i));
		ta[i].c.anchor = anchor;
		if (shared_map != MAP_FAILED)
			ta[i].c.shared = shared_map;
		ta[i].nops = 50 + below(&r, 300);
		pthread_create(&ta[i].tid, NULL, thread_main, &ta[i]);
	}
	for (i = 0; i < n; i++)
		pthread_join(ta[i].tid, NULL);
	if (shared_map != MAP_FAILED) {
		struct ctx c;

		ctx_init(&c, "threads-shared", round, 0);
		c.anchor = anchor;
		CALL(&c, "read the shared page after the threads");
		check_page(&c, shared_map);
		ctx_cleanup(&c);
		munmap((void *)shared_map, page_size);
	}
	free(ta);
	close(anchor);
}

static void round_fork(long round)
{
	struct ctx c;
	pid_t pid;
	int status, i;

	ctx_init(&c, "fork-parent", round, round_seed(round, 4));
	c.single = 1;
	run_ops(&c, below(&c.rng, 40));
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		/* The child's copy: DONTFORK mappings did not come along. */
		snprintf(c.name, sizeof(c.name), "fork-child");
		c.rng.s = round_seed(round, 5);
		for (i = 0; i < c.nmaps; i++)
			if (c.maps[i].dontfork) {
				c.maps[i] = c.maps[--c.nmaps];
				i--;
			}
		/* The parent runs on: whatever it holds, never unload from here. */
		c.may_hold_outside = 1;
		run_ops(&c, 20 + below(&c.rng, 100));
		ctx_cleanup(&c);
		fflush(stdout);
		_exit(violations ? 1 : 0);
	}
	if (pid < 0) {
		perror("perfclock_fuzz: fork");
		ctx_cleanup(&c);
		return;
	}
	/* The child may hold what it inherited: unload only after it is gone. */
	c.may_hold_outside = 1;
	run_ops(&c, below(&c.rng, 60));
	CALL(&c, "waitpid(child %d)", pid);
	if (waitpid(pid, &status, 0) != pid)
		violation(&c, "waitpid: %s", strerror(errno));
	else if (WIFSIGNALED(status))
		violation(&c, "child killed by signal %d", WTERMSIG(status));
	else if (WEXITSTATUS(status)) {
		atomic_fetch_add(&violations, 1);
		atomic_store(&stop, 1);
		if (!first_violation[0])
			snprintf(first_violation, sizeof(first_violation),
				 "seed %" PRIu64 " round %ld: in the forked child (see above)",
				 opt.seed, round);
	}
	ctx_cleanup(&c);
}

/* ---- fault injection on init ------------------------------------------------------ */


static long read_long(const char *path)
{
	char buf[32] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? strtol(buf, NULL, 10) : -1;
}

/*
 * Kernel log lines that fail the sweep. Not "kmemleak: Cannot allocate":
 * kmemleak's own allocations are injection sites too, and it copes.
 */
static const char *const log_problems[] = { "BUG:", "WARNING:", "KASAN:", "UBSAN:",
	"possible circular locking", "possible recursive locking", "inconsistent lock state",
	"general protection fault", "Oops", "leak detector disabled", "suspicious RCU usage",
	"sleeping function called", NULL };

/* The frame right above perfclock_init in an injection's stack, if any. */
static int in_do_init;	/* the last classified injection was under do_init_module() */

static void classify(const char *log, char *where, size_t wlen, int *in_init, int *problem)
{
	const char *p = strstr(log, "FAULT_INJECTION"), *q, *prev = NULL, *line;
	int i;

	*in_init = 0;
	*problem = 0;
	in_do_init = 0;
	snprintf(where, wlen, "%s", p ? "outside perfclock_init" : "no injection report");
	for (i = 0; log_problems[i]; i++)
		if (strstr(log, log_problems[i]))
			*problem = 1;
	if (!p)
		return;
	/* Walk the lines of the trace; remember the frame before perfclock_init. */
	for (line = p; line && *line; line = q ? q + 1 : NULL) {
		char buf[256];

		q = strchr(line, '\n');
		snprintf(buf, sizeof(buf), "%.*s", (int)(q ? q - line : (long)strlen(line)), line);
		line = buf;
		if (strstr(line, "do_init_module"))
			in_do_init = 1;
		if (strstr(line, "perfclock_init") && strstr(line, "[perfclock]")) {
			*in_init = 1;
			if (prev) {
				const char *s = prev, *e;

				while (*s == ' ' || *s == '[' || (*s >= '0' && *s <= '9') || *s == '.' || *s == ']')
					s++;
				e = strchr(s, '+');
				snprintf(where, wlen, "perfclock_init -> %.*s", (int)(e ? e - s : 20), s);
			}
			return;
		}
		if (strstr(line, "] ") && !strstr(line, " ? ")) {
			static char prevbuf[256];

			snprintf(prevbuf, sizeof(prevbuf), "%s", strstr(line, "] ") + 2);
			prev = prevbuf;
		}
	}
}

static int fail_init(void)
{
	static char log[1 << 20];
	char nth[32], where[128], seen[32][128];
	int nseen = 0, in_init, problem, err, bad = 0, i, n_init = 0, n_ok = 0, loaded_after, nth_fd;
	int outside = 0, tried = 0, n_fail = 0;
	long n, left, total = 0;
	int fd = open(opt.fail_init, O_RDONLY | O_CLOEXEC);
	struct perfclock_time t;

	if (fd < 0) {
		printf("not ok - fault-inject: open %s: %s\n", opt.fail_init, strerror(errno));
		return 1;
	}
	if (module_loaded()) {
		printf("not ok - fault-inject: perfclock is loaded; unload it first\n");
		return 1;
	}
	/*
	 * Opened once: between setting fail-nth and the syscall, and while
	 * reading it back, nothing else may reach a fault-injection site.
	 */
	nth_fd = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	if (nth_fd < 0) {
		printf("ok - fault-inject # SKIP no /proc/thread-self/fail-nth (CONFIG_FAULT_INJECTION)\n");
		return 0;
	}
	klogctl(5 /* SYSLOG_ACTION_CLEAR */, NULL, 0);
	if (!opt.full) {
		/*
		 * The sites before do_init_module() are load_module()'s own:
		 * count the sites of a whole load, then sweep from the last
		 * one down until 25 in a row are outside do_init_module().
		 */
		if (pwrite(nth_fd, "1000000", 7, 0) < 0 ||
		    syscall(SYS_finit_module, fd, "", 0) ||
		    pread(nth_fd, nth, sizeof(nth) - 1, 0) <= 0) {
			printf("not ok - fault-inject: a load with no failure: %s\n", strerror(errno));
			return 1;
		}
		pwrite(nth_fd, "0", 1, 0);
		total = 1000000 - strtol(nth, NULL, 10);
		syscall(SYS_delete_module, "perfclock", O_NONBLOCK);
		klogctl(5, NULL, 0);
		printf("# a whole load reaches %ld fault-injection sites; sweeping down from %ld\n",
		       total, total + 2);
	}
	for (n = opt.full ? 1 : total + 2; opt.full ? n <= opt.max_nth : n > 0 && outside < 25;
	     n += opt.full ? 1 : -1) {
		snprintf(nth, sizeof(nth), "%ld", n);
		if (pwrite(nth_fd, nth, strlen(nth), 0) < 0) {
			printf("not ok - fault-inject: write fail-nth: %s\n", strerror(errno));
			return 1;
		}
		err = syscall(SYS_finit_module, fd, "", 0) ? errno : 0;
		memset(nth, 0, sizeof(nth));
		left = pread(nth_fd, nth, sizeof(nth) - 1, 0) > 0 ? strtol(nth, NULL, 10) : -1;
		if (pwrite(nth_fd, "0", 1, 0) < 0)
			left = -1;
		i = klogctl(4 /* SYSLOG_ACTION_READ_CLEAR */, log, sizeof(log) - 1);
		log[i > 0 ? i : 0] = 0;
		classify(log, where, sizeof(where), &in_init, &problem);
		/*
		 * A report outside do_init_module() counts towards the end of
		 * the sweep; one under it resets the count; a failure with no
		 * report (a __GFP_NOWARN allocation, which the kernel does not
		 * report: kmemleak's and KASAN's own) changes nothing.
		 */
		if (left > 0 || in_do_init)
			outside = 0;
		else if (strstr(log, "FAULT_INJECTION"))
			outside++;
		tried++;
		loaded_after = module_loaded();
		if (left > 0)
			snprintf(where, sizeof(where), "not reached (%ld sites short)", left);
		if (opt.verbose || in_init || problem || (err && err != ENOMEM))
			printf("# fail-nth %ld: %s, %s\n", n, ename(err), where);
		if (in_init && (opt.verbose || !n_init)) {
			printf("# the first injection inside perfclock_init (fail-nth %ld):\n", n);
			for (char *l = strtok(strdup(log), "\n"); l; l = strtok(NULL, "\n"))
				printf("#   %s\n", l);
		}
		if (problem) {
			printf("# kernel log after fail-nth %ld:\n", n);
			for (char *l = strtok(log, "\n"); l; l = strtok(NULL, "\n"))
				printf("#   %s\n", l);
			bad++;
		}
		if (in_init) {
			n_init++;
			for (i = 0; i < nseen && strcmp(seen[i], where); i++)
				;
			if (i == nseen && nseen < 32)
				snprintf(seen[nseen++], sizeof(seen[0]), "%s", where);
		}
		if (err) {
			/* Failed: cleanly, with nothing left behind. */
			if (loaded_after || !access(DEV, F_OK)) {
				printf("# fail-nth %ld: %s but module %s, %s %s\n", n, ename(err),
				       loaded_after ? "present" : "absent", DEV,
				       access(DEV, F_OK) ? "absent" : "present");
				bad++;
			}
			if (in_init && err != ENOMEM) {
				printf("# fail-nth %ld: init failed with %s, not ENOMEM\n", n, ename(err));
				bad++;
			}
			if (left > 0) {
				printf("# fail-nth %ld: load failed with no injected failure: %s\n", n, ename(err));
				bad++;
				break;
			}
			n_fail++;
			continue;
		}
		/* Loaded (the failure, if any, was absorbed): it must work and unload. */
		n_ok++;
		{
			int dfd = open(DEV, O_RDONLY | O_CLOEXEC);

			if (dfd < 0 || ioctl(dfd, PERFCLOCK_IOC_GET_TIME, &t)) {
				printf("# fail-nth %ld: loaded, but %s does not answer: %s\n", n, DEV,
				       strerror(errno));
				bad++;
			}
			if (dfd >= 0)
				close(dfd);
		}
		if (syscall(SYS_delete_module, "perfclock", O_NONBLOCK)) {
			printf("# fail-nth %ld: loaded, but rmmod: %s\n", n, strerror(errno));
			bad++;
			break;
		}
		if (left > 0 && opt.full)
			break;	/* the whole path ran without reaching site n: done */
	}
	klogctl(5, NULL, 0);
	close(fd);
	printf("# %d loads with one injected failure (%s): %d failed, %d loaded anyway; %d failures inside perfclock_init, at:\n",
	       tried, opt.full ? "every site of the load path" : "the sites under do_init_module", n_fail,
	       n_ok, n_init);
	for (i = 0; i < nseen; i++)
		printf("#   %s\n", seen[i]);
	if (opt.full && n > opt.max_nth) {
		printf("not ok - fault-inject: the load path has more than %ld fault sites\n", opt.max_nth);
		return 1;
	}
	if (!n_init) {
		printf("not ok - fault-inject: no injected failure reached perfclock_init\n");
		return 1;
	}
	printf("%s - fault-inject: %d loads, each with one allocation failing (%d in perfclock_init): a clean failure or a working module, no kernel report\n",
	       bad ? "not ok" : "ok", tried, n_init);
	return bad ? 1 : 0;
}

/* ---- main ---------------------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr,
		"usage: perfclock_fuzz [--seed N] [--seconds S] [--ko PATH] [--threads N] [--round R] [--verbose]\n"
		"       perfclock_fuzz --fail-init PATH [--full] [--max-nth N] [--verbose]\n");
	exit(64);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_sigaction = fault_handler, .sa_flags = SA_SIGINFO | SA_NODEFER };
	struct perfclock_info in;
	double start, elapsed, sweep_s = 0;
	unsigned long long sweep_calls = 0;
	long round, rounds = 0;
	int i, fd, have_seed = 0;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--verbose")) { opt.verbose = 1; continue; }
		if (!strcmp(a, "--trace")) { opt.trace = 1; continue; }
		if (!strcmp(a, "--full")) { opt.full = 1; continue; }
		if (!v)
			usage();
		if (!strcmp(a, "--seed")) { opt.seed = strtoull(v, NULL, 0); have_seed = 1; }
		else if (!strcmp(a, "--seconds")) opt.seconds = atof(v);
		else if (!strcmp(a, "--ko")) opt.ko = v;
		else if (!strcmp(a, "--threads")) opt.threads = atoi(v);
		else if (!strcmp(a, "--round")) opt.round = atol(v);
		else if (!strcmp(a, "--fail-init")) opt.fail_init = v;
		else if (!strcmp(a, "--max-nth")) opt.max_nth = atol(v);
		else usage();
		i++;
	}
	if (opt.threads < 1 || opt.threads > MAX_THREADS)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	page_size = sysconf(_SC_PAGESIZE);
	ncpus = sysconf(_SC_NPROCESSORS_CONF);
	have_ksm = !access("/sys/kernel/mm/ksm", F_OK);
	have_thp = !access("/sys/kernel/mm/transparent_hugepage", F_OK);
	if (opt.fail_init)
		return fail_init();
	if (!have_seed)
		opt.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);

	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);
	printf("# perfclock_fuzz: seed %" PRIu64 ", %.0f s, %d threads max%s%s\n", opt.seed,
	       opt.seconds, opt.threads, opt.ko ? ", unload/reload with " : "", opt.ko ? opt.ko : "");

	if (!module_loaded() && opt.ko) {
		struct ctx c;

		ctx_init(&c, "setup", -1, 0);
		CALL(&c, "finit_module(%s)", opt.ko);
		expect(&c, load_module(&c, ""), 0);
		ctx_cleanup(&c);
	}
	fd = open(DEV, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, PERFCLOCK_IOC_GET_INFO, &in)) {
		printf("not ok - fuzz: %s: %s (load the module, or pass --ko)\n", DEV, strerror(errno));
		return 1;
	}
	close(fd);
	if (!(in.flags & PERFCLOCK_INFO_SCHED_CLOCK_STABLE))
		g_skew = in.skew_estimate_ns;
	printf("# module: flags %#x, skew bound %" PRIu64 " ns, update period %" PRIu64 " ns\n",
	       in.flags, (uint64_t)in.skew_estimate_ns, (uint64_t)in.update_period_ns);

	/* The MAP_FIXED arena: always fully mapped, by fillers or by our pages. */
	arena = (uintptr_t)mmap(NULL, ARENA_SLOTS * page_size, PROT_NONE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if ((void *)arena == MAP_FAILED) {
		perror("perfclock_fuzz: arena");
		return 2;
	}

	start = now_s();
	deadline = opt.round >= 0 ? start + 1e9 : start + opt.seconds;
	if (opt.round <= 0) {
		struct ctx c;

		ctx_init(&c, "sweep", 0, round_seed(0, 0));
		sweep_magic(&c);
		ctx_cleanup(&c);
		sweep_calls = n_calls;
		sweep_s = now_s() - start;
	}
	for (round = opt.round >= 0 ? opt.round : 0; !time_up(); round++) {
		struct rng r = { round_seed(round, 0) };
		int kind = below(&r, 100);

		if (kind < 60)
			round_single(round);
		else if (kind < 85)
			round_threads(round);
		else
			round_fork(round);
		rounds++;
		if (opt.round >= 0)
			break;
	}
	elapsed = now_s() - start;

	/* Leave the module as a run.sh would expect it: loaded, default parameters. */
	if (opt.ko && !violations && module_loaded() &&
	    (read_long("/sys/module/perfclock/parameters/update_period_us") != 1000 ||
	     read_long("/sys/module/perfclock/parameters/mode") != 0444)) {
		struct ctx c;

		ctx_init(&c, "teardown", -1, 0);
		CALL(&c, "delete_module + finit_module with default parameters");
		if (expect(&c, syscall(SYS_delete_module, "perfclock", O_NONBLOCK) ? errno : 0, 0))
			expect(&c, load_module(&c, ""), 0);
		ctx_cleanup(&c);
	}

	printf("# calls by operation:");
	for (i = 0; i < OP_NR; i++)
		printf(" %s %llu", op_names[i], (unsigned long long)op_count[i]);
	printf("\n# unload/reload cycles: %llu; page reads after MADV_DONTNEED: %llu SIGBUS, %llu refaulted\n",
	       (unsigned long long)n_unloads, (unsigned long long)n_sigbus_after_dontneed,
	       (unsigned long long)n_refault_after_dontneed);
	if (violations) {
		printf("not ok - fuzz: seed %" PRIu64 ": %d violation(s); first: %s\n", opt.seed,
		       violations, first_violation);
		return 1;
	}
	printf("ok - fuzz: seed %" PRIu64 ", %ld rounds, %llu checked calls in %.1f s (%.0f calls/s after the %llu-call sweep)\n",
	       opt.seed, rounds, (unsigned long long)n_calls, elapsed,
	       (n_calls - sweep_calls) / (elapsed - sweep_s), (unsigned long long)sweep_calls);
	return 0;
}
