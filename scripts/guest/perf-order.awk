# SPDX-License-Identifier: GPL-2.0
#
# scripts/guest/perf-order.awk — is perf script's output in timestamp
# order? Reads `perf script --ns` output (any fields, as long as the
# timestamp is the first field of the form SECONDS.NANOSECONDS:) and
# prints "LINES BELOW": the lines that carry a timestamp, and how many of
# them are stamped below the line before. It uses nothing of perf's own
# ordering: only the text. POSIX awk (busybox's in the guest): the two
# halves of the stamp are compared as integers with their leading zeros
# cut, since busybox awk reads a number with a leading 0 as octal.
function num(s) { sub(/^0+/, "", s); return s == "" ? 0 : s + 0 }
{
	for (i = 1; i <= NF; i++) {
		if ($i !~ /^[0-9]+\.[0-9]+:$/)
			continue
		t = substr($i, 1, length($i) - 1)
		dot = index(t, ".")
		s = num(substr(t, 1, dot - 1))
		ns = num(substr(t, dot + 1))
		if (n && (s < ls || (s == ls && ns < lns)))
			below++
		ls = s
		lns = ns
		n++
		break
	}
}
END { print n + 0, below + 0 }
