#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/check.sh — what `make check` runs, and what .ci/run runs. Each
# section, with the file holding its tests (a failed TAP line names its
# section first: "lint: ...", "guest-6.12-stable: perfclock_page_test: ..."):
#   setup, build  scripts/deps.sh (and the kernels of CHECK_KERNELS),
#                 make module selftests and make -C user guest for the
#                 first kernel, then for each kernel the module and the
#                 selftests' test module in a copy of their sources
#                 (build/kernels/KVER), with W=1 and sparse (C=2)
#   lint          scripts/lint.sh (the first kernel), the W=1 and sparse
#                 build of each kernel, scripts/test-vm-lib.sh (when
#                 boot() boots a guest once more),
#                 scripts/test-guest-lib.sh (a test program's failed exit
#                 is a failed result that names it) and
#                 tools/perf-data-strict/test.sh (a perf.data reader as
#                 strict as linux-perf-data),
#                 scripts/test-perf-order-check.sh (the checker of perf
#                 script's order that check-perf uses),
#                 scripts/test-check-perf-report.sh (what check-perf
#                 asserts of a perf record file's queue), scripts/lint-docs.sh
#                 (the docs name only functions that exist; README's examples
#                 are examples/tracer_threads.c and tracer.c and run),
#                 scripts/call-layers.sh (no circle of calls between the
#                 files of the library, the demo or the module fuzzer)
#   user          make -C user check: user/tests/check.sh
#   (lint, user, stress and demo run in the background beside the guests
#   when there are guests to boot; their results come after the guests')
#   stress        the liburcu stress testers on the host (here)
#   demo          scripts/check-demo.sh host errors
#   guest         on each kernel, in each clock regime (stable and unstable
#                 sched_clock): guest-KERNEL-REGIME, selftests/run.sh in a
#                 QEMU guest (4 vCPUs; the test programs are selftests/*.c,
#                 user/tests/test_{module,ring_real}.c; but for
#                 guest-long's one), and overcommit-KERNEL-REGIME,
#                 selftests/run_overcommit.sh in an 8-vCPU guest
#                 (both regimes); and on the newest kernel the
#                 sched_clock reset (selftests/run_reset.sh, one TCG
#                 thread): reset-plain-KERNEL, where the selftest guests'
#                 mark of the TSC as unstable runs, and reset-vmware-KERNEL,
#                 in a guest that looks like VMware
# What `make check` leaves out to stay under ten minutes on a new 2-core
# machine, `make check-kernels` runs (section long, in .ci/run):
#   fuzz-long     the ring reader under libFuzzer for FUZZ_LONG_SECONDS
#                 (180; make check's user section fuzzes it for 10 s)
#   guest-long    when there are two kernels or more, the first kernel's
#                 (6.1's) selftest guest in the unstable regime, the most
#                 expensive guest, and its two overcommit guests; the
#                 unstable regime and the overcommit guests run in make
#                 check on 6.12; reset-plain-KERNEL of every kernel
#                 but the newest; reset-fallback-KERNEL (the first
#                 kernel): the VMware-looking guest with kprobes disarmed
#                 before the reset
#   demo-guest    scripts/check-demo.sh guest: demo_flush in a guest per
#                 regime, on the first kernel
#   vm            scripts/vm.sh's own behaviour: --silence-timeout stops a
#                 quiet guest and leaves a chatty one alone, --hold-events
#                 holds what the kernel has (on the first kernel), a guest
#                 not in the clock regime asked for fails (on each kernel)
# Arguments pick sections (lint, user, stress, demo, guest, fuzz-long,
# guest-long, demo-guest, vm; long is the last four); none means lint user stress
# demo guest.
# KERNEL is a label (6.1, 6.12, 6.12-rt-amd64: kernel_label in
# scripts/vm-lib.sh). CHECK_KERNELS (the Makefile's, from KVER=/KDIR=)
# names the kernels: series (6.1, 6.12: the newest of each, cloud
# flavour, installed by scripts/deps.sh), releases or build trees;
# default: KDIR alone if set, else 6.1 and 6.12.
# Every result becomes one TAP line, numbered here (scripts/tap-lib.sh);
# guests boot through boot() (scripts/vm-lib.sh). A "# time:" line gives
# each section's seconds. The run ends with "N passed, N failed, N
# skipped" and exits non-zero if anything failed, a guest did not finish,
# or a guest's console shows a kernel problem.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

