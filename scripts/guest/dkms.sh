#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the test guest as /payload/run.sh for scripts/check-dkms.sh:
# the module DKMS installed on the host, at its installed path
# /lib/modules/$(uname -r)/updates/dkms/perfclock.ko with the host's
# depmod output next to it, is loaded with modprobe (not insmod), checked
# to be the version in /payload/VERSION, exercised by the selftests, and
# unloaded with modprobe -r. Prints TAP (scripts/tap-lib.sh).

cd /payload || exit 1
kver=$(uname -r)
# perfclock.ko, or perfclock.ko.xz where the kernel compresses its
# modules (Debian's 6.12), as check-dkms.sh copied it in.
ko=$(ls /lib/modules/"$kver"/updates/dkms/perfclock.ko* 2>/dev/null | head -n 1)
ko=${ko:-/lib/modules/$kver/updates/dkms/perfclock.ko}
want=$(cat /payload/VERSION)
cs=/sys/devices/system/clocksource/clocksource0/current_clocksource
. /lib/perfclock/guest-lib.sh
regime=$PERFCLOCK_REGIME
echo "# regime: $regime ($(cat $cs)), $(nproc) CPUs, $kver"
echo "# kernel: $(cat /proc/version)"

echo "# === dkms module"
check "kernel $kver has the DKMS module at $ko" test -f "$ko"
check "modules.dep lists ${ko#/lib/modules/"$kver"/}" \
	grep -qF "${ko#/lib/modules/"$kver"/}:" "/lib/modules/$kver/modules.dep"
check "the module is not loaded before modprobe" test ! -e /sys/module/perfclock

dmesg -c >/dev/null
check "modprobe perfclock" modprobe perfclock || exit 1
dmesg | sed -n 's/^.*\(perfclock: .*\)$/# \1/p'
have=$(cat /sys/module/perfclock/version 2>/dev/null)
check "loaded module version is $want (got '$have')" test "$have" = "$want"
check "/dev/perfclock is a character device" test -c /dev/perfclock
# The file modprobe loaded, not some other copy: its srcversion matches.
src_file=$(modinfo -F srcversion "$ko" 2>/dev/null)
src_live=$(cat /sys/module/perfclock/srcversion 2>/dev/null)
check "the loaded module is the file at $ko (srcversion $src_live)" \
	test -n "$src_live" -a "$src_file" = "$src_live"

# The node as the install leaves it. Loaded with no parameters and no
# udev running, it is root's alone (the module's default mode, 0600).
# Then udev, started only now, is told what scripts/dkms.sh install tells
# a running udev (udev_apply()): the rule check-dkms.sh copied from the
# host's install (/lib/udev/rules.d/60-perfclock.rules) must give the node
# to the perfclock group the install made, 0640, and a user outside it
# must be refused.
node() { stat -c '%u:%g %a' /dev/perfclock 2>/dev/null; }
check "with no udev, /dev/perfclock is root's alone: 0:0 600 (got $(node))" test "$(node)" = "0:0 600"
gid=$(sed -n 's/^perfclock:x:\([0-9]*\):.*$/\1/p' /etc/group)
if [ -x /lib/systemd/systemd-udevd ] && [ -f /lib/udev/rules.d/60-perfclock.rules ] && [ -n "$gid" ]; then
	# Its log on stderr, not in the kernel's log that log_clean reads.
	SYSTEMD_LOG_TARGET=console /lib/systemd/systemd-udevd --daemon >/tmp/udevd.log 2>&1
	udevadm control --reload &&
		udevadm trigger --action=change --subsystem-match=misc --sysname-match=perfclock &&
		udevadm settle --timeout=60
	check "udev applies the installed rule: root:perfclock 0640 (0:$gid 640; got $(node))" \
		test "$(node)" = "0:$gid 640"
	# Each as a user of its own, su's exit status telling which step
	# failed: su working, /dev/null opened, then /dev/perfclock.
	check "nobody, outside the perfclock group, is refused /dev/perfclock" \
		su -s /bin/sh nobody -c 'exec 3</dev/null || exit 2; (exec 4</dev/perfclock) 2>/dev/null && exit 1; exit 0'
	check "pcuser, in the perfclock group, opens /dev/perfclock" \
		su -s /bin/sh pcuser -c 'exec 3</dev/null || exit 2; exec 4</dev/perfclock'
	udevadm control --exit
	sed 's/^/# udevd: /' /tmp/udevd.log
else
	result 1 "the guest has udevd, the installed rule and the perfclock group (check-dkms.sh guest_udev)"
fi
# The selftests run as in the other guests: opened up for their
# unprivileged users (PC_TEST_MODULE_PARAMS, selftests/perfclock_util.h).
check "modprobe -r perfclock, then modprobe perfclock mode=0444 for the selftests" \
	sh -c 'modprobe -r perfclock && modprobe perfclock mode=0444'

# The lifecycle test unloads and reloads the module from this file, with
# finit_module() and no flags: a compressed one is unpacked first (the
# same module: its srcversion is checked).
case $ko in
*.xz)
	unxz -c "$ko" > /tmp/perfclock.ko
	check "the unpacked copy of $ko is the same module" \
		test "$(modinfo -F srcversion /tmp/perfclock.ko)" = "$src_live"
	export PERFCLOCK_KO=/tmp/perfclock.ko ;;
*)	export PERFCLOCK_KO="$ko" ;;
esac
for t in perfclock_ioctl_test perfclock_ioctl_test_32 perfclock_page_test \
	 perfclock_clock_test perfclock_lifecycle_test; do
	echo "# === $t"
	run_test "./$t"
done
echo "# === dkms module"
# busybox modprobe hands a compressed module to finit_module() first,
# without MODULE_INIT_COMPRESSED_FILE; the kernel says so, once
# ("Invalid ELF header magic: != \177ELF"), and busybox then unpacks it
# and loads it with init_module().
case $ko in
*.xz) log_clean "the selftests" '^<3>\[ *[0-9.]*\] Invalid ELF header magic: != .ELF$' ;;
*)    log_clean "the selftests" ;;
esac

check "modprobe -r perfclock" modprobe -r perfclock
check "the module is gone after modprobe -r" test ! -e /sys/module/perfclock
check "/dev/perfclock is gone after modprobe -r" test ! -e /dev/perfclock
log_clean "unload"
exit $rc
