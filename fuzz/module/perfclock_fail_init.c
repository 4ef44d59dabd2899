// SPDX-License-Identifier: GPL-2.0
/*
 * perfclock_fail_init: the init fault sweep of the module.
 *
 *   perfclock_fail_init [--full] [--max-nth N] [--verbose] PATH
 *
 * Fault injection on the module's load and init path. For a site number n:
 * write n to /proc/thread-self/fail-nth, which makes the n-th fault-
 * injection site this thread reaches fail (failslab and fail_page_alloc,
 * configured by the caller with ignore-gfp-wait=N and min-order=0), call
 * finit_module(), and check: it failed cleanly (an errno, ENOMEM when the
 * failure hit perfclock_init; no /sys/module/perfclock, no /dev/perfclock;
 * nothing in the kernel log but the injection report), or it succeeded
 * despite the failure and the module works and unloads. Each injection's
 * stack trace (read from the kernel log) says whether it hit
 * perfclock_init, and where. By default n runs down from the last site of
 * a whole load until 25 in a row fall outside do_init_module() (the sites
 * before are load_module()'s own); --full runs n = 1, 2, ... over the
 * whole path.
 *
 * Output is TAP lines ("ok - fault-inject: ..." / "not ok - ..."). Exit
 * status 0 when every load failed cleanly or worked.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/klog.h>
#include <sys/syscall.h>

#include "../../module/perfclock_ioctl.h"
#include "fuzz_util.h"

static struct {
	const char *fail_init;	/* the module's .ko */
	int full;
	long max_nth;
	int verbose;
} opt = { .max_nth = 5000 };

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

static void usage(void)
{
	fprintf(stderr, "usage: perfclock_fail_init [--full] [--max-nth N] [--verbose] PATH\n");
	exit(64);
}

int main(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--verbose"))
			opt.verbose = 1;
		else if (!strcmp(a, "--full"))
			opt.full = 1;
		else if (!strcmp(a, "--max-nth") && i + 1 < argc)
			opt.max_nth = atol(argv[++i]);
		else if (a[0] != '-' && !opt.fail_init)
			opt.fail_init = a;
		else
			usage();
	}
	if (!opt.fail_init)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	return fail_init();
}
