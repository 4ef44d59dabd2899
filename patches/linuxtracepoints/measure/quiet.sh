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
# Prints one line per build: the collector's CPU ticks and perf-data-order's
# line (samples, rounds, inversions, lost). Needs root.
mode=$1; secs=$2; shift 2
bin=${BIN:-$(cd "$(dirname "$0")" && pwd)}
out=${OUT:-/tmp/quiet-runs}; mkdir -p "$out"
start() { # start BUILD [taskset prefix...]
	b=$1; shift; f=$out/$b.data; rm -f "$f"
	"$@" "$bin/perf-collect-$b" -o "$f" :syscalls:sys_enter_write :syscalls:sys_enter_read 2>"$f.err" &
	pid=$!
	w=0; while ! grep -q 'info: created' "$f.err" && [ $w -lt 200 ]; do sleep 0.05; w=$((w + 1)); done
}
finish() { # finish BUILD PID TICKS ITERATIONS
	kill -INT "$2"; wait "$2"
	echo "$1 mode=$mode $4 cpu_ticks=$3 $("$bin/perf-data-order" "$out/$1.data")" \
		"round_end=\"$(sed -n 's/.*info: rounds end at \(.*\)\.$/\1/p' "$out/$1.data.err" | head -n 1)\""
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
