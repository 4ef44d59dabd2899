#!/bin/bash
# scripts/vm.sh — boot a kernel under QEMU (TCG) with a busybox initramfs and
# run a payload in it.
#
# Usage:
#   scripts/vm.sh --kernel VMLINUZ --payload DIR --out DIR --regime REGIME
#                 [--append "EXTRA CMDLINE"] [--smp 4] [--mem 1024]
#                 [--timeout 900] [--boot-timeout 300] [--silence-timeout 0]
#                 [--modules-from /lib/modules/KVER] [--extra-root DIR]
#                 [--hold-events "EVENT..."] [--cpu MODEL] [--qemu-arg ARG]...
#                 [--tcg-threads multi|single]
#
# The checks do not call it directly: boot() in scripts/vm-lib.sh does,
# with the command line of the clock regime, and boots once more a guest
# that never reached its payload or that panicked on a soft lockup in
# kernel text patching (see boot()).
#
#   --kernel        bzImage to boot (e.g. /boot/vmlinuz-6.1.0-57-cloud-amd64)
#   --payload DIR   copied to /payload in the guest; must contain run.sh, which
#                   the guest runs as /payload/run.sh with cwd /payload
#   --out DIR       work/output directory (created): initramfs.cpio.gz,
#                   console.log (ttyS0: kernel console), payload.log (ttyS1:
#                   run.sh's stdout+stderr), qemu.log (QEMU's own stderr)
#   --regime        stable or unstable: the clock regime the command line
#                   asks for (boot() in scripts/vm-lib.sh passes its
#                   option with --append), exported to the payload as
#                   PERFCLOCK_REGIME, and checked: /init writes one TAP
#                   line before the payload's, "ok - init: ..." when the
#                   kernel is in that regime, "not ok" (and vm.sh exits
#                   1) when not
#   --append        appended to the kernel command line (may be repeated)
#   --smp/--mem     guest CPUs (default 4) and MiB of RAM (default 1024)
#   --timeout       seconds for the whole guest run (default 900)
#   --boot-timeout  seconds for the guest to reach its payload (default
#                   300); a guest that has not by then is stopped (status
#                   2, and "never reached the payload" on stderr)
#   --silence-timeout  seconds (default 0: off) after which a guest that
#                   reached its payload and then wrote nothing to either
#                   serial port (console.log, payload.log) is stopped
#                   (status 2, "silent for N s" on stderr): a TCG guest
#                   that froze as a whole, stopped then rather than at
#                   --timeout (boot() in scripts/vm-lib.sh)
#   --hold-events   perf events (SUBSYSTEM:NAME tracepoints, or
#                   context-switches, cpu-migrations, page-faults) that
#                   /init holds open, disabled, from before the payload
#                   to power-off (scripts/guest/hold-patch-sites.c), so
#                   that the payload's own opens and closes of them patch
#                   no kernel text: QEMU 7.2's TCG can leave a vCPU
#                   running the text from before a patch (README, "Things
#                   learned"). Default none; boot() in scripts/vm-lib.sh
#                   passes its list. Built with the host's cc on first use.
#   --modules-from  a /lib/modules/KVER tree; its msr.ko (.ko or .ko.xz) is
#                   copied, uncompressed, to /payload/extra/msr.ko
#   --cpu           QEMU's -cpu (default max)
#   --tcg-threads   multi (default: a host thread per vCPU) or single (one
#                   host thread runs every vCPU in turn): for a guest whose
#                   test patches kernel text that every CPU runs, where no
#                   held event can keep the site switched (the sched_clock
#                   reset: __sched_clock_stable, which sched_clock_cpu()
#                   tests on every clock read). With one thread no vCPU runs
#                   while another rewrites the text, so none can keep
#                   running a translation of the bytes from before the
#                   patch (docs/lessons.md, the stale int3)
#   --qemu-arg      one more QEMU argument (may be repeated), e.g. the
#                   VMware-looking guest of scripts/check.sh: --cpu
#                   max,-hypervisor --qemu-arg -machine --qemu-arg
#                   pc,vmport=on --qemu-arg -smbios --qemu-arg
#                   type=1,serial=VMware-perfclock
#   --extra-root    a directory copied over the guest's root file system, so
#                   its files land at the same paths in the guest (e.g.
#                   DIR/lib/modules/KVER/updates/dkms/perfclock.ko and
#                   DIR/lib/modules/KVER/modules.dep, for modprobe)
#
# Guest environment: proc, sysfs, devtmpfs, tracefs (/sys/kernel/tracing),
# debugfs (/sys/kernel/debug, best effort), tmpfs /tmp; busybox applets on
# PATH; stdin is /dev/null; PERFCLOCK_REGIME=stable (after the kernel's
# switch to the tsc clocksource) or unstable; shell helpers in
# /lib/perfclock/guest-lib.sh and tap-lib.sh (scripts/guest-lib.sh,
# scripts/tap-lib.sh). Before run.sh, /init writes
#   perfclock-init: running the payload
# to the console (ttyS0): a guest whose console lacks it never reached
# its payload. After run.sh, /init writes
#   PERFCLOCK-GUEST-DONE rc=<run.sh exit code>
# to ttyS1 and powers off.
#
# Output: payload.log on stdout (carriage returns stripped; TAP passes
# through). Diagnostics on stderr.
#
# Exit status (when several apply, all are reported on stderr and the most
# serious wins, in this order):
#   2  guest did not finish: timeout, or no completion marker (panic, QEMU
#      failure, init died); the last 30 console lines are printed
#   3  the kernel console shows a problem (WARNING:, BUG:, Oops, Call Trace:,
#      panic, UBSAN/KASAN, lockdep, hung task, kmemleak, RCU stall, ...);
#      the matching lines are printed with context
#   1  run.sh exited non-zero (the tests failed)
#   0  marker found with rc=0 and a clean console
#  64  usage error
#
# Why TCG and these flags: /dev/kvm is present on the CI host but nested
# guests hang, so we emulate (-accel tcg,thread=multi -cpu max). Both serial
# ports go to files and stdin is /dev/null, so this runs unattended (CI has no
# terminal) and the payload's TAP is never interleaved with kernel messages.
set -euo pipefail
# For serial_logs_quiet(), the one definition of a silent guest, shared
# with boot()'s guest_froze() (--silence-timeout below).
# shellcheck source=scripts/vm-lib.sh
. "$(dirname "$0")/vm-lib.sh"

