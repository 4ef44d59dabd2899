# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=sh
#
# Shell helpers for scripts that run inside the test guest, installed by
# scripts/vm.sh as /lib/perfclock/guest-lib.sh; source it. It sources the
# TAP helpers every check uses (scripts/tap-lib.sh, installed beside it):
# check, result, skip_result. The guest's /init has already settled the
# clock and exported PERFCLOCK_REGIME (stable or unstable, as the host's
# boot() in scripts/vm-lib.sh booted it). A failure sets rc=1 in the
# sourcing script.

. /lib/perfclock/tap-lib.sh

# "# === NAME", the line that names the program whose results follow
# (collect() in tap-lib.sh), after the guest's uptime: where a guest's
# minutes go.
section() {
	echo "# uptime $(cut -d' ' -f1 /proc/uptime) s"
	echo "# === $1"
}

# Warnings the kernel prints whatever the module does: the taint notice
# for the first unsigned out-of-tree module of a boot (and for a module
# signed with a key it does not hold, DKMS's own), the hrtimer interrupt's
# "took N ns" (pr_warn_once), which a TCG guest whose vCPUs the host
# starves can print at any time, and, on PREEMPT_RT kernels, the
# scheduler's once-per-boot note that real-time threads (irq and cpuhp
# threads, slow under TCG while the tests hotplug a CPU) used their share.
KERNEL_NOISE='loading out-of-tree module taints kernel|module verification failed: signature|hrtimer: interrupt took|sched: RT throttling activated'

# Kernel log lines at warning level or above (busybox dmesg has no -l:
# read the raw <priority> prefixes, whose low three bits are the level).
log_warnings() {
	dmesg -r | awk -F'[<>]' '/^</ && $2 % 8 <= 4'
}

# Nothing at warning level or above may have reached the log since it
# was last cleared, but KERNEL_NOISE. $1 names the step; $2, if given, is
# a pattern of more lines the kernel is expected to print for that step.
# Clears the log for the next step.
log_clean() {
	_bad=$(log_warnings | grep -v -E "$KERNEL_NOISE")
	[ -n "$2" ] && _bad=$(echo "$_bad" | grep -v -E "$2")
	[ -z "$_bad" ]
	result $? "log clean after $1" "$_bad"
	dmesg -c >/dev/null
}
