/* SPDX-License-Identifier: GPL-2.0 */
/*
 * perfclock_fuzz's parts, from the top (each calls only those below it):
 * perfclock_fuzz.c: options, main; fuzz_rounds.c: module load/unload,
 * contexts, rounds; fuzz_ops.c: the operations; fuzz_check.c: reports,
 * the checks of the device's answers. What they share.
 */
#ifndef PERFCLOCK_FUZZ_H
#define PERFCLOCK_FUZZ_H

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

#include "../../module/perfclock_ioctl.h"
#include "../../user/perfclock_page.h"

#include "fuzz_util.h"

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

/* The module's defaults (module/perfclock.c: mode, update_period_us). */
#define DEFAULT_MODE		0600
#define DEFAULT_PERIOD_US	1000

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

/* ---- options, global state (perfclock_fuzz.c) ---------------------------- */

struct fuzz_opts {
	uint64_t seed;
	double seconds;
	const char *ko;
	int threads;
	long round;		/* -1: all rounds */
	int verbose;
	int trace;
};
extern struct fuzz_opts opt;

extern long page_size;
extern int have_ksm, have_thp;	/* madvise answers depend on them */
extern long ncpus;
extern double deadline;
extern atomic_int stop;
extern atomic_int violations;
extern atomic_ullong n_calls;
extern atomic_ullong n_sigbus_after_dontneed;
extern atomic_ullong n_refault_after_dontneed;
extern atomic_ullong n_unloads;
extern uint64_t g_skew;		/* largest skew bound seen while unstable */
/* The first violation, for the summary line (a forked child's too). */
extern char first_violation[1024];

/* Operation counters, for the summary. */
enum { OP_OPEN, OP_CLOSE, OP_DUP, OP_IOCTL, OP_IOCTL_BAD, OP_IOCTL_OTHER,
	OP_RW, OP_MMAP, OP_MUNMAP, OP_MPROTECT, OP_MREMAP, OP_MADVISE,
	OP_PAGE, OP_RMMOD, OP_HORIZON, OP_NR };
extern atomic_ullong op_count[OP_NR];

/* ---- random numbers: splitmix64, one stream per context ------------------- */

struct rng {
	uint64_t s;
};

static inline uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline uint64_t rnd(struct rng *r)
{
	r->s += 0x9e3779b97f4a7c15ULL;
	return mix(r->s);
}

static inline uint64_t below(struct rng *r, uint64_t n)
{
	return n ? rnd(r) % n : 0;
}

static inline int chance(struct rng *r, int percent)
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
	/*
	 * Dropped to an unprivileged uid, no capabilities (round_unpriv()):
	 * the privileged requests must fail, with the documented errno.
	 */
	int unpriv;
	/* GET_HORIZON history, this module instance: generation, perf_clock() */
	int have_hz;
	uint32_t hz_gen;
	uint64_t hz_perf_ns;
	int have_hz_perf;
};

/* The MAP_FIXED arena (fuzz_ops.c). */
extern uintptr_t arena;
extern int arena_used[ARENA_SLOTS];

/* SIGBUS/SIGSEGV-guarded reads: where fault_handler() jumps to. */
extern __thread sigjmp_buf *fault_jmp;

#define CALL(c, ...) snprintf((c)->call, sizeof((c)->call), __VA_ARGS__)

/* fuzz_check.c: reports, and the checks of the device's answers. */
void violation(struct ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int expect(struct ctx *c, int got, int want);
void check_time(struct ctx *c, const struct perfclock_time *t);
void check_info(struct ctx *c, const struct perfclock_info *in);
int do_ioctl(int fd, unsigned long cmd, void *arg);
void check_page(struct ctx *c, const struct perfclock_page *pg);
int horizon_want(const struct ctx *c, const struct perfclock_horizon *in);
void check_horizon(struct ctx *c, const struct perfclock_horizon *in,
		   const struct perfclock_horizon *h, const struct timespec *before);
void *bad_pointer(struct ctx *c, size_t size, char *what, size_t wlen);
void fault_handler(int sig, siginfo_t *si, void *uc);

/* fuzz_ops.c: one operation each, on the context's fds and mappings. */
void op_open(struct ctx *c);
void op_close(struct ctx *c);
void op_dup(struct ctx *c);
void op_ioctl_good(struct ctx *c);
void op_ioctl_bad(struct ctx *c);
void ioctl_other(struct ctx *c, int fd, int acc, unsigned int cmd);
void op_ioctl_other(struct ctx *c);
void op_rw(struct ctx *c);
void drop_map(struct ctx *c, int i, int refill);
void op_mmap(struct ctx *c);
void op_munmap(struct ctx *c);
void op_mprotect(struct ctx *c);
void op_mremap(struct ctx *c);
void op_madvise(struct ctx *c);
void op_page(struct ctx *c);
void op_horizon(struct ctx *c);

/* fuzz_rounds.c: the module, contexts, and the rounds. */
int load_module(struct ctx *c, const char *params);
void ctx_init(struct ctx *c, const char *name, long round, uint64_t seed);
void ctx_cleanup(struct ctx *c);
int time_up(void);
uint64_t round_seed(long round, uint64_t salt);
void sweep_magic(struct ctx *c);
void round_single(long round);
void round_threads(long round);
void round_fork(long round);
void round_unpriv(long round);

#endif