die_usage() {
	[ $# -eq 0 ] || echo "vm.sh: $*" >&2
	sed -n '4,14p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 64
}

kernel='' payload='' out='' regime='' append='' modules_from='' extra_root='' hold_events=''
smp=4 mem=1024 timeout_s=900 boot_timeout_s=300 silence_s=0 cpu=max qemu_args=()
tcg_threads=multi
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel)       [ $# -ge 2 ] || die_usage "$1 needs a value"; kernel=$2; shift 2 ;;
	--payload)      [ $# -ge 2 ] || die_usage "$1 needs a value"; payload=$2; shift 2 ;;
	--out)          [ $# -ge 2 ] || die_usage "$1 needs a value"; out=$2; shift 2 ;;
	--regime)       [ $# -ge 2 ] || die_usage "$1 needs a value"; regime=$2; shift 2 ;;
	--append)       [ $# -ge 2 ] || die_usage "$1 needs a value"; append="${append:+$append }$2"; shift 2 ;;
	--smp)          [ $# -ge 2 ] || die_usage "$1 needs a value"; smp=$2; shift 2 ;;
	--mem)          [ $# -ge 2 ] || die_usage "$1 needs a value"; mem=$2; shift 2 ;;
	--timeout)      [ $# -ge 2 ] || die_usage "$1 needs a value"; timeout_s=$2; shift 2 ;;
	--boot-timeout) [ $# -ge 2 ] || die_usage "$1 needs a value"; boot_timeout_s=$2; shift 2 ;;
	--silence-timeout) [ $# -ge 2 ] || die_usage "$1 needs a value"; silence_s=$2; shift 2 ;;
	--modules-from) [ $# -ge 2 ] || die_usage "$1 needs a value"; modules_from=$2; shift 2 ;;
	--extra-root)   [ $# -ge 2 ] || die_usage "$1 needs a value"; extra_root=$2; shift 2 ;;
	--hold-events)  [ $# -ge 2 ] || die_usage "$1 needs a value"; hold_events=$2; shift 2 ;;
	--cpu)          [ $# -ge 2 ] || die_usage "$1 needs a value"; cpu=$2; shift 2 ;;
	--qemu-arg)     [ $# -ge 2 ] || die_usage "$1 needs a value"; qemu_args+=("$2"); shift 2 ;;
	--tcg-threads)  [ $# -ge 2 ] || die_usage "$1 needs a value"; tcg_threads=$2; shift 2 ;;
	-h|--help)      die_usage ;;
	*)              die_usage "unknown argument: $1" ;;
	esac