[ $# -gt 0 ] || set -- lint user stress demo guest
sections=
for section in "$@"; do
	case $section in
	long) sections+=" fuzz-long guest-long demo-guest vm" ;;
	*)    sections+=" $section" ;;
	esac
done
want() { case " $sections " in *" $1 "*) return 0 ;; esac; return 1; }
. scripts/tap-lib.sh
. scripts/vm-lib.sh

# "# time: SECTION N s", from the last mark to now.
mark=$(date +%s)
timed() {
	echo "# time: $1 $(( $(date +%s) - mark )) s"
	mark=$(date +%s)
}

log=build/check
mkdir -p "$log"
echo "TAP version 13"
scripts/deps.sh build vm lint user >&2
result $? "setup: packages installed"

# The kernels, each installed if named by series: KDIR, KVER and KLABEL
# of each (use_kernel); the first one's stay set, for check-demo.sh.
read -ra specs <<< "${CHECK_KERNELS:-${KDIR:-6.1 6.12}}"
kdirs=() kvers=() klabels=()
for spec in "${specs[@]}"; do
	KVER=
	use_kernel "$spec" 2> "$log/kernel.err"
	result $? "setup: kernel $spec: headers and image installed${KVER:+ ($KVER)}" "$(cat "$log/kernel.err")" ||
		finish
	kdirs+=("$KDIR") kvers+=("$KVER") klabels+=("$KLABEL")
done
export KDIR=${kdirs[0]}
KVER=${kvers[0]} VMLINUZ=/boot/vmlinuz-${kvers[0]}
echo "# kernels: ${kvers[*]} (the first one's headers: $KDIR)"
timed setup

{ make --no-print-directory -j"$(nproc)" KDIR="$KDIR" module selftests &&
	make --no-print-directory -j"$(nproc)" -C user guest; } > "$log/build.log" 2>&1
