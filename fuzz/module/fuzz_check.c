// SPDX-License-Identifier: GPL-2.0
/*
 * perfclock_fuzz's reports and checks (see perfclock_fuzz.c): a
 * violation said with its replay line, every answer of the device
 * checked against the documented behaviour (a read, GET_INFO, the page
 * read with the seq protocol), the SIGBUS/SIGSEGV-guarded reads, and the
 * bad pointers the ioctls must refuse. The bottom layer of the fuzzer:
 * the operations (fuzz_ops.c), the rounds (fuzz_rounds.c) and main call
 * it; it calls only fuzz_util.c and the page's inline readers.
 */
#include "fuzz.h"

static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;

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

	if (t->flags & ~(PERFCLOCK_TIME_STABLE | PERFCLOCK_TIME_RESET_PENDING))
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
			  PERFCLOCK_INFO_PERF_HORIZON_REFUSED |
			  PERFCLOCK_INFO_TIME_RESET_FLAG))
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

/* ---- GET_HORIZON ------------------------------------------------------------------ */

/*
 * What GET_HORIZON owes a request it could read, in the order
 * perfclock_ioctl_get_horizon() checks (perfclock_ioctl.h): EINVAL for a
 * flag it does not know, a reserved field set or a clock it does not
 * serve; then EPERM for PERFCLOCK_HORIZON_EXPEDITED without CAP_PERFMON
 * or CAP_SYS_ADMIN (the caller's, at the call). 0 otherwise.
 */
int horizon_want(const struct ctx *c, const struct perfclock_horizon *in)
{
	int id = in->clockid;

	if ((in->flags & ~PERFCLOCK_HORIZON_EXPEDITED) || in->__reserved0 ||
	    in->reserved[0])
		return EINVAL;
	if (id != PERFCLOCK_HORIZON_PERF_CLOCK && id != CLOCK_REALTIME &&
	    id != CLOCK_MONOTONIC && id != CLOCK_MONOTONIC_RAW &&
	    id != CLOCK_BOOTTIME && id != CLOCK_TAI)
		return EINVAL;
	if ((in->flags & PERFCLOCK_HORIZON_EXPEDITED) && c->unpriv)
		return EPERM;
	return 0;
}

static uint64_t ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ULL + (uint64_t)ts->tv_nsec;
}

/*
 * Check a horizon GET_HORIZON handed out for request in. before: the
 * clock asked for (a clockid) and CLOCK_MONOTONIC, read just before the
 * call. Only what the header promises: the request's fields come back
 * as they were, the reserved ones zero; the generation is 1 at load and
 * only bumped; the horizon is read at the call ("Read the horizon now,
 * wait for a grace period, return it"), so a clockid's lies between
 * reads of that clock around the call (give or take the NMI-safe
 * accessors perf stamps with, and a set of REALTIME or TAI), and
 * perf_clock()'s is one every CPU's clock had reached (perfclock.c,
 * point 4 of the proof): not above a later GET_TIME where the clock is
 * one (STABLE), and within a generation never below an earlier one
 * (only a new generation may restart them SMALLER).
 */
void check_horizon(struct ctx *c, const struct perfclock_horizon *in,
		   const struct perfclock_horizon *h, const struct timespec *before)
{
	struct timespec after[2];
	uint64_t b, a, slack, ref;
	uint32_t tflags = 0;

	clock_gettime(CLOCK_MONOTONIC, &after[1]);
	if (h->clockid != in->clockid || h->flags != in->flags)
		violation(c, "clockid %d flags %#x came back as %d %#x",
			  in->clockid, in->flags, h->clockid, h->flags);
	if (h->__reserved0 || h->reserved[0])
		violation(c, "reserved fields %#x %#" PRIx64 " on output",
			  h->__reserved0, (uint64_t)h->reserved[0]);
	if (!h->ns)
		violation(c, "horizon 0");
	if (h->wait_ns > ts_ns(&after[1]) - ts_ns(&before[1]))
		violation(c, "wait_ns %" PRIu64 " longer than the call (%" PRIu64 " ns)",
			  (uint64_t)h->wait_ns, ts_ns(&after[1]) - ts_ns(&before[1]));
	if (!h->generation)
		violation(c, "generation 0 (1 at load)");
	if (c->have_hz && h->generation < c->hz_gen)
		violation(c, "generation %u after %u", h->generation, c->hz_gen);
	if (!c->have_hz || h->generation != c->hz_gen)
		c->have_hz_perf = 0;
	c->have_hz = 1;
	c->hz_gen = h->generation;
	if (in->clockid == PERFCLOCK_HORIZON_PERF_CLOCK) {
		if (c->have_hz_perf && h->ns < c->hz_perf_ns)
			violation(c, "perf_clock() horizon %" PRIu64 " below an earlier one %" PRIu64
				  " of the same generation %u", (uint64_t)h->ns, c->hz_perf_ns,
				  h->generation);
		c->have_hz_perf = 1;
		c->hz_perf_ns = h->ns;
		ref = ref_read(c, &tflags);
		if (ref && (tflags & PERFCLOCK_TIME_STABLE) &&
		    !(tflags & PERFCLOCK_TIME_RESET_PENDING) && h->ns > ref)
			violation(c, "perf_clock() horizon %" PRIu64 " above a later GET_TIME %" PRIu64,
				  (uint64_t)h->ns, ref);
		return;
	}
	clock_gettime(in->clockid, &after[0]);
	b = ts_ns(&before[0]);
	a = ts_ns(&after[0]);
	slack = in->clockid == CLOCK_REALTIME || in->clockid == CLOCK_TAI ?
		1000000000ULL : 10000000ULL;
	if (h->ns + slack < b || h->ns > a + slack)
		violation(c, "clock %d: horizon %" PRIu64 " outside [%" PRIu64 ", %" PRIu64
			  "], the clock read around the call (slack %" PRIu64 ")",
			  in->clockid, (uint64_t)h->ns, b, a, slack);
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
