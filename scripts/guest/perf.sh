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
# Then perf record's runs (RECORD_SCENARIOS, below: PERFREC, PERFREAD,
# PERFOE and PERFNEW lines) and, with TOP=1, perf top's
# (./perf-top.sh, its PERFTOP lines).
#
# /payload holds perf-stock and perf-patched (static builds of the same
# tarball, the first with the series' stock-semantics patches only),
# perf-nolib (the whole series built without LIBPERFCLOCK=1: perf's own
# horizon, no library, no module),
# perfclock.ko, perf-order.awk, perf-top.sh if the series has it, and
# perf.env (NOMOD_SCENARIOS, run before insmod, SCENARIOS, LOOPS, STALLS,
# RUN_TIMEOUT, RECORD_SCENARIOS, NOLIB_RECORD, REC_LOOPS, REC_PATCHED_OPTS,
# TOP).
#
# On the host (check-perf.sh runs it there too) PERF_HOST=1 and the
# environment gives PERF_STOCK, PERF_PATCHED, PERF_NOLIB, PERF_DIR (scratch),
# SCENARIOS, LOOPS, STALLS, RUN_TIMEOUT and STALL_LOAD (the stall
# scenario's load command, instead of perf bench); no module is loaded.
#
# Scenarios (backend: device = --flush-horizon, events in perf's clock;
# mono = -k mono for both builds, patched with --flush-horizon too:
# libperfclock's clockid backend, the
# module loaded; mono-nomod = the same before the module is loaded
# (NOMOD_SCENARIOS in perf.env): libperfclock's membarrier horizon;
# mono-nolib = mono with perf-nolib as the patched build: perf's own
# membarrier horizon):
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
	PERF_STOCK=./perf-stock PERF_PATCHED=./perf-patched PERF_NOLIB=./perf-nolib tmp=/tmp
	echo "# perf guest: $(uname -r), $(nproc) CPUs, regime $PERFCLOCK_REGIME"
fi

# run BUILD SCENARIO BACKEND: one perf trace session; its exit lines
# come back on stdout as PERFRUN/PERFRULE lines.
run() {
	build=$1 scenario=$2 backend=$3
	perf=$PERF_STOCK
	[ "$build" = patched ] && perf=$PERF_PATCHED
	[ "$build" = patched ] && [ "$backend" = mono-nolib ] && perf=$PERF_NOLIB
	# -v: the series prints its "Sorted events:" report only with it.
	opts="-v -a --sort-events -o /dev/null"
	case $backend in
	device) [ "$build" = patched ] && opts="$opts --flush-horizon" ;;
	# -k alone keeps --sort-events' rule: patched flushes at the -k
	# clock's horizon with --flush-horizon.
	mono|mono-nomod|mono-nolib) opts="$opts -k mono"
		[ "$build" = patched ] && opts="$opts --flush-horizon" ;;
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
		# The load starts once perf trace reads its rings (they are
		# mapped after its thread synthesis, which takes seconds in a
		# TCG guest: a load started after a fixed second could end
		# before the tracing began, and the run see ~100 events).
		w=0
		while ! grep -q 'perf_event' "/proc/$tpid/maps" 2>/dev/null && [ $w -lt 120 ] &&
			kill -0 $tpid 2>/dev/null; do
			sleep 0.5
			w=$((w + 1))
		done
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
	# Other lines (a warning, the horizon taken), less what -v adds on
	# every run.
	grep -v '^Sorted events:\|^Flushed at:\|^$' "$err" |
		grep -v '^Using CPUID\|^Problems creating module maps\|^couldn.t open /proc/\|^mmap size\|^maps__set_modules_path_dir\|^Problems setting modules path maps' |
		head -n 5 | sed 's/^/# perf: /'
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
	# check-perf copies perf-nolib only where that chain was built.
	if [ "$backend" = mono-nolib ] && [ ! -x "$PERF_NOLIB" ]; then
		echo "# perf: no $PERF_NOLIB: $s not run"
		continue
	fi
	for build in stock patched; do
		run $build "$scenario" "$backend"
	done
done

