#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/check.sh — what `make check` runs, and what .ci/run runs. Each
# section, with the file holding its tests (a failed TAP line names its
# section first: "lint: ...", "guest-stable: perfclock_page_test: ..."):
#   setup, build  scripts/deps.sh, then make module selftests and
#                 make -C user guest for the kernel in KDIR (default: the
#                 Makefile's pick)
#   lint          scripts/lint.sh, scripts/test-vm-lib.sh (when boot()
#                 boots a guest once more) and scripts/test-perf-order-check.sh
#                 (the checker of perf script's order that check-perf uses),
#                 scripts/lint-docs.sh (the docs name only functions that
#                 exist; README's example is examples/tracer.c and runs)
#   user          make -C user check: user/tests/check.sh
#   host          the liburcu stress testers on the host (here)
#   demo          scripts/check-demo.sh
#   guest-REGIME  selftests/run.sh in a QEMU guest booted from the Debian
#                 kernel matching the headers, once per clock regime
#                 (stable and unstable sched_clock); the test programs
#                 are selftests/*.c, user/tests/test_{module,ring_real}.c
#   overcommit-REGIME  selftests/run_overcommit.sh in an 8-vCPU guest
# Arguments pick sections (lint, user, stress, demo, guest); none means all.
# Every result becomes one TAP line, numbered here (scripts/tap-lib.sh);
# guests boot through boot() (scripts/vm-lib.sh). The run ends with
# "N passed, N failed, N skipped" and exits non-zero if anything failed,
# a guest did not finish, or a guest's console shows a kernel problem.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

sections=${*:-lint user stress demo guest}
want() { case " $sections " in *" $1 "*) return 0 ;; esac; return 1; }
. scripts/tap-lib.sh
. scripts/vm-lib.sh

echo "TAP version 13"
scripts/deps.sh build vm lint user >&2
result $? "setup: packages installed"

# The Makefile picked KDIR before the headers may have been installed.
guest_kernel
echo "# kernel: headers $KDIR, guest $VMLINUZ"

log=build/check
mkdir -p "$log"
{ make --no-print-directory KDIR="$KDIR" module selftests &&
	make --no-print-directory -C user guest; } > "$log/build.log" 2>&1
st=$?
[ $st -eq 0 ] || sed 's/^/# /' "$log/build.log" | tail -40
result $st "build: make module selftests, make -C user guest"
[ $st -eq 0 ] || finish

if want lint; then
	scripts/lint.sh > "$log/lint.tap" 2>&1
	collect lint "$log/lint.tap"
	scripts/test-vm-lib.sh > "$log/vm-lib.tap" 2>&1
	collect lint "$log/vm-lib.tap"
	scripts/test-perf-order-check.sh > "$log/perf-order-check.tap" 2>&1
	collect lint "$log/perf-order-check.tap"
	# The docs against the tree and examples/tracer.c (scripts/lint-docs.sh).
	{ scripts/lint-docs.sh --self-test; scripts/lint-docs.sh; } > "$log/lint-docs.tap" 2>&1
	collect lint "$log/lint-docs.tap"
fi

if want user; then
	make --no-print-directory -C user check > "$log/user.tap" 2>&1
	st=$?
	collect user "$log/user.tap"
	result $st "user: make -C user check exits 0"
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
fi

if want demo; then
	# demo_flush on the host (monotonic clock), its error cases, and
	# short runs in a guest per regime (scripts/check-demo.sh says how).
	scripts/check-demo.sh > "$log/demo.tap" 2>&1
	st=$?
	collect demo "$log/demo.tap"
	result $st "demo: scripts/check-demo.sh exits 0"
fi

