/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The library fuzzer's shared-ring modes, what their two files share:
 * the records as written, the rings as the "kernel" writes them, the
 * run's state F, and the input readers. fuzz_evring.c reads the rings
 * back and checks; fuzz_evring_kernel.c writes them (and opens them).
 */
#ifndef FUZZ_EVRING_INTERNAL_H
#define FUZZ_EVRING_INTERNAL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <linux/perf_event.h>

#include "libperfclock.h"

#define MAX_RECS	2048
#define MAX_RINGS	64
#define T0		(1ULL << 40)

enum kind { K_TIMED, K_UNTIMED, K_LOST, K_LOST_SAMPLES, K_CORRUPT };
enum state { S_RING, S_QUEUED, S_DONE, S_DROPPED };

struct rec {
	uint32_t ring, size, attr;
	uint8_t kind, state, strict, nocopy;
	uint32_t delivered;
	uint64_t time, lost;
	unsigned char bytes[8 * 24];
};

struct wring {
	struct perf_event_mmap_page *pg;
	unsigned char *data;
	uint64_t size, head;
	uint64_t pending_lost;	/* dropped for want of room, not said yet */
	int dead;		/* READER: a corrupt record, nothing after */
	uint64_t ids[3];
};

struct fuzz_evring_state {
	const uint8_t *in;
	size_t len, pos;
	int reader;
	uint32_t nr_attrs, nr_rings;
	struct perf_event_attr attrs[3];
	int mixed, sid_all;
	struct wring w[MAX_RINGS];
	struct rec recs[MAX_RECS];
	uint32_t nrec;
	/* the order of what was delivered */
	int have_last;
	uint64_t last;
	uint64_t delivered, late, forced;
	/* DRAIN: flushing below limit; READER: the announced limit */
	int in_flush, have_limit, stopping;
	uint64_t limit;
	/* the NOCOPY queue's own order and count */
	int nc_have_last;
	uint64_t nc_last, nc_pushed, nc_delivered;
	/* expected counters */
	uint64_t lost_records, lost, lost_samples, no_time, resets;
	struct perfclock *clk;
};

/* The run's state, one per process (fuzz_evring.c). */
extern struct fuzz_evring_state F;

/* Say which check failed (a crash file alone does not), then crash. */
#define CHECK(c)	do {						\
	if (!(c)) {							\
		fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c);	\
		__builtin_trap();					\
	}								\
} while (0)

static inline unsigned int next8(void)
{
	return F.pos < F.len ? F.in[F.pos++] : 0;
}

static inline unsigned int next16(void)
{
	unsigned int v = next8();

	return v | next8() << 8;
}

static inline void put64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static inline uint64_t clock_now(void)
{
	uint64_t ns = 0;

	CHECK(!perfclock_read(F.clk, &ns));
	return ns;
}

/* fuzz_evring_kernel.c: the "kernel" that writes the rings. */
struct perfclock_evring *fz_open_rings(void);
int fz_write_record(uint32_t ri, uint64_t t, int strict_ok);
void fz_burst(uint32_t ri, uint64_t t);
void fz_write_corrupt(uint32_t ri);
uint64_t fz_expect_read(void);

#endif /* FUZZ_EVRING_INTERNAL_H */
