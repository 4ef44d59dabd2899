// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * demo_flush: a live tool over real per-CPU perf rings that runs six
 * flush rules side by side on the same events: libperfclock's per-CPU
 * horizon ("ours": H_c read on each CPU, the grace-period horizon for
 * rings it does not cover), its grace-period horizon alone ("ours-gp")
 * and the four older rules of the 2013 thread (demo/rules.c).
 *
 * It opens tracepoints (default sched:sched_switch and sched:sched_wakeup;
 * software context-switch events when tracefs is missing) on every online
 * CPU, one ring per CPU, and reads the rings in rounds. Each round takes
 * perfclock_horizon() and a bare clock read first, then drains every
 * ring (each CPU's from that CPU, after reading its H_c there), pushing
 * every sample to six ordered queues, one per rule, so all
 * rules see identical input in one run; then each rule's limit is
 * computed and its queue flushed below it (perfclock_queue_flush_until()).
 * Ours runs with the library's defaults: nothing to tune. At the end it
 * prints, per rule, what was delivered in order, what came too late, and
 * how long events were held (from their timestamp to their delivery).
 *
 *   demo_flush [options] [-- COMMAND [ARG...]]
 *
 * See usage() for the options. Exit status: 0 done, 1 an error (message
 * on stderr), 2 a usage error; with a COMMAND that exits by itself, its
 * exit status (128 + N if killed by signal N), 127 if it cannot be found,
 * 126 if it cannot be run.
 *
 * This file holds the options and main(); the run's parts are in demo/
 * (demo/demo.h says which file holds what), sharing one struct demo.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "demo/demo.h"
#include "demo/load.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: demo_flush [options] [-- COMMAND [ARG...]]\n"
"\n"
"Trace every online CPU through one perf ring per CPU, read the rings in\n"
"rounds, and run the flush rules (ours, ours-gp, ahern, perf-old,\n"
"schuchart, kvm-live) side by side on the same events, as perf's live\n"
"tools read: one thread, round after round. Ours runs on the library's\n"
"threaded reader (one thread pinned to each CPU, reading that CPU's\n"
"horizon there), on rings of its own tracing the same events.\n"
"\n"
"  -c, --clock NAME     perfclock (default: /dev/perfclock, the clock perf\n"
"                       stamps with) or monotonic (events opened with\n"
"                       use_clockid=CLOCK_MONOTONIC; no module needed)\n"
"      --device PATH    the perfclock device (default /dev/perfclock)\n"
"  -d, --duration SEC   run this long (default 5 s; with a COMMAND: until\n"
"                       it exits)\n"
	"  -l, --load N         N threads passing tokens across CPUs (built-in load)\n"
"      --load-cpus N    run the load on the first N online CPUs only (the\n"
"                       others stay idle but for the reader; default: all)\n"
"  -e, --event SYS:NAME tracepoint to trace (repeatable; default\n"
"                       sched:sched_switch and sched:sched_wakeup)\n"
"      --software       software context-switch events instead\n"
"  -m, --pages N        data pages per ring, a power of two >= %d (default %d)\n"
	"  -i, --interval US    poll timeout between rounds (default 1000; 0: spin)\n"
"      --max-per-round N  read at most N records per ring per round, as perf\n"
"                       kvm stat live does (25); our rule and ahern's then\n"
"                       flush no further than the oldest record left unread\n"
"      --sample NAME    also sample each CPU on a timer: cpu-clock or cycles,\n"
"                       one more ring per CPU (default: none)\n"
"      --sample-hz N    samples per second per CPU (default 1000)\n"
"      --sample-shared  the samples go into the tracepoints' ring of their CPU\n"
"                       (a writer in hard-irq context sharing it), not their own\n"
"      --per-thread     one ring per --load thread (per task, all CPUs) instead\n"
"                       of one per CPU\n"
"      --migrate-every N  each load thread moves to the next CPU every N hops\n"
"                       (default: pinned)\n"
"      --tick-ms N      on each CPU --load-cpus leaves idle, a thread that\n"
"                       writes and reads back a byte every N ms, nothing else\n"
"      --side-band      also order the rings' mmap, comm and task records\n"
"                       (attr.mmap, mmap_data, comm, task), as perf record has them\n"
"      --load-side-band mmap|comm  each load hop also maps and unmaps an\n"
"                       anonymous page (mmap), or renames its thread (comm)\n"
"      --reverse        read the rings from the last CPU to the first\n"
"      --yield          sched_yield() between rings\n"
"      --reader KIND    threads (default): ours on the threaded reader, as\n"
"                       above; round: ours in the round loop with the other\n"
"                       rules, the loop visiting each CPU to read its horizon\n"
"                       there (what --per-thread always does)\n"
"      --no-visit       ours keeps the grace-period horizon on every ring (to\n"
"                       measure what the per-CPU horizon saves)\n"
"  -p, --print          print our rule's ordered events like perf script\n"
"  -j, --json FILE      write the summary as JSON to FILE ('-': stdout)\n"
"      --label TEXT     a label stored in the JSON (e.g. the clock regime)\n"
	"      --status/--no-status  the live status line (default: if a tty; not a\n"
"                       tty, or --status=lines: one line every 2 s)\n"
"  -h, --help\n"
"\n"
"Exit status: 0 done, 1 error, 2 usage error; with a COMMAND that exits by\n"
"itself, its status (127: not found, 126: cannot be run).\n",
		PAGES_MIN, PAGES_DEFAULT);
}

