#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# scripts/guest/perf.sh — the guest payload of scripts/check-perf.sh,
# copied to /payload/run.sh. Runs stock and patched perf trace on the same
# load, one after the other, in this boot's clock regime
# ($PERFCLOCK_REGIME, settled by the guest's /init), and prints for each
# run one line that check-perf.sh parses:
#
#   PERFRUN scenario=S backend=B build=stock|patched rc=N <perf's line>
#
# where <perf's line> is what the patches print at exit ("Sorted events:
# N events, N out of order, N lost, output lag ...") and, for patched
# perf, its "Flushed at:" line follows as a PERFRULE line.
#
# /payload holds perf-stock and perf-patched (static builds of the same
# tarball, the first with the series' stock-semantics patches only),
# perfclock.ko, and perf.env (NOMOD_SCENARIOS, run before insmod,
# SCENARIOS, LOOPS, STALLS, RUN_TIMEOUT).
#
# On the host (check-perf.sh runs it there too) PERF_HOST=1 and the
# environment gives PERF_STOCK, PERF_PATCHED, PERF_DIR (scratch),
# SCENARIOS, LOOPS, STALLS, RUN_TIMEOUT and STALL_LOAD (the stall
# scenario's load command, instead of perf bench); no module is loaded.
#
# Scenarios (backend: device = --perfclock, events in perf's clock;
# mono = -k mono for both builds, libperfclock's clockid backend, the
# module loaded; mono-nomod = the same before the module is loaded
# (NOMOD_SCENARIOS in perf.env): libperfclock's membarrier horizon):
#   msg    perf bench sched messaging under perf trace -a --sort-events
#   stall  the same load in the background while perf trace is stopped
#          with SIGSTOP for 2 s, STALLS times
#   light  a light load that the reader keeps up with (a shell waking
#          every 10 ms for 3 s): for the output lag, not for disorder
if [ "${PERF_HOST:-0}" = 1 ]; then
	mkdir -p "$PERF_DIR" && cd "$PERF_DIR" || exit 1
	tmp=$PERF_DIR
	echo "# perf host: $(uname -r), $(nproc) CPUs"
else
	cd /payload || exit 1
	. ./perf.env
	PERF_STOCK=./perf-stock PERF_PATCHED=./perf-patched tmp=/tmp
	echo "# perf guest: $(uname -r), $(nproc) CPUs, regime $PERFCLOCK_REGIME"
fi

# run BUILD SCENARIO BACKEND: one perf trace session; its exit lines
# come back on stdout as PERFRUN/PERFRULE lines.
run() {
	build=$1 scenario=$2 backend=$3
	perf=$PERF_STOCK
	[ "$build" = patched ] && perf=$PERF_PATCHED
	opts="-a --sort-events -o /dev/null"
	case $backend in
	device) [ "$build" = patched ] && opts="$opts --perfclock" ;;
	mono|mono-nomod) opts="$opts -k mono" ;;
	esac
	err=$tmp/$build-$scenario-$backend.err
	case $scenario in
	msg)
		# perf trace forks the load and exits when it does.
		timeout "$RUN_TIMEOUT" $perf trace $opts -- \
			$perf bench sched messaging -g 1 -l "$LOOPS" >/dev/null 2>"$err"
		rc=$?
		;;
	light)
		timeout "$RUN_TIMEOUT" $perf trace $opts -- \
			sh -c 'i=0; while [ $i -lt 300 ]; do sleep 0.01; i=$((i + 1)); done' \
			>/dev/null 2>"$err"
		rc=$?
		;;
	stall)
		$perf trace $opts 2>"$err" &
		tpid=$!
		sleep 1
		if [ -n "${STALL_LOAD:-}" ]; then
			$STALL_LOAD >/dev/null 2>&1 &
		else
			$perf bench sched messaging -g 1 -l "$((LOOPS * 2))" >/dev/null 2>&1 &
		fi
		lpid=$!
		i=0
		while [ $i -lt "$STALLS" ]; do
			sleep 1
			kill -STOP $tpid
			sleep 2
			kill -CONT $tpid
			i=$((i + 1))
		done
		# Bounded: the load can't run past the guest's timeout.
		w=0
		while kill -0 $lpid 2>/dev/null && [ $w -lt "$RUN_TIMEOUT" ]; do
			sleep 1
			w=$((w + 1))
		done
		kill $lpid 2>/dev/null
		wait $lpid 2>/dev/null
		sleep 1
		kill -INT $tpid
		w=0
		while kill -0 $tpid 2>/dev/null && [ $w -lt 60 ]; do
			sleep 1
			w=$((w + 1))
		done
		kill -KILL $tpid 2>/dev/null
		wait $tpid
		rc=$?
		[ $rc -eq 130 ] && rc=0	# SIGINT is how it is told to stop
		;;
	esac
	line=$(grep '^Sorted events:' "$err" | tail -n 1)
	[ -n "$line" ] || { tail -n 5 "$err" | sed 's/^/# /'; line="Sorted events: none"; }
	echo "PERFRUN scenario=$scenario backend=$backend build=$build rc=$rc $line"
	rule=$(grep '^Flushed at:' "$err" | tail -n 1)
	[ -n "$rule" ] && echo "PERFRULE scenario=$scenario backend=$backend build=$build $rule"
	grep -v '^Sorted events:\|^Flushed at:\|^$' "$err" | head -n 5 | sed 's/^/# perf: /'
}

if [ "${PERF_HOST:-0}" != 1 ]; then
	# No module yet: -k mono's horizon is libperfclock's membarrier one
	# (backend mono-nomod), exact without the module.
	for s in ${NOMOD_SCENARIOS:-}; do
		for build in stock patched; do
			run $build "${s%:*}" "${s#*:}"
		done
	done
	if ! insmod ./perfclock.ko; then
		echo "not ok - insmod perfclock.ko"
		exit 1
	fi
	echo "ok - insmod perfclock.ko"
	dmesg | grep 'perfclock:' | tail -n 2 | sed 's/^/# /'
fi

for s in $SCENARIOS; do
	scenario=${s%:*} backend=${s#*:}
	for build in stock patched; do
		run $build "$scenario" "$backend"
	done
done
[ "${PERF_HOST:-0}" = 1 ] || rmmod perfclock
exit 0