done
if [ -z "$kernel" ] || [ -z "$payload" ] || [ -z "$out" ]; then
	die_usage "--kernel, --payload and --out are required"
fi
case "$tcg_threads" in
multi|single) ;;
*) die_usage "--tcg-threads must be multi or single (got '$tcg_threads')" ;;
esac
case "$regime" in
stable|unstable) ;;
*) die_usage "--regime must be stable or unstable (got '$regime')" ;;
esac
[ -r "$kernel" ] || die_usage "kernel $kernel not readable"
[ -f "$payload/run.sh" ] || die_usage "$payload/run.sh missing"
[ -z "$extra_root" ] || [ -d "$extra_root" ] || die_usage "--extra-root $extra_root is not a directory"
case "$hold_events" in
*[!a-z0-9_:\ -]*) die_usage "--hold-events: not a list of event names: '$hold_events'" ;;
esac
for n in "$smp" "$mem" "$timeout_s" "$boot_timeout_s" "$silence_s"; do
	case "$n" in ''|*[!0-9]*) die_usage "not a number: $n" ;; esac
done

BUSYBOX=${BUSYBOX:-/bin/busybox}
for tool in qemu-system-x86_64 cpio gzip timeout; do
	command -v "$tool" >/dev/null ||
		{ echo "vm.sh: $tool not found; run scripts/deps.sh vm" >&2; exit 2; }
done
# A dynamically linked busybox (package "busybox") would die in the guest
# with no libc there; only busybox-static's works. A dynamic ELF has an
# .interp section (a static one may still mention ld-linux in its strings).
if [ ! -x "$BUSYBOX" ] || LC_ALL=C grep -q '\.interp' "$BUSYBOX"; then
	echo "vm.sh: need a static $BUSYBOX; run scripts/deps.sh vm" >&2
	exit 2
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
root=$out/initramfs.d
initrd=$out/initramfs.cpio.gz
console_log=$out/console.log
payload_log=$out/payload.log
qemu_log=$out/qemu.log

# ---- initramfs -------------------------------------------------------------
rm -rf "$root"
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,tmp,run,root,etc}
cp "$BUSYBOX" "$root/bin/busybox"
# One symlink per applet, at the path busybox itself reports (bin/sh,
# usr/bin/taskset, ...). Symlinks cost nothing in the cpio.
while read -r applet; do
	[ "$applet" = bin/busybox ] || ln -sf /bin/busybox "$root/$applet"
done < <("$BUSYBOX" --list-full)
applets=$("$BUSYBOX" --list)
for applet in sh mount mkdir cat echo dmesg insmod rmmod lsmod sleep poweroff \
	grep ls chmod ln taskset nproc seq test tr cut head tail wc sync uname \
	id timeout; do
	# Match against a captured list: `busybox --list | grep -q` would
	# die of SIGPIPE under pipefail when grep exits early.
	grep -qx "$applet" <<<"$applets" ||
		{ echo "vm.sh: $BUSYBOX lacks applet $applet" >&2; exit 2; }
