#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# scripts/guest/perf-record-threads.sh STOCK PATCHED — perf record
# --threads, stock against the series. Stock --threads writes each ring to
# its own file (data.N of the directory) and no round markers, and its
# directory reader sorts the whole recording at the end: its queue holds
# every event until then. Patched perf record --flush-horizon gives each
# file horizons in HEADER_FLUSH_HORIZON (per CPU where a thread has one
# ring, else the horizon of every ring), and the reader delivers what is
# below the oldest file's horizon as it goes.
#
# Recorded, one after the other on the same load (stress-ng --switch 2
# for TH_SECONDS, default 5): perf record -a --threads -k mono
# -e sched:sched_switch -e sched:sched_wakeup -- sleep TH_SECONDS, with
# --flush-horizon for patched. -k mono: the host has no perfclock module and
# no time_zero; its per-CPU horizon is clock_gettime + getcpu.
#
# Read with perf script -v --ns -F cpu,time,event, each file by its own
# perf (stock by stock, patched by patched), and the patched file by
# stock too (compat: stock perf must read it as before):
#   ooo    perf's count of events queued below a time already delivered
#          (the -v "Ordered events" line of patch 5);
#   text   output lines stamped below the line before (perf-order.awk:
#          nothing of perf's ordering);
#   peak   the most events the reader's queue held at once;
#   rss    the reader's maximum resident set in KB (/usr/bin/time -f %M,
#          where there is one), on the per-build lines only: it counts
#          the pages of the data files the reader maps, so it follows
#          the file's size more than the queue's; peak is the queue.
#
# Patched records twice: --threads=cpu (one thread per CPU: per-CPU
# horizons where the clock has them) and --threads=package (one thread
# for all the rings of a package: the horizon of every ring, a grace
# period). Prints TAP results and, for each, the line
#   # perf-record-threads threads=cpu|package stock_ooo=N patched_ooo=N
#     stock_peak=N stock_events=N patched_peak=N patched_events=N
#     horizon=percpu|gp|estimate
# (stock's figures are its one --threads=cpu run, in both lines: its
# reader holds everything whatever the threads). horizon: the weakest
# proof among the patched file's entries (perf report --header-only's
# "# flush horizons" line): percpu if every entry is a per-CPU horizon. Asserted: both record, the patched reader flushed
# at recorded horizons (a rule that never flushes is no result) with 0
# out of order by both counts, the compat read has 0 out of order; with
# per-CPU horizons, the reader held at most a quarter of the events, its
# queue was capped at 256 MiB and never full, and perf report with
# report.queue-size at half that peak filled its queue and held within it
# (cap_check). Stock's peak and count are printed, not asserted.
#
# Environment: TH_SECONDS (5), TH_DIR (scratch; default a new directory
# under ${TMPDIR:-/tmp}, removed at the end unless TH_KEEP=1),
# TH_NO_FINISH=1 (do not print the TAP total: a caller's own).
# Costs about 60-90 s on the 2-CPU host (three records of ~10 s, four
# reads of ~10 s).
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
secs=${TH_SECONDS:-5}
case "$secs" in
'' | *[!0-9]*)
	echo "$0: TH_SECONDS must be a number" >&2
	exit 2 ;;
esac
if [ -n "${TH_DIR:-}" ]; then
	dir=$TH_DIR
	rm -rf "$dir" && mkdir -p "$dir" || exit 2
else
	dir=$(mktemp -d "${TMPDIR:-/tmp}/perf-record-threads.XXXXXX") || exit 2
fi
timer=
[ -x /usr/bin/time ] && timer="/usr/bin/time -f rss=%M -a -o"

# record BUILD PERF [OPTION]: one recording under the load; its status.
record() {
	r_name=$1 r_perf=$2
	shift 2
	load=
	if command -v stress-ng > /dev/null 2>&1; then
		stress-ng --switch 2 --timeout "${secs}s" --quiet > /dev/null 2>&1 &
		load=$!
	fi
	"$r_perf" record -v -a --threads="${r_threads:-cpu}" -k mono "$@" -o "$dir/$r_name.data" \
		-e sched:sched_switch -e sched:sched_wakeup -- sleep "$secs" \
		> /dev/null 2> "$dir/$r_name.rec.err"
	st=$?
	[ -n "$load" ] && wait "$load"
	return $st
}

