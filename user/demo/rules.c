// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * demo_flush: the flush rules' limits (see rules.h). The older rules were
 * in libperfclock's queue before it became mechanism only; they live here
 * now, as comparisons, computed from per-source state kept on push.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rules.h"

static const char *const names[RULE__MAX] = {
	[RULE_OURS] = "ours",
	[RULE_OURS_GP] = "ours-gp",
	[RULE_AHERN] = "ahern",
	[RULE_PERF_OLD] = "perf-old",
	[RULE_SCHUCHART] = "schuchart",
	[RULE_KVM_LIVE] = "kvm-live",
};

const char *rule_name(int rule)
{
	if (rule < 0 || rule >= RULE__MAX)
		return "unknown";
	return names[rule];
}

int rules_init(struct rules *r, uint32_t nr_sources)
{
	memset(r, 0, sizeof(*r));
	if (!nr_sources)
		return -EINVAL;
	r->src = calloc(nr_sources, sizeof(*r->src));
	if (!r->src)
		return -ENOMEM;
	r->nr_sources = nr_sources;
	return 0;
}

void rules_free(struct rules *r)
{
	free(r->src);
	r->src = NULL;
}

void rules_round_begin(struct rules *r, uint64_t clock_now, uint64_t horizon)
{
	r->round++;
	r->start = clock_now;
	r->horizon = horizon;
	r->have_cap = 0;
	r->have_ring_hz = 0;
	r->ring_hz_void = 0;
}

void rules_ring_horizon(struct rules *r, uint64_t h)
{
	if (!r->have_ring_hz || h < r->ring_hz)
		r->ring_hz = h;
	r->have_ring_hz = 1;
}

void rules_ring_horizon_void(struct rules *r)
{
	r->ring_hz_void = 1;
}

void rules_cap(struct rules *r, uint64_t t)
{
	if (!r->have_cap || t < r->cap)
		r->cap = t;
	r->have_cap = 1;
}

static uint64_t capped(const struct rules *r, uint64_t limit)
{
	return r->have_cap && r->cap < limit ? r->cap : limit;
}

void rules_push(struct rules *r, uint32_t src, uint64_t time)
{
	struct rules_src *s;

	if (src >= r->nr_sources)
		return;
	s = &r->src[src];
	if (!s->pushed_any || time > s->max_time)
		s->max_time = time;
	if (!s->pushed_any || s->first_round != r->round) {
		s->first_round = r->round;
		s->first_time = time;
	}
	s->pushed_any = 1;
	if (!r->any_pushed || time > r->max_pushed)
		r->max_pushed = time;
	r->any_pushed = 1;
}

/* The thread's rules flush at or below a time: one more, exclusive. */
static uint64_t inclusive(uint64_t t)
{
	return t == UINT64_MAX ? t : t + 1;
}

int rules_limit(const struct rules *r, int rule, uint64_t *limit)
{
	uint64_t l = UINT64_MAX;
	int found = 0;
	uint32_t i;

	if (!r->round)
		return 0;
	switch (rule) {
	case RULE_OURS:
		if (r->ring_hz_void)
			return 0;
		*limit = capped(r, r->have_ring_hz ? r->ring_hz : r->horizon);
		return 1;
	case RULE_OURS_GP:
		*limit = capped(r, r->horizon);
		return 1;
	case RULE_AHERN:
		*limit = capped(r, r->start);
		return 1;
	case RULE_PERF_OLD:
		if (!r->next_flush_valid)
			return 0;
		*limit = inclusive(r->next_flush);
		return 1;
	case RULE_SCHUCHART:
		for (i = 0; i < r->nr_sources; i++) {
			if (!r->src[i].pushed_any)
				return 0;	/* an idle source stalls it */
			if (r->src[i].max_time < l)
				l = r->src[i].max_time;
		}
		*limit = inclusive(l);
		return 1;
	case RULE_KVM_LIVE:
		for (i = 0; i < r->nr_sources; i++) {
			if (!r->src[i].pushed_any ||
			    r->src[i].first_round != r->round)
				continue;
			found = 1;
			if (r->src[i].first_time < l)
				l = r->src[i].first_time;
		}
		if (!found)
			return 0;
		*limit = inclusive(l);
		return 1;
	}
	return 0;
}

void rules_round_end(struct rules *r)
{
	/* perf: next_flush = max_timestamp after each round's flush. */
	r->next_flush = r->max_pushed;
	r->next_flush_valid = r->any_pushed;
}
