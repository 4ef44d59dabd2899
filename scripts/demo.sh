#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/demo.sh — what `make demo` (and the demo part of `make bench`)
# runs: the flush rules side by side on live perf rings (user/demo_flush),
# with the clock perf stamps its records with (/dev/perfclock), in named
# scenarios.
#
#   scripts/demo.sh [--scenarios LIST] [--duration SEC] [--load-per-cpu N]
#                   [--regimes LIST] [--out DIR] [--guest] [--timeout SEC]
#                   [-- DEMO_FLUSH_ARGS...]
#
# Scenarios (LIST is comma-separated, or "all"; default irq-mixed,quiet,
# the two where the thread's rules fail or stall):
#   busy        every CPU busy: N load threads per CPU passing tokens
#               across all CPUs (4 vCPUs)
#   half        half the CPUs idle: the load pinned to CPUs 0-1 of 4
#   sampling    busy, plus cpu-clock sampling at 1 kHz per CPU on a ring of
#               its own per CPU (timer-driven samples mixed with tracepoints)
#   bounded     busy, reading at most 25 records per ring per round (perf
#               kvm stat live), in the round loop; ours-gp and ahern (and
#               ours with --reader round) cap their flush at the oldest
#               record left unread; ours' threaded reader drains its rings
#   overcommit  busy with 8 vCPUs on this 2-core host
#   busy-exp    busy with the module's horizon_expedited=1 (the page's
#               horizon kept fresh by expedited grace periods)
#   irq-mixed   busy, each load thread renaming itself at every hop; the
#               rings carry sched_switch/sched_wakeup, the mmap/comm/task
#               side-band records (stamped with irqs on; perf record asks
#               for them) and cpu-clock samples at 1 kHz per CPU
#               (written from the hrtimer's hard irq) in the SAME per-CPU
#               ring: an irq that lands between a record's stamp and its
#               reservation publishes a later stamp first, and the ring is
#               out of stamp order. (Tracepoint samples cannot be that
#               record: these kernels write them with irqs off.)
#   quiet       the load on CPUs 0-1 of 4, tracing only write() and read()
#               entries (syscalls:sys_enter_write, sys_enter_read): the
#               rings of CPUs 2-3 hear only a ticker thread each, once
#               every 2 s, and the reader's own status writes
#   per-thread  one ring per load thread (16 threads on 4 CPUs), each
#               thread moving to the next CPU every 16 hops, tracing its
#               syscalls and scheduler events: one task's ring is written
#               from every CPU in turn, with whatever each CPU's clock says
# Every scenario reads the rings in reverse order and runs ours with the
# library's defaults (nothing to tune). --duration is per scenario
# (default 10 s), --load-per-cpu the load threads per CPU (default 16).
#
# Where it runs:
#   - the running kernel can load modules (/proc/modules exists, we are
#     root, its headers are installed): build the module for it, load it,
#     run the scenarios here (overcommit is skipped), unload it;
#   - otherwise (or with --guest): boot the test VM (boot() in
#     scripts/vm-lib.sh, QEMU TCG) once per scenario and clock regime
#     (stable and unstable sched_clock, or those --regimes names),
#     running scripts/guest/demo.sh;
#     demo_flush's status line is streamed out of the guest every 2 s. A
#     boot takes ~30 s on top of the scenario's duration; --timeout SEC
#     bounds each (default: 900 s more than the duration).
# The --json summaries are kept in DIR (default build/demo) as
# REGIME-SCENARIO.json; scripts/demo-report.sh prints the table and a
# verdict per regime from them (run at the end).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/vm-lib.sh

