// SPDX-License-Identifier: GPL-2.0
/*
 * perf-data-strict — read a perf.data file as strictly as the strictest
 * third-party reader does, and say where it breaks.
 *
 * Modelled on mstange/linux-perf-data (src/file_reader.rs:
 * PerfRecordIter::read_next_round_impl(), what samply imports with): a
 * PERF_RECORD_FINISHED_ROUND is the header alone (that reader skips the
 * header and parses the next one where the body would be: a payload makes
 * it fail with InvalidPerfEventSize), a user record type it does not know
 * is skipped by header.size, and every record must lie inside the data
 * section. It also checks the HEADER_FLUSH_HORIZON index
 * (docs/perf-data-carrier.md) when the file has one: every entry names a
 * FINISHED_ROUND in the data section, the horizons go back only at a
 * restart.
 *
 *   perf-data-strict [-q] FILE     (FILE "-": a pipe-mode stream on stdin)
 *
 * Prints one line per record type with its count, then
 * "perf-data-strict: FILE: ok, N records" or the first violation as
 * "perf-data-strict: FILE: error: OFFSET: WHAT". Exit 0 if the file is
 * sound, 1 on a violation, 2 on a usage or I/O error. Little-endian files
 * only (a cross-endian file is refused, said so). The bodies of
 * PERF_RECORD_COMPRESSED(2) are not decompressed: counted, not checked.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* tools/perf/Documentation/perf.data-file-format.txt */
#define MAGIC		"PERFILE2"
#define MAGIC_SWAPPED	"2ELIFREP"
#define FILE_HEADER_SIZE 104	/* struct perf_file_header */
#define PIPE_HEADER_SIZE 16	/* struct perf_pipe_file_header */
#define ATTR_SIZE_VER0	64
#define FEAT_BITS	256
#define REC_HEADER	8	/* struct perf_event_header */

enum {
	T_USER_START		= 64,
	T_HEADER_TRACING_DATA	= 66,
	T_FINISHED_ROUND	= 68,
	T_AUXTRACE		= 71,
	T_COMPRESSED		= 81,
	T_COMPRESSED2		= 83,
	NR_TYPES		= 65536,
};

/* docs/perf-data-carrier.md: the index, feature bit and layout */
#define HEADER_FLUSH_HORIZON	32
#define FH_HEADER_SIZE		32
#define FH_ENTRY_MIN		32
#define FH_RESTART		(1u << 0)

static const char *const type_names[] = {
	[1] = "MMAP", [2] = "LOST", [3] = "COMM", [4] = "EXIT",
	[5] = "THROTTLE", [6] = "UNTHROTTLE", [7] = "FORK", [8] = "READ",
	[9] = "SAMPLE", [10] = "MMAP2", [11] = "AUX", [12] = "ITRACE_START",
	[13] = "LOST_SAMPLES", [14] = "SWITCH", [15] = "SWITCH_CPU_WIDE",
	[16] = "NAMESPACES", [17] = "KSYMBOL", [18] = "BPF_EVENT",
	[19] = "CGROUP", [20] = "TEXT_POKE", [21] = "AUX_OUTPUT_HW_ID",
	[22] = "CALLCHAIN_DEFERRED",
	[64] = "HEADER_ATTR", [65] = "HEADER_EVENT_TYPE",
	[66] = "HEADER_TRACING_DATA", [67] = "HEADER_BUILD_ID",
	[68] = "FINISHED_ROUND", [69] = "ID_INDEX", [70] = "AUXTRACE_INFO",
	[71] = "AUXTRACE", [72] = "AUXTRACE_ERROR", [73] = "THREAD_MAP",
	[74] = "CPU_MAP", [75] = "STAT_CONFIG", [76] = "STAT",
	[77] = "STAT_ROUND", [78] = "EVENT_UPDATE", [79] = "TIME_CONV",
	[80] = "HEADER_FEATURE", [81] = "COMPRESSED", [82] = "FINISHED_INIT",
	[83] = "COMPRESSED2", [84] = "BPF_METADATA", [85] = "SCHEDSTAT_CPU",
	[86] = "SCHEDSTAT_DOMAIN",
};
#define NR_NAMES (sizeof(type_names) / sizeof(type_names[0]))

