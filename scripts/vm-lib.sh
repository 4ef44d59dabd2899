# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Bash helpers for the host scripts that boot the test guest (check.sh,
# check-demo.sh, check-dkms.sh, check-debug.sh, check-perf.sh, demo.sh,
# bench.sh); source it. Every guest boot goes through boot(), the one
# place that knows a clock regime's kernel command line, the timeouts,
# and when a boot is retried.
#
#   guest_kernel            KDIR -> KVER -> VMLINUZ, installing the image
#   boot REGIME OUT [...]   one guest run of scripts/vm.sh in REGIME
#
# Environment: GUEST_TIMEOUT (seconds per boot on top of what the payload
# says it runs for, default 900), BOOT_TIMEOUT (seconds for a guest to
# reach its payload, default 300).

vm_lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# The Debian kernel matching the headers the module is built against.
# Sets KDIR (default: the Makefile's pick; exported), KVER (its
# UTS_RELEASE: Debian's kernel.release holds the upstream version, the
# module's vermagic this) and VMLINUZ (/boot/vmlinuz-KVER), installing
# linux-image-KVER if it is missing (scripts/deps.sh). Fails, saying why
# on stderr, when there is no such kernel.
guest_kernel() {
	[ -n "${KDIR:-}" ] && [ -d "$KDIR" ] ||
		KDIR=$(make -s --no-print-directory -C "$vm_lib_dir/.." print-kdir)
	export KDIR
	KVER=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' \
		"$KDIR/include/generated/utsrelease.h" 2>/dev/null)
	VMLINUZ=/boot/vmlinuz-$KVER
	if [ -z "$KVER" ]; then
		echo "perfclock: no UTS_RELEASE in $KDIR/include/generated/utsrelease.h" >&2
		return 1
	fi
	[ -e "$VMLINUZ" ] || "$vm_lib_dir/deps.sh" "image:$KVER" >&2
}

# boot REGIME OUT [--runs-for SECONDS] [VM.SH OPTION...]
#
# Boots scripts/vm.sh once with the kernel command line of clock regime
# REGIME (stable: sched_clock stable, the TSC trusted; unstable: the
# kernel left to find the TSCs unsynchronized, as it does under TCG),
# its logs in OUT. --runs-for: how much longer than a test run the
# payload itself runs (a fuzzer, a demo); it is added to the timeout.
# stdout is the payload's output (TAP), stderr vm.sh's diagnostics; the
# status is vm.sh's (0 clean, 1 tests failed, 2 did not finish, 3 kernel
# problem).
#
# A guest that never reached its payload (no "perfclock-init: running
# the payload" on its console: the boot itself hung, before the module
# or any test ran) says nothing about perfclock: it is booted once more,
# saying so in a TAP comment. A guest that reached the payload is never
# booted again, whatever happened next.
boot() {
	local regime=$1 out=$2 runs_for=0 append try st
	shift 2
	if [ "${1:-}" = --runs-for ]; then
		runs_for=$2
		shift 2
	fi
	case $regime in
	stable)   append=tsc=reliable ;;
	unstable) append='' ;;
	*)        echo "boot: unknown clock regime '$regime' (stable or unstable)" >&2; return 64 ;;
	esac
	for try in 1 2; do
		st=0
		"$vm_lib_dir/vm.sh" --regime "$regime" ${append:+--append "$append"} --out "$out" \
			--timeout $(( ${GUEST_TIMEOUT:-900} + runs_for )) \
			--boot-timeout "${BOOT_TIMEOUT:-300}" "$@" || st=$?
		if [ "$st" -ne 2 ] || [ ! -f "$out/console.log" ] ||
		   grep -aqF 'perfclock-init: running the payload' "$out/console.log"; then
			break
		fi
		echo "# $regime guest ($out) never reached the payload (try $try of 2); console tail:"
		tr -cd '\11\12\40-\176' < "$out/console.log" | grep -v '^$' | tail -n 5 | sed 's/^/#   /'
		[ "$try" -eq 2 ] || echo "# booting it once more"
	done
	return "$st"
}
