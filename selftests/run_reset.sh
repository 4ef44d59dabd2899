#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside a guest as /payload/run.sh (scripts/vm.sh), for the sched_clock
# reset alone: loads the module, runs perfclock_generation_test (whose
# sched_clock_turns_unstable marks the TSC unstable: once per boot), and
# checks the kernel log. scripts/check.sh boots it on one TCG thread for
# all vCPUs (vm.sh --tcg-threads single; docs/lessons.md says why), in
# the stable regime:
#  - plain (the TSC model, the page's fast path on): the selftest guest
#    (run.sh) leaves the mark to this one;
#  - QEMU made to look like VMware (DMI serial "VMware-...", the VMware
#    backdoor port, no CPUID hypervisor bit): arch/x86/kernel/cpu/vmware.c
#    detects VMware, fails to read the TSC frequency from QEMU's backdoor
#    under TCG, and keeps native_sched_clock(): a hypervisor is detected,
#    yet mark_tsc_unstable() resets sched_clock;
#  - "perfclock_reset_fallback=1" on the kernel command line: the test
#    disarms kprobes before the reset, and the module must refuse
#    perf_clock() horizons instead of waiting for it.
cd /payload || exit 1
. /lib/perfclock/guest-lib.sh
export PERFCLOCK_KO=/payload/perfclock.ko
echo "# regime: $PERFCLOCK_REGIME, $(nproc) CPUs, $(uname -r)"
dmesg | sed -n 's/^.*\(Hypervisor detected: .*\)$/# \1/p'
case " $(cat /proc/cmdline) " in
*" perfclock_reset_fallback=1 "*) export PERFCLOCK_RESET_FALLBACK=1 ;;
esac

dmesg -c >/dev/null
# mode=0444: the tests' unprivileged users open the device (the module's
# default, 0600, is root's alone); PC_TEST_MODULE_PARAMS in
# selftests/perfclock_util.h, which the tests that reload it use.
if ! insmod /payload/perfclock.ko mode=0444; then
	result 1 "insmod perfclock.ko"
	exit 1
fi
dmesg | sed -n 's/^.*\(perfclock: .*\)$/# \1/p'
rc=0
echo "# === perfclock_generation_test"
run_test env PERFCLOCK_MARK_KO=/payload/perfclock_mark_tsc_unstable.ko ./perfclock_generation_test
echo "# === kernel"
log_clean "the generation test" 'TSC found unstable after boot|TSC synchronization|TSC warp|turning off TSC clock'
check "module unloads at the end" rmmod perfclock
log_clean "unload"
exit $rc
