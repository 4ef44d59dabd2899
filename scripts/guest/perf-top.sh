#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# scripts/guest/perf-top.sh — stock and patched perf top on the same load,
# one after the other, in the guest (busybox sh, no terminal) or on the
# host. For each run it prints one line:
#
#   PERFTOP scenario=S backend=B build=stock|patched rc=N <perf's line>
#
# where <perf's line> is what perf top -v prints at exit ("Sorted events:
# N events, N out of order, N lost, output lag behind newest: mean X ms,
# max X ms"; "Sorted events: none" if it printed none), and, when perf
# top flushed at a horizon, its "Flushed at:" line as
#
#   PERFTOPRULE scenario=S backend=B build=patched Flushed at: ...
#
# followed by up to 5 other lines of perf top's stderr as "# perf-top: ..."
# comments (the horizon it took, or why it took none).
#
# perf top runs with --stdio -a -d DELAY -v, its stdout (the refreshed
# table) to a file, its stdin a FIFO this script holds open and never
# writes: with stdin at EOF (/dev/null, the guest's stdin) perf top's
# display thread takes EOF for a key press and spins. It is stopped with
# SIGINT once its display thread has shown its first table (the thread
# sets the handler; before that, a background job's SIGINT is ignored).
#
# Backends: device = perf's clock, --flush-horizon for patched perf (the
# perfclock device, else perf's user page where the kernel offers
# time_zero, else no horizon: perf top says so and runs as stock);
# mono = --clockid mono for both builds, patched with --flush-horizon (it flushes at libperfclock's
# CLOCK_MONOTONIC horizon: the module's if it is loaded, else membarrier's);
# mono-nomod = the same label for runs made before the module is loaded.
#
# Scenarios: light (a shell waking every 10 ms for 3 s), msg (perf bench
# sched messaging -g 1 -l LOOPS), stall (perf bench sched messaging with
# 2*LOOPS, or STALL_LOAD, in the background while perf top is stopped with
# SIGSTOP for 2 s, STALLS times).
#
# Guest (default): run from /payload, which holds perf-stock and
# perf-patched (static builds of the same tarball: the series' stock-
# semantics patches only, and all of it) and, if PERFTOP_INSMOD=1,
# perfclock.ko; ./perf.env is sourced if present. Host: PERF_HOST=1, and
# PERF_STOCK, PERF_PATCHED, PERF_DIR (scratch) in the environment.
#
# Environment (each PERFTOP_X defaults to X, then to the value shown):
#   PERFTOP_SCENARIOS   scenario:backend list; guest "light:device
#                       msg:device msg:mono stall:device", host
#                       "light:mono msg:mono stall:mono"
#   PERFTOP_NOMOD_SCENARIOS  run before insmod when PERFTOP_INSMOD=1
#                       (default "msg:mono-nomod")
#   PERFTOP_INSMOD      guest: 1 = insmod ./perfclock.ko after the NOMOD
#                       scenarios and rmmod it at the end; 0 (default) =
#                       the caller handles the module
#   PERFTOP_LOOPS       messaging loops (LOOPS; guest 300, host 2000)
#   PERFTOP_STALLS      SIGSTOPs in stall (STALLS; 2)
#   PERFTOP_STALL_LOAD  stall's load command (STALL_LOAD; messaging)
#   PERFTOP_RUN_TIMEOUT seconds for a load (RUN_TIMEOUT; 150)
#   PERFTOP_DELAY       perf top -d (2, its default)
#   PERFTOP_FREQ        perf top -F (unset: perf top's default, 4000 Hz)
#   PERFTOP_READY_TIMEOUT seconds for perf top to show its first table
#                       (guest 180, host 60)
#   PERFTOP_BUILDS      "stock patched"
if [ "${PERF_HOST:-0}" = 1 ]; then
	mkdir -p "$PERF_DIR" && cd "$PERF_DIR" || exit 1
	tmp=$PERF_DIR
	where=host
	echo "# perf-top host: $(uname -r), $(nproc) CPUs"
else
	cd /payload || exit 1
	[ -f ./perf.env ] && . ./perf.env
	PERF_STOCK=${PERF_STOCK:-./perf-stock} PERF_PATCHED=${PERF_PATCHED:-./perf-patched}
	tmp=/tmp
	where=guest
	echo "# perf-top guest: $(uname -r), $(nproc) CPUs, regime ${PERFCLOCK_REGIME:-?}"
fi
if [ $where = host ]; then
	def_sc="light:mono msg:mono stall:mono" def_loops=2000 def_ready=60
else
	def_sc="light:device msg:device msg:mono stall:device" def_loops=300 def_ready=180
fi
SC=${PERFTOP_SCENARIOS:-$def_sc}
NOMOD_SC=${PERFTOP_NOMOD_SCENARIOS:-msg:mono-nomod}
LOOPS_=${PERFTOP_LOOPS:-${LOOPS:-$def_loops}}
STALLS_=${PERFTOP_STALLS:-${STALLS:-2}}
STALL_LOAD_=${PERFTOP_STALL_LOAD:-${STALL_LOAD:-}}
TIMEOUT_=${PERFTOP_RUN_TIMEOUT:-${RUN_TIMEOUT:-150}}
DELAY=${PERFTOP_DELAY:-2}
FREQ=${PERFTOP_FREQ:-}
READY=${PERFTOP_READY_TIMEOUT:-$def_ready}
BUILDS=${PERFTOP_BUILDS:-stock patched}

