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
 *    and runs its own operations while the parent runs others;
 *  - unpriv: a child drops to uid 65534, no groups and no capabilities,
 *    keeping an fd it opened as root, and runs the same operations:
 *    what needs CAP_PERFMON (an EXPEDITED GET_HORIZON) or
 *    CAP_SYS_MODULE must fail with EPERM, open() follow the device's
 *    mode, the rest answer as for root.
 * Round 0 also sweeps every command in the 0xB2 magic (4 directions x
 * 256 numbers x a set of sizes, and every size for numbers 1 and 2).
 *
 * Operations: open (all access modes, O_PATH, bad flags) / dup / close;
 * ioctl with the three commands (GET_HORIZON with every clock it serves
 * and requests one field away: flags, reserved fields, clockids; its
 * answer checked against the clock read around it) and with any other
 * command, on pointers that
 * are valid, misaligned, NULL, unmapped, read-only, straddling a guard
 * page, kernel or non-canonical addresses; read/write; mmap with random
 * lengths, offsets, protections and flags (MAP_FIXED into a reserved
 * arena); munmap, mprotect, mremap, madvise with every advice; page reads
 * with the seq protocol and their consistency with the ioctl; rmmod.
 *
 * The init fault sweep (failslab on the module's load and init path) is
 * its own program, perfclock_fail_init.c.
 *
 * Code, in layers, each file calling only those below it: this file,
 * the options and main; fuzz_rounds.c the module's load and unload, the
 * contexts and the rounds; fuzz_ops.c the operations; fuzz_check.c the
 * reports and the checks of every answer of the device (with
 * fuzz_util.c, shared with perfclock_fail_init). The checks were here,
 * beside main, so that the operations and the rounds called back up
 * into the file that calls them.
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

static const char *const op_names[OP_NR] = { "open", "close", "dup", "ioctl",
	"ioctl-badptr", "ioctl-other", "read/write", "mmap", "munmap",
	"mprotect", "mremap", "madvise", "page-read", "rmmod", "horizon" };
atomic_ullong op_count[OP_NR];

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

		if (kind < 55)
			round_single(round);
		else if (kind < 80)
			round_threads(round);
		else if (kind < 92)
			round_fork(round);
		else
			round_unpriv(round);
		rounds++;
		if (opt.round >= 0)
			break;
	}
	elapsed = now_s() - start;

	/* Leave the module as a run.sh would expect it: loaded, default parameters. */
	if (opt.ko && !violations && module_loaded() &&
	    (read_long("/sys/module/perfclock/parameters/update_period_us") != DEFAULT_PERIOD_US ||
	     read_long("/sys/module/perfclock/parameters/mode") != DEFAULT_MODE)) {
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

