#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the test guest as /payload/run.sh (see scripts/vm.sh):
# loads the module, runs every selftest, and checks the kernel log after
# each step. Prints TAP (scripts/tap-lib.sh, through guest-lib.sh);
# scripts/check.sh counts the results of both boots.

cd /payload || exit 1
. /lib/perfclock/guest-lib.sh
# The loads' lengths: STRESS_SECONDS, DRAIN_SECONDS, RING_REAL_FORKS,
# READER_LOAD_MS.
# make check's guests shorten them in ./run.env (scripts/check.sh);
# every other boot runs them in full.
[ -r ./run.env ] && . ./run.env
export PERFCLOCK_KO=/payload/perfclock.ko
cs=/sys/devices/system/clocksource/clocksource0/current_clocksource
regime=$PERFCLOCK_REGIME
echo "# regime: $regime ($(cat $cs)), $(nproc) CPUs, $(uname -r)"

section "kernel"
# The log check must be able to fail: it sees a warning-level line.
echo '<4>perfclock selftest: log check probe' > /dev/kmsg
log_warnings | grep -q 'log check probe'
result $? "the log check sees a warning-level line"

# libperfclock's REALTIME/TAI horizons across sets of the wall clock and
# of the TAI offset (it steps this guest's clock and restores it):
# before the module is loaded, so that the estimate is what it tests.
section "libperfclock test_clock_set estimate"
run_test ./test_clock_set estimate

# Only what the tests provoke may reach the log from here on.
dmesg -c >/dev/null
# mode=0444: the tests' unprivileged users open the device (the module's
# default, 0600, is root's alone); PC_TEST_MODULE_PARAMS in
# selftests/perfclock_util.h, which the tests that reload it use.
if ! insmod /payload/perfclock.ko mode=0444; then
	result 1 "insmod perfclock.ko"
	exit 1
fi
dmesg | sed -n 's/^.*\(perfclock: .*\)$/# \1/p'

for t in perfclock_ioctl_test perfclock_ioctl_test_32 perfclock_page_test \
	 perfclock_clock_test perfclock_horizon_test perfclock_lifecycle_test; do
	section "$t"
	run_test "./$t"
done
# The per-CPU horizon H_c (docs/percpu-horizon.md); it slews this guest's
# clock by +-10% with adjtimex(ADJ_TICK) for a few seconds, and restores
# the tick length after.
section "perfclock_percpu_test"
run_test env PERCPU_SLEW=1 PERCPU_SECONDS=${PERCPU_SECONDS:-1} \
	PERCPU_SLOPE_SECONDS=${PERCPU_SLOPE_SECONDS:-2} ./perfclock_percpu_test
section "kernel"
log_clean "the selftests"

# The library against the real module: its reads bracket perf records,
# and it merges real per-CPU rings stamped with the module's clock.
section "libperfclock test_module"
run_test ./test_module
section "libperfclock test_ring_real"
run_test env PERFCLOCK_TEST_FORKS=${RING_REAL_FORKS:-1500} ./test_ring_real device
# The threaded reader on the module's per-CPU horizons (one pinned thread
# per CPU), a stalled merger at its held cap included.
section "libperfclock test_reader"
run_test env PERFCLOCK_TEST_LOAD_MS=${READER_LOAD_MS:-1000} ./test_reader device
section "kernel"
log_clean "the library tests"

# The liburcu torture: every path on every CPU at once, with other
# processes opening, mapping and forking on the device meanwhile; then
# proof that it catches a clock stepping back beyond the bound.
section "perfclock_stress"
run_test ./perfclock_stress --seconds "${STRESS_SECONDS:-5}"
# Caught means: exit status 1 (2 is a usage or open error), a failed
# clock check, and no other failure.
# 3 s, not 1: in a starved debug guest the checker threads once made no
# check at all within 1 s (a liveness failure, not a clock check).
./perfclock_stress --seconds 3 --no-device-stress --inject-skew 1000000000 >/tmp/inject.out
st=$?
clock_check='^not ok .*(no read below a horizon handed out before it|global clock, no read below a value observed before it)'
if [ $st -eq 1 ] && grep -Eq "$clock_check" /tmp/inject.out &&
	! grep '^not ok' /tmp/inject.out | grep -Evq "$clock_check"; then
	result 0 "detects one CPU reading 1 s behind (below the horizon, beyond the estimate)"
else
	result 1 "detects one CPU reading 1 s behind (below the horizon, beyond the estimate): exit $st, want 1 from a clock check alone" \
		"$(cat /tmp/inject.out)"
fi
# Per-CPU readers and a wait-free-queue merger against the library's
# round-robin reader, on the same load: no late or lost record either way.
section "perfclock_drain"
run_test ./perfclock_drain --seconds "${DRAIN_SECONDS:-3}"
section "kernel"
log_clean "the stress test"


# Last, since it leaves the TSC unstable: the kernel may warn about the
# TSC warp the test itself makes, and about nothing else.
section "perfclock_tsc_unstable_test"
insmod /payload/extra/msr.ko allow_writes=on 2>/dev/null
run_test ./perfclock_tsc_unstable_test
section "kernel"
log_clean "the TSC-unstable test" 'TSC synchronization|TSC warp|turning off TSC clock'

# The grace-period policy, with nothing else holding the device.
section "perfclock_gp_policy_test"
run_test ./perfclock_gp_policy_test
section "kernel"
log_clean "the grace-period policy test"

# Who arms the module's timer and grace periods, by privilege: also with
# nothing else holding the device (it waits for the timer to stop).
section "perfclock_access_test"
run_test ./perfclock_access_test
section "kernel"
log_clean "the access test"

# Horizon generations: a REALTIME set back (both regimes) and kprobes
# disarmed. Not sched_clock turned unstable (perfclock_mark_tsc_unstable.ko):
# that switches __sched_clock_stable, a static branch every CPU runs and no
# held event keeps switched, and under TCG with a thread per vCPU a vCPU
# can run a stale translation of the int3 written while it is patched
# ("Oops: int3" in sched_clock_cpu(), docs/lessons.md). run_reset.sh marks
# the TSC unstable in a guest of its own, which scripts/check.sh boots on
# one TCG thread; this guest keeps a thread per vCPU for the tests that
# need CPUs running at once.
section "perfclock_clock_set_test"
run_test ./perfclock_clock_set_test
# The library's NTP slew label under a PLL offset and an adjtime() slew.
section "perfclock_ntp_slew_test"
run_test ./perfclock_ntp_slew_test
# The same sets through the library, on the module's horizons.
section "libperfclock test_clock_set module"
run_test ./test_clock_set module
section "perfclock_generation_test"
run_test env PERFCLOCK_MARK_KO= ./perfclock_generation_test
section "kernel"
log_clean "the generation test"

check "module unloads at the end" rmmod perfclock
log_clean "unload"
exit $rc