st=$?
[ $st -eq 0 ] || sed 's/^/# /' "$log/build.log" | tail -40
result $st "build: make module selftests (${kvers[0]}), make -C user guest"
[ $st -eq 0 ] || finish
# Each kernel's two modules in build/kernels/KVER, from a copy of their
# sources (kbuild writes its objects next to them, and the tree's own
# build/selftests/perfclock_mark_tsc_unstable.ko is not rebuilt for
# another KDIR), with W=1 and sparse, which lint reads.
for i in "${!kvers[@]}"; do
	k=${kvers[$i]} kb=build/kernels/${kvers[$i]}
	rm -rf "$kb" && mkdir -p "$kb/src/kmod"
	cp -r Makefile Kbuild VERSION module "$kb/src/"
	rm -f "$kb"/src/module/*.o "$kb"/src/module/*.ko "$kb"/src/module/*.mod* "$kb"/src/module/.*.cmd
	cp selftests/kmod/Kbuild selftests/kmod/*.c "$kb/src/kmod/"
	{ make -C "$kb/src" --no-print-directory module KDIR="${kdirs[$i]}" C=2 W=1 &&
		make -C "${kdirs[$i]}" --no-print-directory M="$PWD/$kb/src/kmod" C=2 W=1 modules &&
		cp "$kb/src/module/perfclock.ko" "$kb"/src/kmod/*.ko "$kb/"; } > "$kb/build.log" 2>&1
	st=$?
	[ $st -eq 0 ] || sed 's/^/# /' "$kb/build.log" | tail -40
	result $st "build: the module and the selftests' test module for $k"
	[ $st -eq 0 ] || finish
done
timed build

# The host's checks (lint, the library's tests, the stress testers on the
# host, demo_flush on the host): host_checks. They need no guest, and the
# guests leave a core idle for about a third of their time (vmstat in
# the selftest guests: 1-84 % idle), so with guests to boot they run in
# the background, one after the other, beside them, and their results
# are adopted (renumbered) after the guests'. Alone they run here. The
# library's tests build in user/build/host-check: the guests' payloads
# come from user/build.
host_checks() {
	if want lint; then
		scripts/lint.sh > "$log/lint.tap" 2>&1
		collect lint "$log/lint.tap"
		# Every kernel's: its build above ran W=1 and sparse.
		for i in "${!kvers[@]}"; do
			kb=build/kernels/${kvers[$i]}
			warnings=$(grep -E 'warning:|error:' "$kb/build.log")
			[ -z "$warnings" ] && grep -q 'CHECK.*perfclock.c' "$kb/build.log" &&
				grep -q 'CHECK.*perfclock_mark_tsc_unstable.c' "$kb/build.log"
			result $? "lint: module and selftests/kmod build clean with W=1 and sparse (C=2) on ${kvers[$i]}" "$warnings"
		done
		scripts/test-vm-lib.sh > "$log/vm-lib.tap" 2>&1
		collect lint "$log/vm-lib.tap"
		scripts/test-guest-lib.sh > "$log/guest-lib.tap" 2>&1
		collect lint "$log/guest-lib.tap"
		scripts/test-perf-order-check.sh > "$log/perf-order-check.tap" 2>&1
		collect lint "$log/perf-order-check.tap"
		scripts/test-check-perf-report.sh > "$log/check-perf-report.tap" 2>&1
		collect lint "$log/check-perf-report.tap"
		# The strict perf.data reader (an 8-byte FINISHED_ROUND, as
		# linux-perf-data insists) on crafted and recorded files.
		tools/perf-data-strict/test.sh > "$log/perf-data-strict.tap" 2>&1
		collect lint "$log/perf-data-strict.tap"
		# The docs against the tree and examples/*.c (scripts/lint-docs.sh).
		{ scripts/lint-docs.sh --self-test; scripts/lint-docs.sh; } > "$log/lint-docs.tap" 2>&1
		collect lint "$log/lint-docs.tap"
		# No file that calls back up into a file calling it (gcc's call graph
		# of the library, the demo and the module fuzzer; about 10 s).
		{ scripts/call-layers.sh --self-test; scripts/call-layers.sh; } > "$log/call-layers.tap" 2>&1
		collect lint "$log/call-layers.tap"
		timed lint
	fi

	if want user; then
		make --no-print-directory -C user check B=build/host-check > "$log/user.tap" 2>&1
		st=$?
		collect user "$log/user.tap"
		result $st "user: make -C user check exits 0"
		timed user
	fi

	if want stress; then
		# The liburcu torture on the host, with the clock_gettime backend.
		stress=build/selftests/perfclock_stress
		$stress --clock monotonic --seconds 3 > "$log/stress.tap" 2>&1
		st=$?
		collect host "$log/stress.tap"
		result $st "host: perfclock_stress --clock monotonic exits 0"
		# Caught: exit 1 (not 2, a usage or open error), from a clock check alone.
		$stress --clock monotonic --seconds 1 --inject-skew 1000000 > "$log/stress-inject.tap" 2>&1
		st=$?
		clock_check='^not ok .*(no read below a horizon handed out before it|global clock, no read below a value observed before it)'
		[ $st -eq 1 ] && grep -Eq "$clock_check" "$log/stress-inject.tap" &&
			! grep '^not ok' "$log/stress-inject.tap" | grep -Evq "$clock_check"
		result $? "host: perfclock_stress detects a CPU reading 1 ms behind on a global clock (exit $st, from a clock check alone)"
		build/selftests/perfclock_drain --clock monotonic --seconds 3 > "$log/drain.tap" 2>&1
		st=$?
		collect host "$log/drain.tap"
		result $st "host: perfclock_drain --clock monotonic exits 0"
		timed stress
	fi

	# demo_flush on the host (monotonic clock) and its error cases.
	if want demo; then
		scripts/check-demo.sh host errors > "$log/demo.tap" 2>&1
		st=$?
		collect demo "$log/demo.tap"
		result $st "demo: scripts/check-demo.sh host errors exits 0"
		timed demo
	fi
}
host_pid=
if want lint || want user || want stress || want demo; then
	if want guest || want guest-long; then
		host_checks > "$log/host.tap" 2>&1 &
		host_pid=$!
		echo "# the host's checks: in the background, beside the guests"
	else
		host_checks
	fi
fi

# demo_flush in a guest per regime, on the first kernel, whose module
# make module built in the tree (scripts/check-demo.sh says how): make
# check-kernels.
if want demo-guest; then
	scripts/check-demo.sh guest > "$log/demo-guest.tap" 2>&1
	st=$?
	collect demo "$log/demo-guest.tap"
	result $st "demo: scripts/check-demo.sh guest exits 0"
	timed demo-guest
fi

# The ring reader under libFuzzer for minutes (make check fuzzes it for
# FUZZ_SECONDS, 10 s).
if want fuzz-long; then
	secs=${FUZZ_LONG_SECONDS:-180}
	if make --no-print-directory -C user -j"$(nproc)" build/fuzz_ring > "$log/fuzz-long.log" 2>&1; then
		mkdir -p user/build/fuzz-corpus
		user/build/fuzz_ring -max_total_time="$secs" -rss_limit_mb=1024 \
			-print_final_stats=1 -artifact_prefix=user/build/ user/build/fuzz-corpus \
			>> "$log/fuzz-long.log" 2>&1
		st=$?
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log/fuzz-long.log")
		result $st "fuzz-long: the ring reader survives ${secs} s of libFuzzer+ASan+UBSan (${runs:-no} inputs)" \
			"$(tail -n 25 "$log/fuzz-long.log")"
	else
		skip_result "fuzz-long: the ring reader" "clang with libFuzzer not available ($(tail -n 1 "$log/fuzz-long.log"))"
	fi
	timed fuzz-long
fi

# The payload of kernel $1's selftest guests: the tests and its modules.
payload_for() {
	local p=build/guest/payload-$1
	rm -rf "$p" && mkdir -p "$p"
	cp build/selftests/* user/build/guest/* "$p/"
	cp "build/kernels/$1"/*.ko "$p/"
	echo "$p"
}

# Whether the selftest guest of kernel number $1 in regime $2 is
# guest-long's (make check-kernels) rather than guest's (make check).
long_guest() {
	[ "$1" -eq 0 ] && [ "$2" = unstable ] && [ ${#kvers[@]} -gt 1 ]
}

# Whether kernel number $1's overcommit guests are guest-long's: the
# first kernel's, when another one keeps the property in make check.
long_overcommit() {
	[ "$1" -eq 0 ] && [ ${#kvers[@]} -gt 1 ]
}

if want guest || want guest-long; then
	for i in "${!kvers[@]}"; do
		k=${kvers[$i]}
		payload=$(payload_for "$k")
		for regime in stable unstable; do
			if long_guest "$i" $regime; then
				want guest-long || continue
			else
				want guest || continue
			fi
			g=guest-${klabels[$i]}-$regime
			# make check's guests run the longest loads shorter (a
			# fork costs ~20 ms under TCG: test_ring_real's 1500 took
			# 48 s of a 130 s guest); guest-long's, in full.
			if long_guest "$i" $regime; then
				rm -f "$payload/run.env"
			else
				printf '%s\n' STRESS_SECONDS=2 DRAIN_SECONDS=2 RING_REAL_FORKS=400 \
					READER_LOAD_MS=300 > "$payload/run.env"
			fi
			boot $regime "build/guest/$g" --kernel "/boot/vmlinuz-$k" --payload "$payload" \
				--modules-from "/lib/modules/$k" > "$log/$g.tap" 2> "$log/$g.err"
			st=$?
			before=$n
			collect "$g" "$log/$g.tap"
			[ $st -eq 0 ] || sed 's/^/# /' "$log/$g.err"
			guest_results "$g" $st $before "$k"
			timed "$g"
		done
	done
fi

if want guest || want guest-long; then
	# The run-time sched_clock reset: payload run_reset.sh
	# (perfclock_generation_test alone, 16-65 s a boot; selftests/run_reset.sh
	# says what each guest shows), one mark of the TSC as unstable per boot:
	#  - plain: stock TCG, the TSC model and the page's fast path on. The
	#    selftest guests leave their mark to it (selftests/run.sh). The
	#    newest kernel's in guest, every other kernel's in guest-long;
	#  - vmware: QEMU made to look like VMware, a hypervisor detected yet
	#    sched_clock native (the module used to miss the reset). The
	#    newest kernel's, in guest;
	#  - fallback: the same with kprobes disarmed before the reset, where
	#    the module must refuse perf_clock() horizons rather than wait.
	#    The first kernel's, in guest-long.
	# One TCG thread for all vCPUs (vm.sh --tcg-threads): the reset
	# switches __sched_clock_stable, a static branch every CPU runs in
	# sched_clock_cpu(), and no held event can keep it switched; with a
	# thread per vCPU, 6.12's guests died of the stale int3
	# (docs/lessons.md) there, "Oops: int3" in sched_clock_cpu(), once in
	# the VMware guest and once in the selftest guest.
	vmware=(--cpu 'max,-hypervisor' --qemu-arg -machine --qemu-arg 'pc,vmport=on'
		--qemu-arg -smbios --qemu-arg 'type=1,serial=VMware-perfclock')
	newest=$(( ${#kvers[@]} - 1 ))
	resets=()
	want guest && resets+=("plain $newest" "vmware $newest")
	if want guest-long; then
		for i in "${!kvers[@]}"; do
			[ "$i" -eq "$newest" ] || resets+=("plain $i")
		done
		resets+=("fallback 0")
	fi
	for reset in "${resets[@]}"; do
		read -r mode i <<< "$reset"
		k=${kvers[$i]}
		p=build/guest/payload-reset-$k
		rm -rf "$p" && mkdir -p "$p"
		cp build/selftests/perfclock_generation_test "build/kernels/$k"/*.ko "$p/"
		cp build/selftests/run_reset.sh "$p/run.sh"
		extra=()
		[ "$mode" = plain ] || extra+=("${vmware[@]}")
		[ "$mode" = fallback ] && extra+=(--append perfclock_reset_fallback=1)
		g=reset-$mode-${klabels[$i]}
		boot stable "build/guest/$g" --kernel "/boot/vmlinuz-$k" --payload "$p" \
			--tcg-threads single "${extra[@]}" > "$log/$g.tap" 2> "$log/$g.err"
		st=$?
		before=$n
		collect "$g" "$log/$g.tap"
		[ $st -eq 0 ] || sed 's/^/# /' "$log/$g.err"
		# init's line, the test's 3, run_reset.sh's 3.
		guest_results "$g" $st $before "$k" 7
		timed "$g"
	done
fi

if want guest || want guest-long; then
	# The overcommitted guest: 8 vCPUs on this machine's 2 cores, where a
	# vCPU stalls between stamping a record and committing it. The
	# horizon test there must see the bare clock read deliver late
	# records, and the horizon none.
	for i in "${!kvers[@]}"; do
		if long_overcommit "$i"; then
			want guest-long || continue
		else
			want guest || continue
		fi
		k=${kvers[$i]}
		over=build/guest/payload-overcommit-$k
		rm -rf "$over" && mkdir -p "$over"
		cp build/selftests/perfclock_horizon_test build/selftests/perfclock_membarrier_test \
			build/selftests/perfclock_percpu_late_test "build/kernels/$k/perfclock.ko" "$over/"
		cp build/selftests/run_overcommit.sh "$over/run.sh"
		for regime in stable unstable; do
			# Under this overcommit a boot can livelock before /init runs
			# the payload (seen: the kernel's tsc-early -> tsc switch, a
			# stop_machine, soft-locked for minutes, RCU kthread starved);
			# boot() then boots it once more, as it does every guest.
			g=overcommit-${klabels[$i]}-$regime
			boot $regime "build/guest/$g" --kernel "/boot/vmlinuz-$k" --payload "$over" \
				--smp 8 > "$log/$g.tap" 2> "$log/$g.err"
			st=$?
			before=$n
			collect "$g" "$log/$g.tap"
			[ $st -eq 0 ] || sed 's/^/# /' "$log/$g.err"
			guest_results "$g" $st $before "$k" 8
			timed "$g"
		done
	done
fi

if [ -n "$host_pid" ]; then
	wait "$host_pid"
	timed "the wait for the host's checks"
	adopt "$log/host.tap"
fi

want vm || finish
# vm.sh's --silence-timeout, which boot() gives every plain test run so
# that a TCG guest frozen as a whole costs FROZEN_SECONDS, not the whole
# timeout: a payload that goes quiet after its first line is stopped,
# and boot()'s guest_froze() takes it for frozen; one that writes every
# 5 s for longer than the limit (30 s) is left alone.
quiet=build/guest/payload-silent chatty=build/guest/payload-chatty
mkdir -p "$quiet" "$chatty"
printf '#!/bin/sh\necho "# one line, then nothing"\nsleep 120\n' > "$quiet/run.sh"
# The chatty guest also checks vm.sh --hold-events: the holder is alive
# with one perf event open per event this kernel has.
# shellcheck disable=SC2016
printf '%s\n' '#!/bin/sh' 'pid=$(pidof hold-patch-sites)' \
	'echo "# held ${pid:+$(ls -l /proc/$pid/fd | grep -c perf_event)}"' \
	'for i in 1 2 3 4 5 6 7 8; do echo "# tick $i"; sleep 5; done' > "$chatty/run.sh"
chmod +x "$quiet/run.sh" "$chatty/run.sh"
# vm.sh takes the regime's kernel arguments from its caller (regime_append).
stable_append=$(regime_append stable)
t0=$(date +%s)
scripts/vm.sh --kernel "$VMLINUZ" --payload "$quiet" --out build/guest/silent --regime stable \
	--append "$stable_append" --smp 2 --silence-timeout 15 > "$log/silent.out" 2>&1
st=$?
t=$(( $(date +%s) - t0 ))
grep -q 'silent for 15s after reaching its payload: stopped' "$log/silent.out" && [ $st -eq 2 ] && [ $t -lt 110 ]
result $? "vm: vm.sh --silence-timeout 15 stops a guest whose payload went quiet (status $st, ${t} s, the payload would sleep 120 s)"
FROZEN_SECONDS=15 guest_froze build/guest/silent
result $? "vm: boot() takes that guest for frozen (guest_froze)"
scripts/vm.sh --kernel "$VMLINUZ" --payload "$chatty" --out build/guest/chatty --regime stable \
	--append "$stable_append" --smp 2 --silence-timeout 30 --hold-events "sched:sched_switch context-switches nosuch:event" \
	> "$log/chatty.out" 2>&1
st=$?
result $st "vm: vm.sh --silence-timeout 30 leaves alone a payload that writes every 5 s for 40 s (status $st)"
grep -q '^# held 2$' "$log/chatty.out"
result $? "vm: vm.sh --hold-events: the holder keeps a perf event open for each of the two events the kernel has ($(grep '^# held' "$log/chatty.out"))"
console=$(console_text build/guest/chatty/console.log)
grep -q '^hold-patch-sites: nosuch:event: No such file or directory$' <<<"$console" &&
	grep -q '^hold-patch-sites: holding 2 of 3$' <<<"$console"
result $? "vm: vm.sh --hold-events names the event the kernel lacks and says how many it holds"
out=$(scripts/vm.sh --kernel "$VMLINUZ" --payload "$chatty" --out build/guest/chatty --regime stable \
	--hold-events 'sched:sched_switch;reboot' 2>&1)
st=$?
[ $st -eq 64 ] && printf '%s\n' "$out" | grep -q 'not a list of event names'
result $? "vm: vm.sh --hold-events refuses what is not a list of event names (status $st)" "$out"
out=$(scripts/vm.sh --kernel "$VMLINUZ" --payload "$chatty" --out build/guest/chatty --regime stable \
	--tcg-threads one 2>&1)
st=$?
[ $st -eq 64 ] && printf '%s\n' "$out" | grep -q 'tcg-threads must be multi or single'
result $? "vm: vm.sh --tcg-threads refuses what is neither multi nor single (status $st)" "$out"
# The regime check of vm.sh's /init, on each kernel: a guest asked for
# the unstable regime and booted with the stable one's arguments is not
# in it.
wrong=build/guest/payload-wrong-regime
mkdir -p "$wrong"
printf '#!/bin/sh\necho "# payload ran"\n' > "$wrong/run.sh"
for i in "${!kvers[@]}"; do
	scripts/vm.sh --kernel "/boot/vmlinuz-${kvers[$i]}" --payload "$wrong" --out build/guest/wrong-regime \
		--regime unstable --append "$stable_append" --smp 2 > "$log/wrong-regime.out" 2>&1
	st=$?
	[ $st -eq 1 ] && grep -q '^not ok - init: the guest runs in the unstable regime (clocksource tsc' "$log/wrong-regime.out" &&
		grep -q 'not in the unstable regime its command line asks for' "$log/wrong-regime.out"
	result $? "vm-${klabels[$i]}: vm.sh fails a guest asked for the unstable regime and booted with $stable_append (status $st)" \
		"$(cat "$log/wrong-regime.out")"
done
timed vm

finish
