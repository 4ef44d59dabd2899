// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The small client scripts/check-deb.sh builds against the installed
 * libperfclock-dev, with nothing but `pkg-config --cflags --libs
 * libperfclock`, the way a tool packaged for Debian would: it opens
 * perf's clock for CLOCK_MONOTONIC events, takes horizons, and merges
 * two sources' events through the queue. Exit 0 and one "client: ..."
 * line when the library behaves; 1 and the reason otherwise.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <perfclock/libperfclock.h>

#define NR 8

struct seen {
	unsigned int n;
	uint64_t last;
	int disorder;
};

static int deliver(void *arg, const struct perfclock_event *ev)
{
	struct seen *s = arg;

	if (s->n && ev->time < s->last)
		s->disorder = 1;
	if (ev->flags & PERFCLOCK_EVENT_LATE)
		s->disorder = 1;
	s->last = ev->time;
	s->n++;
	return 0;
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "client: %s: %s\n", what, strerror(err < 0 ? -err : err));
	return 1;
}

int main(void)
{
	struct perfclock_queue_config cfg;
	struct perfclock_queue_stats st;
	struct perfclock_queue *q;
	struct seen seen = { 0 };
	struct perfclock *clk;
	uint64_t t[NR], h0, h1;
	int64_t got, rest;
	int i, err;

	clk = perfclock_open_clockid(CLOCK_MONOTONIC);
	if (!clk)
		return fail("perfclock_open_clockid(CLOCK_MONOTONIC)", errno);
	err = perfclock_horizon(clk, &h0);
	if (err)
		return fail("perfclock_horizon", err);
	for (i = 0; i < NR; i++) {
		err = perfclock_read(clk, &t[i]);
		if (err)
			return fail("perfclock_read", err);
	}
	/* A horizon is never above a later read of the clock. */
	if (h0 > t[0]) {
		fprintf(stderr, "client: horizon %llu above a later read %llu\n",
			(unsigned long long)h0, (unsigned long long)t[0]);
		return 1;
	}

	perfclock_queue_config_init(&cfg);
	cfg.nr_sources = 2;
	cfg.deliver = deliver;
	cfg.arg = &seen;
	q = perfclock_queue_new(&cfg);
	if (!q)
		return fail("perfclock_queue_new", errno);
	/* Source 0 the odd reads, source 1 the even ones, source 1 first. */
	for (i = 1; i < NR; i += 2) {
		err = perfclock_queue_push(q, 1, t[i], &i, sizeof(i));
		if (err)
			return fail("perfclock_queue_push", err);
	}
	for (i = 0; i < NR; i += 2) {
		err = perfclock_queue_push(q, 0, t[i], &i, sizeof(i));
		if (err)
			return fail("perfclock_queue_push", err);
	}
	/*
	 * Wait for the horizon to pass the last read (without the module
	 * it trails the clock by an estimate), so that flush_until() has
	 * every event to emit: at most 2 s.
	 */
	for (i = 0; i < 400; i++) {
		const struct timespec ms5 = { 0, 5000000 };

		err = perfclock_horizon(clk, &h1);
		if (err)
			return fail("perfclock_horizon", err);
		if (h1 > t[NR - 1])
			break;
		nanosleep(&ms5, NULL);
	}
	got = perfclock_queue_flush_until(q, h1);
	if (got < 0)
		return fail("perfclock_queue_flush_until", (int)got);
	rest = perfclock_queue_flush_all(q);
	if (rest < 0)
		return fail("perfclock_queue_flush_all", (int)rest);
	perfclock_queue_get_stats(q, &st);
	perfclock_queue_free(q);
	perfclock_close(clk);

	if (seen.n != NR || seen.disorder || st.late || got != NR || rest) {
		fprintf(stderr, "client: %u of %d events (%lld below horizon %llu, %lld after), disorder %d, late %llu\n",
			seen.n, NR, (long long)got, (unsigned long long)h1,
			(long long)rest, seen.disorder, (unsigned long long)st.late);
		return 1;
	}
	printf("client: %d events from 2 sources emitted in time order below horizon %llu, none late; a horizon %llu ns below the read after it\n",
	       NR, (unsigned long long)h1,
	       (unsigned long long)(t[0] - h0));
	return 0;
}
