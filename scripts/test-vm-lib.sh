#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/test-vm-lib.sh — the host-side decisions of scripts/vm-lib.sh,
# as TAP lines for scripts/check.sh (section lint): when boot() may boot
# a guest once more after a soft lockup, an int3 gone from the text, a
# kernel #DB with impossible RFLAGS, a kernel report before perfclock
# was loaded, or after it froze. The fixtures
# are real reports (scripts/testdata/tcg-lockup-console.log: CI's stable
# demo guest, the module loaded, CPU 0 in text_poke_bp_batch() waiting for
# CPU 1; tcg-stale-jump-console.log: both CPUs on a just-patched jump;
# tcg-stale-int3-console.log: an int3 trap on text without the int3;
# tcg-bogus-debug-trap-console.log: a kernel #DB with impossible RFLAGS;
# kernel-problem-at-boot-console.log: a report before perfclock loaded);
# the variants are made from them here.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/tap-lib.sh
. scripts/vm-lib.sh

fixture=scripts/testdata/tcg-lockup-console.log
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# verdict WANT NAME FILE [CHECK]: WANT is "retry" or "fail"; CHECK the
# vm-lib.sh function that decides (default tcg_patching_lockup).
verdict() {
	local got=fail
	"${4:-tcg_patching_lockup}" "$3" && got=retry
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

# The patching done, both vCPUs stuck on the patched jump (real report:
# CI's stable demo guest, syscall_trace_enter+0xe9, "<eb> 63").
stale=scripts/testdata/tcg-stale-jump-console.log
verdict retry "both CPUs stuck on a just-patched forward jump, no perfclock frame" "$stale"

sed 's/syscall_trace_enter.constprop.0+0xe9\/0x1a0/perfclock_ioctl+0x59\/0x1a0 [perfclock]/' \
	"$stale" > "$tmp/stale-ours"
verdict fail "stuck on a forward jump in perfclock" "$tmp/stale-ours"

sed 's/ff ff ff <eb> 63 e9/ff ff ff <eb> f3 e9/' "$stale" > "$tmp/stale-back"
verdict fail "stuck on a backward jump (a loop)" "$tmp/stale-back"

sed 's/ff ff ff <eb> 63 e9/ff ff ff <8b> 63 e9/' "$stale" > "$tmp/stale-mov"
verdict fail "stuck on an instruction that is not a jump" "$tmp/stale-mov"

sed 's/ff ff ff <eb> 63 e9 3f ff ff ff/ff ff ff <e9> 3f 01 00 00 ff/' "$stale" > "$tmp/stale-e9"
verdict retry "stuck on a five-byte forward jump" "$tmp/stale-e9"

grep -v 'Kernel panic - not syncing' "$stale" > "$tmp/stale-nopanic"
verdict fail "stuck on a jump, no panic (the report cut short)" "$tmp/stale-nopanic"

# An int3 trap on text that no longer holds the int3 (real report: make
# check's 6.12 selftest guest, an excerpt: CPU 1's last frames and the
# second report's call trace left out).
int3=scripts/testdata/tcg-stale-int3-console.log
verdict retry "Oops: int3 with the int3 gone from memory, no perfclock frame" "$int3" tcg_stale_int3

sed 's/ 53 eb <1b> e8/ 53 cc <1b> e8/' "$int3" > "$tmp/int3-present"
verdict fail "Oops: int3 with the int3 still in memory" "$tmp/int3-present" tcg_stale_int3

sed 's/update_rq_clock+0x35\/0x1a0/perfclock_timer_fn+0x21\/0x90 [perfclock]/' "$int3" > "$tmp/int3-ours"
grep -q perfclock_timer_fn "$tmp/int3-ours"
verdict fail "Oops: int3 with a perfclock frame" "$tmp/int3-ours" tcg_stale_int3

grep -v 'Kernel panic - not syncing' "$int3" > "$tmp/int3-nopanic"
verdict fail "Oops: int3, no panic (the report cut short)" "$tmp/int3-nopanic" tcg_stale_int3

sed 's/Oops: int3/Oops: general protection fault/' "$int3" > "$tmp/int3-gp"
verdict fail "another Oops" "$tmp/int3-gp" tcg_stale_int3

verdict fail "a text-patching lockup is not an int3" "$fixture" tcg_stale_int3
verdict fail "a clean console" "$tmp/empty" tcg_stale_int3

# A single-step #DB in kernel mode with RFLAGS no CPU can hold (real
# report: CI's DKMS 6.12 unstable guest, as CI printed it: the WARNING and
# its first register dump from the console, the rest from the guest's
# dmesg; the lines between, the task's RIP and flags among them, were not
# printed).
db=scripts/testdata/tcg-bogus-debug-trap-console.log
verdict retry "a kernel single-step #DB with EFLAGS 4208a002, no perfclock frame" "$db" tcg_bogus_debug_trap

sed 's/EFLAGS: 4208a002/EFLAGS: 00000002/' "$db" > "$tmp/db-flags"
verdict fail "the same #DB with RFLAGS a CPU can hold" "$tmp/db-flags" tcg_bogus_debug_trap

sed 's/EFLAGS: 4208a002/EFLAGS: 00000046/; s/RCX: 0000000000000000/&\n[    7.135590] RSP: 0018:ff45284a4001bc50 EFLAGS: 00000000/' "$db" > "$tmp/db-bit1"
verdict retry "a dump with RFLAGS bit 1 clear" "$tmp/db-bit1" tcg_bogus_debug_trap

sed 's/kernel_thread+0x6f\/0xa0/perfclock_timer_fn+0x21\/0x90 [perfclock]/' "$db" > "$tmp/db-ours"
grep -q perfclock_timer_fn "$tmp/db-ours"
verdict fail "the #DB with a perfclock frame" "$tmp/db-ours" tcg_bogus_debug_trap

{ cat "$db"; echo '[    9.000000] BUG: kernel NULL pointer dereference, address: 0000000000000008'; } > "$tmp/db-more"
verdict fail "the #DB and another kernel problem" "$tmp/db-more" tcg_bogus_debug_trap

sed 's/exc_debug_kernel+0xca\/0x160/exc_int3+0x10\/0x60/' "$db" > "$tmp/db-other"
verdict fail "another WARNING with impossible RFLAGS" "$tmp/db-other" tcg_bogus_debug_trap

verdict fail "an int3 Oops is not a #DB" "$int3" tcg_bogus_debug_trap
verdict fail "a clean console" "$tmp/empty" tcg_bogus_debug_trap

# froze WANT NAME DIR: when a guest that timed out went silent as a whole.
froze() {
	local got=fail
	guest_froze "$3" "$now" && got=retry
	[ "$got" = "$1" ]
	result $? "vm-lib: $2: $1 (got $got)"
}
now=$(date +%s)
mkguest() {	# mkguest DIR SECONDS-AGO [KERNEL-LINE]
	mkdir -p "$1"
	{ echo 'perfclock-init: running the payload'; [ -n "${3:-}" ] && echo "$3"; } > "$1/console.log"
	echo '# === kernel' > "$1/payload.log"
	touch -d "@$((now - $2))" "$1/console.log" "$1/payload.log"
}
mkguest "$tmp/frozen" 600
froze retry "silent for 600 s, no kernel report" "$tmp/frozen"
# The real one (scripts/testdata/tcg-frozen-*.log: make check's unstable
# guest, its payload's last line at 21:22:02, stopped at 21:36:01).
mkdir -p "$tmp/real"
cp scripts/testdata/tcg-frozen-console.log "$tmp/real/console.log"
cp scripts/testdata/tcg-frozen-payload.log "$tmp/real/payload.log"
touch -d "@$((now - 865))" "$tmp/real/console.log"
touch -d "@$((now - 839))" "$tmp/real/payload.log"
froze retry "the guest that froze in make check (real logs)" "$tmp/real"
mkguest "$tmp/busy" 600
touch -d "@$((now - 20))" "$tmp/busy/payload.log"
froze fail "the payload wrote 20 s before the end (slow, not frozen)" "$tmp/busy"
mkguest "$tmp/hung" 600 '[  250.1] INFO: task perfclock_hori:123 blocked for more than 120 seconds.'
froze fail "a hung-task report" "$tmp/hung"
mkguest "$tmp/stall" 600 '[   40.2] rcu: INFO: rcu_sched detected stalls on CPUs/tasks:'
froze fail "an RCU stall report" "$tmp/stall"
mkguest "$tmp/noinit" 600
echo 'Booting' > "$tmp/noinit/console.log"
touch -d "@$((now - 600))" "$tmp/noinit/console.log"
froze fail "never reached the payload (the boot retry's case, not this one)" "$tmp/noinit"

# A kernel report before perfclock was loaded (real report: CI's
# check-debug reset guest, the report's end as CI printed it, 0.8 s into
# boot); the variants add what a guest prints after it.
early=scripts/testdata/kernel-problem-at-boot-console.log
verdict retry "a kernel report before the payload began" "$early" kernel_problem_before_payload

{ cat "$early"; echo 'perfclock-init: running the payload'
  echo '[   12.000000] perfclock: sched_clock stable, page fast path on'; } > "$tmp/early-then-ours"
verdict retry "the same, the payload and the module after it" "$tmp/early-then-ours" kernel_problem_before_payload

{ echo 'perfclock-init: running the payload'; cat "$early"; } > "$tmp/late"
verdict fail "the same report after the payload began" "$tmp/late" kernel_problem_before_payload

{ echo '[    9.000000] perfclock: sched_clock stable, page fast path on'; cat "$early"; } > "$tmp/late-module"
verdict fail "the same report after the module's first message" "$tmp/late-module" kernel_problem_before_payload

verdict fail "a #DB report after the module loaded" "$db" kernel_problem_before_payload
verdict fail "a clean console" "$tmp/empty" kernel_problem_before_payload

# boot() itself, with a vm.sh that stands in for QEMU: its first run has
# a kernel report before the payload and a failed payload, its second is
# clean. What boot() gives back must be the second run's alone: stderr
# with no "payload run.sh exited with rc=" of the first (check-debug
# judges "the guest payload exits 0" by it; CI failed on the first run's
# note after a clean retry, 7 December 2026), status 0, and the first
# run's results and notes only as TAP comments.
mkdir -p "$tmp/stub"
cat > "$tmp/stub/vm.sh" <<'STUB'
#!/bin/bash
while [ $# -gt 0 ]; do [ "$1" = --out ] && out=$2; shift; done
mkdir -p "$out"
try=$(( $(cat "$out/tries" 2>/dev/null || echo 0) + 1 ))
echo "$try" > "$out/tries"
if [ "$try" = 1 ]; then
	{ echo '[    0.800000] WARNING: CPU: 0 PID: 1 at kernel/irq/manage.c:1 x+0x1/0x2'
	  echo 'perfclock-init: running the payload'; } > "$out/console.log"
	echo 'not ok 1 - kernel not tainted by a warning or a bug (taint 4608)'
	echo 'vm.sh: payload run.sh exited with rc=1' >&2
	echo "vm.sh: guest finished in 230s (status 3; logs in $out)" >&2
	exit 3
fi
echo 'perfclock-init: running the payload' > "$out/console.log"
echo 'ok 1 - kernel not tainted by a warning or a bug (taint 4096)'
echo "vm.sh: guest finished in 228s (status 0; logs in $out)" >&2
STUB
chmod +x "$tmp/stub/vm.sh"
( vm_lib_dir=$tmp/stub; boot stable "$tmp/retried" > "$tmp/boot.out" 2> "$tmp/boot.err" )
st=$?
[ "$st" = 0 ] && ! grep -q 'payload run.sh exited with rc=' "$tmp/boot.err" &&
	grep -q 'status 0' "$tmp/boot.err" && [ "$(grep -c '^ok' "$tmp/boot.out")" = 1 ] &&
	! grep -q '^not ok' "$tmp/boot.out" &&
	grep -q '^#   vm.sh: payload run.sh exited with rc=1$' "$tmp/boot.out"
result $? "vm-lib: boot: a retried guest's status, results and stderr are the last run's; the discarded run's notes are TAP comments (status $st)" \
	"$(cat "$tmp/boot.out"; echo "-- stderr:"; cat "$tmp/boot.err")"
