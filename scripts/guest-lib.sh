# SPDX-License-Identifier: GPL-2.0
#
# Shell helpers for scripts that run inside the test guest, installed by
# scripts/vm.sh as /lib/perfclock/guest-lib.sh; source it. The guest's
# /init has already settled the clock and exported PERFCLOCK_REGIME
# (stable with tsc=reliable on the command line, unstable without).
# Results are TAP lines; a failure sets rc=1 in the sourcing script.

rc=${rc:-0}

# Warnings the kernel prints whatever the module does: the taint notice
# for the first unsigned out-of-tree module of a boot (and for a module
# signed with a key it does not hold, DKMS's own), the hrtimer interrupt's
# "took N ns" (pr_warn_once), which a TCG guest whose vCPUs the host
# starves can print at any time, and, on PREEMPT_RT kernels, the
# scheduler's once-per-boot note that real-time threads (irq and cpuhp
# threads, slow under TCG while the tests hotplug a CPU) used their share.
KERNEL_NOISE='loading out-of-tree module taints kernel|module verification failed: signature|hrtimer: interrupt took|sched: RT throttling activated'

# check DESCRIPTION COMMAND...: one TAP line for the command's status.
check() {
	_desc=$1
	shift
	if "$@"; then
		echo "ok - $_desc"
	else
		echo "not ok - $_desc"
		rc=1
	fi
}

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
	if [ -z "$_bad" ]; then
		echo "ok - log clean after $1"
	else
		echo "$_bad" | sed 's/^/# /'
		echo "not ok - log clean after $1"
		rc=1
	fi
	dmesg -c >/dev/null
}