struct reader {
	const char	*path;
	FILE		*f;
	bool		pipe;
	uint64_t	file_size;	/* 0 for a pipe */
	uint64_t	data_off, data_size;
	uint64_t	features[FEAT_BITS / 64];
	uint64_t	counts[NR_TYPES];
	uint64_t	records;
	uint64_t	attr_size, attrs_off, attrs_size;
	uint64_t	horizon_off, horizon_size;	/* HEADER_FLUSH_HORIZON */
	uint64_t	*rounds;	/* file offsets of the FINISHED_ROUNDs */
	size_t		nr_rounds, alloc_rounds;
};

static int quiet;

static uint64_t le64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint16_t le16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/* The first violation ends the run: later bytes mean nothing after it. */
static int violation(const struct reader *r, uint64_t off, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "perf-data-strict: %s: error: %#" PRIx64 ": ", r->path, off);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

static int io_error(const struct reader *r, const char *what)
{
	fprintf(stderr, "perf-data-strict: %s: %s: %s\n", r->path, what,
		errno ? strerror(errno) : "unexpected end of file");
	return 2;
}

/* Read exactly n bytes at off (a file) or next (a pipe); 1: short read. */
static int read_at(struct reader *r, uint64_t off, void *buf, size_t n)
{
	if (!r->pipe && fseeko(r->f, (off_t)off, SEEK_SET))
		return -1;
	errno = 0;
	return fread(buf, 1, n, r->f) == n ? 0 : 1;
}

static int skip_pipe(struct reader *r, uint64_t n)
{
	unsigned char buf[4096];

	while (n) {
		size_t k = n < sizeof(buf) ? (size_t)n : sizeof(buf);

		if (fread(buf, 1, k, r->f) != k)
			return 1;
		n -= k;
	}
	return 0;
}

static const char *type_name(uint32_t type, char *buf, size_t len)
{
	if (type < NR_NAMES && type_names[type])
		return type_names[type];
	snprintf(buf, len, "%s_%u", type < T_USER_START ? "UNKNOWN_KERNEL" : "UNKNOWN_USER",
		 type);
	return buf;
}

static int note_round(struct reader *r, uint64_t off)
{
	if (r->nr_rounds == r->alloc_rounds) {
		size_t n = r->alloc_rounds ? 2 * r->alloc_rounds : 1024;
		uint64_t *p = realloc(r->rounds, n * sizeof(*p));

		if (!p)
			return -1;
		r->rounds = p;
		r->alloc_rounds = n;
	}
	r->rounds[r->nr_rounds++] = off;
	return 0;
}

/*
 * One record at off (its header already in hdr). Returns 0 and the bytes
 * it spans in *span, 1 on a violation, 2 on an I/O error. end: the end of
 * the data section (UINT64_MAX for a pipe).
 */
