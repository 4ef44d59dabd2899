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
n=0 passed=0 failed=0 skipped=0

# Renumber TAP lines from a file into the run's plan. $1 prefixes every
# description; "# === NAME" lines name the program that follows, and
# "#  RUN NAME" lines name a kselftest whose skip line carries no name.
collect() {
	local prefix=$1 file=$2 program='' test='' line desc
	while IFS= read -r line; do
		case "$line" in
		"# === "*) program="${line#\# === }: "; echo "$line" ;;
		"#  RUN "*) test=$(echo "$line" | awk '{print $3}'); echo "$line" ;;
		"ok"*|"not ok"*)
			n=$((n + 1))
			desc=$(echo "$line" | sed -E 's/^(not )?ok( [0-9]+)?( -)? ?//')
			case "$desc" in "# SKIP"*|"#SKIP"*) desc="$test $desc" ;; esac
			case "$line" in
			"not ok"*) failed=$((failed + 1)); echo "not ok $n - $prefix: $program$desc" ;;
			*"# SKIP"*) skipped=$((skipped + 1)); echo "ok $n - $prefix: $program$desc" ;;
			*) passed=$((passed + 1)); echo "ok $n - $prefix: $program$desc" ;;
			esac
			;;
		"TAP version"*|[0-9]*..[0-9]*) ;;
		"#"*) echo "$line" ;;
		*) echo "# $line" ;;
		esac
	done < "$file"
}

result() {	# result PREFIX STATUS DESCRIPTION
	n=$((n + 1))
	if [ "$2" -eq 0 ]; then
		passed=$((passed + 1)); echo "ok $n - $1: $3"
	else
		failed=$((failed + 1)); echo "not ok $n - $1: $3"
	fi
}

finish() {
	echo "1..$n"
	echo "$passed passed, $failed failed, $skipped skipped"
	[ "$failed" -eq 0 ]
	exit
}

echo "TAP version 13"
scripts/deps.sh build vm lint user >&2
result setup $? "packages installed"

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
result build $st "make module selftests, make -C user guest"
[ $st -eq 0 ] || finish

if want lint; then
	scripts/lint.sh > "$log/lint.tap" 2>&1
	collect lint "$log/lint.tap"
fi

if want user; then
	make --no-print-directory -C user check > "$log/user.tap" 2>&1
	st=$?
	collect user "$log/user.tap"
	result user $st "make -C user check exits 0"
fi

if want stress; then
	# The liburcu torture on the host, with the clock_gettime backend.
	stress=build/selftests/perfclock_stress
	$stress --clock monotonic --seconds 3 > "$log/stress.tap" 2>&1
	st=$?
	collect host "$log/stress.tap"
	result host $st "perfclock_stress --clock monotonic exits 0"
	$stress --clock monotonic --seconds 1 --inject-skew 1000000 > "$log/stress-inject.tap" 2>&1
	result host $(($? == 0)) "perfclock_stress detects a CPU reading 1 ms beyond the bound behind"
	build/selftests/perfclock_drain --clock monotonic --seconds 3 > "$log/drain.tap" 2>&1
	st=$?
	collect host "$log/drain.tap"
	result host $st "perfclock_drain --clock monotonic exits 0"
fi

if want demo; then
	# demo_flush on the host (monotonic clock), its error cases, and
	# short runs in a guest per regime (scripts/check-demo.sh says how).
	scripts/check-demo.sh > "$log/demo.tap" 2>&1
	st=$?
	collect demo "$log/demo.tap"
	result demo $st "scripts/check-demo.sh exits 0"
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
	# vm.sh: 0 clean, 1 tests failed, 2 guest did not finish, 3 kernel problem.
	finished=1 clean=1
	case $st in 0|1|3) finished=0 ;; esac
	case $st in 0|1) clean=0 ;; esac
	[ $((n - before)) -ge 20 ] || finished=1
	result "guest-$regime" $finished "guest boots and runs every test to the end ($((n - before)) results)"
	result "guest-$regime" $clean "kernel console has no WARNING, BUG, Oops or lockdep report"
done

finish
