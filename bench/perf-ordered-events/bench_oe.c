// SPDX-License-Identifier: GPL-2.0
/*
 * Queue bench against the real anchor: perf's own util/ordered-events.c,
 * compiled from the linux-source-6.1 tarball (see run.sh; nothing of it
 * is copied here), and libperfclock's queue (perfclock_queue_push() and
 * perfclock_queue_flush_until()), fed the same stream the same way.
 *
 * The stream models a live tool's rounds over per-CPU rings: each round
 * covers one time window; every source (ring) holds its events of the
 * window in time order, plus a few stragglers stamped in the previous
 * window (records that were still in flight when the previous round read
 * the ring). The sources are read one after the other, and after each
 * round everything below the start of its window is flushed (a horizon
 * one window behind), so neither queue ever meets a late event and both
 * deliver the same sequence (checked). perf's queue gets
 * ordered_events__queue() with copy_on_queue, as perf trace and perf kvm
 * stat live use it, and ordered_events__flush_time(limit - 1): its limit
 * is inclusive, perfclock_queue_flush_until()'s is strict.
 *
 * Reported per source count: events/s over the thread's CPU time (best
 * of REPEAT runs), and peak memory two ways: each queue's own accounting
 * (perf: ordered_events::cur_alloc_size; ours: mem_peak_bytes) and the
 * peak RSS of a child process that runs that queue alone, minus that of a
 * child that replays the stream without a queue.
 *
 * Usage: bench_oe [EVENTS [REPEAT]]
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/list.h>
#include <perf/event.h>
#include "ordered-events.h"	/* perf's, from the tarball */
#include <libperfclock.h>

#define REC_SIZE	40	/* header + id, tid, time, cpu: a small sample */
#define WINDOW_NS	1000000ULL	/* one round's window: 1 ms */
#define PER_ROUND	16384	/* events per round over all sources */
#define STRAGGLE_PPM	10000	/* 1 %: stamped in the previous window */

/* linux/string.h declares it; perf's util/ links it from tools/lib. */
void *memdup(const void *src, size_t len)
{
	void *p = malloc(len);

	if (p)
		memcpy(p, src, len);
	return p;
}

struct sev {
	uint64_t time;
	uint32_t src;
	uint32_t flush;		/* 1: flush after this event (round end) */
	uint64_t limit;		/* the flush limit (strict) */
};

static struct sev *stream;
static size_t nstream;