# wait_gone PID SECONDS: true once PID has exited (polled every 0.5 s).
wait_gone() {
	n=0
	while kill -0 "$1" 2>/dev/null; do
		[ $n -ge $(($2 * 2)) ] && return 1
		sleep 0.5
		n=$((n + 1))
	done
	return 0
}

# tables FILE: perf top's stdout, printable text only (it clears the
# screen with escape sequences; GNU grep may take the file for binary).
tables() {
	[ -f "$1" ] && tr -cd '\11\12\40-\176' <"$1"
}

# run BUILD SCENARIO BACKEND: one perf top session under one load.
run() {
	build=$1 scenario=$2 backend=$3
	perf=$PERF_STOCK
	[ "$build" = patched ] && perf=$PERF_PATCHED
	opts="--stdio -a -d $DELAY -v${FREQ:+ -F $FREQ}"
	case $backend in
	device) [ "$build" = patched ] && opts="$opts --flush-horizon" ;;
	# --clockid alone changes no delivery: patched flushes at its
	# horizon with --flush-horizon.
	mono|mono-nomod) opts="$opts --clockid mono"
		[ "$build" = patched ] && opts="$opts --flush-horizon" ;;
	esac
	base=$tmp/top-$build-$scenario-$backend
	rm -f "$base.in" "$base.out" "$base.err"
	mkfifo "$base.in" || { echo "# perf-top: mkfifo failed"; return; }
	t_start=$(date +%s)
	# shellcheck disable=SC2086
	"$perf" top $opts <"$base.in" >"$base.out" 2>"$base.err" &
	tpid=$!
	exec 3>"$base.in"	# perf's open of its stdin returns now
	n=0
	while ! tables "$base.out" | grep -q 'PerfTop:'; do
		kill -0 $tpid 2>/dev/null || break
		[ $n -ge $((READY * 10)) ] && break
		sleep 0.1
		n=$((n + 1))
	done
	ready=$((n / 10))
	if ! tables "$base.out" | grep -q 'PerfTop:'; then
		echo "# perf-top: $build $scenario $backend: no table after ${ready} s"
	else
		sleep 1
		case $scenario in
		light)
			sh -c 'i=0; while [ $i -lt 300 ]; do sleep 0.01; i=$((i + 1)); done'
			;;
		msg)
			timeout "$TIMEOUT_" "$perf" bench sched messaging -g 1 -l "$LOOPS_" >/dev/null 2>&1
			;;
		stall)
			if [ -n "$STALL_LOAD_" ]; then
				# shellcheck disable=SC2086
				$STALL_LOAD_ >/dev/null 2>&1 &
			else
				"$perf" bench sched messaging -g 1 -l "$((LOOPS_ * 2))" >/dev/null 2>&1 &
			fi
			lpid=$!
			i=0
			while [ $i -lt "$STALLS_" ]; do
				sleep 1
				kill -STOP $tpid
				sleep 2
				kill -CONT $tpid
				i=$((i + 1))
			done
			wait_gone $lpid "$TIMEOUT_" || kill $lpid 2>/dev/null
			wait $lpid 2>/dev/null
			;;
		esac
		sleep 1
	fi
	# perf top's CPU time (user + system, clock ticks at 100 Hz) so far.
	cpu=$(awk '{ printf "%.1f", ($14 + $15) / 100 }' /proc/$tpid/stat 2>/dev/null)
	t_int=$(date +%s)
	kill -INT $tpid 2>/dev/null
	wait_gone $tpid 60 || { echo "# perf-top: $build $scenario $backend: no exit 60 s after SIGINT"; kill -KILL $tpid 2>/dev/null; }
	wait $tpid
	rc=$?
	t_end=$(date +%s)
	t_exit=$((t_end - t_int))
	exec 3>&-
	rm -f "$base.in"
	line=$(grep '^Sorted events:' "$base.err" | tail -n 1)
	[ -n "$line" ] || line="Sorted events: none"
	echo "PERFTOP scenario=$scenario backend=$backend build=$build rc=$rc $line"
	rule=$(grep '^Flushed at:' "$base.err" | tail -n 1)
	[ -n "$rule" ] && echo "PERFTOPRULE scenario=$scenario backend=$backend build=$build $rule"
	grep -i 'horizon\|perfclock\|time_zero' "$base.err" | grep -v '^Sorted events:\|^Flushed at:' |
		head -n 5 | sed 's/^/# perf-top: /'
	# The last table's header: "lost: N/TOTAL drop: N/TOTAL" (samples
	# dropped for being more than DELAY behind, perf top's own count).
	hdr=$(tables "$base.out" | grep 'PerfTop:' | tail -n 1 | sed -n 's/.*\(lost: [0-9/]* drop: [0-9/]*\).*/\1/p')
	echo "# perf-top: $build $scenario $backend: perf top $opts, table after ${ready} s, $(tables "$base.out" | grep -c 'PerfTop:') tables, ${cpu:-?} s CPU, exit ${t_exit} s after SIGINT, $((t_end - t_start)) s in all, last ${hdr:-none}"
}

scenarios() {
	for s in $1; do
		for build in $BUILDS; do
			run "$build" "${s%:*}" "${s#*:}"
		done
	done
}

if [ $where = guest ] && [ "${PERFTOP_INSMOD:-0}" = 1 ]; then
	scenarios "$NOMOD_SC"
	if ! insmod ./perfclock.ko; then
		echo "not ok - insmod perfclock.ko"
		exit 1
	fi
	echo "ok - insmod perfclock.ko"
fi
scenarios "$SC"
if [ $where = guest ] && [ "${PERFTOP_INSMOD:-0}" = 1 ]; then
	rmmod perfclock
fi
exit 0
