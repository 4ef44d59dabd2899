#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/test-perf-order-check.sh — scripts/perf-order-check.sh as TAP
# lines (scripts/tap-lib.sh), for scripts/check.sh (section lint). The
# fixtures are real perf script output (scripts/testdata/perf-script-*.txt,
# from a perf 6.1 recording whose reader delivered events out of order);
# the edge cases are made here.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/tap-lib.sh

chk=scripts/perf-order-check.sh

# expect STATUS DESCRIPTION: the checker's exit status on stdin.
expect() {
	local out st
	out=$(AWK=$AWK "$chk" 2>&1)
	st=$?
	[ "$st" -eq "$1" ]
	result $? "perf-order-check${TAG:-}: $2 (exit $st, want $1)" "$out"
}

# The tests, with the awk in $AWK (TAG names it in the descriptions).
tests() {
	expect 0 "in order: perf script output" < scripts/testdata/perf-script-in-order.txt
	expect 1 "out of order: perf script output whose cpu 0 samples come late" \
		< scripts/testdata/perf-script-out-of-order.txt

	out=$(AWK=$AWK "$chk" scripts/testdata/perf-script-out-of-order.txt 2>/dev/null)
	[ "$out" = "perf-order-check: 30 timestamps, 12 out of order, worst 2845954 ns behind, 3 lines without a timestamp" ]
	result $? "perf-order-check${TAG:-}: counts the late lines and the worst lateness" "$out"

	expect 0 "equal timestamps are in order" < <(printf '[000]  10.000000005: a:\n[001]  10.000000005: b:\n[000]  10.000000006: c:\n')
	expect 1 "one nanosecond back" < <(printf '[000]  10.000000005: a:\n[001]  10.000000004: b:\n')
	expect 1 "microseconds (perf script without --ns)" < <(printf '[000]  10.000005: a:\n[001]  10.000004: b:\n')
	# 2^53 ns is about 104 days: seconds and fraction compared as integers.
	expect 1 "a machine up for 104 days, one nanosecond back" < <(printf '[000]  9007199.254740993: a:\n[000]  9007199.254740992: b:\n')
	expect 0 "seconds compared as numbers, not strings" < <(printf '[000]  9.900000000: a:\n[000]  10.000000000: b:\n')
	expect 1 "lines without a timestamp are skipped, not a reset" < <(printf '[000]  10.000000005: a:\nno timestamp here\n[000]  10.000000004: b:\n')
	expect 1 "perf script's default fields: the first SECONDS.FRACTION: field" < <(printf 'perf  123 [000] 10.000000005: 1 cpu-clock:  ffffffff81000000 x ([kernel.kallsyms])\n[000]  10.000000001: b:\n')
	expect 0 "fractions with leading zeros (octal to busybox awk), in order" < <(printf 'a 1 [000] 1.012345679: x\na 1 [000] 1.012345700: x\n')
	expect 2 "no timestamp at all" < <(printf 'nothing\n')
}

AWK=awk TAG= tests
# busybox awk reads a number with a leading 0 as octal: the guests' awk.
if command -v busybox > /dev/null && busybox awk 'BEGIN {}' 2>/dev/null; then
	AWK="busybox awk" TAG=" (busybox awk)" tests
else
	skip_result "perf-order-check with busybox awk" "no busybox here"
fi

finish