# ---- perf record and its readers ---------------------------------------------------
# rec SCENARIO BACKEND: stock perf record, then patched perf record with
# the horizon (device: --flush-horizon; mono: -k mono --flush-horizon, stock -k
# mono; nolib: perf-nolib record --flush-horizon, perf's own horizon of
# perf's clock, time_zero and membarrier), of the scheduler tracepoints
# and cpu-clock samples under the scenario's load; then each file read
# by both builds (perf script, perf report --stats, perf inject). Prints
#   PERFREC scenario=S backend=B file=F rc=N bytes=N seconds=X
#   PERFREAD scenario=S backend=B file=F reader=R rc=N lines=N below=N md5=M
#            ooo=N script_s=X stats_s=X stats_md5=M
#   PERFOE scenario=S backend=B file=F reader=R Ordered events: ...
#   PERFNEW scenario=S backend=B <a warning line>
#   PERFSTRICT scenario=S backend=B file=F rc=N <perf-data-strict's verdict>
# (F: the build that recorded the file, R: the build that read it;
# lines: perf script's output lines, below: those stamped below the line
# before, by scripts/guest/perf-order.awk; ooo: the reader's
# out-of-order count, perf script's "N out of order events recorded."
# warning; PERFOE: the reader's report line, from perf report --stats,
# or from perf script -v if that has none; PERFNEW: a line the stock
# reader wrote on stderr for the patched file and not for the stock one,
# digits aside: a new warning.)
REC_EVENTS="-e sched:sched_switch -e sched:sched_wakeup -e cpu-clock"
now() { cut -d' ' -f1 /proc/uptime; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
bytes() { wc -c < "$1" 2>/dev/null || echo 0; }
# The "N out of order events recorded." warning's N (0 without one).
warned_ooo() {
	n=$(sed -n 's/ out of order events recorded.*//p' "$@" | awk '{ print $NF }' | tail -n 1)
	echo "${n:-0}"
}
# perf bench sched messaging -l of perf record's runs (check-perf.sh sets
# it), and its -g.
REC_LOOPS=${REC_LOOPS:-150}
REC_GROUPS=${REC_GROUPS:-1}
rec() {
	scenario=$1 backend=$2
	tag="scenario=$scenario backend=$backend"
	case $scenario in
	msg)	set -- "$PERF_STOCK" bench sched messaging -g "$REC_GROUPS" -l "$REC_LOOPS" ;;
	# Short passes: a shell waking every 10 ms for 2 s.
	light)	set -- sh -c 'i=0; while [ $i -lt 200 ]; do sleep 0.01; i=$((i + 1)); done' ;;
	*)	echo "# unknown record scenario $scenario"; return ;;
	esac
	for file in stock patched; do
		perf=$PERF_STOCK opts="-a"
		[ "$backend" = mono ] && opts="$opts -k mono"
		[ "$file" = patched ] && perf=$PERF_PATCHED opts="$opts ${REC_PATCHED_OPTS---flush-horizon}"
		[ "$file" = patched ] && [ "$backend" = nolib ] && perf=$PERF_NOLIB
		data=$tmp/rec-$scenario-$backend-$file.data
		t0=$(now)
		# -B -N: no build-id pass at the end (it reads the whole file
		# again, seconds under TCG, and changes nothing in the order).
		# shellcheck disable=SC2086
		timeout "$RUN_TIMEOUT" $perf record -B -N $opts $REC_EVENTS -o "$data" -- \
			"$@" >/dev/null 2>"$data.err"
		rc=$?
		echo "PERFREC $tag file=$file rc=$rc bytes=$(bytes "$data") seconds=$(secs "$t0" "$(now)")"
		[ $rc -eq 0 ] || tail -n 5 "$data.err" | sed 's/^/# perf record: /'
		# The strictest third-party reader's rules
		# (tools/perf-data-strict: an 8-byte FINISHED_ROUND, as
		# linux-perf-data insists), where the payload has it.
		if [ -x ./perf-data-strict ] && [ -s "$data" ]; then
			./perf-data-strict -q "$data" > "$data.strict" 2>&1
			rc=$?
			echo "PERFSTRICT $tag file=$file rc=$rc $(tail -n 1 "$data.strict")"
			rm -f "$data.strict"
		fi
	done
	for file in stock patched; do
		data=$tmp/rec-$scenario-$backend-$file.data
		[ -s "$data" ] || continue	# not recorded: said above
		for reader in stock patched; do
			perf=$PERF_STOCK
			[ "$reader" = patched ] && perf=$PERF_PATCHED
			out=$tmp/read-$scenario-$backend-$file-$reader
			t0=$(now)
			$perf script --ns -i "$data" > "$out.script" 2> "$out.script.err"
			rc=$?
			t1=$(now)
			$perf report --stats -i "$data" > "$out.stats" 2> "$out.stats.err"
			[ $? -eq 0 ] || rc=$((rc + 100))
			t2=$(now)
			$perf inject -i "$data" -o "$out.inject" > /dev/null 2> "$out.inject.err"
			[ $? -eq 0 ] || rc=$((rc + 1000))
			rm -f "$out.inject"
			oe=$(grep -h '^Ordered events:' "$out.stats.err" | tail -n 1)
			if [ -z "$oe" ]; then
				$perf script -v -i "$data" > /dev/null 2> "$out.v.err"
				oe=$(grep -h '^Ordered events:' "$out.v.err" | tail -n 1)
				rm -f "$out.v.err"
			fi
			set -- $(awk -f ./perf-order.awk "$out.script")
			# scripts/perf-order-check.sh's count, where it is here and
			# reads busybox awk's numbers right (order_check: unusable).
			oc=-
			if [ "$order_check" = ok ]; then
				oc=$(sh ./perf-order-check.sh "$out.script" 2>/dev/null |
					sed -n 's/.* timestamps, \([0-9]*\) out of order.*/\1/p')
			fi
			echo "PERFREAD $tag file=$file reader=$reader rc=$rc lines=$1 below=$2 order_check=${oc:-?}" \
				"md5=$(md5sum < "$out.script" | cut -c1-32) ooo=$(warned_ooo "$out.script.err")" \
				"script_s=$(secs "$t0" "$t1") stats_s=$(secs "$t1" "$t2")" \
				"stats_md5=$(md5sum < "$out.stats" | cut -c1-32)"
			[ -n "$oe" ] && echo "PERFOE $tag file=$file reader=$reader $oe"
			[ $rc -eq 0 ] || cat "$out.script.err" "$out.stats.err" | head -n 5 | sed 's/^/# perf: /'
			rm -f "$out.script"
		done
	done
	# A patched file read by stock perf: no warning that the stock file
	# does not give too (digits aside).
	base=$tmp/read-$scenario-$backend
	for what in script stats inject; do
		[ -f "$base-patched-stock.$what.err" ] || continue
		sed 's/[0-9][0-9]*/N/g' "$base-stock-stock.$what.err" | sort -u > "$base.known"
		sed 's/[0-9][0-9]*/N/g' "$base-patched-stock.$what.err" | sort -u | grep -v '^$' |
			grep -vxFf "$base.known" | sed "s/^/PERFNEW $tag $what: /"
	done
	rm -f "$tmp"/rec-"$scenario"-"$backend"-*.data "$base"*
}
if [ -n "${RECORD_SCENARIOS:-}" ]; then
	echo "# perf record runs: $RECORD_SCENARIOS (messaging -g $REC_GROUPS -l $REC_LOOPS), $(free -m | awk 'NR == 2 { print $2 }') MB"
	# The independent order checker (scripts/perf-order-check.sh), if
	# the payload has it: first on two lines in order whose fractions
	# busybox awk would read as octal (012345700) or not (012345679).
	order_check=none
	if [ -f ./perf-order-check.sh ]; then
		order_check=unusable
		printf 'a 1 [000] 1.012345679: x\na 1 [000] 1.012345700: x\n' > "$tmp/order-test"
		sh ./perf-order-check.sh "$tmp/order-test" >/dev/null 2>&1 && order_check=ok
		echo "# scripts/perf-order-check.sh: $order_check (two lines in order: $(sh ./perf-order-check.sh "$tmp/order-test" 2>/dev/null))"
	fi
