#!/bin/bash
# quiet.sh pinned|concurrent SECONDS BUILD...: the quiet-like load of the
# README's lost-record figures. wrload (a write()/read() loop on a pipe,
# ~150,000 sys_enter_write + sys_enter_read events/s here) runs pinned on
# CPU 0 for SECONDS while perf-collect-BUILD collects those two tracepoints:
#   pinned      one build at a time, perf-collect pinned on CPU 1, in the
#               order given (repeat the command to alternate);
#   concurrent  every build at once, unpinned, as scripts/guest/clients.sh
#               runs them.
# BIN (default: this directory) holds perf-collect-BUILD, wrload (cc -O2
# wrload.c) and perf-data-order (scripts/clients/perf-data-order.c).
# BUILD@D runs perf-collect-BUILD with MEASURE_ROUND_LAG_MS=D: with
# instrument.patch applied (a measurement aid, not for upstream) its round
# ends are D ms older than the clock read, the control for a horizon's age
# without libperfclock. Prints one line per build: the collector's CPU
# ticks, perf-data-order's line (samples, rounds, inversions, lost) and,
# from an instrumented build, its "measure:" line (round ends' age, time in
# flushes, most events held). Needs root.
mode=$1; secs=$2; shift 2
bin=${BIN:-$(cd "$(dirname "$0")" && pwd)}
out=${OUT:-/tmp/quiet-runs}; mkdir -p "$out"
start() { # start BUILD[@LAG_MS] [taskset prefix...]
	b=$1; shift; f=$out/$b.data; rm -f "$f"
	lag=; case $b in *@*) lag=${b#*@} ;; esac
	MEASURE_ROUND_LAG_MS=$lag "$@" "$bin/perf-collect-${b%@*}" -o "$f" :syscalls:sys_enter_write :syscalls:sys_enter_read 2>"$f.err" &
	pid=$!
	w=0; while ! grep -q 'info: created' "$f.err" && [ $w -lt 200 ]; do sleep 0.05; w=$((w + 1)); done
}
finish() { # finish BUILD PID TICKS ITERATIONS
	kill -INT "$2"; wait "$2"
	echo "$1 mode=$mode $4 cpu_ticks=$3 $("$bin/perf-data-order" "$out/$1.data")" \
		"round_end=\"$(sed -n 's/.*info: rounds end at \(.*\)\.$/\1/p' "$out/$1.data.err" | head -n 1)\"" \
		"$(sed -n 's/^measure: //p' "$out/$1.data.err")"
}
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
case $mode in
pinned)
	for b in "$@"; do
		start "$b" taskset -c 1
		it=$(taskset -c 0 "$bin/wrload" "$secs")
		finish "$b" $pid "$(ticks $pid)" "$it"
	done ;;
concurrent)
	pids=()
	for b in "$@"; do start "$b"; pids+=("$pid"); done
	it=$(taskset -c 0 "$bin/wrload" "$secs")
	t=(); for p in "${pids[@]}"; do t+=("$(ticks $p)"); done
	i=0; for b in "$@"; do finish "$b" ${pids[$i]} "${t[$i]}" "$it"; i=$((i + 1)); done ;;
*)
	echo "usage: quiet.sh pinned|concurrent SECONDS BUILD..." >&2; exit 64 ;;
esac
