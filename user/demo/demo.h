/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * demo_flush: the run's context (struct demo) and what each part of the
 * tool offers the others. One struct demo holds everything a run knows:
 * its options, the perf events and rings it opened, the rules' queues,
 * and the counters the reports print. main() allocates it and passes it
 * to every function, so the parts depend on this header, never on each
 * other's state:
 *
 *   ../demo_flush.c   options and main()
 *   setup.c           the clock, the events, their rings, the queues; teardown
 *   rounds.c          the run: rounds of reading every ring and flushing
 *   deliver.c         what the queues hand back: counted, timed, --print'ed
 *   threads.c         ours on the library's threaded reader (--reader threads)
 *   command.c         -- COMMAND: running it, and its exit status as ours
 *   report.c          the status line and the closing tables
 *   json.c            the --json summary
 *   die.c             error exits
 *
 * and, each with its own header and no use of struct demo: tp.c
 * (tracepoints through tracefs), load.c (the built-in load), rules.c (the
 * flush rules' limits, shared with the tests).
 */
#ifndef DEMO_DEMO_H
#define DEMO_DEMO_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "hist.h"
#include "rules.h"
#include "tp.h"

#ifndef PERF_FORMAT_LOST
#define PERF_FORMAT_LOST	(1U << 4)	/* Linux 6.0 */
#endif

#define MAX_TP		8
#define MAX_EV		(MAX_TP + 2)	/* the tracepoints, a sampling event, side-band */
#define PAGES_MIN	2
#define PAGES_DEFAULT	256
#define NR_RULES	RULE__MAX
#define PC_WRONG_CPU_TRIES	4	/* H_c read on another CPU than pinned: retry */

/* ---- options (parsed by demo_flush.c) ---- */

enum clock_kind { CLOCK_KIND_PERFCLOCK, CLOCK_KIND_MONOTONIC };

struct opts {
	double duration;	/* seconds; < 0: not given */
	int load;
	enum clock_kind clock;
	const char *device;
	const char *tp_spec[MAX_TP];
	int nr_tp_spec;
	int software;
	unsigned long pages;
	long interval_us;
	int reverse;
	int yield;
	int print;
	const char *json;
	FILE *json_f;		/* opened while parsing: fail before the run */
	const char *label;
	long max_per_round;	/* records read per ring per round; 0: all */
	int load_cpus;		/* the load runs on the first N CPUs; 0: all */
	const char *sample;	/* cpu-clock or cycles, on its own ring per CPU */
	long sample_hz;
	int sample_shared;	/* --sample into the tracepoints' ring instead */
	int per_thread;		/* one ring per load thread, not per CPU */
	long migrate_every;	/* load threads move CPU every N hops; 0: pinned */
	long tick_ms;		/* a ticker on each CPU the load leaves idle */
	int side_band;		/* mmap, comm and task records in every ring */
	int no_visit;		/* ours keeps the grace-period horizon: no H_c */
	/*
	 * Ours on the library's threaded reader (threads.c; the default),
	 * or in the round loop beside the other rules (--reader round,
	 * visiting each CPU to read its H_c there; always with --per-thread).
	 */
	int threads;
	int load_side_band;	/* LOAD_SB_*: each load hop maps a page, or renames itself */
	int status;		/* 1 on, 0 off, -1 auto (stderr is a tty) */
	char **command;
};

/* ---- the run's state ---- */

struct tp_event {
	int software;
	int sampling;			/* timer sampling: count is not occurrences */
	int side_band;			/* not an event: the rings' side-band records */
	uint32_t type;			/* sampling: PERF_TYPE_* */
	uint64_t config;
	struct tp_format fmt;		/* tracepoints */
	char name[200];
	uint64_t count, lost, samples;	/* kernel's count, its lost, ours */
};

/*
 * One ring: a CPU's (cpu >= 0, tid -1) or, with --per-thread, a load
 * thread's (cpu -1, tid >= 0).
 */
struct cpu_ring {
	int cpu;
	int tid;
	int nfd;
	int fd[MAX_EV];			/* fd[0] owns the mapping */
	int ev[MAX_EV];			/* index into events[] of fd[i] */
	uint64_t id[MAX_EV];
	struct perf_event_attr attr;	/* fd[0]'s: the layout of every record */
	void *base;
	size_t len;
	struct perfclock_ring *ring;
	uint64_t samples;
	/*
	 * Records read from this ring stamped below one read before them
	 * from the same ring: the ring is not in stamp order (a writer
	 * interrupted between its stamp and its reservation, or a task's
	 * ring written from CPUs whose clocks disagree).
	 */
	uint64_t last_time, out_of_order, worst_backstep_ns;
	/* Rounds in which ours took this ring's own H_c, or the grace-period horizon. */
	uint64_t hz_own, hz_gp;
};

struct demo;
struct load;
struct ticker;
struct demo_threads;

struct rule_state {
	struct demo *d;			/* demo_deliver() gets only this */
	int rule;
	struct perfclock_queue *q;
	int print;
	uint64_t in_order, late, order_errors, last_time;
	int have_last;
	/*
	 * Delivered only once the run had ended (the final drain and flush),
	 * and of those, the ones this rule had been given over
	 * HELD_TO_END_NS before the end.
	 */
	uint64_t at_end, held_to_end;
	uint64_t peak_queued;
	struct hist hold;
};

/* What each queue holds per event: this header, then (ours, --print) the sample. */
struct qhdr {
	uint32_t tp;		/* index into events[] */
	uint32_t cpu;
	uint64_t pushed_at;	/* the clock at the start of the round that read it; 0: the final drain */
};

/*
 * "Held to the end": a rule still held, when the run ended, an event it
 * had been given this long before (read in a round that started this
 * long before the end): it had it in its queue for so long and still
 * delivered it only because the run ended. One second is stock perf
 * trace's own window (it flushes at newest - 1 s): a rule past it holds
 * longer than what it would replace. Counted from the read, not the
 * stamp, so that a reader that falls behind its rings does not count.
 */
#define HELD_TO_END_NS	1000000000ull

/*
 * One run of the tool: its options, what it opened, the rules' queues and
 * the counters the reports print.
 */
struct demo {
	struct opts opt;
	/* The SIGINT/SIGTERM handler's flag (demo_flush.c): end the run. */
	const volatile sig_atomic_t *stop;
	struct perfclock *clk;
	struct tp_event events[MAX_EV];
	int nr_events;
	int side_band_ev;		/* --side-band: its events[] entry; -1: none */
	int *cpus;			/* online CPUs, ncpus of them */
	int ncpus;
	struct cpu_ring *rings;
	int nr_rings;
	struct load *load;		/* --load: started in setup, released by demo_run() */
	struct demo_threads *threads;	/* --reader threads: ours' reader (threads.c) */
	int *load_tids;			/* --per-thread: the threads whose rings these are */
	struct ticker *ticker;		/* --tick-ms */
	struct pollfd *pfd;		/* one per ring, to wait between rounds */
	uint64_t sample_type;
	uint64_t read_format;
	struct rule_state rules[NR_RULES];
	struct rules limits;		/* every rule's per-source state */
	struct tp_comms *comms;		/* --print: tid -> comm */
	int tty_status;			/* the status line redraws in place */
	uint64_t emit_now;		/* clock read just before deliveries */
	int final_drain;		/* the last round reads every ring dry */
	uint64_t end_time;		/* the clock when the producers stopped */
	uint64_t prev_start_now;	/* the clock at this round's start (qhdr.pushed_at) */
	uint64_t records_total, samples_total, nontime_total, rounds_total;
	uint64_t ring_errors, throttle_total;
	/* --max-per-round: rings left with unread records, and their oldest. */
	uint64_t capped_rounds, unread_left;
	/* Our horizon's age at each round start (clock read - horizon): the barrier's cost. */
	struct hist hz_age;
	/*
	 * The per-CPU horizon (ours; rounds.c visits each CPU to read H_c
	 * there). percpu: the clock offers H_c and the rings are per CPU;
	 * else every ring keeps the grace-period horizon. pc_age and gp_age:
	 * how far below the clock read at the flush ours' and ours-gp's
	 * limits were (the horizon's age where it is used). pinned_cpu: the
	 * CPU the reader is pinned to now, -1: not pinned.
	 */
	int percpu, percpu_offered;	/* offered: before --reader threads took ours */
	uint32_t pc_gen;
	int have_pc_gen, pinned_cpu;
	/* rounds.c: ours' horizon for the task rings, this round's. */
	int task_h_taken, task_h_ok;
	uint64_t task_h;
	struct hist pc_age, gp_age;
	/* Pins (migrations), pin failures, H_c reads on another CPU, restarts. */
	uint64_t pc_pins, pc_pin_failed, pc_restarts, pc_wrong_cpu;
	/* The reader thread's context switches (getrusage) over the run. */
	long reader_nvcsw, reader_nivcsw;
	/*
	 * Records stamped before the previous round began, read only in
	 * this one: they were not visible when the previous round read
	 * their ring (or their CPU's clock lags the reader's). No clock
	 * horizon at or above the previous round's start can be safe
	 * against them; the worst such age is what a margin has to cover.
	 */
	uint64_t prev_start, inflight_seen, inflight_worst_ns;
	int have_prev_start;
	/* The run's length and the load's work, for the reports. */
	double secs;
	uint64_t hops, ticks;
};

/* What the kernel's counters say beside what was read (report.c). */
struct kernel_counts {
	uint64_t count, lost, lost_in_records, lost_samples_records;
	int64_t unaccounted;	/* count - samples - lost */
	int have_lost;
	int consistent;
};

/* A PERF_RECORD_SAMPLE of this tool's sample_type, parsed. */
struct sample {
	uint64_t id;
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu;
	const void *raw;
	uint32_t raw_size;
};

/* ---- die.c: print "demo_flush: ..." and exit 1 (die) or 2 (usage) ---- */

void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void die_usage(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* ---- setup.c ---- */

/*
 * Open the clock, pick and open the events (one ring per CPU, two with
 * --sample), make one queue per rule; dies with a message saying what to
 * do on any error. The events are left disabled.
 */
void demo_setup(struct demo *d);
/* Enable every event (dies on failure), or disable them (errors ignored). */
void demo_set_enabled(struct demo *d, int on);
/* Undo demo_setup() and free d. */
void demo_teardown(struct demo *d);

/* ---- rounds.c ---- */

/*
 * Run until --duration, the COMMAND's exit or *d->stop, then stop the
 * load, drain every ring and flush every queue. Returns the exit status:
 * the COMMAND's if it exited by itself, else 0.
 */
int demo_run(struct demo *d);

/* ---- deliver.c ---- */

/* Parse a sample of d->sample_type; -1 if it is too short. */
int demo_parse_sample(const struct demo *d, const void *data, uint32_t size,
		      struct sample *s);
/* The queues' deliver callback; arg is the rule's struct rule_state. */
int demo_deliver(void *arg, const struct perfclock_event *ev);

/* Print one queued event (struct qhdr, then the record) as perf script does. */
void demo_print_event(struct demo *d, const struct perfclock_event *ev);

/* ---- threads.c: ours on the threaded reader (--reader threads) ---- */

/* What ours' reader did, once demo_threads_finish() has run. */
struct demo_threads_result {
	int have;
	struct perfclock_queue_stats queue;	/* the reader's queue */
	uint64_t events;	/* delivered to ours: the round loop's "samples" */
	/*
	 * Of those, samples of the counted events (not timer samples, not
	 * side-band), and the kernel's count and lost count of those
	 * events on ours' fds (have_lost: Linux 6.0+).
	 */
	uint64_t samples, kernel_count, kernel_lost;
	int have_lost;
	uint64_t untimed, throttle;	/* delivered, not counted as events */
	uint32_t threads, rings;
	int rings_own, rings_gp, rings_mixed;	/* H_c, perfclock_horizon(), both */
	uint64_t handoffs, rounds, errors;
	uint64_t lost_records, lost;	/* PERF_RECORD_LOST(_SAMPLES) in its rings */
	uint64_t age_p50_ns, age_p99_ns;	/* thread horizons' age at the merge */
};

/*
 * Open the events evs[0..n-1] (indexes into events[]) again, with the
 * attrs setup.c made for them, as one perfclock_evring with a ring per
 * CPU, for ours' reader; dies on error.
 */
void demo_threads_open(struct demo *d, const struct perf_event_attr *attrs,
		       const int *evs, int n);
void demo_threads_set_enabled(struct demo *d, int on);
/* Start the reader and its merger thread (after the events are enabled). */
void demo_threads_start(struct demo *d);
/* Stop: the merger delivers the rest in order; d->end_time must be set. */
void demo_threads_finish(struct demo *d);
/* NULL before demo_threads_finish(), or with --reader round. */
const struct demo_threads_result *demo_threads_result(const struct demo *d);
void demo_threads_close(struct demo *d);
/* A rule's queue statistics, ours' from its reader's queue on the threads. */
void demo_rule_queue_stats(const struct demo *d, int rule,
			   struct perfclock_queue_stats *st);

/* ---- command.c ---- */

/* Start argv; exits 127/126 at once if it cannot be run, as a shell does. */
pid_t demo_start_command(char **argv);
/* A wait status as an exit status (128 + N if killed by signal N). */
int demo_exit_status(int st);

/* ---- report.c ---- */

void demo_status_line(struct demo *d, double elapsed, uint64_t d_samples,
		      uint64_t d_rounds, double dt);
/* The closing tables (stdout, or stderr when stdout carries --print or --json -), and --json. */
void demo_report(struct demo *d);

/* The rings' stamp order, summed (struct cpu_ring's out_of_order). */
struct ring_order {
	uint64_t records;	/* read below an earlier record of their ring */
	int rings;		/* rings with any */
	uint64_t worst_ns;
	int worst_ring;		/* index into rings[], -1: none */
};

/*
 * What demo_report() works out once at the end of the run and hands to
 * json.c, which writes it out and calls nothing back in report.c (the
 * JSON is below the report, a leaf).
 */
struct run_summary {
	struct kernel_counts k;
	struct perfclock_clock_info ci;	/* perfclock_get_info() at the end */
	const char *clock;		/* "monotonic" or "perfclock" */
	int cpus_traced;
	/* Rings whose every round took their own H_c, the grace-period horizon, or some of each. */
	int rings_own, rings_gp, rings_mixed;
	struct ring_order order;
};

/* ---- json.c ---- */

void demo_write_json(struct demo *d, FILE *f, const struct run_summary *s);

#endif /* DEMO_DEMO_H */