# count NAME READER DATA: sets ooo, text, peak, rss, events, rule.
count() {
	c_name=$1 c_reader=$2 c_data=$3
	rm -f "$dir/$c_name.time"
	# shellcheck disable=SC2086 # $timer is a command and its options, or nothing
	$timer ${timer:+"$dir/$c_name.time"} "$c_reader" script -v -i "$dir/$c_data.data" \
		--ns -F cpu,time,event > "$dir/$c_name.script" 2> "$dir/$c_name.script.err"
	st=$?
	line=$(grep '^Ordered events:' "$dir/$c_name.script.err" | tail -n 1)
	# "Ordered events: N events queued, X out of order, peak P queued, flushed at: RULE"
	events=$(echo "$line" | sed -n 's/^Ordered events: \([0-9]*\) events queued.*/\1/p')
	ooo=$(echo "$line" | sed -n 's/.* \([0-9]*\) out of order, .*/\1/p')
	peak=$(echo "$line" | sed -n 's/.*, peak \([0-9]*\) queued.*/\1/p')
	rule=$(echo "$line" | sed -n 's/.*flushed at: //p')
	rss=n/a
	[ -r "$dir/$c_name.time" ] && rss=$(sed -n 's/^rss=//p' "$dir/$c_name.time" | tail -n 1)
	# shellcheck disable=SC2046 # two numbers, split on purpose
	set -- $(${AWK:-awk} -f "$here/perf-order.awk" "$dir/$c_name.script")
	text=${2:-0}
	[ -n "$line" ] || return 1
	return $st
}

record stock "$stock"
result $? "perf record --threads: stock records the load" "$(tail -n 5 "$dir/stock.rec.err")" &&
	count stock "$stock" stock
if result $? "perf-record-threads: stock reads its directory" \
	"$(tail -n 5 "$dir/stock.script.err")"; then
	stock_ooo=$ooo stock_peak=$peak stock_events=$events
	echo "# perf-record-threads: stock: $events events, $ooo out of order (perf), $text (text), peak $peak, rss $rss KB, flushed at: $rule"
fi

# patched NAME THREADS: patched perf record --threads=THREADS --flush-horizon
# of the load, read by patched perf (and by stock, for NAME patched);
# prints the summary line.
patched() {
	p_name=$1 p_threads=$2 p_ooo=n/a p_peak=n/a p_events=n/a horizon=none
	p_what="perf record --threads=$p_threads --flush-horizon"
	r_threads=$p_threads record "$p_name" "$patched" --flush-horizon
	result $? "$p_what: patched records the load" "$(tail -n 5 "$dir/$p_name.rec.err")"
	grep -- '^--threads' "$dir/$p_name.rec.err" | sed 's/^/# perf-record-threads: /'
	hdr=$("$patched" report --header-only -i "$dir/$p_name.data" 2> /dev/null |
		grep '^# flush horizons')
	echo "$hdr" | sed 's/^# /# perf-record-threads: /'
	nfiles=$(echo "$hdr" | sed -n 's/.*, \([0-9]*\) for the data.N files.*/\1/p')
	[ "${nfiles:-0}" -gt 0 ]
	result $? "$p_what: the index has horizons for the data files (${nfiles:-0})"
	# The weakest proof present.
	pc=$(num per-CPU) gp=$(num 'grace period') es=$(num estimate)
	if [ "${es:-0}" -gt 0 ]; then horizon=estimate
	elif [ "${gp:-0}" -gt 0 ]; then horizon=gp
	elif [ "${pc:-0}" -gt 0 ]; then horizon=percpu
	fi

	if count "$p_name" "$patched" "$p_name"; then
		result 0 "perf-record-threads: patched reads its $p_threads directory"
		p_ooo=$ooo p_peak=$peak p_events=$events
		echo "# perf-record-threads: $p_name: $events events, $ooo out of order (perf), $text (text), peak $peak, rss $rss KB, flushed at: $rule"
		case $rule in
		"recorded horizons (directory: "[1-9]*) st=0 ;;
		*) st=1 ;;
		esac
		result $st "$p_what: the reader flushed at the recorded horizons ($rule)"
		result $((ooo != 0)) "$p_what: 0 events out of order for perf's reader ($ooo)"
		result $((text != 0)) "$p_what: read back in time order ($text lines below the line before)"
		# What the per-file horizons are for: the reader does not hold
		# the recording to its end. With per-CPU horizons (no grace
		# period) it held 0.9-2.1 % of the events on this load; the
		# bound, a quarter, is set well above that and far below the
		# whole (stock: all of them). The grace-period horizon of
		# --threads=package is not held to it: under stress-ng
		# --switch its grace periods take seconds.
		if [ "$horizon" = percpu ]; then
			[ "$events" -gt 0 ] && [ $((peak * 4)) -le "$events" ]
			result $? "$p_what: the reader held at most a quarter of the events at once (peak $peak of $events)"
			cap_check "$p_what" "$p_name" "$peak"
		fi
	else
		result 1 "perf-record-threads: patched reads its $p_threads directory" \
			"$(tail -n 5 "$dir/$p_name.script.err")"
	fi

	if [ "$p_name" = patched ]; then
		if count compat "$stock" patched; then
			result $((ooo != 0)) "$p_what: stock perf reads the patched directory, 0 out of order ($ooo of $events)"
		else
			result 1 "$p_what: stock perf reads the patched directory" \
				"$(tail -n 5 "$dir/compat.script.err")"
		fi
	fi

	echo "# perf-record-threads threads=$p_threads stock_ooo=${stock_ooo:-n/a} patched_ooo=$p_ooo stock_peak=${stock_peak:-n/a} stock_events=${stock_events:-n/a} patched_peak=$p_peak patched_events=$p_events horizon=$horizon"
}
num() { echo "$hdr" | sed -n "s/.*$1 \([0-9]*\).*/\1/p"; }

