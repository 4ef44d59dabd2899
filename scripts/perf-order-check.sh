#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# scripts/perf-order-check.sh [FILE] — is `perf script` output in timestamp
# order? It reads the text perf printed, not perf.data, and uses nothing
# of perf's own ordering: each line's timestamp is compared with the
# newest one of the lines before it.
#
# Give perf script the timestamp with nanoseconds, for example
#   perf script -i perf.data --ns -F cpu,time,event | scripts/perf-order-check.sh
# (any -F list with time works; the timestamp is the first field of the
# form SECONDS.FRACTION: and must be the first such field on the line;
# add --show-task-events, --show-mmap-events... to check side-band records
# too, but then the synthesized ones, stamped 0, count as out of order).
# Seconds and fraction are compared as integers, so no precision is lost
# however long the machine has been up.
#
# AWK names the awk to use (default awk); busybox awk works too, as in
# the test guests.
#
# Prints one line:
#   perf-order-check: N timestamps, N out of order, worst N ns behind, N lines without a timestamp
# and exits 0 if no timestamp is below an earlier one, 1 if one is, 2 if
# the input has no timestamp at all (or cannot be read).
set -u

${AWK:-awk} '
# A decimal string to a number, its leading zeros cut first: busybox awk
# reads "012345700" as octal.
function num(s) {
	sub(/^0+/, "", s)
	return s == "" ? 0 : s + 0
}
{
	ts = ""
	for (i = 1; i <= NF; i++) {
		if ($i ~ /^[0-9]+\.[0-9]+:$/) {
			ts = substr($i, 1, length($i) - 1)
			break
		}
	}
	if (ts == "") {
		notime++
		next
	}
	dot = index(ts, ".")
	frac = substr(ts, dot + 1)
	# The fraction to nanoseconds: perf prints 6 digits (us) or 9 (--ns).
	while (length(frac) < 9)
		frac = frac "0"
	sec = num(substr(ts, 1, dot - 1))
	ns = num(substr(frac, 1, 9))
	n++
	if (n > 1 && (sec < msec || (sec == msec && ns < mns))) {
		ooo++
		behind = (msec - sec) * 1000000000 + (mns - ns)
		if (behind > worst)
			worst = behind
		if (ooo <= 5)
			printf "perf-order-check: line %d: %s below %d.%09d\n", NR, ts, msec, mns > "/dev/stderr"
		next
	}
	msec = sec
	mns = ns
}
END {
	printf "perf-order-check: %d timestamps, %d out of order, worst %.0f ns behind, %d lines without a timestamp\n", n, ooo, worst, notime
	if (n == 0)
		exit 2
	exit ooo ? 1 : 0
}' "$@"