fi
for s in ${RECORD_SCENARIOS:-}; do
	rec "${s%:*}" "${s#*:}"
done
# perf built without libperfclock (perf-nolib): perf's own horizon of
# perf's clock needs perf's time_zero page, which the kernel offers with
# a stable sched_clock only. Stable: NOLIB_RECORD's runs, as above,
# and one --threads recording (per-CPU horizons).
# Unstable: perf-nolib record --flush-horizon must say there is no horizon,
# and record all the same (PERFNOLIB line).
if [ "${PERF_HOST:-0}" != 1 ] && [ -x "$PERF_NOLIB" ]; then
	if [ "$PERFCLOCK_REGIME" = stable ]; then
		for s in ${NOLIB_RECORD:-}; do
			rec "${s%:*}" "${s#*:}"
		done
		# --threads: each thread takes its CPU's horizon, perf's clock
		# read, then getcpu (PERFNOLIBTHREADS: the index's summary
		# line and the directory reader's -v line).
		if [ -n "${NOLIB_RECORD:-}" ]; then
			d=$tmp/nolib-threads
			rm -rf "$d"
			$PERF_NOLIB record -B -N --flush-horizon --threads -a -e cpu-clock \
				-e sched:sched_switch -o "$d" -- \
				"$PERF_STOCK" bench sched messaging -g 1 -l 20 > /dev/null 2> "$d.err"
			rc=$?
			hdr=$($PERF_PATCHED report --header-only -i "$d" 2>/dev/null | grep -m 1 '^# flush horizons')
			oe=$($PERF_PATCHED script -v -i "$d" 2>&1 > /dev/null | grep -m 1 '^Ordered events')
			echo "PERFNOLIBTHREADS rc=$rc ${hdr#\# }; $oe"
			rm -rf "$d" "$d.err"
		fi
	else
		$PERF_NOLIB record -B -N --flush-horizon -a -e cpu-clock -o "$tmp/nolib.data" -- sleep 0.2 \
			> /dev/null 2> "$tmp/nolib.err"
		echo "PERFNOLIB regime=$PERFCLOCK_REGIME rc=$? bytes=$(bytes "$tmp/nolib.data") $(grep -m 1 'flush horizon' "$tmp/nolib.err")"
		rm -f "$tmp/nolib.data" "$tmp/nolib.err"
	fi
fi

# ---- perf top (scripts/guest/perf-top.sh) ----------------------------------------
if [ -f ./perf-top.sh ] && [ "${TOP:-0}" = 1 ]; then
	PERF_STOCK=$PERF_STOCK PERF_PATCHED=$PERF_PATCHED sh ./perf-top.sh
fi
[ "${PERF_HOST:-0}" = 1 ] || rmmod perfclock
exit 0