static int check_record(struct reader *r, uint64_t off, const unsigned char *hdr,
			uint64_t end, uint64_t *span)
{
	uint32_t type = le32(hdr);
	uint16_t size = le16(hdr + 6);
	uint64_t extra = 0;
	unsigned char body[8];
	char nb[40];

	if (size < REC_HEADER)
		return violation(r, off, "record of type %s has size %u, less than its own header (InvalidPerfEventSize)",
				 type_name(type, nb, sizeof(nb)), size);
	/*
	 * perf itself writes some records unaligned (pipe mode's
	 * HEADER_FEATURE); a type it does not know must be aligned to be
	 * skipped (util/session.c: perf_session__process_event(), since
	 * "perf session: Skip unsupported new event types", 2025).
	 */
	if (size % 8 && (type >= NR_NAMES || !type_names[type]))
		return violation(r, off, "record of unknown type %s has size %u, not a multiple of 8",
				 type_name(type, nb, sizeof(nb)), size);
	if (size > end - off)
		return violation(r, off, "record of type %s, %u bytes, runs %" PRIu64 " bytes past the end of the data section (truncated)",
				 type_name(type, nb, sizeof(nb)), size, size - (end - off));
	if (type == T_FINISHED_ROUND && size != REC_HEADER)
		return violation(r, off, "PERF_RECORD_FINISHED_ROUND of %u bytes: it has no payload (perf.data-file-format.txt); linux-perf-data would parse the next header %u bytes early (InvalidPerfEventSize)",
				 size, size - REC_HEADER);

	/* Records whose data follows them, outside header.size. */
	if (type == T_AUXTRACE || (r->pipe && type == T_HEADER_TRACING_DATA)) {
		if (size < REC_HEADER + 8)
			return violation(r, off, "%s of %u bytes has no size field",
					 type_name(type, nb, sizeof(nb)), size);
		if (read_at(r, off + REC_HEADER, body, 8))
			return io_error(r, "reading a record");
		extra = type == T_AUXTRACE ? le64(body) : (le32(body) + 7ull) / 8 * 8;
		if (r->pipe) {
			if (skip_pipe(r, size - REC_HEADER - 8))
				return io_error(r, "reading a record");
		}
		if (extra > end - off - size)
			return violation(r, off, "%s's %" PRIu64 " bytes of data run past the end of the data section",
					 type_name(type, nb, sizeof(nb)), extra);
		if (r->pipe && skip_pipe(r, extra))
			return io_error(r, "reading a record's data");
	} else if (r->pipe && skip_pipe(r, size - REC_HEADER)) {
		return violation(r, off, "record of type %s, %u bytes, is cut short by the end of the stream (truncated)",
				 type_name(type, nb, sizeof(nb)), size);
	}

	if (type == T_FINISHED_ROUND && note_round(r, off))
		return io_error(r, "out of memory");
	r->counts[type]++;
	r->records++;
	*span = size + extra;
	return 0;
}

static int walk_data(struct reader *r)
{
	uint64_t off = r->data_off, end = r->pipe ? UINT64_MAX : r->data_off + r->data_size;
	unsigned char hdr[REC_HEADER];

	while (off < end) {
		uint64_t span = 0;
		size_t got;
		int err;

		if (!r->pipe && end - off < REC_HEADER)
			return violation(r, off, "%" PRIu64 " bytes left in the data section, less than a record header (truncated)",
					 end - off);
		if (!r->pipe && fseeko(r->f, (off_t)off, SEEK_SET))
			return io_error(r, "seeking");
		errno = 0;
		got = fread(hdr, 1, REC_HEADER, r->f);
		if (got == 0 && r->pipe && feof(r->f))
			break;
		if (got != REC_HEADER) {
			if (r->pipe && feof(r->f))
				return violation(r, off, "the stream ends %zu bytes into a record header (truncated)", got);
			return io_error(r, "reading a record header");
		}
		err = check_record(r, off, hdr, end, &span);
		if (err)
			return err;
		off += span;
	}
	return 0;
}

static bool is_round(const struct reader *r, uint64_t off)
{
	size_t lo = 0, hi = r->nr_rounds;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->rounds[mid] < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->nr_rounds && r->rounds[lo] == off;
}

