// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target: arbitrary bytes as a perf ring (header page fields and
 * data area), read through perfclock_ring_*, records pushed into a queue.
 * Properties checked beyond ASan/UBSan: a pass never hands out more
 * records than can fit (no loop), sizes are validated, data_tail never
 * moves past data_head, and the queue delivers every pushed record.
 *
 * Input: [0] data size 64 << (b % 7); [1] flags (1: pre-4.1 header
 * layout, 2: sample_id_all, 4: no attr, 8: raw head/tail; bits 5-7: the
 * mode, 1 or 3: shared rings and the drain, 2: shared rings and the
 * threaded reader, fuzz_evring.c, from input[2] on; else this one);
 * [2..9] head (or head - tail); [10..17] tail; [18..25] sample_type;
 * rest: the data area (zero padded), then, if left over, further head
 * advances for later passes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "fuzz_evring.h"

#define PAGE 4096

static uint64_t delivered;

static int cb(void *arg, const struct perfclock_event *ev)
{
	(void)arg;
	if (ev->size && !ev->data)
		__builtin_trap();
	delivered++;
	return 0;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t len)
{
	struct perfclock_queue_config cfg;
	struct perfclock_queue *q;
	struct perf_event_attr attr;
	struct perf_event_mmap_page *pg;
	struct perfclock_ring *r;
	struct perfclock_record rec;
	uint64_t size, pushed = 0;
	size_t datalen, used;
	unsigned char *m;
	int pass;

	if (len >= 2 && (in[1] >> 5) >= 1 && (in[1] >> 5) <= 3)
		return fuzz_evring(in + 2, len - 2, (in[1] >> 5) == 2);
	if (len < 26)
		return 0;
	size = 64ULL << (in[0] % 7);
	/* exact-size allocation: ASan sees any read past the data area */
	m = calloc(1, PAGE + size);
	if (!m)
		return 0;
	pg = (struct perf_event_mmap_page *)m;
	pg->data_offset = PAGE;
	pg->data_size = size;
	if (in[1] & 1) {		/* pre-4.1 kernel layout */
		pg->data_offset = 0;
		pg->data_size = 0;
	}
	if (in[1] & 8) {
		/* raw header words: inconsistent head/tail paths */
		pg->data_head = get64(in + 2);
		pg->data_tail = get64(in + 10);
	} else {
		/* mostly consistent: tail anywhere, head up to a ring ahead */
		pg->data_tail = get64(in + 10) & ~(uint64_t)7;
		pg->data_head = pg->data_tail +
			((get64(in + 2) % (size + 9)) & ~(uint64_t)7);
	}
	memset(&attr, 0, sizeof(attr));
	attr.sample_type = get64(in + 18);
	attr.sample_id_all = !!(in[1] & 2);
	datalen = len - 26 < size ? len - 26 : size;
	memcpy(m + PAGE, in + 26, datalen);
	used = 26 + datalen;

	r = perfclock_ring_new(m, PAGE + size, (in[1] & 4) ? NULL : &attr);
	perfclock_queue_config_init(&cfg);
	cfg.nr_sources = 1;
	cfg.deliver = cb;
	cfg.mem_cap_bytes = 4096;
	q = perfclock_queue_new(&cfg);
	if (!r || !q)
		goto out;

	delivered = 0;
	for (pass = 0; pass < 3; pass++) {
		uint64_t n = 0;
		int64_t avail = perfclock_ring_read_begin(r);
		int ret;

		if (avail < 0) {
			perfclock_ring_reset(r);
		} else {
			uint64_t tail0 = pg->data_tail;

			while ((ret = perfclock_ring_read_event(r, &rec)) == 1) {
				uint64_t t;

				if (rec.size < 8 || rec.size % 8 || rec.size > size)
					__builtin_trap();
				/* every record is at least 8 bytes: bounded */
				if (++n > size / 8)
					__builtin_trap();
				perfclock_record_time(rec.data, rec.size, &attr, &t);
				if (perfclock_queue_push(q, 0, rec.time, rec.data,
							 rec.size) == 0)
					pushed++;
			}
			perfclock_ring_read_end(r);
			/* the tail moved forward by at most what was there */
			if (pg->data_tail - tail0 > (uint64_t)avail)
				__builtin_trap();
		}
		/* flush below a time the input picks, as a horizon would be */
		perfclock_queue_flush_until(q, get64(in + 2) ^ (uint64_t)pass);
		/* the "kernel" publishes more */
		if (used + 8 <= len) {
			pg->data_head += get64(in + used) & 0xfff8;
			used += 8;
		}
	}
	perfclock_queue_flush_all(q);
	if (delivered != pushed)
		__builtin_trap();
out:
	perfclock_queue_free(q);
	perfclock_ring_free(r);
	free(m);
	return 0;
}
