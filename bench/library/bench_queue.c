// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Queue throughput: events per second through perfclock_queue (push with
 * copy, flush_until at each round's end, delivery) at 4, 64 and 256 sources, against a
 * baseline doing what perf's ordered_events does (one time-sorted doubly
 * linked list, insertion starting from the last inserted node, nodes and
 * copies from a recycled pool, flush from the head), on the same synthetic
 * stream replayed the same way, in the same run. Both flush at
 * round_start - 1 ms. Not a test: it asserts nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libperfclock.h"
#include "synth.h"

#define REC_SIZE	40	/* a small sample: header + id/tid/time/cpu */
#define MARGIN		1000000ULL	/* flush at round start - 1 ms */

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * Rates are computed on the thread's CPU time, which other tenants of the
 * machine do not inflate (they still share the caches); the wall-clock
 * rate is printed beside it.
 */
struct rate {
	double cpu, wall;
};

struct span {
	uint64_t cpu, wall;
};

static struct span span_start(void)
{
	struct span s = { clock_ns(CLOCK_THREAD_CPUTIME_ID),
			  clock_ns(CLOCK_MONOTONIC) };

	return s;
}

static struct rate span_rate(struct span s, size_t n)
{
	struct rate r;

	r.cpu = (double)n / ((double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - s.cpu) / 1e9);
	r.wall = (double)n / ((double)(clock_ns(CLOCK_MONOTONIC) - s.wall) / 1e9);
	return r;
}

static uint64_t sink, sink_n;

static int deliver(void *arg, const struct perfclock_event *ev)
{
	(void)arg;
	sink += ev->time + ((const unsigned char *)ev->data)[8];
	sink_n++;
	return 0;
}

/* ---- baseline: perf's ordered_events list with a last-insert hint ---- */

struct lnode {
	struct lnode *prev, *next;
	uint64_t time;
	uint32_t size;
	unsigned char data[REC_SIZE];
};

struct plist {
	struct lnode head;	/* sentinel */
	struct lnode *last;	/* last inserted */
	struct lnode *free;
	struct lnode **blocks;
	size_t nblocks;
};

static struct lnode *plist_alloc(struct plist *l)
{
	struct lnode *n;

	if (!l->free) {
		size_t i, cnt = 4096;
		struct lnode *b = malloc(cnt * sizeof(*b));

		if (!b)
			abort();
		l->blocks = realloc(l->blocks, (l->nblocks + 1) * sizeof(*l->blocks));
		l->blocks[l->nblocks++] = b;
		for (i = 0; i < cnt; i++) {
			b[i].next = l->free;
			l->free = &b[i];
		}
	}
	n = l->free;
	l->free = n->next;
	return n;
}

static void plist_init(struct plist *l)
{
	memset(l, 0, sizeof(*l));
	l->head.next = l->head.prev = &l->head;
	l->last = &l->head;
}

/* perf's queue_event(): walk from 'last' forward or backward. */
static void plist_insert(struct plist *l, uint64_t t, const void *d,
			 uint32_t size)
{
	struct lnode *n = plist_alloc(l), *p = l->last;

	n->time = t;
	n->size = size;
	memcpy(n->data, d, size);
	if (p == &l->head || p->time <= t) {
		while (p->next != &l->head && p->next->time <= t)
			p = p->next;
	} else {
		while (p != &l->head && p->time > t)
			p = p->prev;
	}
	n->prev = p;
	n->next = p->next;
	p->next->prev = n;
	p->next = n;
	l->last = n;
}

static void plist_flush(struct plist *l, uint64_t limit, int all)
{
	struct lnode *n = l->head.next, *next;
	struct perfclock_event ev;

	memset(&ev, 0, sizeof(ev));
	while (n != &l->head && (all || n->time <= limit)) {
		next = n->next;
		ev.time = n->time;
		ev.data = n->data;
		ev.size = n->size;
		deliver(NULL, &ev);
		if (l->last == n)
			l->last = &l->head;
		n->prev->next = next;
		next->prev = n->prev;
		n->next = l->free;
		l->free = n;
		n = next;
	}
}

static void plist_destroy(struct plist *l)
{
	size_t i;

	for (i = 0; i < l->nblocks; i++)
		free(l->blocks[i]);
	free(l->blocks);
}

static struct rate run_list(const struct synth_trace *tr)
{
	unsigned char rec[REC_SIZE] = { 0 };
	uint64_t start = 0;
	struct plist l;
	struct span sp;
	struct rate r;
	size_t i;

