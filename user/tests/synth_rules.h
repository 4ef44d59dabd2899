/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * demo_flush's flush rules (../demo/rules.c, compiled into the tests that
 * include this) as a synth_replay() policy: the scenarios of the 2013
 * thread judge each rule's verdict on identical input.
 */
#ifndef PERFCLOCK_SYNTH_RULES_H
#define PERFCLOCK_SYNTH_RULES_H

#include "synth.h"
#include "../demo/rules.h"

struct synth_rule {
	struct rules r;
	int rule;
};

static void synth_rule_begin(void *arg, uint64_t clock, uint64_t hz)
{
	rules_round_begin(&((struct synth_rule *)arg)->r, clock, hz);
}

static void synth_rule_push(void *arg, uint32_t src, uint64_t t)
{
	rules_push(&((struct synth_rule *)arg)->r, src, t);
}

static int synth_rule_end(void *arg, uint64_t *limit)
{
	struct synth_rule *s = (struct synth_rule *)arg;
	int ret = rules_limit(&s->r, s->rule, limit);

	rules_round_end(&s->r);
	return ret;
}

/* Free with rules_free(&s->r). */
static __attribute__((unused)) struct synth_policy
synth_policy_rule(struct synth_rule *s, int rule, uint32_t nsrc)
{
	struct synth_policy p = { synth_rule_begin, synth_rule_push,
				  synth_rule_end, s };

	if (rules_init(&s->r, nsrc))
		abort();
	s->rule = rule;
	return p;
}

#endif
