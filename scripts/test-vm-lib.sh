#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/test-vm-lib.sh — the host-side decisions of scripts/vm-lib.sh,
# as TAP lines for scripts/check.sh (section lint): when boot() may boot
# a guest once more after a soft lockup. The fixture is a real report
# (scripts/testdata/tcg-lockup-console.log: CI's stable demo guest, the
# module loaded, CPU 0 in text_poke_bp_batch() waiting for CPU 1); the
# variants are made from it here.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/tap-lib.sh
. scripts/vm-lib.sh

fixture=scripts/testdata/tcg-lockup-console.log
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# verdict WANT NAME FILE: WANT is "retry" or "fail".
verdict() {
	local got=fail
	tcg_patching_lockup "$3" && got=retry
	[ "$got" = "$1" ]
	result $? "vm-lib: $2: $1 (got $got)"
}

verdict retry "a text-patching lockup with 'Modules linked in: perfclock' and no perfclock frame" "$fixture"

sed 's/\[demo_flush:103\]/[perfclock_horiz:103]/; s/Comm: demo_flush/Comm: perfclock_horiz/' \
	"$fixture" > "$tmp/comm"
verdict retry "the same, the stuck task a perfclock test program" "$tmp/comm"

sed '0,/text_poke_bp+0x4b\/0x70/s//&\n[   52.653900]  perfclock_timer_fn+0x21\/0x90 [perfclock]/' \
	"$fixture" > "$tmp/frame"
grep -q 'perfclock_timer_fn' "$tmp/frame"
verdict fail "a perfclock frame in the stack" "$tmp/frame"

sed 's/RIP: 0010:smp_call_function_many_cond+0xf1\/0x330/RIP: 0010:perfclock_horizon_read+0x10\/0x80 [perfclock]/' \
	"$fixture" > "$tmp/rip"
verdict fail "the CPU stuck in perfclock (RIP)" "$tmp/rip"

grep -Ev 'text_poke|static_call' "$fixture" > "$tmp/other"
verdict fail "a soft lockup that is not text patching" "$tmp/other"

grep -v 'Kernel panic - not syncing' "$fixture" > "$tmp/nopanic"
verdict fail "no panic (the report cut short)" "$tmp/nopanic"

: > "$tmp/empty"
verdict fail "a clean console" "$tmp/empty"
