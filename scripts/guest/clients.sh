#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# scripts/guest/clients.sh — the runs of scripts/check-clients.sh, on the
# host and, copied to /payload/run.sh, in the test guest (busybox sh).
# For each load, every build of perf-collect (LinuxTracepoints; BUILDS,
# default "stock plain exact") writes its own perf.data file DURING THE
# SAME load: they are started together, in an order that rotates from
# load to load, and each opens its own events, so the kernel writes every
# occurrence into each one's buffers. Then every file is read by the
# stock readers and by this tree's checker, and one line per fact comes
# back on stdout for check-clients.sh to parse:
#
#   CLRUN load=L build=B rc=N cpu_ticks=N hz=N seconds=S hops=N round_end="..."
#   CLCHECK load=L build=B rc=N perf-data-order: samples=N ... lost=N ...
#   CLDECODE load=L build=B rc=N events=N inversions=N
#   CLPERF load=L build=B rc=N samples=N inversions=N rounds=N
#   CLSTATS load=L build=B rc=N samples=N lost=N
#   CLWARN load=L build=B reader=R <a line the reader printed on stderr>
#
# The inversion counts come from readers that differ in kind: this tree's
# perf-data-order (parses perf.data itself), perf-decode's output (its
# JSON, in the order it prints) and perf script's (Debian's perf, with its
# round markers): a sample stamped below the newest sample of an earlier
# round.
#
# In the guest /payload holds perf-collect-BUILD for each build,
# perf-decode (the stock build's), perf-data-order, clients-load, perf
# (Debian's linux-perf binary) with its libraries and loader in lib/, and
# clients.env (LOADS, SECONDS_PER_RUN, BUILDS). On the host CL_HOST=1 and
# the environment gives CL_DIR (scratch), CL_BIN (a directory holding the
# same programs), CL_PERF (the perf command), LOADS, SECONDS_PER_RUN and
# BUILDS.
#
# Loads (clients-load's shapes, and the tracepoints collected):
#   busy       sched_switch and sched_wakeup of a token ring across CPUs
#   switch     the same load, sched_switch alone (one event: stock perf
#              can read stock perf-collect's file, see check-clients.sh)
#   irq-mixed  busy, renaming threads, plus task_rename and two
#              irq-context tracepoints (softirq_entry, hrtimer_expire_entry)
#   quiet      the ring on CPU 0 (0-1 above 4 CPUs), a ticker every 2 s on
#              the others; sys_enter_write and sys_enter_read
if [ "${CL_HOST:-0}" = 1 ]; then
	mkdir -p "$CL_DIR" && cd "$CL_DIR" || exit 1
	echo "# clients host: $(uname -r), $(nproc) CPUs"
else
	cd /payload || exit 1
	# shellcheck disable=SC1091 # written by check-clients.sh
	. ./clients.env
	CL_DIR=/tmp CL_BIN=/payload
	CL_PERF="/payload/lib/ld.so --library-path /payload/lib /payload/perf"
	echo "# clients guest: $(uname -r), $(nproc) CPUs, regime $PERFCLOCK_REGIME"
fi
# perf wants a home for its config and debug cache; the guest has none.
export HOME="$CL_DIR"

events_for() {
	case $1 in
	busy)      echo ":sched:sched_switch :sched:sched_wakeup" ;;
	switch)    echo ":sched:sched_switch" ;;
	irq-mixed) echo ":sched:sched_switch :sched:sched_wakeup :task:task_rename :irq:softirq_entry :timer:hrtimer_expire_entry" ;;
	quiet)     echo ":syscalls:sys_enter_write :syscalls:sys_enter_read" ;;
	esac
}

shape_for() {
	case $1 in
	switch) echo busy ;;
	*)      echo "$1" ;;
	esac
}

# Round inversions in perf script's text: `perf script --ns -F time
# --show-round-events` prints a line per sample ("SEC.NSEC:") and one per
# PERF_RECORD_FINISHED_ROUND. Prints "SAMPLES INVERSIONS ROUNDS". The two
# halves of a stamp are compared as integers, leading zeros cut (busybox
# awk reads 0123 as octal).
# shellcheck disable=SC2016 # awk's own variables
round_awk='
function num(s) { sub(/^0+/, "", s); return s == "" ? 0 : s + 0 }
/PERF_RECORD_FINISHED_ROUND/ { rounds++; ps = ms; pns = mns; have = n > 0; next }
$1 ~ /^[0-9]+\.[0-9]+:$/ {
	t = substr($1, 1, length($1) - 1)
	dot = index(t, ".")
	s = num(substr(t, 1, dot - 1)); ns = num(substr(t, dot + 1))
	if (have && (s < ps || (s == ps && ns < pns)))
		inv++
	if (!n || s > ms || (s == ms && ns > mns)) { ms = s; mns = ns }
	n++
}
END { print n + 0, inv + 0, rounds + 0 }'

