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
#define MAX_EV		(MAX_TP + 1)	/* the tracepoints and a sampling event */
#define PAGES_MIN	2
#define PAGES_DEFAULT	256
#define NR_RULES	RULE__MAX

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
	int status;		/* 1 on, 0 off, -1 auto (stderr is a tty) */
	char **command;
};

/* ---- the run's state ---- */

struct tp_event {
	int software;
	int sampling;			/* timer sampling: count is not occurrences */
	uint32_t type;			/* sampling: PERF_TYPE_* */
	uint64_t config;
	struct tp_format fmt;		/* tracepoints */
	char name[200];
	uint64_t count, lost, samples;	/* kernel's count, its lost, ours */
};

struct cpu_ring {
	int cpu;
	int nfd;
	int fd[MAX_TP];			/* fd[0] owns the mapping */
	int ev[MAX_TP];			/* index into events[] of fd[i] */
	uint64_t id[MAX_TP];
	struct perf_event_attr attr;	/* fd[0]'s: the layout of every record */
	void *base;
	size_t len;
	struct perfclock_ring *ring;
	uint64_t samples;
};

struct demo;

struct rule_state {
	struct demo *d;			/* demo_deliver() gets only this */
	int rule;
	struct perfclock_queue *q;
	int print;
	uint64_t in_order, late, order_errors, last_time;
	int have_last;
	uint64_t peak_queued;
	struct hist hold;
};

/* What each queue holds per event: this header, then (ours, --print) the sample. */
struct qhdr {
	uint32_t tp;		/* index into events[] */
	uint32_t cpu;
};

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
	int *cpus;			/* online CPUs, ncpus of them */
	int ncpus;
	struct cpu_ring *rings;
	int nr_rings;
	struct pollfd *pfd;		/* one per ring, to wait between rounds */
	uint64_t sample_type;
	uint64_t read_format;
	struct rule_state rules[NR_RULES];
	struct rules limits;		/* every rule's per-source state */
	struct tp_comms *comms;		/* --print: tid -> comm */
	int tty_status;			/* the status line redraws in place */
	uint64_t emit_now;		/* clock read just before deliveries */
	int final_drain;		/* the last round reads every ring dry */
	uint64_t records_total, samples_total, nontime_total, rounds_total;
	uint64_t ring_errors, throttle_total;
	/* --max-per-round: rings left with unread records, and their oldest. */
	uint64_t capped_rounds, unread_left;
	/* Our horizon's age at each round start (clock read - horizon): the barrier's cost. */
	struct hist hz_age;
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
	uint64_t hops;
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
int demo_nr_cpus_traced(const struct demo *d);
const char *demo_clock_name(const struct demo *d);

/* ---- json.c ---- */

void demo_write_json(struct demo *d, FILE *f, const struct kernel_counts *k,
		     const struct perfclock_clock_info *ci);

#endif /* DEMO_DEMO_H */
