#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the overcommitted test guest (8 vCPUs on this 2-core host;
# scripts/check.sh boots it once per clock regime) as /payload/run.sh.
# There a vCPU is often descheduled between stamping a perf record and
# committing it: the bare clock read at a round start must deliver late
# records, and the horizon none (perfclock_horizon_test says why) -- the
# module's, and before the module is loaded the library's membarrier
# horizon (perfclock_membarrier_test). And the library's per-CPU horizon
# H_c, read pinned on each CPU, must have none where the same value used
# for the wrong CPU's ring is late (perfclock_percpu_late_test): without
# the module (CLOCK_MONOTONIC_RAW), then with it (perf_clock()).

cd /payload || exit 1
. /lib/perfclock/guest-lib.sh
echo "# regime: $PERFCLOCK_REGIME, $(nproc) CPUs (overcommitted), $(uname -r)"
dmesg -c >/dev/null
# First, with no module loaded: the library's membarrier horizon, and the
# same with its barrier skipped, which this load must make late.
section "perfclock_membarrier_test (overcommitted, no module)"
run_test env PERFCLOCK_EXPECT_BARE_LATE=1 PERFCLOCK_MB_SECONDS=${MB_SECONDS:-4} \
	./perfclock_membarrier_test
section "perfclock_percpu_late_test (overcommitted, no module: CLOCK_MONOTONIC_RAW)"
run_test env PERFCLOCK_EXPECT_BARE_LATE=1 PERFCLOCK_PERCPU_CLOCK=raw \
	PERFCLOCK_PERCPU_SECONDS=${PERCPU_SECONDS:-1} ./perfclock_percpu_late_test
# mode=0444: the tests' unprivileged users open the device (the module's
# default, 0600, is root's alone); PC_TEST_MODULE_PARAMS in
# selftests/perfclock_util.h, which the tests that reload it use.
if ! insmod /payload/perfclock.ko mode=0444; then
	result 1 "insmod perfclock.ko"
	exit 1
fi
section "perfclock_horizon_test (overcommitted)"
run_test env PERFCLOCK_EXPECT_BARE_LATE=1 PERFCLOCK_HORIZON_SECONDS=${HORIZON_SECONDS:-8} \
	./perfclock_horizon_test
section "perfclock_percpu_late_test (overcommitted, the module: perf_clock())"
run_test env PERFCLOCK_EXPECT_BARE_LATE=1 PERFCLOCK_PERCPU_CLOCK=module \
	PERFCLOCK_PERCPU_SECONDS=${PERCPU_SECONDS:-1} ./perfclock_percpu_late_test
section "kernel"
log_clean "the horizon test"
check "module unloads at the end" rmmod perfclock
exit $rc
