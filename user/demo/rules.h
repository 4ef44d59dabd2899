/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * demo_flush: the flush rules compared side by side. Each rule computes,
 * at the end of every round, a limit below which its own queue emits
 * (perfclock_queue_flush_until()): the library's queue is the mechanism,
 * these are policies. Only "ours" and "ours-gp" are the library's: the
 * others are the rules of the 2013 LKML thread, kept here as comparisons.
 *
 *  ours       < min over rings of each ring's horizon this round: for a
 *             CPU's ring, H_c = perfclock_horizon_cpu() read ON that CPU
 *             just before the ring was drained (perfclock/horizon.h,
 *             PER-CPU HORIZON: no grace period); for a ring it does
 *             not cover (a task's ring, written from several CPUs) or a
 *             clock without one, the grace-period horizon below (the
 *             fallback)
 *  ours-gp    < H, H = perfclock_horizon() taken at the round start,
 *             before any ring is read: every record stamped below H was
 *             in its ring then (exact with the module or membarrier)
 *  ahern      < the bare clock read at the round start: no grace period,
 *             so a record stamped just before it but still in flight, or
 *             stamped on a CPU whose clock lags, comes late
 *  perf-old   <= the largest timestamp queued before the previous round
 *             ended (perf's ordered_events OE_FLUSH__ROUND)
 *  schuchart  <= min over sources of each source's largest timestamp (a
 *             source that never produced stalls it)
 *  kvm-live   <= min over sources of the first timestamp pushed this
 *             round (perf kvm stat live); no flush if nothing came
 *
 * Per-source state is updated on every push (rules_push()), so all rules
 * see the same events.
 *
 * A reader that leaves records unread in a ring (perf kvm stat live reads
 * at most 25 per ring per round) calls rules_cap() with the oldest record
 * left unread: a clock read or a horizon only covers what was drained, so
 * ours, ours-gp and ahern flush no further than that.
 */
#ifndef DEMO_RULES_H
#define DEMO_RULES_H

#include <stdint.h>

enum rule_id {
	RULE_OURS,
	RULE_OURS_GP,
	RULE_AHERN,
	RULE_PERF_OLD,
	RULE_SCHUCHART,
	RULE_KVM_LIVE,
	RULE__MAX
};

struct rules_src {
	uint64_t max_time;	/* largest time ever pushed (schuchart) */
	uint64_t first_time;	/* first push of round first_round (kvm) */
	uint64_t first_round;
	int pushed_any;
};

struct rules {
	uint32_t nr_sources;
	struct rules_src *src;
	uint64_t round;		/* current round, from 1 */
	uint64_t start;		/* ahern: the clock read at round start */
	uint64_t horizon;	/* ours-gp: perfclock_horizon() at round start */
	uint64_t ring_hz;	/* ours: min of this round's ring horizons */
	int have_ring_hz;
	int ring_hz_void;	/* ours: its horizons restarted this round */
	uint64_t max_pushed;	/* perf-old */
	int any_pushed;
	uint64_t next_flush;	/* perf-old: the limit of this round's end */
	int next_flush_valid;
	uint64_t cap;		/* ours, ahern: the oldest record left unread */
	int have_cap;
};

/* Short stable name ("ours", "ours-gp", "ahern", "perf-old", "schuchart", "kvm-live"). */
const char *rule_name(int rule);

/* 0, or -ENOMEM / -EINVAL (no sources). */
int rules_init(struct rules *r, uint32_t nr_sources);
void rules_free(struct rules *r);

/* A round starts: the bare clock read and the horizon, both before any ring is read. */
void rules_round_begin(struct rules *r, uint64_t clock_now, uint64_t horizon);

/*
 * ours: a ring's horizon this round (H_c read on its CPU before it was
 * drained, or the grace-period horizon for a ring H_c does not cover).
 * Ours flushes below the smallest; with none given, below r->horizon.
 */
void rules_ring_horizon(struct rules *r, uint64_t h);

/* ours: its horizons restarted in this round: it flushes nothing more in it. */
void rules_ring_horizon_void(struct rules *r);

/* This round left a record stamped t unread (ours, ours-gp and ahern stop below it). */
void rules_cap(struct rules *r, uint64_t t);

/* An event of source src was pushed (to every rule's queue). */
void rules_push(struct rules *r, uint32_t src, uint64_t time);

/*
 * The round ends: 1 and *limit, the EXCLUSIVE limit to pass to
 * perfclock_queue_flush_until() for rule; 0 when the rule flushes nothing
 * this round. Call for every rule, then rules_round_end().
 */
int rules_limit(const struct rules *r, int rule, uint64_t *limit);

/* After the flushes: perf-old's next limit is what was queued by now. */
void rules_round_end(struct rules *r);

#endif /* DEMO_RULES_H */