want guest || finish
payload=build/guest/payload
rm -rf "$payload" && mkdir -p "$payload"
cp build/selftests/* user/build/guest/* module/perfclock.ko "$payload/"
for regime in stable unstable; do
	boot $regime "build/guest/$regime" --kernel "$VMLINUZ" --payload "$payload" \
		--modules-from "/lib/modules/$KVER" > "$log/guest-$regime.tap" 2> "$log/guest-$regime.err"
	st=$?
	before=$n
	collect "guest-$regime" "$log/guest-$regime.tap"
	[ $st -eq 0 ] || sed 's/^/# /' "$log/guest-$regime.err"
	guest_results "guest-$regime" $st $before
done

# The overcommitted guest: 8 vCPUs on this machine's 2 cores, where a
# vCPU stalls between stamping a record and committing it. The horizon
# test there must see the bare clock read deliver late records, and the
# horizon none.
over=build/guest/payload-overcommit
rm -rf "$over" && mkdir -p "$over"
cp build/selftests/perfclock_horizon_test build/selftests/perfclock_membarrier_test \
	build/selftests/perfclock_percpu_late_test module/perfclock.ko "$over/"
cp build/selftests/run_overcommit.sh "$over/run.sh"
for regime in stable unstable; do
	# Under this overcommit a boot can livelock before /init runs the
	# payload (seen: the kernel's tsc-early -> tsc switch, a stop_machine,
	# soft-locked for minutes, RCU kthread starved); boot() then boots it
	# once more, as it does every guest.
	boot $regime "build/guest/overcommit-$regime" --kernel "$VMLINUZ" --payload "$over" \
		--smp 8 > "$log/overcommit-$regime.tap" 2> "$log/overcommit-$regime.err"
	st=$?
	before=$n
	collect "overcommit-$regime" "$log/overcommit-$regime.tap"
	[ $st -eq 0 ] || sed 's/^/# /' "$log/overcommit-$regime.err"
	guest_results "overcommit-$regime" $st $before "" 8
done

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
cat > "$chatty/run.sh" <<'EOF'
#!/bin/sh
pid=$(pidof hold-patch-sites)
echo "# held ${pid:+$(ls -l /proc/$pid/fd | grep -c 'perf_event')}"
for i in 1 2 3 4 5 6 7 8; do echo "# tick $i"; sleep 5; done
EOF
chmod +x "$quiet/run.sh" "$chatty/run.sh"
t0=$(date +%s)
scripts/vm.sh --kernel "$VMLINUZ" --payload "$quiet" --out build/guest/silent --regime stable \
	--smp 2 --silence-timeout 15 > "$log/silent.out" 2>&1
st=$?
t=$(( $(date +%s) - t0 ))
grep -q 'silent for 15s after reaching its payload: stopped' "$log/silent.out" && [ $st -eq 2 ] && [ $t -lt 110 ]
result $? "guest: vm.sh --silence-timeout 15 stops a guest whose payload went quiet (status $st, ${t} s, the payload would sleep 120 s)"
FROZEN_SECONDS=15 guest_froze build/guest/silent
result $? "guest: boot() takes that guest for frozen (guest_froze)"
scripts/vm.sh --kernel "$VMLINUZ" --payload "$chatty" --out build/guest/chatty --regime stable \
	--smp 2 --silence-timeout 30 --hold-events "sched:sched_switch context-switches nosuch:event" \
	> "$log/chatty.out" 2>&1
st=$?
result $st "guest: vm.sh --silence-timeout 30 leaves alone a payload that writes every 5 s for 40 s (status $st)"
grep -q '^# held 2$' "$log/chatty.out"
result $? "guest: vm.sh --hold-events: the holder keeps a perf event open for each of the two events the kernel has ($(grep '^# held' "$log/chatty.out"))"
console=$(console_text build/guest/chatty/console.log)
grep -q '^hold-patch-sites: nosuch:event: No such file or directory$' <<<"$console" &&
	grep -q '^hold-patch-sites: holding 2 of 3$' <<<"$console"
result $? "guest: vm.sh --hold-events names the event the kernel lacks and says how many it holds"
out=$(scripts/vm.sh --kernel "$VMLINUZ" --payload "$chatty" --out build/guest/chatty --regime stable \
	--hold-events 'sched:sched_switch;reboot' 2>&1)
st=$?
[ $st -eq 64 ] && printf '%s\n' "$out" | grep -q 'not a list of event names'
result $? "guest: vm.sh --hold-events refuses what is not a list of event names (status $st)" "$out"

finish
