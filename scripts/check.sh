#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/check.sh — what `make check` runs, and what .ci/run runs:
#   1. installs what is missing (scripts/deps.sh),
#   2. builds everything for the kernel in KDIR (default: the Makefile's pick),
#   3. lint (scripts/lint.sh),
#   4. the library's host tests (make -C user check),
#   5. the selftests in a QEMU guest booted from the Debian kernel that
#      matches the headers, twice: with tsc=reliable (stable sched_clock)
#      and without (unstable sched_clock).
# Arguments pick sections (lint, user, stress, demo, guest); none means all.
# Every result becomes one TAP line, numbered here; the run ends with
# "N passed, N failed, N skipped" and exits non-zero if anything failed,
# a guest did not finish, or a guest's console shows a kernel problem.
set -uo pipefail
cd "$(dirname "$0")/.."

GUEST_TIMEOUT=${GUEST_TIMEOUT:-300}
sections=${*:-lint user stress demo guest}
want() { case " $sections " in *" $1 "*) return 0 ;; esac; return 1; }
. scripts/tap-lib.sh

echo "TAP version 13"
scripts/deps.sh build vm lint user >&2
result $? "setup: packages installed"

# The Makefile picked KDIR before the headers may have been installed.
[ -n "${KDIR:-}" ] && [ -d "$KDIR" ] || KDIR=$(make -s --no-print-directory print-kdir)
export KDIR
# The release modules built there are for (Debian's kernel.release holds
# the upstream version; the module's vermagic uses UTS_RELEASE).
kver=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' "$KDIR/include/generated/utsrelease.h" 2>/dev/null)
vmlinuz=/boot/vmlinuz-$kver
if [ -n "$kver" ] && [ ! -e "$vmlinuz" ]; then
	echo "perfclock: installing linux-image-$kver (the guest kernel matching $KDIR)" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		"linux-image-$kver" </dev/null >&2
fi
echo "# kernel: headers $KDIR, guest $vmlinuz"

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
	append=''
	[ $regime = stable ] && append='tsc=reliable'
	scripts/vm.sh --kernel "$vmlinuz" --payload "$payload" --out "build/guest/$regime" \
		--append "$append" --timeout "$GUEST_TIMEOUT" \
		--modules-from "/lib/modules/$kver" > "$log/guest-$regime.tap" 2> "$log/guest-$regime.err"
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
cp build/selftests/perfclock_horizon_test module/perfclock.ko "$over/"
cp build/selftests/run_overcommit.sh "$over/run.sh"
for regime in stable unstable; do
	append=''
	[ $regime = stable ] && append='tsc=reliable'
	# Under this overcommit a boot can livelock before /init runs the
	# payload (seen: the kernel's tsc-early -> tsc switch, a stop_machine,
	# soft-locked for minutes, RCU kthread starved). That says nothing
	# about the module, which is not loaded yet: boot once more, saying
	# so. A guest that reached the payload is never booted again.
	for try in 1 2; do
		scripts/vm.sh --kernel "$vmlinuz" --payload "$over" --out "build/guest/overcommit-$regime" \
			--append "$append" --smp 8 --timeout 240 \
			> "$log/overcommit-$regime.tap" 2> "$log/overcommit-$regime.err"
		st=$?
		[ $st -eq 2 ] && ! grep -q '^# regime:' "$log/overcommit-$regime.tap" || break
		echo "# overcommit-$regime: the guest never reached the payload (try $try); console tail:"
		grep 'console:' "$log/overcommit-$regime.err" | tail -5 | sed 's/^/#   /'
	done
	before=$n
	collect "overcommit-$regime" "$log/overcommit-$regime.tap"
	[ $st -eq 0 ] || sed 's/^/# /' "$log/overcommit-$regime.err"
	guest_results "overcommit-$regime" $st $before "" 8
done

finish