scenarios=irq-mixed,quiet duration=10 regimes=stable,unstable perload=16 out=build/demo force_guest=0
guest_timeout='' extra=()
while [ $# -gt 0 ]; do
	case "$1" in
	--scenarios)    scenarios=$2; shift 2 ;;
	--duration)     duration=$2; shift 2 ;;
	--regimes)      regimes=$2; shift 2 ;;
	--load-per-cpu) perload=$2; shift 2 ;;
	--out)          out=$2; shift 2 ;;
	--guest)        force_guest=1; shift ;;
	--timeout)      guest_timeout=$2; shift 2 ;;
	--)             shift; extra=("$@"); break ;;
	-h|--help)      sed -n '4,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*)              echo "demo.sh: unknown argument $1 (see --help)" >&2; exit 64 ;;
	esac
done
[ "$scenarios" = all ] && scenarios=busy,half,sampling,bounded,overcommit,busy-exp,irq-mixed,quiet,per-thread
case "$duration" in ''|*[!0-9]*) echo "demo.sh: --duration wants whole seconds" >&2; exit 64 ;; esac
case "$perload" in ''|*[!0-9]*) echo "demo.sh: --load-per-cpu wants a number" >&2; exit 64 ;; esac

# scenario NAME: "SMP EXPEDITED ARGS..." for the guest (load per CPU count).
scenario() {
	local l4=$((perload * 4)) sys_ev="-e raw_syscalls:sys_enter -e raw_syscalls:sys_exit"
	case "$1" in
	busy)       echo "4 0 --load $l4" ;;
	half)       echo "4 0 --load $((perload * 2)) --load-cpus 2" ;;
	sampling)   echo "4 0 --load $l4 --sample cpu-clock --sample-hz 1000" ;;
	bounded)    echo "4 0 --load $l4 --max-per-round 25" ;;
	overcommit) echo "8 0 --load $((perload * 8))" ;;
	busy-exp)   echo "4 1 --load $l4" ;;
	irq-mixed)  echo "4 0 --load $l4 --load-side-band comm --side-band -e sched:sched_switch -e sched:sched_wakeup --sample cpu-clock --sample-hz 1000 --sample-shared" ;;
	quiet)      echo "4 0 --load $((perload * 2)) --load-cpus 2 --tick-ms 2000 -e syscalls:sys_enter_write -e syscalls:sys_enter_read" ;;
	per-thread) echo "4 0 --load 16 --per-thread --migrate-every 16 $sys_ev -e sched:sched_switch -e sched:sched_wakeup" ;;
	*)          echo "demo.sh: unknown scenario '$1' (see --help)" >&2; return 1 ;;
	esac
}
IFS=, read -r -a list <<< "$scenarios"
for s in "${list[@]}"; do scenario "$s" > /dev/null || exit 64; done
mkdir -p "$out"

build_demo() {
	make --no-print-directory -s -C user build/demo_flush >&2
}

can_load_here() {
	local kver
	kver=$(uname -r)
	[ "$force_guest" -eq 0 ] && [ -e /proc/modules ] && [ "$(id -u)" -eq 0 ] &&
		[ -d "/lib/modules/$kver/build" ] && command -v insmod >/dev/null
}

common=(--clock perfclock --duration "$duration" --reverse)