# Inversions in perf-decode's JSON: its "time" values ("yyyy-mm-ddThh:mm:ss.
# nnnnnnnnnZ", fixed width, so text order is time order) in output order,
# each against the newest before it. perf-decode sorts what it holds and
# prints it at each round marker, so only a round's samples below an earlier
# round's count. Prints "EVENTS INVERSIONS".
# shellcheck disable=SC2016 # awk's own variables
decode_awk='
{ t = $4; if (n && t < m) inv++; if (!n || t > m) m = t; n++ }
END { print n + 0, inv + 0 }'

# warn LOAD BUILD READER FILE: the reader's stderr, one CLWARN line each.
warn() {
	grep -v '^[[:space:]]*$' "$4" | head -n 20 | sed "s/^/CLWARN load=$1 build=$2 reader=$3 /"
}

BUILDS=${BUILDS:-stock plain exact}
nload=0
for load in $LOADS; do
	ev=$(events_for "$load")
	[ -n "$ev" ] || { echo "# unknown load $load"; continue; }
	# The start order rotates, so that no build is always first.
	order=$(echo $BUILDS | awk -v k=$nload '{ for (i = 0; i < NF; i++) printf "%s ", $((i + k) % NF + 1) }')
	nload=$((nload + 1))
	pids=""
	for build in $order; do
		f=$CL_DIR/$load-$build.data
		rm -f "$f"
		# shellcheck disable=SC2086 # the events are separate words
		"$CL_BIN/perf-collect-$build" -o "$f" $ev 2>"$f.collect" &
		pids="$pids $build:$!"
	done
	# Collecting once every file is created (the exact build takes its
	# first horizon before that: two grace periods).
	for bp in $pids; do
		f=$CL_DIR/$load-${bp%%:*}.data
		w=0
		while ! grep -q 'info: created' "$f.collect" && [ $w -lt 300 ] && kill -0 "${bp#*:}" 2>/dev/null; do
			sleep 0.1
			w=$((w + 1))
		done
	done
	"$CL_BIN/clients-load" "$(shape_for "$load")" "$SECONDS_PER_RUN" >"$CL_DIR/$load.load" 2>&1
	hops=$(sed -n 's/.* hops=\([0-9]*\).*/\1/p' "$CL_DIR/$load.load")
	for bp in $pids; do
		# The collector's CPU time so far (utime + stime, in ticks).
		eval "cpu_${bp%%:*}=\$(awk '{ print \$14 + \$15 }' /proc/${bp#*:}/stat 2>/dev/null)"
	done
	for bp in $pids; do
		kill -INT "${bp#*:}"
	done
	for bp in $pids; do
		build=${bp%%:*}
		f=$CL_DIR/$load-$build.data
		wait "${bp#*:}"
		rc=$?
		eval "cpu=\${cpu_$build:-0}"
		round_end=$(sed -n 's/.*info: rounds end at \(.*\)\.$/\1/p' "$f.collect" | head -n 1)
		echo "CLRUN load=$load build=$build rc=$rc cpu_ticks=$cpu hz=$(getconf CLK_TCK 2>/dev/null || echo 100) seconds=$SECONDS_PER_RUN hops=${hops:-0} round_end=\"${round_end:-none}\""
		grep -v "info: \|^[[:space:]]*$" "$f.collect" | head -n 5 | sed "s/^/# perf-collect-$build: /"
	done
	# Every file read by every reader.
	for build in $BUILDS; do
		f=$CL_DIR/$load-$build.data
		line=$("$CL_BIN/perf-data-order" "$f" 2>"$f.order.err")
		echo "CLCHECK load=$load build=$build rc=$? $line"
		warn "$load" $build perf-data-order "$f.order.err"
		"$CL_BIN/perf-decode" "$f" 2>"$f.decode.err" >"$f.json"
		rc=$?
		# shellcheck disable=SC2046 # two numbers, split on purpose
		set -- $(grep -o '"time": "[^"]*"' "$f.json" | awk -F'"' "$decode_awk")
		echo "CLDECODE load=$load build=$build rc=$rc events=$1 inversions=$2"
		warn "$load" $build perf-decode "$f.decode.err"
		rm -f "$f.json"
		$CL_PERF script -i "$f" --ns -F time --show-round-events >"$f.script" 2>"$f.script.err"
		rc=$?
		# shellcheck disable=SC2046 # three numbers, split on purpose
		set -- $(awk "$round_awk" "$f.script")
		echo "CLPERF load=$load build=$build rc=$rc samples=$1 inversions=$2 rounds=$3"
		warn "$load" $build perf-script "$f.script.err"
		rm -f "$f.script"
		$CL_PERF report -i "$f" --stats >"$f.stats" 2>"$f.stats.err"
		rc=$?
		# The first SAMPLE line is the aggregate; LOST events, if any.
		s=$(grep -m 1 ' SAMPLE events:' "$f.stats" | awk '{ print $3 }')
		l=$(grep -m 1 ' LOST events:' "$f.stats" | awk '{ print $3 }')
		echo "CLSTATS load=$load build=$build rc=$rc samples=${s:-0} lost_records=${l:-0}"
		warn "$load" $build perf-report "$f.stats.err"
	done
	rm -f "$CL_DIR/$load"-*.data
done
echo "CLDONE"
