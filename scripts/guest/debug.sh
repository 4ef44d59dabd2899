#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the debug kernel's guest as /payload/run.sh for
# scripts/check-debug.sh: the checkers are on, the selftests
# (selftests/run.sh, here ./selftests.sh), the interface fuzzer, in the
# stable boot the fault-injection sweep of the module's init path, then
# kmemleak, the taint flags and lockdep. ./debug.env gives FUZZ_SEED,
# FUZZ_SECONDS, FAULT_INJECT (1 in the stable boot), FAULT_SWEEP and
# RESET_ONLY: 1 in the reset boot, which runs ./run_reset.sh (the TSC
# marked unstable, which the selftests leave to a boot of its own:
# selftests/run.sh) in place of the selftests, the fuzzer and the sweep.
# Prints TAP (scripts/tap-lib.sh, through guest-lib.sh).
cd /payload || exit 1
. /lib/perfclock/guest-lib.sh
. ./debug.env
rc=0
dbg=/sys/kernel/debug
lockdep_on() { grep -q 'debug_locks: *1' /proc/lockdep_stats; }

echo "# === debug kernel"
echo "# $(uname -r), $(nproc) CPUs, $(cat /proc/cmdline)"
check "kmemleak is on" test -w $dbg/kmemleak
check "lockdep is on" lockdep_on
check "KASAN is on" sh -c 'dmesg | grep -q "KernelAddressSanitizer initialized"'
# Only what happens from here on counts as a leak.
echo clear > $dbg/kmemleak

if [ "$RESET_ONLY" = 1 ]; then
	sh ./run_reset.sh || rc=1
else
	sh ./selftests.sh || rc=1
	echo "# === perfclock_fuzz"
	run_test ./perfclock_fuzz --seed "$FUZZ_SEED" --seconds "$FUZZ_SECONDS" --ko /payload/perfclock.ko
	check "the module unloads after the fuzzer" rmmod perfclock
fi

if [ "$FAULT_INJECT" = 1 ]; then
	echo "# === fault injection on the load and init path"
	# Only /proc/thread-self/fail-nth injects (probability 0); GFP_KERNEL
	# allocations and order-0 pages count too; every report is printed.
	for a in failslab fail_page_alloc; do
		echo 0 > $dbg/$a/probability
		echo N > $dbg/$a/ignore-gfp-wait
		echo 2 > $dbg/$a/verbose
		echo 0 > $dbg/$a/verbose_ratelimit_interval_ms
	done
	echo 0 > $dbg/fail_page_alloc/min-order
	# The reports carry stack traces ("Call Trace:"), which vm.sh would
	# take for a problem: keep them off the console while the sweep
	# reads and checks them in the log itself.
	read -r cl _ < /proc/sys/kernel/printk
	echo 1 > /proc/sys/kernel/printk
	full=''
	[ "$FAULT_SWEEP" = full ] && full=--full
	run_test ./perfclock_fail_init /payload/perfclock.ko $full
	echo "$cl" > /proc/sys/kernel/printk
	for a in failslab fail_page_alloc; do
		echo Y > $dbg/$a/ignore-gfp-wait
		echo 1 > $dbg/$a/verbose
	done
	echo 1 > $dbg/fail_page_alloc/min-order
	if insmod /payload/perfclock.ko && ./perfclock_ioctl_test > /tmp/ioctl.out 2>&1 &&
	   rmmod perfclock; then
		result 0 "after the sweep: insmod, the ioctl selftest and rmmod work"
	else
		result 1 "after the sweep: insmod, the ioctl selftest and rmmod work" "$(cat /tmp/ioctl.out)"
	fi
fi

echo "# === kernel"
# kmemleak reports an object unreferenced for two scans and at least 5 s
# old: wait, then scan twice.
sleep 6
echo scan > $dbg/kmemleak
echo scan > $dbg/kmemleak
leaks=$(grep -c '^unreferenced object' $dbg/kmemleak)
if [ "$leaks" -eq 0 ]; then
	result 0 "kmemleak finds no leak after the tests"
else
	sed 's/^/# /' $dbg/kmemleak | head -n 200
	# Put it on the console too, in the words vm.sh looks for.
	echo "<3>kmemleak: $leaks unreferenced objects after the perfclock tests" > /dev/kmsg
	result 1 "kmemleak finds no leak after the tests ($leaks)"
fi
# Taint: O (4096) and E (8192) are the unsigned out-of-tree module, S (4)
# the TSC-unstable selftest's write to IA32_TSC through msr.ko; W, B, D,
# L, ... would be a warning, a bad page, an oops, a soft lockup.
taint=$(cat /proc/sys/kernel/tainted)
check "kernel not tainted by a warning or a bug (taint $taint)" test $((taint & ~(4 | 4096 | 8192))) -eq 0
check "lockdep still on at the end (no report switched it off)" lockdep_on
exit $rc
