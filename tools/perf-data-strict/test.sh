#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tools/perf-data-strict/test.sh — perf-data-strict as TAP lines
# (scripts/tap-lib.sh): real files (tools/perf-data-strict/testdata/:
# stock perf 6.1 (file and pipe), perf 6.1 with patches/perf/ 0013's
# payload, perf 6.12 with the index (patches/perf/0013-0015), each a few KB of
# perf record -e cpu-clock -- sleep 0.05) and files made here, each bad
# one with the error it must give. Needs gcc and perl, no perf, no root;
# 4-8 s on a loaded 2-core machine. Builds the reader into $BUILD
# (default build/perf-data-strict).
#
#   tools/perf-data-strict/test.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. scripts/tap-lib.sh

BUILD=${BUILD:-build/perf-data-strict}
bin=$BUILD/perf-data-strict
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$BUILD"

out=$(gcc -O2 -std=gnu11 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Werror -D_FILE_OFFSET_BITS=64 -o "$bin" tools/perf-data-strict/perf-data-strict.c 2>&1)
result $? "perf-data-strict builds clean with -Wall -Wextra -Werror" "$out" || { finish; }

# expect STATUS PATTERN DESCRIPTION FILE: the exit status, and PATTERN
# (grep -E) in what it printed.
expect() {
	local out st
	out=$("$bin" "$4" 2>&1)
	st=$?
	[ "$st" -eq "$1" ] && grep -qE -- "$2" <<<"$out"
	result $? "perf-data-strict: $3 (exit $st, want $1)" "$out"
}