done
# The kernel opens /dev/console for init before devtmpfs is mounted; without
# the node it logs "unable to open an initial console". mknod needs root;
# /init re-opens the console after mounting devtmpfs in any case.
if [ "$(id -u)" -eq 0 ]; then
	mknod -m 600 "$root/dev/console" c 5 1
fi

cp -a "$payload" "$root/payload"
if [ -n "$hold_events" ]; then
	# Built once for every guest (a static link costs seconds, and make
	# check boots eight guests), again when the source is newer.
	hold_src=$(dirname "$0")/guest/hold-patch-sites.c
	hold_bin=$(cd "$(dirname "$0")/.." && pwd)/build/guest/hold-patch-sites
	if [ ! -x "$hold_bin" ] || [ "$hold_src" -nt "$hold_bin" ]; then
		mkdir -p "$(dirname "$hold_bin")"
		# Into a private name, then renamed: two vm.sh runs may race here.
		${CC:-cc} -O2 -Wall -Wextra -static -o "$hold_bin.$$" "$hold_src" &&
			mv -f "$hold_bin.$$" "$hold_bin" ||
			{ echo "vm.sh: cannot build $hold_src (needs cc and a static libc)" >&2; exit 2; }
	fi
	cp "$hold_bin" "$root/bin/hold-patch-sites"
fi
chmod +x "$root/payload/run.sh"
mkdir -p "$root/lib/perfclock"
cp "$(dirname "$0")/guest-lib.sh" "$(dirname "$0")/tap-lib.sh" "$root/lib/perfclock/"
# After the base layout, so its files win; before /init, which stays ours.
[ -z "$extra_root" ] || cp -a "$extra_root/." "$root/"
if [ -n "$modules_from" ]; then
	mkdir -p "$root/payload/extra"
	msr=$modules_from/kernel/arch/x86/kernel/msr
	# busybox insmod cannot decompress, so hand it a plain .ko.
	if [ -f "$msr.ko" ]; then
		cp "$msr.ko" "$root/payload/extra/msr.ko"
	elif [ -f "$msr.ko.xz" ]; then
		xz -dc "$msr.ko.xz" >"$root/payload/extra/msr.ko"
	else
		echo "vm.sh: note: no msr.ko under $modules_from" >&2
	fi
fi

cat >"$root/init" <<EOF
#!/bin/sh
# perfclock guest init (generated by scripts/vm.sh).
PERFCLOCK_REGIME=$regime
HOLD_EVENTS='$hold_events'
EOF
cat >>"$root/init" <<'EOF'
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/root TERM=dumb
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null ||
	echo "init: tracefs mount failed"
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null || true
# Before the payload, while the guest is idle: --hold-events.
# shellcheck disable=SC2086
[ -z "$HOLD_EVENTS" ] || /bin/hold-patch-sites $HOLD_EVENTS ||
	echo "init: hold-patch-sites held nothing"
# ttyS1 carries only the payload; raw mode so lines are not rewritten
# (onlcr would turn \n into \r\n).
stty -F /dev/ttyS1 raw -echo 2>/dev/null || true
# The clock regime the payload runs in, settled: in the stable regime
# the kernel switches from tsc-early to tsc, recalibrating the TSC, about
# 2.5 s into boot, which can be after /init starts.
cs=/sys/devices/system/clocksource/clocksource0/current_clocksource
if [ "$PERFCLOCK_REGIME" = stable ]; then
	for _ in $(seq 100); do
		[ "$(cat $cs)" = tsc ] && break
		sleep 0.1
	done
fi
# The regime asked for must be the one the payload runs in, or its
# results are the other regime's: a 6.12 guest booted without either
# regime's arguments kept a stable sched_clock and the TSC clocksource,
# where 6.1's found the TSC unsynchronized (docs/kernel-compat.md).
# Stable: the tsc clocksource, and sched_clock's last word "Marking
# stable"; unstable: neither (the unstable regime's argument marks the
# TSC unstable from boot: never marked stable). Each regime's arguments:
# regime_append() in scripts/vm-lib.sh.
now=$(cat $cs)
said=$(dmesg | grep -o 'sched_clock: Marking [a-z]*' | tail -n 1)
if [ "$PERFCLOCK_REGIME" = stable ]; then
	[ "$now" = tsc ] && [ "$said" = 'sched_clock: Marking stable' ]
