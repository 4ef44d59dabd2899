#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the test guest as /payload/run.sh (see scripts/vm.sh):
# loads the module, runs every selftest, and checks the kernel log after
# each step. Prints TAP; scripts/check.sh counts the results of both boots.

cd /payload || exit 1
export PERFCLOCK_KO=/payload/perfclock.ko
cs=/sys/devices/system/clocksource/clocksource0/current_clocksource
rc=0

# Kernel log lines at warning level or above (busybox dmesg has no -l:
# read the raw <priority> prefixes, whose low three bits are the level).
log_warnings() {
	dmesg -r | awk -F'[<>]' '/^</ && $2 % 8 <= 4'
}

# Warnings the kernel prints whatever the module does: the taint notice
# for the first unsigned out-of-tree module of a boot, the hrtimer
# interrupt's "took N ns" (pr_warn_once), which a TCG guest whose vCPUs
# the host starves can print at any time, and, on PREEMPT_RT kernels, the
# scheduler's once-per-boot note that real-time threads (irq and cpuhp
# threads, slow under TCG) used their share.
KERNEL_NOISE='loading out-of-tree module taints kernel|module verification failed: signature|hrtimer: interrupt took|sched: RT throttling activated'

# Nothing at warning level or above may have reached the log since it
# was last cleared, but KERNEL_NOISE. $1 names the step; $2, if given, is
# a pattern of more lines the kernel is expected to print for that step.
# Clears the log for the next step.
log_clean() {
	bad=$(log_warnings | grep -v -E "$KERNEL_NOISE")
	[ -n "$2" ] && bad=$(echo "$bad" | grep -v -E "$2")
	if [ -z "$bad" ]; then
		echo "ok - log clean after $1"
	else
		echo "$bad" | sed 's/^/# /'
		echo "not ok - log clean after $1"
		rc=1
	fi
	dmesg -c >/dev/null
}

# The stable regime switches from tsc-early to tsc ~2.5 s into boot,
# recalibrating the TSC: let the kernel settle before measuring it.
if grep -q 'tsc=reliable' /proc/cmdline; then
	regime=stable
	for _ in $(seq 100); do
		[ "$(cat $cs)" = tsc ] && break
		sleep 0.1
	done
else
	regime=unstable
fi
echo "# regime: $regime ($(cat $cs)), $(nproc) CPUs, $(uname -r)"

echo "# === kernel"
# The log check must be able to fail: it sees a warning-level line.
echo '<4>perfclock selftest: log check probe' > /dev/kmsg
if log_warnings | grep -q 'log check probe'; then
	echo "ok - the log check sees a warning-level line"
else
	echo "not ok - the log check sees a warning-level line"
	rc=1
fi

# Only what the tests provoke may reach the log from here on.
dmesg -c >/dev/null
if ! insmod /payload/perfclock.ko; then
	echo "not ok - insmod perfclock.ko"
	exit 1
fi
dmesg | sed -n 's/^.*\(perfclock: .*\)$/# \1/p'

for t in perfclock_ioctl_test perfclock_ioctl_test_32 perfclock_page_test \
	 perfclock_clock_test perfclock_lifecycle_test; do
	echo "# === $t"
	"./$t" || rc=1
done
echo "# === kernel"
log_clean "the selftests"

# The library against the real module: its reads bracket perf records,
# and it merges real per-CPU rings stamped with the module's clock.
echo "# === libperfclock test_module"
./test_module || rc=1
echo "# === libperfclock test_ring_real"
./test_ring_real device || rc=1
echo "# === kernel"
log_clean "the library tests"

# The liburcu torture: every path on every CPU at once, with other
# processes opening, mapping and forking on the device meanwhile; then
# proof that it catches a clock stepping back beyond the bound.
echo "# === perfclock_stress"
./perfclock_stress --seconds "${STRESS_SECONDS:-5}" || rc=1
if ./perfclock_stress --seconds 1 --no-device-stress --inject-skew 1000000000 >/tmp/inject.out; then
	sed 's/^/# /' /tmp/inject.out
	echo "not ok - detects one CPU reading 1 s beyond the bound behind"
	rc=1
else
	echo "ok - detects one CPU reading 1 s beyond the bound behind"
fi
# Per-CPU readers and a wait-free-queue merger against the library's
# round-robin reader, on the same load: no late or lost record either way.
echo "# === perfclock_drain"
./perfclock_drain --seconds "${DRAIN_SECONDS:-3}" || rc=1
echo "# === kernel"
log_clean "the stress test"


# Last, since it leaves the TSC unstable: the kernel may warn about the
# TSC warp the test itself makes, and about nothing else.
echo "# === perfclock_tsc_unstable_test"
insmod /payload/extra/msr.ko allow_writes=on 2>/dev/null
./perfclock_tsc_unstable_test || rc=1
echo "# === kernel"
log_clean "the TSC-unstable test" 'TSC synchronization|TSC warp|turning off TSC clock'

if rmmod perfclock; then
	echo "ok - module unloads at the end"
else
	echo "not ok - module unloads at the end"
	rc=1
fi
log_clean "unload"
exit $rc