# The files made here: scripts/perf are not needed, perl (Essential in
# Debian) packs the bytes, one process per file.
#   mk OUT DATA_SIZE FEATURES0 ITEM...
# OUT gets the 104-byte header, one 80-byte attr at 104, the ITEMs from 184
# as the data section (DATA_SIZE "-": their length; "pipe": a pipe-mode
# stream, 16-byte header and the ITEMs), the feature bits FEATURES0 in the
# first word and, if not 0, one feature table entry and the section after
# the data. ITEM: "r,TYPE,SIZE" a record of SIZE bytes (its body 0x11);
# "h,TYPE,SIZE,LEN" a header saying SIZE and LEN body bytes; "x,NR" the
# start of a HEADER_FLUSH_HORIZON section of NR entries ("x,NR,HSIZE": with a
# header of HSIZE bytes, zeros after the 32 known), "e,OFFSET,HORIZON,
# PROOF,FLAGS" one entry (items after "x" go to the section).
cat > "$tmp/mk.pl" <<'PERL'
use strict; use warnings;
my ($out, $dsize, $feat, @items) = @ARGV;
my ($data, $sec) = ('', undef);
for (@items) {
	my ($k, @v) = split /,/;
	if ($k eq 'r') { $data .= pack('L<S<S<', $v[0], 0, $v[1]) . ("\x11" x ($v[1] > 8 ? $v[1] - 8 : 0)); }
	elsif ($k eq 'h') { $data .= pack('L<S<S<', $v[0], 0, $v[1]) . ("\x11" x $v[2]); }
	elsif ($k eq 'x') { $sec = pack('L<L<L<L<Q<Q<', 1, $v[1] // 32, 32, 0, $v[0], 1) . ("\0" x (($v[1] // 32) > 32 ? ($v[1] // 32) - 32 : 0)); }
	elsif ($k eq 'e') { $sec .= pack('Q<Q<L<L<l<L<', @v, -1, 0); }
	else { die "mk.pl: $k?\n"; }
}
open(my $fh, '>:raw', $out) or die "$out: $!\n";
if ($dsize eq 'pipe') { print $fh 'PERFILE2', pack('Q<', 16), $data; exit 0; }
my $len = length($data);
$dsize = $len if $dsize eq '-';
print $fh 'PERFILE2', pack('Q<*', 104, 80, 104, 80, 184, $dsize, 0, 0, $feat, 0, 0, 0);
print $fh "\0" x 80, $data;
print $fh pack('Q<Q<', 184 + $len + 16, length($sec)), $sec if defined $sec;
close($fh) or die "$out: $!\n";
PERL
mk() { perl "$tmp/mk.pl" "$@"; }

# Real files.
td=tools/perf-data-strict/testdata
expect 0 'FINISHED_ROUND +[1-9]' "a stock perf 6.1 perf record file is read" "$td/stock-6.1.data"
expect 1 'PERF_RECORD_FINISHED_ROUND of 32 bytes: it has no payload' \
	"a file from perf with 0013 (the horizon as FINISHED_ROUND's payload) is refused" "$td/patched-0013.data"
expect 0 'HEADER_FLUSH_HORIZON [1-9][0-9]* entries for [1-9][0-9]* round markers' \
	"a file from perf 6.12 with the index (8-byte markers, the horizon index) is read, its index checked" \
	"$td/carrier-6.12.data"
expect 0 'ok, [1-9][0-9]* records \(pipe\)' "stock perf 6.1 pipe-mode output is read" "$td/stock-6.1.pipe"

# Made here. Data at 184 (0xb8): a 16-byte sample is S, a marker R.
S=r,9,16 R=r,68,8
mk "$tmp/ok" - 0 $S $R $S $R
expect 0 'FINISHED_ROUND +2' "a minimal sound file: counts per type" "$tmp/ok"
mk "$tmp/payload" - 0 $S r,68,32 $S
expect 1 '0xc8: PERF_RECORD_FINISHED_ROUND of 32 bytes' "FINISHED_ROUND with a 24-byte payload" "$tmp/payload"
mk "$tmp/zero" - 0 $S h,9,0,8 $S
expect 1 '0xc8: record of type SAMPLE has size 0, less than its own header' "a record of size 0" "$tmp/zero"
mk "$tmp/four" - 0 $S h,9,4,0 $S
expect 1 'has size 4, less than its own header' "a record of size 4" "$tmp/four"
mk "$tmp/trunc" 40 0 $S r,9,64
expect 1 'record of type SAMPLE, 64 bytes, runs 40 bytes past the end of the data section \(truncated\)' \
	"a record cut by the end of the data section" "$tmp/trunc"
mk "$tmp/trunchdr" 20 0 $S $R
expect 1 '4 bytes left in the data section, less than a record header' "a header cut by the end of the data section" "$tmp/trunchdr"
mk "$tmp/pastfile" 4096 0 $S $R
expect 1 'the data section .* is not inside the file' "a data section past the end of the file" "$tmp/pastfile"
mk "$tmp/user87" - 0 $S r,87,24 $R
expect 0 'UNKNOWN_USER_87 +1' "an unknown user record type is skipped by its size" "$tmp/user87"
mk "$tmp/user87u" - 0 $S h,87,12,8 $R
expect 1 'unknown type UNKNOWN_USER_87 has size 12, not a multiple of 8' "an unknown type of unaligned size" "$tmp/user87u"
sed 's/^PERFILE2/2ELIFREP/' "$tmp/ok" > "$tmp/swapped"
expect 1 'big-endian .* not supported' "a cross-endian file is refused, said so" "$tmp/swapped"
sed 's/^PERFILE2/PERFILE3/' "$tmp/ok" > "$tmp/magic"
expect 1 'no PERFILE2 magic' "no magic" "$tmp/magic"
head -c 50 "$tmp/ok" > "$tmp/short"
expect 1 'shorter than a perf.data header' "a file shorter than its header" "$tmp/short"

# Pipe mode, on stdin.
mk "$tmp/pipe" pipe 0 $S $R
out=$("$bin" - < "$tmp/pipe" 2>&1); st=$?
[ $st -eq 0 ] && grep -q 'ok, 2 records (pipe)' <<<"$out"
result $? "perf-data-strict: a pipe-mode stream on stdin (exit $st)" "$out"
mk "$tmp/pipe2" pipe 0 $S r,9,64
head -c 60 "$tmp/pipe2" > "$tmp/pipecut"
out=$("$bin" - < "$tmp/pipecut" 2>&1); st=$?
[ $st -eq 1 ] && grep -q 'cut short by the end of the stream (truncated)' <<<"$out"
result $? "perf-data-strict: a pipe-mode stream ending inside a record (exit $st)" "$out"

# The HEADER_FLUSH_HORIZON index (docs/perf-data-carrier.md, section 2),
# bit 32: markers at 0xc8 (200) and 0xe0 (224).
b32=$((1 << 32))
mk "$tmp/idx" - $b32 $S $R $S $R x,2 e,200,1000,2,0 e,224,2000,2,0
expect 0 'HEADER_FLUSH_HORIZON 2 entries for 2 round markers' "a horizon index naming both round markers" "$tmp/idx"
mk "$tmp/idxoff" - $b32 $S $R $S $R x,1 e,208,1000,2,0
expect 1 'names offset 0xd0, where the data section has no PERF_RECORD_FINISHED_ROUND' \
	"an index entry that names no round marker" "$tmp/idxoff"
mk "$tmp/idxback" - $b32 $S $R $S $R x,2 e,200,2000,2,0 e,224,1000,2,0
expect 1 'horizon 1000 below the one before \(2000\) without a restart' "a horizon that goes back" "$tmp/idxback"
mk "$tmp/idxrestart" - $b32 $S $R $S $R x,2 e,200,2000,2,0 e,224,1000,2,1
expect 0 'HEADER_FLUSH_HORIZON 2 entries' "a horizon that goes back at a restart" "$tmp/idxrestart"
mk "$tmp/idxnr" - $b32 $S $R $S $R x,9 e,200,1000,2,0
expect 1 'says 9 entries of 32 bytes' "an index whose count overruns its section" "$tmp/idxnr"
mk "$tmp/idxproof" - $b32 $S $R $S $R x,1 e,200,1000,7,0
expect 1 'proof 7' "an index entry with an unknown proof" "$tmp/idxproof"
mk "$tmp/idxlong" - $b32 $S $R $S $R x,2,48 e,200,1000,2,0 e,224,2000,2,0
expect 0 'HEADER_FLUSH_HORIZON 2 entries for 2 round markers' \
	"an index whose header is longer than the 32 bytes known (a later perf's): its entries found after it" "$tmp/idxlong"
mk "$tmp/idxhshort" - $b32 $S $R $S $R x,1,24 e,200,1000,2,0
expect 1 'header size 24' "an index whose header size is below 32" "$tmp/idxhshort"

finish
