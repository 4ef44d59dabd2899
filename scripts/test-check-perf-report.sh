#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/test-check-perf-report.sh — report_record() of
# scripts/check-perf-report.sh on made-up guest output, as TAP lines for
# scripts/check.sh (section lint). The queue it reads from perf's
# "Ordered events:" line: a patched reader that delivered nothing before
# the end of the file must fail; one whose peak is above the target
# beside stock's round rule must not (the ratio is a measurement), but
# must say MISS; a reader without the line must fail.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/tap-lib.sh

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# guest_out PEAK_PATCHED QUEUED_PATCHED PEAK_STOCK [no-oe]: one perf
# record pair of scripts/guest/perf.sh, as it prints it.
guest_out() {
	local t="scenario=msg backend=nolib"
	echo "PERFREC $t file=stock rc=0 bytes=2058825 seconds=2.82"
	echo "PERFREC $t file=patched rc=0 bytes=2355677 seconds=2.94"
	echo "PERFREAD $t file=stock reader=stock rc=0 lines=20702 below=0 order_check=0 md5=aa ooo=0 script_s=3.10 stats_s=1.0 stats_md5=bb"
	echo "PERFREAD $t file=stock reader=patched rc=0 lines=20702 below=0 order_check=0 md5=aa ooo=0 script_s=3.20 stats_s=1.0 stats_md5=bb"
	echo "PERFREAD $t file=patched reader=stock rc=0 lines=23213 below=0 order_check=0 md5=cc ooo=0 script_s=3.67 stats_s=1.0 stats_md5=dd"
	echo "PERFREAD $t file=patched reader=patched rc=0 lines=23213 below=0 order_check=0 md5=cc ooo=0 script_s=3.44 stats_s=1.0 stats_md5=dd"
	echo "PERFOE $t file=stock reader=stock Ordered events: 20986 events queued, 0 out of order, peak 8000 queued, flushed at: round markers (newest of the previous round)"
	echo "PERFOE $t file=patched reader=stock Ordered events: 23515 events queued, 0 out of order, peak $3 queued, flushed at: round markers (newest of the previous round)"
	[ "${4:-}" = no-oe ] ||
		echo "PERFOE $t file=patched reader=patched Ordered events: $2 events queued, 0 out of order, peak $1 queued, flushed at: recorded horizons (24 of 24 round markers)"
	echo "PERFSTRICT $t file=stock rc=0 perf-data-strict: stock.data: ok, 20986 records"
	echo "PERFSTRICT $t file=patched rc=0 perf-data-strict: patched.data: ok, 23515 records"
}

# run_report NAME ARGS...: report_record on guest_out ARGS, in a
# subshell of its own numbering; its output in $tmp/NAME.
run_report() {
	local name=$1
	shift
	guest_out "$@" > "$tmp/$name.in"
	(
		n=0 passed=0 failed=0 skipped=0 rc=0
		stock_rec_seen=0 compat_rec_seen=0 order_check_state=ok
		. scripts/check-perf-report.sh
		report_record stable "$tmp/$name.in"
	) > "$tmp/$name.out" 2>&1
}

# has NAME PATTERN: a line of NAME's output matches PATTERN (grep -E).
has() { grep -Eq "$2" "$tmp/$1.out"; }

# The CI run of 7 December 2026: 9813 of 23515, stock's rule 8715.
run_report miss 9813 23515 8715
has miss '^ok [0-9]+ - stable record msg nolib: the patched reader delivered events before the end of the file \(peak 9813 of 23515 queued\)$'
result $? "check-perf-report: a reader that flushed before the end passes" "$(cat "$tmp/miss.out")"
! has miss '^not ok'
result $? "check-perf-report: a peak 1.13 times stock's rule's is no failed result" "$(cat "$tmp/miss.out")"
has miss '^# perf-record-peak regime=stable scenario=msg backend=nolib patched_peak=9813 stock_rule_peak=8715 ratio=1\.13 target="at most 1\.10" MISS '
result $? "check-perf-report: ... and is printed as a MISS of the target" "$(cat "$tmp/miss.out")"

run_report pass 9000 23515 8715
has pass '^# perf-record-peak .* ratio=1\.03 target="at most 1\.10" PASS '
result $? "check-perf-report: a peak 1.03 times stock's rule's is a PASS of the target" "$(cat "$tmp/pass.out")"

# A reader whose horizons never moved holds the whole file to its end.
run_report stuck 23515 23515 8715
has stuck '^not ok [0-9]+ - stable record msg nolib: the patched reader delivered events before the end of the file \(peak 23515 of 23515 queued\)$'
result $? "check-perf-report: a reader that held every event to the end fails" "$(cat "$tmp/stuck.out")"

run_report none 9813 23515 8715 no-oe
has none '^not ok [0-9]+ - stable record msg nolib: both readers print the ordered-events report \(peak queue: patched none of none queued, stock 8715\)$'
result $? "check-perf-report: a patched reader without its report line fails" "$(cat "$tmp/none.out")"

finish