/* The HEADER_FLUSH_HORIZON index (docs/perf-data-carrier.md, section 2). */
static int check_horizons(struct reader *r, uint64_t off, uint64_t size)
{
	unsigned char h[FH_HEADER_SIZE], e[FH_ENTRY_MIN];
	uint64_t nr, last = 0, last_off = 0;
	uint32_t version, hsize, esize;

	if (size < FH_HEADER_SIZE)
		return violation(r, off, "HEADER_FLUSH_HORIZON section of %" PRIu64 " bytes, less than its header", size);
	if (read_at(r, off, h, sizeof(h)))
		return io_error(r, "reading HEADER_FLUSH_HORIZON");
	version = le32(h);
	hsize = le32(h + 4);
	esize = le32(h + 8);
	nr = le64(h + 16);
	if (version != 1)
		return violation(r, off, "HEADER_FLUSH_HORIZON version %u, this reader knows 1", version);
	if (hsize < FH_HEADER_SIZE || hsize % 8 || hsize > size)
		return violation(r, off, "HEADER_FLUSH_HORIZON header size %u (at least %d, a multiple of 8, within the section's %" PRIu64 " bytes)",
				 hsize, FH_HEADER_SIZE, size);
	if (esize < FH_ENTRY_MIN || esize % 8)
		return violation(r, off, "HEADER_FLUSH_HORIZON entry size %u (at least %d, a multiple of 8)",
				 esize, FH_ENTRY_MIN);
	if (nr > (size - hsize) / esize)
		return violation(r, off, "HEADER_FLUSH_HORIZON says %" PRIu64 " entries of %u bytes, its %" PRIu64 " bytes hold fewer",
				 nr, esize, size);

	for (uint64_t i = 0; i < nr; i++) {
		uint64_t at = off + hsize + i * esize, roff, horizon;
		uint32_t proof, flags, file;

		if (read_at(r, at, e, sizeof(e)))
			return io_error(r, "reading HEADER_FLUSH_HORIZON");
		roff = le64(e);
		horizon = le64(e + 8);
		proof = le32(e + 16);
		flags = le32(e + 20);
		file = le32(e + 28);
		if (file != 0)
			continue;	/* data.N of a directory: not this file */
		if (proof < 1 || proof > 3)
			return violation(r, at, "horizon entry %" PRIu64 ": proof %u (1 per-CPU, 2 grace period, 3 estimate)",
					 i, proof);
		if (roff <= last_off && i)
			return violation(r, at, "horizon entry %" PRIu64 ": offset %#" PRIx64 " not after the one before (%#" PRIx64 ")",
					 i, roff, last_off);
		if (!is_round(r, roff))
			return violation(r, at, "horizon entry %" PRIu64 " names offset %#" PRIx64 ", where the data section has no PERF_RECORD_FINISHED_ROUND",
					 i, roff);
		if (horizon < last && !(flags & FH_RESTART))
			return violation(r, at, "horizon entry %" PRIu64 ": horizon %" PRIu64 " below the one before (%" PRIu64 ") without a restart",
					 i, horizon, last);
		last = horizon;
		last_off = roff;
	}
	if (!quiet)
		printf("HEADER_FLUSH_HORIZON %" PRIu64 " entries for %zu round markers\n",
		       nr, r->nr_rounds);
	return 0;
}

/* The attrs section and the feature sections' table, after the data. */
static int check_sections(struct reader *r)
{
	uint64_t attr_size = r->attr_size, attrs_off = r->attrs_off, attrs_size = r->attrs_size;
	uint64_t feat_off = r->data_off + r->data_size;
	unsigned int nr_feat = 0;

	if (attr_size < ATTR_SIZE_VER0 || attr_size % 8)
		return violation(r, 16, "attr_size %" PRIu64 " (at least %d, a multiple of 8)",
				 attr_size, ATTR_SIZE_VER0);
	if (attrs_off > r->file_size || attrs_size > r->file_size - attrs_off)
		return violation(r, 24, "the attrs section (%#" PRIx64 ", %" PRIu64 " bytes) is not inside the file",
				 attrs_off, attrs_size);
	if (!attrs_size || attrs_size % attr_size)
		return violation(r, 32, "the attrs section's %" PRIu64 " bytes are not a whole number of %" PRIu64 "-byte entries",
				 attrs_size, attr_size);
	if (r->data_off > r->file_size || r->data_size > r->file_size - r->data_off)
		return violation(r, 40, "the data section (%#" PRIx64 ", %" PRIu64 " bytes) is not inside the file of %" PRIu64 " bytes",
				 r->data_off, r->data_size, r->file_size);

	for (int bit = 0; bit < FEAT_BITS; bit++) {
		unsigned char sec[16];
		uint64_t so, ss;

		if (!(r->features[bit / 64] >> (bit % 64) & 1))
			continue;
		if (read_at(r, feat_off + 16ull * nr_feat, sec, sizeof(sec)))
			return violation(r, feat_off + 16ull * nr_feat, "feature %d's section entry is past the end of the file", bit);
		so = le64(sec);
		ss = le64(sec + 8);
		if (so > r->file_size || ss > r->file_size - so)
			return violation(r, feat_off + 16ull * nr_feat, "feature %d's section (%#" PRIx64 ", %" PRIu64 " bytes) is not inside the file",
					 bit, so, ss);
		if (bit == HEADER_FLUSH_HORIZON) {
			r->horizon_off = so;
			r->horizon_size = ss;
		}
		nr_feat++;
	}
	return 0;
}