/*
 * SIGINT/SIGTERM end the run after the current round (demo_run() reads
 * this through d->stop). A handler is given no argument to reach the
 * run's context by, and may only set a volatile sig_atomic_t: so this is
 * the tool's one file-scope variable.
 */
static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static long parse_long(const char *s, const char *what, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end || v < min || v > max)
		die_usage("bad %s '%s' (%ld..%ld)", what, s, min, max);
	return v;
}

static void parse_args(struct opts *opt, int argc, char **argv)
{
	enum { O_SOFTWARE = 256, O_REVERSE, O_YIELD, O_LABEL,
	       O_STATUS, O_NO_STATUS, O_DEVICE, O_MAX_PER_ROUND, O_LOAD_CPUS,
	       O_SAMPLE, O_SAMPLE_HZ, O_SAMPLE_SHARED, O_PER_THREAD, O_MIGRATE,
	       O_TICK_MS, O_SIDE_BAND, O_LOAD_MMAP, O_NO_VISIT, O_READER };
	static const struct option lo[] = {
		{ "clock", required_argument, NULL, 'c' },
		{ "device", required_argument, NULL, O_DEVICE },
		{ "duration", required_argument, NULL, 'd' },
		{ "load", required_argument, NULL, 'l' },
		{ "event", required_argument, NULL, 'e' },
		{ "software", no_argument, NULL, O_SOFTWARE },
		{ "pages", required_argument, NULL, 'm' },
		{ "interval", required_argument, NULL, 'i' },
		{ "reverse", no_argument, NULL, O_REVERSE },
		{ "yield", no_argument, NULL, O_YIELD },
		{ "print", no_argument, NULL, 'p' },
		{ "json", required_argument, NULL, 'j' },
		{ "label", required_argument, NULL, O_LABEL },
		{ "status", optional_argument, NULL, O_STATUS },
		{ "no-status", no_argument, NULL, O_NO_STATUS },
		{ "max-per-round", required_argument, NULL, O_MAX_PER_ROUND },
		{ "load-cpus", required_argument, NULL, O_LOAD_CPUS },
		{ "sample", required_argument, NULL, O_SAMPLE },
		{ "sample-hz", required_argument, NULL, O_SAMPLE_HZ },
		{ "sample-shared", no_argument, NULL, O_SAMPLE_SHARED },
		{ "per-thread", no_argument, NULL, O_PER_THREAD },
		{ "migrate-every", required_argument, NULL, O_MIGRATE },
		{ "tick-ms", required_argument, NULL, O_TICK_MS },
		{ "side-band", no_argument, NULL, O_SIDE_BAND },
		{ "load-side-band", required_argument, NULL, O_LOAD_MMAP },
		{ "no-visit", no_argument, NULL, O_NO_VISIT },
		{ "reader", required_argument, NULL, O_READER },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int c;

	opt->duration = -1;
	opt->device = PERFCLOCK_DEFAULT_PATH;
	opt->pages = PAGES_DEFAULT;
	opt->interval_us = 1000;
	opt->status = -1;
	opt->sample_hz = 1000;
	opt->threads = -1;
	while ((c = getopt_long(argc, argv, "+c:d:l:e:m:i:pj:h", lo, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (!strcmp(optarg, "perfclock"))
				opt->clock = CLOCK_KIND_PERFCLOCK;
			else if (!strcmp(optarg, "monotonic"))
				opt->clock = CLOCK_KIND_MONOTONIC;
			else
				die_usage("unknown clock '%s' (perfclock or monotonic)", optarg);
			break;
		case O_DEVICE:
			opt->device = optarg;
			break;
		case 'd':
			errno = 0;
			opt->duration = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(opt->duration > 0) ||
			    opt->duration > 86400 * 365.0)
				die_usage("bad duration '%s' (seconds > 0)", optarg);
			break;
		case 'l':
			opt->load = (int)parse_long(optarg, "load", 0, 4096);
			break;
		case 'e':
			if (opt->nr_tp_spec == MAX_TP)
				die_usage("at most %d --event options", MAX_TP);
			opt->tp_spec[opt->nr_tp_spec++] = optarg;
			break;
		case O_SOFTWARE:
			opt->software = 1;
			break;
		case 'm':
			opt->pages = (unsigned long)parse_long(optarg, "page count", 0, 1L << 20);
			break;
		case 'i':
			opt->interval_us = parse_long(optarg, "interval", 0, 10000000);
			break;
		case O_REVERSE:
			opt->reverse = 1;
			break;
		case O_YIELD:
			opt->yield = 1;
			break;
		case 'p':
			opt->print = 1;
			break;
		case 'j':
			opt->json = optarg;
			break;
		case O_LABEL:
			opt->label = optarg;
			break;
		case O_STATUS:
			if (optarg && strcmp(optarg, "lines"))
				die_usage("bad --status=%s (only --status=lines)", optarg);
			opt->status = optarg ? 2 : 1;
			break;
		case O_MAX_PER_ROUND:
			opt->max_per_round = parse_long(optarg, "records per round", 1, 1L << 30);
			break;
		case O_LOAD_CPUS:
			opt->load_cpus = (int)parse_long(optarg, "load CPU count", 1, 65536);
			break;
		case O_SAMPLE:
			if (strcmp(optarg, "cpu-clock") && strcmp(optarg, "cycles"))
				die_usage("unknown sampling event '%s' (cpu-clock or cycles)", optarg);
			opt->sample = optarg;
			break;
		case O_SAMPLE_HZ:
			opt->sample_hz = parse_long(optarg, "sampling rate", 1, 100000);
			break;
		case O_SAMPLE_SHARED:
			opt->sample_shared = 1;
			break;
		case O_PER_THREAD:
			opt->per_thread = 1;
			break;
		case O_MIGRATE:
			opt->migrate_every = parse_long(optarg, "hops between migrations", 1, 1L << 30);
			break;
		case O_TICK_MS:
			opt->tick_ms = parse_long(optarg, "tick period (ms)", 1, 3600000);
			break;
		case O_SIDE_BAND:
			opt->side_band = 1;
			break;
		case O_NO_VISIT:
			opt->no_visit = 1;
			break;
		case O_READER:
			if (!strcmp(optarg, "threads"))
				opt->threads = 1;
			else if (!strcmp(optarg, "round"))
				opt->threads = 0;
			else
				die_usage("unknown --reader '%s' (threads or round)", optarg);
			break;
		case O_LOAD_MMAP:
			if (!strcmp(optarg, "mmap"))
				opt->load_side_band = LOAD_SB_MMAP;
			else if (!strcmp(optarg, "comm"))
				opt->load_side_band = LOAD_SB_COMM;
			else
				die_usage("unknown --load-side-band '%s' (mmap or comm)", optarg);
			break;
		case O_NO_STATUS:
			opt->status = 0;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	/*
	 * getopt stops at the first argument that is not an option; only
	 * "--" may introduce the command (getopt has then stepped over it).
	 */
	if (optind < argc) {
		if (strcmp(argv[optind - 1], "--"))
			die_usage("unexpected argument '%s' (a command to run goes "
				  "after --: demo_flush [options] -- COMMAND)",
				  argv[optind]);
		opt->command = argv + optind;
	} else if (optind > 1 && !strcmp(argv[optind - 1], "--")) {
		die_usage("no command after --");
	}
	if (opt->sample_shared && !opt->sample)
		die_usage("--sample-shared needs --sample");
	if (opt->per_thread && !opt->load)
		die_usage("--per-thread opens a ring per --load thread: give --load N");
	if (opt->per_thread && opt->sample && !opt->sample_shared)
		die_usage("--per-thread puts --sample in each thread's ring: add --sample-shared");
	/*
	 * The threaded reader takes one perfclock_evring, and a per-task
	 * evring is one task's ring: the load's threads have one each.
	 */
	if (opt->per_thread && opt->threads == 1)
		die_usage("--per-thread runs ours in the round loop (the threaded reader "
			  "takes one set of rings, a task's is one ring): drop --reader threads");
	if (opt->threads < 0)
		opt->threads = !opt->per_thread;
	if (opt->software && opt->nr_tp_spec)
		die_usage("--software and --event exclude each other");
	if (opt->pages & (opt->pages - 1))
		die_usage("bad --pages %lu: perf needs a power of two (e.g. %lu)",
			  opt->pages, opt->pages ? 1UL << (63 - __builtin_clzl(opt->pages)) :
			  (unsigned long)PAGES_DEFAULT);
	/* A ring smaller than this fills between two rounds of a busy CPU. */
	if (opt->pages < PAGES_MIN)
		die_usage("too few ring pages: --pages %lu; this tool needs at "
			  "least %d data pages per ring", opt->pages, PAGES_MIN);
	if (opt->json && opt->print && !strcmp(opt->json, "-"))
		die_usage("--print and --json - both want stdout");
	if (opt->json && strcmp(opt->json, "-")) {
		/* Now, not after the whole run. */
		opt->json_f = fopen(opt->json, "we");
		if (!opt->json_f)
			die("--json %s: %s", opt->json, strerror(errno));
	}
	if (opt->status < 0)
		opt->status = isatty(STDERR_FILENO);
}

int main(int argc, char **argv)
{
	/* stdout's buffer: used until exit() flushes it, so not on the stack. */
	static char outbuf[1 << 20];
	struct sigaction sa;
	struct demo *d = calloc(1, sizeof(*d));
	int rc;

	if (!d)
		die("out of memory");
	parse_args(&d->opt, argc, argv);
	/* --status=lines: whole lines even on a tty (a guest's serial port). */
	d->tty_status = d->opt.status == 1 && isatty(STDERR_FILENO);
	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));

	demo_setup(d);
	d->stop = &stop_flag;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	rc = demo_run(d);
	demo_report(d);
	demo_teardown(d);
	return rc;
}
