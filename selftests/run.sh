#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the test guest as /payload/run.sh (see scripts/vm.sh):
# loads the module, runs every selftest, then checks the kernel log.
# Prints TAP; scripts/check.sh counts the results of both boots.

cd /payload || exit 1
export PERFCLOCK_KO=/payload/perfclock.ko
rc=0

# The stable regime switches from tsc-early to tsc ~2.5 s into boot,
# recalibrating the TSC: let the kernel settle before measuring it.
if grep -q 'tsc=reliable' /proc/cmdline; then
	regime=stable
	cs=/sys/devices/system/clocksource/clocksource0/current_clocksource
	for _ in $(seq 100); do
		[ "$(cat $cs)" = tsc ] && break
		sleep 0.1
	done
else
	regime=unstable
fi
echo "# regime: $regime ($(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)), $(nproc) CPUs, $(uname -r)"

# Only what the tests provoke may reach the log from here on.
dmesg -C
if ! insmod /payload/perfclock.ko; then
	echo "not ok 1 - insmod perfclock.ko"
	exit 1
fi
dmesg | sed -n 's/^.*\(perfclock: .*\)$/# \1/p'

for t in perfclock_ioctl_test perfclock_ioctl_test_32 perfclock_page_test \
	 perfclock_clock_test perfclock_lifecycle_test; do
	echo "# === $t"
	"./$t" || rc=1
done

echo "# === kernel log"
if rmmod perfclock; then
	echo "ok 1 - kernel: module unloads at the end"
else
	echo "not ok 1 - kernel: module unloads at the end"
	rc=1
fi
bad=$(dmesg -l emerg,alert,crit,err,warn)
if [ -z "$bad" ]; then
	echo "ok 2 - kernel: log has nothing at warning level or above"
else
	echo "$bad" | sed 's/^/# /'
	echo "not ok 2 - kernel: log has nothing at warning level or above"
	rc=1
fi
dmesg | sed 's/^/# dmesg: /'
exit $rc