if can_load_here; then
	kver=$(uname -r)
	scripts/deps.sh demo >&2 || exit 1
	build_demo || exit 1
	make --no-print-directory -s KDIR="/lib/modules/$kver/build" module >&2 || exit 1
	loaded=0
	if [ ! -e /dev/perfclock ]; then
		if ! insmod module/perfclock.ko; then
			echo "demo.sh: insmod failed; running in the test VM instead" >&2
			force_guest=1
		else
			loaded=1
		fi
	fi
	if [ "$force_guest" -eq 0 ]; then
		rc=0 files=()
		for s in "${list[@]}"; do
			read -r smp exp args <<< "$(scenario "$s")"
			[ "$smp" -le "$(nproc)" ] || { echo "== $s: skipped here (needs $smp CPUs)"; continue; }
			echo "$exp" > /sys/module/perfclock/parameters/horizon_expedited 2>/dev/null
			echo "== scenario $s on this machine ($kver), ${duration}s: demo_flush $args"
			# shellcheck disable=SC2086
			user/build/demo_flush "${common[@]}" $args --label "host $s" \
				--json "$out/host-$s.json" "${extra[@]}" || rc=1
			files+=("$out/host-$s.json")
		done
		echo 0 > /sys/module/perfclock/parameters/horizon_expedited 2>/dev/null
		[ "$loaded" -eq 0 ] || rmmod perfclock || rc=1
		[ ${#files[@]} -eq 0 ] || { echo; scripts/demo-report.sh "${files[@]}"; }
		exit $rc
	fi
fi

# ---- in the test VM ----------------------------------------------------------
scripts/deps.sh demo vm >&2 || exit 1
guest_kernel || exit 1
build_demo || exit 1
make --no-print-directory -s KDIR="$KDIR" module >&2 || exit 1

# The guest's payload: scripts/guest/demo.sh, and the scenario it runs.
guest_payload() { # DIR SCENARIO
	local dir=$1 smp exp args
	rm -rf "$dir" && mkdir -p "$dir"
	cp user/build/demo_flush module/perfclock.ko "$dir/"
	cp scripts/guest/demo.sh "$dir/run.sh"
	read -r smp exp args <<< "$(scenario "$2")"
	echo "$2 $exp ${common[*]} $args ${extra[*]}" > "$dir/scenario"
}

status=0 files=()
IFS=, read -r -a regime_list <<< "$regimes"
for regime in "${regime_list[@]}"; do
	case $regime in stable|unstable) ;; *) echo "demo.sh: unknown regime '$regime' (stable, unstable)" >&2; exit 64 ;; esac
done
for regime in "${regime_list[@]}"; do
	for s in "${list[@]}"; do
		read -r smp _ <<< "$(scenario "$s")"
		tag=$regime-$s
		payload=build/guest/demo-$tag
		gout=build/guest/demo-run-$tag
		guest_payload "$payload" "$s"
		echo "== test VM, $regime sched_clock, $smp vCPUs: scenario $s (${duration}s, $perload load threads per CPU)"
		log=$out/guest-$tag.log
		mkdir -p "$gout" && rm -f "$gout/payload.log"
		boot $regime "$gout" --runs-for "$duration" --kernel "$VMLINUZ" --payload "$payload" \
			--smp "$smp" ${guest_timeout:+--timeout "$guest_timeout"} \
			> "$log" 2> "$out/guest-$tag.err" &
		vmpid=$!
		# The guest's output as it comes (vm.sh prints it only at the end).
		tail -n +1 -F --pid=$vmpid "$gout/payload.log" 2>/dev/null |
			sed -u 's/\r//g; /^DEMO-JSON /d; /^PERFCLOCK-GUEST-DONE rc=[0-9]*$/d; s/PERFCLOCK-GUEST-DONE rc=[0-9]*$//'
		wait $vmpid
		st=$?
		grep '^# ' "$log"	# boot()'s notes: a boot that had to be retried
		sed -n 's/^DEMO-JSON //p' "$log" > "$out/$tag.json"
		if [ $st -ne 0 ]; then
			echo "demo.sh: the $regime guest for $s failed (vm.sh status $st$([ -s "$out/$tag.json" ] && echo ', after its JSON was out')):" >&2
			grep -E 'soft lockup|rcu.*stall|did not finish|timeout' "$out/guest-$tag.err" | head -5 >&2
			status=1
		fi
		if grep -q '^}' "$out/$tag.json"; then
			files+=("$out/$tag.json")
		else
			echo "demo.sh: no JSON from scenario $s in the $regime guest" >&2
			status=1
		fi
	done
done
if [ ${#files[@]} -gt 0 ]; then
	echo
	echo "== summary (late events, and hold latency from timestamp to delivery; JSON in $out/)"
	scripts/demo-report.sh "${files[@]}"
fi
exit $status