else
	[ "$now" != tsc ] && [ "$now" != tsc-early ] && [ "$said" != 'sched_clock: Marking stable' ]
fi
st=$?
echo "$( [ $st -eq 0 ] || echo 'not ')ok - init: the guest runs in the $PERFCLOCK_REGIME regime (clocksource $now, kernel: ${said:-no sched_clock line})" >/dev/ttyS1
export PERFCLOCK_REGIME
cd /payload
# scripts/vm.sh and boot() (scripts/vm-lib.sh) look for this line.
echo "perfclock-init: running the payload"
rc=0
if [ -x /payload/run.sh ]; then
	/payload/run.sh </dev/null >/dev/ttyS1 2>&1 || rc=$?
else
	sh /payload/run.sh </dev/null >/dev/ttyS1 2>&1 || rc=$?
fi
echo "PERFCLOCK-GUEST-DONE rc=$rc" >/dev/ttyS1
sync
poweroff -f
EOF
chmod 755 "$root/init"

# -R 0:0: files owned by root in the guest whoever builds the image.
# gzip -1: the kernel unpacks it in a few ms either way; -1 builds fastest.
(cd "$root" && find . -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc -R 0:0 --quiet) | gzip -1 >"$initrd"

# ---- boot --------------------------------------------------------------------
# panic=-1: reboot at once on panic; with -no-reboot QEMU then exits, so a
# panic costs seconds, not the whole timeout. No oops=panic: we want to see
# everything that follows a warning. loglevel=7 so WARNING/Call Trace (level
# 4) and info lines such as the TSC ones reach console.log.
# softlockup_panic=1: a soft lockup already fails the check (the console
# scan below); as a panic it ends the run in seconds, not at the timeout,
# and boot() in vm-lib.sh can tell a TCG text-patching livelock from it.
# no_timer_check: skip the boot-time check that the IO-APIC delivers timer
# interrupts within a few ms of busy-waiting. Under TCG on a loaded host the
# PIT's ticks arrive late and the check panics the guest ("IO-APIC + timer
# doesn't work!", seen in 2 of 32 boots with the machine's load at 10);
# the check is about broken firmware routing, which QEMU does not have.
cmdline="console=ttyS0 panic=-1 loglevel=7 rdinit=/init no_timer_check softlockup_panic=1"
[ -z "$append" ] || cmdline="$cmdline $append"

rm -f "$console_log" "$payload_log" "$qemu_log"
: >"$console_log"
: >"$payload_log"

started='perfclock-init: running the payload'
# grep the file itself: a pipe into grep -q dies of SIGPIPE under pipefail
reached() { grep -aqF "$started" "$console_log"; }

start=$(date +%s.%N)
qemu_rc=0
# -nodefaults: no VGA, NIC, floppy, CD-ROM or default monitor, so nothing
# probes hardware we do not need. stdin from /dev/null: never touch a
# terminal. timeout -k: SIGTERM first, SIGKILL 5 s later if QEMU hangs.
timeout -k 5 "$timeout_s" qemu-system-x86_64 \
	-nodefaults -no-user-config \
	-accel tcg,thread="$tcg_threads" -cpu "$cpu" -smp "$smp" -m "$mem" "${qemu_args[@]}" \
	-nographic -display none -monitor none -no-reboot \
	-kernel "$kernel" -initrd "$initrd" -append "$cmdline" \
	-serial "file:$console_log" -serial "file:$payload_log" \
	</dev/null 2>"$qemu_log" &
qemu_pid=$!
# A boot that has not reached the payload by --boot-timeout is stopped
# then, not at --timeout: seen under TCG on a loaded host, a boot
# livelocked for minutes before /init (boot() boots it once more).
boot_expired=0
waited=0
while kill -0 "$qemu_pid" 2>/dev/null && ! reached; do
	if [ "$waited" -ge "$boot_timeout_s" ]; then
		boot_expired=1
		kill -TERM "$qemu_pid" 2>/dev/null || true
		break
	fi
	sleep 1
	waited=$((waited + 1))
