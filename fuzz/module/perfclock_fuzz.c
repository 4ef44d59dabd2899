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
 * The init fault sweep (failslab on the module's load and init path) is
 * its own program, perfclock_fail_init.c.
 *
 * Code: this file has the options, the reports, the checks of every
 * answer of the device, and main; fuzz_ops.c the operations; fuzz_rounds.c
 * the module's load and unload, the contexts and the rounds.
 *
 * Output is TAP lines ("ok - fuzz: ..." / "not ok - fuzz: ..."); on a
 * violation, the seed, round, context, and the failing call with its
 * arguments. Exit status 0 when every check held.
 */
#include "fuzz.h"

/* ---- options, global state ------------------------------------------------ */

struct fuzz_opts opt = { .seconds = 60, .threads = 3, .round = -1 };

long page_size;
int have_ksm, have_thp;
long ncpus;
double deadline;
atomic_int stop;
atomic_int violations;
atomic_ullong n_calls;
atomic_ullong n_sigbus_after_dontneed;
atomic_ullong n_refault_after_dontneed;
atomic_ullong n_unloads;
uint64_t g_skew;
char first_violation[1024];
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const op_names[OP_NR] = { "open", "close", "dup", "ioctl",
	"ioctl-badptr", "ioctl-other", "read/write", "mmap", "munmap",
	"mprotect", "mremap", "madvise", "page-read", "rmmod" };
atomic_ullong op_count[OP_NR];

/* ---- reports ----------------------------------------------------------------- */

void violation(struct ctx *c, const char *fmt, ...)
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

/* Result of a call returning -1/errno as 0 or errno. */
int expect(struct ctx *c, int got, int want)
{
	atomic_fetch_add(&n_calls, 1);
	if (got != want) {
		violation(c, "expected %s, got %s", ename(want), ename(got));
		return 0;
	}
	return 1;
}

/* ---- SIGBUS/SIGSEGV-guarded reads ------------------------------------------ */

__thread sigjmp_buf *fault_jmp;

void fault_handler(int sig, siginfo_t *si, void *uc)
{
	(void)si; (void)uc;
	if (fault_jmp)
		siglongjmp(*fault_jmp, sig);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* ---- the device -------------------------------------------------------------- */

static int any_fd(struct ctx *c);

/*
 * The unstable-regime bound grows with the timer lateness the module
 * measures: before calling a backward step a violation, ask for the
 * bound as it is now.
 */
uint64_t current_skew(struct ctx *c)
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

void check_time(struct ctx *c, const struct perfclock_time *t)
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

void check_info(struct ctx *c, const struct perfclock_info *in)
{
	int i;

	if (in->abi_version != PERFCLOCK_ABI_VERSION)
		violation(c, "abi_version %u", in->abi_version);
	if (in->page_version != PERFCLOCK_PAGE_VERSION)
		violation(c, "page_version %u", in->page_version);
	if (in->page_size != (uint32_t)page_size)
		violation(c, "page_size %u, not %ld", in->page_size, page_size);
	if (in->flags & ~(PERFCLOCK_INFO_SCHED_CLOCK_STABLE | PERFCLOCK_INFO_PAGE_TSC_VALID |
			  PERFCLOCK_INFO_HORIZON | PERFCLOCK_INFO_HORIZON_GENERATION |
			  PERFCLOCK_INFO_SCHED_CLOCK_PARAVIRT | PERFCLOCK_INFO_UPDATES_ARMED |
			  PERFCLOCK_INFO_COUNTERS |
			  PERFCLOCK_INFO_SCHED_CLOCK_RESET_PROBE |
			  PERFCLOCK_INFO_PERF_HORIZON_REFUSED))
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

int do_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? errno : 0;
}

/* An fd this context can use for a reference read, or -1. */
int any_fd(struct ctx *c)
{
	int i;

	for (i = 0; i < c->nfds; i++)
		if (c->fds[i].acc >= 0)
			return c->fds[i].fd;
	return c->anchor;
}

uint64_t ref_read(struct ctx *c, uint32_t *flags)
{
	struct perfclock_time t;
	int fd = any_fd(c);

	if (fd < 0 || do_ioctl(fd, PERFCLOCK_IOC_GET_TIME, &t))
		return 0;
	*flags = t.flags;
	return t.ns;
}

/* Read a mapped page with the seq protocol and check what it says. */
void check_page(struct ctx *c, const struct perfclock_page *pg)
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
void *bad_pointer(struct ctx *c, size_t size, char *what, size_t wlen)
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

/* ---- main ---------------------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr,
		"usage: perfclock_fuzz [--seed N] [--seconds S] [--ko PATH] [--threads N] [--round R] [--verbose]\n"
		"(the init fault sweep is perfclock_fail_init)\n");
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
		if (!v)
			usage();
		if (!strcmp(a, "--seed")) { opt.seed = strtoull(v, NULL, 0); have_seed = 1; }
		else if (!strcmp(a, "--seconds")) opt.seconds = atof(v);
		else if (!strcmp(a, "--ko")) opt.ko = v;
		else if (!strcmp(a, "--threads")) opt.threads = atoi(v);
		else if (!strcmp(a, "--round")) opt.round = atol(v);
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

