#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the debug kernel's guest as /payload/run.sh for
# scripts/check-debug.sh when REPEAT=N is set: the checks that once
# failed in a debug guest and were fixed in the test (a check judged
# against what was not promised), each N times, so that a race left in
# one shows: test_clock_set's estimate mode (before the module is
# loaded), then with the module test_module and perfclock_lifecycle_test
# (its unprivileged_open_loop_ipis). Each run's results are numbered
# apart; the host adds them up. ./debug.env gives REPEAT.
# Prints TAP (scripts/tap-lib.sh, through guest-lib.sh).
cd /payload || exit 1
. /lib/perfclock/guest-lib.sh
. ./debug.env
export PERFCLOCK_KO=/payload/perfclock.ko
rc=0

i=0
while [ "$i" -lt "$REPEAT" ]; do
	i=$((i + 1))
	section "libperfclock test_clock_set estimate, run $i of $REPEAT"
	run_test ./test_clock_set estimate
done
dmesg -c >/dev/null
# mode=0444: the tests' unprivileged users open the device (the module's
# default, 0600, is root's alone); PC_TEST_MODULE_PARAMS in
# selftests/perfclock_util.h, which the tests that reload it use.
if ! insmod /payload/perfclock.ko mode=0444; then
	result 1 "insmod perfclock.ko"
	exit 1
fi
i=0
while [ "$i" -lt "$REPEAT" ]; do
	i=$((i + 1))
	section "libperfclock test_module, run $i of $REPEAT"
	run_test ./test_module
	section "perfclock_lifecycle_test, run $i of $REPEAT"
	run_test ./perfclock_lifecycle_test
done
section "kernel"
log_clean "the repeated tests"
check "module unloads at the end" rmmod perfclock
exit $rc