done
# Then, with --silence-timeout, until QEMU exits: a guest whose two
# serial logs have both stood still that long is stopped. Looked at
# every 5 s, but QEMU's exit is seen within a second (a 5 s sleep cost
# 2.5 s per guest on average, 8 guests in make check).
silent=0
polls=0
while [ "$silence_s" -gt 0 ] && [ "$boot_expired" -eq 0 ] &&
	kill -0 "$qemu_pid" 2>/dev/null; do
	if [ $((polls % 5)) -eq 4 ] && serial_logs_quiet "$out" "$silence_s"; then
		silent=1
		kill -TERM "$qemu_pid" 2>/dev/null || true
		break
	fi
	polls=$((polls + 1))
	sleep 1
done
wait "$qemu_pid" || qemu_rc=$?
end=$(date +%s.%N)
elapsed=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')

# ---- verdict -----------------------------------------------------------------
# The marker is matched anywhere in a line: a payload whose last output
# lacks a newline glues it to the end of that line.
tr -d '\r' <"$payload_log" | sed -E 's/PERFCLOCK-GUEST-DONE rc=[0-9]+$//' | grep -v '^$' || true

status=0
note() { echo "vm.sh: $*" >&2; }
raise() { # keep the most serious status: 2 > 3 > 1 > 0
	local rank_new rank_old
	rank() { case "$1" in 2) echo 3 ;; 3) echo 2 ;; 1) echo 1 ;; *) echo 0 ;; esac; }
	rank_new=$(rank "$1"); rank_old=$(rank "$status")
	[ "$rank_new" -le "$rank_old" ] || status=$1
}

marker=$(tr -d '\r' <"$payload_log" | grep -aoE 'PERFCLOCK-GUEST-DONE rc=[0-9]+$' | tail -n 1 || true)
regime_line=$(tr -d '\r' <"$payload_log" | grep -a -m 1 -E '^(not )?ok - init: the guest runs in' || true)
guest_rc=${marker#PERFCLOCK-GUEST-DONE rc=}

if [ "$boot_expired" -eq 1 ]; then
	note "the guest never reached the payload in ${boot_timeout_s}s: stopped"
	raise 2
elif [ "$silent" -eq 1 ]; then
	note "the guest was silent for ${silence_s}s after reaching its payload: stopped"
	raise 2
elif [ "$qemu_rc" -eq 124 ] || [ "$qemu_rc" -eq 137 ]; then
	note "guest timed out after ${timeout_s}s"
	raise 2
elif [ "$qemu_rc" -ne 0 ]; then
	note "qemu exited with status $qemu_rc"
	sed 's/^/vm.sh: qemu: /' "$qemu_log" >&2
	raise 2
fi
if [ -z "$marker" ]; then
	note "no completion marker from the guest (kernel: $kernel, regime $regime, append: '$append')"
	reached || note "the guest never reached the payload"
	raise 2
fi
if [ "$status" -eq 2 ]; then
	note "last 30 console lines:"
	tr -d '\r' <"$console_log" | tail -n 30 | sed 's/^/vm.sh: console: /' >&2
fi

problems=$KERNEL_PROBLEMS
if tr -d '\r' <"$console_log" | grep -aEq "$problems"; then
	note "kernel problems in $console_log:"
	tr -d '\r' <"$console_log" | grep -aE -B 2 -A 15 "$problems" |
		sed 's/^/vm.sh: console: /' >&2
	raise 3
fi

if [ "${regime_line#not ok}" != "$regime_line" ]; then
	note "the guest is not in the $regime regime its command line asks for: ${regime_line#not ok - init: }"
	raise 1
fi
if [ -n "$marker" ] && [ "$guest_rc" != 0 ]; then
	note "payload run.sh exited with rc=$guest_rc"
	raise 1
fi

note "guest finished in ${elapsed}s (status $status; logs in $out)"
exit "$status"