static uint64_t rnd_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	uint64_t x = rnd_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rnd_state = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void make_stream(size_t events, unsigned int nsrc)
{
	size_t per_src = PER_ROUND / nsrc, rounds = events / PER_ROUND, r, n = 0;
	uint64_t *ts = malloc(per_src * sizeof(*ts));
	unsigned int s;
	size_t i;

	free(stream);
	stream = malloc(rounds * PER_ROUND * sizeof(*stream));
	if (!stream || !ts)
		abort();
	for (r = 0; r < rounds; r++) {
		uint64_t t0 = (r + 1) * WINDOW_NS;

		for (s = 0; s < nsrc; s++) {
			for (i = 0; i < per_src; i++) {
				ts[i] = t0 + rnd() % WINDOW_NS;
				if (r > 0 && rnd() % 1000000 < STRAGGLE_PPM)
					ts[i] -= WINDOW_NS;
			}
			qsort(ts, per_src, sizeof(*ts), cmp_u64);
			for (i = 0; i < per_src; i++) {
				stream[n].time = ts[i];
				stream[n].src = s;
				stream[n].flush = 0;
				n++;
			}
		}
		stream[n - 1].flush = 1;
		stream[n - 1].limit = t0;	/* everything below this window */
	}
	nstream = n;
	free(ts);
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec t;

	clock_gettime(id, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* What every delivery does: check the order, fold the record in. */
static uint64_t last_time, sum, delivered, disorder;

static void consume(uint64_t time, const void *data)
{
	if (time < last_time)
		disorder++;
	last_time = time;
	sum = sum * 31 + time + ((const uint8_t *)data)[16];
	delivered++;
}

static void fill_rec(unsigned char *rec, const struct sev *e)
{
	struct perf_event_header *h = (void *)rec;

	h->type = PERF_RECORD_SAMPLE;
	h->misc = 0;
	h->size = REC_SIZE;
	memcpy(rec + 8, &e->src, sizeof(e->src));
	memcpy(rec + 16, &e->time, sizeof(e->time));
}

/* ---- perf's ordered_events ---- */

static int oe_deliver(struct ordered_events *oe __attribute__((unused)),
		      struct ordered_event *ev)
{
	consume(ev->timestamp, ev->event);
	return 0;
}

static uint64_t run_perf(uint64_t *peak_acct)
{
	struct ordered_events oe;
	unsigned char rec[REC_SIZE] __attribute__((aligned(8)));
	uint64_t peak = 0;
	size_t i;

	ordered_events__init(&oe, oe_deliver, NULL);
	ordered_events__set_copy_on_queue(&oe, true);
	for (i = 0; i < nstream; i++) {
		fill_rec(rec, &stream[i]);
		if (ordered_events__queue(&oe, (union perf_event *)rec,
					  stream[i].time, 0, NULL))
			abort();
		if (oe.cur_alloc_size > peak)
			peak = oe.cur_alloc_size;
		if (stream[i].flush)
			ordered_events__flush_time(&oe, stream[i].limit - 1);
	}
	ordered_events__flush(&oe, OE_FLUSH__FINAL);
	ordered_events__free(&oe);
	*peak_acct = peak;
	return oe.nr_unordered_events;
}

/* ---- libperfclock's queue ---- */

static int pc_deliver(void *arg __attribute__((unused)),
		      const struct perfclock_event *ev)
{
	consume(ev->time, ev->data);
	return 0;
}

static uint64_t run_ours(unsigned int nsrc, uint64_t *peak_acct)
{
	struct perfclock_queue_config cfg;
	struct perfclock_queue_stats st;
	struct perfclock_queue *q;
	unsigned char rec[REC_SIZE] __attribute__((aligned(8)));
	size_t i;

	perfclock_queue_config_init(&cfg);
	cfg.nr_sources = nsrc;
	cfg.deliver = pc_deliver;
	cfg.mem_cap_bytes = 1ULL << 34;	/* never forced in this bench */
	q = perfclock_queue_new(&cfg);
	if (!q)
		abort();
	for (i = 0; i < nstream; i++) {
		fill_rec(rec, &stream[i]);
		if (perfclock_queue_push(q, stream[i].src, stream[i].time, rec, REC_SIZE))
			abort();
		if (stream[i].flush)
			perfclock_queue_flush_until(q, stream[i].limit);
	}
	perfclock_queue_flush_all(q);
	perfclock_queue_get_stats(q, &st);
	perfclock_queue_free(q);
	*peak_acct = st.mem_peak_bytes;
	return st.late + st.below_horizon;
}

static void run_none(void)
{
	unsigned char rec[REC_SIZE] __attribute__((aligned(8)));
	size_t i;

	for (i = 0; i < nstream; i++) {
		fill_rec(rec, &stream[i]);
		consume(stream[i].time, rec);
	}
}

enum which { NONE, PERF, OURS };

struct result {
	double rate;		/* events/s of CPU time */
	uint64_t acct;		/* the queue's own peak accounting */
	long maxrss_kb;		/* the child's peak RSS */
	uint64_t sum, delivered, disorder, unordered;
};

/* One run in a child process, so that its peak RSS is its own. */
static int run_child(enum which w, unsigned int nsrc, struct result *res)
{
	int fd[2];
	pid_t pid;
	struct rusage ru;
	int status;

	if (pipe(fd))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		struct result r = { 0 };
		uint64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);

		close(fd[0]);
		last_time = sum = delivered = disorder = 0;
		if (w == PERF)
			r.unordered = run_perf(&r.acct);
		else if (w == OURS)
			r.unordered = run_ours(nsrc, &r.acct);
		else
			run_none();
		r.rate = nstream / ((clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0) / 1e9);
		r.sum = sum;
		r.delivered = delivered;
		r.disorder = disorder;
		if (write(fd[1], &r, sizeof(r)) != sizeof(r))
			_exit(1);
		_exit(0);
	}
	close(fd[1]);
	if (read(fd[0], res, sizeof(*res)) != sizeof(*res)) {
		close(fd[0]);
		waitpid(pid, NULL, 0);
		return -EIO;
	}
	close(fd[0]);
	if (wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		return -ECHILD;
	res->maxrss_kb = ru.ru_maxrss;
	return 0;
}

int main(int argc, char **argv)
{
	static const unsigned int sources[] = { 4, 64, 256 };
	size_t events = argc > 1 ? strtoull(argv[1], NULL, 0) : 1000000;
	int repeat = argc > 2 ? atoi(argv[2]) : 3;
	int rc = 0;
	size_t k;

	printf("# queue bench: perf's util/ordered-events.c (linux-source-6.1) vs libperfclock's queue\n");
	printf("# %zu events, %d events per round (1 ms window), %d %% stragglers from the previous window,\n",
	       events, PER_ROUND, STRAGGLE_PPM / 10000);
	printf("# %d-byte records copied on queue, flush below the window after each round; best of %d\n",
	       REC_SIZE, repeat);
	printf("| sources | perf ordered_events | libperfclock | ratio | peak memory, perf (accounted / RSS) | peak memory, libperfclock (accounted / RSS) |\n");
	printf("|---|---|---|---|---|---|\n");
	for (k = 0; k < sizeof(sources) / sizeof(sources[0]); k++) {
		unsigned int nsrc = sources[k];
		struct result none, best[3] = { { 0 } }, r;
		int i, w;

		make_stream(events, nsrc);
		if (run_child(NONE, nsrc, &none)) {
			fprintf(stderr, "bench_oe: child failed\n");
			return 1;
		}
		for (i = 0; i < repeat; i++) {
			for (w = PERF; w <= OURS; w++) {
				if (run_child(w, nsrc, &r)) {
					fprintf(stderr, "bench_oe: child failed\n");
					return 1;
				}
				if (r.rate > best[w].rate)
					best[w] = r;
			}
		}
		if (best[PERF].sum != best[OURS].sum || best[PERF].delivered != nstream ||
		    best[OURS].delivered != nstream || best[PERF].disorder || best[OURS].disorder) {
			fprintf(stderr, "bench_oe: the queues delivered different streams (%zu sources)\n",
				(size_t)nsrc);
			rc = 1;
		}
		printf("| %u | %.1f M/s | %.1f M/s | %.2f | %.0f KiB / %ld KiB | %.0f KiB / %ld KiB |\n",
		       nsrc, best[PERF].rate / 1e6, best[OURS].rate / 1e6,
		       best[OURS].rate / best[PERF].rate,
		       best[PERF].acct / 1024.0, best[PERF].maxrss_kb - none.maxrss_kb,
		       best[OURS].acct / 1024.0, best[OURS].maxrss_kb - none.maxrss_kb);
	}
	return rc;
}
