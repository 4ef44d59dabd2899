/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * demo_flush: a log-linear latency histogram (32 sub-buckets per power of
 * two: a reported percentile is the lower edge of its bucket, within about
 * 3 % of the true value). The maximum is kept exactly.
 */
#ifndef DEMO_HIST_H
#define DEMO_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS	5
#define HIST_SUB	(1u << HIST_SUB_BITS)
#define HIST_BUCKETS	((64 - HIST_SUB_BITS + 1) * HIST_SUB)

struct hist {
	uint64_t n, max;
	uint64_t b[HIST_BUCKETS];
};

static inline unsigned int hist_index(uint64_t v)
{
	unsigned int e;

	if (v < HIST_SUB)
		return (unsigned int)v;
	e = 63u - (unsigned int)__builtin_clzll(v);	/* e >= HIST_SUB_BITS */
	return (e - HIST_SUB_BITS + 1) * HIST_SUB +
	       (unsigned int)((v >> (e - HIST_SUB_BITS)) & (HIST_SUB - 1));
}

static inline uint64_t hist_lower(unsigned int i)
{
	unsigned int e;

	if (i < HIST_SUB)
		return i;
	e = i / HIST_SUB + HIST_SUB_BITS - 1;
	return ((uint64_t)1 << e) |
	       ((uint64_t)(i % HIST_SUB) << (e - HIST_SUB_BITS));
}

static inline void hist_add(struct hist *h, uint64_t v)
{
	h->b[hist_index(v)]++;
	h->n++;
	if (v > h->max)
		h->max = v;
}

/* The p-th percentile (0 < p <= 100); 0 for an empty histogram. */
static inline uint64_t hist_pct(const struct hist *h, double p)
{
	uint64_t want, seen = 0;
	unsigned int i;

	if (!h->n)
		return 0;
	want = (uint64_t)(p / 100.0 * (double)h->n + 0.5);
	if (want < 1)
		want = 1;
	for (i = 0; i < HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= want)
			return hist_lower(i) < h->max ? hist_lower(i) : h->max;
	}
	return h->max;
}

#endif /* DEMO_HIST_H */
