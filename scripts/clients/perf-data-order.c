// SPDX-License-Identifier: GPL-2.0
/*
 * perf-data-order FILE — are a perf.data file's rounds in time order? Reads
 * the file itself (no perf, no LinuxTracepoints code): the header, the
 * attributes and their ids, and every record of the data section.
 *
 * A PERF_RECORD_FINISHED_ROUND record promises a reader that no sample after
 * it is older than a sample before it: perf-decode (LinuxTracepoints) sorts
 * and prints everything it holds there. So the count that matters is
 *   inversions  samples stamped below the newest sample of an EARLIER round
 * Also counted, for comparison:
 *   perf_rule   samples stamped below the newest sample of the rounds before
 *               the previous one (perf's ordered-events rule: at each round
 *               marker it flushes up to the newest time of the round before)
 *   file_order  samples stamped below the newest sample before them in the
 *               file (what a reader that does not sort shows; a round is
 *               read ring by ring, so this is not an error by itself)
 *   lost        the sum of PERF_RECORD_LOST's counts (records the kernel
 *               dropped), and lost_records the number of those records.
 * Prints one line:
 *   perf-data-order: samples=N rounds=N inversions=N worst_ns=N perf_rule=N file_order=N lost=N lost_records=N
 * Exit status: 0 no inversion, 1 some, 2 the file cannot be read (a
 * message says why).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REC_LOST		2
#define REC_SAMPLE		9
#define REC_FINISHED_ROUND	68
#define S_IP			(1ULL << 0)
#define S_TID			(1ULL << 1)
#define S_TIME			(1ULL << 2)
#define S_IDENTIFIER		(1ULL << 16)

struct section { uint64_t offset, size; };

struct file_header {
	uint64_t magic, size, attr_size;
	struct section attrs, data, event_types;
	uint64_t features[4];
};

struct id_type { uint64_t id, sample_type; };

static unsigned char *buf;
static size_t buf_len;

static int fail(const char *what)
{
	fprintf(stderr, "perf-data-order: %s\n", what);
	return 2;
}

static int in_file(uint64_t off, uint64_t len)
{
	return off <= buf_len && len <= buf_len - off;
}

static uint64_t u64_at(uint64_t off)
{
	uint64_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

/* The time field's offset in a sample of this sample_type, or -1. */
static long time_offset(uint64_t st)
{
	long off = 8;	/* the record header */

	if (!(st & S_TIME))
		return -1;
	if (st & S_IDENTIFIER)
		off += 8;
	if (st & S_IP)
		off += 8;
	if (st & S_TID)
		off += 8;
	return off;
}

int main(int argc, char **argv)
{
	uint64_t samples = 0, rounds = 0, inv = 0, worst = 0, perf_rule = 0, file_order = 0;
	uint64_t lost = 0, lost_records = 0, prev_max = 0, prev2_max = 0, file_max = 0;
	struct id_type *ids = NULL;
	size_t nr_ids = 0, nattrs, i, j;
	uint64_t common_type = 0, pos, end;
	int have_prev = 0, have_prev2 = 0, mixed = 0;
	struct file_header h;
	FILE *f;
	long sz;

	if (argc != 2) {
		fprintf(stderr, "usage: perf-data-order FILE\n");
		return 2;
	}
	f = fopen(argv[1], "rb");
	if (!f || fseek(f, 0, SEEK_END) || (sz = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		fprintf(stderr, "perf-data-order: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	buf_len = (size_t)sz;
	buf = malloc(buf_len ? buf_len : 1);
	if (!buf || fread(buf, 1, buf_len, f) != buf_len)
		return fail("cannot read the file");
	fclose(f);
	if (buf_len < sizeof(h))
		return fail("shorter than a perf.data header");
	memcpy(&h, buf, sizeof(h));
	if (memcmp(&h.magic, "PERFILE2", 8))
		return fail("not a perf.data file (magic PERFILE2, this byte order)");
	if (h.attr_size < 16 + 32 || !in_file(h.attrs.offset, h.attrs.size) ||
	    !in_file(h.data.offset, h.data.size))
		return fail("bad header sections");
	nattrs = h.attrs.size / h.attr_size;
	if (!nattrs)
		return fail("no attributes");
	/* Each entry: perf_event_attr, then the section of its ids. */
	for (i = 0; i < nattrs; i++) {
		uint64_t a = h.attrs.offset + i * h.attr_size;
		uint64_t st = u64_at(a + 24);
		uint64_t ioff = u64_at(a + h.attr_size - 16), isz = u64_at(a + h.attr_size - 8);

		if (i == 0)
			common_type = st;
		else if (st != common_type)
			mixed = 1;
		if (!in_file(ioff, isz))
			return fail("bad id section");
		ids = realloc(ids, (nr_ids + isz / 8 + 1) * sizeof(*ids));
		if (!ids)
			return fail("out of memory");
		for (j = 0; j < isz / 8; j++) {
			ids[nr_ids].id = u64_at(ioff + j * 8);
			ids[nr_ids++].sample_type = st;
		}
	}
	if (mixed && !(common_type & S_IDENTIFIER))
		return fail("attributes differ in sample_type and samples carry no PERF_SAMPLE_IDENTIFIER");

	pos = h.data.offset;
	end = h.data.offset + h.data.size;
	while (pos + 8 <= end) {
		uint32_t type;
		uint16_t size;

		memcpy(&type, buf + pos, 4);
		memcpy(&size, buf + pos + 6, 2);
		if (size < 8 || pos + size > end)
			return fail("truncated or corrupt record");
		if (type == REC_FINISHED_ROUND) {
			/* Everything before the marker is now the bound. */
			rounds++;
			prev2_max = prev_max;
			have_prev2 = have_prev;
			prev_max = file_max;
			have_prev = samples > 0;
		} else if (type == REC_LOST && size >= 24) {
			lost += u64_at(pos + 16);
			lost_records++;
		} else if (type == REC_SAMPLE) {
			uint64_t st = common_type, t;
			long toff;

			if (mixed) {
				uint64_t id = u64_at(pos + 8);

				for (j = 0; j < nr_ids && ids[j].id != id; j++)
					;
				if (j == nr_ids)
					return fail("a sample of an unknown id");
				st = ids[j].sample_type;
			}
			toff = time_offset(st);
			if (toff < 0 || (uint64_t)toff + 8 > size)
				return fail("samples without PERF_SAMPLE_TIME");
			t = u64_at(pos + (uint64_t)toff);
			samples++;
			if (have_prev && t < prev_max) {
				inv++;
				if (prev_max - t > worst)
					worst = prev_max - t;
			}
			if (have_prev2 && t < prev2_max)
				perf_rule++;
			if (samples > 1 && t < file_max)
				file_order++;
			if (t > file_max)
				file_max = t;
		}
		pos += size;
	}
	if (pos != end)
		return fail("data section ends inside a record");
	printf("perf-data-order: samples=%" PRIu64 " rounds=%" PRIu64 " inversions=%" PRIu64
	       " worst_ns=%" PRIu64 " perf_rule=%" PRIu64 " file_order=%" PRIu64
	       " lost=%" PRIu64 " lost_records=%" PRIu64 "\n",
	       samples, rounds, inv, worst, perf_rule, file_order, lost, lost_records);
	free(ids);
	free(buf);
	return inv ? 1 : 0;
}
