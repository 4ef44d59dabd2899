#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# scripts/guest/perf-mmap-flush.sh STOCK PATCHED — does `perf record
# --mmap-flush` keep the promise of PERF_RECORD_FINISHED_ROUND? Runs the
# two perf binaries one after the other on the same load, on the host (as
# root) or in a guest (busybox sh), and reads both files with the same
# reader.
#
# The stock bug (patches/perf-fixes/0005): a ring holding less than the
# --mmap-flush threshold is skipped by a pass (__perf_mmap__read_init()
# returns -EAGAIN) while the pass still writes FINISHED_ROUND after the
# rings it did write; the skipped events come rounds later, below what the
# reader has flushed already. The load is pinned to one CPU (MF_CPU), so
# that its ring reaches the threshold often while the others fill slowly
# with cpu-clock samples: the quiet rings are the ones kept back. The
# scheduler events are filtered to the load's tasks (comm
# sched-messaging), so that whatever else runs on a shared host does not
# fill the other rings and hide the bug (without the filter, on the
# 2-CPU host shared with compiles, stock showed 0-2 where it shows
# hundreds with it).
#
# Recorded: perf record -a --mmap-flush=$MF_FLUSH -e sched:sched_switch
# -e sched:sched_wakeup (both filtered as said) -e cpu-clock -- taskset
# -c $MF_CPU perf bench sched messaging -g $MF_GROUPS -l $MF_LOOPS
# (taskset left out where there is none).
#
# Counted, by the reader (MF_READER, default STOCK: the same for both
# files, so that only the writer differs), with perf --debug
# ordered-events=1 script --ns -F cpu,time,event:
#   ooo   perf's own count of events queued below a time it had already
#         flushed (ordered_events.c: nr_unordered_events, its "N out of
#         order events recorded." warning): each broke the promise.
#   text  the output lines stamped below the newest line before them
#         (uses nothing of perf's ordering: a cross-check, as
#         scripts/perf-order-check.sh counts, which the guests lack).
#   peak  the largest number of events the reader's queue held when it
#         flushed ("flush PRE ... nr_events N" lines): its memory, in
#         events, not bytes (/usr/bin/time is not in the guests).
#   rounds  the FINISHED_ROUND flushes the reader made.
#
# Prints TAP results (scripts/tap-lib.sh) and the line
#   # perf-record-mmap-flush stock_ooo=N patched_ooo=N stock_peak=N
#     patched_peak=N horizon=estimate
# (one line). horizon=estimate: a round is only as good as "each pass
# read every ring to its head", and an event is stamped before it is
# published, so nothing here proves a bound; the test asserts what the
# reader saw. Asserted: both records succeed, the patched file reads with
# 0 out of order by both counts. Stock's count is reported, not asserted:
# a load that left it at 0 did not exercise the bug, and says so as a
# SKIP.
#
# Environment: MF_LOOPS (default 1000), MF_GROUPS (2), MF_FLUSH (64K),
# MF_CPU (0), MF_READER (STOCK), MF_DIR (scratch; default a new
# directory under ${TMPDIR:-/tmp}, removed at the end unless MF_KEEP=1).
# Costs about 50 s on the 2-CPU host while other builds ran (each build:
# a record of ~15 s and a read of ~10 s).
set -u

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC1091 # the repository's, or the guest's copy
if [ -r "$here/../tap-lib.sh" ]; then
	. "$here/../tap-lib.sh"
elif [ -r "$here/tap-lib.sh" ]; then
	. "$here/tap-lib.sh"
else
	. /lib/perfclock/tap-lib.sh
fi

if [ $# -ne 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
	echo "usage: $0 STOCK-PERF PATCHED-PERF (two executable perf binaries)" >&2
	exit 2
fi
stock=$1 patched=$2
reader=${MF_READER:-$stock}
loops=${MF_LOOPS:-1000} groups=${MF_GROUPS:-2} flush=${MF_FLUSH:-64K}
cpu=${MF_CPU:-0}
case "$loops$groups$cpu" in
*[!0-9]*)
	echo "$0: MF_LOOPS, MF_GROUPS and MF_CPU must be numbers" >&2
	exit 2 ;;
esac
if [ -n "${MF_DIR:-}" ]; then
	dir=$MF_DIR
	mkdir -p "$dir" || exit 2
else
	dir=$(mktemp -d "${TMPDIR:-/tmp}/perf-mmap-flush.XXXXXX") || exit 2