	plist_init(&l);
	sp = span_start();
	for (i = 0; i < tr->n; i++) {
		const struct synth_op *o = &tr->op[i];

		if (o->kind == SYNTH_BEGIN) {
			start = o->t;
		} else if (o->kind == SYNTH_PUSH) {
			memcpy(rec + 8, &o->id, 4);
			plist_insert(&l, o->t, rec, REC_SIZE);
		} else if (start > MARGIN) {
			plist_flush(&l, start - MARGIN - 1, 0);
		}
	}
	plist_flush(&l, 0, 1);
	r = span_rate(sp, tr->nevents);
	plist_destroy(&l);
	return r;
}

static struct rate run_ours(const struct synth_trace *tr, uint32_t nsrc,
			    uint64_t *peak)
{
	unsigned char rec[REC_SIZE] = { 0 };
	struct perfclock_queue_config cfg;
	struct perfclock_queue_stats st;
	struct perfclock_queue *q;
	struct span sp;
	struct rate r;
	uint64_t limit = 0;
	size_t i;

	perfclock_queue_config_init(&cfg);
	cfg.nr_sources = nsrc;
	cfg.deliver = deliver;
	q = perfclock_queue_new(&cfg);
	if (!q)
		abort();
	sp = span_start();
	for (i = 0; i < tr->n; i++) {
		const struct synth_op *o = &tr->op[i];

		if (o->kind == SYNTH_BEGIN) {
			limit = o->t > MARGIN ? o->t - MARGIN : 0;
		} else if (o->kind == SYNTH_PUSH) {
			memcpy(rec + 8, &o->id, 4);
			perfclock_queue_push(q, o->src, o->t, rec, REC_SIZE);
		} else {
			perfclock_queue_flush_until(q, limit);
		}
	}
	perfclock_queue_flush_all(q);
	r = span_rate(sp, tr->nevents);
	perfclock_queue_get_stats(q, &st);
	*peak = st.mem_peak_bytes;
	perfclock_queue_free(q);
	return r;
}

int main(int argc, char **argv)
{
	const uint32_t sources[] = { 4, 64, 256 };
	size_t nev = argc > 1 ? (size_t)strtoull(argv[1], NULL, 0) : 2000000;
	int only_ours = argc > 2 && !strcmp(argv[2], "ours");
	unsigned int k;

	printf("# queue throughput, %zu events of %d bytes per run, best of 3;\n",
	       nev, REC_SIZE);
	printf("# stream: events every ~50 ns (all CPUs), bursts of up to 16 per CPU,\n"
	       "# commit delay up to 2 us, 1%% nested (20 us); reader: 0.5 us per ring\n"
	       "# visit, 10 ns per record, 100 us between rounds; flush at round start - 1 ms.\n"
	       "# events/s of thread CPU time (wall-clock rate in parentheses)\n");
	printf("%8s %10s %24s %24s %7s %9s\n", "sources", "events",
	       "ours [ev/s]", "list [ev/s]", "ratio", "ours mem");
	for (k = 0; k < sizeof(sources) / sizeof(sources[0]); k++) {
		struct synth_params p = {
			.nsrc = sources[k], .n = nev, .mean_gap_ns = 50,
			.max_delay_ns = 2000, .nest_permille = 10,
			.nest_delay_ns = 20000, .burst = 16,
		};
		struct synth_reader rd = {
			.first_start = 1000000000ULL, .gap_ns = 100000,
			.visit_ns = 500, .per_event_ns = 10, .extra_rounds = 2,
		};
		struct synth_ev *ev = synth_events(&p, 42 + k, &rd.min_off);
		struct rate bo = { 0, 0 }, bl = { 0, 0 }, r;
		struct synth_trace tr;
		uint64_t peak = 0;
		int rep;

		synth_read(ev, p.n, p.nsrc, &rd, &tr);
		free(ev);
		for (rep = 0; rep < 3; rep++) {
			r = run_ours(&tr, p.nsrc, &peak);
			if (r.cpu > bo.cpu)
				bo = r;
			if (only_ours)
				continue;
			r = run_list(&tr);
			if (r.cpu > bl.cpu)
				bl = r;
		}
		printf("%8u %10zu %11.3e (%9.3e) %11.3e (%9.3e) %7.1f %6.1f MB\n",
		       sources[k], tr.nevents, bo.cpu, bo.wall, bl.cpu, bl.wall,
		       bl.cpu > 0 ? bo.cpu / bl.cpu : 0.0, (double)peak / 1e6);
		synth_trace_free(&tr);
	}
	printf("# (checksum %llu over %llu deliveries)\n",
	       (unsigned long long)sink, (unsigned long long)sink_n);
	return 0;
}