static int open_file(struct reader *r)
{
	unsigned char h[FILE_HEADER_SIZE];
	uint64_t hsize;

	if (read_at(r, 0, h, 16))
		return violation(r, 0, "shorter than a perf.data header");
	if (!memcmp(h, MAGIC_SWAPPED, 8))
		return violation(r, 0, "a big-endian (cross-endian) file: not supported by this reader");
	if (memcmp(h, MAGIC, 8))
		return violation(r, 0, "no PERFILE2 magic");
	hsize = le64(h + 8);
	if (hsize == PIPE_HEADER_SIZE) {
		r->pipe = true;
		r->data_off = PIPE_HEADER_SIZE;
		return 0;
	}
	if (r->pipe)
		return violation(r, 8, "header size %" PRIu64 " on a stream: only pipe-mode data (16) can be read from stdin",
				 hsize);
	if (hsize != FILE_HEADER_SIZE)
		return violation(r, 8, "header size %" PRIu64 ", want %d", hsize, FILE_HEADER_SIZE);
	if (read_at(r, 0, h, sizeof(h)))
		return violation(r, 0, "shorter than a perf.data header");
	r->attr_size = le64(h + 16);
	r->attrs_off = le64(h + 24);
	r->attrs_size = le64(h + 32);
	r->data_off = le64(h + 40);
	r->data_size = le64(h + 48);
	for (int i = 0; i < FEAT_BITS / 64; i++)
		r->features[i] = le64(h + 72 + 8 * i);
	if (fseeko(r->f, 0, SEEK_END))
		return io_error(r, "seeking");
	r->file_size = (uint64_t)ftello(r->f);
	if (r->data_off > r->file_size || r->data_size > r->file_size - r->data_off)
		return violation(r, 40, "the data section (%#" PRIx64 ", %" PRIu64 " bytes) is not inside the file of %" PRIu64 " bytes",
				 r->data_off, r->data_size, r->file_size);
	return 0;
}

static void print_counts(const struct reader *r)
{
	char nb[40];

	for (uint32_t t = 0; t < NR_TYPES; t++)
		if (r->counts[t])
			printf("%-28s %10" PRIu64 "\n", type_name(t, nb, sizeof(nb)), r->counts[t]);
}

int main(int argc, char **argv)
{
	static struct reader r;
	int err;

	if (argc == 3 && !strcmp(argv[1], "-q")) {
		quiet = 1;
		argv++;
		argc--;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: perf-data-strict [-q] FILE|-\n");
		return 2;
	}
	r.path = argv[1];
	if (!strcmp(r.path, "-")) {
		r.f = stdin;
		r.pipe = true;
	} else {
		r.f = fopen(r.path, "rb");
		if (!r.f)
			return io_error(&r, "open");
	}

	err = open_file(&r);
	if (!err && !r.pipe)
		err = check_sections(&r);
	if (!err)
		err = walk_data(&r);
	/* After the walk: the index names the round markers it found. */
	if (!err && r.horizon_size)
		err = check_horizons(&r, r.horizon_off, r.horizon_size);
	if (!quiet)
		print_counts(&r);
	if (!err)
		printf("perf-data-strict: %s: ok, %" PRIu64 " records%s\n", r.path, r.records,
		       r.pipe ? " (pipe)" : "");
	free(r.rounds);
	if (r.f != stdin)
		fclose(r.f);
	return err;
}