fi
pin=
command -v taskset >/dev/null 2>&1 && pin="taskset -c $cpu"

# record BUILD PERF: one recording of the load; its status is returned.
record() {
	# shellcheck disable=SC2086 # $pin is a command and its arguments, or nothing
	$2 record -q -a --mmap-flush="$flush" -o "$dir/$1.data" \
		-e sched:sched_switch \
		--filter 'prev_comm == "sched-messaging" || next_comm == "sched-messaging"' \
		-e sched:sched_wakeup --filter 'comm == "sched-messaging"' \
		-e cpu-clock -- \
		$pin $2 bench sched messaging -g "$groups" -l "$loops" \
		> /dev/null 2> "$dir/$1.rec.err"
}

# count BUILD: read BUILD's file with the reader; sets ooo, text, peak,
# rounds, samples. Returns the reader's status.
count() {
	b=$1
	"$reader" --debug ordered-events=1 script -i "$dir/$b.data" --ns \
		-F cpu,time,event > "$dir/$b.script" 2> "$dir/$b.script.err"
	st=$?
	ooo=$(sed -n 's/.*[^0-9]\([0-9][0-9]*\) out of order events recorded.*/\1/p;
		s/^\([0-9][0-9]*\) out of order events recorded.*/\1/p' \
		"$dir/$b.script.err" | tail -n 1)
	ooo=${ooo:-0}
	# The text's own order (scripts/guest/perf-order.awk: lines with a
	# timestamp, and how many are stamped below the line before).
	# shellcheck disable=SC2046 # two numbers, split on purpose
	set -- $(${AWK:-awk} -f "$here/perf-order.awk" "$dir/$b.script")
	samples=${1:-0} text=${2:-0}
	# shellcheck disable=SC2016,SC2046 # awk's own variables; two numbers, split on purpose
	set -- $(${AWK:-awk} '/ordered_events__flush PRE/ {
			n = $NF + 0; if (n > max) max = n
			if ($0 ~ /PRE +ROUND/) rounds++
		}
		END { print max + 0, rounds + 0 }' "$dir/$b.script.err")
	peak=$1 rounds=$2
	return $st
}

for build in stock patched; do
	perf=$stock
	[ $build = patched ] && perf=$patched
	record $build "$perf"
	st=$?
	result $st "perf record --mmap-flush=$flush: $build records the load" \
		"$(tail -n 5 "$dir/$build.rec.err")" || continue
	count $build
	st=$?
	result $st "perf-mmap-flush: the reader reads $build's file" \
		"$(grep -v 'out of order event$\|last flush\|flush P' "$dir/$build.script.err" | tail -n 5)" || continue
	echo "# perf-mmap-flush: $build: $samples events, $rounds rounds, $ooo out of order (perf), $text (text), queue peak $peak events"
	if [ $build = stock ]; then
		stock_ooo=$ooo stock_peak=$peak
	else
		patched_ooo=$ooo patched_text=$text patched_peak=$peak patched_samples=$samples
	fi
done

if [ -n "${patched_ooo:-}" ]; then
	result $((patched_ooo != 0)) "perf record --mmap-flush=$flush: patched file has 0 events out of order for perf's reader ($patched_ooo)"
	result $((patched_text != 0)) "perf record --mmap-flush=$flush: patched file reads back in time order ($patched_text lines below the line before)"
	[ "$patched_samples" -gt 0 ]
	result $? "perf record --mmap-flush=$flush: patched file has events ($patched_samples)"
fi
if [ -n "${stock_ooo:-}" ]; then
	if [ "$stock_ooo" -gt 0 ]; then
		result 0 "perf record --mmap-flush=$flush: stock reproduced the bug ($stock_ooo out of order)"
	else
		skip_result "perf record --mmap-flush=$flush: stock reproduced the bug" \
			"stock had 0 out of order: this load did not exercise it"
	fi
fi

echo "# perf-record-mmap-flush stock_ooo=${stock_ooo:-n/a} patched_ooo=${patched_ooo:-n/a} stock_peak=${stock_peak:-n/a} patched_peak=${patched_peak:-n/a} horizon=estimate"

[ "${MF_KEEP:-0}" = 1 ] || [ -n "${MF_DIR:-}" ] || rm -rf "$dir"
[ "${MF_NO_FINISH:-0}" = 1 ] || finish
