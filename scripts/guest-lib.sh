# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=sh
#
# Shell helpers for scripts that run inside the test guest, installed by
# scripts/vm.sh as /lib/perfclock/guest-lib.sh; source it. It sources the
# TAP helpers every check uses (scripts/tap-lib.sh, installed beside it):
# check, result, skip_result. The guest's /init has already settled the
# clock and exported PERFCLOCK_REGIME (stable or unstable, as the host's
# boot() in scripts/vm-lib.sh booted it). A failure sets rc=1 in the
# sourcing script; run_test makes a test program's failed exit one.

. /lib/perfclock/tap-lib.sh

# run_test [env] [VAR=VALUE...] PROGRAM [ARG...]: runs a test program
# that prints its own TAP results. Its exit status is a result too, but
# only when it fails: a program can exit non-zero with no "not ok" of its
# own (a crash after its last result, an error printed as a comment),
# which "|| rc=1" alone leaves nameless (check-debug's "the guest payload
# exits 0", CI of 7 December 2026). Prefix variables with env: busybox sh
# need not pass assignments before a function call on to its commands.
run_test() {
	for _rt_name; do
		case $_rt_name in env|*=*) ;; *) break ;; esac
	done
	"$@"
	_rt_st=$?
	[ "$_rt_st" -eq 0 ] && return 0
	_rt_how="status $_rt_st"
	[ "$_rt_st" -gt 128 ] && _rt_how="signal $((_rt_st - 128))"
	result 1 "${_rt_name#./} exits 0 (exited with $_rt_how)"
}

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