# cap_check WHAT NAME PEAK: the reader's queue is capped. A file with
# horizons is read with a queue capped at 256 MiB (unless report.queue-size
# sets another size): perf script's default read of NAME must name that
# cap and never have filled it. Then perf report reads NAME with
# report.queue-size at half what that read's peak took: the cap must be
# reached and the queue held within it. 48 bytes: sizeof(struct
# ordered_event) on x86_64 (tools/perf/util/ordered-events.h), each
# queued event's share of what the queue counts against its cap
# (ordered_events__new_event() counts whole buffers of them).
cap_check() {
	k_what=$1 k_name=$2 k_peak=$3
	k_line=$(grep '^Ordered events queue: ' "$dir/$k_name.script.err" | tail -n 1)
	case $k_line in
	"Ordered events queue: capped at 268435456 bytes, full 0 times") st=0 ;;
	*) st=1 ;;
	esac
	result $st "$k_what: the reader's queue is capped at 256 MiB and was never full (${k_line:-no cap line})"
	k_cap=$((k_peak * 48 / 2))
	# Below two buffers of 1365 events (64 KiB each) the cap says little.
	if [ "$k_cap" -lt 131072 ]; then
		skip_result "$k_what: a queue capped below its peak" "the peak, $k_peak events, is too small to cap"
		return
	fi
	mkdir -p "$dir/home"
	printf '[report]\n\tqueue-size = %s\n' "$k_cap" > "$dir/home/.perfconfig"
	HOME=$dir/home "$patched" report -v --stdio --sort cpu -i "$dir/$k_name.data" \
		> /dev/null 2> "$dir/$k_name.capped.err"
	st=$?
	k_line=$(grep '^Ordered events' "$dir/$k_name.capped.err" | tail -n 2 | tr '\n' ' ')
	k_full=$(echo "$k_line" | sed -n "s/.*queue: capped at $k_cap bytes, full \([0-9]*\) times.*/\1/p")
	k_held=$(echo "$k_line" | sed -n 's/.*, peak \([0-9]*\) queued.*/\1/p')
	k_ooo=$(echo "$k_line" | sed -n 's/.* \([0-9]*\) out of order, .*/\1/p')
	echo "# perf-record-threads: $k_name read with report.queue-size=$k_cap: full ${k_full:-?} times, peak ${k_held:-?}, ${k_ooo:-?} out of order"
	[ "$st" -eq 0 ] && [ "${k_full:-0}" -gt 0 ] && [ $((${k_held:-0} * 48)) -le "$k_cap" ] &&
		[ "${k_held:-0}" -gt 0 ]
	result $? "$k_what: with report.queue-size=$k_cap (half the peak's) the queue filled (${k_full:-?} times) and held within it (peak ${k_held:-?})" \
		"$(tail -n 5 "$dir/$k_name.capped.err")"
}

# One thread per CPU (the default): per-CPU horizons where there are.
# One thread for every ring of a package: the horizon of every ring.
patched patched cpu
patched patched-package package

[ "${TH_KEEP:-0}" = 1 ] || [ -n "${TH_DIR:-}" ] || rm -rf "$dir"
[ "${TH_NO_FINISH:-0}" = 1 ] || finish
